//! The simulator's Kubernetes rules, one behaviour per test, each from the
//! documented semantics: node lifecycle and eviction by toleration,
//! StatefulSet identity on a lost node, single-attach volumes, release
//! after a delay, PDB-aware evictions and drains, and every autoscaler
//! scale-down blocker.

use drillbench_model::drill::Drill;
use drillbench_model::duration::Duration;
use drillbench_model::scenario::SourceFile;
use drillbench_observe::EventKind;
use drillbench_sim::Simulation;
use drillbench_sim::world::{NodePhase, PodPhase};

pub(crate) const MIN: u64 = 60_000;

/// A small cluster: three control planes, two baseline workers (cx43), an
/// autoscaled cx43 pool, an `hcloud` class released as `release` says,
/// and the given manifests.
pub(crate) fn cluster(manifests: &str, release: &str, autoscaled_min: u32) -> Simulation {
    let drill = cluster_drill(manifests, release, autoscaled_min);
    Simulation::new(&drill, 1).expect("provisions")
}

/// The drill of [`cluster`], to change before it is simulated.
fn cluster_drill(manifests: &str, release: &str, autoscaled_min: u32) -> Drill {
    cluster_drill_with(manifests, release, autoscaled_min, "")
}

/// [`cluster`] with more autoscaler settings (YAML lines under
/// `autoscaler:`, indented four spaces).
pub(crate) fn cluster_with(manifests: &str, autoscaler: &str) -> Simulation {
    let drill = cluster_drill_with(manifests, "never", 0, autoscaler);
    Simulation::new(&drill, 1).expect("provisions")
}

fn cluster_drill_with(
    manifests: &str,
    release: &str,
    autoscaled_min: u32,
    autoscaler: &str,
) -> Drill {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(manifests),
    )
    .expect("write");
    let text = format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: rules
cluster:
  pools:
    - name: baseline
      count: 2
      serverType: cx43
      labels: {{tier: baseline}}
    - name: burst
      autoscaled: {{min: {autoscaled_min}, max: 3}}
      serverType: cx43
  autoscaler:
    scaleDownUnneededTime: 2m
{autoscaler}  storageClasses:
    - name: hcloud
      attach: SingleNode
      releaseOnNodeLoss: {release}
  endpoint: {{name: vip}}
workloads:
  - path: manifests.yaml
assertions: [{{name: quorum, quorum: {{}}}}]
"
    );
    let text = crate::common::with_fixed_latencies(&text);
    let source = SourceFile::new(dir.path().join("drill.yaml"), text);
    Drill::from_source(source).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

pub(crate) fn pods_of<'a>(
    sim: &'a Simulation,
    prefix: &str,
) -> Vec<&'a drillbench_sim::world::SimPod> {
    sim.pods()
        .iter()
        .filter(|p| p.name.starts_with(prefix))
        .collect()
}

pub(crate) fn node_of(sim: &Simulation, pod: &str) -> Option<String> {
    sim.pods()
        .iter()
        .rev()
        .find(|p| p.name == pod && p.phase != PodPhase::Gone)
        .and_then(|p| p.node)
        .map(|n| sim.nodes()[n].name.clone())
}

pub(crate) fn deployment(name: &str, replicas: u32, memory: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: apps}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{extra_spec}      containers:
        - name: c
          image: pause
          resources: {{requests: {{cpu: 100m, memory: {memory}}}}}
---
"
    )
}

pub(crate) const ON_BASELINE: &str = "      nodeSelector: {tier: baseline}\n";

