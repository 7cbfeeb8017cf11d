//! Provisioning a [`Backend`] of each kind for a drill and seed: the run
//! asks for a fresh one per run, and again for a negative control's re-run.
//!
//! What decides whether a drill may run at all (flags, access to an
//! existing cluster) is the command's; this only builds what was allowed.

use std::cell::Cell;
use std::path::PathBuf;

use super::bench_api::BenchApi;
use super::clean::Registry;
use super::docker::RunId;
use super::kube::{self, KubeBackend, KubeOptions};
use super::machines::{Machines, NoMachines};
use super::served::ServedSimMachines;
use super::{Backend, BackendError, BackendKind, Capabilities, kind, talos};
use drillbench_model::drill::Drill;

/// An existing cluster reached through a kubeconfig.
#[derive(Debug)]
pub struct Existing {
    /// The kubeconfig.
    pub kubeconfig: PathBuf,
    /// Its context (`None`: the current one).
    pub context: Option<String>,
    /// The context's name, for messages.
    pub context_name: String,
    /// The served simulator behind it, when it is one.
    pub served: Option<BenchApi>,
    /// The bench may change nothing.
    pub read_only: bool,
}

/// What builds the backend of a run.
#[derive(Debug)]
pub enum Factory {
    /// The simulator, built anew each time.
    Sim,
    /// A kind or Talos cluster of the bench's own in Docker, torn down at
    /// the run's end.
    Docker {
        /// [`BackendKind::Kind`] or [`BackendKind::Talos`].
        kind: BackendKind,
        /// Where runs are recorded, so `bench clean` finds what a crash
        /// left.
        registry: Registry,
        /// Standby nodes per autoscaled pool.
        standby_nodes: u32,
    },
    /// An existing cluster: connected to once, unless it is a served
    /// simulator the bench may provision afresh.
    Existing {
        /// The cluster.
        cluster: Existing,
        /// How many backends were provisioned so far.
        provisioned: Cell<u32>,
    },
}

impl Factory {
    /// The factory of an existing cluster.
    pub fn existing(cluster: Existing) -> Self {
        Factory::Existing {
            cluster,
            provisioned: Cell::new(0),
        }
    }

    /// The name reports give the backend.
    pub fn name(&self) -> &'static str {
        match self {
            Factory::Sim => BackendKind::Sim.name(),
            Factory::Docker { kind, .. } => kind.name(),
            Factory::Existing { .. } => BackendKind::Kubeconfig.name(),
        }
    }

    /// What the backends it builds can do, known before one is built.
    pub fn capabilities(&self) -> Capabilities {
        match self {
            Factory::Sim => BackendKind::Sim.capabilities(),
            Factory::Docker { kind, .. } => kind.capabilities(),
            Factory::Existing { cluster, .. } if cluster.read_only => Capabilities::NONE,
            Factory::Existing { cluster, .. } => cluster.machines().capabilities(),
        }
    }

    /// A fresh backend for `drill` and `seed`.
    pub fn provision(&self, drill: &Drill, seed: u64) -> Result<Box<dyn Backend>, BackendError> {
        match self {
            Factory::Sim => super::sim::provision(drill, seed),
            Factory::Docker {
                kind,
                registry,
                standby_nodes,
            } => docker(*kind, registry, *standby_nodes, drill, seed),
            Factory::Existing {
                cluster,
                provisioned,
            } => {
                let count = provisioned.get();
                provisioned.set(count + 1);
                cluster.connect(drill, seed, count)
            }
        }
    }
}

fn docker(
    backend: BackendKind,
    registry: &Registry,
    standby_nodes: u32,
    drill: &Drill,
    seed: u64,
) -> Result<Box<dyn Backend>, BackendError> {
    let provision = |e: Box<dyn std::error::Error + Send + Sync>| BackendError::Provision(e);
    let run = RunId::new(super::provision::cluster_run_id(drill.name()))
        .map_err(|e| provision(e.into()))?;
    let machines: Box<dyn Machines> = match backend {
        BackendKind::Talos => {
            let mut options = talos::TalosOptions::new(run.clone(), registry.clone());
            options.standby_per_pool = standby_nodes;
            Box::new(talos::provision(drill, &options).map_err(|e| provision(e.into()))?)
        }
        _ => {
            let mut options = kind::KindOptions::new(run.clone(), registry.clone());
            options.standby_per_pool = standby_nodes;
            Box::new(kind::provision(drill, &options).map_err(|e| provision(e.into()))?)
        }
    };
    let backend = KubeBackend::connect(
        drill,
        seed,
        machines,
        KubeOptions {
            name: backend.name(),
            run_id: run.as_str().to_owned(),
            read_only: false,
            // kind and Talos run no policy engine: the bench admits.
            admit_guards: true,
            // Nor can they add servers: the bench autoscales.
            emulate_autoscaler: true,
        },
    )?;
    Ok(Box::new(backend))
}

impl Existing {
    fn machines(&self) -> Box<dyn Machines> {
        match &self.served {
            Some(api) => Box::new(ServedSimMachines::new(
                api.clone(),
                self.kubeconfig.clone(),
                self.context.clone(),
            )),
            None => Box::new(NoMachines {
                kubeconfig: self.kubeconfig.clone(),
                context: self.context.clone(),
            }),
        }
    }

    /// Connects to the cluster for the `count`th time.
    fn connect(
        &self,
        drill: &Drill,
        seed: u64,
        count: u32,
    ) -> Result<Box<dyn Backend>, BackendError> {
        if let Some(object) = drill.changed_cluster_object() {
            return Err(BackendError::NoReprovision(format!(
                "it changes {object}, which the drill takes from the cluster as the platform \
                 runs it; the bench never changes a `fromCluster` object"
            )));
        }
        match &self.served {
            // A served simulator the bench may change is provisioned
            // afresh for every run, a negative control's re-run included.
            Some(api) if !self.read_only => {
                ServedSimMachines::new(api.clone(), self.kubeconfig.clone(), self.context.clone())
                    .reset(drill, seed)?;
            }
            _ if count > 0 => {
                return Err(BackendError::NoReprovision(format!(
                    "context `{}` is an existing cluster the bench cannot build again with a guard weakened",
                    self.context_name
                )));
            }
            _ => {}
        }
        let backend = KubeBackend::connect(
            drill,
            seed,
            self.machines(),
            KubeOptions {
                name: BackendKind::Kubeconfig.name(),
                run_id: kube::run_id(drill, seed),
                read_only: self.read_only,
                // A served simulator admits through the drill's guards and
                // an existing cluster through its own policies.
                admit_guards: false,
                // Either has an autoscaler of its own, or none the bench
                // may stand in for.
                emulate_autoscaler: false,
            },
        )?;
        Ok(Box::new(backend))
    }
}
