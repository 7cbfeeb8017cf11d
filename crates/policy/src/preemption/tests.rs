//! `TestPickOneNodeForPreemption`'s rows, each paired with a control that
//! flips its outcome. The victim choice on one node
//! (`TestSelectNodesForPreemption`, `TestDryRunPreemption`) is a case of the
//! conformance suite (`tests/it/conformance/priority.rs`).

use super::*;

const LOW: i32 = 0;
const MID: i32 = 100;

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

/// `calculateNumCandidates` at the default arguments: a tenth of the
/// potential nodes, but at least 100, and never more than there are
/// (`TestDryRunPreemption`'s "support minCandidateNodesPercentage"
/// and "support minCandidateNodesAbsolute" rows vary the same two bounds).
#[test]
fn the_dry_run_looks_for_a_tenth_of_the_nodes_but_at_least_a_hundred() {
    assert_eq!(candidates_to_find(5000), 500);
    assert_eq!(candidates_to_find(1999), 199, "rounded down");
    assert_eq!(candidates_to_find(999), 100, "control: the absolute floor");
    assert_eq!(
        candidates_to_find(40),
        40,
        "control: no more than there are"
    );
    assert_eq!(candidates_to_find(0), 0);
}
