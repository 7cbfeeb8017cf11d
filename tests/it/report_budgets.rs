//! Output budgets at scale: a placement rule broken by every pod of a
//! 5 000-node cluster keeps every format within its budget, each cut says
//! how much it left out, and the JSON report still has every fact.
//!
//! The report is built here at that size rather than simulated: the
//! cluster is the one `harness/scale/5000-nodes.yaml` declares (loaded as
//! `bench run` loads it), the failure is five pods per node, each caught
//! outside the rule. Simulating 25 000 pods onto 5 000 nodes takes
//! minutes in a debug build; the renderers only read the report, so the
//! report is what has to be at scale.

use crate::report_support::{event, fixture, parse, root};

use std::collections::BTreeMap;

use drillbench_model::drill::Drill;
use drillbench_observe::EventKind;
use drillbench_report::{
    AssertionResult, DrillReport, Evidence, Outcome, Verdict, budget, github, html, junit,
    markdown, terminal,
};

const PODS_PER_NODE: usize = 5;

fn failing_at_scale() -> (DrillReport, usize) {
    let drill = Drill::load(&root().join("harness/scale/5000-nodes.yaml")).expect("scale drill");
    let mut r = fixture("failing.json");
    r.topology = drill.topology.clone();
    r.drill.name = drill.name().to_owned();
    r.drill.file = Some("harness/scale/5000-nodes.yaml".to_owned());
    let nodes: Vec<String> = drill
        .topology
        .pools
        .iter()
        .flat_map(|p| p.static_names())
        .collect();
    assert_eq!(nodes.len(), 5_000, "the cluster of the scale drill");
    let rule = "scale.drillbench.dev/pool In [z]";
    let mut timeline = vec![event(
        0,
        EventKind::StepStarted,
        ("Drill", "", "scale"),
        None,
        None,
        "deploy 30 Deployments",
    )];
    let mut evidence = Vec::new();
    for (n, node) in nodes.iter().enumerate() {
        for i in 0..PODS_PER_NODE {
            let pod = format!("app-{:02}-{n:05}-{i}", n % 30);
            let at = 1_000 + (n * PODS_PER_NODE + i) as u64;
            timeline.push(event(
                at,
                EventKind::PodScheduled,
                ("Pod", "scale", &pod),
                Some(node),
                None,
                "bound",
            ));
            evidence.push(Evidence {
                at_ms: at,
                pod: Some(format!("scale/{pod}")),
                node: Some(node.clone()),
                rule: rule.to_owned(),
                detail: format!(
                    "node lacks label scale.drillbench.dev/pool=z (has {})",
                    &node[..6]
                ),
                labels: BTreeMap::from([(
                    "scale.drillbench.dev/pool".to_owned(),
                    node[5..6].to_owned(),
                )]),
            });
        }
    }
    let facts = evidence.len();
    // As the placement judge words it: every pod caught, by name.
    let names: Vec<String> = evidence.iter().filter_map(|e| e.pod.clone()).collect();
    r.assertions = vec![
        AssertionResult {
            name: "pods-on-their-pools".to_owned(),
            kind: "placement".to_owned(),
            verdict: Verdict::Fail,
            bound: rule.to_owned(),
            measured: format!("{facts} pods on 5000 nodes outside the rule"),
            summary: format!("{} ran on nodes outside the rule", names.join(", ")),
            evidence,
            control: None,
        },
        AssertionResult {
            name: "rto".to_owned(),
            kind: "rto".to_owned(),
            verdict: Verdict::Pass,
            bound: "<= 15m".to_owned(),
            measured: "4m12s".to_owned(),
            summary: "all workloads ready 4m12s after the fault".to_owned(),
            evidence: Vec::new(),
            control: None,
        },
    ];
    r.outcome = Outcome::Failed;
    r.timeline = timeline;
    r.duration_ms = 60_000;
    (r, facts)
}

