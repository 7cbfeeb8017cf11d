//! Pod termination grace periods in the simulator: a pod's own
//! `terminationGracePeriodSeconds`, and the cap the cluster autoscaler's
//! scale-down puts on it. One behaviour per test, each with a control.

use drillbench_observe::EventKind;
use drillbench_sim::Simulation;

use crate::sim_rules::{MIN, ON_BASELINE, cluster, cluster_with, deployment, pods_of, stayer};

/// How long the first pod named `prefix…` took from Terminating to gone.
fn terminated_in(sim: &Simulation, prefix: &str) -> Option<u64> {
    let at = |kind: EventKind| {
        sim.observation()
            .events
            .iter()
            .find(|e| e.kind == kind && e.object.name.starts_with(prefix))
            .map(|e| e.at_ms)
    };
    Some(at(EventKind::PodDeleted)? - at(EventKind::PodTerminating)?)
}

// kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination
// and the core/v1 PodSpec reference: `terminationGracePeriodSeconds` is
// how long the kubelet waits before it kills the pod, "Defaults to 30
// seconds"; 0 deletes it at once. An eviction (Eviction API, no
// DeleteOptions) uses the pod's own value. Each row is the control of the
// others: only the pod's value changes.
#[test]
fn an_evicted_pod_terminates_in_its_own_grace_period() {
    let rows: [(&str, Option<u32>, u64); 4] = [
        ("unset: the API default", None, 30_000),
        ("longer than the default", Some(120), 120_000),
        ("shorter", Some(5), 5_000),
        ("zero: at once", Some(0), 0),
    ];
    for (why, grace, expected) in rows {
        let spec = grace.map_or(ON_BASELINE.to_owned(), |g| {
            format!("{ON_BASELINE}      terminationGracePeriodSeconds: {g}\n")
        });
        let mut sim = cluster(&deployment("web", 1, "1Gi", &spec), "never", 0);
        sim.advance_to(MIN);
        sim.evict_one_of("apps/Deployment/web")
            .expect("a running pod")
            .expect("no budget refuses");
        sim.advance_to(sim.now() + 10 * MIN);
        assert_eq!(terminated_in(&sim, "web-"), Some(expected), "{why}");
    }
}

/// The scale-down of `sim_rules`' reclaimable autoscaler node, whose
/// stayer pod sets `grace` seconds, under the autoscaler settings given.
fn scaled_down(grace: u32, autoscaler: &str) -> Simulation {
    let filler = deployment("filler", 2, "13Gi", ON_BASELINE);
    let keep = stayer(
        "",
        &format!("  terminationGracePeriodSeconds: {grace}\n"),
        "Deployment",
    );
    let mut sim = cluster_with(&(filler + &keep), autoscaler);
    sim.advance_to(10 * MIN);
    assert_eq!(sim.ready_nodes_of("burst"), 1, "the stayer scaled up");
    assert!(
        pods_of(&sim, "keep-")
            .iter()
            .any(|p| p.node.is_some_and(|n| sim.nodes()[n].pool == "burst")),
        "the stayer runs on the autoscaler node"
    );
    sim.scale_workload("apps/Deployment/filler", 0)
        .expect("scale");
    sim.advance_to(sim.now() + 60 * MIN);
    assert!(
        sim.observation()
            .events
            .iter()
            .any(|e| e.kind == EventKind::ScaleDown),
        "the node was picked for removal"
    );
    sim
}

// cluster-autoscaler core/scaledown/actuation/drain.go `evictPod`: each
// scale-down eviction asks for min(pod's terminationGracePeriodSeconds,
// --max-graceful-termination-sec) (FAQ: "What are the parameters to CA?",
// max-graceful-termination-sec default 600). A 900 s pod is cut to 600 s
// by default; the control raises the flag to 1000 and the pod keeps its
// 900 s. The removal then succeeds in both (the wait is the flag + 30 s).
#[test]
fn the_autoscaler_caps_an_evicted_pods_grace_at_max_graceful_termination_sec() {
    let capped = scaled_down(900, "");
    assert_eq!(terminated_in(&capped, "keep-"), Some(600_000));
    assert_eq!(capped.ready_nodes_of("burst"), 0, "the node was removed");
    let raised = scaled_down(900, "    maxGracefulTerminationSec: 1000\n");
    assert_eq!(terminated_in(&raised, "keep-"), Some(900_000));
    assert_eq!(raised.ready_nodes_of("burst"), 0, "the node was removed");
    // Control of the cap: a pod already below the flag keeps its own.
    let short = scaled_down(45, "");
    assert_eq!(terminated_in(&short, "keep-"), Some(45_000));
}
