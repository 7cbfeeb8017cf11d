use super::*;
use k8s_openapi::api::core::v1::{Affinity, NodeAffinity};
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    Node {
        metadata: ObjectMeta {
            name: (!name.is_empty()).then(|| name.to_owned()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
            ),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_owned(),
        operator: op.to_owned(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
    }
}

fn term(exprs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: Some(exprs),
        match_fields: None,
    }
}

fn fields(reqs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: None,
        match_fields: Some(reqs),
    }
}

fn selector(terms: Vec<NodeSelectorTerm>) -> NodeSelector {
    NodeSelector {
        node_selector_terms: terms,
    }
}

fn matches(terms: Vec<NodeSelectorTerm>, n: &Node) -> bool {
    node_selector_matches(&selector(terms), n).unwrap()
}

#[test]
fn operators_on_present_and_missing_keys() {
    let labelled = node("n", &[("zone", "a"), ("cores", "8"), ("odd", "x8")]);
    let bare = node("n", &[]);
    // (requirement, matches the labelled node, matches the bare node)
    let table = [
        (req("zone", "In", &["a", "b"]), true, false),
        (req("zone", "In", &["b"]), false, false),
        (req("zone", "NotIn", &["b"]), true, true),
        (req("zone", "NotIn", &["a"]), false, true),
        (req("zone", "Exists", &[]), true, false),
        (req("zone", "DoesNotExist", &[]), false, true),
        (req("cores", "Gt", &["4"]), true, false),
        (req("cores", "Gt", &["8"]), false, false),
        (req("cores", "Lt", &["9"]), true, false),
        (req("cores", "Lt", &["8"]), false, false),
        (req("cores", "Gt", &["-1"]), true, false),
        (req("cores", "Lt", &["-1"]), false, false),
        // A non-integer label value matches neither Gt nor Lt.
        (req("odd", "Gt", &["0"]), false, false),
        (req("odd", "Lt", &["100"]), false, false),
        (req("zone", "Gt", &["0"]), false, false),
    ];
    for (r, on_labelled, on_bare) in table {
        let desc = format!("{} {} {:?}", r.key, r.operator, r.values);
        assert_eq!(
            matches(vec![term(vec![r.clone()])], &labelled),
            on_labelled,
            "{desc}"
        );
        assert_eq!(
            matches(vec![term(vec![r])], &bare),
            on_bare,
            "{desc} on bare"
        );
    }
}

#[test]
fn gt_and_lt_parse_like_go() {
    let cases = [
        ("-5", "Lt", "-4", true),
        ("-5", "Gt", "-6", true),
        ("+7", "Gt", "6", true),
        ("007", "Gt", "6", true),
        ("7", "Gt", "+6", true),
        (" 7", "Gt", "6", false),
        ("1_000", "Gt", "6", false),
        ("9223372036854775808", "Gt", "0", false),
        ("-9223372036854775808", "Lt", "0", true),
        ("", "Lt", "1", false),
    ];
    for (value, op, operand, expected) in cases {
        let n = node("n", &[("k", value)]);
        assert_eq!(
            matches(vec![term(vec![req("k", op, &[operand])])], &n),
            expected,
            "{value:?} {op} {operand}"
        );
    }
}

#[test]
fn terms_are_ored_and_expressions_anded() {
    let n = node("n", &[("a", "1"), ("b", "2")]);
    let a1 = || req("a", "In", &["1"]);
    let b3 = || req("b", "In", &["3"]);
    assert!(!matches(vec![term(vec![a1(), b3()])], &n));
    assert!(matches(vec![term(vec![b3()]), term(vec![a1()])], &n));
    assert!(matches(vec![term(vec![a1(), req("b", "Exists", &[])])], &n));
}

#[test]
fn empty_term_list_and_empty_terms_match_nothing() {
    let n = node("n", &[("a", "1")]);
    assert!(!matches(vec![], &n));
    assert!(!matches(vec![NodeSelectorTerm::default()], &n));
    assert!(!matches(vec![term(vec![])], &n));
    // An empty term does not poison the others.
    assert!(matches(
        vec![
            NodeSelectorTerm::default(),
            term(vec![req("a", "Exists", &[])])
        ],
        &n
    ));
    let compiled = CompiledNodeSelector::compile(&selector(vec![])).unwrap();
    assert_eq!(
        compiled.explain(&n).to_string(),
        "the selector has no terms, so it matches no node"
    );
    let compiled =
        CompiledNodeSelector::compile(&selector(vec![NodeSelectorTerm::default()])).unwrap();
    assert_eq!(
        compiled.explain(&n),
        NodeSelectorVerdict::NotMatched {
            failures: vec![TermFailure::Empty { term: 0 }]
        }
    );
}

