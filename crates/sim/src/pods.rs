//! The pod lifecycle: a pod is created pending, bound by the scheduler
//! (its single-attach volumes attached, or the pod blocked until they
//! detach), Ready after its start delay, terminated after its grace period
//! when deleted on a running node, and gone. Claims bind as their class
//! says.

use std::rc::Rc;

use super::clock::after;
use super::scheduler::NoFit;
use super::volumes::Attach;
use super::world::{
    ClaimId, NodeId, NodePhase, Owner, PodId, PodPhase, SimPod, Template, WorkloadId, WorkloadKind,
};
use super::{Action, Simulation, claim_ref};
use drillbench_model::duration::Duration;
use drillbench_model::scenario::spec::BindingMode;
use drillbench_observe::{EventKind, Placement};

/// What makes two pending pods alike to every filter: the same template
/// (by identity) in the same namespace, for pods without claims of their
/// own or a nominated node.
type Alike = (*const Template, String);

/// The last pod found to fit nowhere, while nothing has been bound or
/// preempted since, and why it waits once that was worked out: an alike
/// pod waits for the same reason, as the cluster has not changed.
struct FitsNowhere {
    alike: Alike,
    reason: Option<Rc<str>>,
}

impl Simulation {
    /// Binds pending pods in creation order; true if any was bound.
    pub(super) fn schedule_pending(&mut self) -> bool {
        if !self.scheduler.has_pending() {
            return false;
        }
        let pending = self.scheduler.pending();
        self.scheduler.refresh(&self.world);
        let mut bound = false;
        // The last pod found to fit nowhere, while nothing has been bound
        // or preempted since: a pod alike to the filters (same template
        // and namespace, no claims of its own, no nomination) fits nowhere
        // either, and its pick would scan every node to that end again. A
        // failed pick has no effect to skip (it examines every node, so
        // the rotation ends where it began, and draws nothing): dozens of
        // waiting replicas cost one scan per pass, not one each.
        //
        // The reason it waits ("0/N nodes are available: …") is the same
        // for an alike pod too, and costs as much as the failed pick.
        let mut fits_nowhere: Option<FitsNowhere> = None;
        for pod in pending {
            if self.world.pod(pod).phase != PodPhase::Pending {
                continue;
            }
            let alike = {
                let p = self.world.pod(pod);
                (p.claims.is_empty() && p.nominated.is_none())
                    .then(|| (Rc::as_ptr(&p.template), p.namespace.clone()))
            };
            if alike.is_some() && alike.as_ref() == fits_nowhere.as_ref().map(|f| &f.alike) {
                self.wait_unschedulable(pod, &mut fits_nowhere);
                continue;
            }
            // A nominated pod is tried on its node first, as upstream
            // evaluates the nominated node before the others.
            if let Some(node) = self.world.pod(pod).nominated
                && self.scheduler.fits_without(
                    &self.world,
                    &self.volumes,
                    pod,
                    node,
                    &Default::default(),
                )
            {
                self.bind(pod, node);
                self.scheduler.after_bind(&self.world, node);
                bound = true;
                fits_nowhere = None;
                continue;
            }
            let picked = self
                .scheduler
                .pick(&self.world, &self.volumes, self.engine.rng(), pod);
            match picked {
                Ok(node) => {
                    self.bind(pod, node);
                    self.scheduler.after_bind(&self.world, node);
                    bound = true;
                    fits_nowhere = None;
                }
                Err(NoFit) => {
                    fits_nowhere = alike.map(|alike| FitsNowhere {
                        alike,
                        reason: None,
                    });
                    self.wait_unschedulable(pod, &mut fits_nowhere);
                }
            }
        }
        bound
    }

