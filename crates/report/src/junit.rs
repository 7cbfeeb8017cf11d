//! JUnit XML: one testsuite per drill, one testcase per assertion, a
//! failing assertion as a `<failure>` carrying its evidence, so a CI system
//! fails the job and shows why.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::{AssertionResult, DrillReport, NEGATIVE_CONTROL, TraceStep, Verdict, format_ms};

/// Renders a report as JUnit XML.
///
/// Times are drill time (virtual on the simulator), so the file is as
/// deterministic as the report it comes from.
pub fn render(report: &DrillReport) -> String {
    let mut suite = TestSuite::new(report.drill.name.as_str());
    suite.set_time(Duration::from_millis(report.duration_ms));
    suite.add_properties([
        Property::new("backend", report.backend.as_str()),
        Property::new("seed", report.seed.to_string()),
        Property::new("bench-version", report.bench_version.as_str()),
        Property::new("content-hash", report.drill.content_hash.as_str()),
    ]);
    for assertion in &report.assertions {
        let status = match assertion.verdict {
            Verdict::Pass => TestCaseStatus::success(),
            Verdict::Fail => {
                let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
                status.set_message(format!(
                    "{} (bound {}, measured {})",
                    assertion.summary, assertion.bound, assertion.measured
                ));
                status.set_type(assertion.kind.as_str());
                status.set_description(failure_text(assertion));
                status
            }
            Verdict::Skipped => {
                let mut status = TestCaseStatus::skipped();
                status.set_message(assertion.summary.as_str());
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
        case.add_property(Property::new("bound", assertion.bound.as_str()));
        case.add_property(Property::new("measured", assertion.measured.as_str()));
        if let Some(proof) = &assertion.control {
            case.add_property(Property::new(
                "drillbench.conclusion",
                proof.conclusion.as_str(),
            ));
            case.add_property(Property::new("weakened", proof.weakened.as_str()));
        }
        suite.add_test_case(case);
    }
    let mut junit = Report::new("drillbench");
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
/// CI page shows where the weakened run went.
fn failure_text(assertion: &AssertionResult) -> String {
    let mut text = evidence_text(assertion);
    if let Some(proof) = &assertion.control {
        text.push_str(&format!(
            "weakened: {}\nfailed: {}\nwhy: {}\n",
            proof.weakened, proof.failed, proof.why
        ));
        for line in &proof.diverged {
            text.push_str(&format!("diverged: {line}\n"));
        }
        trace_text(&mut text, "real run", &proof.real_trace);
        trace_text(&mut text, "weakened run", &proof.weakened_trace);
    }
    text
}

fn trace_text(text: &mut String, title: &str, trace: &[TraceStep]) {
    if trace.is_empty() {
        return;
    }
    text.push_str(&format!("{title}:\n"));
    for t in trace {
        text.push_str(&format!(
            "  at {} {}: {}\n",
            format_ms(t.at_ms),
            t.step,
            t.what
        ));
    }
}

fn evidence_text(assertion: &AssertionResult) -> String {
    let mut text = String::new();
    for e in &assertion.evidence {
        text.push_str(&format!("at {}", format_ms(e.at_ms)));
        if let Some(pod) = &e.pod {
            text.push_str(&format!(" pod {pod}"));
        }
        if let Some(node) = &e.node {
            text.push_str(&format!(" node {node}"));
        }
        text.push_str(&format!(": {} [rule: {}]", e.detail, e.rule));
        if !e.labels.is_empty() {
            let labels: Vec<String> = e.labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
            text.push_str(&format!(" labels: {}", labels.join(",")));
        }
        text.push('\n');
    }
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
