//! One admission request through a set of policies, in Kubernetes' order:
//! every mutating rule first (each seeing the previous patches), then every
//! validating rule against the patched object (kyverno.io/docs/writing-
//! policies/validate, …/mutate). Rules the engine cannot evaluate are
//! reported as not evaluated, never passed.

use std::fmt;

use serde_json::{Map, Value, json};

use crate::conditions;
use crate::context::{self, ClusterData, ContextError};
use crate::jmes;
use crate::matching;
use crate::merge;
use crate::pattern;
use crate::policy::{FailureAction, Policy, Rule, RuleBody};
use crate::request::{AdmissionRequest, Operation};
use crate::variables::{self, Missing};

/// A rule's outcome, as Kyverno reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleStatus {
    Pass,
    Fail,
    Skip,
    Error,
    /// The rule is of a kind the engine does not evaluate.
    NotEvaluated,
}

impl fmt::Display for RuleStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RuleStatus::Pass => "pass",
            RuleStatus::Fail => "fail",
            RuleStatus::Skip => "skip",
            RuleStatus::Error => "error",
            RuleStatus::NotEvaluated => "not-evaluated",
        })
    }
}

/// What kind of rule produced a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleKind {
    Mutation,
    Validation,
    Other,
}

/// One rule's result for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct RuleResult {
    pub policy: String,
    pub rule: String,
    pub kind: RuleKind,
    pub status: RuleStatus,
    pub message: String,
    /// For validate rules: what a failure does.
    pub failure_action: Option<FailureAction>,
}

/// The outcome of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Admission {
    /// The object after every mutation.
    pub patched: Value,
    pub results: Vec<RuleResult>,
}

impl Admission {
    /// The failing Enforce rules, which refuse the request.
    pub fn blocking(&self) -> impl Iterator<Item = &RuleResult> {
        self.results.iter().filter(|r| {
            r.status == RuleStatus::Fail && r.failure_action == Some(FailureAction::Enforce)
        })
    }

    /// The refusal message the API server returns, in the shape of Kyverno's
    /// webhook ("resource Pod/ns/name was blocked due to the following
    /// policies"), or `None` when the request is admitted.
    pub fn refusal(&self) -> Option<String> {
        let blocking: Vec<&RuleResult> = self.blocking().collect();
        if blocking.is_empty() {
            return None;
        }
        let object = &self.patched;
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let ns = object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str);
        let id = match ns {
            Some(ns) => format!("{kind}/{ns}/{name}"),
            None => format!("{kind}//{name}"),
        };
        let mut text = format!("\n\nresource {id} was blocked due to the following policies\n\n");
        let mut last_policy = "";
        for r in blocking {
            if r.policy != last_policy {
                text.push_str(&format!("{}:\n", r.policy));
                last_policy = &r.policy;
            }
            text.push_str(&format!("  {}: {}\n", r.rule, r.message));
        }
        Some(text)
    }
}

/// The engine's inputs beyond the request: where context entries read the
/// cluster, and variables given from outside (a CLI values file).
pub struct Engine<'a> {
    pub data: &'a dyn ClusterData,
    /// Variables by dotted name (`request.operation`, a context entry's name).
    pub preset: Map<String, Value>,
    /// PolicyExceptions in force: a rule one of them exempts the request
    /// from is reported `skip` and not evaluated.
    pub exceptions: Vec<crate::exception::PolicyException>,
}

impl<'a> Engine<'a> {
    pub fn new(data: &'a dyn ClusterData) -> Self {
        Engine {
            data,
            preset: Map::new(),
            exceptions: Vec::new(),
        }
    }

    /// Runs every policy's rules over the request: mutations, then validations.
    pub fn admit(&self, policies: &[Policy], req: &AdmissionRequest) -> Admission {
        let mut current = req.clone();
        let mut results = Vec::new();
        if matches!(req.operation, Operation::Create | Operation::Update) {
            for policy in policies {
                for rule in &policy.rules {
                    if let RuleBody::Mutate(body) = &rule.body {
                        if let Some(skip) = self.exempt(policy, rule, RuleKind::Mutation, &current)
                        {
                            results.extend(skip);
                            continue;
                        }
                        if let Some(result) = self.mutate_rule(policy, rule, body, &mut current) {
                            results.push(result);
                        }
                    }
                }
            }
        }
        for policy in policies {
            for rule in &policy.rules {
                if !matches!(rule.body, RuleBody::Mutate(_))
                    && let Some(skip) = self.exempt(policy, rule, RuleKind::Validation, &current)
                {
                    results.extend(skip);
                    continue;
                }
                let result = match &rule.body {
                    RuleBody::Validate(body) => self.validate_rule(policy, rule, body, &current),
                    RuleBody::NotEvaluated(why) => {
                        self.applies(policy, rule, &current).map(|()| RuleResult {
                            policy: policy.display_name(),
                            rule: rule.name.clone(),
                            kind: RuleKind::Other,
                            status: RuleStatus::NotEvaluated,
                            message: why.clone(),
                            failure_action: None,
                        })
                    }
                    RuleBody::Mutate(_) => None,
                };
                results.extend(result);
            }
        }
        Admission {
            patched: current.object,
            results,
        }
    }

