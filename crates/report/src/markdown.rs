//! Markdown that reads well as a CI job summary: the verdicts first, the
//! evidence of failures next, the figures in a table.
//!
//! Within [`budget::MARKDOWN_BYTES`], so the whole file fits a step's job
//! summary: each failure shows its first [`budget::MARKDOWN_FACTS`] facts,
//! cells are clipped, and whatever is still over is cut from the end, so
//! the first failure is always there.

use std::fmt::Write;

use super::budget::{self, ELSEWHERE};
use super::not_simulated;
use super::timeline_summary;
use super::{ControlConclusion, DrillReport, Outcome, Verdict, format_ms};

/// Said where the report was cut to fit.
const CUT_NOTE: &str = "\n_Cut here to stay within 1 MiB (a job summary's limit); \
the complete report is in report.json._\n";

pub fn render(report: &DrillReport) -> String {
    let md = render_whole(report);
    budget::cut_at_line(&md, budget::MARKDOWN_BYTES, CUT_NOTE).unwrap_or_default()
}

fn render_whole(report: &DrillReport) -> String {
    let mut md = String::new();
    let failed = report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Fail)
        .count();
    let total = report.assertions.len();
    let headline = match report.outcome {
        Outcome::Passed => format!(
            "✅ `{}` passed: {total} of {total} assertions held",
            report.drill.name
        ),
        Outcome::Failed => format!(
            "❌ `{}` failed: {failed} of {total} assertions failed",
            report.drill.name
        ),
        Outcome::Aborted => format!(
            "❌ `{}` aborted: {failed} of {total} assertions failed",
            report.drill.name
        ),
        Outcome::Unproven => format!(
            "⚠️ `{}` unproven: every assertion held, but {failed} negative control(s) proved nothing",
            report.drill.name
        ),
    };
    let _ = writeln!(md, "## {headline}\n");
    let _ = writeln!(
        md,
        "backend `{}` · seed `{}` · {} of drill time · bench {} · drill `{}`\n",
        report.backend,
        report.seed,
        format_ms(report.duration_ms),
        report.bench_version,
        short_hash(&report.drill.content_hash),
    );
    if let Some(read) = &report.drill.from_cluster {
        let _ = writeln!(md, "Workloads read from the cluster: {read}\n");
    }
    // Near the top, so a summary cut to fit still says how to replay.
    let _ = writeln!(
        md,
        "Replay: `{}`\n",
        report.drill.replay(&report.backend, report.seed)
    );
    let _ = writeln!(md, "| | Assertion | Kind | Bound | Measured |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for a in &report.assertions {
        let mark = match a.verdict {
            Verdict::Pass => "✅",
            Verdict::Fail => "❌",
            Verdict::Skipped => "⏭️",
        };
        let _ = writeln!(
            md,
            "| {mark} | {} | {} | {} | {} |",
            cell(&a.name),
            a.kind,
            cell(&a.bound),
            cell(&a.measured)
        );
    }
    let failures: Vec<_> = report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Fail)
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(md, "\n### Failures");
        for a in failures {
            let _ = writeln!(md, "\n#### ❌ {}\n\n{}\n", cell(&a.name), cell(&a.summary));
            if a.evidence.is_empty() {
                continue;
            }
            let _ = writeln!(md, "| Time | Pod | Node | Rule | Detail |");
            let _ = writeln!(md, "|---|---|---|---|---|");
            for e in a.evidence.iter().take(budget::MARKDOWN_FACTS) {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {} | {} |",
                    format_ms(e.at_ms),
                    cell(e.pod.as_deref().unwrap_or("")),
                    cell(e.node.as_deref().unwrap_or("")),
                    cell(&e.rule),
                    cell(&e.detail)
                );
            }
            if a.evidence.len() > budget::MARKDOWN_FACTS {
                let _ = writeln!(
                    md,
                    "\n_{} of {} facts shown; {}._",
                    budget::MARKDOWN_FACTS,
                    a.evidence.len(),
                    budget::more(a.evidence.len() - budget::MARKDOWN_FACTS, "facts")
                );
            }
        }
    }
    controls(&mut md, report);
    if !report.figures.is_empty() {
        let _ = writeln!(md, "\n### Figures\n");
        let _ = writeln!(md, "| Figure | Value |");
        let _ = writeln!(md, "|---|---|");
        for (name, figure) in &report.figures {
            let value = match figure.unit.as_str() {
                "ms" => format_ms(figure.value.max(0.0) as u64),
                "ratio" => format!("{:.4}", figure.value),
                _ => format!("{} {}", figure.value, figure.unit),
            };
            let _ = writeln!(md, "| {} | {value} |", cell(name));
        }
    }
    workloads(&mut md, report);
    if !report.not_simulated.is_empty() {
        let groups = not_simulated::by_kind(&report.not_simulated);
        let _ = writeln!(
            md,
            "\n{}:\n",
            not_simulated::heading(report.not_simulated.len(), groups.len())
        );
        let kinds = groups.len();
        for group in groups.into_iter().take(budget::MARKDOWN_FACTS) {
            let (names, more) = group.names();
            let mut names: Vec<String> = names.iter().map(|n| format!("`{}`", cell(n))).collect();
            if more > 0 {
                names.push(format!("+{more} more"));
            }
            let _ = writeln!(
                md,
                "- {} ({}): {}",
                cell(group.kind),
                group.objects.len(),
                names.join(", ")
            );
        }
        if kinds > budget::MARKDOWN_FACTS {
            let _ = writeln!(
                md,
                "- {}",
                budget::more(kinds - budget::MARKDOWN_FACTS, "kinds")
            );
        }
    }
    timeline(&mut md, report);
    md
}

