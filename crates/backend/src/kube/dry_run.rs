//! A create sent with server-side dry run (`dryRun=All`): the object goes
//! through the cluster's whole admission chain (mutating and validating
//! webhooks, Kyverno's included, which honour dry run) and is never
//! persisted. The answer is the API server's own: its HTTP status and, for
//! a refusal, the `Status` message that names the webhook and the policy.
//!
//! Kubernetes documents the behaviour in "Dry-run"
//! (<https://kubernetes.io/docs/reference/using-api/api-concepts/#dry-run>):
//! "the request is still processed as typical … admission controllers are
//! run … but the modifications are not persisted to storage".

use kube::api::{Api, DynamicObject, GroupVersionKind, PostParams};
use kube::client::Body;
use kube::discovery::Scope;
use serde_json::Value;

use crate::DryRunAnswer;

/// Sends `object` as a dry-run create. A kind the cluster does not serve,
/// or a request that never got an HTTP answer, is an error: neither says
/// anything about admission.
pub(super) async fn create(
    client: &kube::Client,
    object: &Value,
    field_manager: &str,
) -> Result<DryRunAnswer, kube::Error> {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    let (Some(api_version), Some(kind)) = (text("/apiVersion"), text("/kind")) else {
        return Err(missing("an object without apiVersion or kind"));
    };
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let (resource, capabilities) = kube::discovery::pinned_kind(client, &gvk).await?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(
            client.clone(),
            text("/metadata/namespace").unwrap_or("default"),
            &resource,
        ),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    let params = PostParams {
        dry_run: true,
        field_manager: Some(field_manager.to_owned()),
    };
    let body = serde_json::to_vec(object).map_err(kube::Error::SerdeError)?;
    let request = kube::core::Request::new(api.resource_url())
        .create(&params, body)
        .map_err(kube::Error::BuildRequest)?;
    let sent = format!("{} {}", request.method(), request.uri());
    let response = client.send(request.map(Body::from)).await?;
    let code = response.status().as_u16();
    let bytes = response.into_body().collect_bytes().await?;
    let status: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let admitted = (200..300).contains(&code);
    let field = |name: &str| {
        status
            .get(name)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    Ok(DryRunAnswer {
        code,
        reason: if admitted {
            String::new()
        } else {
            field("reason")
        },
        message: if admitted {
            String::new()
        } else if status.is_null() {
            // Not a Status (a proxy's page): its text is the message.
            String::from_utf8_lossy(&bytes).trim().to_owned()
        } else {
            field("message")
        },
        request: sent,
    })
}

fn missing(what: &str) -> kube::Error {
    kube::Error::Discovery(kube::error::DiscoveryError::MissingResource(
        what.to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use http::{Request, Response};
    use serde_json::json;
    use tower_test::mock;

    use super::*;

    type Handle = mock::Handle<Request<Body>, Response<Body>>;

    fn json_response(code: u16, body: Value) -> Response<Body> {
        Response::builder()
            .status(code)
            .body(Body::from(serde_json::to_vec(&body).expect("json")))
            .expect("response")
    }

    /// Answers discovery of `apps/v1` with StatefulSets (namespaced), then
    /// hands back the create's method and URI and answers it with `answer`.
    async fn serve(mut handle: Handle, answer: Response<Body>) -> (String, String, Value) {
        let (request, send) = handle.next_request().await.expect("discovery");
        assert_eq!(request.uri().path(), "/apis/apps/v1");
        send.send_response(json_response(
            200,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1",
                   "resources": [{"name": "statefulsets", "singularName": "statefulset",
                                  "namespaced": true, "kind": "StatefulSet",
                                  "verbs": ["create", "get", "list"]}]}),
        ));
        let (request, send) = handle.next_request().await.expect("the create");
        let method = request.method().to_string();
        let uri = request.uri().to_string();
        let body = request.into_body().collect_bytes().await.expect("body");
        send.send_response(answer);
        (
            method,
            uri,
            serde_json::from_slice(&body).expect("a JSON body"),
        )
    }

    fn planted() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
               "metadata": {"name": "planted", "namespace": "openbao"}, "spec": {}})
    }

    #[tokio::test]
    async fn the_create_carries_dry_run_all_and_a_refusal_keeps_the_servers_words() {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        let client = kube::Client::new(service, "default");
        let message = "admission webhook \"validate.kyverno.svc-fail\" denied the request: no";
        let server = tokio::spawn(serve(
            handle,
            json_response(
                400,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                       "message": message, "reason": "BadRequest", "code": 400}),
            ),
        ));
        let answer = create(&client, &planted(), "drillbench")
            .await
            .expect("an answer");
        let (method, uri, body) = server.await.expect("served");
        assert_eq!(method, "POST");
        assert!(
            uri.starts_with("/apis/apps/v1/namespaces/openbao/statefulsets?"),
            "{uri}"
        );
        assert!(uri.contains("dryRun=All"), "{uri}");
        assert_eq!(body, planted());
        assert!(!answer.admitted());
        assert_eq!(answer.code, 400);
        assert_eq!(answer.reason, "BadRequest");
        assert_eq!(answer.message, message);
        assert!(answer.request.contains("dryRun=All"), "{}", answer.request);
    }

    #[tokio::test]
    async fn an_admitted_create_is_its_2xx_without_a_message() {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        let client = kube::Client::new(service, "default");
        let server = tokio::spawn(serve(handle, json_response(201, planted())));
        let answer = create(&client, &planted(), "drillbench")
            .await
            .expect("an answer");
        server.await.expect("served");
        assert!(answer.admitted());
        assert_eq!((answer.code, answer.message.as_str()), (201, ""));
    }
}
