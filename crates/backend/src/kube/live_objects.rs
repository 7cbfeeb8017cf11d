//! What a live policy check reads from a running cluster: its running
//! Pods, its Nodes, and the claims and storage classes a policy's
//! `apiCall` context may resolve a Pod's volumes through. Reads only.

use std::path::Path;

use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams};
use serde::Serialize;
use serde_json::Value;

use super::KubeError;
use super::kubeconfig::client_for;

/// The running Pods (phase `Running`), every Node, claim and storage
/// class of the cluster a kubeconfig context reaches, as JSON objects with
/// their `apiVersion` and `kind`.
pub fn read_live_objects(path: &Path, context: Option<&str>) -> Result<Vec<Value>, KubeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(KubeError::Runtime)?;
    runtime.block_on(async {
        let client = client_for(path, context, None).await?;
        let mut objects = Vec::new();
        let pods: Vec<Pod> = list(Api::all(client.clone()), "pods").await?;
        objects.extend(
            pods.iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                .map(as_value),
        );
        let nodes: Vec<Node> = list(Api::all(client.clone()), "nodes").await?;
        objects.extend(nodes.iter().map(as_value));
        let claims: Vec<PersistentVolumeClaim> =
            list(Api::all(client.clone()), "persistentvolumeclaims").await?;
        objects.extend(claims.iter().map(as_value));
        let classes: Vec<StorageClass> = list(Api::all(client), "storageclasses").await?;
        objects.extend(classes.iter().map(as_value));
        Ok(objects)
    })
}

async fn list<K>(api: Api<K>, what: &str) -> Result<Vec<K>, KubeError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .map_err(|source| KubeError::Api {
            what: format!("list {what}"),
            source,
        })
}

/// k8s-openapi writes `apiVersion` and `kind` for every resource type.
fn as_value<K: Serialize>(object: &K) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}
