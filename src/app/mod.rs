//! What each `bench` command does, independent of how its arguments were
//! parsed. Every command writes to the streams it is given and returns the
//! [`Exit`] the CLI contract promises, so tests can drive them directly.
//! How a command ended becomes an exit code in one place (`error`).

mod actions;
mod error;
mod run;
mod shard;
mod snapshot;

use std::path::{Path, PathBuf};

pub use self::actions::OutputFormat;
use self::error::{CommandError, Ending, finish};
pub use self::run::RunOptions;
pub use self::shard::{Shard, parse_shard};
pub use self::snapshot::{ServeSnapshotOptions, SnapshotOptions, sim_serve_snapshot, snapshot};
pub use crate::io::Io;
use crate::io::printable;
pub use drillbench_backend::BackendKind as Backend;
use drillbench_model::drill::Drill;
use drillbench_model::exit::Exit;
use drillbench_model::scenario::{self, catalog};
use drillbench_report::compare::{self, Noise};
use drillbench_report::sweep::{self, SWEEP_FORMAT, SweepReport};
use drillbench_report::sweep_tally::SweepTally;
use drillbench_report::{DrillReport, html, junit, markdown};
use drillbench_serve::{
    self as served, CliOptions as ServeCliOptions, Clock, ServeOptions, Server,
};

/// `bench list`: the built-in drills, one line each; with a real backend,
/// only those it can run, each one left out said on stderr with why (the
/// nightly job runs what this prints).
pub fn list(backend: Option<Backend>, io: &mut Io<'_>) -> Exit {
    let result = list_drills(backend, io);
    finish(result, io)
}

fn list_drills(backend: Option<Backend>, io: &mut Io<'_>) -> Result<Ending, CommandError> {
    let backend = backend.filter(|b| *b != Backend::Sim);
    let entries = catalog::list().map_err(CommandError::Catalog)?;
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    for entry in entries {
        if let Some(backend) = backend {
            let refusal = Drill::load(&entry.path)
                .map_err(|d| d.render(false))
                .and_then(|drill| {
                    crate::run::refuse_unsupported(&drill, backend.name(), backend.capabilities())
                        .map_err(|e| e.to_string())
                });
            if let Err(why) = refusal {
                let _ = writeln!(io.err, "left out {}: {}", entry.name, why.trim_end());
                continue;
            }
        }
        let _ = writeln!(io.out, "{:width$}  {}", entry.name, entry.summary);
    }
    Ok(Ending::Held)
}

/// `bench policy test PATH...`: Kyverno CLI test suites (`kyverno-test.yaml`)
/// run with the bench's Kyverno engine, one `kyverno test`-style table each.
/// Exit 0 when every expected result matches, 1 when one does not, 2 for bad
/// input (said as file:line:column before anything is judged).
pub fn policy_test(paths: &[PathBuf], io: &mut Io<'_>) -> Exit {
    let result = drillbench_kyverno::test_runner::run_all(paths, io.out)
        .map(|all| if all { Ending::Held } else { Ending::Failed })
        .map_err(CommandError::from);
    finish(result, io)
}

/// `bench policy scan --kubeconfig FILE --policy NAME PATH...`: the live
/// background check of one policy over a cluster's running Pods and Nodes
/// (read-only). Exit 0 when nothing breaks it, 1 when something does, 2 for
/// bad input, 3 when the cluster could not be read.
pub fn policy_scan(
    kubeconfig: &Path,
    context: Option<&str>,
    policy: &str,
    paths: &[PathBuf],
    io: &mut Io<'_>,
) -> Exit {
    let result = drillbench_kyverno::live::load_policies(paths)
        .map_err(CommandError::from)
        .and_then(|policies| {
            let objects = drillbench_backend::kube::read_live_objects(kubeconfig, context)
                .map_err(CommandError::LiveRead)?;
            Ok(drillbench_kyverno::live::scan(&policies, policy, objects)?)
        })
        .map(|scan| {
            let _ = write!(io.out, "{}", scan.render());
            if scan.clean() {
                Ending::Held
            } else {
                Ending::Failed
            }
        });
    finish(result, io)
}

/// `bench scenarios export DIR`: the built-in drills and the files they
/// read, written out for editing, one path a line.
pub fn export_scenarios(dir: &Path, io: &mut Io<'_>) -> Exit {
    let result = catalog::export(dir)
        .map_err(CommandError::Export)
        .map(|written| {
            for path in &written {
                let _ = writeln!(io.out, "{}", printable(&path.display().to_string()));
            }
            if written.is_empty() {
                let _ = writeln!(
                    io.err,
                    "{} already holds every built-in file",
                    dir.display()
                );
            }
            Ending::Held
        });
    finish(result, io)
}

/// `bench validate FILE...`: every problem of every file; exit 2 if any.
/// Loads a drill, on `snapshot`'s cluster when one is given (a path
/// relative to where the bench runs, not to the drill).
pub(crate) fn load_drill(
    path: &Path,
    snapshot: Option<&Path>,
) -> Result<Drill, drillbench_model::scenario::Diagnostics> {
    match snapshot {
        Some(snapshot) => Drill::load_on_snapshot(path, snapshot),
        None => Drill::load(path),
    }
}