    /// A pod that fits nowhere preempts if it may, and says why it waits
    /// once per wait: the filters' reasons as the cluster was when it was
    /// found to fit nowhere (before it preempts), then why preemption did
    /// nothing, if it did not. A preemption changes the cluster, so the
    /// pod after it is picked afresh; an alike pod after a declined one
    /// meets the same cluster, and the same message.
    fn wait_unschedulable(&mut self, pod: PodId, fits_nowhere: &mut Option<FitsNowhere>) {
        let report = !self.world.pod(pod).unschedulable_reported;
        let known = fits_nowhere.as_ref().and_then(|f| f.reason.clone());
        // One pass over the nodes serves the message and the preemption.
        let diagnosis = (report && known.is_none())
            .then(|| self.scheduler.diagnose(&self.world, &self.volumes, pod));
        let filtered = diagnosis.as_ref().map(|d| d.fit_error(&self.world));
        let declined = self.preempt(pod, diagnosis.as_ref()).err();
        if declined.is_none() {
            *fits_nowhere = None;
        }
        if !report {
            return;
        }
        let reason = match (known, filtered, diagnosis) {
            (Some(known), ..) => known,
            (None, Some(mut fit), Some(diagnosis)) => {
                if let Some(declined) = declined {
                    let failure = self.preemption_failure(pod, declined, &diagnosis);
                    fit = fit.with_post_filter(failure.to_string());
                }
                let reason: Rc<str> = fit.to_string().into();
                if let Some(alike) = fits_nowhere.as_mut() {
                    alike.reason = Some(reason.clone());
                }
                reason
            }
            // Not reached: a report with no known reason diagnosed the pod.
            (None, ..) => return,
        };
        self.world.pod_mut(pod).unschedulable_reported = true;
        let r = self.world.pod_ref(pod);
        self.record(EventKind::PodUnschedulable, r, None, &reason);
    }

    /// Forgets that pods were reported unschedulable, after the cluster
    /// changed in a way that may let them fit.
    pub(super) fn retry_unschedulable(&mut self) {
        for pod in self.scheduler.pending() {
            self.world.pod_mut(pod).unschedulable_reported = false;
        }
    }

    /// Takes a pod out of the scheduling queue, and its nomination with it.
    fn unqueue(&mut self, pod: PodId) {
        let p = self.world.pod(pod);
        let (priority, created_at) = (p.template.priority.value, p.created_at);
        self.scheduler.dequeue(priority, created_at, pod);
        self.nominate(pod, None);
    }

    pub(super) fn mark_owner_dirty(&mut self, pod: PodId) {
        if let Owner::Workload(w, _) = self.world.pod(pod).owner {
            self.controllers.mark_dirty(w);
        }
    }

    pub(super) fn create_pod(&mut self, w: WorkloadId, ordinal: Option<u32>, node: Option<NodeId>) {
        let workload = self.world.workload(w);
        let name = match (&workload.kind, ordinal) {
            (_, Some(i)) => format!("{}-{i}", workload.name),
            (WorkloadKind::Pod, None) => workload.name.clone(),
            _ => format!("{}-{:05x}", workload.name, workload.next_suffix),
        };
        let namespace = workload.namespace.clone();
        let template = workload.template.clone();
        let mut claims = Vec::new();
        if let (
            WorkloadKind::StatefulSet {
                claim_templates, ..
            },
            Some(i),
        ) = (&workload.kind, ordinal)
        {
            let sts = workload.name.clone();
            for (claim, class) in claim_templates.clone() {
                claims.push(self.claim(&namespace, &format!("{claim}-{sts}-{i}"), class));
            }
        }
        for claim in template.claim_volumes.clone() {
            claims.push(self.claim(&namespace, &claim, None));
        }
        // A pod a snapshot captured starts on its node, as it runs there
        // now; a node the cluster does not have leaves it to the scheduler.
        let mut created = "pod created".to_owned();
        let node = match node {
            Some(n) => Some(n),
            None => {
                let key = self.world.workload(w).key.clone();
                match self.controllers.take_placement(&key, ordinal) {
                    Some(captured) => {
                        let found = self
                            .world
                            .node_id(&captured)
                            .filter(|&n| self.world.node(n).is_ready());
                        if found.is_none() {
                            created = format!(
                                "pod created; captured on node `{captured}`, which the \
                                 cluster does not have: scheduled normally"
                            );
                        }
                        found
                    }
                    None => None,
                }
            }
        };
        self.world.workload_mut(w).next_suffix += 1;
        let id = self.world.add_pod(SimPod {
            namespace,
            name,
            owner: Owner::Workload(w, ordinal),
            template,
            claims,
            node: None,
            phase: PodPhase::Pending,
            created_at: self.now(),
            ready_at: 0,
            unschedulable_reported: false,
            deleted_at: None,
            holds_resources: false,
            nominated: None,
        });
        let r = self.world.pod_ref(id);
        self.record(EventKind::PodCreated, r, None, &created);
        match node {
            Some(n) => self.bind(id, n),
            None => {
                let priority = self.world.pod(id).template.priority.value;
                self.scheduler.enqueue(priority, self.now(), id);
            }
        }
    }

