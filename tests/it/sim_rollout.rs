//! Deployment rollouts, from the documented semantics of `maxSurge` and
//! `maxUnavailable`: while a changed template replaces the pods, the
//! Deployment never runs more than `replicas + maxSurge` pods and never has
//! fewer than `replicas - maxUnavailable` Ready (surge percentages rounded
//! up, unavailable ones down); `Recreate` removes every old pod before the
//! first new one exists. Each table row is checked after every event of
//! the run, not only at the end.

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use drillbench_sim::Simulation;
use drillbench_sim::world::{PodPhase, SimPod};

const KEY: &str = "apps/Deployment/web";

/// Three control planes and three baseline workers with room for every pod.
fn cluster(manifests: &str) -> Result<Simulation, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(manifests),
    )
    .expect("write");
    let text = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: rollout
cluster:
  pools:
    - name: baseline
      count: 3
      serverType: cx43
workloads:
  - path: manifests.yaml
assertions: [{name: quorum, quorum: {}}]
";
    let source = SourceFile::new(dir.path().join("drill.yaml"), text.to_owned());
    let drill = Drill::from_source(source).map_err(|d| d.render(false))?;
    Simulation::new(&drill, 7).map_err(|e| e.to_string())
}

fn web(replicas: u32, strategy: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: apps}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
{strategy}  template:
    metadata: {{labels: {{app: web}}}}
    spec:
      containers:
        - name: app
          image: web:1
          resources: {{requests: {{cpu: 100m, memory: 256Mi}}}}
        - name: sidecar
          image: proxy:1
          resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}
"
    )
}

fn rolling(surge: &str, unavailable: &str) -> String {
    format!(
        "  strategy: {{type: RollingUpdate, rollingUpdate: {{maxSurge: {surge}, maxUnavailable: {unavailable}}}}}\n"
    )
}

fn image(pod: &SimPod) -> &str {
    pod.template.spec.containers[0]
        .image
        .as_deref()
        .unwrap_or_default()
}

fn web_pods(sim: &Simulation) -> impl Iterator<Item = &SimPod> {
    sim.pods().iter().filter(|p| p.name.starts_with("web-"))
}

/// What a rollout looked like, event by event.
#[derive(Debug, Default)]
struct Seen {
    /// Most pods that counted as replicas at once (not terminating).
    max_active: usize,
    /// Fewest Ready pods at once.
    min_ready: usize,
    /// Whether an old pod and a new pod ever existed at the same time.
    old_and_new_together: bool,
    /// Whether the rollout finished: every replica Ready on the new image.
    finished: bool,
}

fn observe(sim: &Simulation, seen: &mut Seen) {
    let active = web_pods(sim).filter(|p| p.is_active()).count();
    let ready = web_pods(sim).filter(|p| p.phase == PodPhase::Ready).count();
    seen.max_active = seen.max_active.max(active);
    seen.min_ready = seen.min_ready.min(ready);
    let live = || web_pods(sim).filter(|p| p.phase != PodPhase::Gone);
    if live().any(|p| image(p) == "web:1") && live().any(|p| image(p) == "web:2") {
        seen.old_and_new_together = true;
    }
}

/// Converges, rolls `web` out to `web:2`, and follows it event by event.
fn roll(replicas: u32, strategy: &str) -> Seen {
    let mut sim = cluster(&web(replicas, strategy)).expect("provisions");
    sim.advance_to(60_000);
    assert!(sim.workload_key_ready(KEY), "converged before the rollout");
    let mut seen = Seen {
        min_ready: usize::MAX,
        ..Seen::default()
    };
    observe(&sim, &mut seen);
    sim.rollout_workload(KEY, "web:2", Some("app"))
        .expect("rolls out");
    observe(&sim, &mut seen);
    let deadline = sim.now() + 30 * 60_000;
    while let Some(next) = sim.next_event_time() {
        if next > deadline {
            break;
        }
        sim.advance_to(next);
        observe(&sim, &mut seen);
    }
    let ready: Vec<&SimPod> = web_pods(&sim)
        .filter(|p| p.phase == PodPhase::Ready)
        .collect();
    seen.finished = ready.len() == replicas as usize
        && ready.iter().all(|p| image(p) == "web:2")
        && web_pods(&sim).all(|p| image(p) == "web:2" || p.phase == PodPhase::Gone);
    seen
}

