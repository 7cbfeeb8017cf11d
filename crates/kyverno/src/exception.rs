//! PolicyExceptions (`kyverno.io/v2` and the `v2beta1`/`v2alpha1` forms of
//! the same shape; kyverno.io/docs/exceptions/): a resource the exception's
//! `match` selects is exempt from the rules it names, and each of those
//! rules is reported `skip` with "rule skipped due to policy exception
//! NAMESPACE/NAME" (kyverno/kyverno `pkg/engine/handlers/validation`,
//! `RuleSkip(…, "rule skipped due to policy exception "+key)`).
//!
//! Names are compared exactly: `policyName` with the policy's name (`ns/name`
//! for a namespaced Policy), `ruleNames` with rule names, so an exception
//! for a Pod rule's controllers names `autogen-RULE` itself, as the docs'
//! example does. An exception with `conditions` is refused when read: the
//! engine does not evaluate them, and an exception applied without them
//! would exempt more than the platform's does.

use serde_json::Value;

use crate::matching;
use crate::request::AdmissionRequest;

/// One PolicyException.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyException {
    /// `namespace/name`, as Kyverno keys it.
    pub key: String,
    /// `(policyName, ruleNames)` pairs.
    pub exceptions: Vec<(String, Vec<String>)>,
    /// The `match` block, read as a rule's `match`.
    pub match_: Value,
}

/// Whether a manifest document is a PolicyException.
pub fn is_exception(doc: &Value) -> bool {
    doc.get("apiVersion")
        .and_then(Value::as_str)
        .is_some_and(|a| a.starts_with("kyverno.io/"))
        && doc.get("kind").and_then(Value::as_str) == Some("PolicyException")
}

/// Reads a PolicyException from its JSON form.
pub fn from_value(value: &Value) -> Result<PolicyException, String> {
    if !is_exception(value) {
        return Err("expected a kyverno.io PolicyException".into());
    }
    let text = |pointer: &str| value.pointer(pointer).and_then(Value::as_str);
    let name = text("/metadata/name").ok_or("expected metadata.name on the exception")?;
    let namespace = text("/metadata/namespace").unwrap_or("default");
    let spec = value.get("spec").ok_or("expected spec on the exception")?;
    if spec.get("conditions").is_some() {
        return Err(
            "spec.conditions of a PolicyException are not evaluated by this engine; without them the exception would exempt more than it does"
                .into(),
        );
    }
    let match_ = spec
        .get("match")
        .cloned()
        .ok_or("expected spec.match on the exception")?;
    let exceptions = spec
        .get("exceptions")
        .and_then(Value::as_array)
        .ok_or("expected spec.exceptions, a list of policyName and ruleNames")?
        .iter()
        .map(|e| {
            let policy = e
                .get("policyName")
                .and_then(Value::as_str)
                .ok_or("expected policyName in spec.exceptions")?;
            let rules = e
                .get("ruleNames")
                .and_then(Value::as_array)
                .ok_or("expected ruleNames in spec.exceptions")?
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            Ok((policy.to_owned(), rules))
        })
        .collect::<Result<Vec<_>, &str>>()?;
    Ok(PolicyException {
        key: format!("{namespace}/{name}"),
        exceptions,
        match_,
    })
}

impl PolicyException {
    /// Whether it exempts the request from that policy's rule.
    pub fn exempts(&self, policy: &str, rule: &str, req: &AdmissionRequest) -> bool {
        self.exceptions
            .iter()
            .any(|(p, rules)| p == policy && rules.iter().any(|r| r == rule))
            && matching::block_matches(&self.match_, req).unwrap_or(false)
    }

    /// The skip message Kyverno gives an exempt rule.
    pub fn message(&self) -> String {
        format!("rule skipped due to policy exception {}", self.key)
    }
}
