//! The cluster's shape: control planes, pools, autoscaler, storage, the
//! stable endpoint and backups, resolved from a drill's `cluster` section
//! (and the `ksail.io/v1alpha1 Cluster` file it may import).
//!
//! The topology is what the drill asks for; a backend turns it into nodes.
//! Names of autoscaler nodes are random (`{hex12}`), so they are drawn from
//! the backend's seeded generator when a node is created, not here.

pub mod ksail;
pub mod server_types;
pub mod snapshot;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::latency::Latencies;
use crate::name_pattern::NamePattern;
use crate::scenario::check::Checker;
use crate::scenario::spec::{
    AttachModel, BackupPhase, BindingMode, CapacitySpec, ClusterSpec, DurationRange, Expander,
    PoolSpec, Release, TaintEffect, TaintSpec,
};
use crate::scenario::{Diagnostics, Located, Position, SourceFile};

/// The pool name under which control planes are addressed (`randomNodeOf: control-plane`).
pub const CONTROL_PLANE_POOL: &str = "control-plane";

/// A resolved cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    pub control_planes: ControlPlanes,
    /// Worker pools, in the order the drill (or the import) lists them.
    pub pools: Vec<Pool>,
    pub autoscaler: Autoscaler,
    pub storage_classes: Vec<StorageClass>,
    /// The stable API endpoint, when the cluster has one.
    pub endpoint: Option<Endpoint>,
    pub backups: Vec<BackupSchedule>,
    /// How long start-ups, pulls, attaches, detaches and boots take.
    /// Written only when a drill overrides one, so a report at the
    /// defaults (and one written before latencies were drawn) reads and
    /// writes the same bytes.
    #[serde(default, skip_serializing_if = "Latencies::is_default")]
    pub latencies: Latencies,
    /// Drains delete pods directly instead of going through the eviction
    /// API (`kubectl drain --disable-eviction`), so no PodDisruptionBudget
    /// is consulted. Only a negative control sets it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub drains_bypass_budgets: bool,
    /// A rolling upgrade takes the next node as soon as the last one is
    /// back, without waiting for every workload to be Ready again. Only a
    /// negative control sets it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub upgrade_skips_settling: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControlPlanes {
    /// Numbered by `{n}` alone.
    pub name_pattern: NamePattern,
    /// The ordinals `{n}` takes, one per control plane.
    pub ordinals: Vec<u32>,
    /// Server type, when one was named.
    pub server_type: Option<String>,
    /// Allocatable capacity of each.
    pub capacity: Capacity,
    /// How many of the last control planes start as etcd learners that
    /// are never promoted (a membership change left half done). Only a
    /// negative control sets it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub learners_at_start: u32,
    /// The control planes as a snapshot captured them, each with its own
    /// name, labels, taints and allocatable; when set, they are the
    /// control planes, and the pattern only names recreated ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<KnownNode>,
}

/// A node that exists before the drill starts, as a snapshot captured it:
/// not made from a pool's pattern, so it keeps its own name and the labels,
/// taints and allocatable the real node has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KnownNode {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub capacity: Capacity,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl ControlPlanes {
    /// The control planes' node names, in ordinal order (a snapshot's in
    /// its order).
    pub fn names(&self) -> Vec<String> {
        if !self.nodes.is_empty() {
            return self.nodes.iter().map(|n| n.name.clone()).collect();
        }
        self.ordinals
            .iter()
            .map(|&n| self.name_pattern.name(n, String::new))
            .collect()
    }
}

/// A worker pool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pool {
    pub name: String,
    pub name_pattern: NamePattern,
    /// Static or autoscaled.
    pub size: PoolSize,
    /// Server type, when one was named.
    pub server_type: Option<String>,
    /// Allocatable capacity of each node.
    pub capacity: Capacity,
    /// Labels every node of the pool carries.
    pub labels: BTreeMap<String, String>,
    /// Taints every node of the pool carries.
    pub taints: Vec<Taint>,
    /// The pool's nodes as a snapshot captured them; when set, the pool
    /// starts with exactly these (its pattern names only later nodes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<KnownNode>,
}

