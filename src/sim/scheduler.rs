//! The scheduler: kube-scheduler's filters and scores, over the simulator's
//! nodes.
//!
//! Filters: the node is Ready and not being deleted; cordon (unless
//! tolerated); taints with NoSchedule/NoExecute; `nodeSelector` and required
//! node affinity; requests against allocatable (CPU, memory, pod count);
//! required pod affinity and anti-affinity by topology key. Scores, with the
//! default plugin weights: NodeResourcesFit least-allocated (1), NodeAffinity
//! preferred terms normalised to 0–100 (2), TaintToleration
//! PreferNoSchedule (3), NodeResourcesBalancedAllocation (1). Ties are
//! broken by the seeded generator.
//!
//! Like kube-scheduler, it stops filtering once it has found enough
//! feasible nodes (`percentageOfNodesToScore`, adaptive: 50 % minus one
//! per 125 nodes, at least 5 %, at least 100 nodes), starting where the
//! previous pod stopped. Node affinity and taints are judged once per node
//! class (nodes that differ only by name) and cached on the pod template.
//!
//! Not modelled: PodTopologySpread (including the default constraints),
//! preferred inter-pod affinity, image locality, volume limits per node,
//! preferred node-affinity terms on per-node fields (the hostname).

use super::Simulation;
use super::world::{NodeId, PodId, PodPhase, SimNode, Template};
use crate::k8s::taints::{cordon_blocks, intolerable_prefer_no_schedule, scheduling_blocker};
use crate::report::EventKind;

/// kube-scheduler's `minFeasibleNodesToFind`.
const MIN_FEASIBLE: usize = 100;

/// How many feasible nodes to look for among `all` nodes.
pub fn feasible_nodes_to_find(all: usize) -> usize {
    if all < MIN_FEASIBLE {
        return all;
    }
    let percentage = (50 - (all as i64) / 125).max(5) as usize;
    (all * percentage / 100).max(MIN_FEASIBLE)
}

/// Why a pod did not fit a node, for the unschedulable message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Misfit {
    NotReady,
    Unschedulable,
    Taint,
    Affinity,
    Resources,
    PodAffinity,
}

impl Misfit {
    fn describe(self) -> &'static str {
        match self {
            Misfit::NotReady => "node(s) not ready",
            Misfit::Unschedulable => "node(s) were unschedulable",
            Misfit::Taint => "node(s) had untolerated taint(s)",
            Misfit::Affinity => "node(s) didn't match Pod's node affinity/selector",
            Misfit::Resources => "Insufficient cpu, memory or pods",
            Misfit::PodAffinity => "node(s) didn't satisfy pod (anti-)affinity rules",
        }
    }
}

impl Simulation {
    /// Binds pending pods in creation order; true if any was bound.
    pub(super) fn schedule_pending(&mut self) -> bool {
        let pending: Vec<PodId> = self.pending.iter().map(|&(_, p)| p).collect();
        let mut bound = false;
        for pod in pending {
            if self.pods[pod].phase != PodPhase::Pending {
                continue;
            }
            match self.pick_node(pod) {
                Ok(node) => {
                    self.bind(pod, node);
                    bound = true;
                }
                Err(reason) => {
                    if !self.pods[pod].unschedulable_reported {
                        self.pods[pod].unschedulable_reported = true;
                        let r = self.pod_ref(pod);
                        self.record(EventKind::PodUnschedulable, r, None, &reason);
                    }
                }
            }
        }
        bound
    }

    /// Forgets that pods were reported unschedulable, after the cluster
    /// changed in a way that may let them fit.
    pub(super) fn retry_unschedulable(&mut self) {
        for &(_, pod) in &self.pending {
            self.pods[pod].unschedulable_reported = false;
        }
    }

