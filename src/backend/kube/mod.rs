//! The one Kubernetes layer of every real backend: a [`Backend`] over a
//! [`Machines`] and a kube-rs client.
//!
//! - [`observer`]: watches on Nodes, Pods, claims, PersistentVolumes,
//!   VolumeAttachments and workloads rebuilt into the same
//!   [`Observation`] the simulator records, so the assertions judge it
//!   unchanged;
//! - [`drain`]: eviction-based drains with 429 retries;
//! - server-side apply of the drill's workloads (field manager
//!   `drillbench`, run label `drillbench.dev/run`);
//! - probes of `/readyz` through the stable endpoint and of etcd through
//!   the machines;
//! - [`access`]: whether the bench may change the cluster at all.
//!
//! Time: the observation's clock is drill time in milliseconds. A served
//! simulator in `--step` mode has its own clock, moved only by
//! `POST /bench/v1/advance`: the backend steps it from change to change
//! (`nextMs`), so every watch event of a step happened at that step's
//! instant and the probes see every change. Any other cluster runs on the
//! wall clock, polled every [`POLL`].
//!
//! The [`Backend`] trait is synchronous; the backend owns a
//! current-thread tokio runtime and drives the watches and requests in it
//! whenever it is called.

pub mod access;
pub mod admission;
pub mod apply;
pub mod autoscaler;
pub mod drain;
pub mod observer;
pub mod restore;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::api::{Api, DeleteParams, EvictParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

use self::autoscaler::{Decision, EmulatedAutoscaler};
use self::drain::{DrainOps, DrainOutcome, Evicted};
use self::observer::{Change, Object, Observer, PodOnNode};
use super::bench_api::BenchApi;
use super::machines::Machines;
use super::provision;
use super::{Backend, BackendError, Capabilities};
use crate::drill::Drill;
use crate::duration::Duration;
use crate::k8s::taints::TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER as TO_BE_DELETED;
use crate::labels::{RUN_LABEL, STANDBY_KEY};
use crate::observe::{Event, EventKind, ObjectRef};
use crate::observe::{Observation, Time};
use crate::policy::drain::EVICTION_RETRY;
use crate::preflight::{Facts, NodeFacts, Readiness};
use crate::rng::SeededRng;

/// How often a wall-clock cluster is polled (probes, watch events).
pub const POLL: std::time::Duration = std::time::Duration::from_secs(1);
/// The field manager of the bench's server-side applies.
pub const FIELD_MANAGER: &str = "drillbench";
/// How long a watch may take to deliver what a step changed.
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(60);

/// Why the Kubernetes layer could not start or went wrong.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The runtime could not be built.
    #[error("cannot start the backend's runtime")]
    Runtime(#[source] std::io::Error),
    /// The kubeconfig could not be read.
    #[error("cannot read the kubeconfig {path}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: kube::config::KubeconfigError,
    },
    /// The client could not be built.
    #[error("cannot build a client for the cluster")]
    Client(#[source] kube::Error),
    /// A request failed.
    #[error("failed to {what}")]
    Api {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: kube::Error,
    },
    /// A served simulator's bench endpoint failed.
    #[error("failed to {what}")]
    Bench {
        /// What was being done.
        what: String,
        /// The cause.
        #[source]
        source: super::bench_api::BenchApiError,
    },
    /// The stable endpoint's proxy could not start.
    #[error("cannot start the stable endpoint in front of the API servers")]
    Endpoint(#[source] crate::endpoint::EndpointError),
    /// The API server's URL through the proxy is not a URL.
    #[error("cannot address the API server through the stable endpoint: {0}")]
    Url(String),
    /// The machines failed an operation the bench's autoscaler asked for.
    #[error("failed to {what}")]
    Machines {
        /// What was being done.
        what: String,
        /// The cause.
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
    /// engine (kind, Talos); see [`admission`].
    pub admit_guards: bool,
    /// Whether the bench plays the cluster autoscaler (see [`autoscaler`]):
    /// for clusters of its own that cannot add servers (kind, Talos).
    pub emulate_autoscaler: bool,
}

/// Tears the machines down exactly once: in [`Backend::finish`], or when
/// the backend is dropped after an error or a panic.
struct TeardownGuard {
    machines: Option<Box<dyn Machines>>,
}

impl TeardownGuard {
    fn machines(&mut self) -> &mut dyn Machines {
        self.machines
            .as_deref_mut()
            .expect("the machines are there until teardown")
    }

    fn teardown(&mut self) -> Result<(), BackendError> {
        match self.machines.take() {
            Some(mut machines) => machines.teardown(),
            None => Ok(()),
        }
    }
}

impl Drop for TeardownGuard {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// The cluster's clock.
enum Clock {
    /// A served simulator in `--step` mode: time moves when the bench says.
    Stepped {
        api: BenchApi,
        /// Cluster ms at the drill's time zero.
        origin: u64,
        /// Cluster ms now.
        now: u64,
        /// Cluster ms of its next scheduled change.
        next: Option<u64>,
        /// The newest change's resourceVersion of each kind.
        latest: BTreeMap<String, u64>,
    },
    /// The wall clock.
    Wall {
        started: Instant,
        /// The wall time of the drill's time zero.
        origin: jiff::Timestamp,
    },
}

type Watched = (&'static str, Result<watcher::Event<Object>, watcher::Error>);

fn watch<K>(
    client: &kube::Client,
    kind: &'static str,
    wrap: fn(K) -> Object,
) -> BoxStream<'static, Watched>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let api: Api<K> = Api::all(client.clone());
    // Without a backoff a watch that fails at once (an API server that
    // refuses) is retried in a tight loop.
    watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .map(move |event| {
            let event = event.map(|e| match e {
                watcher::Event::Apply(o) => watcher::Event::Apply(wrap(o)),
                watcher::Event::Delete(o) => watcher::Event::Delete(wrap(o)),
                watcher::Event::Init => watcher::Event::Init,
                watcher::Event::InitApply(o) => watcher::Event::InitApply(wrap(o)),
                watcher::Event::InitDone => watcher::Event::InitDone,
            });
            (kind, event)
        })
        .boxed()
}

/// The kinds watched.
const WATCHED: [&str; 10] = [
    "Node",
    "Pod",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "VolumeAttachment",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "PodDisruptionBudget",
];

/// A watch of a kind the cluster may not serve: a 404 on its initial list
/// reads as an empty list and ends the watch, so the kind counts as caught
/// up (the observer then falls back to what the other kinds show) instead
/// of holding [`KubeBackend::sync`] until its deadline. Any other error is
/// left to the watcher's retries: a kind served but forbidden must not
/// pass for an empty one.
fn optional(stream: BoxStream<'static, Watched>) -> BoxStream<'static, Watched> {
    stream
        .flat_map(|(kind, event)| {
            let unserved = matches!(
                &event,
                Err(watcher::Error::InitialListFailed(kube::Error::Api(status)))
                    if status.code == 404
            );
            let items = if unserved {
                vec![
                    Some((kind, Ok(watcher::Event::Init))),
                    Some((kind, Ok(watcher::Event::InitDone))),
                    None,
                ]
            } else {
                vec![Some((kind, event))]
            };
            futures::stream::iter(items)
        })
        .take_while(|item| futures::future::ready(item.is_some()))
        .filter_map(futures::future::ready)
        .boxed()
}

/// A real cluster (or a served simulator) as a [`Backend`].
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
    streams: SelectAll<BoxStream<'static, Watched>>,
    seen: BTreeMap<&'static str, u64>,
    initialized: BTreeSet<&'static str>,
    relisted: BTreeMap<&'static str, BTreeSet<String>>,
    observer: Observer,
    rng: SeededRng,
    etcd: Option<(u32, u32)>,
    etcd_answered: bool,
    control_planes_before: Option<BTreeSet<String>>,
    /// The served simulator's bench endpoints, when the cluster is one.
    served: Option<BenchApi>,
    /// The control planes' API servers behind the proxy, by node.
    api_servers: Vec<(String, std::net::SocketAddr)>,
    /// The stable endpoint the bench holds, if it holds one.
    proxy: Option<crate::endpoint::Proxy>,
    /// When the previous look at the cluster ended.
    synced_at: Time,
    /// The bench's cluster autoscaler, where it plays one.
    autoscaler: Option<EmulatedAutoscaler>,
    /// The newest error a watch reported, for when they do not catch up.
    watch_error: Option<String>,
}

impl KubeBackend {
    /// Connects to the machines' cluster, applies the drill's workloads
    /// (unless read-only), starts the watches and takes the first look.
    pub fn connect(
        drill: &Drill,
        seed: u64,
        machines: Box<dyn Machines>,
        options: KubeOptions,
    ) -> Result<KubeBackend, KubeError> {
        let guard = TeardownGuard {
            machines: Some(machines),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(KubeError::Runtime)?;
        let mut guard = guard;
        let (path, context) = guard.machines().kubeconfig();
        let kubeconfig_server = runtime
            .block_on(server_of(&path, context.as_deref()))
            .unwrap_or_default();
        // Whether the cluster is a served simulator is a property of the
        // cluster, not of the way to it.
        let served = super::bench_api::loopback_http_addr(&kubeconfig_server)
            .and_then(BenchApi::detect)
            .map(|(api, _)| api);
        // The bench holds the stable endpoint when the machines are its
        // own: every request and probe goes through the failover proxy, so
        // availability and "no credential refresh" are measured there.
        let api_servers = guard.machines().api_servers();
        let proxy = if api_servers.is_empty() {
            None
        } else {
            let config =
                crate::endpoint::ProxyConfig::new(api_servers.iter().map(|(_, addr)| *addr));
            Some(
                runtime
                    .block_on(crate::endpoint::Proxy::start(config))
                    .map_err(KubeError::Endpoint)?,
            )
        };
        let through = proxy.as_ref().map(crate::endpoint::Proxy::local_addr);
        let client = runtime.block_on(client_for(&path, context.as_deref(), through))?;
        let server = match through {
            Some(addr) => format!("stable endpoint {addr}"),
            None => kubeconfig_server.clone(),
        };
        let mut capabilities = guard.machines().capabilities();
        if options.read_only {
            capabilities = Capabilities::NONE;
        }
        let clock = match &served {
            Some(api) => {
                let now = api.now().map_err(|source| KubeError::Bench {
                    what: "read the served simulator's clock".to_owned(),
                    source,
                })?;
                if now.step {
                    let mut clock = Clock::Stepped {
                        api: api.clone(),
                        origin: 0,
                        now: 0,
                        next: None,
                        latest: BTreeMap::new(),
                    };
                    read_clock(&mut clock, &now);
                    if let Clock::Stepped { origin, now, .. } = &mut clock {
                        *origin = *now;
                    }
                    clock
                } else {
                    Clock::Wall {
                        started: Instant::now(),
                        origin: jiff::Timestamp::now(),
                    }
                }
            }
            None => Clock::Wall {
                started: Instant::now(),
                origin: jiff::Timestamp::now(),
            },
        };
        let mut backend = KubeBackend {
            options,
            runtime,
            client,
            restore: restore::RestoreState::default(),
            guard,
            capabilities,
            clock,
            streams: SelectAll::new(),
            seen: BTreeMap::new(),
            initialized: BTreeSet::new(),
            relisted: BTreeMap::new(),
            observer: Observer::new(drill.topology.clone()),
            rng: SeededRng::new(seed),
            etcd: None,
            etcd_answered: false,
            control_planes_before: None,
            served,
            api_servers,
            proxy,
            synced_at: 0,
            autoscaler: None,
            watch_error: None,
        };
        backend
            .observer
            .obs
            .endpoint_addresses
            .push((0, server.clone()));
        if !backend.options.read_only {
            backend.apply_workloads(drill)?;
            // What the applies changed is part of the first look.
            backend.refresh_clock()?;
        }
        let client = backend.client.clone();
        backend.streams.push(watch::<Node>(&client, "Node", |o| {
            Object::Node(Box::new(o))
        }));
        backend
            .streams
            .push(watch::<Pod>(&client, "Pod", |o| Object::Pod(Box::new(o))));
        backend.streams.push(watch::<PersistentVolumeClaim>(
            &client,
            "PersistentVolumeClaim",
            |o| Object::Claim(Box::new(o)),
        ));
        backend.streams.push(optional(watch::<PersistentVolume>(
            &client,
            "PersistentVolume",
            |o| Object::Volume(Box::new(o)),
        )));
        backend.streams.push(optional(watch::<VolumeAttachment>(
            &client,
            "VolumeAttachment",
            |o| Object::Attachment(Box::new(o)),
        )));
        backend
            .streams
            .push(watch::<Deployment>(&client, "Deployment", |o| {
                Object::Deployment(Box::new(o))
            }));
        backend
            .streams
            .push(watch::<StatefulSet>(&client, "StatefulSet", |o| {
                Object::StatefulSet(Box::new(o))
            }));
        backend
            .streams
            .push(watch::<DaemonSet>(&client, "DaemonSet", |o| {
                Object::DaemonSet(Box::new(o))
            }));
        backend
            .streams
            .push(watch::<Job>(&client, "Job", |o| Object::Job(Box::new(o))));
        backend.streams.push(watch::<PodDisruptionBudget>(
            &client,
            "PodDisruptionBudget",
            |o| Object::Budget(Box::new(o)),
        ));
        backend.sync()?;
        if backend.options.emulate_autoscaler && !backend.options.read_only {
            let now = backend.now();
            backend.autoscaler = EmulatedAutoscaler::new(&drill.topology, seed, now);
        }
        Ok(backend)
    }

    /// Lets the emulated autoscaler act when it is due, and takes in what
    /// it changed.
    fn run_autoscaler(&mut self) -> Result<(), KubeError> {
        let Some(mut scaler) = self.autoscaler.take() else {
            return Ok(());
        };
        let now = self.now();
        let result = if scaler.due() <= now {
            let decisions = scaler.step(now, &self.observer);
            self.carry_out(&mut scaler, decisions)
        } else {
            Ok(())
        };
        self.autoscaler = Some(scaler);
        result
    }

    /// Does what the emulated autoscaler decided, as the real one would:
    /// a released standby node stands for a booted server; a scale-down
    /// taints, evicts through the eviction API (a refusal aborts it) and
    /// deletes the server, then its Node.
    fn carry_out(
        &mut self,
        scaler: &mut EmulatedAutoscaler,
        decisions: Vec<Decision>,
    ) -> Result<(), KubeError> {
        if decisions.is_empty() {
            return Ok(());
        }
        for decision in decisions {
            match decision {
                Decision::ScaleUp {
                    pool,
                    node,
                    pods,
                    boot_ms,
                } => {
                    let message = format!(
                        "scale-up of {pool} for {pods} unschedulable pod(s); boots in {}",
                        Duration::from_millis(boot_ms)
                    );
                    self.event(EventKind::ScaleUp, node_ref(&node), Some(&node), message);
                }
                Decision::Release { node } => {
                    self.retaint(&node, STANDBY_KEY, None, true)?;
                }
                Decision::ScaleDown { node, utilisation } => {
                    self.retaint(&node, TO_BE_DELETED, Some("NoSchedule"), false)?;
                    let at = self.now();
                    // A scale-down is a disruption like any fault: recovery
                    // is measured from it.
                    self.observer
                        .obs
                        .faults
                        .push((at, format!("autoscaler scale-down of {node}")));
                    self.event(
                        EventKind::ScaleDown,
                        node_ref(&node),
                        Some(&node),
                        format!(
                            "scale-down: unneeded (utilisation {:.0} %) for the unneeded time; draining",
                            utilisation * 100.0
                        ),
                    );
                    self.sync()?;
                    let pods = self.observer.pods_to_evict(&node);
                    let mut drainer = Drainer {
                        backend: self,
                        evicted: BTreeSet::new(),
                    };
                    let mut refused = None;
                    for pod in &pods {
                        if let Evicted::Refused(why) = drainer.evict(pod)? {
                            refused = Some(why);
                            break;
                        }
                    }
                    if let Some(why) = refused {
                        // Upstream gives up on the node and lets it
                        // schedule again.
                        self.retaint(&node, TO_BE_DELETED, None, false)?;
                        scaler.aborted(&node);
                        self.event(
                            EventKind::ScaleDownAborted,
                            node_ref(&node),
                            Some(&node),
                            format!("scale-down aborted: {why}"),
                        );
                    }
                }
                Decision::Delete { node } => {
                    // The cloud deletes the server; the cloud controller
                    // then deletes its Node.
                    self.guard
                        .machines()
                        .remove(&node)
                        .map_err(|source| KubeError::Machines {
                            what: format!("delete the server of {node}"),
                            source: Box::new(source),
                        })?;
                    self.delete_node_object(&node)?;
                }
            }
        }
        self.sync()
    }

    /// [`provision::retaint`] on a node named as the drill names it.
    fn retaint(
        &mut self,
        node: &str,
        key: &str,
        effect: Option<&str>,
        drop_label: bool,
    ) -> Result<(), KubeError> {
        let api_name = self.observer.api_name(node);
        self.runtime
            .block_on(provision::retaint(
                &self.client,
                &api_name,
                key,
                effect,
                drop_label,
            ))
            .map_err(|source| KubeError::Api {
                what: format!("taint node {node}"),
                source,
            })
    }

    /// Server-side applies every workload of the drill, labelled with the
    /// run; a kind the cluster does not serve is recorded as not simulated.
    fn apply_workloads(&mut self, drill: &Drill) -> Result<(), KubeError> {
        let client = self.client.clone();
        let run = self.options.run_id.clone();
        let admit_guards = self.options.admit_guards;
        let mut not_served = Vec::new();
        let mut decisions = Vec::new();
        self.runtime.block_on(async {
            for doc in &drill.workloads {
                let mut value = doc.value.clone();
                if admit_guards {
                    let verdicts = admission::admit_object(drill, &mut value);
                    let refused = verdicts.iter().any(|d| d.refused);
                    let key = crate::drill::workload_key(&value);
                    decisions.extend(verdicts.into_iter().map(|d| (key.clone(), d)));
                    if refused {
                        // Refused at admission: it never reaches the cluster.
                        continue;
                    }
                }
                let (Some(kind), Some(name)) = (doc.kind(), doc.name()) else {
                    continue;
                };
                if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
                    let labels = meta.entry("labels").or_insert_with(|| json!({}));
                    if let Some(labels) = labels.as_object_mut() {
                        labels.insert(RUN_LABEL.to_owned(), json!(run));
                    }
                }
                let applied = apply::server_side_apply(&client, &value, FIELD_MANAGER)
                    .await
                    .map_err(|source| KubeError::Api {
                        what: format!("apply {kind} {name}"),
                        source,
                    })?;
                if applied == apply::Applied::NotServed {
                    not_served.push(ObjectRef {
                        kind: kind.to_owned(),
                        namespace: doc.namespace().unwrap_or_default().to_owned(),
                        name: name.to_owned(),
                    });
                }
            }
            Ok::<(), KubeError>(())
        })?;
        self.observer.obs.not_simulated.extend(not_served);
        let at = self.now();
        self.observer
            .obs
            .admissions
            .extend(
                decisions
                    .into_iter()
                    .map(|(object, d)| crate::observe::AdmissionDecision {
                        at,
                        guard: d.guard,
                        object,
                        refused: d.refused,
                        reason: d.reason,
                    }),
            );
        Ok(())
    }

    fn stepped_api(&self) -> Option<BenchApi> {
        match &self.clock {
            Clock::Stepped { api, .. } => Some(api.clone()),
            Clock::Wall { .. } => None,
        }
    }

    fn refresh_clock(&mut self) -> Result<(), KubeError> {
        if let Some(api) = self.stepped_api() {
            let now = api.now().map_err(|source| KubeError::Bench {
                what: "read the served simulator's clock".to_owned(),
                source,
            })?;
            read_clock(&mut self.clock, &now);
        }
        Ok(())
    }

    /// Takes in what the watches delivered and probes the cluster: on a
    /// stepped clock until every watch has caught up with the cluster's
    /// newest change of its kind; on the wall clock for one poll interval.
    fn sync(&mut self) -> Result<(), KubeError> {
        self.refresh_clock()?;
        let at = self.now();
        match &self.clock {
            Clock::Stepped { latest, .. } => {
                let latest = latest.clone();
                // One bound for the whole catch-up: failing watches deliver
                // their errors, so a bound per delivery would never end.
                let deadline = tokio::time::Instant::now() + CATCH_UP;
                loop {
                    let caught_up = WATCHED.iter().all(|k| {
                        self.initialized.contains(k)
                            && self.seen.get(k).copied().unwrap_or(0)
                                >= latest.get(*k).copied().unwrap_or(0)
                    });
                    if caught_up {
                        break;
                    }
                    let streams = &mut self.streams;
                    let next = self.runtime.block_on(async {
                        tokio::time::timeout_at(deadline, streams.next()).await
                    });
                    match next {
                        Ok(Some((kind, event))) => self.take(at, kind, event, &latest),
                        Ok(None) => return Err(KubeError::Watch("the watches ended".to_owned())),
                        Err(_) => {
                            return Err(KubeError::Watch(format!(
                                "not caught up after {}s; seen {:?}, newest {latest:?}{}",
                                CATCH_UP.as_secs(),
                                self.seen,
                                self.watch_error
                                    .as_ref()
                                    .map(|e| format!("; last watch error: {e}"))
                                    .unwrap_or_default()
                            )));
                        }
                    }
                }
            }
            Clock::Wall { origin, .. } => {
                let origin = *origin;
                let floor = self.synced_at;
                // What arrived so far, then whatever comes within the poll.
                let deadline = tokio::time::Instant::now() + POLL;
                loop {
                    let streams = &mut self.streams;
                    let next = self.runtime.block_on(async {
                        tokio::time::timeout_at(deadline, streams.next()).await
                    });
                    match next {
                        Ok(Some((kind, event))) => {
                            let stamp = match &event {
                                Ok(
                                    watcher::Event::Apply(o)
                                    | watcher::Event::Delete(o)
                                    | watcher::Event::InitApply(o),
                                ) => o.newest_timestamp(),
                                _ => None,
                            };
                            let at = observer::drill_time(stamp, origin, floor, self.now());
                            self.take(at, kind, event, &BTreeMap::new());
                        }
                        Ok(None) => return Err(KubeError::Watch("the watches ended".to_owned())),
                        Err(_) => break,
                    }
                }
            }
        }
        self.observer.settle(at);
        self.probe(at);
        self.synced_at = self.now();
        Ok(())
    }

    fn take(
        &mut self,
        at: Time,
        kind: &'static str,
        event: Result<watcher::Event<Object>, watcher::Error>,
        latest: &BTreeMap<String, u64>,
    ) {
        let event = match event {
            Ok(event) => event,
            Err(e) => {
                // The watcher retries on its own (with backoff); a re-list
                // follows and reconciles.
                self.watch_error = Some(e.to_string());
                return;
            }
        };
        let note = |seen: &mut BTreeMap<&'static str, u64>, object: &Object| {
            if let Some(rv) = object.resource_version() {
                let entry = seen.entry(kind).or_insert(0);
                *entry = (*entry).max(rv);
            }
        };
        match event {
            watcher::Event::Apply(object) => {
                note(&mut self.seen, &object);
                self.observer.apply(at, Change::Applied(object));
            }
            watcher::Event::Delete(object) => {
                note(&mut self.seen, &object);
                self.observer.apply(at, Change::Deleted(object));
            }
            watcher::Event::Init => {
                self.relisted.insert(kind, BTreeSet::new());
            }
            watcher::Event::InitApply(object) => {
                note(&mut self.seen, &object);
                if let Some(set) = self.relisted.get_mut(kind) {
                    set.insert(object_key(&object));
                }
                self.observer.apply(at, Change::Applied(object));
            }
            watcher::Event::InitDone => {
                // Deleted while the watch was down: gone from the re-list.
                let listed = self.relisted.remove(kind).unwrap_or_default();
                for key in self.observer.known(kind) {
                    if !listed.contains(&key) {
                        self.observer.apply(at, Change::Deleted(gone(kind, &key)));
                    }
                }
                // The list was taken after the newest change read before it.
                let floor = latest.get(kind).copied().unwrap_or(0);
                let entry = self.seen.entry(kind).or_insert(0);
                *entry = (*entry).max(floor);
                self.initialized.insert(kind);
            }
        }
    }

    /// `/readyz` through the endpoint and etcd through the machines.
    fn probe(&mut self, at: Time) {
        let client = self.client.clone();
        let ready = self.runtime.block_on(async move {
            let request = http::Request::get("/readyz").body(Vec::new());
            match request {
                Ok(request) => tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    client.request_text(request),
                )
                .await
                .is_ok_and(|r| r.is_ok()),
                Err(_) => false,
            }
        });
        let obs = &mut self.observer.obs;
        if obs.api.last().map(|(_, a)| *a) != Some(ready) {
            obs.api.push((at, ready));
            if obs.api.len() > 1 {
                let kind = if ready {
                    EventKind::ApiAvailable
                } else {
                    EventKind::ApiUnavailable
                };
                obs.events.push(Event {
                    at_ms: at,
                    kind,
                    object: ObjectRef {
                        kind: "Endpoint".to_owned(),
                        namespace: String::new(),
                        name: obs
                            .endpoint_addresses
                            .first()
                            .map(|e| e.1.clone())
                            .unwrap_or_default(),
                    },
                    node: None,
                    pool: None,
                    message: "probe of /readyz through the stable endpoint".to_owned(),
                });
            }
        }
        let members = self.guard.machines().etcd_members();
        // etcd's member list needs quorum: an answer is quorum; no answer
        // from machines that answered before is its loss. Machines that
        // never answer (an existing cluster) leave quorum unobserved.
        let quorum = match members {
            Some(_) => {
                self.etcd_answered = true;
                Some(true)
            }
            None if self.etcd_answered => Some(false),
            None => None,
        };
        // The member that may join: a control plane that was not there
        // when the recreate began.
        let known = self.control_planes_before.clone().unwrap_or_default();
        let joined = self
            .observer
            .pool_nodes(crate::topology::CONTROL_PLANE_POOL)
            .into_iter()
            .find(|n| !known.contains(n))
            .unwrap_or_else(|| "a new member".to_owned());
        let obs = &mut self.observer.obs;
        if let Some(quorum) = quorum
            && obs.quorum.last().map(|(_, q)| *q) != Some(quorum)
        {
            obs.quorum.push((at, quorum));
            if obs.quorum.len() > 1 {
                obs.events.push(Event {
                    at_ms: at,
                    kind: if quorum {
                        EventKind::QuorumRestored
                    } else {
                        EventKind::QuorumLost
                    },
                    object: etcd_ref("etcd"),
                    node: None,
                    pool: None,
                    message: "etcd member list through the machines".to_owned(),
                });
            }
        }
        if let Some((voters, learners)) = members {
            let before = self.etcd;
            self.etcd = Some((voters, learners));
            if before != self.etcd {
                obs.etcd.push((at, voters, learners));
                let (v0, l0) = before.unwrap_or((voters, learners));
                if learners > l0 {
                    for _ in l0..learners {
                        obs.learners.push((at, joined.clone(), None));
                        obs.events.push(Event {
                            at_ms: at,
                            kind: EventKind::EtcdLearnerAdded,
                            object: etcd_ref(&joined),
                            node: Some(joined.clone()),
                            pool: None,
                            message: "joined etcd as a learner".to_owned(),
                        });
                    }
                }
                if voters > v0 && learners < l0 {
                    for _ in 0..(l0 - learners).min(voters - v0) {
                        if let Some(entry) = obs.learners.iter_mut().find(|(_, _, p)| p.is_none()) {
                            entry.2 = Some(at);
                            let name = entry.1.clone();
                            obs.events.push(Event {
                                at_ms: at,
                                kind: EventKind::EtcdMemberPromoted,
                                object: etcd_ref(&name),
                                node: Some(name),
                                pool: None,
                                message: "learner promoted to voter".to_owned(),
                            });
                        }
                    }
                }
            }
        }
    }

    /// Moves the cluster's clock to `cluster_ms` (stepped) and takes in
    /// what changed.
    fn step_to(&mut self, cluster_ms: u64) -> Result<(), KubeError> {
        if let Some(api) = self.stepped_api() {
            api.advance_to(cluster_ms)
                .map_err(|source| KubeError::Bench {
                    what: "advance the served simulator's clock".to_owned(),
                    source,
                })?;
        }
        self.sync()
    }

    fn try_advance_to(&mut self, until: Time) -> Result<(), KubeError> {
        match &self.clock {
            Clock::Stepped { origin, .. } => {
                let origin = *origin;
                let target = origin + until;
                // Every instant the cluster or the bench's autoscaler
                // changes at, in order, so the probes and watches see each.
                loop {
                    let next = match &self.clock {
                        Clock::Stepped { next, now, .. } => {
                            let scaler = self.autoscaler.as_ref().map(|a| origin + a.due());
                            [*next, scaler]
                                .into_iter()
                                .flatten()
                                .filter(|n| *n <= target && *n >= *now)
                                .min()
                        }
                        Clock::Wall { .. } => None,
                    };
                    match next {
                        Some(next) => {
                            self.step_to(next)?;
                            self.run_autoscaler()?;
                        }
                        None => break,
                    }
                }
                self.step_to(target)?;
                self.run_autoscaler()
            }
            Clock::Wall { .. } => {
                // A wait may be an hour long; a stop asked for ends it.
                while self.now() < until && !crate::interrupt::requested() {
                    self.sync()?;
                    self.run_autoscaler()?;
                }
                Ok(())
            }
        }
    }

    fn event(&mut self, kind: EventKind, object: ObjectRef, node: Option<&str>, message: String) {
        let at = self.now();
        self.observer.obs.events.push(Event {
            at_ms: at,
            kind,
            object,
            node: node.map(str::to_owned),
            pool: None,
            message,
        });
    }

    fn cordon(&mut self, node: &str) -> Result<(), KubeError> {
        let api: Api<Node> = Api::all(self.client.clone());
        self.runtime
            .block_on(api.patch(
                &self.observer.api_name(node),
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"unschedulable": true}})),
            ))
            .map_err(|source| KubeError::Api {
                what: format!("cordon node {node}"),
                source,
            })?;
        Ok(())
    }

    fn delete_node_object(&mut self, node: &str) -> Result<(), KubeError> {
        let api: Api<Node> = Api::all(self.client.clone());
        match self
            .runtime
            .block_on(api.delete(&self.observer.api_name(node), &DeleteParams::default()))
        {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(source) => Err(KubeError::Api {
                what: format!("delete node {node}"),
                source,
            }),
        }
    }

    fn served_now(&self) -> Option<crate::bench_protocol::Now> {
        self.served.as_ref()?.now().ok()
    }
}

