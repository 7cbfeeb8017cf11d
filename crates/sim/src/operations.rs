//! What a drill, an operator or the autoscaler does to the simulated
//! cluster: the primitives faults are made of.

use std::rc::Rc;

use k8s_openapi::api::core::v1::{Pod, PodCondition, PodStatus};
use k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::clock::{Time, after};
use super::world::{
    NodeId, NodePhase, Owner, PodId, PodPhase, REVISION_HISTORY_LIMIT, WorkloadKind,
};
use super::{Action, SimError, Simulation, etcd_member_ref, node_ref};
use drillbench_model::duration::Duration;
use drillbench_model::k8s::disruption::{EvictionAllowed, SelectedPod, check_eviction, pdb_counts};
use drillbench_model::topology::CONTROL_PLANE_POOL;
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_observe::BudgetBreach;
use drillbench_observe::{BYPASSED_EVICTION, EventKind};
use drillbench_policy::drain::{self, Next};
use drillbench_policy::scale_down;
use drillbench_policy::view::Resources;

impl Simulation {
    /// The node of that name.
    pub fn node_id(&self, name: &str) -> Result<NodeId, SimError> {
        self.world
            .node_id(name)
            .ok_or_else(|| SimError::NotFound(format!("no node `{name}`")))
    }

    /// Names of the live nodes of a pool (`control-plane` for control
    /// planes), in name order.
    pub fn pool_nodes(&self, pool: &str) -> Vec<String> {
        let mut names: Vec<String> = self
            .world
            .nodes()
            .iter()
            .filter(|n| n.pool == pool && n.phase != NodePhase::Gone && n.server_exists)
            .map(|n| n.name.clone())
            .collect();
        names.sort();
        names
    }

    /// A seeded random live node of a pool.
    pub fn random_node_of(&mut self, pool: &str) -> Option<String> {
        let names = self.pool_nodes(pool);
        if names.is_empty() {
            return None;
        }
        let i = self.targets.index(names.len());
        Some(names[i].clone())
    }

    /// The control plane holding the stable endpoint.
    pub fn endpoint_holder(&self) -> Option<String> {
        self.cp.holder().map(|n| self.world.node(n).name.clone())
    }

    /// A live control plane other than the endpoint holder (the first by name).
    pub fn other_control_plane(&self) -> Option<String> {
        let holder = self.endpoint_holder();
        self.pool_nodes(CONTROL_PLANE_POOL).into_iter().find(|n| {
            Some(n) != holder.as_ref()
                && self
                    .world
                    .node_id(n)
                    .is_some_and(|i| self.world.node(i).server_up)
        })
    }

    /// Records a fault on the timeline and in the observation.
    pub fn mark_fault(&mut self, node: Option<NodeId>, description: &str) {
        self.obs.faults.push((self.now(), description.to_owned()));
        let object = match node {
            Some(n) => node_ref(&self.world.node(n).name),
            None => drillbench_observe::ObjectRef {
                kind: "Drill".to_owned(),
                namespace: String::new(),
                name: "fault".to_owned(),
            },
        };
        self.record(EventKind::FaultInjected, object, node, description);
    }

    /// The node's server stops (power loss): no drain, no deletion.
    pub fn crash_node(&mut self, node: NodeId) {
        if !self.world.node(node).server_up {
            return;
        }
        self.world.node_mut(node).server_up = false;
        self.server_lost(node);
    }

    /// The node's server is deleted at the cloud (optionally drained first);
    /// the cloud controller then deletes its Node.
    pub fn delete_node(&mut self, node: NodeId, drain: bool, drain_timeout: Duration) {
        if drain {
            self.world.node_mut(node).draining = true;
            self.cordon(node);
            let deadline = after(self.now(), drain_timeout);
            self.schedule(self.now(), Action::Drain(node, deadline));
        } else {
            self.delete_server(node);
        }
    }

    /// Deletes a node's server at once.
    pub(super) fn delete_server_now(&mut self, node: NodeId) {
        self.delete_server(node);
    }

    fn delete_server(&mut self, node: NodeId) {
        self.world.node_mut(node).server_exists = false;
        if self.world.node(node).server_up {
            self.world.node_mut(node).server_up = false;
            self.server_lost(node);
        }
    }

