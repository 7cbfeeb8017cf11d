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

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};
use serde_json::json;

use super::BackendError;
use super::clean::RegistryError;
use super::docker::{DockerError, RunId};
use super::tool::{Tool, ToolError};
use crate::exit::Exit;
use crate::labels::{
    CONTROL_PLANE_LABEL, NODE_LABEL, POOL_LABEL, RUN_LABEL, STANDBY_KEY, WORKER_ROLE_LABEL,
};
use crate::scenario::spec::TaintEffect;
use crate::topology::{CONTROL_PLANE_POOL, Topology};

/// The provisioner of kind's storage (and of the class the drivers create):
/// volumes on one node's disk, which strand when that node goes, like an
/// `hcloud` volume.
pub const LOCAL_PATH_PROVISIONER: &str = "rancher.io/local-path";

/// How often the drivers look at the nodes while they wait.
pub const POLL_INTERVAL: Duration = Duration::from_secs(2);

/// One node the drill asks for, before a cluster exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedNode {
    /// The name the drill uses (`prod-worker-1`; standby autoscaler nodes
    /// are `POOL-standby-N`).
    pub drill_name: String,
    /// The pool (`control-plane` for control planes).
    pub pool: String,
    /// A control plane.
    pub control_plane: bool,
    /// An autoscaler standby node (see [`STANDBY_KEY`]).
    pub standby: bool,
    /// Labels set at boot.
    pub boot_labels: BTreeMap<String, String>,
    /// Labels patched in through the API once the node is Ready.
    pub api_labels: BTreeMap<String, String>,
    /// Taints patched in through the API once the node is Ready.
    pub taints: Vec<(String, String, &'static str)>,
}

/// Whether the kubelet may not set this label on itself (NodeRestriction):
/// anything under `kubernetes.io` or `k8s.io` except the two prefixes
/// kubelets own.
fn needs_api(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    let restricted = prefix == "kubernetes.io"
        || prefix.ends_with(".kubernetes.io")
        || prefix == "k8s.io"
        || prefix.ends_with(".k8s.io");
    let kubelet_owned = prefix == "kubelet.kubernetes.io" || prefix == "node.kubernetes.io";
    restricted && !kubelet_owned
}

fn effect(effect: TaintEffect) -> &'static str {
    match effect {
        TaintEffect::NoSchedule => "NoSchedule",
        TaintEffect::PreferNoSchedule => "PreferNoSchedule",
        TaintEffect::NoExecute => "NoExecute",
    }
}

/// The nodes to create for a drill: its control planes, every node a static
/// pool starts with, each autoscaled pool's `min`, and `standby_per_pool`
/// tainted standby nodes per autoscaled pool (capped at its `max`), since
/// neither kind nor `talosctl cluster create` can add a node later.
pub fn plan_nodes(topology: &Topology, run: &RunId, standby_per_pool: u32) -> Vec<PlannedNode> {
    let mut nodes = Vec::new();
    let mut add = |drill_name: String,
                   pool: &str,
                   control_plane: bool,
                   standby: bool,
                   labels: &BTreeMap<String, String>,
                   taints: Vec<(String, String, &'static str)>| {
        let mut boot_labels = BTreeMap::new();
        let mut api_labels = BTreeMap::new();
        for (key, value) in labels {
            if needs_api(key) {
                api_labels.insert(key.clone(), value.clone());
            } else {
                boot_labels.insert(key.clone(), value.clone());
            }
        }
        boot_labels.insert(RUN_LABEL.to_owned(), run.as_str().to_owned());
        boot_labels.insert(NODE_LABEL.to_owned(), drill_name.clone());
        boot_labels.insert(POOL_LABEL.to_owned(), pool.to_owned());
        let mut taints = taints;
        if control_plane {
            api_labels.insert(CONTROL_PLANE_LABEL.to_owned(), String::new());
        } else {
            api_labels.insert(WORKER_ROLE_LABEL.to_owned(), String::new());
        }
        if standby {
            boot_labels.insert(STANDBY_KEY.to_owned(), "true".to_owned());
            taints.push((STANDBY_KEY.to_owned(), "true".to_owned(), "NoSchedule"));
        }
        nodes.push(PlannedNode {
            drill_name,
            pool: pool.to_owned(),
            control_plane,
            standby,
            boot_labels,
            api_labels,
            taints,
        });
    };
    for name in topology.control_planes.names() {
        add(
            name,
            CONTROL_PLANE_POOL,
            true,
            false,
            &BTreeMap::new(),
            Vec::new(),
        );
    }
    for pool in &topology.pools {
        let taints: Vec<_> = pool
            .taints
            .iter()
            .map(|t| (t.key.clone(), t.value.clone(), effect(t.effect)))
            .collect();
        let initial = pool.initial_nodes();
        let names: Vec<String> = if pool.name_pattern.has_random() {
            // Random names are the simulator's; a fixed ordinal keeps the
            // plan (and its snapshot) the same on every run.
            (1..=initial)
                .map(|n| format!("{}-{n}", pool.name))
                .collect()
        } else {
            pool.static_names()
        };
        for name in names {
            add(name, &pool.name, false, false, &pool.labels, taints.clone());
        }
        for name in pool.standby_names(standby_per_pool) {
            add(name, &pool.name, false, true, &pool.labels, taints.clone());
        }
    }
    nodes
}