/// Reads a served simulator's `/bench/v1/now` answer into the clock.
fn read_clock(clock: &mut Clock, answer: &crate::bench_protocol::Now) {
    if let Clock::Stepped {
        now, next, latest, ..
    } = clock
    {
        *now = answer.now_ms;
        *next = answer.next_ms;
        *latest = answer
            .latest
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.parse().ok()?)))
            .collect();
    }
}

fn node_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "Node".to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    }
}

fn etcd_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "EtcdMember".to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    }
}

fn object_key(object: &Object) -> String {
    use kube::ResourceExt;
    match object {
        Object::Node(o) => o.name_any(),
        Object::Pod(o) => format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()),
        Object::Volume(o) => o.name_any(),
        Object::Attachment(o) => o.name_any(),
        _ => String::new(),
    }
}

fn gone(kind: &str, key: &str) -> Object {
    let (namespace, name) = key
        .split_once('/')
        .map_or((None, key), |(n, k)| (Some(n), k));
    let metadata = kube::api::ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..Default::default()
    };
    match kind {
        "Node" => Object::Node(Box::new(Node {
            metadata,
            ..Default::default()
        })),
        "PersistentVolume" => Object::Volume(Box::new(PersistentVolume {
            metadata,
            ..Default::default()
        })),
        "VolumeAttachment" => Object::Attachment(Box::new(VolumeAttachment {
            metadata,
            ..Default::default()
        })),
        _ => Object::Pod(Box::new(Pod {
            metadata,
            ..Default::default()
        })),
    }
}

