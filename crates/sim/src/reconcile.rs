//! The controllers: each changed workload is brought to its desired pods
//! (Deployments within their rollout strategy, StatefulSets one ordinal at
//! a time or all at once by their pod management policy, DaemonSets on every node they fit, Jobs to their completions,
//! CronJobs at each scheduled time), what each has ready is recorded, and
//! Velero starts and finishes the scheduled backups.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use super::backups::backup_name;
use super::clock::{EPOCH_SECONDS, Time, after};
use super::view::uid;
use super::world::{
    Concurrency, NodeId, NodePhase, Owner, PodId, PodPhase, SimNode, SimPod, Template, WorkloadId,
    WorkloadKind,
};
use super::{Action, Simulation, backup_ref};
use drillbench_model::scenario::spec::BackupPhase;
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_observe::{DataLoss, EventKind};
use drillbench_policy::replica_deletion::{self, Candidate, POD_DELETION_COST, PhaseRank};

impl Simulation {
    /// Records what each workload has ready and the spans during which
    /// each writer acknowledges writes.
    ///
    /// A Job (a CronJob's run too) has no replicas to keep ready: it runs
    /// pods until enough succeed ("Jobs",
    /// <https://kubernetes.io/docs/concepts/workloads/controllers/job/>).
    /// It counts as whole once it completed, and while it runs as long as
    /// none of its pods is stuck: one the scheduler could not place, or one
    /// whose volume is attached elsewhere. A CronJob between runs is whole;
    /// a run that cannot start is the missed run that matters.
    ///
    /// Only the workloads the world saw change since the last record are
    /// read: the others' counts are what was recorded (an instant costs
    /// what changed in it, not every workload's pods).
    pub(super) fn record_workloads(&mut self) {
        let now = self.now();
        for id in self.world.take_changed_workloads() {
            let desired = self.desired_replicas(id);
            let w = self.world.workload(id);
            let ready = self.world.ready_pods(id);
            let ready = if matches!(w.kind, WorkloadKind::Job { .. }) {
                let stuck = w.pods.iter().any(|&p| {
                    let pod = self.world.pod(p);
                    pod.phase == PodPhase::Blocked
                        || (pod.phase == PodPhase::Pending && pod.unschedulable_reported)
                });
                if w.succeeded >= desired || !stuck {
                    desired
                } else {
                    ready.min(desired)
                }
            } else {
                ready
            };
            if w.template.writes_every.is_some() {
                self.controllers.track_writer(id, now, ready > 0);
            }
            if self.controllers.record_ready(id, ready, desired) {
                let key = self.world.workload(id).key.clone();
                self.obs
                    .workloads
                    .entry(key)
                    .or_default()
                    .points
                    .push((now, ready, desired));
            }
        }
    }

    /// What each writer loses when its data, lost at `lost_at`, is restored
    /// to `captured` ([`Controllers::data_lost`]).
    ///
    /// [`Controllers::data_lost`]: super::controllers::Controllers::data_lost
    pub(super) fn data_lost(&self, lost_at: Time, captured: i64, schedule: &str) -> Vec<DataLoss> {
        self.controllers
            .data_lost(lost_at, captured, schedule, |w| {
                let w = self.world.workload(w);
                (w.key.as_str(), w.template.writes_every)
            })
    }

    pub(super) fn desired_replicas(&self, id: WorkloadId) -> u32 {
        let w = self.world.workload(id);
        match &w.kind {
            WorkloadKind::DaemonSet => self
                .world
                .nodes()
                .iter()
                .filter(|n| {
                    n.phase != NodePhase::Gone
                        && n.server_exists
                        && self.daemon_fits(&w.template, n)
                })
                .count() as u32,
            WorkloadKind::Job { completions, .. } => *completions,
            _ => w.replicas,
        }
    }

    pub(super) fn daemon_fits(&self, template: &Template, node: &SimNode) -> bool {
        template.required.matches(&node.object)
            && drillbench_model::k8s::taints::scheduling_blocker(
                node.taints(),
                &template.tolerations,
            )
            .is_none()
    }

