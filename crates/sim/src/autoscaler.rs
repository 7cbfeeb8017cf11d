//! The cluster autoscaler in the simulator: every scan interval it reads
//! the simulation through the policy's view and carries out what
//! `drillbench_policy::scale_up` and `drillbench_policy::scale_down` decide —
//! the rules the emulated autoscaler on kind and Talos follows too.
//!
//! A growth adds nodes built from the pool's template that boot for a
//! seeded delay. A removal taints the node `ToBeDeletedByClusterAutoscaler`
//! and drains it through the eviction API (a refusal aborts and untaints
//! it, `drillbench_policy::drain`).
//!
//! The server is deleted as soon as the drained pods have terminated, like
//! upstream, which does not wait for volumes to detach: a single-attach
//! volume whose detach had not finished stays attached to a server that no
//! longer exists — the incident the drills rehearse.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::clock::after;
use super::controllers::Removal;
use super::operations::utilisation;
use super::world::{self, NodeId, NodePhase, Owner, PodId, PodPhase, WorkloadKind};
use super::{Action, Simulation, node_ref};
use drillbench_model::k8s::taints::TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER as TO_BE_DELETED;
use drillbench_observe::EventKind;
use drillbench_policy::cooldown::Cooldown;
use drillbench_policy::drain::{self, Evicted, Next};
use drillbench_policy::expander::expand;
use drillbench_policy::scale_down::InProgress;
use drillbench_policy::view::{
    AutoscalerView, Budget, ClusterView, NodeFacts, Placement, PodFacts, Resources, Room, Template,
};
use drillbench_policy::{scale_down, scale_up};

/// Upstream's `PodEvictionHeadroom`: how much longer than the longest
/// grace period a scale-down waits for evicted pods.
const POD_EVICTION_HEADROOM_MS: u64 = 30_000;

/// The simulation as the autoscaler's rules read it.
struct SimView<'a> {
    sim: &'a Simulation,
}

fn resources(r: world::Resources) -> Resources {
    Resources {
        cpu: r.cpu,
        memory: r.memory,
    }
}

fn facts(template: &world::Template) -> PodFacts<'_> {
    static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
    PodFacts {
        namespace: "",
        namespace_labels: &NO_LABELS,
        requests: resources(template.requests),
        placement: Placement {
            required: Some(&template.required),
            tolerations: &template.tolerations,
        },
        labels: &template.labels,
        affinity: &template.affinity,
        anti_affinity: &template.anti_affinity,
        spread: &template.spread,
        safe_to_evict: template.safe_to_evict,
        local_storage: template.local_storage,
        controlled: true,
        terminating: false,
    }
}

impl SimView<'_> {
    /// Requests of the DaemonSet pods a new node of the pool would run.
    fn daemon_overhead(&self, pool: &str) -> Resources {
        let Some(template) = self.sim.controllers.pool_template(pool) else {
            return Resources::default();
        };
        let daemons = self
            .sim
            .world
            .workloads()
            .iter()
            .filter(|w| w.kind == WorkloadKind::DaemonSet && w.template.refused_by.is_none())
            .map(|w| facts(&w.template));
        scale_up::daemon_overhead(&template.object, daemons).resources()
    }

    /// What a node of the pool offers pods. The simulator does not count
    /// DaemonSet pods against the pod slots (the kube layer does); kept so
    /// that recorded seeds replay.
    fn room(&self, allocatable: world::Resources, max_pods: u32, pool: &str) -> Room {
        let overhead = self.daemon_overhead(pool);
        let free = resources(allocatable);
        Room::new(
            Resources {
                cpu: free.cpu - overhead.cpu,
                memory: free.memory - overhead.memory,
            },
            max_pods,
        )
    }
}

