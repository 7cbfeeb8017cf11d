//! The engine's API as the simulator will call it: the in-memory cluster
//! answering API paths, the refusal message of failing Enforce rules, and a
//! background scan over existing objects.

use drillbench_kyverno::context::plural;
use drillbench_kyverno::engine::background_scan;
use drillbench_kyverno::{
    AdmissionRequest, ClusterData, Engine, InMemoryCluster, NoCluster, RuleStatus, policy,
};
use serde_json::{Value, json};

fn cluster() -> InMemoryCluster {
    InMemoryCluster::new(vec![
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "b", "namespace": "x"}, "spec": {"storageClassName": "hcloud"}}),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "a", "namespace": "x"}}),
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "hcloud"}}),
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "deny", "namespace": "x"}}),
    ])
}

#[test]
fn the_in_memory_cluster_answers_api_paths() {
    let c = cluster();
    let one = c
        .get("/api/v1/namespaces/x/persistentvolumeclaims/b")
        .unwrap();
    assert_eq!(one["spec"]["storageClassName"], "hcloud");
    let list = c
        .get("/api/v1/namespaces/x/persistentvolumeclaims")
        .unwrap();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "b"], "listed in name order");
    assert!(
        c.get("/api/v1/namespaces/y/persistentvolumeclaims/b")
            .is_err()
    );
    assert!(
        c.get("/apis/storage.k8s.io/v1/storageclasses/hcloud")
            .is_ok()
    );
    assert!(
        c.get("/apis/storage.k8s.io/v1beta1/storageclasses/hcloud")
            .is_err()
    );
    assert!(
        c.get("/apis/networking.k8s.io/v1/namespaces/x/networkpolicies/deny")
            .is_ok()
    );
    assert!(c.get("/not/an/api/path").is_err());
    assert!(NoCluster.get("/api/v1/namespaces").is_err());
    assert_eq!(plural("Ingress"), "ingresses");
    assert_eq!(plural("NetworkPolicy"), "networkpolicies");
    assert_eq!(plural("Endpoints"), "endpoints");
    assert_eq!(plural("Pod"), "pods");
}

fn require_team(action: &str, background: bool) -> policy::Policy {
    policy::from_value(&json!({
        "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "require-team"},
        "spec": {"validationFailureAction": action, "background": background, "rules": [
            {"name": "team", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
             "validate": {"message": "a team label is required", "pattern": {"metadata": {"labels": {"team": "?*"}}}}},
            {"name": "add-owner", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
             "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"+(owner)": "platform"}}}}}
        ]}
    }))
    .unwrap()
}

fn pod(labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop", "labels": labels}})
}

#[test]
fn enforce_failures_refuse_with_kyvernos_message_and_audit_ones_do_not() {
    let engine = Engine::new(&NoCluster);
    let enforce = engine.admit(
        &[require_team("Enforce", true)],
        &AdmissionRequest::create(pod(json!({}))),
    );
    let refusal = enforce.refusal().expect("refused");
    assert!(
        refusal.contains("resource Pod/shop/web was blocked due to the following policies"),
        "{refusal}"
    );
    assert!(refusal.contains("require-team:\n  team: validation error: a team label is required. rule team failed at path /metadata/labels/team/"), "{refusal}");
    assert_eq!(enforce.patched["metadata"]["labels"]["owner"], "platform");

    let audit = engine.admit(
        &[require_team("Audit", true)],
        &AdmissionRequest::create(pod(json!({}))),
    );
    assert_eq!(audit.refusal(), None);
    assert!(audit.results.iter().any(|r| r.status == RuleStatus::Fail));

    let good = engine.admit(
        &[require_team("Enforce", true)],
        &AdmissionRequest::create(pod(json!({"team": "a"}))),
    );
    assert_eq!(good.refusal(), None);
    assert!(
        good.results.iter().all(|r| r.status == RuleStatus::Pass),
        "{:?}",
        good.results
    );
}

#[test]
fn a_background_scan_runs_validate_rules_only_of_background_policies() {
    let engine = Engine::new(&NoCluster);
    let results = background_scan(&engine, &[require_team("Enforce", true)], &pod(json!({})));
    assert_eq!(results.len(), 1, "{results:?}");
    assert_eq!(
        (results[0].rule.as_str(), results[0].status),
        ("team", RuleStatus::Fail)
    );
    let none = background_scan(&engine, &[require_team("Enforce", false)], &pod(json!({})));
    assert!(none.is_empty(), "{none:?}");
}
