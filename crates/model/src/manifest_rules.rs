//! Manifests decoded into their Kubernetes types and checked as the API
//! server would on create, when a drill is loaded: issue 19 found invalid
//! quantities, a PDB with both forms, operator `Bogus` and type errors
//! reaching the simulator's provisioning (exit 3), and `kind: Foo`, claims
//! of a StorageClass that does not exist and undeclared namespaces accepted
//! without a word. Each problem carries the JSON pointer of the offending
//! field, so the diagnostic points at the field's line and column.
//!
//! Transcribed from upstream, not copied (each rule's test names its source):
//! - apimachinery `validation.IsDNS1123Subdomain`, `IsDNS1123Label`,
//!   `IsDNS1035Label`, `IsQualifiedName` (names, namespaces, label keys);
//! - apimachinery `ValidateLabelSelectorRequirement` (selector operators);
//! - core `ValidateNodeSelectorRequirement`, `ValidateResourceRequirements`,
//!   `ValidateNonnegativeQuantity`, `ValidatePersistentVolumeClaimSpec`
//!   (`ValidatePositiveQuantityValue` for the storage request);
//! - policy `ValidatePodDisruptionBudgetSpec` (one of minAvailable and
//!   maxUnavailable);
//! - the `Priority` admission plugin, which refuses a pod naming a
//!   PriorityClass that does not exist. A claim naming a StorageClass that
//!   does not exist is admitted by a real cluster but never binds, so a
//!   drill relying on it would pass on nothing;
//! - the `NamespaceLifecycle` admission plugin
//!   (<https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/#namespacelifecycle>,
//!   plugin/pkg/admission/namespace/lifecycle/admission.go), which refuses
//!   an object of a namespaced kind in a namespace that does not exist. A
//!   drill's cluster starts with the system namespaces only, so every other
//!   namespace needs a Namespace object among the workloads, as a platform
//!   that manages its namespaces renders them (`kustomize build` prints the
//!   `namespace.yaml` a kustomization lists).

use std::collections::BTreeSet;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::k8s::disruption::{Budget, DisruptionError, PdbSelector};
use crate::k8s::quantity::ParsedQuantity;

/// A rule broken by one field of one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// JSON pointer of the field (`/spec/replicas`); `""` for the object.
    pub pointer: String,
    pub message: String,
}

impl FieldProblem {
    pub(crate) fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        FieldProblem {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

type Decode = fn(&Value) -> Result<(), String>;

fn decodes<T: DeserializeOwned>(value: &Value) -> Result<(), String> {
    T::deserialize(value).map(|_| ()).map_err(|e| e.to_string())
}

/// The built-in API groups, with the versions and kinds each serves (as of
/// Kubernetes 1.36, the version the bench's k8s-openapi types follow). A
/// kind in one of these groups that is not listed is a mistake (`kind: Foo`,
/// `apps/v2`); any other group is a custom resource or an add-on (Flux's
/// HelmRelease and Kustomization, Kyverno's ClusterPolicy), which the bench
/// records as not simulated, on purpose.
/// A group's versions, each with the kinds it serves.
type Versions = &'static [(&'static str, &'static [&'static str])];

const BUILT_IN: &[(&str, Versions)] = &[
    (
        "",
        &[(
            "v1",
            &[
                "Binding",
                "ConfigMap",
                "Endpoints",
                "Event",
                "LimitRange",
                "Namespace",
                "Node",
                "PersistentVolume",
                "PersistentVolumeClaim",
                "Pod",
                "PodTemplate",
                "ReplicationController",
                "ResourceQuota",
                "Secret",
                "Service",
                "ServiceAccount",
            ],
        )],
    ),
    (
        "apps",
        &[(
            "v1",
            &[
                "ControllerRevision",
                "DaemonSet",
                "Deployment",
                "ReplicaSet",
                "StatefulSet",
            ],
        )],
    ),
    ("batch", &[("v1", &["CronJob", "Job"])]),
    ("policy", &[("v1", &["PodDisruptionBudget", "Eviction"])]),
    (
        "storage.k8s.io",
        &[(
            "v1",
            &[
                "CSIDriver",
                "CSINode",
                "CSIStorageCapacity",
                "StorageClass",
                "VolumeAttachment",
                "VolumeAttributesClass",
            ],
        )],
    ),
    ("scheduling.k8s.io", &[("v1", &["PriorityClass"])]),
    (
        "networking.k8s.io",
        &[(
            "v1",
            &[
                "Ingress",
                "IngressClass",
                "IPAddress",
                "NetworkPolicy",
                "ServiceCIDR",
            ],
        )],
    ),
    (
        "rbac.authorization.k8s.io",
        &[(
            "v1",
            &["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"],
        )],
    ),
    (
        "autoscaling",
        &[
            ("v1", &["HorizontalPodAutoscaler"]),
            ("v2", &["HorizontalPodAutoscaler"]),
        ],
    ),
    ("coordination.k8s.io", &[("v1", &["Lease"])]),
    ("discovery.k8s.io", &[("v1", &["EndpointSlice"])]),
    ("node.k8s.io", &[("v1", &["RuntimeClass"])]),
    (
        "apiextensions.k8s.io",
        &[("v1", &["CustomResourceDefinition"])],
    ),
    (
        "admissionregistration.k8s.io",
        &[(
            "v1",
            &[
                "MutatingWebhookConfiguration",
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionPolicyBinding",
                "ValidatingWebhookConfiguration",
            ],
        )],
    ),
];

