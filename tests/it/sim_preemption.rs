//! Pod priority and preemption in the simulator, end to end from the
//! manifests: PriorityClasses resolve as the Priority admission plugin
//! resolves them, the scheduling queue pops higher priority first, and a
//! pod that fits nowhere preempts lower-priority pods as kube-scheduler's
//! DefaultPreemption does (docs: "Pod Priority and Preemption"; upstream
//! `pkg/scheduler/framework/plugins/defaultpreemption`). Each behaviour
//! has a paired control that flips the outcome.

use drillbench_observe::EventKind;
use drillbench_sim::Simulation;
use drillbench_sim::world::PodPhase;

use crate::sim_rules::{MIN, ON_BASELINE, cluster, deployment, node_of, pdb, pods_of};

/// The drill's PriorityClasses: `low` (10), `high` (1000) and
/// `high-never` (1000, `preemptionPolicy: Never`).
const CLASSES: &str = "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-never}
value: 1000
preemptionPolicy: Never
---
";

/// Pod spec lines: on the baseline, in a PriorityClass, with a grace
/// period when given.
fn spec(class: &str, grace: Option<u32>) -> String {
    let grace = grace.map_or(String::new(), |g| {
        format!("      terminationGracePeriodSeconds: {g}\n")
    });
    format!("{ON_BASELINE}      priorityClassName: {class}\n{grace}")
}

/// Two baseline nodes (16 GiB each), each filled by one 10 GiB `filler`
/// pod of class `low`; `extra` manifests beside them; settled.
fn full_baseline(extra: &str) -> Simulation {
    let manifests = format!(
        "{CLASSES}{}{extra}",
        deployment("filler", 2, "10Gi", &spec("low", None))
    );
    let mut sim = cluster(&manifests, "never", 0);
    sim.advance_to(MIN);
    assert_eq!(
        pods_of(&sim, "filler-")
            .iter()
            .filter(|p| p.phase == PodPhase::Ready)
            .count(),
        2,
        "both fillers run"
    );
    sim
}

/// Scales `apps/Deployment/name` to `replicas`.
fn scale(sim: &mut Simulation, name: &str, replicas: u32) {
    let w = sim
        .workload_id(&format!("apps/Deployment/{name}"))
        .expect("workload");
    sim.set_replicas(w, replicas).expect("scaled");
}

/// The preemptions recorded: (victim, message).
fn preemptions(sim: &Simulation) -> Vec<(String, String)> {
    sim.observation()
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PodPreempted)
        .map(|e| (e.object.name.clone(), e.message.clone()))
        .collect()
}

/// A `vip` deployment (0 replicas until scaled) of `class`, 10 GiB.
fn vip(class: &str) -> String {
    deployment("vip", 0, "10Gi", &spec(class, None))
}

/// [`full_baseline`] with `replicas` of a `class` vip scaled up, two
/// minutes later; and when they were scaled.
fn vips_after_two_minutes(class: &str, replicas: u32) -> (Simulation, u64) {
    let mut sim = full_baseline(&vip(class));
    let at = sim.now();
    scale(&mut sim, "vip", replicas);
    sim.advance_to(at + 2 * MIN);
    (sim, at)
}

// docs "Pod Priority and Preemption" ("Preemption": when a pod cannot be
// scheduled, the scheduler tries to preempt lower priority Pods);
// default_preemption_test.go `TestSelectNodesForPreemption` "a pod that
// would fit on the nodes, but other pods running are higher priority, no
// preemption would happen" as the control.
#[test]
fn a_higher_priority_pod_preempts_a_lower_one_and_binds_where_it_made_room() {
    let (sim, _) = vips_after_two_minutes("high", 1);
    let preempted = preemptions(&sim);
    assert_eq!(preempted.len(), 1, "{preempted:?}");
    let (victim, message) = &preempted[0];
    assert!(victim.starts_with("filler-"), "{victim}");
    let preemptor = pods_of(&sim, "vip-")[0];
    assert_eq!(preemptor.phase, PodPhase::Ready);
    let vip_node = node_of(&sim, &preemptor.name).expect("bound");
    assert!(
        message.ends_with(&format!("on node {vip_node}")),
        "bound where it preempted: {message}"
    );
    // The victim's replacement, of lower priority, cannot preempt back.
    let waiting = pods_of(&sim, "filler-")
        .iter()
        .filter(|p| p.phase == PodPhase::Pending)
        .count();
    assert_eq!(waiting, 1, "the replacement waits");

    // Control: a vip of the fillers' own priority preempts nothing.
    let (sim, _) = vips_after_two_minutes("low", 1);
    assert!(preemptions(&sim).is_empty());
    assert_eq!(pods_of(&sim, "vip-")[0].phase, PodPhase::Pending);
}

