//! The drill language as written: the serde types of a drill file.
//!
//! Every struct refuses unknown fields, so a typo is an error with a line and
//! a column rather than a setting silently ignored. Choices between forms are
//! either externally tagged enums (`target: {node: prod-worker-2}`) or a set
//! of optional fields of which validation demands exactly one, never
//! `untagged` or `flatten`, whose error messages name nothing useful.
//! Fields whose meaning is checked after parsing (names that refer to other
//! parts of the drill, bounds) are [`Located`], so those checks can point at
//! the text too.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::located::Located;
use crate::duration::Duration;

/// The `apiVersion` every drill file declares.
pub const API_VERSION: &str = "drillbench.dev/v1alpha1";
/// The `kind` every drill file declares.
pub const KIND: &str = "Drill";

/// A drill file: a cluster, what runs on it, the faults, and the verdicts.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "drillbench Drill")]
pub struct DrillSpec {
    /// Always `drillbench.dev/v1alpha1`.
    #[schemars(extend("const" = API_VERSION))]
    pub api_version: Located<String>,
    /// Always `Drill`.
    #[schemars(extend("const" = KIND))]
    pub kind: Located<String>,
    /// The drill's name and what it rehearses.
    pub metadata: Metadata,
    /// The cluster the drill builds.
    pub cluster: ClusterSpec,
    /// Kubernetes manifests deployed before the steps run.
    #[serde(default)]
    pub workloads: Vec<Located<WorkloadSource>>,
    /// Admission rules the cluster enforces on every pod.
    #[serde(default)]
    pub guards: Vec<Located<GuardSpec>>,
    /// What happens, in order: preflight checks, faults, load changes, waits.
    #[serde(default)]
    pub steps: Vec<Located<StepSpec>>,
    /// The verdicts: each is judged over the whole timeline of the drill.
    #[serde(default)]
    pub assertions: Vec<Located<AssertionSpec>>,
    /// A recovery runbook, as a graph of steps with duration distributions.
    #[serde(default)]
    pub recovery: Option<RecoverySpec>,
}

/// Identity of a drill.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metadata {
    /// Short name, used for `bench run NAME` and the report folder.
    pub name: Located<String>,
    /// One paragraph: what the drill rehearses and why.
    #[serde(default)]
    pub description: Option<String>,
}

/// The cluster: nodes, autoscaler, storage, the stable endpoint, backups.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterSpec {
    /// A `ksail.io/v1alpha1 Cluster` file, relative to the drill file, whose
    /// topology is the starting point; everything set here overrides it.
    #[serde(default)]
    pub import: Option<Located<PathBuf>>,
    /// The control-plane nodes.
    #[serde(default)]
    pub control_planes: Option<ControlPlaneSpec>,
    /// Worker pools, static or autoscaled. A pool with an imported pool's
    /// name overrides the fields it sets.
    #[serde(default)]
    pub pools: Vec<Located<PoolSpec>>,
    /// Cluster-autoscaler settings.
    #[serde(default)]
    pub autoscaler: Option<AutoscalerSpec>,
    /// Storage classes and how their volumes behave when a node departs.
    #[serde(default)]
    pub storage_classes: Vec<Located<StorageClassSpec>>,
    /// The stable API endpoint (a floating address held by one control plane).
    #[serde(default)]
    pub endpoint: Option<EndpointSpec>,
    /// Scheduled backups.
    #[serde(default)]
    pub backups: Vec<Located<BackupSpec>>,
}

/// The control-plane nodes.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControlPlaneSpec {
    /// How many control planes (3 by default).
    #[serde(default)]
    pub count: Option<Located<u32>>,
    /// Node name pattern; `{n}` is the ordinal (default `control-plane-{n}`).
    #[serde(default)]
    pub name_pattern: Option<Located<String>>,
    /// The ordinals `{n}` takes, when they are not `1..=count` (after
    /// recreates production runs `prod-control-plane-2`, `-4`, `-5`).
    #[serde(default)]
    pub ordinals: Option<Located<Vec<u32>>>,
    /// Server type from the table (`cx23`, `cx33`, `cx43`, `cx53`).
    #[serde(default)]
    pub server_type: Option<Located<String>>,
    /// Allocatable capacity; overrides the server type's.
    #[serde(default)]
    pub capacity: Option<CapacitySpec>,
}

