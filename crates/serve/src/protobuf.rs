//! Request bodies sent as `application/vnd.kubernetes.protobuf`, as
//! kubectl's typed clients send them (`kubectl create configmap`,
//! `secret`, `deployment`, `job`, `service`, ...), read into the JSON a
//! JSON client would have sent for the same object, so everything after
//! the door sees one form.
//!
//! The wire format is the API server's (apimachinery's
//! `runtime/serializer/protobuf`): the magic `k8s\0`, then a
//! `runtime.Unknown` whose `typeMeta` names the object's `apiVersion` and
//! `kind` and whose `raw` is the object's message of the group's
//! `generated.proto`. Those files are vendored (`proto/`) and compiled
//! into a descriptor set at build time; prost-reflect decodes a message
//! against it, and this module turns the decoded message into JSON with
//! Kubernetes' own rules rather than protobuf's JSON mapping:
//!
//! - `Quantity` is its string, `IntOrString` its int or its string, an
//!   `ExtraValue` its list,
//!   `Time` and `MicroTime` RFC 3339 (`null`, so left out, at the zero
//!   time), `Duration` Go's duration text, `RawExtension` and `FieldsV1`
//!   the JSON they carry; `bytes` are base64, 64-bit integers numbers;
//! - Go's marshaller writes every non-pointer field, zero or not, while
//!   its JSON leaves zero values out (`omitempty`): a zero scalar is left
//!   out unless its Go field is a pointer whose zero means something
//!   ([`POINTER_FIELDS`]: `replicas: 0`, `runAsUser: 0`,
//!   `automountServiceAccountToken: false`, ...); an empty list or map is
//!   left out, a message kept (a non-pointer struct is `{}` in JSON too).
//!
//! A kind the vendored files do not define (a custom resource: the CRD
//! handler takes no protobuf either) is the API server's 415.

use std::sync::OnceLock;

use base64::Engine;
use prost_reflect::{
    DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, ReflectMessage, Value as Field,
};
use serde_json::{Map, Value, json};

use super::api::ApiError;

/// The media type.
pub(super) const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Go structs embedded with `json:",inline"` in the vendored groups'
/// types (`k8s.io/api`): protobuf has them as a field of their own, JSON
/// writes their fields into the parent's (a Volume's `configMap` beside
/// its `name`, an Ingress rule's `http` beside its `host`).
pub(super) const INLINE_FIELDS: &[(&str, &str)] = &[
    ("api.core.v1.Volume", "volumeSource"),
    ("api.core.v1.PersistentVolumeSpec", "persistentVolumeSource"),
    ("api.core.v1.Probe", "handler"),
    ("api.core.v1.EphemeralContainer", "ephemeralContainerCommon"),
    ("api.core.v1.ConfigMapEnvSource", "localObjectReference"),
    ("api.core.v1.ConfigMapKeySelector", "localObjectReference"),
    ("api.core.v1.ConfigMapProjection", "localObjectReference"),
    ("api.core.v1.ConfigMapVolumeSource", "localObjectReference"),
    ("api.core.v1.SecretEnvSource", "localObjectReference"),
    ("api.core.v1.SecretKeySelector", "localObjectReference"),
    ("api.core.v1.SecretProjection", "localObjectReference"),
    ("api.networking.v1.IngressRule", "ingressRuleValue"),
];

/// The four bytes every protobuf body starts with.
pub(super) const MAGIC: &[u8] = b"k8s\0";

/// Go fields that are pointers to a scalar whose zero value differs from
/// leaving the field unset (a default applies when unset), by JSON name:
/// their zero is kept. Other zero scalars are non-pointer fields, which
/// JSON leaves out.
const POINTER_FIELDS: &[&str] = &[
    // apps/v1 and batch/v1 specs.
    "replicas",
    "revisionHistoryLimit",
    "progressDeadlineSeconds",
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "backoffLimit",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
    "ttlSecondsAfterFinished",
    "suspend",
    "manualSelector",
    "startingDeadlineSeconds",
    "successfulJobsHistoryLimit",
    "failedJobsHistoryLimit",
    // Pod specs and security contexts.
    "terminationGracePeriodSeconds",
    "automountServiceAccountToken",
    "enableServiceLinks",
    "hostUsers",
    "shareProcessNamespace",
    "setHostnameAsFQDN",
    "priority",
    "runAsUser",
    "runAsGroup",
    "runAsNonRoot",
    "fsGroup",
    "privileged",
    "readOnlyRootFilesystem",
    "allowPrivilegeEscalation",
    "defaultMode",
    "mode",
    "optional",
    "expirationSeconds",
    // ConfigMaps, Secrets, Services, claims, delete options.
    "immutable",
    "allocateLoadBalancerNodePorts",
    "storageClassName",
    "gracePeriodSeconds",
];

