//! `bench run`: one seed on any backend, or a sweep of seeds on the
//! simulator.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::actions::{Output, OutputFormat};
use super::error::{CommandError, Ending};
use crate::io::{Io, printable};
use crate::progress::Progress;
use crate::run::{run_drill, run_drill_budgeted};
use drillbench_backend::BackendKind;
use drillbench_backend::factory::{Existing, Factory};
use drillbench_model::drill::Drill;
use drillbench_model::scenario::catalog;
use drillbench_report::out_dir::{self, OutDir};
use drillbench_report::sweep::{self, SweepError, SweepReport};
use drillbench_report::sweep_tally::SweepTally;
use drillbench_report::timeline_summary::EVENTS_FILE;
use drillbench_report::{
    DrillReport, Outcome, format_ms, github, markdown, terminal, write_reports,
};

/// The options of `bench run`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A built-in name or a drill file.
    pub drill: String,
    /// Where it runs.
    pub backend: BackendKind,
    pub seed: u64,
    /// How many seeds.
    pub runs: u64,
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
    /// What standard output carries.
    pub format: OutputFormat,
    /// `--shard I/N`: run only this slice of the sweep's seeds.
    pub shard: Option<super::Shard>,
    /// `--snapshot FILE`: the drill runs on this snapshot's cluster.
    pub snapshot: Option<PathBuf>,
    /// `--timeline-budget N`: the most events `report.json` stores whole.
    pub timeline_budget: usize,
    /// `--events-ndjson`: write every event to `events.ndjson` too.
    pub events_ndjson: bool,
}

/// The most seeds one sweep runs. A swept seed keeps only its figures'
/// values and, if it failed, its seed and failed assertions (about 100
/// bytes), so a million seeds stay well under 1 GB; more go in shards.
pub const MAX_RUNS: u64 = 1_000_000;

/// Resolves and validates the drill before anything else, so bad input
/// is exit 2 and never a partial run; then runs it on the backend.
pub(super) fn run(options: &RunOptions, io: &mut Io<'_>) -> Result<Ending, CommandError> {
    if options.runs == 0 || options.runs > MAX_RUNS {
        return Err(CommandError::Runs {
            runs: options.runs,
            max: MAX_RUNS,
        });
    }
    if options.seed.checked_add(options.runs - 1).is_none() {
        return Err(CommandError::SeedRange {
            seed: options.seed,
            runs: options.runs,
        });
    }
    if let Some(shard) = options.shard {
        if options.backend != BackendKind::Sim {
            return Err(CommandError::ShardOnCluster);
        }
        if options.runs < shard.count() {
            return Err(CommandError::ShardTooSmall {
                shard: shard.to_string(),
                runs: options.runs,
                count: shard.count(),
            });
        }
    }
    if options.snapshot.is_some() && options.backend != BackendKind::Sim {
        return Err(CommandError::SnapshotOnCluster);
    }
    if options.events_ndjson && (options.runs > 1 || options.shard.is_some()) {
        return Err(CommandError::EventsOfSweep);
    }
    let path = catalog::resolve(&options.drill)?;
    let drill =
        super::load_drill(&path, options.snapshot.as_deref()).map_err(CommandError::Drill)?;
    if options.backend != BackendKind::Kubeconfig {
        super::refuse_from_cluster(&drill, options.backend)?;
    }
    let out = out_path(&drill, options);
    out_dir::check(&out).map_err(|source| CommandError::OutDir {
        path: out.clone(),
        source,
    })?;
    let (drill, factory) = match options.backend {
        BackendKind::Sim if options.runs > 1 || options.shard.is_some() => {
            return sweep(&drill, options, &out, io);
        }
        BackendKind::Sim => (drill, Factory::Sim),
        BackendKind::Kubeconfig => kubeconfig(drill, options)?,
        kind @ (BackendKind::Kind | BackendKind::Talos) => {
            let factory = docker(kind, &drill, options)?;
            (drill, factory)
        }
    };
    run_and_report(&drill, options, &factory, &out, io)
}