#[test]
fn match_fields_select_by_node_name() {
    let n = node("prod-worker-1", &[]);
    let name_in = |v: &str| fields(vec![req("metadata.name", "In", &[v])]);
    let name_not_in = |v: &str| fields(vec![req("metadata.name", "NotIn", &[v])]);
    assert!(matches(vec![name_in("prod-worker-1")], &n));
    assert!(!matches(vec![name_in("prod-worker-2")], &n));
    assert!(matches(vec![name_not_in("prod-worker-2")], &n));
    assert!(!matches(vec![name_not_in("prod-worker-1")], &n));
    // Fields and expressions in one term are ANDed.
    let both = NodeSelectorTerm {
        match_expressions: Some(vec![req("zone", "Exists", &[])]),
        match_fields: Some(vec![req("metadata.name", "In", &["prod-worker-1"])]),
    };
    assert!(!matches(vec![both.clone()], &n));
    assert!(matches(
        vec![both],
        &node("prod-worker-1", &[("zone", "a")])
    ));
    // Upstream skips field requirements for a node without a name.
    assert!(matches(vec![name_in("prod-worker-1")], &node("", &[])));
}

#[test]
fn invalid_requirements_are_errors() {
    let compile = |r: NodeSelectorRequirement| {
        CompiledNodeSelector::compile(&selector(vec![
            term(vec![req("ok", "Exists", &[])]),
            term(vec![req("ok", "Exists", &[]), r]),
        ]))
        .unwrap_err()
    };
    let path = "nodeSelectorTerms[1].matchExpressions[1]".to_owned();
    assert_eq!(
        compile(req("k", "In", &[])),
        NodeSelectorError::MissingValues {
            path: path.clone(),
            operator: Operator::In
        }
    );
    assert_eq!(
        compile(req("k", "NotIn", &[])),
        NodeSelectorError::MissingValues {
            path: path.clone(),
            operator: Operator::NotIn
        }
    );
    assert_eq!(
        compile(req("k", "Exists", &["x"])),
        NodeSelectorError::UnexpectedValues {
            path: path.clone(),
            operator: Operator::Exists,
            count: 1
        }
    );
    assert_eq!(
        compile(req("k", "Gt", &["1", "2"])),
        NodeSelectorError::NotSingleValue {
            path: path.clone(),
            operator: Operator::Gt,
            count: 2
        }
    );
    assert_eq!(
        compile(req("k", "Lt", &[])),
        NodeSelectorError::NotSingleValue {
            path: path.clone(),
            operator: Operator::Lt,
            count: 0
        }
    );
    assert_eq!(
        compile(req("k", "Gt", &["1.5"])),
        NodeSelectorError::NotAnInteger {
            path: path.clone(),
            operator: Operator::Gt,
            value: "1.5".to_owned()
        }
    );
    assert!(matches!(
        compile(req("k", "in", &["a"])),
        NodeSelectorError::UnknownOperator { .. }
    ));
    assert!(matches!(
        compile(req("", "Exists", &[])),
        NodeSelectorError::EmptyKey { .. }
    ));
    let err = compile(req("k", "Gt", &["two"]));
    assert_eq!(
        err.to_string(),
        "nodeSelectorTerms[1].matchExpressions[1]: `Gt` compares integers, but `two` is not one"
    );

    let compile_field = |r: NodeSelectorRequirement| {
        CompiledNodeSelector::compile(&selector(vec![fields(vec![r])])).unwrap_err()
    };
    assert!(matches!(
        compile_field(req("metadata.uid", "In", &["x"])),
        NodeSelectorError::UnsupportedField { .. }
    ));
    assert!(matches!(
        compile_field(req("metadata.name", "Exists", &[])),
        NodeSelectorError::UnsupportedFieldOperator { .. }
    ));
    assert!(matches!(
        compile_field(req("metadata.name", "In", &["a", "b"])),
        NodeSelectorError::NotSingleValue { count: 2, .. }
    ));
}

