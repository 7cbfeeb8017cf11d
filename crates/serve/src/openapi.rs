//! The OpenAPI documents `kubectl explain` and kubectl's validation read.
//!
//! v3 (`/openapi/v3`, one document per group and version, as the API
//! server publishes them since 1.27): the schemas of the served built-in
//! kinds are generated from the k8s-openapi types (their `schemars`
//! implementations, which carry the upstream descriptions), with a
//! `$ref` beside a description wrapped in `allOf` and each kind's schema
//! marked with `x-kubernetes-group-version-kind`, as the API server's
//! documents are; a custom resource's document is its CRD version's
//! `openAPIV3Schema` with `metadata` as ObjectMeta. Each writable
//! resource's PATCH operation lists `fieldValidation`, which is how
//! kubectl learns that the server validates fields.
//!
//! v2 (`/openapi/v2`, which kubectl asks for as protobuf when the v3
//! document of a kind's group is missing): a valid document with no
//! paths or definitions, so kubectl's client-side validation finds no
//! schema to apply and leaves validation to the server; `explain` reads
//! v3.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use bytes::Bytes;
use k8s_openapi::api::{
    apps, authorization, autoscaling, batch, coordination, core, discovery, networking, policy,
    rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{Map, Value, json};

use super::crds;
use super::resources::{self, GROUPS, RESOURCES, Resource};
use super::written::Written;

const SCHEMAS: &str = "#/components/schemas/";

/// Adds `T`'s schema (and every schema it refers to) to the generator,
/// returning its name.
fn add<T: JsonSchema>(generator: &mut SchemaGenerator) -> String {
    generator.subschema_for::<T>();
    T::schema_name().into_owned()
}

/// The schema of a built-in kind the façade serves, added to the
/// generator; its name, or `None` for a kind without one here.
fn add_kind(generator: &mut SchemaGenerator, group: &str, kind: &str) -> Option<String> {
    let g = generator;
    if (group, kind) == ("events.k8s.io", "Event") {
        return Some(add::<k8s_openapi::api::events::v1::Event>(g));
    }
    Some(match kind {
        "Namespace" => add::<core::v1::Namespace>(g),
        "Node" => add::<core::v1::Node>(g),
        "Pod" => add::<core::v1::Pod>(g),
        "Event" => add::<core::v1::Event>(g),
        "ConfigMap" => add::<core::v1::ConfigMap>(g),
        "PersistentVolumeClaim" => add::<core::v1::PersistentVolumeClaim>(g),
        "PersistentVolume" => add::<core::v1::PersistentVolume>(g),
        "Secret" => add::<core::v1::Secret>(g),
        "Service" => add::<core::v1::Service>(g),
        "ServiceAccount" => add::<core::v1::ServiceAccount>(g),
        "Deployment" => add::<apps::v1::Deployment>(g),
        "StatefulSet" => add::<apps::v1::StatefulSet>(g),
        "DaemonSet" => add::<apps::v1::DaemonSet>(g),
        "Job" => add::<batch::v1::Job>(g),
        "CronJob" => add::<batch::v1::CronJob>(g),
        "PodDisruptionBudget" => add::<policy::v1::PodDisruptionBudget>(g),
        "StorageClass" => add::<storage::v1::StorageClass>(g),
        "VolumeAttachment" => add::<storage::v1::VolumeAttachment>(g),
        "Lease" => add::<coordination::v1::Lease>(g),
        "PriorityClass" => add::<scheduling::v1::PriorityClass>(g),
        "EndpointSlice" => add::<discovery::v1::EndpointSlice>(g),
        "Endpoints" => add::<core::v1::Endpoints>(g),
        "CustomResourceDefinition" => add::<CustomResourceDefinition>(g),
        "SelfSubjectAccessReview" => add::<authorization::v1::SelfSubjectAccessReview>(g),
        "SelfSubjectRulesReview" => add::<authorization::v1::SelfSubjectRulesReview>(g),
        "Role" => add::<rbac::v1::Role>(g),
        "RoleBinding" => add::<rbac::v1::RoleBinding>(g),
        "ClusterRole" => add::<rbac::v1::ClusterRole>(g),
        "ClusterRoleBinding" => add::<rbac::v1::ClusterRoleBinding>(g),
        "NetworkPolicy" => add::<networking::v1::NetworkPolicy>(g),
        "Ingress" => add::<networking::v1::Ingress>(g),
        "IngressClass" => add::<networking::v1::IngressClass>(g),
        "HorizontalPodAutoscaler" => add::<autoscaling::v2::HorizontalPodAutoscaler>(g),
        _ => return None,
    })
}

fn generator() -> SchemaGenerator {
    SchemaSettings::openapi3().into_generator()
}

/// `api/v1` or `apis/GROUP/VERSION`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The PATCH operations of writable resources, with `fieldValidation`.
fn patch_paths<'a>(served: impl Iterator<Item = &'a Resource>) -> Map<String, Value> {
    let mut paths = Map::new();
    for r in served.filter(|r| r.writable) {
        let base = gv_path(r.group, r.version);
        let url = if r.namespaced {
            format!("/{base}/namespaces/{{namespace}}/{}/{{name}}", r.plural)
        } else {
            format!("/{base}/{}/{{name}}", r.plural)
        };
        let field_validation = json!([{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}}]);
        paths.insert(url, json!({
            "parameters": field_validation.clone(),
            "patch": {
                "parameters": field_validation,
                "x-kubernetes-group-version-kind": {"group": r.group, "version": r.version, "kind": r.kind},
                "responses": {"200": {"description": "OK"}}
            }
        }));
    }
    paths
}

