//! The long faults: a pool removed from the autoscaler's configuration, a
//! rolling upgrade, a full rebuild along a recovery runbook, and one
//! namespace lost and restored from a backup taken at the fault.
//!
//! Each is driven from here against the simulation's own primitives (cordon,
//! the eviction API, server loss, the clock), so they obey the same rules
//! as the shorter faults: a drain never forces, a control plane's etcd
//! member is away while it reboots, a rebuild restores only what a usable
//! backup captured.

use std::collections::BTreeMap;

use super::backups::backup_name;
use super::clock::{Time, after};
use super::world::{NodeId, NodePhase, PodPhase, WorkloadKind};
use super::{Action, Simulation, node_ref};
use drillbench_model::duration::Duration;
use drillbench_model::scenario::spec::{BackupPhase, DurationDistribution, RecoverySpec};
use drillbench_model::topology::CONTROL_PLANE_POOL;
use drillbench_observe::EventKind;
use drillbench_policy::drain::{self, Next};

/// How a rolling upgrade ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeOutcome {
    /// Nodes upgraded (static) or recycled (autoscaler), in order.
    pub done: Vec<String>,
    /// The drain that did not finish in time, with why: the upgrade stopped there.
    pub blocked: Option<String>,
}

/// How a recovery runbook ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryOutcome {
    /// When every step had finished, if every step did.
    pub finished: Option<Time>,
    /// How long the runbook would take if every manual step were instant:
    /// the automated part of the recovery.
    pub automated: Time,
    /// The step that exhausted its attempts, if one did.
    pub failed_step: Option<String>,
    /// When the runbook finished or gave up.
    pub until: Time,
}

/// How long the upgrade waits for the cluster to settle after a node is
/// back before it takes the next one (KSail waits for node health; this
/// also lets displaced pods come back).
const SETTLE_BOUND: Duration = Duration::from_mins(10);

impl Simulation {
    /// A pool disappears from the autoscaler's configuration while its nodes
    /// keep running: it no longer scales up or down, yet every node of it
    /// still counts toward `maxNodesTotal`. Each such node is recorded as
    /// stranded; [`Simulation::prune_stranded_nodes`] forgets those that were
    /// later drained and deleted.
    pub fn remove_pool(&mut self, pool: &str) -> Result<(), super::SimError> {
        let Some(index) = self.topology.pools.iter().position(|p| p.name == pool) else {
            return Err(super::SimError::NotFound(format!("no pool `{pool}`")));
        };
        self.topology.pools.remove(index);
        self.controllers.remove_pool_template(pool);
        for name in self.pool_nodes(pool) {
            let id = self.node_id(&name)?;
            self.obs.stranded_nodes.push((self.now(), name.clone()));
            self.record(
                EventKind::FaultInjected,
                node_ref(&name),
                Some(id),
                &format!("pool `{pool}` is gone from the autoscaler's configuration; the node keeps running, unmanaged"),
            );
        }
        Ok(())
    }

    /// A lost static node is provisioned again under its name: once its
    /// server has booted (the `nodeBoot` latency) it runs, the Node is
    /// Ready, pods stuck Terminating on it are gone and its volumes can
    /// detach. A node whose Node object is already gone is left alone (the
    /// cloud deleted it; nothing to replace in place).
    pub fn replace_node(&mut self, node: NodeId) {
        if self.world.node(node).server_up {
            return;
        }
        let at = self.now() + self.draw_latency(|l| l.node_boot);
        self.schedule(at, Action::NodeReplaced(node));
    }

    /// The replacement server of a lost node has booted; a node whose
    /// server came back another way meanwhile is left as it is.
    pub(super) fn replacement_booted(&mut self, node: NodeId) {
        if self.world.node(node).server_up {
            return;
        }
        self.server_back(node);
    }

    /// Keeps only stranded nodes whose servers still exist: draining and
    /// deleting a stranded node is the remedy the drill expects.
    pub fn prune_stranded_nodes(&mut self) {
        let alive: BTreeMap<String, bool> = self
            .world
            .nodes()
            .iter()
            .map(|n| {
                (
                    n.name.clone(),
                    n.server_exists && n.phase != NodePhase::Gone,
                )
            })
            .collect();
        self.obs
            .stranded_nodes
            .retain(|(_, name)| alive.get(name).copied().unwrap_or(false));
    }

