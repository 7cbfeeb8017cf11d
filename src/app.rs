//! What each `bench` command does, independent of how its arguments were
//! parsed. Every command writes to the streams it is given and returns the
//! [`Exit`] the CLI contract promises, so tests can drive them directly.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::sim::SimBackend;
use crate::drill::Drill;
use crate::exit::Exit;
pub use crate::io::Io;
use crate::progress::Progress;
use crate::report::compare::{self, Noise};
use crate::report::sweep::{self, SWEEP_FORMAT, SweepReport};
use crate::report::{DrillReport, Outcome, Verdict, format_ms, html, junit, markdown, write_all};
use crate::run::{Provision, RunError, run_drill};
use crate::scenario::{self, catalog};
use crate::sim::Simulation;

/// `bench list`: the built-in drills, one line each; with a real backend,
/// only those it can run, each one left out said on stderr with why (the
/// nightly job runs what this prints).
pub fn list(backend: Option<Backend>, io: &mut Io<'_>) -> Exit {
    let capabilities = match backend {
        Some(Backend::Kind) => Some(("kind", crate::backend::kind::CAPABILITIES)),
        Some(Backend::Talos) => Some(("talos", crate::backend::talos::CAPABILITIES)),
        Some(Backend::Kubeconfig) => Some(("kubeconfig", crate::backend::Capabilities::NONE)),
        Some(Backend::Sim) | None => None,
    };
    match catalog::list() {
        Ok(entries) => {
            let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
            for entry in entries {
                if let Some((name, caps)) = capabilities {
                    let refusal = Drill::load(&entry.path)
                        .map_err(|d| d.render(false))
                        .and_then(|drill| {
                            crate::run::refuse_unsupported(&drill, name, caps)
                                .map_err(|e| e.to_string())
                        });
                    if let Err(why) = refusal {
                        let _ = writeln!(io.err, "left out {}: {}", entry.name, why.trim_end());
                        continue;
                    }
                }
                let _ = writeln!(io.out, "{:width$}  {}", entry.name, entry.summary);
            }
            Exit::Success
        }
        Err(diagnostic) => {
            let _ = write!(io.err, "{}", diagnostic.render(io.color));
            Exit::Infrastructure
        }
    }
}

/// `bench validate FILE...`: every problem of every file; exit 2 if any.
pub fn validate(files: &[PathBuf], io: &mut Io<'_>) -> Exit {
    let mut exit = Exit::Success;
    for file in files {
        match Drill::load(file) {
            Ok(drill) => {
                let _ = writeln!(io.out, "{}: valid drill `{}`", file.display(), drill.name());
            }
            Err(diagnostics) => {
                let _ = write!(io.err, "{}", diagnostics.render(io.color));
                exit = Exit::BadInput;
            }
        }
    }
    exit
}

/// `bench schema`: the JSON Schema of the drill language.
pub fn schema(io: &mut Io<'_>) -> Exit {
    let schema = scenario::json_schema();
    let _ = writeln!(
        io.out,
        "{}",
        serde_json::to_string_pretty(&schema).unwrap_or_default()
    );
    Exit::Success
}

/// Where a drill runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded deterministic simulator.
    Sim,
    /// A kind cluster.
    Kind,
    /// A Talos-in-Docker cluster.
    Talos,
    /// An existing cluster from a kubeconfig.
    Kubeconfig,
}

impl Backend {
    /// The name reports use.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sim => "sim",
            Backend::Kind => "kind",
            Backend::Talos => "talos",
            Backend::Kubeconfig => "kubeconfig",
        }
    }
}

/// The options of `bench run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A built-in name or a drill file.
    pub drill: String,
    /// Where it runs.
    pub backend: Backend,
    /// The first seed.
    pub seed: u64,
    /// How many seeds.
    pub runs: u64,
    /// Output folder.
    pub out: Option<PathBuf>,
    /// The kubeconfig of `--backend kubeconfig`.
    pub kubeconfig: Option<PathBuf>,
    /// Its context (default: the current one).
    pub context: Option<String>,
    /// The context the user allows the drill to change though the bench
    /// did not create its cluster.
    pub allow_destructive: Option<String>,
    /// Standby nodes per autoscaled pool on kind and Talos: the most nodes
    /// the emulated autoscaler can add to a pool.
    pub standby_nodes: u32,
}

