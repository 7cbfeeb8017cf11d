//! `match` and `exclude` (kyverno.io/docs/writing-policies/match-exclude,
//! `pkg/engine/utils/match.go`): resource filters combined with `any` (one
//! filter matches) or `all` (every filter matches); within one filter every
//! field given must match.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::request::{AdmissionRequest, group_version};
use crate::wildcard;

/// Whether a `match` or `exclude` block selects the request. A block that is
/// absent selects nothing (for exclude) — callers decide.
pub fn block_matches(block: &Value, req: &AdmissionRequest) -> Result<bool, String> {
    let Value::Object(map) = block else {
        return Ok(false);
    };
    if let Some(any) = map.get("any").and_then(Value::as_array) {
        let mut hit = false;
        for filter in any {
            if filter_matches(filter, req)? {
                hit = true;
                break;
            }
        }
        if !hit {
            return Ok(false);
        }
        if map.get("all").is_none() {
            return Ok(true);
        }
    }
    if let Some(all) = map.get("all").and_then(Value::as_array) {
        for filter in all {
            if !filter_matches(filter, req)? {
                return Ok(false);
            }
        }
        return Ok(!all.is_empty() || map.get("any").is_some());
    }
    if map.get("any").is_some() {
        return Ok(true);
    }
    // Legacy form: `resources`, `subjects`, `roles`, `clusterRoles` directly.
    if ["resources", "subjects", "roles", "clusterRoles"]
        .iter()
        .any(|k| map.contains_key(*k))
    {
        return filter_matches(block, req);
    }
    Ok(false)
}

fn filter_matches(filter: &Value, req: &AdmissionRequest) -> Result<bool, String> {
    if let Some(resources) = filter.get("resources")
        && !resources_match(resources, req)?
    {
        return Ok(false);
    }
    user_matches(filter, req)
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn resources_match(desc: &Value, req: &AdmissionRequest) -> Result<bool, String> {
    let resource = req.resource();
    let kind = resource
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = resource
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kinds = strings(desc.get("kinds"));
    if !kinds.is_empty() {
        let (group, version) = group_version(resource);
        if !kinds
            .iter()
            .any(|k| kind_matches(k, &group, &version, kind))
        {
            return Ok(false);
        }
    }
    let mut names = strings(desc.get("names"));
    if let Some(single) = desc.get("name").and_then(Value::as_str) {
        names.push(single.to_owned());
    }
    if !names.is_empty() && !names.iter().any(|n| wildcard::matches(n, name)) {
        return Ok(false);
    }
    let namespaces = strings(desc.get("namespaces"));
    if !namespaces.is_empty() {
        // A Namespace is matched by its own name.
        let ns = if kind == "Namespace" {
            name.to_owned()
        } else {
            req.namespace()
        };
        if !namespaces.iter().any(|n| wildcard::matches(n, &ns)) {
            return Ok(false);
        }
    }
    let operations = strings(desc.get("operations"));
    if !operations.is_empty() && !operations.iter().any(|o| o == req.operation.as_str()) {
        return Ok(false);
    }
    if let Some(Value::Object(annotations)) = desc.get("annotations") {
        let have = resource
            .pointer("/metadata/annotations")
            .and_then(Value::as_object);
        for (k, v) in annotations {
            let want = v.as_str().unwrap_or_default();
            let ok = have.is_some_and(|m| {
                m.iter().any(|(hk, hv)| {
                    wildcard::matches(k, hk)
                        && wildcard::matches(want, hv.as_str().unwrap_or_default())
                })
            });
            if !ok {
                return Ok(false);
            }
        }
    }
    if let Some(selector) = desc.get("selector") {
        let labels = labels_of(resource);
        if !selector_matches(selector, &labels)? {
            return Ok(false);
        }
    }
    if let Some(selector) = desc.get("namespaceSelector") {
        if kind == "Namespace" {
            if !selector_matches(selector, &labels_of(resource))? {
                return Ok(false);
            }
        } else if req.namespace().is_empty() || !selector_matches(selector, &req.namespace_labels)?
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `Pod`, `v1/Pod`, `apps/v1/Deployment`, wildcards in any part; a
/// subresource (`Pod/status`) never matches a request for the resource itself.
pub fn kind_matches(selector: &str, group: &str, version: &str, kind: &str) -> bool {
    let parts: Vec<&str> = selector.split('/').collect();
    let last_is_sub = parts.len() >= 2
        && parts
            .last()
            .and_then(|p| p.chars().next())
            .is_some_and(|c| c.is_ascii_lowercase());
    if last_is_sub {
        return false;
    }
    let (g, v, k) = match parts.as_slice() {
        [k] => ("*", "*", *k),
        [v, k] => ("*", *v, *k),
        [g, v, k] => (*g, *v, *k),
        _ => return false,
    };
    wildcard::matches(g, group) && wildcard::matches(v, version) && wildcard::matches(k, kind)
}

fn labels_of(resource: &Value) -> BTreeMap<String, String> {
    resource
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), crate::scalar::sprint(v)))
                .collect()
        })
        .unwrap_or_default()
}