    /// A Talos/Kubernetes rolling upgrade, as KSail performs it: static
    /// workers one at a time, then control planes one at a time (each only
    /// once every etcd member is healthy, so quorum holds while it reboots):
    /// cordon, drain through the eviction API (refusals retried until
    /// `drain_timeout`; a drain still blocked then fails the upgrade, which
    /// stops, never forcing), reboot (server down for `reboot`), uncordon.
    /// Autoscaler nodes are cordoned, drained and their servers deleted; the
    /// autoscaler replaces the capacity still needed. Time passes here.
    pub fn rolling_upgrade(&mut self, reboot: Duration, drain_timeout: Duration) -> UpgradeOutcome {
        let mut statics: Vec<(u8, String, NodeId)> = Vec::new();
        let mut recycled: Vec<(String, NodeId)> = Vec::new();
        for (id, node) in self.world.nodes().iter().enumerate() {
            if node.phase == NodePhase::Gone || !node.server_exists {
                continue;
            }
            let autoscaled = self
                .topology
                .pool(&node.pool)
                .is_some_and(|p| p.is_autoscaled());
            if autoscaled {
                recycled.push((node.name.clone(), id));
            } else {
                let rank = u8::from(node.pool == CONTROL_PLANE_POOL || node.control_plane);
                statics.push((rank, node.name.clone(), id));
            }
        }
        statics.sort();
        recycled.sort();
        let mut outcome = UpgradeOutcome {
            done: Vec::new(),
            blocked: None,
        };
        for (_, name, node) in statics {
            if self.world.node(node).control_plane {
                self.wait_until(SETTLE_BOUND, |s| s.cp.all_settled());
            }
            if let Err(reason) = self.drain_for_upgrade(node, drain_timeout) {
                outcome.blocked = Some(reason);
                return outcome;
            }
            self.reboot(node, reboot);
            self.uncordon(node);
            outcome.done.push(name);
            self.settle_after_upgrade();
        }
        for (name, node) in recycled {
            if self.world.node(node).phase == NodePhase::Gone
                || !self.world.node(node).server_exists
            {
                continue;
            }
            if let Err(reason) = self.drain_for_upgrade(node, drain_timeout) {
                outcome.blocked = Some(reason);
                return outcome;
            }
            self.delete_server_now(node);
            outcome.done.push(name);
            self.settle_after_upgrade();
        }
        outcome
    }

    /// Waits for every workload to be Ready again before the upgrade takes
    /// the next node, unless a negative control took that wait away.
    fn settle_after_upgrade(&mut self) {
        if !self.topology.upgrade_skips_settling {
            self.wait_until(SETTLE_BOUND, |s| s.all_ready_now());
        }
    }

    /// Whether every workload has all its replicas ready right now.
    fn all_ready_now(&self) -> bool {
        (0..self.world.workloads().len()).all(|w| {
            let desired = self.desired_replicas(w);
            if matches!(self.world.workload(w).kind, WorkloadKind::Job { .. }) {
                return true;
            }
            let ready = self
                .world
                .workload(w)
                .pods
                .iter()
                .filter(|&&p| self.world.pod(p).phase == PodPhase::Ready)
                .count() as u32;
            ready >= desired
        })
    }

    /// Lets time pass until `done` holds or `bound` has passed.
    fn wait_until(&mut self, bound: Duration, done: impl Fn(&Simulation) -> bool) {
        let deadline = after(self.now(), bound);
        while !done(self) {
            match self.next_event_time() {
                Some(next) if next <= deadline => self.advance_to(next),
                _ => {
                    self.advance_to(deadline);
                    return;
                }
            }
        }
    }

    /// Cordons a node and drains it through the eviction API, retrying
    /// refusals until the timeout; `Err` names what blocked it.
    fn drain_for_upgrade(&mut self, node: NodeId, timeout: Duration) -> Result<(), String> {
        self.cordon(node);
        let deadline = after(self.now(), timeout);
        loop {
            let mut refusals = Vec::new();
            for pod in self.world.movable_pods(node) {
                if let Err(message) = self.evict(pod) {
                    refusals.push(format!("{}: {message}", self.world.pod(pod).key()));
                }
            }
            let remaining = self.world.pods_left(node);
            let retry = self.engine.timings().eviction_retry.as_millis();
            match drain::after_pass(remaining, self.now(), Some(deadline), retry) {
                Next::Drained => return Ok(()),
                Next::TimedOut => {
                    let name = self.world.node(node).name.clone();
                    let reason = format!(
                        "drain of {name} blocked for {timeout} with {remaining} pod(s) left{}; the upgrade fails rather than forcing",
                        refusals
                            .first()
                            .map(|r| format!(" ({r})"))
                            .unwrap_or_default()
                    );
                    self.mark_fault(Some(node), &reason);
                    return Err(reason);
                }
                Next::RetryAt(at) => self.advance_to(at),
            }
        }
    }