async fn client_for(
    path: &std::path::Path,
    context: Option<&str>,
    through: Option<std::net::SocketAddr>,
) -> Result<kube::Client, KubeError> {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(path).map_err(|source| KubeError::Kubeconfig {
            path: path.to_path_buf(),
            source,
        })?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|source| KubeError::Kubeconfig {
            path: path.to_path_buf(),
            source,
        })?;
    // A drain must see each 429 itself to retry on its own schedule.
    config.default_retry = false;
    if let Some(addr) = through {
        // Same scheme and credentials, the proxy's address; the server
        // certificate is still checked against the name it was issued for.
        let original = config.cluster_url.clone();
        if config.tls_server_name.is_none()
            && let Some(host) = original.host()
            && host.parse::<std::net::IpAddr>().is_err()
        {
            config.tls_server_name = Some(host.to_owned());
        }
        let scheme = original.scheme_str().unwrap_or("https");
        config.cluster_url = format!("{scheme}://{addr}")
            .parse()
            .map_err(|e: http::uri::InvalidUri| KubeError::Url(e.to_string()))?;
    }
    kube::Client::try_from(config).map_err(KubeError::Client)
}

/// The API server URL of a kubeconfig's context.
pub async fn server_of(path: &std::path::Path, context: Option<&str>) -> Option<String> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path).ok()?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .ok()?;
    Some(
        config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_owned(),
    )
}

