use super::*;
use crate::test_support::{taint, toleration as tol};
use proptest::prelude::*;

#[test]
fn matching_rules() {
    let dedicated = taint("dedicated", Some("db"), "NoSchedule");
    let no_value = taint("gpu", None, "NoExecute");
    // (toleration, taint, tolerated)
    let table = [
        (
            tol("dedicated", "Equal", "db", "NoSchedule", None),
            &dedicated,
            true,
        ),
        (
            tol("dedicated", "", "db", "NoSchedule", None),
            &dedicated,
            true,
        ),
        (
            tol("dedicated", "Equal", "web", "NoSchedule", None),
            &dedicated,
            false,
        ),
        (
            tol("dedicated", "Equal", "", "NoSchedule", None),
            &dedicated,
            false,
        ),
        (
            tol("dedicated", "Exists", "", "NoSchedule", None),
            &dedicated,
            true,
        ),
        (tol("dedicated", "Exists", "", "", None), &dedicated, true),
        (
            tol("dedicated", "Exists", "", "NoExecute", None),
            &dedicated,
            false,
        ),
        (
            tol("dedicated", "Equal", "db", "PreferNoSchedule", None),
            &dedicated,
            false,
        ),
        (tol("other", "Exists", "", "", None), &dedicated, false),
        (tol("", "Exists", "", "", None), &dedicated, true),
        (tol("", "Exists", "", "NoExecute", None), &no_value, true),
        (tol("", "Exists", "", "NoSchedule", None), &no_value, false),
        (tol("gpu", "Equal", "", "", None), &no_value, true),
        (tol("gpu", "Equal", "x", "", None), &no_value, false),
        (tol("dedicated", "equal", "db", "", None), &dedicated, false),
        (tol("dedicated", "In", "db", "", None), &dedicated, false),
    ];
    for (t, taint, expected) in table {
        assert_eq!(tolerates(&t, taint), expected, "{t:?} vs {taint:?}");
    }
}

#[test]
fn lt_and_gt_compare_the_taints_value_with_the_tolerations() {
    let t = |v: &str| taint("sla", Some(v), "NoSchedule");
    // (operator, toleration value, taint value, tolerated)
    let table = [
        ("Lt", "100", "99", true),
        ("Lt", "100", "100", false),
        ("Lt", "100", "101", false),
        ("Gt", "100", "101", true),
        ("Gt", "100", "100", false),
        ("Gt", "-5", "0", true),
        ("Lt", "0", "-1", true),
        ("Gt", "100", "0950", false),
        ("Gt", "0100", "950", false),
        ("Gt", "1", "+5", false),
        ("Gt", "1", "abc", false),
        ("Lt", "1", "", false),
        ("Gt", "1", "9223372036854775808", false),
    ];
    for (op, bound, value, expected) in table {
        assert_eq!(
            tolerates(&tol("sla", op, bound, "", None), &t(value)),
            expected,
            "taint {value} {op} toleration {bound}"
        );
    }
}

#[test]
fn the_scheduler_filter_considers_no_schedule_and_no_execute_only() {
    let taints = [
        taint("soft", None, "PreferNoSchedule"),
        taint(TAINT_NODE_UNSCHEDULABLE, None, "NoSchedule"),
        taint(TAINT_NODE_UNREACHABLE, None, "NoExecute"),
    ];
    assert_eq!(
        scheduling_blocker(&taints, &[]).map(|t| t.key.as_str()),
        Some(TAINT_NODE_UNSCHEDULABLE)
    );
    let cordon = tol(TAINT_NODE_UNSCHEDULABLE, "Exists", "", "NoSchedule", None);
    assert_eq!(
        scheduling_blocker(&taints, std::slice::from_ref(&cordon)).map(|t| t.key.as_str()),
        Some(TAINT_NODE_UNREACHABLE)
    );
    let both = [cordon, default_tolerations()[1].clone()];
    assert_eq!(scheduling_blocker(&taints, &both), None);
    assert_eq!(scheduling_blocker(&[], &[]), None);
    assert_eq!(
        scheduling_blocker(&taints, &[tol("", "Exists", "", "", None)]),
        None
    );
    let autoscaler = [taint(
        TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER,
        Some("1764470000"),
        "NoSchedule",
    )];
    assert!(scheduling_blocker(&autoscaler, &default_tolerations()).is_some());
}

#[test]
fn cordoned_nodes_need_the_unschedulable_toleration() {
    assert!(!cordon_blocks(false, &[]));
    assert!(cordon_blocks(true, &[]));
    assert!(cordon_blocks(true, &default_tolerations()));
    assert!(!cordon_blocks(
        true,
        &[tol(
            TAINT_NODE_UNSCHEDULABLE,
            "Exists",
            "",
            "NoSchedule",
            None
        )]
    ));
    assert!(!cordon_blocks(true, &[tol("", "Exists", "", "", None)]));
}

