//! The controllers' bookkeeping: which workloads changed since they were
//! last reconciled, the readiness each last reported, the spans during
//! which each writer acknowledged writes, and the node each autoscaled
//! pool would add, and what the autoscaler remembers of its own actions.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use drillbench_model::snapshot_workloads::{CapturedPod, Placements};

use super::clock::Time;
use super::world::{NodeId, SimNode, WorkloadId};
use drillbench_observe::DataLoss;

/// What the controllers remember between reconciles.
#[derive(Debug, Clone, Default)]
pub(crate) struct Controllers {
    /// Workloads to reconcile.
    dirty: BTreeSet<WorkloadId>,
    /// Per workload: (ready, desired) as last recorded.
    ready_counts: BTreeMap<WorkloadId, (u32, u32)>,
    /// Per writer workload: the spans (start, end) during which one of its
    /// pods was Ready and acknowledging writes; the last may be open.
    writes: BTreeMap<WorkloadId, Vec<(Time, Option<Time>)>>,
    /// A template node per autoscaled pool: what a new node would look like.
    pool_templates: BTreeMap<String, SimNode>,
    /// Per workload key, where a snapshot captured its pods: each is taken
    /// once, by the pod the controller first creates in its place, so only
    /// the drill's starting pods run where production's do.
    placements: BTreeMap<String, VecDeque<CapturedPod>>,
    /// When the autoscaler last scaled up, started deleting, failed.
    pub(crate) cooldown: drillbench_policy::cooldown::Cooldown,
    /// The nodes the autoscaler is removing: whether each had pods to
    /// drain, and when its drain started.
    pub(crate) removing: BTreeMap<NodeId, Removal>,
}

/// One node the autoscaler is removing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Removal {
    /// It had pods to move when its removal started.
    pub(crate) drained: bool,
    /// When its evictions were done: the wait for its pods is measured
    /// from here.
    pub(crate) evicted_at: Option<Time>,
}

impl Controllers {
    /// The snapshot's placements, to be taken by the first pods.
    pub(crate) fn set_placements(&mut self, placements: &Placements) {
        self.placements = placements
            .by_workload
            .iter()
            .map(|(key, pods)| (key.clone(), pods.iter().cloned().collect()))
            .collect();
    }

    /// Forgets the placements not taken by the pods made at time zero,
    /// but for StatefulSet ordinals (made one after another as each is
    /// Ready): a pod captured beyond a workload's replicas (mid-rollout)
    /// must not place a replacement made later.
    pub(crate) fn forget_unordered_placements(&mut self) {
        for pods in self.placements.values_mut() {
            pods.retain(|p| p.ordinal.is_some());
        }
        self.placements.retain(|_, pods| !pods.is_empty());
    }

    /// The node a workload's new pod was captured on, taken: a StatefulSet
    /// pod's by its ordinal, any other the next in the snapshot's order.
    pub(crate) fn take_placement(&mut self, key: &str, ordinal: Option<u32>) -> Option<String> {
        let pods = self.placements.get_mut(key)?;
        let index = match ordinal {
            Some(i) => pods.iter().position(|p| p.ordinal == Some(i))?,
            None => 0,
        };
        pods.remove(index).map(|p| p.node)
    }

    /// A workload is to be reconciled.
    pub(crate) fn mark_dirty(&mut self, w: WorkloadId) {
        self.dirty.insert(w);
    }

    /// The workloads to reconcile, in index order; none is left marked.
    pub(crate) fn take_dirty(&mut self) -> Vec<WorkloadId> {
        std::mem::take(&mut self.dirty).into_iter().collect()
    }

    /// Records a workload's (ready, desired); true if it changed.
    pub(crate) fn record_ready(&mut self, w: WorkloadId, ready: u32, desired: u32) -> bool {
        if self.ready_counts.get(&w) == Some(&(ready, desired)) {
            return false;
        }
        self.ready_counts.insert(w, (ready, desired));
        true
    }

    /// Whether a workload last had all its desired replicas ready (false
    /// before it was first recorded).
    pub(crate) fn is_ready(&self, w: WorkloadId) -> bool {
        self.ready_counts
            .get(&w)
            .is_some_and(|(ready, desired)| ready >= desired)
    }

    /// A writer has (or has not) a Ready pod at `now`: a span of
    /// acknowledged writes opens when the first is Ready and closes when
    /// none is.
    pub(crate) fn track_writer(&mut self, w: WorkloadId, now: Time, writing: bool) {
        let spans = self.writes.entry(w).or_default();
        let open = spans.last().is_some_and(|(_, end)| end.is_none());
        if writing && !open {
            spans.push((now, None));
        } else if !writing
            && open
            && let Some(last) = spans.last_mut()
        {
            last.1 = Some(now);
        }
    }

