//! A read-only capture of a live cluster, the file `bench snapshot` writes
//! and `cluster: {fromSnapshot: FILE}` reads.
//!
//! The objects are kept as the API server returned them (minus
//! `managedFields`, which say who wrote a field, not what the cluster is),
//! so the same decoding that reads a drill's manifests reads a snapshot, and
//! a reviewer can diff two snapshots with `jq`. Secrets and ConfigMaps are
//! recorded by name only: a snapshot is a file people attach to tickets.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `apiVersion` of the snapshot file.
pub const API_VERSION: &str = "drillbench.dev/v1alpha1";
/// `kind` of the snapshot file.
pub const KIND: &str = "ClusterSnapshot";
/// What the file states about data it never holds.
pub const OMITTED: &str = "Secret and ConfigMap data are never read or stored: \
     only their namespace and name are recorded";

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterSnapshot {
    pub api_version: String,
    pub kind: String,
    /// Where the capture came from: the kubeconfig context and API server.
    pub source: SnapshotSource,
    /// Always [`OMITTED`]: the file says what it leaves out.
    pub omitted: String,
    /// Every captured object with its `apiVersion` and `kind`, sorted by
    /// (apiVersion, kind, namespace, name) so two captures of the same
    /// cluster are byte-identical.
    pub items: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SnapshotSource {
    /// The kubeconfig context read, when one was named or current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The API server's URL.
    pub server: String,
    /// The namespaces captured; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
}

impl ClusterSnapshot {
    /// A snapshot of `items`, sorted into the file's canonical order.
    pub fn new(source: SnapshotSource, mut items: Vec<Value>) -> Self {
        items.sort_by(|a, b| sort_key(a).cmp(&sort_key(b)));
        Self {
            api_version: API_VERSION.to_owned(),
            kind: KIND.to_owned(),
            source,
            omitted: OMITTED.to_owned(),
            items,
        }
    }
}

fn sort_key(object: &Value) -> (&str, &str, &str, &str) {
    fn text(v: Option<&Value>) -> &str {
        v.and_then(Value::as_str).unwrap_or("")
    }
    let metadata = object.get("metadata");
    (
        text(object.get("apiVersion")),
        text(object.get("kind")),
        text(metadata.and_then(|m| m.get("namespace"))),
        text(metadata.and_then(|m| m.get("name"))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn items_are_sorted_by_api_version_kind_namespace_and_name() {
        let source = SnapshotSource {
            context: None,
            server: "https://127.0.0.1:6443".into(),
            namespaces: vec![],
        };
        let snapshot = ClusterSnapshot::new(
            source,
            vec![
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "b", "name": "x"}}),
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"namespace": "a", "name": "y"}}),
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "a", "name": "z"}}),
            ],
        );
        let names: Vec<_> = snapshot
            .items
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["y", "z", "x"]);
        assert_eq!(snapshot.omitted, OMITTED);
    }
}
