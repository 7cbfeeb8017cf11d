//! What the kind and Talos drivers share: the drill's nodes as a plan (names,
//! pools, labels, taints), the errors, and the Kubernetes side of finishing
//! a fresh cluster: wait until every planned node is Ready, apply what the
//! kubelet may not set itself (role labels, taints), and create the drill's
//! storage classes.
//!
//! Node labels split in two. Labels the kubelet may register for itself go
//! into the node's boot configuration (kind's `labels:`, Talos'
//! `machine.nodeLabels`), so a node is labelled from its first moment and a
//! placement guard never sees it bare. Labels under `kubernetes.io` and
//! `k8s.io` (the control-plane role among them) are refused to a kubelet by
//! the NodeRestriction admission plugin, so they are patched in through the
//! API once the node is Ready.

mod nodes;
mod plan;

#[cfg(test)]
mod tests;

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::config::KubeconfigError;

pub use self::nodes::{
    apply_api_labels, client_for, ensure_storage_classes, release_standby, retaint, wait_labelled,
    wait_ready,
};
pub use self::plan::{PlannedNode, ProvisionedNode, plan_nodes};
use super::BackendError;
use super::clean::RegistryError;
use super::docker::{DockerError, RunId};
use super::tool::{Tool, ToolError};
use drillbench_model::exit::Exit;

/// The provisioner of kind's storage (and of the class the drivers create):
/// volumes on one node's disk, which strand when that node goes, like an
/// `hcloud` volume.
pub const LOCAL_PATH_PROVISIONER: &str = "rancher.io/local-path";

/// How often the drivers look at the nodes while they wait.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// Why a real backend could not be provisioned or could not act.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// A CLI is missing, failed, timed out or is the wrong version.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// Docker is missing or a container operation failed.
    #[error(transparent)]
    Docker(#[from] DockerError),
    /// The run registry could not be written.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A file of the run could not be written or read.
    #[error("cannot {action} {path}")]
    File {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The kubeconfig the CLI wrote is unusable.
    #[error("cannot load the kubeconfig {path}")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: KubeconfigError,
    },
    /// A Kubernetes API request failed.
    #[error("cannot {what}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// Nodes did not become Ready in time.
    #[error("nodes not Ready after {seconds} s: {waiting}")]
    NotReady {
        seconds: u64,
        /// The nodes still waited for, with their state.
        waiting: String,
    },
    /// The CLI created other nodes than planned.
    #[error("expected node containers {expected:?}, the cluster has {found:?}")]
    UnexpectedNodes {
        /// The containers planned.
        expected: Vec<String>,
        /// The containers found.
        found: Vec<String>,
    },
    /// A container is not a node of this run's cluster.
    #[error("container {container} is not a node of cluster {cluster}; refusing to touch it")]
    NotOurs {
        container: String,
        /// The run's cluster.
        cluster: String,
    },
    /// No node of this cluster has that name.
    #[error("no node {0} in this cluster")]
    UnknownNode(String),
    /// No control plane other than the target answers.
    #[error("no healthy control plane other than {0} to act through")]
    NoHealthyPeer(String),
    /// etcd has no member for the node.
    #[error("etcd has no member with hostname {0}")]
    NoMember(String),
    /// `talosctl etcd members` printed something else than its table.
    #[error("cannot read `talosctl etcd members` output")]
    Members(#[source] drillbench_preflight::etcd::MembersError),
    /// The run id cannot name a cluster (kind and Talos build node
    /// hostnames from it).
    #[error(
        "run id {0:?} cannot name a cluster: use at most {MAX_CLUSTER_RUN_ID} lower-case letters, \
         digits and '-', starting and ending with a letter or digit"
    )]
    UnusableRunId(String),
    /// The async runtime for the API calls could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
}

impl DriverError {
    /// Refusing to touch what is not ours is the caller's input (2); every
    /// other failure is infrastructure (3).
    pub fn exit(&self) -> Exit {
        match self {
            Self::Docker(e) => e.exit(),
            Self::NotOurs { .. } | Self::UnusableRunId(_) => Exit::BadInput,
            _ => Exit::Infrastructure,
        }
    }
}

impl From<DriverError> for BackendError {
    fn from(error: DriverError) -> Self {
        match error {
            DriverError::UnknownNode(node) => BackendError::NotFound(format!("no node {node}")),
            other => BackendError::infrastructure(other),
        }
    }
}

/// The longest run id a real cluster takes: `drillbench-<run>-controlplane-N`
/// must stay a valid hostname (63 characters) with room to spare.
pub const MAX_CLUSTER_RUN_ID: usize = 24;

/// `drillbench-<run>`, after checking the run id can be part of the node
/// hostnames kind and talosctl derive from it (lower case, no `_` or `.`,
/// short).
pub fn cluster_name(run: &RunId) -> Result<String, DriverError> {
    let id = run.as_str();
    let usable = id.len() <= MAX_CLUSTER_RUN_ID
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !id.starts_with('-')
        && !id.ends_with('-');
    if usable {
        Ok(format!("drillbench-{id}"))
    } else {
        Err(DriverError::UnusableRunId(id.to_owned()))
    }
}

/// A run id that fits in a kind or Talos cluster name (24 characters of
/// `[a-z0-9-]`): the drill's name cut short, the second it started and
/// the process, so two runs of one drill never share a cluster.
#[expect(
    clippy::disallowed_methods,
    reason = "a real cluster runs on the wall clock"
)]
pub fn cluster_run_id(drill: &str) -> String {
    let name: String = drill
        .chars()
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9') => c,
            _ => '-',
        })
        .take(10)
        .collect();
    let name = name.trim_matches('-');
    let stamp = jiff::Timestamp::now().as_second().unsigned_abs();
    format!(
        "{}-{}-{}",
        if name.is_empty() { "drill" } else { name },
        base36(stamp % 36u64.pow(6)),
        base36(u64::from(std::process::id()) % 36u64.pow(4))
    )
}

fn base36(mut n: u64) -> String {
    let mut digits = Vec::new();
    loop {
        digits.push(char::from_digit((n % 36) as u32, 36).unwrap_or('0'));
        n /= 36;
        if n == 0 {
            break;
        }
    }
    digits.iter().rev().collect()
}

/// Writes a file of the run, creating its folder.
pub fn write_file(path: &Path, text: &str) -> Result<(), DriverError> {
    let file = |source| DriverError::File {
        action: "write",
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(file)?;
    }
    std::fs::write(path, text).map_err(file)
}

/// Runs API calls to completion on a runtime of their own, on a thread of
/// their own, so the drivers stay synchronous and may be called from inside
/// another runtime too.
pub fn block_on<F>(future: F) -> Result<F::Output, DriverError>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(DriverError::Runtime)?;
                Ok(runtime.block_on(future))
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// A container's addresses on its networks, as `docker inspect` reports
/// them (kind does not pin addresses, so the recorded spec has none).
pub fn container_ip(docker: &Tool, container: &str) -> Result<Option<IpAddr>, DriverError> {
    let output = docker.run([
        "container",
        "inspect",
        "--format",
        "{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}",
        container,
    ])?;
    Ok(output.split_whitespace().find_map(|ip| ip.parse().ok()))
}

/// The API server address of a control plane on the cluster network.
pub fn api_server(node: &ProvisionedNode) -> Option<(String, SocketAddr)> {
    let ip = node.ip?;
    node.plan
        .control_plane
        .then(|| (node.node.clone(), SocketAddr::new(ip, 6443)))
}

/// Quotes a string for YAML (a JSON string is a YAML double-quoted scalar).
pub fn yaml_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| format!("{text:?}"))
}