/// A pool of worker nodes.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PoolSpec {
    /// Pool name, as the autoscaler and the cloud know it.
    pub name: Located<String>,
    /// Node name pattern: `{n}` is the ordinal, `{hex12}` twelve seeded
    /// random hex digits (as the autoscaler names servers).
    #[serde(default)]
    pub name_pattern: Option<Located<String>>,
    /// A static pool of exactly this many nodes.
    #[serde(default)]
    pub count: Option<Located<u32>>,
    /// An autoscaled pool between `min` and `max` nodes; it starts at `min`.
    #[serde(default)]
    pub autoscaled: Option<Located<AutoscaledRange>>,
    /// Server type from the table (`cx23`, `cx33`, `cx43`, `cx53`).
    #[serde(default)]
    pub server_type: Option<Located<String>>,
    /// Allocatable capacity; overrides the server type's.
    #[serde(default)]
    pub capacity: Option<CapacitySpec>,
    /// Labels every node of the pool carries.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    /// Taints every node of the pool carries.
    #[serde(default)]
    pub taints: Option<Vec<TaintSpec>>,
}

/// Bounds of an autoscaled pool.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AutoscaledRange {
    /// Fewest nodes the autoscaler keeps.
    pub min: Located<u32>,
    /// Most nodes the autoscaler creates.
    pub max: Located<u32>,
}

/// Allocatable resources of a node, as Kubernetes quantities.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapacitySpec {
    /// CPU, e.g. `8` or `7500m`.
    pub cpu: Located<String>,
    /// Memory, e.g. `16Gi`.
    pub memory: Located<String>,
    /// Most pods the node runs (110 by default, the kubelet's).
    #[serde(default)]
    pub pods: Option<u32>,
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaintSpec {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    #[serde(default)]
    pub value: Option<String>,
    /// What the taint does to pods that do not tolerate it.
    pub effect: TaintEffect,
}

/// Taint effects, as Kubernetes spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum TaintEffect {
    /// New pods that do not tolerate it are not scheduled.
    NoSchedule,
    /// The scheduler avoids the node when it can.
    PreferNoSchedule,
    /// Running pods that do not tolerate it are evicted.
    NoExecute,
}

/// Cluster-autoscaler settings; unset fields take the upstream defaults.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AutoscalerSpec {
    /// Most nodes in the cluster, counting every node (static ones too).
    #[serde(default)]
    pub max_nodes_total: Option<Located<u32>>,
    /// How long a node must be unneeded before it is removed (10m).
    #[serde(default)]
    pub scale_down_unneeded_time: Option<Duration>,
    /// A node is unneeded below this share of requested CPU and memory (0.5).
    #[serde(default)]
    pub scale_down_utilization_threshold: Option<Located<f64>>,
    /// Expanders, tried in order until one picks a single pool.
    #[serde(default)]
    pub expanders: Option<Vec<Expander>>,
    /// How long a new node takes to boot and join (uniform between the bounds).
    #[serde(default)]
    pub boot_delay: Option<Located<DurationRange>>,
    /// How often the autoscaler re-evaluates the cluster (10s).
    #[serde(default)]
    pub scan_interval: Option<Duration>,
}

/// A cluster-autoscaler expander.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Expander {
    /// The pool that needs the fewest new nodes.
    LeastNodes,
    /// The pool that leaves the least CPU and memory idle.
    LeastWaste,
    /// A seeded random pool.
    Random,
    /// The pool that schedules the most pending pods.
    MostPods,
}

/// A closed range of durations.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DurationRange {
    /// Lower bound.
    pub min: Duration,
    /// Upper bound.
    pub max: Duration,
}

/// A storage class and the behaviour of its volumes.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StorageClassSpec {
    /// Class name, as claims' `storageClassName` refers to it.
    pub name: Located<String>,
    /// When a claim is bound (`WaitForFirstConsumer` by default).
    #[serde(default)]
    pub binding_mode: Option<BindingMode>,
    /// How many nodes a volume attaches to.
    pub attach: AttachModel,
    /// What happens to an attachment when its node departs.
    #[serde(default)]
    pub release_on_node_loss: Option<Located<Release>>,
    /// Whether claims without a class get this one.
    #[serde(default)]
    pub default: bool,
    /// The node label a provisioned volume is confined to (its PV's node
    /// affinity): `kubernetes.io/hostname` for node-local volumes,
    /// `topology.kubernetes.io/zone` for zonal ones. Unset: any node can
    /// use it.
    #[serde(default)]
    pub topology_key: Option<String>,
}

