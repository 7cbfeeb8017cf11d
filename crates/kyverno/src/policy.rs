//! ClusterPolicy and Policy (`kyverno.io/v1`, also `v2beta1`) as the engine
//! reads them: the spec's rules with their match/exclude, context,
//! preconditions and one body each.

use drillbench_model::manifest::{Document, SourceLocation};
use serde_json::Value;

/// What a failing validate rule does at admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailureAction {
    /// The request is refused.
    Enforce,
    /// The request is admitted and the failure reported.
    Audit,
}

impl FailureAction {
    fn parse(text: &str) -> Option<FailureAction> {
        match text.to_ascii_lowercase().as_str() {
            "enforce" => Some(FailureAction::Enforce),
            "audit" => Some(FailureAction::Audit),
            _ => None,
        }
    }
}

/// A rule's body: what it does.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleBody {
    Validate(Value),
    Mutate(Value),
    /// A rule the engine does not evaluate, with why.
    NotEvaluated(String),
}

/// One rule of a policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    pub name: String,
    pub match_: Value,
    pub exclude: Value,
    pub context: Vec<Value>,
    pub preconditions: Value,
    pub body: RuleBody,
}

impl Rule {
    /// The rule's own validate failure action (`validate.failureAction`,
    /// Kyverno 1.13+), which overrides the policy's.
    pub fn failure_action(&self) -> Option<FailureAction> {
        match &self.body {
            RuleBody::Validate(v) => v
                .get("failureAction")
                .and_then(Value::as_str)
                .and_then(FailureAction::parse),
            _ => None,
        }
    }
}

/// A ClusterPolicy or a namespaced Policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub name: String,
    /// The namespace of a namespaced `Policy`; `None` for a ClusterPolicy.
    pub namespace: Option<String>,
    pub failure_action: FailureAction,
    pub background: bool,
    pub rules: Vec<Rule>,
    pub source: Option<SourceLocation>,
}

impl Policy {
    /// The name results use: `ns/name` for a namespaced Policy.
    pub fn display_name(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }
}

/// Why a policy document was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{at}: {expected}")]
pub struct PolicyError {
    pub at: SourceLocation,
    pub expected: String,
}

/// Whether a manifest document is a Kyverno policy this engine reads.
pub fn is_policy(doc: &Value) -> bool {
    let api = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    api.starts_with("kyverno.io/") && (kind == "ClusterPolicy" || kind == "Policy")
}

/// Reads a policy from its manifest document.
pub fn from_document(doc: &Document) -> Result<Policy, PolicyError> {
    let at = doc.location();
    let err = |expected: String| PolicyError {
        at: at.clone(),
        expected,
    };
    from_value(&doc.value).map_err(err).map(|mut p| {
        p.source = Some(doc.location());
        p
    })
}

/// Reads a policy from its JSON form.
pub fn from_value(value: &Value) -> Result<Policy, String> {
    if !is_policy(value) {
        return Err("expected a kyverno.io ClusterPolicy or Policy".into());
    }
    // Kyverno reads a policy with its Pod-controller rules generated.
    let expanded = crate::autogen::expand(value);
    let value = &expanded;
    let namespaced = value.get("kind").and_then(Value::as_str) == Some("Policy");
    let name = value
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .ok_or("expected metadata.name on the policy")?
        .to_owned();
    let namespace = if namespaced {
        Some(
            value
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("default")
                .to_owned(),
        )
    } else {
        None
    };
    let spec = value.get("spec").ok_or("expected spec on the policy")?;
    let action_text = spec
        .get("validationFailureAction")
        .or_else(|| spec.get("failureAction"))
        .and_then(Value::as_str);
    let failure_action = match action_text {
        None => FailureAction::Audit,
        Some(text) => FailureAction::parse(text).ok_or_else(|| {
            format!("spec.validationFailureAction `{text}`: expected Enforce or Audit")
        })?,
    };
    let background = spec
        .get("background")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    let rules_value = spec
        .get("rules")
        .and_then(Value::as_array)
        .ok_or("expected spec.rules to be a list")?;
    let mut rules = Vec::with_capacity(rules_value.len());
    for (i, rule) in rules_value.iter().enumerate() {
        rules.push(read_rule(rule).map_err(|e| format!("spec.rules[{i}]: {e}"))?);
    }
    Ok(Policy {
        name,
        namespace,
        failure_action,
        background,
        rules,
        source: None,
    })
}

fn read_rule(rule: &Value) -> Result<Rule, String> {
    let name = rule
        .get("name")
        .and_then(Value::as_str)
        .ok_or("expected a rule name")?
        .to_owned();
    let get = |k: &str| rule.get(k).cloned().unwrap_or(Value::Null);
    let context = match rule.get("context") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items.clone(),
        Some(_) => return Err("context: expected a list".into()),
    };
    let body = if let Some(v) = rule.get("validate") {
        validate_body(v)
    } else if let Some(m) = rule.get("mutate") {
        mutate_body(m)
    } else if rule.get("generate").is_some() {
        RuleBody::NotEvaluated("generate rules are not evaluated".into())
    } else if rule.get("verifyImages").is_some() {
        RuleBody::NotEvaluated("verifyImages rules are not evaluated (no image registry)".into())
    } else {
        return Err("expected one of validate, mutate, generate or verifyImages".into());
    };
    Ok(Rule {
        name,
        match_: get("match"),
        exclude: get("exclude"),
        context,
        preconditions: get("preconditions"),
        body,
    })
}

fn validate_body(v: &Value) -> RuleBody {
    for (field, why) in [
        ("cel", "validate.cel (CEL expressions) is not evaluated"),
        (
            "podSecurity",
            "validate.podSecurity (Pod Security Standards) is not evaluated",
        ),
        (
            "manifests",
            "validate.manifests (signed manifests) is not evaluated",
        ),
        (
            "assert",
            "validate.assert (assertion trees) is not evaluated",
        ),
    ] {
        if v.get(field).is_some() {
            return RuleBody::NotEvaluated(why.into());
        }
    }
    if ["pattern", "anyPattern", "deny", "foreach"]
        .iter()
        .any(|k| v.get(*k).is_some())
    {
        RuleBody::Validate(v.clone())
    } else {
        RuleBody::NotEvaluated("validate rule without pattern, anyPattern, deny or foreach".into())
    }
}

fn mutate_body(m: &Value) -> RuleBody {
    if m.get("targets").is_some() {
        return RuleBody::NotEvaluated(
            "mutate.targets (mutate existing resources) is not evaluated".into(),
        );
    }
    if m.get("mutateExistingOnPolicyUpdate")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return RuleBody::NotEvaluated("mutateExistingOnPolicyUpdate is not evaluated".into());
    }
    if ["patchStrategicMerge", "patchesJson6902", "foreach"]
        .iter()
        .any(|k| m.get(*k).is_some())
    {
        RuleBody::Mutate(m.clone())
    } else {
        RuleBody::NotEvaluated(
            "mutate rule without patchStrategicMerge, patchesJson6902 or foreach".into(),
        )
    }
}