impl Pool {
    /// Whether the cluster autoscaler manages this pool.
    pub fn is_autoscaled(&self) -> bool {
        matches!(self.size, PoolSize::Autoscaled { .. })
    }

    /// Nodes the pool has when the drill starts.
    pub fn initial_nodes(&self) -> u32 {
        if !self.nodes.is_empty() {
            return self.nodes.len() as u32;
        }
        match self.size {
            PoolSize::Static(n) => n,
            PoolSize::Autoscaled { min, .. } => min,
        }
    }

    /// The names of the pool's nodes that are known before the drill runs
    /// (patterns without `{hex12}`), in ordinal order.
    pub fn static_names(&self) -> Vec<String> {
        if !self.nodes.is_empty() {
            return self.nodes.iter().map(|n| n.name.clone()).collect();
        }
        if self.name_pattern.has_random() {
            return Vec::new();
        }
        (1..=self.initial_nodes())
            .map(|n| self.name_pattern.name(n, String::new))
            .collect()
    }

    /// The standby nodes a real backend boots for this pool, since neither
    /// kind nor `talosctl cluster create` can add a node later: up to
    /// `per_pool`, never past the pool's `max`, named `POOL-standby-N`.
    /// The served simulator's `--standby-nodes` boots the same ones, so a
    /// stand-in `kind` finds them under these names.
    pub fn standby_names(&self, per_pool: u32) -> Vec<String> {
        let PoolSize::Autoscaled { max, .. } = self.size else {
            return Vec::new();
        };
        let count = per_pool.min(max.saturating_sub(self.initial_nodes()));
        (1..=count)
            .map(|n| format!("{}-standby-{n}", self.name))
            .collect()
    }
}

/// How many nodes a pool has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PoolSize {
    /// Exactly this many, always.
    Static(u32),
    /// Between `min` and `max`, as the autoscaler decides.
    Autoscaled {
        /// Fewest nodes.
        min: u32,
        /// Most nodes.
        max: u32,
    },
}

/// Allocatable resources of one node, as Kubernetes quantities.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capacity {
    pub cpu: String,
    pub memory: String,
    /// Most pods.
    pub pods: u32,
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    pub key: String,
    /// Value (may be empty).
    pub value: String,
    pub effect: TaintEffect,
}

/// Cluster-autoscaler settings, defaults filled in. A report written
/// before a setting existed reads it as its default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Autoscaler {
    /// Most nodes in the cluster, counting static nodes; none means no limit.
    pub max_nodes_total: Option<u32>,
    /// How long a node must be unneeded before removal.
    pub scale_down_unneeded_time: Duration,
    /// Utilisation below which a node is unneeded.
    pub scale_down_utilization_threshold: f64,
    /// The expander chain.
    pub expanders: Vec<Expander>,
    /// Boot-and-join time of a new node.
    pub boot_delay: DurationRange,
    /// How often the autoscaler looks at the cluster.
    pub scan_interval: Duration,
    /// No scale-down for this long after a scale-up.
    pub scale_down_delay_after_add: Duration,
    /// No scale-down for this long after a scale-down started deleting.
    pub scale_down_delay_after_delete: Duration,
    /// No scale-down for this long after a failed scale-down.
    pub scale_down_delay_after_failure: Duration,
    /// The delays hold only the pool that acted
    /// (`--scale-down-delay-type-local`).
    pub scale_down_delay_type_local: bool,
    /// How long a node the scale-down simulation found unremovable is
    /// left out of later scans (`--unremovable-node-recheck-timeout`).
    pub unremovable_node_recheck_timeout: Duration,
    /// Most non-empty nodes drained and deleted at once.
    pub max_drain_parallelism: u32,
    /// Most nodes, empty or drained, deleted at once.
    pub max_scale_down_parallelism: u32,
    /// Whether a pod with local storage keeps its node.
    pub skip_nodes_with_local_storage: bool,
    /// Whether a kube-system pod without a PodDisruptionBudget keeps its node.
    pub skip_nodes_with_system_pods: bool,
    /// How long a scale-down waits for evicted pods before deleting the
    /// node anyway, in seconds.
    pub max_graceful_termination_sec: u32,
    /// Whether DaemonSet pods are left out of a node's utilisation.
    pub ignore_daemon_sets_utilization: bool,
    /// Pods younger than this do not ask for a scale-up.
    pub new_pod_scale_up_delay: Duration,
}

