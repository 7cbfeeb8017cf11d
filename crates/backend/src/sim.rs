//! The simulator as a [`Backend`].

use super::{Backend, BackendError, Capabilities, Eviction};
use drillbench_model::duration::Duration;
use drillbench_model::scenario::spec::BackupPhase;
use drillbench_model::scenario::step::{ApplyManifest, NodeChange, ObjectKey, PdbChange};
use drillbench_observe::{Observation, Time};
use drillbench_preflight::{BackupFacts, EtcdCounts, Facts, NodeFacts, Readiness};
use drillbench_sim::api_ops::ApiOpError;
use drillbench_sim::world::NodePhase;
use drillbench_sim::{EPOCH_SECONDS, Simulation};

/// The embedded simulator: it can do everything.
pub struct SimBackend {
    sim: Simulation,
}

impl SimBackend {
    /// Wraps a provisioned simulation.
    pub fn new(sim: Simulation) -> Self {
        SimBackend { sim }
    }

    /// The simulation, for tests that look inside.
    pub fn simulation(&self) -> &Simulation {
        &self.sim
    }

    fn node(&self, name: &str) -> Result<usize, BackendError> {
        self.sim
            .node_id(name)
            .map_err(|e| BackendError::NotFound(e.to_string()))
    }
}

/// Provisions the simulator for a drill and seed: what the runner calls
/// for `--backend sim`, and the sweep for each of its seeds.
pub fn provision(
    drill: &drillbench_model::drill::Drill,
    seed: u64,
) -> Result<Box<dyn Backend>, BackendError> {
    let sim = Simulation::new(drill, seed).map_err(|e| BackendError::Provision(Box::new(e)))?;
    Ok(Box::new(SimBackend::new(sim)))
}

/// What the simulator can do.
pub const CAPABILITIES: Capabilities = Capabilities {
    recreate_control_planes: true,
    crash_nodes: true,
    delete_nodes: true,
    autoscaler: true,
    replace_nodes: true,
    whole_cluster_faults: true,
    storage: true,
    restore_namespaces: true,
};

fn timestamp(drill_ms: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(EPOCH_SECONDS + drill_ms.div_euclid(1000))
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH)
}

impl Backend for SimBackend {
    fn name(&self) -> &'static str {
        "sim"
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn now(&self) -> Time {
        self.sim.now()
    }

    fn advance_to(&mut self, until: Time) {
        self.sim.advance_to(until);
    }

    fn over_budget(&self) -> Option<String> {
        self.sim.over_budget().map(str::to_owned)
    }

    fn next_change(&self) -> Option<Time> {
        self.sim.next_event_time()
    }

    fn pool_nodes(&self, pool: &str) -> Vec<String> {
        self.sim.pool_nodes(pool)
    }

    fn random_node_of(&mut self, pool: &str) -> Option<String> {
        self.sim.random_node_of(pool)
    }

    fn autoscaler_pick(&mut self, pool: &str) -> Option<String> {
        self.sim.autoscaler_pick(pool)
    }

    fn endpoint_holder(&self) -> Option<String> {
        self.sim.endpoint_holder()
    }

    fn other_control_plane(&self) -> Option<String> {
        self.sim.other_control_plane()
    }

    fn note(&mut self, event: drillbench_observe::Event) {
        self.sim.record_event(event);
    }

    fn mark_start(&mut self) {
        self.sim.mark_start();
    }

    fn mark_fault(&mut self, node: Option<&str>, description: &str) {
        let id = node.and_then(|n| self.sim.node_id(n).ok());
        self.sim.mark_fault(id, description);
    }

    fn delete_node(
        &mut self,
        node: &str,
        drain: bool,
        drain_timeout: Duration,
    ) -> Result<(), BackendError> {
        let id = self.node(node)?;
        self.sim.delete_node(id, drain, drain_timeout);
        Ok(())
    }

    fn crash_node(&mut self, node: &str) -> Result<(), BackendError> {
        let id = self.node(node)?;
        self.sim.crash_node(id);
        Ok(())
    }

    fn recreate_control_plane(
        &mut self,
        node: &str,
        boot: Option<(Duration, Duration)>,
    ) -> Result<(), BackendError> {
        let id = self.node(node)?;
        self.sim.recreate_control_plane(id, boot);
        Ok(())
    }

    fn replace_node(&mut self, node: &str) -> Result<(), BackendError> {
        let id = self.node(node)?;
        self.sim.replace_node(id);
        Ok(())
    }

    fn remove_pool(&mut self, pool: &str) -> Result<(), BackendError> {
        self.sim
            .remove_pool(pool)
            .map_err(|e| BackendError::NotFound(e.to_string()))
    }

    fn rolling_upgrade(
        &mut self,
        reboot: Duration,
        drain_timeout: Duration,
    ) -> Result<Option<String>, BackendError> {
        Ok(self.sim.rolling_upgrade(reboot, drain_timeout).blocked)
    }

