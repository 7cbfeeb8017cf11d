//! Consumer maps: where a chart's values or an operator's resource keep
//! each component's storage class and placement, so the audit can judge a
//! HelmRelease or a custom resource it cannot render instead of calling it
//! `unknown`.
//!
//! ```yaml
//! apiVersion: drillbench.dev/v1alpha1
//! kind: ConsumerMap
//! metadata: {name: coroot}
//! spec:
//!   consumers:
//!     - apiVersion: coroot.com/v1     # the group is what is matched
//!       kind: Coroot
//!       where: {}                     # optional: path → the string it must hold
//!       components:
//!         - name: clickhouse-keeper
//!           storageClass: .spec.clickhouse.keeper.storage.className
//!           nodeSelector: .spec.clickhouse.keeper.nodeSelector
//!           affinity: .spec.clickhouse.keeper.affinity
//! ```
//!
//! A component whose `storageClass` path holds the audited class is a
//! consumer, judged on the `nodeSelector` and `affinity` its paths point at
//! exactly as a pod template's are. A mention of the class that no component
//! covers stays `unknown`, as does a placement the map points at but that is
//! not a plain object (a chart's templated string, say).

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use super::consumers;
use super::opaque::Opaque;
use super::placement::{self, Judgement};
use super::{Consumer, RequiredLabel, Verdict};
use drillbench_model::manifest::{self, Document, ManifestError};

/// Every map entry of the files given.
#[derive(Debug, Clone, Default)]
pub struct ConsumerMap {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct MapFile {
    api_version: String,
    kind: String,
    #[serde(default)]
    metadata: Option<Value>,
    spec: MapSpec,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct MapSpec {
    consumers: Vec<EntrySpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EntrySpec {
    api_version: String,
    kind: String,
    #[serde(default, rename = "where")]
    conditions: std::collections::BTreeMap<String, String>,
    components: Vec<ComponentSpec>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ComponentSpec {
    name: String,
    storage_class: String,
    #[serde(default)]
    node_selector: Option<String>,
    #[serde(default)]
    affinity: Option<String>,
}

#[derive(Debug, Clone)]
struct Entry {
    group: String,
    kind: String,
    conditions: Vec<(FieldPath, String)>,
    components: Vec<Component>,
}

#[derive(Debug, Clone)]
struct Component {
    name: String,
    storage_class: FieldPath,
    node_selector: Option<FieldPath>,
    affinity: Option<FieldPath>,
}

/// A path into an object as the audit prints one: `.spec.values.a[0].b`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldPath {
    written: String,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

impl FieldPath {
    fn parse(text: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "`{text}` is not a field path: expected `.key.key[index]…`, as the audit \
                 prints paths"
            )
        };
        let mut steps = Vec::new();
        let mut rest = text.strip_prefix('.').ok_or_else(bad)?;
        while !rest.is_empty() {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            if end == 0 {
                return Err(bad());
            }
            steps.push(Step::Key(rest[..end].to_owned()));
            rest = &rest[end..];
            while let Some(inner) = rest.strip_prefix('[') {
                let close = inner.find(']').ok_or_else(bad)?;
                let index = inner[..close].parse().map_err(|_| bad())?;
                steps.push(Step::Index(index));
                rest = &inner[close + 1..];
            }
            if let Some(next) = rest.strip_prefix('.') {
                if next.is_empty() {
                    return Err(bad());
                }
                rest = next;
            }
        }
        if steps.is_empty() {
            return Err(bad());
        }
        Ok(FieldPath {
            written: text.to_owned(),
            steps,
        })
    }

    fn get<'v>(&self, object: &'v Value) -> Option<&'v Value> {
        self.steps
            .iter()
            .try_fold(object, |value, step| match step {
                Step::Key(key) => value.get(key),
                Step::Index(index) => value.get(index),
            })
            .filter(|value| !value.is_null())
    }
}

impl ConsumerMap {
    /// Reads every `ConsumerMap` document of `files`; a problem is bad
    /// input at the document's place.
    pub fn load(files: &[impl AsRef<Path>]) -> Result<Self, ManifestError> {
        let mut map = ConsumerMap::default();
        for file in files {
            for document in manifest::load_documents(file.as_ref())? {
                map.read(&document)?;
            }
        }
        Ok(map)
    }

    fn read(&mut self, document: &Document) -> Result<(), ManifestError> {
        let file: MapFile = document.decode()?;
        let wrong = |expected: String| ManifestError::malformed(document.location(), expected);
        if file.api_version != "drillbench.dev/v1alpha1" || file.kind != "ConsumerMap" {
            return Err(wrong(format!(
                "expected `apiVersion: drillbench.dev/v1alpha1` and `kind: ConsumerMap`, found \
                 `{}` `{}`",
                file.api_version, file.kind
            )));
        }
        let _ = file.metadata;
        for entry in file.spec.consumers {
            let path = |text: &str| FieldPath::parse(text).map_err(&wrong);
            let mut components = Vec::new();
            for component in entry.components {
                components.push(Component {
                    name: component.name,
                    storage_class: path(&component.storage_class)?,
                    node_selector: component.node_selector.as_deref().map(path).transpose()?,
                    affinity: component.affinity.as_deref().map(path).transpose()?,
                });
            }
            let mut conditions = Vec::new();
            for (field, value) in entry.conditions {
                conditions.push((path(&field)?, value));
            }
            self.entries.push(Entry {
                group: group(&entry.api_version).to_owned(),
                kind: entry.kind,
                conditions,
                components,
            });
        }
        Ok(())
    }

