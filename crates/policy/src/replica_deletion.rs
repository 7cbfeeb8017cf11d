//! Which pods a ReplicaSet deletes first when it has more than it wants.
//!
//! Upstream's ReplicaSet controller (`pkg/controller/replicaset/
//! replica_set.go`, `getPodsToDelete`) ranks every pod by how many active
//! pods of the same Deployment (all its ReplicaSets) share its node, then
//! sorts with `controller.ActivePodsWithRanks` (`pkg/controller/
//! controller_utils.go`), deleting from the front:
//! 1. unassigned before assigned;
//! 2. phase Pending before Unknown before Running;
//! 3. not Ready before Ready;
//! 4. lower `controller.kubernetes.io/pod-deletion-cost` first;
//! 5. more colocated pods first ("doubled up");
//! 6. of two Ready pods, the one Ready for less time first;
//! 7. more container restarts first;
//! 8. the newer pod first.
//!
//! With `LogarithmicScaleDown` (on by default since 1.22), rules 6 and 8
//! compare times in powers of two of their age, `⌊log2(now − t in ns)⌋`,
//! and pods in the same bucket go by UID, pseudo-randomly. Spreading the
//! survivors matters to the drills: a scale-down that empties the crowded
//! autoscaler node first leaves the autoscaler a node to reclaim, one
//! that deletes the newest pods leaves one pod on every node.

use std::cmp::Reverse;

/// The annotation that sets rule 4's cost (`core.PodDeletionCost`).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The key `Pending < Unknown < Running` of rule 2 (`podPhaseToOrdinal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum PhaseRank {
    Pending,
    Unknown,
    Running,
}

/// What the ordering reads of one pod. Times are milliseconds on one clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// Bound to a node (`spec.nodeName` set).
    pub assigned: bool,
    pub phase: PhaseRank,
    /// Since when the pod is Ready; `None` while it is not.
    pub ready_since: Option<u64>,
    /// `controller.kubernetes.io/pod-deletion-cost`, 0 when absent or not
    /// an int32 (`GetDeletionCostFromPodAnnotations`).
    pub deletion_cost: i32,
    /// Active pods of the same Deployment on the same node, itself included
    /// (`getPodsRankedByRelatedPodsOnSameNode`).
    pub colocated: u32,
    /// The most restarts of any of its containers.
    pub restarts: u32,
    pub created: u64,
    /// `metadata.uid`: the tie-breaker within a logarithmic bucket.
    pub uid: String,
}

/// The indexes of `pods` in the order the ReplicaSet deletes them, at `now`.
///
/// Upstream's comparator, on two Ready pods whose ready times differ but
/// fall in one bucket, goes by UID at once, and on equal ready times reads
/// restarts and creation first; no total order does both for every trio of
/// pods (Go's sort tolerates that, Rust's may not). This key reads ready
/// bucket, restarts, creation bucket, then UID: the same order whenever the
/// pods' ready times are distinct and their creation buckets equal, or
/// their ready times equal.
pub fn deletion_order(pods: &[Candidate], now: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..pods.len()).collect();
    order.sort_by_cached_key(|&i| {
        let p = &pods[i];
        (
            p.assigned,
            p.phase,
            p.ready_since.is_some(),
            p.deletion_cost,
            Reverse(p.colocated),
            p.ready_since.map(|t| age_bucket(t, now)),
            Reverse(p.restarts),
            age_bucket(p.created, now),
            p.uid.clone(),
        )
    });
    order
}

/// `⌊log2(age in nanoseconds)⌋`, or −1 for an age of zero or less, as
/// upstream's `logarithmicRankDiff` computes it.
fn age_bucket(at: u64, now: u64) -> i64 {
    let age_ns = now.saturating_sub(at).saturating_mul(1_000_000);
    if age_ns == 0 {
        -1
    } else {
        i64::from(age_ns.ilog2())
    }
}

/// The pod-deletion-cost annotation as upstream's
/// `GetDeletionCostFromPodAnnotations` reads it: a decimal int32 without a
/// plus sign or leading zeros (`validFirstDigit`), else 0.
pub fn deletion_cost(annotation: Option<&str>) -> i32 {
    let Some(value) = annotation else {
        return 0;
    };
    let valid_first = match value.as_bytes().first() {
        Some(b'-' | b'1'..=b'9') => true,
        Some(b'0') => value == "0",
        _ => false,
    };
    if !valid_first {
        return 0;
    }
    value.parse().unwrap_or(0)
}

#[cfg(test)]
mod tests;