impl Default for Autoscaler {
    /// The upstream cluster-autoscaler defaults, and the 2–3 minutes a
    /// Hetzner server takes to boot and join.
    fn default() -> Self {
        Autoscaler {
            max_nodes_total: None,
            scale_down_unneeded_time: Duration::from_mins(10),
            scale_down_utilization_threshold: 0.5,
            expanders: vec![Expander::Random],
            boot_delay: DurationRange {
                min: Duration::from_mins(2),
                max: Duration::from_mins(3),
            },
            scan_interval: Duration::from_secs(10),
            // cluster-autoscaler's flag defaults (`config/flags/flags.go`,
            // FAQ "What are the parameters to CA?"). Upstream's
            // delay-after-delete is 0s ("defaults to scanInterval" in
            // older help texts: either way the next scan may go on).
            scale_down_delay_after_add: Duration::from_mins(10),
            scale_down_delay_after_delete: Duration::from_secs(0),
            scale_down_delay_after_failure: Duration::from_mins(3),
            scale_down_delay_type_local: false,
            unremovable_node_recheck_timeout: Duration::from_mins(5),
            max_drain_parallelism: 1,
            max_scale_down_parallelism: 10,
            skip_nodes_with_local_storage: true,
            skip_nodes_with_system_pods: true,
            max_graceful_termination_sec: 600,
            ignore_daemon_sets_utilization: false,
            new_pod_scale_up_delay: Duration::from_secs(0),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StorageClass {
    pub name: String,
    pub binding_mode: BindingMode,
    pub attach: AttachModel,
    /// What happens to an attachment when its node departs.
    pub release_on_node_loss: Release,
    /// Whether claims without a class get this one.
    pub default: bool,
    /// The node label its volumes are confined to, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology_key: Option<String>,
}

/// The stable API endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub name: String,
    /// Time to move to a healthy control plane.
    pub failover_delay: Duration,
    /// The control plane holding it at the start.
    pub holder: String,
    /// How clients reach the API. Only a negative control changes it from
    /// the floating address the platform uses.
    #[serde(default, skip_serializing_if = "EndpointMode::is_floating")]
    pub mode: EndpointMode,
}

/// How clients reach the API server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EndpointMode {
    /// Through the floating address, which fails over to a healthy control
    /// plane when its holder goes down.
    #[default]
    Floating,
    /// Through an address that stays on its first holder: no failover.
    Pinned,
    /// Through the first holder node's own address, as a kubeconfig that
    /// names a node instead of the stable endpoint does.
    HolderNode,
}

impl EndpointMode {
    fn is_floating(&self) -> bool {
        *self == EndpointMode::Floating
    }