impl ClusterView for SimView<'_> {
    type Node = NodeId;
    type Pod = PodId;

    fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        0..self.sim.world.nodes().len()
    }

    fn node(&self, node: NodeId) -> NodeFacts<'_> {
        let n = &self.sim.world.node(node);
        NodeFacts {
            pool: &n.pool,
            object: &n.object,
            ready: n.is_ready(),
            running: n.server_up,
            schedulable: !n.unschedulable(),
            set_aside: n.draining,
            counted: n.phase != NodePhase::Gone && n.server_exists,
            allocatable: Room::new(resources(n.allocatable), n.max_pods),
            requested: Room::new(resources(n.requested), n.pods.len() as u32),
        }
    }

    fn movable_pods(&self, node: NodeId) -> Vec<PodId> {
        self.sim.world.movable_pods(node)
    }

    fn pods_on(&self, node: NodeId) -> Vec<PodId> {
        let world = &self.sim.world;
        world
            .node(node)
            .pods
            .iter()
            .copied()
            .filter(|&p| world.pod(p).phase != PodPhase::Gone)
            .collect()
    }

    fn pod(&self, pod: PodId) -> PodFacts<'_> {
        let p = &self.sim.world.pod(pod);
        PodFacts {
            namespace: &p.namespace,
            namespace_labels: self.sim.world.namespace_labels(&p.namespace),
            controlled: match p.owner {
                Owner::Workload(w, _) => self.sim.world.workload(w).kind != WorkloadKind::Pod,
                Owner::None => false,
            },
            terminating: p.phase == PodPhase::Terminating,
            ..facts(&p.template)
        }
    }

    fn budgets(&self, pod: PodId) -> Vec<Budget> {
        self.sim
            .covering_budgets(pod)
            .into_iter()
            .map(|i| {
                let pdb = &self.sim.world.pdbs()[i];
                Budget {
                    name: pdb.key(),
                    disruptions_allowed: pdb
                        .object
                        .status
                        .as_ref()
                        .and_then(|s| s.disruptions_allowed)
                        .unwrap_or(0),
                }
            })
            .collect()
    }
}

impl AutoscalerView for SimView<'_> {
    fn unschedulable_pods(&self) -> Vec<PodId> {
        self.sim
            .scheduler
            .pending()
            .into_iter()
            .filter(|&p| {
                self.sim.world.pod(p).phase == PodPhase::Pending
                    && self.sim.world.pod(p).unschedulable_reported
            })
            .collect()
    }

    fn template(&self, pool: &str) -> Option<Template<'_>> {
        let template = self.sim.controllers.pool_template(pool)?;
        Some(Template {
            node: Cow::Borrowed(&template.object),
            room: self.room(template.allocatable, template.max_pods, pool),
            capacity: resources(template.allocatable),
        })
    }

    fn booting(&self) -> Vec<(String, Room)> {
        self.sim
            .world
            .nodes()
            .iter()
            .filter(|n| n.phase == NodePhase::Booting && !n.control_plane && n.server_up)
            .map(|n| {
                (
                    n.pool.clone(),
                    self.room(n.allocatable, n.max_pods, &n.pool),
                )
            })
            .collect()
    }

    fn unneeded_since(&self, node: NodeId) -> Option<u64> {
        self.sim.world.node(node).unneeded_since
    }

    fn unremovable_until(&self, node: NodeId) -> Option<u64> {
        self.sim.world.node(node).unremovable_until
    }

    fn created_at(&self, pod: PodId) -> Option<u64> {
        Some(self.sim.world.pod(pod).created_at)
    }

    fn cooldown(&self) -> &Cooldown {
        &self.sim.controllers.cooldown
    }

    fn deletions_in_progress(&self) -> InProgress {
        let mut in_progress = InProgress::default();
        for removal in self.sim.controllers.removing.values() {
            if removal.drained {
                in_progress.drained += 1;
            } else {
                in_progress.empty += 1;
            }
        }
        in_progress
    }
}