fn document(paths: Map<String, Value>, schemas: Map<String, Value>) -> Value {
    json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.36.3"},
           "paths": paths, "components": {"schemas": schemas}})
}

fn mark_kind(schemas: &mut Map<String, Value>, name: &str, group: &str, version: &str, kind: &str) {
    if let Some(schema) = schemas.get_mut(name).and_then(Value::as_object_mut) {
        schema.insert(
            "x-kubernetes-group-version-kind".to_owned(),
            json!([{"group": group, "version": version, "kind": kind}]),
        );
    }
}

/// The built-in groups' documents, by path (`api/v1`, `apis/apps/v1`).
fn built_in_documents() -> BTreeMap<String, Value> {
    let mut documents = BTreeMap::new();
    for group in std::iter::once("").chain(GROUPS.iter().copied()) {
        let mut generator = generator();
        let mut kinds = Vec::new();
        for r in RESOURCES.iter().filter(|r| r.group == group) {
            if let Some(name) = add_kind(&mut generator, r.group, r.kind) {
                kinds.push((name, r.kind));
            }
        }
        if group == "authorization.k8s.io" {
            for kind in ["SelfSubjectAccessReview", "SelfSubjectRulesReview"] {
                if let Some(name) = add_kind(&mut generator, group, kind) {
                    kinds.push((name, kind));
                }
            }
        }
        let mut schemas = generator.take_definitions(true);
        let version = resources::version_of(group);
        for (name, kind) in kinds {
            mark_kind(&mut schemas, &name, group, version, kind);
        }
        let paths = patch_paths(RESOURCES.iter().filter(|r| r.group == group));
        documents.insert(gv_path(group, version), document(paths, schemas));
    }
    documents
}

/// The built-in groups' documents, generated and serialised once per
/// process: the types never change while a server runs, and generating
/// them costs tens of milliseconds (more in a debug build).
fn built_in() -> &'static BTreeMap<String, Bytes> {
    static DOCUMENTS: OnceLock<BTreeMap<String, Bytes>> = OnceLock::new();
    DOCUMENTS.get_or_init(|| {
        built_in_documents()
            .into_iter()
            .map(|(path, document)| (path, serialised(&document)))
            .collect()
    })
}

/// Builds the built-in documents now, so the first `kubectl explain`
/// does not wait for them (nor hold up the simulator thread meanwhile).
pub(super) fn warm() {
    built_in();
}

fn serialised(document: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(document).unwrap_or_default())
}