#[test]
fn a_crashed_node_goes_not_ready_after_the_grace_period_and_its_pods_move_after_300s() {
    let mut sim = cluster(&deployment("web", 1, "1Gi", ON_BASELINE), "never", 0);
    sim.advance_to(MIN);
    let node = node_of(&sim, pods_of(&sim, "web-")[0].name.as_str()).expect("scheduled");
    let id = sim.node_id(&node).expect("node");
    let crash = sim.now();
    sim.crash_node(id);
    sim.advance_to(crash + 49_000);
    assert_eq!(
        sim.node_phase(id),
        NodePhase::Ready,
        "still Ready inside the 50 s grace period"
    );
    sim.advance_to(crash + 50_000);
    assert_eq!(sim.node_phase(id), NodePhase::NotReady);
    // The default toleration of unreachable is 300 s: the pod stays until then.
    sim.advance_to(crash + 50_000 + 299_000);
    assert!(
        pods_of(&sim, "web-")
            .iter()
            .all(|p| p.phase != PodPhase::Terminating)
    );
    sim.advance_to(crash + 50_000 + 300_000 + 10_000);
    let live: Vec<_> = pods_of(&sim, "web-")
        .into_iter()
        .filter(|p| p.phase == PodPhase::Ready)
        .collect();
    assert_eq!(live.len(), 1, "a replacement runs");
    assert_ne!(live[0].node, Some(id), "elsewhere");
    // The evicted pod stays Terminating: its node never confirms.
    assert!(
        pods_of(&sim, "web-")
            .iter()
            .any(|p| p.phase == PodPhase::Terminating)
    );
}

fn statefulset(extra_spec: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, namespace: data}}
spec:
  replicas: 1
  serviceName: db
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
{extra_spec}      containers:
        - name: c
          image: pause
          resources: {{requests: {{cpu: 100m, memory: 1Gi}}}}
  volumeClaimTemplates:
    - metadata: {{name: data}}
      spec: {{storageClassName: hcloud, accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
---
"
    )
}

#[test]
fn a_statefulset_pod_on_a_lost_node_is_not_replaced_until_the_node_is_gone() {
    let mut sim = cluster(&statefulset(ON_BASELINE), "never", 0);
    sim.advance_to(MIN);
    let node = node_of(&sim, "db-0").expect("db-0 runs");
    let id = sim.node_id(&node).expect("node");
    sim.crash_node(id);
    sim.advance_to(sim.now() + 30 * MIN);
    let db: Vec<_> = pods_of(&sim, "db-0");
    assert_eq!(
        db.len(),
        1,
        "at most one pod per ordinal: no replacement while db-0 exists"
    );
    assert_eq!(
        db[0].phase,
        PodPhase::Terminating,
        "evicted by the taint manager, never confirmed"
    );
}

#[test]
fn a_deleted_node_releases_a_statefulset_pod_but_its_single_attach_volume_blocks_the_replacement() {
    let mut sim = cluster(&statefulset(ON_BASELINE), "never", 0);
    sim.advance_to(MIN);
    let node = node_of(&sim, "db-0").expect("db-0 runs");
    let id = sim.node_id(&node).expect("node");
    sim.delete_node(id, false, Duration::from_mins(10));
    sim.advance_to(sim.now() + 10 * MIN);
    assert_eq!(sim.node_phase(id), NodePhase::Gone);
    let replacement = pods_of(&sim, "db-0")
        .into_iter()
        .find(|p| p.phase != PodPhase::Gone)
        .expect("a replacement");
    assert_eq!(
        replacement.phase,
        PodPhase::Blocked,
        "Multi-Attach: the volume is still attached to the deleted node"
    );
    let blocked = sim
        .observation()
        .events
        .iter()
        .find(|e| e.kind == EventKind::PodBlocked)
        .expect("event");
    assert!(
        blocked
            .message
            .contains(&format!("already exclusively attached to {node}")),
        "{}",
        blocked.message
    );
    sim.advance_to(sim.now() + 24 * 60 * MIN);
    assert_eq!(
        pods_of(&sim, "db-0")
            .iter()
            .filter(|p| p.phase == PodPhase::Ready)
            .count(),
        0,
        "never released"
    );
}

