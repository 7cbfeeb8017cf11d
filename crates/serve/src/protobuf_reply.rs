//! Response bodies as `application/vnd.kubernetes.protobuf`, for a client
//! that asks for protobuf first (kubectl's typed clients send `Accept:
//! application/vnd.kubernetes.protobuf, */*`; client-go's controllers
//! configured for protobuf the same): the JSON object the façade answers
//! with, written as the API server's protobuf serializer writes it (the
//! `k8s\0` prefix, then a `runtime.Unknown` whose `raw` is the object's
//! message of its group's `generated.proto`).
//!
//! The JSON is read with the rules [`super::protobuf`] writes it with,
//! the other way round: `Quantity` from its string, `IntOrString` from an
//! int or a string, `Time` and `MicroTime` from RFC 3339, `Duration` from
//! Go's text, `RawExtension` and `FieldsV1` as the JSON bytes they carry,
//! `bytes` from base64, and a struct Go embeds inline from its parent's
//! fields. A field the vendored message does not define is not written,
//! as the API server's own protobuf would not carry it. The bytes are
//! written here rather than through a dynamic message, whose maps are
//! hash maps: Go writes a map's entries by key, and so does this, so the
//! same object is always the same bytes.
//!
//! What has no message (a custom resource, a Table, discovery documents)
//! stays JSON, which the client accepts too (`*/*`, or `application/json`
//! after protobuf), as the API server answers a CRD's objects.
//!
//! A watch a protobuf client opens on a kind with a message streams as
//! the API server's protobuf watch does (`serveWatch` with the protobuf
//! `StreamSerializer`): media type `…protobuf;stream=watch`, each event a
//! frame of `LengthDelimitedFramer` (a four-byte big-endian length) around
//! a `metav1.WatchEvent` written raw, whose `object.raw` is the object as
//! [`encode`] writes it, prefix and envelope included. client-go picks its
//! decoder from the response's media type, so a watch of a kind without a
//! message (a custom resource, a Table) stays JSON lines.

use base64::Engine;
use bytes::Bytes;
use prost_reflect::prost::encoding::{self, WireType};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde_json::Value;

use super::protobuf::{INLINE_FIELDS, MAGIC, PROTOBUF, message_for, pool};
use super::resources::Resource;
use super::table::wants_table;

/// Whether the client asks for protobuf before any other type: the first
/// media type its `Accept` lists.
pub(super) fn preferred(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .and_then(|choice| choice.split(';').next())
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(PROTOBUF))
}

/// The media type of a protobuf watch.
pub(super) const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";

/// Whether a watch of `resource` for a client whose `Accept` is `accept`
/// streams protobuf frames: it asks for protobuf first, not for a Table,
/// and the resource's kind is a built-in one with a message.
pub(super) fn watch_in_protobuf(accept: &str, resource: &Resource) -> bool {
    preferred(accept)
        && !wants_table(accept)
        && !resource.is_custom()
        && pool()
            .is_some_and(|pool| message_for(pool, &resource.api_version(), resource.kind).is_some())
}

/// One JSON watch line (`{"type": …, "object": …}`) as a protobuf watch
/// frame. An object [`encode`] cannot write (never one of the watched
/// kind) travels as its JSON bytes, which client-go's universal
/// deserializer reads as well.
pub(super) fn watch_frame(line: &[u8]) -> Bytes {
    let event: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
    let kind = event
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let object = event.get("object").cloned().unwrap_or(Value::Null);
    let raw = encode(&object)
        .map(|b| b.to_vec())
        .unwrap_or_else(|| serde_json::to_vec(&object).unwrap_or_default());
    // `metav1.WatchEvent`: type 1, object 2 (a `runtime.RawExtension`,
    // whose raw is 1).
    let mut extension = Vec::new();
    bytes_field(&mut extension, 1, &raw);
    let mut message = Vec::new();
    string_field(&mut message, 1, kind);
    bytes_field(&mut message, 2, &extension);
    let mut frame = (message.len() as u32).to_be_bytes().to_vec();
    frame.extend(message);
    Bytes::from(frame)
}

/// `object` as a protobuf body, or `None` when its kind has no message
/// here (it is answered as JSON).
pub(super) fn encode(object: &Value) -> Option<Bytes> {
    let pool = pool()?;
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let descriptor = message_for(pool, api_version, kind)?;
    let raw = message(object, &descriptor)?;
    let mut type_meta = Vec::new();
    string_field(&mut type_meta, 1, api_version);
    string_field(&mut type_meta, 2, kind);
    // `runtime.Unknown`: typeMeta 1, raw 2, contentEncoding 3,
    // contentType 4; Go writes every non-pointer field, the empty
    // encodings too.
    let mut unknown = Vec::new();
    bytes_field(&mut unknown, 1, &type_meta);
    bytes_field(&mut unknown, 2, &raw);
    string_field(&mut unknown, 3, "");
    string_field(&mut unknown, 4, "");
    let mut body = MAGIC.to_vec();
    body.extend(unknown);
    Some(Bytes::from(body))
}

