//! The deterministic cluster simulator: the embedded default backend.
//!
//! One seeded generator ([`drillbench_model::rng::SeededRng`]), virtual time that jumps to the
//! next event ([`clock::Queue`]), one thread, ordered collections only: the
//! same drill and seed give the same run, byte for byte. The simulator
//! models the Kubernetes behaviour that decides the incidents the drills
//! rehearse (scheduling, node lifecycle, volumes, disruption budgets, the
//! control plane), with upstream defaults ([`Timings`]), and records what
//! happened into an [`Observation`] that the assertions judge.

pub mod api_ops;
pub mod autoscaler;
mod backups;
mod classes;
pub mod clock;
pub mod control_plane;
mod controllers;
mod engine;
pub mod faults;
#[cfg(test)]
mod fixtures;
mod images;
pub mod load;
mod nodes;
pub mod operations;
mod pod_groups;
mod pod_tally;
mod pods;
mod preemption;
mod reconcile;
mod run_budget;
pub mod scheduler;
mod spread_counts;
mod state;
mod taint_eviction;
#[cfg(test)]
mod tests;
pub mod view;
mod volumes;
pub mod world;

use std::collections::BTreeMap;
use std::rc::Rc;

use drillbench_policy::admission_memo::Digest;
use drillbench_policy::kyverno_admission::{ManifestCluster, read_policies};

use k8s_openapi::api::core::v1::Taint;

pub use self::backups::Backup;
use self::backups::Backups;
pub use self::clock::EPOCH_SECONDS;
use self::clock::Time;
use self::control_plane::ControlPlane;
use self::controllers::Controllers;
use self::engine::Engine;
pub use self::engine::Timings;
use self::images::Images;
use self::run_budget::RunBudget;
use self::scheduler::Scheduler;
use self::state::World;
use self::taint_eviction::TaintEviction;
use self::volumes::Volumes;
use self::world::*;
use drillbench_model::budget::Budgets;
use drillbench_model::drill::Drill;
use drillbench_model::k8s::quantity::ParsedQuantity;
use drillbench_model::labels::{CONTROL_PLANE_LABEL, STANDBY_KEY};
use drillbench_model::latency::{Latencies, Latency};
use drillbench_model::name_pattern::NamePattern;
use drillbench_model::rng::SeededRng;
use drillbench_model::scenario::spec::{BackupPhase, TaintEffect};
use drillbench_model::topology::{CONTROL_PLANE_POOL, EndpointMode, Topology};
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_observe::{AdmissionDecision, Observation};
use drillbench_observe::{Event, EventKind, ObjectRef};

