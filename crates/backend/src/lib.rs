//! Where a drill runs: the [`Backend`] trait and its implementations.
//!
//! A backend provisions the drill's cluster, performs the primitives faults
//! are made of, lets time pass, and fills an [`Observation`]. The drill
//! runner and the fault injectors are written once against this trait; the
//! assertions read only the observation, so none of them know which backend
//! ran.

pub mod bench_api;
pub mod clean;
pub mod docker;
pub mod factory;
pub mod kind;
pub mod kube;
pub mod local_path;
pub mod machines;
pub mod provision;
pub mod s3;
pub mod served;
pub mod sim;
pub mod talos;
pub mod tool;
pub mod velero;

use drillbench_model::drill::Drill;
use drillbench_model::duration::Duration;
use drillbench_model::scenario::step::{ApplyManifest, NodeChange, ObjectKey, PdbChange};
use drillbench_observe::{Observation, Time};
use drillbench_preflight::Facts;

/// What a backend can do; a drill that needs more is refused before
/// anything starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Delete and replace control-plane nodes.
    pub recreate_control_planes: bool,
    /// Stop a node without deleting it.
    pub crash_nodes: bool,
    /// Delete nodes.
    pub delete_nodes: bool,
    /// Run (or emulate) the cluster autoscaler.
    pub autoscaler: bool,
    /// Provision a lost static node again under its name.
    pub replace_nodes: bool,
    /// Rolling upgrades, full rebuilds and pool removal: faults the bench
    /// plays out as whole-cluster runbooks.
    pub whole_cluster_faults: bool,
    /// The cluster provides volumes for the workloads' claims.
    pub storage: bool,
    /// Back a namespace up, lose it and restore it (`restoreNamespace`),
    /// measuring what its writers lost.
    pub restore_namespaces: bool,
}

impl Capabilities {
    /// A backend that may change nothing (an existing cluster the bench did
    /// not create and the user did not name).
    pub const NONE: Capabilities = Capabilities {
        recreate_control_planes: false,
        crash_nodes: false,
        delete_nodes: false,
        autoscaler: false,
        replace_nodes: false,
        whole_cluster_faults: false,
        // Not the bench's to give: an existing cluster has its own storage,
        // and a read-only run applies no claim.
        storage: true,
        restore_namespaces: false,
    };
}

/// Where a drill runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    /// The embedded deterministic simulator.
    Sim,
    /// A kind cluster.
    Kind,
    /// A Talos-in-Docker cluster.
    Talos,
    /// An existing cluster from a kubeconfig.
    Kubeconfig,
}

impl BackendKind {
    /// Where a drill one backend refuses is sent instead: kind can do
    /// nothing Talos cannot, so Talos and the simulator are named.
    pub const ALTERNATIVES: [BackendKind; 2] = [BackendKind::Talos, BackendKind::Sim];

    /// The name reports and flags use.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Sim => "sim",
            BackendKind::Kind => "kind",
            BackendKind::Talos => "talos",
            BackendKind::Kubeconfig => "kubeconfig",
        }
    }

    /// What a backend of this kind can do before it is reached. An
    /// existing cluster is assumed to allow nothing: one the bench created,
    /// or a served simulator, can do more, which its machines say
    /// ([`factory::Factory::capabilities`]).
    pub fn capabilities(self) -> Capabilities {
        match self {
            BackendKind::Sim => sim::CAPABILITIES,
            BackendKind::Kind => kind::CAPABILITIES,
            BackendKind::Talos => talos::CAPABILITIES,
            BackendKind::Kubeconfig => Capabilities::NONE,
        }
    }
}

/// Why a backend could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The named object does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The backend cannot do this at all.
    #[error("the {backend} backend cannot {what}")]
    Unsupported {
        /// The backend.
        backend: &'static str,
        /// What was asked.
        what: String,
    },
    /// The infrastructure failed (a CLI, the Docker engine, the API).
    #[error("infrastructure error: {0}")]
    Infrastructure(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The cluster could not be built: the cause says why.
    #[error(transparent)]
    Provision(Box<dyn std::error::Error + Send + Sync>),
    /// The backend cannot build its cluster again (an existing cluster):
    /// a negative control's re-run is reported as not run.
    #[error("cannot provision the cluster again: {0}")]
    NoReprovision(String),
}

impl BackendError {
    /// An infrastructure failure, its cause kept.
    pub fn infrastructure(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        BackendError::Infrastructure(cause.into())
    }
}

