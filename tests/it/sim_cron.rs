//! CronJobs run on their schedule in drill time (UTC, the drill starting at
//! 2026-01-01T00:00Z), from the documented semantics: no run at creation,
//! a run at each scheduled time, `suspend` skips runs, and a run due while
//! the previous one is active is skipped under `Forbid` and replaces it
//! under `Replace`. A run's pod is Ready 5 s after creation and succeeds a
//! minute later.

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use drillbench_observe::EventKind;
use drillbench_sim::Simulation;
use drillbench_sim::world::PodPhase;

const MIN: u64 = 60_000;

fn cluster(spec: &str) -> Result<Simulation, String> {
    cluster_with_pod_spec(spec, "")
}

/// [`cluster`] with `pod_spec` lines added to the run's pod spec.
fn cluster_with_pod_spec(spec: &str, pod_spec: &str) -> Result<Simulation, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifests = format!(
        "apiVersion: batch/v1
kind: CronJob
metadata: {{name: snap, namespace: ops}}
spec:
{spec}  jobTemplate:
    spec:
      template:
        spec:
{pod_spec}          restartPolicy: OnFailure
          containers: [{{name: c, image: snap, resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}}}]
"
    );
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(&manifests),
    )
    .expect("write");
    let text = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: cron}
cluster:
  pools: [{name: baseline, count: 2, serverType: cx43}]
workloads: [{path: manifests.yaml}]
assertions: [{name: quorum, quorum: {}}]
";
    let drill = Drill::from_source(SourceFile::new(
        dir.path().join("drill.yaml"),
        text.to_owned(),
    ))
    .map_err(|d| d.render(false))?;
    Simulation::new(&drill, 1).map_err(|e| e.to_string())
}

/// When each `snap` pod was created, up to `until`.
fn runs(spec: &str, until: u64) -> (Simulation, Vec<u64>) {
    let mut sim = cluster(spec).expect("provisions");
    sim.advance_to(until);
    let created = sim
        .observation()
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PodCreated && e.object.name.starts_with("snap-"))
        .map(|e| e.at_ms)
        .collect();
    (sim, created)
}

#[test]
fn a_cronjob_runs_at_each_scheduled_time_and_not_at_creation() {
    let (sim, created) = runs("  schedule: \"*/10 * * * *\"\n", 60 * MIN + 1);
    assert_eq!(
        created,
        [10, 20, 30, 40, 50, 60].map(|m| m * MIN),
        "every ten minutes from 00:10"
    );
    let succeeded = sim
        .pods()
        .iter()
        .filter(|p| p.phase == PodPhase::Succeeded)
        .count();
    assert_eq!(succeeded, 5, "each run but the one just started completed");
}

#[test]
fn a_daily_schedule_first_runs_at_its_hour() {
    // The production snapshot schedule: 03:00 every day.
    let (_, created) = runs("  schedule: \"0 3 * * *\"\n", 27 * 60 * MIN + 1);
    assert_eq!(created, [3 * 60 * MIN, 27 * 60 * MIN]);
}

#[test]
fn a_whole_cronjob_counts_as_ready_between_runs() {
    let mut sim = cluster("  schedule: \"0 3 * * *\"\n").expect("provisions");
    sim.advance_to(MIN);
    assert!(
        sim.workload_key_ready("ops/CronJob/snap"),
        "nothing due yet"
    );
    for at in [1, 3_000, 30_000] {
        sim.advance_to(3 * 60 * MIN + at);
        assert!(
            sim.workload_key_ready("ops/CronJob/snap"),
            "a run under way, {at} ms in, is not an outage"
        );
    }
    sim.advance_to(3 * 60 * MIN + 2 * MIN);
    assert!(
        sim.workload_key_ready("ops/CronJob/snap"),
        "the run completed"
    );
}

#[test]
fn a_run_that_cannot_be_placed_is_the_missed_run_that_counts() {
    // Control of the test above: the same run, its pod asking for a node
    // label no node has, never starts.
    let mut sim = cluster_with_pod_spec(
        "  schedule: \"0 3 * * *\"\n",
        "          nodeSelector: {disk: nvme}\n",
    )
    .expect("provisions");
    sim.advance_to(3 * 60 * MIN - 1);
    assert!(
        sim.workload_key_ready("ops/CronJob/snap"),
        "nothing due yet"
    );
    sim.advance_to(3 * 60 * MIN + 5 * MIN);
    assert!(
        !sim.workload_key_ready("ops/CronJob/snap"),
        "the run's pod was never placed"
    );
}

#[test]
fn forbid_skips_a_run_due_while_one_is_active() {
    // Every minute, each run taking 65 s: the run due at 2 min finds the
    // 1 min run active and is skipped, and so on.
    let (_, created) = runs(
        "  schedule: \"* * * * *\"\n  concurrencyPolicy: Forbid\n",
        10 * MIN + 1,
    );
    assert_eq!(created, [1, 3, 5, 7, 9].map(|m| m * MIN));
}

#[test]
fn replace_deletes_the_active_run_and_starts_anew() {
    let (sim, created) = runs(
        "  schedule: \"* * * * *\"\n  concurrencyPolicy: Replace\n",
        10 * MIN + 1,
    );
    assert_eq!(created, (1..=10).map(|m| m * MIN).collect::<Vec<_>>());
    assert!(
        sim.pods().iter().all(|p| p.phase != PodPhase::Succeeded),
        "no run lived long enough to complete"
    );
}

#[test]
fn a_suspended_cronjob_never_runs() {
    let (_, created) = runs("  schedule: \"* * * * *\"\n  suspend: true\n", 10 * MIN);
    assert!(created.is_empty(), "{created:?}");
}

#[test]
fn schedules_and_time_zones_the_simulator_cannot_honour_are_refused() {
    let error = cluster("  schedule: \"61 * * * *\"\n").expect_err("refused");
    assert!(error.contains("minute field `61`"), "{error}");
    let error =
        cluster("  schedule: \"0 3 * * *\"\n  timeZone: Europe/Copenhagen\n").expect_err("refused");
    assert!(error.contains("runs schedules in UTC"), "{error}");
    assert!(cluster("  schedule: \"0 3 * * *\"\n  timeZone: Etc/UTC\n").is_ok());
}

// kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ and
// garbage-collection: a deleted CronJob schedules no more Jobs. Deleted at
// 00:25 (a drill's `delete` step), its runs stop after 00:20; the control
// keeps it and runs at 00:30 and after.
#[test]
fn a_deleted_cronjob_runs_no_more() {
    use drillbench_model::scenario::step::ObjectKey;
    let created_until = |delete: bool| {
        let mut sim = cluster("  schedule: \"*/10 * * * *\"\n").expect("provisions");
        sim.advance_to(25 * MIN);
        if delete {
            sim.delete_object(&ObjectKey {
                kind: "CronJob".to_owned(),
                namespace: "ops".to_owned(),
                name: "snap".to_owned(),
            })
            .expect("deleted");
        }
        sim.advance_to(60 * MIN + 1);
        sim.observation()
            .events
            .iter()
            .filter(|e| e.kind == EventKind::PodCreated && e.object.name.starts_with("snap-"))
            .map(|e| e.at_ms / MIN)
            .collect::<Vec<_>>()
    };
    assert_eq!(created_until(true), [10, 20]);
    assert_eq!(created_until(false), [10, 20, 30, 40, 50, 60]);
}
