//! Rows in the manner of upstream's
//! `pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go`
//! (`TestSelectNodesForPreemption`, `TestDryRunPreemption`'s PDB cases,
//! `TestPickOneNodeForPreemption`), each named after the case it
//! transcribes and paired with a control that flips its outcome. A node is
//! a CPU capacity; a pod fits when the CPU left after the removals takes it.

use super::*;
use crate::priority::PreemptionPolicy;

const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;

/// A resident: (name, priority, cpu, started, budgets).
type Row = (&'static str, i32, i64, u64, &'static [usize]);

fn residents(rows: &[Row]) -> Vec<Resident<&'static str>> {
    rows.iter()
        .map(|&(pod, priority, _, started_at, budgets)| Resident {
            pod,
            priority,
            started_at,
            budgets: budgets.to_vec(),
        })
        .collect()
}

/// Victims on a node of `capacity` CPU for a pod of `priority` asking for
/// `cpu`.
fn victims(
    priority: Priority,
    cpu: i64,
    capacity: i64,
    rows: &[Row],
    allowed: &[i32],
) -> Option<Victims<&'static str>> {
    select_victims(priority, &residents(rows), allowed, |removed| {
        let used: i64 = rows
            .iter()
            .zip(removed)
            .filter(|(_, r)| !**r)
            .map(|(row, _)| row.2)
            .sum();
        used + cpu <= capacity
    })
}

fn high() -> Priority {
    Priority {
        value: HIGH,
        policy: PreemptionPolicy::PreemptLowerPriority,
    }
}

fn names(v: &Option<Victims<&'static str>>) -> Option<Vec<&'static str>> {
    v.as_ref().map(|v| v.pods.clone())
}

/// TestSelectNodesForPreemption "a pod that would fit on the nodes, but
/// other pods running are higher priority, no preemption would happen".
#[test]
fn higher_or_equal_priority_pods_are_never_victims() {
    let rows: &[Row] = &[("a", HIGH, 3, 0, &[]), ("b", HIGH + 1, 3, 0, &[])];
    assert_eq!(names(&victims(high(), 2, 6, rows, &[])), None);
    // Control: one of them lower, and it goes.
    let rows: &[Row] = &[("a", MID, 3, 0, &[]), ("b", HIGH + 1, 3, 0, &[])];
    assert_eq!(names(&victims(high(), 2, 6, rows, &[])), Some(vec!["a"]));
}

/// `PodEligibleToPreemptOthers`: "not eligible due to
/// preemptionPolicy=Never".
#[test]
fn a_never_pod_preempts_nothing() {
    let rows: &[Row] = &[("a", LOW, 3, 0, &[])];
    let never = Priority {
        value: HIGH,
        policy: PreemptionPolicy::Never,
    };
    assert_eq!(names(&victims(never, 2, 4, rows, &[])), None);
    assert_eq!(names(&victims(high(), 2, 4, rows, &[])), Some(vec!["a"]));
}

/// "a pod that would fit on the node after removing all lower priority
/// pods": a node where even that is not enough is no candidate.
#[test]
fn a_node_too_small_without_every_victim_is_no_candidate() {
    let rows: &[Row] = &[("a", LOW, 2, 0, &[]), ("b", HIGH, 3, 0, &[])];
    assert_eq!(names(&victims(high(), 3, 5, rows, &[])), None);
    // Control: one more CPU and removing `a` makes room.
    assert_eq!(names(&victims(high(), 3, 6, rows, &[])), Some(vec!["a"]));
}

/// "lower priority pods are reprieved in order of importance": of two
/// low pods, the more important one (higher priority, then the longer
/// running) is put back first, so the other is the victim.
#[test]
fn the_more_important_victim_is_reprieved_first() {
    let rows: &[Row] = &[("low", LOW, 2, 0, &[]), ("mid", MID, 2, 0, &[])];
    assert_eq!(names(&victims(high(), 2, 4, rows, &[])), Some(vec!["low"]));
    // Control: same priority; the one started later is less important.
    let rows: &[Row] = &[("old", MID, 2, 10, &[]), ("new", MID, 2, 20, &[])];
    assert_eq!(names(&victims(high(), 2, 4, rows, &[])), Some(vec!["new"]));
    let rows: &[Row] = &[("old", MID, 2, 30, &[]), ("new", MID, 2, 20, &[])];
    assert_eq!(names(&victims(high(), 2, 4, rows, &[])), Some(vec!["old"]));
}

/// "preemption to resolve minimal victims": only as many as needed.
#[test]
fn only_as_many_victims_as_needed() {
    let rows: &[Row] = &[
        ("a", LOW, 1, 0, &[]),
        ("b", LOW, 1, 1, &[]),
        ("c", LOW, 1, 2, &[]),
    ];
    let v = victims(high(), 1, 3, rows, &[]).expect("a candidate");
    assert_eq!(v.pods, ["c"], "the latest started goes");
    // Control: a larger pod needs two.
    let v = victims(high(), 2, 3, rows, &[]).expect("a candidate");
    assert_eq!(v.pods, ["b", "c"]);
}

/// TestDryRunPreemption "preemption with violation of same pdb": the
/// budget-breaking pods are reprieved first, so a pod that does not break
/// one goes instead, and the violations are counted.
#[test]
fn budget_breaking_pods_are_reprieved_first() {
    // `a` is more important than `b` (earlier start), but `a` is under a
    // budget with no disruptions left.
    let rows: &[Row] = &[("a", LOW, 2, 0, &[0]), ("b", LOW, 2, 5, &[])];
    let v = victims(high(), 2, 4, rows, &[0]).expect("a candidate");
    assert_eq!((v.pods, v.pdb_violations), (vec!["b"], 0));
    // Control: the budget now protects `b`, so `b` is reprieved first
    // and the victim flips to `a`, though `a` is the more important.
    let rows: &[Row] = &[("a", LOW, 2, 0, &[]), ("b", LOW, 2, 5, &[0])];
    let v = victims(high(), 2, 4, rows, &[0]).expect("a candidate");
    assert_eq!((v.pods, v.pdb_violations), (vec!["a"], 0));
}

/// TestDryRunPreemption "preemption with violation of the pdb with pod
/// whose eviction was processed": when both must go, the violation is
/// counted; the budget's allowance is spent in importance order.
#[test]
fn violations_are_counted_when_the_budget_breaking_pod_must_go() {
    let rows: &[Row] = &[("a", LOW, 2, 0, &[0]), ("b", LOW, 2, 5, &[0])];
    let v = victims(high(), 4, 4, rows, &[1]).expect("a candidate");
    assert_eq!(
        (v.pods.len(), v.pdb_violations),
        (2, 1),
        "one over the allowance"
    );
    // Control: an allowance of two breaks nothing.
    let v = victims(high(), 4, 4, rows, &[2]).expect("a candidate");
    assert_eq!((v.pods.len(), v.pdb_violations), (2, 0));
}

fn cand(priorities: &[i32], started: &[u64], pdb_violations: usize) -> Victims<&'static str> {
    Victims {
        pods: priorities.iter().map(|_| "p").collect(),
        priorities: priorities.to_vec(),
        started: started.to_vec(),
        pdb_violations,
    }
}