#[test]
fn rolling_updates_stay_within_their_bounds() {
    // (replicas, strategy, most pods allowed, fewest Ready allowed)
    let table = [
        // The zero-downtime shape: one extra pod, never below 3 Ready.
        (3, rolling("1", "0"), 4, 3),
        // In place: never more pods than replicas, one down at a time.
        (3, rolling("0", "1"), 3, 2),
        // Defaults (25 %/25 %) of 4: one up, one down.
        (4, String::new(), 5, 3),
        // Defaults of 3: surge rounds up to 1, unavailable down to 0.
        (3, String::new(), 4, 3),
        // 30 % of 10 rounds up to 3; 25 % of 10 rounds down to 2.
        (10, rolling("30%", "25%"), 13, 8),
        // Both round to zero (0 and 10 % of 5): maxUnavailable becomes 1.
        (5, rolling("0", "10%"), 5, 4),
        // Wide bounds: the whole new set may come at once.
        (3, rolling("100%", "0"), 6, 3),
    ];
    for (replicas, strategy, most, fewest) in table {
        let seen = roll(replicas, &strategy);
        assert!(
            seen.finished,
            "{strategy:?} x{replicas}: finished, {seen:?}"
        );
        assert!(
            seen.max_active <= most,
            "{strategy:?} x{replicas}: at most {most} pods, {seen:?}"
        );
        assert!(
            seen.min_ready >= fewest,
            "{strategy:?} x{replicas}: at least {fewest} Ready, {seen:?}"
        );
        assert!(
            seen.old_and_new_together,
            "{strategy:?} x{replicas}: a rolling update overlaps old and new pods"
        );
    }
}

#[test]
fn the_bounds_are_used_not_only_respected() {
    // With one surge pod and none unavailable, the rollout does run four
    // pods at a time; with none surging it does drop to two Ready.
    assert_eq!(roll(3, &rolling("1", "0")).max_active, 4);
    assert_eq!(roll(3, &rolling("0", "1")).min_ready, 2);
}

#[test]
fn recreate_removes_every_old_pod_before_the_first_new_one() {
    let seen = roll(3, "  strategy: {type: Recreate}\n");
    assert!(seen.finished, "{seen:?}");
    assert!(!seen.old_and_new_together, "{seen:?}");
    assert_eq!(seen.min_ready, 0, "Recreate has downtime: {seen:?}");
    assert_eq!(seen.max_active, 3, "{seen:?}");
}

#[test]
fn both_bounds_zero_is_refused_at_load() {
    let error = cluster(&web(3, &rolling("0", "0%"))).expect_err("refused");
    assert!(
        error.contains("maxUnavailable may not be 0 when maxSurge is 0"),
        "{error}"
    );
    let error = cluster(&web(3, &rolling("-1", "1"))).expect_err("refused");
    assert!(error.contains("greater than or equal to 0"), "{error}");
}

#[test]
fn an_unchanged_template_starts_no_rollout() {
    let mut sim = cluster(&web(3, &rolling("1", "0"))).expect("provisions");
    sim.advance_to(60_000);
    let before = sim.pods().len();
    sim.rollout_workload(KEY, "web:1", Some("app"))
        .expect("no-op");
    sim.advance_to(10 * 60_000);
    assert_eq!(sim.pods().len(), before, "no pod was created");
}