    /// What follows from a server that stops heartbeating: the node goes
    /// NotReady after the grace period; etcd loses the member's vote now.
    fn server_lost(&mut self, node: NodeId) {
        self.world.node_mut(node).server_stopped_at = Some(self.now());
        let at = after(self.now(), self.engine.timings().node_monitor_grace);
        self.schedule(at, Action::NodeUnresponsive(node));
        self.for_members_on(node, false);
        self.record_control_plane();
    }

    /// Marks a node unschedulable.
    pub fn cordon(&mut self, node: NodeId) {
        if !self.world.cordon(node) {
            return;
        }
        let name = self.world.node(node).name.clone();
        self.record(
            EventKind::NodeCordoned,
            node_ref(&name),
            Some(node),
            "node cordoned",
        );
    }

    /// One pass of a drain: evict every pod that is not a DaemonSet's; a
    /// refused eviction is retried, and a drain still blocked at the
    /// deadline gives up (the node is then deleted anyway only if it was
    /// already empty).
    pub(super) fn drain_step(&mut self, node: NodeId, deadline: Time) {
        let mut refused = 0;
        for pod in self.world.movable_pods(node) {
            if self.evict(pod).is_err() {
                refused += 1;
            }
        }
        let remaining = self.world.pods_left(node);
        let retry = self.engine.timings().eviction_retry.as_millis();
        match drain::after_pass(remaining, self.now(), Some(deadline), retry) {
            Next::Drained => {
                self.world.node_mut(node).draining = false;
                self.delete_server(node);
            }
            Next::TimedOut => {
                self.world.node_mut(node).draining = false;
                let name = self.world.node(node).name.clone();
                self.mark_fault(
                    Some(node),
                    &format!("drain of {name} timed out with {remaining} pod(s) left ({refused} eviction(s) refused); the node stays"),
                );
            }
            Next::RetryAt(at) => self.schedule(at, Action::Drain(node, deadline)),
        }
    }

    /// The eviction API: honours PodDisruptionBudgets (unless a negative
    /// control made drains bypass it); a refusal is the
    /// apiserver's 429 message.
    pub fn evict(&mut self, pod: PodId) -> Result<(), String> {
        self.refresh_pdb_status();
        let object = self.pod_object(pod);
        let covering = self.world.covering_budgets(pod);
        if self.topology.drains_bypass_budgets {
            // A negative control's drain: the pod is deleted, no budget
            // is asked, and what that costs the budgets is recorded.
            let r = self.world.pod_ref(pod);
            let node = self.world.pod(pod).node;
            self.record(EventKind::PodDeleted, r, node, BYPASSED_EVICTION);
            let was_healthy = self.world.pod(pod).phase == PodPhase::Ready;
            self.delete_pod(pod);
            self.check_budgets_after_eviction(pod, was_healthy, &covering);
            return Ok(());
        }
        let budgets: Vec<&k8s_openapi::api::policy::v1::PodDisruptionBudget> = covering
            .iter()
            .map(|&i| &self.world.pdbs()[i].object)
            .collect();
        let node = self.world.pod(pod).node;
        match check_eviction(&object, &budgets) {
            Ok(allowed) => {
                if let EvictionAllowed::WithinBudget { .. } = allowed
                    && let Some(&i) = covering.first()
                {
                    let now = self.now();
                    self.world.pdb_mut(i).disrupted.insert(pod, now);
                }
                let r = self.world.pod_ref(pod);
                self.record(
                    EventKind::PodEvicted,
                    r,
                    node,
                    &format!("evicted: {allowed}"),
                );
                let was_healthy = self.world.pod(pod).phase == PodPhase::Ready;
                self.delete_pod(pod);
                self.check_budgets_after_eviction(pod, was_healthy, &covering);
                Ok(())
            }
            Err(refusal) => {
                let r = self.world.pod_ref(pod);
                let message = format!("429 Too Many Requests: {refusal}");
                self.record(EventKind::EvictionRefused, r, node, &message);
                Err(message)
            }
        }
    }

    /// The budgets whose selector covers a pod (same namespace).
    pub(super) fn covering_budgets(&self, pod: PodId) -> Vec<usize> {
        let p = &self.world.pod(pod);
        (0..self.world.pdbs().len())
            .filter(|&i| {
                self.world.pdbs()[i]
                    .object
                    .metadata
                    .namespace
                    .as_deref()
                    .unwrap_or("default")
                    == p.namespace
                    && self.world.pdbs()[i].selector.selects(&p.template.labels)
            })
            .collect()
    }

