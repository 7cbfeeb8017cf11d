//! The cluster autoscaler, as its upstream loop behaves every scan interval.
//!
//! Scale-up: pods the scheduler could not place are packed (first fit, like
//! the binpacking estimator) onto template nodes of every autoscaled pool
//! whose labels, taints and capacity could take them; the expander chain
//! picks one pool (LeastNodes, LeastWaste, MostPods, then Random, all
//! seeded); new nodes respect the pool's max and `maxNodesTotal`, which
//! counts every node, static ones and those still booting. Pods that will
//! fit on nodes already booting are not counted again.
//!
//! Scale-down: a Ready node of an autoscaled pool is unneeded while its
//! utilisation (the larger of requested CPU and memory over allocatable,
//! DaemonSet pods included) is below the threshold and every pod on it can
//! move: not blocked by `safe-to-evict: "false"`, local storage, a missing
//! controller, a kube-system pod without a budget, a budget with no
//! disruption left, or the lack of room elsewhere. After
//! `scaleDownUnneededTime` it is tainted `ToBeDeletedByClusterAutoscaler`,
//! drained through the eviction API (a refusal aborts and untaints it) and
//! its server deleted, one non-empty node at a time. Pools never go below
//! their min; a node annotated `scale-down-disabled` is skipped.
//!
//! The server is deleted as soon as the drained pods have terminated, like
//! upstream, which does not wait for volumes to detach: a single-attach
//! volume whose detach had not finished stays attached to a server that no
//! longer exists — the incident the drills rehearse.

use super::clock::after;
use super::operations::utilisation;
use super::world::{NodeId, NodePhase, Owner, PodId, PodPhase, Resources, WorkloadKind};
use super::{Action, Simulation, node_ref};
use crate::k8s::taints::scheduling_blocker;
use crate::observe::EventKind;
use crate::scenario::spec::Expander;

/// The taint the autoscaler puts on a node it is removing.
pub const TO_BE_DELETED: &str = "ToBeDeletedByClusterAutoscaler";
/// The node annotation that keeps the autoscaler from removing a node.
pub const SCALE_DOWN_DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";

/// One pool the autoscaler could grow, as the expanders compare them.
#[derive(Debug, Clone)]
pub struct Growth {
    /// The pool.
    pub pool: String,
    /// New nodes it needs.
    pub nodes: u32,
    /// Unschedulable pods they would take.
    pub pods: usize,
    /// The share of their CPU and memory left idle.
    pub waste: f64,
}

/// The expander chain over the growth options, then a pick among what is
/// left; `index(n)` draws a seeded index below `n`. `None` when there is
/// no option.
pub fn expand(
    mut options: Vec<Growth>,
    expanders: &[Expander],
    mut index: impl FnMut(usize) -> usize,
) -> Option<Growth> {
    if options.is_empty() {
        return None;
    }
    for expander in expanders {
        if options.len() <= 1 {
            break;
        }
        match expander {
            Expander::LeastNodes => {
                let min = options.iter().map(|o| o.nodes).min().unwrap_or(0);
                options.retain(|o| o.nodes == min);
            }
            Expander::LeastWaste => {
                let min = options
                    .iter()
                    .map(|o| o.waste)
                    .fold(f64::INFINITY, f64::min);
                options.retain(|o| (o.waste - min).abs() < 1e-9);
            }
            Expander::MostPods => {
                let max = options.iter().map(|o| o.pods).max().unwrap_or(0);
                options.retain(|o| o.pods == max);
            }
            Expander::Random => {
                let i = index(options.len());
                options = vec![options.swap_remove(i)];
            }
        }
    }
    if options.len() == 1 {
        return options.pop();
    }
    let i = index(options.len());
    Some(options.swap_remove(i))
}

impl Simulation {
    /// Whether the cluster has a pool the autoscaler manages.
    pub fn has_autoscaler(&self) -> bool {
        self.topology.pools.iter().any(|p| p.is_autoscaled())
    }

    /// Starts the autoscaler's scan loop.
    pub(super) fn start_autoscaler(&mut self) {
        if self.has_autoscaler() {
            let at = after(self.now, self.topology.autoscaler.scan_interval);
            self.schedule(at, Action::AutoscalerScan);
        }
    }

    /// One scan: scale up for unschedulable pods, then consider scale-down.
    pub(super) fn autoscaler_scan(&mut self) {
        self.scale_up();
        self.scale_down();
        let at = after(self.now, self.topology.autoscaler.scan_interval);
        self.schedule(at, Action::AutoscalerScan);
    }

    fn live_nodes(&self) -> u32 {
        self.nodes
            .iter()
            .filter(|n| n.phase != NodePhase::Gone && n.server_exists)
            .count() as u32
    }