/// `bench run`: resolve and validate the drill before anything else, so bad
/// input is exit 2 and never a partial run; then run it on the backend.
pub fn run(options: &RunOptions, io: &mut Io<'_>) -> Exit {
    let path = match catalog::resolve(&options.drill) {
        Ok(path) => path,
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            return Exit::BadInput;
        }
    };
    let drill = match Drill::load(&path) {
        Ok(drill) => drill,
        Err(diagnostics) => {
            let _ = write!(io.err, "{}", diagnostics.render(io.color));
            return Exit::BadInput;
        }
    };
    let provision: &Provision<'_> = match options.backend {
        Backend::Sim => &|drill: &Drill, seed: u64| {
            let sim =
                Simulation::new(drill, seed).map_err(|e| RunError::Provision(e.to_string()))?;
            Ok(Box::new(SimBackend::new(sim)) as Box<dyn crate::backend::Backend>)
        },
        Backend::Kubeconfig => return run_kubeconfig(&drill, options, io),
        Backend::Kind | Backend::Talos => return run_in_docker(&drill, options, io),
    };
    if options.runs > 1 {
        return sweep(&drill, options, io);
    }
    run_and_report(&drill, options, provision, io)
}

/// Runs one seed of a drill on a provisioned backend and writes its
/// reports.
fn run_and_report(
    drill: &Drill,
    options: &RunOptions,
    provision: &Provision<'_>,
    io: &mut Io<'_>,
) -> Exit {
    let drill = drill.clone();
    let report = match run_drill(&drill, options.seed, provision) {
        Ok(report) => report,
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            return Exit::Infrastructure;
        }
    };
    let out = options
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir(drill.name(), options.seed));
    let written = match write_all(&report, &out) {
        Ok(written) => written,
        Err(e) => {
            let _ = writeln!(
                io.err,
                "error: cannot write the reports to {}: {e}",
                out.display()
            );
            return Exit::Infrastructure;
        }
    };
    let _ = write!(io.out, "{}", summary(&report));
    let _ = writeln!(
        io.out,
        "reports: {}",
        written
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if report.passed() {
        Exit::Success
    } else {
        Exit::AssertionFailed
    }
}