/// A length-delimited field: a message's bytes, a string, `bytes`.
fn bytes_field(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    encoding::encode_key(number, WireType::LengthDelimited, out);
    encoding::encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

fn string_field(out: &mut Vec<u8>, number: u32, text: &str) {
    bytes_field(out, number, text.as_bytes());
}

fn varint_field(out: &mut Vec<u8>, number: u32, value: u64) {
    encoding::encode_key(number, WireType::Varint, out);
    encoding::encode_varint(value, out);
}

/// A JSON value as the bytes of the message `descriptor`, by Kubernetes'
/// rules, written as Go's generated marshallers write it: fields in
/// number order, a map's entries by key (so the same object is the same
/// bytes).
fn message(value: &Value, descriptor: &MessageDescriptor) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match descriptor.full_name() {
        // `Quantity`: string 1.
        "apimachinery.pkg.api.resource.Quantity" => string_field(&mut out, 1, &text(value)?),
        // `IntOrString`: type 1, intVal 2, strVal 3.
        "apimachinery.pkg.util.intstr.IntOrString" => match value {
            Value::String(s) => {
                varint_field(&mut out, 1, 1);
                varint_field(&mut out, 2, 0);
                string_field(&mut out, 3, s);
            }
            other => {
                let n = i32::try_from(other.as_i64()?).ok()?;
                varint_field(&mut out, 1, 0);
                varint_field(&mut out, 2, i64::from(n) as u64);
                string_field(&mut out, 3, "");
            }
        },
        // `Time`, `MicroTime`: seconds 1, nanos 2.
        "apimachinery.pkg.apis.meta.v1.Time" | "apimachinery.pkg.apis.meta.v1.MicroTime" => {
            let at: jiff::Timestamp = value.as_str()?.parse().ok()?;
            varint_field(&mut out, 1, at.as_second() as u64);
            varint_field(&mut out, 2, i64::from(at.subsec_nanosecond()) as u64);
        }
        // `Duration`: duration 1.
        "apimachinery.pkg.apis.meta.v1.Duration" => {
            varint_field(&mut out, 1, go_duration(value.as_str()?)? as u64);
        }
        // `ExtraValue`: items 1.
        "api.authorization.v1.ExtraValue" => {
            for item in value.as_array()? {
                string_field(&mut out, 1, &text(item)?);
            }
        }
        // `RawExtension`: raw 1; `FieldsV1`: Raw 1.
        "apimachinery.pkg.runtime.RawExtension" | "apimachinery.pkg.apis.meta.v1.FieldsV1" => {
            bytes_field(&mut out, 1, &serde_json::to_vec(value).ok()?);
        }
        full_name => {
            let object = value.as_object()?;
            let mut fields: Vec<FieldDescriptor> = descriptor.fields().collect();
            fields.sort_by_key(FieldDescriptor::number);
            for field in fields {
                if INLINE_FIELDS.contains(&(full_name, field.name())) {
                    // Its fields are the parent's, in JSON.
                    let Kind::Message(inline) = field.kind() else {
                        continue;
                    };
                    bytes_field(&mut out, field.number(), &message(value, &inline)?);
                    continue;
                }
                match object.get(field.name()) {
                    None | Some(Value::Null) => {}
                    Some(json) => write_field(&mut out, &field, json)?,
                }
            }
        }
    }
    Some(out)
}

/// One field: a map's entries by key, a list's elements (proto2 repeated
/// fields are not packed), or a single element.
fn write_field(out: &mut Vec<u8>, field: &FieldDescriptor, json: &Value) -> Option<()> {
    if field.is_map() {
        let Kind::Message(entry) = field.kind() else {
            return None;
        };
        let (key_field, value_field) = (entry.map_entry_key_field(), entry.map_entry_value_field());
        // `serde_json`'s map is ordered by key already.
        for (key, value) in json.as_object()? {
            let mut pair = Vec::new();
            write_element(&mut pair, &key_field, &Value::String(key.clone()))?;
            write_element(&mut pair, &value_field, value)?;
            bytes_field(out, field.number(), &pair);
        }
        return Some(());
    }
    if field.is_list() {
        for item in json.as_array()? {
            write_element(out, field, item)?;
        }
        return Some(());
    }
    write_element(out, field, json)
}

