//! The drill's guards on a cluster that does not run them.
//!
//! In production the guards are admission policies (Kyverno mutates every
//! `hcloud` consumer to require a baseline worker). A kind or Talos cluster
//! the bench builds has no policy engine, so the bench admits each workload
//! itself before applying it, with the same rule the simulator uses
//! ([`drillbench_policy::admission`]):
//! the pods then carry exactly the affinity they would carry in production,
//! and an `Enforce` guard's refusal is a refusal here too. A served
//! simulator and an existing cluster admit on their own and are left alone.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use serde_json::Value;

use drillbench_kyverno::RuleStatus;
use drillbench_model::drill::Drill;
use drillbench_policy::admission::{GuardDecision, admit, claim_classes};
use drillbench_policy::kyverno_admission::{ManifestCluster, admit_template, reportable};

/// Where a kind keeps its pod template, as a JSON pointer.
fn template_pointer(kind: &str) -> Option<&'static str> {
    match kind {
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => Some("/spec/template"),
        "CronJob" => Some("/spec/jobTemplate/spec/template"),
        _ => None,
    }
}

/// Admits one object of the drill: mutates its pod template in place and
/// returns the guards' verdicts on it (an empty list when nothing broke a
/// rule, or the object has no pod template).
pub fn admit_object(drill: &Drill, object: &mut Value) -> Vec<GuardDecision> {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let Some(pointer) = template_pointer(&kind) else {
        return Vec::new();
    };
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    let claim_template_classes: Vec<Option<String>> = object
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            t.pointer("/spec/storageClassName")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    let Some(template) = object.pointer_mut(pointer) else {
        return Vec::new();
    };
    let labels: BTreeMap<String, String> = template
        .pointer("/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    let Some(spec_value) = template.get_mut("spec") else {
        return Vec::new();
    };
    // A template the API would reject is the API's to reject; applying it
    // unchanged lets the cluster say why.
    let Ok(mut spec) = serde_json::from_value::<PodSpec>(spec_value.clone()) else {
        return Vec::new();
    };
    let default_class = drill
        .topology
        .storage_classes
        .iter()
        .find(|c| c.default)
        .map(|c| c.name.as_str());
    let classes = claim_classes(
        claim_template_classes,
        &spec,
        |claim| claim_class(drill, &namespace, claim),
        default_class,
    );
    let guards: Vec<_> = drill.spec.guards.iter().map(|g| g.value.clone()).collect();
    let mut decisions = admit(&guards, &namespace, &labels, &classes, &mut spec);
    if let Ok(admitted) = serde_json::to_value(&spec) {
        *spec_value = admitted;
    }
    decisions.extend(admit_policies(drill, default_class, object));
    decisions
}

/// The drill's Kyverno policies, emulated like the guards (the same
/// engine and the same Pod the simulator submits): the template takes
/// their mutations, and their failures, errors and rules not evaluated are
/// the verdicts. A policy that does not read was refused when the drill
/// was loaded on the simulator; here it is skipped.
fn admit_policies(
    drill: &Drill,
    default_class: Option<&str>,
    object: &mut Value,
) -> Vec<GuardDecision> {
    if drill.policies.is_empty() {
        return Vec::new();
    }
    let policies: Vec<_> = drill
        .policies
        .iter()
        .filter_map(|d| drillbench_kyverno::policy::from_document(d).ok())
        .collect();
    let cluster = ManifestCluster::new(&drill.workloads, default_class);
    let Some(judged) = admit_template(&policies, &cluster, object) else {
        return Vec::new();
    };
    judged
        .results
        .iter()
        .filter(|r| reportable(r))
        .map(|r| GuardDecision {
            guard: format!("{}/{}", r.policy, r.rule),
            refused: r.status == RuleStatus::Fail
                && r.failure_action == Some(drillbench_kyverno::FailureAction::Enforce),
            reason: r.message.trim().to_owned(),
        })
        .collect()
}

/// The class of a standalone claim the drill deploys, if it names one.
fn claim_class(drill: &Drill, namespace: &str, name: &str) -> Option<String> {
    drill
        .workloads
        .iter()
        .find(|d| {
            d.value.get("kind").and_then(Value::as_str) == Some("PersistentVolumeClaim")
                && d.value.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
                && d.value
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("default")
                    == namespace
        })
        .and_then(|d| d.value.pointer("/spec/storageClassName"))
        .and_then(Value::as_str)
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drill() -> Drill {
        Drill::load(&drillbench_model::test_support::repo_file(
            "scenarios/autoscaler-scale-down.yaml",
        ))
        .expect("a built-in drill")
    }

    fn workload(drill: &Drill, key: &str) -> Value {
        drill
            .workloads
            .iter()
            .find(|d| {
                drillbench_model::workload_ref::WorkloadRef::of_object(&d.value).to_string() == key
            })
            .map(|d| d.value.clone())
            .unwrap_or_else(|| panic!("{key} in the drill"))
    }

    fn required_terms(object: &Value, pointer: &str) -> Value {
        object
            .pointer(&format!(
                "{pointer}/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"
            ))
            .cloned()
            .unwrap_or(Value::Null)
    }

    #[test]
    fn an_hcloud_consumer_is_pinned_to_baseline_workers_as_in_production() {
        let drill = drill();
        let mut shard = workload(&drill, "observability/StatefulSet/coroot-clickhouse-shard");
        let decisions = admit_object(&drill, &mut shard);
        assert!(decisions.is_empty(), "{decisions:?}");
        let terms = required_terms(&shard, "/spec/template");
        let terms = terms.as_array().expect("required terms after admission");
        assert!(!terms.is_empty());
        for term in terms {
            assert!(
                term["matchExpressions"]
                    .as_array()
                    .expect("expressions")
                    .iter()
                    .any(|e| e["key"] == "platform.devantler.tech/baseline-worker"
                        && e["operator"] == "In"
                        && e["values"] == serde_json::json!(["true"])),
                "{term}"
            );
        }
    }

    #[test]
    fn a_stateless_workload_is_left_as_written() {
        let drill = drill();
        let original = workload(&drill, "apps/Deployment/web");
        let mut web = original.clone();
        assert!(admit_object(&drill, &mut web).is_empty());
        assert_eq!(
            required_terms(&web, "/spec/template"),
            required_terms(&original, "/spec/template")
        );
    }

    #[test]
    fn an_enforcing_guard_refuses_what_it_cannot_mutate() {
        let mut drill = drill();
        // The guard policy without its two mutations: only the check is left.
        for doc in std::sync::Arc::make_mut(&mut drill.policies) {
            if let Some(rules) = doc
                .value
                .pointer_mut("/spec/rules")
                .and_then(Value::as_array_mut)
            {
                rules.retain(|r| r["name"] == "require-baseline-worker-affinity");
            }
        }
        let mut shard = workload(&drill, "observability/StatefulSet/coroot-clickhouse-shard");
        let decisions = admit_object(&drill, &mut shard);
        assert!(
            decisions.iter().any(|d| d.refused
                && d.guard
                    == "hcloud-consumers-on-baseline-workers/require-baseline-worker-affinity"),
            "{decisions:?}"
        );
    }
}
