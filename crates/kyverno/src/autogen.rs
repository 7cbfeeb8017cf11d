//! Auto-generated rules for Pod controllers, as Kyverno writes them
//! (kyverno.io/docs/writing-policies/autogen/; transcribed from
//! kyverno/kyverno `pkg/autogen/autogen.go` `CanAutoGen` and
//! `pkg/autogen/v1/rule.go`): a rule written for Pods also gets
//! `autogen-NAME`, matching DaemonSet, Deployment, Job, ReplicaSet,
//! ReplicationController and StatefulSet with its pattern or patch moved
//! under `spec.template`, and `autogen-cronjob-NAME`, matching CronJob
//! under `spec.jobTemplate.spec.template`. Variables follow:
//! `request.object.spec` becomes `request.object.spec.template.spec`, and
//! so on (the same text replacement Kyverno makes on the rule's JSON).
//!
//! The annotation `pod-policies.kyverno.io/autogen-controllers` narrows
//! the controllers (`Deployment,CronJob`) or turns the feature off
//! (`none`). No rule is generated when any rule of the policy selects
//! resources by name, selector or annotations, mixes Pod with other kinds,
//! or uses `patchesJson6902` or `generate`.
//!
//! The expansion is done on the policy's JSON before it is read, so the
//! generated rules are ordinary rules to the engine.

use serde_json::{Map, Value};

/// The annotation that narrows or disables auto-generation.
pub const ANNOTATION: &str = "pod-policies.kyverno.io/autogen-controllers";

/// The controllers of `autogen-…` rules, sorted as Kyverno's `splitKinds`
/// sorts them.
const CONTROLLERS: [&str; 6] = [
    "DaemonSet",
    "Deployment",
    "Job",
    "ReplicaSet",
    "ReplicationController",
    "StatefulSet",
];

const POD_REPLACEMENTS: [(&str, &str); 4] = [
    ("request.object.spec", "request.object.spec.template.spec"),
    (
        "request.oldObject.spec",
        "request.oldObject.spec.template.spec",
    ),
    (
        "request.object.metadata",
        "request.object.spec.template.metadata",
    ),
    (
        "request.oldObject.metadata",
        "request.oldObject.spec.template.metadata",
    ),
];

const CRONJOB_REPLACEMENTS: [(&str, &str); 4] = [
    (
        "request.object.spec",
        "request.object.spec.jobTemplate.spec.template.spec",
    ),
    (
        "request.oldObject.spec",
        "request.oldObject.spec.jobTemplate.spec.template.spec",
    ),
    (
        "request.object.metadata",
        "request.object.spec.jobTemplate.spec.template.metadata",
    ),
    (
        "request.oldObject.metadata",
        "request.oldObject.spec.jobTemplate.spec.template.metadata",
    ),
];

/// The policy with its auto-generated rules appended after its own.
pub fn expand(policy: &Value) -> Value {
    let Some(rules) = policy.pointer("/spec/rules").and_then(Value::as_array) else {
        return policy.clone();
    };
    if !can_autogen(rules) {
        return policy.clone();
    }
    let requested: Option<Vec<String>> = policy
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(ANNOTATION))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(|s| s.split(',').map(|k| k.trim().to_owned()).collect());
    if requested.as_deref() == Some(&["none".to_owned()][..]) {
        return policy.clone();
    }
    let wanted = |kind: &str| {
        requested
            .as_ref()
            .is_none_or(|r| r.iter().any(|k| k == kind))
    };
    let controllers: Vec<&str> = CONTROLLERS.iter().copied().filter(|c| wanted(c)).collect();
    let cronjob = wanted("CronJob");
    let mut generated = Vec::new();
    for rule in rules {
        let name = rule.get("name").and_then(Value::as_str).unwrap_or_default();
        if name.starts_with("autogen-") || !matches_pods(rule) {
            continue;
        }
        if !controllers.is_empty()
            && let Some(r) = generate(
                rule,
                &rule_name("autogen", name),
                "template",
                &controllers,
                Filter::Pod,
            )
        {
            generated.push(replace(&r, &POD_REPLACEMENTS));
        }
        if cronjob {
            // Kyverno nests the controllers' rule once more (built from
            // every requested controller, or the CronJob alone).
            let base_kinds = if controllers.is_empty() {
                vec!["CronJob"]
            } else {
                controllers.clone()
            };
            let base = generate(
                rule,
                &rule_name("autogen", name),
                "template",
                &base_kinds,
                Filter::Pod,
            );
            if let Some(r) = base.and_then(|b| {
                generate(
                    &b,
                    &rule_name("autogen-cronjob", name),
                    "jobTemplate",
                    &["CronJob"],
                    Filter::All,
                )
            }) {
                generated.push(replace(&r, &CRONJOB_REPLACEMENTS));
            }
        }
    }
    let mut out = policy.clone();
    if let Some(list) = out.pointer_mut("/spec/rules").and_then(Value::as_array_mut) {
        list.extend(generated);
    }
    out
}