/// The documents as served, serialised once per set of served types: the
/// built-in ones once per process ([`built_in`]), the index and the
/// custom groups' once per state of the stored definitions
/// ([`Written::definition_changes`]), since a CRD stored, changed or
/// removed is the only thing that changes them. A request is then
/// answered with the bytes, without building or serialising anything on
/// the simulator thread.
#[derive(Debug, Default)]
pub(super) struct Documents {
    /// The state of the definitions `index` and `custom` were built for.
    built_for: Option<u64>,
    index: Option<Bytes>,
    /// Each custom group-version asked for, `None` for one not served.
    custom: BTreeMap<String, Option<Bytes>>,
}

impl Documents {
    /// Forgets what was built for other definitions than `written`'s.
    fn refresh(&mut self, written: &Written) {
        let now = written.definition_changes();
        if self.built_for != Some(now) {
            self.index = None;
            self.custom.clear();
            self.built_for = Some(now);
        }
    }

    /// `/openapi/v3`.
    pub(super) fn index(&mut self, written: &Written) -> Bytes {
        self.refresh(written);
        self.index
            .get_or_insert_with(|| serialised(&index(written)))
            .clone()
    }

    /// `/openapi/v3/PATH` (`api/v1`, `apis/GROUP/VERSION`), or `None` for
    /// a group-version not served.
    pub(super) fn group_version(&mut self, written: &Written, path: &str) -> Option<Bytes> {
        if let Some(document) = built_in().get(path) {
            return Some(document.clone());
        }
        self.refresh(written);
        self.custom
            .entry(path.to_owned())
            .or_insert_with(|| custom_at(written, path).map(|d| serialised(&d)))
            .clone()
    }

    #[cfg(test)]
    fn is_built(&self, path: &str) -> bool {
        self.custom.contains_key(path)
    }
}

/// A custom kind's schema name, as the API server names it: the group
/// reversed, the version, the kind (`io.fluxcd.toolkit.helm.v2.HelmRelease`).
fn custom_name(resource: &Resource) -> String {
    let reversed: Vec<&str> = resource.group.split('.').rev().collect();
    format!(
        "{}.{}.{}",
        reversed.join("."),
        resource.version,
        resource.kind
    )
}

/// The document of a custom group and version: each kind's schema from
/// its definition, with ObjectMeta (and what it refers to) beside it.
fn custom_document(written: &Written, group: &str, version: &str) -> Option<Value> {
    let served: Vec<&'static Resource> = crds::all(written)
        .into_iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut generator = generator();
    let meta = add::<ObjectMeta>(&mut generator);
    let mut schemas = generator.take_definitions(true);
    for r in &served {
        let mut schema = crds::schema_of(written, r).unwrap_or_else(|| json!({"type": "object"}));
        if let Some(properties) = schema
            .as_object_mut()
            .map(|s| s.entry("properties").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut)
        {
            properties.insert(
                "metadata".to_owned(),
                json!({"description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                       "allOf": [{"$ref": format!("{SCHEMAS}{meta}")}]}),
            );
            for (field, description) in [
                (
                    "apiVersion",
                    "APIVersion defines the versioned schema of this representation of an object.",
                ),
                (
                    "kind",
                    "Kind is a string value representing the REST resource this object represents.",
                ),
            ] {
                properties
                    .entry(field)
                    .or_insert_with(|| json!({"type": "string", "description": description}));
            }
        }
        let name = custom_name(r);
        schemas.insert(name.clone(), schema);
        mark_kind(&mut schemas, &name, r.group, r.version, r.kind);
    }
    Some(document(patch_paths(served.into_iter()), schemas))
}

/// `/openapi/v3`: the index of per-group-version documents.
fn index(written: &Written) -> Value {
    let mut paths = Map::new();
    let mut add = |path: String| {
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}")}),
        );
    };
    for group in std::iter::once("").chain(GROUPS.iter().copied()) {
        add(gv_path(group, resources::version_of(group)));
    }
    for (group, versions) in crds::groups(written) {
        for version in versions {
            add(gv_path(group, version));
        }
    }
    json!({"paths": paths})
}