/// Why a simulation could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A manifest could not be taken.
    #[error(transparent)]
    Load(#[from] load::LoadError),
    /// A Kyverno policy of the drill does not read as one.
    #[error(transparent)]
    Policy(#[from] drillbench_kyverno::policy::PolicyError),
    /// A capacity quantity does not parse.
    #[error("pool `{pool}`: invalid capacity `{value}`: {message}")]
    Capacity {
        /// The pool.
        pool: String,
        /// The quantity.
        value: String,
        /// Why.
        message: String,
    },
    /// A primitive named something that does not exist.
    #[error("{0}")]
    NotFound(String),
    /// A primitive the simulator does not model for that object.
    #[error("{0}")]
    Unsupported(String),
}

/// Things that happen later.
#[derive(Debug, Clone)]
enum Action {
    NodeBooted(NodeId),
    /// A lost node's replacement server has booted.
    NodeReplaced(NodeId),
    NodeUnresponsive(NodeId),
    CloudDeleteNode(NodeId),
    PodStarted(PodId),
    TaintEvict(PodId),
    PodTerminated(PodId),
    PodGc(NodeId),
    Detach(ClaimId, NodeId),
    ReleaseVolume(ClaimId, NodeId),
    JobPodDone(PodId),
    CronFire(WorkloadId),
    EndpointFailover,
    PromoteLearner(NodeId),
    JoinEtcd(NodeId),
    Drain(NodeId, Time),
    BackupStart(usize),
    BackupFinish(usize, BackupPhase),
    AutoscalerScan,
    AutoscalerDrain(NodeId),
    AutoscalerDelete(NodeId),
}

/// The simulated cluster: its parts, each owning its state, and what was
/// observed. The parts talk through their methods; the `impl Simulation`
/// blocks of the sibling files (node and pod lifecycles, the controllers,
/// the operations, the faults, the API façade's changes and views) carry
/// out each behaviour across them.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The last settle left pods waiting that its last scheduling pass
    /// could not bind: until something that may let one fit happens, a
    /// pass would fail again.
    waiting_in_vain: bool,
    /// Time, the queue of what happens later, the generator, the timings.
    engine: Engine<Action>,
    /// The drill's cluster as configured (pools may be removed by a fault).
    topology: Topology,
    /// Nodes, pods, workloads, budgets and their indexes.
    world: World,
    /// Claims and their volumes.
    volumes: Volumes,
    /// Node classes, pending pods and the scan's caches.
    scheduler: Scheduler,
    /// What the workload controllers and the autoscaler remember.
    controllers: Controllers,
    /// The evictions `NoExecute` taints have scheduled.
    taint_eviction: TaintEviction,
    /// etcd's members and the endpoint.
    cp: ControlPlane,
    /// Velero's backups.
    backups: Backups,
    /// The images each node has.
    images: Images,
    /// What happened.
    obs: Observation,
    /// The drill's Kyverno policies, their digest (the admission memo's
    /// key) and the objects their context entries read: admission for the
    /// objects applied later through the API.
    policies: Rc<(Vec<drillbench_kyverno::Policy>, Digest, ManifestCluster)>,
    /// The cluster's PriorityClasses: what pods applied later resolve
    /// their priority from.
    priority_classes: drillbench_policy::priority::PriorityClasses,
    /// The run's event and action budgets, counted as it runs.
    run_budget: RunBudget,
    /// Where a fault's random target is drawn ([`SeededRng::for_targets`]).
    targets: SeededRng,
}

impl Simulation {
    /// Builds the drill's cluster at time zero: nodes Ready, etcd healthy,
    /// workloads applied and settled.
    pub fn new(drill: &Drill, seed: u64) -> Result<Simulation, SimError> {
        Self::build(drill, seed, None)
    }

    /// The drill's cluster as the kind and Talos backends provision it: no
    /// cluster autoscaler of its own, and up to `per_pool` tainted standby
    /// nodes per autoscaled pool (see [`Pool::standby_names`]), Ready from
    /// time zero, for the bench's emulated autoscaler to release.
    ///
    /// [`Pool::standby_names`]: drillbench_model::topology::Pool::standby_names
    pub fn with_standby_nodes(
        drill: &Drill,
        seed: u64,
        per_pool: u32,
    ) -> Result<Simulation, SimError> {
        Self::build(drill, seed, Some(per_pool))
    }

