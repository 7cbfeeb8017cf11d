//! Reports that scale (issue 20, item 3): a run over its timeline budget
//! stores the drill's own events and a tally of the rest, `events.ndjson`
//! holds every event, and a run within budget writes the report it always
//! wrote. A drill of a few hundred pods stands in for the 5 000-node one
//! with the budget lowered to match (`--timeline-budget`): the rule is the
//! same, and a debug build simulates it in a moment.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::bench;
use crate::report_support::fixture;

use drillbench::run::run_drill;
use drillbench_model::drill::Drill;
use drillbench_model::scenario::catalog;
use drillbench_observe::{Event, EventKind, ObjectRef};
use drillbench_report::timeline_summary::{self, GroupBy, TimelineSummary};
use drillbench_report::{DrillReport, budget, html, junit, markdown};

/// Three Deployments of 100 pods on two pools of ten nodes, one crash.
fn drill(dir: &Path) -> PathBuf {
    let mut manifests = String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: scale}\n");
    for i in 0..3 {
        manifests.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: app-{i}, namespace: scale}}\n\
             spec:\n  replicas: 100\n  selector: {{matchLabels: {{app: app-{i}}}}}\n  template:\n    \
             metadata: {{labels: {{app: app-{i}}}}}\n    spec:\n      containers:\n        \
             - {{name: app, image: pause, resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}}}\n"
        ));
    }
    std::fs::write(dir.join("manifests.yaml"), manifests).expect("write manifests");
    let drill = "\
apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: report-scale}
cluster:
  pools:
    - name: pool-a
      count: 10
      serverType: cx53
      namePattern: pool-a-{n}
      labels: {scale.drillbench.dev/pool: a}
    - name: pool-b
      count: 10
      serverType: cx53
      namePattern: pool-b-{n}
      labels: {scale.drillbench.dev/pool: b}
workloads:
  - path: manifests.yaml
steps:
  - name: crash
    fault: {crashNode: {target: {randomNodeOf: pool-a}}}
  - name: settle
    wait: {for: 5m}
assertions:
  - name: pods-scheduled
    placement:
      pods: {namespaces: [scale]}
      nodes: [{key: scale.drillbench.dev/pool, operator: Exists}]
";
    let path = dir.join("drill.yaml");
    std::fs::write(&path, drill).expect("write drill");
    path
}

/// `bench run` of `drill` into `out` with `extra` flags; its exit code.
fn run(drill: &Path, out: &Path, extra: &[&str]) -> i32 {
    let mut args = vec![
        "run",
        drill.to_str().expect("utf-8"),
        "--seed",
        "7",
        "--out",
        out.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    let run = bench(&args);
    assert!(
        run.code == 0 || run.code == 1,
        "{}\n{}",
        run.stdout,
        run.stderr
    );
    run.code
}

fn ndjson(path: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(path).expect("events.ndjson");
    assert!(text.ends_with('\n'), "every line ends in a newline");
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}: {line}", i + 1))
        })
        .collect()
}