/// `--out`, or `reports/DRILL-seedN` for one run and
/// `reports/DRILL-seedN-runsM` for a sweep.
fn out_path(drill: &Drill, options: &RunOptions) -> PathBuf {
    match &options.out {
        Some(out) => out.clone(),
        None if options.runs > 1 || options.shard.is_some() => {
            let shard = options
                .shard
                .map(|s| format!("-shard{}of{}", s.index(), s.count()))
                .unwrap_or_default();
            Path::new("reports").join(format!(
                "{}-seed{}-runs{}{shard}",
                drill.name(),
                options.seed,
                options.runs
            ))
        }
        None => super::default_out_dir(drill.name(), options.seed),
    }
}

/// Runs one seed of a drill on a backend of the factory's and writes its
/// reports.
#[expect(
    clippy::disallowed_methods,
    reason = "JUnit's suite time is the run's wall time; the clock is read around the run, never inside the model"
)]
fn run_and_report(
    drill: &Drill,
    options: &RunOptions,
    factory: &Factory,
    out: &Path,
    io: &mut Io<'_>,
) -> Result<Ending, CommandError> {
    let started = std::time::Instant::now();
    let (mut report, full) = run_drill_budgeted(
        drill,
        options.seed,
        &|drill: &Drill, seed: u64| factory.provision(drill, seed),
        options.timeline_budget,
    )?;
    if options.events_ndjson {
        report.events_file = Some(EVENTS_FILE.to_owned());
    }
    let events = options
        .events_ndjson
        .then(|| full.as_deref().unwrap_or(&report.timeline));
    let written =
        write_reports(&report, events, out, Some(started.elapsed())).map_err(|source| {
            CommandError::WriteReports {
                path: out.to_path_buf(),
                source,
            }
        })?;
    drop(full);
    let mut terminal = printable(&terminal::summary(&report)).into_owned();
    let _ = writeln!(
        terminal,
        "reports: {}",
        written
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let output = Output {
        terminal,
        // Only what is printed is rendered: a large run's JSON is megabytes.
        json: match options.format {
            OutputFormat::Json => report.to_json(),
            OutputFormat::Text | OutputFormat::Github => String::new(),
        },
        markdown: markdown::render(&report),
        annotations: github::annotations(&report),
    };
    output.publish(options.format, io);
    Ok(match report.outcome {
        // Ctrl-C ended a real-cluster drill through its teardown: the
        // report says what ran, and the code says who stopped it, never
        // that the platform regressed. (The flag is only ever set where
        // a handler was installed: real backends and sweeps.)
        _ if drillbench_model::interrupt::requested() => Ending::Interrupted,
        Outcome::Passed => Ending::Held,
        Outcome::Failed | Outcome::Aborted => Ending::Failed,
        Outcome::Unproven => Ending::Unproven,
    })
}

/// `--backend kubeconfig`: an existing cluster, or one the bench created
/// (its run label), or a served simulator. Whether the drill may change
/// the cluster is decided from reads only, before anything runs: a drill
/// with faults or scaling on a cluster the bench did not create, without
/// `--allow-destructive CTX`, is bad input (exit 2: the flags do not allow
/// what the drill asks; nothing ran). A `fromCluster` drill's workloads
/// are read here, so a reference the cluster does not resolve is bad input
/// too.
fn kubeconfig(drill: Drill, options: &RunOptions) -> Result<(Drill, Factory), CommandError> {
    use drillbench_backend::bench_api::{self, BenchApi};
    use drillbench_backend::kube::{self, access};

    let Some(path) = options.kubeconfig.clone() else {
        return Err(CommandError::NoKubeconfig);
    };
    if options.runs > 1 {
        return Err(CommandError::SweepOnCluster);
    }
    let Some(context_name) = kube::context_name(&path, options.context.as_deref()) else {
        return Err(CommandError::NoContext(path));
    };
    let label = kube::read_run_label(&path, options.context.as_deref())
        .map_err(|e| CommandError::RunLabel(e.into()).nothing_ran())?;
    let drill = read_cluster_workloads(drill, &path, options)?;
    let access = access::decide(
        label.as_deref(),
        &context_name,
        options.allow_destructive.as_deref(),
    );
    let read_only = access == access::Access::ReadOnly;
    let changing = access::changing_steps(&drill);
    if read_only && !changing.is_empty() {
        return Err(CommandError::NotOurs {
            drill: drill.name().to_owned(),
            changes: changing.join(", "),
            context: context_name,
            label: drillbench_model::labels::RUN_LABEL,
        }
        .nothing_ran());
    }
    let server = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()
        .and_then(|rt| rt.block_on(kube::server_and_token_of(&path, options.context.as_deref())))
        .unwrap_or_default();
    let (server, token) = server;
    let served = bench_api::loopback_http_addr(&server)
        .and_then(|addr| BenchApi::detect(addr, token).map(|d| d.0));
    let factory = Factory::existing(Existing {
        kubeconfig: path,
        context: options.context.clone(),
        context_name,
        served,
        read_only,
    });
    refuse_unsupported(&drill, &factory)?;
    handle_interrupts()?;
    Ok((drill, factory))
}

/// A `fromCluster` drill built again with the objects its cluster runs,
/// read (never written) as `bench snapshot` reads them; any other drill
/// as it is.
fn read_cluster_workloads(
    drill: Drill,
    kubeconfig: &Path,
    options: &RunOptions,
) -> Result<Drill, CommandError> {
    use drillbench_backend::kube::capture::{self, CaptureOptions};

    let Some(from) = drill.takes_workloads_from_cluster() else {
        return Ok(drill);
    };
    let capture_options = CaptureOptions {
        namespaces: from.namespaces.clone(),
        max_objects: drillbench_model::budget::Budgets::of(drill.spec.budgets.as_ref()).objects,
    };
    let read =
        capture::capture_kubeconfig(kubeconfig, options.context.as_deref(), &capture_options)
            .map_err(|e| CommandError::Capture(e).nothing_ran())?;
    drill
        .with_cluster_workloads(&read)
        .map_err(CommandError::Drill)
}

/// `--backend kind|talos`: a cluster of the bench's own, built in Docker
/// for this run (and again for each negative control's re-run) and torn
/// down at its end. What the backend cannot do is refused before anything
/// is created.
fn docker(kind: BackendKind, drill: &Drill, options: &RunOptions) -> Result<Factory, CommandError> {
    if options.runs > 1 {
        return Err(CommandError::SweepOnCluster);
    }
    let capabilities = kind.capabilities();
    crate::run::refuse_unsupported(drill, kind.name(), capabilities)
        .map_err(|e| CommandError::Refused(e).nothing_ran())?;
    handle_interrupts()?;
    let registry = drillbench_backend::clean::Registry::from_env()
        .map_err(|e| CommandError::from(e).nothing_ran())?;
    Ok(Factory::Docker {
        kind,
        registry,
        standby_nodes: options.standby_nodes,
    })
}

fn refuse_unsupported(drill: &Drill, factory: &Factory) -> Result<(), CommandError> {
    crate::run::refuse_unsupported(drill, factory.name(), factory.capabilities())
        .map_err(|e| CommandError::Refused(e).nothing_ran())
}

/// Before a real run: Ctrl-C must end the drill through its teardown, or
/// the run does not start.
fn handle_interrupts() -> Result<(), CommandError> {
    drillbench_model::interrupt::install().map_err(|e| CommandError::Interrupts(e).nothing_ran())
}

/// Seeds run between two looks at the interrupt flag and two folds into
/// the tally: enough to keep every core busy, few enough that a sweep's
/// reports never pile up (each is about 20 KB until folded).
const SWEEP_CHUNK: u64 = 512;

/// `--runs N`: N seeds from `--seed`, on every core. Each seed's run is
/// independent and deterministic, so the sweep is the same however the
/// seeds are spread; each chunk's reports are folded into the tally in
/// seed order and dropped. Ctrl-C or SIGTERM stops it after the chunk
/// under way: the seeds that ran are reported, marked interrupted.
fn sweep(
    drill: &Drill,
    options: &RunOptions,
    out: &Path,
    io: &mut Io<'_>,
) -> Result<Ending, CommandError> {
    handle_interrupts()?;
    let (first, count) = match options.shard {
        Some(shard) => shard.seeds(options.seed, options.runs),
        None => (options.seed, options.runs),
    };
    let last = first + (count - 1);
    let done = AtomicU64::new(0);
    let mut progress = Progress::new(count, io.terminal);
    let tally = std::thread::scope(|scope| {
        let runs = scope.spawn(|| -> Result<Option<SweepTally>, CommandError> {
            let mut tally: Option<SweepTally> = None;
            let mut from = first;
            loop {
                let to = from.saturating_add(SWEEP_CHUNK - 1).min(last);
                let reports = (from..=to)
                    .into_par_iter()
                    .map(|seed| {
                        let report = run_drill(drill, seed, &drillbench_backend::sim::provision)
                            .map_err(|source| CommandError::Seed { seed, source })?;
                        done.fetch_add(1, Ordering::Relaxed);
                        Ok(report)
                    })
                    .collect::<Vec<Result<DrillReport, CommandError>>>();
                for report in reports {
                    // The lowest failing seed is the one said.
                    let report = report?;
                    tally
                        .get_or_insert_with(|| SweepTally::like(&report))
                        .add(&report)?;
                }
                if to == last {
                    return Ok(tally);
                }
                if drillbench_model::interrupt::requested() {
                    if let Some(tally) = tally.as_mut() {
                        tally.interrupted = true;
                    }
                    return Ok(tally);
                }
                from = to + 1;
            }
        });
        // The pool owns the model; this thread only watches the count, so
        // the display never touches a run's timing or its results.
        while !runs.is_finished() {
            progress.update(done.load(Ordering::Relaxed), io.err);
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        progress.update(done.load(Ordering::Relaxed), io.err);
        runs.join()
    });
    progress.finish();
    let tally = tally.map_err(|_| CommandError::SweepPanicked)??;
    let tally = tally.ok_or(SweepError::NoRuns)?;
    let mut extra = Vec::new();
    if let Some(shard) = options.shard {
        // The shard's tally is what `bench report merge` folds together.
        extra.push((shard.file_name(), tally.to_json()));
    }
    let sweep = tally.finish()?;
    publish_sweep(&sweep, count, out, extra, options.format, io)
}

/// Writes a sweep's reports (and `extra` files beside them) to `out`,
/// prints its summary, and says how it ended. `requested` is how many
/// seeds were asked for, which an interrupted sweep did not reach.
pub(super) fn publish_sweep(
    sweep: &SweepReport,
    requested: u64,
    out: &Path,
    extra: Vec<(String, String)>,
    format: OutputFormat,
    io: &mut Io<'_>,
) -> Result<Ending, CommandError> {
    let mut files = vec![
        ("sweep.json", sweep.to_json()),
        ("sweep.md", sweep::markdown(sweep)),
        ("sweep.junit.xml", sweep::junit(sweep)),
        ("sweep.html", sweep::html(sweep)),
    ];
    files.extend(
        extra
            .iter()
            .map(|(name, text)| (name.as_str(), text.clone())),
    );
    OutDir::prepare(out)
        .and_then(|dir| dir.write(&files))
        .map_err(|source| CommandError::WriteSweep {
            path: out.to_path_buf(),
            source,
        })?;
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} on {}: {} runs from seed {}, {} failed{}",
        printable(&sweep.drill.name),
        sweep.backend,
        sweep.runs,
        sweep.first_seed,
        sweep.failures,
        if sweep.interrupted {
            format!(", INTERRUPTED after {} of {requested} seeds", sweep.runs)
        } else {
            String::new()
        }
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
            text,
            "  {}: p50 {} p95 {} p99 {} max {}",
            printable(name),
            show(d.p50),
            show(d.p95),
            show(d.p99),
            show(d.max)
        );
    }
    for failing in sweep.failing_seeds.iter().take(10) {
        let _ = writeln!(
            text,
            "  failing seed {}: {} ({})",
            failing.seed,
            printable(&sweep.drill.replay(&sweep.backend, failing.seed)),
            printable(&failing.assertions.join(", "))
        );
    }
    let _ = writeln!(
        text,
        "reports: {}",
        out.join("sweep.{json,md,junit.xml,html}").display()
    );
    let output = Output {
        terminal: text,
        json: sweep.to_json(),
        markdown: sweep::markdown(sweep),
        annotations: github::sweep_annotations(sweep),
    };
    output.publish(format, io);
    // Seeds where only a control proved nothing say so with their own
    // code; one seed where the platform failed makes the sweep a failure.
    let unproven = sweep
        .failing_seeds
        .iter()
        .all(|f| f.outcome == Outcome::Unproven);
    Ok(match sweep.failures {
        _ if sweep.interrupted => Ending::Interrupted,
        0 => Ending::Held,
        _ if unproven => Ending::Unproven,
        _ => Ending::Failed,
    })
}
