//! The Kubernetes side of finishing a fresh cluster: wait until every
//! planned node is a Ready Node carrying its boot labels, patch in what
//! the kubelet may not set, retaint, and create the drill's storage
//! classes.

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use serde_json::json;

use super::{DriverError, LOCAL_PATH_PROVISIONER, POLL_INTERVAL, PlannedNode, ProvisionedNode};
use crate::docker::RunId;
use drillbench_model::labels::{NODE_LABEL, RUN_LABEL, STANDBY_KEY};
use drillbench_model::topology::Topology;

/// A client for the kubeconfig a driver wrote (its current context).
pub async fn client_for(kubeconfig: &Path) -> Result<Client, DriverError> {
    let error = |source| DriverError::Kubeconfig {
        path: kubeconfig.to_owned(),
        source,
    };
    let file = Kubeconfig::read_from(kubeconfig).map_err(error)?;
    let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
        .await
        .map_err(error)?;
    Client::try_from(config).map_err(|source| DriverError::Kube {
        what: "build a Kubernetes client".into(),
        source,
    })
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// The Node a planned node became: the one labelled with its drill name,
/// else the one named like its container or its drill name.
fn find<'a>(nodes: &'a [Node], plan: &PlannedNode, container: &str) -> Option<&'a Node> {
    let name = |n: &Node| n.metadata.name.clone().unwrap_or_default();
    nodes
        .iter()
        .find(|n| {
            n.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(NODE_LABEL))
                .is_some_and(|v| *v == plan.drill_name)
        })
        .or_else(|| nodes.iter().find(|n| name(n) == container))
        .or_else(|| nodes.iter().find(|n| name(n) == plan.drill_name))
}