/// The kinds decoded into their k8s-openapi type: every kind of
/// [`BUILT_IN`] the API server validates against a schema and that a
/// rendered platform carries (an `Eviction` or a `Binding` is a request, not
/// a manifest). A kind outside it, a custom resource, has only its
/// `metadata` decoded ([`decodes_metadata`]): its schema is in a CRD the
/// drill need not carry.
fn typed(api_version: &str, kind: &str) -> Option<Decode> {
    use k8s_openapi::api::{
        admissionregistration, apps, autoscaling, batch, coordination, core, discovery, networking,
        node, policy, rbac, scheduling, storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
    Some(match (api_version, kind) {
        ("v1", "Pod") => decodes::<core::v1::Pod>,
        ("v1", "PersistentVolumeClaim") => decodes::<core::v1::PersistentVolumeClaim>,
        ("v1", "PersistentVolume") => decodes::<core::v1::PersistentVolume>,
        ("v1", "Namespace") => decodes::<core::v1::Namespace>,
        ("v1", "Node") => decodes::<core::v1::Node>,
        ("v1", "Service") => decodes::<core::v1::Service>,
        ("v1", "Endpoints") => decodes::<core::v1::Endpoints>,
        ("v1", "ConfigMap") => decodes::<core::v1::ConfigMap>,
        ("v1", "Secret") => decodes::<core::v1::Secret>,
        ("v1", "ServiceAccount") => decodes::<core::v1::ServiceAccount>,
        ("v1", "LimitRange") => decodes::<core::v1::LimitRange>,
        ("v1", "ResourceQuota") => decodes::<core::v1::ResourceQuota>,
        ("v1", "ReplicationController") => decodes::<core::v1::ReplicationController>,
        ("v1", "PodTemplate") => decodes::<core::v1::PodTemplate>,
        ("apps/v1", "Deployment") => decodes::<apps::v1::Deployment>,
        ("apps/v1", "StatefulSet") => decodes::<apps::v1::StatefulSet>,
        ("apps/v1", "DaemonSet") => decodes::<apps::v1::DaemonSet>,
        ("apps/v1", "ReplicaSet") => decodes::<apps::v1::ReplicaSet>,
        ("batch/v1", "Job") => decodes::<batch::v1::Job>,
        ("batch/v1", "CronJob") => decodes::<batch::v1::CronJob>,
        ("policy/v1", "PodDisruptionBudget") => decodes::<policy::v1::PodDisruptionBudget>,
        ("storage.k8s.io/v1", "StorageClass") => decodes::<storage::v1::StorageClass>,
        ("storage.k8s.io/v1", "CSIDriver") => decodes::<storage::v1::CSIDriver>,
        ("storage.k8s.io/v1", "VolumeAttachment") => decodes::<storage::v1::VolumeAttachment>,
        ("scheduling.k8s.io/v1", "PriorityClass") => decodes::<scheduling::v1::PriorityClass>,
        ("networking.k8s.io/v1", "Ingress") => decodes::<networking::v1::Ingress>,
        ("networking.k8s.io/v1", "IngressClass") => decodes::<networking::v1::IngressClass>,
        ("networking.k8s.io/v1", "NetworkPolicy") => decodes::<networking::v1::NetworkPolicy>,
        ("rbac.authorization.k8s.io/v1", "Role") => decodes::<rbac::v1::Role>,
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => decodes::<rbac::v1::RoleBinding>,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => decodes::<rbac::v1::ClusterRole>,
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            decodes::<rbac::v1::ClusterRoleBinding>
        }
        ("autoscaling/v1", "HorizontalPodAutoscaler") => {
            decodes::<autoscaling::v1::HorizontalPodAutoscaler>
        }
        ("autoscaling/v2", "HorizontalPodAutoscaler") => {
            decodes::<autoscaling::v2::HorizontalPodAutoscaler>
        }
        ("coordination.k8s.io/v1", "Lease") => decodes::<coordination::v1::Lease>,
        ("discovery.k8s.io/v1", "EndpointSlice") => decodes::<discovery::v1::EndpointSlice>,
        ("node.k8s.io/v1", "RuntimeClass") => decodes::<node::v1::RuntimeClass>,
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => {
            decodes::<apiextensions::v1::CustomResourceDefinition>
        }
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => {
            decodes::<admissionregistration::v1::ValidatingWebhookConfiguration>
        }
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => {
            decodes::<admissionregistration::v1::MutatingWebhookConfiguration>
        }
        _ => return None,
    })
}

/// The `metadata` every object has, custom resources included: the API
/// server validates it (`ValidateObjectMeta`) whatever the kind, so labels
/// that are not a map of strings, a name that is a number, are refused
/// there too.
fn decodes_metadata(value: &Value) -> Result<(), String> {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(default)]
        #[expect(dead_code, reason = "decoded only to check its shape")]
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    }
    <Meta as serde::Deserialize>::deserialize(value)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Every problem of one object on its own (no other object consulted).
/// `object` already has apiVersion, kind and metadata.name as strings.
pub fn object_field_problems(object: &Value) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    let (Some(api_version), Some(kind)) = (text("/apiVersion"), text("/kind")) else {
        return problems;
    };
    let name = text("/metadata/name").unwrap_or_default();
    let what = format!("{kind} `{name}`");
    if let Some(problem) = served(api_version, kind) {
        problems.push(FieldProblem::new(
            problem.0,
            format!("{what}: {}", problem.1),
        ));
        return problems;
    }
    let (decode, shape) = match typed(api_version, kind) {
        Some(decode) => (decode, format!("a valid {api_version} {kind}")),
        None => (
            decodes_metadata as Decode,
            "an object with valid metadata".to_owned(),
        ),
    };
    if let Err(error) = decode(object) {
        let pointer = failing_field(object, decode);
        let field = dotted(&pointer);
        problems.push(FieldProblem::new(
            pointer,
            format!("{what} is not {shape}: {field}: {error}"),
        ));
        // The rest would be read against a shape the object does not have.
        return problems;
    }
    names(object, kind, &what, &mut problems);
    label_keys(object, "/metadata/labels", &what, &mut problems);
    label_keys(object, "/metadata/annotations", &what, &mut problems);
    for template in pod_spec_pointers(kind) {
        let Some(template_meta) = template.strip_suffix("/spec") else {
            continue;
        };
        if !template_meta.is_empty() {
            label_keys(
                object,
                &format!("{template_meta}/metadata/labels"),
                &what,
                &mut problems,
            );
        }
        pod_spec(object, template, &what, &mut problems);
    }
    crate::pod_spec_rules::template_restart_policy(object, kind, &what, &mut problems);
    match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => {
            label_selector(object, "/spec/selector", &what, &mut problems);
        }
        "PodDisruptionBudget" => pdb(object, &what, &mut problems),
        "PriorityClass" => {
            crate::priority_class_rules::class_problems(object, &what, &mut problems);
        }
        _ => {}
    }
    if kind == "PersistentVolumeClaim" {
        storage_request(object, "/spec", &what, &mut problems);
    }
    if kind == "StatefulSet"
        && let Some(templates) = object
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
    {
        for index in 0..templates.len() {
            storage_request(
                object,
                &format!("/spec/volumeClaimTemplates/{index}/spec"),
                &what,
                &mut problems,
            );
        }
    }
    problems
}