/// The name of the context a kubeconfig uses (`--context`, else its
/// current context).
pub fn context_name(path: &std::path::Path, context: Option<&str>) -> Option<String> {
    match context {
        Some(c) => Some(c.to_owned()),
        None => {
            kube::config::Kubeconfig::read_from(path)
                .ok()?
                .current_context
        }
    }
}

/// Reads the bench's run label from the cluster a kubeconfig reaches.
pub fn read_run_label(
    path: &std::path::Path,
    context: Option<&str>,
) -> Result<Option<String>, KubeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(KubeError::Runtime)?;
    runtime.block_on(async {
        let client = client_for(path, context, None).await?;
        access::run_label(&client)
            .await
            .map_err(|source| KubeError::Api {
                what: "read the bench's run label from kube-system and the nodes".to_owned(),
                source,
            })
    })
}

struct Drainer<'a> {
    backend: &'a mut KubeBackend,
    evicted: BTreeSet<(String, String)>,
}

impl DrainOps for Drainer<'_> {
    type Error = KubeError;

    fn now(&self) -> Time {
        self.backend.now()
    }

    fn pods_on(&mut self, node: &str) -> Vec<PodOnNode> {
        self.backend.observer.pods_to_evict(node)
    }

    fn terminating(&self, pod: &PodOnNode) -> bool {
        self.evicted
            .contains(&(pod.namespace.clone(), pod.name.clone()))
            || self
                .backend
                .observer
                .pod_deleting(&pod.namespace, &pod.name)
    }

    fn evict(&mut self, pod: &PodOnNode) -> Result<Evicted, KubeError> {
        let api: Api<Pod> = Api::namespaced(self.backend.client.clone(), &pod.namespace);
        let result = self
            .backend
            .runtime
            .block_on(api.evict(&pod.name, &EvictParams::default()));
        let outcome = match result {
            Ok(_) => {
                self.evicted
                    .insert((pod.namespace.clone(), pod.name.clone()));
                Evicted::Accepted
            }
            Err(kube::Error::Api(s)) if s.code == 429 => {
                let r = ObjectRef {
                    kind: "Pod".to_owned(),
                    namespace: pod.namespace.clone(),
                    name: pod.name.clone(),
                };
                self.backend
                    .event(EventKind::EvictionRefused, r, None, s.message.clone());
                Evicted::Refused(s.message)
            }
            Err(kube::Error::Api(s)) if s.code == 404 => Evicted::Gone,
            Err(source) => {
                return Err(KubeError::Api {
                    what: format!("evict pod {}/{}", pod.namespace, pod.name),
                    source,
                });
            }
        };
        let labels = self.backend.observer.pod_labels(&pod.namespace, &pod.name);
        // What the eviction changed, seen before the next decision.
        self.backend.sync()?;
        if outcome == Evicted::Accepted {
            let at = self.backend.now();
            self.backend.observer.check_budgets_after_eviction(
                at,
                &pod.namespace,
                &pod.name,
                &labels.unwrap_or_default(),
            );
        }
        Ok(outcome)
    }

    fn wait(&mut self, ms: Time) {
        let until = self.backend.now() + ms;
        self.backend.advance_to(until);
    }
}

