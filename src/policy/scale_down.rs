//! Scale-down: which nodes of autoscaled pools the cluster autoscaler
//! removes, and what keeps a node.
//!
//! As upstream's scale-down loop (cluster-autoscaler FAQ "How does
//! scale-down work?" and "What types of pods can prevent CA from removing
//! a node?"): a Ready node of an autoscaled pool is unneeded while its
//! utilisation (the larger of requested CPU and memory over allocatable,
//! DaemonSet pods included) is below the threshold and every pod on it can
//! move — no [`Blocker`], and room on the other nodes
//! ([`fits_elsewhere`]). Once it has been unneeded for
//! `scaleDownUnneededTime` it is removed, unless that would take its pool
//! below its min; empty nodes go together, non-empty ones one per scan.
//! A node annotated [`SCALE_DOWN_DISABLED`] is never considered.

use std::collections::BTreeMap;
use std::fmt;

use super::scale_up::pool_size;
use super::view::{AutoscalerView, ClusterView, NodeFacts, Resources, Room};
use crate::topology::{PoolSize, Topology};

/// The node annotation that keeps the autoscaler from removing a node.
pub(crate) const SCALE_DOWN_DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";

/// The autoscaler's utilisation of a node: the larger of its requested CPU
/// and memory shares (a node with nothing allocatable counts as full).
pub(crate) fn utilisation(requested: Resources, allocatable: Resources) -> f64 {
    let share = |used: i64, total: i64| {
        if total > 0 {
            used as f64 / total as f64
        } else {
            1.0
        }
    };
    share(requested.cpu, allocatable.cpu).max(share(requested.memory, allocatable.memory))
}

/// The node the autoscaler would remove first among candidates: the least
/// utilised, the first by name among equals.
pub(crate) fn least_utilised<'a>(nodes: impl IntoIterator<Item = (f64, &'a str)>) -> Option<&'a str> {
    nodes
        .into_iter()
        .min_by(|a, b| {
            a.0.partial_cmp(&b.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.1.cmp(b.1))
        })
        .map(|(_, name)| name)
}

/// Why the autoscaler cannot move a pod off its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Blocker {
    /// Annotated `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`.
    NotSafeToEvict,
    /// Mounts `emptyDir` or `hostPath` and is not annotated safe to evict.
    LocalStorage,
    /// No controller would recreate it elsewhere.
    NoController,
    /// A kube-system pod no PodDisruptionBudget covers.
    KubeSystemWithoutBudget,
    /// This budget allows no disruption now.
    BudgetExhausted(String),
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Blocker::NotSafeToEvict => f.write_str("has safe-to-evict: \"false\""),
            Blocker::LocalStorage => f.write_str("uses local storage"),
            Blocker::NoController => f.write_str("has no controller"),
            Blocker::KubeSystemWithoutBudget => {
                f.write_str("is a kube-system pod without a PodDisruptionBudget")
            }
            Blocker::BudgetExhausted(budget) => {
                write!(f, "is covered by PodDisruptionBudget {budget}, which allows no disruption")
            }
        }
    }
}

/// What keeps the autoscaler from moving a pod, checked in the FAQ's
/// order; the first that applies.
pub(crate) fn blocker<V: ClusterView>(view: &V, pod: V::Pod) -> Option<Blocker> {
    let facts = view.pod(pod);
    if facts.safe_to_evict == Some(false) {
        return Some(Blocker::NotSafeToEvict);
    }
    if facts.local_storage && facts.safe_to_evict != Some(true) {
        return Some(Blocker::LocalStorage);
    }
    if !facts.controlled {
        return Some(Blocker::NoController);
    }
    let budgets = view.budgets(pod);
    if facts.namespace == "kube-system" && budgets.is_empty() {
        return Some(Blocker::KubeSystemWithoutBudget);
    }
    budgets
        .into_iter()
        .find(|b| b.disruptions_allowed < 1)
        .map(|b| Blocker::BudgetExhausted(b.name))
}

/// Whether every one of `pods` (the movable pods of `node`) fits, first
/// fit, on the other Ready, schedulable nodes not being removed (`removing`
/// are the nodes this scan already chose): placement, requests and pod
/// slots, each placed pod taking its room for the next.
pub(crate) fn fits_elsewhere<V: ClusterView>(
    view: &V,
    node: V::Node,
    pods: &[V::Pod],
    removing: &[V::Node],
) -> bool {
    let mut extra: BTreeMap<V::Node, Room> = BTreeMap::new();
    'pods: for &pod in pods {
        let facts = view.pod(pod);
        for other in view.nodes() {
            if other == node || removing.contains(&other) {
                continue;
            }
            let target = view.node(other);
            if !target.ready || !target.schedulable || target.set_aside {
                continue;
            }
            let used = extra.get(&other).copied().unwrap_or_default();
            let free = target.allocatable.minus(target.requested).minus(used);
            if !facts.placement.admits(target.object) || !free.takes(facts.requests) {
                continue;
            }
            extra.entry(other).or_default().add(facts.requests);
            continue 'pods;
        }
        return false;
    }
    true
}

/// Whether the autoscaler considers removing the node at all.
fn candidate(node: &NodeFacts<'_>, topology: &Topology) -> bool {
    node.ready
        && node.running
        && !node.set_aside
        && topology.pool(node.pool).is_some_and(|p| p.is_autoscaled())
        && node
            .object
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SCALE_DOWN_DISABLED))
            .is_none_or(|v| v != "true")
}

/// What one scale-down scan decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pass<N> {
    /// Every candidate with since when it is unneeded (`None`: it is
    /// needed, and its unneeded time starts over).
    pub(crate) unneeded: Vec<(N, Option<u64>)>,
    /// The nodes to remove now, in order.
    pub(crate) remove: Vec<N>,
}

/// One scale-down scan at `now` (milliseconds).
pub(crate) fn pass<V: AutoscalerView>(view: &V, topology: &Topology, now: u64) -> Pass<V::Node> {
    let threshold = topology.autoscaler.scale_down_utilization_threshold;
    let unneeded_for = topology.autoscaler.scale_down_unneeded_time.as_millis();
    let candidates: Vec<V::Node> = view
        .nodes()
        .filter(|&n| candidate(&view.node(n), topology))
        .collect();
    let mut out = Pass {
        unneeded: Vec::new(),
        remove: Vec::new(),
    };
    let mut non_empty_started = false;
    for node in candidates {
        let facts = view.node(node);
        let movable = view.movable_pods(node);
        let unneeded = utilisation(facts.requested.resources(), facts.allocatable.resources())
            < threshold
            && movable.iter().all(|&p| blocker(view, p).is_none())
            && fits_elsewhere(view, node, &movable, &out.remove);
        if !unneeded {
            out.unneeded.push((node, None));
            continue;
        }
        let since = view.unneeded_since(node).unwrap_or(now);
        out.unneeded.push((node, Some(since)));
        if now < since + unneeded_for {
            continue;
        }
        let Some(PoolSize::Autoscaled { min, .. }) = topology.pool(facts.pool).map(|p| p.size)
        else {
            continue;
        };
        let leaving = out
            .remove
            .iter()
            .filter(|&&r| view.node(r).pool == facts.pool)
            .count() as u32;
        if pool_size(view, facts.pool).saturating_sub(leaving) <= min {
            continue;
        }
        if !movable.is_empty() {
            if non_empty_started {
                continue;
            }
            non_empty_started = true;
        }
        out.remove.push(node);
    }
    out
}
