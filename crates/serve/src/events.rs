//! The drill's timeline as the Event objects the cluster's own components
//! would have recorded, so `kubectl get events` and `kubectl describe`
//! tell the drill's story.
//!
//! Only timeline events a real component records an Event for become one,
//! with that component's reason, type and message (each row of
//! [`recorded`] names its source). An eviction through the API records
//! none in a real cluster (the API server emits no Event for it), so it
//! records none here either; the pod's deletion shows on the pod.
//!
//! Events are kept as recorded (a real cluster keeps them for
//! `--event-ttl`, an hour by default; a drill is shorter), keyed like the
//! API server's: `NAME.HEX` in the involved object's namespace, `default`
//! for a cluster-scoped one.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::history::{Key, text};
use super::objects::stamp;
use drillbench_observe::{Event, EventKind};
use drillbench_sim::EPOCH_SECONDS;

/// The Event objects recorded so far, by (namespace, name).
#[derive(Debug, Clone, Default)]
pub(super) struct Events {
    stored: BTreeMap<(String, String), Value>,
}

/// What a component records for one timeline event.
#[derive(Debug, PartialEq, Eq)]
struct Recorded {
    /// `Normal` or `Warning`.
    kind_type: &'static str,
    reason: &'static str,
    component: &'static str,
    message: String,
}

fn normal(reason: &'static str, component: &'static str, message: String) -> Option<Recorded> {
    Some(Recorded {
        kind_type: "Normal",
        reason,
        component,
        message,
    })
}

fn warning(reason: &'static str, component: &'static str, message: String) -> Option<Recorded> {
    Some(Recorded {
        kind_type: "Warning",
        ..normal(reason, component, message)?
    })
}

/// The Event a real component records for a timeline event, if any.
fn recorded(event: &Event) -> Option<Recorded> {
    let (namespace, name) = (&event.object.namespace, &event.object.name);
    // kubelet's `recordNodeStatusEvent` and the node lifecycle
    // controller's `RecordNodeStatusChange`: `Node N status is now: S`,
    // with S as the reason.
    let node_status = |status: &str| format!("Node {name} status is now: {status}");
    match event.kind {
        // kube-scheduler's `schedule_one.go`, after binding.
        EventKind::PodScheduled => normal(
            "Scheduled",
            "default-scheduler",
            format!(
                "Successfully assigned {namespace}/{name} to {}",
                event.node.as_deref().unwrap_or_default()
            ),
        ),
        // kube-scheduler's `handleSchedulingFailure`: the scheduler's own
        // account of why no node fits.
        EventKind::PodUnschedulable => warning(
            "FailedScheduling",
            "default-scheduler",
            event.message.clone(),
        ),
        // kube-scheduler's preemption executor (`preemption/executor.go`),
        // on the victim, with the action `Preempting`; the simulator's
        // message is `preempted by NS/NAME on node NODE`, which is how
        // upstream worded it up to 1.31 (later ones name the preemptor by
        // UID).
        EventKind::PodPreempted => normal(
            "Preempted",
            "default-scheduler",
            event.message.strip_prefix("preempted by ").map_or_else(
                || event.message.clone(),
                |rest| format!("Preempted by {rest}"),
            ),
        ),
        // The taint eviction controller's `emitPodDeletionEvent`.
        EventKind::PodEvicted if event.message.starts_with("taint manager") => normal(
            "TaintManagerEviction",
            "taint-eviction-controller",
            format!("Marking for deletion Pod {namespace}/{name}"),
        ),
        // The attach/detach controller's Multi-Attach error
        // (`reconciler.reportMultiAttachError`), in the simulator's words.
        EventKind::PodBlocked if event.message.starts_with("Multi-Attach") => warning(
            "FailedAttachVolume",
            "attachdetach-controller",
            event.message.clone(),
        ),
        EventKind::NodeReady => normal("NodeReady", "kubelet", node_status("NodeReady")),
        EventKind::NodeNotReady => normal(
            "NodeNotReady",
            "node-controller",
            node_status("NodeNotReady"),
        ),
        // kubelet's `recordNodeSchedulableEvent`.
        EventKind::NodeCordoned => normal(
            "NodeNotSchedulable",
            "kubelet",
            node_status("NodeNotSchedulable"),
        ),
        EventKind::NodeUncordoned => {
            normal("NodeSchedulable", "kubelet", node_status("NodeSchedulable"))
        }
        // A controller whose pod the API server refused (the Priority
        // admission plugin, for a missing PriorityClass): `RealPodControl`
        // records `Error creating: …` for ReplicaSets, DaemonSets and Jobs,
        // the StatefulSet controller its own sentence. A Deployment's is
        // recorded on its newest ReplicaSet, which `Cluster::sync_instant`
        // passes as the involved object.
        EventKind::AdmissionRefused if event.message.starts_with("pods \"") => {
            match event.object.kind.as_str() {
                "StatefulSet" => warning(
                    "FailedCreate",
                    "statefulset-controller",
                    format!(
                        "create Pod {name}-0 in StatefulSet {name} failed error: {}",
                        event.message
                    ),
                ),
                kind => warning(
                    "FailedCreate",
                    match kind {
                        "DaemonSet" => "daemonset-controller",
                        "Job" => "job-controller",
                        _ => "replicaset-controller",
                    },
                    format!("Error creating: {}", event.message),
                ),
            }
        }
        // cluster-autoscaler's scale-down actuator, on the node it drains.
        EventKind::ScaleDown => normal(
            "ScaleDown",
            "cluster-autoscaler",
            "marked the node as toBeDeleted/unschedulable".to_owned(),
        ),
        _ => None,
    }
}

