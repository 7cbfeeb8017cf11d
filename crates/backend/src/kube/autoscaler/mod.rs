//! The cluster autoscaler on clusters that have none: kind and Talos in
//! Docker cannot add a server, so the bench boots each autoscaled pool's
//! standby nodes up front (tainted, in no pool) and plays the autoscaler
//! itself, by the rules the simulator's autoscaler follows
//! ([`drillbench_policy::scale_up`], [`drillbench_policy::scale_down`]), read from
//! what the watches show:
//!
//! - scale-up: a chosen standby node "boots" for the drill's boot delay,
//!   then loses its taint and takes pods; the standby nodes left bound a
//!   pool's growth as its max does.
//! - scale-down: a chosen node is tainted `ToBeDeletedByClusterAutoscaler`,
//!   drained through the eviction API (a refusal aborts and untaints it)
//!   and deleted once its pods are gone.
//!
//! Pure: [`EmulatedAutoscaler::step`] reads an [`Observer`] and returns
//! what to do; the backend does it and reports refusals back.

mod view;

use std::collections::{BTreeMap, BTreeSet};

use self::view::ObservedView;
use super::observer::Observer;
use drillbench_model::rng::SeededRng;
use drillbench_model::topology::Topology;
use drillbench_observe::Time;
use drillbench_policy::cooldown::Cooldown;
use drillbench_policy::drain::{self, EVICTION_RETRY, Next};
use drillbench_policy::expander::expand;
use drillbench_policy::scale_down::InProgress;
use drillbench_policy::view::ClusterView;
use drillbench_policy::{scale_down, scale_up};

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

/// The emulated cluster autoscaler of one drill.
#[derive(Debug)]
pub struct EmulatedAutoscaler {
    topology: Topology,
    rng: SeededRng,
    next_scan: Time,
    unneeded_since: BTreeMap<String, Time>,
    /// Nodes a scan found unremovable, and until when they are left out
    /// of scale-down (`--unremovable-node-recheck-timeout`).
    unremovable_until: BTreeMap<String, Time>,
    /// Standby nodes chosen and booting: when each takes pods.
    booting: BTreeMap<String, Time>,
    /// Nodes being drained for removal.
    removing: BTreeSet<String>,
    /// Those of `removing` that had pods to drain when their removal
    /// started (the others were empty).
    drained: BTreeSet<String>,
    /// The pool of each node of `removing`: a failed removal holds its
    /// pool back when the delays are local.
    removing_pools: BTreeMap<String, String>,
    /// When it last scaled up, started deleting, failed.
    cooldown: Cooldown,
    /// When the nodes being removed are next looked at.
    removal_check: Option<Time>,
}

impl EmulatedAutoscaler {
    /// `--max-graceful-termination-sec`: what its drains cap each evicted
    /// pod's grace period at.
    pub fn max_graceful_termination_sec(&self) -> u32 {
        self.topology.autoscaler.max_graceful_termination_sec
    }

