//! Watch events to an [`Observation`]: the same timeline events,
//! placements, workload readiness series and strandings the simulator
//! records for the same happenings, rebuilt from what a watch on the API
//! server shows.
//!
//! Where a claim's volume is attached, read in this order for the
//! stranding the drills judge ("a single-attach volume still attached to
//! a node that is gone", [`Stranding`](drillbench_observe::Stranding)):
//!
//! 1. **VolumeAttachments** (`storage.k8s.io/v1`): a CSI driver that
//!    attaches (production's `hcloud`) records each attachment as one,
//!    naming the PersistentVolume (`spec.source.persistentVolumeName`) and
//!    the node (`spec.nodeName`, an API name, mapped to the drill name);
//!    only those with `status.attached` attach. The volume's claim is the
//!    one its PV's `spec.claimRef` names (or whose `spec.volumeName` names
//!    the PV). When any VolumeAttachment names a claim's PV, they alone
//!    say where it is attached.
//! 2. **A node-pinned PersistentVolume**: a volume on one node's disk
//!    (kind's local-path) has no VolumeAttachment; its PV's required node
//!    affinity on `kubernetes.io/hostname` names the one node it can be
//!    used on, so it is attached there for as long as the PV exists.
//! 3. **The claim's `volume.kubernetes.io/selected-node` annotation**
//!    ([`ATTACHED_NODE_ANNOTATION`]), the fallback where neither exists and
//!    the PV is not a CSI volume (or is not known: a cluster that does not
//!    serve PersistentVolumes). A CSI volume with no VolumeAttachment is
//!    attached nowhere: the annotation is the scheduler's pick for the
//!    first consumer and stays after the volume detaches or moves.
//!
//! A node deleted while a claim of a single-attach class is attached to it
//! strands that claim there; the stranding is released when the claim's
//! attachment no longer names the node (its VolumeAttachment deleted or
//! moved, its PV gone, its annotation changed). Which classes are
//! single-attach is the drill's to say, not the volume's: kind and Talos
//! back every class with local-path, so a replicated (Longhorn-like)
//! class's volume is node-pinned there too, and is not judged, as the
//! simulator does not judge it.
//!
//! Pure: the caller feeds each change with the drill time it happened at
//! ([`Observer::apply`]) and closes each batch of one instant with
//! [`Observer::settle`]; nothing here talks to a cluster, so the mapping is
//! tested with plain objects.

mod budgets;
mod names;
mod nodes;
mod object;
mod pods;
mod volumes;
mod workloads;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use self::budgets::Budgets;
use self::names::NodeNames;
pub(super) use self::nodes::NodeState;
pub(super) use self::object::{Change, Object, drill_time};
pub(super) use self::pods::PodOnNode;
pub(super) use self::pods::PodState;
use self::volumes::Volumes;
use self::workloads::Workloads;
use drillbench_model::topology::{CONTROL_PLANE_POOL, Topology};
use drillbench_observe::{Event, EventKind, ObjectRef, Observation, Placement, Time};
use drillbench_policy::scale_down;
use drillbench_policy::view::Resources;

/// A pod bound in the current batch, placed once the batch is settled (so
/// a claim or node announced later in the same instant is known).
#[derive(Debug, Clone)]
struct Binding {
    at: Time,
    pod: String,
    node: String,
}

/// The cluster as the watches show it, and the observation built from it.
#[derive(Debug)]
pub(super) struct Observer {
    topology: Topology,
    /// By drill name.
    nodes: BTreeMap<String, NodeState>,
    /// By `namespace/name`.
    pods: BTreeMap<String, PodState>,
    names: NodeNames,
    volumes: Volumes,
    workloads: Workloads,
    budgets: Budgets,
    bindings: Vec<Binding>,
    pub(super) obs: Observation,
}

fn node_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "Node".to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    }
}

