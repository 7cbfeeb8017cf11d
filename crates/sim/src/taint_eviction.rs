//! The taint-eviction controller (kube-controller-manager's
//! `taint-eviction-controller`, upstream `pkg/controller/tainteviction`):
//! whenever a node's `NoExecute` taints change, and whenever a pod is bound
//! to a node that has some, it decides each pod's fate with the one rule
//! set of [`no_execute_verdict`] — not tolerated: evicted at once;
//! tolerated with `tolerationSeconds`: evicted that long after; tolerated
//! without: never — and keeps at most one scheduled eviction per pod.
//!
//! The schedule is what makes a taint *removal* matter: upstream cancels a
//! pod's pending eviction when the node's `NoExecute` taints are gone or
//! the pod now tolerates them forever, so a node that comes back, or an
//! operator's `untaint`, saves the pods still waiting out their
//! tolerations. A pod already scheduled keeps its earlier schedule when a
//! later change would evict it no sooner (`processPodOnNode`: the work
//! item's creation time is kept, and the new trigger only replaces the old
//! one when it is not later).
//!
//! The unreachable taint of a lost node goes through here like any other.

use std::collections::BTreeMap;

use drillbench_model::k8s::taints::{NoExecuteVerdict, no_execute_verdict};
use drillbench_observe::EventKind;

use super::clock::Time;
use super::world::{NodeId, PodId};
use super::{Action, Simulation};

/// Why the controller deletes a pod, as the timeline says it.
const EVICTED: &str = "taint manager: NoExecute toleration expired";

/// One pod's pending eviction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Scheduled {
    /// When it was first scheduled: kept across later changes.
    created: Time,
    /// When it fires.
    fires: Time,
}

/// The controller's memory: the evictions it has scheduled, per pod.
#[derive(Debug, Clone, Default)]
pub(crate) struct TaintEviction {
    scheduled: BTreeMap<PodId, Scheduled>,
}

impl TaintEviction {
    /// Decides one pod's eviction from the verdict on its node's taints
    /// now; `Some(at)` when an eviction is (re)scheduled to fire at `at`.
    fn process(&mut self, pod: PodId, verdict: NoExecuteVerdict<'_>, now: Time) -> Option<Time> {
        match verdict {
            NoExecuteVerdict::Stay => {
                self.scheduled.remove(&pod);
                None
            }
            NoExecuteVerdict::EvictNow { .. } => {
                self.scheduled.insert(
                    pod,
                    Scheduled {
                        created: now,
                        fires: now,
                    },
                );
                Some(now)
            }
            NoExecuteVerdict::EvictAfter { seconds } => {
                let wait = (seconds as u64).saturating_mul(1000);
                let trigger = now.saturating_add(wait);
                let created = match self.scheduled.get(&pod) {
                    // Scheduled at an earlier instant: that schedule stands.
                    Some(old) if old.created.saturating_add(wait) < trigger => return None,
                    Some(old) => old.created,
                    None => now,
                };
                self.scheduled.insert(
                    pod,
                    Scheduled {
                        created,
                        fires: trigger,
                    },
                );
                Some(trigger)
            }
        }
    }

    /// Whether the pod's eviction is due now and still stands (neither
    /// cancelled nor moved since this firing was queued); it is consumed.
    fn take_due(&mut self, pod: PodId, now: Time) -> bool {
        match self.scheduled.get(&pod) {
            Some(s) if s.fires == now => {
                self.scheduled.remove(&pod);
                true
            }
            _ => false,
        }
    }

    /// Whether the pod has an eviction pending.
    #[cfg(test)]
    fn pending(&self, pod: PodId) -> bool {
        self.scheduled.contains_key(&pod)
    }
}

impl Simulation {
    /// A node's `NoExecute` taints may have changed: every active pod on it
    /// is judged again (`handleNodeUpdate`).
    pub(super) fn no_execute_taints_changed(&mut self, node: NodeId) {
        let pods: Vec<PodId> = self.world.node(node).pods.iter().copied().collect();
        for pod in pods {
            if self.world.pod(pod).is_active() {
                self.judge_pod_on_node(pod, node);
            }
        }
    }

