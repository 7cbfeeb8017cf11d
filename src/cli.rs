//! The command line: clap definitions and dispatch only, no logic.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use drillbench::app::{self, Backend, Io, RunOptions};
use drillbench::audit;
use drillbench_model::exit::Exit;
use drillbench_preflight as preflight;

/// A simulation and chaos-drill test bench for Kubernetes platforms.
///
/// Exit codes: 0 every assertion held; 1 an assertion failed or a preflight
/// said not ready; 2 bad input; 3 infrastructure error.
#[derive(Debug, Parser)]
#[command(name = "bench", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List the built-in drills, one line each.
    List {
        /// Only the drills this backend can run (the others are named on
        /// stderr, with why).
        #[arg(long, value_enum)]
        backend: Option<BackendArg>,
    },
    /// The built-in drills as files.
    #[command(subcommand)]
    Scenarios(ScenariosCommand),
    /// Check drill files for syntax and meaning without running anything.
    Validate {
        /// Drill files, or built-in drill names, to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Check the drills as they would run on this ClusterSnapshot
        /// (see `bench run --snapshot`).
        #[arg(long, value_name = "FILE")]
        snapshot: Option<PathBuf>,
    },
    /// Run a drill: a built-in name (see `bench list`) or a drill file.
    Run(RunArgs),
    /// Read-only go/no-go checks before a destructive operation.
    #[command(subcommand)]
    Preflight(PreflightCommand),
    /// Kyverno policies run with the bench's engine.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// Static audits of rendered manifests.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Re-render a stored JSON drill report, or compare two.
    Report(ReportArgs),
    /// Print the JSON Schema of the drill language.
    Schema,
    /// The simulator on its own.
    #[command(subcommand)]
    Sim(SimCommand),
    /// Capture a live cluster, read-only, into a snapshot file: nodes,
    /// workloads and their pods where they run, storage, budgets, leases,
    /// Velero and Kyverno objects. Secrets and ConfigMaps by name only.
    ///
    /// Exit 0 when written; 2 for a bad kubeconfig, context or -o, or a
    /// cluster over --max-objects; 3 when the cluster cannot be read.
    Snapshot(SnapshotArgs),
    /// Remove what crashed kind and Talos runs left behind: the clusters
    /// the run registry recorded and containers labelled drillbench.dev/run.
    /// Nothing else is touched.
    Clean {
        /// List what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Subcommand)]
enum ScenariosCommand {
    /// Write the built-in drills and the files they read (ksail import,
    /// manifests, schema) under DIR, keeping their layout, to edit and run
    /// as files. Nothing that exists with other contents is overwritten.
    Export {
        /// The folder to write to (created if missing).
        dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum PolicyCommand {
    /// Run Kyverno CLI test suites (`kyverno-test.yaml`, found recursively
    /// under folders) and print a result table like `kyverno test`.
    ///
    /// Exit 0 when every expected result matches; 1 when one does not; 2 on
    /// bad input, said as file:line:column.
    Test {
        /// Test files or folders holding them.
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// A live background check: one policy's validate rules run, as
    /// Kyverno's background scan runs them, over the running Pods and the
    /// Nodes of a cluster, listing what breaks it. Reads only.
    ///
    /// Exit 0 when nothing breaks it; 1 when a pod or node does (or a rule
    /// could not be evaluated); 2 on bad input; 3 when the cluster could
    /// not be read.
    Scan {
        /// The kubeconfig of the cluster to read.
        #[arg(long, value_name = "FILE")]
        kubeconfig: PathBuf,
        /// The context in the kubeconfig (default: its current context).
        #[arg(long, value_name = "CTX")]
        context: Option<String>,
        /// The policy to check, by name (`ns/name` for a namespaced Policy).
        #[arg(long, value_name = "NAME")]
        policy: String,
        /// Files holding the policy (and others, ignored).
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
enum SimCommand {
    /// Serve a drill's cluster from the simulator behind a Kubernetes API
    /// on loopback, for kubectl and kube-rs. Ctrl-C stops it.
    Serve(ServeArgs),
}

#[derive(Debug, Args)]
struct SnapshotArgs {
    /// The kubeconfig of the cluster to read.
    #[arg(long, value_name = "FILE")]
    kubeconfig: PathBuf,
    /// The context in the kubeconfig (default: its current context).
    #[arg(long, value_name = "CTX")]
    context: Option<String>,
    /// Read namespaced objects in this namespace only (repeatable; default:
    /// all). Cluster-scoped objects are always read.
    #[arg(long = "namespace", value_name = "NS")]
    namespaces: Vec<String>,
    /// The snapshot file to write. A file there that is not a snapshot is
    /// kept and the command refused, unless --force.
    #[arg(short = 'o', long = "out", value_name = "FILE")]
    out: PathBuf,
    /// Overwrite an -o file that is not a snapshot.
    #[arg(long)]
    force: bool,
    /// The most objects to capture; more is an error (default: the drill
    /// budget's 100 000 objects).
    #[arg(long, value_name = "N")]
    max_objects: Option<u64>,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// A built-in drill name or a path to a drill file.
    #[arg(required_unless_present = "snapshot")]
    drill: Option<String>,
    /// Serve a snapshot file (`bench snapshot`) instead of a drill: the
    /// captured objects, frozen, read-only.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["drill", "speed", "step", "seed", "standby_nodes"])]
    snapshot: Option<PathBuf>,
    /// Loopback address to listen on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8001")]
    listen: std::net::SocketAddr,
    /// Write a kubeconfig for the server to this file (removed when the
    /// server stops). A file there that the bench did not write is kept
    /// and the command refused, unless --force.
    #[arg(long, value_name = "FILE")]
    kubeconfig_out: Option<PathBuf>,
    /// Overwrite a --kubeconfig-out file the bench did not write.
    #[arg(long, requires = "kubeconfig_out")]
    force: bool,
    /// Virtual time runs this many times faster than the wall clock.
    #[arg(long, default_value_t = 1.0, conflicts_with = "step")]
    speed: f64,
    /// Virtual time moves only through `POST /bench/v1/advance?by=30s`.
    #[arg(long)]
    step: bool,
    /// Seed of the simulator's random generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Serve the cluster as `--backend kind` and `talos` provision it: N
    /// tainted standby nodes per autoscaled pool and no autoscaler (the
    /// bench's emulated one releases them).
    #[arg(long, value_name = "N")]
    standby_nodes: Option<u32>,
    /// Refuse request bodies larger than this many bytes (413), as the
    /// API server's `--max-request-bytes` does.
    #[arg(long, value_name = "BYTES", default_value_t = drillbench_serve::limits::DEFAULT_MAX_BODY_BYTES)]
    max_request_bytes: usize,
}

#[derive(Debug, Args)]
struct RunArgs {
    /// A built-in drill name or a path to a drill file.
    drill: String,
    /// Where the drill runs.
    #[arg(long, value_enum, default_value_t = BackendArg::Sim)]
    backend: BackendArg,
    /// Seed of the simulator's random generator; recorded in every report.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of seeds to sweep, starting at --seed.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    runs: u64,
    /// Output folder of the reports (default: reports/DRILL-seedSEED/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Run slice I of N of the sweep's seeds (contiguous, 1-based), for a
    /// CI matrix or an Indexed Job; writes `tally-I-of-N.json` beside the
    /// slice's reports, for `bench report merge`.
    #[arg(long, value_name = "I/N", value_parser = app::parse_shard)]
    shard: Option<app::Shard>,
    /// The kubeconfig of an existing cluster (`--backend kubeconfig`).
    #[arg(long, value_name = "FILE", required_if_eq("backend", "kubeconfig"))]
    kubeconfig: Option<PathBuf>,
    /// The context in the kubeconfig (default: its current context).
    #[arg(long, value_name = "CTX", requires = "kubeconfig")]
    context: Option<String>,
    /// Lets the drill change this context's cluster (faults, scaling) though
    /// the bench did not create it; name the context to be sure it is the
    /// one meant.
    #[arg(long, value_name = "CTX", requires = "kubeconfig")]
    allow_destructive: Option<String>,
    /// kind and Talos: tainted standby nodes booted per autoscaled pool,
    /// the most the bench's emulated autoscaler can add to one.
    #[arg(long, value_name = "N", default_value_t = 2)]
    standby_nodes: u32,
    /// What standard output carries: `text` for people (inside GitHub
    /// Actions, with `::error` annotations), `github` for the annotations
    /// anywhere, `json` for the report alone. Inside Actions the Markdown
    /// report is also appended to $GITHUB_STEP_SUMMARY.
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    format: RunFormat,
    /// Run the drill on a ClusterSnapshot (`bench snapshot`) on the
    /// simulator: the snapshot's nodes and workloads, its pods where they
    /// run now, replace the drill's own cluster and workloads.
    #[arg(long, value_name = "FILE")]
    snapshot: Option<PathBuf>,
    /// The most timeline events `report.json` stores whole; a run with more
    /// keeps the drill's own events (steps, faults, waits, control plane,
    /// autoscaler) and tallies the rest per workload and per pool.
    #[arg(long, value_name = "N", default_value_t = drillbench_report::timeline_summary::DEFAULT_TIMELINE_BUDGET)]
    timeline_budget: usize,
    /// Also write every event of the run to `events.ndjson` beside the
    /// reports, one JSON object per line (one run only, not a sweep).
    #[arg(long)]
    events_ndjson: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RunFormat {
    Text,
    Github,
    Json,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BackendArg {
    Sim,
    Kind,
    Talos,
    Kubeconfig,
}

impl BackendArg {
    fn backend(self) -> Backend {
        match self {
            BackendArg::Sim => Backend::Sim,
            BackendArg::Kind => Backend::Kind,
            BackendArg::Talos => Backend::Talos,
            BackendArg::Kubeconfig => Backend::Kubeconfig,
        }
    }
}

#[derive(Debug, Subcommand)]
enum PreflightCommand {
    /// Go/no-go for a control-plane node recreate.
    ///
    /// A drop-in for `cp-recreate-drill-preflight.sh`: prints `target=`,
    /// `target_is_vip_holder=`, `ready=` and one `reason=` per failing guard.
    /// Exit 0 ready, 1 not ready, 2 input error, 3 cluster unreachable.
    CpRecreate(CpRecreateArgs),
}

#[derive(Debug, Args)]
struct CpRecreateArgs {
    /// The control-plane node to recreate.
    #[arg(long, value_name = "NODE")]
    target: String,
    /// `kubectl get nodes -o json`.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "context",
        conflicts_with = "context"
    )]
    nodes: Option<PathBuf>,
    /// `kubectl get backups.velero.io -n velero -o json`.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "context",
        conflicts_with = "context"
    )]
    backups: Option<PathBuf>,
    /// Voting etcd members (LEARNER=false rows of `talosctl etcd members`).
    #[arg(long, value_name = "N", value_parser = preflight::parse_count,
          required_unless_present = "context", conflicts_with = "context")]
    etcd_members: Option<u64>,
    /// etcd learners (LEARNER=true rows of `talosctl etcd members`).
    #[arg(long, value_name = "N", value_parser = preflight::parse_count,
          required_unless_present = "context", conflicts_with = "context")]
    etcd_learners: Option<u64>,
    /// The node holding the floating endpoint; empty or absent reports unknown.
    #[arg(long, value_name = "NODE")]
    vip_holder: Option<String>,
    /// The Velero schedule whose newest backup gates the drill.
    #[arg(long, value_name = "NAME", default_value = preflight::DEFAULT_SCHEDULE)]
    schedule: String,
    /// A backup that finished this many hours ago or longer is too old.
    #[arg(long, value_name = "N", value_parser = preflight::parse_count,
          default_value_t = preflight::DEFAULT_MAX_BACKUP_AGE_HOURS)]
    max_backup_age_hours: u64,
    /// Decide as of this time, in seconds since the epoch [default: now].
    #[arg(long, value_name = "EPOCH_SECONDS", value_parser = preflight::parse_count)]
    now: Option<u64>,
    /// Live mode: read nodes and backups from this kubeconfig context, and
    /// etcd membership through `talosctl etcd members`.
    #[arg(long, value_name = "CTX")]
    context: Option<String>,
    /// Live mode: the Talos node `talosctl` asks for the etcd membership.
    #[arg(long, value_name = "NODE", requires = "context")]
    talos_node: Option<String>,
    /// Live mode: the `talosctl` executable.
    #[arg(
        long,
        value_name = "PATH",
        default_value = "talosctl",
        requires = "context"
    )]
    talosctl: PathBuf,
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Fail-closed audit: every consumer of a storage class must require a node label.
    ///
    /// Exit 0 when every consumer passes; 1 when any fails or is unknown, or
    /// when no consumer is found at all; 2 on unreadable or malformed input.
    Placement(PlacementArgs),
}

