//! What each `bench` command does, independent of how its arguments were
//! parsed. Every command writes to the streams it is given and returns the
//! [`Exit`] the CLI contract promises, so tests can drive them directly.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::backend::sim::SimBackend;
use crate::drill::Drill;
use crate::exit::Exit;
use crate::report::{DrillReport, Outcome, Verdict, format_ms, junit, markdown, write_all};
use crate::run::{Provision, RunError, run_drill};
use crate::scenario::{self, catalog};
use crate::sim::Simulation;

/// Output streams of a command, and whether to colour diagnostics.
pub struct Io<'a> {
    /// Standard output: the command's result.
    pub out: &'a mut dyn Write,
    /// Standard error: diagnostics and progress.
    pub err: &'a mut dyn Write,
    /// Colour diagnostics (stderr is a terminal).
    pub color: bool,
}

/// `bench list`: the built-in drills, one line each.
pub fn list(io: &mut Io<'_>) -> Exit {
    match catalog::list() {
        Ok(entries) => {
            let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
            for entry in entries {
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
        other => {
            let _ = writeln!(
                io.err,
                "error: drill `{}` is valid, but the {} backend is not built yet; nothing ran",
                drill.name(),
                other.name()
            );
            return Exit::Infrastructure;
        }
    };
    if options.runs > 1 {
        return sweep(&drill, options, provision, io);
    }
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

/// `bench run --runs N`: N seeds from `--seed`, the distribution of every
/// measured figure and the failing seeds.
fn sweep(drill: &Drill, options: &RunOptions, provision: &Provision<'_>, io: &mut Io<'_>) -> Exit {
    let mut figures: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut failing = Vec::new();
    for seed in options.seed..options.seed + options.runs {
        let report = match run_drill(drill, seed, provision) {
            Ok(report) => report,
            Err(e) => {
                let _ = writeln!(io.err, "error: seed {seed}: {e}");
                return Exit::Infrastructure;
            }
        };
        for (name, figure) in &report.figures {
            figures.entry(name.clone()).or_default().push(figure.value);
        }
        if !report.passed() {
            failing.push(seed);
        }
    }
    let _ = writeln!(
        io.out,
        "{} on {}: {} runs from seed {}, {} failed",
        drill.name(),
        options.backend.name(),
        options.runs,
        options.seed,
        failing.len()
    );
    for (name, mut values) in figures {
        values.sort_by(f64::total_cmp);
        let pick =
            |q: f64| values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        let _ = writeln!(
            io.out,
            "  {name}: p50 {} p95 {} p99 {} max {}",
            pick(0.50),
            pick(0.95),
            pick(0.99),
            values[values.len() - 1]
        );
    }
    for seed in failing.iter().take(20) {
        let _ = writeln!(
            io.out,
            "  failing seed {seed}: bench run {} --seed {seed}",
            drill.source.path.display()
        );
    }
    if failing.is_empty() {
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
}

/// `bench report FILE.json --format md|junit`: re-renders a stored report.
pub fn report(file: &Path, format: ReportFormat, io: &mut Io<'_>) -> Exit {
    match DrillReport::read(file) {
        Ok(report) => {
            let text = match format {
                ReportFormat::Markdown => markdown::render(&report),
                ReportFormat::Junit => junit::render(&report),
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