/// `bench run --backend kubeconfig`: an existing cluster, or one the
/// bench created (its run label), or a served simulator. Whether the drill
/// may change the cluster is decided from reads only, before anything
/// runs: a drill with faults or scaling on a cluster the bench did not
/// create, without `--allow-destructive CTX`, is bad input (exit 2: the
/// flags do not allow what the drill asks; nothing ran).
fn run_kubeconfig(drill: &Drill, options: &RunOptions, io: &mut Io<'_>) -> Exit {
    use crate::backend::bench_api::{self, BenchApi};
    use crate::backend::kube::{self, KubeBackend, KubeOptions, access};
    use crate::backend::machines::{Machines, NoMachines};
    use crate::backend::served::ServedSimMachines;

    let Some(path) = options.kubeconfig.clone() else {
        let _ = writeln!(
            io.err,
            "error: --backend kubeconfig needs --kubeconfig FILE"
        );
        return Exit::BadInput;
    };
    if options.runs > 1 {
        let _ = writeln!(
            io.err,
            "error: --runs sweeps seeds of the simulator; a real cluster runs one drill at a time"
        );
        return Exit::BadInput;
    }
    let Some(context) = kube::context_name(&path, options.context.as_deref()) else {
        let _ = writeln!(
            io.err,
            "error: {} names no context to use; pass --context CTX",
            path.display()
        );
        return Exit::BadInput;
    };
    let label = match kube::read_run_label(&path, options.context.as_deref()) {
        Ok(label) => label,
        Err(e) => {
            let _ = writeln!(
                io.err,
                "error: {}; nothing ran",
                crate::backend::BackendError::from(e)
            );
            return Exit::Infrastructure;
        }
    };
    let access = access::decide(
        label.as_deref(),
        &context,
        options.allow_destructive.as_deref(),
    );
    let read_only = access == access::Access::ReadOnly;
    let changing = access::changing_steps(drill);
    if read_only && !changing.is_empty() {
        let _ = writeln!(
            io.err,
            "error: drill `{}` changes the cluster ({}), but context `{context}` was not created by the bench (no {} label on kube-system or on a node); pass --allow-destructive {context} to let it; nothing ran",
            drill.name(),
            changing.join(", "),
            crate::backend::docker::RUN_LABEL,
        );
        return Exit::BadInput;
    }
    let server = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
        .and_then(|rt| rt.block_on(kube::server_of(&path, options.context.as_deref())))
        .unwrap_or_default();
    let served =
        bench_api::loopback_http_addr(&server).and_then(|addr| BenchApi::detect(addr).map(|d| d.0));
    let machines = || -> Box<dyn Machines> {
        match &served {
            Some(api) => Box::new(ServedSimMachines::new(
                api.clone(),
                path.clone(),
                options.context.clone(),
            )),
            None => Box::new(NoMachines {
                kubeconfig: path.clone(),
                context: options.context.clone(),
            }),
        }
    };
    let capabilities = if read_only {
        crate::backend::Capabilities::NONE
    } else {
        machines().capabilities()
    };
    if let Err(e) = crate::run::refuse_unsupported(drill, "kubeconfig", capabilities) {
        let _ = writeln!(io.err, "error: {e}; nothing ran");
        return Exit::Infrastructure;
    }
    if let Err(exit) = handle_interrupts(io) {
        return exit;
    }
    let provisioned = std::cell::Cell::new(0u32);
    let provision = |drill: &Drill,
                     seed: u64|
     -> Result<Box<dyn crate::backend::Backend>, RunError> {
        let count = provisioned.get();
        provisioned.set(count + 1);
        match &served {
            // A served simulator the bench may change is provisioned
            // afresh for every run, a negative control's re-run included.
            Some(api) if !read_only => {
                ServedSimMachines::new(api.clone(), path.clone(), options.context.clone())
                    .reset(drill, seed)
                    .map_err(|e| RunError::Provision(e.to_string()))?;
            }
            _ if count > 0 => {
                return Err(RunError::NoReprovision(format!(
                    "context `{context}` is an existing cluster the bench cannot build again with a guard weakened"
                )));
            }
            _ => {}
        }
        let backend = KubeBackend::connect(
            drill,
            seed,
            machines(),
            KubeOptions {
                name: "kubeconfig",
                run_id: kube::run_id(drill, seed),
                read_only,
                // A served simulator admits through the drill's guards and
                // an existing cluster through its own policies.
                admit_guards: false,
                // Either has an autoscaler of its own, or none the bench
                // may stand in for.
                emulate_autoscaler: false,
            },
        )
        .map_err(|e| RunError::Provision(crate::backend::BackendError::from(e).to_string()))?;
        Ok(Box::new(backend) as Box<dyn crate::backend::Backend>)
    };
    run_and_report(drill, options, &provision, io)
}

