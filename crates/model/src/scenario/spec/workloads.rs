//! What runs on the cluster: the manifests deployed before the steps, and
//! the admission guards, with the pod and node selections they are written in.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::scenario::located::Located;

/// Where the drill's Kubernetes objects come from.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(try_from = "WorkloadEntry", into = "WorkloadEntry")]
#[schemars(with = "WorkloadEntrySchema")]
pub enum WorkloadSource {
    /// A file of Kubernetes YAML (multi-document, as `kustomize build` prints
    /// it), relative to the drill file, with the values of its Flux
    /// post-build variables.
    Path {
        /// The file.
        path: PathBuf,
        /// Values for `${var}` placeholders, as a Flux Kustomization's
        /// `spec.postBuild.substitute` gives them.
        substitute: BTreeMap<String, String>,
        /// Files of ConfigMaps and Secrets whose data are more values, as
        /// `spec.postBuild.substituteFrom` names them.
        substitute_from: Vec<SubstituteFrom>,
    },
    /// One Kubernetes object written in the drill file.
    Inline(serde_json::Value),
    /// The workloads already on the cluster (`--backend kubeconfig`): read
    /// when the run starts, never applied, never changed.
    FromCluster(FromCluster),
}

/// `fromCluster:`: which of the cluster's objects the drill takes as its
/// workloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FromCluster {
    /// The namespaces whose objects are read (cluster-scoped ones always
    /// are); none: every namespace, `kube-system` included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
}

impl FromCluster {
    /// Whether the drill takes the objects of `namespace` from the cluster.
    pub fn covers(&self, namespace: &str) -> bool {
        self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace)
    }
}

/// One `substituteFrom:` entry: a ConfigMap or Secret in a file, relative to
/// the drill file, as Flux reads one from the cluster.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubstituteFrom {
    /// A YAML file holding one ConfigMap or Secret (`data`, or for a Secret
    /// also `stringData`); its keys are variable names.
    pub path: PathBuf,
    /// A missing file counts as one with no data, as Flux treats an absent
    /// optional ConfigMap or Secret; otherwise a missing file is an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub optional: bool,
}

/// One entry of `workloads:` as written: `path:` (with an optional
/// `substitute:` map of Flux post-build variables), `inline:` or
/// `fromCluster:`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadEntry {
    /// A file of Kubernetes YAML (multi-document, as `kustomize build` or
    /// `flux build` print it), relative to the drill file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<PathBuf>,
    /// Values for the file's Flux post-build variables (`${var}`,
    /// `${var:=default}`, …), as a Flux Kustomization's
    /// `spec.postBuild.substitute` gives them. Only with `path:`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
    /// ConfigMap and Secret files with more values, as
    /// `spec.postBuild.substituteFrom` names them; `substitute:` wins over
    /// them, and a later file over an earlier one. Only with `path:`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub substitute_from: Vec<SubstituteFrom>,
    /// One Kubernetes object written in the drill file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline: Option<serde_json::Value>,
    /// The objects already on the cluster of `--backend kubeconfig`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_cluster: Option<FromCluster>,
}

/// The schema of a `workloads:` entry: [`WorkloadEntry`] with its rule that
/// exactly one of `path:`, `inline:` or `fromCluster:` is given, which
/// editors can check.
#[derive(JsonSchema)]
#[serde(untagged, deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)] // only its schema is used
enum WorkloadEntrySchema {
    /// A file of Kubernetes YAML (multi-document, as `kustomize build` or
    /// `flux build` print it), relative to the drill file.
    Path {
        /// The file.
        path: PathBuf,
        /// Values for the file's Flux post-build variables (`${var}`,
        /// `${var:=default}`, …), as a Flux Kustomization's
        /// `spec.postBuild.substitute` gives them.
        #[serde(default)]
        substitute: BTreeMap<String, String>,
        /// ConfigMap and Secret files with more values, as
        /// `spec.postBuild.substituteFrom` names them; `substitute:` wins
        /// over them, and a later file over an earlier one.
        #[serde(default)]
        substitute_from: Vec<SubstituteFrom>,
    },
    /// One Kubernetes object written in the drill file.
    Inline {
        /// The object.
        inline: serde_json::Value,
    },
    /// The workloads already on the cluster of `--backend kubeconfig`:
    /// read when the run starts, never applied, never changed.
    FromCluster {
        /// Which namespaces.
        from_cluster: FromCluster,
    },
}

