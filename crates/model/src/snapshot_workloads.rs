//! A snapshot's workloads: the live controllers, as objects a drill deploys,
//! and where each of their pods runs now, so the drill starts from
//! production as it is instead of from a fresh schedule.
//!
//! Controllers are kept as the API server returned them, minus what the
//! server and the controllers wrote (`status`, `uid`, `resourceVersion`,
//! `generation`, timestamps, owner references, revision annotations): the
//! simulator is their controller now. Pods are not deployed as objects;
//! each is a placement of its controller's pod (a StatefulSet's by
//! ordinal, others in the snapshot's order), which the simulator honours
//! once, when it first creates the controller's pods.
//!
//! What is left out, and why:
//! - Nodes, PersistentVolumes, VolumeAttachments, CSINodes, Leases: the
//!   cluster's state, which the topology and the simulator make themselves.
//! - ReplicaSets owned by a Deployment and Jobs owned by a CronJob: their
//!   owner makes them again.
//! - Secrets and ConfigMaps: a snapshot holds only their names.
//! - Pods owned by a controller the bench does not simulate (an operator's
//!   custom resource, a Node for a static pod): listed as not simulated.
//!   A pod with no owner at all (a bare pod) is kept as a bare pod, on its
//!   node, and like any bare pod is never replaced.
//!
//! Every other object (HelmReleases, Velero schedules, custom resources) is
//! deployed as it is, so the report lists it as not simulated.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::snapshot::ClusterSnapshot;
use crate::workload_ref::WorkloadRef;

/// Kinds that are cluster state, not workloads (see the module doc).
const STATE_KINDS: [&str; 9] = [
    "Node",
    "PersistentVolume",
    "VolumeAttachment",
    "CSINode",
    "Lease",
    "Secret",
    "ConfigMap",
    "Event",
    "ControllerRevision",
];

/// Metadata the API server or a controller writes.
const SERVER_METADATA: [&str; 8] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "selfLink",
    "managedFields",
    "ownerReferences",
];

/// Annotations a controller or `kubectl apply` writes.
const SERVER_ANNOTATIONS: [&str; 2] = [
    "deployment.kubernetes.io/revision",
    "kubectl.kubernetes.io/last-applied-configuration",
];

/// Where one captured pod runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedPod {
    /// The pod's name in the snapshot.
    pub pod: String,
    /// A StatefulSet pod's ordinal.
    pub ordinal: Option<u32>,
    /// The node it runs on.
    pub node: String,
}

/// The captured pods of each workload, by `namespace/Kind/name`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placements {
    pub by_workload: BTreeMap<String, Vec<CapturedPod>>,
}

impl Placements {
    /// Every node a pod was captured on.
    pub fn nodes(&self) -> BTreeSet<&str> {
        self.by_workload
            .values()
            .flatten()
            .map(|p| p.node.as_str())
            .collect()
    }
}

/// A captured pod the drill does not simulate, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsimulatedPod {
    pub namespace: String,
    pub name: String,
    /// `Kind/name` of the owner the bench does not simulate.
    pub owner: String,
}

/// A snapshot's workloads.
#[derive(Debug, Clone, Default)]
pub struct SnapshotWorkloads {
    /// The objects to deploy, each with its index in `items`.
    pub objects: Vec<(usize, Value)>,
    pub placements: Placements,
    pub unsimulated: Vec<UnsimulatedPod>,
}

fn text<'a>(item: &'a Value, pointer: &str) -> &'a str {
    item.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The controller that owns an object (`ownerReferences[controller=true]`,
/// or the only owner): (kind, name).
fn owner(item: &Value) -> Option<(&str, &str)> {
    let owners = item.pointer("/metadata/ownerReferences")?.as_array()?;
    let chosen = owners
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
        .or(owners.first())?;
    Some((text(chosen, "/kind"), text(chosen, "/name")))
}

/// The object without what the server and controllers wrote.
fn clean(mut object: Value) -> Value {
    // A Job keeps how many of its pods succeeded: a Job that finished on
    // the cluster must not run again on its snapshot.
    let succeeded = (object.get("kind").and_then(Value::as_str) == Some("Job"))
        .then(|| object.pointer("/status/succeeded").cloned())
        .flatten();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(succeeded) = succeeded {
            map.insert(
                "status".to_owned(),
                serde_json::json!({"succeeded": succeeded}),
            );
        }
    }
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in SERVER_METADATA {
            meta.remove(key);
        }
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            for key in SERVER_ANNOTATIONS {
                annotations.remove(key);
            }
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    // A captured bare pod runs where its placement says, like every other
    // captured pod; its `nodeName` would bypass the scheduler for good,
    // and a missing node would leave it unschedulable without a word.
    if object.get("kind").and_then(Value::as_str) == Some("Pod")
        && let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.remove("nodeName");
    }
    object
}