    fn full_rebuild(
        &mut self,
        restore_from: Option<&str>,
        recovery: Option<&drillbench_model::scenario::spec::RecoverySpec>,
    ) -> Result<Option<String>, BackendError> {
        let outcome = self.sim.full_rebuild(restore_from, recovery);
        Ok(outcome
            .failed_step
            .map(|s| format!("recovery step `{s}` exhausted its attempts")))
    }

    fn restore_namespace(&mut self, namespace: &str, schedule: &str) -> Result<(), BackendError> {
        self.sim.restore_namespace(namespace, schedule);
        Ok(())
    }

    fn scale(&mut self, workload: &str, replicas: u32) -> Result<(), BackendError> {
        self.sim
            .scale_workload(workload, replicas)
            .map_err(|e| BackendError::NotFound(e.to_string()))
    }

    fn rollout(
        &mut self,
        workload: &str,
        image: &str,
        container: Option<&str>,
    ) -> Result<(), BackendError> {
        self.sim
            .rollout_workload(workload, image, container)
            .map_err(|e| BackendError::NotFound(e.to_string()))
    }

    fn change_node(&mut self, node: &str, change: &NodeChange) -> Result<(), BackendError> {
        let id = self.node(node)?;
        self.sim
            .change_node(id, change)
            .map_err(|e| BackendError::NotFound(e.to_string()))
    }

    fn change_pdb(&mut self, change: &PdbChange) -> Result<(), BackendError> {
        self.sim
            .change_pdb(change)
            .map_err(|e| BackendError::NotFound(e.to_string()))
    }

    fn apply_manifest(
        &mut self,
        drill: &drillbench_model::drill::Drill,
        manifest: &ApplyManifest,
    ) -> Result<(), BackendError> {
        let guards: Vec<_> = drill.spec.guards.iter().map(|g| g.value.clone()).collect();
        self.sim
            .apply_documents(&manifest.documents, &guards)
            .map_err(|e| match e {
                ApiOpError::NotFound(what) => BackendError::NotFound(what),
                other => BackendError::infrastructure(other),
            })
    }

    fn delete_object(&mut self, object: &ObjectKey) -> Result<(), BackendError> {
        self.sim
            .delete_object(object)
            .map_err(|e| BackendError::NotFound(e.to_string()))
    }

    fn evict_one(&mut self, workload: &str) -> Result<Eviction, BackendError> {
        // The simulator records the eviction or its refusal itself.
        match self.sim.evict_one_of(workload) {
            Ok(Ok(pod)) => Ok(Eviction::Evicted(pod)),
            Ok(Err((pod, message))) => Ok(Eviction::Refused(pod, message)),
            Err(e) => Err(BackendError::NotFound(e.to_string())),
        }
    }

    fn preflight_facts(&self) -> (Facts, i64) {
        let nodes = self
            .sim
            .nodes()
            .iter()
            .filter(|n| n.phase != NodePhase::Gone)
            .map(|n| NodeFacts {
                name: n.name.clone(),
                control_plane: n.control_plane,
                ready: match n.phase {
                    NodePhase::Ready => Readiness::True,
                    NodePhase::NotReady => Readiness::Unknown,
                    _ => Readiness::False,
                },
            })
            .collect();
        let backups = self
            .sim
            .backups()
            .iter()
            .map(|b| BackupFacts {
                name: b.name.clone(),
                schedule: Some(b.schedule.clone()),
                created: timestamp(b.started),
                phase: Some(
                    match b.phase {
                        BackupPhase::Completed => "Completed",
                        BackupPhase::PartiallyFailed => "PartiallyFailed",
                        BackupPhase::Failed => "Failed",
                        BackupPhase::InProgress => "InProgress",
                    }
                    .to_owned(),
                ),
                completed: b.finished.map(timestamp),
            })
            .collect();
        let facts = Facts {
            nodes,
            backups,
            etcd: EtcdCounts {
                voters: u64::from(self.sim.control_plane().voters()),
                learners: u64::from(self.sim.control_plane().learners()),
            },
        };
        (facts, EPOCH_SECONDS + (self.sim.now() / 1000) as i64)
    }

    fn all_workloads_ready(&self) -> bool {
        self.sim.all_workloads_ready()
    }

    fn workload_ready(&self, workload: &str) -> bool {
        self.sim.workload_key_ready(workload)
    }

    fn ready_nodes(&self, pool: &str) -> u32 {
        self.sim.ready_nodes_of(pool)
    }

    fn etcd_members(&self) -> (u32, u32) {
        (
            self.sim.control_plane().voters(),
            self.sim.control_plane().learners(),
        )
    }

    fn fork(&self) -> Option<Box<dyn Backend>> {
        Some(Box::new(SimBackend::new(self.sim.clone())))
    }

    fn observation(&self) -> &Observation {
        self.sim.observation()
    }

    fn finish(mut self: Box<Self>) -> Observation {
        self.sim.prune_stranded_nodes();
        self.sim.into_observation()
    }
}
