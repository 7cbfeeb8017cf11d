//! The world state: the nodes, pods, workloads and budgets of the simulated
//! cluster, and the indexes that find them by name.
//!
//! Objects are only added, never removed (a departed object keeps its slot
//! and its phase says it is gone), so indices stay valid; the indexes are
//! kept here and nowhere else. So is the accounting of what each node runs:
//! a pod's requests count on its node from [`World::bind`] until
//! [`World::release`].

use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::core::v1::Taint;

use super::pod_groups::PodGroups;
use super::pod_tally::{PodTallies, Tally};
use super::world::{
    ClaimId, NodeId, NodePhase, Owner, Pdb, PodId, PodPhase, SimNode, SimPod, Template, Workload,
    WorkloadId, WorkloadKind,
};
use drillbench_model::labels::NAMESPACE_NAME_LABEL;
use drillbench_observe::ObjectRef;

/// Nodes, pods, workloads, budgets, by index.
#[derive(Debug, Clone, Default)]
pub(crate) struct World {
    nodes: Vec<SimNode>,
    node_index: BTreeMap<String, NodeId>,
    pods: Vec<SimPod>,
    workloads: Vec<Workload>,
    workload_index: BTreeMap<String, WorkloadId>,
    pdbs: Vec<Pdb>,
    /// The pods holding resources, as groups of alike pods with their
    /// counts per topology domain (what inter-pod affinity reads).
    groups: PodGroups,
    /// Pods that started terminating while holding resources (see
    /// [`World::start_terminating`]); topology spread counts them out.
    terminating: std::collections::BTreeSet<PodId>,
    /// How many pods holding resources each priority value has, so that
    /// preemption knows at once whether any pod is of lower priority.
    held_priorities: BTreeMap<i32, usize>,
    /// Per node: its labels as shared with placements; forgotten whenever
    /// its labels change.
    shared_labels: Vec<Option<Rc<BTreeMap<String, String>>>>,
    /// Each workload's pods counted by phase, and the workloads that may
    /// have changed: every accessor that hands out a pod, a workload or a
    /// node for change tells it.
    tallies: PodTallies,
    /// The control planes, in index order (a node is one from its
    /// creation, or never).
    control_planes: Vec<NodeId>,
    /// Each namespace's labels, for `namespaceSelector`s: those its
    /// Namespace object declares, and `kubernetes.io/metadata.name`,
    /// which the API server sets on every namespace.
    namespaces: BTreeMap<String, BTreeMap<String, String>>,
}

impl World {
    // ----- nodes -----

    /// Every node, by index.
    pub(crate) fn nodes(&self) -> &[SimNode] {
        &self.nodes
    }

    /// How many Node objects exist (the scheduler's snapshot: every node
    /// not deleted, whatever its condition).
    pub(crate) fn live_nodes(&self) -> usize {
        self.nodes
            .iter()
            .filter(|n| n.phase != NodePhase::Gone)
            .count()
    }

    /// One node.
    pub(crate) fn node(&self, node: NodeId) -> &SimNode {
        &self.nodes[node]
    }

    /// One node, to change its state (not its name, whether it is a
    /// control plane, its labels or what it runs:
    /// [`World::set_node_labels`], [`World::bind`] and [`World::release`]
    /// do that).
    pub(crate) fn node_mut(&mut self, node: NodeId) -> &mut SimNode {
        self.tallies.touch_nodes();
        &mut self.nodes[node]
    }