    /// `Some(result)` when a PolicyException exempts the request from the
    /// rule: the rule's `skip` if the rule applies to the request, else no
    /// result (`Some(None)`); `None` when no exception exempts it.
    fn exempt(
        &self,
        policy: &Policy,
        rule: &Rule,
        kind: RuleKind,
        req: &AdmissionRequest,
    ) -> Option<Option<RuleResult>> {
        let exception = self
            .exceptions
            .iter()
            .find(|e| e.exempts(&policy.display_name(), &rule.name, req))?;
        Some(self.applies(policy, rule, req).map(|()| RuleResult {
            policy: policy.display_name(),
            rule: rule.name.clone(),
            kind,
            status: RuleStatus::Skip,
            message: exception.message(),
            failure_action: None,
        }))
    }

    /// `Some(())` when the rule's match selects the request and its exclude does not.
    fn applies(&self, policy: &Policy, rule: &Rule, req: &AdmissionRequest) -> Option<()> {
        if let Some(ns) = &policy.namespace
            && req.namespace() != *ns
        {
            return None;
        }
        let matched = matching::block_matches(&rule.match_, req).unwrap_or(false);
        let excluded =
            !rule.exclude.is_null() && matching::block_matches(&rule.exclude, req).unwrap_or(false);
        (matched && !excluded).then_some(())
    }

    /// The rule context: `request`, the service account names, the presets.
    fn base_context(&self, req: &AdmissionRequest) -> Value {
        let mut ctx = json!({ "request": req.to_variable() });
        let user = &req.user_info.username;
        if let Some(rest) = user.strip_prefix("system:serviceaccount:")
            && let Some((ns, name)) = rest.split_once(':')
        {
            ctx["serviceAccountName"] = json!(name);
            ctx["serviceAccountNamespace"] = json!(ns);
        } else {
            ctx["serviceAccountName"] = json!("");
            ctx["serviceAccountNamespace"] = json!("");
        }
        for (name, value) in &self.preset {
            set_dotted(&mut ctx, name, value.clone());
        }
        ctx
    }

    /// Context entries and preconditions; `Err` is the rule's result.
    fn prepare(
        &self,
        rule: &Rule,
        req: &AdmissionRequest,
        result: &dyn Fn(RuleStatus, String) -> RuleResult,
    ) -> Result<Value, RuleResult> {
        let mut ctx = self.base_context(req);
        load_context(&rule.context, &mut ctx, self, result)?;
        match conditions::evaluate(&rule.preconditions, &ctx, Missing::Empty) {
            Ok(v) if v.holds => Ok(ctx),
            Ok(v) => Err(result(
                RuleStatus::Skip,
                v.message.unwrap_or_else(|| "preconditions not met".into()),
            )),
            Err(e) => Err(result(
                RuleStatus::Error,
                format!("failed to evaluate preconditions: {e}"),
            )),
        }
    }

    fn validate_rule(
        &self,
        policy: &Policy,
        rule: &Rule,
        body: &Value,
        req: &AdmissionRequest,
    ) -> Option<RuleResult> {
        self.applies(policy, rule, req)?;
        let action = rule.failure_action().unwrap_or(policy.failure_action);
        let result = |status: RuleStatus, message: String| RuleResult {
            policy: policy.display_name(),
            rule: rule.name.clone(),
            kind: RuleKind::Validation,
            status,
            message,
            failure_action: Some(action),
        };
        let ctx = match self.prepare(rule, req, &result) {
            Ok(ctx) => ctx,
            Err(r) => return Some(r),
        };
        let (status, message) =
            validate_body(self, &rule.name, body, &ctx, req.resource(), req.operation);
        Some(result(status, message))
    }