/// A single value of the field's kind, with its key.
fn write_element(out: &mut Vec<u8>, field: &FieldDescriptor, json: &Value) -> Option<()> {
    let number = field.number();
    let integer = || {
        json.as_i64()
            .or_else(|| json.as_str().and_then(|s| s.parse().ok()))
    };
    match field.kind() {
        Kind::Message(descriptor) => bytes_field(out, number, &message(json, &descriptor)?),
        Kind::String => string_field(out, number, &text(json)?),
        Kind::Bytes => bytes_field(
            out,
            number,
            &base64::engine::general_purpose::STANDARD
                .decode(json.as_str()?)
                .ok()?,
        ),
        Kind::Bool => varint_field(out, number, u64::from(json.as_bool()?)),
        // Negative int32s are sign-extended to ten bytes, as protobuf
        // writes them.
        Kind::Int32 | Kind::Enum(_) => varint_field(
            out,
            number,
            i64::from(i32::try_from(integer()?).ok()?) as u64,
        ),
        Kind::Int64 => varint_field(out, number, integer()? as u64),
        Kind::Uint32 | Kind::Uint64 => varint_field(out, number, u64::try_from(integer()?).ok()?),
        Kind::Double => {
            encoding::encode_key(number, WireType::SixtyFourBit, out);
            out.extend_from_slice(&json.as_f64()?.to_le_bytes());
        }
        // The vendored groups define no other kind of field.
        _ => return None,
    }
    Some(())
}

