//! Finding the consumers of a storage class in rendered manifests.
//!
//! A consumer is a pod template (Pod, Deployment, ReplicaSet, StatefulSet,
//! DaemonSet, Job, CronJob) that mounts a claim of the class through a
//! StatefulSet `volumeClaimTemplates` entry, a `persistentVolumeClaim`
//! volume resolved to a PersistentVolumeClaim in the input (same namespace),
//! or an ephemeral volume's claim template. A claim without a
//! `storageClassName` takes the default class: the StorageClass in the input
//! annotated `storageclass.kubernetes.io/is-default-class: "true"`.
//!
//! An explicit `storageClassName: ""` asks for no class (static binding),
//! so such a claim is of no class and never a consumer.
//!
//! Objects are matched by API group as well as kind, so a custom resource
//! that happens to be called `Job` is not mistaken for a batch Job. A
//! missing namespace reads as `default`, as `kubectl apply` without `-n`
//! would place it. Shapes the API server would reject (a `volumes` that is
//! not a list, a non-string label value) are input errors, never guesses.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::placement::{self, Judgement, Operator, PlacementRules, Requirement, Term};
use super::{RequiredLabel, Verdict};
use drillbench_model::manifest::{Document, ManifestError, SourceLocation, json_type};

/// The annotations that mark a StorageClass as the default (current and beta).
pub(crate) const DEFAULT_CLASS_ANNOTATIONS: [&str; 2] = [
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
];

/// The pre-`storageClassName` annotation the API server still honours.
const LEGACY_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// A claim a consumer mounts that is, or may be, of the audited class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    /// `volumeClaimTemplate/NAME`, `persistentVolumeClaim/NAME` or `ephemeral/VOLUME`.
    pub label: String,
    /// `None` when the claim is of the class; otherwise why its class is unknown.
    pub unresolved: Option<String>,
}

/// A pod template with claims of the class (or of unresolved class).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub kind: String,
    /// Its namespace (`default` when none is given).
    pub namespace: String,
    pub name: String,
    /// Where its document starts.
    pub location: SourceLocation,
    /// The relevant claims.
    pub claims: Vec<Claim>,
    pub rules: PlacementRules,
}

impl Found {
    /// The consumer's verdict and reasons. A failing placement is `fail`
    /// when a claim is known to be of the class; a claim that could not be
    /// resolved makes anything short of a confirmed failure `unknown`.
    pub fn verdict(&self, label: &RequiredLabel) -> (Verdict, Vec<String>) {
        let confirmed = self.claims.iter().any(|claim| claim.unresolved.is_none());
        let mut unresolved: Vec<String> = self
            .claims
            .iter()
            .filter_map(|claim| {
                claim
                    .unresolved
                    .as_ref()
                    .map(|why| format!("{}: {why}", claim.label))
            })
            .collect();
        match placement::judge(&self.rules, label) {
            Judgement::Pass if unresolved.is_empty() => (Verdict::Pass, vec![]),
            Judgement::Pass => (Verdict::Unknown, unresolved),
            Judgement::Fail(reasons) if confirmed => {
                unresolved.extend(reasons);
                (Verdict::Fail, unresolved)
            }
            Judgement::Fail(reasons) | Judgement::Unknown(reasons) => {
                unresolved.extend(reasons);
                (Verdict::Unknown, unresolved)
            }
        }
    }
}

/// Where a claim's class comes from.
enum ClassOf {
    Named(String),
    Unresolved(String),
}

/// One object of the input, with the document it came from.
struct Object<'a> {
    value: &'a Map<String, Value>,
    location: SourceLocation,
}

struct Shape<'a> {
    location: &'a SourceLocation,
    what: String,
}

