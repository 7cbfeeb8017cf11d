//! The report model and its renderers: the JSON form is stable (a stored
//! report parses and re-serializes to the same bytes), and the Markdown and
//! JUnit renderings of a passing and a failing drill are snapshot-tested.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{bench, root};
use drillbench_model::drill::Drill;
use drillbench_observe::{Event, EventKind, ObjectRef};
use drillbench_report::{
    AssertionResult, DrillIdentity, DrillReport, Evidence, Figure, Outcome, REPORT_FORMAT, Verdict,
    WorkloadAvailability, junit, markdown,
};

fn object(kind: &str, namespace: &str, name: &str) -> ObjectRef {
    ObjectRef {
        kind: kind.to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

/// A report shaped like a real autoscaler drill, built from the real
/// cp-recreate topology.
fn sample(failing: bool) -> DrillReport {
    let drill =
        Drill::load(&root().join("scenarios/cp-recreate.yaml")).expect("built-in drill loads");
    let node = "autoscale-cx43-6406b46e4820";
    let placement = if failing {
        AssertionResult {
            name: "hcloud-off-autoscalers".to_owned(),
            kind: "placement".to_owned(),
            verdict: Verdict::Fail,
            bound: "platform.devantler.tech/baseline-worker In [true]".to_owned(),
            measured: "1 pod on 1 node outside the rule".to_owned(),
            summary: "openbao/openbao-0 ran on an autoscaler node".to_owned(),
            evidence: vec![Evidence {
                at_ms: 754_000,
                pod: Some("openbao/openbao-0".to_owned()),
                node: Some(node.to_owned()),
                rule: "platform.devantler.tech/baseline-worker In [true]".to_owned(),
                detail: "node lacks label platform.devantler.tech/baseline-worker | mounts data-openbao-0 (hcloud)".to_owned(),
                labels: BTreeMap::from([(
                    "node.longhorn.io/create-default-disk".to_owned(),
                    "true".to_owned(),
                )]),
            }],
            control: None,
        }
    } else {
        AssertionResult {
            name: "hcloud-off-autoscalers".to_owned(),
            kind: "placement".to_owned(),
            verdict: Verdict::Pass,
            bound: "platform.devantler.tech/baseline-worker In [true]".to_owned(),
            measured: "0 pods outside the rule".to_owned(),
            summary: "every hcloud consumer stayed on baseline workers".to_owned(),
            evidence: Vec::new(),
            control: None,
        }
    };
    let rto = AssertionResult {
        name: "rto".to_owned(),
        kind: "rto".to_owned(),
        verdict: Verdict::Pass,
        bound: "<= 15m".to_owned(),
        measured: "4m12s".to_owned(),
        summary: "all workloads ready 4m12s after the fault".to_owned(),
        evidence: vec![Evidence {
            at_ms: 612_000,
            pod: None,
            node: None,
            rule: "all workloads ready".to_owned(),
            detail: "last replica ready: apps/web-7d9f-x2x".to_owned(),
            labels: BTreeMap::new(),
        }],
        control: None,
    };
    DrillReport {
        format: REPORT_FORMAT.to_owned(),
        bench_version: "0.1.0".to_owned(),
        drill: DrillIdentity {
            name: "autoscaler-scale-down".to_owned(),
            description: "Burst, then reclaim.".to_owned(),
            file: Some("scenarios/autoscaler-scale-down.yaml".to_owned()),
            content_hash: "sha256:0000000000000000000000000000000000000000000000000000000000000000"
                .to_owned(),
            snapshot: None,
            from_cluster: None,
        },
        backend: "sim".to_owned(),
        seed: 42,
        topology: drill.topology,
        outcome: if failing {
            Outcome::Failed
        } else {
            Outcome::Passed
        },
        duration_ms: 1_800_000,
        assertions: vec![placement, rto],
        figures: BTreeMap::from([
            (
                "rto.all-workloads".to_owned(),
                Figure {
                    value: 252_000.0,
                    unit: "ms".to_owned(),
                },
            ),
            (
                "availability.api".to_owned(),
                Figure {
                    value: 0.9983,
                    unit: "ratio".to_owned(),
                },
            ),
        ]),
        timeline: vec![
            Event {
                at_ms: 0,
                kind: EventKind::NodeReady,
                object: object("Node", "", "prod-worker-1"),
                node: Some("prod-worker-1".to_owned()),
                pool: Some("baseline".to_owned()),
                message: "node became Ready".to_owned(),
            },
            Event {
                at_ms: 360_000,
                kind: EventKind::FaultInjected,
                object: object("Node", "", node),
                node: Some(node.to_owned()),
                pool: Some("autoscale-cx43".to_owned()),
                message: "autoscaler scale-down: tainted ToBeDeletedByClusterAutoscaler".to_owned(),
            },
        ],
        timeline_summary: None,
        events_file: None,
        not_simulated: vec![object("HelmRelease", "openbao", "openbao")],
        workloads: vec![
            WorkloadAvailability {
                workload: "apps/Deployment/web".into(),
                lowest_ready: 2,
                desired: 3,
                lowest_at_ms: 125_000,
                whole_ratio: 0.9375,
            },
            WorkloadAvailability {
                workload: "openbao/StatefulSet/openbao".into(),
                lowest_ready: 3,
                desired: 3,
                lowest_at_ms: 0,
                whole_ratio: 1.0,
            },
        ],
    }
}

fn fixture(name: &str) -> std::path::PathBuf {
    root().join("tests/fixtures/reports").join(name)
}

#[test]
fn stored_reports_round_trip_byte_for_byte() {
    for (name, failing) in [("passing.json", false), ("failing.json", true)] {
        let path = fixture(name);
        if std::env::var_os("BLESS_REPORTS").is_some() {
            std::fs::write(&path, sample(failing).to_json()).expect("bless fixture");
        }
        let text = std::fs::read_to_string(&path).expect("fixture exists");
        let report = DrillReport::from_json(&path, &text).expect("fixture parses");
        assert_eq!(
            report,
            sample(failing),
            "{name}: the fixture and the model agree"
        );
        assert_eq!(
            report.to_json(),
            text,
            "{name}: JSON -> model -> JSON is identical"
        );
    }
}

#[test]
fn markdown_and_junit_renderings() {
    for (name, failing) in [("passing", false), ("failing", true)] {
        let report = sample(failing);
        insta::assert_snapshot!(format!("{name}_markdown"), markdown::render(&report));
        insta::assert_snapshot!(format!("{name}_junit"), junit::render(&report));
    }
}

/// The shape CI systems read: testsuites > testsuite > testcase, counts on
/// the suites, a `<failure>` with message and type on a failing case.
#[test]
fn junit_has_the_shape_ci_systems_read() {
    let report = sample(true);
    let xml = junit::render(&report);
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(root.attribute("tests"), Some("2"));
    assert_eq!(root.attribute("failures"), Some("1"));
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    let suite = suites[0];
    assert_eq!(suite.attribute("name"), Some("autoscaler-scale-down"));
    assert_eq!(suite.attribute("tests"), Some("2"));
    assert_eq!(suite.attribute("failures"), Some("1"));
    // Re-rendered from the report, the wall time is unknown: no suite
    // time is invented; the drill time is a property either way.
    assert_eq!(suite.attribute("time"), None);
    let property = |name: &str| {
        suite
            .descendants()
            .find(|p| p.has_tag_name("property") && p.attribute("name") == Some(name))
            .and_then(|p| p.attribute("value"))
    };
    assert_eq!(property("drill-time-ms"), Some("1800000"));
    let timed = junit::render_timed(&report, Some(std::time::Duration::from_millis(1_250)));
    let timed = roxmltree::Document::parse(&timed).expect("well-formed XML");
    let suite_time = timed
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .and_then(|s| s.attribute("time"));
    assert_eq!(suite_time, Some("1.250"), "the run's wall time");
    let cases: Vec<_> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    let names: Vec<_> = cases.iter().filter_map(|c| c.attribute("name")).collect();
    assert_eq!(names, ["hcloud-off-autoscalers", "rto"]);
    let failure = cases[0]
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("the failing assertion carries a <failure>");
    assert_eq!(failure.attribute("type"), Some("placement"));
    assert!(
        failure
            .attribute("message")
            .is_some_and(|m| m.contains("openbao/openbao-0"))
    );
    let text = failure.text().unwrap_or_default();
    assert!(text.contains("node autoscale-cx43-6406b46e4820"), "{text}");
    assert!(cases[1].children().all(|n| !n.has_tag_name("failure")));
}

#[test]
fn bench_report_re_renders_a_stored_report() {
    let run = bench(&[
        "report",
        "tests/fixtures/reports/failing.json",
        "--format",
        "md",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, markdown::render(&sample(true)));
    let run = bench(&[
        "report",
        "tests/fixtures/reports/passing.json",
        "--format",
        "junit",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, junit::render(&sample(false)));
}

#[test]
fn bench_report_refuses_what_is_not_a_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path.to_str().expect("utf-8").to_owned()
    };
    let other_version = std::fs::read_to_string(fixture("passing.json"))
        .expect("fixture")
        .replace(REPORT_FORMAT, "drillbench.dev/report/v0");
    let cases = [
        (
            write("v0.json", &other_version),
            "report format `drillbench.dev/report/v0` is not supported",
        ),
        (
            write(
                "garbage.json",
                "{\"format\": \"drillbench.dev/report/v1\",\n \"seed\": \"x\"}",
            ),
            "not a drill report",
        ),
        (write("empty.json", ""), "not a drill report"),
        (
            dir.path()
                .join("missing.json")
                .to_str()
                .expect("utf-8")
                .to_owned(),
            "cannot read report",
        ),
    ];
    for (path, message) in cases {
        let run = bench(&["report", &path]);
        assert_eq!(run.code, 2, "{path}");
        assert!(run.stderr.contains(message), "{path}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    // The error names the line and column of a malformed field.
    let run = bench(&["report", &dir.path().join("garbage.json").to_string_lossy()]);
    assert!(run.stderr.contains("garbage.json:2:"), "{}", run.stderr);
}

#[test]
fn write_all_writes_every_format() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("nested/out");
    let files = drillbench_report::write_all(&sample(false), &out, None).expect("written");
    let names: Vec<_> = files
        .iter()
        .filter_map(|f| f.file_name().and_then(|n| n.to_str()).map(str::to_owned))
        .collect();
    assert_eq!(
        names,
        [
            "report.json",
            "report.md",
            "report.junit.xml",
            "report.html"
        ]
    );
    let json = std::fs::read_to_string(out.join("report.json")).expect("json");
    assert_eq!(
        DrillReport::from_json(Path::new("report.json"), &json).expect("parses"),
        sample(false)
    );
}

/// A name carrying characters XML forbids still gives a file every JUnit
/// reader can parse (issue 19: U+FFFF made `report.junit.xml` unreadable).
#[test]
fn junit_stays_well_formed_whatever_the_names_carry() {
    let mut report = sample(true);
    report.assertions[0].name = "hcloud\u{FFFF}-off\u{1}-autoscalers".to_owned();
    report.assertions[0].summary = "ran\u{1b}[31m where it must not".to_owned();
    let xml = junit::render(&report);
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let names: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|c| c.attribute("name"))
        .collect();
    assert_eq!(names, ["hcloud-off-autoscalers", "rto"]);
}

/// The Python interpreter with junitparser and junit2html: `.ci/run`
/// installs them in a venv and names it in `BENCH_JUNIT_PYTHON`.
fn junit_python() -> String {
    std::env::var("BENCH_JUNIT_PYTHON").unwrap_or_else(|_| {
        let tmp = std::env::var("TMPDIR").unwrap_or_else(|_| "/tmp".to_owned());
        format!("{tmp}/drillbench-junit-5.0.3/bin/python")
    })
}

/// JUnit as real consumers read it: junitparser (what test-report actions
/// build on) sees the suite's wall time, the drill time as a property, a
/// time, bound and measured value on every testcase and the failure with
/// its evidence; junit2html renders the page and its matrix view (which
/// crashed on testcases without a time).
#[test]
fn junit_reads_back_through_junitparser_and_junit2html() {
    let python = junit_python();
    if !common::tool_or_skip(
        &python,
        &["-c", "import junitparser, junit2htmlreport"],
        "python3 -m venv /tmp/drillbench-junit-5.0.3 && \
         /tmp/drillbench-junit-5.0.3/bin/pip install junitparser==5.0.3 junit2html==31.1.4 \
         (.ci/run does it)",
    ) {
        return;
    }
    let report = sample(true);
    let dir = tempfile::tempdir().expect("tempdir");
    let xml = dir.path().join("report.junit.xml");
    std::fs::write(
        &xml,
        junit::render_timed(&report, Some(std::time::Duration::from_millis(2_500))),
    )
    .expect("write");
    let out = std::process::Command::new(&python)
        .arg(root().join("tests/junit/read_junit.py"))
        .arg(&xml)
        .arg(dir.path())
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let suite = &seen["suites"][0];
    assert_eq!(suite["name"], "autoscaler-scale-down");
    assert_eq!(suite["tests"], 2);
    assert_eq!(suite["failures"], 1);
    assert_eq!(suite["time"], 2.5, "the suite's time is the wall time");
    assert_eq!(suite["properties"]["drill-time-ms"], "1800000");
    assert_eq!(suite["properties"]["seed"], report.seed.to_string());
    let cases = suite["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), report.assertions.len());
    for (case, assertion) in cases.iter().zip(&report.assertions) {
        assert_eq!(case["name"], assertion.name.as_str());
        assert_eq!(case["time"], 1800.0, "{case}");
        assert_eq!(case["properties"]["bound"], assertion.bound.as_str());
        assert_eq!(case["properties"]["measured"], assertion.measured.as_str());
    }
    let failure = &cases[0]["result"];
    assert_eq!(failure["kind"], "failure");
    assert_eq!(failure["type"], "placement");
    assert!(
        failure["text"]
            .as_str()
            .is_some_and(|t| t.contains("pod openbao/openbao-0")),
        "{failure}"
    );
    assert_eq!(cases[1]["result"]["kind"], "passed");
    for page in ["junit2html.html", "matrix.html"] {
        let html = std::fs::read_to_string(dir.path().join(page)).expect(page);
        assert!(html.contains("hcloud-off-autoscalers"), "{page}");
    }
}
