//! Rows in the manner of upstream's `pkg/controller/controller_utils_test.go`
//! (`TestSortingActivePodsWithRanks`) and `pkg/controller/replicaset/
//! replica_set_test.go` (`TestGetPodsToDelete`), each paired with a control
//! that flips its outcome.

use super::*;

const SECOND: u64 = 1_000;
const NOW: u64 = 100_000 * SECOND;

/// A Ready, running pod alone on its node, created and Ready long ago.
fn pod(uid: &str) -> Candidate {
    Candidate {
        assigned: true,
        phase: PhaseRank::Running,
        ready_since: Some(NOW - 10_000 * SECOND),
        deletion_cost: 0,
        colocated: 1,
        restarts: 0,
        created: NOW - 20_000 * SECOND,
        uid: uid.to_owned(),
    }
}

/// Which of two pods the ReplicaSet deletes first: `a` or `b`.
fn first(a: Candidate, b: Candidate) -> &'static str {
    // Both orders in, so the answer cannot come from the input order.
    let ab = deletion_order(&[a.clone(), b.clone()], NOW);
    let ba = deletion_order(&[b, a], NOW);
    match (ab[0], ba[0]) {
        (0, 1) => "a",
        (1, 0) => "b",
        _ => panic!("the order depends on the input order"),
    }
}

#[test]
fn each_rule_of_active_pods_with_ranks_decides_and_its_control_flips_it() {
    // (rule, the pod `a`, the pod `b`, which goes first); every rule has
    // its control right after it: the same pair with the difference
    // turned round.
    let unassigned = Candidate {
        assigned: false,
        phase: PhaseRank::Pending,
        ready_since: None,
        colocated: 0,
        ..pod("z")
    };
    let pending = Candidate {
        phase: PhaseRank::Pending,
        ready_since: None,
        ..pod("z")
    };
    let unknown = Candidate {
        phase: PhaseRank::Unknown,
        ready_since: None,
        ..pod("a")
    };
    let not_ready = Candidate {
        ready_since: None,
        ..pod("z")
    };
    let cheap = Candidate {
        deletion_cost: -5,
        ..pod("z")
    };
    let doubled = Candidate {
        colocated: 3,
        ..pod("z")
    };
    let ready_lately = Candidate {
        ready_since: Some(NOW - 10 * SECOND),
        ..pod("z")
    };
    let restarted = Candidate {
        restarts: 4,
        ..pod("z")
    };
    let newer = Candidate {
        created: NOW - 30 * SECOND,
        ..pod("z")
    };
    let rows: [(&str, Candidate, Candidate, &str); 16] = [
        (
            "1. unassigned < assigned",
            unassigned.clone(),
            pod("a"),
            "a",
        ),
        ("1. control: assigned second", pod("a"), unassigned, "b"),
        (
            "2. Pending < Unknown",
            pending.clone(),
            unknown.clone(),
            "a",
        ),
        ("2. control: Unknown < Running", pod("a"), unknown, "b"),
        ("3. not Ready < Ready", not_ready.clone(), pod("a"), "a"),
        ("3. control: Ready second", pod("a"), not_ready, "b"),
        ("4. lower deletion cost first", cheap.clone(), pod("a"), "a"),
        ("4. control: higher cost second", pod("a"), cheap, "b"),
        (
            "5. doubled up < not doubled up",
            doubled.clone(),
            pod("a"),
            "a",
        ),
        ("5. control: alone second", pod("a"), doubled, "b"),
        (
            "6. Ready for less time first",
            ready_lately.clone(),
            pod("a"),
            "a",
        ),
        (
            "6. control: Ready longer second",
            pod("a"),
            ready_lately,
            "b",
        ),
        ("7. more restarts first", restarted.clone(), pod("a"), "a"),
        (
            "7. control: fewer restarts second",
            pod("a"),
            restarted,
            "b",
        ),
        ("8. newer < older", newer.clone(), pod("a"), "a"),
        ("8. control: older second", pod("a"), newer, "b"),
    ];
    for (rule, a, b, want) in rows {
        assert_eq!(first(a, b), want, "{rule}");
    }
}

