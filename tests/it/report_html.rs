//! The HTML report: its structure (snapshotted as an outline, not bytes),
//! that it references nothing outside itself, that it stays bounded and
//! readable at 100 nodes and 1 000 pods, and `bench report --format html`.

use crate::common;
use crate::report_support;

use std::collections::BTreeMap;

use drillbench_observe::EventKind;
use drillbench_report::{AssertionResult, DrillReport, Evidence, Figure, Outcome, Verdict, html};
use report_support::{event, external_references, fixture, look, outline, parse};

/// The failing fixture with a timeline that tells the whole story: a pool
/// scales up, pods land, the autoscaler node is cordoned and deleted while
/// the openbao pod is on it, the API drops out for a while.
pub(crate) fn story(failing: bool) -> DrillReport {
    let mut r = fixture(if failing {
        "failing.json"
    } else {
        "passing.json"
    });
    let node = "autoscale-cx43-6406b46e4820";
    let cp = "prod-control-plane-1";
    let mut t = vec![
        event(
            0,
            EventKind::StepStarted,
            ("Drill", "", "autoscaler-scale-down"),
            None,
            None,
            "scale load/Deployment/burst to 40",
        ),
        event(
            20_000,
            EventKind::ScaleUp,
            ("Node", "", node),
            Some(node),
            Some("autoscale-cx43"),
            "scale-up for 12 unschedulable pods",
        ),
        event(
            20_000,
            EventKind::NodeAdded,
            ("Node", "", node),
            Some(node),
            Some("autoscale-cx43"),
            "server created",
        ),
        event(
            170_000,
            EventKind::NodeReady,
            ("Node", "", node),
            Some(node),
            Some("autoscale-cx43"),
            "node became Ready",
        ),
        event(
            175_000,
            EventKind::PodScheduled,
            ("Pod", "openbao", "openbao-0"),
            Some(node),
            Some("autoscale-cx43"),
            "bound",
        ),
        event(
            176_000,
            EventKind::PodScheduled,
            ("Pod", "load", "burst-1"),
            Some(node),
            Some("autoscale-cx43"),
            "bound",
        ),
        event(
            30_000,
            EventKind::PodScheduled,
            ("Pod", "apps", "web-1"),
            Some("prod-worker-1"),
            Some("baseline"),
            "bound",
        ),
        event(
            300_000,
            EventKind::StepStarted,
            ("Drill", "", "autoscaler-scale-down"),
            None,
            None,
            "fault: autoscaler scale-down",
        ),
        event(
            360_000,
            EventKind::NodeCordoned,
            ("Node", "", node),
            Some(node),
            Some("autoscale-cx43"),
            "cordoned by the autoscaler",
        ),
        event(
            400_000,
            EventKind::PodEvicted,
            ("Pod", "load", "burst-1"),
            Some(node),
            Some("autoscale-cx43"),
            "evicted",
        ),
        event(
            420_000,
            EventKind::ApiUnavailable,
            ("Endpoint", "", "prod-floating-ip"),
            Some(cp),
            Some("control-plane"),
            "readyz failed",
        ),
        event(
            455_000,
            EventKind::ApiAvailable,
            ("Endpoint", "", "prod-floating-ip"),
            Some(cp),
            Some("control-plane"),
            "readyz ok",
        ),
        event(
            500_000,
            EventKind::NodeNotReady,
            ("Node", "", "prod-worker-2"),
            Some("prod-worker-2"),
            Some("baseline"),
            "heartbeat lost",
        ),
        event(
            560_000,
            EventKind::NodeReady,
            ("Node", "", "prod-worker-2"),
            Some("prod-worker-2"),
            Some("baseline"),
            "heartbeat back",
        ),
        event(
            754_000,
            EventKind::NodeDeleted,
            ("Node", "", node),
            Some(node),
            Some("autoscale-cx43"),
            "server deleted",
        ),
        event(
            754_000,
            EventKind::PodDeleted,
            ("Pod", "openbao", "openbao-0"),
            Some(node),
            Some("autoscale-cx43"),
            "node gone",
        ),
    ];
    t.append(&mut r.timeline);
    t.sort_by_key(|e| e.at_ms);
    r.timeline = t;
    r
}

