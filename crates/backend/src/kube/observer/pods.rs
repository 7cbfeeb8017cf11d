//! A Pod as the observer keeps it: where it is bound, whether it is ready
//! or finished, what it requests, and what the cluster autoscaler reads of
//! its spec.

use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::core::v1::{Pod, PodSpec, Toleration};
use kube::ResourceExt;

use super::names::NodeNames;
use drillbench_model::k8s::node_selector::RequiredNodeAffinity;
use drillbench_model::k8s::quantity::pod_requests;
use drillbench_model::labels::NAMESPACE_NAME_LABEL;
use drillbench_observe::Time;
use drillbench_policy::interpod::AffinityTerm;
use drillbench_policy::scale_down;
use drillbench_policy::spread::SpreadConstraint;

/// A pod as the watches show it.
#[derive(Debug, Clone)]
pub(in crate::kube) struct PodState {
    pub(super) labels: BTreeMap<String, String>,
    /// Its node's drill name, once bound.
    pub(in crate::kube) node: Option<String>,
    /// `namespace/Kind/name` of its workload.
    pub(super) workload: Option<String>,
    /// The claims its spec mounts, by name.
    pub(super) claims: Vec<String>,
    pub(super) ready: bool,
    pub(in crate::kube) daemon: bool,
    pub(in crate::kube) deleting: bool,
    /// Succeeded or Failed: it holds no resources.
    pub(in crate::kube) finished: bool,
    /// The scheduler found no node for it (`PodScheduled` is `False` with
    /// reason `Unschedulable`).
    pub(in crate::kube) unschedulable: bool,
    pub(in crate::kube) cpu_millis: i64,
    pub(in crate::kube) memory: i64,
    /// What the cluster autoscaler reads of its spec.
    pub(in crate::kube) facts: Rc<PodFacts>,
    /// When a watch first showed it, in drill time: its age for the
    /// autoscaler's `newPodScaleUpDelay`, within a watch's latency of its
    /// creation (its `creationTimestamp` is the cluster's wall clock).
    pub(in crate::kube) first_seen: Time,
}