/// The workloads and placements of a snapshot.
pub fn workloads(snapshot: &ClusterSnapshot) -> SnapshotWorkloads {
    let items = &snapshot.items;
    let key = |namespace: &str, kind: &str, name: &str| {
        WorkloadRef::new(namespace, kind, name).to_string()
    };
    // Which objects exist, by (namespace, kind, name).
    let present: BTreeSet<(&str, &str, &str)> = items
        .iter()
        .map(|i| {
            (
                text(i, "/metadata/namespace"),
                text(i, "/kind"),
                text(i, "/metadata/name"),
            )
        })
        .collect();
    let has = |ns: &str, kind: &str, name: &str| present.contains(&(ns, kind, name));
    // The controller a ReplicaSet or Job belongs to, when it has one.
    let owned_by = |ns: &str, kind: &str, name: &str| -> Option<(String, String)> {
        items
            .iter()
            .find(|i| {
                text(i, "/kind") == kind
                    && text(i, "/metadata/namespace") == ns
                    && text(i, "/metadata/name") == name
            })
            .and_then(owner)
            .map(|(k, n)| (k.to_owned(), n.to_owned()))
    };

    let mut out = SnapshotWorkloads::default();
    for (index, item) in items.iter().enumerate() {
        let kind = text(item, "/kind");
        if STATE_KINDS.contains(&kind) {
            continue;
        }
        match (kind, owner(item)) {
            ("ReplicaSet", Some(("Deployment", _))) | ("Job", Some(("CronJob", _))) => continue,
            ("Pod", Some(_)) => continue,
            ("Pod", None) => {
                // A finished bare pod holds nothing and runs no more; a
                // mirror pod is its node's static pod, not the API's.
                let finished = matches!(text(item, "/status/phase"), "Succeeded" | "Failed");
                if finished
                    || item
                        .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
                        .is_some()
                {
                    continue;
                }
            }
            _ => {}
        }
        out.objects.push((index, clean(item.clone())));
    }

    for item in items {
        if text(item, "/kind") != "Pod" || text(item, "/apiVersion") != "v1" {
            continue;
        }
        let ns = text(item, "/metadata/namespace");
        let name = text(item, "/metadata/name");
        let node = text(item, "/spec/nodeName");
        // A pod that has finished holds nothing on its node.
        if node.is_empty() || matches!(text(item, "/status/phase"), "Succeeded" | "Failed") {
            continue;
        }
        let placed = |workload: String, ordinal: Option<u32>| {
            (
                workload,
                CapturedPod {
                    pod: name.to_owned(),
                    ordinal,
                    node: node.to_owned(),
                },
            )
        };
        let unsimulated = |kind: &str, owner_name: &str| UnsimulatedPod {
            namespace: ns.to_owned(),
            name: name.to_owned(),
            owner: format!("{kind}/{owner_name}"),
        };
        let (workload, pod) = match owner(item) {
            None if item
                .pointer("/metadata/annotations/kubernetes.io~1config.mirror")
                .is_some() =>
            {
                out.unsimulated.push(unsimulated("Node", node));
                continue;
            }
            None => placed(key(ns, "Pod", name), None),
            Some(("ReplicaSet", rs)) => {
                // The ReplicaSet's own owner when it was captured; else the
                // Deployment of its name less the pod-template-hash (as the
                // Deployment controller names ReplicaSets), or of its
                // name (the served simulator folds the two).
                let hash = text(item, "/metadata/labels/pod-template-hash");
                let deployment = match owned_by(ns, "ReplicaSet", rs) {
                    Some((kind, d)) if kind == "Deployment" => Some(d),
                    Some(_) => None,
                    None => rs
                        .strip_suffix(hash)
                        .and_then(|d| d.strip_suffix('-'))
                        .filter(|d| !hash.is_empty() && has(ns, "Deployment", d))
                        .or(has(ns, "Deployment", rs).then_some(rs))
                        .map(str::to_owned),
                };
                match deployment {
                    Some(d) => placed(key(ns, "Deployment", &d), None),
                    None if has(ns, "ReplicaSet", rs) => placed(key(ns, "ReplicaSet", rs), None),
                    None => {
                        out.unsimulated.push(unsimulated("ReplicaSet", rs));
                        continue;
                    }
                }
            }
            Some(("StatefulSet", sts)) if has(ns, "StatefulSet", sts) => {
                let ordinal = name
                    .strip_prefix(sts)
                    .and_then(|rest| rest.strip_prefix('-'))
                    .and_then(|n| n.parse().ok());
                placed(key(ns, "StatefulSet", sts), ordinal)
            }
            // A DaemonSet runs one pod on every node it fits: the
            // simulator's controller puts them where they are.
            Some(("DaemonSet", ds)) if has(ns, "DaemonSet", ds) => continue,
            Some(("Job", job)) => match owned_by(ns, "Job", job) {
                // A CronJob's run: the simulated CronJob runs on its
                // schedule from the drill's start.
                Some((kind, _)) if kind == "CronJob" => continue,
                _ if has(ns, "Job", job) => placed(key(ns, "Job", job), None),
                _ => {
                    out.unsimulated.push(unsimulated("Job", job));
                    continue;
                }
            },
            Some((kind, owner_name)) => {
                out.unsimulated.push(unsimulated(kind, owner_name));
                continue;
            }
        };
        out.placements
            .by_workload
            .entry(workload)
            .or_default()
            .push(pod);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::SnapshotSource;
    use serde_json::json;

    fn snapshot(items: Vec<Value>) -> ClusterSnapshot {
        ClusterSnapshot::new(
            SnapshotSource {
                context: None,
                server: "https://127.0.0.1:6443".into(),
                namespaces: vec![],
            },
            items,
        )
    }

    fn pod(name: &str, node: &str, owner: Option<(&str, &str)>, hash: &str) -> Value {
        let mut pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": "apps", "name": name, "labels": {"pod-template-hash": hash}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running"}
        });
        if let Some((kind, owner)) = owner {
            pod["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": kind, "name": owner, "uid": "u", "controller": true}]);
        }
        pod
    }

    fn deployment(name: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"namespace": "apps", "name": name, "uid": "x", "resourceVersion": "9",
                            "annotations": {"deployment.kubernetes.io/revision": "3"}},
               "spec": {"replicas": 2}, "status": {"readyReplicas": 2}})
    }

    #[test]
    fn pods_are_placements_of_their_controllers_and_controllers_lose_their_status() {
        let captured = workloads(&snapshot(vec![
            deployment("api"),
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                   "metadata": {"namespace": "apps", "name": "db"}, "spec": {}}),
            pod(
                "api-5d8f7c9b4-abcde",
                "w-2",
                Some(("ReplicaSet", "api-5d8f7c9b4")),
                "5d8f7c9b4",
            ),
            pod(
                "api-5d8f7c9b4-fghij",
                "w-1",
                Some(("ReplicaSet", "api-5d8f7c9b4")),
                "5d8f7c9b4",
            ),
            pod("db-1", "w-3", Some(("StatefulSet", "db")), ""),
            pod("lonely", "w-1", None, ""),
            pod("pg-1", "w-1", Some(("Cluster", "pg")), ""),
        ]));
        let api = &captured.placements.by_workload["apps/Deployment/api"];
        let nodes: Vec<&str> = api.iter().map(|p| p.node.as_str()).collect();
        assert_eq!(nodes, ["w-2", "w-1"]);
        assert_eq!(
            captured.placements.by_workload["apps/StatefulSet/db"][0].ordinal,
            Some(1)
        );
        assert_eq!(
            captured.placements.by_workload["apps/Pod/lonely"][0].node,
            "w-1"
        );
        assert_eq!(
            captured.unsimulated,
            [UnsimulatedPod {
                namespace: "apps".into(),
                name: "pg-1".into(),
                owner: "Cluster/pg".into()
            }]
        );
        let kinds: Vec<&str> = captured
            .objects
            .iter()
            .map(|(_, o)| o["kind"].as_str().unwrap())
            .collect();
        // Owned pods are placements, not objects; the bare pod is kept.
        assert_eq!(kinds, ["Deployment", "StatefulSet", "Pod"]);
        let api = &captured.objects[0].1;
        assert!(api.get("status").is_none());
        assert!(api["metadata"].get("uid").is_none());
        assert!(api["metadata"].get("annotations").is_none());
        assert!(captured.objects[2].1["spec"].get("nodeName").is_none());
    }

    #[test]
    fn a_pod_of_a_replica_set_without_its_deployment_is_not_placed() {
        // The control of the test above: the same pod, its Deployment absent.
        let captured = workloads(&snapshot(vec![pod(
            "api-5d8f7c9b4-abcde",
            "w-2",
            Some(("ReplicaSet", "api-5d8f7c9b4")),
            "5d8f7c9b4",
        )]));
        assert!(captured.placements.by_workload.is_empty());
        assert_eq!(captured.unsimulated[0].owner, "ReplicaSet/api-5d8f7c9b4");
    }

    /// Jobs ("Jobs" in the workloads docs): a Job is complete once
    /// `status.succeeded` reaches its completions, so the capture keeps
    /// that count for the simulator, and nothing else of any status.
    #[test]
    fn a_job_keeps_its_succeeded_count_and_other_status_is_dropped() {
        let job = json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"namespace": "apps", "name": "init"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "i"}]}}},
            "status": {"succeeded": 1, "active": 0, "startTime": "2026-01-01T00:00:00Z"}});
        let mut with_status = deployment("web");
        with_status["status"] = json!({"readyReplicas": 2});
        let out = workloads(&snapshot(vec![job, with_status]));
        let status = |name: &str| {
            out.objects
                .iter()
                .find(|(_, o)| o["metadata"]["name"] == name)
                .map(|(_, o)| o.get("status").cloned())
                .expect("kept")
        };
        assert_eq!(status("init"), Some(json!({"succeeded": 1})));
        assert_eq!(status("web"), None, "control: a Deployment's status goes");
    }
}
