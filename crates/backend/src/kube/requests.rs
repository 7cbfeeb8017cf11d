//! The changes the bench asks of a cluster, one request each, as
//! `kubectl` would make them: label and apply a workload, cordon and
//! delete a Node, set a Deployment's image, scale, evict.

use k8s_openapi::api::apps::v1::{Deployment, StatefulSet};
use k8s_openapi::api::core::v1::{Node, Pod, Taint};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::drain::Evicted;
use drillbench_model::labels::RUN_LABEL;
use drillbench_model::scenario::step::{NodeChange, ObjectKey, PdbChange};

/// Labels a manifest with the run it belongs to.
pub(super) fn label_with_run(value: &mut Value, run: &str) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta.entry("labels").or_insert_with(|| json!({}));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(RUN_LABEL.to_owned(), json!(run));
        }
    }
}

/// Marks a Node unschedulable.
pub(super) async fn cordon(client: &kube::Client, api_name: &str) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    api.patch(
        api_name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"unschedulable": true}})),
    )
    .await
    .map(|_| ())
}

/// Deletes a Node; one already gone is deleted.
pub(super) async fn delete_node(client: &kube::Client, api_name: &str) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    match api.delete(api_name, &DeleteParams::default()).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Changes a Node as `kubectl` would: cordon and uncordon patch
/// `spec.unschedulable`, label and annotate patch the metadata maps (a
/// removed key as `null`), a taint edit writes the whole `spec.taints`
/// list read just before (a merge patch replaces lists), the deletion
/// deletes the Node.
pub(super) async fn change_node(
    client: &kube::Client,
    api_name: &str,
    change: &NodeChange,
) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    let edit = |set: &std::collections::BTreeMap<String, String>, remove: &[String]| {
        let mut map = serde_json::Map::new();
        for (k, v) in set {
            map.insert(k.clone(), json!(v));
        }
        for k in remove {
            map.insert(k.clone(), Value::Null);
        }
        Value::Object(map)
    };
    let patch = match change {
        NodeChange::Cordon => json!({"spec": {"unschedulable": true}}),
        NodeChange::Uncordon => json!({"spec": {"unschedulable": null}}),
        NodeChange::Label { set, remove } => json!({"metadata": {"labels": edit(set, remove)}}),
        NodeChange::Annotate { set, remove } => {
            json!({"metadata": {"annotations": edit(set, remove)}})
        }
        NodeChange::Taint { .. } | NodeChange::Untaint { .. } => {
            let node = api.get(api_name).await?;
            let mut taints: Vec<Taint> = node
                .spec
                .and_then(|s| s.taints)
                .unwrap_or_default()
                .into_iter()
                .filter(|t| !change.drops_taint(&t.key, &t.effect))
                .collect();
            if let NodeChange::Taint { key, value, effect } = change {
                taints.push(Taint {
                    key: key.clone(),
                    value: (!value.is_empty()).then(|| value.clone()),
                    effect: effect.as_str().to_owned(),
                    time_added: None,
                });
            }
            json!({"spec": {"taints": taints}})
        }
        NodeChange::DeleteObject => return delete_node(client, api_name).await,
    };
    api.patch(api_name, &PatchParams::default(), &Patch::Merge(patch))
        .await
        .map(|_| ())
}

/// Replaces a budget's bound with a merge patch of its spec (the other
/// bound as `null`, so the budget keeps exactly one), as `kubectl patch
/// pdb --type merge` would.
pub(super) async fn change_pdb(
    client: &kube::Client,
    change: &PdbChange,
) -> Result<(), kube::Error> {
    let api: Api<PodDisruptionBudget> = Api::namespaced(client.clone(), &change.namespace);
    api.patch(
        &change.name,
        &PatchParams::default(),
        &Patch::Merge(change.bound.merge_patch()),
    )
    .await
    .map(|_| ())
}