    /// Binds a pod to a node and starts it, unless a volume blocks it.
    pub(super) fn bind(&mut self, pod: PodId, node: NodeId) {
        self.unqueue(pod);
        self.world.bind(pod, node);
        self.world.set_pod_phase(pod, PodPhase::Starting);
        let r = self.world.pod_ref(pod);
        let name = self.world.node(node).name.clone();
        self.record(
            EventKind::PodScheduled,
            r,
            Some(node),
            &format!("bound to {name}"),
        );
        self.record_placement(pod, node);
        for claim in self.world.pod(pod).claims.clone() {
            self.bind_claim_for(claim, node);
        }
        self.try_start(pod);
        self.pod_bound_to_tainted(pod, node);
    }

    pub(super) fn record_placement(&mut self, pod: PodId, node: NodeId) {
        // Labels are shared between placements rather than copied into
        // each: a template's labels never change, and a node's are reused
        // until they change.
        let node_labels = self.world.shared_labels(node);
        let p = self.world.pod(pod);
        let n = self.world.node(node);
        let workload = match p.owner {
            Owner::Workload(w, _) => Some(self.world.workload(w).key.clone()),
            Owner::None => None,
        };
        let autoscaled = self
            .topology
            .pool(&n.pool)
            .is_some_and(|pool| pool.is_autoscaled());
        let pod_labels = p
            .template
            .shared_labels
            .get_or_init(|| Rc::new(p.template.labels.clone()))
            .clone();
        let placement = Placement {
            at: self.now(),
            pod: p.key(),
            namespace: p.namespace.clone(),
            pod_labels,
            workload,
            node: n.name.clone(),
            pool: n.pool.clone(),
            autoscaled,
            node_labels,
            claims: p
                .claims
                .iter()
                .map(|&c| {
                    let claim = self.volumes.claim(c);
                    (claim.name.clone(), claim.class.clone())
                })
                .collect(),
        };
        self.obs.placements.push(placement);
    }

    /// Attaches the pod's single-attach volumes, or records why it cannot,
    /// and starts it: Ready once its volumes are attached and its images
    /// pulled, its containers started and its readiness probe's initial
    /// delay over, each drawn or taken from its template.
    pub(super) fn try_start(&mut self, pod: PodId) {
        let Some(node) = self.world.pod(pod).node else {
            return;
        };
        let now = self.now();
        let mut ready = now;
        for claim in self.world.pod(pod).claims.clone() {
            match self.volumes.attach(claim, node, now) {
                Attach::Replicated | Attach::AlreadyThere => {}
                Attach::Attached => {
                    let r = claim_ref(self.volumes.claim(claim));
                    self.record(EventKind::VolumeAttached, r, Some(node), "volume attached");
                    ready = ready.max(now + self.draw_latency(|l| l.volume_attach));
                }
                Attach::Elsewhere(other) => {
                    if self.world.pod(pod).phase != PodPhase::Blocked {
                        self.world.set_pod_phase(pod, PodPhase::Blocked);
                        let r = self.world.pod_ref(pod);
                        let message = format!(
                            "Multi-Attach error for volume {}: already exclusively attached to {}",
                            self.volumes.claim(claim).name,
                            self.world.node(other).name
                        );
                        self.record(EventKind::PodBlocked, r, Some(node), &message);
                    }
                    return;
                }
            }
        }
        self.world.set_pod_phase(pod, PodPhase::Starting);
        let template = self.world.pod(pod).template.clone();
        let images = template.images();
        let pull = self.topology.latencies.image_pull;
        let rng = self.engine.rng();
        ready = ready.max(
            self.images
                .ready_at(node, &images, now, || pull.draw(rng).as_millis()),
        );
        let start = self.draw_latency(|l| l.pod_startup) + template.start_delay;
        self.schedule(ready + start, Action::PodStarted(pod));
    }

    pub(super) fn pod_started(&mut self, pod: PodId) {
        let Some(node) = self.world.pod(pod).node else {
            return;
        };
        if self.world.pod(pod).phase != PodPhase::Starting || !self.world.node(node).is_ready() {
            return;
        }
        self.world.set_pod_phase(pod, PodPhase::Ready);
        let now = self.now();
        self.world.pod_mut(pod).ready_at = now;
        let r = self.world.pod_ref(pod);
        self.record(EventKind::PodReady, r, Some(node), "pod Ready");
        self.mark_owner_dirty(pod);
        if let Owner::Workload(w, _) = self.world.pod(pod).owner
            && let WorkloadKind::Job { run_for, .. } = self.world.workload(w).kind
        {
            self.schedule(self.now() + run_for, Action::JobPodDone(pod));
        }
    }

