//! Condition operators of preconditions and `deny` (kyverno.io/docs/writing-
//! policies/preconditions, `pkg/engine/variables/operator`).

use std::cmp::Ordering;

use serde_json::Value;

use crate::scalar::{self, compare_numeric, duration_operand, go_duration_secs, quantity_nanos};
use crate::{value_pattern, wildcard};

/// A condition operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    Equals,
    NotEquals,
    In,
    NotIn,
    AnyIn,
    AllIn,
    AnyNotIn,
    AllNotIn,
    GreaterThan,
    GreaterThanOrEquals,
    LessThan,
    LessThanOrEquals,
    DurationGreaterThan,
    DurationGreaterThanOrEquals,
    DurationLessThan,
    DurationLessThanOrEquals,
}

impl Operator {
    /// Parses an operator name as the policy spells it (the deprecated
    /// `Equal`/`NotEqual` included); case-insensitive as Kyverno's
    /// `ConditionOperators` map is keyed.
    pub fn parse(name: &str) -> Option<Operator> {
        use Operator::*;
        Some(match name.to_ascii_lowercase().as_str() {
            "equals" | "equal" => Equals,
            "notequals" | "notequal" => NotEquals,
            "in" => In,
            "notin" => NotIn,
            "anyin" => AnyIn,
            "allin" => AllIn,
            "anynotin" => AnyNotIn,
            "allnotin" => AllNotIn,
            "greaterthan" => GreaterThan,
            "greaterthanorequals" => GreaterThanOrEquals,
            "lessthan" => LessThan,
            "lessthanorequals" => LessThanOrEquals,
            "durationgreaterthan" => DurationGreaterThan,
            "durationgreaterthanorequals" => DurationGreaterThanOrEquals,
            "durationlessthan" => DurationLessThan,
            "durationlessthanorequals" => DurationLessThanOrEquals,
            _ => return None,
        })
    }
}

/// Whether `key OP value` holds.
pub fn evaluate(op: Operator, key: &Value, value: &Value) -> bool {
    use Operator::*;
    match op {
        Equals => equals(key, value),
        NotEquals => !equals(key, value),
        In => in_handler(key, value),
        NotIn => !in_handler(key, value),
        AnyIn => any_in(key, value),
        AllIn => all_in(key, value),
        AnyNotIn => any_not_in(key, value),
        AllNotIn => all_not_in(key, value),
        GreaterThan => compare_numeric(key, value) == Some(Ordering::Greater),
        GreaterThanOrEquals => matches!(
            compare_numeric(key, value),
            Some(Ordering::Greater | Ordering::Equal)
        ),
        LessThan => compare_numeric(key, value) == Some(Ordering::Less),
        LessThanOrEquals => {
            matches!(
                compare_numeric(key, value),
                Some(Ordering::Less | Ordering::Equal)
            )
        }
        DurationGreaterThan => duration(key, value) == Some(Ordering::Greater),
        DurationGreaterThanOrEquals => {
            matches!(
                duration(key, value),
                Some(Ordering::Greater | Ordering::Equal)
            )
        }
        DurationLessThan => duration(key, value) == Some(Ordering::Less),
        DurationLessThanOrEquals => {
            matches!(duration(key, value), Some(Ordering::Less | Ordering::Equal))
        }
    }
}

fn duration(key: &Value, value: &Value) -> Option<Ordering> {
    duration_operand(key)?.partial_cmp(&duration_operand(value)?)
}

/// `EqualHandler`: a string key compares as a duration, then a quantity,
/// then as a wildcard (the value is the pattern); numbers numerically (a
/// string value parsed); maps and lists deeply.
fn equals(key: &Value, value: &Value) -> bool {
    match key {
        Value::Bool(k) => value.as_bool() == Some(*k),
        Value::Number(k) => match value {
            Value::Number(v) => k.as_f64() == v.as_f64(),
            Value::String(v) => v.trim().parse::<f64>().ok() == k.as_f64(),
            _ => false,
        },
        Value::String(k) => {
            if let Value::String(v) = value {
                if let (Some(a), Some(b)) = (go_duration_secs(k), go_duration_secs(v))
                    && !(k == "0" && v == "0")
                {
                    return a == b;
                }
                if let (Some(a), Some(b)) = (quantity_nanos(k), quantity_nanos(v)) {
                    return a == b;
                }
                return wildcard::matches(v, k);
            }
            if let Value::Number(n) = value
                && let Some(a) = go_duration_secs(k)
                && k != "0"
            {
                return Some(a) == n.as_f64();
            }
            false
        }
        Value::Object(_) | Value::Array(_) => key == value,
        Value::Null => false,
    }
}

