//! What runs on the cluster: the manifests deployed before the steps, and
//! the admission guards, with the pod and node selections they are written in.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scenario::located::Located;

/// Where the drill's Kubernetes objects come from.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum WorkloadSource {
    /// A file of Kubernetes YAML (multi-document, as `kustomize build` prints
    /// it), relative to the drill file.
    Path(PathBuf),
    /// One Kubernetes object written in the drill file.
    Inline(serde_json::Value),
}

/// An admission rule the cluster enforces on every pod it admits.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GuardSpec {
    /// Guard name, as assertions and negative controls refer to it.
    pub name: Located<String>,
    /// `Enforce` refuses a pod that breaks the rule; `Audit` records it.
    pub action: GuardAction,
    /// Which pods the rule applies to.
    #[serde(rename = "match")]
    pub matches: PodMatch,
    /// What every matching pod must require of its node.
    pub require: Requirement,
    /// Add the requirement to every required node-selector term of a
    /// matching pod before checking (as a mutating policy does), instead of
    /// only checking that the pod carries it.
    #[serde(default)]
    pub mutate: bool,
    /// Set only by an ablation: after mutating, add a second required term
    /// without the requirement, which ORs it away.
    #[serde(skip)]
    #[schemars(skip)]
    pub unlabelled_term: bool,
}

/// Whether a guard refuses or only records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum GuardAction {
    /// Refuse the pod at admission.
    Enforce,
    /// Admit the pod and record the violation.
    Audit,
}

/// A selection of pods. Every field that is set must match.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodMatch {
    /// Pods that mount a claim of this storage class.
    #[serde(default)]
    pub mounts_claim_of_class: Option<Located<String>>,
    /// Pods that mount no claim of this storage class.
    #[serde(default)]
    pub mounts_no_claim_of_class: Option<Located<String>>,
    /// Pods in one of these namespaces.
    #[serde(default)]
    pub namespaces: Option<Vec<String>>,
    /// Pods carrying all of these labels.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
}

/// A requirement on the node a pod may run on.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Requirement {
    /// A node-selector requirement every required node-selector term of the
    /// pod must contain (terms are ORed, so one term without it fails open).
    pub node_affinity: Located<NodeRequirement>,
}

/// One node-selector requirement, as Kubernetes writes it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeRequirement {
    /// Label key.
    pub key: String,
    /// How the label is compared.
    pub operator: NodeOperator,
    /// Values for `In`, `NotIn`, `Gt`, `Lt`.
    #[serde(default)]
    pub values: Option<Vec<String>>,
}

impl NodeRequirement {
    /// The same requirement as a Kubernetes object, for the matchers.
    pub fn to_kubernetes(&self) -> k8s_openapi::api::core::v1::NodeSelectorRequirement {
        let operator = match self.operator {
            NodeOperator::In => "In",
            NodeOperator::NotIn => "NotIn",
            NodeOperator::Exists => "Exists",
            NodeOperator::DoesNotExist => "DoesNotExist",
            NodeOperator::Gt => "Gt",
            NodeOperator::Lt => "Lt",
        };
        k8s_openapi::api::core::v1::NodeSelectorRequirement {
            key: self.key.clone(),
            operator: operator.to_owned(),
            values: self.values.clone(),
        }
    }
}

/// Node-selector operators, as Kubernetes spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum NodeOperator {
    /// The label's value is one of the values.
    In,
    /// The label is missing or its value is none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is missing.
    DoesNotExist,
    /// The label's value, as an integer, is greater than the value.
    Gt,
    /// The label's value, as an integer, is less than the value.
    Lt,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::from_yaml;

    #[test]
    fn a_node_requirement_becomes_the_kubernetes_one_operator_for_operator() {
        for (word, op) in [
            ("In", NodeOperator::In),
            ("NotIn", NodeOperator::NotIn),
            ("Exists", NodeOperator::Exists),
            ("DoesNotExist", NodeOperator::DoesNotExist),
            ("Gt", NodeOperator::Gt),
            ("Lt", NodeOperator::Lt),
        ] {
            let req: NodeRequirement =
                from_yaml(&format!("key: tier\noperator: {word}\nvalues: [a]\n")).unwrap();
            assert_eq!(req.operator, op);
            let k = req.to_kubernetes();
            assert_eq!(
                (k.key.as_str(), k.operator.as_str(), k.values),
                ("tier", word, Some(vec!["a".to_owned()]))
            );
        }
    }

    #[test]
    fn a_guard_reads_match_as_its_pod_selection() {
        let guard: GuardSpec = from_yaml(
            "name: hcloud-off-autoscalers\naction: Enforce\n\
             match: {mountsClaimOfClass: hcloud}\n\
             require: {nodeAffinity: {key: ksail.io/autoscaled, operator: DoesNotExist}}\n",
        )
        .unwrap();
        assert_eq!(guard.action, GuardAction::Enforce);
        assert_eq!(
            guard
                .matches
                .mounts_claim_of_class
                .as_deref()
                .map(|c| c.as_str()),
            Some("hcloud")
        );
        assert!(!guard.mutate && !guard.unlabelled_term);
        assert_eq!(guard.require.node_affinity.at.line, 4);
        // Written by the bench, never by a drill file.
        assert!(from_yaml::<GuardSpec>(
            "name: g\naction: Audit\nmatch: {}\nrequire: {nodeAffinity: {key: k, operator: Exists}}\nunlabelledTerm: true\n"
        )
        .is_err());
    }

    #[test]
    fn a_workload_is_a_path_or_an_inline_object() {
        let path: WorkloadSource = from_yaml("path: manifests/app.yaml").unwrap();
        assert!(matches!(path, WorkloadSource::Path(p) if p.ends_with("app.yaml")));
        let inline: WorkloadSource = from_yaml("inline: {kind: Pod}").unwrap();
        assert!(matches!(inline, WorkloadSource::Inline(v) if v["kind"] == "Pod"));
    }
}