    fn build(drill: &Drill, seed: u64, standby: Option<u32>) -> Result<Simulation, SimError> {
        let topology = drill.topology.clone();
        let volumes = Volumes::new(topology.storage_classes.clone());
        let guards: Vec<_> = drill.spec.guards.iter().map(|g| g.value.clone()).collect();
        let read = read_policies(&drill.policies)?;
        // The objects a policy's context may look up: none is asked for
        // without a policy, and copying every manifest is most of a small
        // drill's set-up.
        let cluster = if read.is_empty() {
            ManifestCluster::default()
        } else {
            ManifestCluster::new(&drill.workloads, volumes.default_class())
        };
        let digest = Digest::of_values(drill.policies.iter().map(|d| &d.value));
        let policies = Rc::new((read, digest, cluster));
        let loaded = load::load_admitted(
            &drill.workloads,
            &guards,
            Some(&load::Policies {
                policies: &policies.0,
                digest,
                cluster: &policies.2,
            }),
            volumes.default_class(),
            &Default::default(),
        )?;
        let next_cp_ordinal = topology
            .control_planes
            .ordinals
            .iter()
            .copied()
            .max()
            .unwrap_or(0)
            + 1;
        let mut sim = Simulation {
            waiting_in_vain: false,
            engine: Engine::new(seed),
            topology,
            world: World::default(),
            volumes,
            scheduler: Scheduler::default(),
            controllers: Controllers::default(),
            taint_eviction: TaintEviction::default(),
            cp: ControlPlane::new(next_cp_ordinal),
            backups: Backups::default(),
            images: Images::warm(),
            obs: Observation::default(),
            policies,
            priority_classes: loaded.priority_classes.clone(),
            run_budget: RunBudget::new(&Budgets::of(drill.spec.budgets.as_ref())),
            targets: SeededRng::for_targets(seed),
        };
        sim.provision()?;
        match standby {
            Some(per_pool) => sim.provision_standby(per_pool)?,
            None => sim.start_autoscaler(),
        }
        if let Some(captured) = &drill.snapshot {
            sim.controllers.set_placements(&captured.placements);
        }
        sim.apply(loaded);
        if let Some(captured) = &drill.snapshot {
            // Captured pods whose owner the bench does not simulate.
            sim.obs
                .not_simulated
                .extend(captured.unsimulated.iter().map(|p| ObjectRef {
                    kind: "Pod".to_owned(),
                    namespace: p.namespace.clone(),
                    name: p.name.clone(),
                }));
        }
        sim.background_scan_nodes();
        sim.start_backups();
        sim.settle();
        sim.images.end_warm_start();
        sim.controllers.forget_unordered_placements();
        Ok(sim)
    }

    // ----- what others read -----

    /// The current time.
    pub fn now(&self) -> Time {
        self.engine.now()
    }

    /// The timings in force.
    pub fn timings(&self) -> &Timings {
        self.engine.timings()
    }

    /// Every node, by index (departed ones included: their phase says so).
    pub fn nodes(&self) -> &[SimNode] {
        self.world.nodes()
    }

    /// Every pod, by index (gone ones included).
    pub fn pods(&self) -> &[SimPod] {
        self.world.pods()
    }

    /// Every workload, by index (deleted ones included).
    pub fn workloads(&self) -> &[Workload] {
        self.world.workloads()
    }

    /// Every claim, by index.
    pub fn claims(&self) -> &[Claim] {
        self.volumes.claims()
    }

    /// Every budget, with the status the disruption controller last computed.
    pub fn pdbs(&self) -> &[Pdb] {
        self.world.pdbs()
    }

    /// etcd and the endpoint.
    pub fn control_plane(&self) -> &ControlPlane {
        &self.cp
    }

    /// Every backup, oldest first.
    pub fn backups(&self) -> &[Backup] {
        self.backups.all()
    }

    /// What happened so far.
    pub fn observation(&self) -> &Observation {
        &self.obs
    }

    /// What happened, once the run is over: the observation ends now.
    pub fn into_observation(self) -> Observation {
        let mut obs = self.obs;
        obs.end = self.engine.now();
        obs
    }

    // ----- what others record -----

    /// Adds an event a driver recorded (a step of the drill) to the timeline.
    pub fn record_event(&mut self, event: Event) {
        self.push_event(event);
    }

    /// Adds an event to the timeline while the events budget allows.
    fn push_event(&mut self, event: Event) {
        if self.run_budget.admit_event(self.obs.events.len()) {
            self.obs.events.push(event);
        }
    }

    /// Why the run stopped short of its steps: the events or actions budget
    /// ran out. Time still passes, nothing more happens.
    pub fn over_budget(&self) -> Option<&str> {
        self.run_budget.exceeded()
    }

    /// The drill starts now: what happened before was setting up.
    pub fn mark_start(&mut self) {
        self.obs.start = self.engine.now();
    }