fn pod_ref(key: &str) -> ObjectRef {
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    ObjectRef {
        kind: "Pod".to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

fn pod_key(pod: &Pod) -> String {
    format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any())
}

impl Observer {
    pub(super) fn new(topology: Topology) -> Self {
        Observer {
            topology,
            nodes: BTreeMap::new(),
            pods: BTreeMap::new(),
            names: NodeNames::default(),
            volumes: Volumes::default(),
            workloads: Workloads::default(),
            budgets: Budgets::default(),
            bindings: Vec::new(),
            obs: Observation::default(),
        }
    }

    fn event(
        &mut self,
        at: Time,
        kind: EventKind,
        object: ObjectRef,
        node: Option<&str>,
        message: String,
    ) {
        let pool = node.and_then(|n| self.nodes.get(n)).map(|n| n.pool.clone());
        self.obs.events.push(Event {
            at_ms: at,
            kind,
            object,
            node: node.map(str::to_owned),
            pool,
            message,
        });
    }

    /// Takes in one change, seen at drill time `at`.
    pub(super) fn apply(&mut self, at: Time, change: Change) {
        match &change {
            Change::Applied(Object::Node(node)) => self.node_applied(at, node),
            Change::Deleted(Object::Node(node)) => {
                let name = self.names.drill_name(&node.name_any());
                self.node_deleted(at, &name);
            }
            Change::Applied(Object::Pod(pod)) => self.pod_applied(at, pod),
            Change::Deleted(Object::Pod(pod)) => self.pod_deleted(at, pod),
            Change::Applied(Object::Claim(_) | Object::Volume(_) | Object::Attachment(_))
            | Change::Deleted(Object::Claim(_) | Object::Volume(_) | Object::Attachment(_)) => {
                self.volumes
                    .take(at, &change, &self.names, &mut self.obs.strandings);
            }
            Change::Applied(Object::Budget(_)) | Change::Deleted(Object::Budget(_)) => {
                self.budgets.take(&change);
            }
            Change::Applied(
                Object::Deployment(_)
                | Object::StatefulSet(_)
                | Object::DaemonSet(_)
                | Object::Job(_),
            )
            | Change::Deleted(
                Object::Deployment(_)
                | Object::StatefulSet(_)
                | Object::DaemonSet(_)
                | Object::Job(_),
            ) => self.workloads.take(at, &change, &mut self.obs.workloads),
        }
    }

    /// A node's API name from its drill name (the two are one where the
    /// nodes are named as the drill names them).
    pub(super) fn api_name(&self, name: &str) -> String {
        self.nodes
            .get(name)
            .map_or_else(|| name.to_owned(), |n| n.api_name.clone())
    }

    fn node_applied(&mut self, at: Time, node: &k8s_openapi::api::core::v1::Node) {
        let name = self.names.learn(&node.name_any(), node.labels());
        let state = NodeState::read(node, &name, &self.topology);
        let before = self.nodes.get(&name);
        let changes = state.changes_since(before);
        self.nodes.insert(name.clone(), state);
        for (kind, message) in changes {
            self.event(at, kind, node_ref(&name), Some(&name), message);
        }
    }

    fn node_deleted(&mut self, at: Time, name: &str) {
        if !self.nodes.contains_key(name) {
            return;
        }
        self.volumes.strand(
            at,
            name,
            &self.names,
            &self.topology,
            &mut self.obs.strandings,
        );
        self.event(
            at,
            EventKind::NodeDeleted,
            node_ref(name),
            Some(name),
            "the Node was deleted".to_owned(),
        );
        self.nodes.remove(name);
    }

    /// The nodes a claim's volume is attached to, as the watches show it.
    #[cfg(test)]
    pub(super) fn claim_attachments(&self, claim: &str) -> Vec<String> {
        self.volumes.attached_to(claim, &self.names)
    }

    fn pod_applied(&mut self, at: Time, pod: &Pod) {
        let key = pod_key(pod);
        let mut state = PodState::read(pod, self.workloads.owner(pod), &self.names);
        state.first_seen = self.pods.get(&key).map_or(at, |known| known.first_seen);
        let ready = state.ready;
        let before = self.pods.insert(key.clone(), state.clone());
        let r = pod_ref(&key);
        let node = state.node.as_deref();
        if before.is_none() {
            self.event(
                at,
                EventKind::PodCreated,
                r.clone(),
                None,
                "pod created".to_owned(),
            );
        }
        let bound_before = before.as_ref().and_then(|b| b.node.clone());
        if let Some(n) = &state.node
            && bound_before.as_ref() != Some(n)
        {
            self.event(
                at,
                EventKind::PodScheduled,
                r.clone(),
                Some(n),
                format!("bound to {n}"),
            );
            self.bindings.push(Binding {
                at,
                pod: key.clone(),
                node: n.clone(),
            });
        }
        if state.deleting && !before.as_ref().is_some_and(|b| b.deleting) {
            self.event(
                at,
                EventKind::PodTerminating,
                r.clone(),
                node,
                "pod terminating".to_owned(),
            );
        }
        let was_ready = before.as_ref().is_some_and(|b| b.ready);
        if ready != was_ready && (ready || before.is_some()) {
            let kind = if ready {
                EventKind::PodReady
            } else {
                EventKind::PodNotReady
            };
            self.event(at, kind, r, node, String::new());
        }
    }

    fn pod_deleted(&mut self, at: Time, pod: &Pod) {
        let key = pod_key(pod);
        if let Some(state) = self.pods.remove(&key) {
            self.event(
                at,
                EventKind::PodDeleted,
                pod_ref(&key),
                state.node.as_deref(),
                "pod deleted".to_owned(),
            );
        }
    }

    /// Closes the changes of one instant: places the pods bound in it with
    /// their node's labels and their claims' classes as they stand now, and
    /// updates the series derived from several objects.
    pub(super) fn settle(&mut self, at: Time) {
        self.volumes.settle();
        for binding in std::mem::take(&mut self.bindings) {
            if let Some(placement) = self.placement(binding) {
                self.obs.placements.push(placement);
            }
        }
        let pods = &self.pods;
        self.workloads.settle(
            at,
            |job| {
                pods.values()
                    .filter(|p| p.ready && p.workload.as_deref() == Some(job))
                    .count() as u32
            },
            &mut self.obs.workloads,
        );
        let ready = self
            .nodes
            .values()
            .filter(|n| n.pool == CONTROL_PLANE_POOL && n.ready)
            .count() as u32;
        if self.obs.control_planes_ready.last().map(|(_, r)| *r) != Some(ready) {
            self.obs.control_planes_ready.push((at, ready));
        }
    }

    /// A binding as a placement, with the claims a StatefulSet's templates
    /// give its pod though its spec may not list them; none for a pod gone
    /// within its instant.
    fn placement(&self, binding: Binding) -> Option<Placement> {
        let pod = self.pods.get(&binding.pod)?;
        let (labels, pool) = self
            .nodes
            .get(&binding.node)
            .map(|n| (n.labels.clone(), n.pool.clone()))
            .unwrap_or_default();
        let namespace = binding.pod.split('/').next().unwrap_or_default().to_owned();
        let pod_name = binding.pod.split_once('/').map_or("", |(_, n)| n);
        let mut names = pod.claims.clone();
        if let Some(templates) = pod
            .workload
            .as_ref()
            .and_then(|w| self.workloads.claim_templates(w))
        {
            for template in templates {
                let claim = format!("{template}-{pod_name}");
                if !names.contains(&claim) {
                    names.push(claim);
                }
            }
        }
        let claims = names
            .iter()
            .map(|c| (c.clone(), self.volumes.class(&format!("{namespace}/{c}"))))
            .collect();
        let autoscaled = self.topology.pool(&pool).is_some_and(|p| p.is_autoscaled());
        Some(Placement {
            at: binding.at,
            pod: binding.pod,
            namespace,
            pod_labels: Rc::new(pod.labels.clone()),
            workload: pod.workload.clone(),
            node: binding.node,
            pool,
            autoscaled,
            node_labels: Rc::new(labels),
            claims,
        })
    }

    /// Live nodes of a pool, by name (standby nodes are in none yet).
    pub(super) fn pool_nodes(&self, pool: &str) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.pool == pool && !n.standby)
            .map(|(name, _)| name.clone())
            .collect()
    }

    pub(super) fn ready_nodes(&self, pool: &str) -> u32 {
        self.nodes
            .values()
            .filter(|n| n.pool == pool && n.ready && !n.standby)
            .count() as u32
    }

    /// Every node, by drill name.
    pub(super) fn nodes(&self) -> &BTreeMap<String, NodeState> {
        &self.nodes
    }

    /// Every pod, by `namespace/name`.
    pub(super) fn pods(&self) -> &BTreeMap<String, PodState> {
        &self.pods
    }

    /// The budgets selecting a pod: `namespace/name` and their
    /// `disruptionsAllowed`.
    pub(super) fn covering_budgets(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<(String, i32)> {
        self.budgets.covering(namespace, labels)
    }

    /// Nodes and whether they are Ready, with whether each is a control
    /// plane.
    pub(super) fn node_readiness(&self) -> Vec<(String, bool, bool)> {
        self.nodes
            .iter()
            .filter(|(_, n)| !n.standby)
            .map(|(name, n)| (name.clone(), n.pool == CONTROL_PLANE_POOL, n.ready))
            .collect()
    }

    /// Whether every workload seen has all its replicas ready.
    pub(super) fn all_workloads_ready(&self) -> bool {
        self.obs
            .workloads
            .values()
            .all(|s| s.points.last().is_none_or(|(_, r, d)| r >= d))
    }

    /// Whether one workload has all its replicas ready (an unknown one is
    /// not).
    pub(super) fn workload_ready(&self, key: &str) -> bool {
        self.obs
            .workloads
            .get(key)
            .and_then(|s| s.points.last())
            .is_some_and(|(_, r, d)| r >= d)
    }

    /// The pods a drain must evict from a node: every pod bound to it but
    /// DaemonSet pods, as `kubectl drain --ignore-daemonsets` does.
    pub(super) fn pods_to_evict(&self, node: &str) -> Vec<PodOnNode> {
        self.pods
            .iter()
            .filter(|(_, p)| p.node.as_deref() == Some(node) && !p.daemon)
            .map(|(key, p)| {
                let (namespace, name) = key.split_once('/').unwrap_or(("", key));
                PodOnNode {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    termination_grace_seconds: p.facts.termination_grace_seconds,
                }
            })
            .collect()
    }

    /// The running pods of a workload (`namespace/Kind/name`): bound, not
    /// finished, not being deleted; as `namespace/name`, in name order.
    pub(super) fn running_pods_of(&self, workload: &str) -> Vec<String> {
        self.pods
            .iter()
            .filter(|(_, p)| {
                p.workload.as_deref() == Some(workload)
                    && p.node.is_some()
                    && !p.deleting
                    && !p.finished
            })
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Whether a pod is being deleted (its termination is under way).
    pub(super) fn pod_deleting(&self, namespace: &str, name: &str) -> bool {
        self.pods
            .get(&format!("{namespace}/{name}"))
            .is_some_and(|p| p.deleting)
    }

    /// The node the cluster autoscaler would remove next from a pool, as it
    /// computes it on the observed state: the least utilised Ready,
    /// schedulable node (utilisation is the larger of the requested CPU and
    /// memory shares), the first by name among equals — the rule the
    /// simulator follows too ([`scale_down::least_utilised`]).
    pub(super) fn autoscaler_pick(&self, pool: &str) -> Option<String> {
        let utilisation = |name: &str, n: &NodeState| {
            let (cpu, memory) = self
                .pods
                .values()
                .filter(|p| p.node.as_deref() == Some(name))
                .fold((0, 0), |(c, m), p| (c + p.cpu_millis, m + p.memory));
            scale_down::utilisation(
                Resources { cpu, memory },
                Resources {
                    cpu: n.cpu_millis,
                    memory: n.memory,
                },
            )
        };
        let candidates = self
            .nodes
            .iter()
            .filter(|(_, n)| n.pool == pool && n.ready && !n.unschedulable && !n.standby)
            .map(|(name, n)| (utilisation(name, n), name.as_str()));
        scale_down::least_utilised(candidates).map(str::to_owned)
    }

    /// After an eviction the bench made was accepted and its effects were
    /// seen: every budget selecting the pod must still have the healthy
    /// pods it wants, else the eviction broke it (the Eviction API must
    /// never let that happen).
    pub(super) fn check_budgets_after_eviction(
        &mut self,
        at: Time,
        namespace: &str,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) {
        let breaches = self.budgets.breaches(at, namespace, name, labels);
        self.obs.budget_breaches.extend(breaches);
    }

    /// A pod's labels, while it is known.
    pub(super) fn pod_labels(
        &self,
        namespace: &str,
        name: &str,
    ) -> Option<BTreeMap<String, String>> {
        self.pods
            .get(&format!("{namespace}/{name}"))
            .map(|p| p.labels.clone())
    }

    pub(super) fn has_node(&self, name: &str) -> bool {
        self.nodes.contains_key(name)
    }
}