    fn mutate_rule(
        &self,
        policy: &Policy,
        rule: &Rule,
        body: &Value,
        req: &mut AdmissionRequest,
    ) -> Option<RuleResult> {
        self.applies(policy, rule, req)?;
        let result = |status: RuleStatus, message: String| RuleResult {
            policy: policy.display_name(),
            rule: rule.name.clone(),
            kind: RuleKind::Mutation,
            status,
            message,
            failure_action: None,
        };
        let ctx = match self.prepare(rule, req, &result) {
            Ok(ctx) => ctx,
            Err(r) => return Some(r),
        };
        match mutate_body(self, body, &ctx, &req.object) {
            Ok(Some(patched)) if patched != req.object => {
                let kind = patched
                    .get("kind")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let name = patched
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                req.object = patched;
                Some(result(RuleStatus::Pass, format!("mutated {kind}/{name}")))
            }
            Ok(_) => Some(result(RuleStatus::Skip, "no patches applied".into())),
            Err(MutateError::Failed(e)) => Some(result(RuleStatus::Error, e)),
            Err(MutateError::Unsupported(e)) => Some(result(RuleStatus::NotEvaluated, e)),
        }
    }
}

fn load_context(
    entries: &[Value],
    ctx: &mut Value,
    engine: &Engine<'_>,
    result: &dyn Fn(RuleStatus, String) -> RuleResult,
) -> Result<(), RuleResult> {
    context::load(entries, ctx, engine.data, &engine.preset).map_err(|e| match e {
        ContextError::Failed(m) => result(RuleStatus::Error, m),
        ContextError::Unsupported(m) => result(RuleStatus::NotEvaluated, m),
    })
}

/// Sets `a.b.c` in a JSON object, creating the maps on the way.
pub fn set_dotted(ctx: &mut Value, name: &str, value: Value) {
    let mut slot = ctx;
    let parts: Vec<&str> = name.split('.').collect();
    for (i, part) in parts.iter().enumerate() {
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(map) = slot else { return };
        if i + 1 == parts.len() {
            map.insert((*part).to_owned(), value);
            return;
        }
        slot = map
            .entry((*part).to_owned())
            .or_insert(Value::Object(Map::new()));
    }
}

fn message_of(body: &Value, ctx: &Value) -> String {
    match body.get("message") {
        Some(m) => variables::substitute(m, ctx, Missing::Empty)
            .map(|v| crate::scalar::interpolate(&v))
            .unwrap_or_else(|_| m.as_str().unwrap_or_default().to_owned()),
        None => String::new(),
    }
}

fn pattern_failure(message: &str, rule: &str, path: &str) -> String {
    let message = message.trim_end_matches('.');
    if message.is_empty() {
        format!("validation error: rule {rule} failed at path {path}")
    } else {
        format!("validation error: {message}. rule {rule} failed at path {path}")
    }
}

