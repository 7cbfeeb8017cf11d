//! Scalars as Kyverno compares them: Go durations, Kubernetes quantities and
//! the string forms Go's `fmt.Sprint` gives JSON values.

use std::cmp::Ordering;

use drillbench_model::k8s::quantity::ParsedQuantity;
use serde_json::Value;

/// A Go `time.ParseDuration` string (`1h30m`, `-5s`, `300ms`, `0`) in
/// seconds; `None` when it is not one. Kyverno's duration operators and its
/// pattern comparisons read durations with Go's parser.
pub fn go_duration_secs(text: &str) -> Option<f64> {
    let s = text.trim();
    let (negative, mut rest) = match s.as_bytes().first()? {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Some(0.0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total = 0.0f64;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() || number == "." {
            return None;
        }
        let value: f64 = number.parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += value * scale;
        rest = &rest[unit_len..];
    }
    Some(if negative { -total } else { total })
}

/// A Kubernetes quantity's amount in nano-units.
pub fn quantity_nanos(text: &str) -> Option<i128> {
    ParsedQuantity::parse(text.trim()).ok().map(|q| q.nanos())
}

/// A JSON number as f64.
pub fn number(value: &Value) -> Option<f64> {
    value.as_f64()
}

/// How Go's `fmt.Sprint` prints a decoded JSON value, which is how Kyverno's
/// `In`-family operators compare non-string values.
pub fn sprint(value: &Value) -> String {
    match value {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => format_number(n),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(sprint).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{k}:{}", sprint(v)))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

fn format_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

/// The text a variable becomes inside a longer string: strings as they are,
/// everything else as JSON.
pub fn interpolate(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Compares two numeric-ish values the way Kyverno's numeric operators do:
/// numbers as numbers, strings as durations (both sides), then quantities,
/// then plain numbers. `None` when the two cannot be compared.
pub fn compare_numeric(key: &Value, value: &Value) -> Option<Ordering> {
    match (key, value) {
        (Value::Number(_), Value::Number(_)) => number(key)?.partial_cmp(&number(value)?),
        (Value::String(k), Value::String(v)) => {
            if let (Some(a), Some(b)) = (go_duration_secs(k), go_duration_secs(v))
                && (k != "0" || v != "0")
            {
                return a.partial_cmp(&b);
            }
            if let (Some(a), Some(b)) = (quantity_nanos(k), quantity_nanos(v)) {
                return Some(a.cmp(&b));
            }
            let a: f64 = k.trim().parse().ok()?;
            let b: f64 = v.trim().parse().ok()?;
            a.partial_cmp(&b)
        }
        (Value::Number(_), Value::String(v)) => {
            let b = quantity_nanos(v)
                .map(|n| n as f64 / 1e9)
                .or_else(|| v.parse().ok())?;
            number(key)?.partial_cmp(&b)
        }
        (Value::String(k), Value::Number(_)) => {
            let a = quantity_nanos(k)
                .map(|n| n as f64 / 1e9)
                .or_else(|| k.parse().ok())?;
            a.partial_cmp(&number(value)?)
        }
        _ => None,
    }
}

/// Seconds of a duration operand: a Go duration string, or a number of seconds.
pub fn duration_operand(value: &Value) -> Option<f64> {
    match value {
        Value::String(s) => go_duration_secs(s),
        Value::Number(_) => number(value),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration_secs("1h30m"), Some(5400.0));
        assert_eq!(go_duration_secs("-2s"), Some(-2.0));
        assert_eq!(go_duration_secs("300ms"), Some(0.3));
        assert_eq!(go_duration_secs("0"), Some(0.0));
        assert_eq!(go_duration_secs("5"), None);
        assert_eq!(go_duration_secs("1d"), None);
        assert_eq!(go_duration_secs(""), None);
    }

    #[test]
    fn sprint_like_go() {
        assert_eq!(sprint(&serde_json::json!(1.0)), "1");
        assert_eq!(sprint(&serde_json::json!(1.5)), "1.5");
        assert_eq!(sprint(&serde_json::json!(true)), "true");
    }
}