#[test]
fn verdicts_explain_themselves() {
    let unreachable = [taint(TAINT_NODE_UNREACHABLE, None, "NoExecute")];
    assert_eq!(
        no_execute_verdict(&unreachable, &[]).to_string(),
        "evict now: NoExecute taint `node.kubernetes.io/unreachable` is not tolerated"
    );
    assert_eq!(
        no_execute_verdict(&unreachable, &default_tolerations()).to_string(),
        "evict after 300s (tolerationSeconds)"
    );
}

#[test]
fn prefer_no_schedule_counts_ignore_other_effects_tolerations() {
    let taints = [
        taint("a", None, "PreferNoSchedule"),
        taint("b", None, "PreferNoSchedule"),
        taint("c", None, "NoSchedule"),
    ];
    assert_eq!(intolerable_prefer_no_schedule(&taints, &[]), 2);
    assert_eq!(
        intolerable_prefer_no_schedule(&taints, &[tol("a", "Exists", "", "", None)]),
        1
    );
    assert_eq!(
        intolerable_prefer_no_schedule(
            &taints,
            &[tol("b", "Exists", "", "PreferNoSchedule", None)]
        ),
        1
    );
    // A NoSchedule-only toleration cannot match a PreferNoSchedule taint.
    assert_eq!(
        intolerable_prefer_no_schedule(&taints, &[tol("a", "Exists", "", "NoSchedule", None)]),
        2
    );
}

#[test]
fn no_execute_timing() {
    let unreachable = taint(TAINT_NODE_UNREACHABLE, None, "NoExecute");
    let not_ready = taint(TAINT_NODE_NOT_READY, None, "NoExecute");
    let soft = taint("soft", None, "NoSchedule");
    let defaults = default_tolerations();
    let ts = |list: &[&Taint]| list.iter().map(|t| (*t).clone()).collect::<Vec<_>>();

    assert_eq!(no_execute_verdict(&[], &[]), NoExecuteVerdict::Stay);
    assert_eq!(
        no_execute_verdict(&ts(&[&soft]), &[]),
        NoExecuteVerdict::Stay,
        "NoSchedule taints never evict"
    );
    let only_unreachable = ts(&[&unreachable]);
    assert_eq!(
        no_execute_verdict(&only_unreachable, &defaults),
        NoExecuteVerdict::EvictAfter { seconds: 300 }
    );
    assert_eq!(
        no_execute_verdict(&only_unreachable, &[]),
        NoExecuteVerdict::EvictNow {
            untolerated: Some(&only_unreachable[0])
        }
    );
    // No tolerationSeconds: tolerated forever (DaemonSet pods).
    assert_eq!(
        no_execute_verdict(
            &only_unreachable,
            &[tol(TAINT_NODE_UNREACHABLE, "Exists", "", "NoExecute", None)]
        ),
        NoExecuteVerdict::Stay
    );
    for seconds in [0, -30] {
        assert_eq!(
            no_execute_verdict(
                &only_unreachable,
                &[tol(
                    TAINT_NODE_UNREACHABLE,
                    "Exists",
                    "",
                    "NoExecute",
                    Some(seconds)
                )]
            ),
            NoExecuteVerdict::EvictNow { untolerated: None },
            "{seconds}"
        );
    }
    // The smallest used tolerationSeconds wins.
    let both = ts(&[&not_ready, &unreachable]);
    let tolerations = [
        tol(TAINT_NODE_NOT_READY, "Exists", "", "NoExecute", Some(600)),
        tol(TAINT_NODE_UNREACHABLE, "Exists", "", "NoExecute", Some(120)),
    ];
    assert_eq!(
        no_execute_verdict(&both, &tolerations),
        NoExecuteVerdict::EvictAfter { seconds: 120 }
    );
    // One untolerated NoExecute taint evicts at once whatever the others say.
    let foreign = taint("foreign", Some("x"), "NoExecute");
    let three = ts(&[&not_ready, &foreign, &unreachable]);
    assert_eq!(
        no_execute_verdict(&three, &tolerations),
        NoExecuteVerdict::EvictNow {
            untolerated: Some(&three[1])
        }
    );
}

#[test]
fn the_first_matching_toleration_is_the_one_used() {
    let unreachable = [taint(TAINT_NODE_UNREACHABLE, None, "NoExecute")];
    let narrow = tol(TAINT_NODE_UNREACHABLE, "Exists", "", "NoExecute", Some(60));
    let broad = tol("", "Exists", "", "", None);
    assert_eq!(
        no_execute_verdict(&unreachable, &[narrow.clone(), broad.clone()]),
        NoExecuteVerdict::EvictAfter { seconds: 60 }
    );
    assert_eq!(
        no_execute_verdict(&unreachable, &[broad, narrow]),
        NoExecuteVerdict::Stay
    );
}