/// Volume binding modes, as Kubernetes spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum BindingMode {
    /// Bound and provisioned when the claim is created.
    Immediate,
    /// Bound when the first pod using the claim is scheduled.
    WaitForFirstConsumer,
}

/// How many nodes a volume can be attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum AttachModel {
    /// One node at a time, like an `hcloud` block volume.
    SingleNode,
    /// Replicated across nodes, like Longhorn: any node can attach it.
    Replicated,
}

/// What happens to a volume attachment when its node departs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Release {
    /// Never released until an operator acts (an `hcloud` volume).
    Never,
    /// Released as soon as the node is gone.
    Immediately,
    /// Released this long after the node is gone.
    After(Duration),
}

/// The stable API endpoint.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EndpointSpec {
    /// Its name, such as `prod-floating-ip`.
    pub name: String,
    /// How long the address takes to move to a healthy control plane.
    #[serde(default)]
    pub failover_delay: Option<Duration>,
    /// The control plane holding it at the start (the first by default).
    #[serde(default)]
    pub holder: Option<Located<String>>,
}

/// A backup schedule and the state of its newest backup at the start.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BackupSpec {
    /// Schedule name, as `velero.io/schedule-name` carries it.
    pub schedule: Located<String>,
    /// How often a backup starts.
    pub every: Duration,
    /// How long a backup takes.
    #[serde(default)]
    pub duration: Option<Duration>,
    /// Chance that a backup ends `Failed` or `PartiallyFailed`.
    #[serde(default)]
    pub failure_probability: Option<Located<f64>>,
    /// How long before the drill starts the newest backup started.
    #[serde(default)]
    pub last_started_ago: Option<Duration>,
    /// The phase of the newest backup at the start (`Completed` by default).
    #[serde(default)]
    pub last_phase: Option<BackupPhase>,
}

/// Velero backup phases that matter to a drill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum BackupPhase {
    /// Finished and usable.
    Completed,
    /// Finished with errors: some items are missing.
    PartiallyFailed,
    /// Finished without a usable backup.
    Failed,
    /// Still running.
    InProgress,
}

/// Where the drill's Kubernetes objects come from.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum WorkloadSource {
    /// A file of Kubernetes YAML (multi-document, as `kustomize build` prints
    /// it), relative to the drill file.
    Path(PathBuf),
    /// One Kubernetes object written in the drill file.
    Inline(serde_json::Value),
}

/// An admission rule the cluster enforces on every pod it admits.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GuardSpec {
    /// Guard name, as assertions and negative controls refer to it.
    pub name: Located<String>,
    /// `Enforce` refuses a pod that breaks the rule; `Audit` records it.
    pub action: GuardAction,
    /// Which pods the rule applies to.
    #[serde(rename = "match")]
    pub matches: PodMatch,
    /// What every matching pod must require of its node.
    pub require: Requirement,
    /// Add the requirement to every required node-selector term of a
    /// matching pod before checking (as a mutating policy does), instead of
    /// only checking that the pod carries it.
    #[serde(default)]
    pub mutate: bool,
    /// Set only by an ablation: after mutating, add a second required term
    /// without the requirement, which ORs it away.
    #[serde(skip)]
    #[schemars(skip)]
    pub unlabelled_term: bool,
}

/// Whether a guard refuses or only records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum GuardAction {
    /// Refuse the pod at admission.
    Enforce,
    /// Admit the pod and record the violation.
    Audit,
}

/// A selection of pods. Every field that is set must match.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PodMatch {
    /// Pods that mount a claim of this storage class.
    #[serde(default)]
    pub mounts_claim_of_class: Option<Located<String>>,
    /// Pods that mount no claim of this storage class.
    #[serde(default)]
    pub mounts_no_claim_of_class: Option<Located<String>>,
    /// Pods in one of these namespaces.
    #[serde(default)]
    pub namespaces: Option<Vec<String>>,
    /// Pods carrying all of these labels.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
}

/// A requirement on the node a pod may run on.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Requirement {
    /// A node-selector requirement every required node-selector term of the
    /// pod must contain (terms are ORed, so one term without it fails open).
    pub node_affinity: Located<NodeRequirement>,
}

/// One node-selector requirement, as Kubernetes writes it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeRequirement {
    /// Label key.
    pub key: String,
    /// How the label is compared.
    pub operator: NodeOperator,
    /// Values for `In`, `NotIn`, `Gt`, `Lt`.
    #[serde(default)]
    pub values: Option<Vec<String>>,
}

