//! The incident, reproduced on the simulator: OpenBao guarded only by
//! `ksail.io/autoscaled DoesNotExist`, baseline under request pressure,
//! autoscaler nodes without the label. A replica bursts onto an autoscaler
//! node, scale-down reclaims it, and the replacement is stuck on a volume
//! still attached to the deleted server. With the positive baseline-worker
//! requirement the replica never goes there: it stays Pending instead.

use crate::common;

use common::root;
use drillbench::run::run_drill;
use drillbench_backend::sim::provision;
use drillbench_model::drill::Drill;
use drillbench_observe::EventKind;
use drillbench_report::{DrillReport, Verdict};

/// The incident drill, with its manifests optionally edited, in a temp dir.
fn incident(edit_manifests: impl Fn(String) -> String, seed: u64) -> DrillReport {
    let dir = tempfile::tempdir().expect("tempdir");
    incident_in(dir.path(), edit_manifests, seed)
}

fn incident_in(
    dir: &std::path::Path,
    edit_manifests: impl Fn(String) -> String,
    seed: u64,
) -> DrillReport {
    let harness = root().join("harness/incident");
    let manifests = std::fs::read_to_string(harness.join("manifests.yaml")).expect("manifests");
    std::fs::write(dir.join("manifests.yaml"), edit_manifests(manifests)).expect("write");
    let drill_text = std::fs::read_to_string(harness.join("drill.yaml"))
        .expect("drill")
        .replace(
            "../ksail/ksail.prod.yaml",
            &root()
                .join("harness/ksail/ksail.prod.yaml")
                .display()
                .to_string(),
        );
    let path = dir.join("drill.yaml");
    std::fs::write(&path, drill_text).expect("write");
    let drill = Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)));
    run_drill(&drill, seed, &provision).expect("runs")
}

fn assertion<'a>(report: &'a DrillReport, name: &str) -> &'a drillbench_report::AssertionResult {
    report
        .assertions
        .iter()
        .find(|a| a.name == name)
        .expect("assertion")
}

#[test]
fn does_not_exist_fails_open_and_the_volume_strands() {
    let report = incident(|m| m, 1);
    let placement = assertion(&report, "hcloud-off-autoscalers");
    assert_eq!(placement.verdict, Verdict::Fail);
    let evidence = &placement.evidence[0];
    assert!(
        evidence
            .pod
            .as_deref()
            .is_some_and(|p| p.starts_with("openbao/openbao-"))
    );
    assert!(
        evidence
            .node
            .as_deref()
            .is_some_and(|n| n.starts_with("autoscale-cx43-"))
    );
    assert!(
        !evidence.labels.contains_key("ksail.io/autoscaled"),
        "the node lacked the marker: {:?}",
        evidence.labels
    );
    assert!(
        evidence.detail.contains("(autoscaled)"),
        "{}",
        evidence.detail
    );

    // Scale-down reclaimed the node; the replacement waits on the volume.
    let kinds: Vec<EventKind> = report.timeline.iter().map(|e| e.kind).collect();
    assert!(kinds.contains(&EventKind::ScaleUp));
    assert!(kinds.contains(&EventKind::ScaleDown));
    let blocked = report
        .timeline
        .iter()
        .find(|e| e.kind == EventKind::PodBlocked)
        .expect("a replacement blocked on its volume");
    assert!(
        blocked
            .message
            .contains("Multi-Attach error for volume data-openbao-"),
        "{}",
        blocked.message
    );
    assert!(
        blocked
            .node
            .as_deref()
            .is_some_and(|n| n.starts_with("prod-worker-")),
        "the replacement was rescheduled on a baseline worker"
    );
    assert_eq!(
        assertion(&report, "no-stranded-volumes").verdict,
        Verdict::Fail
    );
    assert_eq!(
        assertion(&report, "openbao-recovers").verdict,
        Verdict::Fail
    );
}

#[test]
fn the_positive_requirement_keeps_the_replica_pending_instead() {
    let report = incident(
        |m| {
            let positive = m.replace(
                "                  - key: ksail.io/autoscaled\n                    operator: DoesNotExist",
                "                  - key: platform.devantler.tech/baseline-worker\n                    operator: In\n                    values: [\"true\"]",
            );
            assert_ne!(positive, m);
            positive
        },
        1,
    );
    let placement = assertion(&report, "hcloud-off-autoscalers");
    assert_eq!(placement.verdict, Verdict::Pass, "{placement:?}");
    assert!(
        report
            .timeline
            .iter()
            .filter(|e| e.kind == EventKind::PodScheduled && e.object.name.starts_with("openbao-"))
            .all(|e| e.pool.as_deref() == Some("baseline"))
    );
    // Nothing fits on the baseline while it is under pressure, and no
    // autoscaler node would match, so the autoscaler adds none: openbao-0
    // waits, unscheduled, until the load drops.
    let unschedulable = report
        .timeline
        .iter()
        .find(|e| e.kind == EventKind::PodUnschedulable && e.object.name == "openbao-0")
        .expect("openbao-0 could not be placed");
    assert!(
        unschedulable.message.contains("Insufficient"),
        "{}",
        unschedulable.message
    );
    assert!(
        report.timeline.iter().all(|e| e.kind != EventKind::ScaleUp),
        "no scale-up for a pod no autoscaler node can take"
    );
    assert_eq!(
        assertion(&report, "no-stranded-volumes").verdict,
        Verdict::Pass
    );
}

#[test]
fn the_incident_replays_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let first = incident_in(dir.path(), |m| m, 7).to_json();
    let second = incident_in(dir.path(), |m| m, 7).to_json();
    assert!(first == second, "seed 7 replays byte for byte");
}