/// `bench run --backend kind|talos`: a cluster of the bench's own, built
/// in Docker for this run (and again for each negative control's re-run)
/// and torn down at its end. What the backend cannot do is refused before
/// anything is created.
fn run_in_docker(drill: &Drill, options: &RunOptions, io: &mut Io<'_>) -> Exit {
    use crate::backend::clean::Registry;
    use crate::backend::docker::RunId;
    use crate::backend::kube::{KubeBackend, KubeOptions};
    use crate::backend::machines::Machines;
    use crate::backend::{kind, talos};

    let (name, capabilities) = match options.backend {
        Backend::Talos => ("talos", talos::CAPABILITIES),
        _ => ("kind", kind::CAPABILITIES),
    };
    if options.runs > 1 {
        let _ = writeln!(
            io.err,
            "error: --runs sweeps seeds of the simulator; a real cluster runs one drill at a time"
        );
        return Exit::BadInput;
    }
    if let Err(e) = crate::run::refuse_unsupported(drill, name, capabilities) {
        let _ = writeln!(io.err, "error: {e}; nothing ran");
        return Exit::Infrastructure;
    }
    if let Err(exit) = handle_interrupts(io) {
        return exit;
    }
    let registry = match Registry::from_env() {
        Ok(registry) => registry,
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}; nothing ran");
            return Exit::Infrastructure;
        }
    };
    let provision =
        |drill: &Drill, seed: u64| -> Result<Box<dyn crate::backend::Backend>, RunError> {
            let run = RunId::new(crate::backend::provision::cluster_run_id(drill.name()))
                .map_err(|e| RunError::Provision(e.to_string()))?;
            let machines: Box<dyn Machines> = match options.backend {
                Backend::Talos => {
                    let mut talos_options = talos::TalosOptions::new(run.clone(), registry.clone());
                    talos_options.standby_per_pool = options.standby_nodes;
                    Box::new(
                        talos::provision(drill, &talos_options)
                            .map_err(|e| RunError::Provision(e.to_string()))?,
                    )
                }
                _ => {
                    let mut kind_options = kind::KindOptions::new(run.clone(), registry.clone());
                    kind_options.standby_per_pool = options.standby_nodes;
                    Box::new(
                        kind::provision(drill, &kind_options)
                            .map_err(|e| RunError::Provision(e.to_string()))?,
                    )
                }
            };
            let backend = KubeBackend::connect(
                drill,
                seed,
                machines,
                KubeOptions {
                    name,
                    run_id: run.as_str().to_owned(),
                    read_only: false,
                    // kind and Talos run no policy engine: the bench admits.
                    admit_guards: true,
                    // Nor can they add servers: the bench autoscales.
                    emulate_autoscaler: true,
                },
            )
            .map_err(|e| RunError::Provision(crate::backend::BackendError::from(e).to_string()))?;
            Ok(Box::new(backend) as Box<dyn crate::backend::Backend>)
        };
    run_and_report(drill, options, &provision, io)
}

/// Before a real run: Ctrl-C must end the drill through its teardown, or
/// the run does not start.
fn handle_interrupts(io: &mut Io<'_>) -> Result<(), Exit> {
    crate::interrupt::install().map_err(|e| {
        let _ = writeln!(
            io.err,
            "error: cannot handle Ctrl-C, so teardown could not be promised: {e}; nothing ran"
        );
        Exit::Infrastructure
    })
}

/// The ten-second summary of a run.
pub fn summary(report: &DrillReport) -> String {
    let held = report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Pass)
        .count();
    let verdict = match report.outcome {
        Outcome::Passed => "PASSED",
        Outcome::Failed => "FAILED",
        Outcome::Aborted => "ABORTED",
    };
    let mut text = format!(
        "{} on {}, seed {}: {verdict}, {held} of {} assertions held, {} of drill time\n",
        report.drill.name,
        report.backend,
        report.seed,
        report.assertions.len(),
        format_ms(report.duration_ms)
    );
    let width = report
        .assertions
        .iter()
        .map(|a| a.name.len())
        .max()
        .unwrap_or(0);
    for a in &report.assertions {
        let mark = if a.verdict == Verdict::Pass {
            "ok  "
        } else {
            "FAIL"
        };
        text.push_str(&format!(
            "  {mark} {:width$}  {} (bound {})\n",
            a.name, a.measured, a.bound
        ));
        if a.verdict == Verdict::Fail {
            text.push_str(&format!("       {}\n", a.summary));
        }
    }
    text
}

