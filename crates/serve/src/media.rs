//! Request bodies by media type: which `Content-Type`s each method
//! accepts, as the API server's content negotiation answers (415 with the
//! accepted list, `UnsupportedMediaType`), and reading a body of an
//! accepted type as JSON.
//!
//! Refusing every other type also closes the browser's door: a page can
//! send `text/plain`, `multipart/form-data` or a form without a CORS
//! preflight, but none of them is accepted here.

use serde_json::Value;

use super::api::ApiError;

/// What a create, update or delete body may be, as the API server lists
/// them: a protobuf body is read into JSON at the door
/// (`super::protobuf`), or by the access reviews (`super::access`).
pub(super) const OBJECT_TYPES: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// The patch types of a PATCH (`application/apply-patch+yaml` is
/// server-side apply).
pub(super) const PATCH_TYPES: [&str; 4] = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];

/// The media type of a `Content-Type` header, without its parameters.
pub(super) fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
}

/// The API server's 415: `the body of the request was in an unknown
/// format - accepted media types include: …` (apimachinery's
/// `negotiation.NewUnsupportedMediaTypeError`).
fn unsupported(accepted: &[&str]) -> ApiError {
    ApiError::new(
        415,
        "UnsupportedMediaType",
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
    )
}

/// Whether a request of `method` may come with this `Content-Type`. A
/// PATCH must name one of the patch types (the API server refuses a patch
/// without one); a body-carrying request without a type is read as JSON,
/// the API server's default; a GET's type is not looked at.
pub(super) fn check(method: &str, content_type: &str) -> Result<(), ApiError> {
    let media = media_type(content_type);
    match method {
        "PATCH" if PATCH_TYPES.contains(&media.as_str()) => Ok(()),
        "PATCH" => Err(unsupported(&PATCH_TYPES)),
        "POST" | "PUT" | "DELETE" if media.is_empty() || OBJECT_TYPES.contains(&media.as_str()) => {
            Ok(())
        }
        "POST" | "PUT" | "DELETE" => Err(unsupported(&OBJECT_TYPES)),
        _ => Ok(()),
    }
}

/// Whether a body of this type is YAML (JSON is read as YAML's subset
/// would be, but by the JSON parser, whose messages clients expect).
pub(super) fn is_yaml(content_type: &str) -> bool {
    matches!(
        media_type(content_type).as_str(),
        "application/yaml" | "application/apply-patch+yaml"
    )
}

/// A body as a JSON value: YAML for the YAML types, JSON otherwise; a body
/// that does not parse is a 400.
pub(super) fn decode(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    if is_yaml(content_type) {
        let text = std::str::from_utf8(body)
            .map_err(|e| ApiError::bad_request(format!("the request body is not UTF-8: {e}")))?;
        serde_saphyr::from_str::<Value>(text)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid YAML: {e}")))
    } else {
        serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Reply;

    fn code_and_message(error: ApiError) -> (u16, String) {
        match error.reply() {
            Reply::Json(code, body) => (
                code,
                body["message"].as_str().unwrap_or_default().to_owned(),
            ),
            _ => panic!("an error is always a JSON Status"),
        }
    }

    #[test]
    fn objects_are_json_or_yaml_and_a_browsers_simple_types_are_refused() {
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
            "",
        ] {
            assert!(check("POST", ok).is_ok(), "{ok:?}");
            assert!(check("PUT", ok).is_ok(), "{ok:?}");
        }
        for refused in [
            "text/plain",
            "text/plain;charset=UTF-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
        ] {
            let (code, message) = code_and_message(check("POST", refused).expect_err(refused));
            assert_eq!(code, 415, "{refused}");
            assert_eq!(
                message,
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            );
        }
        assert!(
            check("GET", "text/plain").is_ok(),
            "a read has no body to read"
        );
    }

    #[test]
    fn a_patch_names_its_patch_type() {
        for ok in PATCH_TYPES {
            assert!(check("PATCH", ok).is_ok(), "{ok}");
        }
        for refused in ["application/json", "", "text/plain"] {
            let (code, message) = code_and_message(check("PATCH", refused).expect_err(refused));
            assert_eq!(code, 415);
            assert!(
                message.ends_with("application/apply-patch+yaml"),
                "{message}"
            );
        }
    }

    #[test]
    fn yaml_bodies_read_as_the_same_json() {
        let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: \"1\"\n";
        let json =
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"1"}}"#;
        let from_yaml = decode("application/yaml", yaml.as_bytes()).expect("yaml");
        assert_eq!(from_yaml, decode("application/json", json).expect("json"));
        assert_eq!(
            decode("application/apply-patch+yaml", yaml.as_bytes()).expect("apply"),
            from_yaml
        );
        let (code, _) =
            code_and_message(decode("application/json", yaml.as_bytes()).expect_err("not json"));
        assert_eq!(code, 400);
        let (code, _) =
            code_and_message(decode("application/yaml", b"a: [").expect_err("bad yaml"));
        assert_eq!(code, 400);
    }
}
