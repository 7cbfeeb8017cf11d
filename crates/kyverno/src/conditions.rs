//! `any`/`all` condition blocks of preconditions and `deny`
//! (kyverno.io/docs/writing-policies/preconditions): `any` holds when one of
//! its conditions does, `all` when every one does, both when both are given;
//! the legacy plain list is `all`.

use serde_json::Value;

use crate::operator::{self, Operator};
use crate::variables::{self, Missing};

/// The outcome of a condition block.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub holds: bool,
    /// The `message` of the condition that decided a false block, if it has one.
    pub message: Option<String>,
}

/// Evaluates a condition block; an error names what could not be read or substituted.
pub fn evaluate(block: &Value, ctx: &Value, missing: Missing) -> Result<Verdict, String> {
    match block {
        Value::Null => Ok(Verdict {
            holds: true,
            message: None,
        }),
        Value::Array(list) => all(list, ctx, missing),
        Value::Object(map) => {
            for key in map.keys() {
                if key != "any" && key != "all" {
                    return Err(format!(
                        "conditions: unknown field `{key}`; expected `any` or `all`"
                    ));
                }
            }
            let any_verdict = match map.get("any") {
                Some(Value::Array(list)) if !list.is_empty() => Some(any(list, ctx, missing)?),
                Some(Value::Array(_)) | None | Some(Value::Null) => None,
                Some(_) => return Err("conditions: `any` must be a list".into()),
            };
            let all_verdict = match map.get("all") {
                Some(Value::Array(list)) => Some(all(list, ctx, missing)?),
                None | Some(Value::Null) => None,
                Some(_) => return Err("conditions: `all` must be a list".into()),
            };
            for verdict in [any_verdict.clone(), all_verdict.clone()]
                .into_iter()
                .flatten()
            {
                if !verdict.holds {
                    return Ok(verdict);
                }
            }
            Ok(Verdict {
                holds: true,
                message: None,
            })
        }
        _ => Err("conditions: expected a list or a mapping with `any`/`all`".into()),
    }
}

fn any(list: &[Value], ctx: &Value, missing: Missing) -> Result<Verdict, String> {
    let mut message = None;
    for condition in list {
        let (holds, msg) = one(condition, ctx, missing)?;
        if holds {
            return Ok(Verdict {
                holds: true,
                message: None,
            });
        }
        if message.is_none() {
            message = msg;
        }
    }
    Ok(Verdict {
        holds: false,
        message,
    })
}

fn all(list: &[Value], ctx: &Value, missing: Missing) -> Result<Verdict, String> {
    for condition in list {
        let (holds, msg) = one(condition, ctx, missing)?;
        if !holds {
            return Ok(Verdict {
                holds: false,
                message: msg,
            });
        }
    }
    Ok(Verdict {
        holds: true,
        message: None,
    })
}

fn one(condition: &Value, ctx: &Value, missing: Missing) -> Result<(bool, Option<String>), String> {
    let name = condition
        .get("operator")
        .and_then(Value::as_str)
        .ok_or("condition: `operator` is required")?;
    let op = Operator::parse(name).ok_or_else(|| {
        format!("condition: unknown operator `{name}`; expected Equals, NotEquals, AnyIn, AllIn, AnyNotIn, AllNotIn, GreaterThan, …")
    })?;
    let key = variables::substitute(condition.get("key").unwrap_or(&Value::Null), ctx, missing)
        .map_err(|e| e.to_string())?;
    let value = variables::substitute(condition.get("value").unwrap_or(&Value::Null), ctx, missing)
        .map_err(|e| e.to_string())?;
    let message = condition.get("message").map(|m| {
        variables::substitute(m, ctx, Missing::Empty)
            .map(|v| crate::scalar::interpolate(&v))
            .unwrap_or_default()
    });
    Ok((operator::evaluate(op, &key, &value), message))
}