/// `bench run --runs N`: N seeds from `--seed`, on both cores. Each seed's
/// run is independent and deterministic, so the sweep is the same however
/// the seeds are split; results are put back in seed order.
fn sweep(drill: &Drill, options: &RunOptions, io: &mut Io<'_>) -> Exit {
    let seeds: Vec<u64> = (options.seed..options.seed.saturating_add(options.runs)).collect();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(seeds.len())
        .max(1);
    let chunk = seeds.len().div_ceil(workers);
    let done = AtomicU64::new(0);
    let mut progress = Progress::new(seeds.len() as u64, io.terminal);
    let results: Vec<Result<Vec<DrillReport>, String>> = std::thread::scope(|scope| {
        let done = &done;
        let handles: Vec<_> = seeds
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|&seed| {
                            let mut report =
                                run_drill(drill, seed, &crate::backend::sim::provision)
                                    .map_err(|e| format!("seed {seed}: {e}"))?;
                            // The aggregate needs verdicts and figures, not timelines.
                            report.timeline.clear();
                            done.fetch_add(1, Ordering::Relaxed);
                            Ok(report)
                        })
                        .collect::<Result<Vec<_>, String>>()
                })
            })
            .collect();
        // The workers own the model; this thread only watches the count,
        // so the display never touches a run's timing or its results.
        while !handles.iter().all(|h| h.is_finished()) {
            progress.update(done.load(Ordering::Relaxed), io.err);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        progress.update(done.load(Ordering::Relaxed), io.err);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a sweep worker panicked".to_owned()))
            })
            .collect()
    });
    progress.finish();
    let mut reports = Vec::with_capacity(seeds.len());
    for part in results {
        match part {
            Ok(part) => reports.extend(part),
            Err(e) => {
                let _ = writeln!(io.err, "error: {e}");
                return Exit::Infrastructure;
            }
        }
    }
    let sweep = match SweepReport::from_runs(&reports) {
        Ok(sweep) => sweep,
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            return Exit::Infrastructure;
        }
    };
    let out = options.out.clone().unwrap_or_else(|| {
        Path::new("reports").join(format!(
            "{}-seed{}-runs{}",
            drill.name(),
            options.seed,
            options.runs
        ))
    });
    let files = [
        ("sweep.json", sweep.to_json()),
        ("sweep.md", sweep::markdown(&sweep)),
        ("sweep.junit.xml", sweep::junit(&sweep)),
        ("sweep.html", sweep::html(&sweep)),
    ];
    if let Err(e) = std::fs::create_dir_all(&out).and_then(|_| {
        files
            .iter()
            .try_for_each(|(name, text)| std::fs::write(out.join(name), text))
    }) {
        let _ = writeln!(
            io.err,
            "error: cannot write the sweep to {}: {e}",
            out.display()
        );
        return Exit::Infrastructure;
    }
    let _ = writeln!(
        io.out,
        "{} on {}: {} runs from seed {}, {} failed",
        drill.name(),
        options.backend.name(),
        sweep.runs,
        sweep.first_seed,
        sweep.failures
    );
    for (name, d) in &sweep.figures {
        let show = |v: f64| {
            if d.unit == "ms" {
                format_ms(v.max(0.0) as u64)
            } else {
                format!("{v}")
            }
        };
        let _ = writeln!(
            io.out,
            "  {name}: p50 {} p95 {} p99 {} max {}",
            show(d.p50),
            show(d.p95),
            show(d.p99),
            show(d.max)
        );
    }
    for failing in sweep.failing_seeds.iter().take(10) {
        let _ = writeln!(
            io.out,
            "  failing seed {}: bench run {} --seed {} ({})",
            failing.seed,
            crate::run::display_path(&drill.source.path),
            failing.seed,
            failing.assertions.join(", ")
        );
    }
    let _ = writeln!(
        io.out,
        "reports: {}",
        out.join("sweep.{json,md,junit.xml,html}").display()
    );
    if sweep.failures == 0 {
        Exit::Success
    } else {
        Exit::AssertionFailed
    }
}

/// The folder a run writes to when `--out` is not given.
pub fn default_out_dir(drill: &str, seed: u64) -> PathBuf {
    Path::new("reports").join(format!("{drill}-seed{seed}"))
}

/// Report formats `bench report` renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// Markdown for a CI job summary.
    Markdown,
    /// JUnit XML for CI test reporting.
    Junit,
    /// One self-contained HTML file.
    Html,
}

