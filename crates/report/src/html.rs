//! One self-contained HTML file per drill: the verdicts with their evidence,
//! then an SVG timeline with one lane per node, grouped by pool.
//!
//! Self-contained means the file is an artifact people open from a CI job
//! weeks later, offline: no scripts, fonts, styles or images are fetched,
//! the CSS is inline, and nothing needs JavaScript. The markup is also
//! well-formed XML (XHTML-compatible), so tests read it with an XML parser.
//!
//! Readability at scale is a design rule, not a hope: a pool's lanes fold
//! into a `<details>` element, and the pods of a node are drawn one by one
//! only up to [`POD_FOLD_THRESHOLD`]; beyond it they collapse into a density
//! bar of at most [`DENSITY_BUCKETS`] rectangles with a count. The pods a
//! failing assertion names are always drawn on their own, highlighted.
//! Lists and lanes stop at the budgets of [`budget`], each cut counted
//! (`+N more … in report.json`), so the file stays under
//! [`budget::HTML_BYTES`] at any scale.

use std::fmt::Write;

use super::{DrillReport, Outcome, Verdict, budget, format_ms};

mod geometry;
mod lanes;
mod model;
mod style;
mod timeline;

pub(crate) use style::CSS;
use timeline::timeline;

/// Most pods drawn as individual bars on one node lane; a node that ran
/// more is drawn as a density bar. Six 2-pixel rows fill the pod band of a
/// lane; more would be thinner than a pixel and unreadable anyway.
pub const POD_FOLD_THRESHOLD: usize = 6;

/// Time buckets of a folded node's density bar: about one per 20 pixels of
/// the plot, fine enough to see a drain, coarse enough to stay bounded.
pub const DENSITY_BUCKETS: usize = 60;

/// A pool with more lanes than this starts folded.
const POOL_OPEN_LANES: usize = 30;

const LABEL_W: f64 = 230.0;
const PLOT_W: f64 = 1100.0;
const RIGHT_W: f64 = 130.0;
const LANE_H: f64 = 22.0;
const STATE_H: f64 = 7.0;
const EVIDENCE_OPEN: usize = 5;

/// Renders a report as one self-contained HTML document.
pub fn render(report: &DrillReport) -> String {
    let mut h = String::new();
    let failed = report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Fail)
        .count();
    let total = report.assertions.len();
    let (mark, headline) = match report.outcome {
        Outcome::Passed => (
            "pass",
            format!("passed: {total} of {total} assertions held"),
        ),
        Outcome::Failed => (
            "fail",
            format!("failed: {failed} of {total} assertions failed"),
        ),
        Outcome::Aborted => (
            "fail",
            format!("aborted: {failed} of {total} assertions failed"),
        ),
        Outcome::Unproven => (
            "fail",
            format!(
                "unproven: every assertion held, but {failed} negative control(s) proved nothing"
            ),
        ),
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width\"/>\
         <title>{} {}</title><style>{CSS}</style></head>\n<body>\n",
        esc(&report.drill.name),
        esc(&headline)
    );
    let _ = writeln!(
        h,
        "<header><h1 class=\"{mark}\"><code>{}</code> {}</h1><p class=\"meta\">{}</p>\
         <p class=\"meta\">backend <code>{}</code> · seed <code>{}</code> · {} of drill time · \
         bench {} · drill <code>{}</code></p>{}</header>",
        esc(&report.drill.name),
        esc(&headline),
        esc(&report.drill.description),
        esc(&report.backend),
        report.seed,
        format_ms(report.duration_ms),
        esc(&report.bench_version),
        esc(&report.drill.content_hash),
        report
            .drill
            .from_cluster
            .as_ref()
            .map(|read| format!(
                "<p class=\"meta\">workloads read from the cluster: {}</p>",
                esc(read)
            ))
            .unwrap_or_default(),
    );
    verdicts(&mut h, report);
    controls(&mut h, report);
    timeline(&mut h, report);
    timeline_summary(&mut h, report);
    figures(&mut h, report);
    workloads(&mut h, report);
    if !report.not_simulated.is_empty() {
        let groups = super::not_simulated::by_kind(&report.not_simulated);
        let _ = write!(
            h,
            "<section id=\"not-simulated\"><h2>{}</h2><ul>",
            super::not_simulated::heading(report.not_simulated.len(), groups.len())
        );
        let kinds = groups.len();
        for group in groups.into_iter().take(budget::HTML_ROWS) {
            let (names, more) = group.names();
            let mut names: Vec<String> = names
                .iter()
                .map(|n| format!("<code>{}</code>", text(n)))
                .collect();
            if more > 0 {
                names.push(format!("+{more} more"));
            }
            let _ = write!(
                h,
                "<li>{} ({}): {}</li>",
                text(group.kind),
                group.objects.len(),
                names.join(", ")
            );
        }
        if kinds > budget::HTML_ROWS {
            let _ = write!(
                h,
                "<li>{}</li>",
                text(&budget::more(kinds - budget::HTML_ROWS, "kinds"))
            );
        }
        let _ = writeln!(h, "</ul></section>");
    }
    let _ = writeln!(
        h,
        "<section id=\"replay\"><h2>Replay</h2><pre>{}</pre></section>",
        esc(&report.drill.replay(&report.backend, report.seed))
    );
    h.push_str("</body></html>\n");
    h
}

