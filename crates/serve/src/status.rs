//! Status the real controllers write and the simulator's views leave out:
//! `metadata.generation` with the `observedGeneration` that follows it, and
//! a Deployment's `Available` and `Progressing` conditions; a pod's
//! defaulted spec fields, kubelet conditions, container statuses, QoS class
//! and IPs. Computed from
//! the view alone, so an object reads the same however often it is built,
//! and nothing here reaches the simulator or its reports.

use drillbench_model::k8s::quantity::ParsedQuantity;
use serde_json::{Map, Value, json};

/// Sets `metadata.generation` and, for the workload kinds whose
/// controller reports it, `status.observedGeneration`. The simulator acts
/// on a spec change when the write is committed, so by the time the
/// object is read its controller has observed that generation.
pub(super) fn set_generation(kind: &str, object: &mut Value, generation: i64) {
    if !matches!(kind, "Deployment" | "StatefulSet" | "DaemonSet") {
        return;
    }
    object["metadata"]["generation"] = json!(generation);
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        status.insert("observedGeneration".to_owned(), json!(generation));
    }
}

/// The conditions the deployment controller writes into a Deployment's
/// status, from its replica counts: `Available` as `calculateStatus` in
/// `pkg/controller/deployment/sync.go` sets it (true when at least
/// `replicas - maxUnavailable` pods are available), `Progressing` as
/// `syncRolloutStatus` in `progress.go` sets it (`NewReplicaSetAvailable`
/// once the rollout is complete, `ReplicaSetUpdated` while it is not).
/// The simulator folds the ReplicaSet into its Deployment, so the
/// ReplicaSet named is the Deployment's name, as its pods' owner is.
pub(super) fn deployment_conditions(object: &mut Value) {
    let count = |pointer: &str| object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0);
    let wanted = count("/spec/replicas");
    let replicas = count("/status/replicas");
    let updated = count("/status/updatedReplicas");
    let available = count("/status/availableReplicas");
    let observed = count("/status/observedGeneration");
    let generation = count("/metadata/generation");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let min_available = wanted - max_unavailable(object.get("spec"), wanted);
    let available_condition = if available >= min_available {
        condition(
            "Available",
            true,
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
    } else {
        condition(
            "Available",
            false,
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.",
        )
    };
    // `DeploymentComplete` in `pkg/controller/deployment/util`.
    let complete =
        updated == wanted && replicas == wanted && available == wanted && observed >= generation;
    let progressing_condition = if complete {
        condition(
            "Progressing",
            true,
            "NewReplicaSetAvailable",
            &format!("ReplicaSet \"{name}\" has successfully progressed."),
        )
    } else {
        condition(
            "Progressing",
            true,
            "ReplicaSetUpdated",
            &format!("ReplicaSet \"{name}\" is progressing."),
        )
    };
    if let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) {
        // A `ReplicaFailure` the view carries (its ReplicaSet's pods
        // refused) stays, after the two computed here.
        let failure = status
            .get("conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|c| c["type"] == "ReplicaFailure")
            .cloned();
        let conditions: Vec<Value> = [available_condition, progressing_condition]
            .into_iter()
            .chain(failure)
            .collect();
        status.insert("conditions".to_owned(), json!(conditions));
    }
}

fn condition(kind: &str, status: bool, reason: &str, message: &str) -> Value {
    json!({
        "type": kind,
        "status": if status { "True" } else { "False" },
        "reason": reason,
        "message": message,
    })
}

/// `MaxUnavailable` of `pkg/controller/deployment/util`: zero for a
/// `Recreate` Deployment or one of no replicas; otherwise the strategy's
/// `maxUnavailable` (default `25%`, rounded down) resolved against
/// `maxSurge` (default `25%`, rounded up) so that both are never zero
/// (`ResolveFenceposts`), and at most the replicas.
fn max_unavailable(spec: Option<&Value>, replicas: i64) -> i64 {
    let strategy = spec.and_then(|s| s.get("strategy"));
    let recreate = strategy.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("Recreate");
    if recreate || replicas <= 0 {
        return 0;
    }
    let field = |name: &str| strategy.and_then(|s| s.pointer(&format!("/rollingUpdate/{name}")));
    let surge = scaled(field("maxSurge"), replicas, true);
    let mut unavailable = scaled(field("maxUnavailable"), replicas, false);
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    unavailable.min(replicas)
}