    fn pool_size(&self, pool: &str) -> u32 {
        self.nodes
            .iter()
            .filter(|n| n.pool == pool && n.phase != NodePhase::Gone && n.server_exists)
            .count() as u32
    }

    /// Whether a pod could run on a fresh node of a pool: labels, taints and
    /// size, judged on the pool's template node.
    fn fits_template(&self, pod: PodId, pool: &str) -> Option<(Resources, u32)> {
        let template = self.pools_templates.get(pool)?;
        let p = &self.pods[pod];
        if !p.template.required.matches(&template.object)
            || scheduling_blocker(template.taints(), &p.template.tolerations).is_some()
            || !p
                .template
                .requests
                .fits_in(template.allocatable.minus(self.daemon_overhead(pool)))
        {
            return None;
        }
        Some((
            template.allocatable.minus(self.daemon_overhead(pool)),
            template.max_pods,
        ))
    }

    /// Requests of the DaemonSet pods a new node of the pool would run.
    fn daemon_overhead(&self, pool: &str) -> Resources {
        let Some(template) = self.pools_templates.get(pool) else {
            return Resources::default();
        };
        self.workloads
            .iter()
            .filter(|w| w.kind == WorkloadKind::DaemonSet && w.template.refused_by.is_none())
            .filter(|w| {
                w.template.required.matches(&template.object)
                    && scheduling_blocker(template.taints(), &w.template.tolerations).is_none()
            })
            .fold(Resources::default(), |sum, w| sum.plus(w.template.requests))
    }