/// The API server's answer to a create sent with `dryRun=All`: its HTTP
/// status, and for a refusal the `Status` it returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRunAnswer {
    /// `201` for an admitted create, `4xx`/`5xx` for a refusal.
    pub code: u16,
    /// The `Status` reason (`BadRequest`, `Forbidden`, …); empty when
    /// admitted.
    pub reason: String,
    /// The `Status` message: for an admission webhook's refusal,
    /// `admission webhook "…" denied the request: …`; empty when admitted.
    pub message: String,
    /// The request as sent (`POST /apis/apps/v1/namespaces/x/statefulsets?dryRun=All`),
    /// so the evidence shows it was a dry run.
    pub request: String,
}

impl DryRunAnswer {
    /// Whether the API server admitted the object (a 2xx).
    pub fn admitted(&self) -> bool {
        (200..300).contains(&self.code)
    }
}

/// What the Eviction API answered for one pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Eviction {
    /// The pod (`namespace/name`) is being deleted.
    Evicted(String),
    /// The pod (`namespace/name`) stays: the API server's 429 message.
    Refused(String, String),
}

/// A cluster a drill runs on.
pub trait Backend {
    /// `sim`, `kind`, `talos` or `kubeconfig`.
    fn name(&self) -> &'static str;
    /// What it can do.
    fn capabilities(&self) -> Capabilities;
    /// Milliseconds since the drill started.
    fn now(&self) -> Time;
    /// Lets time pass until `until`.
    fn advance_to(&mut self, until: Time);
    /// When the cluster will next change on its own, if the backend knows
    /// (the simulator does; a real cluster answers with its poll interval).
    fn next_change(&self) -> Option<Time>;

    /// Live node names of a pool (`control-plane` for control planes).
    fn pool_nodes(&self, pool: &str) -> Vec<String>;
    /// A random live node of a pool, drawn from the run's seed.
    fn random_node_of(&mut self, pool: &str) -> Option<String>;
    /// The node the cluster autoscaler would remove next from a pool.
    fn autoscaler_pick(&mut self, pool: &str) -> Option<String>;
    /// The control plane holding the stable endpoint.
    fn endpoint_holder(&self) -> Option<String>;
    /// A healthy control plane other than the endpoint holder.
    fn other_control_plane(&self) -> Option<String>;