    fn provision(&mut self) -> Result<(), SimError> {
        let cps = self.topology.control_planes.clone();
        let cp_capacity = parse_capacity(CONTROL_PLANE_POOL, &cps.capacity)?;
        let names = cps.names();
        let voters = names.len().saturating_sub(cps.learners_at_start as usize);
        for (index, name) in names.into_iter().enumerate() {
            let (labels, taints, capacity) = match cps.nodes.get(index) {
                // A captured control plane keeps its own labels and taints.
                Some(known) => known_node(known)?,
                None => {
                    let mut labels =
                        BTreeMap::from([(CONTROL_PLANE_LABEL.to_owned(), String::new())]);
                    if let Some(t) = &cps.server_type {
                        labels.insert("node.kubernetes.io/instance-type".to_owned(), t.clone());
                    }
                    let taints = vec![Taint {
                        key: CONTROL_PLANE_LABEL.to_owned(),
                        effect: "NoSchedule".to_owned(),
                        value: None,
                        time_added: None,
                    }];
                    (labels, taints, cp_capacity)
                }
            };
            let id = self.add_node(&name, CONTROL_PLANE_POOL, true, labels, taints, capacity);
            self.world.node_mut(id).phase = NodePhase::Ready;
            self.cp.join(&name, id, index < voters);
            self.record(
                EventKind::NodeReady,
                node_ref(&name),
                Some(id),
                "control plane Ready",
            );
        }
        if self.topology.endpoint.is_some() {
            let holder = self.topology.endpoint.as_ref().map(|e| e.holder.clone());
            let holder = holder.and_then(|h| self.world.node_id(&h));
            self.cp.move_endpoint(holder);
            if let Some(endpoint) = &self.topology.endpoint {
                // A kubeconfig that names a node reaches the API at that
                // node's address, not the floating one.
                let address = match endpoint.mode {
                    EndpointMode::HolderNode => endpoint.holder.clone(),
                    EndpointMode::Floating | EndpointMode::Pinned => endpoint.name.clone(),
                };
                self.obs.endpoint_addresses.push((0, address));
            }
        }
        for pool in self.topology.pools.clone() {
            let capacity = parse_capacity(&pool.name, &pool.capacity)?;
            if pool.is_autoscaled() {
                let labels = pool_labels(&pool);
                let taints = pool_taints(&pool);
                let name = format!("{}-template", pool.name);
                let template = SimNode::new(&name, &pool.name, false, labels, taints, capacity);
                self.controllers.set_pool_template(&pool.name, template);
            }
            for n in 1..=pool.initial_nodes() {
                let (name, labels, taints, capacity) = match pool.nodes.get(n as usize - 1) {
                    Some(known) => {
                        let (labels, taints, capacity) = known_node(known)?;
                        (known.name.clone(), labels, taints, capacity)
                    }
                    None => (
                        self.node_name(&pool.name_pattern, n),
                        pool_labels(&pool),
                        pool_taints(&pool),
                        capacity,
                    ),
                };
                let id = self.add_node(&name, &pool.name, false, labels, taints, capacity);
                self.world.node_mut(id).phase = NodePhase::Ready;
                self.record(
                    EventKind::NodeReady,
                    node_ref(&name),
                    Some(id),
                    "node Ready",
                );
            }
        }
        self.record_control_plane();
        Ok(())
    }

    fn provision_standby(&mut self, per_pool: u32) -> Result<(), SimError> {
        for pool in self.topology.pools.clone() {
            let capacity = parse_capacity(&pool.name, &pool.capacity)?;
            for name in pool.standby_names(per_pool) {
                let mut labels = pool_labels(&pool);
                labels.insert(STANDBY_KEY.to_owned(), "true".to_owned());
                let mut taints = pool_taints(&pool);
                taints.push(Taint {
                    key: STANDBY_KEY.to_owned(),
                    value: Some("true".to_owned()),
                    effect: "NoSchedule".to_owned(),
                    time_added: None,
                });
                let id = self.add_node(&name, &pool.name, false, labels, taints, capacity);
                self.world.node_mut(id).phase = NodePhase::Ready;
                self.record(
                    EventKind::NodeReady,
                    node_ref(&name),
                    Some(id),
                    "standby node Ready",
                );
            }
        }
        Ok(())
    }