/// The document of a custom group and version at `apis/GROUP/VERSION`;
/// `None` for a built-in group's path or one no definition serves.
fn custom_at(written: &Written, path: &str) -> Option<Value> {
    let (group, version) = path.strip_prefix("apis/")?.split_once('/')?;
    if resources::group(group).is_some() {
        return None;
    }
    custom_document(written, group, version)
}

/// `/openapi/v3/api/v1` or `/openapi/v3/apis/GROUP/VERSION`, built anew.
#[cfg(test)]
fn group_version(written: &Written, path: &str) -> Option<Value> {
    if let Some(document) = built_in().get(path) {
        return serde_json::from_slice(document).ok();
    }
    custom_at(written, path)
}

/// The media type kubectl asks `/openapi/v2` for.
pub(super) const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The media type the API server answers it with (`@` is not a valid
/// character of a media type, so the answer spells the version `.v1.0`,
/// which Go's `mime.ParseMediaType` reads).
const V2_PROTOBUF_ANSWER: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2`: the empty document (see the module's documentation),
/// as gnostic's `openapi_v2.Document` protobuf (`swagger` = 1, `info` =
/// 2 with `title` = 1 and `version` = 2, `paths` = 8) when asked for it,
/// else as JSON.
pub(super) fn v2(accept: &str) -> (Option<&'static str>, Value, Bytes) {
    if accept.contains(V2_PROTOBUF) {
        let mut info = Vec::new();
        field(&mut info, 1, b"Kubernetes");
        field(&mut info, 2, b"v1.36.3");
        let mut document = Vec::new();
        field(&mut document, 1, b"2.0");
        field(&mut document, 2, &info);
        field(&mut document, 8, &[]);
        return (Some(V2_PROTOBUF_ANSWER), Value::Null, Bytes::from(document));
    }
    (
        None,
        json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.36.3"}, "paths": {}}),
        Bytes::new(),
    )
}

/// A length-delimited protobuf field.
fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
    out.push((number << 3) | 2);
    let mut len = bytes.len();
    loop {
        let byte = (len & 0x7f) as u8;
        len >>= 7;
        if len == 0 {
            out.push(byte);
            break;
        }
        out.push(byte | 0x80);
    }
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
        let reference = schema
            .get("$ref")
            .or_else(|| schema.pointer("/allOf/0/$ref"))
            .and_then(Value::as_str);
        match reference.and_then(|r| r.strip_prefix(SCHEMAS)) {
            Some(name) => &document["components"]["schemas"][name],
            None => schema,
        }
    }

    /// What `kubectl explain deployment.spec.replicas` walks: the kind
    /// found by its group-version-kind, `spec` through its reference,
    /// `replicas` with the upstream description. Control: a kind the
    /// group does not serve is not in its document.
    #[test]
    fn a_built_in_document_explains_deployment_spec_replicas() {
        let document = group_version(&Written::default(), "apis/apps/v1").expect("apps/v1");
        let schemas = document["components"]["schemas"]
            .as_object()
            .expect("schemas");
        let (_, deployment) = schemas
            .iter()
            .find(|(_, s)| s["x-kubernetes-group-version-kind"][0]["kind"] == "Deployment")
            .expect("the Deployment is marked");
        assert_eq!(
            deployment["x-kubernetes-group-version-kind"][0]["group"],
            "apps"
        );
        let spec = resolve(&document, &deployment["properties"]["spec"]);
        let replicas = &spec["properties"]["replicas"];
        assert_eq!(replicas["type"], "integer");
        assert!(
            replicas["description"]
                .as_str()
                .is_some_and(|d| d.starts_with("Number of desired pods")),
            "{replicas}"
        );
        assert!(
            deployment["properties"]["spec"]["allOf"].is_array(),
            "a described reference is wrapped in allOf"
        );
        assert!(
            !schemas
                .values()
                .any(|s| s["x-kubernetes-group-version-kind"][0]["kind"] == "Pod"),
            "pods are core/v1's"
        );
        let patch =
            &document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert_eq!(patch["parameters"][0]["name"], "fieldValidation");
    }

    /// A custom kind's document is its definition's schema, named as the
    /// API server names it, with ObjectMeta beside it. Control: a group
    /// no definition serves has none.
    #[test]
    fn a_custom_document_carries_its_definitions_schema() {
        let mut written = Written::default();
        let crd = crds::admit_definition(
            "crontabs.stable.example.com",
            None,
            crds::tests::crontab(),
            0,
            "u".to_owned(),
        )
        .expect("valid");
        written.declare(
            (
                crds::CRD_KIND,
                String::new(),
                "crontabs.stable.example.com".to_owned(),
            ),
            crd,
        );
        let document = group_version(&written, "apis/stable.example.com/v1").expect("served");
        let crontab = &document["components"]["schemas"]["com.example.stable.v1.CronTab"];
        assert_eq!(
            crontab["x-kubernetes-group-version-kind"][0]["kind"],
            "CronTab"
        );
        assert_eq!(
            crontab["properties"]["spec"]["properties"]["cronSpec"]["type"],
            "string"
        );
        let meta = resolve(&document, &crontab["properties"]["metadata"]);
        assert!(meta["properties"]["name"].is_object());
        assert!(index(&written)["paths"]["apis/stable.example.com/v1"].is_object());
        assert!(
            group_version(&written, "apis/stable.example.com/v2").is_none(),
            "v2 is not served"
        );
        assert!(group_version(&Written::default(), "apis/stable.example.com/v1").is_none());
    }

    /// A document is built once and then served as the same bytes until
    /// the served types change: storing a definition brings its group
    /// into the index and serves its document (the control: before it,
    /// neither), removing it takes both away again.
    #[test]
    fn documents_are_served_from_the_cache_until_a_definition_changes() {
        let mut documents = Documents::default();
        let mut written = Written::default();
        let path = "apis/stable.example.com/v1";
        let apps = documents
            .group_version(&written, "apis/apps/v1")
            .expect("apps/v1");
        let again = documents
            .group_version(&written, "apis/apps/v1")
            .expect("apps/v1");
        assert_eq!(apps.as_ptr(), again.as_ptr(), "the same bytes, not rebuilt");
        let index = documents.index(&written);
        assert_eq!(index.as_ptr(), documents.index(&written).as_ptr());
        assert!(!String::from_utf8_lossy(&index).contains(path));
        assert!(documents.group_version(&written, path).is_none());
        assert!(documents.is_built(path), "a miss is remembered too");

        let key = (
            crds::CRD_KIND,
            String::new(),
            "crontabs.stable.example.com".to_owned(),
        );
        let crd = crds::admit_definition(&key.2, None, crds::tests::crontab(), 0, "u".to_owned())
            .expect("valid");
        written.declare(key.clone(), crd);
        let served = documents.group_version(&written, path).expect("now served");
        assert!(String::from_utf8_lossy(&served).contains("com.example.stable.v1.CronTab"));
        assert_eq!(
            served.as_ptr(),
            documents
                .group_version(&written, path)
                .expect("served")
                .as_ptr()
        );
        assert!(String::from_utf8_lossy(&documents.index(&written)).contains(path));

        written.undeclare(&key);
        assert!(documents.group_version(&written, path).is_none());
        assert!(!String::from_utf8_lossy(&documents.index(&written)).contains(path));
    }

    /// The protobuf v2 document decodes field by field as gnostic's
    /// `Document`; the JSON one (the control) is asked for without it.
    #[test]
    fn the_v2_document_is_protobuf_when_asked_for() {
        let (media, _, bytes) = v2(V2_PROTOBUF);
        assert_eq!(media, Some(V2_PROTOBUF_ANSWER));
        assert_eq!(&bytes[..5], &[0x0a, 3, b'2', b'.', b'0']);
        assert_eq!(bytes[5], 0x12, "info");
        assert_eq!(&bytes[bytes.len() - 2..], &[0x42, 0], "empty paths");
        let (media, json, _) = v2("application/json");
        assert_eq!(media, None);
        assert_eq!(json["swagger"], "2.0");
    }
}
