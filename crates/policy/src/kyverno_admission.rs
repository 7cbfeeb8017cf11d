//! The platform's own Kyverno policies at a simulated cluster's admission.
//!
//! A pod controller's pods are what Kyverno's webhook judges when a policy
//! matches `Pod`: the ReplicaSet, StatefulSet, DaemonSet or Job controller
//! submits each Pod it creates, and the Pod is mutated and then validated
//! (Kubernetes' admission order: "mutating admission" before "validating
//! admission", kubernetes.io/docs/reference/access-authn-authz/admission-
//! controllers/#what-does-each-admission-controller-do). So rather than
//! relying on Kyverno's autogen rules for the controller object, the bench
//! builds the Pod the controller would create ([`controller_pod`]) and
//! submits that: the semantic truth autogen approximates.
//!
//! Context `apiCall`s are answered from the drill's own objects
//! ([`ManifestCluster`]): claims (standalone, and each StatefulSet's claims,
//! which its controller creates before the Pod, with the default class filled
//! in as the DefaultStorageClass admission plugin does), storage classes and
//! namespaces.

use std::collections::BTreeMap;

use drillbench_kyverno::{
    AdmissionRequest, ClusterData, Engine, InMemoryCluster, Policy, RuleResult, RuleStatus,
    UserInfo, policy,
};
use drillbench_model::labels::NAMESPACE_NAME_LABEL;
use drillbench_model::manifest::Document;
use k8s_openapi::api::core::v1::{PodSpec, PodTemplateSpec};
use serde_json::{Value, json};

use crate::admission_memo::{self, Digest};

/// Reads the drill's policy documents; a policy the engine cannot read is
/// an error at its `file:line:column`.
pub fn read_policies(documents: &[Document]) -> Result<Vec<Policy>, policy::PolicyError> {
    documents.iter().map(policy::from_document).collect()
}