/// A validate body over `resource`: pattern, anyPattern, deny, foreach.
fn validate_body(
    engine: &Engine<'_>,
    rule: &str,
    body: &Value,
    ctx: &Value,
    resource: &Value,
    operation: Operation,
) -> (RuleStatus, String) {
    let message = message_of(body, ctx);
    if let Some(deny) = body.get("deny") {
        let block = deny.get("conditions").unwrap_or(&Value::Null);
        return match conditions::evaluate(block, ctx, Missing::Error) {
            Ok(v) if v.holds => (
                RuleStatus::Fail,
                if message.is_empty() {
                    format!("validation error: rule {rule} failed")
                } else {
                    message
                },
            ),
            Ok(_) => (
                RuleStatus::Pass,
                format!("validation rule '{rule}' passed."),
            ),
            Err(e) => (
                RuleStatus::Error,
                format!("failed to substitute variables in deny conditions: {e}"),
            ),
        };
    }
    if let Some(p) = body.get("pattern") {
        if operation == Operation::Delete {
            return (
                RuleStatus::Skip,
                "pattern rules are not applied to DELETE requests".into(),
            );
        }
        let p = match variables::substitute(p, ctx, Missing::Error) {
            Ok(p) => p,
            Err(e) => return (RuleStatus::Error, e.to_string()),
        };
        return match pattern::match_pattern(resource, &p) {
            Ok(()) => (
                RuleStatus::Pass,
                format!("validation rule '{rule}' passed."),
            ),
            Err(e) if e.is_skip() => (
                RuleStatus::Skip,
                format!("rule {rule} skipped: {}", e.message),
            ),
            Err(e) => (RuleStatus::Fail, pattern_failure(&message, rule, &e.path)),
        };
    }
    if let Some(Value::Array(patterns)) = body.get("anyPattern") {
        if operation == Operation::Delete {
            return (
                RuleStatus::Skip,
                "pattern rules are not applied to DELETE requests".into(),
            );
        }
        let mut failures = Vec::new();
        let mut skipped = 0;
        for (i, p) in patterns.iter().enumerate() {
            let p = match variables::substitute(p, ctx, Missing::Error) {
                Ok(p) => p,
                Err(e) => return (RuleStatus::Error, e.to_string()),
            };
            match pattern::match_pattern(resource, &p) {
                Ok(()) => {
                    return (
                        RuleStatus::Pass,
                        format!("validation rule '{rule}' anyPattern[{i}] passed."),
                    );
                }
                Err(e) if e.is_skip() => skipped += 1,
                Err(e) => failures.push(format!("rule {rule}[{i}] failed at path {}", e.path)),
            }
        }
        if skipped == patterns.len() {
            return (
                RuleStatus::Skip,
                format!("rule {rule} skipped: no pattern applies"),
            );
        }
        let message = message.trim_end_matches('.');
        return (
            RuleStatus::Fail,
            format!("validation error: {message}. {}", failures.join(" ")),
        );
    }
    if let Some(Value::Array(decls)) = body.get("foreach") {
        return validate_foreach(engine, rule, decls, ctx, resource, operation, &message);
    }
    (
        RuleStatus::Error,
        "validate rule has nothing to evaluate".into(),
    )
}

/// The elements a foreach declaration iterates.
fn foreach_list(decl: &Value, ctx: &Value) -> Result<Vec<Value>, String> {
    let expr = decl
        .get("list")
        .and_then(Value::as_str)
        .ok_or("foreach: `list` is required")?;
    let expr = expr
        .trim()
        .trim_start_matches("{{")
        .trim_end_matches("}}")
        .trim();
    match jmes::search(expr, ctx)? {
        Value::Array(items) => Ok(items),
        Value::Null => Ok(Vec::new()),
        other => Err(format!("foreach list `{expr}` is not a list: {other}")),
    }
}

fn element_context(ctx: &Value, element: &Value, index: usize) -> Value {
    let mut ctx = ctx.clone();
    ctx["element"] = element.clone();
    ctx["elementIndex"] = json!(index);
    ctx
}

fn validate_foreach(
    engine: &Engine<'_>,
    rule: &str,
    decls: &[Value],
    ctx: &Value,
    resource: &Value,
    operation: Operation,
    rule_message: &str,
) -> (RuleStatus, String) {
    let mut applied = 0;
    for decl in decls {
        let items = match foreach_list(decl, ctx) {
            Ok(items) => items,
            Err(e) => return (RuleStatus::Error, e),
        };
        for (i, element) in items.iter().enumerate() {
            let mut ectx = element_context(ctx, element, i);
            let entries = decl
                .get("context")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if let Err(e) = context::load(&entries, &mut ectx, engine.data, &engine.preset) {
                return match e {
                    ContextError::Failed(m) => (RuleStatus::Error, m),
                    ContextError::Unsupported(m) => (RuleStatus::NotEvaluated, m),
                };
            }
            match conditions::evaluate(
                decl.get("preconditions").unwrap_or(&Value::Null),
                &ectx,
                Missing::Empty,
            ) {
                Ok(v) if !v.holds => continue,
                Ok(_) => {}
                Err(e) => return (RuleStatus::Error, e),
            }
            let scope_element = match decl.get("elementScope").and_then(Value::as_bool) {
                Some(scope) => scope,
                None => element.is_object(),
            };
            let target = if scope_element { element } else { resource };
            let mut inner = decl.clone();
            if let Value::Object(map) = &mut inner {
                map.remove("list");
                map.remove("context");
                map.remove("preconditions");
                if !map.contains_key("message") && !rule_message.is_empty() {
                    map.insert("message".into(), Value::String(rule_message.to_owned()));
                }
            }
            let (status, message) = validate_body(engine, rule, &inner, &ectx, target, operation);
            match status {
                RuleStatus::Pass => applied += 1,
                RuleStatus::Skip => {}
                RuleStatus::Fail => {
                    let message = if inner.get("deny").is_some() {
                        message
                    } else {
                        format!("{message} (element {i})")
                    };
                    return (RuleStatus::Fail, message);
                }
                other => return (other, message),
            }
        }
    }
    if applied == 0 {
        (
            RuleStatus::Skip,
            format!("rule {rule} skipped: no element applies"),
        )
    } else {
        (
            RuleStatus::Pass,
            format!("validation rule '{rule}' passed."),
        )
    }
}