/// Whether the API server serves `kind` at `api_version`: a problem at
/// `/apiVersion` or `/kind` if not. Kinds of groups the bench does not know
/// are custom resources, served by whatever installed them.
fn served(api_version: &str, kind: &str) -> Option<(&'static str, String)> {
    let (group, version) = match api_version.split_once('/') {
        Some((group, version)) => (group, version),
        None => ("", api_version),
    };
    let well_formed = !version.is_empty()
        && !version.contains('/')
        && (group.is_empty() || is_dns1123_subdomain(group))
        && version
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if !well_formed {
        return Some((
            "/apiVersion",
            format!(
                "apiVersion `{api_version}` is not `group/version` or a core `version`; expected e.g. `apps/v1` or `v1`"
            ),
        ));
    }
    let (_, versions) = BUILT_IN.iter().find(|(g, _)| *g == group)?;
    let group_name = if group.is_empty() { "core" } else { group };
    let Some((_, kinds)) = versions.iter().find(|(v, _)| *v == version) else {
        let known: Vec<String> = versions
            .iter()
            .map(|(v, _)| {
                if group.is_empty() {
                    (*v).to_owned()
                } else {
                    format!("{group}/{v}")
                }
            })
            .collect();
        return Some((
            "/apiVersion",
            format!(
                "the API server does not serve apiVersion `{api_version}` (the {group_name} group serves {})",
                known.join(", ")
            ),
        ));
    };
    if kinds.contains(&kind) {
        return None;
    }
    let hint = crate::suggest::closest(kind, kinds.iter().copied())
        .map(|k| format!("; did you mean `{k}`?"))
        .unwrap_or_default();
    Some((
        "/kind",
        format!(
            "the {group_name} group has no kind `{kind}` in `{api_version}`{hint} (a custom resource needs its own group)"
        ),
    ))
}

/// The deepest field whose removal lets `object` decode: the field the
/// decoder choked on. Errors carry no path, so it is found by elimination;
/// it runs only for an object that failed to decode.
fn failing_field(object: &Value, decode: Decode) -> String {
    let mut path: Vec<String> = Vec::new();
    loop {
        let node = object.pointer(&pointer_of(&path));
        let children: Vec<String> = match node {
            Some(Value::Object(map)) => map
                .keys()
                .filter(|k| !path.is_empty() || !matches!(k.as_str(), "apiVersion" | "kind"))
                .cloned()
                .collect(),
            Some(Value::Array(items)) => (0..items.len()).map(|i| i.to_string()).collect(),
            _ => Vec::new(),
        };
        let culprit = children.into_iter().find(|child| {
            let mut probe = object.clone();
            let parent = probe.pointer_mut(&pointer_of(&path));
            match parent {
                Some(Value::Object(map)) => {
                    map.shift_remove(child);
                }
                Some(Value::Array(items)) => {
                    if let Ok(index) = child.parse::<usize>() {
                        items.remove(index);
                    }
                }
                _ => return false,
            }
            decode(&probe).is_ok()
        });
        match culprit {
            Some(child) => path.push(child),
            None => return pointer_of(&path),
        }
    }
}

fn pointer_of(path: &[String]) -> String {
    path.iter()
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// `/spec/template/spec/containers/0` as `spec.template.spec.containers[0]`.
pub(crate) fn dotted(pointer: &str) -> String {
    if pointer.is_empty() {
        return "the object".to_owned();
    }
    let mut out = String::new();
    for token in pointer.split('/').skip(1) {
        let token = token.replace("~1", "/").replace("~0", "~");
        if token.parse::<usize>().is_ok() {
            out.push_str(&format!("[{token}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&token);
        }
    }
    out
}

/// Where a kind keeps its pod specs.
pub(crate) fn pod_spec_pointers(kind: &str) -> &'static [&'static str] {
    match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => {
            &["/spec/template/spec"]
        }
        "CronJob" => &["/spec/jobTemplate/spec/template/spec"],
        "Pod" => &["/spec"],
        _ => &[],
    }
}

fn names(object: &Value, kind: &str, what: &str, problems: &mut Vec<FieldProblem>) {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // Namespaces are DNS-1123 labels, Services DNS-1035 labels
    // (`ValidateNamespaceName`, `ValidateServiceName`); most other kinds,
    // DNS-1123 subdomains (`NameIsDNSSubdomain`).
    let (valid, expected) = match kind {
        "Namespace" => (is_dns1123_label(name), DNS1123_LABEL),
        "Service" => (is_dns1035_label(name), DNS1035_LABEL),
        _ => (is_dns1123_subdomain(name), DNS1123_SUBDOMAIN),
    };
    if !valid {
        problems.push(FieldProblem::new(
            "/metadata/name",
            format!("{what}: metadata.name `{name}` is not a valid name; expected {expected}"),
        ));
    }
    if let Some(namespace) = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        && !namespace.is_empty()
        && !is_dns1123_label(namespace)
    {
        problems.push(FieldProblem::new(
            "/metadata/namespace",
            format!(
                "{what}: metadata.namespace `{namespace}` is not a valid namespace name; expected {DNS1123_LABEL}"
            ),
        ));
    }
}

pub(crate) const DNS1123_LABEL: &str = "at most 63 lowercase letters, digits and `-`, starting and ending with a letter or digit (RFC 1123 label)";
const DNS1035_LABEL: &str = "at most 63 lowercase letters, digits and `-`, starting with a letter and ending with a letter or digit (RFC 1035 label)";
pub(crate) const DNS1123_SUBDOMAIN: &str = "at most 253 characters of lowercase letters, digits, `-` and `.`, each dot-separated part starting and ending with a letter or digit (RFC 1123 subdomain)";

pub(crate) fn is_dns1123_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    let inner = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(inner)
        && bytes.last().is_some_and(inner)
        && bytes.iter().all(|b| inner(b) || *b == b'-')
}

