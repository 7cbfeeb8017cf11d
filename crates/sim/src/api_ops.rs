//! What the API façade may change in the simulated cluster, expressed with
//! the simulator's own primitives and controllers: a label edit re-runs the
//! scheduler, a Node deletion goes through the node lifecycle, an eviction
//! through the disruption budgets. No Kubernetes rule is written here a
//! second time.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;

use super::backups::FailRefused;
use super::clock::after;
use super::world::{NodeId, NodePhase, Owner, Pdb, PodId, WorkloadId, WorkloadKind};
use super::{Action, Simulation, load, node_ref};
use drillbench_model::duration::Duration;
use drillbench_model::k8s::disruption::{Budget, PdbSelector};
use drillbench_model::manifest::Document;
use drillbench_model::scenario::spec::GuardSpec;
use drillbench_model::scenario::step::{NodeChange, ObjectKey, PdbBound, PdbChange};
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_observe::EventKind;

/// Why the façade's change was refused; the façade turns these into
/// Kubernetes `Status` errors.
#[derive(Debug, thiserror::Error)]
pub enum ApiOpError {
    /// The object does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The object exists already, or is in a state that forbids the change.
    #[error("{0}")]
    Conflict(String),
    /// The change is invalid, or asks for behaviour the simulator does not model.
    #[error("{0}")]
    Invalid(String),
}

/// What an applied manifest did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// A new object.
    Created,
    /// An existing object changed.
    Updated,
}

/// What an apply does with an object of a kind the simulator does not model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unmodelled {
    /// Refuse it (the API façade: the client learns it was not applied).
    Refuse,
    /// List it as not simulated (a drill's step, as its own objects are).
    Record,
}

/// How a deletion treats the objects a workload owns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the pods too (Background and Foreground alike: the simulator
    /// has no finalizers to wait on).
    Cascade,
    /// Leave the pods, ownerless.
    Orphan,
}

impl Simulation {
    /// Runs the controllers and the scheduler after an API change, as the
    /// real control loops would react to the watch event.
    fn react(&mut self) {
        self.retry_unschedulable();
        self.settle();
    }

    /// Replaces a node's labels and annotations (as an update or a patch
    /// left them). A label change moves the node to another scheduling
    /// class, so pods that did not fit before are tried again.
    pub fn set_node_metadata(
        &mut self,
        node: NodeId,
        labels: BTreeMap<String, String>,
        annotations: BTreeMap<String, String>,
    ) {
        self.world.node_mut(node).object.metadata.annotations =
            (!annotations.is_empty()).then_some(annotations);
        if !self.world.set_node_labels(node, labels) {
            return;
        }
        self.reclassify(node);
        self.daemonsets_dirty();
        self.react();
    }

    /// Replaces a node's taints; the taint-eviction controller judges the
    /// node's pods again.
    pub fn set_node_taints(&mut self, node: NodeId, taints: Vec<Taint>) {
        if self.world.node(node).taints() == taints.as_slice() {
            return;
        }
        let added: Vec<(String, String)> = taints
            .iter()
            .filter(|t| !self.world.node(node).taints().contains(t))
            .map(|t| (t.key.clone(), t.effect.clone()))
            .collect();
        let removed: Vec<(String, String)> = self
            .world
            .node(node)
            .taints()
            .iter()
            .filter(|t| !taints.contains(t))
            .map(|t| (t.key.clone(), t.effect.clone()))
            .collect();
        self.world.set_taints(node, taints);
        self.reclassify(node);
        let name = self.world.node(node).name.clone();
        for (kind, changed) in [
            (EventKind::NodeUntainted, removed),
            (EventKind::NodeTainted, added),
        ] {
            for (key, effect) in changed {
                self.record(
                    kind,
                    node_ref(&name),
                    Some(node),
                    &format!("{key}:{effect}"),
                );
            }
        }
        self.no_execute_taints_changed(node);
        self.react();
        // The evictions of pods that do not tolerate a new NoExecute taint
        // are due at once: they happen at this instant, before the next
        // request is answered, whether the clock runs or is stepped.
        self.advance_to(self.now());
    }

    /// The scheduling class of a node follows its labels and taints.
    fn reclassify(&mut self, node: NodeId) {
        let class = self.scheduler.class_for(self.world.node(node));
        self.world.node_mut(node).class = class;
    }