#[derive(Debug, Args)]
struct PlacementArgs {
    /// The storage class whose consumers are audited.
    #[arg(long, value_name = "NAME")]
    storage_class: String,
    /// The node label every consumer must require, as `key=value`.
    #[arg(long, value_name = "KEY=VALUE", value_parser = audit::parse_required_label)]
    require_label: audit::RequiredLabel,
    /// Output format.
    #[arg(long, value_enum, default_value_t = AuditFormat::Text)]
    format: AuditFormat,
    /// A Flux post-build variable's value, as a Kustomization's
    /// `postBuild.substitute` gives it; repeatable. Wins over
    /// `--substitute-from`.
    #[arg(long, value_name = "NAME=VALUE", value_parser = audit::parse_substitution)]
    substitute: Vec<(String, String)>,
    /// A ConfigMap or Secret file whose data are more variables, as
    /// `postBuild.substituteFrom` names one; repeatable, a later file wins.
    #[arg(long, value_name = "FILE")]
    substitute_from: Vec<PathBuf>,
    /// A consumer-map file (`kind: ConsumerMap`): where a chart's values or
    /// an operator's resource keep each component's storage class and
    /// placement, so those components are judged instead of `unknown`;
    /// repeatable.
    #[arg(long = "consumers", value_name = "FILE")]
    consumer_maps: Vec<PathBuf>,
    /// Rendered manifests (multi-document YAML); `-` reads standard input.
    #[arg(required = true, value_name = "FILE")]
    files: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum AuditFormat {
    Text,
    Json,
}

/// `bench report FILE.json [--format …]` or `bench report compare OLD NEW`:
/// the positional form stays for compatibility, the subcommand takes over
/// when its name comes first.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
struct ReportArgs {
    #[command(subcommand)]
    command: Option<ReportCommand>,
    /// A `report.json` written by `bench run` (or a sweep's JSON).
    #[arg(required = true, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
    format: ReportFormat,
}

#[derive(Debug, Subcommand)]
enum ReportCommand {
    /// What got worse from OLD to NEW: new failures, negative controls that
    /// stopped biting, durations up more than 10 % and more than 30 s.
    ///
    /// Exit 0 no regression, 1 a regression, 2 bad input or reports of
    /// different drills or drill contents (unless --force).
    Compare(CompareArgs),
    /// Folds the `tally-I-of-N.json` files of a sharded sweep (`bench run
    /// --runs N --shard I/N`) into the sweep report one run of all their
    /// seeds writes, byte for byte.
    ///
    /// Exit as the sweep would: 0 every seed held, 1 a seed failed, 4 only
    /// controls proved nothing, 2 unreadable, overlapping or mixed tallies.
    Merge(MergeArgs),
}

#[derive(Debug, Args)]
struct MergeArgs {
    /// The shards' tally files.
    #[arg(required = true, value_name = "TALLY")]
    tallies: Vec<PathBuf>,
    /// Output folder of the sweep reports (default:
    /// reports/DRILL-seedFIRST-runsN/).
    #[arg(long)]
    out: Option<PathBuf>,
    /// What standard output carries, as for `bench run`.
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    format: RunFormat,
}

#[derive(Debug, Args)]
struct CompareArgs {
    /// The earlier `report.json`.
    old: PathBuf,
    /// The later `report.json`.
    new: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    format: CompareFormat,
    /// Compare reports of different drills or drill contents anyway.
    #[arg(long)]
    force: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ReportFormat {
    Md,
    Junit,
    Html,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CompareFormat {
    Text,
    Md,
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(error),
    };
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let terminal = stderr.is_terminal();
    let color = terminal && std::env::var_os("NO_COLOR").is_none();
    let mut io = Io {
        out: &mut stdout,
        err: &mut stderr,
        color,
        terminal,
    };
    let exit = match cli.command {
        Command::List { backend } => app::list(backend.map(BackendArg::backend), &mut io),
        Command::Scenarios(ScenariosCommand::Export { dir }) => {
            app::export_scenarios(&dir, &mut io)
        }
        Command::Validate { files, snapshot } => {
            app::validate(&files, snapshot.as_deref(), &mut io)
        }
        Command::Run(args) => app::run(&args.into_options(), &mut io),
        Command::Preflight(PreflightCommand::CpRecreate(args)) => {
            drop(stdout);
            return preflight_cp_recreate(args);
        }
        Command::Policy(PolicyCommand::Test { paths }) => app::policy_test(&paths, &mut io),
        Command::Policy(PolicyCommand::Scan {
            kubeconfig,
            context,
            policy,
            paths,
        }) => app::policy_scan(&kubeconfig, context.as_deref(), &policy, &paths, &mut io),
        Command::Audit(AuditCommand::Placement(args)) => {
            drop(stdout);
            return audit_placement(args);
        }
        Command::Report(ReportArgs {
            command: Some(ReportCommand::Compare(c)),
            ..
        }) => app::report_compare(&c.old, &c.new, c.format.into(), c.force, &mut io),
        Command::Report(ReportArgs {
            command: Some(ReportCommand::Merge(m)),
            ..
        }) => app::report_merge(&m.tallies, m.out.as_deref(), m.format.into(), &mut io),
        Command::Report(ReportArgs {
            file: Some(file),
            format,
            ..
        }) => app::report(&file, format.into(), &mut io),
        // clap requires FILE when no subcommand is given.
        Command::Report(_) => Exit::BadInput,
        Command::Schema => app::schema(&mut io),
        Command::Clean { dry_run } => app::clean(dry_run, &mut io),
        Command::Snapshot(args) => app::snapshot(
            &app::SnapshotOptions {
                kubeconfig: args.kubeconfig,
                context: args.context,
                namespaces: args.namespaces,
                out: args.out,
                force: args.force,
                max_objects: args.max_objects,
            },
            &mut io,
        ),
        Command::Sim(SimCommand::Serve(ServeArgs {
            snapshot: Some(snapshot),
            listen,
            kubeconfig_out,
            force,
            max_request_bytes,
            ..
        })) => app::sim_serve_snapshot(
            &app::ServeSnapshotOptions {
                snapshot,
                listen,
                kubeconfig_out,
                force,
                max_request_bytes,
            },
            &mut io,
        ),
        Command::Sim(SimCommand::Serve(args)) => {
            let options = drillbench_serve::CliOptions {
                // clap requires DRILL when --snapshot is not given.
                drill: args.drill.unwrap_or_default(),
                listen: args.listen,
                kubeconfig_out: args.kubeconfig_out,
                force: args.force,
                speed: (!args.step).then_some(args.speed),
                seed: args.seed,
                standby_nodes: args.standby_nodes,
                max_request_bytes: args.max_request_bytes,
            };
            app::sim_serve(&options, &mut io)
        }
    };
    exit.into()
}

impl RunArgs {
    fn into_options(self) -> RunOptions {
        RunOptions {
            drill: self.drill,
            backend: self.backend.backend(),
            seed: self.seed,
            runs: self.runs,
            out: self.out,
            kubeconfig: self.kubeconfig,
            context: self.context,
            allow_destructive: self.allow_destructive,
            standby_nodes: self.standby_nodes,
            shard: self.shard,
            format: self.format.into(),
            snapshot: self.snapshot,
            timeline_budget: self.timeline_budget,
            events_ndjson: self.events_ndjson,
        }
    }
}

impl From<RunFormat> for app::OutputFormat {
    fn from(format: RunFormat) -> Self {
        match format {
            RunFormat::Text => app::OutputFormat::Text,
            RunFormat::Github => app::OutputFormat::Github,
            RunFormat::Json => app::OutputFormat::Json,
        }
    }
}

impl From<ReportFormat> for app::ReportFormat {
    fn from(format: ReportFormat) -> Self {
        match format {
            ReportFormat::Md => app::ReportFormat::Markdown,
            ReportFormat::Junit => app::ReportFormat::Junit,
            ReportFormat::Html => app::ReportFormat::Html,
        }
    }
}

impl From<CompareFormat> for app::CompareFormat {
    fn from(format: CompareFormat) -> Self {
        match format {
            CompareFormat::Text => app::CompareFormat::Text,
            CompareFormat::Md => app::CompareFormat::Markdown,
        }
    }
}

/// Reports a command-line error. The preflight's contract is that every
/// input error still prints `ready=false`, flags included, so a wrapper that
/// only greps stdout can never mistake a typo for a go.
fn usage_error(error: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let informational = matches!(
        error.kind(),
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
    );
    if !informational
        && std::env::args_os()
            .nth(1)
            .is_some_and(|arg| arg == "preflight")
    {
        // Not `println!`: it panics when stdout is closed.
        let _ = writeln!(std::io::stdout(), "ready=false");
    }
    let error = with_meant_flag(error);
    // Printing help or an error can only fail if the terminal is gone.
    let _ = error.print();
    if informational {
        Exit::Success.into()
    } else {
        Exit::BadInput.into()
    }
}

/// Flags typed for another flag than the one spelt most alike: clap
/// suggests `--seed` for `--seeds`, but many seeds are `--runs`.
const MEANT_FLAGS: [(&str, &str); 1] = [(
    "--seeds",
    "to sweep many seeds, use '--runs N' (N seeds from --seed)",
)];

/// The error with a tip for a flag of [`MEANT_FLAGS`], beside clap's own.
fn with_meant_flag(mut error: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument {
        return error;
    }
    let typed = match error.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(typed)) => typed.clone(),
        _ => return error,
    };
    let flag = typed.split('=').next().unwrap_or_default();
    if let Some((_, tip)) = MEANT_FLAGS.iter().find(|(meant, _)| *meant == flag) {
        error.insert(
            ContextKind::Suggested,
            ContextValue::StyledStrs(vec![(*tip).into()]),
        );
    }
    error
}

