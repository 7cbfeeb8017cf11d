//! A read-only capture of a live cluster, the file `bench snapshot` writes
//! and `cluster: {fromSnapshot: FILE}` reads.
//!
//! The objects are kept as the API server returned them (minus
//! `managedFields`, which say who wrote a field, not what the cluster is),
//! so the same decoding that reads a drill's manifests reads a snapshot, and
//! a reviewer can diff two snapshots with `jq`. Secrets and ConfigMaps are
//! recorded by name only: a snapshot is a file people attach to tickets.

use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer};
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
    #[serde(deserialize_with = "api_version")]
    pub api_version: String,
    #[serde(deserialize_with = "kind")]
    pub kind: String,
    /// Where the capture came from: the kubeconfig context and API server.
    pub source: SnapshotSource,
    /// Always [`OMITTED`]: the file says what it leaves out.
    pub omitted: String,
    /// Kinds the capture reads that the API server does not serve, as
    /// `apiVersion Kind` (an optional CRD such as Velero's or Kyverno's not
    /// installed): none of them in `items` means "not there", not "not
    /// looked at".
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_served: Vec<String>,
    /// Every captured object with its `apiVersion` and `kind`, sorted by
    /// (apiVersion, kind, namespace, name) so two captures of the same
    /// cluster are byte-identical.
    #[serde(deserialize_with = "items")]
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
            not_served: Vec::new(),
            items,
        }
    }

    /// The same snapshot, saying these kinds are not served (sorted).
    pub fn with_not_served(mut self, mut kinds: Vec<String>) -> Self {
        kinds.sort();
        kinds.dedup();
        self.not_served = kinds;
        self
    }

    /// The file's text: pretty JSON ending in a newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Reads a snapshot file; anything that is not one is an error with
    /// the line and column where it stops being one.
    pub fn read(path: &Path) -> Result<ClusterSnapshot, SnapshotError> {
        let text = std::fs::read_to_string(path).map_err(|source| SnapshotError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| SnapshotError::Invalid {
            path: path.to_path_buf(),
            line: source.line(),
            column: source.column(),
            source,
        })
    }

    /// Whether `path` holds a snapshot file (by its `apiVersion` and
    /// `kind`): one `bench snapshot` may overwrite.
    pub fn is_snapshot_file(path: &Path) -> bool {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Header {
            api_version: String,
            kind: String,
        }
        std::fs::read_to_string(path)
            .ok()
            .and_then(|text| serde_json::from_str::<Header>(&text).ok())
            .is_some_and(|h| h.api_version == API_VERSION && h.kind == KIND)
    }
}

/// Why a snapshot file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot read the snapshot {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: not a cluster snapshot", .path.display())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
}

fn exactly<'de, D: Deserializer<'de>>(
    deserializer: D,
    expected: &'static str,
) -> Result<String, D::Error> {
    let given = String::deserialize(deserializer)?;
    if given == expected {
        Ok(given)
    } else {
        Err(de::Error::invalid_value(
            de::Unexpected::Str(&given),
            &expected,
        ))
    }
}

fn api_version<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    exactly(deserializer, API_VERSION)
}

fn kind<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    exactly(deserializer, KIND)
}

/// An item as the file must hold it: an object with a string
/// `apiVersion`, `kind` and `metadata.name`, checked as it is read so the
/// error carries the item's position.
struct Item(Value);

impl<'de> Deserialize<'de> for Item {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = Value::deserialize(deserializer)?;
        let has = |pointer: &str| object.pointer(pointer).is_some_and(Value::is_string);
        if !object.is_object() {
            return Err(de::Error::custom("expected an item to be an object"));
        }
        for (pointer, field) in [
            ("/apiVersion", "apiVersion"),
            ("/kind", "kind"),
            ("/metadata/name", "metadata.name"),
        ] {
            if !has(pointer) {
                // serde_json places the error just after the item.
                return Err(de::Error::custom(format!(
                    "expected every item to have a string `{field}`; the item ending here has none"
                )));
            }
        }
        Ok(Item(object))
    }
}

fn items<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Value>, D::Error> {
    let items = Vec::<Item>::deserialize(deserializer)?;
    Ok(items.into_iter().map(|Item(v)| v).collect())
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

    fn source() -> SnapshotSource {
        SnapshotSource {
            context: Some("prod".into()),
            server: "https://127.0.0.1:6443".into(),
            namespaces: vec![],
        }
    }

    #[test]
    fn a_written_snapshot_reads_back_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        let snapshot = ClusterSnapshot::new(
            source(),
            vec![json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})],
        )
        .with_not_served(vec![
            "velero.io/v1 Schedule".into(),
            "velero.io/v1 Backup".into(),
        ]);
        let text = snapshot.to_json();
        assert!(text.ends_with("}\n"));
        std::fs::write(&path, &text).unwrap();
        assert_eq!(ClusterSnapshot::read(&path).unwrap(), snapshot);
        assert_eq!(
            snapshot.not_served,
            ["velero.io/v1 Backup", "velero.io/v1 Schedule"]
        );
        assert!(ClusterSnapshot::is_snapshot_file(&path));
        std::fs::write(&path, "{\"apiVersion\": \"v1\", \"kind\": \"Config\"}").unwrap();
        assert!(!ClusterSnapshot::is_snapshot_file(&path));
    }

    fn invalid(text: &str) -> (usize, usize, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, text).unwrap();
        match ClusterSnapshot::read(&path) {
            Err(SnapshotError::Invalid {
                line,
                column,
                source,
                ..
            }) => (line, column, source.to_string()),
            other => panic!("expected an invalid file, got {other:?}"),
        }
    }

    #[test]
    fn a_bad_file_is_refused_where_it_goes_wrong() {
        let good = ClusterSnapshot::new(source(), vec![]).to_json();
        let (line, _, message) = invalid(&good.replace("ClusterSnapshot", "Cluster"));
        assert_eq!(line, 3, "{message}");
        assert!(message.contains("expected ClusterSnapshot"), "{message}");
        let (line, _, message) =
            invalid(&good.replace("\"items\": []", "\"items\": [\n  {\"kind\": \"Pod\"}\n]"));
        assert_eq!(line, 11, "just after the item: {message}");
        assert!(message.contains("`apiVersion`"), "{message}");
        let (line, column, _) =
            invalid("{\n  \"apiVersion\": \"drillbench.dev/v1alpha1\",\n  oops");
        assert_eq!((line, column), (3, 3));
        // Control: the unchanged text reads.
        assert!(serde_json::from_str::<ClusterSnapshot>(&good).is_ok());
    }
}
