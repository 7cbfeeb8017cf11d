//! `kubectl auth can-i`: SelfSubjectAccessReview and
//! SelfSubjectRulesReview (`authorization.k8s.io/v1`), answered by the
//! façade's own authorization ([`super::auth`]): whoever holds the token
//! may do anything the simulator's façade serves; a frozen snapshot
//! refuses every write, so there only reads are allowed.
//!
//! kubectl's typed clients send these reviews as protobuf
//! (`application/vnd.kubernetes.protobuf`); the few fields a review
//! carries are read from it here (the wire format of `runtime.Unknown`
//! and of the review's `generated.proto`), the answer goes back as JSON,
//! which every client accepts.

use serde_json::{Map, Value, json};

use super::api::{ApiError, ApiResult, Reply, Request};
use super::media::media_type;

const GROUP_VERSION: &str = "authorization.k8s.io/v1";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// The verbs that read: all a frozen snapshot allows.
const READ_VERBS: [&str; 3] = ["get", "list", "watch"];

/// Whether `path` is one of the reviews, the one place a protobuf body is
/// read.
pub(super) fn is_review(path: &str) -> bool {
    review_kind(path).is_some()
}

fn review_kind(path: &str) -> Option<&'static str> {
    match path.trim_end_matches('/') {
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" => Some("SelfSubjectAccessReview"),
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews" => Some("SelfSubjectRulesReview"),
        _ => None,
    }
}

/// Answers a review posted to `request.path`, or `None` for any other
/// request; `read_only`: only reads are allowed (a frozen snapshot).
pub(super) fn answer(request: &Request, read_only: bool) -> Option<ApiResult> {
    let kind = review_kind(&request.path)?;
    if request.method != "POST" {
        return Some(Err(ApiError::new(
            405,
            "MethodNotAllowed",
            format!("{} is not supported on this path", request.method),
        )));
    }
    Some(review(request, kind, read_only))
}

fn review(request: &Request, kind: &'static str, read_only: bool) -> ApiResult {
    let spec = if media_type(&request.content_type) == PROTOBUF {
        decode_protobuf(kind, &request.body).ok_or_else(|| {
            ApiError::bad_request(format!("cannot decode the {kind} protobuf body"))
        })?
    } else {
        request
            .json_body()?
            .get("spec")
            .cloned()
            .unwrap_or_else(|| json!({}))
    };
    let status = if kind == "SelfSubjectAccessReview" {
        access_status(&spec, read_only)?
    } else {
        rules_status(read_only)
    };
    Ok(Reply::Json(
        201,
        json!({"kind": kind, "apiVersion": GROUP_VERSION,
               "metadata": {"creationTimestamp": null}, "spec": spec, "status": status}),
    ))
}

