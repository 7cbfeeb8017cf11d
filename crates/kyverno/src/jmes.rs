//! JMESPath as Kyverno runs it: the standard functions of the `jmespath`
//! crate plus the Kyverno custom functions policies commonly call
//! (kyverno.io/docs/writing-policies/jmespath, `pkg/engine/jmespath`).

use std::sync::OnceLock;

use base64::Engine as _;
use jmespath::functions::{ArgumentType, CustomFunction, Signature};
use jmespath::{Context, ErrorReason, JmespathError, Rcvar, Runtime, Variable};
use regex::Regex;
use serde_json::Value;

use crate::scalar;
use crate::wildcard;

/// Evaluates `expression` against `data`.
pub fn search(expression: &str, data: &Value) -> Result<Value, String> {
    let compiled = runtime()
        .compile(expression)
        .map_err(|e| format!("JMESPath query failed: {e}"))?;
    let input = Variable::try_from(data).map_err(|e| e.to_string())?;
    let result = compiled
        .search(input)
        .map_err(|e| format!("JMESPath query failed: {e}"))?;
    serde_json::to_value(&*result).map_err(|e| e.to_string())
}

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let mut rt = Runtime::new();
        rt.register_builtin_functions();
        register(&mut rt);
        rt
    })
}

type Fn1 = fn(&[Value]) -> Result<Value, String>;

fn custom(rt: &mut Runtime, name: &str, inputs: Vec<ArgumentType>, f: Fn1) {
    let function = CustomFunction::new(
        Signature::new(inputs, None),
        Box::new(move |args: &[Rcvar], ctx: &mut Context<'_>| {
            let values: Vec<Value> = args
                .iter()
                .map(|a| serde_json::to_value(&**a).unwrap_or(Value::Null))
                .collect();
            let out =
                f(&values).map_err(|m| JmespathError::from_ctx(ctx, ErrorReason::Parse(m)))?;
            Variable::try_from(out).map(Rcvar::new)
        }),
    );
    rt.register_function(name, Box::new(function));
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn register(rt: &mut Runtime) {
    use ArgumentType::{Any, Number, Object, String as Str};
    custom(rt, "to_upper", vec![Str], |a| {
        Ok(s(&a[0]).to_uppercase().into())
    });
    custom(rt, "to_lower", vec![Str], |a| {
        Ok(s(&a[0]).to_lowercase().into())
    });
    custom(rt, "trim", vec![Str, Str], |a| {
        let cut: Vec<char> = s(&a[1]).chars().collect();
        Ok(s(&a[0]).trim_matches(|c| cut.contains(&c)).into())
    });
    custom(rt, "split", vec![Str, Str], |a| {
        Ok(Value::Array(
            s(&a[0]).split(s(&a[1])).map(Value::from).collect(),
        ))
    });
    custom(rt, "replace", vec![Str, Str, Str, Number], |a| {
        let n = a[3].as_f64().unwrap_or(-1.0);
        let out = if n < 0.0 {
            s(&a[0]).replace(s(&a[1]), s(&a[2]))
        } else {
            s(&a[0]).replacen(s(&a[1]), s(&a[2]), n as usize)
        };
        Ok(out.into())
    });
    custom(rt, "replace_all", vec![Str, Str, Str], |a| {
        Ok(s(&a[0]).replace(s(&a[1]), s(&a[2])).into())
    });
    custom(rt, "truncate", vec![Str, Number], |a| {
        let n = a[1].as_f64().unwrap_or(0.0).max(0.0) as usize;
        Ok(s(&a[0]).chars().take(n).collect::<String>().into())
    });
    custom(rt, "equal_fold", vec![Str, Str], |a| {
        Ok(s(&a[0]).to_lowercase().eq(&s(&a[1]).to_lowercase()).into())
    });
    custom(rt, "compare", vec![Str, Str], |a| {
        Ok(match s(&a[0]).cmp(s(&a[1])) {
            std::cmp::Ordering::Less => -1,
            std::cmp::Ordering::Equal => 0,
            std::cmp::Ordering::Greater => 1,
        }
        .into())
    });
    custom(rt, "regex_match", vec![Str, Any], |a| {
        let re = Regex::new(s(&a[0])).map_err(|e| e.to_string())?;
        Ok(re.is_match(&scalar::sprint(&a[1])).into())
    });
    custom(rt, "regex_replace_all", vec![Str, Any, Any], |a| {
        let re = Regex::new(s(&a[0])).map_err(|e| e.to_string())?;
        let replacement = scalar::sprint(&a[2]);
        Ok(re
            .replace_all(&scalar::sprint(&a[1]), replacement.as_str())
            .into_owned()
            .into())
    });
    custom(rt, "pattern_match", vec![Str, Any], |a| {
        Ok(wildcard::matches(s(&a[0]), &scalar::sprint(&a[1])).into())
    });
    custom(rt, "label_match", vec![Object, Object], |a| {
        let (Some(selector), Some(labels)) = (a[0].as_object(), a[1].as_object()) else {
            return Ok(false.into());
        };
        Ok(selector
            .iter()
            .all(|(k, v)| {
                labels
                    .get(k)
                    .is_some_and(|l| scalar::sprint(l) == scalar::sprint(v))
            })
            .into())
    });
    custom(rt, "base64_decode", vec![Str], |a| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(s(&a[0]))
            .map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&bytes).into_owned().into())
    });
    custom(rt, "base64_encode", vec![Str], |a| {
        Ok(base64::engine::general_purpose::STANDARD
            .encode(s(&a[0]))
            .into())
    });
    custom(rt, "parse_json", vec![Str], |a| {
        serde_json::from_str(s(&a[0])).map_err(|e| e.to_string())
    });
    custom(rt, "items", vec![Any, Str, Str], |a| {
        let (k, v) = (s(&a[1]).to_owned(), s(&a[2]).to_owned());
        let pairs: Vec<Value> = match &a[0] {
            Value::Object(map) => map
                .iter()
                .map(|(key, val)| serde_json::json!({ k.clone(): key, v.clone(): val }))
                .collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, val)| serde_json::json!({ k.clone(): i, v.clone(): val }))
                .collect(),
            _ => return Err("items: expected an object or an array".into()),
        };
        Ok(Value::Array(pairs))
    });
    custom(rt, "object_from_lists", vec![Any, Any], |a| {
        let keys = a[0].as_array().cloned().unwrap_or_default();
        let values = a[1].as_array().cloned().unwrap_or_default();
        let mut map = serde_json::Map::new();
        for (i, key) in keys.iter().enumerate() {
            map.insert(
                scalar::sprint(key),
                values.get(i).cloned().unwrap_or(Value::Null),
            );
        }
        Ok(Value::Object(map))
    });
    custom(rt, "lookup", vec![Any, Any], |a| {
        Ok(match (&a[0], &a[1]) {
            (Value::Object(map), Value::String(key)) => {
                map.get(key).cloned().unwrap_or(Value::Null)
            }
            (Value::Array(items), Value::Number(n)) => n
                .as_u64()
                .and_then(|i| items.get(i as usize).cloned())
                .unwrap_or(Value::Null),
            _ => return Err("lookup: expected (object, string) or (array, number)".into()),
        })
    });
    arithmetic(rt, "add", |x, y| Some(x + y));
    arithmetic(rt, "subtract", |x, y| Some(x - y));
    arithmetic(rt, "multiply", |x, y| Some(x * y));
    arithmetic(rt, "divide", |x, y| (y != 0.0).then(|| x / y));
    arithmetic(rt, "modulo", |x, y| (y != 0.0).then(|| x % y));
}

