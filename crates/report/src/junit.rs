//! JUnit XML: one testsuite per drill, one testcase per assertion, a
//! failing assertion as a `<failure>` carrying its evidence, so a CI system
//! fails the job and shows why.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::budget::{self, clip};
use super::{AssertionResult, DrillReport, NEGATIVE_CONTROL, TraceStep, Verdict, format_ms};

/// Renders a stored report as JUnit XML, as deterministic as the report:
/// the run's wall time was not recorded, so the suite has no `time`
/// rather than an invented one (drill time is its `drill-time-ms`
/// property either way).
pub fn render(report: &DrillReport) -> String {
    render_timed(report, None)
}

/// Renders a report as JUnit XML, the suite's `time` being `wall`, the
/// wall-clock time the run took: CI systems add suite times up into a
/// job's duration, and a simulated hour that took a millisecond would
/// make that a lie. The testcases' times are drill time, over which each
/// verdict was judged; the suite's drill time is a property.
///
/// With a wall time the file differs between two runs of the same seed,
/// which is why the golden digests pin `report.json` alone and tests
/// compare JUnit rendered by [`render`].
pub fn render_timed(report: &DrillReport, wall: Option<Duration>) -> String {
    let mut suite = TestSuite::new(report.drill.name.as_str());
    if let Some(wall) = wall {
        suite.set_time(wall);
    }
    suite.add_properties([
        Property::new("backend", report.backend.as_str()),
        Property::new("seed", report.seed.to_string()),
        Property::new("bench-version", report.bench_version.as_str()),
        Property::new("content-hash", report.drill.content_hash.as_str()),
        Property::new("drill-time-ms", report.duration_ms.to_string()),
        Property::new(
            "replay",
            report.drill.replay(&report.backend, report.seed).as_str(),
        ),
    ]);
    // Only where they say something, so a small drill's file is as it was.
    if let Some(summary) = &report.timeline_summary {
        suite.add_properties([
            Property::new("timeline-events", summary.events.to_string()),
            Property::new("timeline-kept", summary.kept.to_string()),
            Property::new("timeline-budget", summary.budget.to_string()),
        ]);
    }
    if let Some(file) = &report.events_file {
        suite.add_property(Property::new("events-file", file.as_str()));
    }
    for assertion in &report.assertions {
        let status = match assertion.verdict {
            Verdict::Pass => TestCaseStatus::success(),
            Verdict::Fail => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                let message = format!(
                    "{} (bound {}, measured {})",
                    assertion.summary, assertion.bound, assertion.measured
                );
                status.set_message(clip(&message, budget::JUNIT_MESSAGE));
                status.set_type(assertion.kind.as_str());
                status.set_description(failure_text(assertion));
                status
            }
            Verdict::Skipped => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(clip(&assertion.summary, budget::JUNIT_MESSAGE));
                status
            }
        };
        let mut case = TestCase::new(assertion.name.as_str(), status);
        // A CI page groups by classname: controls get their own, so they
        // are never mistaken for the platform's assertions.
        case.set_classname(if assertion.is_control() {
            format!("drillbench.{}.{NEGATIVE_CONTROL}", report.drill.name)
        } else {
            format!("drillbench.{}", report.drill.name)
        });
        case.set_time(Duration::from_millis(judged_over_ms(report, assertion)));
        case.add_property(Property::new("drillbench.kind", assertion.kind.as_str()));
        case.add_property(Property::new(
            "bound",
            clip(&assertion.bound, budget::JUNIT_LINE),
        ));
        case.add_property(Property::new(
            "measured",
            clip(&assertion.measured, budget::JUNIT_LINE),
        ));
        if let Some(proof) = &assertion.control {
            case.add_property(Property::new(
                "drillbench.conclusion",
                proof.conclusion.as_str(),
            ));
            case.add_property(Property::new(
                "weakened",
                clip(&proof.weakened, budget::JUNIT_LINE),
            ));
        }
        suite.add_test_case(case);
    }
    let mut junit = Report::new("drillbench");
    if let Some(wall) = wall {
        junit.set_time(wall);
    }
    junit.add_test_suite(suite);
    xml_chars_only(junit.to_string().unwrap_or_default())
}

