//! `patchStrategicMerge` with Kyverno's anchors (kyverno.io/docs/writing-
//! policies/mutate, `pkg/engine/mutate/patch/strategicPreprocessing.go`):
//! `(k)` conditions and `<(k)` global conditions are checked against the
//! resource and never written; `+(k)` adds only when absent; a failed
//! condition drops the patch up to the nearest list element, a failed global
//! condition drops the whole patch. Lists of maps merge by the Kubernetes
//! merge key of their field (`name` for containers, volumes, env, …).
//!
//! Strategic merge's `$patch` directives (Kubernetes' "strategic merge
//! patch" design, which Kyverno's `pkg/engine/mutate/patch/
//! strategicMergePatch.go` applies through kustomize's merge): in a map,
//! `$patch: replace` replaces the map with the patch's and `$patch: delete`
//! removes it; in a merge-keyed list, an element `{KEY: v, $patch: delete}`
//! removes the element with that key, and an element `{$patch: replace}`
//! replaces the whole list with the patch's other elements.

use serde_json::{Map, Value};

use crate::anchor::{self, Anchor};
use crate::pattern;

/// A condition that did not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmet {
    Condition,
    Global,
}

/// Applies `patch` to `resource`; `Err` when a condition dropped all of it.
pub fn apply(resource: &Value, patch: &Value) -> Result<Value, Unmet> {
    let mut out = resource.clone();
    merge_value(&mut out, patch, "")?;
    Ok(out)
}

/// The field's merge key in Kubernetes' strategic merge patch.
fn merge_key(field: &str) -> Option<&'static str> {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "hostAliases"
        | "resourceClaims" => Some("name"),
        "volumeMounts" => Some("mountPath"),
        "volumeDevices" => Some("devicePath"),
        "ports" => Some("containerPort"),
        _ => None,
    }
}

/// The patch without anchors, as written into the resource.
pub fn strip(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                match anchor::parse(k) {
                    (Some(Anchor::Condition | Anchor::Global), _) => {}
                    _ if k == DIRECTIVE => {}
                    (_, name) => {
                        out.insert(name.to_owned(), strip(v));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
        other => other.clone(),
    }
}

fn merge_value(target: &mut Value, patch: &Value, field: &str) -> Result<(), Unmet> {
    match patch {
        Value::Object(pmap) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let Value::Object(tmap) = target else {
                unreachable!("made an object above")
            };
            merge_map(tmap, pmap)
        }
        Value::Array(parr) => {
            if let Value::Array(tarr) = target {
                merge_list(tarr, parr, field)
            } else {
                if parr.iter().any(anchor::contains_anchor) {
                    return Err(Unmet::Condition);
                }
                *target = strip(patch);
                Ok(())
            }
        }
        scalar => {
            *target = scalar.clone();
            Ok(())
        }
    }
}

/// The `$patch` directive of a patch map, if it has one.
fn directive(value: &Value) -> Option<&str> {
    value.get(DIRECTIVE).and_then(Value::as_str)
}

const DIRECTIVE: &str = "$patch";

fn merge_map(tmap: &mut Map<String, Value>, pmap: &Map<String, Value>) -> Result<(), Unmet> {
    if pmap.get(DIRECTIVE).and_then(Value::as_str) == Some("replace") {
        let Value::Object(replaced) = strip(&Value::Object(pmap.clone())) else {
            unreachable!("a map stripped is a map")
        };
        *tmap = replaced;
        return Ok(());
    }
    // Conditions first, against the resource as it is.
    for (key, pvalue) in pmap {
        let (a, name) = anchor::parse(key);
        let unmet = match a {
            Some(Anchor::Condition) => Unmet::Condition,
            Some(Anchor::Global) => Unmet::Global,
            _ => continue,
        };
        let Some(have) = tmap.get(name) else {
            return Err(unmet);
        };
        let condition = strip_adds(pvalue);
        if pattern::match_pattern(have, &condition).is_err() {
            return Err(unmet);
        }
    }
    let mut keys: Vec<&String> = pmap.keys().collect();
    keys.sort();
    for key in keys {
        let pvalue = &pmap[key];
        match anchor::parse(key) {
            (Some(Anchor::Condition | Anchor::Global), _) => {}
            (Some(Anchor::AddIfAbsent), name) => {
                if !tmap.contains_key(name) {
                    tmap.insert(name.to_owned(), strip(pvalue));
                }
            }
            (_, name) => {
                if pvalue.is_null() || directive(pvalue) == Some("delete") {
                    tmap.remove(name);
                    continue;
                }
                let mut slot = tmap.get(name).cloned().unwrap_or(Value::Null);
                merge_value(&mut slot, pvalue, name)?;
                tmap.insert(name.to_owned(), slot);
            }
        }
    }
    Ok(())
}

/// A condition's pattern: `+()` keys are not conditions.
fn strip_adds(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| anchor::parse(k).0 != Some(Anchor::AddIfAbsent))
                .map(|(k, v)| (k.clone(), strip_adds(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn has_top_conditions(value: &Value) -> bool {
    value.as_object().is_some_and(|m| {
        m.keys()
            .any(|k| matches!(anchor::parse(k).0, Some(Anchor::Condition | Anchor::Global)))
    })
}

fn merge_list(tarr: &mut Vec<Value>, parr: &[Value], field: &str) -> Result<(), Unmet> {
    if parr.iter().any(has_top_conditions) {
        // Each patch element applies to every resource element whose
        // conditions hold; the others stay as they are.
        for pe in parr {
            for te in tarr.iter_mut() {
                let mut candidate = te.clone();
                match merge_value(&mut candidate, pe, field) {
                    Ok(()) => *te = candidate,
                    Err(Unmet::Condition) => {}
                    Err(Unmet::Global) => return Err(Unmet::Global),
                }
            }
        }
        return Ok(());
    }
    if parr.iter().any(|p| directive(p) == Some("replace")) {
        *tarr = parr
            .iter()
            .filter(|p| directive(p) != Some("replace"))
            .map(strip)
            .collect();
        return Ok(());
    }
    if let Some(key) = merge_key(field)
        && parr.iter().all(|p| p.get(key).is_some())
    {
        for pe in parr {
            let id = pe.get(key);
            if directive(pe) == Some("delete") {
                tarr.retain(|te| te.get(key) != id);
                continue;
            }
            match tarr.iter_mut().find(|te| te.get(key) == id) {
                Some(te) => merge_value(te, pe, field)?,
                None => tarr.push(strip(pe)),
            }
        }
        return Ok(());
    }
    *tarr = parr.iter().map(strip).collect();
    Ok(())
}