impl NodeRequirement {
    /// The same requirement as a Kubernetes object, for the matchers.
    pub fn to_kubernetes(&self) -> k8s_openapi::api::core::v1::NodeSelectorRequirement {
        let operator = match self.operator {
            NodeOperator::In => "In",
            NodeOperator::NotIn => "NotIn",
            NodeOperator::Exists => "Exists",
            NodeOperator::DoesNotExist => "DoesNotExist",
            NodeOperator::Gt => "Gt",
            NodeOperator::Lt => "Lt",
        };
        k8s_openapi::api::core::v1::NodeSelectorRequirement {
            key: self.key.clone(),
            operator: operator.to_owned(),
            values: self.values.clone(),
        }
    }
}

/// Node-selector operators, as Kubernetes spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum NodeOperator {
    /// The label's value is one of the values.
    In,
    /// The label is missing or its value is none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is missing.
    DoesNotExist,
    /// The label's value, as an integer, is greater than the value.
    Gt,
    /// The label's value, as an integer, is less than the value.
    Lt,
}

/// One step of a drill. Exactly one of the action fields is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StepSpec {
    /// What this step is for, as the report names it.
    #[serde(default)]
    pub name: Option<String>,
    /// Go/no-go guards before a destructive fault; a no-go stops the drill.
    #[serde(default)]
    pub preflight: Option<PreflightStep>,
    /// Inject a fault.
    #[serde(default)]
    pub fault: Option<Located<Fault>>,
    /// Change a workload's replica count (load arriving or leaving).
    #[serde(default)]
    pub scale: Option<ScaleStep>,
    /// Change a Deployment's pod template (a new image): its pods are
    /// replaced as its strategy (`maxSurge`, `maxUnavailable`) allows.
    #[serde(default)]
    pub rollout: Option<RolloutStep>,
    /// Let time pass, or wait for a condition.
    #[serde(default)]
    pub wait: Option<WaitStep>,
}

/// The control-plane recreate preflight, judged on the simulated cluster.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PreflightStep {
    /// The control plane about to be recreated (the endpoint holder by default).
    #[serde(default)]
    pub target: Option<Located<Target>>,
    /// The backup schedule whose newest backup must be recent and complete.
    #[serde(default)]
    pub schedule: Option<Located<String>>,
    /// The newest backup must have finished less than this long ago (26h).
    #[serde(default)]
    pub max_backup_age: Option<Duration>,
}

/// A fault to inject.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Fault {
    /// The server is deleted at the cloud; the Node object goes with it.
    DeleteNode(NodeFault),
    /// The node stops heartbeating; its server and Node object stay.
    CrashNode(NodeFault),
    /// A lost static node is provisioned again under its name (`ksail
    /// cluster update` re-running provisioning for missing members): the
    /// node is Ready again and the pods stuck on it terminate.
    ReplaceNode(NodeFault),
    /// A control plane is removed from etcd, deleted and replaced by a fresh
    /// node that joins as a learner and is promoted.
    RecreateControlPlane(NodeFault),
    /// A pool disappears from the autoscaler's configuration while its
    /// nodes keep running.
    RemovePool(PoolFault),
    /// A rolling upgrade: static workers one at a time, then control planes,
    /// autoscaler nodes cordoned, drained and deleted.
    RollingUpgrade(UpgradeFault),
    /// Every node and every volume is lost; recovery follows `recovery`.
    FullRebuild(RebuildFault),
    /// One namespace's objects are lost and restored from a backup of it
    /// taken at the fault: what writers in it acknowledged after the
    /// backup captured them is lost, the window the `rpo:` assertion of
    /// the schedule judges.
    RestoreNamespace(RestoreNamespaceFault),
}

/// A fault aimed at one node.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeFault {
    /// Which node.
    pub target: Located<Target>,
    /// Drain the node through the eviction API first.
    #[serde(default)]
    pub drain: bool,
    /// For a recreate: how long the replacement takes to boot.
    #[serde(default)]
    pub boot_delay: Option<Located<DurationRange>>,
}

/// How a fault picks its node.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Target {
    /// A node by name.
    Node(String),
    /// A random node of the pool (`control-plane` for the control planes),
    /// chosen by the drill's seed.
    RandomNodeOf(String),
    /// The node the cluster autoscaler would remove next from the pool.
    AutoscalerPick(String),
    /// The control plane holding the stable endpoint.
    EndpointHolder,
    /// A control plane other than the endpoint holder.
    OtherControlPlane,
}