#[test]
fn a_volume_released_after_a_delay_lets_the_replacement_start_then() {
    let mut sim = cluster(&statefulset(ON_BASELINE), "{after: 6m}", 0);
    sim.advance_to(MIN);
    let id = sim
        .node_id(&node_of(&sim, "db-0").expect("runs"))
        .expect("node");
    let deleted = sim.now();
    sim.delete_node(id, false, Duration::from_mins(10));
    // NotReady after 50 s; the release counts from then.
    sim.advance_to(deleted + 50_000 + 6 * MIN - 1);
    assert!(
        pods_of(&sim, "db-0")
            .iter()
            .all(|p| p.phase != PodPhase::Ready),
        "still attached before the delay"
    );
    sim.advance_to(deleted + 50_000 + 6 * MIN + 10_000);
    assert!(
        pods_of(&sim, "db-0")
            .iter()
            .any(|p| p.phase == PodPhase::Ready),
        "released after 6 min, the replacement starts"
    );
    let released = sim
        .observation()
        .strandings
        .iter()
        .find(|s| s.claim == "data/data-db-0")
        .expect("recorded");
    assert_eq!(released.released, Some(deleted + 50_000 + 6 * MIN));
}

pub(crate) fn pdb(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: {name}, namespace: apps}}\nspec: {{{spec}, selector: {{matchLabels: {{app: {name}}}}}}}\n---\n"
    )
}

#[test]
fn evictions_honour_the_budget_and_refusals_are_429s() {
    let manifests = deployment("web", 3, "1Gi", ON_BASELINE) + &pdb("web", "minAvailable: 2");
    let mut sim = cluster(&manifests, "never", 0);
    sim.advance_to(MIN);
    let ready: Vec<usize> = (0..sim.pods().len())
        .filter(|&p| {
            sim.pods()[p].name.starts_with("web-") && sim.pods()[p].phase == PodPhase::Ready
        })
        .collect();
    assert_eq!(ready.len(), 3);
    assert!(
        sim.evict(ready[0]).is_ok(),
        "3 healthy, 2 required: one may go"
    );
    let refusal = sim
        .evict(ready[1])
        .expect_err("a second eviction breaks the budget");
    assert!(refusal.starts_with("429 Too Many Requests"), "{refusal}");
    assert!(
        refusal.contains("needs 2 healthy pods and has 2"),
        "{refusal}"
    );
    // Once the replacement is Ready, another eviction is allowed again.
    sim.advance_to(sim.now() + MIN);
    assert!(sim.evict(ready[1]).is_ok());
    assert!(sim.observation().budget_breaches.is_empty());
}

#[test]
fn a_drain_blocked_by_a_budget_times_out_and_leaves_the_node() {
    let manifests =
        deployment("single", 1, "1Gi", ON_BASELINE) + &pdb("single", "maxUnavailable: 0");
    let mut sim = cluster(&manifests, "never", 0);
    sim.advance_to(MIN);
    let node = node_of(&sim, pods_of(&sim, "single-")[0].name.as_str()).expect("runs");
    let id = sim.node_id(&node).expect("node");
    sim.delete_node(id, true, Duration::from_mins(2));
    sim.advance_to(sim.now() + 5 * MIN);
    assert_ne!(
        sim.node_phase(id),
        NodePhase::Gone,
        "a blocked drain does not delete the node"
    );
    assert!(
        sim.observation()
            .events
            .iter()
            .any(|e| e.kind == EventKind::EvictionRefused)
    );
    assert!(
        sim.observation()
            .faults
            .iter()
            .any(|(_, f)| f.contains("drain of") && f.contains("timed out"))
    );
}