fn verdicts(h: &mut String, report: &DrillReport) {
    h.push_str(
        "<section id=\"verdicts\"><h2>Verdicts</h2><table class=\"verdicts\"><thead><tr>\
         <th>Verdict</th><th>Assertion</th><th>Bound</th><th>Measured</th><th>Evidence</th>\
         </tr></thead><tbody>\n",
    );
    for (i, a) in report.assertions.iter().enumerate() {
        let (class, word) = match a.verdict {
            Verdict::Pass => ("pass", "pass"),
            Verdict::Fail => ("fail", "FAIL"),
            Verdict::Skipped => ("skip", "skipped"),
        };
        let _ = write!(
            h,
            "<tr class=\"{class}\" id=\"{}\"><td class=\"verdict\">{word}</td><td><b>{}</b><br/><span class=\"kind\">{}</span></td>\
             <td><code>{}</code></td><td>{}</td><td><p>{}</p>",
            assertion_anchor(i),
            esc(&a.name),
            esc(&a.kind),
            text(&a.bound),
            text(&a.measured),
            text(&a.summary)
        );
        if !a.evidence.is_empty() {
            let drawn = &a.evidence[..a.evidence.len().min(budget::HTML_FACTS)];
            let (shown, rest) = drawn.split_at(drawn.len().min(EVIDENCE_OPEN));
            evidence_list(h, shown);
            if !rest.is_empty() {
                let _ = write!(h, "<details><summary>{} more facts</summary>", rest.len());
                evidence_list(h, rest);
                h.push_str("</details>");
            }
            if a.evidence.len() > drawn.len() {
                let _ = write!(
                    h,
                    "<p class=\"more\">{}</p>",
                    budget::more(a.evidence.len() - drawn.len(), "facts")
                );
            }
        }
        h.push_str("</td></tr>\n");
    }
    h.push_str("</tbody></table></section>\n");
}

/// The negative controls: weakened how → what failed → why that proves
/// the guard, with both runs' traces folded away.
fn controls(h: &mut String, report: &DrillReport) {
    let proofs: Vec<_> = report
        .controls()
        .filter_map(|a| a.control.as_ref().map(|p| (a, p)))
        .collect();
    if proofs.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"controls\"><h2>Negative controls</h2><table class=\"verdicts\"><thead><tr>\
         <th>Conclusion</th><th>Control</th><th>Weakened how</th><th>What failed</th>\
         <th>Why that proves the guard</th></tr></thead><tbody>\n",
    );
    for (a, p) in proofs {
        let class = if p.conclusion == super::ControlConclusion::Bites {
            "pass"
        } else {
            "fail"
        };
        let _ = write!(
            h,
            "<tr class=\"{class}\"><td class=\"verdict\">{}</td><td><b>{}</b></td><td>{}</td>\
             <td>{}</td><td><p>{}</p>",
            esc(p.conclusion.as_str()),
            esc(&a.name),
            text(&p.weakened),
            text(&p.failed),
            text(&p.why)
        );
        if !p.diverged.is_empty() {
            h.push_str("<ul class=\"evidence\">");
            for line in p.diverged.iter().take(budget::HTML_FACTS) {
                let _ = write!(h, "<li>{}</li>", text(line));
            }
            more_items(h, p.diverged.len(), budget::HTML_FACTS, "lines");
            h.push_str("</ul>");
        }
        for (title, trace) in [
            ("real run", &p.real_trace),
            ("weakened run", &p.weakened_trace),
        ] {
            if trace.is_empty() {
                continue;
            }
            let _ = write!(
                h,
                "<details><summary>{title}: {} steps</summary><ul class=\"evidence\">",
                trace.len()
            );
            for t in trace.iter().take(budget::HTML_FACTS) {
                let _ = write!(
                    h,
                    "<li><span class=\"at\">{}</span> {}: {}</li>",
                    format_ms(t.at_ms),
                    text(&t.step),
                    text(&t.what)
                );
            }
            more_items(h, trace.len(), budget::HTML_FACTS, "steps");
            h.push_str("</ul></details>");
        }
        h.push_str("</td></tr>\n");
    }
    h.push_str("</tbody></table></section>\n");
}