impl Shape<'_> {
    fn error(&self, expected: String) -> ManifestError {
        ManifestError::malformed(self.location.clone(), format!("{}: {expected}", self.what))
    }

    /// The field, or `None` when it is absent or null.
    fn field<'v>(&self, map: &'v Map<String, Value>, key: &str) -> Option<&'v Value> {
        map.get(key).filter(|value| !value.is_null())
    }

    fn object<'v>(
        &self,
        map: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<&'v Map<String, Value>>, ManifestError> {
        match self.field(map, key) {
            None => Ok(None),
            Some(Value::Object(inner)) => Ok(Some(inner)),
            Some(other) => Err(self.error(format!(
                "expected `{path}` to be a mapping, found {}",
                json_type(other)
            ))),
        }
    }

    fn list<'v>(
        &self,
        map: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<&'v [Value], ManifestError> {
        match self.field(map, key) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(other) => Err(self.error(format!(
                "expected `{path}` to be a list, found {}",
                json_type(other)
            ))),
        }
    }

    fn string<'v>(
        &self,
        map: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<&'v str>, ManifestError> {
        match self.field(map, key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(other) => Err(self.error(format!(
                "expected `{path}` to be a string, found {}",
                json_type(other)
            ))),
        }
    }

    fn items<'v>(
        &self,
        value: &'v Value,
        path: &str,
    ) -> Result<&'v Map<String, Value>, ManifestError> {
        value.as_object().ok_or_else(|| {
            self.error(format!(
                "expected each `{path}` entry to be a mapping, found {}",
                json_type(value)
            ))
        })
    }
}

fn group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

/// Where the pod spec of a kind lives, for the API groups that define it.
fn pod_spec_path(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    Some(match (group, kind) {
        ("", "Pod") => &["spec"],
        ("apps" | "extensions", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet") => {
            &["spec", "template", "spec"]
        }
        ("batch", "Job") => &["spec", "template", "spec"],
        ("batch", "CronJob") => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => return None,
    })
}

/// Every object of the input; `List` documents (as `kubectl get -o yaml`
/// prints them) contribute their items.
fn objects(documents: &[Document]) -> Result<Vec<Object<'_>>, ManifestError> {
    let mut objects = Vec::new();
    for document in documents {
        let location = document.location();
        let Some(map) = document.value.as_object() else {
            continue;
        };
        if document.kind() == Some("List") {
            let shape = Shape {
                location: &location,
                what: "List".into(),
            };
            for item in shape.list(map, "items", "items")? {
                objects.push(Object {
                    value: shape.items(item, "items")?,
                    location: location.clone(),
                });
            }
        } else {
            objects.push(Object {
                value: map,
                location,
            });
        }
    }
    Ok(objects)
}

struct Identity<'a> {
    group: &'a str,
    kind: &'a str,
    namespace: String,
    name: String,
    metadata: Option<&'a Map<String, Value>>,
}

/// Who an object is. Every document of a rendered bundle is an API object,
/// so one without a string `apiVersion` and `kind` is malformed input (a
/// values file passed by mistake, say), not something to skip.
fn identity<'a>(object: &Object<'a>) -> Result<Identity<'a>, ManifestError> {
    let value = object.value;
    let (Some(Value::String(api_version)), Some(Value::String(kind))) =
        (value.get("apiVersion"), value.get("kind"))
    else {
        return Err(ManifestError::malformed(
            object.location.clone(),
            "expected a Kubernetes object with string `apiVersion` and `kind`",
        ));
    };
    let shape = Shape {
        location: &object.location,
        what: kind.clone(),
    };
    let metadata = shape.object(value, "metadata", "metadata")?;
    let name = match metadata {
        Some(metadata) => shape.string(metadata, "name", "metadata.name")?,
        None => None,
    };
    let namespace = match metadata {
        Some(metadata) => shape.string(metadata, "namespace", "metadata.namespace")?,
        None => None,
    };
    Ok(Identity {
        group: group(api_version),
        kind,
        namespace: namespace.unwrap_or("default").to_owned(),
        name: name.unwrap_or_default().to_owned(),
        metadata,
    })
}