impl Events {
    /// Records the Event for the `index`th timeline event, about
    /// `involved` (its object as served then), and returns its key and
    /// object; `None` when no component records one.
    pub(super) fn record(
        &mut self,
        index: usize,
        event: &Event,
        involved: &Value,
    ) -> Option<(Key, Value)> {
        let recorded = recorded(event)?;
        let name = text(involved, "/metadata/name");
        let involved_namespace = text(involved, "/metadata/namespace");
        let namespace = if involved_namespace.is_empty() {
            "default".to_owned()
        } else {
            involved_namespace.clone()
        };
        // client-go's recorder names an Event `NAME.%x` of the time in
        // nanoseconds; the index keeps two of one instant apart.
        let nanos = (EPOCH_SECONDS as u128 * 1000 + u128::from(event.at_ms)) * 1_000_000
            + (index % 1_000_000) as u128;
        let event_name = format!("{name}.{nanos:x}");
        let at = stamp(i64::try_from(event.at_ms).unwrap_or(i64::MAX));
        let mut reference = json!({
            "kind": text(involved, "/kind"), "apiVersion": text(involved, "/apiVersion"),
            "name": name, "uid": text(involved, "/metadata/uid"),
        });
        if !involved_namespace.is_empty() {
            reference["namespace"] = json!(involved_namespace);
        }
        let mut source = json!({"component": recorded.component});
        if recorded.component == "kubelet" {
            source["host"] = json!(event.node.clone().unwrap_or_else(|| name.clone()));
        }
        let mut object = json!({
            "kind": "Event", "apiVersion": "v1",
            "metadata": {"name": event_name, "namespace": namespace,
                         "uid": drillbench_sim::view::uid(32, index), "creationTimestamp": at},
            "involvedObject": reference,
            "reason": recorded.reason, "message": recorded.message, "type": recorded.kind_type,
            "source": source, "reportingComponent": recorded.component, "reportingInstance": "",
            "firstTimestamp": at, "lastTimestamp": at, "count": 1,
        });
        // The scheduler's events carry what it did (`action`), as the
        // events API's recorder writes it.
        if recorded.reason == "Preempted" {
            object["action"] = json!("Preempting");
        }
        let key = ("Event", namespace.clone(), event_name.clone());
        self.stored.insert((namespace, event_name), object.clone());
        Some((key, object))
    }