    /// The autoscaler of a drill's topology, its first scan one interval
    /// after `now`; `None` when no pool is autoscaled.
    pub fn new(topology: &Topology, seed: u64, now: Time) -> Option<Self> {
        if !topology.pools.iter().any(|p| p.is_autoscaled()) {
            return None;
        }
        Some(EmulatedAutoscaler {
            topology: topology.clone(),
            rng: SeededRng::new(seed),
            next_scan: now + topology.autoscaler.scan_interval.as_millis(),
            unneeded_since: BTreeMap::new(),
            unremovable_until: BTreeMap::new(),
            booting: BTreeMap::new(),
            removing: BTreeSet::new(),
            drained: BTreeSet::new(),
            removing_pools: BTreeMap::new(),
            cooldown: Cooldown::default(),
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

    /// A scale-down the eviction API refused: the node schedules again,
    /// its unneeded time starts over, and the failure holds scale-down
    /// back for `scaleDownDelayAfterFailure`, as upstream does.
    pub fn aborted(&mut self, node: &str, now: Time) {
        self.removing.remove(node);
        self.drained.remove(node);
        self.unneeded_since.remove(node);
        let pool = self.removing_pools.remove(node).unwrap_or_default();
        self.cooldown.failed(&pool, now);
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
        let retry = EVICTION_RETRY.as_millis();
        let emptied: Vec<String> = {
            let view = self.view(cluster);
            self.removing
                .iter()
                .filter(|n| {
                    let left = view.movable_pods(n).len();
                    drain::after_pass(left, now, None, retry) == Next::Drained
                })
                .cloned()
                .collect()
        };
        for node in emptied {
            self.removing.remove(&node);
            self.removing_pools.remove(&node);
            self.drained.remove(&node);
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
        self.removal_check = (!self.removing.is_empty()).then_some(now + retry);
        decisions
    }

    fn view<'a>(&'a self, cluster: &'a Observer) -> ObservedView<'a> {
        let drained = self.drained.len() as u32;
        let in_progress = InProgress {
            empty: self.removing.len() as u32 - drained,
            drained,
        };
        ObservedView::new(cluster, &self.booting, &self.removing, &self.unneeded_since).remembering(
            self.cooldown.clone(),
            in_progress,
            self.unremovable_until.clone(),
        )
    }

    fn scale_up(&mut self, now: Time, cluster: &Observer, decisions: &mut Vec<Decision>) {
        let options = scale_up::options(&self.view(cluster), &self.topology, now);
        let rng = &mut self.rng;
        let Some(chosen) = expand(options, &self.topology.autoscaler.expanders, |n| {
            rng.index(n)
        }) else {
            return;
        };
        let boot = self.topology.autoscaler.boot_delay;
        self.cooldown.scaled_up(&chosen.pool, now);
        let free = self.view(cluster).free_standby(&chosen.pool);
        for node in free.into_iter().take(chosen.nodes as usize) {
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
        let (unneeded, remove, unremovable) = {
            let view = self.view(cluster);
            let pass = scale_down::pass(&view, &self.topology, now);
            let unremovable: Vec<String> =
                pass.unremovable.iter().map(|n| (*n).to_owned()).collect();
            let unneeded: Vec<(String, Option<Time>)> = pass
                .unneeded
                .into_iter()
                .map(|(n, since)| (n.to_owned(), since))
                .collect();
            let remove: Vec<(String, String, f64, bool)> = pass
                .remove
                .into_iter()
                .map(|n| {
                    let utilisation =
                        scale_down::node_utilisation(&view, n, &self.topology.autoscaler);
                    let pool = view.node(n).pool.to_owned();
                    (
                        n.to_owned(),
                        pool,
                        utilisation,
                        !view.movable_pods(n).is_empty(),
                    )
                })
                .collect();
            (unneeded, remove, unremovable)
        };
        // Expired entries go, as upstream's `unremovable.Nodes.Update`
        // drops them each scan.
        self.unremovable_until.retain(|_, until| *until > now);
        let recheck = self
            .topology
            .autoscaler
            .unremovable_node_recheck_timeout
            .as_millis();
        for node in unremovable {
            self.unremovable_until.insert(node, now + recheck);
        }
        for (node, since) in unneeded {
            match since {
                Some(since) => {
                    self.unneeded_since.insert(node, since);
                }
                None => {
                    self.unneeded_since.remove(&node);
                }
            }
        }
        for (node, pool, utilisation, drained) in remove {
            self.cooldown.deleted(&pool, now);
            if drained {
                self.drained.insert(node.clone());
            }
            self.removing.insert(node.clone());
            self.removing_pools.insert(node.clone(), pool);
            decisions.push(Decision::ScaleDown { node, utilisation });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::kube::observer::{Change, Object};
    use drillbench_model::labels::{POOL_LABEL, STANDBY_KEY};

    const SCAN: Time = 10_000;
    const UNNEEDED: Time = 600_000;

    pub(super) fn topology() -> Topology {
        let path =
            drillbench_model::test_support::repo_file("scenarios/autoscaler-scale-down.yaml");
        let drill = drillbench_model::drill::Drill::load(&path)
            .unwrap_or_else(|d| panic!("{}", d.render(false)));
        let topology = drill.topology;
        assert_eq!(topology.autoscaler.scan_interval.as_millis(), SCAN);
        assert_eq!(
            topology.autoscaler.scale_down_unneeded_time.as_millis(),
            UNNEEDED
        );
        topology
    }

    pub(super) fn node(name: &str, pool: &str, standby: bool, cpu: &str) -> Change {
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
    pub(super) fn pod(name: &str, node: Option<&str>, cpu: &str, extra: Value) -> Change {
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

    pub(super) fn budget(allowed: i32) -> Change {
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

    pub(super) fn cluster(changes: Vec<Change>) -> Observer {
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

    /// cluster-autoscaler's `filterOutYoungPods`: a pod younger than
    /// `newPodScaleUpDelay` asks for no node yet. The emulated autoscaler
    /// reads a pod's age from when its watch first showed it, and a pod
    /// seen again keeps that age. Control: once old enough, it scales up.
    #[test]
    fn a_pod_younger_than_the_new_pod_delay_waits_for_its_scale_up() {
        let mut topology = topology();
        topology.autoscaler.new_pod_scale_up_delay =
            drillbench_model::duration::Duration::from_secs(25);
        let mut observer = Observer::new(topology.clone());
        observer.apply(0, node("prod-worker-1", "baseline", false, "1"));
        observer.apply(
            0,
            node("autoscale-cx43-standby-1", "autoscale-cx43", true, "8"),
        );
        observer.apply(0, pod("burst-a", None, "2", json!({})));
        observer.settle(0);
        // Seen again later (a status update): its age still counts from 0.
        observer.apply(SCAN, pod("burst-a", None, "2", json!({})));
        observer.settle(SCAN);
        let mut scaler = EmulatedAutoscaler::new(&topology, 1, 0).expect("autoscaled pools");
        assert!(scaler.step(SCAN, &observer).is_empty(), "10 s old");
        assert!(scaler.step(2 * SCAN, &observer).is_empty(), "20 s old");
        let decisions = scaler.step(3 * SCAN, &observer);
        assert!(
            matches!(decisions.as_slice(), [Decision::ScaleUp { pods: 1, .. }]),
            "30 s old: {decisions:?}"
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

    /// The emulated autoscaler keeps upstream's cooldown too (FAQ: "a
    /// failed scale-down … in the last 3 minutes",
    /// `--scale-down-delay-after-failure`): once its drain was refused,
    /// the node, unneeded again for the unneeded time, waits until three
    /// minutes after the failure; the control one scan later goes.
    #[test]
    fn after_a_refused_drain_no_scale_down_for_three_minutes_and_its_control_after() {
        let observer = idle_autoscaler_node(vec![budget(1)]);
        let mut scaler = scaler();
        scaler.step(SCAN, &observer);
        let first = scaler.step(SCAN + UNNEEDED, &observer);
        assert!(matches!(first.as_slice(), [Decision::ScaleDown { .. }]));
        // The eviction API refused it a moment later.
        let failed_at = SCAN + UNNEEDED;
        scaler.aborted("autoscale-cx43-1", failed_at);
        // With a 1 s unneeded time the node is eligible again at once.
        scaler.topology.autoscaler.scale_down_unneeded_time =
            drillbench_model::duration::Duration::from_secs(1);
        let mut now = failed_at + SCAN;
        let mut downs = Vec::new();
        while now <= failed_at + 4 * 60_000 {
            if scaler
                .step(now, &observer)
                .iter()
                .any(|d| matches!(d, Decision::ScaleDown { .. }))
            {
                downs.push(now);
            }
            now += SCAN;
        }
        assert_eq!(downs.first(), Some(&(failed_at + 3 * 60_000)), "{downs:?}");
    }
}