impl TryFrom<WorkloadEntry> for WorkloadSource {
    type Error = String;

    fn try_from(entry: WorkloadEntry) -> Result<Self, String> {
        if let Some(bad) = entry
            .substitute
            .keys()
            .find(|name| !crate::flux_substitute::is_variable_name(name))
        {
            return Err(format!(
                "`substitute:` key `{bad}` is not a variable name: expected letters, digits \
                 and `_`, not starting with a digit (as Flux requires)"
            ));
        }
        let given = [
            entry.path.is_some(),
            entry.inline.is_some(),
            entry.from_cluster.is_some(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(
                "a workload is one of `path:`, `inline:` or `fromCluster:`, not several".to_owned(),
            );
        }
        let substitutes = !entry.substitute.is_empty() || !entry.substitute_from.is_empty();
        if let Some(from_cluster) = entry.from_cluster {
            if substitutes {
                return Err(
                    "`substitute:` and `substituteFrom:` apply to a `path:` file; the cluster's \
                     objects are read as they run"
                        .to_owned(),
                );
            }
            if let Some(bad) = from_cluster
                .namespaces
                .iter()
                .find(|n| !crate::manifest_rules::is_dns1123_label(n))
            {
                return Err(format!(
                    "`fromCluster.namespaces` entry `{bad}` is not a namespace name; expected {}",
                    crate::manifest_rules::DNS1123_LABEL
                ));
            }
            return Ok(WorkloadSource::FromCluster(from_cluster));
        }
        match (entry.path, entry.inline) {
            (Some(path), _) => Ok(WorkloadSource::Path {
                path,
                substitute: entry.substitute,
                substitute_from: entry.substitute_from,
            }),
            (None, Some(object)) if !substitutes => Ok(WorkloadSource::Inline(object)),
            (None, Some(_)) => Err(
                "`substitute:` and `substituteFrom:` apply to a `path:` file; an `inline:` \
                 object is written with its values already"
                    .to_owned(),
            ),
            (None, None) => Err("expected `path:`, `inline:` or `fromCluster:`".to_owned()),
        }
    }
}

impl From<WorkloadSource> for WorkloadEntry {
    fn from(source: WorkloadSource) -> Self {
        match source {
            WorkloadSource::Path {
                path,
                substitute,
                substitute_from,
            } => WorkloadEntry {
                path: Some(path),
                substitute,
                substitute_from,
                inline: None,
                from_cluster: None,
            },
            WorkloadSource::Inline(object) => WorkloadEntry {
                inline: Some(object),
                ..WorkloadEntry::default()
            },
            WorkloadSource::FromCluster(from_cluster) => WorkloadEntry {
                from_cluster: Some(from_cluster),
                ..WorkloadEntry::default()
            },
        }
    }
}

/// One `guards:` entry as written: either a guard in the bench's own
/// shorthand (`name`, `action`, `match`, `require`, `mutate`), or `policy:`
/// naming a Kyverno ClusterPolicy/Policy (a file, or one of the workloads by
/// name). Validation demands exactly one form.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GuardEntry {
    /// A Kyverno policy: a file of YAML relative to the drill file, or
    /// `{name: NAME}` of a ClusterPolicy/Policy among the workloads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<Located<PolicyRef>>,
    /// Guard name, as assertions and negative controls refer to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Located<String>>,
    /// `Enforce` refuses a pod that breaks the rule; `Audit` records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<GuardAction>,
    /// Which pods the rule applies to.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<PodMatch>,
    /// What every matching pod must require of its node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<Requirement>,
    /// Add the requirement to every required node-selector term of a
    /// matching pod before checking (as a mutating policy does), instead of
    /// only checking that the pod carries it.
    #[serde(default)]
    pub mutate: bool,
}

