//! Objects the audit cannot see inside: a HelmRelease's values or an
//! operator's custom resource create pods the rendered input does not hold,
//! so the audit cannot judge their placement. When such an object names the
//! audited storage class, it is a consumer the audit knows of but cannot
//! judge: `unknown`, with the JSON path of every place the class appears,
//! never passed over (issue 16: OpenBao's and SPIRE's HelmRelease values and
//! Coroot's `storage.className` were skipped silently).

use serde_json::Value;

use drillbench_model::manifest::{Document, SourceLocation};

/// One opaque object that names the class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opaque {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// Where the class appears, as `.spec.values.server.dataStorage.storageClass`.
    pub paths: Vec<String>,
    /// Where the object's document starts, as `file:line:column`.
    pub source: String,
    pub location: SourceLocation,
    /// The object itself, for a consumer map to read.
    pub object: Value,
}

/// Every object of `documents` (and of their `List`s) the audit does not
/// model and that names `storage_class`.
pub fn find(documents: &[Document], storage_class: &str) -> Vec<Opaque> {
    let mut found = Vec::new();
    for document in documents {
        let items: Vec<&Value> = if document.kind() == Some("List") {
            document
                .value
                .get("items")
                .and_then(Value::as_array)
                .map(|items| items.iter().collect())
                .unwrap_or_default()
        } else {
            vec![&document.value]
        };
        for object in items {
            if is_modelled(object) {
                continue;
            }
            let mut paths = Vec::new();
            class_paths(object, "", None, storage_class, &mut paths);
            if paths.is_empty() {
                continue;
            }
            let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
            found.push(Opaque {
                kind: text("/kind").unwrap_or("object").to_owned(),
                namespace: text("/metadata/namespace").unwrap_or("default").to_owned(),
                name: text("/metadata/name").unwrap_or("").to_owned(),
                paths,
                source: document.location().to_string(),
                location: document.location(),
                object: object.clone(),
            });
        }
    }
    found
}

/// Core objects (claims, volumes, config) and the pod-bearing kinds are
/// what [`super::consumers`] reads; everything else is opaque.
fn is_modelled(object: &Value) -> bool {
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let group = api_version.split_once('/').map_or("", |(group, _)| group);
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    group.is_empty()
        || group == "storage.k8s.io"
        || matches!(
            (group, kind),
            (
                "apps" | "extensions",
                "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
            ) | ("batch", "Job" | "CronJob")
        )
}

/// Collects the paths of `storageClass`, `storageClassName`, and
/// `className` under a storage-like key, whose value is `class`.
fn class_paths(
    value: &Value,
    path: &str,
    parent: Option<&str>,
    class: &str,
    out: &mut Vec<String>,
) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                let names_class = match key.as_str() {
                    "storageClass" | "storageClassName" => true,
                    "className" => {
                        parent.is_some_and(|p| p.to_ascii_lowercase().contains("storage"))
                    }
                    _ => false,
                };
                if names_class && child.as_str() == Some(class) {
                    out.push(child_path);
                } else {
                    class_paths(child, &child_path, Some(key), class, out);
                }
            }
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                class_paths(item, &format!("{path}[{index}]"), parent, class, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_model::manifest::parse_documents;

    const BUNDLE: &str = "\
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: openbao, namespace: openbao}
spec:
  values:
    server:
      dataStorage: {storageClass: hcloud}
      auditStorage: {storageClass: hcloud}
---
apiVersion: coroot.com/v1
kind: Coroot
metadata: {name: coroot, namespace: coroot}
spec:
  clickhouse:
    keeper: {storage: {className: hcloud}}
    shards: [{storage: {className: hcloud}}]
  ui: {className: hcloud}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: web, namespace: apps}
spec:
  values: {persistence: {storageClass: longhorn}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec: {storageClassName: hcloud}
";

    #[test]
    fn helm_values_and_custom_resources_naming_the_class_are_found_with_paths() {
        let docs = parse_documents("bundle.yaml", BUNDLE).unwrap();
        let found = find(&docs, "hcloud");
        let got: Vec<(&str, &str, Vec<&str>)> = found
            .iter()
            .map(|o| {
                (
                    o.kind.as_str(),
                    o.name.as_str(),
                    o.paths.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "HelmRelease",
                    "openbao",
                    // In the file's order.
                    vec![
                        ".spec.values.server.dataStorage.storageClass",
                        ".spec.values.server.auditStorage.storageClass"
                    ]
                ),
                (
                    "Coroot",
                    "coroot",
                    vec![
                        ".spec.clickhouse.keeper.storage.className",
                        ".spec.clickhouse.shards[0].storage.className"
                    ]
                ),
            ]
        );
        assert_eq!(found[0].source, "bundle.yaml:1:1");
        // Control: another class finds only the release that names it; the
        // core claim is the consumers' business, not an opaque object.
        let longhorn = find(&docs, "longhorn");
        assert_eq!(longhorn.len(), 1);
        assert_eq!(longhorn[0].name, "web");
    }
}