    // ----- controllers -----

    /// Brings every changed workload to its desired pods; true if it created
    /// or deleted any.
    pub(super) fn reconcile_workloads(&mut self) -> bool {
        let dirty: Vec<WorkloadId> = self.controllers.take_dirty();
        let mut changed = false;
        for w in dirty {
            if self.world.workload(w).template.refused_by.is_some() || !self.admit_waiting_class(w)
            {
                continue;
            }
            changed |= match self.world.workload(w).kind.clone() {
                WorkloadKind::Deployment => self.reconcile_deployment(w),
                WorkloadKind::ReplicaSet | WorkloadKind::Pod => self.reconcile_replicas(w),
                WorkloadKind::StatefulSet { .. } => self.reconcile_statefulset(w),
                WorkloadKind::DaemonSet => self.reconcile_daemonset(w),
                WorkloadKind::Job { completions, .. } => self.reconcile_job(w, completions),
            };
        }
        changed
    }

    /// Whether the workload's pods may be created as far as their
    /// PriorityClass goes. A template waiting for its class takes the
    /// class's priority once it exists; until then the controller's
    /// attempt is refused ([`Simulation::pod_refusal`]).
    fn admit_waiting_class(&mut self, w: WorkloadId) -> bool {
        let template = self.world.workload(w).template.clone();
        if template.waits_for_class.is_none() {
            return true;
        }
        if let Some(message) = self.pod_refusal(w) {
            let workload = self.world.workload(w);
            let object = drillbench_observe::ObjectRef {
                kind: WorkloadRef::parse(&workload.key)
                    .map(|r| r.kind)
                    .unwrap_or_default(),
                namespace: workload.namespace.clone(),
                name: workload.name.clone(),
            };
            self.record(EventKind::AdmissionRefused, object, None, &message);
            return false;
        }
        let mut admitted = template.with_spec(template.spec.clone());
        admitted.priority = self
            .priority_classes
            .resolve(&template.spec)
            .unwrap_or(template.priority);
        admitted.waits_for_class = None;
        self.world.replace_template(w, &template, Rc::new(admitted));
        true
    }

    /// Why the API server refuses each pod the workload's controller
    /// tries while the PriorityClass they name is missing, as the
    /// Priority admission plugin words it for the name the controller
    /// asks for (a StatefulSet's first ordinal, the others'
    /// `generateName`): "pods \"web-\" is forbidden: no PriorityClass with
    /// name … was found".
    pub(super) fn pod_refusal(&self, w: WorkloadId) -> Option<String> {
        let workload = self.world.workload(w);
        workload.template.waits_for_class.as_ref()?;
        let refusal = self
            .priority_classes
            .resolve(&workload.template.spec)
            .err()?;
        let pod = match workload.kind {
            WorkloadKind::StatefulSet { .. } => format!("{}-0", workload.name),
            _ => format!("{}-", workload.name),
        };
        Some(format!("pods \"{pod}\" is forbidden: {refusal}"))
    }

    pub(super) fn reconcile_replicas(&mut self, w: WorkloadId) -> bool {
        let active = self.world.active_count(w);
        let want = self.world.workload(w).replicas as usize;
        if self.world.workload(w).kind == WorkloadKind::Pod {
            // A bare pod is never replaced.
            if self.world.workload(w).pods.is_empty() && want > 0 {
                self.create_pod(w, None, None);
                return true;
            }
            return false;
        }
        if active < want {
            for _ in active..want {
                self.create_pod(w, None, None);
            }
            return true;
        }
        if active > want {
            let ranked = self.scale_down_order(self.world.active_pods(w));
            for &pod in ranked.iter().take(ranked.len() - want) {
                self.delete_pod(pod);
            }
            return true;
        }
        false
    }

