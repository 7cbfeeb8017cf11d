//! The three patch formats `kubectl` sends: JSON merge patch (`label`,
//! `annotate`, `scale`), JSON patch, and strategic merge patch (`cordon`,
//! `apply`). The strategic merge is the subset those commands produce:
//! maps merge, lists of named objects merge by `name` (containers, volumes,
//! env), other lists are replaced, `$patch: delete` removes an element and
//! the `$setElementOrder`/`$retainKeys` directives are accepted and dropped.

use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    #[error("the patch is not valid JSON: {0}")]
    Json(String),
    #[error("the applied configuration is not valid YAML: {0}")]
    Yaml(String),
    #[error("the JSON patch could not be applied: {0}")]
    Apply(String),
    /// The API server's words for it (apiserver's `patch.go`).
    #[error(
        "The allowed maximum operations in a JSON patch is {max}, got {0}",
        max = crate::limits::MAX_JSON_PATCH_OPERATIONS
    )]
    TooManyOperations(usize),
    #[error("unsupported patch type `{0}`")]
    Unsupported(String),
}

/// Applies a patch of the given `Content-Type` to `target`.
pub fn apply(target: &mut Value, content_type: &str, body: &[u8]) -> Result<(), PatchError> {
    let kind = content_type.split(';').next().unwrap_or_default().trim();
    match kind {
        "application/json-patch+json" => {
            let patch: json_patch::Patch =
                serde_json::from_slice(body).map_err(|e| PatchError::Json(e.to_string()))?;
            let limit = crate::limits::MAX_JSON_PATCH_OPERATIONS;
            if patch.0.len() > limit {
                return Err(PatchError::TooManyOperations(patch.0.len()));
            }
            json_patch::patch(target, &patch).map_err(|e| PatchError::Apply(e.to_string()))
        }
        "application/merge-patch+json" => {
            let patch: Value =
                serde_json::from_slice(body).map_err(|e| PatchError::Json(e.to_string()))?;
            json_patch::merge(target, &patch);
            Ok(())
        }
        "application/strategic-merge-patch+json" => {
            let patch: Value =
                serde_json::from_slice(body).map_err(|e| PatchError::Json(e.to_string()))?;
            strategic_merge(target, &patch);
            Ok(())
        }
        // Server-side apply: the applied configuration merges into the
        // object as a strategic merge does; fields the simulator does not
        // model are pruned by the caller ([`prune_to`]). Field ownership is
        // not tracked: the simulator has one writer at a time.
        "application/apply-patch+yaml" => {
            let text = std::str::from_utf8(body).map_err(|e| PatchError::Yaml(e.to_string()))?;
            let patch: Value =
                serde_saphyr::from_str(text).map_err(|e| PatchError::Yaml(e.to_string()))?;
            strategic_merge(target, &patch);
            Ok(())
        }
        other => Err(PatchError::Unsupported(other.to_owned())),
    }
}

pub fn is_apply(content_type: &str) -> bool {
    content_type.split(';').next().unwrap_or_default().trim() == "application/apply-patch+yaml"
}

/// `wanted` restricted to the fields `shown` has (recursively), except the
/// metadata's labels and annotations, which are taken whole: an applied
/// configuration may carry fields the façade's view does not model (a
/// claim's requested size, a template's annotations), which are accepted
/// and not kept, while a change to a field the view shows is still a
/// change.
pub fn prune_to(wanted: &Value, shown: &Value) -> Value {
    fn prune(wanted: &Value, shown: &Value, path: &[&str]) -> Value {
        match (wanted, shown) {
            (Value::Object(w), Value::Object(s)) => {
                let mut out = Map::new();
                for (k, v) in w {
                    let keep_whole = path == ["metadata"] && (k == "labels" || k == "annotations");
                    if keep_whole {
                        out.insert(k.clone(), v.clone());
                    } else if let Some(sv) = s.get(k) {
                        let mut deeper = path.to_vec();
                        deeper.push(k);
                        out.insert(k.clone(), prune(v, sv, &deeper));
                    }
                }
                Value::Object(out)
            }
            (Value::Array(w), Value::Array(s)) if w.len() == s.len() => {
                Value::Array(w.iter().zip(s).map(|(w, s)| prune(w, s, &["[]"])).collect())
            }
            _ => wanted.clone(),
        }
    }
    prune(wanted, shown, &[])
}