/// A planned node as it exists: its Kubernetes Node name and its container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvisionedNode {
    /// The plan.
    pub plan: PlannedNode,
    /// The Kubernetes Node name (on kind and Talos, the container's name).
    pub node: String,
    /// The node's container.
    pub container: String,
    /// Its address on the cluster's Docker network, when Docker reported one.
    pub ip: Option<IpAddr>,
}

impl ProvisionedNode {
    /// Whether `name` names this node: its Node name, container or drill
    /// name.
    pub fn answers_to(&self, name: &str) -> bool {
        self.node == name || self.container == name || self.plan.drill_name == name
    }

    /// The node among `nodes` that `name` names.
    pub fn find<'a>(nodes: &'a [ProvisionedNode], name: &str) -> Result<&'a Self, DriverError> {
        nodes
            .iter()
            .find(|n| n.answers_to(name))
            .ok_or_else(|| DriverError::UnknownNode(name.to_owned()))
    }
}

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
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The kubeconfig the CLI wrote is unusable.
    #[error("cannot load the kubeconfig {path}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: KubeconfigError,
    },
    /// A Kubernetes API request failed.
    #[error("cannot {what}")]
    Kube {
        /// What was being done.
        what: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Nodes did not become Ready in time.
    #[error("nodes not Ready after {seconds} s: {waiting}")]
    NotReady {
        /// The limit.
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
        /// The container.
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
    Members(#[source] crate::preflight::etcd::MembersError),
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

/// A client for the kubeconfig a driver wrote (its current context).
pub async fn client_for(kubeconfig: &Path) -> Result<Client, DriverError> {
    let error = |source| DriverError::Kubeconfig {
        path: kubeconfig.to_owned(),
        source,
    };
    let file = Kubeconfig::read_from(kubeconfig).map_err(error)?;
    let config = Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
        .await
        .map_err(error)?;
    Client::try_from(config).map_err(|source| DriverError::Kube {
        what: "build a Kubernetes client".into(),
        source,
    })
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// The Node a planned node became: the one labelled with its drill name,
/// else the one named like its container or its drill name.
fn find<'a>(nodes: &'a [Node], plan: &PlannedNode, container: &str) -> Option<&'a Node> {
    let name = |n: &Node| n.metadata.name.clone().unwrap_or_default();
    nodes
        .iter()
        .find(|n| {
            n.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(NODE_LABEL))
                .is_some_and(|v| *v == plan.drill_name)
        })
        .or_else(|| nodes.iter().find(|n| name(n) == container))
        .or_else(|| nodes.iter().find(|n| name(n) == plan.drill_name))
}

/// Waits until every planned node (paired with its container) is a Ready
/// Node, polling the API; returns each one's Node name. `kind create
/// --wait` and `talosctl cluster create` wait for control planes or
/// readiness checks of their own; a drill needs every node.
pub async fn wait_ready(
    client: &Client,
    nodes: &[(PlannedNode, String)],
    timeout: Duration,
) -> Result<Vec<String>, DriverError> {
    let api: Api<Node> = Api::all(client.clone());
    let started = Instant::now();
    loop {
        // A failing list while the API server comes up is expected; only
        // the timeout ends the wait.
        let listed = api.list(&ListParams::default()).await;
        let mut names = Vec::new();
        let mut waiting = Vec::new();
        match &listed {
            Ok(list) => {
                for (plan, container) in nodes {
                    match find(&list.items, plan, container) {
                        Some(node) if is_ready(node) => {
                            names.push(node.metadata.name.clone().unwrap_or_default());
                        }
                        Some(node) => waiting.push(format!(
                            "{} ({}): not Ready",
                            plan.drill_name,
                            node.metadata.name.as_deref().unwrap_or_default()
                        )),
                        None => waiting.push(format!("{}: not registered", plan.drill_name)),
                    }
                }
            }
            Err(e) => waiting.push(format!("the API: {e}")),
        }
        if waiting.is_empty() {
            return Ok(names);
        }
        if started.elapsed() >= timeout {
            return Err(DriverError::NotReady {
                seconds: timeout.as_secs(),
                waiting: waiting.join("; "),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Waits until every node carries its boot labels: Talos applies
/// `machine.nodeLabels` patches a moment after they are accepted, and a
/// drill must not start while a node still looks unlabelled to a guard.
pub async fn wait_labelled(
    client: &Client,
    nodes: &[ProvisionedNode],
    timeout: Duration,
) -> Result<(), DriverError> {
    let api: Api<Node> = Api::all(client.clone());
    let started = Instant::now();
    loop {
        let listed = api.list(&ListParams::default()).await;
        let mut waiting = Vec::new();
        match &listed {
            Ok(list) => {
                for node in nodes {
                    let labels = list
                        .items
                        .iter()
                        .find(|n| n.metadata.name.as_deref() == Some(node.node.as_str()))
                        .and_then(|n| n.metadata.labels.clone())
                        .unwrap_or_default();
                    let missing: Vec<&str> = node
                        .plan
                        .boot_labels
                        .iter()
                        .filter(|(k, v)| labels.get(*k) != Some(*v))
                        .map(|(k, _)| k.as_str())
                        .collect();
                    if !missing.is_empty() {
                        waiting.push(format!("{} lacks {}", node.node, missing.join(", ")));
                    }
                }
            }
            Err(e) => waiting.push(format!("the API: {e}")),
        }
        if waiting.is_empty() {
            return Ok(());
        }
        if started.elapsed() >= timeout {
            return Err(DriverError::NotReady {
                seconds: timeout.as_secs(),
                waiting: waiting.join("; "),
            });
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Patches the labels and taints the kubelet could not set into each Node.
pub async fn apply_api_labels(
    client: &Client,
    nodes: &[ProvisionedNode],
) -> Result<(), DriverError> {
    let api: Api<Node> = Api::all(client.clone());
    for node in nodes {
        let mut body = json!({"metadata": {"labels": node.plan.api_labels}});
        if !node.plan.taints.is_empty() {
            // A merge patch replaces the list: read the current taints
            // first so the kubelet's own (e.g. control-plane) stay.
            let current = api
                .get(&node.node)
                .await
                .map_err(|source| DriverError::Kube {
                    what: format!("read node {}", node.node),
                    source,
                })?;
            let mut taints: Vec<serde_json::Value> = current
                .spec
                .and_then(|s| s.taints)
                .unwrap_or_default()
                .into_iter()
                .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
                .collect();
            for (key, value, effect) in &node.plan.taints {
                let taint = json!({"key": key, "value": value, "effect": effect});
                if !taints.contains(&taint) {
                    taints.push(taint);
                }
            }
            body["spec"] = json!({ "taints": taints });
        }
        api.patch(&node.node, &PatchParams::default(), &Patch::Merge(&body))
            .await
            .map_err(|source| DriverError::Kube {
                what: format!("label node {}", node.node),
                source,
            })?;
    }
    Ok(())
}

/// The emulated autoscaler's scale-up on kind and Talos: a standby node
/// (see [`STANDBY_KEY`]) loses its taint and label and takes pods from
/// now on, as a freshly booted autoscaler node would.
pub async fn release_standby(client: &Client, node: &str) -> Result<(), DriverError> {
    retaint(client, node, STANDBY_KEY, None, true)
        .await
        .map_err(|source| DriverError::Kube {
            what: format!("release standby node {node}"),
            source,
        })
}

/// Sets (`effect` given) or removes (`None`) the node's taint `key`,
/// keeping its other taints, and with `drop_label` removes the label of the
/// same key. A taint list has no merge key, so the list is read and written
/// whole.
pub async fn retaint(
    client: &Client,
    node: &str,
    key: &str,
    effect: Option<&str>,
    drop_label: bool,
) -> Result<(), kube::Error> {
    let api: Api<Node> = Api::all(client.clone());
    let current = api.get(node).await?;
    let mut taints: Vec<serde_json::Value> = current
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != key)
        .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
        .collect();
    if let Some(effect) = effect {
        taints.push(json!({"key": key, "effect": effect}));
    }
    let mut body = json!({"spec": {"taints": taints}});
    if drop_label {
        body["metadata"] = json!({"labels": {key: null}});
    }
    api.patch(node, &PatchParams::default(), &Patch::Merge(&body))
        .await?;
    Ok(())
}

/// Creates each of the drill's storage classes that does not exist yet,
/// backed by [`LOCAL_PATH_PROVISIONER`] and bound when a pod is scheduled
/// (local-path needs the node), labelled with the run.
pub async fn ensure_storage_classes(
    client: &Client,
    topology: &Topology,
    run: &RunId,
) -> Result<Vec<String>, DriverError> {
    let api: Api<StorageClass> = Api::all(client.clone());
    let mut created = Vec::new();
    for class in &topology.storage_classes {
        let existing = api
            .get_opt(&class.name)
            .await
            .map_err(|source| DriverError::Kube {
                what: format!("read storage class {}", class.name),
                source,
            })?;
        if existing.is_some() {
            continue;
        }
        let object = StorageClass {
            metadata: ObjectMeta {
                name: Some(class.name.clone()),
                labels: Some([(RUN_LABEL.to_owned(), run.as_str().to_owned())].into()),
                ..ObjectMeta::default()
            },
            provisioner: LOCAL_PATH_PROVISIONER.to_owned(),
            reclaim_policy: Some("Delete".to_owned()),
            volume_binding_mode: Some("WaitForFirstConsumer".to_owned()),
            ..StorageClass::default()
        };
        api.create(&PostParams::default(), &object)
            .await
            .map_err(|source| DriverError::Kube {
                what: format!("create storage class {}", class.name),
                source,
            })?;
        created.push(class.name.clone());
    }
    Ok(created)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_run_id_always_names_a_cluster() {
        for drill in [
            "cp-recreate",
            "unlabelled-autoscaler-node",
            "A_B",
            "---",
            "",
        ] {
            let id = cluster_run_id(drill);
            let run = RunId::new(id.clone()).expect("a valid run id");
            assert!(cluster_name(&run).is_ok(), "{drill}: {id}");
        }
    }

    fn topology(yaml_pools: &str) -> Topology {
        let text = format!(
            "apiVersion: drillbench.dev/v1alpha1\nkind: Drill\nmetadata: {{name: plan}}\n\
             cluster:\n  controlPlanes: {{count: 1}}\n  pools:\n{yaml_pools}\n\
             steps:\n  - wait: {{for: 1m}}\nassertions:\n  - name: q\n    quorum: {{}}\n"
        );
        let source = crate::scenario::SourceFile::new("plan.yaml", text);
        crate::drill::Drill::from_source(source)
            .unwrap_or_else(|d| panic!("{}", d.render(false)))
            .topology
    }

    #[test]
    fn standby_nodes_fill_an_autoscaled_pool_up_to_its_max_and_carry_a_taint() {
        let topology = topology(concat!(
            "    - {name: load, count: 2, serverType: cx23, namePattern: 'load-{n}',\n",
            "       taints: [{key: dedicated, value: load, effect: NoSchedule}]}\n",
            "    - {name: burst, autoscaled: {min: 1, max: 2}, serverType: cx43,\n",
            "       namePattern: 'burst-{hex12}'}",
        ));
        let run = RunId::new("p1").unwrap();
        let plan = plan_nodes(&topology, &run, 3);
        let names: Vec<&str> = plan.iter().map(|n| n.drill_name.as_str()).collect();
        assert_eq!(
            names,
            [
                "control-plane-1",
                "load-1",
                "load-2",
                "burst-1",
                "burst-standby-1"
            ],
            "{plan:#?}"
        );
        let load = &plan[1];
        assert_eq!(
            load.taints,
            [("dedicated".to_owned(), "load".to_owned(), "NoSchedule")]
        );
        let standby = &plan[4];
        assert!(standby.standby);
        assert!(standby.taints.contains(&(
            STANDBY_KEY.to_owned(),
            "true".to_owned(),
            "NoSchedule"
        )));
        assert_eq!(
            standby.boot_labels.get(POOL_LABEL).map(String::as_str),
            Some("burst")
        );
        assert!(plan[0].api_labels.contains_key(CONTROL_PLANE_LABEL));
        assert!(
            plan.iter()
                .all(|n| n.boot_labels.get(RUN_LABEL).map(String::as_str) == Some("p1"))
        );
    }

    #[test]
    fn run_ids_that_cannot_be_hostnames_are_refused_as_bad_input() {
        let name = |id: &str| cluster_name(&RunId::new(id).unwrap());
        assert_eq!(name("r1").unwrap(), "drillbench-r1");
        assert_eq!(
            name("cp-recreate-7-a1b2").unwrap(),
            "drillbench-cp-recreate-7-a1b2"
        );
        for bad in ["Upper", "snake_case", "dot.ted", &"x".repeat(25)] {
            let error = name(bad).unwrap_err();
            assert_eq!(error.exit(), Exit::BadInput, "{bad}: {error}");
        }
    }

    #[test]
    fn role_labels_go_through_the_api_and_pool_labels_boot_with_the_node() {
        for key in [
            "node-role.kubernetes.io/control-plane",
            "kubernetes.io/role",
            "topology.k8s.io/zone",
        ] {
            assert!(needs_api(key), "{key}");
        }
        for key in [
            "platform.devantler.tech/baseline-worker",
            "ksail.io/autoscaled",
            "node.longhorn.io/create-default-disk",
            "node.kubernetes.io/instance-type",
            "plain",
        ] {
            assert!(!needs_api(key), "{key}");
        }
    }
}
