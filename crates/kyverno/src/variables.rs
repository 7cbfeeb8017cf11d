//! `{{ … }}` variables (kyverno.io/docs/writing-policies/variables): a
//! JMESPath expression over the rule's context. A string that is one variable
//! becomes the value itself (any JSON type); a variable inside a longer string
//! is printed into it. `\{{` escapes. `{{ @ }}` refers to the resource value
//! a pattern leaf is compared with and is resolved there.

use serde_json::Value;

use crate::jmes;

/// How an expression that finds nothing is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// An error: the rule errors (validate patterns, messages, mutations).
    Error,
    /// An empty string, as Kyverno's preconditions resolver does
    /// (`newPreconditionsVariableResolver`).
    Empty,
}

/// A variable that could not be substituted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("variable substitution failed: failed to resolve {variable} at path {path}: {reason}")]
pub struct VariableError {
    pub variable: String,
    pub path: String,
    pub reason: String,
}

/// The spans of `{{ … }}` in `text`, as byte ranges of the whole variable.
/// One level of braces inside is allowed (JMESPath multiselect hashes).
pub fn find_variables(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < bytes.len() {
        if bytes[i] == b'{' && bytes[i + 1] == b'{' && (i == 0 || bytes[i - 1] != b'\\') {
            let mut depth = 0usize;
            let mut j = i + 2;
            let mut end = None;
            while j + 1 < bytes.len() + 1 && j < bytes.len() {
                match bytes[j] {
                    b'{' => depth += 1,
                    b'}' if depth > 0 => depth -= 1,
                    b'}' if j + 1 < bytes.len() && bytes[j + 1] == b'}' => {
                        end = Some(j + 2);
                        break;
                    }
                    _ => {}
                }
                j += 1;
            }
            match end {
                Some(e) => {
                    out.push((i, e));
                    i = e;
                }
                None => break,
            }
        } else {
            i += 1;
        }
    }
    out
}

fn expression(var: &str) -> &str {
    var[2..var.len() - 2].trim()
}

/// Whether the expression of a variable is the current-value reference.
fn refers_to_current(expr: &str) -> bool {
    expr == "@" || expr.starts_with("@.") || expr.starts_with("@ ") || expr.starts_with("@|")
}

/// Resolves one expression against the context.
pub fn resolve(expr: &str, ctx: &Value) -> Result<Value, String> {
    let value = jmes::search(expr, ctx)?;
    if value.is_null() {
        return Err(format!(
            "JMESPath query failed: Unknown key in path `{expr}`"
        ));
    }
    Ok(value)
}

/// Substitutes every variable in `value`.
pub fn substitute(value: &Value, ctx: &Value, missing: Missing) -> Result<Value, VariableError> {
    walk(value, ctx, missing, "")
}

fn walk(value: &Value, ctx: &Value, missing: Missing, path: &str) -> Result<Value, VariableError> {
    Ok(match value {
        Value::String(s) => substitute_str(s, ctx, missing, path)?,
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| walk(v, ctx, missing, &format!("{path}/{i}")))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                let key = match substitute_str(k, ctx, missing, path)? {
                    Value::String(s) => s,
                    other => crate::scalar::interpolate(&other),
                };
                out.insert(key, walk(v, ctx, missing, &format!("{path}/{k}"))?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// Substitutes the variables of one string.
pub fn substitute_str(
    text: &str,
    ctx: &Value,
    missing: Missing,
    path: &str,
) -> Result<Value, VariableError> {
    let spans = find_variables(text);
    if spans.is_empty() {
        return Ok(Value::String(unescape(text)));
    }
    let mut resolved = Vec::with_capacity(spans.len());
    for &(start, end) in &spans {
        let var = &text[start..end];
        let expr = expression(var);
        if refers_to_current(expr) {
            resolved.push(None);
            continue;
        }
        match resolve(expr, ctx) {
            Ok(v) => resolved.push(Some(v)),
            Err(reason) => match missing {
                Missing::Empty => resolved.push(Some(Value::String(String::new()))),
                Missing::Error => {
                    return Err(VariableError {
                        variable: var.to_owned(),
                        path: if path.is_empty() {
                            "/".into()
                        } else {
                            path.to_owned()
                        },
                        reason,
                    });
                }
            },
        }
    }
    let whole = spans.len() == 1 && spans[0].0 == 0 && spans[0].1 == text.len();
    if whole && let Some(Some(v)) = resolved.first() {
        return Ok(v.clone());
    }
    let mut out = String::new();
    let mut last = 0;
    for (&(start, end), value) in spans.iter().zip(&resolved) {
        out.push_str(&unescape(&text[last..start]));
        match value {
            Some(v) => out.push_str(&crate::scalar::interpolate(v)),
            None => out.push_str(&text[start..end]),
        }
        last = end;
    }
    out.push_str(&unescape(&text[last..]));
    Ok(Value::String(out))
}

fn unescape(text: &str) -> String {
    text.replace("\\{{", "{{")
}

/// Resolves `{{ @ }}`-style variables of a pattern leaf against the resource
/// value it is compared with.
pub fn substitute_current(text: &str, current: &Value) -> Option<Value> {
    let spans = find_variables(text);
    if spans.is_empty() {
        return None;
    }
    let whole = spans.len() == 1 && spans[0].0 == 0 && spans[0].1 == text.len();
    let mut out = String::new();
    let mut last = 0;
    for &(start, end) in &spans {
        let expr = expression(&text[start..end]);
        let v = jmes::search(expr, current).ok()?;
        if whole {
            return Some(v);
        }
        out.push_str(&text[last..start]);
        out.push_str(&crate::scalar::interpolate(&v));
        last = end;
    }
    out.push_str(&text[last..]);
    Some(Value::String(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn whole_variable_keeps_its_type_and_inner_variables_print() {
        let ctx =
            json!({"request": {"object": {"spec": {"replicas": 3}, "metadata": {"name": "web"}}}});
        let whole = substitute_str(
            "{{ request.object.spec.replicas }}",
            &ctx,
            Missing::Error,
            "",
        )
        .unwrap();
        assert_eq!(whole, json!(3));
        let inner = substitute_str(
            "name-{{request.object.metadata.name}}",
            &ctx,
            Missing::Error,
            "",
        )
        .unwrap();
        assert_eq!(inner, json!("name-web"));
        assert!(substitute_str("{{ request.object.nope }}", &ctx, Missing::Error, "").is_err());
        assert_eq!(
            substitute_str("{{ request.object.nope }}", &ctx, Missing::Empty, "").unwrap(),
            json!("")
        );
        assert_eq!(
            substitute_str("\\{{ literal }}", &ctx, Missing::Error, "").unwrap(),
            json!("{{ literal }}")
        );
    }
}