fn evidence_list(h: &mut String, evidence: &[super::Evidence]) {
    h.push_str("<ul class=\"evidence\">");
    for e in evidence {
        let _ = write!(h, "<li><span class=\"at\">{}</span>", format_ms(e.at_ms));
        if let Some(pod) = &e.pod {
            let _ = write!(h, " pod <code>{}</code>", esc(pod));
        }
        if let Some(node) = &e.node {
            let _ = write!(h, " node <code>{}</code>", esc(node));
        }
        let _ = write!(
            h,
            ": {} <span class=\"rule\">[rule: {}]</span>",
            text(&e.detail),
            text(&e.rule)
        );
        if !e.labels.is_empty() {
            let labels: Vec<String> = e
                .labels
                .iter()
                .map(|(k, v)| format!("{}={}", esc(k), esc(v)))
                .collect();
            let _ = write!(
                h,
                " <span class=\"labels\">labels: {}</span>",
                labels.join(", ")
            );
        }
        h.push_str("</li>");
    }
    h.push_str("</ul>");
}

fn figures(h: &mut String, report: &DrillReport) {
    if report.figures.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"figures\"><h2>Figures</h2><table class=\"figures\"><thead><tr><th>Figure</th><th>Value</th></tr></thead><tbody>\n",
    );
    for (name, figure) in &report.figures {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            esc(name),
            esc(&figure_value(figure.value, &figure.unit))
        );
    }
    h.push_str("</tbody></table></section>\n");
}

fn workloads(h: &mut String, report: &DrillReport) {
    if report.workloads.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"workloads\"><h2>Workloads</h2><table class=\"figures\"><thead><tr>\
         <th>Workload</th><th>Lowest ready</th><th>At</th><th>Time whole</th></tr></thead><tbody>\n",
    );
    for w in report.workloads.iter().take(budget::HTML_ROWS) {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}/{}</td><td>{}</td><td>{:.4}</td></tr>",
            esc(&w.workload),
            w.lowest_ready,
            w.desired,
            format_ms(w.lowest_at_ms),
            w.whole_ratio
        );
    }
    if report.workloads.len() > budget::HTML_ROWS {
        let _ = writeln!(
            h,
            "<tr><td colspan=\"4\">{}</td></tr>",
            budget::more(report.workloads.len() - budget::HTML_ROWS, "workloads")
        );
    }
    h.push_str("</tbody></table></section>\n");
}

/// A summarised timeline's tallies, the first [`budget::HTML_ROWS`]
/// groups; nothing for a report that keeps its whole timeline.
fn timeline_summary(h: &mut String, report: &DrillReport) {
    let Some(summary) = &report.timeline_summary else {
        return;
    };
    let _ = writeln!(
        h,
        "<section id=\"timeline-summary\"><h2>Timeline, summarised</h2><p>{}</p>\
         <table class=\"figures\"><thead><tr><th>Group</th><th>Objects</th><th>Events</th>\
         <th>First</th><th>Last</th><th>Kinds</th></tr></thead><tbody>",
        text(&super::timeline_summary::note(
            summary,
            report.events_file.as_deref()
        ))
    );
    for g in summary.groups.iter().take(budget::HTML_ROWS) {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            text(&g.label()),
            g.objects,
            g.events,
            format_ms(g.first_ms),
            format_ms(g.last_ms),
            text(&g.kinds_line())
        );
    }
    if summary.groups.len() > budget::HTML_ROWS {
        let _ = writeln!(
            h,
            "<tr><td colspan=\"6\">{}</td></tr>",
            budget::more(summary.groups.len() - budget::HTML_ROWS, "groups")
        );
    }
    h.push_str("</tbody></table></section>\n");
}

/// A figure as people read it: durations as `4m12s`, ratios to four places.
pub(crate) fn figure_value(value: f64, unit: &str) -> String {
    match unit {
        "ms" => format_ms(ms(value)),
        "ratio" => format!("{value:.4}"),
        _ => format!("{value} {unit}"),
    }
}

