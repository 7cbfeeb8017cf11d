//! The deterministic cluster simulator: the embedded default backend.
//!
//! One seeded generator ([`crate::rng::SeededRng`]), virtual time that jumps to the
//! next event ([`clock::Queue`]), one thread, ordered collections only: the
//! same drill and seed give the same run, byte for byte. The simulator
//! models the Kubernetes behaviour that decides the incidents the drills
//! rehearse (scheduling, node lifecycle, volumes, disruption budgets, the
//! control plane), with upstream defaults ([`Timings`]), and records what
//! happened into an [`Observation`] that the assertions judge.

pub mod api_ops;
pub mod autoscaler;
mod classes;
pub mod clock;
pub mod control_plane;
pub mod faults;
pub mod load;
pub mod operations;
pub mod scheduler;
pub mod view;
pub mod world;

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use k8s_openapi::api::core::v1::{Node, NodeSpec, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use self::clock::{Queue, Time, after};
use self::control_plane::{ControlPlane, Member};
use self::world::*;
use crate::drill::Drill;
use crate::duration::Duration;
use crate::k8s::quantity::ParsedQuantity;
use crate::k8s::taints::{NoExecuteVerdict, no_execute_verdict};
use crate::labels::{CONTROL_PLANE_LABEL, STANDBY_KEY};
use crate::observe::{AdmissionDecision, DataLoss, Observation, Placement, Stranding};
use crate::observe::{Event, EventKind, ObjectRef};
use crate::rng::SeededRng;
use crate::scenario::spec::{AttachModel, BackupPhase, BindingMode, Release, TaintEffect};
use crate::topology::{CONTROL_PLANE_POOL, Topology};

/// Upstream defaults of the behaviour the simulator models.
#[derive(Debug, Clone)]
pub struct Timings {
    /// kube-controller-manager `--node-monitor-grace-period` (50s since 1.32).
    pub node_monitor_grace: Duration,
    /// How long after a server is gone the cloud controller deletes its Node.
    pub cloud_node_deletion: Duration,
    /// Pod GC deletes pods bound to a deleted node after this quarantine.
    pub pod_gc_quarantine: Duration,
    /// `terminationGracePeriodSeconds` default.
    pub termination_grace: Duration,
    /// How long a healthy node takes to detach a volume after its pod is gone.
    pub detach: Duration,
    /// How long a drain waits between refused evictions.
    pub eviction_retry: Duration,
    /// How long a replacement control plane takes to boot and join.
    pub control_plane_boot: (Duration, Duration),
    /// How long an etcd learner takes to catch up before promotion.
    pub learner_catch_up: (Duration, Duration),
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            node_monitor_grace: Duration::from_secs(50),
            cloud_node_deletion: Duration::from_secs(5),
            pod_gc_quarantine: Duration::from_secs(40),
            termination_grace: Duration::from_secs(30),
            detach: Duration::from_secs(10),
            eviction_retry: crate::policy::drain::EVICTION_RETRY,
            control_plane_boot: (Duration::from_mins(3), Duration::from_mins(5)),
            learner_catch_up: (Duration::from_secs(20), Duration::from_secs(60)),
        }
    }
}

/// Why a simulation could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A manifest could not be taken.
    #[error(transparent)]
    Load(#[from] load::LoadError),
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

/// One backup of a schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backup {
    /// Name, as Velero names scheduled backups.
    pub name: String,
    /// Schedule.
    pub schedule: String,
    /// Start, in drill time (negative: before the drill).
    pub started: i64,
    /// Finish, when it finished.
    pub finished: Option<i64>,
    /// Phase.
    pub phase: BackupPhase,
}

/// Scheduling equivalence class: nodes that differ only in name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ClassKey {
    pool: String,
    labels: Vec<(String, String)>,
    taints: Vec<(String, String, String)>,
    allocatable: (i64, i64),
}

/// The simulated cluster.
#[derive(Debug)]
pub struct Simulation {
    /// The current time.
    pub now: Time,
    queue: Queue<Action>,
    rng: SeededRng,
    /// The timings in force.
    pub timings: Timings,
    topology: Topology,
    /// Nodes, by index.
    pub nodes: Vec<SimNode>,
    node_index: BTreeMap<String, NodeId>,
    /// Pods, by index.
    pub pods: Vec<SimPod>,
    /// Workloads, by index.
    pub workloads: Vec<Workload>,
    workload_index: BTreeMap<String, WorkloadId>,
    /// Claims, by index.
    pub claims: Vec<Claim>,
    claim_index: BTreeMap<(String, String), ClaimId>,
    /// Budgets.
    pub pdbs: Vec<Pdb>,
    classes: Vec<ClassKey>,
    class_index: BTreeMap<ClassKey, usize>,
    /// Each class as a Node object (its labels and taints, no name): what
    /// the scheduler judges a class by.
    class_objects: Vec<Node>,
    pending: BTreeSet<(Time, PodId)>,
    dirty: BTreeSet<WorkloadId>,
    /// The control plane.
    pub cp: ControlPlane,
    /// Backups, oldest first.
    pub backups: Vec<Backup>,
    default_class: Option<String>,
    sched_cursor: usize,
    /// The scheduler's compact per-node state (see [`scheduler`]).
    hot: Vec<scheduler::HotNode>,
    /// Per node: the index after its run of consecutive same-class nodes.
    run_end: Vec<u32>,
    /// Per node: the pod requests its capacity score was computed for, and
    /// that score; valid until the node's requests change.
    capacity_scores: Vec<(Resources, i64)>,
    /// Buffers the scheduler reuses from pod to pod.
    feasible_buf: Vec<NodeId>,
    best_buf: Vec<NodeId>,
    class_score_buf: Vec<i64>,
    /// Per writer workload: the spans (start, end) during which one of its
    /// pods was Ready and acknowledging writes; the last may be open.
    writes: BTreeMap<WorkloadId, Vec<(Time, Option<Time>)>>,
    /// Per node: its labels as shared with placements; cleared whenever its
    /// labels change.
    placement_labels: Vec<Option<Rc<BTreeMap<String, String>>>>,
    next_cp_ordinal: u32,
    /// What happened.
    pub obs: Observation,
    ready_counts: BTreeMap<WorkloadId, (u32, u32)>,
    /// A template node per autoscaled pool: what a new node would look like.
    pools_templates: BTreeMap<String, SimNode>,
}

