//! Label and field selectors as the API server parses them from a query
//! string; a malformed selector is a 400, never a panic.

use std::collections::BTreeMap;

use kube::core::{Expression, Selector, SelectorExt};
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
#[error("unable to parse requirement: {0}")]
pub struct SelectorError(pub String);

pub fn parse_labels(text: &str) -> Result<Selector, SelectorError> {
    let mut expressions = Vec::new();
    for part in split_top_level(text) {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        expressions.push(parse_requirement(part)?);
    }
    Ok(expressions.into_iter().collect())
}

/// Splits on commas outside parentheses (`a in (x,y),b`).
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn check_key(key: &str, whole: &str) -> Result<String, SelectorError> {
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c));
    if valid {
        Ok(key.to_owned())
    } else {
        Err(SelectorError(format!(
            "`{whole}`: invalid label key `{key}`"
        )))
    }
}

fn parse_requirement(part: &str) -> Result<Expression, SelectorError> {
    if let Some(key) = part.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(check_key(key.trim(), part)?));
    }
    for (op, negate) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((key, value)) = part.split_once(op) {
            let key = check_key(key.trim(), part)?;
            let value = value.trim().to_owned();
            return Ok(if negate {
                Expression::NotEqual(key, value)
            } else {
                Expression::Equal(key, value)
            });
        }
    }
    let words: Vec<&str> = part.splitn(2, char::is_whitespace).collect();
    if words.len() == 2 {
        let key = check_key(words[0], part)?;
        let rest = words[1].trim();
        let (op, values) = rest
            .split_once('(')
            .ok_or_else(|| SelectorError(format!("`{part}`: expected a value list")))?;
        let values = values
            .strip_suffix(')')
            .ok_or_else(|| SelectorError(format!("`{part}`: missing `)`")))?;
        let set = values
            .split(',')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect();
        return match op.trim() {
            "in" => Ok(Expression::In(key, set)),
            "notin" => Ok(Expression::NotIn(key, set)),
            other => Err(SelectorError(format!(
                "`{part}`: unknown operator `{other}`"
            ))),
        };
    }
    Ok(Expression::Exists(check_key(part, part)?))
}

pub fn labels_match(selector: &Selector, object: &Value) -> bool {
    let labels: BTreeMap<String, String> = object
        .pointer("/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    selector.matches(&labels)
}

/// One `fieldSelector` term: a dotted path, equal or not, a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTerm {
    path: String,
    equal: bool,
    value: String,
}

/// A parsed `fieldSelector` (terms ANDed). Any field of the object is
/// accepted, `spec.nodeName`, `metadata.name` and `metadata.namespace`
/// included; an absent field compares as the empty string.
pub fn parse_fields(text: &str) -> Result<Vec<FieldTerm>, SelectorError> {
    let mut terms = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (path, equal, value) = if let Some((p, v)) = part.split_once("!=") {
            (p, false, v)
        } else if let Some((p, v)) = part.split_once("==") {
            (p, true, v)
        } else if let Some((p, v)) = part.split_once('=') {
            (p, true, v)
        } else {
            return Err(SelectorError(format!("`{part}`: expected field=value")));
        };
        let path = path.trim();
        if path.is_empty() || !path.chars().all(|c| c.is_ascii_alphanumeric() || c == '.') {
            return Err(SelectorError(format!("`{part}`: invalid field `{path}`")));
        }
        terms.push(FieldTerm {
            path: path.to_owned(),
            equal,
            value: value.trim().to_owned(),
        });
    }
    Ok(terms)
}

pub fn fields_match(terms: &[FieldTerm], object: &Value) -> bool {
    terms.iter().all(|t| {
        let pointer = format!("/{}", t.path.replace('.', "/"));
        let actual = match object.pointer(&pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        (actual == t.value) == t.equal
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors_parse_every_operator() {
        let pod = json!({"metadata": {"labels": {"app": "web", "tier": "front"}}});
        for (text, expected) in [
            ("app=web", true),
            ("app==web,tier=front", true),
            ("app!=web", false),
            ("app in (db, web)", true),
            ("tier notin (front)", false),
            ("app", true),
            ("!app", false),
            ("missing", false),
            ("", true),
        ] {
            let selector = parse_labels(text).unwrap();
            assert_eq!(labels_match(&selector, &pod), expected, "{text}");
        }
    }

    #[test]
    fn bad_selectors_are_errors() {
        assert!(parse_labels("app in web").is_err());
        assert!(parse_labels("a b c").is_err());
        assert!(parse_fields("spec.nodeName").is_err());
        assert!(parse_fields("spec/x=1").is_err());
    }

    #[test]
    fn field_selectors_read_dotted_paths() {
        let pod = json!({"metadata": {"name": "a", "namespace": "n"}, "spec": {"nodeName": "w1"}});
        let terms = parse_fields("spec.nodeName=w1,metadata.namespace=n").unwrap();
        assert!(fields_match(&terms, &pod));
        let terms = parse_fields("spec.nodeName!=w1").unwrap();
        assert!(!fields_match(&terms, &pod));
        let terms = parse_fields("spec.nodeName=").unwrap();
        assert!(fields_match(&terms, &json!({"spec": {}})));
    }
}
