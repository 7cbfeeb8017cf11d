//! Preemption: kube-scheduler's `DefaultPreemption` plugin, which makes
//! room for a pod that fits nowhere by deleting pods of lower priority.
//!
//! As upstream (`pkg/scheduler/framework/plugins/defaultpreemption/
//! default_preemption.go`, `pkg/scheduler/framework/preemption/
//! preemption.go`, and the docs page "Pod Priority and Preemption"):
//!
//! - on a node, every pod of strictly lower priority is a potential
//!   victim ([`crate::priority::Priority::may_preempt`]); with all of them
//!   removed the pod must pass the filters, or the node is no candidate;
//! - the potential victims are sorted most important first (higher
//!   priority, then the one running longer), split into those whose
//!   eviction would break a PodDisruptionBudget and the others (the
//!   budgets' allowed disruptions are spent in that order), and then
//!   reprieved one by one, the budget-breaking ones first: a pod is put
//!   back if the pod still fits with it; what cannot be put back is a
//!   victim, and the budget-breaking victims are counted;
//! - among the candidate nodes the one chosen has the fewest budget
//!   violations, then the lowest highest-victim priority, then the
//!   smallest sum of victim priorities, then the fewest victims, then the
//!   latest start among its highest-priority victims, then comes first.
//!
//! The caller deletes the victims with their grace period, records the
//! chosen node as the pod's `nominatedNodeName`, and binds the pod once
//! the victims are gone.

use std::cmp::Ordering;

use crate::priority::Priority;

/// A pod on a node, as victim selection reads it.
#[derive(Debug, Clone)]
pub struct Resident<P> {
    pub pod: P,
    pub priority: i32,
    /// When it started: of two pods of one priority, the one running
    /// longer is more important (`util.MoreImportantPod`).
    pub started_at: u64,
    /// The budgets selecting it, as indexes into the node's budget list,
    /// leaving out those that already count it as disrupted.
    pub budgets: Vec<usize>,
}

/// What preempting on one node would cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Victims<P> {
    /// The pods to delete, most important first.
    pub pods: Vec<P>,
    /// Their priorities, in the same order.
    pub priorities: Vec<i32>,
    /// Their start times, in the same order.
    pub started: Vec<u64>,
    /// How many of them break a budget.
    pub pdb_violations: usize,
}

/// `util.MoreImportantPod`: higher priority, then the earlier start.
fn more_important<P>(a: &Resident<P>, b: &Resident<P>) -> Ordering {
    b.priority
        .cmp(&a.priority)
        .then(a.started_at.cmp(&b.started_at))
}

/// `SelectVictimsOnNode`: the fewest pods of lower priority whose removal
/// lets the pod fit the node, or `None` when no removal does.
///
/// `allowed` is each budget's `disruptionsAllowed`. `fits(removed)` says
/// whether the pod passes the filters on the node with the residents
/// whose flag is set removed.
pub fn select_victims<P: Copy>(
    preemptor: Priority,
    residents: &[Resident<P>],
    allowed: &[i32],
    mut fits: impl FnMut(&[bool]) -> bool,
) -> Option<Victims<P>> {
    let mut removed: Vec<bool> = residents
        .iter()
        .map(|r| preemptor.may_preempt(r.priority))
        .collect();
    if !removed.iter().any(|&r| r) || !fits(&removed) {
        return None;
    }
    let mut potential: Vec<usize> = (0..residents.len()).filter(|&i| removed[i]).collect();
    // Stable: equally important pods keep the node's order.
    potential.sort_by(|&a, &b| more_important(&residents[a], &residents[b]));
    // `filterPodsWithPDBViolation`: the budgets are spent in importance
    // order, and a pod that overdraws one would break it.
    let mut left = allowed.to_vec();
    let (mut violating, mut other) = (Vec::new(), Vec::new());
    for &i in &potential {
        let mut breaks = false;
        for &b in &residents[i].budgets {
            if let Some(allowed) = left.get_mut(b) {
                *allowed -= 1;
                breaks |= *allowed < 0;
            }
        }
        if breaks {
            violating.push(i);
        } else {
            other.push(i);
        }
    }
    let mut victims = Vec::new();
    let mut pdb_violations = 0;
    for (group, breaks) in [(&violating, true), (&other, false)] {
        for &i in group {
            removed[i] = false;
            if !fits(&removed) {
                removed[i] = true;
                victims.push(i);
                pdb_violations += usize::from(breaks);
            }
        }
    }
    victims.sort_by(|&a, &b| more_important(&residents[a], &residents[b]));
    Some(Victims {
        pods: victims.iter().map(|&i| residents[i].pod).collect(),
        priorities: victims.iter().map(|&i| residents[i].priority).collect(),
        started: victims.iter().map(|&i| residents[i].started_at).collect(),
        pdb_violations,
    })
}

/// `calculateNumCandidates` with the default `DefaultPreemptionArgs`
/// (`minCandidateNodesPercentage: 10`, `minCandidateNodesAbsolute: 100`;
/// `pkg/scheduler/apis/config/v1/defaults.go`): how many candidates the
/// dry run looks for among the `potential` nodes. `DryRunPreemption`
/// visits them from a random offset and stops once it has found that
/// many, at least one of them breaking no budget (kubernetes PR #94814,
/// "enumerate fewer candidates").
pub fn candidates_to_find(potential: usize) -> usize {
    (potential / 10).max(100).min(potential)
}

/// `pickOneNodeForPreemption`: the index of the candidate to preempt on,
/// `None` when there is none. Candidates come as the dry run found them,
/// those breaking no budget first; that order breaks the last tie.
pub fn pick_candidate<P>(candidates: &[Victims<P>]) -> Option<usize> {
    // A node needing no victim at all (its pods left meanwhile) wins.
    if let Some(i) = candidates.iter().position(|c| c.pods.is_empty()) {
        return Some(i);
    }
    /// Smaller is better, criterion by criterion.
    fn rank<P>(c: &Victims<P>) -> (usize, i32, i64, usize, std::cmp::Reverse<u64>) {
        let highest = c.priorities[0];
        // Each priority shifted to be non-negative, as upstream adds
        // MaxInt32 + 1, so that a negative one never lowers the sum.
        let sum: i64 = c
            .priorities
            .iter()
            .map(|&p| i64::from(p) + i64::from(i32::MAX) + 1)
            .sum();
        // `GetEarliestPodStartTime` of the highest-priority victims; the
        // later it is, the better.
        let earliest = c
            .priorities
            .iter()
            .zip(&c.started)
            .filter(|(p, _)| **p == highest)
            .map(|(_, s)| *s)
            .min()
            .unwrap_or(0);
        (
            c.pdb_violations,
            highest,
            sum,
            c.pods.len(),
            std::cmp::Reverse(earliest),
        )
    }
    candidates
        .iter()
        .enumerate()
        .min_by(|(_, a), (_, b)| rank(*a).cmp(&rank(*b)))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests;