/// A `fromCluster` drill takes its workloads from a cluster that already
/// runs them: a backend that builds its own cluster has none to take
/// (a snapshot has, being such a cluster's).
pub(crate) fn refuse_from_cluster(drill: &Drill, backend: Backend) -> Result<(), CommandError> {
    if drill.takes_workloads_from_cluster().is_some() && drill.snapshot.is_none() {
        return Err(CommandError::FromClusterOffCluster {
            drill: drill.name().to_owned(),
            backend: backend.name(),
        });
    }
    Ok(())
}

pub fn validate(files: &[PathBuf], snapshot: Option<&Path>, io: &mut Io<'_>) -> Exit {
    let mut ending = Ending::Held;
    for file in files {
        // A built-in's name resolves as `bench run` resolves it.
        let path = match file.to_str().map(catalog::resolve) {
            None => Ok(file.clone()),
            Some(resolved) => resolved,
        };
        let loaded = path
            .map_err(|unknown| format!("error: {unknown}"))
            .and_then(|path| load_drill(&path, snapshot).map_err(|d| d.render(io.color)));
        match loaded {
            Ok(drill) => {
                let _ = writeln!(io.out, "{}: valid drill `{}`", file.display(), drill.name());
                let uncontrolled = drillbench_model::scenario::assertion::uncontrolled(
                    &drill.assertions,
                    &drill.spec.guards,
                );
                for name in uncontrolled {
                    let _ = writeln!(
                        io.err,
                        "warning: {}: assertion `{name}` has no negative control that can make it fail; add one whose `mustFail` names it (or, for a placement, an admission control of a guard that enforces it)",
                        file.display()
                    );
                }
            }
            Err(rendered) => {
                let _ = writeln!(io.err, "{}", rendered.trim_end());
                ending = Ending::BadInputs;
            }
        }
    }
    finish(Ok(ending), io)
}

/// `bench schema`: the JSON Schema of the drill language.
pub fn schema(io: &mut Io<'_>) -> Exit {
    let schema = scenario::json_schema();
    let _ = writeln!(
        io.out,
        "{}",
        serde_json::to_string_pretty(&schema).unwrap_or_default()
    );
    finish(Ok(Ending::Held), io)
}

/// `bench run`: resolve and validate the drill before anything else, so bad
/// input is exit 2 and never a partial run; then run it on the backend.
pub fn run(options: &RunOptions, io: &mut Io<'_>) -> Exit {
    let result = run::run(options, io);
    finish(result, io)
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
    let result = render_report(file, format, io);
    finish(result, io)
}

fn render_report(
    file: &Path,
    format: ReportFormat,
    io: &mut Io<'_>,
) -> Result<Ending, CommandError> {
    let text = if is_sweep(file) {
        let s = SweepReport::read(file).map_err(CommandError::ReadSweep)?;
        match format {
            ReportFormat::Markdown => sweep::markdown(&s),
            ReportFormat::Junit => sweep::junit(&s),
            ReportFormat::Html => sweep::html(&s),
        }
    } else {
        let report = DrillReport::read(file)?;
        match format {
            ReportFormat::Markdown => markdown::render(&report),
            ReportFormat::Junit => junit::render(&report),
            ReportFormat::Html => html::render(&report),
        }
    };
    let _ = write!(io.out, "{text}");
    Ok(Ending::Held)
}

/// `bench report merge TALLY… [--out DIR]`: the tallies of a sharded
/// sweep folded into the sweep report one run of all their seeds writes.
pub fn report_merge(
    tallies: &[PathBuf],
    out: Option<&Path>,
    format: OutputFormat,
    io: &mut Io<'_>,
) -> Exit {
    let result = merge_tallies(tallies, out, format, io);
    finish(result, io)
}

fn merge_tallies(
    tallies: &[PathBuf],
    out: Option<&Path>,
    format: OutputFormat,
    io: &mut Io<'_>,
) -> Result<Ending, CommandError> {
    let mut merged: Option<SweepTally> = None;
    for file in tallies {
        let tally = SweepTally::read(file).map_err(CommandError::ReadSweep)?;
        match merged.as_mut() {
            None => merged = Some(tally),
            Some(merged) => merged.merge(tally).map_err(CommandError::ReadSweep)?,
        }
    }
    let merged = merged.ok_or(CommandError::NothingToMerge)?;
    let requested = merged.seeds.iter().map(|[a, b]| b - a + 1).sum();
    let sweep = merged.finish().map_err(CommandError::ReadSweep)?;
    let out = out.map_or_else(
        || {
            Path::new("reports").join(format!(
                "{}-seed{}-runs{}",
                sweep.drill.name, sweep.first_seed, sweep.runs
            ))
        },
        Path::to_path_buf,
    );
    run::publish_sweep(&sweep, requested, &out, Vec::new(), format, io)
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
    let result = compare_reports(old, new, format, force, io);
    finish(result, io)
}

