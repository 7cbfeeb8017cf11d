//! The cluster a drill builds: control planes and worker pools, the
//! autoscaler, storage classes, the stable endpoint and the backups.

use std::collections::BTreeMap;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::latency::Latency;
use crate::scenario::located::Located;

/// The cluster: nodes, autoscaler, storage, the stable endpoint, backups.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ClusterSpec {
    /// A `ksail.io/v1alpha1 Cluster` file, relative to the drill file, whose
    /// topology is the starting point; everything set here overrides it.
    #[serde(default)]
    pub import: Option<Located<PathBuf>>,
    /// A `ClusterSnapshot` file (`bench snapshot`), relative to the drill
    /// file: its nodes are the cluster and its controllers, with their pods
    /// where they run now, the workloads. An `import:` beside it adds what
    /// a snapshot cannot see (the autoscaler's pools at zero nodes and its
    /// settings, the stable endpoint); `pools:` and `storageClasses:`
    /// entries of the same name override what was inferred.
    #[serde(default)]
    pub from_snapshot: Option<Located<PathBuf>>,
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
    /// How long pod start-up, image pulls, volume attach and detach and a
    /// replaced node's boot take: each a distribution drawn from the run's
    /// seed. Unset ones keep their published defaults
    /// (docs/drill-language.md lists them and their sources).
    #[serde(default)]
    pub latencies: Option<LatenciesSpec>,
}

/// Latency distributions, each `{min, median, p99}`; `min = median = p99`
/// pins one to a constant.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LatenciesSpec {
    /// From a pod's binding until its containers have started, its images
    /// on the node (default 0s / 2s / 5s: the pod start-up SLO).
    #[serde(default)]
    pub pod_startup: Option<Located<Latency>>,
    /// Pulling a pod's images onto a node without them, one pull at a time
    /// per node (default 1s / 20s / 1m30s).
    #[serde(default)]
    pub image_pull: Option<Located<Latency>>,
    /// Attaching a single-attach volume (default 1s / 5s / 30s).
    #[serde(default)]
    pub volume_attach: Option<Located<Latency>>,
    /// Detaching a single-attach volume from a healthy node (default
    /// 1s / 10s / 45s).
    #[serde(default)]
    pub volume_detach: Option<Located<Latency>>,
    /// A replaced node's boot until it is Ready (default 1m30s / 2m30s / 5m).
    #[serde(default)]
    pub node_boot: Option<Located<Latency>>,
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

impl TaintEffect {
    /// The effect as a Node's `spec.taints` spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
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
    /// No scale-down for this long after a scale-up (10m).
    #[serde(default)]
    pub scale_down_delay_after_add: Option<Duration>,
    /// No scale-down for this long after a scale-down started deleting
    /// (0s: the next scan may remove more).
    #[serde(default)]
    pub scale_down_delay_after_delete: Option<Duration>,
    /// No scale-down for this long after a scale-down failed (3m).
    #[serde(default)]
    pub scale_down_delay_after_failure: Option<Duration>,
    /// The three scale-down delays hold only the pool that scaled up,
    /// deleted or failed, not every pool (false).
    #[serde(default)]
    pub scale_down_delay_type_local: Option<bool>,
    /// A node whose removal the scale-down simulation refused is not
    /// looked at again for this long (5m).
    #[serde(default)]
    pub unremovable_node_recheck_timeout: Option<Duration>,
    /// Most non-empty nodes drained and deleted at once (1).
    #[serde(default)]
    pub max_drain_parallelism: Option<Located<u32>>,
    /// Most nodes, empty or drained, deleted at once (10).
    #[serde(default)]
    pub max_scale_down_parallelism: Option<Located<u32>>,
    /// Whether a pod with local storage (`emptyDir` not in memory,
    /// `hostPath`) keeps its node (true).
    #[serde(default)]
    pub skip_nodes_with_local_storage: Option<bool>,
    /// Whether a kube-system pod no PodDisruptionBudget covers keeps its
    /// node (true).
    #[serde(default)]
    pub skip_nodes_with_system_pods: Option<bool>,
    /// `--max-graceful-termination-sec`, in seconds (600): each scale-down
    /// eviction gives its pod at most this grace period (its own
    /// `terminationGracePeriodSeconds` when shorter), and a removal whose
    /// pods are still terminating this long (plus 30 s) after their
    /// evictions fails.
    #[serde(default)]
    pub max_graceful_termination_sec: Option<Located<u32>>,
    /// Whether DaemonSet pods are left out of a node's utilisation (false).
    #[serde(default)]
    pub ignore_daemon_sets_utilization: Option<bool>,
    /// Pods younger than this do not ask for a scale-up (0s).
    #[serde(default)]
    pub new_pod_scale_up_delay: Option<Duration>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::from_yaml;

    #[test]
    fn a_pool_reads_its_camel_case_fields_and_remembers_where() {
        let pool: PoolSpec = from_yaml(
            "name: burst\nnamePattern: burst-{hex12}\nautoscaled: {min: 0, max: 4}\n\
             taints: [{key: gpu, effect: NoSchedule}]\nlabels: {tier: burst}\n",
        )
        .unwrap();
        assert_eq!(*pool.name, "burst");
        assert_eq!(
            pool.name_pattern.as_deref().map(|p| p.as_str()),
            Some("burst-{hex12}")
        );
        let range = pool.autoscaled.unwrap();
        assert_eq!((*range.min, *range.max), (0, 4));
        assert_eq!(range.at.line, 3);
        assert_eq!(
            pool.taints.unwrap(),
            [TaintSpec {
                key: "gpu".to_owned(),
                value: None,
                effect: TaintEffect::NoSchedule
            }]
        );
        assert!(pool.count.is_none());
    }

    #[test]
    fn a_typo_in_a_cluster_field_is_an_error_not_a_default() {
        let err = from_yaml::<PoolSpec>("name: burst\nnamepattern: x\n").unwrap_err();
        assert!(err.contains("namepattern"), "{err}");
        assert!(from_yaml::<TaintSpec>("key: k\neffect: NoEvict\n").is_err());
    }

    #[test]
    fn volume_release_is_a_word_or_a_delay() {
        let class: StorageClassSpec =
            from_yaml("name: longhorn\nattach: Replicated\nreleaseOnNodeLoss: {after: 5m}\n")
                .unwrap();
        assert_eq!(
            *class.release_on_node_loss.unwrap(),
            Release::After(Duration::from_mins(5))
        );
        assert!(!class.default);
        assert!(class.binding_mode.is_none());
        let never: Release = from_yaml("never").unwrap();
        assert_eq!(never, Release::Never);
    }
}