/// A fault aimed at a pool.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PoolFault {
    /// The pool's name.
    pub pool: Located<String>,
}

/// A rolling upgrade.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpgradeFault {
    /// How long a node takes to reboot into the new version (90s).
    #[serde(default)]
    pub reboot: Option<Duration>,
    /// A drain that has not finished after this long fails the upgrade (10m).
    #[serde(default)]
    pub drain_timeout: Option<Duration>,
}

/// A full rebuild.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RebuildFault {
    /// The backup schedule restored from.
    #[serde(default)]
    pub restore_from: Option<Located<String>>,
}

/// A namespace lost and restored from a backup of it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreNamespaceFault {
    /// The namespace: one the drill's manifests put objects into.
    pub namespace: Located<String>,
    /// The backup schedule the backup is taken under (one of
    /// `cluster.backups`; its `duration` is how long the backup runs while
    /// the writers keep writing).
    pub schedule: Located<String>,
}

/// A change of a workload's replica count.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScaleStep {
    /// The workload, as `namespace/Kind/name` (e.g. `load/Deployment/burst`).
    pub workload: Located<String>,
    /// The new replica count.
    pub replicas: u32,
}

/// A change of a Deployment's pod template, as `kubectl set image` makes it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RolloutStep {
    /// The Deployment, as `namespace/Deployment/name` (e.g. `apps/Deployment/web`).
    pub workload: Located<String>,
    /// The new image.
    pub image: String,
    /// The container whose image changes (every container when unset).
    #[serde(default)]
    pub container: Option<String>,
}

/// Time passing, or a wait for a condition.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WaitStep {
    /// Let exactly this much time pass.
    #[serde(default, rename = "for")]
    pub duration: Option<Duration>,
    /// Wait until this holds.
    #[serde(default)]
    pub until: Option<Located<Condition>>,
    /// Give up waiting after this long; the drill fails (required with `until`).
    #[serde(default)]
    pub timeout: Option<Duration>,
}

/// A condition on the cluster's state.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Condition {
    /// Every workload has all its replicas ready.
    AllWorkloadsReady,
    /// One workload (`namespace/Kind/name`) has all its replicas ready.
    WorkloadReady(String),
    /// The pool has exactly this many Ready nodes.
    PoolSize(PoolSize),
    /// etcd has this many voting members and no learners.
    EtcdVoters(u32),
}

/// A pool's size.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PoolSize {
    /// The pool's name.
    pub pool: String,
    /// Ready nodes.
    pub nodes: u32,
}

/// A verdict judged over the drill's timeline. Exactly one kind is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AssertionSpec {
    /// Assertion name, as reports and negative controls refer to it.
    pub name: Located<String>,
    /// Recovery time: how long after the fault the subject was whole again.
    #[serde(default)]
    pub rto: Option<RtoAssertion>,
    /// Recovery point: the data-loss window after a restore.
    #[serde(default)]
    pub rpo: Option<RpoAssertion>,
    /// Share of probes that found the subject available.
    #[serde(default)]
    pub availability: Option<AvailabilityAssertion>,
    /// Selected pods only ever ran on nodes matching a requirement,
    /// judged at every event, not only at the end.
    #[serde(default)]
    pub placement: Option<PlacementAssertion>,
    /// etcd never lost quorum.
    #[serde(default)]
    pub quorum: Option<QuorumAssertion>,
    /// No eviction took a PodDisruptionBudget below its budget.
    #[serde(default)]
    pub pdb_respected: Option<Empty>,
    /// Pods outside a guard still burst onto autoscaler pools when the
    /// baseline is full.
    #[serde(default)]
    pub burst_unchanged: Option<BurstAssertion>,
    /// No single-attach volume stayed attached to a departed node.
    #[serde(default)]
    pub no_stranded_volumes: Option<Empty>,
    /// The stable endpoint's address never changed (no credential refresh).
    #[serde(default)]
    pub endpoint_unchanged: Option<Empty>,
    /// A recreated control plane joined as a learner and was promoted.
    #[serde(default)]
    pub member_promoted: Option<Empty>,
    /// Every node belongs to a pool the autoscaler manages or a static pool.
    #[serde(default)]
    pub no_stranded_nodes: Option<Empty>,
    /// A negative control: proof that a guard or an assertion bites.
    #[serde(default)]
    pub negative_control: Option<NegativeControl>,
}

