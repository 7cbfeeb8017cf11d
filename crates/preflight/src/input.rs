//! Reading nodes and backups into [`Facts`](super::Facts) parts, fail-closed.
//!
//! Anything the decision would have to guess about is an [`InputError`]:
//! a preflight that read the wrong file must say "input error", not "ready".
//! The same item readers serve the files (`kubectl ... -o json`) and the live
//! API responses, so both modes accept and refuse exactly the same objects.

use std::path::Path;

use jiff::Timestamp;
use serde_json::{Map, Value};

use super::{BackupFacts, InputError, NodeFacts, Readiness};
use drillbench_model::labels::{CONTROL_PLANE_LABEL, VELERO_SCHEDULE_LABEL};
use drillbench_model::manifest::json_type;

/// Reads `kubectl get nodes -o json` from `path`.
pub(crate) fn read_nodes_file(path: &Path) -> Result<Vec<NodeFacts>, InputError> {
    let value = read_json(path)?;
    nodes_from_list(&path.display().to_string(), &value)
}

/// Reads `kubectl get backups.velero.io -n velero -o json` from `path`.
pub(crate) fn read_backups_file(path: &Path) -> Result<Vec<BackupFacts>, InputError> {
    let value = read_json(path)?;
    backups_from_list(&path.display().to_string(), &value)
}

fn read_json(path: &Path) -> Result<Value, InputError> {
    let text = std::fs::read(path).map_err(|source| InputError::Read {
        path: path.to_owned(),
        source,
    })?;
    serde_json::from_slice(&text).map_err(|source| InputError::Json {
        path: path.to_owned(),
        source,
    })
}

fn shape(origin: &str, what: impl Into<String>) -> InputError {
    InputError::Shape {
        origin: origin.to_owned(),
        what: what.into(),
    }
}

/// The items of a list whose `kind` is one of `kinds`.
fn list_items<'a>(
    origin: &str,
    value: &'a Value,
    kinds: &[&str],
) -> Result<&'a Vec<Value>, InputError> {
    let kind = value.get("kind").and_then(Value::as_str);
    if !kind.is_some_and(|kind| kinds.contains(&kind)) {
        return Err(shape(
            origin,
            format!(
                "expected kind {}, found {}",
                kinds.join(" or "),
                kind.map_or_else(|| "no kind".to_owned(), |kind| format!("kind {kind}"))
            ),
        ));
    }
    value
        .get("items")
        .and_then(Value::as_array)
        .ok_or_else(|| shape(origin, "expected an `items` array"))
}

/// Nodes from a `List` or `NodeList`.
pub fn nodes_from_list(origin: &str, value: &Value) -> Result<Vec<NodeFacts>, InputError> {
    list_items(origin, value, &["List", "NodeList"])?
        .iter()
        .enumerate()
        .map(|(i, item)| node_from_item(&format!("{origin}: items[{i}]"), item))
        .collect()
}

/// Backups from a `List` or `BackupList`.
pub fn backups_from_list(origin: &str, value: &Value) -> Result<Vec<BackupFacts>, InputError> {
    list_items(origin, value, &["List", "BackupList"])?
        .iter()
        .enumerate()
        .map(|(i, item)| backup_from_item(&format!("{origin}: items[{i}]"), item))
        .collect()
}

fn object<'a>(origin: &str, value: &'a Value) -> Result<&'a Map<String, Value>, InputError> {
    value.as_object().ok_or_else(|| {
        shape(
            origin,
            format!("expected an object, found {}", json_type(value)),
        )
    })
}

/// The item's `kind`, when it says one, must be `expected`: a backups dump
/// passed as `--nodes` is a mistake to report, not a cluster without nodes.
fn check_kind(origin: &str, item: &Map<String, Value>, expected: &str) -> Result<(), InputError> {
    match item.get("kind") {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(kind)) if kind == expected => Ok(()),
        Some(Value::String(kind)) => Err(shape(
            origin,
            format!("expected kind {expected}, found kind {kind}"),
        )),
        Some(other) => Err(shape(
            origin,
            format!("expected kind {expected}, found {}", json_type(other)),
        )),
    }
}

fn metadata<'a>(
    origin: &str,
    item: &'a Map<String, Value>,
) -> Result<&'a Map<String, Value>, InputError> {
    match item.get("metadata") {
        Some(Value::Object(metadata)) => Ok(metadata),
        _ => Err(shape(origin, "expected a `metadata` object")),
    }
}

fn name(origin: &str, metadata: &Map<String, Value>) -> Result<String, InputError> {
    match metadata.get("name") {
        Some(Value::String(name)) if !name.is_empty() => Ok(name.clone()),
        _ => Err(shape(origin, "expected `metadata.name`")),
    }
}

fn labels<'a>(
    origin: &str,
    metadata: &'a Map<String, Value>,
) -> Result<Option<&'a Map<String, Value>>, InputError> {
    match metadata.get("labels") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(labels)) => Ok(Some(labels)),
        Some(other) => Err(shape(
            origin,
            format!(
                "expected `metadata.labels` to be an object, found {}",
                json_type(other)
            ),
        )),
    }
}

