//! Drills on the simulator, end to end: the built-in control-plane recreate
//! passes, breaking the platform the way real incidents did makes it fail
//! with the right assertion, and the same seed gives the same bytes.

use crate::common;

use common::{bench, root};
use drillbench::run::run_drill;
use drillbench_backend::sim::provision;
use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use drillbench_report::{DrillReport, Outcome, Verdict};

/// The built-in drill with its text changed, loaded as if it were in `scenarios/`.
fn variant(name: &str, edit: impl Fn(String) -> String) -> Drill {
    let path = root().join("scenarios").join(format!("{name}.yaml"));
    let text = std::fs::read_to_string(&path).expect("built-in drill");
    let edited = edit(text.clone());
    assert_ne!(edited, text, "the variant must change the drill");
    let source = SourceFile::new(root().join("scenarios/variant.yaml"), edited);
    match Drill::from_source(source) {
        Ok(drill) => drill,
        Err(d) => panic!("{}", d.render(false)),
    }
}

fn run(drill: &Drill, seed: u64) -> DrillReport {
    run_drill(drill, seed, &provision).expect("the drill runs")
}

fn verdict<'a>(report: &'a DrillReport, name: &str) -> &'a drillbench_report::AssertionResult {
    report
        .assertions
        .iter()
        .find(|a| a.name == name)
        .unwrap_or_else(|| panic!("assertion {name}"))
}

#[test]
fn cp_recreate_passes_and_writes_its_reports() {
    let out = tempfile::tempdir().expect("tempdir");
    let run = bench(&[
        "run",
        "cp-recreate",
        "--out",
        out.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("cp-recreate on sim, seed 1: PASSED"),
        "{}",
        run.stdout
    );
    let report = DrillReport::read(&out.path().join("report.json")).expect("report.json");
    assert_eq!(report.outcome, Outcome::Passed);
    assert_eq!(report.drill.file, None, "a built-in is named, not a file");
    for file in ["report.md", "report.junit.xml"] {
        assert!(out.path().join(file).is_file(), "{file}");
    }
    // The failover really happened: the endpoint moved and a new member
    // was promoted, and the measured RTO is the boot plus the catch-up.
    let kinds: Vec<String> = report
        .timeline
        .iter()
        .map(|e| format!("{:?}", e.kind))
        .collect();
    for kind in [
        "EndpointMoved",
        "EtcdMemberRemoved",
        "EtcdLearnerAdded",
        "EtcdMemberPromoted",
        "PreflightPassed",
    ] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in the timeline");
    }
    let rto = report.figures["rto.control-plane-rto"].value;
    assert!(
        (180_000.0..=360_000.0).contains(&rto),
        "RTO {rto} ms: a 3–5 min boot and a 20–60 s catch-up"
    );
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let drill = Drill::load(&root().join("scenarios/cp-recreate.yaml")).expect("drill");
    let mut distinct = std::collections::BTreeSet::new();
    for seed in 0..100 {
        let first = run(&drill, seed).to_json();
        let second = run(&drill, seed).to_json();
        assert_eq!(first, second, "seed {seed} replays byte for byte");
        distinct.insert(first);
    }
    assert!(
        distinct.len() > 50,
        "seeds vary the run (boot times, catch-up)"
    );
}

#[test]
fn a_second_control_plane_failing_mid_drill_loses_quorum() {
    let drill = variant("cp-recreate", |text| {
        text.replace(
            "  - name: new member promoted",
            "  - name: a second control plane fails\n    fault:\n      crashNode:\n        target: otherControlPlane\n  - name: new member promoted",
        )
    });
    let report = run(&drill, 1);
    assert_ne!(report.outcome, Outcome::Passed);
    let quorum = verdict(&report, "quorum-never-lost");
    assert_eq!(quorum.verdict, Verdict::Fail, "{quorum:?}");
    assert!(
        quorum.summary.contains("without quorum"),
        "{}",
        quorum.summary
    );
    assert!(!quorum.evidence.is_empty());
    assert_eq!(verdict(&report, "api-available").verdict, Verdict::Fail);
}

#[test]
fn a_partially_failed_newest_backup_stops_the_drill_at_the_preflight() {
    let drill = variant("cp-recreate", |text| {
        text.replace(
            "      lastStartedAgo: 6h",
            "      lastStartedAgo: 6h\n      lastPhase: PartiallyFailed",
        )
    });
    let report = run(&drill, 1);
    assert_eq!(report.outcome, Outcome::Aborted);
    let failed = report
        .timeline
        .iter()
        .find(|e| format!("{:?}", e.kind) == "PreflightFailed")
        .expect("the preflight said no-go");
    assert!(
        failed.message.contains("is PartiallyFailed, not Completed"),
        "{}",
        failed.message
    );
    // Nothing destructive ran after a no-go.
    assert!(
        report
            .timeline
            .iter()
            .all(|e| format!("{:?}", e.kind) != "FaultInjected")
    );
}

#[test]
fn a_failover_slower_than_the_bound_fails_availability() {
    let drill = variant("cp-recreate", |text| {
        text.replace(
            "  backups:",
            "  endpoint: {name: prod-floating-ip, failoverDelay: 5m}\n  backups:",
        )
    });
    let report = run(&drill, 1);
    let availability = verdict(&report, "api-available");
    assert_eq!(availability.verdict, Verdict::Fail, "{availability:?}");
    assert_eq!(verdict(&report, "quorum-never-lost").verdict, Verdict::Pass);
}