#[test]
fn explanations_name_the_failing_expression_and_the_label_seen() {
    // The incident's fail-open guard and its fail-closed replacement.
    let autoscaler_unstamped = node("autoscale-cx43-0123456789ab", &[]);
    let autoscaler = node(
        "autoscale-cx43-0123456789ab",
        &[("ksail.io/autoscaled", "true")],
    );
    let guard = CompiledNodeSelector::compile(&selector(vec![term(vec![req(
        "ksail.io/autoscaled",
        "DoesNotExist",
        &[],
    )])]))
    .unwrap();
    assert!(guard.matches(&autoscaler_unstamped), "fails open");
    assert_eq!(
        guard.explain(&autoscaler).to_string(),
        "term 0: matchExpressions[0] `ksail.io/autoscaled DoesNotExist` failed: node has `ksail.io/autoscaled=true`"
    );
    let positive = CompiledNodeSelector::compile(&selector(vec![
        term(vec![req(
            "platform.devantler.tech/baseline-worker",
            "In",
            &["true"],
        )]),
        fields(vec![req("metadata.name", "In", &["prod-worker-9"])]),
    ]))
    .unwrap();
    let verdict = positive.explain(&autoscaler_unstamped);
    assert_eq!(
        verdict,
        NodeSelectorVerdict::NotMatched {
            failures: vec![
                TermFailure::Expression {
                    term: 0,
                    index: 0,
                    requirement: "platform.devantler.tech/baseline-worker In (true)".to_owned(),
                    key: "platform.devantler.tech/baseline-worker".to_owned(),
                    seen: None,
                },
                TermFailure::Field {
                    term: 1,
                    index: 0,
                    requirement: "metadata.name In (prod-worker-9)".to_owned(),
                    seen: "autoscale-cx43-0123456789ab".to_owned(),
                },
            ]
        }
    );
    assert_eq!(
        verdict.to_string(),
        "term 0: matchExpressions[0] `platform.devantler.tech/baseline-worker In (true)` failed: node has no label `platform.devantler.tech/baseline-worker`; term 1: matchFields[0] `metadata.name In (prod-worker-9)` failed: node is `autoscale-cx43-0123456789ab`"
    );
    let worker = node(
        "prod-worker-9",
        &[("platform.devantler.tech/baseline-worker", "false")],
    );
    assert_eq!(
        positive.explain(&worker),
        NodeSelectorVerdict::Matched { term: 1 }
    );
}