/// An int-or-percent against `total` (`intstr.GetScaledValueFromIntOrPercent`);
/// absent is the default `25%`.
fn scaled(value: Option<&Value>, total: i64, round_up: bool) -> i64 {
    let percent = match value {
        Some(Value::Number(n)) => return n.as_i64().unwrap_or(0).max(0),
        Some(Value::String(s)) => s
            .strip_suffix('%')
            .and_then(|p| p.parse::<i64>().ok())
            .unwrap_or(25),
        _ => 25,
    };
    let product = percent.saturating_mul(total);
    if round_up {
        (product + 99) / 100
    } else {
        product / 100
    }
}

/// A pod as the API server defaults it and the kubelet reports it.
pub(super) fn pod(object: &mut Value) {
    default_pod_spec(object);
    let qos = object.get("spec").map_or("BestEffort", qos_class);
    let scheduled = object
        .pointer("/spec/nodeName")
        .is_some_and(|n| n.is_string());
    let phase = object
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let ready = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    let creating =
        object.pointer("/status/reason").and_then(Value::as_str) == Some("ContainerCreating");
    let started_at = object.pointer("/status/startTime").cloned();
    let containers: Vec<(Value, Value)> = object
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| (c["name"].clone(), c["image"].clone()))
                .collect()
        })
        .unwrap_or_default();
    let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    status.insert("qosClass".to_owned(), json!(qos));
    if let Some(ip) = status.get("podIP").cloned().filter(Value::is_string) {
        status.insert("podIPs".to_owned(), json!([{"ip": ip}]));
    }
    let scheduled_condition = status
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled").cloned());
    let mut conditions = Vec::new();
    if scheduled {
        let succeeded = phase == "Succeeded";
        let names: Vec<&str> = containers.iter().filter_map(|(n, _)| n.as_str()).collect();
        let not_ready = |kind: &str| {
            if ready {
                json!({"type": kind, "status": "True"})
            } else if succeeded {
                json!({"type": kind, "status": "False", "reason": "PodCompleted"})
            } else {
                json!({"type": kind, "status": "False", "reason": "ContainersNotReady",
                       "message": format!("containers with unready status: [{}]", names.join(" "))})
            }
        };
        conditions.push(json!({"type": "Initialized", "status": "True"}));
        conditions.push(not_ready("Ready"));
        conditions.push(not_ready("ContainersReady"));
        let statuses: Vec<Value> = containers
            .iter()
            .map(|(name, image)| {
                let mut state = Map::new();
                if succeeded {
                    state.insert(
                        "terminated".to_owned(),
                        json!({"exitCode": 0, "reason": "Completed", "startedAt": started_at}),
                    );
                } else if creating {
                    state.insert("waiting".to_owned(), json!({"reason": "ContainerCreating"}));
                } else {
                    state.insert("running".to_owned(), json!({"startedAt": started_at}));
                }
                json!({
                    "name": name, "image": image, "imageID": "",
                    "ready": ready, "started": !creating && !succeeded,
                    "restartCount": 0, "state": state,
                })
            })
            .collect();
        status.insert("containerStatuses".to_owned(), json!(statuses));
    }
    conditions.extend(scheduled_condition);
    status.insert("conditions".to_owned(), json!(conditions));
}

/// The fields the API server defaults in every pod's spec
/// (`pkg/apis/core/v1/defaults.go`: `SetDefaults_PodSpec`, and
/// `SetDefaults_Container` for each container and init container), where
/// the manifest left them out. `enableServiceLinks` is `SetDefaults_Pod`'s,
/// so it appears on pods and not in workloads' templates.
fn default_pod_spec(object: &mut Value) {
    default_template_spec(object);
    if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
        spec.entry("enableServiceLinks").or_insert(json!(true));
    }
}

/// `SetDefaults_PodSpec` and `SetDefaults_Container` over the `spec` of a
/// pod or a pod template.
pub(super) fn default_template_spec(object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for (field, value) in [
        ("restartPolicy", json!("Always")),
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("securityContext", json!({})),
    ] {
        spec.entry(field).or_insert(value);
    }
    for list in ["containers", "initContainers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let policy = image_pull_policy(
                container
                    .get("image")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            );
            container.entry("imagePullPolicy").or_insert(json!(policy));
            container
                .entry("terminationMessagePath")
                .or_insert(json!("/dev/termination-log"));
            container
                .entry("terminationMessagePolicy")
                .or_insert(json!("File"));
        }
    }
}