    /// Adds a drill event (a step, a preflight verdict) to the timeline, in
    /// order with the backend's own events.
    fn note(&mut self, event: drillbench_observe::Event);
    /// Marks the moment the drill's steps begin (after the cluster converged).
    fn mark_start(&mut self);
    /// Records that a fault is being injected.
    fn mark_fault(&mut self, node: Option<&str>, description: &str);
    /// Deletes a node's server (draining it first if asked).
    fn delete_node(
        &mut self,
        node: &str,
        drain: bool,
        drain_timeout: Duration,
    ) -> Result<(), BackendError>;
    /// Stops a node's server without deleting it.
    fn crash_node(&mut self, node: &str) -> Result<(), BackendError>;
    /// Removes a control plane from etcd, deletes it, boots a replacement.
    fn recreate_control_plane(
        &mut self,
        node: &str,
        boot: Option<(Duration, Duration)>,
    ) -> Result<(), BackendError>;
    /// Provisions a lost static node again under its name.
    fn replace_node(&mut self, node: &str) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: format!("replace node {node}"),
        })
    }
    /// Removes a pool from the autoscaler's configuration; its nodes keep
    /// running, unmanaged.
    fn remove_pool(&mut self, pool: &str) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: format!("remove pool `{pool}` from the autoscaler's configuration"),
        })
    }
    /// Runs a rolling upgrade to its end, letting time pass; `Ok(Some(why))`
    /// when a drain stayed blocked and the upgrade failed there.
    fn rolling_upgrade(
        &mut self,
        reboot: Duration,
        drain_timeout: Duration,
    ) -> Result<Option<String>, BackendError> {
        let _ = (reboot, drain_timeout);
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: "run a rolling upgrade".to_owned(),
        })
    }
    /// Loses everything and recovers along the runbook, restoring from the
    /// schedule's newest usable backup; `Ok(Some(why))` when the runbook
    /// failed.
    fn full_rebuild(
        &mut self,
        restore_from: Option<&str>,
        recovery: Option<&drillbench_model::scenario::spec::RecoverySpec>,
    ) -> Result<Option<String>, BackendError> {
        let _ = (restore_from, recovery);
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: "rebuild the cluster from nothing".to_owned(),
        })
    }
    /// Backs `namespace` up now under `schedule`, loses every object in it
    /// and restores it from that backup, letting time pass; records the
    /// restore and what the namespace's writers lost in the observation
    /// (`restores`, `data_loss`), which the `rpo:` assertion judges.
    fn restore_namespace(&mut self, namespace: &str, schedule: &str) -> Result<(), BackendError> {
        let _ = schedule;
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: format!("lose namespace `{namespace}` and restore it from a backup"),
        })
    }
    /// Sets a workload's replicas (`namespace/Kind/name`).
    fn scale(&mut self, workload: &str, replicas: u32) -> Result<(), BackendError>;
    /// Changes a Deployment's image (of one container, or of every one),
    /// starting a rollout.
    fn rollout(
        &mut self,
        workload: &str,
        image: &str,
        container: Option<&str>,
    ) -> Result<(), BackendError> {
        let _ = (image, container);
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: format!("roll out `{workload}`"),
        })
    }

    /// Changes one node through the API: taints, cordon, labels,
    /// annotations, or the deletion of its Node object (the server stays).
    fn change_node(&mut self, node: &str, change: &NodeChange) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: format!("{change} on node {node}"),
        })
    }
    /// Replaces a PodDisruptionBudget's bound (a merge patch of its spec);
    /// evictions from then on are judged against the new budget.
    fn change_pdb(&mut self, change: &PdbChange) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: change.to_string(),
        })
    }

    /// Applies a manifest file's objects in order, as `kubectl apply
    /// --server-side` would, admitted by the drill's guards where the
    /// backend admits its workloads itself.
    fn apply_manifest(
        &mut self,
        drill: &Drill,
        manifest: &ApplyManifest,
    ) -> Result<(), BackendError> {
        let _ = drill;
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: manifest.to_string(),
        })
    }

    /// Deletes one object, a workload's pods with it (background
    /// propagation).
    fn delete_object(&mut self, object: &ObjectKey) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: object.to_string(),
        })
    }

    /// Evicts one running pod of a workload (`namespace/Kind/name`) through
    /// the Eviction API, the pod drawn from the run's seed. A refusal (the
    /// API's 429, a budget allowing no disruption) is an answer, not an
    /// error: it is on the timeline as `EvictionRefused`.
    fn evict_one(&mut self, workload: &str) -> Result<Eviction, BackendError> {
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: format!("evict a pod of `{workload}`"),
        })
    }

    /// The facts the control-plane preflight judges, and "now" as epoch seconds.
    fn preflight_facts(&self) -> (Facts, i64);
    /// Whether every workload has all its replicas ready.
    fn all_workloads_ready(&self) -> bool;
    /// Whether one workload has all its replicas ready.
    fn workload_ready(&self, workload: &str) -> bool;
    /// Ready nodes of a pool.
    fn ready_nodes(&self, pool: &str) -> u32;
    /// Voting etcd members and learners.
    fn etcd_members(&self) -> (u32, u32);

    /// Submits `object` as a create with server-side dry run
    /// (`dryRun=All`) through the cluster's own admission chain and returns
    /// the API server's answer; nothing is created. A backend without a
    /// real API server (the simulator) has no such chain: `Unsupported`.
    fn dry_run_create(&mut self, object: &serde_json::Value) -> Result<DryRunAnswer, BackendError> {
        let _ = object;
        Err(BackendError::Unsupported {
            backend: self.name(),
            what: "submit an object with server-side dry run".to_owned(),
        })
    }

    /// Why the run cannot go on: a run budget (events, simulator actions)
    /// ran out. Only the simulator counts them; a real cluster's run is
    /// bounded by its wall clock and its steps' timeouts.
    fn over_budget(&self) -> Option<String> {
        None
    }

    /// An independent copy of the cluster as it is now, with what was
    /// observed so far, when the backend can make one. The simulator can
    /// (its state is plain values, its generator included, so the copy
    /// goes on exactly as the original would); a real cluster cannot.
    fn fork(&self) -> Option<Box<dyn Backend>> {
        None
    }

    /// What was observed so far.
    fn observation(&self) -> &Observation;
    /// Ends the run (tearing down what it created) and hands over what was observed.
    fn finish(self: Box<Self>) -> Observation;
}