/// The class a claim spec asks for: `storageClassName`, else the legacy
/// annotation, else `None` (the default class).
fn requested_class<'v>(
    shape: &Shape<'_>,
    metadata: Option<&'v Map<String, Value>>,
    spec: Option<&'v Map<String, Value>>,
    path: &str,
) -> Result<Option<&'v str>, ManifestError> {
    if let Some(spec) = spec
        && let Some(class) = shape.string(
            spec,
            "storageClassName",
            &format!("{path}.spec.storageClassName"),
        )?
    {
        return Ok(Some(class));
    }
    if let Some(metadata) = metadata
        && let Some(annotations) = shape.object(
            metadata,
            "annotations",
            &format!("{path}.metadata.annotations"),
        )?
    {
        return shape.string(
            annotations,
            LEGACY_CLASS_ANNOTATION,
            &format!("{path}.metadata.annotations"),
        );
    }
    Ok(None)
}

fn resolve(requested: Option<&str>, defaults: &[String]) -> ClassOf {
    match requested {
        Some(class) => ClassOf::Named(class.to_owned()),
        None => match defaults {
            [default] => ClassOf::Named(default.clone()),
            [] => ClassOf::Unresolved(
                "no storageClassName, and the input defines no default StorageClass, \
                 so the cluster's default class applies and is unknown"
                    .to_owned(),
            ),
            several => ClassOf::Unresolved(format!(
                "no storageClassName, and several StorageClasses are marked default ({})",
                several.join(", ")
            )),
        },
    }
}