fn is_dns1035_label(value: &str) -> bool {
    is_dns1123_label(value) && value.as_bytes()[0].is_ascii_lowercase()
}

pub(crate) fn is_dns1123_subdomain(value: &str) -> bool {
    value.len() <= 253 && value.split('.').all(is_dns1123_label)
}

/// apimachinery `IsQualifiedName`: an optional DNS subdomain prefix and `/`,
/// then a name of at most 63 characters, alphanumeric at both ends, with
/// `-`, `_`, `.` between.
pub fn is_qualified_name(value: &str) -> bool {
    let (prefix, name) = match value.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, value),
    };
    let alnum = |b: &u8| b.is_ascii_alphanumeric();
    let bytes = name.as_bytes();
    prefix.is_none_or(|p| !p.is_empty() && is_dns1123_subdomain(p))
        && !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(alnum)
        && bytes.last().is_some_and(alnum)
        && bytes
            .iter()
            .all(|b| alnum(b) || matches!(b, b'-' | b'_' | b'.'))
}

fn label_keys(object: &Value, pointer: &str, what: &str, problems: &mut Vec<FieldProblem>) {
    let Some(map) = object.pointer(pointer).and_then(Value::as_object) else {
        return;
    };
    for key in map.keys() {
        if !is_qualified_name(key) {
            problems.push(FieldProblem::new(
                format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
                format!(
                    "{what}: {} key `{key}` is not a qualified name; expected an optional DNS subdomain and `/`, then at most 63 letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit",
                    dotted(pointer)
                ),
            ));
        }
    }
}

fn pod_spec(object: &Value, pointer: &str, what: &str, problems: &mut Vec<FieldProblem>) {
    let Some(spec) = object.pointer(pointer) else {
        return;
    };
    crate::pod_spec_rules::pod_spec_problems(spec, pointer, what, problems);
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get(list).and_then(Value::as_array) else {
            continue;
        };
        for (index, container) in containers.iter().enumerate() {
            // core `validateContainers`: a name, and a DNS-1123 label.
            let name = container
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !is_dns1123_label(name) {
                problems.push(FieldProblem::new(
                    format!("{pointer}/{list}/{index}"),
                    format!(
                        "{what}: {}.name `{name}` is not a valid container name; expected {DNS1123_LABEL}",
                        dotted(&format!("{pointer}/{list}/{index}"))
                    ),
                ));
            }
            for field in ["requests", "limits"] {
                let Some(resources) = container
                    .pointer(&format!("/resources/{field}"))
                    .and_then(Value::as_object)
                else {
                    continue;
                };
                for (resource, quantity) in resources {
                    let at = format!("{pointer}/{list}/{index}/resources/{field}/{resource}");
                    quantity_rule(&at, quantity, false, what, problems);
                }
            }
        }
    }
    if let Some(affinity) = spec.get("affinity") {
        let at = format!("{pointer}/affinity");
        node_affinity(affinity, &at, what, problems);
        for kind in ["podAffinity", "podAntiAffinity"] {
            let required = affinity
                .pointer(&format!(
                    "/{kind}/requiredDuringSchedulingIgnoredDuringExecution"
                ))
                .and_then(Value::as_array);
            for (index, term) in required.into_iter().flatten().enumerate() {
                let base =
                    format!("{at}/{kind}/requiredDuringSchedulingIgnoredDuringExecution/{index}");
                selector_at(
                    term.get("labelSelector"),
                    &format!("{base}/labelSelector"),
                    what,
                    problems,
                );
            }
            let preferred = affinity
                .pointer(&format!(
                    "/{kind}/preferredDuringSchedulingIgnoredDuringExecution"
                ))
                .and_then(Value::as_array);
            for (index, term) in preferred.into_iter().flatten().enumerate() {
                let base = format!(
                    "{at}/{kind}/preferredDuringSchedulingIgnoredDuringExecution/{index}/podAffinityTerm/labelSelector"
                );
                selector_at(
                    term.pointer("/podAffinityTerm/labelSelector"),
                    &base,
                    what,
                    problems,
                );
            }
        }
    }
    if let Some(spreads) = spec
        .get("topologySpreadConstraints")
        .and_then(Value::as_array)
    {
        for (index, spread) in spreads.iter().enumerate() {
            let at = format!("{pointer}/topologySpreadConstraints/{index}/labelSelector");
            selector_at(spread.get("labelSelector"), &at, what, problems);
        }
    }
    if let Some(tolerations) = spec.get("tolerations")
        && let Ok(tolerations) =
            Vec::<k8s_openapi::api::core::v1::Toleration>::deserialize(tolerations)
        && let Err(error) = crate::k8s::taints::validate_tolerations(&tolerations)
    {
        problems.push(FieldProblem::new(
            format!("{pointer}/tolerations"),
            format!("{what}: {error}"),
        ));
    }
}

use serde::Deserialize;

