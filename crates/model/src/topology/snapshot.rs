//! The cluster a `ClusterSnapshot` captured, as a topology: the real node
//! set, grouped into control planes and pools, and the real storage
//! classes with the attach model their provisioner implies.
//!
//! A snapshot says which nodes exist, not how the cluster-autoscaler sees
//! them, so the pools are inferred (see [`node_role`]): from the node-group
//! label the autoscaler stamps, from the names it gives its servers, from
//! the cluster-autoscaler's own `--nodes` flags when its Deployment was
//! captured. What cannot be inferred (the bounds of a pool the autoscaler's
//! flags do not show, a provisioner of unknown behaviour) is either left
//! to the drill's `pools:`/`storageClasses:` entries, which override by
//! name as they do for `import:`, or refused with its place in the file.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{
    Autoscaler, Capacity, ControlPlanes, Imported, KnownNode, Pool, PoolSize, StorageClass, Taint,
    server_types,
};
use crate::duration::Duration;
use crate::labels::{ATTACH_ANNOTATION, AUTOSCALED_LABEL, BASELINE_LABEL, CONTROL_PLANE_LABEL};
use crate::name_pattern::NamePattern;
use crate::scenario::spec::{AttachModel, BindingMode, Expander, Release, TaintEffect};
use crate::snapshot::ClusterSnapshot;
use crate::topology::ksail::BASELINE_POOL;

/// The label the Hetzner cluster-autoscaler puts on the servers of a node
/// group (`nodeGroupLabel` in upstream
/// `cluster-autoscaler/cloudprovider/hetzner/hetzner_manager.go`, applied in
/// `hetzner_node_group.go`'s `createServer` and `buildNodeGroupLabels`).
pub const HCLOUD_NODE_GROUP_LABEL: &str = "hcloud/node-group";

/// The label kubelets and cloud providers set to a node's server type
/// (`node.kubernetes.io/instance-type`, a well-known label:
/// <https://kubernetes.io/docs/reference/labels-annotations-taints/#nodekubernetesioinstance-type>).
pub const INSTANCE_TYPE_LABEL: &str = "node.kubernetes.io/instance-type";

/// The name of the static pool of nodes that are neither control planes,
/// nor in a node group, nor named `prefix-N`.
pub const STATIC_POOL: &str = "workers";

/// Where a node of the snapshot belongs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeRole {
    ControlPlane,
    /// A node of the cluster-autoscaler's node group of this name.
    Autoscaled(String),
    /// A node of the static pool of this name.
    Static(String),
}

/// Where a node belongs, by its name and labels. `autoscaler_pools` are the
/// node groups the cluster-autoscaler's `--nodes` flags name, if captured.
///
/// In order: the control-plane role label; the Hetzner autoscaler's node
/// group label; a name the autoscaler gave a server of a known group
/// (`GROUP-` and hex: upstream `newNodeName` is `fmt.Sprintf("%s-%x", id,
/// rand.Int63())`); a name that ends in 12 to 16 hex digits, the shape of
/// that `%x` for all but one in 2^19 draws, or KSail's `ksail.io/autoscaled`
/// label (the group is the name before its last `-`); then the static
/// pools: the baseline-worker label (`baseline`, as the ksail import names
/// it), `PREFIX-N` (`PREFIX`), and [`STATIC_POOL`].
pub fn node_role(
    name: &str,
    labels: &BTreeMap<String, String>,
    autoscaler_pools: &[String],
) -> NodeRole {
    if labels.contains_key(CONTROL_PLANE_LABEL) {
        return NodeRole::ControlPlane;
    }
    if let Some(group) = labels
        .get(HCLOUD_NODE_GROUP_LABEL)
        .filter(|g| !g.is_empty())
    {
        return NodeRole::Autoscaled(group.clone());
    }
    let known = autoscaler_pools
        .iter()
        .filter(|pool| {
            name.strip_prefix(pool.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .is_some_and(|suffix| is_hex(suffix, 1))
        })
        .max_by_key(|pool| pool.len());
    if let Some(pool) = known {
        return NodeRole::Autoscaled(pool.clone());
    }
    let (prefix, suffix) = name.rsplit_once('-').unwrap_or((name, ""));
    if !prefix.is_empty()
        && (is_hex(suffix, 12) || labels.get(AUTOSCALED_LABEL).is_some_and(|v| v == "true"))
    {
        return NodeRole::Autoscaled(prefix.to_owned());
    }
    if labels.get(BASELINE_LABEL).is_some_and(|v| v == "true") {
        return NodeRole::Static(BASELINE_POOL.to_owned());
    }
    if !prefix.is_empty() && !suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit()) {
        return NodeRole::Static(prefix.to_owned());
    }
    NodeRole::Static(STATIC_POOL.to_owned())
}