/// The same drain as above with `kubectl drain --disable-eviction`, which
/// "will bypass checking PodDisruptionBudgets"
/// (<https://kubernetes.io/docs/reference/kubectl/generated/kubectl_drain>):
/// the pod is deleted although its budget allows no disruption, the node
/// goes, and the breach is recorded for `pdbRespected` to judge. Only a
/// negative control (`drainWithoutEviction`) drains this way.
#[test]
fn a_drain_that_bypasses_the_eviction_api_breaks_the_budget_and_says_so() {
    let manifests =
        deployment("single", 1, "1Gi", ON_BASELINE) + &pdb("single", "maxUnavailable: 0");
    let mut drill = cluster_drill(&manifests, "never", 0);
    drill.topology.drains_bypass_budgets = true;
    let mut sim = Simulation::new(&drill, 1).expect("provisions");
    sim.advance_to(MIN);
    let pod = pods_of(&sim, "single-")[0].name.clone();
    let node = node_of(&sim, &pod).expect("runs");
    let id = sim.node_id(&node).expect("node");
    sim.delete_node(id, true, Duration::from_mins(2));
    sim.advance_to(sim.now() + 5 * MIN);
    assert_eq!(
        sim.node_phase(id),
        NodePhase::Gone,
        "nothing held the drain"
    );
    let events = &sim.observation().events;
    assert!(!events.iter().any(|e| e.kind == EventKind::EvictionRefused));
    assert!(events.iter().any(|e| e.kind == EventKind::PodDeleted
        && e.object.name == pod
        && e.message == drillbench_observe::BYPASSED_EVICTION));
    let breaches = &sim.observation().budget_breaches;
    assert_eq!(breaches.len(), 1, "{breaches:?}");
    assert_eq!(breaches[0].pdb, "apps/single");
    assert_eq!(breaches[0].pod, format!("apps/{pod}"));
}

/// A filler occupies the baseline, so the stayer (which prefers, but does
/// not require, nodes without the baseline label) bursts onto an autoscaler
/// node. Then the filler goes: the stayer could move back to the baseline,
/// so the node is reclaimed unless the stayer carries a scale-down blocker.
fn scale_down_with(stayer: &str) -> Simulation {
    let filler = deployment("filler", 2, "13Gi", ON_BASELINE);
    let mut sim = cluster(&(filler + stayer), "never", 0);
    sim.advance_to(10 * MIN);
    assert_eq!(
        sim.ready_nodes_of("burst"),
        1,
        "the stayer scaled the pool up"
    );
    let on = node_of(&sim, "keep").or_else(|| {
        pods_of(&sim, "keep-")
            .first()
            .and_then(|p| p.node.map(|n| sim.nodes()[n].name.clone()))
    });
    assert!(
        on.as_deref().is_some_and(|n| n.starts_with("burst-")),
        "the stayer runs on the autoscaler node: {on:?}"
    );
    sim.scale_workload("apps/Deployment/filler", 0)
        .expect("scale");
    sim.advance_to(sim.now() + 20 * MIN);
    sim
}

pub(crate) fn stayer(annotations: &str, volumes: &str, kind: &str) -> String {
    let body = format!(
        "metadata: {{name: keep, namespace: apps, labels: {{app: keep}}{annotations}}}
spec:
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 100
          preference: {{matchExpressions: [{{key: tier, operator: DoesNotExist}}]}}
  containers:
    - name: c
      image: pause
      resources: {{requests: {{cpu: 100m, memory: 4Gi}}}}
{volumes}"
    );
    match kind {
        "Pod" => format!("apiVersion: v1\nkind: Pod\n{body}---\n"),
        _ => {
            let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: keep, namespace: apps}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: keep}}}}\n  template:\n{indented}---\n"
            )
        }
    }
}

#[test]
fn an_autoscaler_node_whose_pods_can_move_is_reclaimed() {
    let sim = scale_down_with(&stayer("", "", "Deployment"));
    assert_eq!(
        sim.ready_nodes_of("burst"),
        0,
        "the control: no blocker, the node goes"
    );
    assert!(
        sim.observation()
            .events
            .iter()
            .any(|e| e.kind == EventKind::ScaleDown)
    );
    let keep = pods_of(&sim, "keep-")
        .into_iter()
        .find(|p| p.phase == PodPhase::Ready)
        .expect("keep runs");
    assert_eq!(
        sim.nodes()[keep.node.expect("bound")].pool,
        "baseline",
        "the evicted pod moved to the baseline"
    );
}

#[test]
fn each_scale_down_blocker_keeps_the_node() {
    let cases = [
        (
            "safe-to-evict false",
            stayer(
                ", annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: \"false\"}",
                "",
                "Deployment",
            ),
        ),
        (
            "local storage",
            stayer(
                "",
                "  volumes: [{name: scratch, emptyDir: {}}]\n",
                "Deployment",
            ),
        ),
        ("no controller", stayer("", "", "Pod")),
        (
            "budget with no disruption",
            stayer("", "", "Deployment") + &pdb("keep", "maxUnavailable: 0"),
        ),
    ];
    for (name, stayer) in cases {
        let sim = scale_down_with(&stayer);
        assert_eq!(sim.ready_nodes_of("burst"), 1, "{name}: the node must stay");
        assert!(
            sim.observation()
                .events
                .iter()
                .all(|e| e.kind != EventKind::ScaleDown),
            "{name}: no scale-down started"
        );
    }
}

