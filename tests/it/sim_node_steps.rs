//! The drill's node steps (taint, untaint, cordon, label, evict, delete the
//! Node object) against the simulator, one behaviour per test, each from
//! the documented semantics or the upstream test it transcribes, each with
//! a paired control that flips the outcome.

use drillbench_model::scenario::spec::{IntOrPercent, TaintEffect};
use drillbench_model::scenario::step::{NodeChange, PdbBound, PdbChange};
use drillbench_observe::EventKind;
use drillbench_sim::Simulation;
use drillbench_sim::world::{NodePhase, PodPhase};

use crate::sim_rules::{MIN, ON_BASELINE, cluster, deployment, node_of, pdb, pods_of};

/// A NoExecute taint of an arbitrary key, as an operator would set it.
fn maintenance(effect: TaintEffect) -> NodeChange {
    NodeChange::Taint {
        key: "example.com/maintenance".to_owned(),
        value: "true".to_owned(),
        effect,
    }
}

/// Pod spec lines: a toleration of the maintenance taint, for `seconds`
/// when given.
fn tolerating(seconds: Option<u32>) -> String {
    let limit = seconds.map_or(String::new(), |s| format!(", tolerationSeconds: {s}"));
    format!(
        "      nodeSelector: {{tier: baseline}}\n      tolerations:\n        - {{key: example.com/maintenance, operator: Exists, effect: NoExecute{limit}}}\n"
    )
}

/// A cluster running `web` (one replica, `spec` lines), settled; the node
/// its pod runs on.
fn one_pod_on_baseline(spec: &str) -> (Simulation, usize) {
    let mut sim = cluster(&deployment("web", 1, "1Gi", spec), "never", 0);
    sim.advance_to(MIN);
    let node = node_of(&sim, pods_of(&sim, "web-")[0].name.as_str()).expect("scheduled");
    let id = sim.node_id(&node).expect("node");
    (sim, id)
}

/// When the first `web` pod was evicted by the taint-eviction controller.
fn taint_evicted_at(sim: &Simulation) -> Option<u64> {
    sim.observation()
        .events
        .iter()
        .find(|e| {
            e.kind == EventKind::PodEvicted
                && e.object.name.starts_with("web-")
                && e.message.contains("taint manager")
        })
        .map(|e| e.at_ms)
}

/// How the first `web` pod fares under a maintenance taint of `effect`
/// with the given pod spec: when the controller evicted it, after `wait`.
fn under_taint(spec: &str, effect: TaintEffect, wait: u64) -> Option<u64> {
    let (mut sim, node) = one_pod_on_baseline(spec);
    let at = sim.now();
    sim.change_node(node, &maintenance(effect)).expect("taint");
    sim.advance_to(at + wait);
    taint_evicted_at(&sim).map(|t| t - at)
}

// kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/
// ("NoExecute: pods that do not tolerate the taint are evicted
// immediately; pods that tolerate it without tolerationSeconds remain
// bound forever"); upstream pkg/controller/tainteviction/
// taint_eviction_test.go `TestUpdateNode` "Added taint, expect node patched
// and deleted" and `TestCreateNode` "Creating tainted Node matching already
// assigned tolerating Pod".
#[test]
fn a_no_execute_taint_of_any_key_evicts_a_pod_that_does_not_tolerate_it_at_once() {
    let cases: [(&str, String, Option<u64>); 2] = [
        ("not tolerating", ON_BASELINE.to_owned(), Some(0)),
        (
            "tolerating without tolerationSeconds",
            tolerating(None),
            None,
        ),
    ];
    for (what, spec, expected) in cases {
        assert_eq!(
            under_taint(&spec, TaintEffect::NoExecute, 60 * MIN),
            expected,
            "{what}"
        );
    }
}