/// What the cluster autoscaler reads of a pod's spec and metadata.
#[derive(Debug, Clone, Default)]
pub(in crate::kube) struct PodFacts {
    pub(in crate::kube) namespace: String,
    /// Its namespace's labels as a `namespaceSelector` reads them. The
    /// observer watches no Namespace objects, so only the label the API
    /// server sets on every namespace (`kubernetes.io/metadata.name`).
    pub(in crate::kube) namespace_labels: BTreeMap<String, String>,
    /// The DaemonSet owning it, if one does.
    pub(in crate::kube) daemon_set: Option<String>,
    pub(in crate::kube) labels: BTreeMap<String, String>,
    /// The required node affinity and node selector; `None` when they do
    /// not compile, which no node satisfies.
    pub(in crate::kube) required: Option<RequiredNodeAffinity>,
    pub(in crate::kube) tolerations: Vec<Toleration>,
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict`.
    pub(in crate::kube) safe_to_evict: Option<bool>,
    /// Mounts `emptyDir` or `hostPath`.
    pub(in crate::kube) local_storage: bool,
    /// Has a controller owner other than a bare Pod.
    pub(in crate::kube) controlled: bool,
    /// Its required pod affinity terms (none when they do not compile).
    pub(in crate::kube) affinity: Vec<AffinityTerm>,
    /// Its required pod anti-affinity terms (none when they do not
    /// compile: the apiserver would not have admitted the pod).
    pub(in crate::kube) anti_affinity: Vec<AffinityTerm>,
    /// Its topology spread constraints (none when they do not compile).
    pub(in crate::kube) spread: Vec<SpreadConstraint>,
    /// `terminationGracePeriodSeconds`, which a scale-down eviction caps.
    pub(in crate::kube) termination_grace_seconds: Option<i64>,
}

/// A pod the bench may evict from a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodOnNode {
    pub namespace: String,
    pub name: String,
    /// Its `terminationGracePeriodSeconds`, if it sets one.
    pub termination_grace_seconds: Option<i64>,
}

fn pod_facts(pod: &Pod, spec: &PodSpec) -> PodFacts {
    let (affinity, anti_affinity) = AffinityTerm::from_pod_spec(spec).unwrap_or_default();
    let spread = SpreadConstraint::from_pod_spec(spec, pod.labels()).unwrap_or_default();
    let namespace = pod.namespace().unwrap_or_default();
    PodFacts {
        namespace_labels: BTreeMap::from([(NAMESPACE_NAME_LABEL.to_owned(), namespace.clone())]),
        namespace,
        daemon_set: pod
            .owner_references()
            .iter()
            .find(|o| o.kind == "DaemonSet")
            .map(|o| o.name.clone()),
        labels: pod.labels().clone(),
        required: RequiredNodeAffinity::from_pod_spec(spec).ok(),
        tolerations: spec.tolerations.clone().unwrap_or_default(),
        safe_to_evict: scale_down::safe_to_evict(pod.annotations()),
        local_storage: scale_down::blocking_local_storage(spec, pod.annotations()),
        controlled: pod
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.kind != "Pod"),
        affinity,
        anti_affinity,
        spread,
        termination_grace_seconds: spec.termination_grace_period_seconds,
    }
}

impl PodState {
    /// Reads a pod of `workload`, its node named as the drill names it.
    pub(super) fn read(pod: &Pod, workload: Option<String>, names: &NodeNames) -> PodState {
        let spec = pod.spec.clone().unwrap_or_default();
        let ready = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let requests = pod_requests(&spec).ok();
        let claims = spec
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone())
            .collect();
        let status = pod.status.clone().unwrap_or_default();
        let unschedulable = status.conditions.iter().flatten().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        });
        PodState {
            labels: pod.labels().clone(),
            node: spec.node_name.as_deref().map(|n| names.drill_name(n)),
            workload,
            claims,
            ready,
            daemon: pod.owner_references().iter().any(|o| o.kind == "DaemonSet"),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            finished: matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")),
            unschedulable,
            cpu_millis: requests.as_ref().map_or(0, |r| r.cpu_millis()),
            memory: requests.as_ref().map_or(0, |r| r.memory_bytes()),
            facts: Rc::new(pod_facts(pod, &spec)),
            first_seen: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(value: serde_json::Value) -> Pod {
        serde_json::from_value(value).expect("pod")
    }

    #[test]
    fn a_pod_is_read_with_its_drill_node_requests_and_state() {
        let mut names = NodeNames::default();
        names.learn(
            "r1-worker",
            &BTreeMap::from([(
                drillbench_model::labels::NODE_LABEL.to_owned(),
                "prod-worker-1".to_owned(),
            )]),
        );
        let state = PodState::read(
            &pod(json!({
                "metadata": {"name": "p", "namespace": "apps", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"nodeName": "r1-worker", "containers": [
                    {"name": "a", "resources": {"requests": {"cpu": "250m", "memory": "1Ki"}}},
                    {"name": "b", "resources": {"requests": {"cpu": "250m", "memory": "1Ki"}}},
                ], "volumes": [
                    {"name": "d", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "t", "emptyDir": {}},
                ]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
            })),
            Some("apps/Deployment/api".to_owned()),
            &names,
        );
        assert_eq!(state.node.as_deref(), Some("prod-worker-1"));
        assert_eq!((state.cpu_millis, state.memory), (500, 2048));
        assert_eq!(state.claims, ["data"]);
        assert!(state.ready && state.deleting && !state.finished && !state.unschedulable);
        assert!(state.facts.local_storage);
        assert_eq!(state.facts.namespace, "apps");
    }

    #[test]
    fn the_autoscaler_facts_come_from_owners_annotations_and_affinity() {
        let names = NodeNames::default();
        let state = PodState::read(
            &pod(json!({
                "metadata": {"name": "p", "namespace": "kube-system",
                    "annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "cilium", "uid": "u", "controller": true}]},
                "spec": {"containers": [], "affinity": {"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "kubernetes.io/hostname"}]
                }}},
                "status": {"phase": "Pending", "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ]},
            })),
            None,
            &names,
        );
        assert!(state.daemon && state.unschedulable && !state.ready);
        assert_eq!(state.node, None);
        let facts = &state.facts;
        assert_eq!(facts.daemon_set.as_deref(), Some("cilium"));
        assert_eq!(facts.safe_to_evict, Some(false));
        assert!(facts.controlled && facts.anti_affinity.len() == 1 && !facts.local_storage);
        let finished = PodState::read(
            &pod(json!({"metadata": {"name": "j"}, "status": {"phase": "Succeeded"}})),
            None,
            &names,
        );
        assert!(finished.finished && !finished.facts.controlled);
        assert_eq!(finished.facts.safe_to_evict, None);
    }
}