    fn scale_up(&mut self) {
        let pending: Vec<PodId> = self
            .pending
            .iter()
            .map(|&(_, p)| p)
            .filter(|&p| {
                self.pods[p].phase == PodPhase::Pending && self.pods[p].unschedulable_reported
            })
            .collect();
        if pending.is_empty() {
            return;
        }
        let pools: Vec<String> = self
            .topology
            .pools
            .iter()
            .filter(|p| p.is_autoscaled())
            .map(|p| p.name.clone())
            .collect();
        // Pods that will land on nodes still booting are already taken care of.
        let mut upcoming: Vec<(String, Resources, u32)> = self
            .nodes
            .iter()
            .filter(|n| n.phase == NodePhase::Booting && !n.control_plane && n.server_up)
            .map(|n| {
                (
                    n.pool.clone(),
                    n.allocatable.minus(self.daemon_overhead(&n.pool)),
                    n.max_pods,
                )
            })
            .collect();
        let mut waiting = Vec::new();
        'pods: for &pod in &pending {
            for (pool, free, slots) in &mut upcoming {
                if self.fits_template(pod, pool).is_some()
                    && self.pods[pod].template.requests.fits_in(*free)
                    && *slots > 0
                {
                    *free = free.minus(self.pods[pod].template.requests);
                    *slots -= 1;
                    continue 'pods;
                }
            }
            waiting.push(pod);
        }
        if waiting.is_empty() {
            return;
        }
        let room_total = self
            .topology
            .autoscaler
            .max_nodes_total
            .map_or(u32::MAX, |m| m.saturating_sub(self.live_nodes()));
        let mut options = Vec::new();
        for pool in &pools {
            let max = match self.topology.pool(pool).map(|p| p.size) {
                Some(crate::topology::PoolSize::Autoscaled { max, .. }) => max,
                _ => continue,
            };
            let room = max.saturating_sub(self.pool_size(pool)).min(room_total);
            if room == 0 {
                continue;
            }
            // First-fit packing onto new template nodes.
            let mut bins: Vec<(Resources, u32)> = Vec::new();
            let mut helped = 0;
            for &pod in &waiting {
                let Some((capacity, slots)) = self.fits_template(pod, pool) else {
                    continue;
                };
                let requests = self.pods[pod].template.requests;
                let anti = !self.pods[pod].template.anti_affinity.is_empty();
                match bins
                    .iter_mut()
                    .find(|(free, s)| !anti && requests.fits_in(*free) && *s > 0)
                {
                    Some((free, s)) => {
                        *free = free.minus(requests);
                        *s -= 1;
                    }
                    None => {
                        if bins.len() as u32 >= room {
                            continue;
                        }
                        bins.push((capacity.minus(requests), slots - 1));
                    }
                }
                helped += 1;
            }
            if bins.is_empty() {
                continue;
            }
            let capacity = self.pools_templates[pool.as_str()].allocatable;
            let (cpu_free, mem_free) = bins.iter().fold((0i64, 0i64), |(c, m), (free, _)| {
                (c + free.cpu, m + free.memory)
            });
            let n = bins.len() as f64;
            let waste = cpu_free as f64 / (capacity.cpu.max(1) as f64 * n)
                + mem_free as f64 / (capacity.memory.max(1) as f64 * n);
            options.push(Growth {
                pool: pool.clone(),
                nodes: bins.len() as u32,
                pods: helped,
                waste,
            });
        }
        let expanders = self.topology.autoscaler.expanders.clone();
        let rng = &mut self.rng;
        let Some(chosen) = expand(options, &expanders, |n| rng.index(n)) else {
            return;
        };
        let Some(pool) = self.topology.pool(&chosen.pool).cloned() else {
            return;
        };
        for _ in 0..chosen.nodes {
            let ordinal = self.pool_size(&pool.name) + 1;
            let name = self.node_name(&pool.name_pattern, ordinal);
            let template = &self.pools_templates[pool.name.as_str()];
            let labels = template
                .labels()
                .iter()
                .filter(|(k, _)| k.as_str() != "kubernetes.io/hostname")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let taints = template.taints().to_vec();
            let capacity = (template.allocatable, template.max_pods);
            let node = self.add_node(&name, &pool.name, false, labels, taints, capacity);
            let (lo, hi) = (
                self.topology.autoscaler.boot_delay.min,
                self.topology.autoscaler.boot_delay.max,
            );
            let boot = self.rng.duration_between(lo, hi);
            self.schedule(after(self.now, boot), Action::NodeBooted(node));
            self.record(
                EventKind::ScaleUp,
                node_ref(&name),
                Some(node),
                &format!(
                    "scale-up of {} for {} unschedulable pod(s); boots in {boot}",
                    pool.name, chosen.pods
                ),
            );
        }
    }

    /// Why a pod cannot be moved off its node by the autoscaler, if it cannot.
    fn scale_down_blocker(&mut self, pod: PodId) -> Option<String> {
        let p = &self.pods[pod];
        let t = &p.template;
        if t.safe_to_evict == Some(false) {
            return Some(format!("{} has safe-to-evict: \"false\"", p.key()));
        }
        if t.local_storage && t.safe_to_evict != Some(true) {
            return Some(format!("{} uses local storage", p.key()));
        }
        let owner_kind = match p.owner {
            Owner::Workload(w, _) => Some(self.workloads[w].kind.clone()),
            Owner::None => None,
        };
        if matches!(owner_kind, None | Some(WorkloadKind::Pod)) {
            return Some(format!("{} has no controller", p.key()));
        }
        let namespace = p.namespace.clone();
        let key = p.key();
        let covering = self.covering_budgets(pod);
        if namespace == "kube-system" && covering.is_empty() {
            return Some(format!(
                "{key} is a kube-system pod without a PodDisruptionBudget"
            ));
        }
        for &i in &covering {
            let allowed = self.pdbs[i]
                .object
                .status
                .as_ref()
                .and_then(|s| s.disruptions_allowed)
                .unwrap_or(0);
            if allowed < 1 {
                return Some(format!(
                    "{key}: PodDisruptionBudget {} allows no disruption",
                    self.pdbs[i].key()
                ));
            }
        }
        None
    }

    /// Whether every movable pod of `node` fits on the other Ready nodes.
    fn pods_fit_elsewhere(&self, node: NodeId, removing: &[NodeId]) -> bool {
        let mut extra: std::collections::BTreeMap<NodeId, (Resources, u32)> = Default::default();
        let pods: Vec<PodId> = self.nodes[node]
            .pods
            .iter()
            .copied()
            .filter(|&p| !self.is_daemon(p) && self.pods[p].is_active())
            .collect();
        'pods: for pod in pods {
            let template = &self.pods[pod].template;
            for (id, other) in self.nodes.iter().enumerate() {
                if id == node
                    || removing.contains(&id)
                    || !other.is_ready()
                    || other.unschedulable()
                    || other.draining
                {
                    continue;
                }
                let (used, count) = extra.get(&id).copied().unwrap_or_default();
                if !template.required.matches(&other.object)
                    || scheduling_blocker(other.taints(), &template.tolerations).is_some()
                    || !other
                        .requested
                        .plus(used)
                        .plus(template.requests)
                        .fits_in(other.allocatable)
                    || other.pods.len() as u32 + count >= other.max_pods
                {
                    continue;
                }
                extra.insert(id, (used.plus(template.requests), count + 1));
                continue 'pods;
            }
            return false;
        }
        true
    }

    pub(super) fn is_daemon(&self, pod: PodId) -> bool {
        matches!(self.pods[pod].owner, Owner::Workload(w, _) if self.workloads[w].kind == WorkloadKind::DaemonSet)
    }

    fn scale_down(&mut self) {
        self.refresh_pdb_status();
        let threshold = self.topology.autoscaler.scale_down_utilization_threshold;
        let unneeded_for = self
            .topology
            .autoscaler
            .scale_down_unneeded_time
            .as_millis();
        let candidates: Vec<NodeId> =
            (0..self.nodes.len())
                .filter(|&n| {
                    let node = &self.nodes[n];
                    node.is_ready()
                        && node.server_up
                        && !node.draining
                        && self
                            .topology
                            .pool(&node.pool)
                            .is_some_and(|p| p.is_autoscaled())
                        && !node.object.metadata.annotations.as_ref().is_some_and(|a| {
                            a.get(SCALE_DOWN_DISABLED).is_some_and(|v| v == "true")
                        })
                })
                .collect();
        let mut removing: Vec<NodeId> = Vec::new();
        let mut non_empty_started = false;
        for node in candidates {
            let unneeded = utilisation(&self.nodes[node]) < threshold
                && self.nodes[node]
                    .pods
                    .iter()
                    .copied()
                    .filter(|&p| !self.is_daemon(p) && self.pods[p].is_active())
                    .collect::<Vec<_>>()
                    .into_iter()
                    .all(|p| self.scale_down_blocker(p).is_none())
                && self.pods_fit_elsewhere(node, &removing);
            if !unneeded {
                self.nodes[node].unneeded_since = None;
                continue;
            }
            let since = *self.nodes[node].unneeded_since.get_or_insert(self.now);
            if self.now < since + unneeded_for {
                continue;
            }
            let pool = self.nodes[node].pool.clone();
            let min = match self.topology.pool(&pool).map(|p| p.size) {
                Some(crate::topology::PoolSize::Autoscaled { min, .. }) => min,
                _ => continue,
            };
            let leaving = removing
                .iter()
                .filter(|&&r| self.nodes[r].pool == pool)
                .count() as u32;
            if self.pool_size(&pool).saturating_sub(leaving) <= min {
                continue;
            }
            let empty = self.nodes[node]
                .pods
                .iter()
                .all(|&p| self.is_daemon(p) || !self.pods[p].is_active());
            if !empty {
                if non_empty_started {
                    continue;
                }
                non_empty_started = true;
            }
            removing.push(node);
            self.start_scale_down(node);
        }
    }

    fn start_scale_down(&mut self, node: NodeId) {
        self.add_taint(node, TO_BE_DELETED, "NoSchedule");
        self.nodes[node].draining = true;
        let name = self.nodes[node].name.clone();
        let utilisation = utilisation(&self.nodes[node]);
        // A scale-down is a disruption like any fault: recovery is measured from it.
        self.obs
            .faults
            .push((self.now, format!("autoscaler scale-down of {name}")));
        self.record(
            EventKind::ScaleDown,
            node_ref(&name),
            Some(node),
            &format!(
                "scale-down: unneeded (utilisation {:.0} %) for the unneeded time; draining",
                utilisation * 100.0
            ),
        );
        self.schedule(self.now, Action::AutoscalerDrain(node));
    }

    /// Evicts the node's pods; a refused eviction aborts the scale-down.
    pub(super) fn autoscaler_drain(&mut self, node: NodeId) {
        if self.nodes[node].phase != NodePhase::Ready {
            return;
        }
        let pods: Vec<PodId> = self.nodes[node]
            .pods
            .iter()
            .copied()
            .filter(|&p| !self.is_daemon(p) && self.pods[p].is_active())
            .collect();
        for pod in pods {
            if let Err(refusal) = self.evict(pod) {
                // Upstream gives up on this node and lets it schedule again.
                self.remove_taint(node, TO_BE_DELETED);
                self.nodes[node].draining = false;
                self.nodes[node].unneeded_since = None;
                let name = self.nodes[node].name.clone();
                self.record(
                    EventKind::ScaleDownAborted,
                    node_ref(&name),
                    Some(node),
                    &format!("scale-down aborted: {refusal}"),
                );
                return;
            }
        }
        self.schedule(
            after(self.now, self.timings.eviction_retry),
            Action::AutoscalerDelete(node),
        );
    }

    /// Deletes the server once the evicted pods have terminated.
    pub(super) fn autoscaler_delete(&mut self, node: NodeId) {
        let remaining = self.nodes[node]
            .pods
            .iter()
            .filter(|&&p| !self.is_daemon(p) && self.pods[p].phase != PodPhase::Gone)
            .count();
        if remaining > 0 {
            self.schedule(
                after(self.now, self.timings.eviction_retry),
                Action::AutoscalerDelete(node),
            );
            return;
        }
        self.nodes[node].draining = false;
        self.delete_server_now(node);
    }
}