    /// A drill's node step, as the API write it stands for: a taint edit
    /// is a new `spec.taints`, cordon `spec.unschedulable`, a label edit new
    /// labels; the same paths the façade's writes take, so the taint-eviction
    /// controller, the scheduler and the node lifecycle react as they do
    /// there. Reactions due at once run before it returns.
    pub fn change_node(&mut self, node: NodeId, change: &NodeChange) -> Result<(), ApiOpError> {
        let n = self.world.node(node);
        if n.phase == NodePhase::Gone {
            return Err(ApiOpError::NotFound(format!(
                "nodes \"{}\" not found",
                n.name
            )));
        }
        match change {
            NodeChange::Taint { key, value, effect } => {
                let mut taints: Vec<Taint> = n
                    .taints()
                    .iter()
                    .filter(|t| !change.drops_taint(&t.key, &t.effect))
                    .cloned()
                    .collect();
                taints.push(Taint {
                    key: key.clone(),
                    value: (!value.is_empty()).then(|| value.clone()),
                    effect: effect.as_str().to_owned(),
                    time_added: None,
                });
                self.set_node_taints(node, taints);
            }
            NodeChange::Untaint { .. } => {
                let taints: Vec<Taint> = n
                    .taints()
                    .iter()
                    .filter(|t| !change.drops_taint(&t.key, &t.effect))
                    .cloned()
                    .collect();
                self.set_node_taints(node, taints);
            }
            NodeChange::Cordon => self.set_unschedulable(node, true),
            NodeChange::Uncordon => self.set_unschedulable(node, false),
            NodeChange::Label { set, remove } | NodeChange::Annotate { set, remove } => {
                let mut labels = n.labels().clone();
                let mut annotations = n.object.metadata.annotations.clone().unwrap_or_default();
                let edited = if matches!(change, NodeChange::Label { .. }) {
                    &mut labels
                } else {
                    &mut annotations
                };
                NodeChange::edit_map(edited, set, remove);
                let name = n.name.clone();
                self.record(
                    EventKind::NodeRelabelled,
                    node_ref(&name),
                    Some(node),
                    &change.to_string(),
                );
                self.set_node_metadata(node, labels, annotations);
            }
            NodeChange::DeleteObject => self.delete_node_api(node)?,
        }
        // What the change makes due at once (a NoExecute taint's evictions
        // of pods that do not tolerate it) happens at this instant, before
        // the drill's next step looks.
        self.advance_to(self.now());
        Ok(())
    }

    /// Evicts one running pod of a workload, drawn from the run's seed,
    /// through [`Simulation::evict_api`]: `Ok(pod)` when evicted,
    /// `Err((pod, 429 message))` when a budget refused.
    pub fn evict_one_of(
        &mut self,
        workload: &str,
    ) -> Result<Result<String, (String, String)>, ApiOpError> {
        let id = self
            .world
            .workload_id(workload)
            .ok_or_else(|| ApiOpError::NotFound(format!("no workload `{workload}`")))?;
        let running: Vec<PodId> = self
            .world
            .workload(id)
            .pods
            .iter()
            .copied()
            .filter(|&p| self.world.pod(p).is_active() && self.world.pod(p).node.is_some())
            .collect();
        if running.is_empty() {
            return Err(ApiOpError::NotFound(format!(
                "workload `{workload}` has no running pod to evict"
            )));
        }
        let pod = running[self.targets.index(running.len())];
        let name = self.world.pod(pod).key();
        Ok(self
            .evict_api(pod, None)
            .map(|()| name.clone())
            .map_err(|m| (name, m)))
    }

    /// Cordons or uncordons a node.
    pub fn set_unschedulable(&mut self, node: NodeId, unschedulable: bool) {
        if unschedulable {
            self.cordon(node);
        } else if self.world.node(node).unschedulable() {
            self.world.uncordon(node);
            let name = self.world.node(node).name.clone();
            self.record(
                EventKind::NodeUncordoned,
                node_ref(&name),
                Some(node),
                "node uncordoned",
            );
            self.react();
        }
    }