#[test]
fn the_pool_minimum_is_kept() {
    let manifests = deployment("burst", 4, "6Gi", "");
    let mut sim = cluster(&manifests, "never", 1);
    sim.advance_to(10 * MIN);
    sim.scale_workload("apps/Deployment/burst", 0)
        .expect("scale");
    sim.advance_to(sim.now() + 30 * MIN);
    assert_eq!(sim.ready_nodes_of("burst"), 1, "min 1");
}

#[test]
fn a_node_relabelled_into_a_new_class_is_scheduled_onto() {
    let wants_gpu = "      nodeSelector: {accelerator: gpu}\n";
    let mut sim = cluster(&deployment("trainer", 1, "1Gi", wants_gpu), "never", 0);
    sim.advance_to(MIN);
    assert!(
        node_of(&sim, pods_of(&sim, "trainer-")[0].name.as_str()).is_none(),
        "no node has the label yet"
    );
    let node = sim.node_id(&sim.pool_nodes("baseline")[0]).expect("node");
    let mut labels = sim.nodes()[node].labels().clone();
    labels.insert("accelerator".to_owned(), "gpu".to_owned());
    sim.set_node_metadata(node, labels, Default::default());
    sim.advance_to(sim.now() + MIN);
    let trainer = pods_of(&sim, "trainer-")[0];
    assert_eq!(
        trainer.node,
        Some(node),
        "the relabelled node, now its own class, takes the pod"
    );
    assert_eq!(trainer.phase, PodPhase::Ready);
}

fn first(sim: &Simulation, kind: EventKind) -> Option<u64> {
    sim.observation()
        .events
        .iter()
        .find(|e| e.kind == kind)
        .map(|e| e.at_ms)
}

/// cluster-autoscaler FAQ "I have a couple of nodes with low utilization,
/// but they are not scaled down. Why?": "there was a scale-up in the last
/// 10 min (configurable by `--scale-down-delay-after-add` flag)"; the
/// flag's default is 10m (FAQ "What are the parameters to CA?",
/// `config/flags/flags.go`). The burst node is unneeded from minute 4 on
/// (2 minutes of unneeded time), yet stays until 10 minutes after its
/// scale-up; the control, with the delay at 0s, removes it before then.
/// Both recheck a node found unremovable at once, so that this delay
/// alone holds the node.
#[test]
fn no_scale_down_within_ten_minutes_of_a_scale_up_and_its_control_without_the_delay() {
    let recheck = "    unremovableNodeRecheckTimeout: 0s\n";
    for (settings, held) in [
        (recheck.to_owned(), true),
        (format!("    scaleDownDelayAfterAdd: 0s\n{recheck}"), false),
    ] {
        let settings = settings.as_str();
        let filler = deployment("filler", 2, "13Gi", ON_BASELINE);
        let mut sim = cluster_with(&(filler + &stayer("", "", "Deployment")), settings);
        sim.advance_to(4 * MIN);
        let up = first(&sim, EventKind::ScaleUp).expect("the stayer scaled the pool up");
        assert_eq!(sim.ready_nodes_of("burst"), 1);
        sim.scale_workload("apps/Deployment/filler", 0)
            .expect("scale");
        sim.advance_to(up + 9 * MIN);
        assert_eq!(
            first(&sim, EventKind::ScaleDown).is_none(),
            held,
            "{settings:?}: 9 minutes after the scale-up"
        );
        sim.advance_to(up + 11 * MIN);
        let down = first(&sim, EventKind::ScaleDown).expect("removal started by now");
        if held {
            assert!(down >= up + 10 * MIN, "down at {down}, up at {up}");
        }
        sim.advance_to(up + 13 * MIN);
        assert_eq!(sim.ready_nodes_of("burst"), 0, "{settings:?}");
    }
}