/// Whether `text` is `min..=16` lowercase hex digits.
fn is_hex(text: &str, min: usize) -> bool {
    (min..=16).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// How a storage class's volumes behave, from its provisioner: `None` when
/// the bench does not know the provisioner, so the drill must say.
///
/// - `drillbench.dev/attach` (a class `bench sim serve` shows) says it
///   outright.
/// - `csi.hetzner.cloud`: a Hetzner Cloud volume attaches to one server at a
///   time (<https://docs.hetzner.com/cloud/volumes/overview>) and is not
///   force-detached when that server departs (the incident in
///   `shared/context`): single-attach, never released.
/// - `driver.longhorn.io`: Longhorn keeps replicas on several nodes and
///   attaches the volume wherever its consumer runs
///   (<https://longhorn.io/docs/latest/concepts/>): replicated.
/// - `rancher.io/local-path`: a directory on one node's disk, its
///   PersistentVolume pinned to that node by node affinity
///   (<https://github.com/rancher/local-path-provisioner#overview>):
///   node-pinned (single-attach, never released, confined by hostname).
pub fn attach_model(
    provisioner: &str,
    annotations: &BTreeMap<String, String>,
) -> Option<(AttachModel, Release, Option<String>)> {
    match annotations.get(ATTACH_ANNOTATION).map(String::as_str) {
        Some("SingleNode") => return Some((AttachModel::SingleNode, Release::Never, None)),
        Some("Replicated") => return Some((AttachModel::Replicated, Release::Immediately, None)),
        _ => {}
    }
    match provisioner {
        "csi.hetzner.cloud" => Some((AttachModel::SingleNode, Release::Never, None)),
        "driver.longhorn.io" => Some((AttachModel::Replicated, Release::Immediately, None)),
        "rancher.io/local-path" => Some((
            AttachModel::SingleNode,
            Release::Never,
            Some("kubernetes.io/hostname".to_owned()),
        )),
        _ => None,
    }
}

/// Something in the snapshot the topology cannot use: the item (its index
/// in `items`), the field under it, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotProblem {
    pub item: usize,
    pub pointer: String,
    pub message: String,
}

/// A storage class whose provisioner the bench does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClass {
    pub item: usize,
    pub name: String,
    pub provisioner: String,
}

/// What a snapshot contributes to the topology.
#[derive(Debug, Clone, Default)]
pub struct SnapshotCluster {
    /// Control planes, pools and the autoscaler's settings.
    pub imported: Imported,
    pub storage_classes: Vec<StorageClass>,
    /// Classes the drill must describe in `storageClasses:`.
    pub unknown_classes: Vec<UnknownClass>,
    /// Whether the cluster-autoscaler's flags were found, so autoscaled
    /// pools have their real bounds.
    pub autoscaler_flags: bool,
}

fn text<'a>(item: &'a Value, pointer: &str) -> &'a str {
    item.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// Taints the node lifecycle controller and the cluster-autoscaler put on
/// a node for a state the simulator derives itself (NotReady, unreachable,
/// being scaled down): a snapshot of a node in that state would otherwise
/// carry it forever.
const TRANSIENT_TAINTS: [&str; 4] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
];