impl Simulation {
    /// Whether the cluster has a pool the autoscaler manages.
    pub fn has_autoscaler(&self) -> bool {
        self.topology.pools.iter().any(|p| p.is_autoscaled())
    }

    /// Starts the autoscaler's scan loop.
    pub(super) fn start_autoscaler(&mut self) {
        if self.has_autoscaler() {
            let at = after(self.now(), self.topology.autoscaler.scan_interval);
            self.schedule(at, Action::AutoscalerScan);
        }
    }

    /// One scan: scale up for unschedulable pods, then consider scale-down.
    pub(super) fn autoscaler_scan(&mut self) {
        self.scale_up();
        self.scale_down();
        let at = after(self.now(), self.topology.autoscaler.scan_interval);
        self.schedule(at, Action::AutoscalerScan);
    }

    fn scale_up(&mut self) {
        let options = scale_up::options(&SimView { sim: self }, &self.topology, self.now());
        let expanders = self.topology.autoscaler.expanders.clone();
        let rng = self.engine.rng();
        let Some(chosen) = expand(options, &expanders, |n| rng.index(n)) else {
            return;
        };
        let Some(pool) = self.topology.pool(&chosen.pool).cloned() else {
            return;
        };
        let now = self.now();
        self.controllers.cooldown.scaled_up(&chosen.pool, now);
        for _ in 0..chosen.nodes {
            // The next ordinal after the pool's size, unless a live node
            // holds its name (a middle node went, a later one stayed): then
            // the next free one, so two live nodes never share a name.
            let mut ordinal = scale_up::pool_size(&SimView { sim: self }, &pool.name) + 1;
            let mut name = self.node_name(&pool.name_pattern, ordinal);
            while self
                .world
                .nodes()
                .iter()
                .any(|n| n.phase != NodePhase::Gone && n.name == name)
            {
                ordinal += 1;
                name = self.node_name(&pool.name_pattern, ordinal);
            }
            let Some(template) = self.controllers.pool_template(&pool.name) else {
                continue;
            };
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
            let boot = self.engine.rng().duration_between(lo, hi);
            self.schedule(after(self.now(), boot), Action::NodeBooted(node));
            self.record(
                EventKind::ScaleUp,
                node_ref(&name),
                Some(node),
                &format!(
                    "scale-up of {} for {} unschedulable pod(s); boots in {}",
                    pool.name, chosen.pods, boot
                ),
            );
        }
    }

    fn scale_down(&mut self) {
        self.refresh_pdb_status();
        let pass = scale_down::pass(&SimView { sim: self }, &self.topology, self.now());
        for (node, since) in pass.unneeded {
            self.world.node_mut(node).unneeded_since = since;
        }
        let now = self.now();
        let recheck = self
            .topology
            .autoscaler
            .unremovable_node_recheck_timeout
            .as_millis();
        for node in pass.unremovable {
            self.world.node_mut(node).unremovable_until = Some(now + recheck);
        }
        for &node in &pass.remove {
            let pool = self.world.node(node).pool.clone();
            self.controllers.cooldown.deleted(&pool, now);
        }
        for node in pass.remove {
            self.start_scale_down(node);
        }
    }

    fn start_scale_down(&mut self, node: NodeId) {
        let drained = !self.world.movable_pods(node).is_empty();
        self.controllers.removing.insert(
            node,
            Removal {
                drained,
                evicted_at: None,
            },
        );
        self.add_taint(node, TO_BE_DELETED, "NoSchedule");
        self.world.node_mut(node).draining = true;
        let name = self.world.node(node).name.clone();
        let utilisation = utilisation(self.world.node(node));
        // A scale-down is a disruption like any fault: recovery is measured from it.
        self.obs
            .faults
            .push((self.now(), format!("autoscaler scale-down of {name}")));
        self.record(
            EventKind::ScaleDown,
            node_ref(&name),
            Some(node),
            &format!(
                "scale-down: unneeded (utilisation {:.0} %) for the unneeded time; draining",
                utilisation * 100.0
            ),
        );
        self.schedule(self.now(), Action::AutoscalerDrain(node));
    }

