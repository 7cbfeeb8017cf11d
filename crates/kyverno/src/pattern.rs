//! Structural pattern validation (`pkg/engine/validate/validate.go`): a
//! pattern tree laid over the resource, anchors first, then plain fields with
//! nested anchors first, arrays of maps element by element.

use serde_json::{Map, Value};

use crate::anchor::{self, Anchor};
use crate::{value_pattern, wildcard};

/// Why a pattern did not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    pub kind: ErrorKind,
    /// The path in the resource where it failed, `/spec/containers/0/image/`.
    pub path: String,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The resource does not match.
    Fail,
    /// A condition anchor did not hold: the rule does not apply.
    Condition,
    /// A global anchor did not hold: the rule does not apply.
    Global,
    /// A negation anchor found a forbidden field: a failure nothing can skip.
    Negation,
}

impl PatternError {
    fn new(kind: ErrorKind, path: &str, message: String) -> Self {
        PatternError {
            kind,
            path: path.to_owned(),
            message,
        }
    }

    /// Whether the rule is skipped rather than failed.
    pub fn is_skip(&self) -> bool {
        matches!(self.kind, ErrorKind::Condition | ErrorKind::Global)
    }
}

/// Validates `resource` against `pattern` from the root path `/`.
pub fn match_pattern(resource: &Value, pattern: &Value) -> Result<(), PatternError> {
    element(resource, pattern, "/")
}

fn element(resource: &Value, pattern: &Value, path: &str) -> Result<(), PatternError> {
    match pattern {
        Value::Object(pmap) => match resource {
            Value::Object(rmap) => map(rmap, pmap, path),
            _ => Err(PatternError::new(
                ErrorKind::Fail,
                path,
                format!(
                    "pattern and resource have different structures. Path: {path}. Expected map, found {}",
                    type_name(resource)
                ),
            )),
        },
        Value::Array(parr) => match resource {
            Value::Array(rarr) => array(rarr, parr, path),
            _ => Err(PatternError::new(
                ErrorKind::Fail,
                path,
                format!(
                    "validation rule failed at path {path}, resource does not satisfy the expected overlay pattern"
                ),
            )),
        },
        Value::String(text) if text.contains("{{") => {
            match crate::variables::substitute_current(text, resource) {
                Some(resolved) if !resolved.as_str().is_some_and(|r| r.contains("{{")) => {
                    element(resource, &resolved, path)
                }
                _ => Err(PatternError::new(
                    ErrorKind::Fail,
                    path,
                    format!("failed to resolve the variables of '{text}' at path {path}"),
                )),
            }
        }
        leaf => match resource {
            Value::Array(items) => {
                for item in items {
                    if !value_pattern::validate(item, leaf) {
                        return Err(mismatch(resource, leaf, path));
                    }
                }
                Ok(())
            }
            other => {
                if value_pattern::validate(other, leaf) {
                    Ok(())
                } else {
                    Err(mismatch(resource, leaf, path))
                }
            }
        },
    }
}

fn mismatch(resource: &Value, pattern: &Value, path: &str) -> PatternError {
    PatternError::new(
        ErrorKind::Fail,
        path,
        format!(
            "resource value '{}' does not match '{}' at path {path}",
            crate::scalar::sprint(resource),
            crate::scalar::sprint(pattern)
        ),
    )
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "nil",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "map",
    }
}

/// Pattern keys under `metadata.labels`/`annotations` may be wildcards
/// (`wildcards.ExpandInMetadata`): each stands for the resource keys it matches.
fn expand_wildcard_keys(
    rmap: &Map<String, Value>,
    pmap: &Map<String, Value>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, value) in pmap {
        let (anchor, name) = anchor::parse(key);
        if wildcard::has_wildcard(name) {
            let matching: Vec<&String> =
                rmap.keys().filter(|k| wildcard::matches(name, k)).collect();
            if matching.is_empty() {
                out.insert(key.clone(), value.clone());
            }
            for found in matching {
                let rebuilt = match anchor {
                    Some(a) => rewrap(a, found),
                    None => found.clone(),
                };
                out.insert(rebuilt, value.clone());
            }
        } else {
            out.insert(key.clone(), value.clone());
        }
    }
    out
}

fn rewrap(anchor: Anchor, name: &str) -> String {
    match anchor {
        Anchor::Condition => format!("({name})"),
        Anchor::Global => format!("<({name})"),
        Anchor::Existence => format!("^({name})"),
        Anchor::Equality => format!("=({name})"),
        Anchor::Negation => format!("X({name})"),
        Anchor::AddIfAbsent => format!("+({name})"),
    }
}

