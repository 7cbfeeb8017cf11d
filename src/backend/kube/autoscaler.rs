//! The cluster autoscaler on clusters that have none: kind and Talos in
//! Docker cannot add a server, so the bench boots each autoscaled pool's
//! standby nodes up front (tainted, in no pool) and plays the autoscaler
//! itself, deciding as the simulator's autoscaler ([`crate::sim::autoscaler`])
//! decides, from what the watches show:
//!
//! - scale-up: pods the scheduler reported `Unschedulable` are packed first
//!   fit onto template nodes of every pool that could take them (labels,
//!   taints, size); the expander chain picks the pool; the pool's max, the
//!   standby nodes left and `maxNodesTotal` (every node, booting ones
//!   included) bound it. A chosen standby node "boots" for the drill's boot
//!   delay, then loses its taint and takes pods.
//! - scale-down: a Ready node of an autoscaled pool whose utilisation is
//!   under the threshold and whose pods can all move (no `safe-to-evict:
//!   "false"`, no local storage, a controller, a budget for kube-system
//!   pods, a budget with a disruption left, room elsewhere) for
//!   `scaleDownUnneededTime` is tainted `ToBeDeletedByClusterAutoscaler`,
//!   drained through the eviction API (a refusal aborts and untaints it)
//!   and deleted once its pods are gone, one non-empty node per scan.
//!
//! Pure: [`EmulatedAutoscaler::step`] reads an [`Observer`] and returns
//! what to do; the backend does it and reports refusals back.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Taint};

use super::observer::{NodeState, Observer, PodFacts, PodState};
use crate::k8s::taints::scheduling_blocker;
use crate::labels::STANDBY_KEY;
use crate::observe::Time;
use crate::sim::autoscaler::{Growth, SCALE_DOWN_DISABLED, expand};
use crate::sim::rng::SimRng;
use crate::topology::{PoolSize, Topology};

/// How often a node being removed is looked at until its pods are gone
/// (the simulator's eviction retry).
const REMOVAL_CHECK_MS: Time = 5_000;

/// What the autoscaler does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// A standby node of `pool` is chosen; it takes pods after `boot_ms`.
    ScaleUp {
        /// The pool grown.
        pool: String,
        /// The standby node, by drill name.
        node: String,
        /// How many unschedulable pods the growth is for.
        pods: usize,
        /// Its boot delay.
        boot_ms: Time,
    },
    /// A chosen standby node has booted: untaint it.
    Release {
        /// The node, by drill name.
        node: String,
    },
    /// Taint the node `ToBeDeletedByClusterAutoscaler` and evict its pods.
    ScaleDown {
        /// The node, by drill name.
        node: String,
        /// Its utilisation when it was picked.
        utilisation: f64,
    },
    /// The node's pods are gone: delete its server and its Node.
    Delete {
        /// The node, by drill name.
        node: String,
    },
}

/// Requests (CPU millicores, memory bytes) and pod slots.
#[derive(Debug, Clone, Copy, Default)]
struct Room {
    cpu: i64,
    memory: i64,
    pods: u32,
}

impl Room {
    fn takes(&self, pod: &PodState) -> bool {
        pod.cpu_millis <= self.cpu && pod.memory <= self.memory && self.pods > 0
    }

    fn take(&mut self, pod: &PodState) {
        self.cpu -= pod.cpu_millis;
        self.memory -= pod.memory;
        self.pods = self.pods.saturating_sub(1);
    }
}

/// The emulated cluster autoscaler of one drill.
#[derive(Debug)]
pub struct EmulatedAutoscaler {
    topology: Topology,
    rng: SimRng,
    next_scan: Time,
    unneeded_since: BTreeMap<String, Time>,
    /// Standby nodes chosen and booting: when each takes pods.
    booting: BTreeMap<String, Time>,
    /// Nodes being drained for removal.
    removing: BTreeSet<String>,
    /// When the nodes being removed are next looked at.
    removal_check: Option<Time>,
}