/// `status`, which may be absent or null, and otherwise must be an object.
fn status<'a>(
    origin: &str,
    item: &'a Map<String, Value>,
) -> Result<Option<&'a Map<String, Value>>, InputError> {
    match item.get("status") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(status)) => Ok(Some(status)),
        Some(other) => Err(shape(
            origin,
            format!(
                "expected `status` to be null or an object, found {}",
                json_type(other)
            ),
        )),
    }
}

fn optional_str<'a>(
    origin: &str,
    map: &'a Map<String, Value>,
    key: &str,
    path: &str,
) -> Result<Option<&'a str>, InputError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(shape(
            origin,
            format!(
                "expected `{path}` to be a string, found {}",
                json_type(other)
            ),
        )),
    }
}

fn timestamp(origin: &str, path: &str, text: &str) -> Result<Timestamp, InputError> {
    text.parse().map_err(|_| {
        shape(
            origin,
            format!("`{path}` is `{text}`, not an RFC 3339 timestamp"),
        )
    })
}

/// One node object, from a dump or from the API.
pub(crate) fn node_from_item(origin: &str, item: &Value) -> Result<NodeFacts, InputError> {
    let item = object(origin, item)?;
    check_kind(origin, item, "Node")?;
    let metadata = metadata(origin, item)?;
    let name = name(origin, metadata)?;
    let origin = &format!("{origin} ({name})");
    let control_plane =
        labels(origin, metadata)?.is_some_and(|l| l.contains_key(CONTROL_PLANE_LABEL));
    let conditions = match status(origin, item)?.and_then(|status| status.get("conditions")) {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(conditions)) => conditions.as_slice(),
        Some(other) => {
            return Err(shape(
                origin,
                format!(
                    "expected `status.conditions` to be a list, found {}",
                    json_type(other)
                ),
            ));
        }
    };
    let mut ready = Readiness::Unknown;
    for condition in conditions {
        let condition = object(origin, condition)?;
        if optional_str(origin, condition, "type", "status.conditions[].type")? != Some("Ready") {
            continue;
        }
        ready = match optional_str(origin, condition, "status", "status.conditions[].status")? {
            Some("True") => Readiness::True,
            Some("False") => Readiness::False,
            _ => Readiness::Unknown,
        };
        break;
    }
    Ok(NodeFacts {
        name,
        control_plane,
        ready,
    })
}

/// One Velero backup object, from a dump or from the API.
pub(crate) fn backup_from_item(origin: &str, item: &Value) -> Result<BackupFacts, InputError> {
    let item = object(origin, item)?;
    check_kind(origin, item, "Backup")?;
    let metadata = metadata(origin, item)?;
    let name = name(origin, metadata)?;
    let origin = &format!("{origin} ({name})");
    let created = match metadata.get("creationTimestamp") {
        Some(Value::String(text)) => timestamp(origin, "metadata.creationTimestamp", text)?,
        _ => return Err(shape(origin, "expected `metadata.creationTimestamp`")),
    };
    let schedule = match labels(origin, metadata)?.and_then(|l| l.get(VELERO_SCHEDULE_LABEL)) {
        None | Some(Value::Null) => None,
        Some(Value::String(schedule)) => Some(schedule.clone()),
        Some(other) => {
            return Err(shape(
                origin,
                format!(
                    "expected label {VELERO_SCHEDULE_LABEL} to be a string, found {}",
                    json_type(other)
                ),
            ));
        }
    };
    let (phase, completed) = match status(origin, item)? {
        None => (None, None),
        Some(status) => {
            let phase = optional_str(origin, status, "phase", "status.phase")?
                .filter(|phase| !phase.is_empty())
                .map(str::to_owned);
            let completed = optional_str(
                origin,
                status,
                "completionTimestamp",
                "status.completionTimestamp",
            )?
            .map(|text| timestamp(origin, "status.completionTimestamp", text))
            .transpose()?;
            (phase, completed)
        }
    };
    Ok(BackupFacts {
        name,
        schedule,
        created,
        phase,
        completed,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_node_without_a_ready_condition_is_unknown() {
        let node = json!({"metadata": {"name": "n", "labels": {CONTROL_PLANE_LABEL: ""}},
                          "status": {"conditions": [{"type": "MemoryPressure", "status": "False"}]}});
        let facts = node_from_item("t", &node).unwrap();
        assert_eq!(facts.ready, Readiness::Unknown);
        assert!(facts.control_plane);
    }

    #[test]
    fn an_item_of_the_wrong_kind_is_refused() {
        let item = json!({"kind": "Backup", "metadata": {"name": "b"}});
        assert!(node_from_item("t", &item).is_err());
    }

    #[test]
    fn an_empty_phase_reads_unknown() {
        let item = json!({"metadata": {"name": "b", "creationTimestamp": "2026-11-29T03:30:00Z"},
                          "status": {"phase": ""}});
        assert_eq!(backup_from_item("t", &item).unwrap().phase, None);
    }
}