fn map(
    rmap: &Map<String, Value>,
    pmap: &Map<String, Value>,
    path: &str,
) -> Result<(), PatternError> {
    let expanded;
    let pmap = if path.ends_with("/labels/") || path.ends_with("/annotations/") {
        expanded = expand_wildcard_keys(rmap, pmap);
        &expanded
    } else {
        pmap
    };
    // Phase 1: anchors, conditions and globals before the others so that a
    // resource the rule does not apply to is skipped, not failed.
    let mut anchors: Vec<(Anchor, &str, &Value)> = Vec::new();
    let mut plain: Vec<(&str, &Value)> = Vec::new();
    for (key, value) in pmap {
        match anchor::parse(key) {
            (Some(Anchor::AddIfAbsent), name) | (None, name) => plain.push((name, value)),
            (Some(a), name) => anchors.push((a, name, value)),
        }
    }
    anchors.sort_by_key(|(a, _, _)| !matches!(a, Anchor::Condition | Anchor::Global));
    for (a, name, pattern) in anchors {
        let here = format!("{path}{name}/");
        let found = rmap.get(name);
        match a {
            Anchor::Condition | Anchor::Global => {
                let kind = if a == Anchor::Condition {
                    ErrorKind::Condition
                } else {
                    ErrorKind::Global
                };
                match found {
                    Some(value) => element(value, pattern, &here).map_err(|e| {
                        if e.kind == ErrorKind::Negation {
                            e
                        } else {
                            PatternError::new(kind, &e.path, e.message)
                        }
                    })?,
                    None => {
                        return Err(PatternError::new(
                            kind,
                            &here,
                            format!(
                                "{} anchor key doesn't exist in the resource",
                                anchor_word(a)
                            ),
                        ));
                    }
                }
            }
            Anchor::Equality => {
                if let Some(value) = found {
                    element(value, pattern, &here)?;
                }
            }
            Anchor::Negation => {
                if found.is_some() {
                    return Err(PatternError::new(
                        ErrorKind::Negation,
                        &here,
                        format!("Validation rule failed at {here}, field {name} is disallowed"),
                    ));
                }
            }
            Anchor::Existence => {
                if let Some(value) = found {
                    existence(value, pattern, &here)?;
                }
            }
            Anchor::AddIfAbsent => {}
        }
    }
    // Phase 2: plain fields, those with anchors below them first.
    plain.sort_by_key(|(_, v)| !anchor::contains_anchor(v));
    for (name, pattern) in plain {
        let here = format!("{path}{name}/");
        let found = rmap.get(name);
        if pattern.as_str() == Some("*") {
            if found.is_none_or(Value::is_null) {
                return Err(PatternError::new(
                    ErrorKind::Fail,
                    path,
                    format!("Validation rule failed at {path}, Field {name} is not present"),
                ));
            }
            continue;
        }
        element(found.unwrap_or(&Value::Null), pattern, &here)?;
    }
    Ok(())
}

fn anchor_word(a: Anchor) -> &'static str {
    if a == Anchor::Condition {
        "conditional"
    } else {
        "global"
    }
}

fn existence(value: &Value, pattern: &Value, path: &str) -> Result<(), PatternError> {
    let Value::Array(items) = value else {
        return Err(PatternError::new(
            ErrorKind::Fail,
            path,
            "Existence ^ () anchor can be used only on list/array type resource".into(),
        ));
    };
    let Some(first) = pattern.as_array().and_then(|p| p.first()) else {
        return Err(PatternError::new(
            ErrorKind::Fail,
            path,
            "Pattern has to be of list to compare against resource".into(),
        ));
    };
    for (i, item) in items.iter().enumerate() {
        if element(item, first, &format!("{path}{i}/")).is_ok() {
            return Ok(());
        }
    }
    Err(PatternError::new(
        ErrorKind::Fail,
        path,
        format!("existence anchor validation failed at path {path}"),
    ))
}

fn array(rarr: &[Value], parr: &[Value], path: &str) -> Result<(), PatternError> {
    let Some(first) = parr.first() else {
        return Err(PatternError::new(
            ErrorKind::Fail,
            path,
            "pattern Array empty".into(),
        ));
    };
    match first {
        Value::Object(_) => each_element(rarr.iter().enumerate().map(|(i, r)| (i, r, first)), path),
        Value::Array(_) => {
            if rarr.len() < parr.len() {
                return Err(PatternError::new(
                    ErrorKind::Fail,
                    path,
                    format!(
                        "validate Array failed, array length mismatch, resource Array len is {} and pattern Array len is {}",
                        rarr.len(),
                        parr.len()
                    ),
                ));
            }
            each_element(parr.iter().enumerate().map(|(i, p)| (i, &rarr[i], p)), path)
        }
        leaf => element(&Value::Array(rarr.to_vec()), leaf, path),
    }
}

fn each_element<'a>(
    pairs: impl Iterator<Item = (usize, &'a Value, &'a Value)>,
    path: &str,
) -> Result<(), PatternError> {
    let mut applied = 0;
    let mut skipped: Vec<PatternError> = Vec::new();
    for (i, resource, pattern) in pairs {
        match element(resource, pattern, &format!("{path}{i}/")) {
            Ok(()) => applied += 1,
            Err(e) if e.is_skip() => skipped.push(e),
            Err(e) => return Err(e),
        }
    }
    if applied == 0 && !skipped.is_empty() {
        let kind = skipped[0].kind;
        let message = skipped
            .iter()
            .map(|e| e.message.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        return Err(PatternError::new(kind, path, message));
    }
    Ok(())
}
