//! The one Kubernetes layer of every real backend: a
//! [`Backend`](super::Backend) over a [`Machines`](super::machines::Machines)
//! and a kube-rs client.
//!
//! - `observer`: watches on Nodes, Pods, claims, PersistentVolumes,
//!   VolumeAttachments and workloads rebuilt into the same
//!   [`Observation`](drillbench_observe::Observation) the simulator records,
//!   so the assertions judge it unchanged;
//! - `watch`: the watches themselves, and what a re-list no longer holds;
//! - `drain`: eviction-based drains with 429 retries, and `autoscaler`:
//!   the cluster autoscaler the bench plays where there is none;
//! - server-side apply of the drill's workloads (field manager
//!   `drillbench`, run label `drillbench.dev/run`) and the other changes
//!   the bench asks for (`requests`);
//! - `dry_run`: a create sent with `dryRun=All` through the cluster's
//!   admission chain, for admission negative controls;
//! - `probe`: `/readyz` through the stable endpoint and etcd through the
//!   machines;
//! - `live_objects`: the running Pods and the Nodes a live policy check
//!   (`bench policy scan`) reads;
//! - [`capture`]: the read-only capture `bench snapshot` writes;
//! - [`access`]: whether the bench may change the cluster at all;
//! - `clock`: drill time on a stepped or a wall-clock cluster, and `sync`,
//!   which moves it and takes in what changed.
//!
//! Time: the observation's clock is drill time in milliseconds. A served
//! simulator in `--step` mode has its own clock, moved only by
//! `POST /bench/v1/advance`: the backend steps it from change to change
//! (`nextMs`), so every watch event of a step happened at that step's
//! instant and the probes see every change. Any other cluster runs on the
//! wall clock, polled every [`POLL`].
//!
//! The [`Backend`](super::Backend) trait is synchronous; the backend owns a
//! current-thread tokio runtime and drives the watches and requests in it
//! whenever it is called.

use std::path::PathBuf;

pub mod access;
mod admission;
pub mod apply;
mod autoscaler;
mod backend;
pub mod capture;
mod clock;
mod connect;
mod drain;
mod dry_run;
mod kubeconfig;
mod live_objects;
mod observer;
mod probe;
mod requests;
pub mod restore;
mod sync;
mod watch;

use self::autoscaler::EmulatedAutoscaler;
use self::clock::Clock;
use self::connect::TeardownGuard;
pub use self::kubeconfig::{context_name, read_run_label, server_and_token_of, server_of};
pub use self::live_objects::read_live_objects;
use self::observer::Observer;
use self::probe::EtcdProbe;
use self::watch::Watches;
use super::bench_api::BenchApi;
use super::{BackendError, Capabilities};
use drillbench_model::drill::Drill;
use drillbench_model::rng::SeededRng;
use drillbench_observe::{Event, EventKind, ObjectRef, Time};

/// How often a wall-clock cluster is polled (probes, watch events).
pub const POLL: std::time::Duration = std::time::Duration::from_secs(1);
/// The field manager of the bench's server-side applies.
pub const FIELD_MANAGER: &str = "drillbench";
/// How long a watch may take to deliver what a step changed.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(60);