    /// Deletes the Node object (the server keeps running, as after
    /// `kubectl delete node`): the node lifecycle and pod GC take over.
    pub fn delete_node_api(&mut self, node: NodeId) -> Result<(), ApiOpError> {
        if self.world.node(node).phase == NodePhase::Gone {
            return Err(ApiOpError::NotFound(format!(
                "nodes \"{}\" not found",
                self.world.node(node).name
            )));
        }
        self.delete_node_object(node, "the Node was deleted through the API");
        self.settle();
        Ok(())
    }

    /// Crashes a node (the bench endpoint: Kubernetes has no verb for it).
    pub fn crash_node_api(&mut self, node: NodeId) {
        let name = self.world.node(node).name.clone();
        self.mark_fault(Some(node), &format!("crash {name} (through the bench API)"));
        self.crash_node(node);
        self.settle();
    }

    /// Deletes a pod. `grace` overrides its termination grace period
    /// (`gracePeriodSeconds`); zero removes it at once.
    pub fn delete_pod_api(&mut self, pod: PodId, grace: Option<Duration>) {
        self.delete_pod(pod);
        self.apply_grace(pod, grace);
        self.settle();
    }

    /// A deletion's `gracePeriodSeconds` shorter than the pod's own: the
    /// pod terminates that much sooner. A longer one is not modelled (the
    /// pod's own termination is already queued).
    pub(super) fn apply_grace(&mut self, pod: PodId, grace: Option<Duration>) {
        match grace {
            Some(g) if g == Duration::ZERO => self.pod_gone(pod),
            Some(g) if g < self.grace_of(pod) => {
                // The pod's own termination is still queued; whichever comes
                // first removes the pod and the other finds it gone.
                let at = after(self.now(), g);
                self.schedule(at, Action::PodTerminated(pod));
            }
            _ => {}
        }
    }

    /// The eviction subresource: the simulator's eviction API (budgets
    /// honoured); a refusal is the 429 message.
    pub fn evict_api(&mut self, pod: PodId, grace: Option<Duration>) -> Result<(), String> {
        let result = self.evict(pod);
        if result.is_ok() {
            self.apply_grace(pod, grace);
        }
        self.settle();
        result
    }

    /// Sets a workload's desired replicas (the `scale` subresource).
    pub fn set_replicas(&mut self, w: WorkloadId, replicas: u32) -> Result<(), ApiOpError> {
        let key = self.world.workload(w).key.clone();
        if self.world.workload(w).replicas == replicas {
            return Ok(());
        }
        self.scale_workload(&key, replicas)
            .map_err(|e| ApiOpError::NotFound(e.to_string()))
    }

    /// Deletes a workload: it stops reconciling, and its pods are deleted
    /// (or orphaned).
    pub fn delete_workload(&mut self, w: WorkloadId, propagation: Propagation) {
        self.world.unindex_workload(w);
        // A bare-pod workload with no replicas never acts again: the
        // deleted controller is inert whatever marks it dirty later.
        self.world.workload_mut(w).kind = WorkloadKind::Pod;
        self.world.workload_mut(w).replicas = 0;
        // A deleted CronJob's schedule fires no more.
        self.world.workload_mut(w).cron = None;
        let pods = self.world.workload(w).pods.clone();
        for pod in pods {
            match propagation {
                Propagation::Cascade => {
                    if self.world.pod(pod).is_active() {
                        self.delete_pod(pod);
                    }
                }
                Propagation::Orphan => self.world.pod_mut(pod).owner = Owner::None,
            }
        }
        self.settle();
    }

    /// Creates a workload, bare pod, claim or budget from a manifest, through
    /// the same loader (and guards) the drill's manifests went through. An
    /// existing workload may only change its replicas here.
    pub fn apply_manifest(
        &mut self,
        value: serde_json::Value,
        guards: &[GuardSpec],
    ) -> Result<Applied, ApiOpError> {
        let document = Document {
            source: "<api>".to_owned(),
            index: 0,
            line: 1,
            column: 1,
            value,
        };
        // Refused, an unmodelled kind is an error, never `None`.
        self.apply_document(document, guards, Unmodelled::Refuse)
            .map(|applied| applied.unwrap_or(Applied::Created))
    }

    /// A PriorityClass deleted through the API: pods applied afterwards
    /// that name it are refused by the Priority admission plugin, as
    /// before it existed. Workloads already loaded keep the priority they
    /// resolved (their pods' templates carry it).
    pub fn delete_priority_class(&mut self, name: &str) {
        self.priority_classes = self.priority_classes.without(name);
    }