// The same page: "tolerationSeconds dictates how long the pod will stay
// bound to the node after the taint is added"; `TestUpdateNode` "Added
// tolerated taint" (not evicted before its time) and
// `TestUpdateNodeWithMultipleTaints`.
#[test]
fn a_pod_tolerating_for_30s_is_evicted_30s_after_the_taint_and_not_before() {
    let thirty = tolerating(Some(30));
    assert_eq!(
        under_taint(&thirty, TaintEffect::NoExecute, 29_000),
        None,
        "tolerated for 30 s: still bound at 29 s"
    );
    assert_eq!(
        under_taint(&thirty, TaintEffect::NoExecute, 60 * MIN),
        Some(30_000),
        "evicted at 30 s"
    );
    // Control: the same toleration without a limit keeps the pod forever.
    assert_eq!(
        under_taint(&tolerating(None), TaintEffect::NoExecute, 60 * MIN),
        None
    );
}

// The same page: NoSchedule "does not evict pods already running"; the
// scheduler's TaintToleration filter keeps new pods off.
#[test]
fn a_no_schedule_taint_keeps_running_pods_and_a_no_execute_one_does_not() {
    assert_eq!(
        under_taint(ON_BASELINE, TaintEffect::NoSchedule, 60 * MIN),
        None
    );
    assert_eq!(
        under_taint(ON_BASELINE, TaintEffect::PreferNoSchedule, 60 * MIN),
        None
    );
    assert_eq!(
        under_taint(ON_BASELINE, TaintEffect::NoExecute, 60 * MIN),
        Some(0)
    );
}

// Upstream taint_eviction.go `handleNodeUpdate` ("All taints were removed
// from the node. Cancelling all evictions") and taint_eviction_test.go
// `TestUpdateNode` "Taint removed".
#[test]
fn untainting_before_toleration_seconds_run_out_cancels_the_eviction() {
    for (untaint, expected) in [(true, None), (false, Some(30_000))] {
        let (mut sim, node) = one_pod_on_baseline(&tolerating(Some(30)));
        let at = sim.now();
        sim.change_node(node, &maintenance(TaintEffect::NoExecute))
            .expect("taint");
        sim.advance_to(at + 10_000);
        if untaint {
            let change = NodeChange::Untaint {
                key: "example.com/maintenance".to_owned(),
                effect: None,
            };
            sim.change_node(node, &change).expect("untaint");
        }
        sim.advance_to(at + 60 * MIN);
        assert_eq!(
            taint_evicted_at(&sim).map(|t| t - at),
            expected,
            "untainted at 10 s: {untaint}"
        );
    }
}

// taint_eviction_test.go `TestCreatePod` "schedule on tainted Node with
// finite toleration" / `TestUpdatePod` "scheduling onto tainted Node": a
// pod bound to a node that already has the taint is judged when it is
// bound, its tolerationSeconds counted from then.
#[test]
fn a_pod_scheduled_onto_a_tainted_node_is_judged_when_bound() {
    for (spec, evicted) in [(tolerating(Some(30)), true), (tolerating(None), false)] {
        let mut sim = cluster(&deployment("web", 1, "1Gi", &spec), "never", 0);
        let workers = sim.pool_nodes("baseline");
        for name in &workers {
            let id = sim.node_id(name).expect("node");
            sim.change_node(id, &maintenance(TaintEffect::NoExecute))
                .expect("taint");
        }
        sim.advance_to(10 * MIN);
        let web = pods_of(&sim, "web-");
        assert!(
            web.iter()
                .any(|p| p.node.is_some() && p.phase != PodPhase::Pending),
            "a tolerating pod is scheduled onto the tainted node"
        );
        assert_eq!(taint_evicted_at(&sim).is_some(), evicted, "{spec}");
    }
}

/// A DaemonSet of one small pod per node.
const AGENT: &str = "apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: apps}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers:
        - name: c
          image: pause
          resources: {requests: {cpu: 10m, memory: 16Mi}}
";

