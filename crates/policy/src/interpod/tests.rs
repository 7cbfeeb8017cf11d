//! Table rows transcribed from upstream's
//! `pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go`
//! (`TestRequiredAffinitySingleNode`), each named as upstream names it,
//! each followed by a control that flips its outcome.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodAffinityTerm;
use serde_json::json;

use super::*;

/// A pod of the table: namespace, labels and its required terms.
struct Pod {
    namespace: &'static str,
    labels: BTreeMap<String, String>,
    affinity: Vec<AffinityTerm>,
    anti: Vec<AffinityTerm>,
}

impl Pod {
    fn terms(&self) -> PodTerms<'_> {
        PodTerms {
            namespace: self.namespace,
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

/// `PodAntiAffinityExists(key, topologyKey)` / `PodAffinityExists`.
fn exists(key: &str, topology: &str) -> AffinityTerm {
    term(json!({
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "Exists"}]},
        "topologyKey": topology,
    }))
}

/// `PodAffinityIn(key, topologyKey, values)`.
fn within(key: &str, topology: &str, values: &[&str]) -> AffinityTerm {
    term(json!({
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "In", "values": values}]},
        "topologyKey": topology,
    }))
}

/// `PodAffinityNotIn(key, topologyKey, values)`.
fn not_within(key: &str, topology: &str, values: &[&str]) -> AffinityTerm {
    term(json!({
        "labelSelector": {"matchExpressions": [{"key": key, "operator": "NotIn", "values": values}]},
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

const SECURITYSCAN: &[&str] = &["securityscan", "value2"];

#[test]
fn existing_pods_anti_affinity_is_symmetric() {
    let service = [("service", "securityscan")];
    type Row = (&'static str, Pod, Pod, Result<(), InterPodMisfit>);
    let rows: Vec<Row> = vec![
        (
            "verify that PodAntiAffinity from existing pod is respected when pod has no \
             AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
            pod(&service),
            Pod {
                anti: vec![within("service", "zone", SECURITYSCAN)],
                ..pod(&service)
            },
            Err(InterPodMisfit::ExistingAntiAffinity),
        ),
        (
            "control (upstream: … satisfy PodAntiAffinity symmetry): the existing term is NotIn",
            pod(&service),
            Pod {
                anti: vec![not_within("service", "zone", SECURITYSCAN)],
                ..pod(&service)
            },
            Ok(()),
        ),
        (
            "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match \
             each other on AffinityTerms",
            Pod {
                anti: vec![exists("security", "zone")],
                ..pod(&[("security", "securityscan")])
            },
            Pod {
                anti: vec![exists("service", "zone"), exists("security", "zone")],
                ..pod(&service)
            },
            Err(InterPodMisfit::ExistingAntiAffinity),
        ),
        (
            "control: the incoming pod carries neither label the existing terms look for",
            Pod {
                anti: vec![exists("security", "zone")],
                ..pod(&[("other", "x")])
            },
            Pod {
                anti: vec![exists("service", "zone"), exists("security", "zone")],
                ..pod(&service)
            },
            Ok(()),
        ),
        (
            "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity \
             symmetry with the existing pod",
            Pod {
                affinity: vec![within("service", "region", SECURITYSCAN)],
                anti: vec![within("service", "hostname", &["antivirusscan", "value2"])],
                ..pod(&service)
            },
            Pod {
                anti: vec![within("service", "zone", SECURITYSCAN)],
                ..pod(&service)
            },
            Err(InterPodMisfit::ExistingAntiAffinity),
        ),
        (
            "control (upstream: satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity \
             symmetry with the existing pod)",
            Pod {
                affinity: vec![within("service", "region", SECURITYSCAN)],
                anti: vec![within("service", "hostname", &["antivirusscan", "value2"])],
                ..pod(&[("security", "S1")])
            },
            Pod {
                anti: vec![within("service", "hostname", &["antivirusscan", "value2"])],
                ..pod(&service)
            },
            // The existing term looks for `service`, which the incoming
            // pod lacks; its own affinity finds the existing pod.
            Ok(()),
        ),
        (
            "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match \
             each other on AffinityTerms",
            Pod {
                anti: vec![exists("abc", "zone"), exists("def", "zone")],
                ..pod(&[("abc", ""), ("xyz", "")])
            },
            Pod {
                anti: vec![exists("abc", "zone"), exists("def", "zone")],
                ..pod(&[("def", ""), ("xyz", "")])
            },
            // Each repels the other; upstream checks the incoming pod's
            // own terms before the existing pods'.
            Err(InterPodMisfit::AntiAffinity),
        ),
    ];
    for (name, incoming, existing, want) in rows {
        assert_eq!(
            verdict(&incoming, &[(&existing, node1())], &node1()),
            want,
            "{name}"
        );
    }
}