// docs "Pod Priority and Preemption", "Non-preempting PriorityClass":
// "Pods with preemptionPolicy: Never will be placed in the scheduling
// queue ahead of lower-priority pods, but they cannot preempt other pods".
#[test]
fn a_never_pod_waits_instead_of_preempting() {
    let (sim, _) = vips_after_two_minutes("high-never", 1);
    assert!(preemptions(&sim).is_empty());
    assert_eq!(pods_of(&sim, "vip-")[0].phase, PodPhase::Pending);
    // Control: the same value with the default policy preempts.
    let (sim, _) = vips_after_two_minutes("high", 1);
    assert_eq!(preemptions(&sim).len(), 1);
}

/// The "0/N nodes are available" message of each waiting pod. Replicas of
/// one template that fit nowhere in the same pass share the first one's
/// reason, worked out once (the cluster did not change between them): each
/// must still say it, in the words a lone replica gets.
#[test]
fn every_replica_that_fits_nowhere_says_why_as_a_lone_one_would() {
    let waiting = |replicas: u32| {
        let (sim, _) = vips_after_two_minutes("high-never", replicas);
        sim.observation()
            .events
            .iter()
            .filter(|e| e.kind == EventKind::PodUnschedulable)
            .map(|e| (e.object.name.clone(), e.message.clone()))
            .collect::<Vec<_>>()
    };
    let lone = waiting(1);
    assert_eq!(lone.len(), 1, "{lone:?}");
    assert!(lone[0].1.contains("2 Insufficient"), "{}", lone[0].1);
    let three = waiting(3);
    let names: std::collections::BTreeSet<&str> =
        three.iter().map(|(pod, _)| pod.as_str()).collect();
    assert_eq!(names.len(), 3, "each replica reports: {three:?}");
    assert!(three.iter().all(|(_, m)| *m == lone[0].1), "{three:?}");
}

// docs "Pod Priority and Preemption", "Graceful termination of preemption
// victims": the victim gets its graceful termination period, and the
// preemptor is nominated (`nominatedNodeName`) and binds once the victim
// is gone; default_preemption_test.go `TestPreempt`.
#[test]
fn the_preemptor_binds_once_the_victim_is_gone_after_its_grace_period() {
    let bound_after = |grace: Option<u32>| {
        let manifests = format!(
            "{CLASSES}{}{}",
            deployment("filler", 2, "10Gi", &spec("low", grace)),
            vip("high")
        );
        let mut sim = cluster(&manifests, "never", 0);
        sim.advance_to(MIN);
        let at = sim.now();
        scale(&mut sim, "vip", 1);
        sim.advance_to(at + 2 * MIN);
        sim.observation()
            .events
            .iter()
            .find(|e| e.kind == EventKind::PodScheduled && e.object.name.starts_with("vip-"))
            .map(|e| e.at_ms - at)
    };
    assert_eq!(bound_after(Some(5)), Some(5_000), "a 5 s grace period");
    assert_eq!(bound_after(None), Some(30_000), "control: the default 30 s");
}

// default_preemption_test.go `TestPickOneNodeForPreemption` "a node with
// minimum number of PDB violations" and `filterPodsWithPDBViolation`: of
// two nodes each freed by one victim, the one whose victim no budget
// protects is chosen.
#[test]
fn the_node_whose_victim_breaks_no_budget_is_chosen() {
    let victim_of = |protected: &str| {
        let manifests = format!(
            "{CLASSES}{}{}{}{}",
            deployment("guarded", 1, "10Gi", &spec("low", None)),
            deployment("free", 1, "10Gi", &spec("low", None)),
            pdb(protected, "minAvailable: 1"),
            vip("high")
        );
        let mut sim = cluster(&manifests, "never", 0);
        sim.advance_to(MIN);
        let at = sim.now();
        scale(&mut sim, "vip", 1);
        sim.advance_to(at + 2 * MIN);
        let preempted = preemptions(&sim);
        assert_eq!(preempted.len(), 1, "{preempted:?}");
        preempted[0]
            .0
            .split('-')
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(victim_of("guarded"), "free");
    assert_eq!(victim_of("free"), "guarded", "control: the budget moved");
}

// queuesort/priority_sort.go: the queue pops the higher-priority pod first
// even when it was created later; equal priorities keep creation order.
#[test]
fn the_higher_priority_pod_gets_the_last_room_first() {
    let winner = |late_class: &str| {
        // Room for one 10 GiB pod per node, and three pods: `early` (two,
        // first in the manifests) and `late` (one).
        let manifests = format!(
            "{CLASSES}{}{}",
            deployment("early", 2, "10Gi", &spec("low", None)),
            deployment("late", 1, "10Gi", &spec(late_class, None)),
        );
        let mut sim = cluster(&manifests, "never", 0);
        sim.advance_to(MIN);
        pods_of(&sim, "late-")[0].phase
    };
    // `high-never` so that the result shows the queue order, not a
    // preemption.
    assert_eq!(winner("high-never"), PodPhase::Ready);
    assert_eq!(
        winner("low"),
        PodPhase::Pending,
        "control: equal, created later"
    );
}

// plugin/pkg/admission/priority: a pod naming no class gets the
// `globalDefault` class's value. Fillers naming none get 5 from the
// default `background`, which a `low` (10) pod preempts; control: the
// default `standard` gives them 50, which it cannot.
#[test]
fn the_global_default_gives_pods_without_a_class_their_priority() {
    let run = |default: &str| {
        let manifests = format!(
            "{CLASSES}{default}{}{}",
            deployment("filler", 2, "10Gi", ON_BASELINE),
            deployment("vip", 0, "10Gi", &spec("low", None)),
        );
        let mut sim = cluster(&manifests, "never", 0);
        sim.advance_to(MIN);
        let at = sim.now();
        scale(&mut sim, "vip", 1);
        sim.advance_to(at + 2 * MIN);
        preemptions(&sim).len()
    };
    let background = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: background}\nvalue: 5\nglobalDefault: true\n---\n";
    assert_eq!(run(background), 1, "fillers at 5");
    let standard = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: standard}\nvalue: 50\nglobalDefault: true\n---\n";
    assert_eq!(run(standard), 0, "control: fillers at 50");
}

