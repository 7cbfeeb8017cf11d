//! The NodeAffinity filter: `nodeSelector` and required node affinity,
//! rows of component-helpers' `TestPodMatchesNodeSelectorAndAffinityTerms`
//! and `TestNodeSelectorMatch`.

use k8s_openapi::api::core::v1::{Node, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::{Behaviour, Pair, Source, from_json, labels, pair, row};
use drillbench_model::k8s::node_selector::RequiredNodeAffinity;

/// `{key, operator, values}`.
fn expr(key: &str, op: &str, values: &[&str]) -> Value {
    if values.is_empty() {
        json!({"key": key, "operator": op})
    } else {
        json!({"key": key, "operator": op, "values": values})
    }
}

/// A term of `matchExpressions`.
fn term(exprs: &[Value]) -> Value {
    json!({"matchExpressions": exprs})
}

/// A term matching the node named `name`.
fn named(name: &str) -> Value {
    json!({"matchFields": [expr("metadata.name", "In", &[name])]})
}

/// A pod spec with these required node selector terms (and a
/// `nodeSelector`, when given).
fn spec(terms: Value, node_selector: Option<Value>) -> PodSpec {
    let mut spec = json!({"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}});
    if let Some(selector) = node_selector {
        spec["nodeSelector"] = selector;
    }
    from_json(spec)
}

/// Whether the filter lets the pod onto the node; `Err` when the pod is
/// refused before it gets there.
fn fits(spec: &PodSpec, node: &str, node_labels: &[(&str, &str)]) -> Result<bool, String> {
    let node = Node {
        metadata: ObjectMeta {
            name: (!node.is_empty()).then(|| node.to_owned()),
            labels: Some(labels(node_labels)),
            ..Default::default()
        },
        ..Default::default()
    };
    RequiredNodeAffinity::from_pod_spec(spec)
        .map(|r| r.matches(&node))
        .map_err(|e| e.to_string())
}

fn selector_only(pairs: &[(&str, &str)]) -> PodSpec {
    from_json(json!({"containers": [], "nodeSelector": labels(pairs)}))
}

pub(super) fn pairs() -> Vec<Pair> {
    let na = |case, control| pair(Source::NodeAffinity, Behaviour::NodeAffinity, case, control);
    let foo_bar = [("foo", "bar")];
    let gpu_nvidia = [("GPU", "NVIDIA-GRID-K1")];
    vec![
        na(
            row(
                "no selector",
                fits(&PodSpec::default(), "n", &[]),
                Ok::<_, String>(true),
            ),
            row(
                "missing labels",
                fits(&selector_only(&foo_bar), "n", &[]),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "node labels are superset",
                fits(&selector_only(&foo_bar), "n", &[("foo", "bar"), ("baz", "blah")]),
                Ok::<_, String>(true),
            ),
            row(
                "node labels are subset",
                fits(&selector_only(&[("foo", "bar"), ("baz", "blah")]), "n", &foo_bar),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with matchExpressions using In operator that matches the existing node",
                fits(&spec(json!([term(&[expr("foo", "In", &["bar", "value2"])])]), None), "n", &foo_bar),
                Ok::<_, String>(true),
            ),
            row(
                "Pod with affinity that don't match node's labels won't schedule onto the node",
                fits(&spec(json!([term(&[expr("foo", "In", &["value1", "value2"])])]), None), "n", &foo_bar),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with matchExpressions using Gt operator that matches the existing node",
                fits(&spec(json!([term(&[expr("kernel-version", "Gt", &["0204"])])]), None), "n", &[("kernel-version", "0206")]),
                Ok::<_, String>(true),
            ),
            row(
                "control: Gt 0204 on kernel-version 0203",
                fits(&spec(json!([term(&[expr("kernel-version", "Gt", &["0204"])])]), None), "n", &[("kernel-version", "0203")]),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "control: Lt 7 on bar 8 (TestNodeSelectorRequirementsAsSelector's bar<7)",
                fits(&spec(json!([term(&[expr("bar", "Lt", &["7"])])]), None), "n", &[("bar", "8")]),
                Ok::<_, String>(false),
            ),
            row(
                "bar<7 on bar 6",
                fits(&spec(json!([term(&[expr("bar", "Lt", &["7"])])]), None), "n", &[("bar", "6")]),
                Ok::<_, String>(true),
            ),
        ),
        na(
            row(
                "Pod with matchExpressions using NotIn operator that matches the existing node",
                fits(&spec(json!([term(&[expr("mem-type", "NotIn", &["DDR", "DDR2"])])]), None), "n", &[("mem-type", "DDR3")]),
                Ok::<_, String>(true),
            ),
            row(
                "control: NotIn DDR, DDR2 on mem-type DDR2",
                fits(&spec(json!([term(&[expr("mem-type", "NotIn", &["DDR", "DDR2"])])]), None), "n", &[("mem-type", "DDR2")]),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with matchExpressions using Exists operator that matches the existing node",
                fits(&spec(json!([term(&[expr("GPU", "Exists", &[])])]), None), "n", &gpu_nvidia),
                Ok::<_, String>(true),
            ),
            row(
                "control: Exists GPU on a node without the label",
                fits(&spec(json!([term(&[expr("GPU", "Exists", &[])])]), None), "n", &foo_bar),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "DoesNotExist on a node without the key matches (the guard that fails open)",
                fits(&spec(json!([term(&[expr("ksail.io/autoscaled", "DoesNotExist", &[])])]), None), "n", &foo_bar),
                Ok::<_, String>(true),
            ),
            row(
                "control: DoesNotExist on a node with the key",
                fits(&spec(json!([term(&[expr("ksail.io/autoscaled", "DoesNotExist", &[])])]), None), "n", &[("ksail.io/autoscaled", "true")]),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with a nil []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
                fits(&spec(Value::Null, None), "n", &foo_bar),
                Ok::<_, String>(false),
            ),
            row(
                "Pod with Affinity but nil NodeSelector will schedule onto a node",
                fits(&from_json(json!({"containers": [], "affinity": {"nodeAffinity": {}}})), "n", &foo_bar),
                Ok::<_, String>(true),
            ),
        ),
        na(
            row(
                "Pod with an empty []NodeSelectorTerm in affinity, can't match the node's labels and won't schedule onto the node",
                fits(&spec(json!([]), None), "n", &foo_bar),
                Ok::<_, String>(false),
            ),
            row(
                "Pod with no Affinity will schedule onto a node",
                fits(&from_json(json!({"containers": []})), "n", &foo_bar),
                Ok::<_, String>(true),
            ),
        ),
        na(
            row(
                "Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule onto the node",
                fits(&spec(json!([{"matchExpressions": []}]), None), "n", &foo_bar),
                Ok::<_, String>(false),
            ),
            row(
                "control: a term of one Exists expression on the same node",
                fits(&spec(json!([term(&[expr("foo", "Exists", &[])])]), None), "n", &foo_bar),
                Ok::<_, String>(true),
            ),
        ),
        na(
            row(
                "Pod with multiple matchExpressions ANDed that matches the existing node",
                fits(&spec(json!([term(&[expr("GPU", "Exists", &[]), expr("GPU", "NotIn", &["AMD", "INTER"])])]), None), "n", &gpu_nvidia),
                Ok::<_, String>(true),
            ),
            row(
                "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
                fits(&spec(json!([term(&[expr("GPU", "Exists", &[]), expr("GPU", "In", &["AMD", "INTER"])])]), None), "n", &gpu_nvidia),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule onto the node",
                fits(&spec(json!([term(&[expr("foo", "In", &["bar", "value2"])]), term(&[expr("diffkey", "In", &["wrong", "value2"])])]), None), "n", &foo_bar),
                Ok::<_, String>(true),
            ),
            row(
                "control: neither ORed term matches",
                fits(&spec(json!([term(&[expr("foo", "In", &["baz"])]), term(&[expr("diffkey", "In", &["wrong", "value2"])])]), None), "n", &foo_bar),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are satisfied, will schedule onto the node",
                fits(&spec(json!([term(&[expr("foo", "Exists", &[])])]), Some(json!({"foo": "bar"}))), "n", &foo_bar),
                Ok::<_, String>(true),
            ),
            row(
                "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are deprecating) is not satisfied, won't schedule onto the node",
                fits(&spec(json!([term(&[expr("foo", "Exists", &[])])]), Some(json!({"foo": "bar"}))), "n", &[("foo", "barrrrrr")]),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with matchFields using In operator that matches the existing node",
                fits(&spec(json!([named("node_1")]), None), "node_1", &[]),
                Ok::<_, String>(true),
            ),
            row(
                "Pod with matchFields using In operator that does not match the existing node",
                fits(&spec(json!([named("node_1")]), None), "node_2", &[]),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with two terms: matchFields does not match, but matchExpressions matches",
                fits(&spec(json!([named("node_1"), term(&[expr("foo", "In", &["bar"])])]), None), "node_2", &foo_bar),
                Ok::<_, String>(true),
            ),
            row(
                "Pod with one term: matchFields does not match, but matchExpressions matches",
                fits(&spec(json!([{"matchFields": [expr("metadata.name", "In", &["node_1"])], "matchExpressions": [expr("foo", "In", &["bar"])]}]), None), "node_2", &foo_bar),
                Ok::<_, String>(false),
            ),
        ),
        na(
            row(
                "Pod with one term: both matchFields and matchExpressions match",
                fits(&spec(json!([{"matchFields": [expr("metadata.name", "In", &["node_1"])], "matchExpressions": [expr("foo", "In", &["bar"])]}]), None), "node_1", &foo_bar),
                Ok::<_, String>(true),
            ),
            row(
                "Pod with two terms: both matchFields and matchExpressions do not match",
                fits(&spec(json!([named("node_1"), term(&[expr("foo", "In", &["not-match-to-bar"])])]), None), "node_2", &foo_bar),
                Ok::<_, String>(false),
            ),
        ),
        pair(
            Source::NodeAffinityDocs,
            Behaviour::ApiValidation,
            row(
                "invalid field selector: matchFields metadata.name with two values (must have one element)",
                fits(&spec(json!([{"matchFields": [expr("metadata.name", "In", &["host_1", "host_2"])]}]), None), "host_1", &[]).is_err(),
                true,
            ),
            row(
                "control: matchFields metadata.name with one value",
                fits(&spec(json!([named("host_1")]), None), "host_1", &[]).is_err(),
                false,
            ),
        ),
        pair(
            Source::NodeAffinityDocs,
            Behaviour::ApiValidation,
            row(
                "values set must be empty for exists and does not exist",
                fits(&spec(json!([term(&[expr("foo", "Exists", &["bar", "baz"])])]), None), "n", &[]).is_err(),
                true,
            ),
            row(
                "control: Exists without values",
                fits(&spec(json!([term(&[expr("foo", "Exists", &[])])]), None), "n", &[]).is_err(),
                false,
            ),
        ),
    ]
}