    /// What each writer loses when its data, lost at `lost_at`, is restored
    /// to `captured`: the writes it acknowledged after the capture point.
    /// A writer acknowledges a write every interval from the moment one of
    /// its pods is Ready (the first one interval later) until none is.
    /// `writer` gives a writer's key and interval (ms).
    pub(crate) fn data_lost<'a>(
        &self,
        lost_at: Time,
        captured: i64,
        schedule: &str,
        writer: impl Fn(WorkloadId) -> (&'a str, Option<u64>),
    ) -> Vec<DataLoss> {
        let lost = lost_at as i64;
        self.writes
            .iter()
            .filter_map(|(&w, spans)| {
                let (key, every) = writer(w);
                let every = every? as i64;
                let mut last_lost_ack = None;
                let mut lost_writes = 0u64;
                for &(start, end) in spans {
                    let start = start as i64;
                    // A write due as the writer stops is not acknowledged.
                    let limit = match end {
                        Some(end) if (end as i64) <= lost => end as i64 - 1,
                        _ => lost,
                    };
                    if limit < start + every {
                        continue;
                    }
                    let last = (limit - start) / every;
                    let first = if captured < start {
                        1
                    } else {
                        (captured - start) / every + 1
                    };
                    if last >= first {
                        lost_writes += (last - first + 1) as u64;
                        last_lost_ack = Some(start + last * every);
                    }
                }
                Some(DataLoss {
                    lost_at,
                    schedule: schedule.to_owned(),
                    writer: key.to_owned(),
                    captured,
                    last_lost_ack,
                    lost_writes,
                })
            })
            .collect()
    }

    /// The node an autoscaled pool would add.
    pub(crate) fn pool_template(&self, pool: &str) -> Option<&SimNode> {
        self.pool_templates.get(pool)
    }

    /// Sets the node an autoscaled pool would add.
    pub(crate) fn set_pool_template(&mut self, pool: &str, node: SimNode) {
        self.pool_templates.insert(pool.to_owned(), node);
    }

    /// A pool no longer scales.
    pub(crate) fn remove_pool_template(&mut self, pool: &str) {
        self.pool_templates.remove(pool);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dirty_workloads_are_taken_once_in_order() {
        let mut c = Controllers::default();
        c.mark_dirty(3);
        c.mark_dirty(1);
        c.mark_dirty(3);
        assert_eq!(c.take_dirty(), [1, 3]);
        assert!(c.take_dirty().is_empty());
    }

    #[test]
    fn readiness_changes_are_reported_once() {
        let mut c = Controllers::default();
        assert!(!c.is_ready(0), "unknown before the first record");
        assert!(c.record_ready(0, 1, 3));
        assert!(!c.record_ready(0, 1, 3), "unchanged");
        assert!(!c.is_ready(0));
        assert!(c.record_ready(0, 3, 3));
        assert!(c.is_ready(0));
        assert!(c.record_ready(0, 4, 3));
        assert!(c.is_ready(0), "more than desired is ready");
    }

    #[test]
    fn writes_after_the_capture_point_are_lost() {
        let mut c = Controllers::default();
        // Writes every second from 10 s: acknowledged at 11, 12, … s.
        c.track_writer(0, 10_000, true);
        c.track_writer(0, 12_000, true);
        // Down from 20 s (the write due at 20 s is not acknowledged), up
        // again at 30 s.
        c.track_writer(0, 20_000, false);
        c.track_writer(0, 30_000, true);
        c.track_writer(1, 0, true);
        let writer = |w| match w {
            0 => ("db/Deployment/w", Some(1_000)),
            _ => ("db/Deployment/reader", None),
        };
        let lost = c.data_lost(33_500, 15_500, "daily", writer);
        assert_eq!(lost.len(), 1, "only a writer loses writes");
        let l = &lost[0];
        // 16…19 s in the first span, 31…33 s in the second.
        assert_eq!((l.lost_writes, l.last_lost_ack), (4 + 3, Some(33_000)));
        assert_eq!(
            (l.writer.as_str(), l.captured, l.lost_at),
            ("db/Deployment/w", 15_500, 33_500)
        );
        let none = c.data_lost(33_500, 33_000, "daily", writer);
        assert_eq!((none[0].lost_writes, none[0].last_lost_ack), (0, None));
    }

    #[test]
    fn pool_templates_come_and_go() {
        let mut c = Controllers::default();
        let node = SimNode::new(
            "burst-template",
            "burst",
            false,
            BTreeMap::new(),
            Vec::new(),
            (super::super::world::Resources::default(), 110),
        );
        c.set_pool_template("burst", node);
        assert_eq!(
            c.pool_template("burst").map(|n| n.name.as_str()),
            Some("burst-template")
        );
        c.remove_pool_template("burst");
        assert!(c.pool_template("burst").is_none());
    }
}