impl EmulatedAutoscaler {
    /// The autoscaler of a drill's topology, its first scan one interval
    /// after `now`; `None` when no pool is autoscaled.
    pub fn new(topology: &Topology, seed: u64, now: Time) -> Option<Self> {
        if !topology.pools.iter().any(|p| p.is_autoscaled()) {
            return None;
        }
        Some(EmulatedAutoscaler {
            topology: topology.clone(),
            rng: SimRng::new(seed),
            next_scan: now + topology.autoscaler.scan_interval.as_millis(),
            unneeded_since: BTreeMap::new(),
            booting: BTreeMap::new(),
            removing: BTreeSet::new(),
            removal_check: None,
        })
    }

    /// When it next has something to do.
    pub fn due(&self) -> Time {
        let boot = self.booting.values().copied().min();
        [Some(self.next_scan), boot, self.removal_check]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(self.next_scan)
    }

    /// A scale-down the eviction API refused: the node schedules again and
    /// its unneeded time starts over, as upstream does.
    pub fn aborted(&mut self, node: &str) {
        self.removing.remove(node);
        self.unneeded_since.remove(node);
    }

    /// What to do at `now`, given the cluster as observed.
    pub fn step(&mut self, now: Time, cluster: &Observer) -> Vec<Decision> {
        let mut decisions = Vec::new();
        let booted: Vec<String> = self
            .booting
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for node in booted {
            self.booting.remove(&node);
            decisions.push(Decision::Release { node });
        }
        let emptied: Vec<String> = self
            .removing
            .iter()
            .filter(|n| active_pods_on(cluster, n).all(|(_, p)| p.daemon))
            .cloned()
            .collect();
        for node in emptied {
            self.removing.remove(&node);
            self.unneeded_since.remove(&node);
            decisions.push(Decision::Delete { node });
        }
        if now >= self.next_scan {
            let interval = self.topology.autoscaler.scan_interval.as_millis().max(1);
            while self.next_scan <= now {
                self.next_scan += interval;
            }
            self.scale_up(now, cluster, &mut decisions);
            self.scale_down(now, cluster, &mut decisions);
        }
        self.removal_check = (!self.removing.is_empty()).then_some(now + REMOVAL_CHECK_MS);
        decisions
    }

    /// Nodes that exist for the autoscaler: every node but standby ones not
    /// chosen, plus the booting ones.
    fn live_nodes(&self, cluster: &Observer) -> u32 {
        cluster
            .nodes()
            .iter()
            .filter(|(name, n)| !n.standby || self.booting.contains_key(*name))
            .count() as u32
    }

    fn pool_size(&self, cluster: &Observer, pool: &str) -> u32 {
        cluster
            .nodes()
            .iter()
            .filter(|(name, n)| n.pool == pool && (!n.standby || self.booting.contains_key(*name)))
            .count() as u32
    }

