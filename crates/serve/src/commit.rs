//! An update's effect on the simulator: what changed between the object
//! as it stands and as the client wants it, made through the simulator's
//! primitives. A change the simulator cannot make is a 422 naming the
//! field, so a client never believes it changed what it did not.

use std::collections::BTreeMap;

use serde_json::Value;

use super::api::ApiError;
use super::cluster::Cluster;
use super::events_v1;
use super::history::strip_rv_mut;
use super::resources::Resource;
use super::status;
use super::written::{DECLARED_KINDS, RUN_DECLARED};
use drillbench_model::workload_ref::WorkloadRef;

/// Applies what changed between `current` and `wanted`, then keeps the
/// labels and annotations as written.
pub(super) fn commit(
    cluster: &mut Cluster,
    resource: &Resource,
    namespace: &str,
    name: &str,
    current: &Value,
    wanted: &Value,
) -> Result<(), ApiError> {
    let kind = resource.kind;
    let changed = |pointer: &str| current.pointer(pointer) != wanted.pointer(pointer);
    match kind {
        "Node" => {
            let node = cluster
                .sim
                .node_id(name)
                .map_err(|_| ApiError::not_found(resource, name))?;
            let map = |pointer: &str| -> Result<BTreeMap<String, String>, ApiError> {
                match wanted.pointer(pointer) {
                    None | Some(Value::Null) => Ok(BTreeMap::new()),
                    Some(v) => serde_json::from_value(v.clone())
                        .map_err(|e| ApiError::invalid(format!("metadata: {e}"))),
                }
            };
            let (l, a) = (map("/metadata/labels")?, map("/metadata/annotations")?);
            let taints: Vec<k8s_openapi::api::core::v1::Taint> =
                match wanted.pointer("/spec/taints") {
                    Some(t) if !t.is_null() => serde_json::from_value(t.clone())
                        .map_err(|e| ApiError::invalid(format!("spec.taints: {e}")))?,
                    _ => Vec::new(),
                };
            let unschedulable = wanted
                .pointer("/spec/unschedulable")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if changed("/metadata/labels") || changed("/metadata/annotations") {
                cluster.sim.set_node_metadata(node, l, a);
            }
            if changed("/spec/taints") {
                cluster.sim.set_node_taints(node, taints);
            }
            if changed("/spec/unschedulable") {
                cluster.sim.set_unschedulable(node, unschedulable);
            }
            // A node's metadata is the simulator's own.
            return Ok(());
        }
        "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
            if changed("/spec/selector") {
                return Err(ApiError::invalid(format!(
                    "{kind}.spec.selector: a workload's selector cannot change"
                )));
            }
            if changed("/spec/template") {
                let images = image_changes(current, wanted)
                    .filter(|_| kind == "Deployment")
                    .ok_or_else(|| {
                        ApiError::invalid(format!(
                            "{kind}.spec.template: the simulator models a rollout as a Deployment's new container image; other template changes are not modelled"
                        ))
                    })?;
                let key = WorkloadRef::new(namespace, kind, name).to_string();
                for (container, image) in images {
                    cluster
                        .sim
                        .rollout_workload(&key, &image, Some(&container))
                        .map_err(|e| ApiError::invalid(e.to_string()))?;
                }
            }
            if changed("/spec/replicas") {
                let replicas = replicas_of(wanted)?;
                set_replicas(cluster, namespace, kind, name, replicas)?;
            }
        }
        "PodDisruptionBudget" => {
            if changed("/spec") {
                let index = cluster
                    .sim
                    .pdb_index(namespace, name)
                    .ok_or_else(|| ApiError::not_found(resource, name))?;
                let mut object: k8s_openapi::api::policy::v1::PodDisruptionBudget =
                    serde_json::from_value(wanted.clone())
                        .map_err(|e| ApiError::invalid(e.to_string()))?;
                object.metadata.namespace = Some(namespace.to_owned());
                cluster.sim.set_pdb(index, object)?;
            }
        }
        "Namespace" => {}
        "ConfigMap" => {
            let mut object = wanted.clone();
            strip_rv_mut(&mut object);
            cluster.written.put_config_map(namespace, name, object);
        }
        kind if RUN_DECLARED.contains(&kind) => {
            let content = |o: &Value| {
                let mut o = o.clone();
                if let Some(fields) = o.as_object_mut() {
                    fields.remove("metadata");
                }
                o
            };
            if content(wanted) != content(current) {
                return Err(ApiError::invalid(format!(
                    "{kind}: the simulator runs the schedule it loaded; only labels and annotations can change here"
                )));
            }
        }
        "Event" => {
            let errors =
                events_v1::update_errors(current, wanted, namespace, events_v1::converts(resource));
            if !errors.is_empty() {
                return Err(ApiError::invalid(format!(
                    "{} \"{name}\" is invalid: {}",
                    if events_v1::converts(resource) {
                        "Event.events.k8s.io"
                    } else {
                        "Event"
                    },
                    errors.join(", ")
                )));
            }
            let mut object = wanted.clone();
            strip_rv_mut(&mut object);
            for field in ["creationTimestamp", "uid", "namespace"] {
                if let (Some(meta), Some(kept)) = (
                    object.get_mut("metadata").and_then(Value::as_object_mut),
                    current.pointer(&format!("/metadata/{field}")),
                ) {
                    meta.insert(field.to_owned(), kept.clone());
                }
            }
            cluster.events_mut().put(namespace, name, object);
        }
        kind if DECLARED_KINDS.contains(&kind) => {
            let mut object = wanted.clone();
            strip_rv_mut(&mut object);
            super::defaults::default_object(kind, &mut object);
            if kind == "Service" {
                super::cluster_ips::update(current, &mut object)?;
            }
            if kind == "PriorityClass" {
                // `ValidatePriorityClassUpdate`: value and preemptionPolicy
                // are immutable; what may change (globalDefault) reaches
                // the simulator's admission.
                let mut errors = Vec::new();
                if object.get("value") != current.get("value") {
                    errors.push("value: Forbidden: may not be changed in an update.".to_owned());
                }
                let policy = |o: &Value| o.get("preemptionPolicy").cloned().unwrap_or(Value::Null);
                if policy(&object) != policy(current) {
                    errors.push(format!(
                        "preemptionPolicy: Invalid value: {}: field is immutable",
                        policy(&object)
                    ));
                }
                if !errors.is_empty() {
                    return Err(ApiError::invalid(format!(
                        "PriorityClass.scheduling.k8s.io \"{name}\" is invalid: {}",
                        errors.join(", ")
                    )));
                }
                cluster.apply_manifest(object.clone())?;
            }
            // What the server set at creation stays as it was.
            for field in ["creationTimestamp", "uid", "namespace"] {
                if let (Some(meta), Some(kept)) = (
                    object.get_mut("metadata").and_then(Value::as_object_mut),
                    current.pointer(&format!("/metadata/{field}")),
                ) {
                    meta.insert(field.to_owned(), kept.clone());
                }
            }
            cluster
                .written
                .declare((kind, namespace.to_owned(), name.to_owned()), object);
        }
        _ => {
            if changed("/spec") {
                return Err(ApiError::invalid(format!(
                    "{kind}: only labels and annotations can change here; the simulator derives the rest"
                )));
            }
        }
    }
    cluster.written.remember_metadata(
        (resource.key, namespace.to_owned(), name.to_owned()),
        wanted,
    );
    Ok(())
}