/// TestPickOneNodeForPreemption, one row per criterion, each with the
/// control that makes the other node win.
#[test]
fn the_candidate_node_is_picked_by_upstream_criteria() {
    // "a pod that fits with no preemption": a candidate without victims.
    assert_eq!(
        pick_candidate(&[cand(&[LOW], &[0], 0), cand(&[], &[], 0)]),
        Some(1)
    );
    // Fewest PDB violations first, even against a lower victim.
    assert_eq!(
        pick_candidate(&[cand(&[LOW], &[0], 1), cand(&[MID], &[0], 0)]),
        Some(1)
    );
    assert_eq!(
        pick_candidate(&[cand(&[LOW], &[0], 0), cand(&[MID], &[0], 0)]),
        Some(0),
        "control: equal violations, the lower victim wins"
    );
    // "machine with min highest priority pod is picked".
    assert_eq!(
        pick_candidate(&[cand(&[MID, LOW], &[0, 0], 0), cand(&[LOW, LOW], &[0, 0], 0)]),
        Some(1)
    );
    // "when highest priorities are the same, minimum sum of lower
    // priority pods is used".
    assert_eq!(
        pick_candidate(&[cand(&[MID, MID], &[0, 0], 0), cand(&[MID, LOW], &[0, 0], 0)]),
        Some(1)
    );
    assert_eq!(
        pick_candidate(&[cand(&[MID, LOW], &[0, 0], 0), cand(&[MID, MID], &[0, 0], 0)]),
        Some(0),
        "control: the sums swapped"
    );
    // "sum of adjusted priorities is considered": negative priorities
    // are shifted, so two pods of -10 sum above one.
    assert_eq!(
        pick_candidate(&[cand(&[-10, -10], &[0, 0], 0), cand(&[-10], &[0], 0)]),
        Some(1)
    );
    // "when highest priority and sum are the same, minimum number of
    // pods is used" (the shift makes a sum with more pods larger, so
    // this criterion only decides with equal shifted sums, which means
    // equal counts: the start times decide next).
    // "same priority, same number of victims, different start time for
    // each node's pods": the later-started highest victims win.
    assert_eq!(
        pick_candidate(&[cand(&[MID], &[10], 0), cand(&[MID], &[20], 0)]),
        Some(1)
    );
    assert_eq!(
        pick_candidate(&[cand(&[MID], &[20], 0), cand(&[MID], &[10], 0)]),
        Some(0),
        "control: the start times swapped"
    );
    // All equal: the first node.
    assert_eq!(
        pick_candidate(&[cand(&[MID], &[10], 0), cand(&[MID], &[10], 0)]),
        Some(0)
    );
    assert_eq!(pick_candidate::<&str>(&[]), None);
}