/// The strategic merge subset described in the module documentation.
pub fn strategic_merge(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(map) = target else { return };
    for (key, value) in patch {
        if key.starts_with("$setElementOrder/") || key == "$retainKeys" || key == "$patch" {
            continue;
        }
        match value {
            Value::Null => {
                map.remove(key);
            }
            Value::Object(_) => {
                strategic_merge(map.entry(key.clone()).or_insert(Value::Null), value)
            }
            Value::Array(items) => {
                let merged = match map.get(key) {
                    Some(Value::Array(existing)) if named(items) && named(existing) => {
                        merge_named(existing, items)
                    }
                    _ => items
                        .iter()
                        .filter(|i| i.get("$patch").is_none())
                        .cloned()
                        .collect(),
                };
                map.insert(key.clone(), Value::Array(merged));
            }
            _ => {
                map.insert(key.clone(), value.clone());
            }
        }
    }
}

fn named(items: &[Value]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|i| i.get("name").is_some_and(Value::is_string))
}

fn merge_named(existing: &[Value], patch: &[Value]) -> Vec<Value> {
    let mut out: Vec<Value> = existing.to_vec();
    for item in patch {
        let name = item.get("name");
        let position = out.iter().position(|e| e.get("name") == name);
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                out.remove(i);
            }
            (Some(i), false) => strategic_merge(&mut out[i], item),
            (None, true) => {}
            (None, false) => out.push(item.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cordon_and_label_patches() {
        let mut node = json!({"metadata": {"labels": {"a": "1"}}, "spec": {}});
        apply(
            &mut node,
            "application/strategic-merge-patch+json",
            br#"{"spec":{"unschedulable":true}}"#,
        )
        .unwrap();
        apply(
            &mut node,
            "application/merge-patch+json",
            br#"{"metadata":{"labels":{"a":null,"b":"2"}}}"#,
        )
        .unwrap();
        assert_eq!(
            node,
            json!({"metadata": {"labels": {"b": "2"}}, "spec": {"unschedulable": true}})
        );
    }

    #[test]
    fn named_lists_merge_by_name() {
        let mut spec =
            json!({"containers": [{"name": "a", "image": "x:1"}, {"name": "b", "image": "y:1"}]});
        strategic_merge(
            &mut spec,
            &json!({"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                    "containers": [{"name": "a", "image": "x:2"}, {"name": "b", "$patch": "delete"}]}),
        );
        assert_eq!(spec, json!({"containers": [{"name": "a", "image": "x:2"}]}));
    }

    #[test]
    fn json_patch_and_bad_bodies() {
        let mut object = json!({"spec": {"replicas": 1}});
        apply(
            &mut object,
            "application/json-patch+json",
            br#"[{"op":"replace","path":"/spec/replicas","value":3}]"#,
        )
        .unwrap();
        assert_eq!(object, json!({"spec": {"replicas": 3}}));
        assert!(apply(&mut object, "application/json-patch+json", b"{").is_err());
        assert!(
            apply(
                &mut object,
                "application/json-patch+json",
                br#"[{"op":"remove","path":"/nope"}]"#
            )
            .is_err()
        );
        assert!(apply(&mut object, "text/plain", b"{}").is_err());
    }

    #[test]
    fn a_json_patch_has_at_most_ten_thousand_operations() {
        let ops = |n: usize| {
            let op = r#"{"op":"test","path":"/spec/replicas","value":3}"#;
            format!("[{}]", vec![op; n].join(","))
        };
        let mut object = json!({"spec": {"replicas": 3}});
        apply(
            &mut object,
            "application/json-patch+json",
            ops(10_000).as_bytes(),
        )
        .expect("at the limit");
        let error = apply(
            &mut object,
            "application/json-patch+json",
            ops(10_001).as_bytes(),
        )
        .expect_err("over it");
        assert!(matches!(error, PatchError::TooManyOperations(10_001)));
        assert_eq!(
            error.to_string(),
            "The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }
}