#[test]
fn structure_of_a_passing_and_a_failing_report() {
    for (name, failing) in [("passing", false), ("failing", true)] {
        let text = html::render(&story(failing));
        look(&format!("{name}.html"), &text);
        insta::assert_snapshot!(format!("{name}_html_outline"), outline(&text));
    }
}

#[test]
fn the_failing_pod_is_highlighted_on_its_node() {
    let text = html::render(&story(true));
    let doc = parse(&text);
    let lane = doc
        .descendants()
        .find(|n| n.attribute("data-node") == Some("autoscale-cx43-6406b46e4820"))
        .expect("a lane for the autoscaler node");
    let marked: Vec<_> = lane
        .descendants()
        .filter(|n| n.attribute("class") == Some("pod hl"))
        .collect();
    assert_eq!(marked.len(), 1, "only openbao-0 is named by the failure");
    let title = marked[0]
        .first_element_child()
        .and_then(|t| t.text())
        .unwrap_or_default();
    assert!(title.starts_with("openbao/openbao-0"), "{title}");
    // The passing report highlights nothing.
    assert!(!html::render(&story(false)).contains("class=\"pod hl\""));
}

#[test]
fn lanes_are_grouped_by_pool_with_the_node_states() {
    let text = html::render(&story(true));
    let doc = parse(&text);
    let pools: Vec<_> = doc
        .descendants()
        .filter_map(|n| n.attribute("data-pool"))
        .collect();
    assert_eq!(pools, ["control-plane", "baseline", "autoscale-cx43"]);
    let lane_of = |node: &str| {
        doc.descendants()
            .find(|n| n.attribute("data-node") == Some(node))
            .unwrap_or_else(|| panic!("lane {node}"))
    };
    let classes = |node: &str| -> Vec<String> {
        lane_of(node)
            .children()
            .filter_map(|n| n.attribute("class"))
            .filter(|c| c.starts_with("st-"))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        classes("prod-worker-2"),
        ["st-ready", "st-notready", "st-ready"]
    );
    assert_eq!(
        classes("autoscale-cx43-6406b46e4820"),
        ["st-booting", "st-ready", "st-cordoned", "st-deleted"]
    );
    // The API strip shows the one outage of 35 s.
    let down: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("api-down"))
        .collect();
    assert_eq!(down.len(), 1);
    assert!(text.contains("API unavailable 7m to 7m35s (35s)"));
    // The RTO span starts at the fault (6m) and lasts the figure (4m12s).
    assert!(text.contains("<title>rto.all-workloads = 4m12s</title>"));
}

#[test]
fn nothing_outside_the_file_is_referenced() {
    for text in [
        html::render(&story(true)),
        html::render(&story(false)),
        html::render(&at_scale(1_000)),
    ] {
        assert_eq!(external_references(&text), Vec::<String>::new());
        assert!(!text.contains("<script"), "no JavaScript is needed");
    }
    // The checker itself catches what it must.
    let bad = "<!DOCTYPE html><html><head><link rel=\"stylesheet\" href=\"x.css\"/>\
        <style>@import 'a.css'; body{background:url(http://x/y.png)}</style></head>\
        <body><img src=\"https://x/y.png\"/><a href=\"#ok\">ok</a><img src=\"data:image/png;base64,AA\"/>\
        <script src=\"app.js\"></script></body></html>";
    let found = external_references(bad);
    for expected in [
        "<link>",
        "link href=x.css",
        "@import",
        "url(http://x/y.png)",
        "img src=https://x/y.png",
        "<script src>",
    ] {
        assert!(
            found.iter().any(|f| f == expected),
            "{expected} in {found:?}"
        );
    }
    assert!(
        !found
            .iter()
            .any(|f| f.contains("#ok") || f.contains("data:"))
    );
}

#[test]
fn the_same_report_gives_the_same_bytes() {
    assert_eq!(html::render(&story(true)), html::render(&story(true)));
    assert_eq!(
        html::render(&at_scale(1_000)),
        html::render(&at_scale(1_000))
    );
}