    /// Records a breach if an eviction left a budget below what it protects.
    /// Only a pod the budget counted healthy (Ready) can take it there: a
    /// Pending pod, which the eviction API lets go without asking, was never
    /// in `currentHealthy` (the disruption controller counts Ready pods).
    fn check_budgets_after_eviction(&mut self, pod: PodId, was_healthy: bool, covering: &[usize]) {
        self.refresh_pdb_status();
        if !was_healthy {
            return;
        }
        for &i in covering {
            let status = self.world.pdbs()[i]
                .object
                .status
                .clone()
                .unwrap_or_default();
            let (healthy, desired) = (
                status.current_healthy.unwrap_or(0),
                status.desired_healthy.unwrap_or(0),
            );
            if healthy < desired {
                let key = self.world.pdbs()[i].key();
                let pod_key = self.world.pod(pod).key();
                self.obs.budget_breaches.push(BudgetBreach {
                    at: self.now(),
                    pdb: key,
                    pod: pod_key,
                    healthy,
                    desired,
                });
            }
        }
    }

    /// The disruption controller: every budget's status from the pods it
    /// selects and their controllers' scale.
    pub(super) fn refresh_pdb_status(&mut self) {
        for i in 0..self.world.pdbs().len() {
            let namespace = self.world.pdbs()[i]
                .object
                .metadata
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_owned());
            let mut selected = Vec::new();
            let mut controllers = std::collections::BTreeSet::new();
            let mut scale_known = true;
            for (p, pod) in self.world.pods().iter().enumerate() {
                if pod.phase == PodPhase::Gone
                    || pod.phase == PodPhase::Succeeded
                    || pod.namespace != namespace
                    || !self.world.pdbs()[i].selector.selects(&pod.template.labels)
                {
                    continue;
                }
                selected.push(SelectedPod {
                    ready: pod.phase == PodPhase::Ready,
                    terminating: pod.phase == PodPhase::Terminating,
                    recently_evicted: self.world.pdbs()[i].disrupted.contains_key(&p),
                    has_controller: !matches!(pod.owner, Owner::None)
                        && !matches!(pod.owner, Owner::Workload(w, _) if self.world.workload(w).kind == WorkloadKind::Pod),
                });
                match pod.owner {
                    Owner::Workload(w, _) if self.world.workload(w).kind != WorkloadKind::Pod => {
                        controllers.insert(w);
                    }
                    _ => scale_known = false,
                }
            }
            let replicas: i32 = controllers
                .iter()
                .map(|&w| self.desired_replicas(w) as i32)
                .sum();
            let counts = pdb_counts(
                self.world.pdbs()[i].budget,
                &selected,
                scale_known.then_some(replicas),
            );
            let counts = counts.unwrap_or_default();
            let generation = self.world.pdbs()[i].object.metadata.generation;
            self.world.pdb_mut(i).object.status = Some(PodDisruptionBudgetStatus {
                current_healthy: Some(counts.current_healthy),
                desired_healthy: Some(counts.desired_healthy),
                disruptions_allowed: Some(counts.disruptions_allowed),
                expected_pods: Some(counts.expected_pods),
                observed_generation: generation,
                ..Default::default()
            });
        }
    }

    /// A Pod object for the parts of the API that read one.
    pub fn pod_object(&self, pod: PodId) -> Pod {
        let p = &self.world.pod(pod);
        // A bound pod whose containers have not started (pulling, or
        // waiting for its volume to attach) is still `Pending`: "this
        // includes time a Pod spends waiting to be scheduled as well as
        // the time spent downloading container images" (Pod Lifecycle, Pod
        // phase). The eviction API lets such a pod go without asking its
        // budget (`check_eviction`), so the phase decides drains.
        let phase = match p.phase {
            PodPhase::Pending | PodPhase::Starting | PodPhase::Blocked => "Pending",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Ready | PodPhase::Terminating | PodPhase::Gone => "Running",
        };
        let ready = p.phase == PodPhase::Ready;
        Pod {
            metadata: ObjectMeta {
                name: Some(p.name.clone()),
                namespace: Some(p.namespace.clone()),
                labels: Some(p.template.labels.clone()),
                deletion_timestamp: p
                    .deleted_at
                    .filter(|_| p.phase == PodPhase::Terminating)
                    .map(super::view::timestamp),
                ..Default::default()
            },
            spec: Some(p.template.spec.clone()),
            status: Some(PodStatus {
                phase: Some(phase.to_owned()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".to_owned(),
                    status: if ready { "True" } else { "False" }.to_owned(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
        }
    }

    /// Removes a control plane from etcd, deletes its server and Node, and
    /// boots a replacement that joins as a learner and is promoted.
    pub fn recreate_control_plane(&mut self, node: NodeId, boot: Option<(Duration, Duration)>) {
        if let Some(name) = self.cp.remove_member_on(node) {
            self.record(
                EventKind::EtcdMemberRemoved,
                etcd_member_ref(&name),
                Some(node),
                "member removed before the node is replaced",
            );
        }
        self.delete_server(node);
        self.delete_node_object(
            node,
            "the operator deleted the Node of the control plane being recreated",
        );
        let (lo, hi) = boot.unwrap_or(self.engine.timings().control_plane_boot);
        let delay = self.engine.rng().duration_between(lo, hi);
        let ordinal = self.cp.take_ordinal();
        let cps = self.topology.control_planes.clone();
        let name = cps.name_pattern.name(ordinal, String::new);
        let labels = self.world.node(node).labels().clone();
        let taints = self
            .world
            .node(node)
            .taints()
            .iter()
            .filter(|t| !t.key.starts_with("node.kubernetes.io/"))
            .cloned()
            .collect();
        let capacity = (
            self.world.node(node).allocatable,
            self.world.node(node).max_pods,
        );
        let new = self.add_node(&name, CONTROL_PLANE_POOL, true, labels, taints, capacity);
        self.schedule(after(self.now(), delay), Action::NodeBooted(new));
        self.record_control_plane();
    }

    /// Sets a workload's desired replicas.
    pub fn scale_workload(&mut self, key: &str, replicas: u32) -> Result<(), SimError> {
        let w = self
            .world
            .workload_id(key)
            .ok_or_else(|| SimError::NotFound(format!("no workload `{key}`")))?;
        self.world.workload_mut(w).replicas = replicas;
        self.controllers.mark_dirty(w);
        let (ns, name) = (
            self.world.workload(w).namespace.clone(),
            self.world.workload(w).name.clone(),
        );
        let kind = WorkloadRef::parse(key).map(|w| w.kind).unwrap_or_default();
        self.record(
            EventKind::WorkloadScaled,
            drillbench_observe::ObjectRef {
                kind,
                namespace: ns,
                name,
            },
            None,
            &format!("desired replicas set to {replicas}"),
        );
        self.retry_unschedulable();
        self.settle();
        Ok(())
    }

    /// Changes the image of a Deployment's pod template (of every
    /// container, or of the named one), as `kubectl set image` does: the
    /// Deployment controller then replaces its pods within `maxSurge` and
    /// `maxUnavailable`. An unchanged template starts no rollout.
    pub fn rollout_workload(
        &mut self,
        key: &str,
        image: &str,
        container: Option<&str>,
    ) -> Result<(), SimError> {
        let w = self
            .world
            .workload_id(key)
            .ok_or_else(|| SimError::NotFound(format!("no workload `{key}`")))?;
        if self.world.workload(w).kind != WorkloadKind::Deployment {
            return Err(SimError::Unsupported(format!(
                "{key}: rollouts are modelled for Deployments only"
            )));
        }
        let old = self.world.workload(w).template.clone();
        let mut spec = old.spec.clone();
        let mut found = false;
        for c in spec.containers.iter_mut() {
            if container.is_none_or(|name| name == c.name) {
                found = true;
                c.image = Some(image.to_owned());
            }
        }
        if !found {
            return Err(SimError::NotFound(format!(
                "{key}: no container `{}`",
                container.unwrap_or_default()
            )));
        }
        if spec == old.spec {
            return Ok(());
        }
        let template = self.new_revision(w, spec, &old);
        self.world.workload_mut(w).template = template;
        self.controllers.mark_dirty(w);
        let (ns, name) = (
            self.world.workload(w).namespace.clone(),
            self.world.workload(w).name.clone(),
        );
        self.record(
            EventKind::WorkloadRolledOut,
            drillbench_observe::ObjectRef {
                kind: "Deployment".to_owned(),
                namespace: ns,
                name,
            },
            None,
            &format!("pod template changed (image {image}): rolling update started"),
        );
        self.settle();
        Ok(())
    }

    /// The template a Deployment rolls out to, as the deployment
    /// controller's `getNewReplicaSet` finds its ReplicaSet: an old one
    /// whose template is the new one is reused and takes the next
    /// revision (its old number goes to its history: a rollback), else a
    /// new one is made with the next revision. Old ReplicaSets without
    /// pods beyond [`REVISION_HISTORY_LIMIT`] are removed, oldest
    /// revision first (`cleanupDeployment`).
    fn new_revision(
        &mut self,
        w: super::world::WorkloadId,
        spec: k8s_openapi::api::core::v1::PodSpec,
        old: &super::world::Template,
    ) -> Rc<super::world::Template> {
        let now = self.now();
        let workload = self.world.workload_mut(w);
        let next = workload
            .revisions
            .iter()
            .map(|r| r.number)
            .max()
            .unwrap_or(0)
            + 1;
        let template = match workload
            .revisions
            .iter_mut()
            .find(|r| r.template.spec == spec && r.template.labels == old.labels)
        {
            Some(revision) => {
                revision.history.push(revision.number);
                revision.number = next;
                revision.template.clone()
            }
            None => {
                let template = Rc::new(old.with_spec(spec));
                let index = workload
                    .revisions
                    .iter()
                    .map(|r| r.index + 1)
                    .max()
                    .unwrap_or(0);
                workload.revisions.push(super::world::Revision {
                    number: next,
                    history: Vec::new(),
                    template: template.clone(),
                    created_at: now,
                    index,
                });
                template
            }
        };
        self.prune_revisions(w);
        template
    }

    /// Drops a Deployment's oldest ReplicaSets that have no live pods while
    /// more than [`REVISION_HISTORY_LIMIT`] old ones are kept.
    pub(crate) fn prune_revisions(&mut self, w: super::world::WorkloadId) {
        let current = self.world.workload(w).template.clone();
        let mut old: Vec<(u64, usize)> = self
            .world
            .workload(w)
            .revisions
            .iter()
            .filter(|r| !Rc::ptr_eq(&r.template, &current))
            .filter(|r| {
                !self.world.workload(w).pods.iter().any(|&p| {
                    let pod = self.world.pod(p);
                    pod.phase != PodPhase::Gone && Rc::ptr_eq(&pod.template, &r.template)
                })
            })
            .map(|r| (r.number, r.index))
            .collect();
        let kept_old = self.world.workload(w).revisions.len() - 1;
        if kept_old <= REVISION_HISTORY_LIMIT {
            return;
        }
        old.sort_unstable();
        let drop: Vec<usize> = old
            .iter()
            .take(kept_old - REVISION_HISTORY_LIMIT)
            .map(|(_, index)| *index)
            .collect();
        self.world
            .workload_mut(w)
            .revisions
            .retain(|r| !drop.contains(&r.index));
    }

    /// Whether every workload has all its desired replicas ready.
    pub fn all_workloads_ready(&self) -> bool {
        (0..self.world.workloads().len()).all(|w| self.workload_ready(w))
    }

    /// Whether one workload has all its desired replicas ready.
    pub fn workload_key_ready(&self, key: &str) -> bool {
        self.world
            .workload_id(key)
            .is_some_and(|w| self.workload_ready(w))
    }

    fn workload_ready(&self, w: super::world::WorkloadId) -> bool {
        if self.world.workload(w).template.refused_by.is_some() {
            return true;
        }
        self.controllers.is_ready(w)
    }

    /// Ready nodes of a pool.
    pub fn ready_nodes_of(&self, pool: &str) -> u32 {
        self.world
            .nodes()
            .iter()
            .filter(|n| n.pool == pool && n.is_ready())
            .count() as u32
    }

    /// Whether the node is gone or never existed.
    pub fn node_phase(&self, node: NodeId) -> NodePhase {
        self.world.node(node).phase
    }
}

impl Simulation {
    /// The node the cluster autoscaler would remove next from a pool: the
    /// least utilised Ready node not being removed, the first by name
    /// among equals (`scale_down::least_utilised`).
    pub fn autoscaler_pick(&self, pool: &str) -> Option<String> {
        let candidates = self
            .world
            .nodes()
            .iter()
            .filter(|n| n.pool == pool && n.is_ready() && !n.draining)
            .map(|n| (utilisation(n), n.name.as_str()));
        scale_down::least_utilised(candidates).map(str::to_owned)
    }
}

/// The autoscaler's utilisation of a node (`scale_down::utilisation`).
pub fn utilisation(node: &super::world::SimNode) -> f64 {
    let resources = |r: super::world::Resources| Resources {
        cpu: r.cpu,
        memory: r.memory,
    };
    scale_down::utilisation(resources(node.requested), resources(node.allocatable))
}