/// Whether the review's action is allowed. The API server refuses a
/// review that names neither or both kinds of attributes (its
/// `ValidateSelfSubjectAccessReviewSpec`).
fn access_status(spec: &Value, read_only: bool) -> Result<Value, ApiError> {
    let resource = spec.get("resourceAttributes").filter(|v| v.is_object());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| v.is_object());
    let attributes = match (resource, non_resource) {
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => {
            return Err(ApiError::invalid(
                "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.resourceAttributes: Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
        (Some(_), Some(_)) => {
            return Err(ApiError::invalid(
                "SelfSubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.nonResourceAttributes: Invalid value: \"\": cannot be specified in combination with resourceAttributes",
            ));
        }
    };
    let verb = attributes
        .get("verb")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let reads = READ_VERBS.contains(&verb) || non_resource.is_some() && verb == "get";
    Ok(if !read_only {
        json!({"allowed": true,
               "reason": "the token of the kubeconfig bench sim serve wrote is allowed every verb"})
    } else if reads {
        json!({"allowed": true, "reason": "a frozen snapshot is served for reading"})
    } else {
        json!({"allowed": false, "denied": true,
               "reason": "a frozen snapshot is served read-only: nothing can change it"})
    })
}

/// The rules the token holder has: everything, or reads of a frozen
/// snapshot.
fn rules_status(read_only: bool) -> Value {
    let verbs: Vec<&str> = if read_only {
        READ_VERBS.to_vec()
    } else {
        vec!["*"]
    };
    json!({
        "resourceRules": [{"verbs": verbs, "apiGroups": ["*"], "resources": ["*"]}],
        "nonResourceRules": [{"verbs": if read_only { vec!["get"] } else { vec!["*"] },
                              "nonResourceURLs": ["*"]}],
        "incomplete": false,
    })
}

/// One field of a protobuf message: a varint, or length-delimited bytes
/// (fixed-width fields do not occur in a review and end the read).
enum Wire<'a> {
    Varint,
    Bytes(&'a [u8]),
}

fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The fields of a message, in order; `None` when it does not parse.
fn fields(bytes: &[u8]) -> Option<Vec<(u64, Wire<'_>)>> {
    let mut at = 0;
    let mut out = Vec::new();
    while at < bytes.len() {
        let key = varint(bytes, &mut at)?;
        let field = key >> 3;
        match key & 7 {
            0 => {
                varint(bytes, &mut at)?;
                out.push((field, Wire::Varint));
            }
            2 => {
                let len = usize::try_from(varint(bytes, &mut at)?).ok()?;
                let end = at.checked_add(len).filter(|e| *e <= bytes.len())?;
                out.push((field, Wire::Bytes(&bytes[at..end])));
                at = end;
            }
            _ => return None,
        }
    }
    Some(out)
}

fn message(bytes: &[u8], number: u64) -> Option<&[u8]> {
    fields(bytes)?.into_iter().find_map(|(f, w)| match w {
        Wire::Bytes(b) if f == number => Some(b),
        _ => None,
    })
}

/// A message's string fields by their numbers, as JSON under the names
/// given (absent fields are left out, as the JSON form omits them).
fn strings(bytes: &[u8], names: &[(u64, &str)]) -> Option<Value> {
    let mut object = Map::new();
    for (field, wire) in fields(bytes)? {
        if let (Wire::Bytes(b), Some((_, name))) = (wire, names.iter().find(|(n, _)| *n == field)) {
            object.insert((*name).to_owned(), json!(String::from_utf8_lossy(b)));
        }
    }
    Some(Value::Object(object))
}

/// The spec of a review sent as protobuf: the `k8s\0` prefix, then a
/// `runtime.Unknown` whose `raw` (field 2) is the review; its spec is
/// field 2 (authorization/v1 `generated.proto`).
fn decode_protobuf(kind: &str, body: &[u8]) -> Option<Value> {
    let unknown = body.strip_prefix(b"k8s\0")?;
    let review = message(unknown, 2)?;
    let spec = message(review, 2).unwrap_or_default();
    if kind == "SelfSubjectRulesReview" {
        return strings(spec, &[(1, "namespace")]);
    }
    let mut out = Map::new();
    if let Some(resource) = message(spec, 1) {
        let names = [
            (1, "namespace"),
            (2, "verb"),
            (3, "group"),
            (4, "version"),
            (5, "resource"),
            (6, "subresource"),
            (7, "name"),
        ];
        out.insert("resourceAttributes".to_owned(), strings(resource, &names)?);
    }
    if let Some(non_resource) = message(spec, 2) {
        out.insert(
            "nonResourceAttributes".to_owned(),
            strings(non_resource, &[(1, "path"), (2, "verb")])?,
        );
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{json as reply_json, request};

    /// Protobuf as the Go encoder writes it: field `n`, length, bytes.
    fn field(n: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![(n << 3) | 2, u8::try_from(bytes.len()).expect("short")];
        out.extend_from_slice(bytes);
        out
    }

    fn access_review_protobuf(verb: &str, resource: &str, namespace: &str) -> Vec<u8> {
        let mut attributes = field(1, namespace.as_bytes());
        attributes.extend(field(2, verb.as_bytes()));
        attributes.extend(field(5, resource.as_bytes()));
        let spec = field(1, &attributes);
        let review = field(2, &spec);
        let mut type_meta = field(1, GROUP_VERSION.as_bytes());
        type_meta.extend(field(2, b"SelfSubjectAccessReview"));
        let mut unknown = field(1, &type_meta);
        unknown.extend(field(2, &review));
        let mut body = b"k8s\0".to_vec();
        body.extend(unknown);
        body
    }

    fn post(path: &str, content_type: &str, body: Vec<u8>) -> Request {
        let mut r = request("POST", path, "");
        r.content_type = content_type.to_owned();
        r.body = body.into();
        r
    }

    const ACCESS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

    #[test]
    fn a_protobuf_review_is_read_and_answered_as_json() {
        let body = access_review_protobuf("create", "pods", "apps");
        let reply = answer(&post(ACCESS, PROTOBUF, body), false).expect("a review path");
        let (code, review) = reply_json(reply.expect("answered"));
        assert_eq!(code, 201);
        assert_eq!(review["kind"], "SelfSubjectAccessReview");
        assert_eq!(
            review["spec"]["resourceAttributes"],
            json!({"namespace": "apps", "verb": "create", "resource": "pods"})
        );
        assert_eq!(review["status"]["allowed"], true);
        let broken = post(ACCESS, PROTOBUF, b"k8s\0\x12\xff".to_vec());
        let (code, _) = reply_json(
            answer(&broken, false)
                .expect("a review path")
                .unwrap_err()
                .reply(),
        );
        assert_eq!(code, 400);
    }

    /// The façade's authorization: every verb with the token; a frozen
    /// snapshot allows reads and denies writes (its writes are refused).
    #[test]
    fn what_is_allowed_follows_what_the_server_lets_through() {
        let cases = [
            ("create", false, true),
            ("delete", false, true),
            ("get", true, true),
            ("watch", true, true),
            ("create", true, false),
            ("patch", true, false),
        ];
        for (verb, read_only, allowed) in cases {
            let body = format!(
                r#"{{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                    "spec": {{"resourceAttributes": {{"verb": "{verb}", "resource": "pods"}}}}}}"#
            );
            let reply = answer(
                &post(ACCESS, "application/json", body.into_bytes()),
                read_only,
            );
            let (_, review) = reply_json(reply.expect("a review path").expect("answered"));
            assert_eq!(
                review["status"]["allowed"], allowed,
                "{verb} read_only={read_only}"
            );
        }
        let neither = post(ACCESS, "application/json", br#"{"spec": {}}"#.to_vec());
        let (code, _) = reply_json(
            answer(&neither, false)
                .expect("a review path")
                .unwrap_err()
                .reply(),
        );
        assert_eq!(code, 422);
        assert!(answer(&request("POST", "/api/v1/pods", "{}"), false).is_none());
    }

    #[test]
    fn the_rules_are_everything_or_reads() {
        let path = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews";
        let body = br#"{"spec": {"namespace": "apps"}}"#.to_vec();
        let (_, all) = reply_json(
            answer(&post(path, "application/json", body.clone()), false)
                .expect("a review path")
                .expect("answered"),
        );
        assert_eq!(all["status"]["resourceRules"][0]["verbs"], json!(["*"]));
        let (_, reads) = reply_json(
            answer(&post(path, "application/json", body), true)
                .expect("a review path")
                .expect("answered"),
        );
        assert_eq!(
            reads["status"]["resourceRules"][0]["verbs"],
            json!(["get", "list", "watch"])
        );
    }
}
