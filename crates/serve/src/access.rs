//! `kubectl auth can-i`: SelfSubjectAccessReview and
//! SelfSubjectRulesReview (`authorization.k8s.io/v1`), answered by the
//! façade's own authorization ([`super::auth`]): whoever holds the token
//! may do anything the simulator's façade serves; a frozen snapshot
//! refuses every write, so there only reads are allowed.
//!
//! kubectl's typed clients send these reviews as protobuf
//! (`application/vnd.kubernetes.protobuf`), read into JSON at the door
//! as every protobuf body is (`super::protobuf`); the answer goes back as
//! JSON, which every client accepts.

use serde_json::{Value, json};

use super::api::{ApiError, ApiResult, Reply, Request};

const GROUP_VERSION: &str = "authorization.k8s.io/v1";

/// The verbs that read: all a frozen snapshot allows.
const READ_VERBS: [&str; 3] = ["get", "list", "watch"];

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
    let spec = request
        .json_body()?
        .get("spec")
        .cloned()
        .unwrap_or_else(|| json!({}));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{json as reply_json, request};

    fn post(path: &str, content_type: &str, body: Vec<u8>) -> Request {
        let mut r = request("POST", path, "");
        r.content_type = content_type.to_owned();
        r.body = body.into();
        r
    }

    const ACCESS: &str = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";

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
