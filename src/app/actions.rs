//! Where a command's result goes: standard output in the format asked for,
//! and, inside a GitHub Actions step, the job summary and `::error`
//! annotations, so a workflow needs no shell to publish them.

use std::path::PathBuf;

use crate::io::Io;
use drillbench_report::github::{self, Annotations, Appended, MAX_ANNOTATIONS};

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
    /// What to annotate, capped when printed.
    pub annotations: Annotations,
}

/// The GitHub Actions step this process runs in, if any: `GITHUB_ACTIONS`
/// is `true` in every step, `GITHUB_STEP_SUMMARY` names the step's file.
struct Step {
    summary: Option<PathBuf>,
    /// Where the bench runs of this step count the annotations they
    /// printed: GitHub shows 10 per step, however many runs share it (the
    /// nightly runs every drill in one step). The summary file's path is
    /// unique to the step, so its hash names the counter in `RUNNER_TEMP`.
    counter: Option<PathBuf>,
}

impl Step {
    fn detect() -> Option<Step> {
        if std::env::var_os("GITHUB_ACTIONS").is_none_or(|v| v != "true") {
            return None;
        }
        let summary = std::env::var_os("GITHUB_STEP_SUMMARY")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from);
        let counter = summary.as_ref().and_then(|summary| {
            use sha2::{Digest, Sha256};
            let temp = std::env::var_os("RUNNER_TEMP").filter(|p| !p.is_empty())?;
            let digest = Sha256::digest(summary.as_os_str().as_encoded_bytes());
            let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
            Some(PathBuf::from(temp).join(format!("drillbench-annotations-{hex}")))
        });
        Some(Step { summary, counter })
    }

    /// Annotations earlier runs of this step printed (0 if none counted).
    fn annotated(&self) -> usize {
        self.counter
            .as_ref()
            .and_then(|c| std::fs::read_to_string(c).ok())
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0)
    }

    fn count(&self, total: usize) {
        if let Some(counter) = &self.counter {
            // Only the annotations' completeness depends on it; a counter
            // that cannot be written leaves each run its own 10.
            let _ = std::fs::write(counter, total.to_string());
        }
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
                    let before = step.as_ref().map_or(0, Step::annotated);
                    let lines = self
                        .annotations
                        .lines(MAX_ANNOTATIONS.saturating_sub(before));
                    for line in &lines {
                        let _ = writeln!(io.out, "{line}");
                    }
                    if let Some(step) = &step
                        && !lines.is_empty()
                    {
                        step.count(before + lines.len());
                    }
                    if lines.len() < self.annotations.len()
                        && before + lines.len() >= MAX_ANNOTATIONS
                    {
                        let _ = writeln!(
                            io.err,
                            "this step has printed the {MAX_ANNOTATIONS} annotations GitHub shows; the job summary has every failure"
                        );
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