impl GuardEntry {
    /// The shorthand guard this entry spells, when it is one and complete;
    /// validation reports every other shape.
    pub fn shorthand(&self) -> Option<GuardSpec> {
        if self.policy.is_some() {
            return None;
        }
        Some(GuardSpec {
            name: self.name.clone()?,
            action: self.action?,
            matches: self.matches.clone()?,
            require: self.require.clone()?,
            mutate: self.mutate,
            unlabelled_term: false,
        })
    }
}

/// Where a guard's Kyverno policy is: a file, or a workload by name.
#[derive(Debug, Clone, PartialEq, Eq, JsonSchema)]
#[schemars(with = "PolicyRefSchema")]
pub enum PolicyRef {
    /// A file of YAML holding the policy, relative to the drill file.
    File(PathBuf),
    /// A ClusterPolicy (or `namespace/name` of a Policy) among the workloads.
    Named(String),
}

/// The schema of `policy:`: a path, or `{name: NAME}`.
#[derive(JsonSchema)]
#[serde(untagged, deny_unknown_fields)]
#[allow(dead_code)] // only its schema is used
enum PolicyRefSchema {
    /// A file of YAML holding the policy, relative to the drill file.
    File(PathBuf),
    /// A policy among the workloads.
    Named {
        /// Its `metadata.name`.
        name: String,
    },
}

impl Serialize for PolicyRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            PolicyRef::File(path) => path.serialize(serializer),
            PolicyRef::Named(name) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry("name", name)?;
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for PolicyRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = PolicyRef;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a policy file path, or `{name: NAME}` of a policy in the workloads")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<PolicyRef, E> {
                if v.is_empty() {
                    return Err(E::invalid_value(serde::de::Unexpected::Str(v), &self));
                }
                Ok(PolicyRef::File(PathBuf::from(v)))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<PolicyRef, A::Error> {
                let mut name = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "name" if name.is_none() => name = Some(map.next_value::<String>()?),
                        "name" => return Err(serde::de::Error::duplicate_field("name")),
                        other => return Err(serde::de::Error::unknown_field(other, &["name"])),
                    }
                }
                name.map(PolicyRef::Named)
                    .ok_or_else(|| serde::de::Error::missing_field("name"))
            }
        }
        deserializer.deserialize_any(Visit)
    }
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
        assert!(
            matches!(path, WorkloadSource::Path { path, substitute, substitute_from } if path.ends_with("app.yaml") && substitute.is_empty() && substitute_from.is_empty())
        );
        let with_values: WorkloadSource =
            from_yaml("path: app.yaml\nsubstitute: {replicas: \"3\", cluster_region: eu}").unwrap();
        assert!(
            matches!(with_values, WorkloadSource::Path { substitute, .. } if substitute["replicas"] == "3" && substitute.len() == 2)
        );
        let with_files: WorkloadSource = from_yaml(
            "path: app.yaml\nsubstituteFrom: [{path: vars.yaml}, {path: s.yaml, optional: true}]",
        )
        .unwrap();
        assert!(
            matches!(&with_files, WorkloadSource::Path { substitute_from, .. } if substitute_from.len() == 2 && !substitute_from[0].optional && substitute_from[1].optional)
        );
        for bad in [
            "inline: {kind: Pod}\nsubstitute: {a: b}",
            "inline: {kind: Pod}\nsubstituteFrom: [{path: v.yaml}]",
            "path: a.yaml\nsubstituteFrom: [{kind: ConfigMap, name: v}]",
            "path: a.yaml\ninline: {kind: Pod}",
            "path: a.yaml\nsubstitute: {a-b: c}",
            "{}",
            "path: a.yaml\nsubstitutions: {a: b}",
        ] {
            assert!(from_yaml::<WorkloadSource>(bad).is_err(), "{bad}");
        }
        let inline: WorkloadSource = from_yaml("inline: {kind: Pod}").unwrap();
        assert!(matches!(inline, WorkloadSource::Inline(v) if v["kind"] == "Pod"));
    }
}
