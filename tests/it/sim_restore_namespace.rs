//! `restoreNamespace` on the simulator: a backup of one namespace is taken
//! at the fault, runs for the schedule's duration while the writers keep
//! writing, the namespace is lost and restored to the capture point. The
//! `rpo:` assertion judges what the namespace's writers lost.

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use drillbench_observe::EventKind;
use drillbench_report::{DrillReport, Outcome};

const MIN: u64 = 60_000;

/// Two writers acknowledging a write every minute, `db` in `data` and
/// `audit` in `logs`; a backup schedule whose backups take `duration`;
/// two hours of drill, then `data` is lost and restored.
fn drill(duration: &str, rpo: &str) -> Drill {
    drill_of("data", duration, rpo)
}

/// As [`drill`], restoring `namespace` (`cache` holds a Deployment that
/// writes nothing).
fn drill_of(namespace: &str, duration: &str, rpo: &str) -> Drill {
    let dir = tempfile::tempdir().expect("tempdir");
    let writer = |name: &str, namespace: &str| {
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata:
      labels: {{app: {name}}}
      annotations: {{drillbench.dev/writes-every: 1m}}
    spec:
      containers:
        - name: {name}
          image: postgres
          resources: {{requests: {{cpu: 100m, memory: 256Mi}}}}
"
        )
    };
    let idle = writer("web", "cache")
        .replace("      annotations: {drillbench.dev/writes-every: 1m}\n", "");
    let manifests = format!(
        "{}---\n{}---\n{idle}",
        writer("db", "data"),
        writer("audit", "logs")
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
  name: restore-namespace
cluster:
  pools:
    - name: baseline
      count: 2
      serverType: cx43
  backups:
    - schedule: daily
      every: 24h
      duration: {duration}
      lastStartedAgo: 6h
workloads:
  - path: manifests.yaml
steps:
  - wait: {{for: 2h}}
  - fault:
      restoreNamespace: {{namespace: {namespace}, schedule: daily}}
  - wait: {{for: 5m}}
assertions:
  - name: rpo
    rpo: {{schedule: daily, within: {rpo}}}
"
    );
    let text = crate::common::with_fixed_latencies(&text);
    let source = SourceFile::new(dir.path().join("drill.yaml"), text);
    Drill::from_source(source).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

mod erased {
    /// Anything the report serializes, as JSON text.
    pub trait Ser {
        fn json(&self) -> String;
    }
    impl<T: serde::Serialize> Ser for T {
        fn json(&self) -> String {
            serde_json::to_string(self).expect("json")
        }
    }
}

fn run(duration: &str, rpo: &str, seed: u64) -> DrillReport {
    drillbench::run::run_drill(
        &drill(duration, rpo),
        seed,
        &drillbench_backend::sim::provision,
    )
    .expect("runs")
}

fn first(report: &DrillReport, kind: EventKind) -> u64 {
    report
        .timeline
        .iter()
        .find(|e| e.kind == kind)
        .unwrap_or_else(|| panic!("no {kind:?}"))
        .at_ms
}

#[test]
fn the_window_is_the_writes_acknowledged_while_the_backup_ran() {
    let report = run("20m", "1h", 1);
    assert_eq!(report.outcome, Outcome::Passed);
    // The capture point is the fault; `db` was Ready at 5 s and writes
    // every minute, so the writes lost are those after the capture up to
    // the loss, 20 min later.
    let captured = first(&report, EventKind::FaultInjected);
    let lost_at = captured + 20 * MIN;
    let last_ack = 5_000 + (lost_at - 5_000) / MIN * MIN;
    let rpo = &report.figures["rpo.rpo"];
    assert_eq!(rpo.value as u64, last_ack - captured);
    let first_lost = 5_000 + ((captured - 5_000) / MIN + 1) * MIN;
    let writes = (last_ack - first_lost) / MIN + 1;
    let json = serde_json::to_string(&report).expect("json");
    assert!(
        json.contains(&format!("{writes} acknowledged write(s) lost")),
        "only the `data` writer counts: {json}"
    );
    assert!(json.contains("data/Deployment/db"), "{json}");
    assert!(
        !json.contains("logs/Deployment/audit: "),
        "the writer of another namespace lost nothing: {json}"
    );
}

#[test]
fn without_a_writer_the_window_is_the_backups_duration() {
    // Nothing measured what was lost: the restore's capture point against
    // the loss, as for a full rebuild without writers.
    let report = drillbench::run::run_drill(
        &drill_of("cache", "20m", "1h"),
        1,
        &drillbench_backend::sim::provision,
    )
    .expect("runs");
    assert_eq!(report.figures["rpo.rpo"].value as u64, 20 * MIN);
    assert_eq!(report.outcome, Outcome::Passed);
    let rpo = &report.assertions[0];
    assert!(
        rpo.summary.starts_with("data written in the last 20m"),
        "no writer's loss is claimed: {}",
        rpo.summary
    );
}