    /// The standby nodes of a pool still free to choose, by name.
    fn free_standby(&self, cluster: &Observer, pool: &str) -> Vec<String> {
        cluster
            .nodes()
            .iter()
            .filter(|(name, n)| n.pool == pool && n.standby && !self.booting.contains_key(*name))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// A pool's template node: one of its standby nodes as it will be once
    /// released.
    fn template(&self, cluster: &Observer, pool: &str) -> Option<(Node, Room)> {
        let (_, standby) = cluster
            .nodes()
            .iter()
            .find(|(_, n)| n.pool == pool && n.standby)?;
        let mut node = (*standby.object).clone();
        if let Some(labels) = node.metadata.labels.as_mut() {
            labels.remove(STANDBY_KEY);
        }
        if let Some(spec) = node.spec.as_mut()
            && let Some(taints) = spec.taints.as_mut()
        {
            taints.retain(|t| t.key != STANDBY_KEY);
        }
        let overhead = daemon_overhead(cluster, &node);
        Some((
            node,
            Room {
                cpu: standby.cpu_millis - overhead.cpu,
                memory: standby.memory - overhead.memory,
                pods: standby.max_pods.saturating_sub(overhead.pods),
            },
        ))
    }

    fn scale_up(&mut self, now: Time, cluster: &Observer, decisions: &mut Vec<Decision>) {
        let pending: Vec<&PodState> = cluster
            .pods()
            .values()
            .filter(|p| p.node.is_none() && p.unschedulable && !p.deleting && !p.finished)
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
        let templates: BTreeMap<String, (Node, Room)> = pools
            .iter()
            .filter_map(|p| self.template(cluster, p).map(|t| (p.clone(), t)))
            .collect();
        let fits = |pod: &PodState, pool: &str| -> Option<Room> {
            let (node, room) = templates.get(pool)?;
            (fits_node(&pod.facts, node) && room.takes(pod)).then_some(*room)
        };
        // Pods that will land on nodes still booting are taken care of.
        let mut upcoming: Vec<(String, Room)> = self
            .booting
            .keys()
            .filter_map(|name| {
                let pool = cluster.nodes().get(name)?.pool.clone();
                let room = templates.get(&pool)?.1;
                Some((pool, room))
            })
            .collect();
        let mut waiting = Vec::new();
        'pods: for pod in pending {
            for (pool, room) in &mut upcoming {
                if fits(pod, pool).is_some() && room.takes(pod) {
                    room.take(pod);
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
            .map_or(u32::MAX, |m| m.saturating_sub(self.live_nodes(cluster)));
        let mut options = Vec::new();
        for pool in &pools {
            let Some(PoolSize::Autoscaled { max, .. }) = self.topology.pool(pool).map(|p| p.size)
            else {
                continue;
            };
            let room = max
                .saturating_sub(self.pool_size(cluster, pool))
                .min(room_total)
                .min(self.free_standby(cluster, pool).len() as u32);
            if room == 0 {
                continue;
            }
            // First-fit packing onto new template nodes.
            let mut bins: Vec<Room> = Vec::new();
            let mut helped = 0;
            for pod in &waiting {
                let Some(fresh) = fits(pod, pool) else {
                    continue;
                };
                match bins
                    .iter_mut()
                    .find(|bin| !pod.facts.anti_affinity && bin.takes(pod))
                {
                    Some(bin) => bin.take(pod),
                    None => {
                        if bins.len() as u32 >= room {
                            continue;
                        }
                        let mut bin = fresh;
                        bin.take(pod);
                        bins.push(bin);
                    }
                }
                helped += 1;
            }
            if bins.is_empty() {
                continue;
            }
            let capacity = templates[pool].1;
            let (cpu_free, mem_free) = bins
                .iter()
                .fold((0i64, 0i64), |(c, m), b| (c + b.cpu, m + b.memory));
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
        let rng = &mut self.rng;
        let Some(chosen) = expand(options, &self.topology.autoscaler.expanders, |n| {
            rng.index(n)
        }) else {
            return;
        };
        let boot = self.topology.autoscaler.boot_delay;
        for node in self
            .free_standby(cluster, &chosen.pool)
            .into_iter()
            .take(chosen.nodes as usize)
        {
            let boot_ms = self.rng.duration_between(boot.min, boot.max).as_millis();
            self.booting.insert(node.clone(), now + boot_ms);
            decisions.push(Decision::ScaleUp {
                pool: chosen.pool.clone(),
                node,
                pods: chosen.pods,
                boot_ms,
            });
        }
    }

    fn scale_down(&mut self, now: Time, cluster: &Observer, decisions: &mut Vec<Decision>) {
        let threshold = self.topology.autoscaler.scale_down_utilization_threshold;
        let unneeded_for = self
            .topology
            .autoscaler
            .scale_down_unneeded_time
            .as_millis();
        let candidates: Vec<(&String, &NodeState)> = cluster
            .nodes()
            .iter()
            .filter(|(name, n)| {
                n.ready
                    && !n.standby
                    && !self.removing.contains(*name)
                    && self
                        .topology
                        .pool(&n.pool)
                        .is_some_and(|p| p.is_autoscaled())
                    && n.object
                        .metadata
                        .annotations
                        .as_ref()
                        .and_then(|a| a.get(SCALE_DOWN_DISABLED))
                        .is_none_or(|v| v != "true")
            })
            .collect();
        let mut removing: Vec<String> = Vec::new();
        let mut non_empty_started = false;
        for (name, node) in candidates {
            let movable: Vec<&PodState> = active_pods_on(cluster, name)
                .map(|(_, p)| p)
                .filter(|p| !p.daemon)
                .collect();
            let unneeded = utilisation(cluster, name, node) < threshold
                && movable.iter().all(|p| blocker(cluster, p).is_none())
                && self.fit_elsewhere(cluster, name, &movable, &removing);
            if !unneeded {
                self.unneeded_since.remove(name);
                continue;
            }
            let since = *self.unneeded_since.entry(name.clone()).or_insert(now);
            if now < since + unneeded_for {
                continue;
            }
            let Some(PoolSize::Autoscaled { min, .. }) =
                self.topology.pool(&node.pool).map(|p| p.size)
            else {
                continue;
            };
            let leaving = removing
                .iter()
                .filter(|r| cluster.nodes().get(*r).is_some_and(|n| n.pool == node.pool))
                .count() as u32;
            if self.pool_size(cluster, &node.pool).saturating_sub(leaving) <= min {
                continue;
            }
            if !movable.is_empty() {
                if non_empty_started {
                    continue;
                }
                non_empty_started = true;
            }
            removing.push(name.clone());
            self.removing.insert(name.clone());
            decisions.push(Decision::ScaleDown {
                node: name.clone(),
                utilisation: utilisation(cluster, name, node),
            });
        }
    }

    /// Whether every movable pod of `node` fits on the other Ready nodes.
    fn fit_elsewhere(
        &self,
        cluster: &Observer,
        node: &str,
        pods: &[&PodState],
        removing: &[String],
    ) -> bool {
        let mut extra: BTreeMap<&str, Room> = BTreeMap::new();
        'pods: for pod in pods {
            for (name, other) in cluster.nodes() {
                if name == node
                    || removing.contains(name)
                    || self.removing.contains(name)
                    || other.standby
                    || !other.ready
                    || other.unschedulable
                {
                    continue;
                }
                let used = extra.get(name.as_str()).copied().unwrap_or_default();
                let (cpu, memory, count) = requested(cluster, name);
                let free = Room {
                    cpu: other.cpu_millis - cpu - used.cpu,
                    memory: other.memory - memory - used.memory,
                    pods: other.max_pods.saturating_sub(count + used.pods),
                };
                if !fits_node(&pod.facts, &other.object) || !free.takes(pod) {
                    continue;
                }
                let entry = extra.entry(name.as_str()).or_default();
                entry.cpu += pod.cpu_millis;
                entry.memory += pod.memory;
                entry.pods += 1;
                continue 'pods;
            }
            return false;
        }
        true
    }
}

/// The pods on a node that hold resources: bound there, not finished.
fn active_pods_on<'a>(
    cluster: &'a Observer,
    node: &'a str,
) -> impl Iterator<Item = (&'a String, &'a PodState)> + 'a {
    cluster
        .pods()
        .iter()
        .filter(move |(_, p)| p.node.as_deref() == Some(node) && !p.finished)
}

/// Requested CPU, memory and pod count on a node.
fn requested(cluster: &Observer, node: &str) -> (i64, i64, u32) {
    active_pods_on(cluster, node).fold((0, 0, 0), |(c, m, n), (_, p)| {
        (c + p.cpu_millis, m + p.memory, n + 1)
    })
}

/// The larger of the requested CPU and memory shares of a node, DaemonSet
/// pods included.
pub(super) fn utilisation(cluster: &Observer, name: &str, node: &NodeState) -> f64 {
    let (cpu, memory, _) = requested(cluster, name);
    let share = |used: i64, total: i64| {
        if total > 0 {
            used as f64 / total as f64
        } else {
            1.0
        }
    };
    share(cpu, node.cpu_millis).max(share(memory, node.memory))
}

/// Whether a pod's required node affinity and tolerations admit a node.
fn fits_node(pod: &PodFacts, node: &Node) -> bool {
    let taints: &[Taint] = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[]);
    pod.required.as_ref().is_some_and(|r| r.matches(node))
        && scheduling_blocker(taints, &pod.tolerations).is_none()
}