#[test]
fn hostile_names_are_escaped() {
    let mut r = story(true);
    r.drill.name = "<script>alert(1)</script>".to_owned();
    r.assertions[0].summary = "a & b < c \"quoted\" 'single'\u{7}".to_owned();
    r.timeline[0].message = "</title></g><g>".to_owned();
    let text = html::render(&r);
    parse(&text);
    assert!(!text.contains("<script>"));
}

/// 100 nodes in four lane groups (3 control planes, 30 baseline workers,
/// 35 + 32 nodes of the two autoscaler pools), `pods` pods spread unevenly,
/// a drain, and two pods named by a failing placement assertion.
pub(crate) fn at_scale(pods: usize) -> DrillReport {
    let mut r = fixture("failing.json");
    r.timeline.clear();
    let mut nodes: Vec<(String, &str)> = r
        .topology
        .control_planes
        .names()
        .into_iter()
        .map(|n| (n, "control-plane"))
        .collect();
    nodes.extend((1..=3).map(|i| (format!("prod-worker-{i}"), "baseline")));
    for i in 4..=30 {
        nodes.push((format!("prod-worker-{i}"), "baseline"));
    }
    for i in 0..35 {
        nodes.push((format!("autoscale-cx43-{i:012x}"), "autoscale-cx43"));
    }
    for i in 0..32 {
        nodes.push((format!("autoscale-cx53-{i:012x}"), "autoscale-cx53"));
    }
    assert_eq!(nodes.len(), 100);
    let mut t = Vec::new();
    for (i, (node, pool)) in nodes.iter().enumerate() {
        let added = if *pool == "control-plane" || node.starts_with("prod-worker-") && i < 6 {
            0
        } else {
            10_000 + i as u64 * 1_000
        };
        t.push(event(
            added,
            EventKind::NodeAdded,
            ("Node", "", node),
            Some(node),
            Some(pool),
            "added",
        ));
        t.push(event(
            added + 120_000,
            EventKind::NodeReady,
            ("Node", "", node),
            Some(node),
            Some(pool),
            "ready",
        ));
    }
    // Skewed placement: node k gets about k % 23 pods, so some nodes stay
    // under the fold threshold and some carry dozens.
    let weights: Vec<usize> = (0..nodes.len()).map(|k| 1 + (k * 7) % 23).collect();
    let total: usize = weights.iter().sum();
    let mut p = 0;
    for (k, w) in weights.iter().enumerate() {
        let share = if k == nodes.len() - 1 {
            pods - p
        } else {
            (pods * w / total).min(pods - p)
        };
        for _ in 0..share {
            let (node, pool) = &nodes[k];
            let at = 200_000 + (p as u64 * 997) % 600_000;
            let pod = format!("pod-{p:04}");
            t.push(event(
                at,
                EventKind::PodScheduled,
                ("Pod", "load", &pod),
                Some(node),
                Some(pool),
                "bound",
            ));
            if p % 3 == 0 {
                t.push(event(
                    at + 300_000 + (p as u64 % 7) * 10_000,
                    EventKind::PodEvicted,
                    ("Pod", "load", &pod),
                    Some(node),
                    Some(pool),
                    "evicted",
                ));
            }
            p += 1;
        }
    }
    let (drained, drained_pool) = (&nodes[70].0, nodes[70].1);
    t.push(event(
        900_000,
        EventKind::FaultInjected,
        ("Node", "", drained),
        Some(drained),
        Some(drained_pool),
        "drain",
    ));
    t.push(event(
        900_000,
        EventKind::NodeCordoned,
        ("Node", "", drained),
        Some(drained),
        Some(drained_pool),
        "cordoned",
    ));
    t.push(event(
        1_200_000,
        EventKind::NodeDeleted,
        ("Node", "", drained),
        Some(drained),
        Some(drained_pool),
        "deleted",
    ));
    t.sort_by_key(|e| e.at_ms);
    r.timeline = t;
    r.assertions[0] = AssertionResult {
        name: "hcloud-off-autoscalers".to_owned(),
        kind: "placement".to_owned(),
        verdict: Verdict::Fail,
        bound: "baseline only".to_owned(),
        measured: "2 pods outside".to_owned(),
        summary: "two pods ran on autoscaler nodes".to_owned(),
        evidence: ["load/pod-0990", "load/pod-0991"]
            .iter()
            .map(|pod| Evidence {
                at_ms: 800_000,
                pod: Some((*pod).to_owned()),
                node: None,
                rule: "baseline only".to_owned(),
                detail: "on an autoscaler node".to_owned(),
                labels: BTreeMap::new(),
            })
            .collect(),
        control: None,
    };
    r.outcome = Outcome::Failed;
    r.figures.insert(
        "rto.all-workloads".to_owned(),
        Figure {
            value: 400_000.0,
            unit: "ms".to_owned(),
        },
    );
    r
}

