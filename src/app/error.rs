//! How a command ended, and the one place that turns that into the exit
//! code of the CLI contract and the text a person reads on stderr.

use std::path::PathBuf;

use crate::io::Io;
use crate::run::RunError;
use drillbench_backend::BackendError;
use drillbench_backend::clean::{CleanError, RegistryError};
use drillbench_backend::kube::KubeError;
use drillbench_backend::kube::capture::CaptureError;
use drillbench_model::exit::Exit;
use drillbench_model::scenario::catalog::{ExportError, ResolveError};
use drillbench_model::scenario::diagnostic::{Diagnostic, Diagnostics};
use drillbench_model::snapshot::SnapshotError;
use drillbench_report::ReportError;
use drillbench_report::compare::CompareError;
use drillbench_report::sweep::SweepError;
use drillbench_serve::ServeError;

/// How a command that ran to its end came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Everything held, or there was nothing to judge.
    Held,
    /// A drill assertion failed, or a report regressed.
    Failed,
    /// Every assertion held, but a negative control proved nothing (no
    /// teeth, or inconclusive): the drill needs fixing, not the platform.
    Unproven,
    /// Some inputs were bad, each said where it was met.
    BadInputs,
    /// Something was left undone, each said where it was met.
    Incomplete,
    /// A sweep was stopped by a signal; what ran was reported.
    Interrupted,
}