/// cluster-autoscaler's `--unremovable-node-recheck-timeout` (5m, FAQ
/// "What are the parameters to CA?"; `core/scaledown/planner`
/// `categorizeNodes` adds a node `SimulateNodeRemoval` refuses with that
/// timeout, and `FilterOutUnremovable` skips it as `RecentlyUnremovable`
/// until then). The burst node's pod cannot move while the filler holds
/// the baseline, so each look at it is a refusal, and the next look comes
/// five minutes later (a node not looked at is not refused again); once
/// the filler is gone, it waits for that look, then for its 2 minutes of
/// unneeded time. The control looks at every scan (10 s) and removes it 2
/// minutes after the filler's pods are gone (their 30 s grace period).
#[test]
fn a_node_found_unremovable_is_not_rechecked_for_five_minutes() {
    let delay = "    scaleDownDelayAfterAdd: 0s\n";
    for (recheck, held) in [
        ("", true),
        ("    unremovableNodeRecheckTimeout: 0s\n", false),
    ] {
        let filler = deployment("filler", 2, "13Gi", ON_BASELINE);
        let mut sim = cluster_with(
            &(filler + &stayer("", "", "Deployment")),
            &format!("{delay}{recheck}"),
        );
        sim.advance_to(6 * MIN);
        assert_eq!(sim.ready_nodes_of("burst"), 1);
        assert!(first(&sim, EventKind::ScaleDown).is_none(), "{recheck:?}");
        let freed = sim.now();
        sim.scale_workload("apps/Deployment/filler", 0)
            .expect("scale");
        sim.advance_to(freed + 12 * MIN);
        let down = first(&sim, EventKind::ScaleDown).expect("removed in the end");
        let after = down - freed;
        let prompt = 2 * MIN + 30_000..=2 * MIN + 40_000;
        if held {
            assert!(
                after > *prompt.end() && after <= 7 * MIN + 40_000,
                "down {after} ms after the filler left"
            );
        } else {
            assert!(
                prompt.contains(&after),
                "down {after} ms after the filler left"
            );
        }
    }
}

/// Two burst nodes, each running one pod of a Deployment that repels
/// itself per node, become unneeded together. cluster-autoscaler drains
/// one non-empty node at a time (`--max-drain-parallelism` 1, FAQ "What
/// are the parameters to CA?"; `core/scaledown/budgets/budgets.go`
/// `CropNodes` counts the drains in progress): the second drain starts
/// only once the first node is deleted. The control, with a drain
/// parallelism of 2, drains both in the same scan.
#[test]
fn the_second_drain_starts_after_the_first_node_is_gone_and_its_control_drains_both() {
    let repel = "      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - {labelSelector: {matchLabels: {app: pair}}, topologyKey: kubernetes.io/hostname}
";
    for (settings, one_at_a_time) in [("", true), ("    maxDrainParallelism: 2\n", false)] {
        let filler = deployment("filler", 2, "13Gi", ON_BASELINE);
        let pair = deployment("pair", 2, "4Gi", repel);
        let mut sim = cluster_with(&(filler + &pair), settings);
        sim.advance_to(6 * MIN);
        assert_eq!(sim.ready_nodes_of("burst"), 2, "one node per pair pod");
        sim.scale_workload("apps/Deployment/filler", 0)
            .expect("scale");
        sim.advance_to(30 * MIN);
        let downs: Vec<(u64, Option<String>)> = sim
            .observation()
            .events
            .iter()
            .filter(|e| e.kind == EventKind::ScaleDown)
            .map(|e| (e.at_ms, e.node.clone()))
            .collect();
        assert_eq!(downs.len(), 2, "{settings:?}: both go: {downs:?}");
        assert_eq!(sim.ready_nodes_of("burst"), 0, "{settings:?}");
        let downs: Vec<u64> = downs.iter().map(|d| d.0).collect();
        if one_at_a_time {
            // The first node's evicted pod is gone before the second drain.
            let first_node = sim
                .observation()
                .events
                .iter()
                .find(|e| e.kind == EventKind::ScaleDown)
                .and_then(|e| e.node.clone());
            let gone = sim
                .observation()
                .events
                .iter()
                .filter(|e| e.kind == EventKind::PodDeleted && e.node == first_node)
                .map(|e| e.at_ms)
                .max()
                .expect("the first node's pod was deleted");
            assert!(
                downs[0] < gone && gone <= downs[1],
                "the second drain once the first node's pods are gone: {downs:?}, gone at {gone}"
            );
        } else {
            assert_eq!(downs[0], downs[1], "control: both in one scan");
        }
    }
}

