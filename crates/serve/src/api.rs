//! What crosses between the HTTP side and the simulator thread: a request
//! as the thread needs it, the reply, and the Kubernetes `Status` errors
//! every handler answers with.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::resources::Resource;
use drillbench_sim::api_ops::ApiOpError;

#[derive(Debug)]
pub(super) struct Request {
    pub(super) method: String,
    /// The path, without the query.
    pub(super) path: String,
    /// Query parameters, decoded.
    pub(super) query: BTreeMap<String, String>,
    pub(super) content_type: String,
    pub(super) accept: String,
    /// The client's `User-Agent`: what names its writes' field manager
    /// when it names none.
    pub(super) user_agent: String,
    pub(super) body: Bytes,
}

impl Request {
    /// The body as JSON (a YAML body read as the JSON it stands for);
    /// one that does not parse is a 400.
    pub(super) fn json_body(&self) -> Result<Value, ApiError> {
        super::media::decode(&self.content_type, &self.body)
    }

    /// The body as JSON, or `{}` when there is none (delete options and
    /// evictions may come without one).
    pub(super) fn json_body_or_empty(&self) -> Result<Value, ApiError> {
        if self.body.is_empty() {
            Ok(json!({}))
        } else {
            self.json_body()
        }
    }
}

#[derive(Debug)]
pub(super) enum Reply {
    /// A JSON body with an HTTP status.
    Json(u16, Value),
    /// A stream of watch events, one JSON line each.
    Watch {
        events: mpsc::UnboundedReceiver<Bytes>,
        /// When the server ends the watch (`timeoutSeconds`).
        timeout: Option<std::time::Duration>,
        /// Whether the client gets the events as protobuf frames
        /// ([`super::protobuf_reply::watch_frame`]).
        protobuf: bool,
    },
    /// A body already serialised, with its media type: a list spliced
    /// from the cache's bytes ([`super::cache`]) or a protobuf document.
    Raw {
        status: u16,
        media_type: &'static str,
        body: Bytes,
    },
}

/// What the HTTP side asks of the simulator thread.
#[derive(Debug)]
pub(super) enum Command {
    /// An API request and where to answer.
    Api(Request, oneshot::Sender<Reply>),
    Stop,
}

/// A Kubernetes `Status` error.
#[derive(Debug)]
pub(super) struct ApiError {
    code: u16,
    reason: &'static str,
    message: String,
    /// What few errors add to their Status, boxed so every `Result`
    /// carrying an error stays small.
    extra: Option<Box<Extra>>,
}

#[derive(Debug, Default)]
struct Extra {
    /// The Status's `details` (causes, `retryAfterSeconds`), if any.
    details: Option<Value>,
    /// A continue token in the Status's list metadata: what an expired
    /// continuation answers, so the client may go on inconsistently.
    continue_token: Option<String>,
}

impl ApiError {
    pub(super) fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            extra: None,
        }
    }

    pub(super) fn with_details(mut self, details: Value) -> Self {
        self.extra.get_or_insert_default().details = Some(details);
        self
    }

    pub(super) fn with_list_continue(mut self, token: String) -> Self {
        self.extra.get_or_insert_default().continue_token = Some(token);
        self
    }

    pub(super) fn not_found(resource: &Resource, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", resource.qualified()),
        )
    }

    /// The 404 of a path the server does not serve at all.
    pub(super) fn no_such_path() -> Self {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    pub(super) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    pub(super) fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(422, "Invalid", message)
    }

    /// apimachinery's `NewInternalError`: a `500` whose message says so.
    pub(super) fn internal(message: impl std::fmt::Display) -> Self {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {message}"),
        )
        .with_details(json!({"causes": [{"message": message.to_string()}]}))
    }

    pub(super) fn reply(self) -> Reply {
        Reply::Json(self.code, self.status())
    }

    /// The `Status` object of this error.
    pub(super) fn status(&self) -> Value {
        let mut status = status_body(self.code, self.reason, &self.message);
        let extra = self.extra.as_deref();
        if let Some(details) = extra.and_then(|e| e.details.as_ref()) {
            status["details"] = details.clone();
        }
        if let Some(token) = extra.and_then(|e| e.continue_token.as_ref()) {
            status["metadata"] = json!({"continue": token});
        }
        status
    }
}

impl From<ApiOpError> for ApiError {
    /// The simulator's refusal of an API operation, as the API server
    /// would answer it.
    fn from(error: ApiOpError) -> Self {
        match error {
            ApiOpError::NotFound(m) => ApiError::new(404, "NotFound", m),
            ApiOpError::Conflict(m) => ApiError::new(409, "Conflict", m),
            ApiOpError::Invalid(m) => ApiError::invalid(m),
        }
    }
}

pub(super) type ApiResult = Result<Reply, ApiError>;

pub(super) fn status_body(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
           "status": "Failure", "message": message, "reason": reason, "code": code})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(body: &str) -> Request {
        Request {
            method: "DELETE".to_owned(),
            path: "/".to_owned(),
            query: BTreeMap::new(),
            content_type: String::new(),
            accept: String::new(),
            user_agent: String::new(),
            body: Bytes::from(body.to_owned()),
        }
    }

    fn status_of(error: ApiError) -> (u16, Value) {
        match error.reply() {
            Reply::Json(code, body) => (code, body),
            _ => panic!("an error is always a JSON Status"),
        }
    }

    #[test]
    fn an_error_answers_with_a_status_of_its_own_code() {
        let pods = super::super::resources::by_kind("Pod").expect("pods are served");
        let (code, body) = status_of(ApiError::not_found(pods, "web-0"));
        assert_eq!(code, 404);
        assert_eq!(body["kind"], "Status");
        assert_eq!(body["status"], "Failure");
        assert_eq!(body["reason"], "NotFound");
        assert_eq!(body["code"], 404);
        assert_eq!(body["message"], "pods \"web-0\" not found");
    }

    #[test]
    fn simulator_refusals_keep_their_meaning() {
        let (code, body) = status_of(ApiOpError::Conflict("busy".to_owned()).into());
        assert_eq!((code, body["reason"].as_str()), (409, Some("Conflict")));
        let (code, body) = status_of(ApiOpError::Invalid("bad".to_owned()).into());
        assert_eq!((code, body["reason"].as_str()), (422, Some("Invalid")));
        assert_eq!(body["message"], "bad");
        let (code, _) = status_of(ApiOpError::NotFound("gone".to_owned()).into());
        assert_eq!(code, 404);
    }

    #[test]
    fn an_empty_body_reads_as_no_options_but_bad_json_is_refused() {
        assert_eq!(request("").json_body_or_empty().expect("empty"), json!({}));
        assert_eq!(
            request(r#"{"gracePeriodSeconds": 3}"#)
                .json_body_or_empty()
                .expect("json")["gracePeriodSeconds"],
            3
        );
        let (code, body) = status_of(request("{").json_body_or_empty().expect_err("not json"));
        assert_eq!(code, 400);
        assert!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("the request body is not valid JSON")),
            "{body}"
        );
        assert!(request("").json_body().is_err(), "a create needs a body");
    }
}
