//! What the rules read of a cluster, and nothing more.
//!
//! Both worlds answer the same questions: the simulator from its arrays,
//! the kube layer from its watches plus the emulated autoscaler's own
//! state (which standby nodes it chose, which it is removing). Where the
//! two worlds keep different state, the view's field says what it means,
//! and each implementation maps its state onto that meaning.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Taint, Toleration};

use crate::cooldown::Cooldown;
use crate::interpod::{AffinityTerm, PodTerms};
use crate::scale_down::InProgress;
use crate::spread::{SpreadConstraint, SpreadPod};
use drillbench_model::k8s::node_selector::RequiredNodeAffinity;
use drillbench_model::k8s::taints::scheduling_blocker;

/// CPU (millicores) and memory (bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resources {
    pub cpu: i64,
    pub memory: i64,
}

/// Resources and pod slots: what a node has, holds or has left.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Room {
    pub cpu: i64,
    pub memory: i64,
    pub pods: u32,
}

impl Room {
    pub fn new(resources: Resources, pods: u32) -> Room {
        Room {
            cpu: resources.cpu,
            memory: resources.memory,
            pods,
        }
    }

    /// Whether one more pod with these requests fits.
    pub fn takes(&self, requests: Resources) -> bool {
        requests.cpu <= self.cpu && requests.memory <= self.memory && self.pods > 0
    }

    /// Takes one pod with these requests.
    pub fn take(&mut self, requests: Resources) {
        self.cpu -= requests.cpu;
        self.memory -= requests.memory;
        self.pods = self.pods.saturating_sub(1);
    }

    /// Adds one pod with these requests (what `take` takes).
    pub fn add(&mut self, requests: Resources) {
        self.cpu += requests.cpu;
        self.memory += requests.memory;
        self.pods += 1;
    }

    /// What is left of `self` once `used` is taken.
    pub fn minus(self, used: Room) -> Room {
        Room {
            cpu: self.cpu - used.cpu,
            memory: self.memory - used.memory,
            pods: self.pods.saturating_sub(used.pods),
        }
    }

    pub fn resources(self) -> Resources {
        Resources {
            cpu: self.cpu,
            memory: self.memory,
        }
    }
}

/// The hard placement rules of a pod: what makes a node admit it, before
/// resources.
#[derive(Debug, Clone, Copy)]
pub struct Placement<'a> {
    /// nodeSelector and required node affinity; `None` when they do not
    /// compile, which no node satisfies.
    pub required: Option<&'a RequiredNodeAffinity>,
    pub tolerations: &'a [Toleration],
}

impl Placement<'_> {
    /// Whether the node's labels and taints admit the pod.
    pub fn admits(&self, node: &Node) -> bool {
        self.required.is_some_and(|r| r.matches(node))
            && scheduling_blocker(taints(node), self.tolerations).is_none()
    }
}

fn taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

/// A node as the rules read it.
#[derive(Debug, Clone, Copy)]
pub struct NodeFacts<'a> {
    pub pool: &'a str,
    /// The object, for its labels, taints and annotations.
    pub object: &'a Node,
    /// The Node's Ready condition.
    pub ready: bool,
    /// Its server is running and heartbeating (the simulator knows a
    /// crashed server before its Node turns NotReady; a real cluster only
    /// shows the Node, so there it is always true).
    pub running: bool,
    /// Not cordoned.
    pub schedulable: bool,
    /// Neither a place for pods nor a candidate for removal: a drain or a
    /// scale-down is removing it, or (on kind and Talos) it is a standby
    /// node the emulated autoscaler has not released.
    pub set_aside: bool,
    /// It counts towards its pool's size and `maxNodesTotal`: it exists at
    /// the cloud, booting or not.
    pub counted: bool,
    /// Allocatable resources and pods.
    pub allocatable: Room,
    /// Requests and number of the pods on it that hold resources.
    pub requested: Room,
}