fn known_node(index: usize, item: &Value, problems: &mut Vec<SnapshotProblem>) -> KnownNode {
    let name = text(item, "/metadata/name").to_owned();
    let labels = string_map(item.pointer("/metadata/labels"));
    let mut taints = Vec::new();
    for (t, taint) in item
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let key = text(taint, "/key");
        if TRANSIENT_TAINTS.contains(&key) {
            continue;
        }
        let effect = match text(taint, "/effect") {
            "NoSchedule" => TaintEffect::NoSchedule,
            "PreferNoSchedule" => TaintEffect::PreferNoSchedule,
            "NoExecute" => TaintEffect::NoExecute,
            other => {
                problems.push(SnapshotProblem {
                    item: index,
                    pointer: format!("/spec/taints/{t}/effect"),
                    message: format!(
                        "node `{name}` has a taint effect `{other}`; expected NoSchedule, \
                         PreferNoSchedule or NoExecute"
                    ),
                });
                continue;
            }
        };
        taints.push(Taint {
            key: key.to_owned(),
            value: text(taint, "/value").to_owned(),
            effect,
        });
    }
    let resources = ["/status/allocatable", "/status/capacity"]
        .iter()
        .find_map(|p| item.pointer(p).filter(|v| v.get("cpu").is_some()));
    let capacity = match resources {
        Some(r) => Capacity {
            cpu: text(r, "/cpu").to_owned(),
            memory: text(r, "/memory").to_owned(),
            pods: text(r, "/pods")
                .parse()
                .unwrap_or(server_types::DEFAULT_MAX_PODS),
        },
        None => {
            problems.push(SnapshotProblem {
                item: index,
                pointer: "/status".to_owned(),
                message: format!(
                    "node `{name}` has no `status.allocatable` (nor `status.capacity`) with a \
                     cpu; expected a Node as the API server returns it"
                ),
            });
            server_types::fallback()
        }
    };
    KnownNode {
        name,
        labels,
        taints,
        capacity,
    }
}

/// The cluster-autoscaler's settings, from its container's flags.
#[derive(Debug, Clone, PartialEq)]
struct AutoscalerFlags {
    /// `--nodes=MIN:MAX:...:NAME`, by name: (min, max, server type if the
    /// Hetzner form names one).
    pools: BTreeMap<String, (u32, u32, Option<String>)>,
    /// The upstream defaults with every flag the simulator models applied.
    settings: Autoscaler,
    /// `--flag=value` pairs the autoscaler would have read but the bench
    /// cannot: a modelled flag with a value of another shape.
    unreadable: Vec<String>,
    /// The Deployment's index in the snapshot and the container's pointer.
    item: usize,
    pointer: String,
}

/// The flags of the first captured container that runs the
/// cluster-autoscaler (an image or command naming it, with `--nodes`).
/// Flag meanings: upstream `cluster-autoscaler/FAQ.md`, "What are the
/// parameters to CA?"; the Hetzner `--nodes` form is
/// `<min>:<max>:<instance-type>:<region>:<name>` (its README).
fn autoscaler_flags(snapshot: &ClusterSnapshot) -> Option<AutoscalerFlags> {
    for (item_index, item) in snapshot.items.iter().enumerate() {
        if text(item, "/kind") != "Deployment" {
            continue;
        }
        let containers = item
            .pointer("/spec/template/spec/containers")
            .and_then(Value::as_array);
        for (c, container) in containers.into_iter().flatten().enumerate() {
            let words: Vec<&str> = ["/command", "/args"]
                .iter()
                .filter_map(|p| container.pointer(p).and_then(Value::as_array))
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let named = text(container, "/image").contains("cluster-autoscaler")
                || words.iter().any(|w| w.contains("cluster-autoscaler"));
            if !named || !words.iter().any(|w| w.starts_with("--nodes")) {
                continue;
            }
            let mut flags = parse_flags(&words);
            flags.item = item_index;
            flags.pointer = format!("/spec/template/spec/containers/{c}");
            return Some(flags);
        }
    }
    None
}

