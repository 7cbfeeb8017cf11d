//! The guards' mutation replayed over a server-side apply, so that applying
//! a manifest as written does not read as removing what admission added;
//! and the refusal a create gets when the guards refuse it.
//!
//! A create the simulator's admission refuses (an `Enforce` guard) is
//! answered as the API server answers a webhook's denial, so a client
//! (and an admission negative control sent with `dryRun=All`) sees a
//! refusal where a real cluster with the platform's policies would give
//! one: k8s.io/apiserver `webhook/errors/statuserror.go` `ToStatusErr`
//! words it `admission webhook "NAME" denied the request: MESSAGE` and
//! raises a code below 400 to 400 (`BadRequest`), which is what Kyverno's
//! denials, carrying no code, come out as.

use std::collections::BTreeMap;

use serde_json::Value;

use drillbench_model::scenario::spec::GuardSpec;
use drillbench_policy::admission::{add_unlabelled_term, guard_matches, inject_requirement};
use drillbench_sim::Simulation;

/// The name the served simulator's guards answer under, as a webhook's.
pub(super) const WEBHOOK: &str = "guards.sim.drillbench.dev";

/// A create refused by the guards, as a webhook's denial.
pub(super) fn denied(refusal: &str) -> super::api::ApiError {
    super::api::ApiError::new(
        400,
        "BadRequest",
        format!("admission webhook \"{WEBHOOK}\" denied the request: {refusal}"),
    )
}

/// Runs the mutating guards over an applied workload's pod template, as
/// admission does on every write.
pub(super) fn readmit(sim: &Simulation, guards: &[GuardSpec], namespace: &str, object: &mut Value) {
    let Some(spec_value) = object.pointer_mut("/spec/template/spec") else {
        return;
    };
    // A quantity written as a YAML number (`cpu: 1`) is the string
    // "1" once admitted, as the API server reads it.
    for list in ["containers", "initContainers"] {
        for container in spec_value
            .get_mut(list)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            for part in ["requests", "limits"] {
                if let Some(map) = container
                    .pointer_mut(&format!("/resources/{part}"))
                    .and_then(Value::as_object_mut)
                {
                    for value in map.values_mut() {
                        if value.is_number() {
                            *value = Value::String(value.to_string());
                        }
                    }
                }
            }
        }
    }
    let Ok(mut spec) =
        serde_json::from_value::<k8s_openapi::api::core::v1::PodSpec>(spec_value.clone())
    else {
        return;
    };
    let labels: BTreeMap<String, String> = object
        .pointer("/spec/template/metadata/labels")
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    let classes = mounted_classes(sim, namespace, object, &spec);
    for guard in guards {
        if guard.mutate && guard_matches(&guard.matches, namespace, &labels, &classes) {
            inject_requirement(&mut spec, &guard.require.node_affinity);
            if guard.unlabelled_term {
                add_unlabelled_term(&mut spec);
            }
        }
    }
    if let Ok(value) = serde_json::to_value(&spec) {
        object["spec"]["template"]["spec"] = value;
    }
}