    /// A drill's `apply` step: the file's objects applied in its order, as
    /// through the API, admitted by the drill's guards; an object of a kind
    /// the simulator does not model is listed as not simulated, as the
    /// drill's own are, not refused.
    pub fn apply_documents(
        &mut self,
        documents: &[Document],
        guards: &[GuardSpec],
    ) -> Result<(), ApiOpError> {
        for document in documents {
            self.apply_document(document.clone(), guards, Unmodelled::Record)?;
        }
        Ok(())
    }

    /// A drill's `delete` step: a workload or bare pod is deleted with its
    /// pods (background propagation, each pod with its grace period), a
    /// budget is removed and evictions are no longer judged by it.
    pub fn delete_object(&mut self, object: &ObjectKey) -> Result<(), ApiOpError> {
        let not_found = || {
            ApiOpError::NotFound(format!(
                "no {} `{}/{}`",
                object.kind, object.namespace, object.name
            ))
        };
        if object.kind == "PodDisruptionBudget" {
            let index = self
                .pdb_index(&object.namespace, &object.name)
                .ok_or_else(not_found)?;
            self.delete_pdb(index);
            self.react();
            return Ok(());
        }
        let key = WorkloadRef::new(&object.namespace, &object.kind, &object.name).to_string();
        let w = self.workload_id(&key).ok_or_else(not_found)?;
        self.delete_workload(w, Propagation::Cascade);
        Ok(())
    }

    /// Applies one object; `None` when its kind is not modelled and
    /// `unmodelled` says to record it.
    fn apply_document(
        &mut self,
        document: Document,
        guards: &[GuardSpec],
        unmodelled: Unmodelled,
    ) -> Result<Option<Applied>, ApiOpError> {
        let kind = document.kind().unwrap_or_default().to_owned();
        let name = document.name().unwrap_or_default().to_owned();
        if name.is_empty() {
            return Err(ApiOpError::Invalid(format!(
                "{kind}: metadata.name: Required value"
            )));
        }
        let policies = self.policies.clone();
        // The object's own claims resolve as soon as it exists, as the
        // claims of the drill's StatefulSets do at load.
        let cluster = policies.2.with(
            std::slice::from_ref(&document),
            self.volumes.default_class(),
        );
        let loaded = load::load_admitted(
            std::slice::from_ref(&document),
            guards,
            Some(&load::Policies {
                policies: &policies.0,
                digest: policies.1,
                cluster: &cluster,
            }),
            self.volumes.default_class(),
            &self.priority_classes,
        )
        .map_err(|e| ApiOpError::Invalid(e.to_string()))?;
        self.priority_classes = loaded.priority_classes.clone();
        // A class may be what a workload's pods were refused for: its
        // controller tries again.
        for w in 0..self.world.workloads().len() {
            if self.world.workload(w).template.waits_for_class.is_some() {
                self.controllers.mark_dirty(w);
            }
        }
        if let Some(not) = loaded.not_simulated.first() {
            if unmodelled == Unmodelled::Record {
                self.obs.not_simulated.extend(loaded.not_simulated);
                return Ok(None);
            }
            return Err(ApiOpError::Invalid(format!(
                "the simulator does not model {} objects",
                not.kind
            )));
        }
        let mut updated = false;
        let mut fresh = load::Loaded {
            admissions: loaded.admissions,
            namespaces: loaded.namespaces,
            ..Default::default()
        };
        for w in loaded.workloads {
            let key = WorkloadRef::new(&w.namespace, w.kind_name, &w.name).to_string();
            match self.world.workload_id(&key) {
                Some(id) => {
                    if self.world.workload(id).template.spec != w.template.spec
                        || self.world.workload(id).template.labels != w.template.labels
                    {
                        return Err(ApiOpError::Invalid(format!(
                            "{key}: changing the pod template of an existing workload (a rollout) is not modelled; change replicas, or delete and re-create it"
                        )));
                    }
                    if self.world.workload(id).replicas != w.replicas {
                        self.set_replicas(id, w.replicas)?;
                    }
                    updated = true;
                }
                None => fresh.workloads.push(w),
            }
        }
        for claim in loaded.claims {
            if self
                .volumes
                .claim_id(&claim.namespace, &claim.name)
                .is_some()
            {
                updated = true;
            } else {
                fresh.claims.push(claim);
            }
        }
        for (object, budget, selector) in loaded.pdbs {
            let key = (
                object
                    .metadata
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".to_owned()),
                object.metadata.name.clone().unwrap_or_default(),
            );
            match self.pdb_index(&key.0, &key.1) {
                Some(i) => {
                    self.set_pdb(i, object)?;
                    updated = true;
                }
                None => fresh.pdbs.push((object, budget, selector)),
            }
        }
        let not_simulated = std::mem::take(&mut self.obs.not_simulated);
        self.apply(fresh);
        self.obs.not_simulated = not_simulated;
        self.refresh_pdb_status();
        self.react();
        Ok(Some(if updated {
            Applied::Updated
        } else {
            Applied::Created
        }))
    }