/// The flags that take no value when written bare (`--flag` is
/// `--flag=true`, as pflag's `NoOptDefVal` makes a Go `bool` flag).
const BOOL_FLAGS: [&str; 3] = [
    "--skip-nodes-with-local-storage",
    "--skip-nodes-with-system-pods",
    "--ignore-daemonsets-utilization",
];

fn parse_flags(words: &[&str]) -> AutoscalerFlags {
    let mut flags = AutoscalerFlags {
        pools: BTreeMap::new(),
        settings: Autoscaler::default(),
        unreadable: Vec::new(),
        item: 0,
        pointer: String::new(),
    };
    let mut pairs = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let word = words[i];
        if let Some((flag, value)) = word.split_once('=') {
            pairs.push((flag, value));
        } else if BOOL_FLAGS.contains(&word) {
            pairs.push((word, "true"));
        } else if word.starts_with("--") && i + 1 < words.len() && !words[i + 1].starts_with("--") {
            pairs.push((word, words[i + 1]));
            i += 1;
        }
        i += 1;
    }
    let settings = &mut flags.settings;
    for (flag, value) in pairs {
        // Go's flag types: durations by time.ParseDuration, booleans by
        // strconv.ParseBool, counts as ints.
        let duration = || Duration::parse_go(value).ok();
        let boolean = || match value {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
            "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
            _ => None,
        };
        let read = match flag {
            "--nodes" => {
                let fields: Vec<&str> = value.split(':').collect();
                if let (Some(min), Some(max), Some(name)) = (
                    fields.first().and_then(|m| m.parse().ok()),
                    fields.get(1).and_then(|m| m.parse().ok()),
                    fields.last().filter(|_| fields.len() >= 3),
                ) {
                    let server_type = (fields.len() == 5).then(|| fields[2].to_lowercase());
                    flags
                        .pools
                        .insert((*name).to_owned(), (min, max, server_type));
                    true
                } else {
                    false
                }
            }
            "--max-nodes-total" => value
                .parse()
                .map(|n| settings.max_nodes_total = (n > 0).then_some(n))
                .is_ok(),
            "--scale-down-unneeded-time" => duration()
                .map(|d| settings.scale_down_unneeded_time = d)
                .is_some(),
            "--scale-down-utilization-threshold" => value
                .parse()
                .map(|t| settings.scale_down_utilization_threshold = t)
                .is_ok(),
            "--scan-interval" => duration().map(|d| settings.scan_interval = d).is_some(),
            "--scale-down-delay-after-add" => duration()
                .map(|d| settings.scale_down_delay_after_add = d)
                .is_some(),
            "--scale-down-delay-after-delete" => duration()
                .map(|d| settings.scale_down_delay_after_delete = d)
                .is_some(),
            "--scale-down-delay-after-failure" => duration()
                .map(|d| settings.scale_down_delay_after_failure = d)
                .is_some(),
            "--unremovable-node-recheck-timeout" => duration()
                .map(|d| settings.unremovable_node_recheck_timeout = d)
                .is_some(),
            "--max-drain-parallelism" => value
                .parse()
                .map(|n| settings.max_drain_parallelism = n)
                .is_ok(),
            "--max-scale-down-parallelism" => value
                .parse()
                .map(|n| settings.max_scale_down_parallelism = n)
                .is_ok(),
            "--max-graceful-termination-sec" => value
                .parse()
                .map(|n| settings.max_graceful_termination_sec = n)
                .is_ok(),
            "--new-pod-scale-up-delay" => duration()
                .map(|d| settings.new_pod_scale_up_delay = d)
                .is_some(),
            "--skip-nodes-with-local-storage" => boolean()
                .map(|b| settings.skip_nodes_with_local_storage = b)
                .is_some(),
            "--skip-nodes-with-system-pods" => boolean()
                .map(|b| settings.skip_nodes_with_system_pods = b)
                .is_some(),
            "--ignore-daemonsets-utilization" => boolean()
                .map(|b| settings.ignore_daemon_sets_utilization = b)
                .is_some(),
            "--expander" => {
                let expanders: Vec<Option<Expander>> = value
                    .split(',')
                    .map(|e| match e.trim() {
                        "least-nodes" => Some(Expander::LeastNodes),
                        "least-waste" => Some(Expander::LeastWaste),
                        "most-pods" => Some(Expander::MostPods),
                        "random" => Some(Expander::Random),
                        _ => None,
                    })
                    .collect();
                expanders
                    .into_iter()
                    .collect::<Option<Vec<_>>>()
                    .map(|e| settings.expanders = e)
                    .is_some()
            }
            // Flags the simulator does not model change nothing it judges.
            _ => true,
        };
        if !read {
            flags.unreadable.push(format!("{flag}={value}"));
        }
    }
    flags
}