/// Why the Kubernetes layer could not start or went wrong.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    #[error("cannot start the backend's runtime")]
    Runtime(#[source] std::io::Error),
    #[error("cannot read the kubeconfig {path}")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: kube::config::KubeconfigError,
    },
    #[error("cannot build a client for the cluster")]
    Client(#[source] kube::Error),
    /// A request failed.
    #[error("failed to {what}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
    /// A served simulator's bench endpoint failed.
    #[error("failed to {what}")]
    Bench {
        what: String,
        #[source]
        source: super::bench_api::BenchApiError,
    },
    #[error("cannot start the stable endpoint in front of the API servers")]
    Endpoint(#[source] drillbench_endpoint::EndpointError),
    /// The API server's URL through the proxy is not a URL.
    #[error("cannot address the API server through the stable endpoint: {0}")]
    Url(String),
    /// The machines failed an operation the bench's autoscaler asked for.
    #[error("failed to {what}")]
    Machines {
        what: String,
        #[source]
        source: Box<BackendError>,
    },
    /// A watch fell behind or ended.
    #[error("the watches did not catch up with the cluster: {0}")]
    Watch(String),
}

impl From<KubeError> for BackendError {
    fn from(error: KubeError) -> Self {
        BackendError::infrastructure(error)
    }
}

/// How the backend is set up.
#[derive(Debug, Clone)]
pub struct KubeOptions {
    /// The name reports give the backend (`kubeconfig`, `kind`, `talos`).
    pub name: &'static str,
    /// The run id, the value of the run label on what the bench creates.
    pub run_id: String,
    /// Whether the bench may change the cluster; a read-only backend
    /// applies nothing and declares no capability.
    pub read_only: bool,
    /// Whether the bench admits the workloads through the drill's guards
    /// before applying them: for clusters of its own that run no policy
    /// engine (kind, Talos); see `admission`.
    pub admit_guards: bool,
    /// Whether the bench plays the cluster autoscaler (see `autoscaler`):
    /// for clusters of its own that cannot add servers (kind, Talos).
    pub emulate_autoscaler: bool,
}

/// A real cluster (or a served simulator) as a [`super::Backend`].
pub struct KubeBackend {
    options: KubeOptions,
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
    /// Velero and its S3 target, once a restore set them up. Before the
    /// machines: fields drop in order, and the S3 container must leave the
    /// cluster's network before the cluster (and a Talos network) goes.
    restore: restore::RestoreState,
    guard: TeardownGuard,
    capabilities: Capabilities,
    clock: Clock,
    watches: Watches,
    observer: Observer,
    /// Where a fault's random target is drawn ([`SeededRng::for_targets`]).
    targets: SeededRng,
    etcd: EtcdProbe,
    /// The served simulator's bench endpoints, when the cluster is one.
    served: Option<BenchApi>,
    /// The control planes' API servers behind the proxy, by node.
    api_servers: Vec<(String, std::net::SocketAddr)>,
    /// The stable endpoint the bench holds, if it holds one.
    proxy: Option<drillbench_endpoint::Proxy>,
    /// When the previous look at the cluster ended.
    synced_at: Time,
    /// The bench's cluster autoscaler, where it plays one.
    autoscaler: Option<EmulatedAutoscaler>,
}

impl KubeBackend {
    pub(super) fn event(
        &mut self,
        kind: EventKind,
        object: ObjectRef,
        node: Option<&str>,
        message: String,
    ) {
        let at = self.clock.now();
        self.observer.obs.events.push(Event {
            at_ms: at,
            kind,
            object,
            node: node.map(str::to_owned),
            pool: None,
            message,
        });
    }
}

/// A run id: the drill, the seed and the moment, unique enough to tell
/// one run's objects from another's.
#[expect(
    clippy::disallowed_methods,
    reason = "a real cluster runs on the wall clock"
)]
pub fn run_id(drill: &Drill, seed: u64) -> String {
    let stamp = jiff::Timestamp::now().as_second();
    let name: String = drill
        .name()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    format!("{name}-{seed}-{stamp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_is_the_drill_name_made_label_safe_then_the_seed() {
        let drill = drillbench_model::drill::Drill::load(
            &drillbench_model::test_support::repo_file("scenarios/node-loss.yaml"),
        )
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
        let id = run_id(&drill, 42);
        let (prefix, stamp) = id.rsplit_once('-').expect("a stamp");
        assert!(stamp.parse::<i64>().is_ok(), "{id}");
        assert!(prefix.ends_with("-42"), "{id}");
        assert!(
            id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{id}"
        );
        assert!(prefix.len() <= 40 + 3, "{id}");
    }
}