/// Kyverno truncates a generated rule's name to 63 characters.
fn rule_name(prefix: &str, name: &str) -> String {
    format!("{prefix}-{name}").chars().take(63).collect()
}

fn is_pod(kind: &Value) -> bool {
    kind.as_str()
        .is_some_and(|k| k == "Pod" || k.ends_with("/Pod"))
}

fn kinds(description: &Value) -> Vec<&Value> {
    description
        .get("kinds")
        .and_then(Value::as_array)
        .map(|k| k.iter().collect())
        .unwrap_or_default()
}

/// Every resource description of a `match` or `exclude` block.
fn descriptions(block: Option<&Value>) -> Vec<&Value> {
    let Some(block) = block else {
        return Vec::new();
    };
    let mut out: Vec<&Value> = block.get("resources").into_iter().collect();
    for list in ["any", "all"] {
        for filter in block
            .get(list)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.extend(filter.get("resources"));
        }
    }
    out
}

/// `CanAutoGen`: no rule selects by name, selector or annotations, or mixes
/// Pod with other kinds, or patches with JSON 6902 or generates; and some
/// rule names Pod or a Pod controller.
fn can_autogen(rules: &[Value]) -> bool {
    let mut needed = false;
    for rule in rules {
        let json6902 = rule.pointer("/mutate/patchesJson6902").is_some()
            || rule
                .pointer("/mutate/foreach")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|e| e.get("patchesJson6902").is_some()));
        if json6902 || rule.get("generate").is_some() {
            return false;
        }
        for d in descriptions(rule.get("match"))
            .into_iter()
            .chain(descriptions(rule.get("exclude")))
        {
            let named = d
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty())
                || d.get("names")
                    .and_then(Value::as_array)
                    .is_some_and(|n| !n.is_empty());
            let kinds = kinds(d);
            let mixed = kinds.len() > 1 && kinds.iter().any(|k| is_pod(k));
            if named || d.get("selector").is_some() || d.get("annotations").is_some() || mixed {
                return false;
            }
            needed |= kinds.iter().any(|k| {
                is_pod(k)
                    || k.as_str()
                        .is_some_and(|k| CONTROLLERS.contains(&k) || k == "CronJob")
            });
        }
    }
    needed
}

/// `generateRuleForControllers`' condition: the rule matches Pods, and
/// excludes nothing or Pods.
fn matches_pods(rule: &Value) -> bool {
    let all = |block: Option<&Value>| -> Vec<Value> {
        descriptions(block)
            .into_iter()
            .flat_map(|d| kinds(d).into_iter().cloned())
            .collect()
    };
    let matched = all(rule.get("match"));
    let excluded = all(rule.get("exclude"));
    matched.iter().any(is_pod) && (excluded.is_empty() || excluded.iter().any(is_pod))
}

/// Which filters of an `any`/`all` list get the new kinds: those naming
/// Pod (the controllers' rule), or every one (the CronJob rule).
#[derive(Clone, Copy)]
enum Filter {
    Pod,
    All,
}

fn set_kinds(block: &mut Value, kinds: &[&str], filter: Filter, only_if_present: bool) {
    let new: Vec<Value> = kinds
        .iter()
        .map(|k| Value::String((*k).to_owned()))
        .collect();
    for list in ["any", "all"] {
        if let Some(filters) = block.get_mut(list).and_then(Value::as_array_mut)
            && !filters.is_empty()
        {
            for f in filters.iter_mut() {
                let hit = match filter {
                    Filter::Pod => kinds_of(f).iter().any(is_pod),
                    Filter::All => true,
                };
                if hit
                    && let Some(resources) = f.get_mut("resources").and_then(Value::as_object_mut)
                {
                    resources.insert("kinds".to_owned(), Value::Array(new.clone()));
                }
            }
            return;
        }
    }
    let present = block.pointer("/resources/kinds").is_some();
    if (present || !only_if_present)
        && let Some(resources) = block
            .as_object_mut()
            .map(|b| {
                b.entry("resources")
                    .or_insert_with(|| Value::Object(Map::new()))
            })
            .and_then(Value::as_object_mut)
    {
        resources.insert("kinds".to_owned(), Value::Array(new));
    }
}

