//! What a drill saw: the timeline of events and the series the assertions
//! judge. Every backend fills the same [`Observation`] (the simulator
//! directly, a real cluster through watchers and probes), so the assertions
//! never know which backend ran.

mod event;

use std::collections::BTreeMap;
use std::rc::Rc;

pub use event::{BYPASSED_EVICTION, Event, EventKind, ObjectRef};

/// Milliseconds since the drill started.
pub type Time = u64;

/// One binding of a pod to a node, with what a placement rule needs to
/// judge it: the node's labels at that moment and the pod's claims.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    /// When the pod was bound.
    pub at: Time,
    /// `namespace/name` of the pod.
    pub pod: String,
    pub namespace: String,
    pub pod_labels: Rc<BTreeMap<String, String>>,
    /// `namespace/Kind/name` of its workload, if any.
    pub workload: Option<String>,
    pub node: String,
    pub pool: String,
    /// Whether the node's pool is autoscaled.
    pub autoscaled: bool,
    /// The node's labels when the pod was bound.
    pub node_labels: Rc<BTreeMap<String, String>>,
    /// The claims it mounts: (claim name, storage class).
    pub claims: Vec<(String, Option<String>)>,
}

/// The acknowledged writes of one writer workload that a restore lost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataLoss {
    /// When the data was lost.
    pub lost_at: Time,
    /// The backup schedule restored from.
    pub schedule: String,
    /// The writer, as `namespace/Kind/name`.
    pub writer: String,
    /// The restore's capture point (signed: it may precede the drill).
    pub captured: i64,
    /// The last write acknowledged before the loss, if any came after the
    /// capture point: the end of the data-loss window.
    pub last_lost_ack: Option<i64>,
    /// How many acknowledged writes came after the capture point (counted
    /// from the drill's start; earlier writes are not modelled).
    pub lost_writes: u64,
}

impl DataLoss {
    /// The data-loss window: from the capture point to the last write the
    /// restore lost; zero when it lost none.
    pub fn window(&self) -> u64 {
        self.last_lost_ack
            .map_or(0, |ack| (ack - self.captured).max(0) as u64)
    }
}

/// The readiness of one workload over time.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WorkloadSeries {
    /// (time, ready replicas, desired replicas), one entry per change.
    pub points: Vec<(Time, u32, u32)>,
}

impl WorkloadSeries {
    /// Whether every desired replica was ready at the last point at or before `t`.
    pub fn whole_at(&self, t: Time) -> bool {
        self.points
            .iter()
            .rev()
            .find(|(at, _, _)| *at <= t)
            .is_none_or(|(_, ready, desired)| ready >= desired)
    }

    /// The lowest point of `[from, to]` as (time, ready, desired): the one
    /// with the smallest ready fraction, the earliest of equals. A point
    /// with nothing desired counts as whole. `None` when nothing was
    /// recorded by `to`.
    pub fn lowest(&self, from: Time, to: Time) -> Option<(Time, u32, u32)> {
        let at_start = self
            .points
            .iter()
            .rev()
            .find(|(at, _, _)| *at <= from)
            .map(|&(_, ready, desired)| (from, ready, desired));
        let within = self
            .points
            .iter()
            .filter(|(at, _, _)| *at > from && *at <= to)
            .copied();
        // Compared as ready/desired by cross-multiplying, so 2/3 ranks
        // below 1/1 and above 1/3 with no floating point.
        let fraction = |ready: u32, desired: u32| match desired {
            0 => (1, 1),
            d => (u64::from(ready.min(d)), u64::from(d)),
        };
        at_start.into_iter().chain(within).reduce(|low, p| {
            let low_fraction = fraction(low.1, low.2);
            let fraction = fraction(p.1, p.2);
            if fraction.0 * low_fraction.1 < low_fraction.0 * fraction.1 {
                p
            } else {
                low
            }
        })
    }

    /// The fraction of `[from, to]` during which every desired replica was
    /// ready; 1 for an empty window.
    pub fn whole_fraction(&self, from: Time, to: Time) -> f64 {
        if to <= from {
            return 1.0;
        }
        let mut changes: Vec<Time> = self
            .points
            .iter()
            .map(|p| p.0)
            .filter(|&t| t > from && t < to)
            .collect();
        changes.dedup();
        let mut whole = 0;
        let mut since = from;
        for t in changes.into_iter().chain([to]) {
            if self.whole_at(since) {
                whole += t - since;
            }
            since = t;
        }
        whole as f64 / (to - from) as f64
    }
}

/// A single-attach volume that stayed attached to a departed node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stranding {
    /// `namespace/name` of the claim.
    pub claim: String,
    /// The departed node.
    pub node: String,
    /// When the node departed.
    pub since: Time,
    /// When the attachment was released, if it was.
    pub released: Option<Time>,
}

/// An eviction that took a budget below what it protects (must never happen).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetBreach {
    pub at: Time,
    /// `namespace/name` of the budget.
    pub pdb: String,
    pub pod: String,
    /// Healthy pods after the eviction.
    pub healthy: i32,
    /// Healthy pods the budget wants.
    pub desired: i32,
}

/// A guard's decision about a pod template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdmissionDecision {
    pub at: Time,
    pub guard: String,
    /// `namespace/Kind/name` of the object.
    pub object: String,
    /// Whether it was refused (Enforce) or only recorded (Audit).
    pub refused: bool,
    pub reason: String,
}

