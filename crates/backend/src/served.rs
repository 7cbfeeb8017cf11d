//! The [`Machines`] of a served simulator (`bench sim serve`): what a real
//! backend does to node servers, done through the façade's bench endpoints
//! (`/bench/v1/crash`, `/remove`, `/replace`, `/recreate-control-plane`,
//! `/etcd`), so the one Kubernetes layer ([`crate::kube`]) can be
//! tested end to end against the simulator.
//!
//! The endpoints are spoken by [`super::bench_api`].

use std::net::SocketAddr;
use std::path::PathBuf;

use super::bench_api::{BenchApi, BenchApiError, loopback_http_addr};
use super::machines::Machines;
use super::{BackendError, Capabilities};
use drillbench_model::bench_protocol::{NodeOperation, Reset};

/// What a served simulator can do: everything the simulator models.
pub const CAPABILITIES: Capabilities = Capabilities {
    recreate_control_planes: true,
    crash_nodes: true,
    delete_nodes: true,
    // The served simulator runs its own cluster autoscaler.
    autoscaler: true,
    replace_nodes: true,
    whole_cluster_faults: false,
    storage: true,
    restore_namespaces: true,
};

/// Whether a kubeconfig's cluster is a served simulator (its bench
/// endpoints answer): the stand-in for a cluster in tests, which models
/// what a real one needs installed (storage) itself.
pub async fn is_served_simulator(kubeconfig: &std::path::Path) -> bool {
    let Some((server, token)) = super::kube::server_and_token_of(kubeconfig, None).await else {
        return false;
    };
    let Some(addr) = loopback_http_addr(&server) else {
        return false;
    };
    tokio::task::spawn_blocking(move || BenchApi::detect(addr, token).is_some())
        .await
        .unwrap_or(false)
}

fn to_backend(error: BenchApiError) -> BackendError {
    match error {
        BenchApiError::Status {
            status: 404,
            message,
            ..
        } => BackendError::NotFound(message),
        other => BackendError::infrastructure(other),
    }
}

/// A served simulator's node servers.
#[derive(Debug, Clone)]
pub struct ServedSimMachines {
    api: BenchApi,
    kubeconfig: PathBuf,
    context: Option<String>,
}

impl ServedSimMachines {
    /// The machines of the served simulator behind `api`, reached through
    /// `kubeconfig` (and `context`).
    pub fn new(api: BenchApi, kubeconfig: PathBuf, context: Option<String>) -> Self {
        ServedSimMachines {
            api,
            kubeconfig,
            context,
        }
    }

    /// The bench endpoints.
    pub fn api(&self) -> &BenchApi {
        &self.api
    }

    /// Provisions the served drill again from nothing with `drill`'s guards
    /// and `seed`: a fresh cluster for a run, and the re-provisioning a
    /// negative control's weakened re-run needs. Refused when the server
    /// serves another drill.
    pub fn reset(
        &self,
        drill: &drillbench_model::drill::Drill,
        seed: u64,
    ) -> Result<(), BackendError> {
        let now = self.api.now().map_err(to_backend)?;
        if now.drill != drill.name() {
            return Err(BackendError::infrastructure(format!(
                "the served simulator serves drill `{}`, not `{}`; start `bench sim serve {}`",
                now.drill,
                drill.name(),
                drill.name()
            )));
        }
        let guards: Vec<_> = drill.spec.guards.iter().map(|g| &g.value).collect();
        let unlabelled_terms = drill
            .spec
            .guards
            .iter()
            .filter(|g| g.value.unlabelled_term)
            .map(|g| g.value.name.as_str().to_owned())
            .collect();
        let reset = Reset {
            guards: Some(serde_json::to_string(&guards).unwrap_or_else(|_| "[]".to_owned())),
            unlabelled_terms,
            workloads: None,
            policies: (!drill.policy_guards.is_empty())
                .then(|| drill.policies.iter().map(|d| d.value.clone()).collect()),
        };
        self.api.reset(seed, &reset).map_err(to_backend)?;
        Ok(())
    }

    fn node_call(&self, operation: NodeOperation, node: &str) -> Result<(), BackendError> {
        self.api.node(operation, node).map_err(to_backend)
    }
}

impl Machines for ServedSimMachines {
    fn name(&self) -> &'static str {
        "served-sim"
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn kubeconfig(&self) -> (PathBuf, Option<String>) {
        (self.kubeconfig.clone(), self.context.clone())
    }

    fn api_servers(&self) -> Vec<(String, SocketAddr)> {
        // The simulator models its own stable endpoint (holder, failover)
        // behind its one address; a proxy in front would measure nothing.
        Vec::new()
    }

    fn crash(&mut self, node: &str) -> Result<(), BackendError> {
        self.node_call(NodeOperation::Crash, node)
    }

    fn remove(&mut self, node: &str) -> Result<(), BackendError> {
        self.node_call(NodeOperation::Remove, node)
    }

    fn replace(&mut self, node: &str) -> Result<(), BackendError> {
        self.node_call(NodeOperation::Replace, node)
    }

    fn recreate_control_plane(&mut self, node: &str) -> Result<(), BackendError> {
        self.node_call(NodeOperation::RecreateControlPlane, node)
    }

    fn etcd_members(&mut self) -> Option<(u32, u32)> {
        // 503 without quorum, as etcd's member list needs quorum.
        let members = self.api.etcd().ok()?;
        Some((members.voters, members.learners))
    }

    fn teardown(&mut self) -> Result<(), BackendError> {
        // The served simulator belongs to whoever started it; the bench
        // created no machine of its own.
        Ok(())
    }
}
