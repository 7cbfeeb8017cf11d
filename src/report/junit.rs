//! JUnit XML: one testsuite per drill, one testcase per assertion, a
//! failing assertion as a `<failure>` carrying its evidence, so a CI system
//! fails the job and shows why.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::{DrillReport, Verdict, format_ms};

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
                status.set_description(evidence_text(assertion));
                status
            }
        };
        let mut case = TestCase::new(assertion.name.as_str(), status);
        case.set_classname(format!("drillbench.{}", report.drill.name));
        suite.add_test_case(case);
    }
    let mut junit = Report::new("drillbench");
    junit.add_test_suite(suite);
    junit.to_string().unwrap_or_default()
}

fn evidence_text(assertion: &super::AssertionResult) -> String {
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
