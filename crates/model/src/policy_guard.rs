//! Kyverno policies as a drill names them: which manifest documents are
//! policies, what a guard calls one, and how an ablation changes one. The
//! policies are evaluated elsewhere (`drillbench-kyverno`); this layer only
//! reads and rewrites their documents.

use serde_json::Value;

use crate::scenario::spec::GuardChange;

/// Whether a manifest document is a Kyverno ClusterPolicy or Policy
/// (`kyverno.io/*`), the kinds the simulator applies at admission.
pub fn is_policy(value: &Value) -> bool {
    let api = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    api.starts_with("kyverno.io/") && matches!(kind, "ClusterPolicy" | "Policy")
}

/// A policy's name as guards and controls write it: `metadata.name` for a
/// ClusterPolicy, `namespace/name` for a namespaced Policy (Kyverno's own
/// results name them so).
pub fn policy_name(value: &Value) -> Option<String> {
    if !is_policy(value) {
        return None;
    }
    let name = value.pointer("/metadata/name").and_then(Value::as_str)?;
    if value.get("kind").and_then(Value::as_str) == Some("Policy") {
        let namespace = value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or("default");
        return Some(format!("{namespace}/{name}"));
    }
    Some(name.to_owned())
}

/// The names of a policy's rules, in order.
pub fn rule_names(value: &Value) -> Vec<String> {
    value
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("name").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// The policy document with an ablation applied; `None` when the change
/// removes the policy. A shorthand change leaves it as it is (validation
/// refuses that pairing).
pub fn apply_change(policy: &Value, change: &GuardChange) -> Result<Option<Value>, String> {
    match change {
        GuardChange::RemovePolicy => Ok(None),
        GuardChange::RemoveRule(rule) => {
            let mut changed = policy.clone();
            let rules = changed
                .pointer_mut("/spec/rules")
                .and_then(Value::as_array_mut)
                .ok_or("the policy has no spec.rules")?;
            let before = rules.len();
            rules.retain(|r| r.get("name").and_then(Value::as_str) != Some(rule.as_str()));
            if rules.len() == before {
                return Err(format!("the policy has no rule `{rule}`"));
            }
            Ok(Some(changed))
        }
        GuardChange::Patch(ops) => {
            let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops.clone()))
                .map_err(|e| format!("not a JSON patch (RFC 6902): {e}"))?;
            let mut changed = policy.clone();
            json_patch::patch(&mut changed, &patch)
                .map_err(|e| format!("the JSON patch does not apply to the policy: {e}"))?;
            if !is_policy(&changed) {
                return Err("the patched document is no longer a Kyverno policy".to_owned());
            }
            Ok(Some(changed))
        }
        GuardChange::Remove
        | GuardChange::ReplaceRequirement(_)
        | GuardChange::SetValues(_)
        | GuardChange::AddUnlabelledTerm => Ok(Some(policy.clone())),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn policy() -> Value {
        json!({"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
               "metadata": {"name": "p"},
               "spec": {"rules": [{"name": "a", "validate": {"deny": {}}},
                                  {"name": "b", "mutate": {}}]}})
    }

    #[test]
    fn names_follow_kyverno_results_cluster_wide_or_namespaced() {
        assert_eq!(policy_name(&policy()).as_deref(), Some("p"));
        let namespaced = json!({"apiVersion": "kyverno.io/v1", "kind": "Policy",
                                "metadata": {"name": "q", "namespace": "apps"}});
        assert_eq!(policy_name(&namespaced).as_deref(), Some("apps/q"));
        let other = json!({"apiVersion": "v1", "kind": "ClusterPolicy", "metadata": {"name": "x"}});
        assert_eq!(policy_name(&other), None);
        assert_eq!(rule_names(&policy()), ["a", "b"]);
    }

    #[test]
    fn ablations_remove_the_policy_a_rule_or_patch_it() {
        assert_eq!(
            apply_change(&policy(), &GuardChange::RemovePolicy),
            Ok(None)
        );
        let without_a = apply_change(&policy(), &GuardChange::RemoveRule("a".into()))
            .unwrap()
            .unwrap();
        assert_eq!(rule_names(&without_a), ["b"]);
        assert!(apply_change(&policy(), &GuardChange::RemoveRule("zz".into())).is_err());
        let patch = GuardChange::Patch(vec![
            json!({"op": "replace", "path": "/spec/rules/0/name", "value": "c"}),
        ]);
        let patched = apply_change(&policy(), &patch).unwrap().unwrap();
        assert_eq!(rule_names(&patched), ["c", "b"]);
        let broken = GuardChange::Patch(vec![
            json!({"op": "replace", "path": "/spec/rules/9/name", "value": "c"}),
        ]);
        assert!(apply_change(&policy(), &broken).is_err());
        let not_a_policy = GuardChange::Patch(vec![
            json!({"op": "replace", "path": "/kind", "value": "Pod"}),
        ]);
        assert!(apply_change(&policy(), &not_a_policy).is_err());
    }
}