fn node_affinity(affinity: &Value, at: &str, what: &str, problems: &mut Vec<FieldProblem>) {
    let required = "/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms";
    let terms = affinity.pointer(required).and_then(Value::as_array);
    for (index, term) in terms.into_iter().flatten().enumerate() {
        for field in ["matchExpressions", "matchFields"] {
            node_requirements(
                term.get(field),
                &format!("{at}{required}/{index}/{field}"),
                what,
                problems,
            );
        }
    }
    let preferred = "/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution";
    let terms = affinity.pointer(preferred).and_then(Value::as_array);
    for (index, term) in terms.into_iter().flatten().enumerate() {
        for field in ["matchExpressions", "matchFields"] {
            node_requirements(
                term.pointer(&format!("/preference/{field}")),
                &format!("{at}{preferred}/{index}/preference/{field}"),
                what,
                problems,
            );
        }
    }
}

/// core `ValidateNodeSelectorRequirement`.
fn node_requirements(
    requirements: Option<&Value>,
    at: &str,
    what: &str,
    problems: &mut Vec<FieldProblem>,
) {
    for (index, requirement) in requirements
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let operator = requirement
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let values: Vec<&Value> = requirement
            .get("values")
            .and_then(Value::as_array)
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        let problem = match operator {
            "In" | "NotIn" if values.is_empty() => {
                Some("must be specified when `operator` is 'In' or 'NotIn'".to_owned())
            }
            "Exists" | "DoesNotExist" if !values.is_empty() => Some(
                "may not be specified when `operator` is 'Exists' or 'DoesNotExist'".to_owned(),
            ),
            "Gt" | "Lt"
                if values.len() != 1
                    || values[0].as_str().is_none_or(|v| v.parse::<i64>().is_err()) =>
            {
                Some(
                    "must be specified single integer value when `operator` is 'Lt' or 'Gt'"
                        .to_owned(),
                )
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => None,
            other => {
                problems.push(FieldProblem::new(
                    format!("{at}/{index}/operator"),
                    format!(
                        "{what}: {}.operator: Unsupported value: \"{other}\": supported values: \"DoesNotExist\", \"Exists\", \"Gt\", \"In\", \"Lt\", \"NotIn\"",
                        dotted(&format!("{at}/{index}"))
                    ),
                ));
                None
            }
        };
        if let Some(problem) = problem {
            problems.push(FieldProblem::new(
                format!("{at}/{index}/values"),
                format!(
                    "{what}: {}.values: {problem}",
                    dotted(&format!("{at}/{index}"))
                ),
            ));
        }
    }
}

fn label_selector(object: &Value, at: &str, what: &str, problems: &mut Vec<FieldProblem>) {
    selector_at(object.pointer(at), at, what, problems);
}

/// apimachinery `ValidateLabelSelector`: matchLabels keys are qualified
/// names, and each requirement's operator is one of four with values only
/// for `In`/`NotIn`.
fn selector_at(selector: Option<&Value>, at: &str, what: &str, problems: &mut Vec<FieldProblem>) {
    let Some(selector) = selector else {
        return;
    };
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for key in labels.keys() {
            if !is_qualified_name(key) {
                problems.push(FieldProblem::new(
                    format!("{at}/matchLabels"),
                    format!(
                        "{what}: {}.matchLabels key `{key}` is not a qualified name; expected at most 63 letters, digits, `-`, `_`, `.` with an optional DNS subdomain prefix",
                        dotted(at)
                    ),
                ));
            }
        }
    }
    let expressions = selector.get("matchExpressions").and_then(Value::as_array);
    for (index, expression) in expressions.into_iter().flatten().enumerate() {
        let operator = expression
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let values = expression
            .get("values")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let here = format!("{at}/matchExpressions/{index}");
        match operator {
            "In" | "NotIn" if values == 0 => problems.push(FieldProblem::new(
                format!("{here}/values"),
                format!(
                    "{what}: {}.values: must be specified when `operator` is 'In' or 'NotIn'",
                    dotted(&here)
                ),
            )),
            "Exists" | "DoesNotExist" if values > 0 => problems.push(FieldProblem::new(
                format!("{here}/values"),
                format!(
                    "{what}: {}.values: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    dotted(&here)
                ),
            )),
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => problems.push(FieldProblem::new(
                format!("{here}/operator"),
                format!(
                    "{what}: {}.operator: not a valid selector operator `{other}`; expected In, NotIn, Exists or DoesNotExist",
                    dotted(&here)
                ),
            )),
        }
    }
}

/// A resource quantity: it must parse, be at least zero (core
/// `ValidateNonnegativeQuantity`), and for storage above zero
/// (`ValidatePositiveQuantityValue`). A value at or past 2⁶³−1 units is
/// refused too: upstream silently caps it there (`maxAllowed`), so what was
/// written is not what a cluster would hold.
fn quantity_rule(
    at: &str,
    quantity: &Value,
    positive: bool,
    what: &str,
    problems: &mut Vec<FieldProblem>,
) {
    let field = dotted(at);
    let text = match quantity {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => {
            problems.push(FieldProblem::new(
                at,
                format!(
                    "{what}: {field} is {}; expected a quantity such as `512Mi`",
                    crate::manifest::json_type(other)
                ),
            ));
            return;
        }
    };
    match ParsedQuantity::parse(&text) {
        Err(error) => problems.push(FieldProblem::new(at, format!("{what}: {field}: {error}"))),
        Ok(parsed) if parsed.nanos() < 0 || (positive && parsed.nanos() == 0) => {
            let bound = if positive {
                "must be greater than zero"
            } else {
                "must be greater than or equal to 0"
            };
            problems.push(FieldProblem::new(
                at,
                format!("{what}: {field}: `{text}` {bound}"),
            ));
        }
        Ok(parsed) if parsed.nanos() >= i128::from(i64::MAX) * 1_000_000_000 => {
            problems.push(FieldProblem::new(
                at,
                format!(
                    "{what}: {field}: `{text}` is at or above 2^63-1 units, where the API server caps a quantity silently; expected a quantity a cluster can hold"
                ),
            ));
        }
        Ok(_) => {}
    }
}