    /// A pod was bound to a node: a node with `NoExecute` taints judges it
    /// (`handlePodUpdate`); an untainted one has nothing to say.
    pub(super) fn pod_bound_to_tainted(&mut self, pod: PodId, node: NodeId) {
        if self
            .world
            .node(node)
            .taints()
            .iter()
            .any(|t| t.effect == "NoExecute")
        {
            self.judge_pod_on_node(pod, node);
        }
    }

    fn judge_pod_on_node(&mut self, pod: PodId, node: NodeId) {
        let now = self.now();
        let verdict = no_execute_verdict(
            self.world.node(node).taints(),
            &self.world.pod(pod).template.tolerations,
        );
        if let Some(at) = self.taint_eviction.process(pod, verdict, now) {
            self.schedule(at, Action::TaintEvict(pod));
        }
    }

    /// A queued eviction fires: the pod is deleted if the eviction still
    /// stands and the pod is still running.
    pub(super) fn taint_evict(&mut self, pod: PodId) {
        if !self.taint_eviction.take_due(pod, self.now()) || !self.world.pod(pod).is_active() {
            return;
        }
        let node = self.world.pod(pod).node;
        let r = self.world.pod_ref(pod);
        self.record(EventKind::PodEvicted, r, node, EVICTED);
        self.delete_pod(pod);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evict_after(seconds: i64) -> NoExecuteVerdict<'static> {
        NoExecuteVerdict::EvictAfter { seconds }
    }

    // Upstream pkg/controller/tainteviction/taint_eviction.go
    // `processPodOnNode`, and taint_eviction_test.go `TestUpdateNode`
    // ("Taint removed": a tolerated taint removed before its time evicts
    // nothing).
    #[test]
    fn a_scheduled_eviction_is_cancelled_when_the_pod_may_stay_and_kept_otherwise() {
        let mut c = TaintEviction::default();
        assert_eq!(c.process(1, evict_after(30), 0), Some(30_000));
        assert!(c.pending(1));
        // The taint goes: the eviction is cancelled and its firing ignored.
        assert_eq!(c.process(1, NoExecuteVerdict::Stay, 10_000), None);
        assert!(!c.take_due(1, 30_000));
        // Control: without the removal the firing stands.
        let mut kept = TaintEviction::default();
        kept.process(1, evict_after(30), 0);
        assert!(kept.take_due(1, 30_000));
    }

    // `processPodOnNode`: a later node update finds the work item created
    // earlier and keeps it (`startTime.Add(min).Before(triggerTime)`), so a
    // second taint tolerated for as long does not postpone the eviction.
    #[test]
    fn a_later_update_keeps_the_earlier_schedule_and_the_same_instant_replaces_it() {
        let mut c = TaintEviction::default();
        c.process(1, evict_after(30), 0);
        assert_eq!(c.process(1, evict_after(30), 20_000), None);
        assert!(c.take_due(1, 30_000));
        // Control: a second judgement at the same instant (created == now)
        // replaces the trigger with the new, shorter one.
        let mut same = TaintEviction::default();
        same.process(1, evict_after(30), 0);
        assert_eq!(same.process(1, evict_after(10), 0), Some(10_000));
        assert!(!same.take_due(1, 30_000));
        assert!(same.take_due(1, 10_000));
    }

    // `processPodOnNode`: a taint not tolerated cancels any schedule and
    // evicts now (`AddWork(..., now, now)`).
    #[test]
    fn an_untolerated_taint_replaces_a_pending_schedule_with_now() {
        let mut c = TaintEviction::default();
        c.process(1, evict_after(300), 0);
        let now = NoExecuteVerdict::EvictNow { untolerated: None };
        assert_eq!(c.process(1, now, 5_000), Some(5_000));
        assert!(c.take_due(1, 5_000));
        assert!(!c.take_due(1, 300_000));
    }
}