/// The vendored definitions, decoded once.
pub(super) fn pool() -> Option<&'static DescriptorPool> {
    static POOL: OnceLock<Option<DescriptorPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        DescriptorPool::decode(&include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.bin"))[..])
            .ok()
    })
    .as_ref()
}

/// A protobuf body as the JSON object it stands for.
pub(super) fn to_json(body: &[u8]) -> Result<Value, ApiError> {
    let malformed =
        |why: &str| ApiError::bad_request(format!("cannot decode the protobuf body: {why}"));
    let pool = pool().ok_or_else(|| malformed("no protobuf definitions are built in"))?;
    let unknown = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| malformed("it does not start with the k8s\\0 prefix"))?;
    let envelope = pool
        .get_message_by_name("apimachinery.pkg.runtime.Unknown")
        .ok_or_else(|| malformed("no runtime.Unknown definition"))?;
    let envelope =
        DynamicMessage::decode(envelope, unknown).map_err(|e| malformed(&e.to_string()))?;
    let text = |message: &DynamicMessage, name: &str| match message.get_field_by_name(name) {
        Some(value) => value.as_str().unwrap_or_default().to_owned(),
        None => String::new(),
    };
    let type_meta = envelope
        .get_field_by_name("typeMeta")
        .and_then(|t| t.as_message().cloned())
        .ok_or_else(|| malformed("no typeMeta"))?;
    let (api_version, kind) = (text(&type_meta, "apiVersion"), text(&type_meta, "kind"));
    let descriptor = message_for(pool, &api_version, &kind).ok_or_else(|| {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (no protobuf definition of {kind} in {api_version})"
            ),
        )
    })?;
    let raw = envelope
        .get_field_by_name("raw")
        .and_then(|r| r.as_bytes().cloned())
        .unwrap_or_default();
    let object = DynamicMessage::decode(descriptor, raw).map_err(|e| malformed(&e.to_string()))?;
    let mut json = Map::new();
    json.insert("apiVersion".to_owned(), json!(api_version));
    json.insert("kind".to_owned(), json!(kind));
    if let Value::Object(fields) = message(&object) {
        json.extend(fields);
    }
    Ok(Value::Object(json))
}

/// The message of `kind` in `apiVersion`: `api.GROUP.VERSION.KIND` by the
/// group's first label (`apps`, `batch`, `policy`, `core` for the core
/// group, `storage` for `storage.k8s.io`), then meta/v1's (`DeleteOptions`).
pub(super) fn message_for(
    pool: &DescriptorPool,
    api_version: &str,
    kind: &str,
) -> Option<MessageDescriptor> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let package = match group.split('.').next().unwrap_or_default() {
        "" => "core",
        label => label,
    };
    pool.get_message_by_name(&format!("api.{package}.{version}.{kind}"))
        .or_else(|| pool.get_message_by_name(&format!("apimachinery.pkg.apis.meta.v1.{kind}")))
}

/// A message as Kubernetes writes it in JSON.
fn message(message: &DynamicMessage) -> Value {
    let field = |name: &str| message.get_field_by_name(name);
    match message.descriptor().full_name() {
        "apimachinery.pkg.api.resource.Quantity" => {
            json!(field("string").and_then(|s| s.as_str().map(str::to_owned)))
        }
        "apimachinery.pkg.util.intstr.IntOrString" => {
            match field("type").and_then(|t| t.as_i64()) {
                Some(1) => json!(field("strVal").and_then(|s| s.as_str().map(str::to_owned))),
                _ => json!(field("intVal").and_then(|i| i.as_i32()).unwrap_or(0)),
            }
        }
        name @ ("apimachinery.pkg.apis.meta.v1.Time"
        | "apimachinery.pkg.apis.meta.v1.MicroTime") => {
            let seconds = field("seconds").and_then(|s| s.as_i64()).unwrap_or(0);
            let nanos = field("nanos").and_then(|n| n.as_i32()).unwrap_or(0);
            time(seconds, nanos, name.ends_with("MicroTime"))
        }
        "apimachinery.pkg.apis.meta.v1.Duration" => {
            json!(go_duration(
                field("duration").and_then(|d| d.as_i64()).unwrap_or(0)
            ))
        }
        // A Go `[]string` type, whose message wraps it in `items`.
        "api.authorization.v1.ExtraValue" => field("items")
            .and_then(|items| field_value("items", &items))
            .unwrap_or_else(|| json!([])),
        "apimachinery.pkg.runtime.RawExtension" | "apimachinery.pkg.apis.meta.v1.FieldsV1" => {
            let name = if message.descriptor().name() == "FieldsV1" {
                "Raw"
            } else {
                "raw"
            };
            field(name)
                .and_then(|raw| raw.as_bytes().cloned())
                .and_then(|raw| serde_json::from_slice(&raw).ok())
                .unwrap_or(Value::Null)
        }
        full_name => {
            let mut object = Map::new();
            // The generated files name each field as its JSON does, but
            // for a Go struct embedded inline, whose fields JSON writes
            // into its parent's.
            for (descriptor, value) in message.fields() {
                match field_value(descriptor.name(), value) {
                    Some(Value::Object(fields))
                        if INLINE_FIELDS.contains(&(full_name, descriptor.name())) =>
                    {
                        object.extend(fields);
                    }
                    Some(json) => {
                        object.insert(descriptor.name().to_owned(), json);
                    }
                    None => {}
                }
            }
            Value::Object(object)
        }
    }
}