/// Two baseline nodes, each with one 1 GiB `filler` pod of class `low`
/// whose required anti-affinity (by hostname) repels pods labelled
/// `app: {repels}`; a 1 GiB `vip` of class `high` beside them; settled.
fn repelling_fillers(repels: &str) -> Simulation {
    let anti = format!(
        "      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {{matchLabels: {{app: {repels}}}}}
              topologyKey: kubernetes.io/hostname
"
    );
    let manifests = format!(
        "{CLASSES}{}{}",
        deployment("filler", 2, "1Gi", &format!("{}{anti}", spec("low", None))),
        deployment("vip", 0, "1Gi", &spec("high", None))
    );
    let mut sim = cluster(&manifests, "never", 0);
    sim.advance_to(MIN);
    sim
}

// default_preemption_test.go `TestSelectNodesForPreemption` ("pod with
// anti-affinity is preempted"): a lower-priority pod whose required
// anti-affinity repels the preemptor is a victim whose removal makes room,
// as the InterPodAffinity filter is re-run without it in the dry run
// (upstream `SelectVictimsOnNode`). The preemptor has room everywhere; only
// the running pods' terms keep it off. Control: fillers that repel other
// pods leave the vip to bind without preempting anything.
#[test]
fn a_running_pods_anti_affinity_is_preempted_away_by_a_higher_priority_pod() {
    let mut sim = repelling_fillers("vip");
    let at = sim.now();
    scale(&mut sim, "vip", 1);
    sim.advance_to(at + 2 * MIN);
    let preempted = preemptions(&sim);
    assert_eq!(preempted.len(), 1, "{preempted:?}");
    assert!(preempted[0].0.starts_with("filler-"), "{preempted:?}");
    let vip = pods_of(&sim, "vip-")[0];
    assert_eq!(vip.phase, PodPhase::Ready);

    let mut sim = repelling_fillers("someone-else");
    let at = sim.now();
    scale(&mut sim, "vip", 1);
    sim.advance_to(at + 2 * MIN);
    assert!(preemptions(&sim).is_empty());
    assert_eq!(pods_of(&sim, "vip-")[0].phase, PodPhase::Ready);
}

// runtime/framework.go `addGENominatedPods`, which preemption's dry run
// goes through too (`SelectVictimsOnNode` filters with
// `RunFilterPluginsWithNominatedPods`): the second of two preemptors
// counts the first one's nomination, so it makes room on the other node
// in the same instant, and both bind once their victims are gone.
// Control: a third finds both nodes promised, so it preempts nothing and
// waits.
#[test]
fn preemptors_count_each_others_nominations() {
    let (sim, at) = vips_after_two_minutes("high", 2);
    let preempted_at: Vec<u64> = sim
        .observation()
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PodPreempted)
        .map(|e| e.at_ms - at)
        .collect();
    assert_eq!(preempted_at, [0, 0], "both at once");
    let vips = pods_of(&sim, "vip-");
    assert!(vips.iter().all(|p| p.phase == PodPhase::Ready), "{vips:?}");
    let nodes: std::collections::BTreeSet<String> =
        vips.iter().filter_map(|p| node_of(&sim, &p.name)).collect();
    assert_eq!(nodes.len(), 2, "one on each node: {nodes:?}");

    let (sim, _) = vips_after_two_minutes("high", 3);
    assert_eq!(preemptions(&sim).len(), 2, "control: no third victim");
    let waiting: Vec<_> = pods_of(&sim, "vip-")
        .into_iter()
        .filter(|p| p.phase == PodPhase::Pending)
        .collect();
    assert_eq!(waiting.len(), 1, "control: the third waits");
}