/// Deletes one object by kind, namespace and name with background
/// propagation (`kubectl delete`'s default): a workload's pods go after
/// it, each with its grace period. `false` when it was already gone.
pub(super) async fn delete_object(
    client: &kube::Client,
    object: &ObjectKey,
) -> Result<bool, kube::Error> {
    use kube::api::{DynamicObject, GroupVersionKind};
    let api_version = object.api_version().unwrap_or("v1");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, &object.kind);
    let (resource, _) = kube::discovery::pinned_kind(client, &gvk).await?;
    let api: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &object.namespace, &resource);
    match api.delete(&object.name, &DeleteParams::background()).await {
        Ok(_) => Ok(true),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(false),
        Err(error) => Err(error),
    }
}

/// Sets the image of a Deployment's containers (only `container`, when
/// given), as `kubectl set image` does; `false` when it has no such
/// container.
pub(super) async fn set_image(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    image: &str,
    container: Option<&str>,
) -> Result<bool, kube::Error> {
    let api: Api<Deployment> = Api::namespaced(client.clone(), namespace);
    let current = api.get(name).await?;
    let names: Vec<String> = current
        .spec
        .and_then(|s| s.template.spec)
        .map(|s| s.containers.into_iter().map(|c| c.name).collect())
        .unwrap_or_default();
    let containers: Vec<Value> = names
        .iter()
        .filter(|n| container.is_none_or(|c| c == n.as_str()))
        .map(|n| json!({"name": n, "image": image}))
        .collect();
    if containers.is_empty() {
        return Ok(false);
    }
    // Strategic merge keys containers by name, as `kubectl set
    // image` does: only the images change.
    let patch = json!({"spec": {"template": {"spec": {"containers": containers}}}});
    api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
        .await
        .map(|_| true)
}

/// Sets a Deployment's or StatefulSet's replicas through its scale
/// subresource; any other kind is a bad request.
pub(super) async fn scale(
    client: &kube::Client,
    namespace: &str,
    kind: &str,
    name: &str,
    replicas: u32,
) -> Result<(), kube::Error> {
    let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
    let params = PatchParams::default();
    let client = client.clone();
    match kind {
        "Deployment" => Api::<Deployment>::namespaced(client, namespace)
            .patch_scale(name, &params, &patch)
            .await
            .map(|_| ()),
        "StatefulSet" => Api::<StatefulSet>::namespaced(client, namespace)
            .patch_scale(name, &params, &patch)
            .await
            .map(|_| ()),
        _ => Err(kube::Error::Api(
            kube::core::Status::failure(&format!("{kind} has no scale subresource"), "BadRequest")
                .with_code(400)
                .boxed(),
        )),
    }
}