impl Backend for KubeBackend {
    fn name(&self) -> &'static str {
        self.options.name
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn now(&self) -> Time {
        match &self.clock {
            Clock::Stepped { origin, now, .. } => now.saturating_sub(*origin),
            Clock::Wall { started, .. } => started.elapsed().as_millis() as Time,
        }
    }

    fn advance_to(&mut self, until: Time) {
        // Once the cluster is lost, time no longer passes for the drill:
        // the runner's waits end at once and the drill is aborted.
        if self.observer.obs.aborted.is_some() {
            return;
        }
        if crate::interrupt::requested() {
            self.observer.obs.aborted = Some("interrupted (Ctrl-C or SIGTERM)".to_owned());
            return;
        }
        if let Err(e) = self.try_advance_to(until) {
            self.observer.obs.aborted = Some(format!(
                "the {} backend lost the cluster: {}",
                self.options.name,
                crate::error_text::error_chain(&BackendError::from(e))
            ));
        }
    }

    fn next_change(&self) -> Option<Time> {
        if self.observer.obs.aborted.is_some() {
            return None;
        }
        match &self.clock {
            Clock::Stepped { origin, next, .. } => {
                let cluster = next.map(|n| n.saturating_sub(*origin));
                let scaler = self.autoscaler.as_ref().map(EmulatedAutoscaler::due);
                [cluster, scaler].into_iter().flatten().min()
            }
            Clock::Wall { .. } => Some(self.now() + POLL.as_millis() as Time),
        }
    }