/// Finds every consumer of `storage_class` in `documents`.
pub fn find(documents: &[Document], storage_class: &str) -> Result<Vec<Found>, ManifestError> {
    let objects = objects(documents)?;
    let mut defaults = Vec::new();
    // (namespace, name) -> requested class of each PersistentVolumeClaim.
    let mut claims: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
    for object in &objects {
        let id = identity(object)?;
        let shape = Shape {
            location: &object.location,
            what: format!("{} {}", id.kind, id.name),
        };
        match (id.group, id.kind) {
            ("storage.k8s.io", "StorageClass") => {
                let annotations = match id.metadata {
                    Some(metadata) => {
                        shape.object(metadata, "annotations", "metadata.annotations")?
                    }
                    None => None,
                };
                let is_default = annotations.is_some_and(|annotations| {
                    DEFAULT_CLASS_ANNOTATIONS
                        .iter()
                        .any(|key| annotations.get(*key).and_then(Value::as_str) == Some("true"))
                });
                if is_default {
                    defaults.push(id.name.clone());
                }
            }
            ("", "PersistentVolumeClaim") => {
                let spec = shape.object(object.value, "spec", "spec")?;
                let requested = requested_class(&shape, id.metadata, spec, "")?;
                claims.insert(
                    (id.namespace.clone(), id.name.clone()),
                    requested.map(str::to_owned),
                );
            }
            _ => {}
        }
    }
    defaults.sort();

    let mut found = Vec::new();
    for object in &objects {
        let id = identity(object)?;
        let Some(path) = pod_spec_path(id.group, id.kind) else {
            continue;
        };
        let shape = Shape {
            location: &object.location,
            what: format!("{} {}/{}", id.kind, id.namespace, id.name),
        };
        if id.name.is_empty() {
            return Err(shape.error("expected `metadata.name`".to_owned()));
        }
        let mut pod_spec = object.value;
        for (depth, key) in path.iter().enumerate() {
            let dotted = path[..=depth].join(".");
            pod_spec = shape
                .object(pod_spec, key, &dotted)?
                .ok_or_else(|| shape.error(format!("expected `{}`", path.join("."))))?;
        }
        let spec_path = path.join(".");
        let classify = |label: String, class: ClassOf| match class {
            ClassOf::Named(class) if class == storage_class => Some(Claim {
                label,
                unresolved: None,
            }),
            ClassOf::Named(_) => None,
            ClassOf::Unresolved(why) => Some(Claim {
                label,
                unresolved: Some(why),
            }),
        };
        let mut relevant = Vec::new();
        // Only StatefulSets have claim templates; the group was checked above.
        if id.kind == "StatefulSet" {
            let spec = shape.object(object.value, "spec", "spec")?;
            let templates = match spec {
                Some(spec) => {
                    shape.list(spec, "volumeClaimTemplates", "spec.volumeClaimTemplates")?
                }
                None => &[],
            };
            for template in templates {
                let template = shape.items(template, "spec.volumeClaimTemplates")?;
                let metadata =
                    shape.object(template, "metadata", "spec.volumeClaimTemplates[].metadata")?;
                let name = metadata
                    .map(|m| shape.string(m, "name", "spec.volumeClaimTemplates[].metadata.name"))
                    .transpose()?
                    .flatten()
                    .ok_or_else(|| {
                        shape.error("expected `spec.volumeClaimTemplates[].metadata.name`".into())
                    })?;
                let spec = shape.object(template, "spec", "spec.volumeClaimTemplates[].spec")?;
                let requested =
                    requested_class(&shape, metadata, spec, "spec.volumeClaimTemplates[]")?;
                relevant.extend(classify(
                    format!("volumeClaimTemplate/{name}"),
                    resolve(requested, &defaults),
                ));
            }
        }
        let volumes_path = format!("{spec_path}.volumes");
        for volume in shape.list(pod_spec, "volumes", &volumes_path)? {
            let volume = shape.items(volume, &volumes_path)?;
            let volume_name = shape
                .string(volume, "name", &format!("{volumes_path}[].name"))?
                .unwrap_or_default();
            if let Some(pvc) = shape.object(
                volume,
                "persistentVolumeClaim",
                &format!("{volumes_path}[].persistentVolumeClaim"),
            )? {
                let claim_name = shape
                    .string(
                        pvc,
                        "claimName",
                        &format!("{volumes_path}[].persistentVolumeClaim.claimName"),
                    )?
                    .ok_or_else(|| {
                        shape.error(format!(
                            "expected `{volumes_path}[].persistentVolumeClaim.claimName`"
                        ))
                    })?;
                let class = match claims.get(&(id.namespace.clone(), claim_name.to_owned())) {
                    Some(requested) => resolve(requested.as_deref(), &defaults),
                    None => ClassOf::Unresolved(format!(
                        "no PersistentVolumeClaim {claim_name} in namespace {} in the input, so its storage class is unknown",
                        id.namespace
                    )),
                };
                relevant.extend(classify(
                    format!("persistentVolumeClaim/{claim_name}"),
                    class,
                ));
            }
            if let Some(ephemeral) =
                shape.object(volume, "ephemeral", &format!("{volumes_path}[].ephemeral"))?
            {
                let template = shape.object(
                    ephemeral,
                    "volumeClaimTemplate",
                    &format!("{volumes_path}[].ephemeral.volumeClaimTemplate"),
                )?;
                let (metadata, spec) = match template {
                    Some(template) => (
                        shape.object(
                            template,
                            "metadata",
                            "ephemeral.volumeClaimTemplate.metadata",
                        )?,
                        shape.object(template, "spec", "ephemeral.volumeClaimTemplate.spec")?,
                    ),
                    None => (None, None),
                };
                let requested =
                    requested_class(&shape, metadata, spec, "ephemeral.volumeClaimTemplate")?;
                relevant.extend(classify(
                    format!("ephemeral/{volume_name}"),
                    resolve(requested, &defaults),
                ));
            }
        }
        if relevant.is_empty() {
            continue;
        }
        found.push(Found {
            kind: id.kind.to_owned(),
            namespace: id.namespace.clone(),
            name: id.name.clone(),
            location: object.location.clone(),
            claims: relevant,
            rules: placement_rules(&shape, pod_spec, &spec_path)?,
        });
    }
    Ok(found)
}