/// Per lane, however many pods it ran: its group and label, one segment
/// per node state change (at most 4 here), either `POD_FOLD_THRESHOLD`
/// pod bars or a density group of at most `DENSITY_BUCKETS` rectangles, a
/// count, and the few highlighted bars, labels and fault marks of this
/// report: 80 with room to spare. Plus the overview and legend: 300. The
/// pods only ever change counts, which the 10 000-pod case checks.
const ELEMENTS_PER_LANE: usize = 80;
const FIXED_ELEMENTS: usize = 300;

fn svg_elements(doc: &roxmltree::Document<'_>) -> usize {
    doc.descendants()
        .filter(|n| n.tag_name().name() == "svg")
        .map(|svg| svg.descendants().filter(|n| n.is_element()).count())
        .sum()
}

#[test]
fn a_hundred_nodes_and_a_thousand_pods_stay_readable() {
    let report = at_scale(1_000);
    let text = html::render(&report);
    look("at-scale.html", &text);
    let doc = parse(&text);
    let lanes: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("lane"))
        .collect();
    assert_eq!(lanes.len(), 100, "one lane per node");
    let pools: Vec<_> = doc
        .descendants()
        .filter_map(|n| n.attribute("data-pool"))
        .collect();
    assert_eq!(
        pools,
        [
            "control-plane",
            "baseline",
            "autoscale-cx43",
            "autoscale-cx53"
        ]
    );
    let elements = svg_elements(&doc);
    assert!(
        elements < 100 * ELEMENTS_PER_LANE + FIXED_ELEMENTS,
        "{elements} SVG elements"
    );
    let mut folded = 0;
    for lane in &lanes {
        let bars = lane
            .descendants()
            .filter(|n| n.attribute("class") == Some("pod"))
            .count();
        assert!(
            bars <= html::POD_FOLD_THRESHOLD,
            "{bars} pod bars on one lane"
        );
        if let Some(d) = lane
            .children()
            .find(|n| n.attribute("class") == Some("density"))
        {
            folded += 1;
            assert!(d.children().filter(|n| n.is_element()).count() <= html::DENSITY_BUCKETS);
            assert_eq!(bars, 0, "a folded lane draws no pod on its own line");
        }
    }
    assert!(folded > 30, "busy nodes fold: {folded}");
    assert!(folded < 100, "quiet nodes still show their pods");
    // The two pods named by the failure are drawn on their own even when folded.
    let marked: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("pod hl"))
        .collect();
    assert_eq!(marked.len(), 2);
    // Ten times the pods add nothing to the drawing but counts.
    let bigger = html::render(&at_scale(10_000));
    let elements_10k = svg_elements(&parse(&bigger));
    assert!(
        elements_10k < 100 * ELEMENTS_PER_LANE + FIXED_ELEMENTS,
        "{elements_10k} SVG elements at 10 000 pods"
    );
}