    /// The node's server goes down for `reboot` and comes back: its kubelet
    /// reports Ready again and its etcd member rejoins.
    fn reboot(&mut self, node: NodeId, reboot: Duration) {
        self.server_down(node);
        let back = after(self.now(), reboot);
        self.advance_to(back);
        self.server_back(node);
    }

    /// A server stops: NotReady after the grace period, its etcd member away.
    fn server_down(&mut self, node: NodeId) {
        if !self.world.node(node).server_up {
            return;
        }
        self.world.node_mut(node).server_up = false;
        self.world.node_mut(node).server_stopped_at = Some(self.now());
        let at = after(self.now(), self.engine.timings().node_monitor_grace);
        self.schedule(at, Action::NodeUnresponsive(node));
        self.for_members_on(node, false);
        self.record_control_plane();
        self.settle();
    }

    /// A stopped server runs again with its disks (and its attachments):
    /// the node is Ready, its unreachable taints go, the pods still bound to
    /// it start again, and its etcd member is healthy.
    fn server_back(&mut self, node: NodeId) {
        if self.world.node(node).phase == NodePhase::Gone {
            return;
        }
        self.world.node_mut(node).server_up = true;
        self.world.node_mut(node).server_exists = true;
        self.remove_taint(node, "node.kubernetes.io/unreachable");
        // The taint-eviction controller cancels the evictions the
        // unreachable taint scheduled and that have not fired yet.
        self.no_execute_taints_changed(node);
        if self.world.node(node).phase != NodePhase::Ready {
            self.world.node_mut(node).phase = NodePhase::Ready;
            let name = self.world.node(node).name.clone();
            self.record(
                EventKind::NodeReady,
                node_ref(&name),
                Some(node),
                "node Ready after its reboot",
            );
        }
        let pods: Vec<usize> = self.world.node(node).pods.iter().copied().collect();
        for pod in pods {
            match self.world.pod(pod).phase {
                PodPhase::Terminating => self.schedule(self.now(), Action::PodTerminated(pod)),
                PodPhase::Starting => self.schedule(self.now(), Action::PodStarted(pod)),
                _ => {}
            }
        }
        for w in 0..self.world.workloads().len() {
            if self.world.workload(w).kind == WorkloadKind::DaemonSet {
                self.controllers.mark_dirty(w);
            }
        }
        // The attach/detach controller catches up with a node that went
        // down before its volumes' detach finished: volumes no pod on it
        // uses any more are detached once it runs again.
        for claim in self.volumes.attached_to(node) {
            if !self.world.claim_in_use_on(claim, node) {
                let detach_at = self.now() + self.draw_latency(|l| l.volume_detach);
                self.schedule(detach_at, Action::Detach(claim, node));
            }
        }
        self.for_members_on(node, true);
        self.record_control_plane();
        self.settle();
    }

    fn uncordon(&mut self, node: NodeId) {
        self.world.uncordon(node);
        let name = self.world.node(node).name.clone();
        self.record(
            EventKind::NodeUncordoned,
            node_ref(&name),
            Some(node),
            "node uncordoned after its upgrade",
        );
    }

    /// Everything is lost at once: every server stops, autoscaler servers
    /// are deleted for good, the data on single-attach volumes is gone. The
    /// recovery runbook then runs as a graph; when it finishes the static
    /// nodes are back (a rebuild recreates them under the same names) and
    /// the data is restored to the capture point of the newest `Completed`
    /// backup of `restore_from` finished before the loss, which the
    /// observation records for the RPO. Time passes here.
    pub fn full_rebuild(
        &mut self,
        restore_from: Option<&str>,
        recovery: Option<&RecoverySpec>,
    ) -> RecoveryOutcome {
        let lost_at = self.now();
        let statics: Vec<NodeId> = (0..self.world.nodes().len())
            .filter(|&n| {
                self.world.node(n).phase != NodePhase::Gone && self.world.node(n).server_exists
            })
            .collect();
        let mut rebuilt = Vec::new();
        for node in statics {
            let autoscaled = self
                .topology
                .pool(&self.world.node(node).pool)
                .is_some_and(|p| p.is_autoscaled());
            if autoscaled {
                self.delete_server_now(node);
            } else {
                self.server_down(node);
                rebuilt.push(node);
            }
        }
        let outcome = self.run_runbook(recovery);
        self.obs.automated_recovery = Some(outcome.automated);
        let Some(finished) = outcome.finished else {
            self.advance_to(outcome.until);
            let step = outcome.failed_step.clone().unwrap_or_default();
            self.mark_fault(
                None,
                &format!("recovery step `{step}` exhausted its attempts: the rebuild failed"),
            );
            return outcome;
        };
        self.advance_to(finished);
        if let Some(schedule) = restore_from
            && let Some(backup) = self.backups.usable(schedule, lost_at)
        {
            self.obs
                .restores
                .push((lost_at, backup.started, schedule.to_owned()));
            let lost = self.data_lost(lost_at, backup.started, schedule);
            self.obs.data_loss.extend(lost);
            let message = format!(
                "restored from {} ({:?}), captured {} before the loss",
                backup.name,
                backup.phase,
                Duration::from_millis((lost_at as i64 - backup.started).max(0) as u64)
            );
            let name = backup.name.clone();
            self.record(
                EventKind::BackupFinished,
                super::backup_ref(&name),
                None,
                &message,
            );
        }
        for node in rebuilt {
            self.server_back(node);
        }
        outcome
    }