/// A marker for assertions that take no parameters: write `{}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// What an RTO is measured on.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Subject {
    /// The API through the stable endpoint.
    Api,
    /// The control plane whole: quorum, every member voting, every control
    /// plane Ready, the API up through the endpoint.
    ControlPlane,
    /// Every workload with all replicas ready.
    AllWorkloads,
    /// One workload, as `namespace/Kind/name`.
    Workload(String),
    /// The pods a selection matches.
    Pods(PodMatch),
}

/// An RTO bound.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RtoAssertion {
    /// What must recover.
    pub of: Located<Subject>,
    /// The bound.
    pub within: Duration,
    /// A bound on the automated part of the recovery runbook alone.
    #[serde(default)]
    pub automated_within: Option<Duration>,
}

/// An RPO bound.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RpoAssertion {
    /// The backup schedule restored from.
    pub schedule: Located<String>,
    /// The bound on the data-loss window.
    pub within: Duration,
}

/// An availability bound.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AvailabilityAssertion {
    /// What is probed.
    pub of: Located<Subject>,
    /// Lowest acceptable share of successful probes, between 0 and 1.
    pub at_least: Located<f64>,
}

/// A placement rule.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlacementAssertion {
    /// Which pods.
    pub pods: PodMatch,
    /// Every node they ever run on must satisfy all of these.
    pub nodes: Vec<Located<NodeRequirement>>,
}

/// A quorum rule.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct QuorumAssertion {
    /// Longest acceptable stretch without quorum (zero by default: never lost).
    #[serde(default)]
    pub max_loss: Option<Duration>,
}

/// Burst must stay possible for pods outside a guard.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BurstAssertion {
    /// The pods that must still burst.
    pub pods: PodMatch,
    /// The pools they must reach.
    pub pools: Vec<Located<String>>,
}

/// A negative control. Exactly one form is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NegativeControl {
    /// Admission: a planted object that breaks a guard must be refused.
    #[serde(default)]
    pub admission: Option<AdmissionControl>,
    /// Ablation: the same drill and seed with a guard removed or weakened
    /// must fail the named assertions.
    #[serde(default)]
    pub ablation: Option<AblationControl>,
}

/// An admission negative control.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AdmissionControl {
    /// The guard that must refuse the object.
    pub guard: Located<String>,
    /// The object submitted (a Pod or a pod-template workload).
    pub object: Located<serde_json::Value>,
}

/// An ablation negative control.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AblationControl {
    /// The guard that is weakened.
    pub guard: Located<String>,
    /// How it is weakened.
    pub change: Located<GuardChange>,
    /// Assertions that must fail once the guard is weakened.
    pub must_fail: Vec<Located<String>>,
}

/// A way to weaken a guard.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum GuardChange {
    /// Remove the guard.
    Remove,
    /// Replace its requirement (e.g. with `ksail.io/autoscaled DoesNotExist`).
    ReplaceRequirement(NodeRequirement),
    /// Require the same key with other values (e.g. `["false"]`).
    SetValues(Vec<String>),
    /// Add a second, unlabelled node-selector term next to the guarded one,
    /// which ORs the requirement away.
    AddUnlabelledTerm,
}

/// A recovery runbook as a graph of steps.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RecoverySpec {
    /// The steps; a step starts when every step it comes `after` has finished.
    pub steps: Vec<Located<RecoveryStep>>,
}

/// One step of a recovery runbook.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RecoveryStep {
    /// Step name, as `after` refers to it.
    pub name: Located<String>,
    /// How long one attempt takes.
    pub duration: Located<DurationDistribution>,
    /// Steps that must finish first.
    #[serde(default)]
    pub after: Vec<Located<String>>,
    /// Whether a machine does it (counts toward the automated RTO) or a person.
    #[serde(default)]
    pub automated: bool,
    /// Chance that an attempt fails and is retried.
    #[serde(default)]
    pub failure_probability: Option<Located<f64>>,
    /// Most attempts before the recovery fails (1 by default: no retry).
    #[serde(default)]
    pub max_attempts: Option<Located<u32>>,
}

/// A distribution of durations.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum DurationDistribution {
    /// Always this long.
    Fixed(Duration),
    /// Uniform between the bounds.
    Uniform(DurationRange),
    /// Triangular: between the bounds, most often near `mode`.
    Triangular(Triangular),
}

/// A triangular distribution.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Triangular {
    /// Lower bound.
    pub min: Duration,
    /// Most likely value.
    pub mode: Duration,
    /// Upper bound.
    pub max: Duration,
}