    /// The budget of that namespace and name.
    pub fn pdb_index(&self, namespace: &str, name: &str) -> Option<usize> {
        self.world.pdb_index(namespace, name)
    }

    /// Replaces a budget's spec (and metadata); its status is recomputed.
    pub fn set_pdb(&mut self, index: usize, object: PodDisruptionBudget) -> Result<(), ApiOpError> {
        let spec = object.spec.clone().unwrap_or_default();
        let budget = Budget::from_spec(&spec).map_err(|e| ApiOpError::Invalid(e.to_string()))?;
        let selector =
            PdbSelector::from_spec(&spec).map_err(|e| ApiOpError::Invalid(e.to_string()))?;
        let disrupted = std::mem::take(&mut self.world.pdb_mut(index).disrupted);
        let mut object = object;
        object.status = None;
        object.metadata.generation = Some(object.metadata.generation.unwrap_or(1) + 1);
        *self.world.pdb_mut(index) = Pdb {
            object,
            budget,
            selector,
            disrupted,
        };
        self.refresh_pdb_status();
        Ok(())
    }

    /// A drill's budget step: the budget's bound replaced as a merge patch
    /// of its spec would (the other field cleared, the selector kept), so
    /// the disruption controller judges later evictions by the new bound.
    pub fn change_pdb(&mut self, change: &PdbChange) -> Result<(), ApiOpError> {
        let index = self
            .pdb_index(&change.namespace, &change.name)
            .ok_or_else(|| {
                ApiOpError::NotFound(format!(
                    "no PodDisruptionBudget `{}/{}`",
                    change.namespace, change.name
                ))
            })?;
        let mut object = self.world.pdbs()[index].object.clone();
        let spec = object.spec.get_or_insert_with(Default::default);
        let (min, max) = match change.bound {
            PdbBound::MinAvailable(v) => (Some(v.to_int_or_string()), None),
            PdbBound::MaxUnavailable(v) => (None, Some(v.to_int_or_string())),
        };
        spec.min_available = min;
        spec.max_unavailable = max;
        self.set_pdb(index, object)?;
        self.react();
        Ok(())
    }

    /// Deletes a budget.
    pub fn delete_pdb(&mut self, index: usize) {
        self.world.remove_pdb(index);
    }

    /// Recomputes every budget's status (the disruption controller), so a
    /// read shows what an eviction would be judged against.
    pub fn refresh_budgets(&mut self) {
        self.refresh_pdb_status();
    }

    /// Marks the newest finished backup of a schedule Failed (the bench
    /// endpoint: a backup failure has no Kubernetes verb). A backup still in
    /// progress is refused: its scheduled finish would overwrite the phase.
    pub fn fail_backup(&mut self, schedule: &str) -> Result<String, ApiOpError> {
        let name = match self.backups.fail_newest(schedule, self.now()) {
            Ok(name) => name,
            Err(FailRefused::NoBackup) => {
                return Err(ApiOpError::NotFound(format!(
                    "no backup of schedule `{schedule}`"
                )));
            }
            Err(FailRefused::InProgress(name)) => {
                return Err(ApiOpError::Conflict(format!(
                    "backup {name} is still in progress; advance until it finishes"
                )));
            }
        };
        self.mark_fault(
            None,
            &format!("backup {name} failed (through the bench API)"),
        );
        self.record(
            EventKind::BackupFinished,
            super::backup_ref(&name),
            None,
            &format!("backup {name} finished: Failed"),
        );
        Ok(name)
    }
}