/// The requests of the DaemonSet pods a node would run: one pod of each
/// DaemonSet seen whose placement rules admit the node.
fn daemon_overhead(cluster: &Observer, node: &Node) -> Room {
    let mut seen = BTreeSet::new();
    let mut overhead = Room::default();
    for pod in cluster.pods().values().filter(|p| p.daemon) {
        let Some(owner) = &pod.facts.daemon_set else {
            continue;
        };
        if !seen.insert(owner) || !fits_node(&pod.facts, node) {
            continue;
        }
        overhead.cpu += pod.cpu_millis;
        overhead.memory += pod.memory;
        overhead.pods += 1;
    }
    overhead
}

/// Why the autoscaler cannot move a pod, if it cannot.
fn blocker(cluster: &Observer, pod: &PodState) -> Option<String> {
    let facts = &pod.facts;
    let key = &facts.key;
    if facts.safe_to_evict == Some(false) {
        return Some(format!("{key} has safe-to-evict: \"false\""));
    }
    if facts.local_storage && facts.safe_to_evict != Some(true) {
        return Some(format!("{key} uses local storage"));
    }
    if !facts.controlled {
        return Some(format!("{key} has no controller"));
    }
    let budgets = cluster.covering_budgets(&facts.namespace, &facts.labels);
    if facts.namespace == "kube-system" && budgets.is_empty() {
        return Some(format!(
            "{key} is a kube-system pod without a PodDisruptionBudget"
        ));
    }
    budgets
        .into_iter()
        .find(|(_, allowed)| *allowed < 1)
        .map(|(budget, _)| format!("{key}: PodDisruptionBudget {budget} allows no disruption"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::backend::kube::observer::{Change, Object};
    use crate::labels::POOL_LABEL;

    const SCAN: Time = 10_000;
    const UNNEEDED: Time = 600_000;

    fn topology() -> Topology {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scenarios/autoscaler-scale-down.yaml");
        let drill =
            crate::drill::Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)));
        let topology = drill.topology;
        assert_eq!(topology.autoscaler.scan_interval.as_millis(), SCAN);
        assert_eq!(
            topology.autoscaler.scale_down_unneeded_time.as_millis(),
            UNNEEDED
        );
        topology
    }

    fn node(name: &str, pool: &str, standby: bool, cpu: &str) -> Change {
        let mut labels = json!({POOL_LABEL: pool, "kubernetes.io/hostname": name});
        let mut taints = json!([]);
        if pool == "baseline" {
            labels["platform.devantler.tech/baseline-worker"] = json!("true");
        }
        if standby {
            labels[STANDBY_KEY] = json!("true");
            taints = json!([{"key": STANDBY_KEY, "value": "true", "effect": "NoSchedule"}]);
        }
        Change::Applied(Object::Node(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": taints},
                "status": {"conditions": [{"type": "Ready", "status": "True"}],
                           "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
            }))
            .expect("node"),
        )))
    }

    /// A ReplicaSet's pod requesting `cpu`, on `node` or left unschedulable.
    fn pod(name: &str, node: Option<&str>, cpu: &str, extra: Value) -> Change {
        let mut object = json!({
            "metadata": {"name": name, "namespace": "load", "labels": {"app": "burst"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                              "name": "burst-1", "uid": "u", "controller": true}]},
            "spec": {"nodeName": node,
                     "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]},
            "status": {"phase": if node.is_some() { "Running" } else { "Pending" },
                       "conditions": [{"type": "PodScheduled",
                                       "status": if node.is_some() { "True" } else { "False" },
                                       "reason": if node.is_some() { Value::Null } else { json!("Unschedulable") }}]},
        });
        merge(&mut object, extra);
        Change::Applied(Object::Pod(Box::new(
            serde_json::from_value(object).expect("pod"),
        )))
    }

    fn merge(into: &mut Value, from: Value) {
        match (into, from) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
            (slot, value) => *slot = value,
        }
    }

    fn budget(allowed: i32) -> Change {
        Change::Applied(Object::Budget(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "burst", "namespace": "load"},
                "spec": {"selector": {"matchLabels": {"app": "burst"}}, "maxUnavailable": 1},
                "status": {"disruptionsAllowed": allowed, "currentHealthy": 1,
                           "desiredHealthy": 1, "expectedPods": 1},
            }))
            .expect("budget"),
        )))
    }

    fn cluster(changes: Vec<Change>) -> Observer {
        let mut observer = Observer::new(topology());
        for change in changes {
            observer.apply(0, change);
        }
        observer.settle(0);
        observer
    }

    fn scaler() -> EmulatedAutoscaler {
        EmulatedAutoscaler::new(&topology(), 1, 0).expect("autoscaled pools")
    }

    #[test]
    fn an_unschedulable_pod_scales_up_a_pool_whose_standby_node_takes_it_then_releases_it() {
        let observer = cluster(vec![
            node("prod-worker-1", "baseline", false, "1"),
            node("autoscale-cx43-standby-1", "autoscale-cx43", true, "8"),
            pod("burst-a", None, "2", json!({})),
        ]);
        let mut scaler = scaler();
        assert_eq!(scaler.due(), SCAN, "the first scan comes one interval in");
        assert!(scaler.step(SCAN - 1, &observer).is_empty());
        let decisions = scaler.step(SCAN, &observer);
        let [
            Decision::ScaleUp {
                pool,
                node,
                pods,
                boot_ms,
            },
        ] = decisions.as_slice()
        else {
            panic!("one scale-up: {decisions:?}");
        };
        assert_eq!(
            (pool.as_str(), node.as_str(), *pods),
            ("autoscale-cx43", "autoscale-cx43-standby-1", 1)
        );
        let boot = topology().autoscaler.boot_delay;
        assert!((boot.min.as_millis()..=boot.max.as_millis()).contains(boot_ms));
        // While it boots, the same pod asks for nothing more.
        assert!(scaler.step(2 * SCAN, &observer).is_empty());
        assert_eq!(scaler.due(), 3 * SCAN);
        let released = scaler.step(SCAN + boot_ms, &observer);
        assert!(
            released.contains(&Decision::Release {
                node: "autoscale-cx43-standby-1".to_owned()
            }),
            "{released:?}"
        );
    }

    #[test]
    fn a_pod_no_pools_template_admits_scales_nothing_up() {
        // It needs the baseline label no autoscaler node carries.
        let picky =
            json!({"spec": {"nodeSelector": {"platform.devantler.tech/baseline-worker": "true"}}});
        let observer = cluster(vec![
            node("prod-worker-1", "baseline", false, "1"),
            node("autoscale-cx43-standby-1", "autoscale-cx43", true, "8"),
            pod("db-0", None, "2", picky),
            // Too big for any template.
            pod("huge", None, "64", json!({})),
        ]);
        assert_eq!(scaler().step(SCAN, &observer), Vec::new());
    }

    /// A released autoscaler node running one small burst pod, with room
    /// for it on the baseline.
    fn idle_autoscaler_node(extra: Vec<Change>) -> Observer {
        let mut changes = vec![
            node("prod-worker-1", "baseline", false, "8"),
            node("autoscale-cx43-1", "autoscale-cx43", false, "8"),
            pod(
                "burst-a",
                Some("autoscale-cx43-1"),
                "500m",
                json!({"metadata": {"annotations": {}}}),
            ),
        ];
        changes.extend(extra);
        cluster(changes)
    }

    fn scale_downs(scaler: &mut EmulatedAutoscaler, observer: &Observer) -> Vec<Decision> {
        let mut all = Vec::new();
        let mut now = SCAN;
        while now <= SCAN + UNNEEDED + SCAN {
            all.extend(scaler.step(now, observer));
            now += SCAN;
        }
        all
    }

    #[test]
    fn an_unneeded_node_is_scaled_down_after_the_unneeded_time_and_deleted_once_empty() {
        let observer = idle_autoscaler_node(vec![budget(1)]);
        let mut scaler = scaler();
        assert!(scaler.step(SCAN, &observer).is_empty(), "unneeded from now");
        assert!(scaler.step(SCAN + UNNEEDED - 1, &observer).is_empty());
        let decisions = scaler.step(SCAN + UNNEEDED, &observer);
        assert!(
            matches!(decisions.as_slice(), [Decision::ScaleDown { node, utilisation }]
                if node == "autoscale-cx43-1" && *utilisation < 0.1),
            "{decisions:?}"
        );
        // Its pod is still there: no deletion yet.
        assert!(scaler.step(SCAN + UNNEEDED + 5_000, &observer).is_empty());
        let emptied = idle_autoscaler_node(vec![Change::Deleted(
            match pod("burst-a", Some("autoscale-cx43-1"), "500m", json!({})) {
                Change::Applied(o) => o,
                Change::Deleted(o) => o,
            },
        )]);
        assert_eq!(
            scaler.step(SCAN + UNNEEDED + 10_000, &emptied),
            vec![Decision::Delete {
                node: "autoscale-cx43-1".to_owned()
            }]
        );
    }

    #[test]
    fn each_blocker_keeps_the_node() {
        let cases: Vec<(&str, Vec<Change>)> = vec![
            (
                "safe-to-evict false",
                vec![pod(
                    "burst-a",
                    Some("autoscale-cx43-1"),
                    "500m",
                    json!({"metadata": {"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}}}),
                )],
            ),
            ("a budget with no disruption left", vec![budget(0)]),
            (
                "local storage",
                vec![pod(
                    "burst-a",
                    Some("autoscale-cx43-1"),
                    "500m",
                    json!({"spec": {"volumes": [{"name": "scratch", "emptyDir": {}}]}}),
                )],
            ),
            (
                "no controller",
                vec![pod(
                    "burst-a",
                    Some("autoscale-cx43-1"),
                    "500m",
                    json!({"metadata": {"ownerReferences": []}}),
                )],
            ),
            (
                "no room elsewhere",
                vec![node("prod-worker-1", "baseline", false, "100m")],
            ),
            (
                "busy",
                vec![pod("burst-a", Some("autoscale-cx43-1"), "6", json!({}))],
            ),
        ];
        for (why, changes) in cases {
            let observer = idle_autoscaler_node(changes);
            let decisions = scale_downs(&mut scaler(), &observer);
            assert!(
                !decisions
                    .iter()
                    .any(|d| matches!(d, Decision::ScaleDown { .. })),
                "{why}: {decisions:?}"
            );
        }
        // The control: without a blocker the same node goes.
        let decisions = scale_downs(&mut scaler(), &idle_autoscaler_node(vec![]));
        assert!(
            decisions
                .iter()
                .any(|d| matches!(d, Decision::ScaleDown { .. })),
            "{decisions:?}"
        );
    }
}