/// A fixed start for drill time as wall-clock time (2026-01-01T00:00:00Z),
/// so reports that print timestamps stay deterministic.
pub const EPOCH_SECONDS: i64 = 1_767_225_600;

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
    /// [`Pool::standby_names`]: crate::topology::Pool::standby_names
    pub fn with_standby_nodes(
        drill: &Drill,
        seed: u64,
        per_pool: u32,
    ) -> Result<Simulation, SimError> {
        Self::build(drill, seed, Some(per_pool))
    }

    fn build(drill: &Drill, seed: u64, standby: Option<u32>) -> Result<Simulation, SimError> {
        let topology = drill.topology.clone();
        let default_class = topology
            .storage_classes
            .iter()
            .find(|c| c.default)
            .map(|c| c.name.clone());
        let guards: Vec<_> = drill.spec.guards.iter().map(|g| g.value.clone()).collect();
        let loaded = load::load(&drill.workloads, &guards, default_class.as_deref())?;
        let mut sim = Simulation {
            now: 0,
            queue: Queue::default(),
            rng: SeededRng::new(seed),
            timings: Timings::default(),
            topology,
            nodes: Vec::new(),
            node_index: BTreeMap::new(),
            pods: Vec::new(),
            workloads: Vec::new(),
            workload_index: BTreeMap::new(),
            claims: Vec::new(),
            claim_index: BTreeMap::new(),
            pdbs: Vec::new(),
            classes: Vec::new(),
            class_index: BTreeMap::new(),
            class_objects: Vec::new(),
            pending: BTreeSet::new(),
            dirty: BTreeSet::new(),
            cp: ControlPlane::default(),
            backups: Vec::new(),
            default_class,
            sched_cursor: 0,
            hot: Vec::new(),
            run_end: Vec::new(),
            capacity_scores: Vec::new(),
            feasible_buf: Vec::new(),
            best_buf: Vec::new(),
            class_score_buf: Vec::new(),
            placement_labels: Vec::new(),
            writes: BTreeMap::new(),
            next_cp_ordinal: 0,
            obs: Observation::default(),
            ready_counts: BTreeMap::new(),
            pools_templates: BTreeMap::new(),
        };
        sim.provision()?;
        match standby {
            Some(per_pool) => sim.provision_standby(per_pool)?,
            None => sim.start_autoscaler(),
        }
        sim.apply(loaded);
        sim.start_backups();
        sim.settle();
        Ok(sim)
    }

    fn provision(&mut self) -> Result<(), SimError> {
        let cps = self.topology.control_planes.clone();
        let cp_capacity = parse_capacity(CONTROL_PLANE_POOL, &cps.capacity)?;
        for name in cps.names() {
            let mut labels = BTreeMap::from([(CONTROL_PLANE_LABEL.to_owned(), String::new())]);
            if let Some(t) = &cps.server_type {
                labels.insert("node.kubernetes.io/instance-type".to_owned(), t.clone());
            }
            let taints = vec![Taint {
                key: CONTROL_PLANE_LABEL.to_owned(),
                effect: "NoSchedule".to_owned(),
                value: None,
                time_added: None,
            }];
            let id = self.add_node(&name, CONTROL_PLANE_POOL, true, labels, taints, cp_capacity);
            self.nodes[id].phase = NodePhase::Ready;
            self.cp.members.push(Member {
                name: name.clone(),
                node: id,
                voter: true,
                healthy: true,
            });
            self.record(
                EventKind::NodeReady,
                node_ref(&name),
                Some(id),
                "control plane Ready",
            );
        }
        self.next_cp_ordinal = cps.ordinals.iter().copied().max().unwrap_or(0) + 1;
        if self.topology.endpoint.is_some() {
            let holder = self.topology.endpoint.as_ref().map(|e| e.holder.clone());
            self.cp.holder = holder.and_then(|h| self.node_index.get(&h).copied());
            if let Some(endpoint) = &self.topology.endpoint {
                self.obs.endpoint_addresses.push((0, endpoint.name.clone()));
            }
        }
        for pool in self.topology.pools.clone() {
            let capacity = parse_capacity(&pool.name, &pool.capacity)?;
            if pool.is_autoscaled() {
                let labels = pool_labels(&pool);
                let taints = pool_taints(&pool);
                let template = build_node(
                    &format!("{}-template", pool.name),
                    &pool.name,
                    false,
                    labels,
                    taints,
                    capacity,
                    0,
                );
                self.pools_templates.insert(pool.name.clone(), template);
            }
            for n in 1..=pool.initial_nodes() {
                let name = self.node_name(&pool.name_pattern, n);
                let taints = pool_taints(&pool);
                let labels = pool_labels(&pool);
                let id = self.add_node(&name, &pool.name, false, labels, taints, capacity);
                self.nodes[id].phase = NodePhase::Ready;
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
                self.nodes[id].phase = NodePhase::Ready;
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

    fn node_name(&mut self, pattern: &str, n: u32) -> String {
        let mut name = pattern.replace("{n}", &n.to_string());
        while name.contains("{hex12}") {
            let hex = self.rng.hex12();
            name = name.replacen("{hex12}", &hex, 1);
        }
        name
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
        let mut node = build_node(name, pool, control_plane, labels, taints, capacity, 0);
        node.class = self.class_for(&node);
        let id = self.nodes.len();
        self.nodes.push(node);
        self.node_index.insert(name.to_owned(), id);
        self.obs.events.push(Event {
            at_ms: self.now,
            kind: EventKind::NodeAdded,
            object: node_ref(name),
            node: Some(name.to_owned()),
            pool: Some(pool.to_owned()),
            message: "node created".to_owned(),
        });
        id
    }

    /// The scheduling class of a node (created when it is the first of its
    /// kind): nodes with the same pool, labels but the hostname, taints and
    /// capacity are interchangeable to every filter but the per-node ones.
    pub(super) fn class_for(&mut self, node: &SimNode) -> usize {
        let labels: BTreeMap<String, String> = node
            .labels()
            .iter()
            .filter(|(k, _)| k.as_str() != "kubernetes.io/hostname")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let key = ClassKey {
            pool: node.pool.clone(),
            labels: labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            taints: node
                .taints()
                .iter()
                .map(|t| {
                    (
                        t.key.clone(),
                        t.value.clone().unwrap_or_default(),
                        t.effect.clone(),
                    )
                })
                .collect(),
            allocatable: (node.allocatable.cpu, node.allocatable.memory),
        };
        if let Some(&class) = self.class_index.get(&key) {
            return class;
        }
        let class = self.classes.len();
        self.classes.push(key.clone());
        self.class_index.insert(key, class);
        self.class_objects.push(Node {
            metadata: ObjectMeta {
                labels: Some(labels),
                ..Default::default()
            },
            spec: node.object.spec.clone(),
            status: None,
        });
        class
    }

    fn apply(&mut self, loaded: load::Loaded) {
        for (guard, object, refused, reason) in loaded.admissions {
            self.obs.admissions.push(AdmissionDecision {
                at: self.now,
                guard: guard.clone(),
                object: object.clone(),
                refused,
                reason: reason.clone(),
            });
            let kind = if refused {
                EventKind::AdmissionRefused
            } else {
                EventKind::AdmissionAudited
            };
            let mut parts = object.splitn(3, '/');
            let (ns, k, n) = (
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
                parts.next().unwrap_or_default(),
            );
            self.record(
                kind,
                ObjectRef {
                    kind: k.to_owned(),
                    namespace: ns.to_owned(),
                    name: n.to_owned(),
                },
                None,
                &format!("guard `{guard}`: {reason}"),
            );
        }
        for claim in loaded.claims {
            self.claim(&claim.namespace, &claim.name, claim.class);
        }
        for (object, budget, selector) in loaded.pdbs {
            self.pdbs.push(Pdb {
                object,
                budget,
                selector,
                disrupted: BTreeMap::new(),
            });
        }
        for w in loaded.workloads {
            let key = format!("{}/{}/{}", w.namespace, w.kind_name, w.name);
            let id = self.workloads.len();
            self.workloads.push(Workload {
                key: key.clone(),
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
            });
            self.workload_index.insert(key, id);
            self.dirty.insert(id);
            if let (Some(_), WorkloadKind::Job { completions, .. }) =
                (w.cron, &self.workloads[id].kind)
            {
                // Nothing runs before the first scheduled time: the CronJob
                // counts as whole until then.
                self.workloads[id].succeeded = *completions;
                self.schedule_cron(id);
            }
        }
        self.obs.not_simulated = loaded.not_simulated;
    }

    /// The claim of that name, created if it does not exist yet.
    fn claim(&mut self, namespace: &str, name: &str, class: Option<String>) -> ClaimId {
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(&id) = self.claim_index.get(&key) {
            return id;
        }
        let class = class.or_else(|| self.default_class.clone());
        let storage = class
            .as_ref()
            .and_then(|c| self.topology.storage_classes.iter().find(|s| &s.name == c));
        let (attach, release) = storage
            .map_or((AttachModel::Replicated, Release::Immediately), |s| {
                (s.attach, s.release_on_node_loss)
            });
        // A claim without a known class binds at once, as a pre-provisioned
        // volume would, and goes anywhere.
        let binding = storage.map_or(BindingMode::Immediate, |s| s.binding_mode);
        let topology_key = storage.and_then(|s| s.topology_key.clone());
        let id = self.claims.len();
        self.claims.push(Claim {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            class,
            attach,
            release,
            binding,
            topology_key,
            bound: false,
            pv_topology: None,
            attached: None,
            attached_at: 0,
            selected_node: None,
            release_at: None,
        });
        self.claim_index.insert(key, id);
        if binding == BindingMode::Immediate {
            self.bind_claim_now(id);
        }
        id
    }

    /// `Immediate` binding: the volume is provisioned when the claim is
    /// created, before any consumer is known, in a topology domain the
    /// provisioner picks (seeded: any domain a Ready node is in). Pods using
    /// the claim are then confined to that domain, whether or not a node
    /// there can take them.
    fn bind_claim_now(&mut self, claim: ClaimId) {
        self.claims[claim].bound = true;
        let Some(key) = self.claims[claim].topology_key.clone() else {
            return;
        };
        let domains: BTreeSet<&String> = self
            .nodes
            .iter()
            .filter(|n| n.is_ready())
            .filter_map(|n| n.labels().get(&key))
            .collect();
        if domains.is_empty() {
            return;
        }
        let domains: Vec<String> = domains.into_iter().cloned().collect();
        let pick = domains[self.rng.index(domains.len())].clone();
        self.claims[claim].pv_topology = Some(pick);
    }

    /// `WaitForFirstConsumer` binding: the volume is provisioned where its
    /// first consumer was scheduled, so it carries that node's domain.
    fn bind_claim_for(&mut self, claim: ClaimId, node: NodeId) {
        if self.claims[claim].bound {
            return;
        }
        self.claims[claim].bound = true;
        self.claims[claim].selected_node = Some(node);
        if let Some(key) = &self.claims[claim].topology_key {
            self.claims[claim].pv_topology = self.nodes[node].labels().get(key).cloned();
        }
    }

    // ----- recording -----

    fn record(&mut self, kind: EventKind, object: ObjectRef, node: Option<NodeId>, message: &str) {
        let (node, pool) = match node {
            Some(id) => (
                Some(self.nodes[id].name.clone()),
                Some(self.nodes[id].pool.clone()),
            ),
            None => (None, None),
        };
        self.obs.events.push(Event {
            at_ms: self.now,
            kind,
            object,
            node,
            pool,
            message: message.to_owned(),
        });
    }

    fn pod_ref(&self, pod: PodId) -> ObjectRef {
        let p = &self.pods[pod];
        ObjectRef {
            kind: "Pod".to_owned(),
            namespace: p.namespace.clone(),
            name: p.name.clone(),
        }
    }

    /// Pushes the control-plane series when they changed.
    fn record_control_plane(&mut self) {
        let now = self.now;
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
                        self.cp
                            .members
                            .iter()
                            .filter(|m| m.voter && m.healthy)
                            .count()
                    ),
                );
            }
        }
        let counts = (self.cp.voters(), self.cp.learners());
        if self.obs.etcd.last().map(|(_, v, l)| (*v, *l)) != Some(counts) {
            self.obs.etcd.push((now, counts.0, counts.1));
        }
        let ready = self
            .nodes
            .iter()
            .filter(|n| n.control_plane && n.is_ready())
            .count() as u32;
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
                    let holder = self.cp.holder;
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
        let Some(holder) = self.cp.holder else {
            return false;
        };
        self.apiserver_up(holder)
    }

    fn apiserver_up(&self, node: NodeId) -> bool {
        let n = &self.nodes[node];
        n.control_plane && n.server_up && n.phase != NodePhase::Gone && self.cp.has_quorum()
    }

    fn record_workloads(&mut self) {
        let ids: Vec<WorkloadId> = (0..self.workloads.len()).collect();
        for id in ids {
            let w = &self.workloads[id];
            let desired = self.desired_replicas(id);
            let ready = w
                .pods
                .iter()
                .filter(|&&p| self.pods[p].phase == PodPhase::Ready)
                .count() as u32;
            let ready = if matches!(w.kind, WorkloadKind::Job { .. }) {
                // A Job is whole once it completed.
                if w.succeeded >= desired {
                    desired
                } else {
                    ready.min(desired)
                }
            } else {
                ready
            };
            if self.workloads[id].template.writes_every.is_some() {
                let spans = self.writes.entry(id).or_default();
                let open = spans.last().is_some_and(|(_, end)| end.is_none());
                if ready > 0 && !open {
                    spans.push((self.now, None));
                } else if ready == 0
                    && open
                    && let Some(last) = spans.last_mut()
                {
                    last.1 = Some(self.now);
                }
            }
            if self.ready_counts.get(&id) != Some(&(ready, desired)) {
                self.ready_counts.insert(id, (ready, desired));
                let key = self.workloads[id].key.clone();
                self.obs
                    .workloads
                    .entry(key)
                    .or_default()
                    .points
                    .push((self.now, ready, desired));
            }
        }
    }

    /// What each writer loses when its data, lost at `lost_at`, is restored
    /// to `captured`: the writes it acknowledged after the capture point.
    /// A writer acknowledges a write every interval from the moment one of
    /// its pods is Ready (the first one interval later) until none is.
    pub(super) fn data_lost(&self, lost_at: Time, captured: i64, schedule: &str) -> Vec<DataLoss> {
        let lost = lost_at as i64;
        self.writes
            .iter()
            .filter_map(|(&w, spans)| {
                let every = self.workloads[w].template.writes_every? as i64;
                let mut last_lost_ack = None;
                let mut lost_writes = 0u64;
                for &(start, end) in spans {
                    let start = start as i64;
                    // A write due as the writer stops is not acknowledged.
                    let limit = match end {
                        Some(end) if (end as i64) <= lost => end as i64 - 1,
                        _ => lost,
                    };
                    if limit < start + every {
                        continue;
                    }
                    let last = (limit - start) / every;
                    let first = if captured < start {
                        1
                    } else {
                        (captured - start) / every + 1
                    };
                    if last >= first {
                        lost_writes += (last - first + 1) as u64;
                        last_lost_ack = Some(start + last * every);
                    }
                }
                Some(DataLoss {
                    lost_at,
                    schedule: schedule.to_owned(),
                    writer: self.workloads[w].key.clone(),
                    captured,
                    last_lost_ack,
                    lost_writes,
                })
            })
            .collect()
    }

    fn desired_replicas(&self, id: WorkloadId) -> u32 {
        let w = &self.workloads[id];
        match &w.kind {
            WorkloadKind::DaemonSet => self
                .nodes
                .iter()
                .filter(|n| {
                    n.phase != NodePhase::Gone
                        && n.server_exists
                        && self.daemon_fits(&w.template, n)
                })
                .count() as u32,
            WorkloadKind::Job { completions, .. } => *completions,
            _ => w.replicas,
        }
    }

    fn daemon_fits(&self, template: &Template, node: &SimNode) -> bool {
        template.required.matches(&node.object)
            && crate::k8s::taints::scheduling_blocker(node.taints(), &template.tolerations)
                .is_none()
    }

    // ----- the event loop -----

    /// Runs every action due up to `until`, settling the cluster after each
    /// instant, and leaves the clock at `until`.
    pub fn advance_to(&mut self, until: Time) {
        while let Some(at) = self.queue.peek_time() {
            if at > until {
                break;
            }
            self.now = at;
            while let Some((_, action)) = self.queue.pop_until(at) {
                self.handle(action);
            }
            self.settle();
        }
        self.now = self.now.max(until);
    }

    /// The time of the next scheduled action, if any.
    pub fn next_event_time(&self) -> Option<Time> {
        self.queue.peek_time()
    }

    fn schedule(&mut self, at: Time, action: Action) {
        self.queue.push(at.max(self.now), action);
    }

    fn settle(&mut self) {
        // Controllers and the scheduler react to each other's changes;
        // a bounded loop reaches the fixpoint of one instant.
        for _ in 0..16 {
            let created = self.reconcile_workloads();
            let bound = self.schedule_pending();
            if !created && !bound {
                break;
            }
        }
        self.record_workloads();
        self.record_control_plane();
        self.obs.end = self.now;
    }

    fn handle(&mut self, action: Action) {
        match action {
            Action::NodeBooted(node) => self.node_booted(node),
            Action::NodeUnresponsive(node) => self.node_unresponsive(node),
            Action::CloudDeleteNode(node) => {
                if !self.nodes[node].server_exists {
                    self.delete_node_object(
                        node,
                        "the cloud controller deleted the Node: its server is gone",
                    );
                }
            }
            Action::PodStarted(pod) => self.pod_started(pod),
            Action::TaintEvict(pod) => {
                if self.pods[pod].is_active() {
                    let node = self.pods[pod].node;
                    let r = self.pod_ref(pod);
                    self.record(
                        EventKind::PodEvicted,
                        r,
                        node,
                        "taint manager: NoExecute toleration expired",
                    );
                    self.delete_pod(pod);
                }
            }
            Action::PodTerminated(pod) => self.pod_gone(pod),
            Action::PodGc(node) => {
                let pods: Vec<PodId> = self.nodes[node].pods.iter().copied().collect();
                for pod in pods {
                    self.pod_gone(pod);
                }
            }
            Action::Detach(claim, node) => {
                // Only a running node can unmount and detach; a server
                // deleted before this leaves the volume attached to it.
                if self.claims[claim].attached == Some(node)
                    && self.nodes[node].server_up
                    && !self.claim_in_use_on(claim, node)
                {
                    self.detach(claim, node);
                }
            }
            Action::ReleaseVolume(claim, node) => {
                if self.claims[claim].attached == Some(node) {
                    self.detach(claim, node);
                }
            }
            Action::JobPodDone(pod) => {
                if self.pods[pod].phase == PodPhase::Ready {
                    self.pods[pod].phase = PodPhase::Succeeded;
                    self.release_pod_resources(pod);
                    if let Owner::Workload(w, _) = self.pods[pod].owner {
                        self.workloads[w].succeeded += 1;
                        self.dirty.insert(w);
                    }
                }
            }
            Action::CronFire(w) => self.cron_fire(w),
            Action::EndpointFailover => self.endpoint_failover(),
            Action::PromoteLearner(node) => {
                if let Some(m) = self.cp.member_on(node)
                    && !m.voter
                {
                    m.voter = true;
                    let name = m.name.clone();
                    if let Some(entry) = self
                        .obs
                        .learners
                        .iter_mut()
                        .find(|(_, n, p)| *n == name && p.is_none())
                    {
                        entry.2 = Some(self.now);
                    }
                    self.record(
                        EventKind::EtcdMemberPromoted,
                        etcd_member_ref(&name),
                        Some(node),
                        "learner promoted to voter",
                    );
                }
            }
            Action::JoinEtcd(node) => {
                let name = self.nodes[node].name.clone();
                self.cp.members.push(Member {
                    name: name.clone(),
                    node,
                    voter: false,
                    healthy: true,
                });
                self.obs.learners.push((self.now, name.clone(), None));
                self.record(
                    EventKind::EtcdLearnerAdded,
                    etcd_member_ref(&name),
                    Some(node),
                    "joined etcd as a learner",
                );
                let (lo, hi) = self.timings.learner_catch_up;
                let delay = self.rng.duration_between(lo, hi);
                self.schedule(after(self.now, delay), Action::PromoteLearner(node));
            }
            Action::Drain(node, deadline) => self.drain_step(node, deadline),
            Action::BackupStart(schedule) => self.backup_start(schedule),
            Action::AutoscalerScan => self.autoscaler_scan(),
            Action::AutoscalerDrain(node) => self.autoscaler_drain(node),
            Action::AutoscalerDelete(node) => self.autoscaler_delete(node),
            Action::BackupFinish(index, phase) => {
                let now = self.now as i64;
                let b = &mut self.backups[index];
                b.finished = Some(now);
                b.phase = phase;
                let message = format!("backup {} finished: {phase:?}", b.name);
                let name = b.name.clone();
                self.record(EventKind::BackupFinished, backup_ref(&name), None, &message);
            }
        }
    }

    // ----- nodes -----

    fn node_booted(&mut self, node: NodeId) {
        if self.nodes[node].phase != NodePhase::Booting || !self.nodes[node].server_up {
            return;
        }
        self.nodes[node].phase = NodePhase::Ready;
        let name = self.nodes[node].name.clone();
        self.record(
            EventKind::NodeReady,
            node_ref(&name),
            Some(node),
            "node Ready",
        );
        for w in 0..self.workloads.len() {
            if self.workloads[w].kind == WorkloadKind::DaemonSet {
                self.dirty.insert(w);
            }
        }
        if self.nodes[node].control_plane {
            self.schedule(self.now, Action::JoinEtcd(node));
        }
    }

    /// The node stopped heartbeating a grace period ago: NotReady, tainted
    /// unreachable, its pods scheduled for eviction by their tolerations.
    fn node_unresponsive(&mut self, node: NodeId) {
        let n = &self.nodes[node];
        if n.server_up || n.phase == NodePhase::Gone || n.phase == NodePhase::NotReady {
            return;
        }
        self.nodes[node].phase = NodePhase::NotReady;
        let name = self.nodes[node].name.clone();
        self.record(
            EventKind::NodeNotReady,
            node_ref(&name),
            Some(node),
            "node stopped posting status",
        );
        for (key, effect) in [
            ("node.kubernetes.io/unreachable", "NoSchedule"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
        ] {
            self.add_taint(node, key, effect);
        }
        let pods: Vec<PodId> = self.nodes[node].pods.iter().copied().collect();
        for pod in pods {
            if !self.pods[pod].is_active() {
                continue;
            }
            if self.pods[pod].phase == PodPhase::Ready {
                self.pods[pod].phase = PodPhase::Starting;
                let r = self.pod_ref(pod);
                self.record(
                    EventKind::PodNotReady,
                    r,
                    Some(node),
                    "its node is NotReady",
                );
                self.mark_owner_dirty(pod);
            }
            let verdict = no_execute_verdict(
                self.nodes[node].taints(),
                &self.pods[pod].template.tolerations,
            );
            match verdict {
                NoExecuteVerdict::Stay => {}
                NoExecuteVerdict::EvictAfter { seconds } => {
                    let at = self.now + (seconds as u64) * 1000;
                    self.schedule(at, Action::TaintEvict(pod));
                }
                NoExecuteVerdict::EvictNow { .. } => {
                    self.schedule(self.now, Action::TaintEvict(pod))
                }
            }
        }
        self.start_volume_release(node);
        self.for_members_on(node, false);
        if !self.nodes[node].server_exists {
            let at = after(self.now, self.timings.cloud_node_deletion);
            self.schedule(at, Action::CloudDeleteNode(node));
        }
    }

    fn remove_taint(&mut self, node: NodeId, key: &str) {
        if let Some(taints) = self.nodes[node]
            .object
            .spec
            .as_mut()
            .and_then(|s| s.taints.as_mut())
        {
            taints.retain(|t| t.key != key);
        }
    }

    fn add_taint(&mut self, node: NodeId, key: &str, effect: &str) {
        let spec = self.nodes[node]
            .object
            .spec
            .get_or_insert_with(Default::default);
        let taints = spec.taints.get_or_insert_with(Vec::new);
        if taints.iter().any(|t| t.key == key && t.effect == effect) {
            return;
        }
        taints.push(Taint {
            key: key.to_owned(),
            effect: effect.to_owned(),
            value: None,
            time_added: None,
        });
        let name = self.nodes[node].name.clone();
        self.record(
            EventKind::NodeTainted,
            node_ref(&name),
            Some(node),
            &format!("{key}:{effect}"),
        );
    }

    /// The attachments of a departed node's single-attach volumes are
    /// released as each storage class says: never, at once, or later.
    fn start_volume_release(&mut self, node: NodeId) {
        for claim in 0..self.claims.len() {
            if self.claims[claim].attached != Some(node) || self.claims[claim].release_at.is_some()
            {
                continue;
            }
            let release = self.claims[claim].release;
            let key = format!(
                "{}/{}",
                self.claims[claim].namespace, self.claims[claim].name
            );
            self.obs.strandings.push(Stranding {
                claim: key,
                node: self.nodes[node].name.clone(),
                since: self.now,
                released: None,
            });
            match release {
                Release::Never => {}
                Release::Immediately => {
                    self.claims[claim].release_at = Some(self.now);
                    self.schedule(self.now, Action::ReleaseVolume(claim, node));
                }
                Release::After(delay) => {
                    let at = after(self.now, delay);
                    self.claims[claim].release_at = Some(at);
                    self.schedule(at, Action::ReleaseVolume(claim, node));
                }
            }
        }
    }

    fn for_members_on(&mut self, node: NodeId, healthy: bool) {
        if let Some(m) = self.cp.member_on(node) {
            m.healthy = healthy;
        }
        if !healthy && self.cp.holder == Some(node) && !self.cp.failover_pending {
            self.cp.failover_pending = true;
            let delay = self
                .topology
                .endpoint
                .as_ref()
                .map_or(Duration::ZERO, |e| e.failover_delay);
            self.schedule(after(self.now, delay), Action::EndpointFailover);
        }
    }

    fn endpoint_failover(&mut self) {
        self.cp.failover_pending = false;
        if let Some(holder) = self.cp.holder
            && self.nodes[holder].server_up
            && self.nodes[holder].phase != NodePhase::Gone
        {
            return;
        }
        let candidate = self
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.control_plane && n.server_up && n.phase == NodePhase::Ready)
            .map(|(i, _)| i)
            .min_by(|a, b| self.nodes[*a].name.cmp(&self.nodes[*b].name));
        match candidate {
            Some(to) => {
                self.cp.holder = Some(to);
                let name = self.nodes[to].name.clone();
                let endpoint = endpoint_ref(&self.topology);
                self.record(
                    EventKind::EndpointMoved,
                    endpoint,
                    Some(to),
                    &format!("the stable endpoint moved to {name}"),
                );
            }
            None => {
                // Nothing healthy to move to: try again after another delay.
                self.cp.failover_pending = true;
                let delay = self
                    .topology
                    .endpoint
                    .as_ref()
                    .map_or(Duration::from_secs(30), |e| e.failover_delay);
                self.schedule(
                    after(self.now, delay.max(Duration::from_secs(1))),
                    Action::EndpointFailover,
                );
            }
        }
    }

    fn delete_node_object(&mut self, node: NodeId, why: &str) {
        if self.nodes[node].phase == NodePhase::Gone {
            return;
        }
        if self.nodes[node].phase != NodePhase::NotReady {
            self.start_volume_release(node);
        }
        self.nodes[node].phase = NodePhase::Gone;
        self.nodes[node].gone_at = Some(self.now);
        let name = self.nodes[node].name.clone();
        self.record(EventKind::NodeDeleted, node_ref(&name), Some(node), why);
        let at = after(self.now, self.timings.pod_gc_quarantine);
        self.schedule(at, Action::PodGc(node));
        for w in 0..self.workloads.len() {
            if self.workloads[w].kind == WorkloadKind::DaemonSet {
                self.dirty.insert(w);
            }
        }
    }

    // ----- pods -----

    fn mark_owner_dirty(&mut self, pod: PodId) {
        if let Owner::Workload(w, _) = self.pods[pod].owner {
            self.dirty.insert(w);
        }
    }

    fn create_pod(&mut self, w: WorkloadId, ordinal: Option<u32>, node: Option<NodeId>) {
        let workload = &self.workloads[w];
        let name = match (&workload.kind, ordinal) {
            (_, Some(i)) => format!("{}-{i}", workload.name),
            (WorkloadKind::Pod, None) => workload.name.clone(),
            _ => format!("{}-{:05x}", workload.name, workload.next_suffix),
        };
        let namespace = workload.namespace.clone();
        let template = workload.template.clone();
        let mut claims = Vec::new();
        if let (WorkloadKind::StatefulSet { claim_templates }, Some(i)) = (&workload.kind, ordinal)
        {
            let sts = workload.name.clone();
            for (claim, class) in claim_templates.clone() {
                claims.push(self.claim(&namespace, &format!("{claim}-{sts}-{i}"), class));
            }
        }
        for claim in template.claim_volumes.clone() {
            claims.push(self.claim(&namespace, &claim, None));
        }
        self.workloads[w].next_suffix += 1;
        let id = self.pods.len();
        self.pods.push(SimPod {
            namespace,
            name,
            owner: Owner::Workload(w, ordinal),
            template,
            claims,
            node: None,
            phase: PodPhase::Pending,
            created_at: self.now,
            unschedulable_reported: false,
            holds_resources: false,
        });
        self.workloads[w].pods.push(id);
        let r = self.pod_ref(id);
        self.record(EventKind::PodCreated, r, None, "pod created");
        match node {
            Some(n) => self.bind(id, n),
            None => {
                self.pending.insert((self.now, id));
            }
        }
    }

    /// Binds a pod to a node and starts it, unless a volume blocks it.
    fn bind(&mut self, pod: PodId, node: NodeId) {
        let key = (self.pods[pod].created_at, pod);
        self.pending.remove(&key);
        let requests = self.pods[pod].template.requests;
        {
            let n = &mut self.nodes[node];
            n.requested = n.requested.plus(requests);
            n.pods.insert(pod);
        }
        let p = &mut self.pods[pod];
        p.node = Some(node);
        p.holds_resources = true;
        p.phase = PodPhase::Starting;
        let r = self.pod_ref(pod);
        let name = self.nodes[node].name.clone();
        self.record(
            EventKind::PodScheduled,
            r,
            Some(node),
            &format!("bound to {name}"),
        );
        self.record_placement(pod, node);
        for claim in self.pods[pod].claims.clone() {
            self.bind_claim_for(claim, node);
        }
        self.try_start(pod);
    }

    fn record_placement(&mut self, pod: PodId, node: NodeId) {
        let p = &self.pods[pod];
        let n = &self.nodes[node];
        let workload = match p.owner {
            Owner::Workload(w, _) => Some(self.workloads[w].key.clone()),
            Owner::None => None,
        };
        let autoscaled = self
            .topology
            .pool(&n.pool)
            .is_some_and(|pool| pool.is_autoscaled());
        // Labels are shared between placements rather than copied into
        // each: a template's labels never change, and a node's are reused
        // until they change (`set_node_metadata` forgets them).
        let pod_labels = p
            .template
            .shared_labels
            .get_or_init(|| Rc::new(p.template.labels.clone()))
            .clone();
        if self.placement_labels.len() <= node {
            self.placement_labels.resize(node + 1, None);
        }
        let node_labels = match &self.placement_labels[node] {
            Some(shared) => shared.clone(),
            None => {
                let shared = Rc::new(n.labels().clone());
                self.placement_labels[node] = Some(shared.clone());
                shared
            }
        };
        let placement = Placement {
            at: self.now,
            pod: p.key(),
            namespace: p.namespace.clone(),
            pod_labels,
            workload,
            node: n.name.clone(),
            pool: n.pool.clone(),
            autoscaled,
            node_labels,
            claims: p
                .claims
                .iter()
                .map(|&c| (self.claims[c].name.clone(), self.claims[c].class.clone()))
                .collect(),
        };
        self.obs.placements.push(placement);
    }

    /// Attaches the pod's single-attach volumes, or records why it cannot.
    fn try_start(&mut self, pod: PodId) {
        let Some(node) = self.pods[pod].node else {
            return;
        };
        for claim in self.pods[pod].claims.clone() {
            let c = &self.claims[claim];
            if c.attach != AttachModel::SingleNode {
                continue;
            }
            match c.attached {
                None => {
                    self.claims[claim].attached = Some(node);
                    self.claims[claim].attached_at = self.now;
                    self.claims[claim].release_at = None;
                    let r = claim_ref(&self.claims[claim]);
                    self.record(EventKind::VolumeAttached, r, Some(node), "volume attached");
                }
                Some(n) if n == node => {}
                Some(other) => {
                    if self.pods[pod].phase != PodPhase::Blocked {
                        self.pods[pod].phase = PodPhase::Blocked;
                        let r = self.pod_ref(pod);
                        let message = format!(
                            "Multi-Attach error for volume {}: already exclusively attached to {}",
                            self.claims[claim].name, self.nodes[other].name
                        );
                        self.record(EventKind::PodBlocked, r, Some(node), &message);
                    }
                    return;
                }
            }
        }
        self.pods[pod].phase = PodPhase::Starting;
        let delay = self.pods[pod].template.start_delay;
        self.schedule(self.now + delay, Action::PodStarted(pod));
    }

    fn pod_started(&mut self, pod: PodId) {
        let Some(node) = self.pods[pod].node else {
            return;
        };
        if self.pods[pod].phase != PodPhase::Starting || !self.nodes[node].is_ready() {
            return;
        }
        self.pods[pod].phase = PodPhase::Ready;
        let r = self.pod_ref(pod);
        self.record(EventKind::PodReady, r, Some(node), "pod Ready");
        self.mark_owner_dirty(pod);
        if let Owner::Workload(w, _) = self.pods[pod].owner
            && let WorkloadKind::Job { run_for, .. } = self.workloads[w].kind
        {
            self.schedule(self.now + run_for, Action::JobPodDone(pod));
        }
    }

    /// Deletes a pod: a pod on a healthy node terminates after its grace
    /// period; one on a lost node stays Terminating until its node is gone.
    fn delete_pod(&mut self, pod: PodId) {
        match self.pods[pod].phase {
            PodPhase::Gone | PodPhase::Terminating => return,
            _ => {}
        }
        match self.pods[pod].node {
            None => self.pod_gone(pod),
            Some(node) => {
                self.pods[pod].phase = PodPhase::Terminating;
                self.mark_owner_dirty(pod);
                if self.nodes[node].server_up && self.nodes[node].phase != NodePhase::Gone {
                    let at = after(self.now, self.timings.termination_grace);
                    self.schedule(at, Action::PodTerminated(pod));
                }
            }
        }
    }

    fn release_pod_resources(&mut self, pod: PodId) {
        if !self.pods[pod].holds_resources {
            return;
        }
        self.pods[pod].holds_resources = false;
        if let Some(node) = self.pods[pod].node {
            let requests = self.pods[pod].template.requests;
            let n = &mut self.nodes[node];
            n.requested = n.requested.minus(requests);
            n.pods.remove(&pod);
        }
    }

    fn pod_gone(&mut self, pod: PodId) {
        if self.pods[pod].phase == PodPhase::Gone {
            return;
        }
        let key = (self.pods[pod].created_at, pod);
        self.pending.remove(&key);
        self.release_pod_resources(pod);
        self.pods[pod].phase = PodPhase::Gone;
        let node = self.pods[pod].node;
        let r = self.pod_ref(pod);
        self.record(EventKind::PodDeleted, r, node, "pod deleted");
        self.mark_owner_dirty(pod);
        for pdb in &mut self.pdbs {
            pdb.disrupted.remove(&pod);
        }
        if let Some(node) = node
            && self.nodes[node].server_up
            && self.nodes[node].phase != NodePhase::Gone
        {
            for claim in self.pods[pod].claims.clone() {
                if self.claims[claim].attached == Some(node) {
                    let at = after(self.now, self.timings.detach);
                    self.schedule(at, Action::Detach(claim, node));
                }
            }
        }
    }

    fn claim_in_use_on(&self, claim: ClaimId, node: NodeId) -> bool {
        self.nodes[node]
            .pods
            .iter()
            .any(|&p| self.pods[p].claims.contains(&claim) && self.pods[p].phase != PodPhase::Gone)
    }

    fn detach(&mut self, claim: ClaimId, node: NodeId) {
        self.claims[claim].attached = None;
        self.claims[claim].release_at = None;
        let key = format!(
            "{}/{}",
            self.claims[claim].namespace, self.claims[claim].name
        );
        let node_name = self.nodes[node].name.clone();
        let now = self.now;
        if let Some(s) = self
            .obs
            .strandings
            .iter_mut()
            .find(|s| s.claim == key && s.node == node_name && s.released.is_none())
        {
            s.released = Some(now);
        }
        let r = claim_ref(&self.claims[claim]);
        self.record(EventKind::VolumeDetached, r, Some(node), "volume detached");
        // Pods waiting for this volume can start now.
        let waiting: Vec<PodId> = (0..self.pods.len())
            .filter(|&p| {
                self.pods[p].phase == PodPhase::Blocked && self.pods[p].claims.contains(&claim)
            })
            .collect();
        for pod in waiting {
            self.try_start(pod);
        }
    }

    // ----- controllers -----

    /// Brings every changed workload to its desired pods; true if it created
    /// or deleted any.
    fn reconcile_workloads(&mut self) -> bool {
        let dirty: Vec<WorkloadId> = std::mem::take(&mut self.dirty).into_iter().collect();
        let mut changed = false;
        for w in dirty {
            if self.workloads[w].template.refused_by.is_some() {
                continue;
            }
            changed |= match self.workloads[w].kind.clone() {
                WorkloadKind::Deployment => self.reconcile_deployment(w),
                WorkloadKind::ReplicaSet | WorkloadKind::Pod => self.reconcile_replicas(w),
                WorkloadKind::StatefulSet { .. } => self.reconcile_statefulset(w),
                WorkloadKind::DaemonSet => self.reconcile_daemonset(w),
                WorkloadKind::Job { completions, .. } => self.reconcile_job(w, completions),
            };
        }
        changed
    }

    fn active_pods(&self, w: WorkloadId) -> Vec<PodId> {
        self.workloads[w]
            .pods
            .iter()
            .copied()
            .filter(|&p| self.pods[p].is_active())
            .collect()
    }

    fn reconcile_replicas(&mut self, w: WorkloadId) -> bool {
        let active = self.active_pods(w);
        let want = self.workloads[w].replicas as usize;
        if self.workloads[w].kind == WorkloadKind::Pod {
            // A bare pod is never replaced.
            if self.workloads[w].pods.is_empty() && want > 0 {
                self.create_pod(w, None, None);
                return true;
            }
            return false;
        }
        if active.len() < want {
            for _ in active.len()..want {
                self.create_pod(w, None, None);
            }
            return true;
        }
        if active.len() > want {
            let ranked = self.scale_down_order(active);
            for &pod in ranked.iter().take(ranked.len() - want) {
                self.delete_pod(pod);
            }
            return true;
        }
        false
    }

    /// A Deployment: its pods made from an older template (the old
    /// ReplicaSets) are replaced by pods of the current one as its strategy
    /// allows; without old pods it is a ReplicaSet.
    fn reconcile_deployment(&mut self, w: WorkloadId) -> bool {
        let current = self.workloads[w].template.clone();
        let is_old = |p: &SimPod| !Rc::ptr_eq(&p.template, &current);
        // The common case, no rollout under way, costs no more than a
        // ReplicaSet's reconcile.
        if !self.workloads[w]
            .pods
            .iter()
            .any(|&p| self.pods[p].phase != PodPhase::Gone && is_old(&self.pods[p]))
        {
            return self.reconcile_replicas(w);
        }
        let (old, new): (Vec<PodId>, Vec<PodId>) = self
            .active_pods(w)
            .into_iter()
            .partition(|&p| is_old(&self.pods[p]));
        let replicas = self.workloads[w].replicas;
        let Some((surge, unavailable)) = self.workloads[w].strategy.fenceposts(replicas) else {
            // Recreate: every old pod goes, and new ones come only once
            // none is left, not even terminating.
            if !old.is_empty() {
                for pod in old {
                    self.delete_pod(pod);
                }
                return true;
            }
            let lingering = self.workloads[w]
                .pods
                .iter()
                .any(|&p| self.pods[p].phase != PodPhase::Gone && is_old(&self.pods[p]));
            return !lingering && self.reconcile_replicas(w);
        };
        if old.is_empty() {
            return self.reconcile_replicas(w);
        }
        let mut changed = false;
        // The new ReplicaSet grows while the total stays within
        // replicas + maxSurge (NewRSNewReplicas), or shrinks to replicas.
        let all = old.len() + new.len();
        let max_total = (replicas + surge) as usize;
        let mut new_count = new.len();
        if new_count < replicas as usize && all < max_total {
            let add = (max_total - all).min(replicas as usize - new_count);
            for _ in 0..add {
                self.create_pod(w, None, None);
            }
            new_count += add;
            changed = true;
        } else if new_count > replicas as usize {
            for &pod in self
                .scale_down_order(new)
                .iter()
                .take(new_count - replicas as usize)
            {
                self.delete_pod(pod);
            }
            new_count = replicas as usize;
            changed = true;
        }
        // Old pods go while at least replicas - maxUnavailable stay
        // available (reconcileOldReplicaSets): first those that are not
        // Ready (they cost no availability), then Ready ones.
        let min_available = replicas.saturating_sub(unavailable) as i64;
        let new_ready = self.workloads[w]
            .pods
            .iter()
            .filter(|&&p| self.pods[p].phase == PodPhase::Ready && !is_old(&self.pods[p]))
            .count() as i64;
        let all = (old.len() + new_count) as i64;
        let new_unavailable = new_count as i64 - new_ready;
        let mut max_scaled_down = all - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return changed;
        }
        let ranked = self.scale_down_order(old);
        let (unhealthy, healthy): (Vec<PodId>, Vec<PodId>) = ranked
            .into_iter()
            .partition(|&p| self.pods[p].phase != PodPhase::Ready);
        for &pod in &unhealthy {
            if max_scaled_down == 0 {
                break;
            }
            self.delete_pod(pod);
            max_scaled_down -= 1;
            changed = true;
        }
        let available = healthy.len() as i64 + new_ready;
        let scale_down = (available - min_available).min(healthy.len() as i64);
        for &pod in healthy.iter().take(scale_down.max(0) as usize) {
            self.delete_pod(pod);
            changed = true;
        }
        changed
    }

    /// Pods in the order the ReplicaSet controller deletes them:
    /// unscheduled first, then not Ready, then the newest.
    fn scale_down_order(&self, mut pods: Vec<PodId>) -> Vec<PodId> {
        pods.sort_by_key(|&p| {
            let pod = &self.pods[p];
            (
                pod.node.is_some(),
                pod.phase == PodPhase::Ready,
                std::cmp::Reverse(pod.created_at),
                std::cmp::Reverse(p),
            )
        });
        pods
    }

    /// One pod per ordinal, at most: an ordinal whose pod still exists (even
    /// Terminating on a lost node) is not replaced until that pod is gone.
    /// Pods are created in order, each after the previous is Ready.
    fn reconcile_statefulset(&mut self, w: WorkloadId) -> bool {
        let want = self.workloads[w].replicas;
        let mut by_ordinal: BTreeMap<u32, PodId> = BTreeMap::new();
        for &p in &self.workloads[w].pods {
            if let Owner::Workload(_, Some(i)) = self.pods[p].owner
                && self.pods[p].phase != PodPhase::Gone
            {
                by_ordinal.insert(i, p);
            }
        }
        for i in 0..want {
            match by_ordinal.get(&i) {
                Some(&p) if self.pods[p].phase == PodPhase::Ready => continue,
                Some(_) => return false,
                None => {
                    self.create_pod(w, Some(i), None);
                    return true;
                }
            }
        }
        // Scale down from the highest ordinal.
        if let Some((&i, &p)) = by_ordinal.iter().next_back()
            && i >= want
            && self.pods[p].is_active()
        {
            self.delete_pod(p);
            return true;
        }
        false
    }

    fn reconcile_daemonset(&mut self, w: WorkloadId) -> bool {
        let mut changed = false;
        let covered: BTreeSet<NodeId> = self.workloads[w]
            .pods
            .iter()
            .filter(|&&p| self.pods[p].phase != PodPhase::Gone)
            .filter_map(|&p| self.pods[p].node)
            .collect();
        let template = self.workloads[w].template.clone();
        let targets: Vec<NodeId> = (0..self.nodes.len())
            .filter(|&n| {
                let node = &self.nodes[n];
                node.is_ready() && !covered.contains(&n) && self.daemon_fits(&template, node)
            })
            .collect();
        for node in targets {
            self.create_pod(w, None, Some(node));
            changed = true;
        }
        changed
    }

    fn reconcile_job(&mut self, w: WorkloadId, completions: u32) -> bool {
        let active = self.active_pods(w).len() as u32;
        let done = self.workloads[w].succeeded;
        let parallel = self.workloads[w].replicas.max(1);
        let remaining = completions.saturating_sub(done);
        let want = remaining.min(parallel);
        if active < want {
            for _ in active..want {
                self.create_pod(w, None, None);
            }
            return true;
        }
        false
    }

    /// Queues a CronJob's next run: the first scheduled time after now.
    fn schedule_cron(&mut self, w: WorkloadId) {
        let Some(cron) = self.workloads[w].cron else {
            return;
        };
        let now = EPOCH_SECONDS + (self.now / 1000) as i64;
        if let Some(next) = cron.schedule.next_after(now) {
            self.schedule(((next - EPOCH_SECONDS) * 1000) as Time, Action::CronFire(w));
        }
    }

    /// A CronJob's scheduled time: a new run of its Job starts, unless it
    /// is suspended or its policy says otherwise while a run is active.
    fn cron_fire(&mut self, w: WorkloadId) {
        self.schedule_cron(w);
        let Some(cron) = self.workloads[w].cron else {
            return;
        };
        if cron.suspend {
            return;
        }
        let active = self.active_pods(w);
        if !active.is_empty() {
            match cron.concurrency {
                Concurrency::Allow => {}
                Concurrency::Forbid => return,
                Concurrency::Replace => {
                    for pod in active {
                        self.delete_pod(pod);
                    }
                }
            }
        }
        self.workloads[w].succeeded = 0;
        self.dirty.insert(w);
    }

    // ----- backups -----

    fn start_backups(&mut self) {
        for (index, schedule) in self.topology.backups.clone().iter().enumerate() {
            let every = schedule.every.as_millis() as i64;
            let newest = -(schedule.last_started_ago.as_millis() as i64);
            let duration = schedule.duration.as_millis() as i64;
            // Three earlier, completed backups give the history a restore
            // may fall back to.
            for k in (1..=3).rev() {
                let started = newest - k * every;
                self.backups.push(Backup {
                    name: backup_name(&schedule.schedule, started),
                    schedule: schedule.schedule.clone(),
                    started,
                    finished: Some(started + duration),
                    phase: BackupPhase::Completed,
                });
            }
            let finished =
                (schedule.last_phase != BackupPhase::InProgress).then_some(newest + duration);
            self.backups.push(Backup {
                name: backup_name(&schedule.schedule, newest),
                schedule: schedule.schedule.clone(),
                started: newest,
                finished,
                phase: schedule.last_phase,
            });
            let next = newest + every;
            if next >= 0 {
                self.schedule(next as u64, Action::BackupStart(index));
            }
        }
    }

    fn backup_start(&mut self, index: usize) {
        let Some(schedule) = self.topology.backups.get(index).cloned() else {
            return;
        };
        let started = self.now as i64;
        let name = backup_name(&schedule.schedule, started);
        self.backups.push(Backup {
            name: name.clone(),
            schedule: schedule.schedule.clone(),
            started,
            finished: None,
            phase: BackupPhase::InProgress,
        });
        let backup = self.backups.len() - 1;
        self.record(
            EventKind::BackupStarted,
            backup_ref(&name),
            None,
            "scheduled backup started",
        );
        let phase = if self.rng.chance(schedule.failure_probability) {
            BackupPhase::PartiallyFailed
        } else {
            BackupPhase::Completed
        };
        self.schedule(
            after(self.now, schedule.duration),
            Action::BackupFinish(backup, phase),
        );
        self.schedule(after(self.now, schedule.every), Action::BackupStart(index));
    }
}