/// The value side of an `In`-family operator as strings: a list, a single
/// string, or a string holding a JSON list.
fn value_set(value: &Value) -> Option<Vec<String>> {
    match value {
        Value::Array(items) => Some(items.iter().map(scalar::sprint).collect()),
        Value::String(s) => {
            if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(s) {
                return Some(items.iter().map(scalar::sprint).collect());
            }
            Some(vec![s.clone()])
        }
        Value::Number(_) => Some(vec![scalar::sprint(value)]),
        _ => None,
    }
}

fn key_set(key: &Value) -> Option<Vec<String>> {
    match key {
        Value::Array(items) => Some(items.iter().map(scalar::sprint).collect()),
        Value::String(_) | Value::Number(_) | Value::Bool(_) => Some(vec![scalar::sprint(key)]),
        _ => None,
    }
}

/// Either side may carry the wildcard (`isAnyIn`).
fn member(key: &str, values: &[String]) -> bool {
    values
        .iter()
        .any(|v| wildcard::matches(key, v) || wildcard::matches(v, key))
}

/// A string value that is a range (`1-10`, `1!-10`) is matched as a pattern.
fn range_member(key: &str, value: &Value) -> Option<bool> {
    let text = value.as_str()?;
    let is_range = text.split_once('-').is_some_and(|(a, b)| {
        let a = a.trim_end_matches('!');
        !a.is_empty()
            && a.chars().next().is_some_and(|c| c.is_ascii_digit())
            && b.chars().next().is_some_and(|c| c.is_ascii_digit())
    });
    is_range.then(|| value_pattern::validate(&Value::String(key.into()), value))
}

fn in_handler(key: &Value, value: &Value) -> bool {
    // Deprecated `In`: a single key must be in the set; a list key must be a
    // subset of it.
    all_in(key, value)
}

fn any_in(key: &Value, value: &Value) -> bool {
    let Some(keys) = key_set(key) else {
        return false;
    };
    if let Some(hit) = keys
        .iter()
        .map(|k| range_member(k, value))
        .collect::<Option<Vec<bool>>>()
    {
        return hit.into_iter().any(|h| h);
    }
    let Some(values) = value_set(value) else {
        return false;
    };
    keys.iter().any(|k| member(k, &values))
}

fn all_in(key: &Value, value: &Value) -> bool {
    let Some(keys) = key_set(key) else {
        return false;
    };
    if let Some(hit) = keys
        .iter()
        .map(|k| range_member(k, value))
        .collect::<Option<Vec<bool>>>()
    {
        return !hit.is_empty() && hit.into_iter().all(|h| h);
    }
    let Some(values) = value_set(value) else {
        return false;
    };
    !keys.is_empty() && keys.iter().all(|k| member(k, &values))
}

fn any_not_in(key: &Value, value: &Value) -> bool {
    let Some(keys) = key_set(key) else {
        return false;
    };
    if let Some(hit) = keys
        .iter()
        .map(|k| range_member(k, value))
        .collect::<Option<Vec<bool>>>()
    {
        return hit.into_iter().any(|h| !h);
    }
    let Some(values) = value_set(value) else {
        return false;
    };
    keys.iter().any(|k| !member(k, &values))
}

fn all_not_in(key: &Value, value: &Value) -> bool {
    let Some(keys) = key_set(key) else {
        return false;
    };
    if let Some(hit) = keys
        .iter()
        .map(|k| range_member(k, value))
        .collect::<Option<Vec<bool>>>()
    {
        return !hit.is_empty() && hit.into_iter().all(|h| !h);
    }
    let Some(values) = value_set(value) else {
        return false;
    };
    !keys.is_empty() && keys.iter().all(|k| !member(k, &values))
}