/// The first FailedScheduling message of the `vip-` pods.
fn vip_waits_because(sim: &Simulation) -> String {
    sim.observation()
        .events
        .iter()
        .find(|e| e.kind == EventKind::PodUnschedulable && e.object.name.starts_with("vip-"))
        .map(|e| e.message.clone())
        .expect("the vip waited")
}

// default_preemption.go `PodEligibleToPreemptOthers` ("not eligible due to
// preemptionPolicy=Never.") and preemption.go `Evaluator.Preempt`: with no
// candidate, a second FitError over the dry run, nodes it did not try "not
// helpful", nodes with no lower-priority pod "No preemption victims found
// for incoming pod" (`SelectVictimsOnNode`); both after "preemption: ", as
// `DefaultPreemption.PostFilter` words it and `FitError.Error` appends it.
#[test]
fn a_waiting_pod_says_why_preemption_did_not_help() {
    let filters = "0/5 nodes are available: 2 Insufficient memory, 3 node(s) had untolerated \
                   taint {node-role.kubernetes.io/control-plane: }.";
    let (sim, _) = vips_after_two_minutes("high-never", 1);
    assert_eq!(
        vip_waits_because(&sim),
        format!("{filters} preemption: not eligible due to preemptionPolicy=Never.")
    );
    // The fillers' own priority: eligible, but the dry run finds no victim
    // on the baseline nodes and does not try the control planes.
    let (sim, _) = vips_after_two_minutes("low", 1);
    assert_eq!(
        vip_waits_because(&sim),
        format!(
            "{filters} preemption: 0/5 nodes are available: 2 No preemption victims found \
             for incoming pod, 3 Preemption is not helpful for scheduling."
        )
    );
    // Control: a `high` vip preempts, and the PostFilter leaves no message.
    let (sim, _) = vips_after_two_minutes("high", 1);
    assert_eq!(vip_waits_because(&sim), filters);
}

/// Two 1 GiB `low` fillers on the baseline and a 1 GiB `high` vip whose
/// required `kind` term (`podAffinity` or `podAntiAffinity`, by hostname)
/// selects `app: {selects}`; the vip scaled up and two minutes passed.
fn vip_with_pod_term(kind: &str, selects: &str) -> Simulation {
    let term = format!(
        "      affinity:
        {kind}:
          requiredDuringSchedulingIgnoredDuringExecution:
            - labelSelector: {{matchLabels: {{app: {selects}}}}}
              topologyKey: kubernetes.io/hostname
"
    );
    let manifests = format!(
        "{CLASSES}{}{}",
        deployment("filler", 2, "1Gi", &spec("low", None)),
        deployment("vip", 0, "1Gi", &format!("{}{term}", spec("high", None)))
    );
    let mut sim = cluster(&manifests, "never", 0);
    sim.advance_to(MIN);
    let at = sim.now();
    scale(&mut sim, "vip", 1);
    sim.advance_to(at + 2 * MIN);
    sim
}

// interpodaffinity/filtering.go `Filter`: an unmet required pod affinity is
// `UnschedulableAndUnresolvable` (removing pods cannot bring a matching
// one), so `nodesWherePreemptionMightHelp` leaves the node out and the dry
// run calls it "not helpful"; the pod's own anti-affinity is
// `Unschedulable`, and removing the pods it repels makes room. Control:
// the anti-affinity vip preempts a filler.
#[test]
fn an_unmet_pod_affinity_is_not_preempted_for() {
    let sim = vip_with_pod_term("podAffinity", "nobody");
    assert!(preemptions(&sim).is_empty());
    assert_eq!(
        vip_waits_because(&sim),
        "0/5 nodes are available: 2 node(s) didn't match pod affinity rules, 3 node(s) had \
         untolerated taint {node-role.kubernetes.io/control-plane: }. preemption: 0/5 nodes \
         are available: 5 Preemption is not helpful for scheduling."
    );
    let sim = vip_with_pod_term("podAntiAffinity", "filler");
    let preempted = preemptions(&sim);
    assert_eq!(preempted.len(), 1, "{preempted:?}");
    assert!(
        vip_waits_because(&sim).starts_with(
            "0/5 nodes are available: 2 node(s) didn't match pod anti-affinity rules, 3"
        ),
        "{}",
        vip_waits_because(&sim)
    );
}