/// The placement rules of a pod spec that is not a workload's: the parts
/// of a chart's values or an operator's resource a consumer map points at,
/// gathered as `nodeSelector` and `affinity` of `pod_spec`.
pub(crate) fn rules_of(
    location: &SourceLocation,
    what: String,
    pod_spec: &Map<String, Value>,
) -> Result<PlacementRules, ManifestError> {
    let shape = Shape { location, what };
    placement_rules(&shape, pod_spec, "")
}

fn placement_rules(
    shape: &Shape<'_>,
    pod_spec: &Map<String, Value>,
    spec_path: &str,
) -> Result<PlacementRules, ManifestError> {
    let mut rules = PlacementRules {
        node_name: shape
            .string(pod_spec, "nodeName", &format!("{spec_path}.nodeName"))?
            .filter(|name| !name.is_empty())
            .map(str::to_owned),
        ..PlacementRules::default()
    };
    let selector_path = format!("{spec_path}.nodeSelector");
    if let Some(selector) = shape.object(pod_spec, "nodeSelector", &selector_path)? {
        for (key, value) in selector {
            let Value::String(value) = value else {
                return Err(shape.error(format!(
                    "expected `{selector_path}.{key}` to be a string, found {}",
                    json_type(value)
                )));
            };
            rules.node_selector.insert(key.clone(), value.clone());
        }
    }
    let affinity_path = format!("{spec_path}.affinity.nodeAffinity");
    let node_affinity =
        match shape.object(pod_spec, "affinity", &format!("{spec_path}.affinity"))? {
            Some(affinity) => shape.object(affinity, "nodeAffinity", &affinity_path)?,
            None => None,
        };
    let Some(node_affinity) = node_affinity else {
        return Ok(rules);
    };
    rules.has_preferred = !shape
        .list(
            node_affinity,
            "preferredDuringSchedulingIgnoredDuringExecution",
            &format!("{affinity_path}.preferredDuringSchedulingIgnoredDuringExecution"),
        )?
        .is_empty();
    let required_path = format!("{affinity_path}.requiredDuringSchedulingIgnoredDuringExecution");
    if let Some(required) = shape.object(
        node_affinity,
        "requiredDuringSchedulingIgnoredDuringExecution",
        &required_path,
    )? {
        let terms_path = format!("{required_path}.nodeSelectorTerms");
        let mut terms = Vec::new();
        for term in shape.list(required, "nodeSelectorTerms", &terms_path)? {
            let term = shape.items(term, &terms_path)?;
            terms.push(Term {
                expressions: requirements(shape, term, "matchExpressions", &terms_path)?,
                fields: requirements(shape, term, "matchFields", &terms_path)?,
            });
        }
        rules.required_terms = Some(terms);
    }
    Ok(rules)
}

fn requirements(
    shape: &Shape<'_>,
    term: &Map<String, Value>,
    key: &str,
    terms_path: &str,
) -> Result<Vec<Requirement>, ManifestError> {
    let path = format!("{terms_path}[].{key}");
    let mut out = Vec::new();
    for item in shape.list(term, key, &path)? {
        let item = shape.items(item, &path)?;
        let label = shape
            .string(item, "key", &format!("{path}[].key"))?
            .ok_or_else(|| shape.error(format!("expected `{path}[].key`")))?;
        let operator_text = shape
            .string(item, "operator", &format!("{path}[].operator"))?
            .ok_or_else(|| shape.error(format!("expected `{path}[].operator`")))?;
        let operator = Operator::parse(operator_text).ok_or_else(|| {
            shape.error(format!(
                "expected `{path}[].operator` to be In, NotIn, Exists, DoesNotExist, Gt or Lt, found {operator_text}"
            ))
        })?;
        let mut values = Vec::new();
        for value in shape.list(item, "values", &format!("{path}[].values"))? {
            match value {
                Value::String(value) => values.push(value.clone()),
                other => {
                    return Err(shape.error(format!(
                        "expected `{path}[].values` to hold strings, found {} (quote it)",
                        json_type(other)
                    )));
                }
            }
        }
        out.push(Requirement {
            key: label.to_owned(),
            operator,
            values,
        });
    }
    Ok(out)
}