    /// Keeps an Event a client wrote (core form).
    pub(super) fn put(&mut self, namespace: &str, name: &str, event: Value) {
        self.stored
            .insert((namespace.to_owned(), name.to_owned()), event);
    }

    pub(super) fn remove(&mut self, namespace: &str, name: &str) -> Option<Value> {
        self.stored.remove(&(namespace.to_owned(), name.to_owned()))
    }

    pub(super) fn get(&self, namespace: &str, name: &str) -> Option<&Value> {
        self.stored.get(&(namespace.to_owned(), name.to_owned()))
    }

    /// Every Event, by namespace then name.
    pub(super) fn all(&self) -> impl Iterator<Item = &Value> {
        self.stored.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_observe::ObjectRef;

    fn event(kind: EventKind, object: &str, node: Option<&str>, message: &str) -> Event {
        let (namespace, name) = object.split_once('/').unwrap_or(("", object));
        Event {
            at_ms: 61_000,
            kind,
            object: ObjectRef {
                kind: if namespace.is_empty() { "Node" } else { "Pod" }.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
            node: node.map(str::to_owned),
            pool: None,
            message: message.to_owned(),
        }
    }

    /// Each row transcribes the component named beside it in
    /// [`recorded`]; each reason is paired with a timeline event of the
    /// same kind no component records (the control).
    #[test]
    fn timeline_events_read_as_the_components_record_them() {
        let rows = [
            (
                event(EventKind::PodScheduled, "apps/web-0", Some("w1"), "bound"),
                Some((
                    "Normal",
                    "Scheduled",
                    "default-scheduler",
                    "Successfully assigned apps/web-0 to w1",
                )),
            ),
            (
                event(
                    EventKind::PodUnschedulable,
                    "apps/web-0",
                    None,
                    "0/3 nodes are available: 3 Insufficient cpu.",
                ),
                Some((
                    "Warning",
                    "FailedScheduling",
                    "default-scheduler",
                    "0/3 nodes are available: 3 Insufficient cpu.",
                )),
            ),
            (
                event(
                    EventKind::PodEvicted,
                    "apps/web-0",
                    Some("w1"),
                    "taint manager: NoExecute toleration expired",
                ),
                Some((
                    "Normal",
                    "TaintManagerEviction",
                    "taint-eviction-controller",
                    "Marking for deletion Pod apps/web-0",
                )),
            ),
            (
                event(
                    EventKind::PodEvicted,
                    "apps/web-0",
                    Some("w1"),
                    "evicted: within budget",
                ),
                None,
            ),
            (
                event(
                    EventKind::PodPreempted,
                    "apps/batch-0",
                    Some("w1"),
                    "preempted by apps/web-0 on node w1",
                ),
                Some((
                    "Normal",
                    "Preempted",
                    "default-scheduler",
                    "Preempted by apps/web-0 on node w1",
                )),
            ),
            (
                event(
                    EventKind::PodTerminating,
                    "apps/batch-0",
                    Some("w1"),
                    "pod terminating",
                ),
                None,
            ),
            (
                event(
                    EventKind::PodBlocked,
                    "apps/db-0",
                    Some("w2"),
                    "Multi-Attach error for volume data-db-0: already exclusively attached to w1",
                ),
                Some((
                    "Warning",
                    "FailedAttachVolume",
                    "attachdetach-controller",
                    "Multi-Attach error for volume data-db-0: already exclusively attached to w1",
                )),
            ),
            (
                event(EventKind::NodeNotReady, "w1", Some("w1"), "crashed"),
                Some((
                    "Normal",
                    "NodeNotReady",
                    "node-controller",
                    "Node w1 status is now: NodeNotReady",
                )),
            ),
            (
                event(EventKind::NodeReady, "w1", Some("w1"), "ready"),
                Some((
                    "Normal",
                    "NodeReady",
                    "kubelet",
                    "Node w1 status is now: NodeReady",
                )),
            ),
            (
                event(EventKind::NodeCordoned, "w1", Some("w1"), "cordoned"),
                Some((
                    "Normal",
                    "NodeNotSchedulable",
                    "kubelet",
                    "Node w1 status is now: NodeNotSchedulable",
                )),
            ),
            (
                event(
                    EventKind::ScaleDown,
                    "w1",
                    Some("w1"),
                    "scale-down: unneeded",
                ),
                Some((
                    "Normal",
                    "ScaleDown",
                    "cluster-autoscaler",
                    "marked the node as toBeDeleted/unschedulable",
                )),
            ),
            (
                event(EventKind::PodCreated, "apps/web-0", None, "created"),
                None,
            ),
            (event(EventKind::QuorumLost, "etcd", None, "lost"), None),
        ];
        for (timeline, expected) in rows {
            let got = recorded(&timeline);
            let got = got
                .as_ref()
                .map(|r| (r.kind_type, r.reason, r.component, r.message.as_str()));
            assert_eq!(got, expected, "{:?}", timeline.kind);
        }
    }

    #[test]
    fn an_event_names_its_object_and_lives_in_its_namespace_or_default() {
        let mut events = Events::default();
        let pod = json!({"kind": "Pod", "apiVersion": "v1",
                         "metadata": {"name": "web-0", "namespace": "apps", "uid": "u-1"}});
        let scheduled = event(EventKind::PodScheduled, "apps/web-0", Some("w1"), "bound");
        let (key, object) = events.record(3, &scheduled, &pod).expect("an Event");
        assert_eq!(key.1, "apps");
        assert!(key.2.starts_with("web-0."), "{key:?}");
        assert_eq!(object["involvedObject"]["uid"], "u-1");
        assert_eq!(object["involvedObject"]["namespace"], "apps");
        assert_eq!(object["firstTimestamp"], "2026-01-01T00:01:01Z");
        assert_eq!(events.get("apps", &key.2), Some(&object));
        let node =
            json!({"kind": "Node", "apiVersion": "v1", "metadata": {"name": "w1", "uid": "u-2"}});
        let ready = event(EventKind::NodeReady, "w1", Some("w1"), "ready");
        let (key, object) = events.record(4, &ready, &node).expect("an Event");
        assert_eq!(
            key.1, "default",
            "a cluster-scoped object's Events go to default"
        );
        assert!(object["involvedObject"].get("namespace").is_none());
        assert_eq!(object["source"]["host"], "w1");
        assert!(
            events
                .record(
                    5,
                    &event(EventKind::PodCreated, "apps/web-0", None, ""),
                    &pod
                )
                .is_none()
        );
        assert_eq!(events.all().count(), 2);
    }

    /// The preemption executor records `Preempted` with the action
    /// `Preempting` on the victim; the control (the same pod's scheduling)
    /// carries no action.
    #[test]
    fn a_preemption_event_says_what_the_scheduler_did() {
        let mut events = Events::default();
        let pod = json!({"kind": "Pod", "apiVersion": "v1",
                         "metadata": {"name": "batch-0", "namespace": "apps", "uid": "u-1"}});
        let preempted = event(
            EventKind::PodPreempted,
            "apps/batch-0",
            Some("w1"),
            "preempted by apps/web-0 on node w1",
        );
        let (_, object) = events.record(1, &preempted, &pod).expect("an Event");
        assert_eq!(object["reason"], "Preempted");
        assert_eq!(object["action"], "Preempting");
        let scheduled = event(EventKind::PodScheduled, "apps/batch-0", Some("w1"), "bound");
        let (_, object) = events.record(2, &scheduled, &pod).expect("an Event");
        assert!(object.get("action").is_none());
    }
}