/// The Pod a controller creates from its template, as the API server
/// receives it: the template's metadata and spec, the controller's name
/// pattern (`name-0` for a StatefulSet's first ordinal, `name-xxxxx`
/// otherwise, the bare name for a Pod) and, for a StatefulSet, one
/// `persistentVolumeClaim` volume per claim template named
/// `<template>-<name>-<ordinal>` (kubernetes.io/docs/concepts/workloads/
/// controllers/statefulset/#stable-storage), unless the template already
/// has a volume of that name.
pub fn controller_pod(
    namespace: &str,
    kind: &str,
    name: &str,
    template: &PodTemplateSpec,
    claim_templates: &[String],
) -> Value {
    let meta = template.metadata.clone().unwrap_or_default();
    let pod_name = match kind {
        "Pod" => name.to_owned(),
        "StatefulSet" => format!("{name}-0"),
        _ => format!("{name}-00000"),
    };
    let mut spec = serde_json::to_value(template.spec.clone().unwrap_or_default())
        .unwrap_or_else(|_| json!({}));
    if kind == "StatefulSet" && !claim_templates.is_empty() {
        let volumes = spec
            .as_object_mut()
            .map(|s| s.entry("volumes").or_insert_with(|| json!([])))
            .and_then(Value::as_array_mut);
        if let Some(volumes) = volumes {
            for claim in claim_templates {
                let present = volumes
                    .iter()
                    .any(|v| v.get("name").and_then(Value::as_str) == Some(claim.as_str()));
                if !present {
                    volumes.push(json!({
                        "name": claim,
                        "persistentVolumeClaim": {"claimName": format!("{claim}-{name}-0")}
                    }));
                }
            }
        }
    }
    let mut metadata = json!({"name": pod_name, "namespace": namespace});
    if let Some(labels) = meta.labels.filter(|l| !l.is_empty()) {
        metadata["labels"] = json!(labels);
    }
    if let Some(annotations) = meta.annotations.filter(|a| !a.is_empty()) {
        metadata["annotations"] = json!(annotations);
    }
    if kind != "Pod" {
        metadata["ownerReferences"] = json!([{
            "apiVersion": if kind == "Job" || kind == "CronJob" { "batch/v1" } else { "apps/v1" },
            "kind": if kind == "Deployment" { "ReplicaSet" } else if kind == "CronJob" { "Job" } else { kind },
            "name": name,
            "controller": true,
        }]);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

/// The user a controller creates its pods as: its service account in
/// `kube-system`, as kube-controller-manager runs with
/// `--use-service-account-credentials`; a bare Pod as the admin.
fn creator(kind: &str) -> UserInfo {
    let account = match kind {
        "Deployment" | "ReplicaSet" => Some("replicaset-controller"),
        "StatefulSet" => Some("statefulset-controller"),
        "DaemonSet" => Some("daemon-set-controller"),
        "Job" | "CronJob" => Some("job-controller"),
        _ => None,
    };
    match account {
        Some(a) => UserInfo {
            username: format!("system:serviceaccount:kube-system:{a}"),
            groups: vec![
                "system:serviceaccounts".to_owned(),
                "system:serviceaccounts:kube-system".to_owned(),
                "system:authenticated".to_owned(),
            ],
            ..UserInfo::default()
        },
        None => UserInfo {
            username: "kubernetes-admin".to_owned(),
            groups: vec![
                "system:masters".to_owned(),
                "system:authenticated".to_owned(),
            ],
            ..UserInfo::default()
        },
    }
}

/// The drill's objects as the API server a context entry reads: claims with
/// their class resolved, storage classes, namespaces (and anything else
/// given), served by API path.
#[derive(Debug, Clone, Default)]
pub struct ManifestCluster {
    inner: InMemoryCluster,
    namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
    /// What the objects were built from, for the admission memo.
    digest: Digest,
}

impl ManifestCluster {
    /// `documents` are the drill's objects; a PersistentVolumeClaim without
    /// a class gets `default_class`, and each StatefulSet contributes the
    /// claims of its first ordinal.
    pub fn new(documents: &[Document], default_class: Option<&str>) -> Self {
        Self::default().with(documents, default_class)
    }

    /// This cluster with `documents` added, as [`ManifestCluster::new`]
    /// reads them: what an object created through the API resolves its own
    /// claims against (a StatefulSet's claims exist once it does).
    pub fn with(&self, documents: &[Document], default_class: Option<&str>) -> Self {
        let mut objects = self.inner.objects().to_vec();
        let mut namespace_labels = self.namespace_labels.clone();
        for doc in documents {
            let value = &doc.value;
            match doc.kind() {
                Some("PersistentVolumeClaim") => {
                    objects.push(with_default_class(value.clone(), default_class))
                }
                Some("StatefulSet") => {
                    let namespace = doc.namespace().unwrap_or("default");
                    let name = doc.name().unwrap_or_default();
                    let templates = value
                        .pointer("/spec/volumeClaimTemplates")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    for template in templates {
                        let claim = template
                            .pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let object = json!({
                            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                            "metadata": {"name": format!("{claim}-{name}-0"), "namespace": namespace},
                            "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
                        });
                        objects.push(with_default_class(object, default_class));
                    }
                }
                Some("Namespace") => {
                    let labels: BTreeMap<String, String> = value
                        .pointer("/metadata/labels")
                        .and_then(|l| serde_json::from_value(l.clone()).ok())
                        .unwrap_or_default();
                    namespace_labels.insert(doc.name().unwrap_or_default().to_owned(), labels);
                    objects.push(value.clone());
                }
                Some(_) => objects.push(value.clone()),
                None => {}
            }
        }
        ManifestCluster {
            inner: InMemoryCluster::new(objects),
            namespace_labels,
            digest: self.digest.then(
                documents.iter().map(|d| &d.value),
                default_class.unwrap_or_default(),
            ),
        }
    }

    /// The digest of every document and default class this cluster was
    /// built from: equal digests, equal answers to every lookup.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// A namespace's labels, for `namespaceSelector`; the API server's
    /// `kubernetes.io/metadata.name` label is always there
    /// (kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-metadata-name).
    fn labels_of(&self, namespace: &str) -> BTreeMap<String, String> {
        let mut labels = self
            .namespace_labels
            .get(namespace)
            .cloned()
            .unwrap_or_default();
        labels.insert(NAMESPACE_NAME_LABEL.to_owned(), namespace.to_owned());
        labels
    }
}

impl ClusterData for ManifestCluster {
    fn get(&self, url_path: &str) -> Result<Value, String> {
        self.inner.get(url_path)
    }
}

fn with_default_class(mut claim: Value, default_class: Option<&str>) -> Value {
    let has = claim
        .pointer("/spec/storageClassName")
        .is_some_and(|c| !c.is_null());
    if !has && let Some(class) = default_class {
        if !claim.get("spec").is_some_and(Value::is_object) {
            claim["spec"] = json!({});
        }
        claim["spec"]["storageClassName"] = json!(class);
    }
    claim
}

/// One pod through the policies.
#[derive(Debug, Clone)]
pub struct PodAdmission {
    /// The Pod after every mutation.
    pub pod: Value,
    /// Every rule that applied, with its status (pass, fail, skip, error,
    /// not evaluated).
    pub results: Vec<RuleResult>,
    /// Kyverno's webhook message when a failing `Enforce` rule refuses it.
    pub refusal: Option<String>,
}

impl PodAdmission {
    /// The refusing policy and rule, `policy/rule`, if any.
    pub fn refused_by(&self) -> Option<String> {
        self.results
            .iter()
            .find(|r| {
                r.status == RuleStatus::Fail
                    && r.failure_action == Some(drillbench_kyverno::FailureAction::Enforce)
            })
            .map(|r| format!("{}/{}", r.policy, r.rule))
    }

    /// The mutated pod spec, or `None` when it no longer decodes as one.
    pub fn spec(&self) -> Option<PodSpec> {
        serde_json::from_value(self.pod.get("spec")?.clone()).ok()
    }

    /// The mutated pod's labels or annotations.
    pub fn metadata_map(&self, field: &str) -> BTreeMap<String, String> {
        self.pod
            .pointer(&format!("/metadata/{field}"))
            .and_then(|m| serde_json::from_value(m.clone()).ok())
            .unwrap_or_default()
    }
}

/// Submits the Pod a controller of `kind` creates (CREATE) to `policies`,
/// mutating then validating. Policies apply in the order given: Kyverno
/// orders mutating policies by name within one webhook, and the drill's
/// order is the manifests' (the built-in drills have at most one mutation
/// per field, so the order does not change a result there).
pub fn admit_pod(
    policies: &[Policy],
    cluster: &ManifestCluster,
    kind: &str,
    pod: Value,
) -> PodAdmission {
    let namespace = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    let mut request = AdmissionRequest::create(pod);
    request.namespace_labels = cluster.labels_of(&namespace);
    request.user_info = creator(kind);
    let admission = Engine::new(cluster).admit(policies, &request);
    let refusal = admission.refusal();
    PodAdmission {
        pod: admission.patched,
        results: admission.results,
        refusal,
    }
}

/// The Pod a manifest's controller would submit: its key
/// (`namespace/Kind/name`), its kind and the Pod ([`controller_pod`]).
/// `None` for an object that carries no pod template.
pub fn submitted_pod(object: &Value) -> Option<(String, String, Value)> {
    let kind = object.get("kind").and_then(Value::as_str)?;
    let template = match kind {
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" => {
            object.pointer("/spec/template")?.clone()
        }
        "CronJob" => object.pointer("/spec/jobTemplate/spec/template")?.clone(),
        "Pod" => json!({"metadata": object.get("metadata"), "spec": object.get("spec")}),
        _ => return None,
    };
    let template: PodTemplateSpec = serde_json::from_value(template).ok()?;
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .unwrap_or("default");
    let name = object.pointer("/metadata/name").and_then(Value::as_str)?;
    let claims: Vec<String> = object
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str))
        .map(str::to_owned)
        .collect();
    let claims = if kind == "StatefulSet" {
        claims
    } else {
        Vec::new()
    };
    Some((
        format!("{namespace}/{kind}/{name}"),
        kind.to_owned(),
        controller_pod(namespace, kind, name, &template, &claims),
    ))
}