/// One field's JSON, or `None` when JSON leaves it out.
fn field_value(name: &str, value: &Field) -> Option<Value> {
    match value {
        Field::List(items) if items.is_empty() => None,
        Field::List(items) => Some(Value::Array(items.iter().map(element).collect())),
        Field::Map(entries) if entries.is_empty() => None,
        Field::Map(entries) => {
            let mut sorted: Vec<(String, Value)> = entries
                .iter()
                .map(|(k, v)| (map_key(k), element(v)))
                .collect();
            // Go's JSON writes a map's keys sorted.
            sorted.sort_by(|a, b| a.0.cmp(&b.0));
            Some(Value::Object(sorted.into_iter().collect()))
        }
        Field::Message(m) => Some(message(m)).filter(|v| !v.is_null()),
        scalar if is_zero(scalar) && !POINTER_FIELDS.contains(&name) => None,
        scalar => Some(element(scalar)),
    }
}

/// A value as an element of a list or a map, where nothing is left out.
fn element(value: &Field) -> Value {
    match value {
        Field::Bool(b) => json!(b),
        Field::I32(n) | Field::EnumNumber(n) => json!(n),
        Field::I64(n) => json!(n),
        Field::U32(n) => json!(n),
        Field::U64(n) => json!(n),
        Field::F32(n) => json!(n),
        Field::F64(n) => json!(n),
        Field::String(s) => json!(s),
        // Go's JSON writes `[]byte` as standard base64.
        Field::Bytes(b) => json!(base64::engine::general_purpose::STANDARD.encode(b)),
        Field::Message(m) => message(m),
        list @ (Field::List(_) | Field::Map(_)) => field_value("", list).unwrap_or(Value::Null),
    }
}

fn map_key(key: &MapKey) -> String {
    match key {
        MapKey::String(s) => s.clone(),
        MapKey::Bool(b) => b.to_string(),
        MapKey::I32(n) => n.to_string(),
        MapKey::I64(n) => n.to_string(),
        MapKey::U32(n) => n.to_string(),
        MapKey::U64(n) => n.to_string(),
    }
}

fn is_zero(value: &Field) -> bool {
    match value {
        Field::Bool(b) => !b,
        Field::I32(n) | Field::EnumNumber(n) => *n == 0,
        Field::I64(n) => *n == 0,
        Field::U32(n) => *n == 0,
        Field::U64(n) => *n == 0,
        Field::F32(n) => *n == 0.0,
        Field::F64(n) => *n == 0.0,
        Field::String(s) => s.is_empty(),
        Field::Bytes(b) => b.is_empty(),
        Field::Message(_) | Field::List(_) | Field::Map(_) => false,
    }
}

/// `metav1.Time` (whole seconds) or `MicroTime` (microseconds) as its
/// JSON marshaller writes it; the zero time is `null`.
fn time(seconds: i64, nanos: i32, micro: bool) -> Value {
    if seconds == 0 && nanos == 0 {
        return Value::Null;
    }
    let Ok(at) = jiff::Timestamp::new(seconds, if micro { nanos } else { 0 }) else {
        return Value::Null;
    };
    if micro {
        json!(format!("{}", at.strftime("%Y-%m-%dT%H:%M:%S.%6fZ")))
    } else {
        json!(format!("{}", at.strftime("%Y-%m-%dT%H:%M:%SZ")))
    }
}

/// Go's `time.Duration.String` of nanoseconds (`1h0m0s`, `1.5s`, `300ms`).
fn go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (unit, scale) = match n {
            n if n < 1_000 => return format!("{sign}{n}ns"),
            n if n < 1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", fraction(n, scale));
    }
    let seconds = fraction(n % 60_000_000_000, 1_000_000_000);
    let minutes = n / 60_000_000_000;
    match (minutes / 60, minutes % 60) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// `n / scale` with its fraction's trailing zeros dropped.
