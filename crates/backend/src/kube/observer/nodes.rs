//! A Node as the observer keeps it, and the timeline events a change to
//! one makes.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use k8s_openapi::api::core::v1::Node;
use kube::ResourceExt;

use super::names::pool_of;
use drillbench_model::k8s::quantity::ParsedQuantity;
use drillbench_model::labels::STANDBY_KEY;
use drillbench_model::topology::Topology;
use drillbench_observe::EventKind;

/// A node as the watches show it, under its drill name.
#[derive(Debug, Clone)]
pub(in crate::kube) struct NodeState {
    /// Its name in the API (kind and Talos name nodes after the cluster).
    pub(in crate::kube) api_name: String,
    pub(in crate::kube) labels: BTreeMap<String, String>,
    pub(in crate::kube) pool: String,
    /// An autoscaler standby node not yet released: in no pool yet.
    pub(in crate::kube) standby: bool,
    pub(in crate::kube) ready: bool,
    pub(in crate::kube) unschedulable: bool,
    taints: BTreeSet<(String, String)>,
    pub(in crate::kube) cpu_millis: i64,
    pub(in crate::kube) memory: i64,
    /// Allocatable pods.
    pub(in crate::kube) max_pods: u32,
    /// The object, for the scheduling rules that read it whole.
    pub(in crate::kube) object: Rc<Node>,
}

pub(super) fn quantity(
    q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> Option<ParsedQuantity> {
    q.and_then(|q| ParsedQuantity::from_quantity(q).ok())
}

impl NodeState {
    /// Reads a node known by the drill as `name`.
    pub(super) fn read(node: &Node, name: &str, topology: &Topology) -> NodeState {
        let labels = node.labels().clone();
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let spec = node.spec.clone().unwrap_or_default();
        let taints = spec
            .taints
            .unwrap_or_default()
            .into_iter()
            .map(|t| (t.key, t.effect))
            .collect();
        let allocatable = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default();
        NodeState {
            api_name: node.name_any(),
            pool: pool_of(topology, name, &labels),
            standby: labels.contains_key(STANDBY_KEY),
            labels,
            ready,
            unschedulable: spec.unschedulable.unwrap_or(false),
            taints,
            cpu_millis: quantity(allocatable.get("cpu")).map_or(0, |q| q.milli_value()),
            memory: quantity(allocatable.get("memory")).map_or(0, |q| q.value()),
            max_pods: quantity(allocatable.get("pods"))
                .map_or(110, |q| q.value().clamp(0, u32::MAX as i64) as u32),
            object: Rc::new(node.clone()),
        }
    }

    /// The events that tell how the node came to be as it is from how it
    /// was (`None`: it is new), with their messages.
    pub(super) fn changes_since(&self, before: Option<&NodeState>) -> Vec<(EventKind, String)> {
        let mut changes = Vec::new();
        let Some(before) = before else {
            changes.push((EventKind::NodeAdded, "node created".to_owned()));
            if self.ready {
                changes.push((EventKind::NodeReady, "Ready".to_owned()));
            }
            return changes;
        };
        if self.ready != before.ready {
            changes.push(if self.ready {
                (EventKind::NodeReady, "Ready".to_owned())
            } else {
                (EventKind::NodeNotReady, "not Ready".to_owned())
            });
        }
        if self.unschedulable != before.unschedulable {
            let kind = if self.unschedulable {
                EventKind::NodeCordoned
            } else {
                EventKind::NodeUncordoned
            };
            changes.push((kind, String::new()));
        }
        for (key, effect) in before.taints.difference(&self.taints) {
            changes.push((EventKind::NodeUntainted, format!("{key}:{effect}")));
        }
        for (key, effect) in self.taints.difference(&before.taints) {
            changes.push((EventKind::NodeTainted, format!("{key}:{effect}")));
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(spec: serde_json::Value, ready: &str, labels: serde_json::Value) -> NodeState {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "r1-worker", "labels": labels},
            "spec": spec,
            "status": {"conditions": [{"type": "Ready", "status": ready}],
                       "allocatable": {"cpu": "3500m", "memory": "2Gi", "pods": "20"}},
        }))
        .expect("node");
        NodeState::read(
            &node,
            "prod-worker-1",
            &super::super::tests::drill().topology,
        )
    }

    #[test]
    fn a_node_is_read_with_its_room_pool_and_standby_taint() {
        let node = read(json!({}), "True", json!({STANDBY_KEY: "true"}));
        assert_eq!(node.api_name, "r1-worker");
        assert_eq!(node.pool, "baseline", "by its drill name's pattern");
        assert!(node.standby && node.ready && !node.unschedulable);
        assert_eq!(
            (node.cpu_millis, node.memory, node.max_pods),
            (3_500, 2 << 30, 20)
        );
        let bare: Node = serde_json::from_value(json!({"metadata": {"name": "x"}})).expect("node");
        let bare = NodeState::read(&bare, "x", &super::super::tests::drill().topology);
        assert_eq!(
            (bare.cpu_millis, bare.max_pods),
            (0, 110),
            "kubelet's default"
        );
        assert!(!bare.ready, "no Ready condition is not Ready");
    }

    #[test]
    fn a_new_node_is_added_then_ready_and_a_known_one_reports_each_change() {
        let kinds = |c: Vec<(EventKind, String)>| c.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        let fresh = read(json!({}), "True", json!({}));
        assert_eq!(
            kinds(fresh.changes_since(None)),
            [EventKind::NodeAdded, EventKind::NodeReady]
        );
        let booting = read(json!({}), "Unknown", json!({}));
        assert_eq!(kinds(booting.changes_since(None)), [EventKind::NodeAdded]);
        assert!(fresh.changes_since(Some(&fresh)).is_empty());
        let cordoned = read(
            json!({"unschedulable": true, "taints": [
                {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}
            ]}),
            "False",
            json!({}),
        );
        assert_eq!(
            cordoned.changes_since(Some(&fresh)),
            [
                (EventKind::NodeNotReady, "not Ready".to_owned()),
                (EventKind::NodeCordoned, String::new()),
                (EventKind::NodeTainted, "a:NoSchedule".to_owned()),
                (EventKind::NodeTainted, "b:NoExecute".to_owned()),
            ]
        );
        // Uncordoning is an event, and so is each taint removed (an
        // `untaint` step, a node back from unreachable).
        assert_eq!(
            fresh.changes_since(Some(&cordoned)),
            [
                (EventKind::NodeReady, "Ready".to_owned()),
                (EventKind::NodeUncordoned, String::new()),
                (EventKind::NodeUntainted, "a:NoSchedule".to_owned()),
                (EventKind::NodeUntainted, "b:NoExecute".to_owned()),
            ]
        );
    }
}