#[test]
fn a_5000_node_failure_keeps_every_format_within_budget() {
    let (report, facts) = failing_at_scale();
    assert_eq!(facts, 5_000 * PODS_PER_NODE);
    let nodes = 5_000 + report.topology.control_planes.names().len();
    let first = report.assertions[0].evidence[0].pod.clone().expect("pod");
    let last = report.assertions[0].evidence[facts - 1]
        .pod
        .clone()
        .expect("pod");

    // JSON: the source of truth keeps every fact, the last one included.
    let json = report.to_json();
    let back: DrillReport = serde_json::from_str(&json).expect("the JSON parses");
    assert_eq!(back.assertions[0].evidence.len(), facts);
    assert!(json.contains(&last), "the last fact is in the JSON");

    // Terminal: every line within budget, the failure named, the cut said.
    let text = terminal::summary(&report);
    let longest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(longest <= budget::TERMINAL_LINE, "a {longest}-char line");
    assert!(text.contains("FAIL pods-on-their-pools"), "{text}");
    assert!(text.contains(&first), "the first pod is named: {text}");
    assert!(text.contains("chars)"), "the cut says so: {text}");
    assert!(text.lines().count() < 10, "{text}");

    // Markdown: within a job summary, the first failure and its first
    // fact up front, the rest counted.
    let md = markdown::render(&report);
    assert!(md.len() <= budget::MARKDOWN_BYTES, "{} bytes", md.len());
    let failure = md.find("#### ❌ pods-on-their-pools").expect("the failure");
    assert!(md[failure..].contains(&first), "its first fact");
    assert!(!md.contains(&last), "the last of {facts} facts is not");
    let rest = facts - budget::MARKDOWN_FACTS;
    assert!(
        md.contains(&format!("+{rest} more facts in report.json")),
        "{}",
        &md[md.len().saturating_sub(2_000)..]
    );

    // JUnit: well-formed, the message one bounded line, the failure's text
    // the first facts and a count of the rest.
    let xml = junit::render(&report);
    let doc = parse(&xml);
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure");
    let message = failure.attribute("message").expect("a message");
    assert!(
        message.chars().count() <= budget::JUNIT_MESSAGE,
        "{}",
        message.len()
    );
    let body = failure.text().unwrap_or_default();
    assert_eq!(
        body.lines().filter(|l| l.starts_with("at ")).count(),
        budget::JUNIT_FACTS
    );
    assert!(
        body.contains(&format!(
            "+{} more facts in report.json",
            facts - budget::JUNIT_FACTS
        )),
        "{body:.300}"
    );
    assert!(xml.len() < 200_000, "{} bytes of JUnit", xml.len());

    // HTML: within its size, every node counted though only some drawn,
    // the facts past the budget counted.
    let page = html::render(&report);
    assert!(page.len() <= budget::HTML_BYTES, "{} bytes", page.len());
    let doc = parse(&page);
    let lanes = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && n.attribute("class") == Some("lane"))
        .count();
    assert_eq!(lanes, budget::HTML_LANES, "lanes drawn");
    let hidden: usize = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("meta hidden-lanes"))
        .filter_map(|n| n.text())
        .map(|t| {
            let more = t.split('+').nth(1).expect("+N more");
            more.split(' ').next().unwrap().parse::<usize>().unwrap()
        })
        .sum();
    assert_eq!(lanes + hidden, nodes, "every node drawn or counted");
    // Each pool gets its share of lanes.
    for pool in ["pool-a", "pool-e"] {
        assert!(
            page.contains(&format!("data-node=\"{pool}-1\"")),
            "{pool} has lanes drawn"
        );
    }
    assert!(
        page.contains(&format!(
            "+{} more facts in report.json",
            facts - budget::HTML_FACTS
        )),
        "the verdict table counts the facts it left out"
    );
    assert!(
        page.contains(&format!("{nodes} nodes in")),
        "the summary counts every node"
    );

    // Annotations: one bounded line each.
    for line in github::annotations(&report).lines(github::MAX_ANNOTATIONS) {
        assert!(line.len() < 4_000, "{} bytes", line.len());
    }
}

/// The negative control: the same report with few facts is not cut at
/// all, so the budgets above cut because of size, not always.
#[test]
fn a_small_failure_is_rendered_whole() {
    let (mut report, _) = failing_at_scale();
    report.assertions[0].evidence.truncate(3);
    report.assertions[0].summary = "3 pods ran on nodes outside the rule".to_owned();
    let last = report.assertions[0].evidence[2].pod.clone().expect("pod");
    let md = markdown::render(&report);
    assert!(md.contains(&last) && !md.contains("more facts"), "{md}");
    let xml = junit::render(&report);
    assert!(xml.contains(&last) && !xml.contains("more facts"));
    let text = terminal::summary(&report);
    assert!(!text.contains("chars)"), "{text}");
    let page = html::render(&report);
    assert!(page.contains(&last) && !page.contains("more facts in report.json"));
}