// kubernetes.io/docs/reference/kubectl/generated/kubectl_cordon/ and the
// scheduler's NodeUnschedulable filter: a cordoned node takes no new pod;
// kubernetes.io/docs/concepts/workloads/controllers/daemonset/ ("Taints
// and tolerations": DaemonSet pods tolerate
// node.kubernetes.io/unschedulable:NoSchedule, so they still land).
#[test]
fn a_cordoned_node_takes_daemonset_pods_only_and_uncordoned_takes_others_again() {
    let mut sim = cluster(&deployment("web", 1, "1Gi", ON_BASELINE), "never", 0);
    sim.advance_to(MIN);
    let running = node_of(&sim, pods_of(&sim, "web-")[0].name.as_str()).expect("scheduled");
    let workers = sim.pool_nodes("baseline");
    for name in &workers {
        let id = sim.node_id(name).expect("node");
        sim.change_node(id, &NodeChange::Cordon).expect("cordon");
    }
    sim.advance_to(2 * MIN);
    assert_eq!(
        node_of(&sim, pods_of(&sim, "web-")[0].name.as_str()),
        Some(running),
        "cordoning evicts nothing"
    );
    let agent: serde_json::Value = serde_saphyr::from_str(AGENT).expect("yaml");
    sim.apply_manifest(agent, &[]).expect("applied");
    sim.scale_workload("apps/Deployment/web", 2)
        .expect("scaled");
    sim.advance_to(4 * MIN);
    let on_workers = |sim: &Simulation, prefix: &str| {
        pods_of(sim, prefix)
            .iter()
            .filter(|p| p.phase == PodPhase::Ready)
            .filter(|p| {
                p.node
                    .is_some_and(|n| workers.contains(&sim.nodes()[n].name))
            })
            .count()
    };
    assert_eq!(on_workers(&sim, "agent-"), 2, "a DaemonSet pod per worker");
    assert_eq!(on_workers(&sim, "web-"), 1, "the new web pod stays Pending");
    // Control: uncordoned, the pending pod is placed.
    let id = sim.node_id(&workers[0]).expect("node");
    sim.change_node(id, &NodeChange::Uncordon)
        .expect("uncordon");
    sim.advance_to(6 * MIN);
    assert_eq!(on_workers(&sim, "web-"), 2);
}

// kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
// ("IgnoredDuringExecution means that if the node labels change after
// Kubernetes schedules the Pod, the Pod continues to run"): removing the
// label a running pod selected keeps it there, while a new pod is kept
// off the node.
#[test]
fn removing_a_selected_label_keeps_the_running_pod_but_not_new_ones() {
    let gpu = "      nodeSelector: {accelerator: gpu}\n";
    let mut sim = cluster(&deployment("web", 1, "1Gi", gpu), "never", 0);
    let node = sim.node_id(&sim.pool_nodes("baseline")[0]).expect("node");
    let label = |set: bool| NodeChange::Label {
        set: if set {
            [("accelerator".to_owned(), "gpu".to_owned())].into()
        } else {
            Default::default()
        },
        remove: if set {
            Vec::new()
        } else {
            vec!["accelerator".to_owned()]
        },
    };
    sim.change_node(node, &label(true)).expect("label");
    sim.advance_to(MIN);
    assert_eq!(pods_of(&sim, "web-")[0].node, Some(node), "label selected");
    sim.change_node(node, &label(false)).expect("unlabel");
    sim.scale_workload("apps/Deployment/web", 2)
        .expect("scaled");
    sim.advance_to(3 * MIN);
    let web = pods_of(&sim, "web-");
    assert_eq!(web[0].phase, PodPhase::Ready, "the running pod stays");
    assert_eq!(web[0].node, Some(node));
    assert_eq!(web[1].node, None, "a new pod no longer fits");
    assert!(!sim.nodes()[node].labels().contains_key("accelerator"));
}

// kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/ and
// /docs/tasks/run-application/configure-pdb/ ("the API server responds
// with 429 Too Many Requests" when the eviction would violate the budget);
// the disruption controller's rules are the simulator's own.
#[test]
fn evicting_one_pod_is_refused_while_its_budget_allows_no_disruption() {
    for (min_available, evicted) in [(3, false), (2, true)] {
        let manifests = deployment("web", 3, "1Gi", ON_BASELINE)
            + &pdb("web", &format!("minAvailable: {min_available}"));
        let mut sim = cluster(&manifests, "never", 0);
        sim.advance_to(MIN);
        let answer = sim
            .evict_one_of("apps/Deployment/web")
            .expect("a running pod");
        match answer {
            Ok(pod) => assert!(evicted, "minAvailable {min_available}: evicted {pod}"),
            Err((pod, message)) => {
                assert!(!evicted, "minAvailable {min_available}: refused {pod}");
                assert!(message.starts_with("429 Too Many Requests"), "{message}");
            }
        }
        let refusals = sim
            .observation()
            .events
            .iter()
            .filter(|e| e.kind == EventKind::EvictionRefused)
            .count();
        assert_eq!(refusals, usize::from(!evicted));
    }
}

/// A budget step on `apps/web`.
fn budget(bound: PdbBound) -> PdbChange {
    PdbChange {
        namespace: "apps".to_owned(),
        name: "web".to_owned(),
        bound,
    }
}

// kubernetes.io/docs/tasks/run-application/configure-pdb/ ("Specifying a
// Disruption Budget for your Application": with minAvailable 3 of 3 "no
// voluntary evictions" are allowed, and an eviction is allowed when it
// leaves at least minAvailable pods) and /docs/concepts/workloads/pods/
// disruptions/ (the controller's disruptionsAllowed follows the budget's
// spec, so an edited budget judges the next eviction). The control leaves
// the budget at 3 and stays refused.
#[test]
fn lowering_min_available_from_3_to_2_lets_a_refused_eviction_through() {
    for (lowered, evicted) in [(false, false), (true, true)] {
        let manifests = deployment("web", 3, "1Gi", ON_BASELINE) + &pdb("web", "minAvailable: 3");
        let mut sim = cluster(&manifests, "never", 0);
        sim.advance_to(MIN);
        let first = sim.evict_one_of("apps/Deployment/web").expect("a pod");
        assert!(first.is_err(), "minAvailable 3 of 3 refuses: {first:?}");
        if lowered {
            sim.change_pdb(&budget(PdbBound::MinAvailable(IntOrPercent::Int(2))))
                .expect("the budget exists");
        }
        let second = sim.evict_one_of("apps/Deployment/web").expect("a pod");
        assert_eq!(second.is_ok(), evicted, "lowered {lowered}: {second:?}");
    }
}

// The same page: "You can specify only one of maxUnavailable and
// minAvailable in a single PodDisruptionBudget"; a step that switches to
// maxUnavailable clears minAvailable, so `maxUnavailable: 1` (or 34% of
// 3, rounded up to 1) allows the eviction, and `0` or `0%` still refuses.
#[test]
fn switching_to_max_unavailable_replaces_min_available() {
    for (bound, evicted) in [
        (IntOrPercent::Int(1), true),
        (IntOrPercent::Percent(34), true),
        (IntOrPercent::Int(0), false),
        (IntOrPercent::Percent(0), false),
    ] {
        let manifests = deployment("web", 3, "1Gi", ON_BASELINE) + &pdb("web", "minAvailable: 3");
        let mut sim = cluster(&manifests, "never", 0);
        sim.advance_to(MIN);
        sim.change_pdb(&budget(PdbBound::MaxUnavailable(bound)))
            .expect("the budget exists");
        let answer = sim.evict_one_of("apps/Deployment/web").expect("a pod");
        assert_eq!(
            answer.is_ok(),
            evicted,
            "maxUnavailable {bound}: {answer:?}"
        );
    }
    let mut sim = cluster(&deployment("web", 1, "1Gi", ON_BASELINE), "never", 0);
    assert!(
        sim.change_pdb(&budget(PdbBound::MinAvailable(IntOrPercent::Int(0))))
            .is_err(),
        "no such budget"
    );
}