/// Why a command stopped before its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommandError {
    #[error("the drill is not valid")]
    Drill(#[source] Diagnostics),
    #[error("the built-in drills cannot be listed")]
    Catalog(#[source] Diagnostic),
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    #[error("cannot export the built-in drills")]
    Export(#[source] ExportError),
    #[error("--backend kubeconfig needs --kubeconfig FILE")]
    NoKubeconfig,
    #[error("--runs sweeps seeds of the simulator; a real cluster runs one drill at a time")]
    SweepOnCluster,
    #[error("--runs {runs} is outside 1..={max}")]
    Runs { runs: u64, max: u64 },
    #[error("--seed {seed} --runs {runs} goes past the last seed, {}", u64::MAX)]
    SeedRange { seed: u64, runs: u64 },
    #[error(
        "--shard {shard} splits --runs {runs} into shards with no seed; expected --runs of at least {count}"
    )]
    ShardTooSmall {
        shard: String,
        runs: u64,
        count: u64,
    },
    #[error("--shard slices a sweep of the simulator; other backends run one drill at a time")]
    ShardOnCluster,
    #[error(
        "--snapshot runs a drill on the simulator; a real cluster is its own snapshot (pass --backend sim)"
    )]
    SnapshotOnCluster,
    #[error(
        "--events-ndjson writes one run's events; a sweep keeps no run's timeline (drop --runs/--shard, or run the seed you want to see with --seed)"
    )]
    EventsOfSweep,
    #[error(
        "drill `{drill}` takes its workloads from the cluster (`fromCluster:`), which the {backend} backend does not have: it builds its own; pass --backend kubeconfig with the cluster's kubeconfig, or --snapshot FILE of it"
    )]
    FromClusterOffCluster {
        drill: String,
        backend: &'static str,
    },
    #[error("no tally to merge; expected the tally-I-of-N.json files of a sharded sweep")]
    NothingToMerge,
    #[error("{} names no context to use; pass --context CTX", .0.display())]
    NoContext(PathBuf),
    #[error(
        "drill `{drill}` changes the cluster ({changes}), but context `{context}` was not created by the bench (no {label} label on kube-system or on a node); pass --allow-destructive {context} to let it"
    )]
    NotOurs {
        drill: String,
        changes: String,
        context: String,
        label: &'static str,
    },
    #[error(transparent)]
    RunLabel(BackendError),
    #[error(transparent)]
    Refused(RunError),
    #[error("cannot handle Ctrl-C, so teardown could not be promised")]
    Interrupts(#[source] std::io::Error),
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("seed {seed}")]
    Seed {
        seed: u64,
        #[source]
        source: RunError,
    },
    #[error("--out {} cannot hold the reports", .path.display())]
    OutDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the reports to {}", .path.display())]
    WriteReports {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("a sweep worker panicked")]
    SweepPanicked,
    #[error(transparent)]
    Sweep(#[from] SweepError),
    #[error("cannot write the sweep to {}", .path.display())]
    WriteSweep {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error(transparent)]
    ReadSweep(SweepError),
    #[error(transparent)]
    Compare(#[from] CompareError),
    #[error("cannot look for leftovers")]
    Leftovers(#[source] CleanError),
    #[error(transparent)]
    Serve(#[from] ServeError),
    #[error(transparent)]
    PolicySuite(#[from] drillbench_kyverno::test_runner::SuiteError),
    #[error(transparent)]
    PolicyLive(#[from] drillbench_kyverno::live::LiveError),
    #[error("cannot read the cluster's pods and nodes")]
    LiveRead(#[source] drillbench_backend::kube::KubeError),
    #[error("cannot wait for Ctrl-C")]
    CtrlC(#[source] std::io::Error),
    #[error("cannot capture the cluster")]
    Capture(#[source] CaptureError),
    #[error(
        "{} exists and is not a snapshot `bench snapshot` wrote; pass --force to overwrite it",
        .0.display()
    )]
    SnapshotNotOurs(PathBuf),
    #[error("-o {} is a folder; expected a file name", .0.display())]
    SnapshotOutIsDir(PathBuf),
    #[error("-o {}: its folder does not exist", .0.display())]
    SnapshotOutNoFolder(PathBuf),
    #[error("cannot write the snapshot to {}", .path.display())]
    WriteSnapshot {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    SnapshotFile(SnapshotError),
    /// Refused before the drill touched anything: said so after the cause.
    #[error(transparent)]
    NothingRan(Box<CommandError>),
}

impl CommandError {
    /// The same error, said to have stopped the run before it began.
    pub(crate) fn nothing_ran(self) -> Self {
        CommandError::NothingRan(Box::new(self))
    }
}

/// The exit code of a command's result: the CLI contract in one match.
pub(crate) fn exit_code(result: &Result<Ending, CommandError>) -> Exit {
    match result {
        Ok(Ending::Held) => Exit::Success,
        Ok(Ending::Failed) => Exit::AssertionFailed,
        Ok(Ending::Unproven) => Exit::ControlUnproven,
        Ok(Ending::Interrupted) => Exit::Interrupted,
        Ok(Ending::BadInputs) => Exit::BadInput,
        Ok(Ending::Incomplete) => Exit::Infrastructure,
        Err(error) => error_exit(error),
    }
}

fn error_exit(error: &CommandError) -> Exit {
    use CommandError as E;
    match error {
        E::Drill(_)
        | E::Resolve(_)
        | E::Export(_)
        | E::NoKubeconfig
        | E::SweepOnCluster
        | E::Runs { .. }
        | E::OutDir { .. }
        | E::SeedRange { .. }
        | E::ShardTooSmall { .. }
        | E::ShardOnCluster
        | E::SnapshotOnCluster
        | E::EventsOfSweep
        | E::FromClusterOffCluster { .. }
        | E::NothingToMerge
        | E::NoContext(_)
        | E::NotOurs { .. }
        | E::Report(_)
        | E::ReadSweep(_)
        | E::Compare(_)
        | E::PolicySuite(_)
        | E::PolicyLive(_)
        | E::SnapshotNotOurs(_)
        | E::SnapshotOutIsDir(_)
        | E::SnapshotOutNoFolder(_)
        | E::SnapshotFile(_) => Exit::BadInput,
        // The kubeconfig, its context, or a cluster larger than the cap
        // the flags allow: the input is wrong, nothing was read or written.
        E::Capture(
            CaptureError::Connect(KubeError::Kubeconfig { .. })
            | CaptureError::TooManyObjects { .. },
        ) => Exit::BadInput,
        E::Serve(
            ServeError::NotLoopback(_)
            | ServeError::Speed(_)
            | ServeError::KubeconfigNotOurs { .. },
        ) => Exit::BadInput,
        E::Leftovers(e) => e.exit(),
        E::NothingRan(inner) => error_exit(inner),
        E::Run(RunError::OverBudget { .. })
        | E::Seed {
            source: RunError::OverBudget { .. },
            ..
        } => Exit::BadInput,
        E::Catalog(_)
        | E::RunLabel(_)
        | E::Refused(_)
        | E::Interrupts(_)
        | E::Registry(_)
        | E::Run(_)
        | E::Seed { .. }
        | E::WriteReports { .. }
        | E::SweepPanicked
        | E::Sweep(_)
        | E::WriteSweep { .. }
        | E::Serve(_)
        | E::LiveRead(_)
        | E::CtrlC(_)
        | E::Capture(_)
        | E::WriteSnapshot { .. } => Exit::Infrastructure,
    }
}

/// Writes what stopped a command (if anything did) and returns its exit.
pub(crate) fn finish(result: Result<Ending, CommandError>, io: &mut Io<'_>) -> Exit {
    if let Err(error) = &result {
        let _ = write!(io.err, "{}", render(error, io.color));
    }
    exit_code(&result)
}

/// What a person reads: a drill's diagnostics as they render themselves,
/// anything else as `error: ` and the chain of causes on one line.
fn render(error: &CommandError, color: bool) -> String {
    match error {
        CommandError::Drill(diagnostics) => diagnostics.render(color),
        CommandError::Catalog(diagnostic) => diagnostic.render(color),
        CommandError::NothingRan(inner) => {
            format!(
                "error: {}; nothing ran\n",
                drillbench_model::error_text::error_chain(inner.as_ref())
            )
        }
        other => format!(
            "error: {}\n",
            drillbench_model::error_text::error_chain(other)
        ),
    }
}