/// Admits a workload manifest's pod template in place, for a cluster that
/// runs no Kyverno: the Pod its controller creates is submitted, and the
/// mutated Pod's labels, annotations and spec are written back into the
/// template (without the claim volumes the controller adds), so the
/// controller's pods carry what Kyverno would have given them. `None` for
/// an object without a pod template.
pub fn admit_template(
    policies: &[Policy],
    cluster: &ManifestCluster,
    object: &mut Value,
) -> Option<PodAdmission> {
    let (_, kind, pod) = submitted_pod(object)?;
    let pointer = match kind.as_str() {
        "CronJob" => "/spec/jobTemplate/spec/template",
        "Pod" => "",
        _ => "/spec/template",
    };
    let added: Vec<String> = if kind == "StatefulSet" {
        object
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|t| t.pointer("/metadata/name").and_then(Value::as_str))
            .filter(|claim| {
                !object
                    .pointer(&format!("{pointer}/spec/volumes"))
                    .and_then(Value::as_array)
                    .is_some_and(|v| v.iter().any(|v| v["name"] == *claim))
            })
            .map(str::to_owned)
            .collect()
    } else {
        Vec::new()
    };
    let judged = admit_pod(policies, cluster, &kind, pod);
    let template = object.pointer_mut(pointer)?;
    let mut spec = judged.pod.get("spec").cloned().unwrap_or_else(|| json!({}));
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        volumes.retain(|v| {
            !added
                .iter()
                .any(|claim| v.get("name").and_then(Value::as_str) == Some(claim))
        });
        if volumes.is_empty() && template.pointer("/spec/volumes").is_none() {
            spec.as_object_mut().map(|s| s.remove("volumes"));
        }
    }
    template["spec"] = spec;
    for field in ["labels", "annotations"] {
        match judged.pod.pointer(&format!("/metadata/{field}")) {
            Some(value) => {
                if !template.get("metadata").is_some_and(Value::is_object) {
                    template["metadata"] = json!({});
                }
                template["metadata"][field] = value.clone();
            }
            None => {
                if let Some(meta) = template.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove(field);
                }
            }
        }
    }
    Some(judged)
}