/// `PREFIX{n}` when every name is `PREFIX` and a number (the ordinals are
/// those numbers), so new nodes continue the series.
fn ordinal_pattern(names: &[&str]) -> Option<(NamePattern, Vec<u32>)> {
    let mut prefix: Option<&str> = None;
    let mut ordinals = Vec::new();
    for name in names {
        let digits = name.bytes().rev().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits == name.len() {
            return None;
        }
        let (head, number) = name.split_at(name.len() - digits);
        if number.starts_with('0') || prefix.is_some_and(|p| p != head) {
            return None;
        }
        prefix = Some(head);
        ordinals.push(number.parse().ok()?);
    }
    let pattern = NamePattern::parse(&format!("{}{{n}}", prefix?)).ok()?;
    Some((pattern, ordinals))
}

/// The labels and taints every node of a group shares: what a new node of
/// the group would carry. The hostname is each node's own.
fn shared(nodes: &[KnownNode]) -> (BTreeMap<String, String>, Vec<Taint>) {
    let mut labels = nodes.first().map(|n| n.labels.clone()).unwrap_or_default();
    labels.remove("kubernetes.io/hostname");
    let mut taints = nodes.first().map(|n| n.taints.clone()).unwrap_or_default();
    for node in nodes.iter().skip(1) {
        labels.retain(|k, v| node.labels.get(k) == Some(v));
        taints.retain(|t| node.taints.contains(t));
    }
    (labels, taints)
}