/// `SetDefaults_Container`'s pull policy: `Always` for the `latest` tag,
/// which an image with neither tag nor digest has (`parsers.ParseImageName`),
/// `IfNotPresent` otherwise.
fn image_pull_policy(image: &str) -> &'static str {
    let (name, digested) = match image.split_once('@') {
        Some((name, _)) => (name, true),
        None => (image, false),
    };
    // A tag follows the last colon after the last slash; a colon before
    // it belongs to a registry's port.
    let last_part = name.rsplit('/').next().unwrap_or(name);
    match last_part.split_once(':') {
        Some((_, "latest")) => "Always",
        Some(_) => "IfNotPresent",
        None if digested => "IfNotPresent",
        None => "Always",
    }
}

/// The fields the API server defaults in a workload's spec, where the
/// object left them out (`pkg/apis/apps/v1/defaults.go`:
/// `SetDefaults_Deployment`, `SetDefaults_StatefulSet`,
/// `SetDefaults_DaemonSet`, `SetDefaults_ReplicaSet` (nothing the
/// simulator's view leaves out); `pkg/apis/batch/v1/defaults.go`:
/// `SetDefaults_Job`), and in its pod template. The simulator's view
/// carries what it models (replicas, strategy, pod management); the rest
/// is what a real server would show for a manifest that did not set it.
pub(super) fn default_workload(kind: &str, object: &mut Value) {
    let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let defaults = match kind {
        "Deployment" => vec![
            ("revisionHistoryLimit", json!(10)),
            ("progressDeadlineSeconds", json!(600)),
        ],
        "StatefulSet" => vec![
            (
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            ),
            // `StatefulSetAutoDeletePVC`, GA since 1.32.
            (
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            ),
            ("revisionHistoryLimit", json!(10)),
        ],
        "DaemonSet" => vec![
            (
                "updateStrategy",
                json!({"type": "RollingUpdate",
                       "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            ),
            ("revisionHistoryLimit", json!(10)),
        ],
        "ReplicaSet" => Vec::new(),
        "Job" => {
            let backoff = if spec.contains_key("backoffLimitPerIndex") {
                i32::MAX
            } else {
                6
            };
            // `JobPodReplacementPolicy`, GA since 1.34.
            let replacement = if spec.contains_key("podFailurePolicy") {
                "Failed"
            } else {
                "TerminatingOrFailed"
            };
            vec![
                ("backoffLimit", json!(backoff)),
                ("completionMode", json!("NonIndexed")),
                ("suspend", json!(false)),
                ("podReplacementPolicy", json!(replacement)),
            ]
        }
        _ => return,
    };
    for (field, value) in defaults {
        spec.entry(field).or_insert(value);
    }
    if let Some(template) = spec.get_mut("template") {
        default_template_spec(template);
    }
}

/// The pod's quality-of-service class, as "Pod Quality of Service
/// Classes" (kubernetes.io/docs/concepts/workloads/pods/pod-qos/) and
/// `ComputePodQOS` in `pkg/apis/core/helper/qos` define it over CPU and
/// memory of every container and init container: `Guaranteed` when each
/// has limits for both and requests equal to them (a request left out
/// is defaulted to its limit); `BestEffort` when none has any request or
/// limit; `Burstable` otherwise.
fn qos_class(spec: &Value) -> &'static str {
    let containers = ["containers", "initContainers"]
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten();
    let mut any = false;
    let mut guaranteed = true;
    for container in containers {
        let resources = container.get("resources");
        let amount = |kind: &str, resource: &str| {
            resources
                .and_then(|r| r.get(kind))
                .and_then(|r| r.get(resource))
                .and_then(Value::as_str)
                .and_then(|q| q.parse::<ParsedQuantity>().ok())
                .map(|q| q.nanos())
                .filter(|&n| n > 0)
        };
        for resource in ["cpu", "memory"] {
            let limit = amount("limits", resource);
            let request = amount("requests", resource).or(limit);
            any |= limit.is_some() || request.is_some();
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(wanted: i64, replicas: i64, updated: i64, available: i64) -> Value {
        json!({
            "metadata": {"name": "web", "generation": 1},
            "spec": {"replicas": wanted},
            "status": {"replicas": replicas, "updatedReplicas": updated,
                       "availableReplicas": available, "observedGeneration": 1},
        })
    }

    fn conditions(mut object: Value) -> Vec<(String, String, String)> {
        deployment_conditions(&mut object);
        object["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|c| {
                (
                    c["type"].as_str().unwrap_or_default().to_owned(),
                    c["status"].as_str().unwrap_or_default().to_owned(),
                    c["reason"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    fn triple(kind: &str, status: &str, reason: &str) -> (String, String, String) {
        (kind.to_owned(), status.to_owned(), reason.to_owned())
    }

    // pkg/controller/deployment/sync.go (calculateStatus) and progress.go
    // (syncRolloutStatus); the condition types and reasons are those of
    // pkg/controller/deployment/util/deployment_util.go.
    #[test]
    fn a_deployment_with_all_replicas_available_is_available_and_complete() {
        assert_eq!(
            conditions(deployment(4, 4, 4, 4)),
            [
                triple("Available", "True", "MinimumReplicasAvailable"),
                triple("Progressing", "True", "NewReplicaSetAvailable"),
            ]
        );
    }

    #[test]
    fn below_replicas_minus_max_unavailable_it_is_unavailable_and_progressing() {
        // 4 replicas, default maxUnavailable 25% → 1: 3 available is
        // enough, 2 is not.
        assert_eq!(
            conditions(deployment(4, 4, 4, 3))[0],
            triple("Available", "True", "MinimumReplicasAvailable")
        );
        assert_eq!(
            conditions(deployment(4, 4, 4, 2)),
            [
                triple("Available", "False", "MinimumReplicasUnavailable"),
                triple("Progressing", "True", "ReplicaSetUpdated"),
            ]
        );
    }

    #[test]
    fn an_unobserved_generation_is_not_complete() {
        let mut object = deployment(2, 2, 2, 2);
        object["metadata"]["generation"] = json!(2);
        assert_eq!(
            conditions(object)[1],
            triple("Progressing", "True", "ReplicaSetUpdated")
        );
    }

    #[test]
    fn max_unavailable_resolves_as_the_deployment_util_does() {
        // Defaults: 25% of 2 rounds down to 0, surge rounds up to 1.
        assert_eq!(max_unavailable(None, 2), 0);
        assert_eq!(max_unavailable(None, 4), 1);
        assert_eq!(max_unavailable(None, 0), 0);
        let spec = |surge: Value, unavailable: Value| {
            json!({"strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}})
        };
        // Both zero: unavailable becomes 1 (ResolveFenceposts).
        assert_eq!(max_unavailable(Some(&spec(json!(0), json!(0))), 3), 1);
        assert_eq!(max_unavailable(Some(&spec(json!(1), json!("50%"))), 3), 1);
        // At most the replicas.
        assert_eq!(max_unavailable(Some(&spec(json!(1), json!(9))), 3), 3);
        let recreate = json!({"strategy": {"type": "Recreate"}});
        assert_eq!(max_unavailable(Some(&recreate), 3), 0);
    }

    fn pod(spec: Value, status: Value) -> Value {
        let mut object = json!({"metadata": {"name": "p"}, "spec": spec, "status": status});
        super::pod(&mut object);
        object
    }

    fn resources(requests: Value, limits: Value) -> Value {
        json!({"containers": [{"name": "a", "image": "i", "resources": {"requests": requests, "limits": limits}}]})
    }

    // kubernetes.io/docs/concepts/workloads/pods/pod-qos/ (and
    // ComputePodQOS, pkg/apis/core/helper/qos).
    #[test]
    fn the_qos_class_is_computed_from_cpu_and_memory_requests_and_limits() {
        let both = json!({"cpu": "500m", "memory": "128Mi"});
        assert_eq!(
            qos_class(&resources(both.clone(), both.clone())),
            "Guaranteed"
        );
        // A request left out is defaulted to its limit.
        assert_eq!(qos_class(&resources(json!({}), both.clone())), "Guaranteed");
        // Equal in another unit is equal.
        assert_eq!(
            qos_class(&resources(
                json!({"cpu": "0.5", "memory": "128Mi"}),
                both.clone()
            )),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&resources(
                json!({"cpu": "250m", "memory": "128Mi"}),
                both.clone()
            )),
            "Burstable"
        );
        assert_eq!(
            qos_class(&resources(json!({"cpu": "10m"}), json!({}))),
            "Burstable"
        );
        // Limits for CPU only are not enough for Guaranteed.
        assert_eq!(
            qos_class(&resources(json!({}), json!({"cpu": "1"}))),
            "Burstable"
        );
        assert_eq!(qos_class(&resources(json!({}), json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&json!({"containers": [{"name": "a"}]})),
            "BestEffort"
        );
        // Every container counts, init containers too.
        let mut mixed = resources(both.clone(), both);
        mixed["initContainers"] = json!([{"name": "init"}]);
        assert_eq!(qos_class(&mixed), "Burstable");
    }

    // SetDefaults_PodSpec, pkg/apis/core/v1/defaults.go; the API
    // reference's defaults for PodSpec.
    #[test]
    fn a_pod_spec_is_defaulted_where_the_manifest_left_fields_out() {
        let object = pod(json!({"containers": []}), json!({"phase": "Pending"}));
        assert_eq!(object["spec"]["restartPolicy"], "Always");
        assert_eq!(object["spec"]["dnsPolicy"], "ClusterFirst");
        assert_eq!(object["spec"]["schedulerName"], "default-scheduler");
        assert_eq!(object["spec"]["terminationGracePeriodSeconds"], 30);
        // Control: what the manifest says stays.
        let object = pod(
            json!({"containers": [], "restartPolicy": "Never", "terminationGracePeriodSeconds": 5}),
            json!({}),
        );
        assert_eq!(object["spec"]["restartPolicy"], "Never");
        assert_eq!(object["spec"]["terminationGracePeriodSeconds"], 5);
    }

    // The kubelet's pod conditions (kubernetes.io/docs/concepts/workloads/
    // pods/pod-lifecycle/#pod-conditions) and container states.
    #[test]
    fn a_ready_pod_has_the_kubelets_conditions_and_running_containers() {
        let object = pod(
            json!({"nodeName": "n1", "containers": [{"name": "web", "image": "nginx:1.29"}]}),
            json!({"phase": "Running", "podIP": "10.244.0.2", "startTime": "2026-01-01T00:00:00Z",
                   "conditions": [{"type": "Ready", "status": "True"},
                                  {"type": "PodScheduled", "status": "True"}]}),
        );
        let types: Vec<(&str, &str)> = object["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|c| {
                (
                    c["type"].as_str().unwrap_or_default(),
                    c["status"].as_str().unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(
            types,
            [
                ("Initialized", "True"),
                ("Ready", "True"),
                ("ContainersReady", "True"),
                ("PodScheduled", "True")
            ]
        );
        let web = &object["status"]["containerStatuses"][0];
        assert_eq!(web["name"], "web");
        assert_eq!(web["image"], "nginx:1.29");
        assert_eq!(web["ready"], true);
        assert_eq!(web["started"], true);
        assert_eq!(web["restartCount"], 0);
        assert_eq!(web["state"]["running"]["startedAt"], "2026-01-01T00:00:00Z");
        assert_eq!(object["status"]["podIPs"], json!([{"ip": "10.244.0.2"}]));
        assert_eq!(object["status"]["qosClass"], "BestEffort");
    }

    #[test]
    fn a_pod_not_ready_or_not_scheduled_says_so() {
        let starting = pod(
            json!({"nodeName": "n1", "containers": [{"name": "a"}, {"name": "b"}]}),
            json!({"phase": "Running", "reason": "ContainerCreating",
                   "conditions": [{"type": "Ready", "status": "False"}]}),
        );
        let ready = &starting["status"]["conditions"][1];
        assert_eq!(ready["type"], "Ready");
        assert_eq!(ready["status"], "False");
        assert_eq!(ready["reason"], "ContainersNotReady");
        assert_eq!(ready["message"], "containers with unready status: [a b]");
        let a = &starting["status"]["containerStatuses"][0];
        assert_eq!(a["state"]["waiting"]["reason"], "ContainerCreating");
        assert_eq!(a["started"], false);
        // Unscheduled: the scheduler's condition only, no containers.
        let pending = pod(
            json!({"containers": [{"name": "a"}]}),
            json!({"phase": "Pending", "conditions": [
                {"type": "Ready", "status": "False"},
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}),
        );
        assert_eq!(
            pending["status"]["conditions"],
            json!([{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}])
        );
        assert!(pending["status"].get("containerStatuses").is_none());
        assert!(pending["status"].get("podIPs").is_none());
        let done = pod(
            json!({"nodeName": "n1", "containers": [{"name": "a"}]}),
            json!({"phase": "Succeeded", "conditions": [{"type": "Ready", "status": "False"}]}),
        );
        assert_eq!(done["status"]["conditions"][1]["reason"], "PodCompleted");
        assert_eq!(
            done["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            0
        );
    }

    #[test]
    fn generation_is_set_on_the_workload_kinds_and_observed_by_their_status() {
        let mut object = json!({"metadata": {}, "status": {"replicas": 1}});
        set_generation("StatefulSet", &mut object, 3);
        assert_eq!(object["metadata"]["generation"], 3);
        assert_eq!(object["status"]["observedGeneration"], 3);
        let mut pod = json!({"metadata": {}, "status": {}});
        set_generation("Pod", &mut pod, 3);
        assert!(pod["metadata"].get("generation").is_none());
    }

    // pkg/apis/core/v1/defaults.go `SetDefaults_Container` with
    // `parsers.ParseImageName`: no tag and no digest is `latest`.
    #[test]
    fn the_pull_policy_follows_the_images_tag() {
        for (image, policy) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("registry.local:5000/team/nginx", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry.local:5000/team/nginx:1.27", "IfNotPresent"),
            ("nginx@sha256:0123", "IfNotPresent"),
            ("nginx:latest@sha256:0123", "Always"),
        ] {
            assert_eq!(image_pull_policy(image), policy, "{image}");
        }
    }

    // pkg/apis/apps/v1/defaults.go `SetDefaults_Deployment` and
    // core/v1 `SetDefaults_PodSpec` over its template; control: what the
    // manifest set is kept.
    #[test]
    fn a_workload_and_its_template_get_the_servers_defaults() {
        let mut object = json!({"spec": {
            "replicas": 2,
            "revisionHistoryLimit": 3,
            "template": {"spec": {
                "terminationGracePeriodSeconds": 5,
                "containers": [{"name": "c", "image": "nginx:1.27"}],
            }},
        }});
        default_workload("Deployment", &mut object);
        let spec = &object["spec"];
        assert_eq!(spec["progressDeadlineSeconds"], 600);
        assert_eq!(spec["revisionHistoryLimit"], 3, "kept");
        let template = &spec["template"]["spec"];
        assert_eq!(template["terminationGracePeriodSeconds"], 5, "kept");
        assert_eq!(template["dnsPolicy"], "ClusterFirst");
        assert_eq!(template["restartPolicy"], "Always");
        assert_eq!(template["securityContext"], json!({}));
        assert!(template.get("enableServiceLinks").is_none(), "pods only");
        let container = &template["containers"][0];
        assert_eq!(container["imagePullPolicy"], "IfNotPresent");
        assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(container["terminationMessagePolicy"], "File");
    }

    // apps/v1 `SetDefaults_StatefulSet`, `SetDefaults_DaemonSet`; batch/v1
    // `SetDefaults_Job` (a per-index backoff limit raises the global one).
    #[test]
    fn each_workload_kind_gets_its_own_defaults() {
        let defaulted = |kind: &str, spec: Value| {
            let mut object = json!({ "spec": spec });
            default_workload(kind, &mut object);
            object["spec"].clone()
        };
        let sts = defaulted("StatefulSet", json!({}));
        assert_eq!(sts["updateStrategy"]["rollingUpdate"]["partition"], 0);
        assert_eq!(
            sts["persistentVolumeClaimRetentionPolicy"]["whenScaled"],
            "Retain"
        );
        let ds = defaulted("DaemonSet", json!({}));
        assert_eq!(ds["updateStrategy"]["rollingUpdate"]["maxUnavailable"], 1);
        assert_eq!(ds["updateStrategy"]["rollingUpdate"]["maxSurge"], 0);
        let job = defaulted("Job", json!({}));
        assert_eq!(job["backoffLimit"], 6);
        assert_eq!(job["completionMode"], "NonIndexed");
        assert_eq!(job["podReplacementPolicy"], "TerminatingOrFailed");
        let per_index = defaulted(
            "Job",
            json!({"backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": []}}),
        );
        assert_eq!(per_index["backoffLimit"], i32::MAX);
        assert_eq!(per_index["podReplacementPolicy"], "Failed");
        // Control: other kinds are left alone.
        assert_eq!(defaulted("ConfigMap", json!({})), json!({}));
    }
}