#[test]
fn the_namespace_comes_back() {
    let report = run("20m", "1h", 1);
    let lost_at = first(&report, EventKind::FaultInjected) + 20 * MIN;
    let deleted: Vec<_> = report
        .timeline
        .iter()
        .filter(|e| e.kind == EventKind::PodDeleted && e.at_ms == lost_at)
        .map(|e| e.object.namespace.as_str())
        .collect();
    assert_eq!(deleted, ["data"], "only the namespace's pod is lost");
    assert!(
        report.timeline.iter().any(|e| e.at_ms > lost_at
            && e.kind == EventKind::PodReady
            && e.object.namespace == "data"),
        "the restored Deployment starts its pod again"
    );
}

/// Velero leaves out of every backup an object labelled
/// `velero.io/exclude-from-backup: "true"`, whatever the filters include
/// (velero.io/docs/main/resource-filtering/, "Excludes"): restored from
/// such a backup, the namespace comes back without that workload, whose
/// pod nothing starts again; a workload of the namespace that was backed
/// up comes back as before. The control: nothing excluded, every
/// workload of the namespace is back.
#[test]
fn a_workload_left_out_of_the_backup_does_not_come_back() {
    let back_after_the_loss = |excluded: &[&str]| {
        let mut drill = drill("20m", "1h");
        // A second workload in the restored namespace, backed up.
        let reader = "apiVersion: apps/v1
kind: Deployment
metadata: {name: reader, namespace: data}
spec:
  replicas: 1
  selector: {matchLabels: {app: reader}}
  template:
    metadata: {labels: {app: reader}}
    spec:
      containers:
        - {name: reader, image: postgres, resources: {requests: {cpu: 100m, memory: 256Mi}}}
";
        std::sync::Arc::make_mut(&mut drill.workloads).extend(
            drillbench_model::manifest::parse_documents("reader.yaml", reader).expect("yaml"),
        );
        for backup in &mut drill.topology.backups {
            backup.excluded = excluded.iter().map(|w| (*w).to_owned()).collect();
        }
        let report = drillbench::run::run_drill(&drill, 1, &drillbench_backend::sim::provision)
            .expect("runs");
        let lost_at = first(&report, EventKind::FaultInjected) + 20 * MIN;
        let mut back: Vec<String> = report
            .timeline
            .iter()
            .filter(|e| e.at_ms > lost_at && e.kind == EventKind::PodReady)
            .map(|e| e.object.name.clone())
            .collect();
        back.sort();
        back
    };
    let back = back_after_the_loss(&["data/Deployment/db"]);
    assert!(back.iter().all(|p| !p.starts_with("db-")), "{back:?}");
    assert!(back.iter().any(|p| p.starts_with("reader-")), "{back:?}");
    let back = back_after_the_loss(&[]);
    assert!(back.iter().any(|p| p.starts_with("db-")), "{back:?}");
    assert!(back.iter().any(|p| p.starts_with("reader-")), "{back:?}");
}

#[test]
fn a_backup_slower_than_the_bound_breaches_the_rpo() {
    // Writes keep being acknowledged for the whole 30 min backup; a 15 min
    // bound cannot hold.
    let report = run("30m", "15m", 1);
    assert_eq!(report.outcome, Outcome::Failed);
    assert!(report.figures["rpo.rpo"].value as u64 > 15 * MIN);
}

#[test]
fn the_measurement_is_deterministic() {
    // Each run has its own temporary drill file; all it saw must match.
    let (a, b) = (run("20m", "1h", 7), run("20m", "1h", 7));
    let json = |v: &dyn erased::Ser| v.json();
    assert_eq!(json(&a.timeline), json(&b.timeline));
    assert_eq!(json(&a.figures), json(&b.figures));
    assert_eq!(json(&a.assertions), json(&b.assertions));
}

#[test]
fn an_unknown_namespace_or_schedule_is_refused_where_it_is_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(
            "apiVersion: v1
kind: Pod
metadata: {name: db, namespace: data}
spec: {containers: [{name: db, image: postgres}]}
",
        ),
    )
    .expect("write");
    let text = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: restore}
cluster:
  pools: [{name: baseline, count: 1, serverType: cx43}]
  backups: [{schedule: daily, every: 24h}]
workloads: [{path: manifests.yaml}]
steps:
  - fault:
      restoreNamespace: {namespace: dta, schedule: hourly}
";
    let error = Drill::from_source(SourceFile::new(
        dir.path().join("drill.yaml"),
        text.to_owned(),
    ))
    .expect_err("refused");
    let rendered = error.render(false);
    assert!(
        rendered.contains(
            "drill.yaml:10:37: the drill deploys nothing into namespace `dta`; expected one of: data"
        ),
        "{rendered}"
    );
    assert!(
        rendered.contains(
            "drill.yaml:10:52: `hourly` is not a backup schedule of the cluster; expected one of: daily"
        ),
        "{rendered}"
    );
}

#[test]
fn a_backend_that_cannot_restore_refuses_the_drill_up_front() {
    let error = drillbench::run::refuse_unsupported(
        &drill("20m", "1h"),
        "kubeconfig",
        drillbench_backend::Capabilities::NONE,
    )
    .expect_err("refused");
    let text = error.to_string();
    assert!(
        text.contains("the kubeconfig backend cannot lose a namespace and restore it from a backup; use --backend"),
        "{text}"
    );
    assert!(text.contains("sim"), "{text}");
}