/// Drops the characters XML 1.0 forbids (most C0 controls, U+FFFE, U+FFFF,
/// lone surrogates), even as character references. A drill's names and a
/// cluster's messages may carry them, and one such character makes the
/// whole file unreadable to every JUnit consumer. quick-junit escapes
/// markup but passes these through; none can be part of markup, so
/// dropping them from the rendered text is safe.
pub(super) fn xml_chars_only(xml: String) -> String {
    let allowed = |c: char| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..);
    if xml.chars().all(allowed) {
        return xml;
    }
    xml.chars().filter(|&c| allowed(c)).collect()
}

/// The drill time a verdict was judged over: the run for an assertion,
/// the weakened run for a control that re-ran the drill (its last step),
/// nothing for one that ran nothing (an admission control).
fn judged_over_ms(report: &DrillReport, assertion: &AssertionResult) -> u64 {
    match &assertion.control {
        None => report.duration_ms,
        Some(proof) => proof.weakened_trace.last().map_or(0, |t| t.at_ms),
    }
}

/// A failure's evidence; for a control, both runs' traces too, so the
/// CI page shows where the weakened run went. Each list shows its first
/// [`budget::JUNIT_FACTS`] lines and counts the rest.
fn failure_text(assertion: &AssertionResult) -> String {
    let mut text = evidence_text(assertion);
    if let Some(proof) = &assertion.control {
        for (what, line) in [
            ("weakened", &proof.weakened),
            ("failed", &proof.failed),
            ("why", &proof.why),
        ] {
            push_line(&mut text, &format!("{what}: {line}"));
        }
        for line in proof.diverged.iter().take(budget::JUNIT_FACTS) {
            push_line(&mut text, &format!("diverged: {line}"));
        }
        more_lines(&mut text, proof.diverged.len(), "diverged lines");
        trace_text(&mut text, "real run", &proof.real_trace);
        trace_text(&mut text, "weakened run", &proof.weakened_trace);
    }
    text
}

/// One line of a failure's text, clipped to [`budget::JUNIT_LINE`].
fn push_line(text: &mut String, line: &str) {
    text.push_str(&clip(line, budget::JUNIT_LINE));
    text.push('\n');
}

/// The `+N more` line of a list of `total` cut at [`budget::JUNIT_FACTS`].
fn more_lines(text: &mut String, total: usize, what: &str) {
    if total > budget::JUNIT_FACTS {
        push_line(text, &budget::more(total - budget::JUNIT_FACTS, what));
    }
}

fn trace_text(text: &mut String, title: &str, trace: &[TraceStep]) {
    if trace.is_empty() {
        return;
    }
    text.push_str(&format!("{title}:\n"));
    for t in trace.iter().take(budget::JUNIT_FACTS) {
        push_line(
            text,
            &format!("  at {} {}: {}", format_ms(t.at_ms), t.step, t.what),
        );
    }
    more_lines(text, trace.len(), "steps");
}

fn evidence_text(assertion: &AssertionResult) -> String {
    let mut text = String::new();
    for e in assertion.evidence.iter().take(budget::JUNIT_FACTS) {
        let mut line = format!("at {}", format_ms(e.at_ms));
        if let Some(pod) = &e.pod {
            line.push_str(&format!(" pod {pod}"));
        }
        if let Some(node) = &e.node {
            line.push_str(&format!(" node {node}"));
        }
        line.push_str(&format!(": {} [rule: {}]", e.detail, e.rule));
        if !e.labels.is_empty() {
            let labels: Vec<String> = e.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            line.push_str(&format!(" labels: {}", labels.join(",")));
        }
        push_line(&mut text, &line);
    }
    more_lines(&mut text, assertion.evidence.len(), "facts");
    text
}

#[cfg(test)]
mod tests {
    use super::xml_chars_only;

    /// XML 1.0 §2.2 `Char`: #x9 | #xA | #xD | [#x20-#xD7FF] |
    /// [#xE000-#xFFFD] | [#x10000-#x10FFFF].
    #[test]
    fn only_what_xml_allows_is_kept() {
        let text = "a\u{1}b\u{FFFF}c\u{FFFE}d\u{8}e\tf\ng\u{10000}h\u{E000}é".to_owned();
        assert_eq!(xml_chars_only(text), "abcde\tf\ng\u{10000}h\u{E000}é");
        let clean = "<a name=\"ok\"/>\n".to_owned();
        assert_eq!(xml_chars_only(clean.clone()), clean);
    }
}