/// A node as it is created: labels with its hostname, taints, capacity.
fn build_node(
    name: &str,
    pool: &str,
    control_plane: bool,
    mut labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    (allocatable, max_pods): (Resources, u32),
    class: usize,
) -> SimNode {
    labels.insert("kubernetes.io/hostname".to_owned(), name.to_owned());
    labels.insert("kubernetes.io/os".to_owned(), "linux".to_owned());
    SimNode {
        name: name.to_owned(),
        pool: pool.to_owned(),
        control_plane,
        object: Box::new(Node {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(labels),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: (!taints.is_empty()).then_some(taints),
                ..Default::default()
            }),
            status: None,
        }),
        allocatable,
        max_pods,
        requested: Resources::default(),
        pods: BTreeSet::new(),
        phase: NodePhase::Booting,
        server_up: true,
        server_exists: true,
        class,
        unneeded_since: None,
        gone_at: None,
        draining: false,
    }
}

/// The labels every node of a pool carries: the pool's own and its server
/// type, as the cloud controller sets it.
fn pool_labels(pool: &crate::topology::Pool) -> BTreeMap<String, String> {
    let mut labels = pool.labels.clone();
    if let Some(t) = &pool.server_type {
        labels.insert("node.kubernetes.io/instance-type".to_owned(), t.clone());
    }
    labels
}

fn pool_taints(pool: &crate::topology::Pool) -> Vec<Taint> {
    pool.taints
        .iter()
        .map(|t| Taint {
            key: t.key.clone(),
            value: (!t.value.is_empty()).then(|| t.value.clone()),
            effect: effect_name(t.effect).to_owned(),
            time_added: None,
        })
        .collect()
}

fn backup_name(schedule: &str, started_ms: i64) -> String {
    let seconds = EPOCH_SECONDS + started_ms.div_euclid(1000);
    let stamp = jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y%m%d%H%M%S").to_string())
        .unwrap_or_default();
    format!("{schedule}-{stamp}")
}

fn parse_capacity(
    pool: &str,
    capacity: &crate::topology::Capacity,
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
