//! A cluster written out by hand, for the policy's table tests: each row
//! builds one, flips one fact, and asks a rule.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, PodSpec, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::view::{
    AutoscalerView, Budget, ClusterView, NodeFacts, Placement, PodFacts, Resources, Room, Template,
};
use crate::interpod::AffinityTerm;
use crate::spread::SpreadConstraint;
use drillbench_model::duration::Duration;
use drillbench_model::k8s::node_selector::RequiredNodeAffinity;
use drillbench_model::name_pattern::NamePattern;
use drillbench_model::topology::{Autoscaler, Capacity, ControlPlanes, Pool, PoolSize, Topology};

pub(super) const GI: i64 = 1 << 30;

pub(super) fn res(cpu: i64, memory: i64) -> Resources {
    Resources { cpu, memory }
}

pub(super) fn object(pool: &str, taint: Option<&str>) -> Node {
    Node {
        metadata: ObjectMeta {
            labels: Some(BTreeMap::from([("pool".to_owned(), pool.to_owned())])),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: taint.map(|key| {
                vec![Taint {
                    key: key.to_owned(),
                    effect: "NoSchedule".to_owned(),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[derive(Debug, Clone)]
pub(super) struct FakeNode {
    pub(super) pool: String,
    pub(super) object: Node,
    pub(super) ready: bool,
    pub(super) running: bool,
    pub(super) schedulable: bool,
    pub(super) set_aside: bool,
    pub(super) counted: bool,
    pub(super) allocatable: Room,
    pub(super) requested: Room,
    pub(super) unneeded_since: Option<u64>,
    pub(super) unremovable_until: Option<u64>,
}

/// A Ready node of 4 CPUs, 16 GiB and 110 pods, nothing on it.
pub(super) fn node(pool: &str) -> FakeNode {
    FakeNode {
        pool: pool.to_owned(),
        object: object(pool, None),
        ready: true,
        running: true,
        schedulable: true,
        set_aside: false,
        counted: true,
        allocatable: Room {
            cpu: 4000,
            memory: 16 * GI,
            pods: 110,
        },
        requested: Room::default(),
        unneeded_since: None,
        unremovable_until: None,
    }
}

#[derive(Debug, Clone)]
pub(super) struct FakePod {
    pub(super) node: Option<usize>,
    pub(super) namespace: String,
    pub(super) namespace_labels: BTreeMap<String, String>,
    pub(super) requests: Resources,
    pub(super) required: RequiredNodeAffinity,
    pub(super) tolerations: Vec<Toleration>,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) affinity: Vec<AffinityTerm>,
    pub(super) anti_affinity: Vec<AffinityTerm>,
    pub(super) spread: Vec<SpreadConstraint>,
    pub(super) safe_to_evict: Option<bool>,
    pub(super) local_storage: bool,
    pub(super) controlled: bool,
    pub(super) terminating: bool,
    pub(super) budgets: Vec<Budget>,
    /// A DaemonSet's pod: on its node, never moved.
    pub(super) daemon: bool,
}

/// A ReplicaSet's pod in namespace `load` requesting `cpu` millicores and
/// 1 GiB, no budget, placed anywhere.
pub(super) fn pod(node: Option<usize>, cpu: i64) -> FakePod {
    FakePod {
        node,
        namespace: "load".to_owned(),
        namespace_labels: BTreeMap::new(),
        requests: res(cpu, GI),
        required: RequiredNodeAffinity::from_pod_spec(&PodSpec::default()).expect("empty"),
        tolerations: Vec::new(),
        labels: BTreeMap::new(),
        affinity: Vec::new(),
        anti_affinity: Vec::new(),
        spread: Vec::new(),
        safe_to_evict: None,
        local_storage: false,
        controlled: true,
        terminating: false,
        budgets: Vec::new(),
        daemon: false,
    }
}

/// A pod that only runs on nodes labelled `pool=<pool>`.
pub(super) fn pinned(mut pod: FakePod, pool: &str) -> FakePod {
    let spec = PodSpec {
        node_selector: Some(BTreeMap::from([("pool".to_owned(), pool.to_owned())])),
        ..Default::default()
    };
    pod.required = RequiredNodeAffinity::from_pod_spec(&spec).expect("selector");
    pod
}

/// A required anti-affinity term against pods labelled `app=<app>`, per
/// node (`kubernetes.io/hostname`).
pub(super) fn repels(app: &str) -> AffinityTerm {
    let term = serde_json::from_value(serde_json::json!({
        "labelSelector": {"matchLabels": {"app": app}},
        "topologyKey": "kubernetes.io/hostname",
    }))
    .expect("a term");
    AffinityTerm::compile(&term).expect("compiles")
}

/// Labels a node with its hostname.
pub(super) fn hostname(node: &mut FakeNode, name: &str) {
    node.object
        .metadata
        .labels
        .get_or_insert_default()
        .insert("kubernetes.io/hostname".to_owned(), name.to_owned());
}

pub(super) fn toleration(key: &str) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        ..Default::default()
    }
}

#[derive(Debug, Clone, Default)]
pub(super) struct Fake {
    pub(super) nodes: Vec<FakeNode>,
    pub(super) pods: Vec<FakePod>,
    /// Pods waiting for a node, by index into `pods`.
    pub(super) unschedulable: Vec<usize>,
    pub(super) templates: Vec<(String, Template<'static>)>,
    pub(super) booting: Vec<(String, Room)>,
    pub(super) provisionable: Option<u32>,
    pub(super) cooldown: crate::cooldown::Cooldown,
    pub(super) in_progress: crate::scale_down::InProgress,
    /// When every pod was created (`None`: unknown, old enough).
    pub(super) created_at: Option<u64>,
}

impl Fake {
    /// Places a pod on its node, counting its requests there.
    pub(super) fn add(&mut self, pod: FakePod) -> usize {
        if let Some(n) = pod.node {
            self.nodes[n].requested.add(pod.requests);
        }
        self.pods.push(pod);
        self.pods.len() - 1
    }

    /// A template for `pool`: a fresh 4 CPU, 16 GiB, 110-pod node.
    pub(super) fn add_template(&mut self, pool: &str, taint: Option<&str>) {
        let room = node(pool).allocatable;
        self.templates.push((
            pool.to_owned(),
            Template {
                node: Cow::Owned(object(pool, taint)),
                room,
                capacity: room.resources(),
            },
        ));
    }
}

impl ClusterView for Fake {
    type Node = usize;
    type Pod = usize;

    fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        0..self.nodes.len()
    }

    fn node(&self, node: usize) -> NodeFacts<'_> {
        let n = &self.nodes[node];
        NodeFacts {
            pool: &n.pool,
            object: &n.object,
            ready: n.ready,
            running: n.running,
            schedulable: n.schedulable,
            set_aside: n.set_aside,
            counted: n.counted,
            allocatable: n.allocatable,
            requested: n.requested,
        }
    }

    fn movable_pods(&self, node: usize) -> Vec<usize> {
        (0..self.pods.len())
            .filter(|&p| self.pods[p].node == Some(node) && !self.pods[p].daemon)
            .collect()
    }

    fn pods_on(&self, node: usize) -> Vec<usize> {
        (0..self.pods.len())
            .filter(|&p| self.pods[p].node == Some(node))
            .collect()
    }

    fn pod(&self, pod: usize) -> PodFacts<'_> {
        let p = &self.pods[pod];
        PodFacts {
            namespace: &p.namespace,
            namespace_labels: &p.namespace_labels,
            requests: p.requests,
            placement: Placement {
                required: Some(&p.required),
                tolerations: &p.tolerations,
            },
            labels: &p.labels,
            affinity: &p.affinity,
            anti_affinity: &p.anti_affinity,
            spread: &p.spread,
            safe_to_evict: p.safe_to_evict,
            local_storage: p.local_storage,
            controlled: p.controlled,
            terminating: p.terminating,
        }
    }

    fn budgets(&self, pod: usize) -> Vec<Budget> {
        self.pods[pod].budgets.clone()
    }
}

impl AutoscalerView for Fake {
    fn unschedulable_pods(&self) -> Vec<usize> {
        self.unschedulable.clone()
    }

    fn template(&self, pool: &str) -> Option<Template<'_>> {
        self.templates
            .iter()
            .find(|(p, _)| p == pool)
            .map(|(_, t)| t.clone())
    }

    fn booting(&self) -> Vec<(String, Room)> {
        self.booting.clone()
    }

    fn provisionable(&self, _pool: &str) -> u32 {
        self.provisionable.unwrap_or(u32::MAX)
    }

    fn unneeded_since(&self, node: usize) -> Option<u64> {
        self.nodes[node].unneeded_since
    }

    fn unremovable_until(&self, node: usize) -> Option<u64> {
        self.nodes[node].unremovable_until
    }

    fn created_at(&self, _pod: usize) -> Option<u64> {
        self.created_at
    }

    fn cooldown(&self) -> &crate::cooldown::Cooldown {
        &self.cooldown
    }

    fn deletions_in_progress(&self) -> crate::scale_down::InProgress {
        self.in_progress
    }
}

/// A static pool `base` and an autoscaled pool `auto` (min..=max), the
/// upstream autoscaler defaults (10 min unneeded, threshold 0.5).
pub(super) fn topology(min: u32, max: u32) -> Topology {
    let capacity = Capacity {
        cpu: "4".to_owned(),
        memory: "16Gi".to_owned(),
        pods: 110,
    };
    let pool = |name: &str, size| Pool {
        name: name.to_owned(),
        name_pattern: NamePattern::ordinal(name),
        size,
        server_type: None,
        capacity: capacity.clone(),
        labels: BTreeMap::new(),
        taints: Vec::new(),
        nodes: Vec::new(),
    };
    Topology {
        control_planes: ControlPlanes {
            name_pattern: NamePattern::ordinal("cp"),
            ordinals: vec![1],
            server_type: None,
            capacity: capacity.clone(),
            learners_at_start: 0,
            nodes: Vec::new(),
        },
        pools: vec![
            pool("base", PoolSize::Static(1)),
            pool("auto", PoolSize::Autoscaled { min, max }),
        ],
        autoscaler: Autoscaler::default(),
        storage_classes: Vec::new(),
        endpoint: None,
        backups: Vec::new(),
        latencies: Default::default(),
        drains_bypass_budgets: false,
        upgrade_skips_settling: false,
    }
}

/// The unneeded time of [`topology`], in milliseconds.
pub(super) const UNNEEDED: u64 = Duration::from_mins(10).as_millis();