pub(super) fn set_replicas(
    cluster: &mut Cluster,
    namespace: &str,
    kind: &str,
    name: &str,
    replicas: u32,
) -> Result<(), ApiError> {
    let w = cluster
        .sim
        .workload_id(&WorkloadRef::new(namespace, kind, name).to_string())
        .ok_or_else(|| ApiError::new(404, "NotFound", format!("no {kind} {namespace}/{name}")))?;
    cluster
        .sim
        .set_replicas(w, replicas)
        .map_err(ApiError::from)
}

/// `spec.replicas` of an object or a Scale.
pub(super) fn replicas_of(object: &Value) -> Result<u32, ApiError> {
    object
        .pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .and_then(|r| u32::try_from(r).ok())
        .ok_or_else(|| {
            ApiError::invalid("spec.replicas: Invalid value: must be a non-negative integer")
        })
}

/// The containers whose image differs between two workloads whose pod
/// templates differ in nothing else, as (container, new image); `None`
/// when anything but images changed.
fn image_changes(current: &Value, wanted: &Value) -> Option<Vec<(String, String)>> {
    let containers = "/spec/template/spec/containers";
    let mut patched = current.pointer("/spec/template")?.clone();
    // A template read back through a typed client comes with the empty
    // fields Go writes (`creationTimestamp: null`, `resources: {}`), as
    // `kubectl rollout undo` sends a ReplicaSet's: they say nothing.
    // Both sides are compared as the server stores them, defaulted: a
    // ReplicaSet's template sent back by `kubectl rollout undo` names no
    // default it did not need to.
    let mut wanted = wanted.clone();
    if let Some(template) = wanted.pointer_mut("/spec/template") {
        status::default_template_spec(template);
        prune_empty(template);
    }
    status::default_template_spec(&mut patched);
    prune_empty(&mut patched);
    let wanted = &wanted;
    let mut changes = Vec::new();
    for (have, want) in patched
        .pointer_mut("/spec/containers")?
        .as_array_mut()?
        .iter_mut()
        .zip(wanted.pointer(containers)?.as_array()?)
    {
        if have.get("name") != want.get("name") {
            return None;
        }
        if have.get("image") != want.get("image") {
            let name = want.get("name")?.as_str()?.to_owned();
            let image = want.get("image")?.as_str()?.to_owned();
            have["image"] = Value::String(image.clone());
            changes.push((name, image));
        }
    }
    (Some(&patched) == wanted.pointer("/spec/template")).then_some(changes)
}