    /// Whether the address moves to a healthy control plane.
    pub fn fails_over(self) -> bool {
        self == EndpointMode::Floating
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupSchedule {
    pub schedule: String,
    /// Interval between starts.
    pub every: Duration,
    /// How long one backup takes.
    pub duration: Duration,
    /// Chance that a backup fails.
    pub failure_probability: f64,
    /// How long before the drill the newest backup started.
    pub last_started_ago: Duration,
    /// Its phase at the start.
    pub last_phase: BackupPhase,
    /// Workloads (`namespace/Kind/name`) its backups leave out, as Velero
    /// does for objects labelled `velero.io/exclude-from-backup: "true"`.
    /// Only a negative control sets it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
}

impl Topology {
    /// Every node name known before the drill runs: the control planes and
    /// the nodes of static-named pools.
    pub fn static_node_names(&self) -> Vec<String> {
        let mut names = self.control_planes.names();
        for pool in &self.pools {
            names.extend(pool.static_names());
        }
        names
    }

    pub fn pool(&self, name: &str) -> Option<&Pool> {
        self.pools.iter().find(|p| p.name == name)
    }

    /// Nodes at the start of the drill, control planes included.
    pub fn initial_node_count(&self) -> u32 {
        self.control_planes.ordinals.len() as u32
            + self.pools.iter().map(Pool::initial_nodes).sum::<u32>()
    }
}

/// Resolves a drill's `cluster` section, importing its ksail file if any.
/// `drill_dir` is the folder relative paths are read from; `snapshot` is
/// what the drill's `fromSnapshot` file holds, already read.
pub fn resolve(
    cluster: &ClusterSpec,
    source: &SourceFile,
    drill_dir: &Path,
    snapshot: Option<snapshot::SnapshotCluster>,
) -> Result<Topology, Diagnostics> {
    let imported = match &cluster.import {
        Some(path) => Some(ksail::import(
            &crate::embedded::join(drill_dir, &path.value),
            path.at,
            source,
        )?),
        None => None,
    };
    let mut checker = Checker::new(source);
    let (base, inferred_classes) = match snapshot {
        Some(captured) => {
            let classes = captured.storage_classes.clone();
            (Some(with_snapshot(captured, imported)), classes)
        }
        None => (imported, Vec::new()),
    };
    let mut topology = merge(cluster, base, &mut checker);
    // The drill's classes override the snapshot's of the same name.
    let mut classes = inferred_classes;
    classes.retain(|c| !topology.storage_classes.iter().any(|o| o.name == c.name));
    classes.append(&mut topology.storage_classes);
    topology.storage_classes = classes;
    if checker.diagnostics.is_empty() {
        Ok(topology)
    } else {
        Err(checker.diagnostics)
    }
}

/// A snapshot's topology, completed by a ksail import with what a snapshot
/// cannot see: an autoscaled pool's bounds (and the pool itself while it
/// has no node), the autoscaler's settings when its flags were not
/// captured, and the stable endpoint. Nodes come from the snapshot only:
/// an imported static pool the snapshot does not have adds no node.
fn with_snapshot(captured: snapshot::SnapshotCluster, imported: Option<Imported>) -> Imported {
    let mut base = captured.imported;
    let Some(imported) = imported else {
        return base;
    };
    for pool in imported.pools {
        let PoolSize::Autoscaled { min, max } = pool.size else {
            continue;
        };
        match base.pools.iter_mut().find(|p| p.name == pool.name) {
            Some(existing) => {
                if !captured.autoscaler_flags {
                    existing.size = PoolSize::Autoscaled { min, max };
                }
            }
            None => base.pools.push(pool),
        }
    }
    if !captured.autoscaler_flags {
        base.autoscaler = imported.autoscaler;
    }
    base.endpoint = imported.endpoint;
    base
}

/// What an import contributes before the drill's own settings apply.
#[derive(Debug, Clone, Default)]
pub struct Imported {
    pub control_planes: Option<ControlPlanes>,
    pub pools: Vec<Pool>,
    pub autoscaler: Autoscaler,
    /// Endpoint name and holder, when the import enables one.
    pub endpoint: Option<Endpoint>,
}

fn merge(cluster: &ClusterSpec, base: Option<Imported>, checker: &mut Checker<'_>) -> Topology {
    let base = base.unwrap_or_default();
    let control_planes = resolve_control_planes(cluster, base.control_planes, checker);

    let mut pools = base.pools;
    for spec in &cluster.pools {
        match pools.iter_mut().find(|p| p.name == spec.name.as_str()) {
            Some(pool) => override_pool(pool, spec, checker),
            None => {
                if let Some(pool) = new_pool(spec, checker) {
                    pools.push(pool);
                }
            }
        }
    }

    check_names_apart(cluster, &control_planes, &pools, checker);

    let mut autoscaler = base.autoscaler;
    if let Some(spec) = &cluster.autoscaler {
        if let Some(max) = &spec.max_nodes_total {
            autoscaler.max_nodes_total = Some(max.value);
        }
        if let Some(t) = spec.scale_down_unneeded_time {
            autoscaler.scale_down_unneeded_time = t;
        }
        if let Some(t) = &spec.scale_down_utilization_threshold {
            autoscaler.scale_down_utilization_threshold = t.value;
        }
        if let Some(e) = &spec.expanders {
            autoscaler.expanders = e.clone();
        }
        if let Some(b) = &spec.boot_delay {
            autoscaler.boot_delay = b.value;
        }
        if let Some(s) = spec.scan_interval {
            autoscaler.scan_interval = s;
        }
        if let Some(d) = spec.scale_down_delay_after_add {
            autoscaler.scale_down_delay_after_add = d;
        }
        if let Some(d) = spec.scale_down_delay_after_delete {
            autoscaler.scale_down_delay_after_delete = d;
        }
        if let Some(d) = spec.scale_down_delay_after_failure {
            autoscaler.scale_down_delay_after_failure = d;
        }
        if let Some(local) = spec.scale_down_delay_type_local {
            autoscaler.scale_down_delay_type_local = local;
        }
        if let Some(d) = spec.unremovable_node_recheck_timeout {
            autoscaler.unremovable_node_recheck_timeout = d;
        }
        if let Some(n) = &spec.max_drain_parallelism {
            autoscaler.max_drain_parallelism = n.value;
        }
        if let Some(n) = &spec.max_scale_down_parallelism {
            autoscaler.max_scale_down_parallelism = n.value;
        }
        if let Some(b) = spec.skip_nodes_with_local_storage {
            autoscaler.skip_nodes_with_local_storage = b;
        }
        if let Some(b) = spec.skip_nodes_with_system_pods {
            autoscaler.skip_nodes_with_system_pods = b;
        }
        if let Some(s) = &spec.max_graceful_termination_sec {
            autoscaler.max_graceful_termination_sec = s.value;
        }
        if let Some(b) = spec.ignore_daemon_sets_utilization {
            autoscaler.ignore_daemon_sets_utilization = b;
        }
        if let Some(d) = spec.new_pod_scale_up_delay {
            autoscaler.new_pod_scale_up_delay = d;
        }
    }
    if let Some(max) = autoscaler.max_nodes_total {
        check_node_budget(&control_planes, &pools, max, cluster, checker);
    }

    let storage_classes = cluster
        .storage_classes
        .iter()
        .map(|c| StorageClass {
            name: c.name.value.clone(),
            binding_mode: c.binding_mode.unwrap_or(BindingMode::WaitForFirstConsumer),
            attach: c.attach,
            release_on_node_loss: c.release_on_node_loss.as_ref().map_or(
                match c.attach {
                    AttachModel::SingleNode => Release::Never,
                    AttachModel::Replicated => Release::Immediately,
                },
                |r| r.value,
            ),
            default: c.default,
            topology_key: c.topology_key.clone(),
        })
        .collect();

    let control_plane_names = control_planes.names();
    let endpoint = match (&cluster.endpoint, base.endpoint) {
        (Some(spec), imported) => {
            let holder = match &spec.holder {
                Some(holder) => {
                    if !control_plane_names.contains(&holder.value) {
                        checker.error(
                            holder.at,
                            format!(
                                "endpoint holder `{}` is not a control plane; expected one of: {}",
                                holder.value,
                                control_plane_names.join(", ")
                            ),
                        );
                    }
                    holder.value.clone()
                }
                None => control_plane_names.first().cloned().unwrap_or_default(),
            };
            Some(Endpoint {
                name: spec.name.clone(),
                failover_delay: spec
                    .failover_delay
                    .or(imported.map(|e| e.failover_delay))
                    .unwrap_or(DEFAULT_FAILOVER_DELAY),
                holder,
                mode: EndpointMode::Floating,
            })
        }
        (None, Some(mut imported)) => {
            imported.holder = control_plane_names.first().cloned().unwrap_or_default();
            Some(imported)
        }
        (None, None) => None,
    };

    let backups = cluster
        .backups
        .iter()
        .map(|b| BackupSchedule {
            schedule: b.schedule.value.clone(),
            every: b.every,
            duration: b.duration.unwrap_or(Duration::from_mins(15)),
            failure_probability: b.failure_probability.as_ref().map_or(0.0, |p| p.value),
            last_started_ago: b.last_started_ago.unwrap_or(Duration::from_mins(6 * 60)),
            last_phase: b.last_phase.unwrap_or(BackupPhase::Completed),
            excluded: Vec::new(),
        })
        .collect();

    Topology {
        control_planes,
        pools,
        autoscaler,
        storage_classes,
        endpoint,
        backups,
        latencies: resolve_latencies(cluster, checker),
        drains_bypass_budgets: false,
        upgrade_skips_settling: false,
    }
}

/// The defaults with the drill's overrides; each override must be a
/// distribution (min <= median <= p99, median above min unless constant).
fn resolve_latencies(cluster: &ClusterSpec, checker: &mut Checker<'_>) -> Latencies {
    let mut latencies = Latencies::default();
    let Some(spec) = &cluster.latencies else {
        return latencies;
    };
    let slots = [
        ("podStartup", &spec.pod_startup, &mut latencies.pod_startup),
        ("imagePull", &spec.image_pull, &mut latencies.image_pull),
        (
            "volumeAttach",
            &spec.volume_attach,
            &mut latencies.volume_attach,
        ),
        (
            "volumeDetach",
            &spec.volume_detach,
            &mut latencies.volume_detach,
        ),
        ("nodeBoot", &spec.node_boot, &mut latencies.node_boot),
    ];
    for (name, declared, slot) in slots {
        let Some(l) = declared else { continue };
        if let Some(problem) = l.value.problem() {
            checker.error(l.at, format!("{name}: {problem}"));
        }
        *slot = l.value;
    }
    latencies
}

/// How long a floating address takes to move when nobody said: the
/// health-check interval and API call of a typical failover controller.
pub const DEFAULT_FAILOVER_DELAY: Duration = Duration::from_secs(30);

fn resolve_control_planes(
    cluster: &ClusterSpec,
    base: Option<ControlPlanes>,
    checker: &mut Checker<'_>,
) -> ControlPlanes {
    let mut cp = base.unwrap_or_else(|| ControlPlanes {
        name_pattern: NamePattern::ordinal("control-plane"),
        ordinals: vec![1, 2, 3],
        server_type: Some("cx33".to_owned()),
        capacity: server_types::capacity("cx33").unwrap_or_else(server_types::fallback),
        learners_at_start: 0,
        nodes: Vec::new(),
    });
    let Some(spec) = &cluster.control_planes else {
        return cp;
    };
    if let Some(pattern) = &spec.name_pattern {
        // The checker has reported a malformed pattern already.
        if let Ok(parsed) = NamePattern::parse(pattern) {
            if !parsed.has_ordinal() || parsed.has_random() {
                checker.error(
                    pattern.at,
                    format!(
                        "control-plane name pattern `{}` is not numbered by `{{n}}` alone; \
                         control planes are numbered, and their names known before they boot",
                        pattern.value
                    ),
                );
            }
            cp.name_pattern = parsed;
        }
    }
    match (&spec.ordinals, &spec.count) {
        (Some(ordinals), _) => cp.ordinals = ordinals.value.clone(),
        (None, Some(count)) => cp.ordinals = (1..=count.value).collect(),
        (None, None) => {}
    }
    if let Some(server_type) = &spec.server_type {
        match lookup_server_type(server_type, checker) {
            Some(capacity) => cp.capacity = capacity,
            None => return cp,
        }
        cp.server_type = Some(server_type.value.clone());
    }
    if let Some(capacity) = &spec.capacity {
        cp.capacity = capacity_from(capacity);
    }
    cp
}

fn lookup_server_type(
    server_type: &Located<String>,
    checker: &mut Checker<'_>,
) -> Option<Capacity> {
    let capacity = server_types::capacity(&server_type.value);
    if capacity.is_none() {
        checker.error(
            server_type.at,
            format!(
                "unknown server type `{}`; expected one of: {} (or set `capacity`)",
                server_type.value,
                server_types::NAMES.join(", ")
            ),
        );
    }
    capacity
}

fn capacity_from(spec: &CapacitySpec) -> Capacity {
    Capacity {
        cpu: spec.cpu.value.clone(),
        memory: spec.memory.value.clone(),
        pods: spec.pods.unwrap_or(server_types::DEFAULT_MAX_PODS),
    }
}

fn taints_from(specs: &[TaintSpec]) -> Vec<Taint> {
    specs
        .iter()
        .map(|t| Taint {
            key: t.key.clone(),
            value: t.value.clone().unwrap_or_default(),
            effect: t.effect,
        })
        .collect()
}

/// Refuses two pools, or a pool and the control planes, whose name
/// patterns can make the same node name: the second Node of that name would
/// be refused by the API server, and in the simulator a fault aimed at one
/// would hit the other. Reported at the drill's pattern (or pool) that
/// collides with one declared before it.
fn check_names_apart(
    cluster: &ClusterSpec,
    control_planes: &ControlPlanes,
    pools: &[Pool],
    checker: &mut Checker<'_>,
) {
    let at = |pool: &str| {
        cluster
            .pools
            .iter()
            .find(|spec| spec.name.value == pool)
            .map(|spec| spec.name_pattern.as_ref().map_or(spec.at, |p| p.at))
            .or(cluster.import.as_ref().map(|import| import.at))
    };
    for (index, pool) in pools.iter().enumerate() {
        let earlier = pools[..index]
            .iter()
            .map(|other| (format!("pool `{}`", other.name), &other.name_pattern));
        let named = std::iter::once((
            "the control planes".to_owned(),
            &control_planes.name_pattern,
        ))
        .chain(earlier);
        for (what, pattern) in named {
            if pool.name_pattern.can_collide(pattern)
                && let Some(at) = at(&pool.name)
            {
                checker.error(
                    at,
                    format!(
                        "pool `{}` names its nodes `{}`, which can make the same names as {what} \
                         (`{}`); expected patterns that cannot overlap",
                        pool.name,
                        pool.name_pattern.as_str(),
                        pattern.as_str()
                    ),
                );
            }
        }
    }
}

fn new_pool(spec: &Located<PoolSpec>, checker: &mut Checker<'_>) -> Option<Pool> {
    let size = match (&spec.count, &spec.autoscaled) {
        (Some(count), None) => PoolSize::Static(count.value),
        (None, Some(range)) => PoolSize::Autoscaled {
            min: range.min.value,
            max: range.max.value,
        },
        // Both set is reported by the file-local checks.
        (Some(_), Some(_)) => return None,
        (None, None) => {
            checker.error(
                spec.at,
                format!(
                    "pool `{}` sets neither `count` nor `autoscaled`; expected one (a static \
                     pool has a count, an autoscaled pool a min and a max)",
                    spec.name.value
                ),
            );
            return None;
        }
    };
    let capacity = match (&spec.capacity, &spec.server_type) {
        (Some(capacity), _) => capacity_from(capacity),
        (None, Some(server_type)) => lookup_server_type(server_type, checker)?,
        (None, None) => {
            checker.error(
                spec.at,
                format!(
                    "pool `{}` has no capacity; expected `serverType` ({}) or `capacity`",
                    spec.name.value,
                    server_types::NAMES.join(", ")
                ),
            );
            return None;
        }
    };
    let default_pattern = match size {
        PoolSize::Static(_) => NamePattern::ordinal(&spec.name.value),
        PoolSize::Autoscaled { .. } => NamePattern::random(&spec.name.value),
    };
    Some(Pool {
        name: spec.name.value.clone(),
        // The checker has reported a malformed pattern already.
        name_pattern: spec
            .name_pattern
            .as_ref()
            .and_then(|p| NamePattern::parse(p).ok())
            .unwrap_or(default_pattern),
        size,
        server_type: spec.server_type.as_ref().map(|s| s.value.clone()),
        capacity,
        labels: spec.labels.clone().unwrap_or_default(),
        taints: taints_from(spec.taints.as_deref().unwrap_or_default()),
        nodes: Vec::new(),
    })
}

fn override_pool(pool: &mut Pool, spec: &Located<PoolSpec>, checker: &mut Checker<'_>) {
    if let Some(count) = &spec.count {
        pool.size = PoolSize::Static(count.value);
    }
    if let Some(range) = &spec.autoscaled {
        pool.size = PoolSize::Autoscaled {
            min: range.min.value,
            max: range.max.value,
        };
    }
    if let Some(pattern) = &spec.name_pattern
        && let Ok(parsed) = NamePattern::parse(pattern)
    {
        pool.name_pattern = parsed;
    }
    if let Some(server_type) = &spec.server_type
        && let Some(capacity) = lookup_server_type(server_type, checker)
    {
        pool.capacity = capacity;
        pool.server_type = Some(server_type.value.clone());
    }
    if let Some(capacity) = &spec.capacity {
        pool.capacity = capacity_from(capacity);
    }
    if let Some(labels) = &spec.labels {
        pool.labels = labels.clone();
    }
    if let Some(taints) = &spec.taints {
        pool.taints = taints_from(taints);
    }
}

/// `maxNodesTotal` counts every node, static ones included: a cluster that
/// starts above it can never scale up, which is a drill written wrong.
fn check_node_budget(
    control_planes: &ControlPlanes,
    pools: &[Pool],
    max: u32,
    cluster: &ClusterSpec,
    checker: &mut Checker<'_>,
) {
    let max_at = cluster
        .autoscaler
        .as_ref()
        .and_then(|a| a.max_nodes_total.as_ref().map(|m| m.at))
        .unwrap_or(Position::UNKNOWN);
    let cps = control_planes.ordinals.len() as u32;
    for pool in pools {
        let needed = pool.initial_nodes();
        if needed > max {
            let at = cluster
                .pools
                .iter()
                .find(|p| p.name.as_str() == pool.name)
                .map_or(max_at, |p| p.count.as_ref().map_or(p.at, |c| c.at));
            checker.error(
                at,
                format!(
                    "pool `{}` starts with {needed} nodes, above maxNodesTotal {max}",
                    pool.name
                ),
            );
            return;
        }
    }
    let start: u32 = cps + pools.iter().map(Pool::initial_nodes).sum::<u32>();
    if start > max {
        checker.error(
            max_at,
            format!(
                "the cluster starts with {start} nodes ({cps} control planes and the pools' \
                 counts and minimums), above maxNodesTotal {max}, which counts every node"
            ),
        );
    }
}
