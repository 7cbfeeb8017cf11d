//! The drill's nodes as a plan, before a cluster exists: names, pools,
//! the labels a kubelet may set itself and the ones the API must, taints.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::DriverError;
use crate::docker::RunId;
use drillbench_model::labels::{
    CONTROL_PLANE_LABEL, NODE_LABEL, POOL_LABEL, RUN_LABEL, STANDBY_KEY, WORKER_ROLE_LABEL,
};
use drillbench_model::scenario::spec::TaintEffect;
use drillbench_model::topology::{CONTROL_PLANE_POOL, Topology};

/// One node the drill asks for, before a cluster exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedNode {
    /// The name the drill uses (`prod-worker-1`; standby autoscaler nodes
    /// are `POOL-standby-N`).
    pub drill_name: String,
    /// The pool (`control-plane` for control planes).
    pub pool: String,
    pub control_plane: bool,
    /// An autoscaler standby node (see [`STANDBY_KEY`]).
    pub standby: bool,
    /// Labels set at boot.
    pub boot_labels: BTreeMap<String, String>,
    /// Labels patched in through the API once the node is Ready.
    pub api_labels: BTreeMap<String, String>,
    /// Taints patched in through the API once the node is Ready.
    pub taints: Vec<(String, String, &'static str)>,
}

/// Whether the kubelet may not set this label on itself (NodeRestriction):
/// anything under `kubernetes.io` or `k8s.io` except the two prefixes
/// kubelets own.
pub(super) fn needs_api(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    let restricted = prefix == "kubernetes.io"
        || prefix.ends_with(".kubernetes.io")
        || prefix == "k8s.io"
        || prefix.ends_with(".k8s.io");
    let kubelet_owned = prefix == "kubelet.kubernetes.io" || prefix == "node.kubernetes.io";
    restricted && !kubelet_owned
}

fn effect(effect: TaintEffect) -> &'static str {
    match effect {
        TaintEffect::NoSchedule => "NoSchedule",
        TaintEffect::PreferNoSchedule => "PreferNoSchedule",
        TaintEffect::NoExecute => "NoExecute",
    }
}

/// The nodes to create for a drill: its control planes, every node a static
/// pool starts with, each autoscaled pool's `min`, and `standby_per_pool`
/// tainted standby nodes per autoscaled pool (capped at its `max`), since
/// neither kind nor `talosctl cluster create` can add a node later.
pub fn plan_nodes(topology: &Topology, run: &RunId, standby_per_pool: u32) -> Vec<PlannedNode> {
    let mut nodes = Vec::new();
    let mut add = |drill_name: String,
                   pool: &str,
                   control_plane: bool,
                   standby: bool,
                   labels: &BTreeMap<String, String>,
                   taints: Vec<(String, String, &'static str)>| {
        let mut boot_labels = BTreeMap::new();
        let mut api_labels = BTreeMap::new();
        for (key, value) in labels {
            if needs_api(key) {
                api_labels.insert(key.clone(), value.clone());
            } else {
                boot_labels.insert(key.clone(), value.clone());
            }
        }
        boot_labels.insert(RUN_LABEL.to_owned(), run.as_str().to_owned());
        boot_labels.insert(NODE_LABEL.to_owned(), drill_name.clone());
        boot_labels.insert(POOL_LABEL.to_owned(), pool.to_owned());
        let mut taints = taints;
        if control_plane {
            api_labels.insert(CONTROL_PLANE_LABEL.to_owned(), String::new());
        } else {
            api_labels.insert(WORKER_ROLE_LABEL.to_owned(), String::new());
        }
        if standby {
            boot_labels.insert(STANDBY_KEY.to_owned(), "true".to_owned());
            taints.push((STANDBY_KEY.to_owned(), "true".to_owned(), "NoSchedule"));
        }
        nodes.push(PlannedNode {
            drill_name,
            pool: pool.to_owned(),
            control_plane,
            standby,
            boot_labels,
            api_labels,
            taints,
        });
    };
    for name in topology.control_planes.names() {
        add(
            name,
            CONTROL_PLANE_POOL,
            true,
            false,
            &BTreeMap::new(),
            Vec::new(),
        );
    }
    for pool in &topology.pools {
        let taints: Vec<_> = pool
            .taints
            .iter()
            .map(|t| (t.key.clone(), t.value.clone(), effect(t.effect)))
            .collect();
        let initial = pool.initial_nodes();
        let names: Vec<String> = if pool.name_pattern.has_random() {
            // Random names are the simulator's; a fixed ordinal keeps the
            // plan (and its snapshot) the same on every run.
            (1..=initial)
                .map(|n| format!("{}-{n}", pool.name))
                .collect()
        } else {
            pool.static_names()
        };
        for name in names {
            add(name, &pool.name, false, false, &pool.labels, taints.clone());
        }
        for name in pool.standby_names(standby_per_pool) {
            add(name, &pool.name, false, true, &pool.labels, taints.clone());
        }
    }
    nodes
}

/// A planned node as it exists: its Kubernetes Node name and its container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvisionedNode {
    pub plan: PlannedNode,
    /// The Kubernetes Node name (on kind and Talos, the container's name).
    pub node: String,
    pub container: String,
    /// Its address on the cluster's Docker network, when Docker reported one.
    pub ip: Option<IpAddr>,
}

impl ProvisionedNode {
    /// Whether `name` names this node: its Node name, container or drill
    /// name.
    pub fn answers_to(&self, name: &str) -> bool {
        self.node == name || self.container == name || self.plan.drill_name == name
    }

    /// The node among `nodes` that `name` names.
    pub fn find<'a>(nodes: &'a [ProvisionedNode], name: &str) -> Result<&'a Self, DriverError> {
        nodes
            .iter()
            .find(|n| n.answers_to(name))
            .ok_or_else(|| DriverError::UnknownNode(name.to_owned()))
    }
}