fn pod_spec(
    node_selector: &[(&str, &str)],
    required: Option<NodeSelector>,
    preferred: Vec<PreferredSchedulingTerm>,
) -> PodSpec {
    PodSpec {
        node_selector: (!node_selector.is_empty()).then(|| {
            node_selector
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        }),
        affinity: Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: required,
                preferred_during_scheduling_ignored_during_execution: Some(preferred),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn node_selector_and_required_affinity_must_both_match() {
    let n = node("n", &[("disk", "ssd"), ("zone", "a")]);
    let zone_a = || Some(selector(vec![term(vec![req("zone", "In", &["a"])])]));
    let zone_b = || Some(selector(vec![term(vec![req("zone", "In", &["b"])])]));
    let check = |ns: &[(&str, &str)], aff| {
        RequiredNodeAffinity::from_pod_spec(&pod_spec(ns, aff, vec![])).unwrap()
    };
    assert!(check(&[], None).matches(&n), "no constraints match all");
    assert!(check(&[("disk", "ssd")], zone_a()).matches(&n));
    assert!(!check(&[("disk", "hdd")], zone_a()).matches(&n));
    assert!(!check(&[("disk", "ssd")], zone_b()).matches(&n));
    assert!(!check(&[], Some(selector(vec![]))).matches(&n));
    assert_eq!(
        check(&[("disk", "ssd"), ("gpu", "yes")], zone_a())
            .explain(&n)
            .to_string(),
        "nodeSelector wants `gpu=yes`, node has no label `gpu`"
    );
    assert_eq!(
        check(&[("disk", "hdd")], zone_a()).explain(&n),
        NodeAffinityVerdict::NodeSelector {
            key: "disk".to_owned(),
            wanted: "hdd".to_owned(),
            seen: Some("ssd".to_owned())
        }
    );
    let verdict = check(&[("disk", "ssd")], zone_b()).explain(&n);
    assert!(matches!(verdict, NodeAffinityVerdict::Affinity(_)));
    assert!(
        verdict
            .to_string()
            .starts_with("required node affinity did not match: term 0:")
    );
    assert!(check(&[("disk", "ssd")], zone_a()).explain(&n).is_match());
}

#[test]
fn preferred_terms_sum_matching_weights() {
    let pref = |weight, t| PreferredSchedulingTerm {
        weight,
        preference: t,
    };
    let spec = pod_spec(
        &[],
        None,
        vec![
            pref(10, term(vec![req("zone", "In", &["a"])])),
            pref(5, term(vec![req("disk", "Exists", &[])])),
            pref(80, term(vec![req("zone", "In", &["b"])])),
            pref(100, NodeSelectorTerm::default()),
            pref(1, fields(vec![req("metadata.name", "In", &["n"])])),
        ],
    );
    let prefs = CompiledPreferences::from_pod_spec(&spec).unwrap();
    let n = node("n", &[("zone", "a"), ("disk", "ssd")]);
    assert_eq!(prefs.score(&n), 16);
    assert_eq!(prefs.matching_terms(&n), vec![(0, 10), (1, 5), (4, 1)]);
    assert_eq!(prefs.score(&node("m", &[("zone", "b")])), 80);
    assert_eq!(
        CompiledPreferences::from_pod_spec(&PodSpec::default())
            .unwrap()
            .score(&n),
        0
    );
    for weight in [0, 101, -1] {
        assert!(matches!(
            CompiledPreferences::compile(&[pref(weight, term(vec![]))]),
            Err(NodeSelectorError::InvalidWeight { .. })
        ));
    }
}

fn labels_strategy() -> impl Strategy<Value = BTreeMap<String, String>> {
    prop::collection::btree_map("[a-c]", "[x-z0-9]{0,2}", 0..4)
}

proptest! {
    #[test]
    fn not_in_negates_in_when_the_key_is_present(
        labels in labels_strategy(),
        key in "[a-c]",
        values in prop::collection::vec("[x-z0-9]{0,2}", 1..4),
    ) {
        let values: Vec<&str> = values.iter().map(String::as_str).collect();
        let label_pairs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let n = node("n", &label_pairs);
        let is_in = matches(vec![term(vec![req(&key, "In", &values)])], &n);
        let not_in = matches(vec![term(vec![req(&key, "NotIn", &values)])], &n);
        if labels.contains_key(&key) {
            prop_assert_ne!(is_in, not_in);
        } else {
            prop_assert!(!is_in && not_in);
        }
        let exists = matches(vec![term(vec![req(&key, "Exists", &[])])], &n);
        let absent = matches(vec![term(vec![req(&key, "DoesNotExist", &[])])], &n);
        prop_assert_ne!(exists, absent);
        prop_assert_eq!(exists, labels.contains_key(&key));
    }

    #[test]
    fn gt_and_lt_agree_with_integer_order(value in any::<i64>(), bound in any::<i64>()) {
        let n = node("n", &[("k", &value.to_string())]);
        let gt = matches(vec![term(vec![req("k", "Gt", &[&bound.to_string()])])], &n);
        let lt = matches(vec![term(vec![req("k", "Lt", &[&bound.to_string()])])], &n);
        prop_assert_eq!(gt, value > bound);
        prop_assert_eq!(lt, value < bound);
    }

    #[test]
    fn explain_agrees_with_matches(
        labels in labels_strategy(),
        reqs in prop::collection::vec(
            ("[a-c]", prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"]), "[x-z0-9]{0,2}"),
            0..6,
        ),
        split in 0usize..6,
    ) {
        let to_req = |(k, op, v): &(String, &str, String)| {
            let values: &[&str] = if matches!(*op, "In" | "NotIn") { &[v.as_str()] } else { &[] };
            req(k, op, values)
        };
        let split = split.min(reqs.len());
        let terms = vec![
            term(reqs[..split].iter().map(to_req).collect()),
            term(reqs[split..].iter().map(to_req).collect()),
        ];
        let label_pairs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let n = node("n", &label_pairs);
        let compiled = CompiledNodeSelector::compile(&selector(terms)).unwrap();
        prop_assert_eq!(compiled.matches(&n), compiled.explain(&n).is_match());
    }
}