    /// Evicts the node's pods; a refused eviction aborts the scale-down.
    pub(super) fn autoscaler_drain(&mut self, node: NodeId) {
        if self.world.node(node).phase != NodePhase::Ready {
            // Lost before its drain: the removal is over, and failed.
            self.controllers.removing.remove(&node);
            let (pool, now) = (self.world.node(node).pool.clone(), self.now());
            self.controllers.cooldown.failed(&pool, now);
            return;
        }
        let pods = self.world.movable_pods(node);
        let flag = self.topology.autoscaler.max_graceful_termination_sec;
        let refused = drain::evict_until_refused(pods, |pod| {
            Ok::<_, std::convert::Infallible>(match self.evict(pod) {
                Ok(()) => {
                    // Each eviction asks for the pod's grace capped at
                    // `--max-graceful-termination-sec`.
                    let written = self
                        .world
                        .pod(pod)
                        .template
                        .spec
                        .termination_grace_period_seconds;
                    let grace = drain::autoscaler_grace(written, flag);
                    self.apply_grace(pod, Some(grace));
                    Evicted::Accepted
                }
                Err(refusal) => Evicted::Refused(refusal),
            })
        });
        if let Ok(Some(refusal)) = refused {
            self.abort_scale_down(node, &refusal);
            return;
        }
        let now = self.now();
        if let Some(removal) = self.controllers.removing.get_mut(&node) {
            removal.evicted_at = Some(now);
        }
        self.schedule(
            after(self.now(), self.engine.timings().eviction_retry),
            Action::AutoscalerDelete(node),
        );
    }

    /// Upstream gives up on the node and lets it schedule again; the
    /// failure holds every scale-down back for
    /// `scaleDownDelayAfterFailure`.
    fn abort_scale_down(&mut self, node: NodeId, why: &str) {
        self.remove_taint(node, TO_BE_DELETED);
        self.world.node_mut(node).draining = false;
        self.world.node_mut(node).unneeded_since = None;
        self.controllers.removing.remove(&node);
        let (pool, now) = (self.world.node(node).pool.clone(), self.now());
        self.controllers.cooldown.failed(&pool, now);
        let name = self.world.node(node).name.clone();
        self.record(
            EventKind::ScaleDownAborted,
            node_ref(&name),
            Some(node),
            &format!("scale-down aborted: {why}"),
        );
    }

    /// Deletes the server once the evicted pods have terminated. Upstream
    /// waits `maxGracefulTerminationSec` plus a 30 s headroom
    /// (`core/scaledown/actuation/drain.go`, `PodEvictionHeadroom`) and
    /// then fails the removal rather than delete a node still running
    /// pods.
    pub(super) fn autoscaler_delete(&mut self, node: NodeId) {
        let retry = self.engine.timings().eviction_retry.as_millis();
        let deadline = self
            .controllers
            .removing
            .get(&node)
            .and_then(|r| r.evicted_at)
            .map(|at| {
                at + u64::from(self.topology.autoscaler.max_graceful_termination_sec) * 1_000
                    + POD_EVICTION_HEADROOM_MS
            });
        match drain::after_pass(self.world.pods_left(node), self.now(), deadline, retry) {
            Next::RetryAt(at) => self.schedule(at, Action::AutoscalerDelete(node)),
            Next::TimedOut => {
                let left = self.world.pods_left(node);
                self.abort_scale_down(
                    node,
                    &format!(
                        "{left} pod(s) still terminating after maxGracefulTerminationSec {} s and 30 s headroom",
                        self.topology.autoscaler.max_graceful_termination_sec
                    ),
                );
            }
            Next::Drained => {
                self.world.node_mut(node).draining = false;
                self.controllers.removing.remove(&node);
                self.delete_server_now(node);
            }
        }
    }
}