/// Everything a drill saw.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    /// The timeline, in time order.
    pub events: Vec<Event>,
    /// Every binding of a pod to a node.
    pub placements: Vec<Placement>,
    /// API availability through the stable endpoint: (time, available), one
    /// entry per change, starting at 0.
    pub api: Vec<(Time, bool)>,
    /// etcd quorum: (time, has quorum), one entry per change.
    pub quorum: Vec<(Time, bool)>,
    /// etcd membership: (time, voters, learners), one entry per change.
    pub etcd: Vec<(Time, u32, u32)>,
    /// Ready control planes: (time, ready), one entry per change.
    pub control_planes_ready: Vec<(Time, u32)>,
    /// The stable endpoint's address (its name) over time; more than one
    /// distinct value means clients had to be given a new address.
    pub endpoint_addresses: Vec<(Time, String)>,
    /// Members that joined as learners: (time joined, member, time promoted).
    pub learners: Vec<(Time, String, Option<Time>)>,
    /// Readiness of each workload, by `namespace/Kind/name`.
    pub workloads: BTreeMap<String, WorkloadSeries>,
    /// Single-attach volumes stranded on departed nodes.
    pub strandings: Vec<Stranding>,
    /// Evictions that broke a budget.
    pub budget_breaches: Vec<BudgetBreach>,
    /// Admission decisions of guards.
    pub admissions: Vec<AdmissionDecision>,
    /// Nodes that no autoscaler pool or static pool accounts for, with when
    /// they were first seen so.
    pub stranded_nodes: Vec<(Time, String)>,
    /// When each fault was injected, with a description.
    pub faults: Vec<(Time, String)>,
    /// Data written and lost: (time of loss, capture point of the restore,
    /// schedule). The capture point may precede the drill, so it is signed.
    pub restores: Vec<(Time, i64, String)>,
    /// What each writer lost in each restore: its acknowledged writes after
    /// the capture point, measured rather than inferred from the backup
    /// timeline.
    pub data_loss: Vec<DataLoss>,
    /// How long a recovery runbook took with its manual steps instant: the
    /// automated part of the recovery, when one ran.
    pub automated_recovery: Option<Time>,
    /// Objects of kinds the backend does not model.
    pub not_simulated: Vec<ObjectRef>,
    /// When the drill's steps began: the cluster had converged. Availability
    /// and recovery are judged from here.
    pub start: Time,
    /// When the drill ended.
    pub end: Time,
    /// Whether the drill stopped early, and why.
    pub aborted: Option<String>,
}

/// The value of a step series at time `t` (the last change at or before it).
pub fn value_at<T: Copy>(series: &[(Time, T)], t: Time, before_first: T) -> T {
    series
        .iter()
        .rev()
        .find(|(at, _)| *at <= t)
        .map_or(before_first, |(_, v)| *v)
}

/// Total time in `[from, to)` during which a boolean series was false.
pub fn time_false(series: &[(Time, bool)], from: Time, to: Time) -> Time {
    let mut down = 0;
    let mut state = value_at(series, from, true);
    let mut cursor = from;
    for &(at, value) in series.iter().filter(|(at, _)| *at > from && *at < to) {
        if !state {
            down += at - cursor;
        }
        state = value;
        cursor = at;
    }
    if !state {
        down += to.saturating_sub(cursor);
    }
    down
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_false_sums_the_gaps() {
        let series = [(0, true), (10, false), (30, true), (50, false)];
        assert_eq!(time_false(&series, 0, 60), 20 + 10);
        assert_eq!(time_false(&series, 20, 40), 10);
        assert_eq!(time_false(&series, 55, 60), 5);
        assert_eq!(time_false(&[(0, true)], 0, 100), 0);
    }

    #[test]
    fn value_at_reads_the_last_change() {
        let series = [(5, 1), (10, 2)];
        assert_eq!(value_at(&series, 0, 0), 0);
        assert_eq!(value_at(&series, 5, 0), 1);
        assert_eq!(value_at(&series, 99, 0), 2);
    }

    fn web() -> WorkloadSeries {
        // 3 replicas; a drain takes one away at 100, a second at 150 (1/3),
        // both back by 300; later the workload is scaled to 5 and lags.
        WorkloadSeries {
            points: vec![
                (0, 3, 3),
                (100, 2, 3),
                (150, 1, 3),
                (200, 2, 3),
                (300, 3, 3),
                (400, 3, 5),
                (450, 5, 5),
            ],
        }
    }

    #[test]
    fn the_lowest_point_is_the_smallest_ready_fraction_earliest_first() {
        let web = web();
        assert_eq!(web.lowest(0, 1000), Some((150, 1, 3)));
        // Seen from after the dip, 3/5 is the worst.
        assert_eq!(web.lowest(250, 1000), Some((400, 3, 5)));
        // A window starting mid-dip starts from the value then.
        assert_eq!(web.lowest(170, 190), Some((170, 1, 3)));
        assert_eq!(WorkloadSeries::default().lowest(0, 10), None);
        let idle = WorkloadSeries {
            points: vec![(0, 0, 0), (10, 1, 2)],
        };
        assert_eq!(idle.lowest(0, 20), Some((10, 1, 2)));
    }

    #[test]
    fn whole_fraction_counts_time_with_every_replica_ready() {
        let web = web();
        // Not whole during [100, 300) and [400, 450): 250 of 1000.
        assert_eq!(web.whole_fraction(0, 1000), 0.75);
        assert_eq!(web.whole_fraction(100, 300), 0.0);
        assert_eq!(web.whole_fraction(300, 400), 1.0);
        assert_eq!(web.whole_fraction(5, 5), 1.0);
    }
}