fn storage_request(object: &Value, spec: &str, what: &str, problems: &mut Vec<FieldProblem>) {
    let at = format!("{spec}/resources/requests/storage");
    match object.pointer(&at) {
        Some(quantity) => quantity_rule(&at, quantity, true, what, problems),
        None => problems.push(FieldProblem::new(
            spec,
            format!(
                "{what}: {}.resources.requests.storage: Required value; expected the size the claim asks for, such as `10Gi`",
                dotted(spec)
            ),
        )),
    }
}

fn pdb(object: &Value, what: &str, problems: &mut Vec<FieldProblem>) {
    let Ok(pdb) = k8s_openapi::api::policy::v1::PodDisruptionBudget::deserialize(object) else {
        return;
    };
    let spec = pdb.spec.unwrap_or_default();
    if let Err(error) = Budget::from_spec(&spec) {
        let pointer = match error {
            DisruptionError::BothSet => "/spec/maxUnavailable",
            _ if spec.max_unavailable.is_some() => "/spec/maxUnavailable",
            _ => "/spec/minAvailable",
        };
        problems.push(FieldProblem::new(pointer, format!("{what}: {error}")));
    }
    if let Err(error) = PdbSelector::from_spec(&spec) {
        problems.push(FieldProblem::new(
            "/spec/selector",
            format!("{what}: {error}"),
        ));
    }
    selector_at(
        object.pointer("/spec/selector"),
        "/spec/selector",
        what,
        problems,
    );
}

/// What other objects of the drill (and its cluster's storage classes) an
/// object refers to, and which of those references resolve.
pub(crate) struct Declared<'a> {
    pub storage_classes: BTreeSet<&'a str>,
    pub priority_classes: BTreeSet<&'a str>,
    pub namespaces: BTreeSet<&'a str>,
}

/// Namespaces every cluster has: `default`, `kube-system` and `kube-public`
/// are the `NamespaceLifecycle` plugin's immortal namespaces, which the API
/// server creates at start; `kube-node-lease` it creates beside them for the
/// nodes' heartbeat Leases.
pub(crate) const SYSTEM_NAMESPACES: [&str; 4] =
    ["default", "kube-node-lease", "kube-public", "kube-system"];

/// The built-in kinds that are not namespaced (`kubectl api-resources
/// --namespaced=false` on Kubernetes 1.36, restricted to [`BUILT_IN`]).
const CLUSTER_SCOPED: &[&str] = &[
    "CSIDriver",
    "CSINode",
    "ClusterRole",
    "ClusterRoleBinding",
    "CustomResourceDefinition",
    "IPAddress",
    "IngressClass",
    "MutatingWebhookConfiguration",
    "Namespace",
    "Node",
    "PersistentVolume",
    "PriorityClass",
    "RuntimeClass",
    "ServiceCIDR",
    "StorageClass",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "ValidatingWebhookConfiguration",
    "VolumeAttachment",
    "VolumeAttributesClass",
];

/// Whether objects of `kind` live in a namespace. A custom resource's scope
/// is in its CRD, which the drill may not carry; the API conventions name
/// the cluster-scoped counterpart of a namespaced kind `Cluster…`
/// (ClusterRole, Kyverno's ClusterPolicy, cert-manager's ClusterIssuer), so
/// such a kind is taken as cluster-scoped and every other as namespaced.
/// The API server clears the namespace written on a cluster-scoped object,
/// so it is never checked there.
fn namespaced(kind: &str) -> bool {
    !CLUSTER_SCOPED.contains(&kind) && !kind.starts_with("Cluster")
}

/// PriorityClasses every cluster has (`scheduling/v1` system classes).
const SYSTEM_PRIORITY_CLASSES: [&str; 2] = ["system-cluster-critical", "system-node-critical"];

