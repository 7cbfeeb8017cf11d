//! A writer workload makes RPO a measured data-loss window: it acknowledges
//! a write every interval while one of its pods is Ready, and a restore to
//! a backup's capture point loses exactly the acknowledged writes after
//! it. The window ends at the last lost write, so a writer that stopped
//! before the loss loses less than the backup timeline alone suggests.

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use drillbench_observe::EventKind;
use drillbench_report::{DrillReport, Outcome};

const MIN: u64 = 60_000;

/// A cluster whose daily backup last started 6 h before the drill (20 min
/// long), a `db` writer acknowledging a write every minute, the given
/// steps before a full rebuild restored from that schedule, and an RPO bound.
fn run(annotation: &str, steps_before: &str, rpo: &str) -> DrillReport {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifests = format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: db, namespace: data}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata:
      labels: {{app: db}}
      annotations: {{{annotation}}}
    spec:
      containers:
        - name: db
          image: postgres
          resources: {{requests: {{cpu: 100m, memory: 256Mi}}}}
"
    );
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(&manifests),
    )
    .expect("write");
    let text = format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: writer
cluster:
  pools:
    - name: baseline
      count: 2
      serverType: cx43
  backups:
    - schedule: daily
      every: 24h
      duration: 20m
      lastStartedAgo: 6h
workloads:
  - path: manifests.yaml
steps:
{steps_before}  - fault:
      fullRebuild: {{restoreFrom: daily}}
assertions:
  - name: rpo
    rpo: {{schedule: daily, within: {rpo}}}
"
    );
    let text = crate::common::with_fixed_latencies(&text);
    let source = SourceFile::new(dir.path().join("drill.yaml"), text);
    let drill = Drill::from_source(source).unwrap_or_else(|d| panic!("{}", d.render(false)));
    drillbench::run::run_drill(&drill, 1, &drillbench_backend::sim::provision).expect("runs")
}

fn rpo_ms(report: &DrillReport) -> u64 {
    report.figures["rpo.rpo"].value as u64
}

/// When the first event of a kind happened.
fn first(report: &DrillReport, kind: EventKind) -> u64 {
    report
        .timeline
        .iter()
        .find(|e| e.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?}"))
        .at_ms
}

/// The writer's pod is Ready 5 s after it is created at 0; it acknowledges
/// a write every minute after that. The last write at or before `until`.
fn last_write(until: u64) -> u64 {
    5_000 + (until - 5_000) / MIN * MIN
}

/// The capture point: the backup that started 6 h before the drill.
const CAPTURED_BEFORE: u64 = 6 * 60 * MIN;

const WRITER: &str = "drillbench.dev/writes-every: 1m";

#[test]
fn a_running_writer_loses_everything_since_the_capture_point() {
    // Loss at 2 h into the drill; capture point 6 h before the drill. The
    // writer was Ready from 5 s, so its last write was at 1h59m05s.
    let report = run(WRITER, "  - wait: {for: 2h}\n", "24h");
    assert_eq!(report.outcome, Outcome::Passed);
    let lost_at = first(&report, EventKind::FaultInjected);
    assert!(lost_at >= 2 * 60 * MIN);
    assert_eq!(rpo_ms(&report), CAPTURED_BEFORE + last_write(lost_at));
    let writes = (lost_at - 5_000) / MIN;
    let json = serde_json::to_string(&report).expect("json");
    assert!(
        json.contains(&format!("{writes} acknowledged write(s) lost")),
        "{json}"
    );
}

#[test]
fn a_writer_that_stopped_loses_only_up_to_its_last_write() {
    // The writer stops at 30 min; the loss comes at 2 h: the window ends
    // at its last write, 1h30m less than the backup timeline says.
    let report = run(
        WRITER,
        "  - wait: {for: 30m}\n  - scale: {workload: data/Deployment/db, replicas: 0}\n  - wait: {for: 90m}\n",
        "24h",
    );
    // The pod stops being Ready when it is deleted; a write due at that
    // instant is not acknowledged.
    let stopped = first(&report, EventKind::WorkloadScaled);
    assert_eq!(
        rpo_ms(&report),
        CAPTURED_BEFORE + last_write(stopped - 1),
        "the window ends at the last write, not at the loss"
    );
    let lost_at = first(&report, EventKind::FaultInjected);
    assert!(CAPTURED_BEFORE + lost_at - rpo_ms(&report) > 89 * MIN);
}

#[test]
fn the_bound_judges_the_measured_window() {
    // 6h + ~2h of lost writes breaks a 7 h bound; the same drill with the
    // writer stopped early holds it.
    assert_eq!(
        run(WRITER, "  - wait: {for: 2h}\n", "7h").outcome,
        Outcome::Failed
    );
    let stopped = run(
        WRITER,
        "  - wait: {for: 10m}\n  - scale: {workload: data/Deployment/db, replicas: 0}\n  - wait: {for: 110m}\n",
        "7h",
    );
    assert_eq!(stopped.outcome, Outcome::Passed);
}

#[test]
fn without_a_writer_rpo_comes_from_the_backup_timeline() {
    // No annotation: the loss at 2 h against a capture 6 h before the start.
    let report = run("", "  - wait: {for: 2h}\n", "24h");
    let lost_at = first(&report, EventKind::FaultInjected);
    assert_eq!(rpo_ms(&report), CAPTURED_BEFORE + lost_at);
}

#[test]
fn a_malformed_interval_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(
            "apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: data}
spec:
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}, annotations: {drillbench.dev/writes-every: often}}
    spec: {containers: [{name: db, image: postgres}]}
",
        ),
    )
    .expect("write");
    let text = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: writer}
cluster:
  pools: [{name: baseline, count: 1, serverType: cx43}]
workloads: [{path: manifests.yaml}]
assertions: [{name: quorum, quorum: {}}]
";
    let drill = Drill::from_source(SourceFile::new(
        dir.path().join("drill.yaml"),
        text.to_owned(),
    ))
    .unwrap_or_else(|d| panic!("{}", d.render(false)));
    let error = drillbench_sim::Simulation::new(&drill, 1).expect_err("refused");
    assert!(
        error.to_string().contains("not a positive duration"),
        "{error}"
    );
}