    /// A backup of `namespace` is taken now under `schedule` (its capture
    /// point is now) and runs for the schedule's `duration`, while the
    /// namespace's writers keep acknowledging writes; then every pod of the
    /// namespace is lost at once, and the restore brings its workloads back
    /// as they were captured, so their controllers start their pods again.
    /// What the namespace's writers acknowledged after the capture point is
    /// lost; the observation records the restore and those losses as the
    /// full rebuild does, for the `rpo:` assertion. Time passes here.
    pub fn restore_namespace(&mut self, namespace: &str, schedule: &str) {
        let duration = self
            .topology
            .backups
            .iter()
            .find(|b| b.schedule == schedule)
            .map_or(Duration::ZERO, |b| b.duration);
        let captured = self.now() as i64;
        let name = format!("{}-{namespace}", backup_name(schedule, captured));
        let index = self.backups.start(&name, schedule, self.now());
        self.record(
            EventKind::BackupStarted,
            super::backup_ref(&name),
            None,
            &format!("backup of namespace {namespace} started"),
        );
        // The on-demand backup finishes through the event loop like a
        // scheduled one, so everything due meanwhile (writes, probes,
        // other backups) happens in order.
        self.schedule(
            after(self.now(), duration),
            Action::BackupFinish(index, BackupPhase::Completed),
        );
        self.advance_to(after(self.now(), duration));
        let lost_at = self.now();
        self.leave_out_of_restore(namespace, schedule, &name);
        let lost: Vec<_> = (0..self.world.pods().len())
            .filter(|&p| {
                self.world.pod(p).namespace == namespace
                    && self.world.pod(p).phase != PodPhase::Gone
            })
            .collect();
        for pod in lost {
            self.pod_gone(pod);
        }
        self.obs
            .restores
            .push((lost_at, captured, schedule.to_owned()));
        let prefix = format!("{namespace}/");
        let lost = self.data_lost(lost_at, captured, schedule);
        self.obs
            .data_loss
            .extend(lost.into_iter().filter(|d| d.writer.starts_with(&prefix)));
        self.record(
            EventKind::BackupFinished,
            super::backup_ref(&name),
            None,
            &format!(
                "namespace {namespace} lost and restored from {name}, captured {} before the loss",
                Duration::from_millis(lost_at - captured as u64)
            ),
        );
        self.settle();
    }

    /// Velero leaves out of a backup every object labelled
    /// `velero.io/exclude-from-backup: "true"`, whatever its filters
    /// include (velero.io/docs/main/resource-filtering/, "Excludes"), so a
    /// restore from it brings the namespace back without them: their
    /// controller is gone with the namespace and nothing recreates their
    /// pods. The simulator keeps such a workload as it keeps one admission
    /// refused: never reconciled, absent from the API, and short of every
    /// replica it declared.
    fn leave_out_of_restore(&mut self, namespace: &str, schedule: &str, backup: &str) {
        let prefix = format!("{namespace}/");
        let excluded: Vec<String> = self
            .topology
            .backups
            .iter()
            .filter(|b| b.schedule == schedule)
            .flat_map(|b| b.excluded.iter())
            .filter(|w| w.starts_with(&prefix))
            .cloned()
            .collect();
        for key in excluded {
            if let Some(w) = self.world.workload_id(&key) {
                let old = &self.world.workload(w).template;
                let mut left_out = old.with_spec(old.spec.clone());
                left_out.refused_by = Some(format!("left out of backup {backup}"));
                self.world.workload_mut(w).template = std::rc::Rc::new(left_out);
            }
        }
    }

