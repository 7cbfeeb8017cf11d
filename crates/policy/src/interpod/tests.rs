//! What the filter's counting must keep: groups of alike pods counted at
//! once decide as their pods one by one. The filter's rules themselves
//! (upstream's `filtering_test.go` rows, namespaceSelector) are cases of
//! the conformance suite (`tests/it/conformance/inter_pod_affinity.rs`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodAffinityTerm;
use serde_json::json;

use super::*;

/// A pod of the table: namespace, labels and its required terms.
struct Pod {
    namespace: &'static str,
    namespace_labels: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    affinity: Vec<AffinityTerm>,
    anti: Vec<AffinityTerm>,
}

impl Pod {
    fn terms(&self) -> PodTerms<'_> {
        PodTerms {
            namespace: self.namespace,
            namespace_labels: &self.namespace_labels,
            labels: &self.labels,
            affinity: &self.affinity,
            anti_affinity: &self.anti,
        }
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn pod(labels_: &[(&str, &str)]) -> Pod {
    Pod {
        namespace: "default",
        namespace_labels: BTreeMap::new(),
        labels: labels(labels_),
        affinity: Vec::new(),
        anti: Vec::new(),
    }
}

/// A term from its JSON form (`PodAffinityTerm`).
fn term(value: serde_json::Value) -> AffinityTerm {
    let term: PodAffinityTerm = serde_json::from_value(value).expect("a term");
    AffinityTerm::compile(&term).expect("compiles")
}

/// `PodAffinityIn(key, topologyKey, values)`.
fn within(key: &str, topology: &str, values: &[&str]) -> AffinityTerm {
    term(json!({
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": values}]},
        "topologyKey": topology,
    }))
}

/// upstream's `node1`.
fn node1() -> BTreeMap<String, String> {
    labels(&[("region", "r1"), ("zone", "z11"), ("hostname", "h1")])
}

/// The filter's verdict for `incoming` on `node`, with `existing` running
/// on the node labelled as given.
fn verdict(
    incoming: &Pod,
    existing: &[(&Pod, BTreeMap<String, String>)],
    node: &BTreeMap<String, String>,
) -> Result<(), InterPodMisfit> {
    let mut state = InterPodState::default();
    for (pod, on) in existing {
        state.add(&incoming.terms(), &pod.terms(), on);
    }
    state.filter(&incoming.terms(), node)
}

/// The filter's verdict when the existing pods are counted as groups of
/// alike pods (`add_group`), each group's domains counted as an index
/// keeps them.
fn verdict_grouped(
    incoming: &Pod,
    existing: &[(&Pod, BTreeMap<String, String>)],
    node: &BTreeMap<String, String>,
) -> Result<(), InterPodMisfit> {
    let mut state = InterPodState::default();
    // Alike pods: the same `Pod` of the table (same namespace, labels and
    // terms), wherever they run.
    let mut groups: Vec<(&Pod, Vec<&BTreeMap<String, String>>)> = Vec::new();
    for (pod, on) in existing {
        match groups.iter_mut().find(|(p, _)| std::ptr::eq(*p, *pod)) {
            Some((_, nodes)) => nodes.push(on),
            None => groups.push((pod, vec![on])),
        }
    }
    for (pod, nodes) in &groups {
        state.add_group(&incoming.terms(), &pod.terms(), |key| {
            // The node judged is numbered first (index 0), then the
            // group's nodes.
            let mut index = KeyDomains::default();
            index.push_node(node.get(key));
            let mut domains = Domains::default();
            for on in nodes {
                if let Some(id) = index.push_node(on.get(key)) {
                    domains.add(id, 1);
                }
            }
            (Rc::new(index), Rc::new(domains))
        });
    }
    let by_labels = state.filter(&incoming.terms(), node);
    let by_number = state.filter_at(&incoming.terms(), node, Some(0));
    assert_eq!(
        by_number, by_labels,
        "by the node's number as by its labels"
    );
    by_labels
}

/// Counting alike pods at once decides exactly what counting them one by
/// one decides, for every kind of term (existing anti-affinity, affinity,
/// the first pod of a self-affine group, anti-affinity), on nodes inside,
/// outside and without the topology domain. Each case's verdicts differ
/// across the nodes, so a grouped count that ignored a group or a domain
/// would disagree.
#[test]
fn a_group_counted_at_once_decides_as_its_pods_one_by_one() {
    let h1 = node1();
    let h2 = labels(&[("region", "r1"), ("zone", "z11"), ("hostname", "h2")]);
    let far = labels(&[("region", "r2"), ("zone", "z21"), ("hostname", "h3")]);
    let bare = labels(&[("hostname", "h4")]);
    let web = pod(&[("app", "web")]);
    let db = pod(&[("app", "db")]);
    let repels_web = Pod {
        anti: vec![within("app", "zone", &["web"])],
        ..pod(&[("app", "db")])
    };
    let wants_db = Pod {
        affinity: vec![within("app", "zone", &["db"])],
        ..pod(&[("app", "web")])
    };
    let self_affine = Pod {
        affinity: vec![within("app", "zone", &["web"])],
        ..pod(&[("app", "web")])
    };
    let avoids_web = Pod {
        anti: vec![within("app", "hostname", &["web"])],
        ..pod(&[("app", "cache")])
    };
    /// Running pods, each with its node's labels.
    type Running<'p> = Vec<(&'p Pod, BTreeMap<String, String>)>;
    let cases: Vec<(&str, &Pod, Running)> = vec![
        (
            "existing anti-affinity, two alike repellers",
            &web,
            vec![(&repels_web, h1.clone()), (&repels_web, h2.clone())],
        ),
        (
            "affinity to a group running in one zone",
            &wants_db,
            vec![(&db, far.clone()), (&db, far.clone()), (&web, h1.clone())],
        ),
        ("the first pod of a self-affine group", &self_affine, vec![]),
        (
            "a self-affine group already placed",
            &self_affine,
            vec![(&web, far.clone()), (&web, far.clone())],
        ),
        (
            "anti-affinity by hostname",
            &avoids_web,
            vec![
                (&web, h1.clone()),
                (&web, far.clone()),
                (&web, bare.clone()),
            ],
        ),
    ];
    for (name, incoming, existing) in &cases {
        let one_by_one: Vec<_> = [&h1, &h2, &far, &bare]
            .iter()
            .map(|n| verdict(incoming, existing, n))
            .collect();
        let grouped: Vec<_> = [&h1, &h2, &far, &bare]
            .iter()
            .map(|n| verdict_grouped(incoming, existing, n))
            .collect();
        assert_eq!(grouped, one_by_one, "{name}");
        if !existing.is_empty() {
            assert!(
                one_by_one.iter().any(Result::is_ok) && one_by_one.iter().any(Result::is_err),
                "{name}: the case tells nodes apart: {one_by_one:?}"
            );
        }
    }
}