    fn node_name(&mut self, pattern: &NamePattern, n: u32) -> String {
        pattern.name(n, || self.engine.rng().hex12())
    }

    fn add_node(
        &mut self,
        name: &str,
        pool: &str,
        control_plane: bool,
        labels: BTreeMap<String, String>,
        taints: Vec<Taint>,
        capacity: (Resources, u32),
    ) -> NodeId {
        let mut node = SimNode::new(name, pool, control_plane, labels, taints, capacity);
        node.class = self.scheduler.class_for(&node);
        let id = self.world.add_node(node);
        self.push_event(Event {
            at_ms: self.now(),
            kind: EventKind::NodeAdded,
            object: node_ref(name),
            node: Some(name.to_owned()),
            pool: Some(pool.to_owned()),
            message: "node created".to_owned(),
        });
        id
    }

    /// Kyverno's background scan (kyverno.io/docs/policy-reports/
    /// background/: policies with `background: true` re-run their validate
    /// rules over existing resources and report, never refuse) over the
    /// nodes as provisioned. Failures, errors and rules not evaluated are
    /// recorded like admission's audited results, against the node; pods
    /// need no scan here, their admission results say the same.
    fn background_scan_nodes(&mut self) {
        let policies = self.policies.clone();
        if !policies.0.iter().any(|p| p.background) {
            return;
        }
        let engine = drillbench_kyverno::Engine::new(&policies.2);
        for id in 0..self.world.nodes().len() {
            if !self.node_exists(id) {
                continue;
            }
            let Ok(node) = serde_json::to_value(self.node_view(id)) else {
                continue;
            };
            let name = self.world.node(id).name.clone();
            for result in drillbench_kyverno::engine::background_scan(&engine, &policies.0, &node)
                .iter()
                .filter(|r| drillbench_policy::kyverno_admission::reportable(r))
            {
                let kind = if result.status == drillbench_kyverno::RuleStatus::NotEvaluated {
                    EventKind::PolicyNotEvaluated
                } else {
                    EventKind::AdmissionAudited
                };
                let message = format!(
                    "background scan: policy `{}` rule `{}` {}: {}",
                    result.policy,
                    result.rule,
                    result.status,
                    result.message.trim()
                );
                self.record(kind, node_ref(&name), Some(id), &message);
            }
        }
    }

    fn apply(&mut self, loaded: load::Loaded) {
        for load::LoadedAdmission {
            guard,
            object,
            outcome,
            reason,
        } in loaded.admissions
        {
            let refused = outcome == load::AdmissionOutcome::Refused;
            if outcome != load::AdmissionOutcome::NotEvaluated {
                self.obs.admissions.push(AdmissionDecision {
                    at: self.now(),
                    guard: guard.clone(),
                    object: object.clone(),
                    refused,
                    reason: reason.clone(),
                });
            }
            let kind = match outcome {
                load::AdmissionOutcome::Refused => EventKind::AdmissionRefused,
                load::AdmissionOutcome::Audited => EventKind::AdmissionAudited,
                load::AdmissionOutcome::NotEvaluated => EventKind::PolicyNotEvaluated,
            };
            // Admission names what it judged by WorkloadRef::of_object.
            let judged = WorkloadRef::parse(&object).unwrap_or_default();
            self.record(
                kind,
                ObjectRef {
                    kind: judged.kind,
                    namespace: judged.namespace,
                    name: judged.name,
                },
                None,
                &format!("guard `{guard}`: {reason}"),
            );
        }
        for (name, labels) in &loaded.namespaces {
            self.world.declare_namespace(name, Some(labels));
        }
        for claim in loaded.claims {
            let id = self.claim(&claim.namespace, &claim.name, claim.class);
            self.volumes.set_storage(id, claim.storage);
        }
        for (object, budget, selector) in loaded.pdbs {
            self.world.add_pdb(Pdb {
                object,
                budget,
                selector,
                disrupted: BTreeMap::new(),
            });
        }
        for w in loaded.workloads {
            let key = WorkloadRef::new(&w.namespace, w.kind_name, &w.name).to_string();
            let revisions = match w.kind {
                WorkloadKind::Deployment => vec![world::Revision {
                    number: 1,
                    history: Vec::new(),
                    template: w.template.clone(),
                    created_at: self.now(),
                    index: 0,
                }],
                _ => Vec::new(),
            };
            let id = self.world.add_workload(Workload {
                key,
                namespace: w.namespace,
                name: w.name,
                kind: w.kind,
                replicas: w.replicas,
                template: w.template,
                pods: Vec::new(),
                next_suffix: 0,
                succeeded: 0,
                strategy: w.strategy,
                cron: w.cron,
                revisions,
            });
            self.controllers.mark_dirty(id);
            if let (Some(_), WorkloadKind::Job { completions, .. }) =
                (w.cron, self.world.workload(id).kind.clone())
            {
                // Nothing runs before the first scheduled time: the CronJob
                // counts as whole until then.
                self.world.workload_mut(id).succeeded = completions;
                self.schedule_cron(id);
            }
        }
        self.obs.not_simulated = loaded.not_simulated;
    }