#[test]
fn the_earlier_rule_wins_over_the_later_one() {
    // TestSortingActivePodsWithRanks pairs each rule against the next: a
    // doubled-up pod that costs more to delete stays (rule 4 before 5).
    let doubled_but_dear = Candidate {
        colocated: 5,
        deletion_cost: 10,
        ..pod("a")
    };
    assert_eq!(first(pod("z"), doubled_but_dear.clone()), "a");
    // Control: at an equal cost, the doubled-up one goes.
    let doubled = Candidate {
        deletion_cost: 0,
        ..doubled_but_dear
    };
    assert_eq!(first(pod("z"), doubled), "b");
}

#[test]
fn times_in_one_power_of_two_bucket_go_by_uid() {
    // LogarithmicScaleDown: ages of 600 s and 700 s are one bucket
    // (⌊log2(6e11)⌋ = ⌊log2(7e11)⌋ = 39), so the newer pod is not preferred
    // and the UID decides.
    let newer = Candidate {
        created: NOW - 600 * SECOND,
        ready_since: Some(NOW - 600 * SECOND),
        ..pod("b-uid")
    };
    let older = Candidate {
        created: NOW - 700 * SECOND,
        ready_since: Some(NOW - 700 * SECOND),
        ..pod("a-uid")
    };
    assert_eq!(first(newer.clone(), older.clone()), "b");
    // Control: 600 s against 2 000 s are two buckets apart; the newer goes.
    let much_older = Candidate {
        created: NOW - 2_000 * SECOND,
        ready_since: Some(NOW - 2_000 * SECOND),
        ..older
    };
    assert_eq!(first(newer, much_older), "a");
}

#[test]
fn a_scale_down_empties_the_crowded_node_first() {
    // TestGetPodsToDelete in the drills' shape: one node holds three pods
    // of the Deployment, two newer pods run alone on two other nodes; two
    // deletions take two of the crowded three, though the lone ones are
    // newer (rule 5 before rules 6 and 8).
    let crowded = |uid: &str| Candidate {
        colocated: 3,
        ..pod(uid)
    };
    let lone = |uid: &str| Candidate {
        created: NOW - 30 * SECOND,
        ready_since: Some(NOW - 20 * SECOND),
        ..pod(uid)
    };
    let gone = |pods: &[Candidate]| {
        let mut gone: Vec<String> = deletion_order(pods, NOW)[..2]
            .iter()
            .map(|&i| pods[i].uid.clone())
            .collect();
        gone.sort_unstable();
        gone
    };
    let pods = [
        crowded("c1"),
        lone("s1"),
        crowded("c2"),
        lone("s2"),
        crowded("c3"),
    ];
    assert_eq!(gone(&pods), ["c1", "c2"]);
    // Control: without the colocation ranks (every pod alone), the two
    // newer pods go.
    let flat: Vec<Candidate> = pods
        .iter()
        .map(|p| Candidate {
            colocated: 1,
            ..p.clone()
        })
        .collect();
    assert_eq!(gone(&flat), ["s1", "s2"]);
}

#[test]
fn the_deletion_cost_annotation_is_read_as_upstream_reads_it() {
    // GetDeletionCostFromPodAnnotations: "+10" and "008" are invalid (0),
    // "-3", "0" and "2147483647" are read; out of int32 range is 0.
    let rows: [(Option<&str>, i32); 9] = [
        (None, 0),
        (Some("10"), 10),
        (Some("+10"), 0),
        (Some("008"), 0),
        (Some("0"), 0),
        (Some("-3"), -3),
        (Some("2147483647"), i32::MAX),
        (Some("2147483648"), 0),
        (Some("ten"), 0),
    ];
    for (annotation, want) in rows {
        assert_eq!(deletion_cost(annotation), want, "{annotation:?}");
    }
}