    /// The control planes, departed ones included.
    pub(crate) fn control_planes(&self) -> impl Iterator<Item = &SimNode> + '_ {
        self.control_planes.iter().map(|&n| &self.nodes[n])
    }

    /// The node of that name (the newest, if a name was reused).
    pub(crate) fn node_id(&self, name: &str) -> Option<NodeId> {
        self.node_index.get(name).copied()
    }

    /// Adds a node; returns its index.
    pub(crate) fn add_node(&mut self, node: SimNode) -> NodeId {
        let id = self.nodes.len();
        self.node_index.insert(node.name.clone(), id);
        if node.control_plane {
            self.control_planes.push(id);
        }
        self.nodes.push(node);
        self.tallies.touch_nodes();
        id
    }

    /// Replaces a node's labels; false if they were the same.
    pub(crate) fn set_node_labels(
        &mut self,
        node: NodeId,
        labels: BTreeMap<String, String>,
    ) -> bool {
        let n = &mut self.nodes[node];
        if n.labels() == &labels {
            return false;
        }
        n.object.metadata.labels = Some(labels);
        self.tallies.touch_nodes();
        self.groups.relabelled();
        if let Some(shared) = self.shared_labels.get_mut(node) {
            *shared = None;
        }
        true
    }

    /// Adds a taint (no value) unless the node has one with that key and
    /// effect; false if it had.
    pub(crate) fn add_taint(&mut self, node: NodeId, key: &str, effect: &str) -> bool {
        self.tallies.touch_nodes();
        let spec = self.nodes[node]
            .object
            .spec
            .get_or_insert_with(Default::default);
        let taints = spec.taints.get_or_insert_with(Vec::new);
        if taints.iter().any(|t| t.key == key && t.effect == effect) {
            return false;
        }
        taints.push(Taint {
            key: key.to_owned(),
            effect: effect.to_owned(),
            value: None,
            time_added: None,
        });
        true
    }

    /// Removes a node's taints with that key.
    pub(crate) fn remove_taint(&mut self, node: NodeId, key: &str) {
        self.tallies.touch_nodes();
        if let Some(taints) = self.nodes[node]
            .object
            .spec
            .as_mut()
            .and_then(|s| s.taints.as_mut())
        {
            taints.retain(|t| t.key != key);
        }
    }

    /// Replaces a node's taints.
    pub(crate) fn set_taints(&mut self, node: NodeId, taints: Vec<Taint>) {
        self.tallies.touch_nodes();
        let spec = self.nodes[node]
            .object
            .spec
            .get_or_insert_with(Default::default);
        spec.taints = (!taints.is_empty()).then_some(taints);
    }

    /// Cordons a node; false if it was cordoned.
    pub(crate) fn cordon(&mut self, node: NodeId) -> bool {
        self.tallies.touch_nodes();
        if self.nodes[node].unschedulable() {
            return false;
        }
        let spec = self.nodes[node]
            .object
            .spec
            .get_or_insert_with(Default::default);
        spec.unschedulable = Some(true);
        true
    }

    /// Uncordons a node.
    pub(crate) fn uncordon(&mut self, node: NodeId) {
        self.tallies.touch_nodes();
        if let Some(spec) = self.nodes[node].object.spec.as_mut() {
            spec.unschedulable = None;
        }
    }

    /// A node's labels, shared rather than copied: the same value until
    /// they change.
    pub(crate) fn shared_labels(&mut self, node: NodeId) -> Rc<BTreeMap<String, String>> {
        if self.shared_labels.len() <= node {
            self.shared_labels.resize(node + 1, None);
        }
        let nodes = &self.nodes;
        self.shared_labels[node]
            .get_or_insert_with(|| Rc::new(nodes[node].labels().clone()))
            .clone()
    }

    // ----- pods -----

    /// Every pod, by index.
    pub(crate) fn pods(&self) -> &[SimPod] {
        &self.pods
    }

    /// One pod.
    pub(crate) fn pod(&self, pod: PodId) -> &SimPod {
        &self.pods[pod]
    }

    /// One pod, to change its state (not its phase, its template or
    /// where it is bound: [`World::set_pod_phase`], [`World::bind`] and
    /// [`World::release`] do that).
    pub(crate) fn pod_mut(&mut self, pod: PodId) -> &mut SimPod {
        self.tallies.touch_pod(pod);
        &mut self.pods[pod]
    }

    /// Moves a pod to another phase, counted for its workload.
    pub(crate) fn set_pod_phase(&mut self, pod: PodId, phase: PodPhase) {
        let p = &mut self.pods[pod];
        if p.phase != phase {
            self.tallies.phase_changed(pod, &p.template, p.phase, phase);
            p.phase = phase;
        }
    }

    /// Adds a pod, to its owner's pods too; returns its index.
    pub(crate) fn add_pod(&mut self, pod: SimPod) -> PodId {
        let id = self.pods.len();
        let member = match pod.owner {
            Owner::Workload(w, _) => {
                self.workloads[w].pods.push(id);
                Some(w)
            }
            Owner::None => None,
        };
        self.tallies.add_pod(id, member, &pod.template, pod.phase);
        self.pods.push(pod);
        id
    }

    /// Binds a pod to a node: its requests count there from now on.
    pub(crate) fn bind(&mut self, pod: PodId, node: NodeId) {
        let requests = self.pods[pod].template.requests;
        let n = &mut self.nodes[node];
        n.requested = n.requested.plus(requests);
        let fresh = n.pods.insert(pod);
        let p = &mut self.pods[pod];
        p.node = Some(node);
        p.holds_resources = true;
        if fresh {
            *self
                .held_priorities
                .entry(p.template.priority.value)
                .or_default() += 1;
            self.groups
                .bind(&p.template, &p.namespace, node, &self.nodes);
        }
    }

    /// A pod's deletion started: Terminating, it holds its node until it
    /// is gone.
    pub(crate) fn start_terminating(&mut self, pod: PodId) {
        self.set_pod_phase(pod, PodPhase::Terminating);
        if self.pods[pod].holds_resources {
            self.terminating.insert(pod);
        }
    }

    /// The pods that started terminating while holding resources and hold
    /// them still (a pod's phase says whether it still terminates).
    pub(crate) fn terminating_pods(&self) -> &std::collections::BTreeSet<PodId> {
        &self.terminating
    }

    /// Whether a pod holding resources has a priority below `value`.
    pub(crate) fn holds_priority_below(&self, value: i32) -> bool {
        self.held_priorities.range(..value).next().is_some()
    }

    /// The pods holding resources, grouped (see [`PodGroups`]).
    pub(crate) fn pod_groups(&self) -> &PodGroups {
        &self.groups
    }

    /// A pod stops counting on its node (it finished or is gone); it stays
    /// bound there.
    pub(crate) fn release(&mut self, pod: PodId) {
        if !self.pods[pod].holds_resources {
            return;
        }
        self.pods[pod].holds_resources = false;
        self.terminating.remove(&pod);
        if let Some(node) = self.pods[pod].node {
            let requests = self.pods[pod].template.requests;
            let n = &mut self.nodes[node];
            n.requested = n.requested.minus(requests);
            if n.pods.remove(&pod) {
                let p = &self.pods[pod];
                let value = p.template.priority.value;
                if let Some(held) = self.held_priorities.get_mut(&value) {
                    *held -= 1;
                    if *held == 0 {
                        self.held_priorities.remove(&value);
                    }
                }
                self.groups
                    .release(&p.template, &p.namespace, node, &self.nodes);
            }
        }
    }

    /// A pod as an event names it.
    pub(crate) fn pod_ref(&self, pod: PodId) -> ObjectRef {
        let p = &self.pods[pod];
        ObjectRef {
            kind: "Pod".to_owned(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
        }
    }

    /// Whether a DaemonSet owns the pod.
    pub(crate) fn is_daemon(&self, pod: PodId) -> bool {
        matches!(self.pods[pod].owner, Owner::Workload(w, _) if self.workloads[w].kind == WorkloadKind::DaemonSet)
    }

    /// The pods on a node a drain moves: active, not DaemonSet pods.
    pub(crate) fn movable_pods(&self, node: NodeId) -> Vec<PodId> {
        self.nodes[node]
            .pods
            .iter()
            .copied()
            .filter(|&p| !self.is_daemon(p) && self.pods[p].is_active())
            .collect()
    }

    /// The pods on a node a drain waits for: not DaemonSet pods, not gone
    /// (terminating ones included).
    pub(crate) fn pods_left(&self, node: NodeId) -> usize {
        self.nodes[node]
            .pods
            .iter()
            .filter(|&&p| !self.is_daemon(p) && self.pods[p].phase != PodPhase::Gone)
            .count()
    }

    /// Whether a pod that is not gone on the node mounts the claim.
    pub(crate) fn claim_in_use_on(&self, claim: ClaimId, node: NodeId) -> bool {
        self.nodes[node]
            .pods
            .iter()
            .any(|&p| self.pods[p].claims.contains(&claim) && self.pods[p].phase != PodPhase::Gone)
    }

    // ----- workloads -----

    /// Every workload, deleted ones included, by index.
    pub(crate) fn workloads(&self) -> &[Workload] {
        &self.workloads
    }

    /// One workload.
    pub(crate) fn workload(&self, w: WorkloadId) -> &Workload {
        &self.workloads[w]
    }

    /// One workload, to change its spec or state (not its key or its
    /// pods: [`World::add_pod`] adds them).
    /// Puts `new` wherever the workload holds `old` (its template and the
    /// revision made from it): the same template, admitted differently.
    pub(crate) fn replace_template(
        &mut self,
        w: WorkloadId,
        old: &Rc<Template>,
        new: Rc<Template>,
    ) {
        let workload = &mut self.workloads[w];
        for revision in &mut workload.revisions {
            if Rc::ptr_eq(&revision.template, old) {
                revision.template = new.clone();
            }
        }
        if Rc::ptr_eq(&workload.template, old) {
            workload.template = new;
        }
    }

    pub(crate) fn workload_mut(&mut self, w: WorkloadId) -> &mut Workload {
        self.tallies.touch_workload(w);
        &mut self.workloads[w]
    }

    /// The workload of a `namespace/Kind/name` key, unless deleted.
    pub(crate) fn workload_id(&self, key: &str) -> Option<WorkloadId> {
        self.workload_index.get(key).copied()
    }

    /// The workloads not deleted, in key order.
    pub(crate) fn indexed_workloads(&self) -> impl Iterator<Item = WorkloadId> + '_ {
        self.workload_index.values().copied()
    }

    /// Adds a workload under its key; returns its index.
    pub(crate) fn add_workload(&mut self, workload: Workload) -> WorkloadId {
        self.declare_namespace(&workload.namespace, None);
        let id = self.workloads.len();
        self.workload_index.insert(workload.key.clone(), id);
        self.workloads.push(workload);
        self.tallies.add_workload(id);
        id
    }

    /// A namespace exists, with the labels its Namespace object declares
    /// (`None`: no object, or keep those already declared).
    pub(crate) fn declare_namespace(
        &mut self,
        name: &str,
        labels: Option<&BTreeMap<String, String>>,
    ) {
        let entry = self.namespaces.entry(name.to_owned()).or_default();
        if let Some(labels) = labels {
            entry.clone_from(labels);
        }
        entry.insert(NAMESPACE_NAME_LABEL.to_owned(), name.to_owned());
    }

    /// A namespace's labels (none for a namespace nothing declared).
    pub(crate) fn namespace_labels(&self, name: &str) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        self.namespaces.get(name).unwrap_or(&NONE)
    }

    /// A deleted workload is no longer found by its key; its slot stays.
    pub(crate) fn unindex_workload(&mut self, w: WorkloadId) {
        let key = &self.workloads[w].key;
        self.workload_index.remove(key);
    }

    /// The DaemonSets, by index.
    pub(crate) fn daemonsets(&self) -> Vec<WorkloadId> {
        (0..self.workloads.len())
            .filter(|&w| self.workloads[w].kind == WorkloadKind::DaemonSet)
            .collect()
    }

    /// The active pods of a workload.
    pub(crate) fn active_pods(&self, w: WorkloadId) -> Vec<PodId> {
        self.workloads[w]
            .pods
            .iter()
            .copied()
            .filter(|&p| self.pods[p].is_active())
            .collect()
    }

    /// A workload's pods counted by phase, kept as they change (in a
    /// debug build, checked against a recount each time).
    pub(crate) fn tally(&self, w: WorkloadId) -> &Tally {
        let tally = self.tallies.of(w);
        debug_assert_eq!(
            *tally,
            Tally::recount(self.workloads[w].pods.iter().map(|&p| {
                let p = &self.pods[p];
                (&p.template, p.phase)
            })),
            "the kept counts of workload {}",
            self.workloads[w].key
        );
        tally
    }

    /// How many of a workload's pods are active.
    pub(crate) fn active_count(&self, w: WorkloadId) -> usize {
        self.tally(w).active as usize
    }

    /// How many of a workload's pods are Ready.
    pub(crate) fn ready_pods(&self, w: WorkloadId) -> u32 {
        self.tally(w).ready
    }

    /// The workloads whose pods, spec or nodes were handed out for change
    /// since the last call, in index order: the only ones whose
    /// readiness may read differently.
    pub(crate) fn take_changed_workloads(&mut self) -> Vec<WorkloadId> {
        let workloads = &self.workloads;
        self.tallies.take_changed(|| {
            (0..workloads.len())
                .filter(|&w| workloads[w].kind == WorkloadKind::DaemonSet)
                .collect()
        })
    }

    // ----- budgets -----

    /// Every budget.
    pub(crate) fn pdbs(&self) -> &[Pdb] {
        &self.pdbs
    }

    /// One budget, to change its status or its disrupted pods.
    pub(crate) fn pdb_mut(&mut self, index: usize) -> &mut Pdb {
        &mut self.pdbs[index]
    }

    /// Adds a budget.
    pub(crate) fn add_pdb(&mut self, pdb: Pdb) {
        self.pdbs.push(pdb);
    }

    /// Deletes a budget (later ones move down one place).
    pub(crate) fn remove_pdb(&mut self, index: usize) {
        self.pdbs.remove(index);
    }

    /// The budget of that namespace and name.
    pub(crate) fn pdb_index(&self, namespace: &str, name: &str) -> Option<usize> {
        self.pdbs.iter().position(|p| {
            p.object.metadata.namespace.as_deref().unwrap_or("default") == namespace
                && p.object.metadata.name.as_deref() == Some(name)
        })
    }

    /// The budgets whose selector covers a pod (same namespace).
    pub(crate) fn covering_budgets(&self, pod: PodId) -> Vec<usize> {
        let p = &self.pods[pod];
        (0..self.pdbs.len())
            .filter(|&i| {
                self.pdbs[i]
                    .object
                    .metadata
                    .namespace
                    .as_deref()
                    .unwrap_or("default")
                    == p.namespace
                    && self.pdbs[i].selector.selects(&p.template.labels)
            })
            .collect()
    }

    /// A gone pod is no longer a disruption any budget waits on.
    pub(crate) fn forget_disruption(&mut self, pod: PodId) {
        for pdb in &mut self.pdbs {
            pdb.disrupted.remove(&pod);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use serde_json::json;

    use super::*;
    use crate::fixtures::{loaded, node, pod, template, workload};

    #[test]
    fn nodes_are_found_by_name_the_newest_when_a_name_comes_back() {
        let mut world = World::default();
        let a = world.add_node(node("a"));
        let b = world.add_node(node("b"));
        assert_eq!((world.node_id("a"), world.node_id("b")), (Some(a), Some(b)));
        assert_eq!(world.node_id("c"), None);
        let again = world.add_node(node("a"));
        assert_eq!(world.node_id("a"), Some(again));
        assert_eq!(world.nodes().len(), 3, "the old slot stays");
        assert_eq!(world.node(a).name, "a");
    }

    #[test]
    fn a_deleted_workload_is_no_longer_found_but_keeps_its_slot() {
        let mut world = World::default();
        let t = template("web");
        let web = world.add_workload(workload("web", WorkloadKind::Deployment, t.clone()));
        let ds = world.add_workload(workload("agent", WorkloadKind::DaemonSet, t));
        assert_eq!(world.workload_id("ns/Kind/web"), Some(web));
        assert_eq!(world.daemonsets(), [ds]);
        world.unindex_workload(web);
        assert_eq!(world.workload_id("ns/Kind/web"), None);
        assert_eq!(world.indexed_workloads().collect::<Vec<_>>(), [ds]);
        assert_eq!(world.workloads().len(), 2);
        assert_eq!(world.workload(web).name, "web");
    }

    #[test]
    fn a_pod_counts_on_its_node_from_binding_until_release() {
        let mut world = World::default();
        let t = template("web");
        let n = world.add_node(node("a"));
        let w = world.add_workload(workload("web", WorkloadKind::Deployment, t.clone()));
        let p = world.add_pod(pod("web-1", Owner::Workload(w, None), t.clone(), vec![7]));
        let q = world.add_pod(pod("web-2", Owner::Workload(w, None), t, Vec::new()));
        assert_eq!(world.workload(w).pods, [p, q], "a pod joins its owner");
        world.bind(p, n);
        world.bind(q, n);
        assert_eq!(world.node(n).requested.cpu, 200);
        assert_eq!(world.node(n).pods.len(), 2);
        assert!(world.claim_in_use_on(7, n));
        assert!(!world.claim_in_use_on(8, n));
        world.release(p);
        world.release(p);
        assert_eq!(world.node(n).requested.cpu, 100, "released once");
        assert_eq!(world.pod(p).node, Some(n), "still bound where it ran");
        assert!(!world.claim_in_use_on(7, n), "the node no longer runs it");
    }

    #[test]
    fn a_drain_moves_active_pods_but_daemons_and_waits_for_terminating_ones() {
        let mut world = World::default();
        let t = template("web");
        let n = world.add_node(node("a"));
        let web = world.add_workload(workload("web", WorkloadKind::Deployment, t.clone()));
        let agent = world.add_workload(workload("agent", WorkloadKind::DaemonSet, t.clone()));
        let running = world.add_pod(pod(
            "web-1",
            Owner::Workload(web, None),
            t.clone(),
            Vec::new(),
        ));
        let stopping = world.add_pod(pod(
            "web-2",
            Owner::Workload(web, None),
            t.clone(),
            Vec::new(),
        ));
        let daemon = world.add_pod(pod("agent-1", Owner::Workload(agent, None), t, Vec::new()));
        for p in [running, stopping, daemon] {
            world.bind(p, n);
            world.set_pod_phase(p, PodPhase::Ready);
        }
        world.start_terminating(stopping);
        assert!(world.is_daemon(daemon) && !world.is_daemon(running));
        assert_eq!(world.movable_pods(n), [running]);
        assert_eq!(world.pods_left(n), 2);
        assert_eq!(world.active_pods(web), [running]);
        assert_eq!(world.ready_pods(web), 1);
        assert_eq!(world.pod_ref(running).name, "web-1");
    }

    #[test]
    fn shared_labels_are_reused_until_the_labels_change() {
        let mut world = World::default();
        let n = world.add_node(node("a"));
        let first = world.shared_labels(n);
        assert!(Rc::ptr_eq(&first, &world.shared_labels(n)));
        let same = world.node(n).labels().clone();
        assert!(!world.set_node_labels(n, same.clone()), "unchanged");
        assert!(Rc::ptr_eq(&first, &world.shared_labels(n)));
        let mut changed = same;
        changed.insert("tier".to_owned(), "a".to_owned());
        assert!(world.set_node_labels(n, changed));
        let after = world.shared_labels(n);
        assert!(!Rc::ptr_eq(&first, &after));
        assert_eq!(after.get("tier").map(String::as_str), Some("a"));
    }

    #[test]
    fn taints_and_cordons_are_set_once() {
        let mut world = World::default();
        let n = world.add_node(node("a"));
        assert!(world.add_taint(n, "k", "NoSchedule"));
        assert!(!world.add_taint(n, "k", "NoSchedule"), "already there");
        assert!(world.add_taint(n, "k", "NoExecute"), "another effect");
        assert_eq!(world.node(n).taints().len(), 2);
        world.remove_taint(n, "k");
        assert!(world.node(n).taints().is_empty());
        assert!(world.cordon(n));
        assert!(!world.cordon(n));
        assert!(world.node(n).unschedulable());
        world.uncordon(n);
        assert!(!world.node(n).unschedulable());
    }

    #[test]
    fn budgets_are_found_by_name_and_cover_pods_by_selector() {
        let pdb = |name: &str, app: &str| {
            json!({
                "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": "ns"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}}
            })
        };
        let mut world = World::default();
        for (object, budget, selector) in loaded(vec![pdb("web", "web"), pdb("db", "db")]).pdbs {
            world.add_pdb(Pdb {
                object,
                budget,
                selector,
                disrupted: BTreeMap::new(),
            });
        }
        let p = world.add_pod(pod("web-1", Owner::None, template("web"), Vec::new()));
        assert_eq!(world.pdb_index("ns", "db"), Some(1));
        assert_eq!(world.pdb_index("other", "db"), None);
        assert_eq!(world.covering_budgets(p), [0]);
        world.pdb_mut(0).disrupted.insert(p, 5);
        world.forget_disruption(p);
        assert!(world.pdbs()[0].disrupted.is_empty());
        world.remove_pdb(0);
        assert_eq!(
            world.pdb_index("ns", "db"),
            Some(0),
            "later budgets move down"
        );
        assert!(world.covering_budgets(p).is_empty());
    }
}
