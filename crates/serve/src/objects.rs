//! How the simulator's state reads as Kubernetes objects: the simulator's
//! views ([`drillbench_sim::view`]) as JSON, with the metadata the API wrote
//! beside them and each object's resourceVersion.

use serde_json::{Value, json};

use super::cluster_ips;
use super::endpoint_slices;
use super::endpoints;
use super::events::Events;
use super::history::{History, Key, key_of, set_rv, text};
use super::resources::{self, Resource};
use super::status;
use super::transitions::Transitions;
use super::written::{DECLARED_KINDS, Written};
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_sim::Simulation;
use drillbench_sim::world::{NodePhase, PodPhase, WorkloadKind};

/// A read-only view of the served cluster as API objects.
pub(super) struct Objects<'a> {
    pub(super) sim: &'a Simulation,
    pub(super) written: &'a Written,
    pub(super) history: &'a History,
    pub(super) events: &'a Events,
    pub(super) transitions: &'a Transitions,
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
                if (sim.nodes()[id].phase == NodePhase::Gone) != gone {
                    return None;
                }
                to_json(&sim.node_view(id))
            }
            "Pod" => to_json(&sim.pod_view(sim.pod_id(namespace, name, gone)?)),
            _ if gone => return None,
            "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
                let w = sim.workload_id(&WorkloadRef::new(namespace, kind, name).to_string())?;
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
            "Event" => self.events.get(namespace, name)?.clone(),
            kind if kind == "CustomResourceDefinition" || DECLARED_KINDS.contains(&kind) => self
                .written
                .declared(&(kind, namespace.to_owned(), name.to_owned()))?
                .clone(),
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
            "ReplicaSet" => sim
                .replicaset_views()
                .iter()
                .find(|r| {
                    r.metadata.name.as_deref() == Some(name)
                        && r.metadata.namespace.as_deref() == Some(namespace)
                })
                .map(to_json)?,
            "Lease" => sim
                .lease_views()
                .iter()
                .find(|l| {
                    l.metadata.name.as_deref() == Some(name) && namespace == "kube-node-lease"
                })
                .map(to_json)?,
            "Endpoints" => self
                .endpoints_in(namespace)
                .into_iter()
                .find(|e| e.pointer("/metadata/name").and_then(Value::as_str) == Some(name))?,
            "EndpointSlice" => self
                .endpoint_slices_in(namespace)
                .into_iter()
                .find(|s| s.pointer("/metadata/name").and_then(Value::as_str) == Some(name))?,
            // A custom resource (`Kind.group`): stored as written.
            _ if kind.contains('.') => self
                .written
                .declared(&(kind, namespace.to_owned(), name.to_owned()))?
                .clone(),
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
        Some(match sim.workloads()[w].kind {
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
        if kind == "Deployment"
            && let Some(w) = self
                .sim
                .workload_id(&WorkloadRef::new(&key.1, kind, &key.2).to_string())
            && let Some(revision) = self.sim.deployment_revision(w)
            && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        {
            // The deployment controller's own annotation, whatever a
            // client wrote there (`kubectl rollout undo` writes it back).
            let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(annotations) = annotations.as_object_mut() {
                annotations.insert(
                    drillbench_sim::view::REVISION_ANNOTATION.to_owned(),
                    json!(revision.to_string()),
                );
            }
        }
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            // The server's record, whatever a client wrote there.
            match self.written.managed_fields(&key) {
                Some(managed) if !managed.is_empty() => {
                    meta.insert("managedFields".to_owned(), managed.to_json());
                }
                _ => {
                    meta.remove("managedFields");
                }
            }
        }
        status::set_generation(kind, object, self.written.generation(&key));
        status::default_workload(kind, object);
        match kind {
            "Deployment" => status::deployment_conditions(object),
            "Pod" => status::pod(object),
            _ => {}
        }
        self.transitions.date(&key, object, self.sim.now() as i64);
        let rv = self.history.object_rv(&key).unwrap_or(1);
        set_rv(object, rv);
    }

    /// Every object of a resource, by namespace then name.
    pub(super) fn list(&self, resource: &Resource) -> Vec<Value> {
        let sim = self.sim;
        let kind = resource.key;
        let mut objects: Vec<Value> = match kind {
            "Node" => (0..sim.nodes().len())
                .filter(|&n| sim.node_exists(n))
                .map(|n| to_json(&sim.node_view(n)))
                .collect(),
            "Pod" => (0..sim.pods().len())
                .filter(|&p| sim.pods()[p].phase != PodPhase::Gone)
                .map(|p| to_json(&sim.pod_view(p)))
                .collect(),
            "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => sim
                .live_workloads()
                .into_iter()
                .filter_map(|w| self.workload_json(w))
                .filter(|o| o["kind"] == kind)
                .collect(),
            "PersistentVolumeClaim" => (0..sim.claims().len())
                .map(|c| to_json(&sim.claim_view(c)))
                .collect(),
            "PodDisruptionBudget" => (0..sim.pdbs().len())
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
            "Event" => self.events.all().cloned().collect(),
            kind if kind == "CustomResourceDefinition" || DECLARED_KINDS.contains(&kind) => {
                self.written.declared_of_kind(kind).cloned().collect()
            }
            _ if resource.is_custom() => self.written.declared_of_kind(kind).cloned().collect(),
            "StorageClass" => sim.storage_class_views().iter().map(to_json).collect(),
            "Lease" => sim.lease_views().iter().map(to_json).collect(),
            "PersistentVolume" => sim.volume_views().iter().map(to_json).collect(),
            "VolumeAttachment" => sim.attachment_views().iter().map(to_json).collect(),
            "ReplicaSet" => sim.replicaset_views().iter().map(to_json).collect(),
            "EndpointSlice" | "Endpoints" => {
                let namespaces: std::collections::BTreeSet<String> = self
                    .written
                    .declared_of_kind("Service")
                    .map(|s| text(s, "/metadata/namespace"))
                    .collect();
                namespaces
                    .iter()
                    .flat_map(|ns| {
                        if kind == "Endpoints" {
                            self.endpoints_in(ns)
                        } else {
                            self.endpoint_slices_in(ns)
                        }
                    })
                    .collect()
            }
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

    /// The EndpointSlices of a namespace's Services, as the controller
    /// derives them from the pods and nodes last announced (what its
    /// informers would hold).
    fn endpoint_slices_in(&self, namespace: &str) -> Vec<Value> {
        let mut services = self
            .written
            .declared_of_kind("Service")
            .filter(|s| text(s, "/metadata/namespace") == namespace)
            .peekable();
        if services.peek().is_none() {
            return Vec::new();
        }
        let zones = endpoint_slices::zones(self.history.announced_of_kind("Node").map(|(_, n)| n));
        services
            .flat_map(|service| {
                if is_kubernetes_service(service) {
                    let ips = self.api_server_ips();
                    let created = &service["metadata"]["creationTimestamp"];
                    return vec![cluster_ips::kubernetes_endpoint_slice(&ips, created)];
                }
                endpoint_slices::slices_for(
                    service,
                    self.history.announced_in("Pod", namespace),
                    &zones,
                )
            })
            .collect()
    }

    /// The API servers' addresses, from the nodes last announced.
    fn api_server_ips(&self) -> Vec<String> {
        cluster_ips::api_server_ips(self.history.announced_of_kind("Node").map(|(_, n)| n))
    }

    /// The Endpoints of a namespace's Services, as the endpoints controller
    /// derives them from the pods last announced.
    fn endpoints_in(&self, namespace: &str) -> Vec<Value> {
        self.written
            .declared_of_kind("Service")
            .filter(|s| text(s, "/metadata/namespace") == namespace)
            .filter_map(|service| {
                if is_kubernetes_service(service) {
                    let created = &service["metadata"]["creationTimestamp"];
                    return Some(cluster_ips::kubernetes_endpoints(
                        &self.api_server_ips(),
                        created,
                    ));
                }
                endpoints::endpoints_for(service, self.history.announced_in("Pod", namespace))
            })
            .collect()
    }

    /// Whether a pod of the namespace has not finished terminating.
    fn has_pods(&self, namespace: &str) -> bool {
        self.sim
            .pods()
            .iter()
            .any(|p| p.namespace == namespace && p.phase != PodPhase::Gone)
    }
}

/// The API server's own Service, whose endpoints its reconciler writes.
fn is_kubernetes_service(service: &Value) -> bool {
    text(service, "/metadata/namespace") == "default"
        && text(service, "/metadata/name") == "kubernetes"
}

/// RFC 3339 time of a drill instant (ms, negative before the drill).
pub(super) fn stamp(ms: i64) -> String {
    jiff::Timestamp::from_second(drillbench_sim::EPOCH_SECONDS + ms.div_euclid(1000))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cluster, names, rv_of};

    fn kind(kind: &str) -> &'static Resource {
        resources::by_kind(kind).expect("a served kind")
    }

    #[test]
    fn a_list_is_every_object_of_the_kind_by_namespace_then_name() {
        let cluster = cluster();
        let objects = cluster.objects();
        let pods = objects.list(kind("Pod"));
        assert_eq!(
            names(&pods),
            [
                "apps/api-00000",
                "apps/api-00001",
                "apps/cache-00000",
                "apps/cache-00001",
                "kube-system/node-agent-00000",
                "kube-system/node-agent-00001",
                "kube-system/node-agent-00002",
            ]
        );
        assert!(pods.iter().all(|p| p["kind"] == "Pod"));
        assert_eq!(
            names(&objects.list(kind("Deployment"))),
            ["apps/api", "apps/cache"]
        );
        assert_eq!(
            names(&objects.list(kind("DaemonSet"))),
            ["kube-system/node-agent"]
        );
        assert_eq!(objects.list(kind("Node")).len(), 6);
    }

    #[test]
    fn each_object_carries_the_version_of_its_last_change() {
        let cluster = cluster();
        let objects = cluster.objects();
        for object in objects.list(kind("Pod")) {
            let key = key_of("Pod", &object);
            assert_eq!(
                Some(rv_of(&object)),
                cluster.history().object_rv(&key),
                "{key:?}"
            );
        }
        // A kind that never changes reads as version 1.
        let class = objects
            .view("StorageClass", "", "longhorn", false)
            .expect("the drill's class");
        assert_eq!(rv_of(&class), 1);
    }

    #[test]
    fn metadata_written_beside_the_simulator_decorates_its_objects() {
        let mut cluster = cluster();
        let api = cluster
            .view("Deployment", "apps", "api", false)
            .expect("apps/api");
        assert_eq!(api["metadata"]["labels"], json!({"team": "platform"}));
        cluster.written.set_metadata(
            ("Deployment", "apps".to_owned(), "api".to_owned()),
            json!({"team": "data"}),
            json!({"note": "x"}),
        );
        let api = cluster
            .view("Deployment", "apps", "api", false)
            .expect("apps/api");
        assert_eq!(api["metadata"]["labels"], json!({"team": "data"}));
        assert_eq!(
            api["metadata"]["annotations"],
            json!({"note": "x", "deployment.kubernetes.io/revision": "1"}),
            "the deployment controller's revision beside what was written"
        );
        // The simulator keeps no labels of a workload: without written
        // ones it has none.
        cluster
            .written
            .forget_metadata(&("Deployment", "apps".to_owned(), "api".to_owned()));
        let api = cluster
            .view("Deployment", "apps", "api", false)
            .expect("apps/api");
        assert!(api["metadata"].get("labels").is_none(), "{api}");
    }

    #[test]
    fn a_view_finds_one_object_or_none() {
        let cluster = cluster();
        let objects = cluster.objects();
        let node = objects
            .view("Node", "", "prod-worker-1", false)
            .expect("a worker");
        assert_eq!(node["metadata"]["name"], "prod-worker-1");
        assert!(
            objects.view("Node", "", "prod-worker-1", true).is_none(),
            "a node that exists has no last state as gone"
        );
        assert!(objects.view("Node", "", "prod-worker-9", false).is_none());
        assert!(
            objects
                .view("Pod", "kube-system", "api-00000", false)
                .is_none()
        );
        assert!(objects.view("Deployment", "apps", "api", true).is_none());
        let lease = objects.view("Lease", "kube-node-lease", "prod-worker-1", false);
        assert!(lease.is_some());
        assert!(
            objects
                .view("Lease", "default", "prod-worker-1", false)
                .is_none()
        );
        assert!(objects.view_known("Deployment", "apps", "cache").is_some());
        assert!(objects.view_known("Widget", "apps", "cache").is_none());
    }

    #[test]
    fn namespaces_and_config_maps_written_through_the_api_are_listed() {
        let mut cluster = cluster();
        cluster.written.create_namespace("team");
        cluster.written.put_config_map(
            "team",
            "settings",
            json!({"kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "team"}}),
        );
        let objects = cluster.objects();
        assert!(names(&objects.list(kind("Namespace"))).contains(&"team".to_owned()));
        let map = objects
            .view("ConfigMap", "team", "settings", false)
            .expect("the ConfigMap");
        assert_eq!(rv_of(&map), 1);
        assert_eq!(names(&objects.list(kind("ConfigMap"))), ["team/settings"]);
    }

    #[test]
    fn a_deleted_namespace_is_terminating_while_its_pods_are_and_then_gone() {
        let mut cluster = cluster();
        cluster.written.delete_namespace("apps");
        let apps = cluster
            .view("Namespace", "", "apps", false)
            .expect("pods still live in apps");
        assert_eq!(apps["status"]["phase"], "Terminating");
        cluster.written.delete_namespace("team");
        assert!(
            cluster.view("Namespace", "", "team", false).is_none(),
            "a deleted namespace without pods is gone"
        );
    }

    #[test]
    fn a_scale_shows_the_replicas_and_the_selector_as_text() {
        let object = json!({
            "metadata": {"name": "api", "namespace": "apps", "resourceVersion": "9", "uid": "u"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "api", "tier": "web"}}},
            "status": {"replicas": 2},
        });
        let scale = scale_of(&object);
        assert_eq!(scale["kind"], "Scale");
        assert_eq!(scale["spec"]["replicas"], 3);
        assert_eq!(scale["status"]["replicas"], 2);
        assert_eq!(scale["status"]["selector"], "app=api,tier=web");
        assert_eq!(scale["metadata"]["resourceVersion"], "9");
        assert_eq!(scale_of(&json!({}))["spec"]["replicas"], 0);
    }

    #[test]
    fn instants_read_as_rfc3339_from_the_drills_epoch() {
        assert_eq!(stamp(0), "2026-01-01T00:00:00Z");
        assert_eq!(stamp(61_500), "2026-01-01T00:01:01Z");
        assert_eq!(stamp(-1), "2025-12-31T23:59:59Z");
    }
}