/// The storage classes a guard matches the applied object by: each claim
/// template's class as written, then the class of each existing claim a
/// `persistentVolumeClaim` volume names (the simulator gave it the default
/// class when it made it without one).
///
/// This is not [`drillbench_policy::admission::claim_classes`], which the
/// simulator's admission uses: that one also counts an ephemeral volume's
/// claim template, pushes a class (or the default) for a claim that does
/// not exist, and gives a template without a class the default class.
/// Calling it here would change which guards match in those cases.
fn mounted_classes(
    sim: &Simulation,
    namespace: &str,
    object: &Value,
    spec: &k8s_openapi::api::core::v1::PodSpec,
) -> Vec<Option<String>> {
    let mut classes: Vec<Option<String>> = object
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .map(|templates| {
            templates
                .iter()
                .map(|t| {
                    t.pointer("/spec/storageClassName")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    for volume in spec.volumes.iter().flatten() {
        if let Some(claim) = &volume.persistent_volume_claim
            && let Some(id) = sim.claim_id(namespace, &claim.claim_name)
        {
            classes.push(sim.claims()[id].class.clone());
        }
    }
    classes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::{cluster, drill_at};

    const BASELINE: &str = "platform.devantler.tech/baseline-worker";

    /// `hcloud-on-baseline`, which mutates, and a checking guard.
    fn guards() -> Vec<GuardSpec> {
        let drill = drill_at("scenarios/node-loss.yaml");
        drill.spec.guards.iter().map(|g| g.value.clone()).collect()
    }

    fn stateful_set(class: &str, cpu: Value) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "apps"},
            "spec": {
                "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}},
                             "spec": {"containers": [{"name": "c", "image": "i",
                                                      "resources": {"requests": {"cpu": cpu}}}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                          "spec": {"storageClassName": class}}]
            }
        })
    }

    fn required_keys(object: &Value) -> Vec<String> {
        object
            .pointer("/spec/template/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|t| t["matchExpressions"].as_array().cloned().unwrap_or_default())
            .filter_map(|e| e["key"].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn a_mutating_guard_that_matches_adds_its_requirement_again() {
        let cluster = cluster();
        let mut object = stateful_set("hcloud", json!("100m"));
        readmit(&cluster.sim, &guards(), "apps", &mut object);
        assert_eq!(required_keys(&object), [BASELINE]);
        // Applied once more, the requirement is not added twice.
        readmit(&cluster.sim, &guards(), "apps", &mut object);
        assert_eq!(required_keys(&object), [BASELINE]);
    }

    #[test]
    fn a_guard_that_does_not_match_leaves_the_template_alone() {
        let cluster = cluster();
        let mut object = stateful_set("longhorn", json!("100m"));
        let before = object.clone();
        readmit(&cluster.sim, &guards(), "apps", &mut object);
        assert!(required_keys(&object).is_empty());
        assert_eq!(object, before);
    }

    #[test]
    fn numeric_quantities_read_as_the_strings_the_api_server_stores() {
        let cluster = cluster();
        let mut object = stateful_set("longhorn", json!(1));
        readmit(&cluster.sim, &[], "apps", &mut object);
        assert_eq!(
            object.pointer("/spec/template/spec/containers/0/resources/requests/cpu"),
            Some(&json!("1"))
        );
    }

    /// A StatefulSet mounting an `hcloud` claim, without the baseline
    /// requirement, in `namespace`.
    fn unguarded_consumer(namespace: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "planted", "namespace": namespace},
            "spec": {
                "replicas": 1, "serviceName": "planted",
                "selector": {"matchLabels": {"app": "planted"}},
                "template": {"metadata": {"labels": {"app": "planted"}},
                             "spec": {"containers": [{"name": "c", "image": "i"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                          "spec": {"storageClassName": "hcloud",
                                                   "resources": {"requests": {"storage": "1Gi"}}}}]
            }
        })
    }

    #[test]
    fn a_create_an_enforcing_guard_refuses_is_a_webhooks_denial_and_leaves_nothing() {
        // namespace-restore's only guard: `openbao-requires-baseline`,
        // Enforce, hcloud consumers in `openbao`, no mutation.
        let drill = drill_at("scenarios/namespace-restore.yaml");
        let sim = drillbench_sim::Simulation::new(&drill, 1).expect("provisions");
        let cluster = crate::cluster::Cluster::new(&drill, sim, 100, 0);
        let workloads = cluster.sim.observation().admissions.len();
        let refusal = cluster
            .admission_refusal(&unguarded_consumer("openbao"))
            .expect("refused");
        assert!(
            refusal.starts_with(
                "guard openbao-requires-baseline refused openbao/StatefulSet/planted: "
            ),
            "{refusal}"
        );
        // Judged on a copy: the served cluster recorded nothing.
        assert_eq!(cluster.sim.observation().admissions.len(), workloads);
        let (code, status) = crate::testing::json(denied(&refusal).reply());
        assert_eq!((code, status["reason"].as_str()), (400, Some("BadRequest")));
        let body = status["message"].as_str().unwrap_or_default();
        assert!(
            body.starts_with("admission webhook \"guards.sim.drillbench.dev\" denied the request: guard openbao-requires-baseline"),
            "{body}"
        );
        // Control: outside `openbao` the guard does not match, nothing refuses.
        assert_eq!(cluster.admission_refusal(&unguarded_consumer("apps")), None);
    }

    #[test]
    fn an_object_without_a_pod_template_is_untouched() {
        let cluster = cluster();
        let mut object = json!({"kind": "ConfigMap", "data": {"cpu": 1}});
        readmit(&cluster.sim, &guards(), "apps", &mut object);
        assert_eq!(object, json!({"kind": "ConfigMap", "data": {"cpu": 1}}));
    }
}