/// A node booting for exactly two minutes after a scan becomes Ready at a
/// later scan's very instant, before the scheduler has placed the pod it
/// was added for. cluster-autoscaler does not grow again for a pod an
/// existing node can take (`core/podlistprocessor/
/// filter_out_schedulable.go`; upcoming nodes count as capacity,
/// `core/scaleup/orchestrator` "upcoming nodes"): one node is added. The
/// control asks for two nodes' worth and gets two, so the count is the
/// need, not a cap.
#[test]
fn a_node_ready_at_a_scan_instant_is_not_grown_twice_and_its_control_needs_two() {
    for (replicas, memory, want) in [(1, "4Gi", 1), (2, "10Gi", 2)] {
        let filler = deployment("filler", 2, "13Gi", ON_BASELINE);
        let burst = deployment("burst", replicas, memory, "");
        let mut sim = cluster_with(&(filler + &burst), "    bootDelay: {min: 2m, max: 2m}\n");
        sim.advance_to(15 * MIN);
        let ups = sim
            .observation()
            .events
            .iter()
            .filter(|e| e.kind == EventKind::ScaleUp)
            .count();
        assert_eq!(ups, want, "{replicas} x {memory}");
        assert_eq!(sim.ready_nodes_of("burst"), want as u32);
    }
}

/// A `namespaceSelector` reads the labels of the manifests' Namespace
/// objects ("Namespace selector" in the assign-pod-node docs; upstream's
/// `AffinityTerm.Matches`): a guard in `apps` whose anti-affinity selects
/// `app=web` pods of namespaces labelled `team: <team>` keeps the web pods
/// off its node when their namespace carries that label. Two web replicas
/// that repel each other need both baseline nodes, so with the guard
/// repelling them one stays Pending; the control labels the namespace
/// otherwise and both run. (`namespace: "payments"` is quoted so that
/// `with_namespaces` leaves the labelled Namespace to the test.)
#[test]
fn a_namespace_selector_reads_the_namespace_objects_labels_and_its_control_does_not_match() {
    let placed = |team: &str| {
        let manifests = format!(
            "apiVersion: v1
kind: Namespace
metadata:
  name: payments
  labels: {{team: {team}}}
---
{guard}apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: \"payments\"}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec:
{ON_BASELINE}      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {{matchLabels: {{app: web}}}}
              topologyKey: kubernetes.io/hostname
      containers:
        - name: c
          image: pause
          resources: {{requests: {{cpu: 100m, memory: 128Mi}}}}
",
            guard = deployment(
                "guard",
                1,
                "128Mi",
                &format!(
                    "{ON_BASELINE}      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {{matchLabels: {{app: web}}}}
              namespaceSelector: {{matchLabels: {{team: b}}}}
              topologyKey: kubernetes.io/hostname
"
                ),
            ),
        );
        let mut sim = cluster(&manifests, "never", 0);
        sim.advance_to(5 * MIN);
        assert_eq!(
            pods_of(&sim, "guard-")
                .iter()
                .filter(|p| p.phase == PodPhase::Ready)
                .count(),
            1,
            "the guard runs"
        );
        pods_of(&sim, "web-")
            .iter()
            .filter(|p| p.phase == PodPhase::Ready)
            .count()
    };
    assert_eq!(placed("b"), 1, "the guard repels web pods of team b");
    assert_eq!(placed("c"), 2, "control: team c is not selected");
}
