//! How the simulator's state reads as Kubernetes objects: the simulator's
//! views ([`crate::sim::view`]) as JSON, with the metadata the API wrote
//! beside them and each object's resourceVersion.

use serde_json::{Value, json};

use super::history::{History, Key, key_of, set_rv, text};
use super::resources::{self, Resource};
use super::written::Written;
use crate::sim::Simulation;
use crate::sim::world::{NodePhase, PodPhase, WorkloadKind};

/// A read-only view of the served cluster as API objects.
pub(super) struct Objects<'a> {
    pub(super) sim: &'a Simulation,
    pub(super) written: &'a Written,
    pub(super) history: &'a History,
}

impl Objects<'_> {
    /// The current object (or, with `gone`, the last state of a deleted
    /// node or pod) as JSON with its resourceVersion.
    pub(super) fn view(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        gone: bool,
    ) -> Option<Value> {
        let sim = self.sim;
        let mut object = match kind {
            "Node" => {
                let id = sim.node_id(name).ok()?;
                if (sim.nodes[id].phase == NodePhase::Gone) != gone {
                    return None;
                }
                to_json(&sim.node_view(id))
            }
            "Pod" => to_json(&sim.pod_view(sim.pod_id(namespace, name, gone)?)),
            _ if gone => return None,
            "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
                let w = sim.workload_id(&format!("{namespace}/{kind}/{name}"))?;
                self.workload_json(w)?
            }
            "PersistentVolumeClaim" => to_json(&sim.claim_view(sim.claim_id(namespace, name)?)),
            "PodDisruptionBudget" => to_json(&sim.pdb_view(sim.pdb_index(namespace, name)?)),
            "Namespace" => {
                let exists = sim.namespace_names().contains(name) || self.written.was_created(name);
                if !exists {
                    return None;
                }
                let mut object = to_json(&Simulation::namespace_view(name));
                if self.written.was_deleted(name) {
                    // Terminating while its pods terminate, then gone.
                    if !self.has_pods(name) {
                        return None;
                    }
                    object["status"]["phase"] = json!("Terminating");
                }
                object
            }
            "ConfigMap" => self.written.config_map(namespace, name)?.clone(),
            "StorageClass" => sim
                .storage_class_views()
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(name))
                .map(to_json)?,
            "PersistentVolume" => sim
                .volume_views()
                .iter()
                .find(|v| v.metadata.name.as_deref() == Some(name))
                .map(to_json)?,
            "VolumeAttachment" => sim
                .attachment_views()
                .iter()
                .find(|a| a.metadata.name.as_deref() == Some(name))
                .map(to_json)?,
            "Lease" => sim
                .lease_views()
                .iter()
                .find(|l| {
                    l.metadata.name.as_deref() == Some(name) && namespace == "kube-node-lease"
                })
                .map(to_json)?,
            _ => return None,
        };
        self.decorate(kind, &mut object);
        Some(object)
    }

    /// The current object of a kind the façade serves, by its kind's name.
    pub(super) fn view_known(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let kind = resources::by_kind(kind)?.kind;
        self.view(kind, namespace, name, false)
    }

    fn workload_json(&self, w: usize) -> Option<Value> {
        let sim = self.sim;
        Some(match sim.workloads[w].kind {
            WorkloadKind::Deployment => to_json(&sim.deployment_view(w)),
            WorkloadKind::StatefulSet { .. } => to_json(&sim.statefulset_view(w)),
            WorkloadKind::DaemonSet => to_json(&sim.daemonset_view(w)),
            WorkloadKind::Job { .. } => to_json(&sim.job_view(w)),
            _ => return None,
        })
    }

    /// Adds the resourceVersion and the metadata written through the API.
    fn decorate(&self, kind: &'static str, object: &mut Value) {
        let key: Key = key_of(kind, object);
        if let Some((labels, annotations)) = self.written.metadata(&key)
            && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        {
            if !labels.is_null() {
                meta.insert("labels".to_owned(), labels.clone());
            }
            if !annotations.is_null() {
                meta.insert("annotations".to_owned(), annotations.clone());
            }
        }
        let rv = self.history.object_rv(&key).unwrap_or(1);
        set_rv(object, rv);
    }

    /// Every object of a resource, by namespace then name.
    pub(super) fn list(&self, resource: &Resource) -> Vec<Value> {
        let sim = self.sim;
        let kind = resource.kind;
        let mut objects: Vec<Value> = match kind {
            "Node" => (0..sim.nodes.len())
                .filter(|&n| sim.node_exists(n))
                .map(|n| to_json(&sim.node_view(n)))
                .collect(),
            "Pod" => (0..sim.pods.len())
                .filter(|&p| sim.pods[p].phase != PodPhase::Gone)
                .map(|p| to_json(&sim.pod_view(p)))
                .collect(),
            "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => sim
                .live_workloads()
                .into_iter()
                .filter_map(|w| self.workload_json(w))
                .filter(|o| o["kind"] == kind)
                .collect(),
            "PersistentVolumeClaim" => (0..sim.claims.len())
                .map(|c| to_json(&sim.claim_view(c)))
                .collect(),
            "PodDisruptionBudget" => (0..sim.pdbs.len())
                .map(|i| to_json(&sim.pdb_view(i)))
                .collect(),
            "Namespace" => {
                let mut names = sim.namespace_names();
                names.extend(self.written.created_namespaces().cloned());
                names
                    .iter()
                    .filter_map(|n| self.view("Namespace", "", n, false))
                    .collect()
            }
            "ConfigMap" => self.written.config_maps().cloned().collect(),
            "StorageClass" => sim.storage_class_views().iter().map(to_json).collect(),
            "Lease" => sim.lease_views().iter().map(to_json).collect(),
            "PersistentVolume" => sim.volume_views().iter().map(to_json).collect(),
            "VolumeAttachment" => sim.attachment_views().iter().map(to_json).collect(),
            _ => Vec::new(),
        };
        for object in &mut objects {
            self.decorate(kind, object);
        }
        objects.sort_by(|a, b| {
            let k = |o: &Value| (text(o, "/metadata/namespace"), text(o, "/metadata/name"));
            k(a).cmp(&k(b))
        });
        objects
    }

    /// Whether a pod of the namespace has not finished terminating.
    fn has_pods(&self, namespace: &str) -> bool {
        self.sim
            .pods
            .iter()
            .any(|p| p.namespace == namespace && p.phase != PodPhase::Gone)
    }
}

/// RFC 3339 time of a drill instant (ms, negative before the drill).
pub(super) fn stamp(ms: i64) -> String {
    jiff::Timestamp::from_second(crate::sim::EPOCH_SECONDS + ms.div_euclid(1000))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

fn to_json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// The `autoscaling/v1` Scale of a workload object.
pub(super) fn scale_of(object: &Value) -> Value {
    let selector = object
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": object.pointer("/metadata/name"), "namespace": object.pointer("/metadata/namespace"),
                     "resourceVersion": object.pointer("/metadata/resourceVersion"),
                     "uid": object.pointer("/metadata/uid")},
        "spec": {"replicas": object.pointer("/spec/replicas").cloned().unwrap_or(json!(0))},
        "status": {"replicas": object.pointer("/status/replicas").cloned().unwrap_or(json!(0)), "selector": selector},
    })
}