/// A pod as the rules read it.
#[derive(Debug, Clone, Copy)]
pub struct PodFacts<'a> {
    pub namespace: &'a str,
    /// Its namespace's labels (what a `namespaceSelector` reads).
    pub namespace_labels: &'a BTreeMap<String, String>,
    pub requests: Resources,
    pub placement: Placement<'a>,
    pub labels: &'a BTreeMap<String, String>,
    /// Its required pod affinity terms.
    pub affinity: &'a [AffinityTerm],
    /// Its required pod anti-affinity terms.
    pub anti_affinity: &'a [AffinityTerm],
    /// Its declared topology spread constraints.
    pub spread: &'a [SpreadConstraint],
    /// Its `cluster-autoscaler.kubernetes.io/safe-to-evict` annotation.
    pub safe_to_evict: Option<bool>,
    /// Mounts local storage that keeps it on its node
    /// ([`crate::scale_down::blocking_local_storage`]).
    pub local_storage: bool,
    /// Has a controller other than a bare Pod.
    pub controlled: bool,
    /// Its deletion has started: it holds its node until it is gone, but
    /// topology spread no longer counts it.
    pub terminating: bool,
}

impl<'a> PodFacts<'a> {
    /// The pod as the inter-pod affinity filter reads it.
    pub fn terms(&self) -> PodTerms<'a> {
        PodTerms {
            namespace: self.namespace,
            namespace_labels: self.namespace_labels,
            labels: self.labels,
            affinity: self.affinity,
            anti_affinity: self.anti_affinity,
        }
    }
}

impl<'a> PodFacts<'a> {
    /// The pod as the topology spread filter reads it.
    pub fn spread_pod(&self) -> SpreadPod<'a> {
        SpreadPod {
            namespace: self.namespace,
            labels: self.labels,
            placement: self.placement,
            constraints: self.spread,
        }
    }
}

/// A PodDisruptionBudget selecting a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// `namespace/name`.
    pub name: String,
    pub disruptions_allowed: i32,
}

/// The cluster as the scale-down and drain rules read it.
pub trait ClusterView {
    type Node: Copy + Ord;
    type Pod: Copy;

    /// Every node, in the world's stable order (first fit depends on it).
    fn nodes(&self) -> impl Iterator<Item = Self::Node> + '_;
    fn node(&self, node: Self::Node) -> NodeFacts<'_>;
    /// The pods on a node that a drain would move: holding resources, not
    /// DaemonSet pods, in the world's stable order.
    fn movable_pods(&self, node: Self::Node) -> Vec<Self::Pod>;
    /// Every pod on a node that scheduling counts (holding resources,
    /// DaemonSet pods included), in the world's stable order: what the
    /// inter-pod filters read.
    fn pods_on(&self, node: Self::Node) -> Vec<Self::Pod>;
    fn pod(&self, pod: Self::Pod) -> PodFacts<'_>;
    /// The budgets selecting a pod (same namespace).
    fn budgets(&self, pod: Self::Pod) -> Vec<Budget>;
}

/// A pool's template node: what a new node of the pool would be.
#[derive(Debug, Clone)]
pub struct Template<'a> {
    /// Its labels and taints.
    pub node: Cow<'a, Node>,
    /// What a fresh node offers pods once its DaemonSet pods run.
    pub room: Room,
    /// The resources the waste of a growth is measured against.
    pub capacity: Resources,
}

/// The cluster plus the autoscaler's own state, as scale-up and scale-down
/// read them.
pub trait AutoscalerView: ClusterView {
    /// Pods the scheduler reported unschedulable, in the order they are
    /// considered.
    fn unschedulable_pods(&self) -> Vec<Self::Pod>;
    fn template(&self, pool: &str) -> Option<Template<'_>>;
    /// Nodes booting for the autoscaler: their pool and the room they will
    /// offer, in a stable order.
    fn booting(&self) -> Vec<(String, Room)>;
    /// How many more nodes the world can add to a pool, its max aside
    /// (kind and Talos: the standby nodes left).
    fn provisionable(&self, _pool: &str) -> u32 {
        u32::MAX
    }
    /// Since when the autoscaler has seen the node unneeded.
    fn unneeded_since(&self, node: Self::Node) -> Option<u64>;
    /// Until when the node is left out of scale-down, its removal having
    /// been refused by a scan's simulation.
    fn unremovable_until(&self, node: Self::Node) -> Option<u64>;
    /// When the pod was created, when the world knows it in its own time
    /// (`None`: old enough for any `newPodScaleUpDelay`).
    fn created_at(&self, _pod: Self::Pod) -> Option<u64> {
        None
    }
    /// When the autoscaler last scaled up, started deleting, failed.
    fn cooldown(&self) -> &Cooldown;
    /// The removals the autoscaler has started and not finished.
    fn deletions_in_progress(&self) -> InProgress;
}