    // ----- recording -----

    fn record(&mut self, kind: EventKind, object: ObjectRef, node: Option<NodeId>, message: &str) {
        let (node, pool) = match node {
            Some(id) => (
                Some(self.world.node(id).name.clone()),
                Some(self.world.node(id).pool.clone()),
            ),
            None => (None, None),
        };
        self.push_event(Event {
            at_ms: self.now(),
            kind,
            object,
            node,
            pool,
            message: message.to_owned(),
        });
    }

    /// Pushes the control-plane series when they changed.
    fn record_control_plane(&mut self) {
        let now = self.now();
        let quorum = self.cp.has_quorum();
        if self.obs.quorum.last().map(|(_, q)| *q) != Some(quorum) {
            self.obs.quorum.push((now, quorum));
            if self.obs.quorum.len() > 1 {
                let kind = if quorum {
                    EventKind::QuorumRestored
                } else {
                    EventKind::QuorumLost
                };
                self.record(
                    kind,
                    etcd_ref(),
                    None,
                    &format!(
                        "{} voters, {} healthy",
                        self.cp.voters(),
                        self.cp.healthy_voters()
                    ),
                );
            }
        }
        let counts = (self.cp.voters(), self.cp.learners());
        if self.obs.etcd.last().map(|(_, v, l)| (*v, *l)) != Some(counts) {
            self.obs.etcd.push((now, counts.0, counts.1));
        }
        let ready = self.world.control_planes().filter(|n| n.is_ready()).count() as u32;
        if self.obs.control_planes_ready.last().map(|(_, r)| *r) != Some(ready) {
            self.obs.control_planes_ready.push((now, ready));
        }
        if self.topology.endpoint.is_some() {
            let available = self.api_available();
            if self.obs.api.last().map(|(_, a)| *a) != Some(available) {
                self.obs.api.push((now, available));
                if self.obs.api.len() > 1 {
                    let kind = if available {
                        EventKind::ApiAvailable
                    } else {
                        EventKind::ApiUnavailable
                    };
                    let holder = self.cp.holder();
                    self.record(
                        kind,
                        endpoint_ref(&self.topology),
                        holder,
                        "probe through the stable endpoint",
                    );
                }
            }
        }
    }

    /// Whether the API answers through the stable endpoint.
    pub fn api_available(&self) -> bool {
        let Some(holder) = self.cp.holder() else {
            return false;
        };
        self.apiserver_up(holder)
    }

    fn apiserver_up(&self, node: NodeId) -> bool {
        let n = &self.world.node(node);
        n.control_plane && n.server_up && n.phase != NodePhase::Gone && self.cp.has_quorum()
    }

    // ----- the event loop -----

