//! The timeline's vocabulary: what happened, to which object, when. Every
//! backend emits these (the simulator as it steps, a real cluster through
//! its watchers), the assertions read them, and the report stores them as
//! they are; so they live here, below both, and the field order is the
//! stored JSON's.

use serde::{Deserialize, Serialize};

/// Something that happened during the drill.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Event {
    /// When, in milliseconds of drill time.
    pub at_ms: u64,
    pub kind: EventKind,
    /// The object it happened to.
    pub object: ObjectRef,
    /// The node involved, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The pool of that node (`control-plane` for control planes), so a
    /// renderer can group lanes without the topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// A sentence for people.
    pub message: String,
}

/// The message of a `PodDeleted` event for a pod a drain deleted without
/// the eviction API (only a negative control's drain does): `kubectl drain
/// --disable-eviction` "will bypass checking PodDisruptionBudgets"
/// (<https://kubernetes.io/docs/reference/kubectl/generated/kubectl_drain>).
pub const BYPASSED_EVICTION: &str =
    "deleted without the eviction API (drain --disable-eviction): no PodDisruptionBudget consulted";

/// The kinds of timeline events. Every backend emits the same vocabulary,
/// so assertions and renderers never know which backend ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EventKind {
    // Nodes.
    /// A node was created and is booting (`object` is the Node).
    NodeAdded,
    /// A node's Ready condition became True.
    NodeReady,
    /// A node's Ready condition became False or Unknown.
    NodeNotReady,
    /// A node was cordoned (unschedulable).
    NodeCordoned,
    NodeUncordoned,
    /// A taint was added to a node (`message` names it).
    NodeTainted,
    /// A taint was removed from a node (`message` names it).
    NodeUntainted,
    /// A node's labels or annotations changed (`message` says how).
    NodeRelabelled,
    /// The Node object was deleted.
    NodeDeleted,
    // Pods.
    /// A pod was created (not yet scheduled).
    PodCreated,
    /// A pod was bound to `node`.
    PodScheduled,
    /// The scheduler found no node for a pod (`message` says why).
    PodUnschedulable,
    PodReady,
    /// A pod stopped being Ready.
    PodNotReady,
    /// A pod cannot start (e.g. its volume is attached elsewhere).
    PodBlocked,
    /// A pod was evicted through the eviction API.
    PodEvicted,
    /// The scheduler deleted a pod to make room for one of higher
    /// priority (`message` names the preemptor and the node).
    PodPreempted,
    /// A pod's deletion started (its `deletionTimestamp` was set): it
    /// still holds its node until it is gone, but the scheduler's spread
    /// counts and its controller no longer count it.
    PodTerminating,
    PodDeleted,
    // Volumes.
    /// A volume was attached to `node`.
    VolumeAttached,
    /// A volume was detached from `node`.
    VolumeDetached,
    // Admission and disruption.
    /// A guard refused an object, or the API server's Priority admission
    /// refused the pods a controller tried to create (`message` says so).
    AdmissionRefused,
    /// A guard in `Audit` mode recorded a violation.
    AdmissionAudited,
    /// A Kyverno rule that applied to an object is of a kind the bench
    /// does not evaluate (`message` names the policy, the rule and why):
    /// listed, never counted as passed.
    PolicyNotEvaluated,
    /// An eviction was refused (HTTP 429) by a PodDisruptionBudget.
    EvictionRefused,
    // Workloads.
    /// A workload's desired replicas changed.
    WorkloadScaled,
    /// A workload's pod template changed: a rollout started.
    WorkloadRolledOut,
    // Control plane.
    EtcdMemberRemoved,
    /// An etcd member joined as a learner.
    EtcdLearnerAdded,
    /// An etcd learner was promoted to voter.
    EtcdMemberPromoted,
    /// etcd lost quorum.
    QuorumLost,
    /// etcd regained quorum.
    QuorumRestored,
    /// The stable endpoint moved to another control plane (`node`).
    EndpointMoved,
    /// The API stopped answering through the stable endpoint.
    ApiUnavailable,
    /// The API answers through the stable endpoint again.
    ApiAvailable,
    // Autoscaler.
    /// The autoscaler asked for a new node in a pool.
    ScaleUp,
    /// The autoscaler started removing a node.
    ScaleDown,
    /// The autoscaler gave up removing a node (an eviction was refused).
    ScaleDownAborted,
    // Backups.
    BackupStarted,
    /// A backup finished (`message` gives its phase).
    BackupFinished,
    /// Data was restored from a backup.
    RestoreFinished,
    // The drill itself.
    /// A drill step started (`object` is the drill).
    StepStarted,
    FaultInjected,
    /// A preflight said go.
    PreflightPassed,
    /// A preflight said no-go; the drill stops.
    PreflightFailed,
    /// A wait's condition held.
    WaitSatisfied,
    /// A wait gave up; the drill stops.
    WaitTimedOut,
    /// A recovery runbook step finished.
    RecoveryStepFinished,
}

/// A Kubernetes object by kind, namespace and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ObjectRef {
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Namespace; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "{}/{}", self.kind, self.name)
        } else {
            write!(f, "{}/{}/{}", self.namespace, self.kind, self.name)
        }
    }
}