fn compare_reports(
    old: &Path,
    new: &Path,
    format: CompareFormat,
    force: bool,
    io: &mut Io<'_>,
) -> Result<Ending, CommandError> {
    let (old, new) = match (DrillReport::read(old), DrillReport::read(new)) {
        (Ok(old), Ok(new)) => (old, new),
        (Err(e), _) | (_, Err(e)) => return Err(e.into()),
    };
    let noise = Noise::default();
    let comparison = compare::compare(&old, &new, noise, force)?;
    let text = match format {
        CompareFormat::Text => compare::render_text(&comparison, noise),
        CompareFormat::Markdown => compare::render_markdown(&comparison, noise),
    };
    let _ = write!(io.out, "{text}");
    Ok(if comparison.regressed() {
        Ending::Failed
    } else {
        Ending::Held
    })
}

/// `bench clean [--dry-run]`: removes the clusters recorded by runs whose
/// process is gone and every container labelled with a run, then forgets
/// those runs; `--dry-run` only lists. Exit 0 when everything found was
/// removed (or listed), 3 when a tool is missing, a removal failed or a
/// registry file could not be read (something may be left).
pub fn clean(dry_run: bool, io: &mut Io<'_>) -> Exit {
    let result = clean_leftovers(dry_run, io);
    finish(result, io)
}

fn clean_leftovers(dry_run: bool, io: &mut Io<'_>) -> Result<Ending, CommandError> {
    use drillbench_backend::clean::{self as cleaning, Registry};
    use drillbench_backend::tool::Tools;

    let registry = Registry::from_env()?;
    let tools = Tools::default();
    let plan = cleaning::plan(&registry, &tools).map_err(CommandError::Leftovers)?;
    for skipped in &plan.skipped {
        let _ = writeln!(io.out, "skipped: {skipped}");
    }
    for file in &plan.unreadable {
        let _ = writeln!(io.err, "warning: not a run record, left alone: {file}");
    }
    if plan.actions.is_empty() {
        let _ = writeln!(io.out, "nothing to clean in {}", registry.dir().display());
    }
    let mut ending = if plan.unreadable.is_empty() {
        Ending::Held
    } else {
        Ending::Incomplete
    };
    if dry_run {
        for action in &plan.actions {
            let _ = writeln!(io.out, "would {}", action.describe());
        }
        return Ok(ending);
    }
    let outcome = cleaning::execute(&plan, &registry, &tools);
    for done in &outcome.done {
        let _ = writeln!(io.out, "done: {done}");
    }
    for failed in &outcome.failed {
        let _ = writeln!(io.err, "failed: {failed}");
        ending = Ending::Incomplete;
    }
    Ok(ending)
}

/// `bench sim serve`: resolves and validates the drill (bad input is exit
/// 2), serves it and prints the address, then waits for Ctrl-C.
pub fn sim_serve(options: &ServeCliOptions, io: &mut Io<'_>) -> Exit {
    let result = serve(options, io);
    finish(result, io)
}

fn serve(options: &ServeCliOptions, io: &mut Io<'_>) -> Result<Ending, CommandError> {
    let path = catalog::resolve(&options.drill)?;
    let drill = Drill::load(&path).map_err(CommandError::Drill)?;
    refuse_from_cluster(&drill, Backend::Sim)?;
    if let Some(kubeconfig) = &options.kubeconfig_out {
        drillbench_serve::may_write_kubeconfig(kubeconfig, options.force)?;
    }
    let serve_options = ServeOptions {
        listen: options.listen,
        kubeconfig_out: options.kubeconfig_out.clone(),
        clock: options.speed.map_or(Clock::Step, Clock::Speed),
        seed: options.seed,
        history_window: served::DEFAULT_HISTORY_WINDOW,
        standby_nodes: options.standby_nodes,
        limits: served::Limits {
            max_body_bytes: options.max_request_bytes,
            ..served::Limits::default()
        },
    };
    let server = Server::start(&drill, &serve_options)?;
    // The signals are caught from before the address is printed, so a
    // caller that stops the server as soon as it reads it stops it cleanly.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CommandError::CtrlC)?;
    let signals = runtime
        .block_on(async { Signals::new() })
        .map_err(CommandError::CtrlC)?;
    let _ = writeln!(
        io.out,
        "serving {} (seed {}) at {}",
        drill.name(),
        options.seed,
        server.url()
    );
    if let Some(path) = &options.kubeconfig_out {
        let _ = writeln!(io.out, "kubeconfig: {}", path.display());
    }
    let _ = io.out.flush();
    let waited = runtime.block_on(signals.wait());
    // Stopping removes the kubeconfig: its token is dead with the server.
    server.stop();
    waited.map_err(CommandError::CtrlC)?;
    Ok(Ending::Held)
}

/// Ctrl-C (SIGINT) and, on Unix, SIGTERM (what `kill`, systemd and
/// container runtimes send): either ends `bench sim serve` cleanly.
struct Signals {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    /// Catches the signals from now on (inside a runtime).
    fn new() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    async fn wait(mut self) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.interrupt.recv() => Ok(()),
                _ = self.terminate.recv() => Ok(()),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await
        }
    }
}