/// `bench report FILE.json --format md|junit|html`: re-renders a stored
/// drill report, or a stored sweep (recognised by its `format` field).
pub fn report(file: &Path, format: ReportFormat, io: &mut Io<'_>) -> Exit {
    if is_sweep(file) {
        return match SweepReport::read(file) {
            Ok(s) => {
                let text = match format {
                    ReportFormat::Markdown => sweep::markdown(&s),
                    ReportFormat::Junit => sweep::junit(&s),
                    ReportFormat::Html => sweep::html(&s),
                };
                let _ = write!(io.out, "{text}");
                Exit::Success
            }
            Err(e) => {
                let _ = writeln!(io.err, "error: {e}");
                Exit::BadInput
            }
        };
    }
    match DrillReport::read(file) {
        Ok(report) => {
            let text = match format {
                ReportFormat::Markdown => markdown::render(&report),
                ReportFormat::Junit => junit::render(&report),
                ReportFormat::Html => html::render(&report),
            };
            let _ = write!(io.out, "{text}");
            Exit::Success
        }
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            Exit::BadInput
        }
    }
}

/// Whether `file` declares the sweep format; anything else (unreadable,
/// not JSON, another format) is left to the drill-report reader's errors.
fn is_sweep(file: &Path) -> bool {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|v| v.get("format").and_then(|f| f.as_str()).map(str::to_owned))
        .is_some_and(|f| f == SWEEP_FORMAT)
}

/// Output formats of `bench report compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareFormat {
    /// Plain text, one line per finding.
    Text,
    /// Markdown for a CI job summary.
    Markdown,
}

/// `bench report compare OLD.json NEW.json`: exit 1 when NEW regressed
/// against OLD, 0 when not, 2 when the files cannot be read or are reports
/// of different drills (unless `force`).
pub fn report_compare(
    old: &Path,
    new: &Path,
    format: CompareFormat,
    force: bool,
    io: &mut Io<'_>,
) -> Exit {
    let (old, new) = match (DrillReport::read(old), DrillReport::read(new)) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(e), _) | (_, Err(e)) => {
            let _ = writeln!(io.err, "error: {e}");
            return Exit::BadInput;
        }
    };
    let noise = Noise::default();
    match compare::compare(&old, &new, noise, force) {
        Ok(comparison) => {
            let text = match format {
                CompareFormat::Text => compare::render_text(&comparison, noise),
                CompareFormat::Markdown => compare::render_markdown(&comparison, noise),
            };
            let _ = write!(io.out, "{text}");
            if comparison.regressed() {
                Exit::AssertionFailed
            } else {
                Exit::Success
            }
        }
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            Exit::BadInput
        }
    }
}

/// `bench clean [--dry-run]`: removes the clusters recorded by runs whose
/// process is gone and every container labelled with a run, then forgets
/// those runs; `--dry-run` only lists. Exit 0 when everything found was
/// removed (or listed), 3 when a tool is missing, a removal failed or a
/// registry file could not be read (something may be left).
pub fn clean(dry_run: bool, io: &mut Io<'_>) -> Exit {
    use crate::backend::clean::{self as cleaning, Registry};
    use crate::backend::tool::Tools;

    let registry = match Registry::from_env() {
        Ok(registry) => registry,
        Err(e) => {
            let _ = writeln!(io.err, "error: {e}");
            return Exit::Infrastructure;
        }
    };
    let tools = Tools::default();
    let plan = match cleaning::plan(&registry, &tools) {
        Ok(plan) => plan,
        Err(e) => {
            let _ = writeln!(
                io.err,
                "error: cannot look for leftovers: {}",
                crate::error_text::error_chain(&e)
            );
            return e.exit();
        }
    };
    for skipped in &plan.skipped {
        let _ = writeln!(io.out, "skipped: {skipped}");
    }
    for file in &plan.unreadable {
        let _ = writeln!(io.err, "warning: not a run record, left alone: {file}");
    }
    if plan.actions.is_empty() {
        let _ = writeln!(io.out, "nothing to clean in {}", registry.dir().display());
    }
    let mut exit = if plan.unreadable.is_empty() {
        Exit::Success
    } else {
        Exit::Infrastructure
    };
    if dry_run {
        for action in &plan.actions {
            let _ = writeln!(io.out, "would {}", action.describe());
        }
        return exit;
    }
    let outcome = cleaning::execute(&plan, &registry, &tools);
    for done in &outcome.done {
        let _ = writeln!(io.out, "done: {done}");
    }
    for failed in &outcome.failed {
        let _ = writeln!(io.err, "failed: {failed}");
        exit = Exit::Infrastructure;
    }
    exit
}
