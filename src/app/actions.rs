//! Where a command's result goes: standard output in the format asked for,
//! and, inside a GitHub Actions step, the job summary and `::error`
//! annotations, so a workflow needs no shell to publish them.

use std::path::PathBuf;

use crate::io::Io;
use drillbench_report::github::{self, Appended};

/// What `bench run` prints on standard output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// The verdict lines for people; inside GitHub Actions, followed by the
    /// `::error` annotations.
    #[default]
    Text,
    /// The verdict lines and the `::error` annotations, wherever it runs.
    Github,
    /// The JSON report (or sweep) alone; the verdict lines go to stderr.
    /// No annotations: they would break the JSON.
    Json,
}

/// One result in each of its forms.
pub(super) struct Output {
    /// The verdict lines and where the reports went.
    pub terminal: String,
    pub json: String,
    /// What the job summary gets.
    pub markdown: String,
    /// `::error` lines, already capped.
    pub annotations: Vec<String>,
}

/// The GitHub Actions step this process runs in, if any: `GITHUB_ACTIONS`
/// is `true` in every step, `GITHUB_STEP_SUMMARY` names the step's file.
struct Step {
    summary: Option<PathBuf>,
}

impl Step {
    fn detect() -> Option<Step> {
        (std::env::var_os("GITHUB_ACTIONS").is_some_and(|v| v == "true")).then(|| Step {
            summary: std::env::var_os("GITHUB_STEP_SUMMARY")
                .filter(|p| !p.is_empty())
                .map(PathBuf::from),
        })
    }
}

impl Output {
    /// Prints in `format`; inside Actions, also appends the summary. A
    /// summary that cannot be written is a warning: the drill's verdict,
    /// not the job page, decides the exit code.
    pub(super) fn publish(&self, format: OutputFormat, io: &mut Io<'_>) {
        let step = Step::detect();
        match format {
            OutputFormat::Json => {
                let _ = write!(io.out, "{}", self.json);
                let _ = write!(io.err, "{}", self.terminal);
            }
            OutputFormat::Text | OutputFormat::Github => {
                let _ = write!(io.out, "{}", self.terminal);
                if format == OutputFormat::Github || step.is_some() {
                    for line in &self.annotations {
                        let _ = writeln!(io.out, "{line}");
                    }
                }
            }
        }
        let Some(path) = step.and_then(|s| s.summary) else {
            return;
        };
        match github::append_summary(&path, &self.markdown) {
            Ok(Appended::Whole) => {}
            Ok(Appended::Cut) => {
                let _ = writeln!(
                    io.err,
                    "the job summary was cut to stay within GitHub's 1 MiB per step"
                );
            }
            Ok(Appended::Nothing) => {
                let _ = writeln!(
                    io.err,
                    "warning: the job summary already holds 1 MiB; this report was not added"
                );
            }
            Err(e) => {
                let _ = writeln!(
                    io.err,
                    "warning: cannot append to the job summary {}: {e}",
                    path.display()
                );
            }
        }
    }
}