/// A Kubernetes label selector; `matchLabels` values may hold wildcards
/// (Kyverno extends the selector so).
pub fn selector_matches(
    selector: &Value,
    labels: &BTreeMap<String, String>,
) -> Result<bool, String> {
    if let Some(Value::Object(match_labels)) = selector.get("matchLabels") {
        for (k, v) in match_labels {
            let want = v.as_str().unwrap_or_default();
            let ok = if wildcard::has_wildcard(k) {
                labels
                    .iter()
                    .any(|(lk, lv)| wildcard::matches(k, lk) && wildcard::matches(want, lv))
            } else {
                labels.get(k).is_some_and(|lv| wildcard::matches(want, lv))
            };
            if !ok {
                return Ok(false);
            }
        }
    }
    if let Some(Value::Array(exprs)) = selector.get("matchExpressions") {
        for expr in exprs {
            let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
            let values = strings(expr.get("values"));
            let have = labels.get(key);
            let ok = match expr.get("operator").and_then(Value::as_str) {
                Some("In") => have.is_some_and(|h| values.contains(h)),
                Some("NotIn") => have.is_none_or(|h| !values.contains(h)),
                Some("Exists") => have.is_some(),
                Some("DoesNotExist") => have.is_none(),
                other => {
                    return Err(format!(
                        "selector operator {other:?}: expected In, NotIn, Exists or DoesNotExist"
                    ));
                }
            };
            if !ok {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

fn user_matches(filter: &Value, req: &AdmissionRequest) -> Result<bool, String> {
    let user = &req.user_info;
    let roles = strings(filter.get("roles"));
    if !roles.is_empty() && !roles.iter().any(|r| user.roles.contains(r)) {
        return Ok(false);
    }
    let cluster_roles = strings(filter.get("clusterRoles"));
    if !cluster_roles.is_empty() && !cluster_roles.iter().any(|r| user.cluster_roles.contains(r)) {
        return Ok(false);
    }
    if let Some(Value::Array(subjects)) = filter.get("subjects") {
        let hit = subjects.iter().any(|s| {
            let name = s.get("name").and_then(Value::as_str).unwrap_or_default();
            match s.get("kind").and_then(Value::as_str) {
                Some("User") => wildcard::matches(name, &user.username),
                Some("Group") => user.groups.iter().any(|g| wildcard::matches(name, g)),
                Some("ServiceAccount") => {
                    let ns = s
                        .get("namespace")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    user.username == format!("system:serviceaccount:{ns}:{name}")
                }
                _ => false,
            }
        });
        if !subjects.is_empty() && !hit {
            return Ok(false);
        }
    }
    Ok(true)
}
