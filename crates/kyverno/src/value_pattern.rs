//! A scalar pattern against a scalar value (`pkg/engine/pattern`): `|`
//! alternatives, `&` conjunctions, the operators `>`, `>=`, `<`, `<=`, `!`,
//! ranges `a-b` and `a!-b`, wildcards, and durations and quantities compared
//! by amount.

use std::cmp::Ordering;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::scalar::{go_duration_secs, quantity_nanos};
use crate::wildcard;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Equal,
    NotEqual,
    More,
    MoreEqual,
    Less,
    LessEqual,
}

/// Whether `value` satisfies the pattern leaf `pattern` (a string, number,
/// boolean, null or a mapping, which only asks for a mapping).
pub fn validate(value: &Value, pattern: &Value) -> bool {
    match pattern {
        Value::Bool(p) => value.as_bool() == Some(*p),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(p), _) => int_pattern(value, p),
            (None, Some(p)) => float_pattern(value, p),
            _ => false,
        },
        Value::Null => match value {
            Value::Null => true,
            Value::Bool(b) => !b,
            Value::Number(n) => n.as_f64() == Some(0.0),
            Value::String(s) => s.is_empty(),
            _ => false,
        },
        Value::Object(_) => value.is_object(),
        Value::String(p) => string_patterns(value, p),
        Value::Array(_) => false,
    }
}

fn int_pattern(value: &Value, pattern: i64) -> bool {
    match value {
        Value::Number(n) => match n.as_i64() {
            Some(i) => i == pattern,
            None => n
                .as_f64()
                .is_some_and(|f| f.fract() == 0.0 && f as i64 == pattern),
        },
        Value::String(s) => s.parse::<i64>().ok() == Some(pattern),
        _ => false,
    }
}

fn float_pattern(value: &Value, pattern: f64) -> bool {
    match value {
        Value::Number(n) => n.as_f64() == Some(pattern),
        Value::String(s) => s.parse::<f64>().ok() == Some(pattern),
        _ => false,
    }
}

fn string_patterns(value: &Value, pattern: &str) -> bool {
    if value.as_str() == Some(pattern) {
        return true;
    }
    pattern.split('|').any(|alternative| {
        alternative
            .trim()
            .split('&')
            .all(|condition| string_pattern(value, condition.trim()))
    })
}

fn range_regex() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(\d+(?:\.\d+)?[A-Za-z]*)\s*(!?-)\s*(\d+(?:\.\d+)?[A-Za-z]*)$")
            .expect("a valid range regex")
    })
}

fn operator(pattern: &str) -> (Op, &str) {
    for (prefix, op) in [
        (">=", Op::MoreEqual),
        ("<=", Op::LessEqual),
        (">", Op::More),
        ("<", Op::Less),
        ("!", Op::NotEqual),
    ] {
        if pattern.len() >= 2
            && let Some(rest) = pattern.strip_prefix(prefix)
        {
            return (op, rest.trim());
        }
    }
    (Op::Equal, pattern)
}

fn string_pattern(value: &Value, pattern: &str) -> bool {
    if let Some(caps) = range_regex().captures(pattern) {
        let (low, high) = (&caps[1], &caps[3]);
        return if &caps[2] == "-" {
            compare(value, low, Op::MoreEqual) && compare(value, high, Op::LessEqual)
        } else {
            compare(value, low, Op::Less) || compare(value, high, Op::More)
        };
    }
    let (op, operand) = operator(pattern);
    compare(value, operand, op)
}

fn compare(value: &Value, pattern: &str, op: Op) -> bool {
    compare_amounts(value, pattern, op).unwrap_or_else(|| compare_string(value, pattern, op))
}

/// Durations when both sides are Go durations, else quantities when both are
/// quantities (a missing value counts as `0`, as upstream's
/// `convertNumberToString(nil)` does).
fn compare_amounts(value: &Value, pattern: &str, op: Op) -> Option<bool> {
    let text = match value {
        Value::Null => "0".to_owned(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let ordering = match (go_duration_secs(&text), go_duration_secs(pattern)) {
        (Some(v), Some(p)) if !(text == "0" && pattern == "0") => v.partial_cmp(&p)?,
        _ => {
            let v = quantity_nanos(&text)?;
            let p = quantity_nanos(pattern)?;
            v.cmp(&p)
        }
    };
    Some(match op {
        Op::Equal => ordering == Ordering::Equal,
        Op::NotEqual => ordering != Ordering::Equal,
        Op::More => ordering == Ordering::Greater,
        Op::Less => ordering == Ordering::Less,
        Op::MoreEqual => ordering != Ordering::Less,
        Op::LessEqual => ordering != Ordering::Greater,
    })
}

fn compare_string(value: &Value, pattern: &str, op: Op) -> bool {
    if !matches!(op, Op::Equal | Op::NotEqual) {
        // Upstream: ">, >=, <, <= are not applicable to strings".
        return false;
    }
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        _ => return false,
    };
    let matched = wildcard::matches(pattern, &text);
    if op == Op::NotEqual {
        !matched
    } else {
        matched
    }
}