#[test]
fn a_run_over_its_budget_is_summarised_and_its_ndjson_holds_every_event() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drill = drill(dir.path());
    let out = dir.path().join("big");
    run(
        &drill,
        &out,
        &["--timeline-budget", "200", "--events-ndjson"],
    );
    let report = DrillReport::read(&out.join("report.json")).expect("report");
    let summary = report
        .timeline_summary
        .as_ref()
        .expect("over its budget, the timeline is summarised");
    assert_eq!(report.events_file.as_deref(), Some("events.ndjson"));
    let events = ndjson(&out.join("events.ndjson"));
    assert!(
        events.len() > 900,
        "300 pods created, bound, Ready: {}",
        events.len()
    );
    assert_eq!(
        events.len() as u64,
        summary.events,
        "the stream holds every event"
    );
    assert_eq!(summary.budget, 200);
    assert_eq!(
        summary.kept + summary.kept_cut + summary.tallied(),
        summary.events,
        "every event kept or tallied, once"
    );
    // The timeline keeps the drill's own events, in order, as the stream
    // has them.
    let drill_events: Vec<&Event> = events
        .iter()
        .filter(|e| timeline_summary::kept_whole(e.kind))
        .collect();
    assert_eq!(report.timeline.iter().collect::<Vec<_>>(), drill_events);
    assert!(
        report
            .timeline
            .iter()
            .any(|e| e.kind == EventKind::FaultInjected)
    );
    assert!(
        report
            .timeline
            .iter()
            .all(|e| e.kind != EventKind::PodCreated),
        "pods are tallied, not kept"
    );
    // Pods count under their Deployment, nodes under their pool, and each
    // tally matches the stream.
    let group = |by: GroupBy, name: &str| {
        summary
            .groups
            .iter()
            .find(|g| g.by == by && g.name == name)
            .unwrap_or_else(|| panic!("group {name}: {:?}", summary.groups))
    };
    for i in 0..3 {
        let app = group(GroupBy::Workload, &format!("scale/Deployment/app-{i}"));
        let created = app.kinds[&EventKind::PodCreated];
        let streamed: Vec<u64> = events
            .iter()
            .filter(|e| {
                e.kind == EventKind::PodCreated
                    && e.object.kind == "Pod"
                    && e.object.name.starts_with(&format!("app-{i}-"))
            })
            .map(|e| e.at_ms)
            .collect();
        assert_eq!(created.count, streamed.len() as u64);
        assert!(created.count >= 100, "{created:?}");
        assert_eq!(created.first_ms, *streamed.iter().min().expect("some"));
        assert_eq!(created.last_ms, *streamed.iter().max().expect("some"));
    }
    let crashed = group(GroupBy::Pool, "pool-a");
    assert!(
        crashed.kinds.contains_key(&EventKind::NodeNotReady),
        "{crashed:?}"
    );
    assert!(crashed.objects <= 10);
    // Every format says so, within its budget.
    let md = std::fs::read_to_string(out.join("report.md")).expect("md");
    assert!(md.contains("### Timeline (summarised)"), "{md}");
    assert!(md.contains("every event is in events.ndjson"), "{md}");
    let html = std::fs::read_to_string(out.join("report.html")).expect("html");
    assert!(html.contains("id=\"timeline-summary\""));
    let junit = std::fs::read_to_string(out.join("report.junit.xml")).expect("junit");
    assert!(junit.contains(&format!(
        "name=\"timeline-events\" value=\"{}\"",
        summary.events
    )));
    assert!(junit.contains("name=\"events-file\" value=\"events.ndjson\""));
}

#[test]
fn within_its_budget_the_same_run_keeps_its_whole_timeline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drill = drill(dir.path());
    let out = dir.path().join("small");
    run(&drill, &out, &["--events-ndjson"]);
    let report = DrillReport::read(&out.join("report.json")).expect("report");
    assert!(report.timeline_summary.is_none());
    let events = ndjson(&out.join("events.ndjson"));
    assert_eq!(events, report.timeline, "the stream is the timeline");
    let md = std::fs::read_to_string(out.join("report.md")).expect("md");
    assert!(!md.contains("Timeline (summarised)"));
}