    fn pool_nodes(&self, pool: &str) -> Vec<String> {
        self.observer.pool_nodes(pool)
    }

    fn random_node_of(&mut self, pool: &str) -> Option<String> {
        let names = self.observer.pool_nodes(pool);
        if names.is_empty() {
            return None;
        }
        let i = self.rng.index(names.len());
        Some(names[i].clone())
    }

    fn autoscaler_pick(&mut self, pool: &str) -> Option<String> {
        // A cluster with its own autoscaler is asked which node it would
        // remove; otherwise the bench picks as the autoscaler would.
        if self.autoscaler.is_none()
            && let Some(api) = &self.served
            && let Ok(answer) = api.autoscaler_pick(pool)
        {
            return answer.node;
        }
        self.observer.autoscaler_pick(pool)
    }

    fn endpoint_holder(&self) -> Option<String> {
        if let Some(proxy) = &self.proxy {
            let holder = proxy.holder();
            return self
                .api_servers
                .iter()
                .find(|(_, addr)| *addr == holder)
                .map(|(node, _)| node.clone());
        }
        self.served_now()?.endpoint_holder
    }

    fn other_control_plane(&self) -> Option<String> {
        if let Some(now) = self.served_now() {
            return now.other_control_plane;
        }
        self.observer
            .node_readiness()
            .into_iter()
            .find(|(_, cp, ready)| *cp && *ready)
            .map(|(name, _, _)| name)
    }