/// The objects (`namespace/Kind/name`) whose pods one of `policy`'s rules
/// applies to (passes or fails, rather than skips): the pods a policy guard
/// governs, whose failures are the guard's in a negative control.
pub fn governed(
    policy: &Policy,
    policy_digest: Digest,
    cluster: &ManifestCluster,
    objects: &[Value],
) -> Vec<String> {
    let mut keys = Vec::new();
    for object in objects {
        let Some((key, kind, pod)) = submitted_pod(object) else {
            continue;
        };
        let judged = admission_memo::admit_pod(
            std::slice::from_ref(policy),
            policy_digest,
            cluster,
            &kind,
            pod,
        );
        if judged
            .results
            .iter()
            .any(|r| matches!(r.status, RuleStatus::Pass | RuleStatus::Fail))
            && !keys.contains(&key)
        {
            keys.push(key);
        }
    }
    keys
}

/// Results worth a report line: failures (refused or audited), errors and
/// rules not evaluated. Passes and skips are the quiet majority.
pub fn reportable(result: &RuleResult) -> bool {
    matches!(
        result.status,
        RuleStatus::Fail | RuleStatus::Error | RuleStatus::NotEvaluated
    )
}

#[cfg(test)]
mod tests {
    use drillbench_model::manifest::parse_documents;

    use super::*;

    fn documents(text: &str) -> Vec<Document> {
        parse_documents("test.yaml", text).expect("documents")
    }

    /// The fail-closed guard of the incident, as the harness ships it.
    fn guard() -> Vec<Policy> {
        let text = std::fs::read_to_string(drillbench_model::test_support::repo_file(
            "harness/kyverno/policies/require-baseline-workers-for-hcloud-volumes.yaml",
        ))
        .expect("the policy file");
        read_policies(&documents(&text)).expect("a policy")
    }

    const STATEFULSET: &str = "
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: apps}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: c, image: i}]
  volumeClaimTemplates:
    - metadata: {name: data}
      spec: {}
";

    fn statefulset_pod(docs: &[Document]) -> Value {
        let sts: k8s_openapi::api::apps::v1::StatefulSet =
            serde_json::from_value(docs[0].value.clone()).expect("a StatefulSet");
        let spec = sts.spec.expect("a spec");
        controller_pod(
            "apps",
            "StatefulSet",
            "db",
            &spec.template,
            &["data".to_owned()],
        )
    }

    #[test]
    fn a_statefulset_pod_mounts_its_claims_by_the_controllers_names() {
        let docs = documents(STATEFULSET);
        let pod = statefulset_pod(&docs);
        assert_eq!(pod["metadata"]["name"], "db-0");
        assert_eq!(
            pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
            "data-db-0"
        );
        assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
    }

    /// The claim template names no class: the default class is what the
    /// `apiCall` reads (DefaultStorageClass admission plugin,
    /// kubernetes.io/docs/concepts/storage/persistent-volumes/#class-1),
    /// so the guard judges the pod by the default; a control with another
    /// default flips it.
    #[test]
    fn the_claims_default_class_decides_whether_the_guard_applies() {
        let docs = documents(STATEFULSET);
        let hcloud = ManifestCluster::new(&docs, Some("hcloud"));
        let judged = admit_pod(&guard(), &hcloud, "StatefulSet", statefulset_pod(&docs));
        assert_eq!(
            judged.refused_by().as_deref(),
            Some("require-baseline-workers-for-hcloud-volumes/require-baseline-worker-affinity")
        );
        assert!(judged.refusal.as_deref().unwrap().contains("blocked"));
        let longhorn = ManifestCluster::new(&docs, Some("longhorn"));
        let judged = admit_pod(&guard(), &longhorn, "StatefulSet", statefulset_pod(&docs));
        assert_eq!(judged.refused_by(), None);
        assert!(
            judged.results.iter().all(|r| r.status == RuleStatus::Skip),
            "{:?}",
            judged.results
        );
    }

    #[test]
    fn controllers_submit_their_pods_as_their_service_accounts() {
        assert_eq!(
            creator("Deployment").username,
            "system:serviceaccount:kube-system:replicaset-controller"
        );
        assert_eq!(creator("Pod").username, "kubernetes-admin");
    }
}