    /// Runs every action due up to `until`, settling the cluster after each
    /// instant, and leaves the clock at `until`.
    /// Once a run budget is out ([`Simulation::over_budget`]), only the
    /// clock moves.
    pub fn advance_to(&mut self, until: Time) {
        'instants: while self.run_budget.exceeded().is_none()
            && self.engine.next_instant(until).is_some()
        {
            // A pod becoming Ready changes nothing the scheduler's filters
            // read (requests, placements and labels were set at binding),
            // so an instant of start-ups alone gives a waiting pod no new
            // chance: it is not retried, as upstream's queueing hints
            // requeue a pod only on an event that may make it schedulable.
            let mut only_start_ups = true;
            while let Some(action) = self.engine.pop_due() {
                if !self.run_budget.take_action() {
                    break 'instants;
                }
                only_start_ups &= matches!(action, Action::PodStarted(_));
                self.handle(action);
            }
            let retry = !(only_start_ups && self.waiting_in_vain);
            self.settle_retrying(retry);
        }
        self.engine.wait_until(until);
    }

    /// The time of the next scheduled action, if any; none once a run
    /// budget is out, so a wait for a condition ends at its timeout.
    pub fn next_event_time(&self) -> Option<Time> {
        if self.run_budget.exceeded().is_some() {
            return None;
        }
        self.engine.next_time()
    }

    /// One draw of a latency from the run's generator, in milliseconds.
    fn draw_latency(&mut self, latency: impl Fn(&Latencies) -> Latency) -> Time {
        latency(&self.topology.latencies)
            .draw(self.engine.rng())
            .as_millis()
    }

    fn schedule(&mut self, at: Time, action: Action) {
        self.engine.schedule(at, action);
    }

    fn settle(&mut self) {
        self.settle_retrying(true);
    }

    /// Settles the instant; `retry: false` skips the first scheduling
    /// pass unless the controllers created pods (nothing the waiting pods
    /// depend on changed).
    fn settle_retrying(&mut self, retry: bool) {
        // Controllers and the scheduler react to each other's changes;
        // a bounded loop reaches the fixpoint of one instant.
        let mut bound = false;
        for pass in 0..16 {
            let created = self.reconcile_workloads();
            bound = (pass > 0 || retry || created) && self.schedule_pending();
            if !created && !bound {
                break;
            }
        }
        self.waiting_in_vain = !bound && self.scheduler.has_pending();
        self.record_workloads();
        self.record_control_plane();
        self.obs.end = self.now();
    }

    fn handle(&mut self, action: Action) {
        match action {
            Action::NodeBooted(node) => self.node_booted(node),
            Action::NodeReplaced(node) => self.replacement_booted(node),
            Action::NodeUnresponsive(node) => self.node_unresponsive(node),
            Action::CloudDeleteNode(node) => {
                if !self.world.node(node).server_exists {
                    self.delete_node_object(
                        node,
                        "the cloud controller deleted the Node: its server is gone",
                    );
                }
            }
            Action::PodStarted(pod) => self.pod_started(pod),
            Action::TaintEvict(pod) => self.taint_evict(pod),
            Action::PodTerminated(pod) => self.pod_gone(pod),
            Action::PodGc(node) => {
                let pods: Vec<PodId> = self.world.node(node).pods.iter().copied().collect();
                for pod in pods {
                    self.pod_gone(pod);
                }
            }
            Action::Detach(claim, node) => {
                // Only a running node can unmount and detach; a server
                // deleted before this leaves the volume attached to it.
                if self.volumes.attached(claim) == Some(node)
                    && self.world.node(node).server_up
                    && !self.world.claim_in_use_on(claim, node)
                {
                    self.detach(claim, node);
                }
            }
            Action::ReleaseVolume(claim, node) => {
                if self.volumes.attached(claim) == Some(node) {
                    self.detach(claim, node);
                }
            }
            Action::JobPodDone(pod) => {
                if self.world.pod(pod).phase == PodPhase::Ready {
                    self.world.set_pod_phase(pod, PodPhase::Succeeded);
                    self.world.release(pod);
                    if let Owner::Workload(w, _) = self.world.pod(pod).owner {
                        self.world.workload_mut(w).succeeded += 1;
                        self.controllers.mark_dirty(w);
                    }
                }
            }
            Action::CronFire(w) => self.cron_fire(w),
            Action::EndpointFailover => self.endpoint_failover(),
            Action::PromoteLearner(node) => self.promote_learner(node),
            Action::JoinEtcd(node) => self.join_etcd(node),
            Action::Drain(node, deadline) => self.drain_step(node, deadline),
            Action::BackupStart(schedule) => self.backup_start(schedule),
            Action::AutoscalerScan => self.autoscaler_scan(),
            Action::AutoscalerDrain(node) => self.autoscaler_drain(node),
            Action::AutoscalerDelete(node) => self.autoscaler_delete(node),
            Action::BackupFinish(index, phase) => self.backup_finish(index, phase),
        }
    }
}