/// Waits until every planned node (paired with its container) is a Ready
/// Node, polling the API; returns each one's Node name. `kind create
/// --wait` and `talosctl cluster create` wait for control planes or
/// readiness checks of their own; a drill needs every node.
#[expect(
    clippy::disallowed_methods,
    reason = "a real cluster runs on the wall clock"
)]
pub async fn wait_ready(
    client: &Client,
    nodes: &[(PlannedNode, String)],
    timeout: Duration,
) -> Result<Vec<String>, DriverError> {
    let api: Api<Node> = Api::all(client.clone());
    let started = Instant::now();
    loop {
        // A failing list while the API server comes up is expected; only
        // the timeout ends the wait.
        let listed = api.list(&ListParams::default()).await;
        let mut names = Vec::new();
        let mut waiting = Vec::new();
        match &listed {
            Ok(list) => {
                for (plan, container) in nodes {
                    match find(&list.items, plan, container) {
                        Some(node) if is_ready(node) => {
                            names.push(node.metadata.name.clone().unwrap_or_default());
                        }
                        Some(node) => waiting.push(format!(
                            "{} ({}): not Ready",
                            plan.drill_name,
                            node.metadata.name.as_deref().unwrap_or_default()
                        )),
                        None => waiting.push(format!("{}: not registered", plan.drill_name)),
                    }
                }
            }
            Err(e) => waiting.push(format!("the API: {e}")),
        }
        if waiting.is_empty() {
            return Ok(names);
        }
        if started.elapsed() >= timeout {
            return Err(DriverError::NotReady {
                seconds: timeout.as_secs(),
                waiting: waiting.join("; "),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Waits until every node carries its boot labels: Talos applies
/// `machine.nodeLabels` patches a moment after they are accepted, and a
/// drill must not start while a node still looks unlabelled to a guard.
#[expect(
    clippy::disallowed_methods,
    reason = "a real cluster runs on the wall clock"
)]
pub async fn wait_labelled(
    client: &Client,
    nodes: &[ProvisionedNode],
    timeout: Duration,
) -> Result<(), DriverError> {
    let api: Api<Node> = Api::all(client.clone());
    let started = Instant::now();
    loop {
        let listed = api.list(&ListParams::default()).await;
        let mut waiting = Vec::new();
        match &listed {
            Ok(list) => {
                for node in nodes {
                    let labels = list
                        .items
                        .iter()
                        .find(|n| n.metadata.name.as_deref() == Some(node.node.as_str()))
                        .and_then(|n| n.metadata.labels.clone())
                        .unwrap_or_default();
                    let missing: Vec<&str> = node
                        .plan
                        .boot_labels
                        .iter()
                        .filter(|(k, v)| labels.get(*k) != Some(*v))
                        .map(|(k, _)| k.as_str())
                        .collect();
                    if !missing.is_empty() {
                        waiting.push(format!("{} lacks {}", node.node, missing.join(", ")));
                    }
                }
            }
            Err(e) => waiting.push(format!("the API: {e}")),
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if started.elapsed() >= timeout {
            return Err(DriverError::NotReady {
                seconds: timeout.as_secs(),
                waiting: waiting.join("; "),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Patches the labels and taints the kubelet could not set into each Node.
pub async fn apply_api_labels(
    client: &Client,
    nodes: &[ProvisionedNode],
) -> Result<(), DriverError> {
    let api: Api<Node> = Api::all(client.clone());
    for node in nodes {
        let mut body = json!({"metadata": {"labels": node.plan.api_labels}});
        if !node.plan.taints.is_empty() {
            // A merge patch replaces the list: read the current taints
            // first so the kubelet's own (e.g. control-plane) stay.
            let current = api
                .get(&node.node)
                .await
                .map_err(|source| DriverError::Kube {
                    what: format!("read node {}", node.node),
                    source,
                })?;
            let mut taints: Vec<serde_json::Value> = current
                .spec
                .and_then(|s| s.taints)
                .unwrap_or_default()
                .into_iter()
                .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
                .collect();
            for (key, value, effect) in &node.plan.taints {
                let taint = json!({"key": key, "value": value, "effect": effect});
                if !taints.contains(&taint) {
                    taints.push(taint);
                }
            }
            body["spec"] = json!({ "taints": taints });
        }
        api.patch(&node.node, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .map_err(|source| DriverError::Kube {
                what: format!("label node {}", node.node),
                source,
            })?;
    }
    Ok(())
}

/// The emulated autoscaler's scale-up on kind and Talos: a standby node
/// (see [`STANDBY_KEY`]) loses its taint and label and takes pods from
/// now on, as a freshly booted autoscaler node would.
pub async fn release_standby(client: &Client, node: &str) -> Result<(), DriverError> {
    retaint(client, node, STANDBY_KEY, None, true)
        .await
        .map_err(|source| DriverError::Kube {
            what: format!("release standby node {node}"),
            source,
        })
}

/// Sets (`effect` given) or removes (`None`) the node's taint `key`,
/// keeping its other taints, and with `drop_label` removes the label of the
/// same key. A taint list has no merge key, so the list is read and written
/// whole.
pub async fn retaint(
    client: &Client,
    node: &str,
    key: &str,
    effect: Option<&str>,
    drop_label: bool,
) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    let current = api.get(node).await?;
    let mut taints: Vec<serde_json::Value> = current
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != key)
        .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
        .collect();
    if let Some(effect) = effect {
        taints.push(json!({"key": key, "effect": effect}));
    }
    let mut body = json!({"spec": {"taints": taints}});
    if drop_label {
        body["metadata"] = json!({"labels": {key: null}});
    }
    api.patch(node, &PatchParams::default(), &Patch::Merge(&body))
        .await?;
    Ok(())
}

/// Creates each of the drill's storage classes that does not exist yet,
/// backed by [`LOCAL_PATH_PROVISIONER`] and bound when a pod is scheduled
/// (local-path needs the node), labelled with the run.
pub async fn ensure_storage_classes(
    client: &Client,
    topology: &Topology,
    run: &RunId,
) -> Result<Vec<String>, DriverError> {
    let api: Api<StorageClass> = Api::all(client.clone());
    let mut created = Vec::new();
    for class in &topology.storage_classes {
        let existing = api
            .get_opt(&class.name)
            .await
            .map_err(|source| DriverError::Kube {
                what: format!("read storage class {}", class.name),
                source,
            })?;
        if existing.is_some() {
            continue;
        }
        let object = StorageClass {
            metadata: ObjectMeta {
                name: Some(class.name.clone()),
                labels: Some([(RUN_LABEL.to_owned(), run.as_str().to_owned())].into()),
                ..ObjectMeta::default()
            },
            provisioner: LOCAL_PATH_PROVISIONER.to_owned(),
            reclaim_policy: Some("Delete".to_owned()),
            volume_binding_mode: Some("WaitForFirstConsumer".to_owned()),
            ..StorageClass::default()
        };
        api.create(&PostParams::default(), &object)
            .await
            .map_err(|source| DriverError::Kube {
                what: format!("create storage class {}", class.name),
                source,
            })?;
        created.push(class.name.clone());
    }
    Ok(created)
}

#[cfg(test)]
mod tests {
    use http::{Request, Response};
    use kube::client::Body;
    use serde_json::Value;
    use tower_test::mock;

    use super::*;

    type Handle = mock::Handle<Request<Body>, Response<Body>>;

    fn client() -> (Client, Handle) {
        let (service, handle) = mock::pair::<Request<Body>, Response<Body>>();
        (Client::new(service, "default"), handle)
    }

    fn answer_with(status: u16, body: Value) -> Response<Body> {
        Response::builder()
            .status(status)
            .body(Body::from(serde_json::to_vec(&body).expect("json")))
            .expect("response")
    }

    /// Answers the next request; hands back its method, path and body.
    async fn serve(handle: &mut Handle, answer: Response<Body>) -> (String, String, Value) {
        let (request, send) = handle.next_request().await.expect("a request");
        let method = request.method().to_string();
        let uri = request.uri().to_string();
        let bytes = request.into_body().collect_bytes().await.expect("body");
        send.send_response(answer);
        (
            method,
            uri,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    fn node(name: &str, labels: Value, ready: &str) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": [
                {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"},
                {"key": STANDBY_KEY, "value": "true", "effect": "NoSchedule"},
            ]},
            "status": {"conditions": [{"type": "Ready", "status": ready}]},
        }))
        .expect("node")
    }

    fn plan(drill_name: &str) -> PlannedNode {
        PlannedNode {
            drill_name: drill_name.to_owned(),
            pool: "baseline".to_owned(),
            control_plane: false,
            standby: false,
            boot_labels: Default::default(),
            api_labels: Default::default(),
            taints: Vec::new(),
        }
    }

    #[test]
    fn a_planned_node_is_found_by_its_label_then_its_container_then_its_drill_name() {
        let nodes = [
            node("by-name", json!({}), "True"),
            node("r1-worker", json!({}), "True"),
            node("labelled", json!({NODE_LABEL: "prod-worker-1"}), "False"),
        ];
        let name = |n: Option<&Node>| n.and_then(|n| n.metadata.name.clone());
        assert_eq!(
            name(find(&nodes, &plan("prod-worker-1"), "r1-worker")).as_deref(),
            Some("labelled")
        );
        assert_eq!(
            name(find(&nodes, &plan("prod-worker-2"), "r1-worker")).as_deref(),
            Some("r1-worker")
        );
        assert_eq!(
            name(find(&nodes, &plan("by-name"), "nowhere")).as_deref(),
            Some("by-name")
        );
        assert_eq!(find(&nodes, &plan("absent"), "nowhere"), None);
        assert!(is_ready(&nodes[0]) && !is_ready(&nodes[2]));
        assert!(!is_ready(&Node::default()));
    }

    #[tokio::test]
    async fn retainting_keeps_the_other_taints_and_can_drop_the_label_of_the_same_key() {
        let (client, mut handle) = client();
        let current = node("r1-worker", json!({STANDBY_KEY: "true"}), "True");
        let server = tokio::spawn(async move {
            let read = serve(
                &mut handle,
                answer_with(200, serde_json::to_value(&current).expect("json")),
            )
            .await;
            let patch = serve(
                &mut handle,
                answer_with(200, json!({"metadata": {"name": "r1-worker"}})),
            )
            .await;
            (read, patch)
        });
        retaint(&client, "r1-worker", STANDBY_KEY, None, true)
            .await
            .expect("retainted");
        let ((read_method, read_uri, _), (method, uri, body)) = server.await.expect("server");
        assert_eq!(
            (read_method.as_str(), read_uri.as_str()),
            ("GET", "/api/v1/nodes/r1-worker")
        );
        assert_eq!(
            (method.as_str(), uri.as_str()),
            ("PATCH", "/api/v1/nodes/r1-worker?")
        );
        assert_eq!(
            body,
            json!({
                "spec": {"taints": [{"key": "node-role.kubernetes.io/control-plane", "value": null, "effect": "NoSchedule"}]},
                "metadata": {"labels": {STANDBY_KEY: null}},
            })
        );
    }

    #[tokio::test]
    async fn only_the_missing_storage_classes_are_created_labelled_with_the_run() {
        let drill = drillbench_model::drill::Drill::load(
            &drillbench_model::test_support::repo_file("scenarios/node-loss.yaml"),
        )
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
        let names: Vec<String> = drill
            .topology
            .storage_classes
            .iter()
            .map(|c| c.name.clone())
            .collect();
        assert_eq!(names, ["hcloud", "longhorn"]);
        let (client, mut handle) = client();
        let server = tokio::spawn(async move {
            // `hcloud` exists; `longhorn` does not.
            serve(
                &mut handle,
                answer_with(
                    200,
                    json!({"metadata": {"name": "hcloud"}, "provisioner": "x"}),
                ),
            )
            .await;
            let missing = json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"});
            serve(&mut handle, answer_with(404, missing)).await;
            serve(
                &mut handle,
                answer_with(
                    201,
                    json!({"metadata": {"name": "longhorn"}, "provisioner": "x"}),
                ),
            )
            .await
        });
        let run = RunId::new("run-1").expect("run id");
        let created = ensure_storage_classes(&client, &drill.topology, &run)
            .await
            .expect("created");
        assert_eq!(created, ["longhorn"]);
        let (method, uri, body) = server.await.expect("server");
        assert_eq!(method, "POST");
        assert_eq!(uri, "/apis/storage.k8s.io/v1/storageclasses?");
        assert_eq!(body["metadata"]["labels"][RUN_LABEL], "run-1");
        assert_eq!(body["provisioner"], LOCAL_PATH_PROVISIONER);
        assert_eq!(body["volumeBindingMode"], "WaitForFirstConsumer");
    }
}
