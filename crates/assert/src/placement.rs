//! Selected pods only ever ran on nodes that satisfy a requirement,
//! judged at every binding, not only at the end.

use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::result;
use drillbench_model::k8s::node_selector::CompiledNodeSelector;
use drillbench_model::scenario::assertion::Assertion;
use drillbench_model::scenario::spec::{NodeRequirement, PlacementAssertion, PodMatch};
use drillbench_observe::{Observation, Placement};
use drillbench_report::{AssertionResult, Evidence};

pub(super) fn judge(
    assertion: &Assertion,
    p: &PlacementAssertion,
    obs: &Observation,
) -> AssertionResult {
    placement(
        assertion,
        &p.pods,
        &p.nodes.iter().map(|r| r.value.clone()).collect::<Vec<_>>(),
        obs,
    )
}

/// Whether a placement's pod is one a selection names.
pub fn pods_match(pods: &PodMatch, p: &Placement) -> bool {
    let classes = || p.claims.iter().filter_map(|(_, c)| c.as_deref());
    if let Some(class) = &pods.mounts_claim_of_class
        && !classes().any(|c| c == class.as_str())
    {
        return false;
    }
    if let Some(class) = &pods.mounts_no_claim_of_class
        && classes().any(|c| c == class.as_str())
    {
        return false;
    }
    if let Some(namespaces) = &pods.namespaces
        && !namespaces.contains(&p.namespace)
    {
        return false;
    }
    if let Some(labels) = &pods.labels
        && !labels.iter().all(|(k, v)| p.pod_labels.get(k) == Some(v))
    {
        return false;
    }
    true
}

/// Describes a node requirement the way people write it.
pub fn describe(r: &NodeRequirement) -> String {
    match &r.values {
        Some(values) => format!("{} {:?} [{}]", r.key, r.operator, values.join(",")),
        None => format!("{} {:?}", r.key, r.operator),
    }
}

/// Every binding of a selected pod, at every moment, must be to a node that
/// satisfies every requirement.
fn placement(
    assertion: &Assertion,
    pods: &PodMatch,
    nodes: &[NodeRequirement],
    obs: &Observation,
) -> AssertionResult {
    let rule = nodes.iter().map(describe).collect::<Vec<_>>().join(" AND ");
    let selector = CompiledNodeSelector::compile(&NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Some(nodes.iter().map(NodeRequirement::to_kubernetes).collect()),
            match_fields: None,
        }],
    });
    let Ok(selector) = selector else {
        return result(
            assertion,
            false,
            rule,
            "invalid rule".to_owned(),
            "the placement rule does not compile".to_owned(),
            Vec::new(),
        );
    };
    let selected: Vec<&Placement> = obs
        .placements
        .iter()
        .filter(|p| pods_match(pods, p))
        .collect();
    let violations: Vec<Evidence> = selected
        .iter()
        .filter_map(|p| {
            let node = Node {
                metadata: ObjectMeta {
                    name: Some(p.node.clone()),
                    labels: Some((*p.node_labels).clone()),
                    ..Default::default()
                },
                ..Default::default()
            };
            let verdict = selector.explain(&node);
            (!verdict.is_match()).then(|| Evidence {
                at_ms: p.at,
                pod: Some(p.pod.clone()),
                node: Some(p.node.clone()),
                rule: rule.clone(),
                detail: format!(
                    "{verdict}; pool {}{}; claims {}",
                    p.pool,
                    if p.autoscaled { " (autoscaled)" } else { "" },
                    p.claims
                        .iter()
                        .map(|(c, class)| format!(
                            "{c} ({})",
                            class.as_deref().unwrap_or("no class")
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                labels: (*p.node_labels).clone(),
            })
        })
        .collect();
    let ok = violations.is_empty();
    let mut pods_out: Vec<&str> = violations.iter().filter_map(|e| e.pod.as_deref()).collect();
    pods_out.sort_unstable();
    pods_out.dedup();
    result(
        assertion,
        ok,
        rule,
        format!(
            "{} of {} placement(s) outside the rule",
            violations.len(),
            selected.len()
        ),
        if ok {
            format!(
                "all {} placement(s) of the selected pods satisfied the rule",
                selected.len()
            )
        } else {
            format!("{} ran on nodes outside the rule", pods_out.join(", "))
        },
        violations,
    )
}