#[test]
fn a_built_in_drill_writes_the_report_it_always_wrote() {
    // The bytes of `run_drill`'s JSON are what the golden digests pin; a
    // built-in run through `bench run`, streamed, must write the same.
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["node-loss", "autoscaler-scale-down"] {
        let out = dir.path().join(name);
        let run = bench(&[
            "run",
            name,
            "--seed",
            "3",
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
        let written = std::fs::read_to_string(out.join("report.json")).expect("report");
        let path = catalog::resolve(name).expect("built-in");
        let drill = Drill::load(&path).expect("loads");
        let expected = run_drill(&drill, 3, &drillbench_backend::sim::provision)
            .expect("runs")
            .to_json();
        assert_eq!(written, expected, "{name}");
        assert!(!written.contains("timelineSummary"));
        assert!(!written.contains("eventsFile"));
        assert!(!out.join("events.ndjson").exists(), "only when asked for");
    }
}

#[test]
fn every_built_in_drill_stays_well_within_the_default_budget() {
    // So their reports keep the whole timeline, and the golden digests
    // hold: a built-in that grows towards the budget fails here first.
    let mut largest = (0, String::new());
    for entry in catalog::list().expect("the built-in drills") {
        let path = catalog::resolve(&entry.name).expect("built-in");
        let drill = Drill::load(&path).expect("loads");
        let report = run_drill(&drill, 1, &drillbench_backend::sim::provision).expect("runs");
        largest = largest.max((report.timeline.len(), entry.name));
    }
    eprintln!("largest built-in timeline: {largest:?}");
    assert!(
        largest.0 > 0 && largest.0 * 4 < timeline_summary::DEFAULT_TIMELINE_BUDGET,
        "largest built-in timeline: {largest:?}"
    );
}

#[test]
fn a_summarised_run_is_the_same_bytes_for_the_same_seed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drill = drill(dir.path());
    let files = |out: &Path| -> Vec<Vec<u8>> {
        ["report.json", "report.md", "report.html", "events.ndjson"]
            .iter()
            .map(|f| std::fs::read(out.join(f)).expect("written"))
            .collect()
    };
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    for out in [&one, &two] {
        run(
            &drill,
            out,
            &["--timeline-budget", "200", "--events-ndjson"],
        );
    }
    assert!(
        files(&one) == files(&two),
        "byte-identical reports and stream"
    );
}

#[test]
fn events_ndjson_of_a_sweep_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sweep");
    let run = bench(&[
        "run",
        "node-loss",
        "--runs",
        "2",
        "--events-ndjson",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--events-ndjson"), "{}", run.stderr);
    assert!(!out.exists(), "nothing ran");
    // Control: the same sweep without it runs.
    let run = bench(&[
        "run",
        "node-loss",
        "--runs",
        "2",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_ne!(run.code, 2, "{}", run.stderr);
}

/// A report of `workloads` Deployments' pods, summarised: one group each.
fn summarised(workloads: usize) -> DrillReport {
    let mut report = fixture("failing.json");
    let owners: BTreeMap<String, String> = (0..workloads)
        .map(|i| (format!("app/pod-{i}"), format!("app/Deployment/w-{i:04}")))
        .collect();
    report.timeline = (0..workloads)
        .map(|i| Event {
            at_ms: i as u64,
            kind: EventKind::PodCreated,
            object: ObjectRef {
                kind: "Pod".to_owned(),
                namespace: "app".to_owned(),
                name: format!("pod-{i}"),
            },
            node: None,
            pool: None,
            message: "pod created".to_owned(),
        })
        .collect();
    let full = report.summarise_timeline(10, &owners).expect("over budget");
    assert_eq!(full.len(), workloads);
    report
}

#[test]
fn the_summary_is_capped_in_markdown_and_html_and_counted_in_junit() {
    let groups = budget::HTML_ROWS + 100;
    let report = summarised(groups);
    let summary: &TimelineSummary = report.timeline_summary.as_ref().expect("summarised");
    assert_eq!(
        summary.groups.len(),
        groups,
        "report.json keeps every group"
    );
    let first = "workload app/Deployment/w-0000";
    let row = |n: usize| format!("workload app/Deployment/w-{n:04}");

    let md = markdown::render(&report);
    assert!(md.contains(first));
    assert!(md.contains(&row(budget::MARKDOWN_FACTS - 1)));
    assert!(
        !md.contains(&row(budget::MARKDOWN_FACTS)),
        "the first {} groups only",
        budget::MARKDOWN_FACTS
    );
    assert!(md.contains(&budget::more(groups - budget::MARKDOWN_FACTS, "groups")));

    let html = html::render(&report);
    assert!(html.contains(&row(budget::HTML_ROWS - 1)));
    assert!(
        !html.contains(&row(budget::HTML_ROWS)),
        "the first {} only",
        budget::HTML_ROWS
    );
    assert!(html.contains(&budget::more(100, "groups")));

    let junit = junit::render(&report);
    assert!(junit.contains(&format!("name=\"timeline-events\" value=\"{groups}\"")));
    assert!(
        !junit.contains("w-0000"),
        "JUnit carries the counts, not the groups"
    );

    // Control: a summary within the caps is listed whole, with no cut.
    let report = summarised(20);
    let md = markdown::render(&report);
    assert!(md.contains(&row(19)));
    assert!(!md.contains("more groups"));
    assert!(!html::render(&report).contains("more groups"));
}