    fn note(&mut self, event: Event) {
        self.observer.obs.events.push(event);
    }

    fn mark_start(&mut self) {
        self.observer.obs.start = self.now();
    }

    fn mark_fault(&mut self, node: Option<&str>, description: &str) {
        let at = self.now();
        self.observer.obs.faults.push((at, description.to_owned()));
        let object = ObjectRef {
            kind: if node.is_some() { "Node" } else { "Drill" }.to_owned(),
            namespace: String::new(),
            name: node.unwrap_or("fault").to_owned(),
        };
        self.event(
            EventKind::FaultInjected,
            object,
            node,
            description.to_owned(),
        );
    }

    fn delete_node(
        &mut self,
        node: &str,
        drain: bool,
        drain_timeout: Duration,
    ) -> Result<(), BackendError> {
        if !self.observer.has_node(node) {
            return Err(BackendError::NotFound(format!("no node `{node}`")));
        }
        if drain {
            self.cordon(node)?;
            self.sync()?;
            let mut drainer = Drainer {
                backend: self,
                evicted: BTreeSet::new(),
            };
            let outcome = drain::drain(
                &mut drainer,
                node,
                drain_timeout.as_millis(),
                EVICTION_RETRY.as_millis(),
            )?;
            if let DrainOutcome::TimedOut {
                remaining,
                refusals,
                last_refusal,
            } = outcome
            {
                // As a drain that times out leaves the node standing.
                self.mark_fault(
                    Some(node),
                    &format!(
                        "drain of {node} timed out with {} pod(s) left ({refusals} eviction(s) refused{}); the node stays",
                        remaining.len(),
                        last_refusal.map(|m| format!(": {m}")).unwrap_or_default()
                    ),
                );
                return Ok(());
            }
        }
        self.delete_node_object(node)?;
        self.guard.machines().remove(node)?;
        self.sync()?;
        Ok(())
    }

    fn crash_node(&mut self, node: &str) -> Result<(), BackendError> {
        self.guard.machines().crash(node)?;
        self.sync()?;
        Ok(())
    }

    fn recreate_control_plane(
        &mut self,
        node: &str,
        boot: Option<(Duration, Duration)>,
    ) -> Result<(), BackendError> {
        if boot.is_some() {
            self.event(
                EventKind::StepStarted,
                etcd_ref(node),
                Some(node),
                "the drill's boot delay is not the bench's to choose on real machines; they boot as fast as they do".to_owned(),
            );
        }
        self.control_planes_before = Some(
            self.observer
                .pool_nodes(crate::topology::CONTROL_PLANE_POOL)
                .into_iter()
                .collect(),
        );
        self.guard.machines().recreate_control_plane(node)?;
        self.sync()?;
        Ok(())
    }

    fn replace_node(&mut self, node: &str) -> Result<(), BackendError> {
        self.guard.machines().replace(node)?;
        self.sync()?;
        Ok(())
    }