// kubernetes/kubernetes#71398 and #116485 (open in 2025): a running
// kubelet whose Node object is deleted does not register again, so the
// node stays gone while its server runs; the pod garbage collector
// (pkg/controller/podgc/gc_controller.go `gcOrphaned`, quarantine 40 s)
// then deletes the pods bound to the missing node.
#[test]
fn deleting_the_node_object_leaves_the_server_and_pod_gc_collects_its_pods_after_40s() {
    let (mut sim, node) = one_pod_on_baseline(ON_BASELINE);
    let at = sim.now();
    sim.change_node(node, &NodeChange::DeleteObject)
        .expect("deleted");
    assert_eq!(sim.node_phase(node), NodePhase::Gone);
    assert!(sim.nodes()[node].server_up, "the server keeps running");
    sim.advance_to(at + 39_000);
    assert_ne!(
        pods_of(&sim, "web-")[0].phase,
        PodPhase::Gone,
        "inside the quarantine"
    );
    sim.advance_to(at + 40_000);
    assert_eq!(pods_of(&sim, "web-")[0].phase, PodPhase::Gone, "collected");
    sim.advance_to(at + 10 * MIN);
    assert_eq!(
        sim.node_phase(node),
        NodePhase::Gone,
        "the kubelet does not register again"
    );
    let replacement = pods_of(&sim, "web-")
        .into_iter()
        .find(|p| p.phase == PodPhase::Ready)
        .expect("a replacement runs");
    assert_ne!(replacement.node, Some(node));
}

// taint_eviction.go: the unreachable taint of a lost node goes through the
// same controller, so a node back before the 300 s default toleration runs
// out keeps its pods (`handleNodeUpdate` cancels), and one still lost at
// 300 s does not.
#[test]
fn a_node_back_before_its_pods_toleration_ran_out_keeps_them() {
    for (back_after, evicted) in [(2 * MIN, false), (6 * MIN, true)] {
        let (mut sim, node) = one_pod_on_baseline(ON_BASELINE);
        let at = sim.now();
        sim.crash_node(node);
        sim.advance_to(at + back_after);
        sim.replace_node(node);
        sim.advance_to(at + 20 * MIN);
        assert_eq!(
            taint_evicted_at(&sim).is_some(),
            evicted,
            "back after {back_after} ms"
        );
    }
}

/// A drill using every node step on three baseline workers running `web`
/// (three replicas, under a budget of `min_available`).
pub(crate) fn node_steps_drill(dir: &std::path::Path, min_available: u32) -> std::path::PathBuf {
    let manifests = deployment("web", 3, "1Gi", ON_BASELINE)
        + &pdb("web", &format!("minAvailable: {min_available}"));
    std::fs::write(
        dir.join("manifests.yaml"),
        crate::common::with_namespaces(&manifests),
    )
    .expect("write");
    let drill = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: node-steps}
cluster:
  pools:
    - {name: baseline, count: 3, serverType: cx43, labels: {tier: baseline}}
workloads:
  - path: manifests.yaml
steps:
  - name: cordon the first worker
    cordon: {target: {node: baseline-1}}
  - name: mark it
    label: {target: {node: baseline-1}, set: {example.com/maintenance: 'true'}}
  - name: empty it
    taint: {target: {node: baseline-1}, key: example.com/maintenance, effect: NoExecute}
  - wait: {until: allWorkloadsReady, timeout: 10m}
  - name: evict one web pod
    evict: {workload: apps/Deployment/web}
  - untaint: {target: {node: baseline-1}, key: example.com/maintenance}
  - uncordon: {target: {node: baseline-1}}
  - name: lose the second worker's Node object
    deleteNodeObject: {target: {node: baseline-2}}
  - wait: {until: allWorkloadsReady, timeout: 10m}
assertions:
  - name: recovers
    rto: {of: allWorkloads, within: 15m}
";
    let path = dir.join("drill.yaml");
    std::fs::write(&path, drill).expect("write");
    path
}