/// A string field's text; a number where a string is defined (a
/// Quantity written as `2`) is its JSON text.
fn text(json: &Value) -> Option<String> {
    match json {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Go's `time.ParseDuration`: `1h2m3.5s`, `300ms`, `-1.5µs`, `0`; the
/// nanoseconds.
fn go_duration(text: &str) -> Option<i64> {
    let (sign, mut rest) = match text.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, text.strip_prefix('+').unwrap_or(text)),
    };
    if rest == "0" {
        return Some(0);
    }
    let mut nanos = 0.0;
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..number_end].parse().ok()?;
        rest = &rest[number_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += number * scale;
    }
    Some((sign * nanos).round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What the façade answers reads back, through the request side's
    /// decoder, as the same JSON: every special form and an inline struct.
    #[test]
    fn an_encoded_object_decodes_to_the_same_json() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-0", "namespace": "apps", "resourceVersion": "42",
                         "generation": 3, "creationTimestamp": "2026-01-01T00:02:00Z",
                         "labels": {"app": "web"},
                         "managedFields": [{"manager": "kubectl", "operation": "Apply",
                                            "apiVersion": "v1", "fieldsType": "FieldsV1",
                                            "time": "2026-01-01T00:02:00Z",
                                            "fieldsV1": {"f:metadata": {"f:labels": {}}}}]},
            "spec": {"containers": [{"name": "web", "image": "nginx",
                                     "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}},
                                     "readinessProbe": {"httpGet": {"path": "/", "port": "http"},
                                                        "periodSeconds": 5}}],
                     "volumes": [{"name": "settings", "configMap": {"name": "web"}}],
                     "nodeName": "worker-1"},
            "status": {"phase": "Running", "podIP": "10.244.1.5",
                       "conditions": [{"type": "Ready", "status": "True",
                                       "lastTransitionTime": "2026-01-01T00:02:05Z"}]}
        });
        let body = encode(&pod).expect("a Pod has a message");
        assert!(body.starts_with(MAGIC));
        let decoded = super::super::protobuf::to_json(&body).expect("decodes");
        assert_eq!(decoded, pod);
        // The same object is the same bytes: a map's entries by key.
        let mut labelled = pod.clone();
        labelled["metadata"]["labels"] =
            json!({"d": "4", "a": "1", "c": "3", "b": "2", "e": "5", "f": "6"});
        let once = encode(&labelled).expect("encoded");
        assert!((0..16).all(|_| encode(&labelled).as_ref() == Some(&once)));
        // Control: a kind without a message stays JSON.
        assert!(
            encode(&json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab"})).is_none()
        );
    }

    /// Lists and errors have messages too: `PodList`, `Status`.
    #[test]
    fn lists_and_statuses_encode() {
        let list = json!({"apiVersion": "v1", "kind": "ConfigMapList",
                          "metadata": {"resourceVersion": "7"},
                          "items": [{"metadata": {"name": "a", "namespace": "apps"},
                                     "data": {"k": "v"}}]});
        let decoded =
            super::super::protobuf::to_json(&encode(&list).expect("encoded")).expect("decodes");
        assert_eq!(decoded, list);
        let status = json!({"apiVersion": "v1", "kind": "Status", "metadata": {},
                            "status": "Failure", "message": "configmaps \"b\" not found",
                            "reason": "NotFound",
                            "details": {"name": "b", "kind": "configmaps"}, "code": 404});
        let decoded =
            super::super::protobuf::to_json(&encode(&status).expect("encoded")).expect("decodes");
        assert_eq!(decoded["code"], 404);
        assert_eq!(decoded["reason"], "NotFound");
        assert_eq!(decoded["details"]["name"], "b");
    }

    /// The frame read back as client-go reads it: `LengthDelimitedFramer`
    /// (a big-endian length), a raw `metav1.WatchEvent`, and its object's
    /// raw bytes through the universal deserializer (here, the request
    /// side's decoder, which reads the prefixed envelope).
    fn read_frame(frame: &[u8]) -> (String, Vec<u8>) {
        let length = u32::from_be_bytes(frame[..4].try_into().expect("a length")) as usize;
        assert_eq!(length, frame.len() - 4, "one frame, whole");
        let descriptor = pool()
            .and_then(|p| p.get_message_by_name("apimachinery.pkg.apis.meta.v1.WatchEvent"))
            .expect("WatchEvent is vendored");
        let event =
            prost_reflect::DynamicMessage::decode(descriptor, &frame[4..]).expect("decodes");
        let kind = event
            .get_field_by_name("type")
            .and_then(|t| t.as_str().map(str::to_owned))
            .unwrap_or_default();
        let object = event.get_field_by_name("object").expect("an object");
        let raw = object
            .as_message()
            .and_then(|m| m.get_field_by_name("raw"))
            .and_then(|r| r.as_bytes().map(|b| b.to_vec()))
            .unwrap_or_default();
        (kind, raw)
    }

    // apiserver `serveWatch` with the protobuf StreamSerializer
    // (`protobuf.NewRawSerializer`, `LengthDelimitedFramer`), as
    // apimachinery's `expectPartialObjectMetaEventsProtobuf` reads it.
    #[test]
    fn a_watch_event_is_one_length_delimited_frame() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "web-0", "namespace": "apps",
                                      "resourceVersion": "9"}});
        let line = serde_json::to_vec(&json!({"type": "MODIFIED", "object": pod})).expect("json");
        let (kind, raw) = read_frame(&watch_frame(&line));
        assert_eq!(kind, "MODIFIED");
        assert!(raw.starts_with(MAGIC), "the object's own envelope");
        assert_eq!(super::super::protobuf::to_json(&raw).expect("decodes"), pod);
        // Control: an object with no message travels as its JSON.
        let custom = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                            "metadata": {"name": "w"}});
        let line = serde_json::to_vec(&json!({"type": "ADDED", "object": custom})).expect("json");
        let (_, raw) = read_frame(&watch_frame(&line));
        assert_eq!(serde_json::from_slice::<Value>(&raw).expect("JSON"), custom);
    }

    #[test]
    fn only_a_built_in_kind_watched_by_a_protobuf_client_streams_frames() {
        let pods = crate::resources::by_kind("Pod").expect("pods");
        let protobuf = "application/vnd.kubernetes.protobuf, */*";
        assert!(watch_in_protobuf(protobuf, pods));
        assert!(!watch_in_protobuf("application/json", pods));
        assert!(!watch_in_protobuf(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
            pods
        ));
    }

    #[test]
    fn the_client_must_ask_for_protobuf_first() {
        assert!(preferred("application/vnd.kubernetes.protobuf, */*"));
        assert!(preferred(
            "application/vnd.kubernetes.protobuf;q=1,application/json"
        ));
        assert!(!preferred(
            "application/json, application/vnd.kubernetes.protobuf"
        ));
        assert!(!preferred(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!preferred(""));
    }

    /// Go's `ParseDuration` on what `Duration.String` writes.
    #[test]
    fn durations_parse_as_go_reads_them() {
        for (text, nanos) in [
            ("0", 0),
            ("0s", 0),
            ("1h0m0s", 3_600_000_000_000),
            ("1.5s", 1_500_000_000),
            ("300ms", 300_000_000),
            ("2µs", 2_000),
            ("-1m30s", -90_000_000_000),
        ] {
            assert_eq!(go_duration(text), Some(nanos), "{text}");
        }
        assert_eq!(go_duration("5 parsecs"), None);
    }
}