    fn rollout(
        &mut self,
        workload: &str,
        image: &str,
        container: Option<&str>,
    ) -> Result<(), BackendError> {
        let Some((namespace, "Deployment", name)) = workload_parts(workload) else {
            return Err(BackendError::Unsupported {
                backend: self.options.name,
                what: format!("roll out `{workload}`: rollouts are of Deployments"),
            });
        };
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), namespace);
        let result = self.runtime.block_on(async {
            let current = api.get(name).await?;
            let names: Vec<String> = current
                .spec
                .and_then(|s| s.template.spec)
                .map(|s| s.containers.into_iter().map(|c| c.name).collect())
                .unwrap_or_default();
            let containers: Vec<Value> = names
                .iter()
                .filter(|n| container.is_none_or(|c| c == n.as_str()))
                .map(|n| json!({"name": n, "image": image}))
                .collect();
            if containers.is_empty() {
                return Ok(false);
            }
            // Strategic merge keys containers by name, as `kubectl set
            // image` does: only the images change.
            let patch = json!({"spec": {"template": {"spec": {"containers": containers}}}});
            api.patch(name, &PatchParams::default(), &Patch::Strategic(patch))
                .await
                .map(|_| true)
        });
        match result {
            Ok(true) => {
                self.event(
                    EventKind::WorkloadRolledOut,
                    ObjectRef {
                        kind: "Deployment".to_owned(),
                        namespace: namespace.to_owned(),
                        name: name.to_owned(),
                    },
                    None,
                    format!("image set to {image}: rolling update started"),
                );
                self.sync().map_err(BackendError::from)
            }
            Ok(false) => Err(BackendError::NotFound(format!(
                "{workload}: no container `{}`",
                container.unwrap_or_default()
            ))),
            Err(source) => Err(BackendError::from(KubeError::Api {
                what: format!("roll out {workload}"),
                source,
            })),
        }
    }

    fn restore_namespace(&mut self, namespace: &str, schedule: &str) -> Result<(), BackendError> {
        if !self.capabilities.restore_namespaces {
            return Err(BackendError::Unsupported {
                backend: self.options.name,
                what: format!("lose namespace `{namespace}` and restore it from a backup"),
            });
        }
        Ok(self.restore_namespace_with_velero(namespace, schedule)?)
    }

    fn scale(&mut self, workload: &str, replicas: u32) -> Result<(), BackendError> {
        let Some((namespace, kind, name)) = workload_parts(workload) else {
            return Err(BackendError::NotFound(format!("no workload `{workload}`")));
        };
        let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
        let params = PatchParams::default();
        let client = self.client.clone();
        let result = self.runtime.block_on(async {
            match kind {
                "Deployment" => Api::<Deployment>::namespaced(client, namespace)
                    .patch_scale(name, &params, &patch)
                    .await
                    .map(|_| ()),
                "StatefulSet" => Api::<StatefulSet>::namespaced(client, namespace)
                    .patch_scale(name, &params, &patch)
                    .await
                    .map(|_| ()),
                _ => Err(kube::Error::Api(
                    kube::core::Status::failure(
                        &format!("{kind} has no scale subresource"),
                        "BadRequest",
                    )
                    .with_code(400)
                    .boxed(),
                )),
            }
        });
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {
                return Err(BackendError::NotFound(format!("no workload `{workload}`")));
            }
            Err(source) => {
                return Err(KubeError::Api {
                    what: format!("scale {workload}"),
                    source,
                }
                .into());
            }
        }
        self.event(
            EventKind::WorkloadScaled,
            ObjectRef {
                kind: kind.to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
            None,
            format!("desired replicas set to {replicas}"),
        );
        self.sync()?;
        Ok(())
    }

    fn preflight_facts(&self) -> (Facts, i64) {
        let nodes = self
            .observer
            .node_readiness()
            .into_iter()
            .map(|(name, control_plane, ready)| NodeFacts {
                name,
                control_plane,
                ready: if ready {
                    Readiness::True
                } else {
                    Readiness::Unknown
                },
            })
            .collect();
        let (backups, now) = match (self.served.as_ref(), self.served_now()) {
            (Some(api), Some(clock)) => {
                let backups = api
                    .backups()
                    .ok()
                    .and_then(|list| {
                        crate::preflight::input::backups_from_list(
                            "the served simulator's backups",
                            &list,
                        )
                        .ok()
                    })
                    .unwrap_or_default();
                (backups, clock.epoch_seconds + (clock.now_ms / 1000) as i64)
            }
            _ => {
                let client = self.client.clone();
                let backups = self
                    .runtime
                    .block_on(crate::preflight::live::read_objects(client))
                    .map(|(_, b)| b)
                    .unwrap_or_default();
                (backups, jiff::Timestamp::now().as_second())
            }
        };
        let (voters, learners) = self.etcd.unwrap_or((0, 0));
        let facts = Facts {
            nodes,
            backups,
            etcd: crate::preflight::EtcdCounts {
                voters: u64::from(voters),
                learners: u64::from(learners),
            },
        };
        (facts, now)
    }

    fn all_workloads_ready(&self) -> bool {
        self.observer.all_workloads_ready()
    }

    fn workload_ready(&self, workload: &str) -> bool {
        self.observer.workload_ready(workload)
    }

    fn ready_nodes(&self, pool: &str) -> u32 {
        self.observer.ready_nodes(pool)
    }

    fn etcd_members(&self) -> (u32, u32) {
        self.etcd.unwrap_or((0, 0))
    }

    fn observation(&self) -> &Observation {
        &self.observer.obs
    }

    fn finish(mut self: Box<Self>) -> Observation {
        let end = self.now();
        self.restore.teardown();
        if let Err(e) = self.guard.teardown() {
            self.event(
                EventKind::StepStarted,
                ObjectRef {
                    kind: "Drill".to_owned(),
                    namespace: String::new(),
                    name: "teardown".to_owned(),
                },
                None,
                format!("teardown failed: {}", crate::error_text::error_chain(&e)),
            );
        }
        let mut obs = std::mem::take(&mut self.observer.obs);
        obs.end = end;
        obs
    }
}

/// `namespace/Kind/name` in its three parts.
fn workload_parts(workload: &str) -> Option<(&str, &str, &str)> {
    let mut parts = workload.splitn(3, '/');
    Some((parts.next()?, parts.next()?, parts.next()?))
}

/// A run id: the drill, the seed and the moment, unique enough to tell
/// one run's objects from another's.
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

    fn list_failed(code: u16) -> Watched {
        let status = kube::core::Status::failure("refused", "Refused").with_code(code);
        (
            "VolumeAttachment",
            Err(watcher::Error::InitialListFailed(kube::Error::Api(
                status.boxed(),
            ))),
        )
    }

    fn outcome(events: Vec<Watched>) -> Vec<String> {
        let stream = optional(futures::stream::iter(events).boxed());
        futures::executor::block_on(stream.collect::<Vec<_>>())
            .into_iter()
            .map(|(kind, event)| match event {
                Ok(watcher::Event::Init) => format!("{kind} Init"),
                Ok(watcher::Event::InitDone) => format!("{kind} InitDone"),
                Ok(_) => format!("{kind} object"),
                Err(e) => format!("{kind} error: {e}"),
            })
            .collect()
    }

    #[test]
    fn an_optional_kind_the_cluster_does_not_serve_is_an_empty_list_and_its_watch_ends() {
        // The watcher would retry the list for ever; what follows the 404
        // is never read.
        let events = vec![list_failed(404), list_failed(404)];
        assert_eq!(
            outcome(events),
            ["VolumeAttachment Init", "VolumeAttachment InitDone"]
        );
    }

    #[test]
    fn an_optional_kind_that_is_forbidden_is_not_taken_for_an_empty_one() {
        let events = vec![
            list_failed(403),
            ("VolumeAttachment", Ok(watcher::Event::Init)),
            ("VolumeAttachment", Ok(watcher::Event::InitDone)),
        ];
        let seen = outcome(events);
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[0].contains("error"), "{seen:?}");
    }
}