/// A summarised timeline's tallies, the first [`budget::MARKDOWN_FACTS`]
/// groups; nothing for a report that keeps its whole timeline.
fn timeline(md: &mut String, report: &DrillReport) {
    let Some(summary) = &report.timeline_summary else {
        return;
    };
    let _ = writeln!(md, "\n### Timeline (summarised)\n");
    let _ = writeln!(
        md,
        "{}\n",
        timeline_summary::note(summary, report.events_file.as_deref())
    );
    let _ = writeln!(md, "| Group | Objects | Events | First | Last | Kinds |");
    let _ = writeln!(md, "|---|---|---|---|---|---|");
    for g in summary.groups.iter().take(budget::MARKDOWN_FACTS) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | {} |",
            cell(&g.label()),
            g.objects,
            g.events,
            format_ms(g.first_ms),
            format_ms(g.last_ms),
            cell(&g.kinds_line())
        );
    }
    if summary.groups.len() > budget::MARKDOWN_FACTS {
        let _ = writeln!(
            md,
            "\n_{} of {} groups shown; {}._",
            budget::MARKDOWN_FACTS,
            summary.groups.len(),
            budget::more(summary.groups.len() - budget::MARKDOWN_FACTS, "groups")
        );
    }
}

/// The negative controls: weakened how → what failed → why that proves
/// the guard, and, where the weakened run left the real one, where.
fn controls(md: &mut String, report: &DrillReport) {
    let proofs: Vec<_> = report
        .controls()
        .filter_map(|a| a.control.as_ref().map(|p| (a, p)))
        .collect();
    if proofs.is_empty() {
        return;
    }
    let _ = writeln!(md, "\n### Negative controls\n");
    let _ = writeln!(
        md,
        "| | Control | Weakened how | What failed | Why that proves the guard |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|");
    for (a, p) in &proofs {
        let mark = match p.conclusion {
            ControlConclusion::Bites => "✅",
            ControlConclusion::NoTeeth => "❌",
            ControlConclusion::Inconclusive => "⚠️",
        };
        let _ = writeln!(
            md,
            "| {mark} {} | {} | {} | {} | {} |",
            p.conclusion.as_str(),
            cell(&a.name),
            cell(&p.weakened),
            cell(&p.failed),
            cell(&p.why)
        );
    }
    for (a, p) in proofs {
        if p.diverged.is_empty() {
            continue;
        }
        let _ = writeln!(md, "\n`{}` left the real run:\n", a.name);
        for line in p.diverged.iter().take(budget::MARKDOWN_FACTS) {
            let _ = writeln!(md, "- {}", cell(line));
        }
        if p.diverged.len() > budget::MARKDOWN_FACTS {
            let _ = writeln!(
                md,
                "- {}",
                budget::more(p.diverged.len() - budget::MARKDOWN_FACTS, "lines")
            );
        }
    }
}

/// A table cell: pipes escaped, newlines folded, so one value cannot break
/// the table, and clipped to [`budget::MARKDOWN_CELL`].
fn cell(text: &str) -> String {
    budget::clip(text, budget::MARKDOWN_CELL)
        .replace('|', "\\|")
        .replace('\n', " ")
}

fn short_hash(hash: &str) -> &str {
    let end = hash.char_indices().nth(19).map_or(hash.len(), |(i, _)| i);
    &hash[..end]
}

/// The workloads that dipped, lowest first in name order; the ones that
/// stayed whole are only counted, so the table stays short.
fn workloads(md: &mut String, report: &DrillReport) {
    if report.workloads.is_empty() {
        return;
    }
    let (dipped, whole): (Vec<_>, Vec<_>) = report
        .workloads
        .iter()
        .partition(|w| w.lowest_ready < w.desired || w.whole_ratio < 1.0);
    let _ = writeln!(md, "\n### Workloads\n");
    if !dipped.is_empty() {
        let _ = writeln!(md, "| Workload | Lowest ready | At | Time whole |");
        let _ = writeln!(md, "|---|---|---|---|");
        for w in dipped.iter().take(budget::MARKDOWN_FACTS) {
            let _ = writeln!(
                md,
                "| `{}` | {}/{} | {} | {:.4} |",
                cell(&w.workload),
                w.lowest_ready,
                w.desired,
                format_ms(w.lowest_at_ms),
                w.whole_ratio
            );
        }
        if dipped.len() > budget::MARKDOWN_FACTS {
            let _ = writeln!(
                md,
                "\n_{} more workloads dipped, {ELSEWHERE}._",
                dipped.len() - budget::MARKDOWN_FACTS
            );
        }
        let _ = writeln!(md);
    }
    let _ = writeln!(
        md,
        "{} of {} workloads had every replica ready throughout.",
        whole.len(),
        report.workloads.len()
    );
}