fn arithmetic(rt: &mut Runtime, name: &'static str, op: fn(f64, f64) -> Option<f64>) {
    let function = CustomFunction::new(
        Signature::new(vec![ArgumentType::Any, ArgumentType::Any], None),
        Box::new(move |args: &[Rcvar], ctx: &mut Context<'_>| {
            let values: Vec<Value> = args
                .iter()
                .map(|a| serde_json::to_value(&**a).unwrap_or(Value::Null))
                .collect();
            let out = arithmetic_values(&values[0], &values[1], op).ok_or_else(|| {
                JmespathError::from_ctx(
                    ctx,
                    ErrorReason::Parse(format!("{name}: operands must be numbers or durations")),
                )
            })?;
            Variable::try_from(out).map(Rcvar::new)
        }),
    );
    rt.register_function(name, Box::new(function));
}

/// Numbers with numbers; durations with durations (the result printed as a
/// Go duration in seconds), as Kyverno's arithmetic functions allow.
fn arithmetic_values(a: &Value, b: &Value, op: fn(f64, f64) -> Option<f64>) -> Option<Value> {
    if let (Some(x), Some(y)) = (a.as_f64(), b.as_f64()) {
        let r = op(x, y)?;
        return serde_json::Number::from_f64(r).map(Value::Number);
    }
    if let (Some(x), Some(y)) = (
        a.as_str().and_then(scalar::go_duration_secs),
        b.as_str().and_then(scalar::go_duration_secs),
    ) {
        let r = op(x, y)?;
        return Some(Value::String(format!("{r}s")));
    }
    None
}
