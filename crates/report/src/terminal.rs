//! The ten-second summary `bench run` prints: the verdict, one line per
//! assertion (failing ones with their one-sentence reason), the replay
//! command. Within budget whatever the drill caught: no line longer than
//! [`budget::TERMINAL_LINE`] characters, at most
//! [`budget::TERMINAL_ASSERTIONS`] assertions listed, failing ones first.

use super::budget::{self, clip};
use super::{DrillReport, Outcome, Verdict, format_ms};

/// The widest the summary aligns assertion names.
const NAME_COLUMN: usize = 40;

/// The summary of a run, each line within [`budget::TERMINAL_LINE`].
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
        Outcome::Unproven => "UNPROVEN",
    };
    let skipped = report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Skipped)
        .count();
    let skipped = match skipped {
        0 => String::new(),
        n => format!(" ({n} skipped on this backend)"),
    };
    let mut lines = vec![format!(
        "{} on {}, seed {}: {verdict}, {held} of {} assertions held{skipped}, {} of drill time",
        report.drill.name,
        report.backend,
        report.seed,
        report.assertions.len(),
        format_ms(report.duration_ms)
    )];
    // Aligned up to a point: a longer name only pushes its own line out.
    let width = report
        .assertions
        .iter()
        .map(|a| a.name.chars().count())
        .max()
        .unwrap_or(0)
        .min(NAME_COLUMN);
    // Failing ones first when not all fit, so a cut never hides a failure
    // behind passing lines; in the drill's order otherwise.
    let mut listed: Vec<_> = report.assertions.iter().collect();
    if listed.len() > budget::TERMINAL_ASSERTIONS {
        listed.sort_by_key(|a| a.verdict != Verdict::Fail);
    }
    for a in listed.iter().take(budget::TERMINAL_ASSERTIONS) {
        let mark = match a.verdict {
            Verdict::Pass => "ok  ",
            Verdict::Fail => "FAIL",
            Verdict::Skipped => "skip",
        };
        lines.push(format!(
            "  {mark} {:width$}  {} (bound {})",
            a.name, a.measured, a.bound
        ));
        if a.verdict == Verdict::Fail {
            lines.push(format!("       {}", a.summary));
        }
    }
    if listed.len() > budget::TERMINAL_ASSERTIONS {
        lines.push(format!(
            "  {} (and in report.md)",
            budget::more(listed.len() - budget::TERMINAL_ASSERTIONS, "assertions")
        ));
    }
    lines.push(format!(
        "replay: {}",
        report.drill.replay(&report.backend, report.seed)
    ));
    let mut text = String::new();
    for line in lines {
        // A name or a message may carry its own newlines: each piece is a
        // terminal line of its own and is held to the budget.
        for piece in line.split('\n') {
            text.push_str(&clip(piece, budget::TERMINAL_LINE));
            text.push('\n');
        }
    }
    text
}