impl<'a> Declared<'a> {
    pub(crate) fn new(objects: &'a [&'a Value], cluster_classes: &'a [String]) -> Self {
        let named = |kind: &str| -> BTreeSet<&'a str> {
            objects
                .iter()
                .filter(|o| o.get("kind").and_then(Value::as_str) == Some(kind))
                .filter_map(|o| o.pointer("/metadata/name").and_then(Value::as_str))
                .collect()
        };
        Declared {
            storage_classes: named("StorageClass")
                .into_iter()
                .chain(cluster_classes.iter().map(String::as_str))
                .collect(),
            priority_classes: named("PriorityClass")
                .into_iter()
                .chain(SYSTEM_PRIORITY_CLASSES)
                .collect(),
            namespaces: named("Namespace")
                .into_iter()
                .chain(SYSTEM_NAMESPACES)
                .collect(),
        }
    }

    /// Every reference of `object` that does not resolve.
    pub(crate) fn unresolved(&self, object: &Value) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
        let kind = text("/kind").unwrap_or_default();
        let what = format!("{kind} `{}`", text("/metadata/name").unwrap_or_default());
        // An object without a namespace goes to `default` (kubectl's
        // context namespace, which a drill does not set).
        if namespaced(kind)
            && let Some(namespace) = text("/metadata/namespace")
            // An invalid name is reported by the object's own rules.
            && is_dns1123_label(namespace)
            && !self.namespaces.contains(namespace)
        {
            // A system namespace is never what a misspelt one meant.
            let declared = self
                .namespaces
                .iter()
                .copied()
                .filter(|n| !SYSTEM_NAMESPACES.contains(n));
            let hint = crate::suggest::closest(namespace, declared)
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            problems.push(FieldProblem::new(
                "/metadata/namespace",
                format!(
                    "{what}: namespace `{namespace}` does not exist{hint}: no Namespace object among the workloads declares it, and the API server's NamespaceLifecycle admission refuses an object in a namespace that does not exist; expected a Namespace object named `{namespace}` among the workloads, or one of: {}",
                    self.namespaces.iter().copied().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
        let mut claim_classes = Vec::new();
        if kind == "PersistentVolumeClaim" {
            claim_classes.push("/spec/storageClassName".to_owned());
        }
        if kind == "StatefulSet" {
            let count = object
                .pointer("/spec/volumeClaimTemplates")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            claim_classes.extend(
                (0..count).map(|i| format!("/spec/volumeClaimTemplates/{i}/spec/storageClassName")),
            );
        }
        for pointer in claim_classes {
            // An empty class asks for no dynamic provisioning at all.
            if let Some(class) = text(&pointer)
                && !class.is_empty()
                && !self.storage_classes.contains(class)
            {
                problems.push(FieldProblem::new(
                    pointer.as_str(),
                    format!(
                        "{what}: {} names StorageClass `{class}`, which neither the cluster's storageClasses nor the manifests declare; expected one of: {}",
                        dotted(&pointer),
                        self.storage_classes.iter().copied().collect::<Vec<_>>().join(", ")
                    ),
                ));
            }
        }
        for spec in pod_spec_pointers(kind) {
            let pointer = format!("{spec}/priorityClassName");
            if let Some(class) = text(&pointer)
                && !class.is_empty()
                && !self.priority_classes.contains(class)
            {
                problems.push(FieldProblem::new(
                    pointer.as_str(),
                    format!(
                        "{what}: {} names PriorityClass `{class}`, which does not exist; expected a PriorityClass the manifests declare or one of: {}",
                        dotted(&pointer),
                        SYSTEM_PRIORITY_CLASSES.join(", ")
                    ),
                ));
            }
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::{Declared, object_field_problems};
    use serde_json::{Value, json};

    /// A Deployment the API server admits: the control of every pair.
    fn admitted() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
                }
            }
        })
    }

    fn with(mut object: Value, pointer: &str, value: Value) -> Value {
        let (parent, key) = pointer.rsplit_once('/').expect("pointer");
        object
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .expect("parent of the control")
            .insert(key.to_owned(), value);
        object
    }

    /// The pointer and message of the first problem, or `None` when admitted.
    fn first(object: &Value) -> Option<(String, String)> {
        object_field_problems(object)
            .into_iter()
            .next()
            .map(|p| (p.pointer, p.message))
    }

    fn refused_at(object: &Value, pointer: &str, fragment: &str) {
        let (at, message) = first(object).expect("a problem");
        assert_eq!(at, pointer, "{message}");
        assert!(message.contains(fragment), "{message}");
    }

    #[test]
    fn the_control_is_admitted() {
        assert_eq!(first(&admitted()), None);
    }

    /// apimachinery `ParseQuantity`; core `ValidateNonnegativeQuantity`.
    #[test]
    fn quantities_refused_when_malformed_or_negative_admitted_when_zero() {
        let memory = "/spec/template/spec/containers/0/resources/requests/memory";
        refused_at(
            &with(admitted(), memory, json!("1.5.5Gi")),
            memory,
            "not a number",
        );
        refused_at(
            &with(admitted(), memory, json!("-1")),
            memory,
            "greater than or equal to 0",
        );
        assert_eq!(first(&with(admitted(), memory, json!("0"))), None);
        assert_eq!(first(&with(admitted(), memory, json!("1.5Gi"))), None);
    }

    /// core `ValidatePersistentVolumeClaimSpec`: storage required and
    /// `ValidatePositiveQuantityValue`; 1e100 is past upstream's silent cap.
    #[test]
    fn claim_storage_must_be_positive_and_representable() {
        let claim = |storage: Value| {
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"name": "data"},
                   "spec": {"resources": {"requests": {"storage": storage}}}})
        };
        let at = "/spec/resources/requests/storage";
        refused_at(&claim(json!("0")), at, "greater than zero");
        refused_at(&claim(json!("1e100")), at, "2^63-1");
        refused_at(&claim(json!("-1")), at, "greater than zero");
        assert_eq!(first(&claim(json!("10Gi"))), None);
    }

    /// policy `ValidatePodDisruptionBudgetSpec`: one of the two forms.
    #[test]
    fn pdb_with_both_forms_refused_with_one_admitted() {
        let pdb = |spec: Value| {
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                   "metadata": {"name": "web"}, "spec": spec})
        };
        refused_at(
            &pdb(json!({"minAvailable": 1, "maxUnavailable": 1})),
            "/spec/maxUnavailable",
            "cannot be both set",
        );
        assert_eq!(first(&pdb(json!({"minAvailable": 1}))), None);
    }

    /// apimachinery `ValidateLabelSelectorRequirement` and core
    /// `ValidateNodeSelectorRequirement`: known operators only.
    #[test]
    fn bogus_operators_refused_known_ones_admitted() {
        let selector = "/spec/selector/matchExpressions";
        let expression = |op: &str| json!([{"key": "app", "operator": op, "values": ["web"]}]);
        refused_at(
            &with(admitted(), selector, expression("Bogus")),
            "/spec/selector/matchExpressions/0/operator",
            "Bogus",
        );
        assert_eq!(first(&with(admitted(), selector, expression("In"))), None);
        let affinity = |op: &str| {
            json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "cpus", "operator": op, "values": ["4"]}]}]}}})
        };
        let at = "/spec/template/spec/affinity";
        refused_at(
            &with(admitted(), at, affinity("Bogus")),
            "/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0/operator",
            "Unsupported value",
        );
        assert_eq!(first(&with(admitted(), at, affinity("Gt"))), None);
    }

    /// A type error points at the field the decoder choked on.
    #[test]
    fn type_errors_point_at_the_field() {
        refused_at(
            &with(admitted(), "/spec/replicas", json!("three")),
            "/spec/replicas",
            "invalid type",
        );
        refused_at(
            &with(
                admitted(),
                "/spec/template/spec/containers/0/ports",
                json!([{"containerPort": "http"}]),
            ),
            "/spec/template/spec/containers/0/ports/0/containerPort",
            "invalid type",
        );
        let mut ports = admitted();
        ports = with(
            ports,
            "/spec/template/spec/containers/0/ports",
            json!([{"containerPort": 80}]),
        );
        assert_eq!(first(&ports), None);
    }

    /// Built-in groups serve a fixed set of kinds; other groups are custom
    /// resources the bench records as not simulated.
    #[test]
    fn unknown_kinds_of_built_in_groups_refused_custom_resources_admitted() {
        refused_at(
            &with(admitted(), "/kind", json!("Foo")),
            "/kind",
            "no kind `Foo`",
        );
        refused_at(
            &json!({"apiVersion": "v1", "kind": "Foo", "metadata": {"name": "x"}}),
            "/kind",
            "core group",
        );
        refused_at(
            &json!({"apiVersion": "batch/v2", "kind": "Job", "metadata": {"name": "x"}}),
            "/apiVersion",
            "does not serve",
        );
        for custom in [
            json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease", "metadata": {"name": "x"}}),
            json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization", "metadata": {"name": "x"}}),
            json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "x"}}),
        ] {
            assert_eq!(first(&custom), None, "{custom}");
        }
    }

    /// apimachinery `IsDNS1123Subdomain` (names), `IsQualifiedName` (keys).
    #[test]
    fn names_and_label_keys_refused_when_invalid() {
        refused_at(
            &with(admitted(), "/metadata/name", json!("Web")),
            "/metadata/name",
            "not a valid name",
        );
        assert_eq!(
            first(&with(admitted(), "/metadata/name", json!("web.v2"))),
            None
        );
        refused_at(
            &with(admitted(), "/metadata/labels", json!({"-tier": "a"})),
            "/metadata/labels/-tier",
            "not a qualified name",
        );
        assert_eq!(
            first(&with(
                admitted(),
                "/metadata/labels",
                json!({"example.com/tier": "a"})
            )),
            None
        );
    }

    /// The `Priority` admission plugin; claims of an undeclared class.
    #[test]
    fn references_to_missing_classes_refused_declared_ones_admitted() {
        let pod = with(
            admitted(),
            "/spec/template/spec/priorityClassName",
            json!("critical"),
        );
        let class = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                           "metadata": {"name": "critical"}, "value": 1000});
        let apps = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}});
        let alone = [&pod, &apps];
        let problems = Declared::new(&alone, &[]).unresolved(&pod);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let both = [&pod, &class, &apps];
        assert!(Declared::new(&both, &[]).unresolved(&pod).is_empty());
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": "d"}, "spec": {"storageClassName": "fast"}});
        let only = [&claim];
        assert_eq!(Declared::new(&only, &[]).unresolved(&claim).len(), 1);
        let classes = ["fast".to_owned()];
        assert!(Declared::new(&only, &classes).unresolved(&claim).is_empty());
    }

    /// `NamespaceLifecycle`: an object in a namespace no Namespace object
    /// declares is refused at its `metadata.namespace`; declaring it, or a
    /// system namespace, admits it; a cluster-scoped object's namespace is
    /// not read.
    #[test]
    fn objects_in_undeclared_namespaces_refused_declared_ones_admitted() {
        let web = admitted();
        let alone = [&web];
        let problems = Declared::new(&alone, &[]).unresolved(&web);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].pointer, "/metadata/namespace");
        assert!(problems[0].message.contains("NamespaceLifecycle"));
        let apps = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}});
        let declared = [&web, &apps];
        assert!(Declared::new(&declared, &[]).unresolved(&web).is_empty());
        for system in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let inside = with(admitted(), "/metadata/namespace", json!(system));
            let only = [&inside];
            assert!(
                Declared::new(&only, &[]).unresolved(&inside).is_empty(),
                "{system}"
            );
        }
        let unset = {
            let mut o = admitted();
            o["metadata"]
                .as_object_mut()
                .unwrap()
                .shift_remove("namespace");
            o
        };
        let only = [&unset];
        assert!(Declared::new(&only, &[]).unresolved(&unset).is_empty());
        // A custom resource is namespaced unless its kind says `Cluster…`.
        let release = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                             "metadata": {"name": "r", "namespace": "flux-system"}});
        let policy = json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
                            "metadata": {"name": "p", "namespace": "flux-system"}});
        let class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                           "metadata": {"name": "c", "namespace": "flux-system"}});
        let all = [&release, &policy, &class];
        let declared = Declared::new(&all, &[]);
        assert_eq!(declared.unresolved(&release).len(), 1);
        assert!(declared.unresolved(&policy).is_empty());
        assert!(declared.unresolved(&class).is_empty());
    }

    /// Kinds beyond those the simulator reads are still decoded as the API
    /// server would: a built-in kind into its type, a custom resource's
    /// metadata into `ObjectMeta`. Each refused object has its control.
    #[test]
    fn type_errors_of_kinds_the_bench_does_not_simulate_point_at_the_field() {
        let policy = json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                            "metadata": {"name": "deny", "namespace": "apps"},
                            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}});
        assert_eq!(first(&policy), None);
        refused_at(
            &with(policy.clone(), "/spec/podSelector", json!("all")),
            "/spec/podSelector",
            "is not a valid networking.k8s.io/v1 NetworkPolicy",
        );
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                             "metadata": {"name": "b", "namespace": "apps"},
                             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
                             "subjects": [{"kind": "ServiceAccount", "name": "s"}]});
        assert_eq!(first(&binding), None);
        refused_at(
            &with(binding, "/subjects/0/name", json!(7)),
            "/subjects/0/name",
            "RoleBinding",
        );
        let release = json!({"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                             "metadata": {"name": "podinfo", "namespace": "apps",
                                          "labels": {"app": "podinfo"}},
                             "spec": {"anything": ["the", "CRD", "decides"]}});
        assert_eq!(first(&release), None);
        refused_at(
            &with(
                release.clone(),
                "/metadata/labels",
                json!(["app", "podinfo"]),
            ),
            "/metadata/labels",
            "is not an object with valid metadata",
        );
        refused_at(
            &with(
                release,
                "/metadata/annotations",
                json!({"a": {"nested": 1}}),
            ),
            "/metadata/annotations/a",
            "metadata.annotations.a",
        );
    }
}