/// Removes nulls and empty objects and lists, recursively.
fn prune_empty(value: &mut Value) {
    let empty = |v: &Value| match v {
        Value::Null => true,
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    };
    match value {
        Value::Object(map) => {
            for v in map.values_mut() {
                prune_empty(v);
            }
            map.retain(|_, v| !empty(v));
        }
        Value::Array(items) => items.iter_mut().for_each(prune_empty),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::resources::by_kind;
    use crate::testing::cluster;

    fn deployment(images: &[(&str, &str)], replicas: u32) -> Value {
        let containers: Vec<Value> = images
            .iter()
            .map(|(name, image)| json!({"name": name, "image": image}))
            .collect();
        json!({"spec": {"replicas": replicas,
                        "template": {"metadata": {"labels": {"app": "a"}},
                                     "spec": {"containers": containers}}}})
    }

    #[test]
    fn only_a_change_of_images_is_a_rollout() {
        let current = deployment(&[("web", "nginx:1"), ("side", "envoy:1")], 2);
        let wanted = deployment(&[("web", "nginx:2"), ("side", "envoy:1")], 2);
        assert_eq!(
            image_changes(&current, &wanted),
            Some(vec![("web".to_owned(), "nginx:2".to_owned())])
        );
        assert_eq!(image_changes(&current, &current), Some(Vec::new()));
        let renamed = deployment(&[("www", "nginx:2"), ("side", "envoy:1")], 2);
        assert_eq!(image_changes(&current, &renamed), None);
        let mut relabelled = wanted.clone();
        relabelled["spec"]["template"]["metadata"]["labels"]["app"] = json!("b");
        assert_eq!(image_changes(&current, &relabelled), None);
    }

    #[test]
    fn replicas_must_be_a_non_negative_integer() {
        assert_eq!(replicas_of(&json!({"spec": {"replicas": 4}})).ok(), Some(4));
        assert!(replicas_of(&json!({"spec": {"replicas": -1}})).is_err());
        assert!(replicas_of(&json!({"spec": {"replicas": "4"}})).is_err());
        assert!(replicas_of(&json!({"spec": {}})).is_err());
    }

    #[test]
    fn a_nodes_labels_and_cordon_reach_the_simulator() {
        let mut cluster = cluster();
        let nodes = by_kind("Node").expect("nodes");
        let current = cluster
            .view("Node", "", "prod-worker-2", false)
            .expect("a worker");
        let mut wanted = current.clone();
        wanted["metadata"]["labels"]["drill"] = json!("yes");
        wanted["spec"]["unschedulable"] = json!(true);
        commit(&mut cluster, nodes, "", "prod-worker-2", &current, &wanted).expect("committed");
        let after = cluster
            .view("Node", "", "prod-worker-2", false)
            .expect("a worker");
        assert_eq!(after["metadata"]["labels"]["drill"], "yes");
        assert_eq!(after["spec"]["unschedulable"], true);
    }

    #[test]
    fn a_change_the_simulator_cannot_make_is_refused_naming_the_field() {
        let mut cluster = cluster();
        let deployments = by_kind("Deployment").expect("deployments");
        let current = cluster
            .view("Deployment", "apps", "cache", false)
            .expect("cache");
        let mut wanted = current.clone();
        wanted["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
        let error = commit(
            &mut cluster,
            deployments,
            "apps",
            "cache",
            &current,
            &wanted,
        )
        .expect_err("a selector is immutable");
        let body = match error.reply() {
            super::super::api::Reply::Json(422, body) => body,
            _ => panic!("a 422"),
        };
        assert!(
            body["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("Deployment.spec.selector")),
            "{body}"
        );
        let classes = by_kind("StorageClass").expect("classes");
        let current = cluster
            .view("StorageClass", "", "longhorn", false)
            .expect("longhorn");
        let mut wanted = current.clone();
        wanted["metadata"]["labels"] = json!({"a": "b"});
        commit(&mut cluster, classes, "", "longhorn", &current, &wanted)
            .expect("labels can change on anything");
        assert_eq!(
            cluster
                .view("StorageClass", "", "longhorn", false)
                .expect("longhorn")["metadata"]["labels"],
            json!({"a": "b"})
        );
    }

    #[test]
    fn scaling_a_workload_that_does_not_exist_is_not_found() {
        let mut cluster = cluster();
        let error = set_replicas(&mut cluster, "apps", "Deployment", "nope", 1)
            .expect_err("no such workload");
        assert!(matches!(
            error.reply(),
            super::super::api::Reply::Json(404, _)
        ));
        set_replicas(&mut cluster, "apps", "Deployment", "cache", 0).expect("scaled");
        let cache = cluster
            .view("Deployment", "apps", "cache", false)
            .expect("cache");
        assert_eq!(cache["spec"]["replicas"], 0);
    }
}