    /// The node kube-scheduler would pick, or why none fits.
    fn pick_node(&mut self, pod: PodId) -> Result<NodeId, String> {
        let template = self.pods[pod].template.clone();
        let classes = self.class_view(&template);
        let all = self.nodes.len();
        let wanted = feasible_nodes_to_find(all);
        let mut feasible: Vec<NodeId> = Vec::with_capacity(wanted.min(all));
        let mut misfits: [usize; 6] = [0; 6];
        let start = self.sched_cursor % all.max(1);
        let mut examined = 0;
        for offset in 0..all {
            let node = (start + offset) % all;
            examined += 1;
            // A node of a class the pod's affinity refuses fails whatever
            // else holds; counting why exactly only matters when nothing
            // fits, and then the pass below recounts in filter order.
            if !classes[self.nodes[node].class].fits {
                continue;
            }
            match self.misfit(&template, &classes, pod, node) {
                None => {
                    feasible.push(node);
                    if feasible.len() >= wanted {
                        break;
                    }
                }
                Some(m) => misfits[m as usize] += 1,
            }
        }
        self.sched_cursor = (start + examined) % all.max(1);
        if feasible.is_empty() {
            misfits = [0; 6];
            for node in 0..all {
                if let Some(m) = self.misfit(&template, &classes, pod, node) {
                    misfits[m as usize] += 1;
                }
            }
            let reasons: Vec<String> = [
                Misfit::NotReady,
                Misfit::Unschedulable,
                Misfit::Taint,
                Misfit::Affinity,
                Misfit::Resources,
                Misfit::PodAffinity,
            ]
            .iter()
            .filter(|m| misfits[**m as usize] > 0)
            .map(|m| format!("{} {}", misfits[*m as usize], m.describe()))
            .collect();
            return Err(format!(
                "0/{} nodes are available: {}",
                self.nodes
                    .iter()
                    .filter(|n| n.phase != super::world::NodePhase::Gone)
                    .count(),
                reasons.join(", ")
            ));
        }
        Ok(self.best(&template, &classes, &feasible))
    }

    /// What a template makes of each node class: whether the class's labels
    /// and taints admit it, and the class's preferred-affinity and
    /// PreferNoSchedule standing. Judged once per pod rather than per node,
    /// since a class's nodes differ only by name.
    fn class_view(&self, template: &Template) -> Vec<ClassView> {
        let mut cache = template.class_fit.borrow_mut();
        if cache.len() < self.classes.len() {
            cache.resize(self.classes.len(), None);
        }
        self.class_objects
            .iter()
            .enumerate()
            .map(|(class, object)| {
                let fits = template.per_node
                    || *cache[class].get_or_insert_with(|| template.required.matches(object));
                let taints = object
                    .spec
                    .as_ref()
                    .and_then(|s| s.taints.as_deref())
                    .unwrap_or(&[]);
                ClassView {
                    fits,
                    preferred: template.preferences.score(object),
                    intolerable: intolerable_prefer_no_schedule(taints, &template.tolerations),
                }
            })
            .collect()
    }

    fn misfit(
        &self,
        template: &Template,
        classes: &[ClassView],
        pod: PodId,
        node: NodeId,
    ) -> Option<Misfit> {
        let n = &self.nodes[node];
        if !n.is_ready() || !n.server_up || n.draining {
            return Some(Misfit::NotReady);
        }
        if n.unschedulable() && cordon_blocks(true, &template.tolerations) {
            return Some(Misfit::Unschedulable);
        }
        // Taints can differ within a class (a node tainted unreachable or
        // for deletion), so they are read from the node itself.
        if scheduling_blocker(n.taints(), &template.tolerations).is_some() {
            return Some(Misfit::Taint);
        }
        if !classes[n.class].fits || (template.per_node && !template.required.matches(&n.object)) {
            return Some(Misfit::Affinity);
        }
        let requests = template.requests;
        if !n.requested.plus(requests).fits_in(n.allocatable) || n.pods.len() as u32 >= n.max_pods {
            return Some(Misfit::Resources);
        }
        if !self.pod_affinity_ok(template, pod, n) {
            return Some(Misfit::PodAffinity);
        }
        None
    }

    fn pod_affinity_ok(&self, template: &Template, pod: PodId, n: &SimNode) -> bool {
        if template.anti_affinity.is_empty() && template.affinity.is_empty() {
            return true;
        }
        let namespace = &self.pods[pod].namespace;
        // Pods in the same topology domain as `n` (only hostname-like keys
        // and keys every node of a pool shares are modelled: the domain is
        // the set of nodes carrying the same value of the key).
        let in_domain = |key: &str, selector: &kube::core::Selector| -> bool {
            let value = n.labels().get(key);
            self.nodes
                .iter()
                .filter(|m| m.labels().get(key) == value && value.is_some())
                .any(|m| {
                    m.pods.iter().any(|&other| {
                        other != pod
                            && self.pods[other].phase != PodPhase::Gone
                            && &self.pods[other].namespace == namespace
                            && kube::core::SelectorExt::matches(
                                selector,
                                &self.pods[other].template.labels,
                            )
                    })
                })
        };
        template
            .anti_affinity
            .iter()
            .all(|(selector, key)| !in_domain(key, selector))
            && template.affinity.iter().all(|(selector, key)| {
                in_domain(key, selector) || self.first_of_its_kind(template, pod, selector)
            })
    }