enum MutateError {
    Failed(String),
    Unsupported(String),
}

/// A mutate body over `object`; `Ok(None)` when a condition dropped the patch.
fn mutate_body(
    engine: &Engine<'_>,
    body: &Value,
    ctx: &Value,
    object: &Value,
) -> Result<Option<Value>, MutateError> {
    let mut current = object.clone();
    let mut touched = false;
    if let Some(patch) = body.get("patchStrategicMerge") {
        let patch = variables::substitute(patch, ctx, Missing::Error)
            .map_err(|e| MutateError::Failed(e.to_string()))?;
        if let Ok(patched) = merge::apply(&current, &patch) {
            current = patched;
            touched = true;
        }
    }
    if let Some(ops) = body.get("patchesJson6902") {
        current = json6902(ops, ctx, &current)?;
        touched = true;
    }
    if let Some(Value::Array(decls)) = body.get("foreach") {
        for decl in decls {
            let mut base = ctx.clone();
            base["request"]["object"] = current.clone();
            let items = foreach_list(decl, &base).map_err(MutateError::Failed)?;
            for (i, element) in items.iter().enumerate() {
                let mut ectx = element_context(&base, element, i);
                ectx["request"]["object"] = current.clone();
                let entries = decl
                    .get("context")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                context::load(&entries, &mut ectx, engine.data, &engine.preset).map_err(
                    |e| match e {
                        ContextError::Failed(m) => MutateError::Failed(m),
                        ContextError::Unsupported(m) => MutateError::Unsupported(m),
                    },
                )?;
                match conditions::evaluate(
                    decl.get("preconditions").unwrap_or(&Value::Null),
                    &ectx,
                    Missing::Empty,
                ) {
                    Ok(v) if !v.holds => continue,
                    Ok(_) => {}
                    Err(e) => return Err(MutateError::Failed(e)),
                }
                let mut inner = decl.clone();
                if let Value::Object(map) = &mut inner {
                    map.remove("list");
                    map.remove("context");
                    map.remove("preconditions");
                }
                if let Some(patched) = mutate_body(engine, &inner, &ectx, &current)? {
                    current = patched;
                    touched = true;
                }
            }
        }
    }
    Ok(touched.then_some(current))
}

fn json6902(ops: &Value, ctx: &Value, object: &Value) -> Result<Value, MutateError> {
    let text = match ops {
        Value::String(text) => {
            let substituted =
                variables::substitute_str(text, ctx, Missing::Error, "/patchesJson6902")
                    .map_err(|e| MutateError::Failed(e.to_string()))?;
            crate::scalar::interpolate(&substituted)
        }
        other => other.to_string(),
    };
    let parsed: Value = serde_saphyr::from_str(&text).map_err(|e| {
        MutateError::Failed(format!(
            "patchesJson6902 is not a YAML list of operations: {e}"
        ))
    })?;
    let parsed = variables::substitute(&parsed, ctx, Missing::Error)
        .map_err(|e| MutateError::Failed(e.to_string()))?;
    let patch: json_patch::Patch = serde_json::from_value(parsed)
        .map_err(|e| MutateError::Failed(format!("patchesJson6902: {e}")))?;
    let mut out = object.clone();
    json_patch::patch(&mut out, &patch)
        .map_err(|e| MutateError::Failed(format!("failed to apply JSON patch: {e}")))?;
    Ok(out)
}

/// Runs the validate rules over an existing object, as Kyverno's background
/// scan does for policies with `background: true`: no request user, the
/// operation reported as empty, mutations not applied.
pub fn background_scan(
    engine: &Engine<'_>,
    policies: &[Policy],
    object: &Value,
) -> Vec<RuleResult> {
    let background: Vec<Policy> = policies
        .iter()
        .filter(|p| p.background)
        .map(|p| Policy {
            rules: p
                .rules
                .iter()
                .filter(|r| !matches!(r.body, RuleBody::Mutate(_)))
                .cloned()
                .collect(),
            ..p.clone()
        })
        .collect();
    let req = AdmissionRequest::create(object.clone());
    engine.admit(&background, &req).results
}