#[test]
fn only_the_named_container_changes() {
    let mut sim = cluster(&web(2, &rolling("1", "0"))).expect("provisions");
    sim.advance_to(60_000);
    sim.rollout_workload(KEY, "proxy:2", Some("sidecar"))
        .expect("rolls out");
    sim.advance_to(20 * 60_000);
    let ready: Vec<&SimPod> = web_pods(&sim)
        .filter(|p| p.phase == PodPhase::Ready)
        .collect();
    assert_eq!(ready.len(), 2);
    for pod in ready {
        let images: Vec<&str> = pod
            .template
            .spec
            .containers
            .iter()
            .map(|c| c.image.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(images, ["web:1", "proxy:2"]);
    }
    assert!(
        sim.rollout_workload(KEY, "x:1", Some("missing")).is_err(),
        "a container that does not exist is an error"
    );
}

#[test]
fn a_rollout_step_runs_from_a_drill_and_its_target_is_checked() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(&web(3, &rolling("1", "0"))),
    )
    .expect("write");
    let drill = |workload: &str| {
        format!(
            "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: rollout
cluster:
  pools:
    - name: baseline
      count: 3
      serverType: cx43
workloads:
  - path: manifests.yaml
steps:
  - wait: {{for: 1m}}
  - rollout: {{workload: {workload}, image: web:2, container: app}}
  - wait: {{until: allWorkloadsReady, timeout: 10m}}
  - wait: {{for: 5m}}
assertions:
  - name: web-available
    availability: {{of: {{workload: apps/Deployment/web}}, atLeast: 1.0}}
"
        )
    };
    let load =
        |text: String| Drill::from_source(SourceFile::new(dir.path().join("drill.yaml"), text));
    let bad = load(drill("apps/StatefulSet/web")).expect_err("not a Deployment");
    assert!(
        bad.render(false)
            .contains("rollouts are modelled for Deployments only"),
        "{}",
        bad.render(false)
    );
    let good = load(drill(KEY)).unwrap_or_else(|d| panic!("{}", d.render(false)));
    let report =
        drillbench::run::run_drill(&good, 3, &drillbench_backend::sim::provision).expect("runs");
    let json = serde_json::to_string(&report).expect("serialises");
    assert!(
        json.contains("rolling update started"),
        "the rollout is on the timeline"
    );
    assert_eq!(
        report.outcome,
        drillbench_report::Outcome::Passed,
        "maxUnavailable 0 keeps web fully available: {json}"
    );
    let again =
        drillbench::run::run_drill(&good, 3, &drillbench_backend::sim::provision).expect("runs");
    assert_eq!(
        serde_json::to_string(&again).expect("serialises"),
        json,
        "the same seed replays the rollout byte for byte"
    );
}

/// A bound as the manifest writes it: pods or a percentage.
fn bound_yaml(value: u32, percent: bool) -> String {
    if percent {
        format!("\"{value}%\"")
    } else {
        value.to_string()
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Over random sizes and bounds, a rolling update finishes and stays
    /// within the bounds as the Kubernetes documentation resolves them:
    /// surge percentages rounded up, unavailable ones down, both zero
    /// after rounding meaning one unavailable.
    #[test]
    fn any_valid_rolling_update_stays_within_its_documented_bounds(
        replicas in 1u32..=8,
        surge in 0u32..=3,
        surge_percent in proptest::bool::ANY,
        unavailable in 0u32..=3,
        unavailable_percent in proptest::bool::ANY,
    ) {
        let (surge, unavailable) = if surge_percent || unavailable_percent {
            (surge * 25, unavailable * 25)
        } else {
            (surge, unavailable)
        };
        proptest::prop_assume!(surge > 0 || unavailable > 0);
        let strategy = rolling(
            &bound_yaml(surge, surge_percent),
            &bound_yaml(unavailable.min(100), unavailable_percent),
        );
        let most_extra = if surge_percent { (replicas * surge).div_ceil(100) } else { surge };
        let mut most_down = if unavailable_percent {
            replicas * unavailable.min(100) / 100
        } else {
            unavailable
        };
        if most_extra == 0 && most_down == 0 {
            most_down = 1;
        }
        let seen = roll(replicas, &strategy);
        proptest::prop_assert!(seen.finished, "{:?}", seen);
        proptest::prop_assert!(seen.max_active <= (replicas + most_extra) as usize, "{:?}", seen);
        proptest::prop_assert!(
            seen.min_ready >= replicas.saturating_sub(most_down) as usize,
            "{:?}",
            seen
        );
    }
}