/// A figure's milliseconds as an integer; negative and non-finite values
/// (which no backend should record) become zero rather than a panic.
fn ms(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value as u64
    } else {
        0
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut t: String = text.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// The id of an assertion's row in the verdict table, by its index (names
/// may hold anything; indices are safe in an id).
pub(crate) fn assertion_anchor(index: usize) -> String {
    format!("assertion-{index}")
}

/// Free text from a report, clipped to [`budget::HTML_TEXT`] and escaped.
fn text(t: &str) -> String {
    esc(&budget::clip(t, budget::HTML_TEXT))
}

/// The `+N more` item of a list of `total` of which `shown` were drawn.
fn more_items(h: &mut String, total: usize, shown: usize, what: &str) {
    if total > shown {
        let _ = write!(
            h,
            "<li class=\"more\">{}</li>",
            budget::more(total - shown, what)
        );
    }
}

/// Escapes text for HTML and XML alike (both content and attributes).
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML; drop them.
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_covers_markup_quotes_and_drops_control_characters() {
        assert_eq!(
            esc("<a href=\"x\">it's & \u{7}done\n</a>"),
            "&lt;a href=&quot;x&quot;&gt;it&#39;s &amp; done\n&lt;/a&gt;"
        );
    }

    #[test]
    fn truncation_counts_characters_and_marks_the_cut() {
        assert_eq!(truncate("prod-worker-1", 13), "prod-worker-1");
        assert_eq!(truncate("prod-worker-12", 13), "prod-worker-…");
        assert_eq!(truncate("ääää", 3), "ää…");
        assert_eq!(plural(1, "pod"), "1 pod");
        assert_eq!(plural(0, "pod"), "0 pods");
    }

    #[test]
    fn figures_read_as_durations_and_ratios() {
        assert_eq!(figure_value(252_000.0, "ms"), "4m12s");
        assert_eq!(figure_value(-5.0, "ms"), "0s");
        assert_eq!(figure_value(f64::NAN, "ms"), "0s");
        assert_eq!(figure_value(0.99876, "ratio"), "0.9988");
        assert_eq!(figure_value(3.0, "nodes"), "3 nodes");
        assert_eq!(ms(f64::INFINITY), 0);
        assert_eq!(ms(1.9), 1);
    }

    #[test]
    fn a_drill_on_the_clusters_workloads_says_where_they_were_read() {
        let mut report: DrillReport =
            serde_json::from_str(include_str!("../../../tests/fixtures/reports/passing.json"))
                .expect("fixture parses");
        let line = "read from the cluster: context `prod`, 12 objects";
        // Control: a drill of files says nothing of a cluster.
        assert!(!render(&report).contains(line));
        assert!(!super::super::markdown::render(&report).contains(line));
        report.drill.from_cluster = Some("context `prod`, 12 objects".to_owned());
        assert!(render(&report).contains("read from the cluster: context `prod`, 12 objects"));
        assert!(super::super::markdown::render(&report).contains(line));
    }

    #[test]
    fn evidence_past_the_first_few_facts_folds() {
        let mut report: DrillReport =
            serde_json::from_str(include_str!("../../../tests/fixtures/reports/passing.json"))
                .expect("fixture parses");
        let fact = |i: u64| super::super::Evidence {
            at_ms: i * 1_000,
            pod: Some(format!("ns/p{i}")),
            node: None,
            rule: "r".to_owned(),
            detail: "d".to_owned(),
            labels: Default::default(),
        };
        report.assertions.truncate(1);
        report.assertions[0].evidence = (0..7).map(fact).collect();
        let mut h = String::new();
        verdicts(&mut h, &report);
        assert_eq!(h.matches("<li>").count(), 7);
        assert_eq!(h.matches("<details>").count(), 1);
        let (open, folded) = h
            .split_once("<details><summary>2 more facts</summary>")
            .unwrap();
        assert_eq!(open.matches("<li>").count(), EVIDENCE_OPEN);
        assert_eq!(folded.matches("<li>").count(), 2);

        let facts = &report.assertions[0].evidence;
        let mut h = String::new();
        evidence_list(&mut h, &facts[..EVIDENCE_OPEN]);
        assert_eq!(h.matches("<li>").count(), EVIDENCE_OPEN);
        assert!(h.starts_with("<ul class=\"evidence\"><li><span class=\"at\">0s</span> pod <code>ns/p0</code>: d <span class=\"rule\">[rule: r]</span></li>"), "{h}");
    }
}