#[test]
fn default_tolerations_are_added_unless_key_and_effect_are_covered() {
    let [not_ready, unreachable] = default_tolerations();
    assert_eq!(not_ready.key.as_deref(), Some(TAINT_NODE_NOT_READY));
    assert_eq!(unreachable.key.as_deref(), Some(TAINT_NODE_UNREACHABLE));
    for t in [&not_ready, &unreachable] {
        assert_eq!(t.operator.as_deref(), Some("Exists"));
        assert_eq!(t.effect.as_deref(), Some("NoExecute"));
        assert_eq!(t.toleration_seconds, Some(300));
    }

    let mut none = Vec::new();
    add_default_tolerations(&mut none);
    assert_eq!(none, default_tolerations().to_vec());

    // Already tolerating unreachable (any operator/value): only not-ready is added.
    let own = tol(TAINT_NODE_UNREACHABLE, "Equal", "x", "NoExecute", Some(5));
    let mut one = vec![own.clone()];
    add_default_tolerations(&mut one);
    assert_eq!(one, vec![own, not_ready.clone()]);

    // Tolerate-everything and empty-effect tolerations cover both.
    for covering in [
        tol("", "Exists", "", "", None),
        tol("", "Exists", "", "NoExecute", None),
    ] {
        let mut list = vec![covering.clone()];
        add_default_tolerations(&mut list);
        assert_eq!(list, vec![covering]);
    }
    // A NoSchedule toleration for the same key does not.
    let mut list = vec![tol(TAINT_NODE_NOT_READY, "Exists", "", "NoSchedule", None)];
    add_default_tolerations(&mut list);
    assert_eq!(list.len(), 3);
}

#[test]
fn validation_mirrors_the_apiserver() {
    let ok = [
        tol("", "Exists", "", "", None),
        tol("k", "", "v", "NoSchedule", None),
        tol("k", "Exists", "", "NoExecute", Some(30)),
        tol("k", "Gt", "-3", "", None),
    ];
    assert_eq!(validate_tolerations(&ok), Ok(()));
    let bad = [
        (tol("", "Equal", "v", "", None), "EmptyKeyNeedsExists"),
        (tol("k", "Exists", "v", "", None), "ExistsWithValue"),
        (tol("k", "Lt", "07", "", None), "NotAnInteger"),
        (tol("k", "Gt", "x", "", None), "NotAnInteger"),
        (tol("k", "In", "v", "", None), "UnknownOperator"),
        (tol("k", "Exists", "", "Sometimes", None), "UnknownEffect"),
        (
            tol("k", "Exists", "", "NoSchedule", Some(1)),
            "SecondsWithoutNoExecute",
        ),
        (
            tol("k", "Exists", "", "", Some(1)),
            "SecondsWithoutNoExecute",
        ),
    ];
    for (t, variant) in bad {
        let err = validate_tolerations(&[ok[0].clone(), t]).unwrap_err();
        assert!(format!("{err:?}").starts_with(variant), "{err:?}");
        assert!(err.to_string().starts_with("tolerations[1]: "), "{err}");
    }
}

fn effect() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["NoSchedule", "PreferNoSchedule", "NoExecute"])
}

proptest! {
    #[test]
    fn empty_key_exists_tolerates_every_taint(key in "[a-z./-]{0,12}", value in prop::option::of("[a-z0-9]{0,4}"), e in effect()) {
        prop_assert!(tolerates(&tol("", "Exists", "", "", None), &taint(&key, value.as_deref(), e)));
    }

    #[test]
    fn an_effect_restricts_and_an_empty_effect_does_not(key in "[a-z]{1,4}", e in effect(), other in effect()) {
        let t = taint(&key, None, e);
        prop_assert!(tolerates(&tol(&key, "Exists", "", "", None), &t));
        prop_assert_eq!(tolerates(&tol(&key, "Exists", "", other, None), &t), e == other);
    }

    #[test]
    fn the_filter_passes_iff_every_blocking_taint_is_tolerated(
        taints in prop::collection::vec(("[ab]", effect()), 0..5),
        tolerations in prop::collection::vec(("[ab]?", prop::sample::select(vec!["", "NoSchedule", "NoExecute", "PreferNoSchedule"])), 0..3),
    ) {
        let taints: Vec<Taint> = taints.iter().map(|(k, e)| taint(k, None, e)).collect();
        let tolerations: Vec<Toleration> = tolerations.iter().map(|(k, e)| tol(k, "Exists", "", e, None)).collect();
        let all = taints.iter().filter(|t| t.effect != "PreferNoSchedule").all(|t| tolerated_by_any(&tolerations, t));
        prop_assert_eq!(scheduling_blocker(&taints, &tolerations).is_none(), all);
    }
}