    /// A pod whose affinity selects its own labels may go anywhere when no
    /// matching pod exists yet (kube-scheduler's special case), so the first
    /// replica of a self-affine workload can start.
    fn first_of_its_kind(
        &self,
        template: &Template,
        pod: PodId,
        selector: &kube::core::Selector,
    ) -> bool {
        kube::core::SelectorExt::matches(selector, &template.labels)
            && !self.pods.iter().enumerate().any(|(i, p)| {
                i != pod
                    && p.node.is_some()
                    && p.phase != PodPhase::Gone
                    && kube::core::SelectorExt::matches(selector, &p.template.labels)
            })
    }

    /// The highest-scoring feasible node; ties broken by the seeded generator.
    fn best(&mut self, template: &Template, classes: &[ClassView], feasible: &[NodeId]) -> NodeId {
        let preferred = |n: NodeId| classes[self.nodes[n].class].preferred;
        let intolerable = |n: NodeId| classes[self.nodes[n].class].intolerable;
        let max_preferred = feasible.iter().map(|&n| preferred(n)).max().unwrap_or(0);
        let max_intolerable = feasible.iter().map(|&n| intolerable(n)).max().unwrap_or(0);
        let mut best_score = i64::MIN;
        let mut best: Vec<NodeId> = Vec::new();
        for &node in feasible {
            let n = &self.nodes[node];
            let after = n.requested.plus(template.requests);
            let least = (free_share(n.allocatable.cpu, after.cpu)
                + free_share(n.allocatable.memory, after.memory))
                / 2;
            let balanced = balanced_allocation(n.allocatable, after);
            let affinity = if max_preferred > 0 {
                preferred(node) * 100 / max_preferred
            } else {
                0
            };
            let taint = if max_intolerable > 0 {
                100 - (intolerable(node) as i64) * 100 / (max_intolerable as i64)
            } else {
                100
            };
            let score = least + 2 * affinity + 3 * taint + balanced;
            if score > best_score {
                best_score = score;
                best.clear();
                best.push(node);
            } else if score == best_score {
                best.push(node);
            }
        }
        best[self.rng.index(best.len())]
    }
}

/// What one pod template makes of one node class.
#[derive(Debug, Clone, Copy, Default)]
struct ClassView {
    fits: bool,
    preferred: i64,
    intolerable: usize,
}

/// LeastAllocated for one resource: the share left free, 0–100.
fn free_share(allocatable: i64, requested: i64) -> i64 {
    if allocatable <= 0 || requested > allocatable {
        return 0;
    }
    (allocatable - requested) * 100 / allocatable
}

/// BalancedAllocation: 100 when CPU and memory are used in equal shares.
fn balanced_allocation(
    allocatable: super::world::Resources,
    requested: super::world::Resources,
) -> i64 {
    if allocatable.cpu <= 0 || allocatable.memory <= 0 {
        return 0;
    }
    let cpu = requested.cpu as f64 / allocatable.cpu as f64;
    let memory = requested.memory as f64 / allocatable.memory as f64;
    // Two resources: the standard deviation is half the difference.
    let std = ((cpu - memory).abs() / 2.0).min(1.0);
    ((1.0 - std) * 100.0) as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_size_follows_kube_scheduler() {
        assert_eq!(feasible_nodes_to_find(9), 9);
        assert_eq!(feasible_nodes_to_find(99), 99);
        assert_eq!(feasible_nodes_to_find(100), 100);
        // 5000 nodes: 50 - 40 = 10 % = 500.
        assert_eq!(feasible_nodes_to_find(5000), 500);
        // 10000 nodes: 50 - 80 < 5, so 5 % = 500.
        assert_eq!(feasible_nodes_to_find(10_000), 500);
        // 1000 nodes: 42 % = 420.
        assert_eq!(feasible_nodes_to_find(1000), 420);
    }

    #[test]
    fn least_allocated_prefers_free_nodes() {
        assert_eq!(free_share(8000, 2000), 75);
        assert_eq!(free_share(8000, 8000), 0);
        assert_eq!(free_share(8000, 9000), 0);
    }
}