#[test]
fn bench_report_renders_html_and_write_all_writes_it() {
    let run = common::bench(&[
        "report",
        "tests/fixtures/reports/failing.json",
        "--format",
        "html",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, html::render(&fixture("failing.json")));
    look("failing-fixture.html", &run.stdout);
    let dir = tempfile::tempdir().expect("tempdir");
    drillbench_report::write_all(&fixture("passing.json"), dir.path(), None).expect("written");
    let written = std::fs::read_to_string(dir.path().join("report.html")).expect("report.html");
    assert_eq!(written, html::render(&fixture("passing.json")));
}

/// A backend that records only the node's deletion still ends its pods
/// there, and a node added and Ready at the same instant draws no empty
/// booting segment.
#[test]
fn pods_end_with_their_node() {
    let mut r = fixture("passing.json");
    let node = "autoscale-cx53-aaaaaaaaaaaa";
    let pool = Some("autoscale-cx53");
    r.timeline = vec![
        event(
            60_000,
            EventKind::NodeAdded,
            ("Node", "", node),
            Some(node),
            pool,
            "added",
        ),
        event(
            60_000,
            EventKind::NodeReady,
            ("Node", "", node),
            Some(node),
            pool,
            "ready",
        ),
        event(
            120_000,
            EventKind::PodScheduled,
            ("Pod", "load", "burst-7"),
            Some(node),
            pool,
            "bound",
        ),
        event(
            600_000,
            EventKind::NodeDeleted,
            ("Node", "", node),
            Some(node),
            pool,
            "gone",
        ),
    ];
    let text = html::render(&r);
    assert!(
        text.contains("<title>load/burst-7 on this node 2m to 10m</title>"),
        "{text}"
    );
    let doc = parse(&text);
    let lane = doc
        .descendants()
        .find(|n| n.attribute("data-node") == Some(node))
        .expect("lane");
    let states: Vec<_> = lane
        .children()
        .filter_map(|n| n.attribute("class"))
        .filter(|c| c.starts_with("st-"))
        .collect();
    assert_eq!(states, ["st-ready", "st-deleted"]);
}

/// The stored failing report never places openbao-0 on the timeline; the
/// fact still shows, as a dot on the node's lane, in the pool its name
/// pattern says.
#[test]
fn a_fact_without_a_pod_bar_is_a_dot_on_its_node() {
    let text = html::render(&fixture("failing.json"));
    let doc = parse(&text);
    let pool = doc
        .descendants()
        .find(|n| n.attribute("data-pool") == Some("autoscale-cx43"))
        .expect("the autoscaler pool");
    let lane = pool
        .descendants()
        .find(|n| n.attribute("data-node") == Some("autoscale-cx43-6406b46e4820"))
        .expect("the node's lane is in its pool");
    let dots: Vec<_> = lane
        .children()
        .filter(|n| n.attribute("class") == Some("evidence"))
        .collect();
    assert_eq!(dots.len(), 1);
    let title = dots[0]
        .first_element_child()
        .and_then(|t| t.text())
        .unwrap_or_default();
    assert!(
        title.starts_with("12m34s hcloud-off-autoscalers: openbao/openbao-0: node lacks label"),
        "{title}"
    );
    // Where the timeline has the pod's bar, the bar carries it instead.
    assert!(!html::render(&story(true)).contains("<circle class=\"evidence\""));
    // The passing report has no dot at all.
    assert!(!html::render(&fixture("passing.json")).contains("<circle class=\"evidence\""));
}

/// Never panic on input: a timeline out of order, events at the end of
/// the clock, an API that comes back before it went away.
#[test]
fn hostile_timelines_render() {
    let mut r = story(true);
    r.timeline.reverse();
    r.duration_ms = u64::MAX;
    r.timeline.push(event(
        u64::MAX,
        EventKind::ApiUnavailable,
        ("Endpoint", "", "ip"),
        None,
        None,
        "x",
    ));
    r.timeline.push(event(
        5,
        EventKind::ApiAvailable,
        ("Endpoint", "", "ip"),
        None,
        None,
        "x",
    ));
    r.timeline.push(event(
        u64::MAX,
        EventKind::PodScheduled,
        ("Pod", "a", "b"),
        Some("n"),
        None,
        "x",
    ));
    r.figures.insert(
        "rto.x".to_owned(),
        Figure {
            value: f64::MAX,
            unit: "ms".to_owned(),
        },
    );
    r.figures.insert(
        "rto.y".to_owned(),
        Figure {
            value: -5.0,
            unit: "ms".to_owned(),
        },
    );
    parse(&html::render(&r));
    r.duration_ms = 0;
    r.timeline.clear();
    parse(&html::render(&r));
}