/// Evicts a pod through the Eviction API, with the eviction's
/// `deleteOptions.gracePeriodSeconds` when `grace` is given (the pod's own
/// otherwise): a 429 is a refusal (a budget allows no disruption), a 404 a
/// pod already gone.
pub(super) async fn evict(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    grace: Option<drillbench_model::duration::Duration>,
) -> Result<Evicted, kube::Error> {
    let api: Api<Pod> = Api::namespaced(client.clone(), namespace);
    // The policy/v1 Eviction written out: kube-rs's `EvictParams` sends its
    // delete options as `delete_options`, a field the API server ignores.
    let mut eviction = json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": name, "namespace": namespace},
    });
    if let Some(grace) = grace {
        eviction["deleteOptions"] = json!({"gracePeriodSeconds": grace.as_millis() / 1_000});
    }
    let answer: Result<Value, kube::Error> = api
        .create_subresource("eviction", name, &PostParams::default(), &eviction)
        .await;
    match answer {
        Ok(_) => Ok(Evicted::Accepted),
        Err(kube::Error::Api(s)) if s.code == 429 => Ok(Evicted::Refused(s.message)),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Evicted::Gone),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use http::{Request, Response};
    use kube::client::Body;
    use tower_test::mock;

    use super::*;

    type Handle = mock::Handle<Request<Body>, Response<Body>>;

    fn client() -> (kube::Client, Handle) {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        (kube::Client::new(service, "default"), handle)
    }

    fn status(code: u16, message: &str) -> Response<Body> {
        let body = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                          "message": message, "reason": "Refused", "code": code});
        Response::builder()
            .status(code)
            .body(Body::from(serde_json::to_vec(&body).expect("json")))
            .expect("response")
    }

    fn ok(body: Value) -> Response<Body> {
        Response::builder()
            .body(Body::from(serde_json::to_vec(&body).expect("json")))
            .expect("response")
    }

    /// Answers the next request with `answer` and hands it back: method,
    /// path and query, content type and body.
    async fn answer(
        handle: &mut Handle,
        answer: Response<Body>,
    ) -> (String, String, String, Value) {
        let (request, send) = handle.next_request().await.expect("a request");
        let method = request.method().to_string();
        let uri = request.uri().to_string();
        let content_type = request
            .headers()
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().expect("ascii").to_owned())
            .unwrap_or_default();
        let bytes = request.into_body().collect_bytes().await.expect("body");
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        send.send_response(answer);
        (method, uri, content_type, body)
    }

    #[test]
    fn a_manifest_gets_the_run_label_beside_its_own_and_one_without_metadata_is_left_alone() {
        let mut labelled = json!({"metadata": {"name": "x", "labels": {"app": "db"}}});
        label_with_run(&mut labelled, "run-1");
        assert_eq!(
            labelled["metadata"]["labels"],
            json!({"app": "db", RUN_LABEL: "run-1"})
        );
        let mut bare = json!({"metadata": {"name": "x"}});
        label_with_run(&mut bare, "run-1");
        assert_eq!(bare["metadata"]["labels"], json!({RUN_LABEL: "run-1"}));
        let mut odd = json!({"kind": "List"});
        label_with_run(&mut odd, "run-1");
        assert_eq!(odd, json!({"kind": "List"}));
    }

    #[tokio::test]
    async fn a_cordon_merge_patches_the_node_by_its_api_name() {
        let (client, mut handle) = client();
        let server = tokio::spawn(async move {
            answer(&mut handle, ok(json!({"metadata": {"name": "r1-worker"}}))).await
        });
        cordon(&client, "r1-worker").await.expect("cordoned");
        let (method, uri, content_type, body) = server.await.expect("server");
        assert_eq!(method, "PATCH");
        assert_eq!(uri, "/api/v1/nodes/r1-worker?");
        assert_eq!(content_type, "application/merge-patch+json");
        assert_eq!(body, json!({"spec": {"unschedulable": true}}));
    }

    #[tokio::test]
    async fn deleting_a_node_already_gone_succeeds_and_a_refusal_does_not() {
        let (client, mut handle) = client();
        let server = tokio::spawn(async move {
            let first = answer(&mut handle, status(404, "not found")).await;
            answer(&mut handle, status(403, "forbidden")).await;
            first
        });
        delete_node(&client, "r1-worker")
            .await
            .expect("gone is deleted");
        let refused = delete_node(&client, "r1-worker").await;
        assert!(
            matches!(refused, Err(kube::Error::Api(ref s)) if s.code == 403),
            "{refused:?}"
        );
        let (method, uri, _, _) = server.await.expect("server");
        assert_eq!(
            (method.as_str(), uri.as_str()),
            ("DELETE", "/api/v1/nodes/r1-worker?")
        );
    }

    #[tokio::test]
    async fn an_eviction_is_accepted_refused_or_finds_the_pod_gone() {
        let (client, mut handle) = client();
        let server = tokio::spawn(async move {
            let first = answer(
                &mut handle,
                ok(json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})),
            )
            .await;
            answer(
                &mut handle,
                status(
                    429,
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                ),
            )
            .await;
            answer(&mut handle, status(404, "not found")).await;
            answer(&mut handle, status(500, "boom")).await;
            first
        });
        assert_eq!(
            evict(&client, "apps", "db-0", None)
                .await
                .expect("accepted"),
            Evicted::Accepted
        );
        assert_eq!(
            evict(&client, "apps", "db-0", None).await.expect("refused"),
            Evicted::Refused(
                "Cannot evict pod as it would violate the pod's disruption budget.".to_owned()
            )
        );
        assert_eq!(
            evict(&client, "apps", "db-0", None).await.expect("gone"),
            Evicted::Gone
        );
        assert!(
            evict(&client, "apps", "db-0", None).await.is_err(),
            "a failure is an error"
        );
        let (method, uri, _, body) = server.await.expect("server");
        assert_eq!(method, "POST");
        assert_eq!(uri, "/api/v1/namespaces/apps/pods/db-0/eviction?");
        assert_eq!(body["metadata"]["name"], "db-0");
        assert!(body.get("deleteOptions").is_none(), "the pod's own grace");
    }

    // cluster-autoscaler `evictPod`: the scale-down's Eviction carries
    // `deleteOptions.gracePeriodSeconds`; the control (an operator's
    // eviction) carries none, so the pod keeps its own.
    #[tokio::test]
    async fn an_eviction_with_a_grace_period_sends_it_in_its_delete_options() {
        let (client, mut handle) = client();
        let server = tokio::spawn(async move {
            answer(
                &mut handle,
                ok(json!({"kind": "Status", "apiVersion": "v1", "status": "Success"})),
            )
            .await
        });
        let grace = drillbench_model::duration::Duration::from_secs(600);
        assert_eq!(
            evict(&client, "apps", "db-0", Some(grace))
                .await
                .expect("accepted"),
            Evicted::Accepted
        );
        let (_, _, _, body) = server.await.expect("server");
        assert_eq!(body["deleteOptions"]["gracePeriodSeconds"], 600);
    }

    #[tokio::test]
    async fn setting_an_image_patches_only_the_named_container_and_a_missing_one_patches_nothing() {
        let deployment = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "api", "namespace": "apps"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "app", "image": "app:1"}, {"name": "sidecar", "image": "proxy:1"}
            ]}}},
        });
        let (client, mut handle) = client();
        let served = deployment.clone();
        let server = tokio::spawn(async move {
            answer(&mut handle, ok(served.clone())).await;
            let patch = answer(&mut handle, ok(served.clone())).await;
            answer(&mut handle, ok(served)).await;
            patch
        });
        let set = set_image(&client, "apps", "api", "app:2", Some("app")).await;
        assert!(set.expect("patched"));
        let missing = set_image(&client, "apps", "api", "app:2", Some("nope")).await;
        assert!(!missing.expect("read"), "no container by that name");
        let (method, uri, content_type, body) = server.await.expect("server");
        assert_eq!(method, "PATCH");
        assert_eq!(uri, "/apis/apps/v1/namespaces/apps/deployments/api?");
        assert_eq!(content_type, "application/strategic-merge-patch+json");
        assert_eq!(
            body,
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:2"}]}}}})
        );
    }

    #[tokio::test]
    async fn scaling_goes_through_the_scale_subresource_of_the_kinds_that_have_one() {
        let (client, mut handle) = client();
        let server = tokio::spawn(async move {
            answer(
                &mut handle,
                ok(json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                "metadata": {"name": "db"}, "spec": {"replicas": 2}})),
            )
            .await
        });
        scale(&client, "apps", "StatefulSet", "db", 2)
            .await
            .expect("scaled");
        let (method, uri, _, body) = server.await.expect("server");
        assert_eq!(method, "PATCH");
        assert_eq!(uri, "/apis/apps/v1/namespaces/apps/statefulsets/db/scale?");
        assert_eq!(body, json!({"spec": {"replicas": 2}}));
        // No request at all for a kind without one.
        let refused = scale(&client, "apps", "DaemonSet", "agent", 2).await;
        assert!(
            matches!(refused, Err(kube::Error::Api(ref s)) if s.code == 400),
            "{refused:?}"
        );
    }
}