/// The topology of a snapshot.
pub fn infer(snapshot: &ClusterSnapshot) -> Result<SnapshotCluster, Vec<SnapshotProblem>> {
    let mut problems = Vec::new();
    let flags = autoscaler_flags(snapshot);
    let flag_pools: Vec<String> = flags.iter().flat_map(|f| f.pools.keys().cloned()).collect();
    let mut control_planes = Vec::new();
    // Pools in order of first appearance; nodes in the snapshot's order.
    let mut groups: Vec<(String, bool, Vec<KnownNode>)> = Vec::new();
    let mut storage_classes = Vec::new();
    let mut unknown_classes = Vec::new();
    for (index, item) in snapshot.items.iter().enumerate() {
        match (text(item, "/apiVersion"), text(item, "/kind")) {
            ("v1", "Node") => {
                let node = known_node(index, item, &mut problems);
                let (pool, autoscaled) = match node_role(&node.name, &node.labels, &flag_pools) {
                    NodeRole::ControlPlane => {
                        control_planes.push(node);
                        continue;
                    }
                    NodeRole::Autoscaled(pool) => (pool, true),
                    NodeRole::Static(pool) => (pool, false),
                };
                match groups.iter_mut().find(|(p, _, _)| *p == pool) {
                    Some((_, _, nodes)) => nodes.push(node),
                    None => groups.push((pool, autoscaled, vec![node])),
                }
            }
            ("storage.k8s.io/v1", "StorageClass") => {
                let name = text(item, "/metadata/name").to_owned();
                let provisioner = text(item, "/provisioner").to_owned();
                let annotations = string_map(item.pointer("/metadata/annotations"));
                let binding_mode = match text(item, "/volumeBindingMode") {
                    "WaitForFirstConsumer" => BindingMode::WaitForFirstConsumer,
                    // The API server's default (StorageClass reference).
                    _ => BindingMode::Immediate,
                };
                let default = annotations
                    .get("storageclass.kubernetes.io/is-default-class")
                    .is_some_and(|v| v == "true");
                match attach_model(&provisioner, &annotations) {
                    Some((attach, release_on_node_loss, topology_key)) => {
                        storage_classes.push(StorageClass {
                            name,
                            binding_mode,
                            attach,
                            release_on_node_loss,
                            default,
                            topology_key,
                        })
                    }
                    None => unknown_classes.push(UnknownClass {
                        item: index,
                        name,
                        provisioner,
                    }),
                }
            }
            _ => {}
        }
    }
    let mut pools = Vec::new();
    for (name, autoscaled, nodes) in groups {
        let bounds = flags.as_ref().and_then(|f| f.pools.get(&name));
        let (labels, taints) = shared(&nodes);
        let names: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();
        let name_pattern = if autoscaled {
            NamePattern::random(&name)
        } else {
            ordinal_pattern(&names)
                .map(|(p, _)| p)
                .unwrap_or_else(|| NamePattern::ordinal(&name))
        };
        let count = nodes.len() as u32;
        let size = match (autoscaled, bounds) {
            (true, Some(&(min, max, _))) => PoolSize::Autoscaled { min, max },
            // Without the autoscaler's flags the bounds are unknown: the
            // pool neither grows nor shrinks unless `pools:` says so.
            (true, None) => PoolSize::Autoscaled {
                min: count,
                max: count,
            },
            (false, _) => PoolSize::Static(count),
        };
        pools.push(Pool {
            server_type: labels.get(INSTANCE_TYPE_LABEL).cloned(),
            capacity: nodes[0].capacity.clone(),
            name,
            name_pattern,
            size,
            labels,
            taints,
            nodes,
        });
    }
    // Node groups the autoscaler manages that have no node right now.
    if let Some(flags) = &flags {
        for (name, &(min, max, ref server_type)) in &flags.pools {
            if pools.iter().any(|p| p.name == *name) {
                continue;
            }
            let capacity = server_type
                .as_deref()
                .and_then(server_types::capacity)
                .unwrap_or_else(server_types::fallback);
            pools.push(Pool {
                name: name.clone(),
                name_pattern: NamePattern::random(name),
                size: PoolSize::Autoscaled { min, max },
                server_type: server_type.clone(),
                capacity,
                labels: BTreeMap::from([(HCLOUD_NODE_GROUP_LABEL.to_owned(), name.clone())]),
                taints: Vec::new(),
                nodes: Vec::new(),
            });
        }
    }
    let cp_names: Vec<&str> = control_planes.iter().map(|n| n.name.as_str()).collect();
    let (name_pattern, ordinals) = ordinal_pattern(&cp_names).unwrap_or_else(|| {
        (
            NamePattern::ordinal("control-plane"),
            (1..=control_planes.len() as u32).collect(),
        )
    });
    if control_planes.is_empty() {
        problems.push(SnapshotProblem {
            item: 0,
            pointer: String::new(),
            message: format!(
                "the snapshot has no Node labelled `{CONTROL_PLANE_LABEL}`; expected the \
                 control planes among its nodes"
            ),
        });
    }
    let autoscaler = flags
        .as_ref()
        .map_or_else(Autoscaler::default, |f| f.settings.clone());
    if let Some(flags) = &flags {
        for flag in &flags.unreadable {
            problems.push(SnapshotProblem {
                item: flags.item,
                pointer: flags.pointer.clone(),
                message: format!(
                    "the cluster-autoscaler's flag `{flag}` has a value the bench cannot read; \
                     expected the form upstream's flag takes (a Go duration such as `10m`, a \
                     number, `true`/`false`, or known expanders)"
                ),
            });
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let control_planes = ControlPlanes {
        name_pattern,
        ordinals,
        server_type: control_planes
            .first()
            .and_then(|n| n.labels.get(INSTANCE_TYPE_LABEL).cloned()),
        capacity: control_planes
            .first()
            .map_or_else(server_types::fallback, |n| n.capacity.clone()),
        learners_at_start: 0,
        nodes: control_planes,
    };
    Ok(SnapshotCluster {
        imported: Imported {
            control_planes: Some(control_planes),
            pools,
            autoscaler,
            endpoint: None,
        },
        storage_classes,
        unknown_classes,
        autoscaler_flags: flags.is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// Each row flips one input of its control above it.
    #[test]
    fn nodes_fall_into_the_pools_their_labels_and_names_say() {
        use NodeRole::*;
        let ca = vec!["autoscale-cx43".to_owned()];
        let auto = |p: &str| Autoscaled(p.to_owned());
        let fixed = |p: &str| Static(p.to_owned());
        type Row<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [String], NodeRole);
        let rows: &[Row<'_>] = &[
            // The role label makes a control plane, whatever the name.
            (
                "prod-control-plane-2",
                &[(CONTROL_PLANE_LABEL, "")],
                &[],
                ControlPlane,
            ),
            (
                "prod-control-plane-2",
                &[],
                &[],
                fixed("prod-control-plane"),
            ),
            // The Hetzner node-group label names the group.
            (
                "node-a",
                &[(HCLOUD_NODE_GROUP_LABEL, "burst")],
                &[],
                auto("burst"),
            ),
            ("node-a", &[], &[], fixed("workers")),
            // A name the autoscaler gave: a group of its flags and any hex.
            ("autoscale-cx43-6a0f", &[], &ca, auto("autoscale-cx43")),
            ("autoscale-cx43-6a0f", &[], &[], fixed("workers")),
            // Without the flags: 12 to 16 hex digits after the last `-`.
            (
                "autoscale-cx43-6406b46e4820452e",
                &[],
                &[],
                auto("autoscale-cx43"),
            ),
            ("autoscale-cx43-6406b46e482", &[], &[], fixed("workers")),
            // KSail's marker, when the provisioner stamped it.
            ("burst-x", &[(AUTOSCALED_LABEL, "true")], &[], auto("burst")),
            (
                "burst-x",
                &[(AUTOSCALED_LABEL, "false")],
                &[],
                fixed("workers"),
            ),
            // The baseline label names the ksail import's static pool.
            (
                "prod-worker-1",
                &[(BASELINE_LABEL, "true")],
                &[],
                fixed("baseline"),
            ),
            ("prod-worker-1", &[], &[], fixed("prod-worker")),
        ];
        for (name, pairs, pools, want) in rows {
            assert_eq!(
                node_role(name, &labels(pairs), pools),
                *want,
                "{name} {pairs:?} {pools:?}"
            );
        }
    }

    /// Each row flips the provisioner (or annotation) of its control above it.
    #[test]
    fn a_provisioner_says_how_its_volumes_attach() {
        let none = BTreeMap::new();
        type Want<'a> = Option<(AttachModel, Release, Option<&'a str>)>;
        let rows: &[(&str, BTreeMap<String, String>, Want<'_>)] = &[
            (
                "csi.hetzner.cloud",
                none.clone(),
                Some((AttachModel::SingleNode, Release::Never, None)),
            ),
            (
                "driver.longhorn.io",
                none.clone(),
                Some((AttachModel::Replicated, Release::Immediately, None)),
            ),
            (
                "rancher.io/local-path",
                none.clone(),
                Some((
                    AttachModel::SingleNode,
                    Release::Never,
                    Some("kubernetes.io/hostname"),
                )),
            ),
            ("ebs.csi.aws.com", none.clone(), None),
            (
                "ebs.csi.aws.com",
                labels(&[(ATTACH_ANNOTATION, "Replicated")]),
                Some((AttachModel::Replicated, Release::Immediately, None)),
            ),
            (
                "driver.longhorn.io",
                labels(&[(ATTACH_ANNOTATION, "SingleNode")]),
                Some((AttachModel::SingleNode, Release::Never, None)),
            ),
        ];
        for (provisioner, annotations, want) in rows {
            let got = attach_model(provisioner, annotations);
            let want = want.map(|(a, r, k)| (a, r, k.map(str::to_owned)));
            assert_eq!(got, want, "{provisioner} {annotations:?}");
        }
    }

    #[test]
    fn the_autoscalers_flags_give_pool_bounds_and_settings() {
        // FAQ "What are the parameters to CA?": each flag the simulator
        // models sets its setting; the rest keep upstream's defaults.
        let flags = parse_flags(&[
            "./cluster-autoscaler",
            "--nodes=0:4:CX43:FSN1:autoscale-cx43",
            "--nodes",
            "1:3:burst",
            "--max-nodes-total=9",
            "--scale-down-unneeded-time=10m",
            "--expander=least-nodes,least-waste",
            "--scan-interval=30s",
            "--scale-down-delay-after-add=1h30m",
            "--scale-down-delay-after-failure",
            "5m",
            "--max-drain-parallelism=3",
            "--max-graceful-termination-sec=120",
            "--new-pod-scale-up-delay=45s",
            "--skip-nodes-with-local-storage=false",
            "--ignore-daemonsets-utilization",
            "--balance-similar-node-groups",
            "--v=4",
        ]);
        assert_eq!(
            flags.pools.get("autoscale-cx43"),
            Some(&(0, 4, Some("cx43".to_owned())))
        );
        assert_eq!(flags.pools.get("burst"), Some(&(1, 3, None)));
        let s = &flags.settings;
        assert_eq!(s.max_nodes_total, Some(9));
        assert_eq!(s.expanders, [Expander::LeastNodes, Expander::LeastWaste]);
        assert_eq!(s.scale_down_unneeded_time, Duration::from_mins(10));
        assert_eq!(s.scan_interval, Duration::from_secs(30));
        assert_eq!(s.scale_down_delay_after_add, Duration::from_mins(90));
        assert_eq!(s.scale_down_delay_after_failure, Duration::from_mins(5));
        assert_eq!(s.max_drain_parallelism, 3);
        assert_eq!(s.max_graceful_termination_sec, 120);
        assert_eq!(s.new_pod_scale_up_delay, Duration::from_secs(45));
        assert!(!s.skip_nodes_with_local_storage);
        // A bare boolean flag is true and does not take the next word.
        assert!(s.ignore_daemon_sets_utilization);
        assert!(flags.unreadable.is_empty(), "{:?}", flags.unreadable);
        // Control: flags left out keep upstream's defaults.
        let defaults = parse_flags(&["./cluster-autoscaler", "--nodes=0:4:burst"]).settings;
        assert_eq!(defaults, Autoscaler::default());
        assert!(defaults.skip_nodes_with_local_storage);
        assert_eq!(defaults.max_drain_parallelism, 1);
    }

    #[test]
    fn a_flag_value_the_bench_cannot_read_is_named_not_dropped() {
        let flags = parse_flags(&[
            "./cluster-autoscaler",
            "--nodes=0:4:burst",
            "--scale-down-unneeded-time=ten minutes",
            "--expander=priority",
            "--max-drain-parallelism=-1",
            "--skip-nodes-with-system-pods=maybe",
        ]);
        assert_eq!(
            flags.unreadable,
            [
                "--scale-down-unneeded-time=ten minutes",
                "--expander=priority",
                "--max-drain-parallelism=-1",
                "--skip-nodes-with-system-pods=maybe",
            ]
        );
        // The settings the bad values would have set keep their defaults.
        assert_eq!(flags.settings, Autoscaler::default());
    }

    #[test]
    fn numbered_names_continue_their_series_and_others_do_not() {
        let (pattern, ordinals) =
            ordinal_pattern(&["prod-control-plane-2", "prod-control-plane-4"]).unwrap();
        assert_eq!(pattern.as_str(), "prod-control-plane-{n}");
        assert_eq!(ordinals, [2, 4]);
        assert!(ordinal_pattern(&["cp-1", "master-2"]).is_none());
        assert!(ordinal_pattern(&["kind-control-plane"]).is_none());
    }
}