fn fraction(n: u64, scale: u64) -> String {
    let whole = n / scale;
    let rest = n % scale;
    if rest == 0 {
        return whole.to_string();
    }
    let digits = scale.ilog10() as usize;
    let text = format!("{rest:0digits$}");
    format!("{whole}.{}", text.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    /// A body as client-go's protobuf serializer writes one: the prefix,
    /// then `runtime.Unknown{typeMeta, raw}`.
    fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
        let pool = pool().expect("built in");
        let mut type_meta = DynamicMessage::new(
            pool.get_message_by_name("apimachinery.pkg.runtime.TypeMeta")
                .expect("TypeMeta"),
        );
        type_meta.set_field_by_name("apiVersion", Field::String(api_version.to_owned()));
        type_meta.set_field_by_name("kind", Field::String(kind.to_owned()));
        let mut unknown = DynamicMessage::new(
            pool.get_message_by_name("apimachinery.pkg.runtime.Unknown")
                .expect("Unknown"),
        );
        unknown.set_field_by_name("typeMeta", Field::Message(type_meta));
        unknown.set_field_by_name("raw", Field::Bytes(raw.into()));
        let mut body = MAGIC.to_vec();
        body.extend(unknown.encode_to_vec());
        body
    }

    /// A message of `name` from its JSON form (prost-reflect's protobuf
    /// JSON mapping), as the bytes Go's marshaller would send.
    fn encoded(name: &str, fields: Value) -> Vec<u8> {
        let descriptor = pool()
            .expect("built in")
            .get_message_by_name(name)
            .expect(name);
        let text = fields.to_string();
        let mut deserializer = serde_json::Deserializer::from_str(&text);
        DynamicMessage::deserialize(descriptor, &mut deserializer)
            .expect("a message")
            .encode_to_vec()
    }

    /// What `kubectl create configmap` sends reads as the JSON kubectl
    /// would send with `--output=json | kubectl create -f -`: the
    /// non-pointer empty strings and the zero creation time left out.
    #[test]
    fn a_config_map_reads_as_its_json() {
        let raw = encoded(
            "api.core.v1.ConfigMap",
            json!({"metadata": {"name": "settings", "namespace": "", "generateName": "",
                                "creationTimestamp": {"seconds": "0", "nanos": 0}},
                   "data": {"b": "2", "a": "1"}}),
        );
        let object = to_json(&envelope("v1", "ConfigMap", raw)).expect("decoded");
        assert_eq!(
            object,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "settings"}, "data": {"a": "1", "b": "2"}})
        );
    }

    /// The special wire forms: a Secret's bytes as base64, a Deployment's
    /// IntOrString, Quantity and a pointer's zero (`replicas: 0` kept,
    /// a non-pointer `minReadySeconds: 0` left out), a Time as RFC 3339.
    #[test]
    fn special_types_read_as_kubernetes_writes_them() {
        let secret = encoded(
            "api.core.v1.Secret",
            json!({"metadata": {"name": "s"}, "data": {"k": "aGk="}, "type": "Opaque"}),
        );
        let secret = to_json(&envelope("v1", "Secret", secret)).expect("decoded");
        assert_eq!(secret["data"]["k"], "aGk=");
        assert_eq!(secret["type"], "Opaque");
        let deployment = encoded(
            "api.apps.v1.Deployment",
            json!({
                "metadata": {"name": "web", "creationTimestamp": {"seconds": "1767225600"}},
                "spec": {"replicas": 0, "minReadySeconds": 0,
                         "strategy": {"rollingUpdate": {"maxSurge": {"type": 1, "strVal": "25%"},
                                                        "maxUnavailable": {"type": 0, "intVal": 1}}},
                         "template": {"spec": {"containers": [{"name": "c", "image": "nginx",
                            "resources": {"limits": {"cpu": {"string": "500m"}}},
                            "ports": [{"containerPort": 80}]}]}}}
            }),
        );
        let deployment = to_json(&envelope("apps/v1", "Deployment", deployment)).expect("decoded");
        assert_eq!(
            deployment["metadata"]["creationTimestamp"],
            "2026-01-01T00:00:00Z"
        );
        assert_eq!(deployment["spec"]["replicas"], 0);
        assert!(deployment["spec"].get("minReadySeconds").is_none());
        assert_eq!(
            deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
            "25%"
        );
        assert_eq!(
            deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"],
            1
        );
        let container = &deployment["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["resources"]["limits"]["cpu"], "500m");
        assert_eq!(container["ports"][0]["containerPort"], 80);
    }

    /// Go structs embedded inline are a field of their own in protobuf and
    /// part of their parent in JSON: a volume's source beside its name, a
    /// probe's handler beside its timings, a key selector's name beside its
    /// key. Control: a named struct field (a container's `resources`) stays
    /// nested.
    #[test]
    fn inline_structs_read_into_their_parent() {
        let pod = encoded(
            "api.core.v1.Pod",
            json!({"metadata": {"name": "p"},
                   "spec": {"volumes": [{"name": "settings",
                                         "volumeSource": {"configMap": {
                                            "localObjectReference": {"name": "app"}}}}],
                            "containers": [{"name": "c",
                               "resources": {"limits": {"cpu": {"string": "1"}}},
                               "readinessProbe": {"handler": {"httpGet": {"path": "/ready",
                                   "port": {"type": 0, "intVal": 8080}}},
                                 "periodSeconds": 5},
                               "env": [{"name": "MODE", "valueFrom": {"configMapKeyRef": {
                                   "localObjectReference": {"name": "app"}, "key": "mode"}}}]}]}}),
        );
        let pod = to_json(&envelope("v1", "Pod", pod)).expect("decoded");
        let spec = &pod["spec"];
        assert_eq!(
            spec["volumes"][0],
            json!({"name": "settings", "configMap": {"name": "app"}})
        );
        let container = &spec["containers"][0];
        assert_eq!(
            container["readinessProbe"],
            json!({"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5})
        );
        assert_eq!(
            container["env"][0]["valueFrom"]["configMapKeyRef"],
            json!({"name": "app", "key": "mode"})
        );
        assert_eq!(container["resources"], json!({"limits": {"cpu": "1"}}));
        let ingress = encoded(
            "api.networking.v1.Ingress",
            json!({"metadata": {"name": "web"},
                   "spec": {"rules": [{"host": "web.example.com", "ingressRuleValue": {
                       "http": {"paths": [{"path": "/", "pathType": "Prefix"}]}}}]}}),
        );
        let ingress =
            to_json(&envelope("networking.k8s.io/v1", "Ingress", ingress)).expect("decoded");
        assert_eq!(
            ingress["spec"]["rules"][0],
            json!({"host": "web.example.com",
                   "http": {"paths": [{"path": "/", "pathType": "Prefix"}]}})
        );
    }

    /// A kind with no definition (a custom resource) is a 415; a body
    /// without the prefix a 400.
    #[test]
    fn unknown_kinds_and_broken_bodies_are_refused() {
        let custom = to_json(&envelope("stable.example.com/v1", "CronTab", Vec::new()))
            .expect_err("no definition");
        assert_eq!(custom.status()["code"], 415);
        let broken = to_json(b"{\"kind\":\"ConfigMap\"}").expect_err("not protobuf");
        assert_eq!(broken.status()["code"], 400);
    }

    /// Protobuf as Go's marshaller writes it, byte by byte: field `n`,
    /// its length, its bytes.
    fn wire(n: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(n << 3) | 2, u8::try_from(bytes.len()).expect("short")];
        out.extend_from_slice(bytes);
        out
    }

    /// The SelfSubjectAccessReview `kubectl auth can-i create pods -n
    /// apps` sends, written field by field as the wire has it (not by
    /// prost-reflect), reads as its JSON: the reviews need no reader of
    /// their own. Control: a truncated body is a 400.
    #[test]
    fn an_access_review_written_by_hand_reads_as_its_json() {
        let mut attributes = wire(1, b"apps");
        attributes.extend(wire(2, b"create"));
        attributes.extend(wire(5, b"pods"));
        let review = wire(2, &wire(1, &attributes));
        let mut type_meta = wire(1, b"authorization.k8s.io/v1");
        type_meta.extend(wire(2, b"SelfSubjectAccessReview"));
        let mut body = MAGIC.to_vec();
        body.extend(wire(1, &type_meta));
        body.extend(wire(2, &review));
        assert_eq!(
            to_json(&body).expect("decoded"),
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                   "spec": {"resourceAttributes": {"namespace": "apps", "verb": "create",
                                                   "resource": "pods"}}})
        );
        let broken = to_json(b"k8s\0\x12\xff").expect_err("truncated");
        assert_eq!(broken.status()["code"], 400);
    }

    #[test]
    fn durations_read_as_go_prints_them() {
        assert_eq!(go_duration(3_600_000_000_000), "1h0m0s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(300_000_000), "300ms");
        assert_eq!(go_duration(90_000_000_000), "1m30s");
    }
}