fn preflight_cp_recreate(args: CpRecreateArgs) -> ExitCode {
    let source = match (
        args.context,
        args.nodes,
        args.backups,
        args.etcd_members,
        args.etcd_learners,
    ) {
        (Some(context), ..) => preflight::Source::Live(preflight::live::LiveSource {
            context,
            talos_node: args.talos_node,
            talosctl: args.talosctl,
            talosctl_timeout: preflight::live::CALL_TIMEOUT,
        }),
        (None, Some(nodes), Some(backups), Some(etcd_members), Some(etcd_learners)) => {
            preflight::Source::Files {
                nodes,
                backups,
                etcd_members,
                etcd_learners,
            }
        }
        // clap's `required_unless_present` rules this out; stay fail-closed anyway.
        _ => {
            let _ = writeln!(std::io::stdout(), "ready=false");
            let _ = writeln!(
                std::io::stderr(),
                "error: --nodes, --backups, --etcd-members and --etcd-learners are required without --context"
            );
            return Exit::BadInput.into();
        }
    };
    let request = preflight::Request {
        target: args.target,
        vip_holder: args.vip_holder,
        schedule: args.schedule,
        max_backup_age_hours: args.max_backup_age_hours,
        now: args.now,
        source,
    };
    preflight::run(
        &request,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
    .into()
}

fn audit_placement(args: PlacementArgs) -> ExitCode {
    let request = audit::Request {
        storage_class: args.storage_class,
        required_label: args.require_label,
        format: match args.format {
            AuditFormat::Text => audit::Format::Text,
            AuditFormat::Json => audit::Format::Json,
        },
        files: args.files,
        substitute: args.substitute.into_iter().collect(),
        substitute_from: args.substitute_from,
        consumer_maps: args.consumer_maps,
    };
    audit::run(
        &request,
        &mut std::io::stdout().lock(),
        &mut std::io::stderr().lock(),
    )
    .into()
}