/// The labels every node of a pool carries: the pool's own and its server
/// type, as the cloud controller sets it.
fn pool_labels(pool: &drillbench_model::topology::Pool) -> BTreeMap<String, String> {
    let mut labels = pool.labels.clone();
    if let Some(t) = &pool.server_type {
        labels.insert("node.kubernetes.io/instance-type".to_owned(), t.clone());
    }
    labels
}

/// A node's labels, taints, and allocatable with its most pods.
type NodeShape = (BTreeMap<String, String>, Vec<Taint>, (Resources, u32));

/// A captured node's labels, taints and allocatable, as the sim holds them.
fn known_node(known: &drillbench_model::topology::KnownNode) -> Result<NodeShape, SimError> {
    Ok((
        known.labels.clone(),
        taints_of(&known.taints),
        parse_capacity(&known.name, &known.capacity)?,
    ))
}

fn pool_taints(pool: &drillbench_model::topology::Pool) -> Vec<Taint> {
    taints_of(&pool.taints)
}

fn taints_of(taints: &[drillbench_model::topology::Taint]) -> Vec<Taint> {
    taints
        .iter()
        .map(|t| Taint {
            key: t.key.clone(),
            value: (!t.value.is_empty()).then(|| t.value.clone()),
            effect: effect_name(t.effect).to_owned(),
            time_added: None,
        })
        .collect()
}

fn parse_capacity(
    pool: &str,
    capacity: &drillbench_model::topology::Capacity,
) -> Result<(Resources, u32), SimError> {
    let parse = |value: &str| {
        ParsedQuantity::parse(value).map_err(|e| SimError::Capacity {
            pool: pool.to_owned(),
            value: value.to_owned(),
            message: e.to_string(),
        })
    };
    Ok((
        Resources {
            cpu: parse(&capacity.cpu)?.milli_value(),
            memory: parse(&capacity.memory)?.value(),
        },
        capacity.pods,
    ))
}

fn effect_name(effect: TaintEffect) -> &'static str {
    match effect {
        TaintEffect::NoSchedule => "NoSchedule",
        TaintEffect::PreferNoSchedule => "PreferNoSchedule",
        TaintEffect::NoExecute => "NoExecute",
    }
}

fn node_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "Node".to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    }
}

fn etcd_ref() -> ObjectRef {
    ObjectRef {
        kind: "EtcdCluster".to_owned(),
        namespace: String::new(),
        name: "etcd".to_owned(),
    }
}

fn etcd_member_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "EtcdMember".to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    }
}

fn endpoint_ref(topology: &Topology) -> ObjectRef {
    ObjectRef {
        kind: "Endpoint".to_owned(),
        namespace: String::new(),
        name: topology
            .endpoint
            .as_ref()
            .map(|e| e.name.clone())
            .unwrap_or_default(),
    }
}

fn backup_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "Backup".to_owned(),
        namespace: "velero".to_owned(),
        name: name.to_owned(),
    }
}

fn claim_ref(claim: &Claim) -> ObjectRef {
    ObjectRef {
        kind: "PersistentVolumeClaim".to_owned(),
        namespace: claim.namespace.clone(),
        name: claim.name.clone(),
    }
}
