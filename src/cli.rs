//! The command line: clap definitions and dispatch only, no logic.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use drillbench::app::{self, Backend, Io, RunOptions};
use drillbench::exit::Exit;

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
    List,
    /// Check drill files for syntax and meaning without running anything.
    Validate {
        /// Drill files to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Run a drill: a built-in name (see `bench list`) or a drill file.
    Run(RunArgs),
    /// Read-only go/no-go checks before a destructive operation.
    #[command(subcommand)]
    Preflight(PreflightCommand),
    /// Static audits of rendered manifests.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Re-render a stored JSON drill report.
    Report(ReportArgs),
    /// Print the JSON Schema of the drill language.
    Schema,
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
    /// Output folder of the reports [default: reports/<drill>-seed<seed>/].
    #[arg(long)]
    out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BackendArg {
    Sim,
    Kind,
    Talos,
    Kubeconfig,
}

#[derive(Debug, Subcommand)]
enum PreflightCommand {
    /// Go/no-go for a control-plane node recreate.
    CpRecreate,
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Fail-closed audit: every consumer of a storage class must require a node label.
    Placement,
}

#[derive(Debug, Args)]
struct ReportArgs {
    /// A `report.json` written by `bench run`.
    file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Md)]
    format: ReportFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ReportFormat {
    Md,
    Junit,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut stdout = std::io::stdout().lock();
    let mut stderr = std::io::stderr();
    let color = stderr.is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let mut io = Io {
        out: &mut stdout,
        err: &mut stderr,
        color,
    };
    let exit = match cli.command {
        Command::List => app::list(&mut io),
        Command::Validate { files } => app::validate(&files, &mut io),
        Command::Run(args) => app::run(&args.into_options(), &mut io),
        Command::Preflight(PreflightCommand::CpRecreate) => {
            not_built("bench preflight cp-recreate")
        }
        Command::Audit(AuditCommand::Placement) => not_built("bench audit placement"),
        Command::Report(args) => app::report(&args.file, args.format.into(), &mut io),
        Command::Schema => app::schema(&mut io),
    };
    exit.into()
}

fn not_built(command: &str) -> Exit {
    eprintln!("error: `{command}` is not built yet");
    Exit::Infrastructure
}

impl RunArgs {
    fn into_options(self) -> RunOptions {
        RunOptions {
            drill: self.drill,
            backend: match self.backend {
                BackendArg::Sim => Backend::Sim,
                BackendArg::Kind => Backend::Kind,
                BackendArg::Talos => Backend::Talos,
                BackendArg::Kubeconfig => Backend::Kubeconfig,
            },
            seed: self.seed,
            runs: self.runs,
            out: self.out,
        }
    }
}

impl From<ReportFormat> for app::ReportFormat {
    fn from(format: ReportFormat) -> Self {
        match format {
            ReportFormat::Md => app::ReportFormat::Markdown,
            ReportFormat::Junit => app::ReportFormat::Junit,
        }
    }
}