/// The report of `bench run DRILL` into `dir/out`, which must pass.
fn passing_report(
    drill: &std::path::Path,
    dir: &std::path::Path,
) -> drillbench_report::DrillReport {
    let out = dir.join("out");
    let run = crate::common::bench(&[
        "run",
        drill.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    drillbench_report::DrillReport::read(&out.join("report.json")).expect("report")
}

#[test]
fn a_drill_of_node_steps_runs_and_its_timeline_shows_each_step() {
    for (min_available, refused) in [(3, true), (2, false)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = node_steps_drill(dir.path(), min_available);
        let report = passing_report(&path, dir.path());
        let has = |kind: EventKind, node: &str, fragment: &str| {
            report.timeline.iter().any(|e| {
                e.kind == kind
                    && (node.is_empty() || e.node.as_deref() == Some(node))
                    && e.message.contains(fragment)
            })
        };
        assert!(has(EventKind::NodeCordoned, "baseline-1", ""));
        assert!(has(
            EventKind::NodeRelabelled,
            "baseline-1",
            "example.com/maintenance=true"
        ));
        assert!(has(
            EventKind::NodeTainted,
            "baseline-1",
            "example.com/maintenance:NoExecute"
        ));
        assert!(has(EventKind::PodEvicted, "baseline-1", "taint manager"));
        assert!(has(
            EventKind::NodeUntainted,
            "baseline-1",
            "example.com/maintenance"
        ));
        assert!(has(EventKind::NodeUncordoned, "baseline-1", ""));
        assert!(has(
            EventKind::NodeDeleted,
            "baseline-2",
            "deleted through the API"
        ));
        // Control: the budget decides the eviction step's answer.
        assert_eq!(has(EventKind::EvictionRefused, "", "429"), refused);
        assert_eq!(has(EventKind::PodEvicted, "", "evicted: "), !refused);
    }
}

/// A drill whose first eviction is refused under `minAvailable: 3` of 3;
/// with `lowered`, a `pdb` step then lowers the budget to 2 before a
/// second eviction.
pub(crate) fn pdb_step_drill(dir: &std::path::Path, lowered: bool) -> std::path::PathBuf {
    let manifests = deployment("web", 3, "1Gi", ON_BASELINE) + &pdb("web", "minAvailable: 3");
    std::fs::write(
        dir.join("manifests.yaml"),
        crate::common::with_namespaces(&manifests),
    )
    .expect("write");
    let step = if lowered {
        "  - name: lower the budget\n    pdb: {name: apps/web, minAvailable: 2}\n"
    } else {
        "  - wait: {for: 1s}\n"
    };
    let drill = format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {{name: pdb-step}}
cluster:
  pools:
    - {{name: baseline, count: 3, serverType: cx43, labels: {{tier: baseline}}}}
workloads:
  - path: manifests.yaml
steps:
  - wait: {{until: allWorkloadsReady, timeout: 10m}}
  - evict: {{workload: apps/Deployment/web}}
{step}  - evict: {{workload: apps/Deployment/web}}
  - wait: {{until: allWorkloadsReady, timeout: 10m}}
assertions:
  - name: recovers
    rto: {{of: allWorkloads, within: 15m}}
"
    );
    let path = dir.join("drill.yaml");
    std::fs::write(&path, drill).expect("write");
    path
}

// The configure-pdb page again, through a whole drill: both evictions are
// refused under `minAvailable: 3`, and only the first once a `pdb` step
// lowers it to 2 in between.
#[test]
fn a_drills_pdb_step_lets_the_next_eviction_through() {
    for (lowered, refusals) in [(false, 2), (true, 1)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = pdb_step_drill(dir.path(), lowered);
        let report = passing_report(&path, dir.path());
        let refused = report
            .timeline
            .iter()
            .filter(|e| e.kind == EventKind::EvictionRefused)
            .count();
        assert_eq!(refused, refusals, "lowered {lowered}");
    }
}