fn kinds_of(filter: &Value) -> Vec<Value> {
    filter
        .pointer("/resources/kinds")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn wrap(key: &str, inner: Value) -> Value {
    let mut template = Map::new();
    template.insert(key.to_owned(), inner);
    let mut spec = Map::new();
    spec.insert("spec".to_owned(), Value::Object(template));
    Value::Object(spec)
}

/// `generateRule`: the rule renamed, its kinds replaced, its pattern or
/// patch moved under `spec.KEY`; `None` for a body Kyverno does not
/// generate for (e.g. a mutation other than a strategic merge).
fn generate(rule: &Value, name: &str, key: &str, kinds: &[&str], filter: Filter) -> Option<Value> {
    let mut out = rule.clone();
    out["name"] = Value::String(name.to_owned());
    if let Some(m) = out.get_mut("match") {
        set_kinds(m, kinds, filter, false);
    }
    if let Some(e) = out.get_mut("exclude") {
        set_kinds(e, kinds, filter, true);
    }
    if let Some(mutate) = out.get_mut("mutate") {
        if let Some(patch) = mutate.get("patchStrategicMerge").cloned() {
            *mutate = Value::Object(Map::from_iter([(
                "patchStrategicMerge".to_owned(),
                wrap(key, patch),
            )]));
            return Some(out);
        }
        if let Some(each) = mutate.get_mut("foreach").and_then(Value::as_array_mut) {
            for e in each.iter_mut() {
                if let Some(patch) = e.get("patchStrategicMerge").cloned() {
                    e["patchStrategicMerge"] = wrap(key, patch);
                }
            }
            return Some(out);
        }
        return None;
    }
    if let Some(validate) = out.get_mut("validate") {
        if let Some(pattern) = validate.get("pattern").cloned() {
            validate["pattern"] = wrap(key, pattern);
        } else if let Some(any) = validate
            .get("anyPattern")
            .and_then(Value::as_array)
            .cloned()
        {
            validate["anyPattern"] = Value::Array(any.into_iter().map(|p| wrap(key, p)).collect());
        }
        // deny, foreach and the bodies the engine does not evaluate keep
        // their shape; only their variables move.
        return Some(out);
    }
    out.get("verifyImages").is_some().then_some(out)
}

/// Kyverno's text replacement over the rule's JSON.
fn replace(rule: &Value, replacements: &[(&str, &str)]) -> Value {
    let mut text = rule.to_string();
    for (from, to) in replacements {
        text = text.replace(from, to);
    }
    serde_json::from_str(&text).unwrap_or_else(|_| rule.clone())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy(annotations: Value, rule: Value) -> Value {
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
               "metadata": {"name": "p", "annotations": annotations},
               "spec": {"rules": [rule]}})
    }

    fn names(p: &Value) -> Vec<String> {
        p["spec"]["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| r["name"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    fn pod_rule() -> Value {
        json!({"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
               "validate": {"message": "{{ request.object.metadata.name }}",
                            "pattern": {"spec": {"containers": [{"image": "!*:latest"}]}}}})
    }

    #[test]
    fn a_pod_rule_gets_a_controllers_rule_and_a_cronjob_rule() {
        let out = expand(&policy(json!({}), pod_rule()));
        assert_eq!(names(&out), ["r", "autogen-r", "autogen-cronjob-r"]);
        let controllers = &out["spec"]["rules"][1];
        assert_eq!(
            controllers["match"]["any"][0]["resources"]["kinds"],
            json!(CONTROLLERS)
        );
        assert_eq!(
            controllers["validate"]["pattern"],
            json!({"spec": {"template": {"spec": {"containers": [{"image": "!*:latest"}]}}}})
        );
        assert_eq!(
            controllers["validate"]["message"],
            "{{ request.object.spec.template.metadata.name }}"
        );
        let cron = &out["spec"]["rules"][2];
        assert_eq!(
            cron["match"]["any"][0]["resources"]["kinds"],
            json!(["CronJob"])
        );
        assert_eq!(
            cron["validate"]["pattern"],
            json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"image": "!*:latest"}]}}}}}})
        );
        assert_eq!(
            cron["validate"]["message"],
            "{{ request.object.spec.jobTemplate.spec.template.metadata.name }}"
        );
    }

    #[test]
    fn the_annotation_narrows_or_disables_and_a_named_rule_is_not_expanded() {
        let narrowed = expand(&policy(json!({ANNOTATION: "Deployment"}), pod_rule()));
        assert_eq!(names(&narrowed), ["r", "autogen-r"]);
        assert_eq!(
            narrowed["spec"]["rules"][1]["match"]["any"][0]["resources"]["kinds"],
            json!(["Deployment"])
        );
        assert_eq!(
            names(&expand(&policy(json!({ANNOTATION: "none"}), pod_rule()))),
            ["r"]
        );
        let mut named = pod_rule();
        named["match"]["any"][0]["resources"]["names"] = json!(["x"]);
        assert_eq!(names(&expand(&policy(json!({}), named))), ["r"]);
        let mut mixed = pod_rule();
        mixed["match"]["any"][0]["resources"]["kinds"] = json!(["Pod", "Service"]);
        assert_eq!(names(&expand(&policy(json!({}), mixed))), ["r"]);
    }
}