    /// The consumers of `storage_class` in an object the audit cannot see
    /// inside: one per mapped component that names the class, judged, and
    /// one `unknown` for the mentions no component covers.
    pub fn consumers(
        &self,
        opaque: &Opaque,
        storage_class: &str,
        label: &RequiredLabel,
    ) -> Vec<Consumer> {
        let object = &opaque.object;
        let components: Vec<&Component> = self
            .entries
            .iter()
            .filter(|entry| entry.matches(object))
            .flat_map(|entry| &entry.components)
            .collect();
        let mut consumers = Vec::new();
        let mut covered = Vec::new();
        for component in components {
            let path = &component.storage_class;
            if path.get(object).and_then(Value::as_str) != Some(storage_class) {
                continue;
            }
            covered.push(path.written.clone());
            let (verdict, reasons) = judge(component, object, opaque, label);
            consumers.push(Consumer {
                kind: opaque.kind.clone(),
                namespace: opaque.namespace.clone(),
                name: format!("{} ({})", opaque.name, component.name),
                claims: vec![path.written.clone()],
                verdict,
                reasons,
                source: opaque.source.clone(),
            });
        }
        let uncovered: Vec<&String> = opaque
            .paths
            .iter()
            .filter(|path| !covered.contains(path))
            .collect();
        if !uncovered.is_empty() {
            consumers.push(Consumer {
                kind: opaque.kind.clone(),
                namespace: opaque.namespace.clone(),
                name: opaque.name.clone(),
                claims: uncovered.iter().map(|path| (*path).clone()).collect(),
                verdict: Verdict::Unknown,
                reasons: uncovered
                    .iter()
                    .map(|path| {
                        format!(
                            "{} {}/{} {path}: names the class, but the bench cannot see the \
                             pods it creates{}",
                            opaque.kind,
                            opaque.namespace,
                            opaque.name,
                            if covered.is_empty() {
                                ""
                            } else {
                                " (no consumer-map component covers this path)"
                            }
                        )
                    })
                    .collect(),
                source: opaque.source.clone(),
            });
        }
        consumers
    }
}

impl Entry {
    fn matches(&self, object: &Value) -> bool {
        let text = |key: &str| object.get(key).and_then(Value::as_str).unwrap_or("");
        group(text("apiVersion")) == self.group
            && text("kind") == self.kind
            && self
                .conditions
                .iter()
                .all(|(path, value)| path.get(object).and_then(Value::as_str) == Some(value))
    }
}

/// A component's placement, judged as a pod template's would be.
fn judge(
    component: &Component,
    object: &Value,
    opaque: &Opaque,
    label: &RequiredLabel,
) -> (Verdict, Vec<String>) {
    let mut pod_spec = Map::new();
    for (field, path) in [
        ("nodeSelector", &component.node_selector),
        ("affinity", &component.affinity),
    ] {
        let Some(value) = path.as_ref().and_then(|path| path.get(object)) else {
            continue;
        };
        if !value.is_object() {
            return (
                Verdict::Unknown,
                vec![format!(
                    "{}: the component's {field} is not an object (a chart template, say), so \
                     its placement cannot be judged",
                    path.as_ref().map_or("", |p| p.written.as_str())
                )],
            );
        }
        pod_spec.insert(field.to_owned(), value.clone());
    }
    let what = format!("{} {} ({})", opaque.kind, opaque.name, component.name);
    let rules = match consumers::rules_of(&opaque.location, what, &pod_spec) {
        Ok(rules) => rules,
        Err(error) => return (Verdict::Unknown, vec![error.to_string()]),
    };
    match placement::judge(&rules, label) {
        Judgement::Pass => (Verdict::Pass, vec![]),
        Judgement::Fail(reasons) => (Verdict::Fail, reasons),
        Judgement::Unknown(reasons) => (Verdict::Unknown, reasons),
    }
}

fn group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(group, _)| group)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_paths_read_as_the_audit_prints_them() {
        let object = serde_json::json!({"spec": {"a": [{"b": "x"}, {"b": "y"}]}});
        let path = FieldPath::parse(".spec.a[1].b").unwrap();
        assert_eq!(path.get(&object), Some(&Value::from("y")));
        assert_eq!(
            FieldPath::parse(".spec.a[0].b").unwrap().get(&object),
            Some(&Value::from("x"))
        );
        assert_eq!(FieldPath::parse(".spec.a[2].b").unwrap().get(&object), None);
        for bad in ["", "spec.a", ".", ".a..b", ".a[x]", ".a[1", ".a."] {
            assert!(FieldPath::parse(bad).is_err(), "{bad}");
        }
    }
}