    /// The grace period the pod terminates in when deleted without an
    /// override: its own `terminationGracePeriodSeconds`, 30 s unset.
    pub(super) fn grace_of(&self, pod: PodId) -> Duration {
        drillbench_policy::drain::pod_grace(
            self.world
                .pod(pod)
                .template
                .spec
                .termination_grace_period_seconds,
        )
    }

    /// Deletes a pod: a pod on a healthy node terminates after its grace
    /// period; one on a lost node stays Terminating until its node is gone.
    pub(super) fn delete_pod(&mut self, pod: PodId) {
        match self.world.pod(pod).phase {
            PodPhase::Gone | PodPhase::Terminating => return,
            _ => {}
        }
        match self.world.pod(pod).node {
            None => self.pod_gone(pod),
            Some(node) => {
                self.world.start_terminating(pod);
                self.world.pod_mut(pod).deleted_at = Some(self.now());
                let r = self.world.pod_ref(pod);
                self.record(EventKind::PodTerminating, r, Some(node), "pod terminating");
                self.mark_owner_dirty(pod);
                if self.world.node(node).server_up && self.world.node(node).phase != NodePhase::Gone
                {
                    let at = after(self.now(), self.grace_of(pod));
                    self.schedule(at, Action::PodTerminated(pod));
                }
            }
        }
    }

    pub(super) fn pod_gone(&mut self, pod: PodId) {
        if self.world.pod(pod).phase == PodPhase::Gone {
            return;
        }
        self.unqueue(pod);
        self.world.release(pod);
        self.world.set_pod_phase(pod, PodPhase::Gone);
        let node = self.world.pod(pod).node;
        let r = self.world.pod_ref(pod);
        self.record(EventKind::PodDeleted, r, node, "pod deleted");
        self.mark_owner_dirty(pod);
        self.world.forget_disruption(pod);
        if let Some(node) = node
            && self.world.node(node).server_up
            && self.world.node(node).phase != NodePhase::Gone
        {
            for claim in self.world.pod(pod).claims.clone() {
                if self.volumes.attached(claim) == Some(node) {
                    let at = self.now() + self.draw_latency(|l| l.volume_detach);
                    self.schedule(at, Action::Detach(claim, node));
                }
            }
        }
    }

    pub(super) fn detach(&mut self, claim: ClaimId, node: NodeId) {
        self.volumes.detach(claim);
        let key = self.volumes.key(claim);
        let node_name = self.world.node(node).name.clone();
        let now = self.now();
        if let Some(s) = self
            .obs
            .strandings
            .iter_mut()
            .find(|s| s.claim == key && s.node == node_name && s.released.is_none())
        {
            s.released = Some(now);
        }
        let r = claim_ref(self.volumes.claim(claim));
        self.record(EventKind::VolumeDetached, r, Some(node), "volume detached");
        // Pods waiting for this volume can start now.
        let waiting: Vec<PodId> = (0..self.world.pods().len())
            .filter(|&p| {
                self.world.pod(p).phase == PodPhase::Blocked
                    && self.world.pod(p).claims.contains(&claim)
            })
            .collect();
        for pod in waiting {
            self.try_start(pod);
        }
    }

    /// The claim of that name, created if it does not exist yet; a claim
    /// created with `Immediate` binding is bound at once.
    pub(super) fn claim(&mut self, namespace: &str, name: &str, class: Option<String>) -> ClaimId {
        let (id, created) = self.volumes.get_or_create(namespace, name, class);
        if created && self.volumes.claim(id).binding == BindingMode::Immediate {
            self.volumes
                .bind_now(id, self.world.nodes(), self.engine.rng());
        }
        id
    }

    /// `WaitForFirstConsumer` binding: the volume is provisioned where its
    /// first consumer was scheduled, so it carries that node's domain.
    pub(super) fn bind_claim_for(&mut self, claim: ClaimId, node: NodeId) {
        self.volumes
            .bind_for_consumer(claim, node, self.world.node(node).labels());
    }
}