    /// Runs a recovery graph: a step starts when every step it comes after
    /// has finished; each attempt takes a duration drawn from its
    /// distribution and fails with its probability, retried up to its
    /// attempts. Steps are drawn in file order, so the draws are seeded and
    /// stable.
    fn run_runbook(&mut self, recovery: Option<&RecoverySpec>) -> RecoveryOutcome {
        let start = self.now();
        let Some(recovery) = recovery else {
            return RecoveryOutcome {
                finished: Some(start),
                automated: 0,
                failed_step: None,
                until: start,
            };
        };
        // (finish time, finish time with manual steps instant)
        let mut finish: BTreeMap<String, (Time, Time)> = BTreeMap::new();
        let steps: Vec<_> = recovery.steps.iter().map(|s| s.value.clone()).collect();
        let mut remaining: Vec<usize> = (0..steps.len()).collect();
        while !remaining.is_empty() {
            let Some(pos) = remaining.iter().position(|&i| {
                steps[i]
                    .after
                    .iter()
                    .all(|a| finish.contains_key(a.as_str()))
            }) else {
                // A cycle or an unknown name: validation refuses those, so
                // this only guards against looping forever.
                return RecoveryOutcome {
                    finished: None,
                    automated: 0,
                    failed_step: steps.get(remaining[0]).map(|s| s.name.value.clone()),
                    until: start,
                };
            };
            let i = remaining.remove(pos);
            let step = &steps[i];
            let (ready, ready_auto) = step
                .after
                .iter()
                .filter_map(|a| finish.get(a.as_str()))
                .fold((start, start), |(x, y), &(f, g)| (x.max(f), y.max(g)));
            let attempts = step.max_attempts.as_ref().map_or(1, |m| m.value.max(1));
            let p = step.failure_probability.as_ref().map_or(0.0, |p| p.value);
            let mut spent = 0;
            let mut succeeded = false;
            let mut tried = 0;
            for _ in 0..attempts {
                tried += 1;
                spent += self.draw(&step.duration.value).as_millis();
                if !self.engine.rng().chance(p) {
                    succeeded = true;
                    break;
                }
            }
            let name = step.name.value.clone();
            self.record(
                if succeeded {
                    EventKind::StepStarted
                } else {
                    EventKind::FaultInjected
                },
                drillbench_observe::ObjectRef {
                    kind: "RecoveryStep".to_owned(),
                    namespace: String::new(),
                    name: name.clone(),
                },
                None,
                &format!(
                    "runbook step `{name}` ({}) {} at +{} after {}{}",
                    if step.automated {
                        "automated"
                    } else {
                        "manual"
                    },
                    if succeeded { "finishes" } else { "fails" },
                    Duration::from_millis(ready + spent - start),
                    Duration::from_millis(spent),
                    if tried > 1 {
                        format!(" ({tried} attempts)")
                    } else {
                        String::new()
                    }
                ),
            );
            if !succeeded {
                return RecoveryOutcome {
                    finished: None,
                    automated: finish.values().map(|&(_, g)| g - start).max().unwrap_or(0),
                    failed_step: Some(name),
                    until: ready + spent,
                };
            }
            let auto_spent = if step.automated { spent } else { 0 };
            finish.insert(name, (ready + spent, ready_auto + auto_spent));
        }
        let finished = finish.values().map(|&(f, _)| f).max().unwrap_or(start);
        RecoveryOutcome {
            finished: Some(finished),
            automated: finish.values().map(|&(_, g)| g - start).max().unwrap_or(0),
            failed_step: None,
            until: finished,
        }
    }

    /// One draw from a duration distribution.
    fn draw(&mut self, distribution: &DurationDistribution) -> Duration {
        match distribution {
            DurationDistribution::Fixed(d) => *d,
            DurationDistribution::Uniform(r) => self.engine.rng().duration_between(r.min, r.max),
            DurationDistribution::Triangular(t) => {
                let (a, c, b) = (
                    t.min.as_millis() as f64,
                    t.mode.as_millis() as f64,
                    t.max.as_millis() as f64,
                );
                if b <= a {
                    return t.min;
                }
                let u = self.engine.rng().unit();
                let split = (c - a) / (b - a);
                let x = if u < split {
                    a + (u * (b - a) * (c - a)).sqrt()
                } else {
                    b - ((1.0 - u) * (b - a) * (b - c)).sqrt()
                };
                Duration::from_millis(x.round().clamp(a, b) as u64)
            }
        }
    }
}