    /// A Deployment: its pods made from an older template (the old
    /// ReplicaSets) are replaced by pods of the current one as its strategy
    /// allows; without old pods it is a ReplicaSet.
    pub(super) fn reconcile_deployment(&mut self, w: WorkloadId) -> bool {
        let current = self.world.workload(w).template.clone();
        let is_old = |p: &SimPod| !Rc::ptr_eq(&p.template, &current);
        // The common case, no rollout under way (no pod left of another
        // template), costs no more than a ReplicaSet's reconcile.
        if !self.world.tally(w).has_live_other_than(&current) {
            return self.reconcile_replicas(w);
        }
        let (old, new): (Vec<PodId>, Vec<PodId>) = self
            .world
            .active_pods(w)
            .into_iter()
            .partition(|&p| is_old(self.world.pod(p)));
        let replicas = self.world.workload(w).replicas;
        let Some((surge, unavailable)) = self.world.workload(w).strategy.fenceposts(replicas)
        else {
            // Recreate: every old pod goes, and new ones come only once
            // none is left, not even terminating.
            if !old.is_empty() {
                for pod in old {
                    self.delete_pod(pod);
                }
                return true;
            }
            let lingering =
                self.world.workload(w).pods.iter().any(|&p| {
                    self.world.pod(p).phase != PodPhase::Gone && is_old(self.world.pod(p))
                });
            return !lingering && self.reconcile_replicas(w);
        };
        if old.is_empty() {
            return self.reconcile_replicas(w);
        }
        let mut changed = false;
        // The new ReplicaSet grows while the total stays within
        // replicas + maxSurge (NewRSNewReplicas), or shrinks to replicas.
        let all = old.len() + new.len();
        let max_total = (replicas + surge) as usize;
        let mut new_count = new.len();
        if new_count < replicas as usize && all < max_total {
            let add = (max_total - all).min(replicas as usize - new_count);
            for _ in 0..add {
                self.create_pod(w, None, None);
            }
            new_count += add;
            changed = true;
        } else if new_count > replicas as usize {
            for &pod in self
                .scale_down_order(new)
                .iter()
                .take(new_count - replicas as usize)
            {
                self.delete_pod(pod);
            }
            new_count = replicas as usize;
            changed = true;
        }
        // Old pods go while at least replicas - maxUnavailable stay
        // available (reconcileOldReplicaSets): first those that are not
        // Ready (they cost no availability), then Ready ones.
        let min_available = replicas.saturating_sub(unavailable) as i64;
        let new_ready = self
            .world
            .workload(w)
            .pods
            .iter()
            .filter(|&&p| self.world.pod(p).phase == PodPhase::Ready && !is_old(self.world.pod(p)))
            .count() as i64;
        let all = (old.len() + new_count) as i64;
        let new_unavailable = new_count as i64 - new_ready;
        let mut max_scaled_down = all - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return changed;
        }
        let ranked = self.scale_down_order(old);
        let (unhealthy, healthy): (Vec<PodId>, Vec<PodId>) = ranked
            .into_iter()
            .partition(|&p| self.world.pod(p).phase != PodPhase::Ready);
        for &pod in &unhealthy {
            if max_scaled_down == 0 {
                break;
            }
            self.delete_pod(pod);
            max_scaled_down -= 1;
            changed = true;
        }
        let available = healthy.len() as i64 + new_ready;
        let scale_down = (available - min_available).min(healthy.len() as i64);
        for &pod in healthy.iter().take(scale_down.max(0) as usize) {
            self.delete_pod(pod);
            changed = true;
        }
        changed
    }

    /// Pods in the order the ReplicaSet controller deletes them
    /// ([`replica_deletion::deletion_order`]); a pod's colocation rank
    /// counts the active pods of its workload (every revision) on its node.
    pub(super) fn scale_down_order(&self, pods: Vec<PodId>) -> Vec<PodId> {
        let mut on_node: BTreeMap<NodeId, u32> = BTreeMap::new();
        if let Some(&first) = pods.first()
            && let Owner::Workload(w, _) = self.world.pod(first).owner
        {
            for &p in &self.world.workload(w).pods {
                let pod = self.world.pod(p);
                // `IsPodActive`: not finished, no deletionTimestamp.
                if pod.is_active()
                    && pod.deleted_at.is_none()
                    && let Some(node) = pod.node
                {
                    *on_node.entry(node).or_default() += 1;
                }
            }
        }
        let candidates: Vec<Candidate> = pods
            .iter()
            .map(|&p| {
                let pod = self.world.pod(p);
                // The node lifecycle controller marks a pod not Ready once
                // its node is (`MarkPodsNotReady`); its phase stays Running.
                let ready = pod.phase == PodPhase::Ready
                    && pod.node.is_some_and(|n| self.world.node(n).is_ready());
                Candidate {
                    assigned: pod.node.is_some(),
                    phase: if pod.phase == PodPhase::Ready {
                        PhaseRank::Running
                    } else {
                        PhaseRank::Pending
                    },
                    ready_since: ready.then_some(pod.ready_at),
                    deletion_cost: replica_deletion::deletion_cost(
                        pod.template
                            .annotations
                            .get(POD_DELETION_COST)
                            .map(String::as_str),
                    ),
                    colocated: pod
                        .node
                        .map_or(0, |n| on_node.get(&n).copied().unwrap_or(0)),
                    restarts: 0,
                    created: pod.created_at,
                    uid: uid(2, p),
                }
            })
            .collect();
        replica_deletion::deletion_order(&candidates, self.now())
            .into_iter()
            .map(|i| pods[i])
            .collect()
    }

    /// One pod per ordinal, at most: an ordinal whose pod still exists (even
    /// Terminating on a lost node) is not replaced until that pod is gone.
    /// Pods are created in order, each after the previous is Ready.
    /// A StatefulSet's controller, as the StatefulSet documentation's "Pod
    /// Management Policies" describes it: `OrderedReady` creates ordinal
    /// `i` only once every lower one is Running and Ready, and removes the
    /// highest surplus pod only once the one above it is gone; `Parallel`
    /// creates every missing pod and deletes every surplus one at once.
    pub(super) fn reconcile_statefulset(&mut self, w: WorkloadId) -> bool {
        let want = self.world.workload(w).replicas;
        let parallel = matches!(
            self.world.workload(w).kind,
            WorkloadKind::StatefulSet { parallel: true, .. }
        );
        let mut by_ordinal: BTreeMap<u32, PodId> = BTreeMap::new();
        for &p in &self.world.workload(w).pods {
            if let Owner::Workload(_, Some(i)) = self.world.pod(p).owner
                && self.world.pod(p).phase != PodPhase::Gone
            {
                by_ordinal.insert(i, p);
            }
        }
        if parallel {
            let missing: Vec<u32> = (0..want).filter(|i| !by_ordinal.contains_key(i)).collect();
            let surplus: Vec<PodId> = by_ordinal
                .range(want..)
                .map(|(_, &p)| p)
                .filter(|&p| self.world.pod(p).is_active())
                .collect();
            for &i in &missing {
                self.create_pod(w, Some(i), None);
            }
            for &p in &surplus {
                self.delete_pod(p);
            }
            return !missing.is_empty() || !surplus.is_empty();
        }
        for i in 0..want {
            match by_ordinal.get(&i) {
                Some(&p) if self.world.pod(p).phase == PodPhase::Ready => continue,
                Some(_) => return false,
                None => {
                    self.create_pod(w, Some(i), None);
                    return true;
                }
            }
        }
        // Scale down from the highest ordinal.
        if let Some((&i, &p)) = by_ordinal.iter().next_back()
            && i >= want
            && self.world.pod(p).is_active()
        {
            self.delete_pod(p);
            return true;
        }
        false
    }

    pub(super) fn reconcile_daemonset(&mut self, w: WorkloadId) -> bool {
        let mut changed = false;
        let covered: BTreeSet<NodeId> = self
            .world
            .workload(w)
            .pods
            .iter()
            .filter(|&&p| self.world.pod(p).phase != PodPhase::Gone)
            .filter_map(|&p| self.world.pod(p).node)
            .collect();
        let template = self.world.workload(w).template.clone();
        let targets: Vec<NodeId> = (0..self.world.nodes().len())
            .filter(|&n| {
                let node = &self.world.node(n);
                node.is_ready() && !covered.contains(&n) && self.daemon_fits(&template, node)
            })
            .collect();
        for node in targets {
            self.create_pod(w, None, Some(node));
            changed = true;
        }
        changed
    }

    pub(super) fn reconcile_job(&mut self, w: WorkloadId, completions: u32) -> bool {
        let active = self.world.active_count(w) as u32;
        let done = self.world.workload(w).succeeded;
        let parallel = self.world.workload(w).replicas.max(1);
        let remaining = completions.saturating_sub(done);
        let want = remaining.min(parallel);
        if active < want {
            for _ in active..want {
                self.create_pod(w, None, None);
            }
            return true;
        }
        false
    }

    /// Queues a CronJob's next run: the first scheduled time after now.
    pub(super) fn schedule_cron(&mut self, w: WorkloadId) {
        let Some(cron) = self.world.workload(w).cron else {
            return;
        };
        let now = EPOCH_SECONDS + (self.now() / 1000) as i64;
        if let Some(next) = cron.schedule.next_after(now) {
            self.schedule(((next - EPOCH_SECONDS) * 1000) as Time, Action::CronFire(w));
        }
    }

    /// A CronJob's scheduled time: a new run of its Job starts, unless it
    /// is suspended or its policy says otherwise while a run is active.
    pub(super) fn cron_fire(&mut self, w: WorkloadId) {
        self.schedule_cron(w);
        let Some(cron) = self.world.workload(w).cron else {
            return;
        };
        if cron.suspend {
            return;
        }
        let active = self.world.active_pods(w);
        if !active.is_empty() {
            match cron.concurrency {
                Concurrency::Allow => {}
                Concurrency::Forbid => return,
                Concurrency::Replace => {
                    for pod in active {
                        self.delete_pod(pod);
                    }
                }
            }
        }
        self.world.workload_mut(w).succeeded = 0;
        self.controllers.mark_dirty(w);
    }

    // ----- backups -----

    /// Each schedule's history before the drill, and its next start.
    pub(super) fn start_backups(&mut self) {
        for (index, schedule) in self.topology.backups.clone().iter().enumerate() {
            if let Some(next) = self.backups.seed_history(schedule) {
                self.schedule(next, Action::BackupStart(index));
            }
        }
    }

    /// A scheduled backup starts; whether it will fail is drawn now.
    pub(super) fn backup_start(&mut self, index: usize) {
        let Some(schedule) = self.topology.backups.get(index).cloned() else {
            return;
        };
        let name = backup_name(&schedule.schedule, self.now() as i64);
        let backup = self.backups.start(&name, &schedule.schedule, self.now());
        self.record(
            EventKind::BackupStarted,
            backup_ref(&name),
            None,
            "scheduled backup started",
        );
        let phase = if self.engine.rng().chance(schedule.failure_probability) {
            BackupPhase::PartiallyFailed
        } else {
            BackupPhase::Completed
        };
        self.schedule(
            after(self.now(), schedule.duration),
            Action::BackupFinish(backup, phase),
        );
        self.schedule(
            after(self.now(), schedule.every),
            Action::BackupStart(index),
        );
    }

    /// A backup finishes in the phase drawn when it started.
    pub(super) fn backup_finish(&mut self, index: usize, phase: BackupPhase) {
        let name = self.backups.finish(index, self.now(), phase);
        let message = format!("backup {name} finished: {phase:?}");
        self.record(EventKind::BackupFinished, backup_ref(&name), None, &message);
    }
}
