//! The Talos backend's machines: Talos in Docker, created and destroyed
//! with a pinned `talosctl`, its node containers crashed, removed and
//! recreated through [`super::docker`].
//!
//! `talosctl` is pinned to [`PINNED_TALOSCTL`]'s minor release because its
//! flags moved between releases (v1.12 split `cluster create` into
//! provisioner subcommands); every command line here is the v1.11 one and
//! is snapshot-tested against the stand-in.
//!
//! Node labels: `talosctl cluster create` patches control planes and
//! workers as two groups only, so each node gets its pool's patch and a
//! patch with its own drill name afterwards (`talosctl patch machineconfig
//! --mode no-reboot`; `machine.nodeLabels` applies live).
//!
//! A control-plane recreate cannot use `talosctl reset` (it does not work
//! in containers), so it is what a cloud recreate is: the container's spec
//! is recorded (and written to the run's folder, so a crash in between
//! leaves the way back), the container removed, its etcd member removed
//! through a healthy control plane, and a fresh container started from the
//! same spec and machine configuration with new, empty state volumes. It
//! joins as a learner and is promoted; the caller watches that.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::clean::{DOCKER_HINT, RecordedBackend, Registry, RunRecord, TALOSCTL_HINT};
use super::docker::{Container, ContainerSpec, ContainerState, Docker, ForeignAllowance, RunId};
use super::local_path;
use super::machines::Machines;
use super::provision::{
    self, DriverError, PlannedNode, ProvisionedNode, block_on, client_for, plan_nodes, yaml_str,
};
use super::tool::{Tool, ToolError, Tools, parse_version};
use super::{BackendError, Capabilities};
use drillbench_model::drill::Drill;
use drillbench_model::labels::{NODE_LABEL, RUN_LABEL};
use drillbench_preflight::etcd::parse_members;

/// The talosctl release the nightly drill installs; any v1.11 patch
/// release is accepted, since flags only move between minor releases.
pub const PINNED_TALOSCTL: &str = "v1.11.5";
/// The minor release whose flags this module speaks.
pub const TALOSCTL_MINOR: (u32, u32) = (1, 11);
/// The container label talosctl puts on every node of a cluster.
pub const TALOS_CLUSTER_LABEL: &str = "talos.cluster.name";
/// The container label talosctl puts on every container it owns.
pub const TALOS_OWNED_LABEL: &str = "talos.owned";

/// How the Talos cluster of one run is made.
#[derive(Debug, Clone)]
pub struct TalosOptions {
    /// The run; the cluster is `drillbench-<run>`.
    pub run: RunId,
    /// Where talosconfig, kubeconfig, patches, talosctl's state and
    /// recorded specs go; `None`: the registry's folder for the run.
    pub dir: Option<PathBuf>,
    /// The executables.
    pub tools: Tools,
    /// Where the run is recorded before anything is created.
    pub registry: Registry,
    /// `--image`; `None`: the talosctl release's own Talos image.
    pub image: Option<String>,
    /// Tainted standby workers per autoscaled pool.
    pub standby_per_pool: u32,
    /// How long `talosctl cluster create` may take.
    pub create_timeout: Duration,
    /// How long every node has to become Ready after that.
    pub ready_timeout: Duration,
}

impl TalosOptions {
    /// Defaults for a run: one standby worker per autoscaled pool, 15 min
    /// to create, 5 min for every node to be Ready.
    pub fn new(run: RunId, registry: Registry) -> Self {
        Self {
            run,
            dir: None,
            tools: Tools::default(),
            registry,
            image: None,
            standby_per_pool: 1,
            create_timeout: Duration::from_secs(900),
            ready_timeout: Duration::from_secs(300),
        }
    }
}

/// The run-specific cluster name, `drillbench-<run>`.
pub use super::provision::cluster_name;

/// The container names talosctl gives the planned nodes, in plan order:
/// `NAME-controlplane-N` and `NAME-worker-N`, counted per role from 1.
pub fn container_names(cluster: &str, nodes: &[PlannedNode]) -> Vec<String> {
    let (mut control_planes, mut workers) = (0, 0);
    nodes
        .iter()
        .map(|node| {
            if node.control_plane {
                control_planes += 1;
                format!("{cluster}-controlplane-{control_planes}")
            } else {
                workers += 1;
                format!("{cluster}-worker-{workers}")
            }
        })
        .collect()
}

/// A machine-config patch setting node labels.
pub fn labels_patch(comment: &str, labels: &BTreeMap<String, String>) -> String {
    let mut text = format!("# {comment}\nmachine:\n  nodeLabels:\n");
    for (key, value) in labels {
        text.push_str(&format!("    {}: {}\n", yaml_str(key), yaml_str(value)));
    }
    text
}

/// The labels every node of the pool boots with, less the node's own name.
fn pool_labels(node: &PlannedNode) -> BTreeMap<String, String> {
    let mut labels = node.boot_labels.clone();
    labels.remove(NODE_LABEL);
    labels
}

/// Checks `talosctl version --client` against [`TALOSCTL_MINOR`].
pub fn check_version(talosctl: &Tool) -> Result<String, DriverError> {
    let printed = talosctl.run(["version", "--client"])?;
    let tag = printed
        .lines()
        .find(|l| l.trim_start().starts_with("Tag:"))
        .unwrap_or(printed.trim())
        .trim()
        .to_owned();
    match parse_version(&tag) {
        Some((major, minor, _)) if (major, minor) == TALOSCTL_MINOR => Ok(tag),
        _ => Err(ToolError::UnsupportedVersion {
            program: talosctl.program(),
            found: tag,
            supported: "talosctl v1.11.x (pinned: v1.11.5)",
            hint: TALOSCTL_HINT,
        }
        .into()),
    }
}

/// One member row of `talosctl etcd members`: its id and hostname.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The member id (hex), what `etcd remove-member` takes since v1.9.
    pub id: String,
    /// The node's hostname.
    pub hostname: String,
    /// Whether it is a learner.
    pub learner: bool,
}

/// Reads the member rows; the table is first checked by the preflight's
/// parser, so both refuse the same malformed output.
pub fn parse_member_rows(text: &str) -> Result<Vec<Member>, DriverError> {
    parse_members(text).map_err(DriverError::Members)?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .skip(1)
        .filter_map(|row| {
            let fields: Vec<&str> = row.split_whitespace().collect();
            Some(Member {
                id: (*fields.get(1)?).to_owned(),
                hostname: (*fields.get(2)?).to_owned(),
                learner: *fields.last()? == "true",
            })
        })
        .collect())
}

/// The node containers of a Talos-in-Docker cluster.
#[derive(Debug)]
pub struct TalosMachines {
    cluster: String,
    run: RunId,
    dir: PathBuf,
    kubeconfig: PathBuf,
    talosconfig: PathBuf,
    state: PathBuf,
    nodes: Vec<ProvisionedNode>,
    talosctl: Tool,
    docker_cli: Tool,
    docker: Docker,
    registry: Registry,
    record: RunRecord,
    /// Specs of removed nodes, for [`Machines::replace`].
    removed: BTreeMap<String, ContainerSpec>,
    /// How many fresh containers this run started (names their volumes).
    generation: u32,
    torn_down: bool,
}

/// Creates the drill's Talos-in-Docker cluster: checks the tools, records
/// the run, `talosctl cluster create --provisioner docker`, fetches the
/// kubeconfig into the run's folder, patches each node's labels, waits for
/// every node to be Ready, applies role labels and taints, and creates the
/// drill's storage classes. On any failure after the record, what was
/// created is destroyed again before the error returns.
#[expect(
    clippy::disallowed_methods,
    reason = "a real cluster runs on the wall clock"
)]
pub fn provision(drill: &Drill, options: &TalosOptions) -> Result<TalosMachines, DriverError> {
    let tools = &options.tools;
    let docker = tools.docker();
    docker.ping()?;
    let talosctl = Tool::new(&tools.talosctl, TALOSCTL_HINT, tools.timeout);
    check_version(&talosctl)?;

    let cluster = cluster_name(&options.run)?;
    let dir = options
        .dir
        .clone()
        .unwrap_or_else(|| options.registry.run_dir(&options.run));
    let record = RunRecord {
        id: options.run.clone(),
        backend: RecordedBackend::Talos,
        cluster: cluster.clone(),
        dir: dir.clone(),
        kubeconfig: dir.join("kubeconfig"),
        talosconfig: Some(dir.join("talosconfig")),
        talos_state: Some(dir.join("talos-state")),
        pid: std::process::id(),
        started: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default(),
    };
    options.registry.record(&record)?;
    let mut machines = TalosMachines {
        cluster,
        run: options.run.clone(),
        kubeconfig: dir.join("kubeconfig"),
        talosconfig: dir.join("talosconfig"),
        state: dir.join("talos-state"),
        dir,
        nodes: Vec::new(),
        talosctl,
        docker_cli: Tool::new(&tools.docker, DOCKER_HINT, tools.timeout),
        docker,
        registry: options.registry.clone(),
        record,
        removed: BTreeMap::new(),
        generation: 0,
        torn_down: false,
    };
    let plan = plan_nodes(&drill.topology, &options.run, options.standby_per_pool);
    match machines.create(drill, plan, options) {
        Ok(()) => Ok(machines),
        Err(error) => {
            let _ = machines.teardown();
            Err(error)
        }
    }
}

impl TalosMachines {
    fn create(
        &mut self,
        drill: &Drill,
        plan: Vec<PlannedNode>,
        options: &TalosOptions,
    ) -> Result<(), DriverError> {
        let mut plan = plan;
        plan.sort_by_key(|n| !n.control_plane);
        let control_planes = plan.iter().filter(|n| n.control_plane).count();
        let workers = plan.len() - control_planes;

        let run_patch = self.dir.join("patches/run.yaml");
        let mut run_labels = BTreeMap::new();
        run_labels.insert(RUN_LABEL.to_owned(), self.run.as_str().to_owned());
        // Also from the first boot: the kubelet sees the local-path
        // provisioner's volumes (a kubelet mount cannot change live).
        provision::write_file(
            &run_patch,
            &format!(
                "{}{}",
                labels_patch("every node of the run, from its first boot", &run_labels),
                local_path::kubelet_mount_patch().trim_start_matches("machine:\n")
            ),
        )?;
        let (run_patch, state, talosconfig) = (
            format!("@{}", run_patch.display()),
            self.state.display().to_string(),
            self.talosconfig.display().to_string(),
        );
        let (control_planes, workers) = (control_planes.to_string(), workers.to_string());
        let mut args = vec![
            "cluster",
            "create",
            "--provisioner",
            "docker",
            "--name",
            self.cluster.as_str(),
            "--state",
            state.as_str(),
            "--talosconfig",
            talosconfig.as_str(),
            "--controlplanes",
            control_planes.as_str(),
            "--workers",
            workers.as_str(),
            "--config-patch",
            run_patch.as_str(),
            // The kubeconfig goes to the run's folder below, never merged
            // into the user's.
            "--skip-kubeconfig",
            // IPv6 needs a sysctl the recorded container spec cannot carry;
            // without it, a recreated node is the same as the original.
            "--docker-disable-ipv6",
            "--wait-timeout",
            "10m",
        ];
        if let Some(image) = &options.image {
            args.extend(["--image", image.as_str()]);
        }
        self.talosctl.run_within(options.create_timeout, args)?;

        let names = container_names(&self.cluster, &plan);
        for (node, container) in plan.iter().zip(&names) {
            let ip = provision::container_ip(&self.docker_cli, container)?;
            self.nodes.push(ProvisionedNode {
                plan: node.clone(),
                node: container.clone(),
                container: container.clone(),
                ip,
            });
        }
        let first_cp = self.nodes[0]
            .ip
            .ok_or_else(|| DriverError::UnknownNode(self.nodes[0].container.clone()))?
            .to_string();
        let kubeconfig = self.kubeconfig.display().to_string();
        self.talos(
            &first_cp,
            &[
                "kubeconfig",
                kubeconfig.as_str(),
                "--force",
                "--merge=false",
            ],
        )?;

        for node in self.nodes.clone() {
            let ip = node
                .ip
                .ok_or_else(|| DriverError::UnknownNode(node.container.clone()))?
                .to_string();
            let pool_patch = self
                .dir
                .join(format!("patches/pool-{}.yaml", node.plan.pool));
            provision::write_file(
                &pool_patch,
                &labels_patch(
                    &format!("pool {}", node.plan.pool),
                    &pool_labels(&node.plan),
                ),
            )?;
            let node_patch = self
                .dir
                .join(format!("patches/node-{}.yaml", node.plan.drill_name));
            let mut own = BTreeMap::new();
            own.insert(NODE_LABEL.to_owned(), node.plan.drill_name.clone());
            provision::write_file(
                &node_patch,
                &labels_patch(&format!("node {}", node.plan.drill_name), &own),
            )?;
            let (pool_patch, node_patch) = (
                format!("@{}", pool_patch.display()),
                format!("@{}", node_patch.display()),
            );
            self.talos(
                &ip,
                &[
                    "patch",
                    "machineconfig",
                    "--mode",
                    "no-reboot",
                    "--patch",
                    pool_patch.as_str(),
                    "--patch",
                    node_patch.as_str(),
                ],
            )?;
        }

        let pairs: Vec<(PlannedNode, String)> = self
            .nodes
            .iter()
            .map(|n| (n.plan.clone(), n.container.clone()))
            .collect();
        let kubeconfig = self.kubeconfig.clone();
        let node_names = block_on(async {
            let client = client_for(&kubeconfig).await?;
            provision::wait_ready(&client, &pairs, options.ready_timeout).await
        })??;
        for (node, name) in self.nodes.iter_mut().zip(node_names) {
            node.node = name;
        }
        let nodes = self.nodes.clone();
        let topology = drill.topology.clone();
        let run = self.run.clone();
        let ready_timeout = options.ready_timeout;
        block_on(async {
            let client = client_for(&kubeconfig).await?;
            provision::wait_labelled(&client, &nodes, ready_timeout).await?;
            provision::apply_api_labels(&client, &nodes).await?;
            provision::ensure_storage_classes(&client, &topology, &run).await?;
            // A served simulator standing in for Talos models volumes.
            if !super::served::is_served_simulator(&kubeconfig).await {
                local_path::install(&client, &run).await?;
            }
            Ok::<(), DriverError>(())
        })??;
        Ok(())
    }

    /// `talosctl --talosconfig FILE --endpoints NODE --nodes NODE ARGS...`:
    /// straight to the node's own Talos API on the cluster network, not
    /// through the talosconfig's endpoint, which is the first control
    /// plane's published port and gone while that node is recreated.
    fn talos(&self, node: &str, args: &[&str]) -> Result<String, DriverError> {
        let talosconfig = self.talosconfig.display().to_string();
        let mut all = vec![
            "--talosconfig",
            talosconfig.as_str(),
            "--endpoints",
            node,
            "--nodes",
            node,
        ];
        all.extend_from_slice(args);
        Ok(self.talosctl.run(all)?)
    }

    /// The cluster name (`drillbench-<run>`).
    pub fn cluster(&self) -> &str {
        &self.cluster
    }

    /// The nodes as created, control planes first.
    pub fn nodes(&self) -> &[ProvisionedNode] {
        &self.nodes
    }

    /// The talosconfig in the run's folder.
    pub fn talosconfig(&self) -> &PathBuf {
        &self.talosconfig
    }

    fn node(&self, name: &str) -> Result<&ProvisionedNode, DriverError> {
        ProvisionedNode::find(&self.nodes, name)
    }

    /// Claims a node container after checking talosctl made it for this
    /// run's cluster (talosctl cannot put the bench's label on its
    /// containers; the run-specific cluster name is the proof). Containers
    /// the bench recreated carry the bench's label as well.
    fn claim(&self, container: &str) -> Result<Container, DriverError> {
        let spec = self.docker.inspect(container)?;
        if spec.labels.get(TALOS_CLUSTER_LABEL) != Some(&self.cluster)
            || spec.labels.get(TALOS_OWNED_LABEL).map(String::as_str) != Some("true")
        {
            return Err(DriverError::NotOurs {
                container: container.to_owned(),
                cluster: self.cluster.clone(),
            });
        }
        Ok(self.docker.claim_foreign(
            container,
            ForeignAllowance::new("a node of the Talos cluster this run created"),
        )?)
    }

    /// Anonymous volumes (64 hex digits) are the node's state; they belong
    /// to the removed container, and a fresh node must not boot from them.
    fn anonymous_volumes(spec: &ContainerSpec) -> Vec<String> {
        spec.mounts
            .iter()
            .filter(|m| {
                m.kind == "volume"
                    && m.source.len() == 64
                    && m.source.chars().all(|c| c.is_ascii_hexdigit())
            })
            .map(|m| m.source.clone())
            .collect()
    }

    /// Removes a claimed container and its anonymous state volumes.
    fn remove_container(
        &self,
        container: Container,
        spec: &ContainerSpec,
    ) -> Result<(), DriverError> {
        self.docker.remove(container)?;
        for volume in Self::anonymous_volumes(spec) {
            self.docker_cli
                .run(["volume", "rm", "--force", volume.as_str()])?;
        }
        Ok(())
    }

    /// The spec for a fresh container: the same, with the run's label, and
    /// new empty state volumes labelled with the run, so `bench clean` finds
    /// them and the node boots as a new machine with the same config.
    fn fresh_spec(&mut self, spec: &ContainerSpec) -> Result<ContainerSpec, DriverError> {
        self.generation += 1;
        let mut fresh = spec.clone();
        fresh
            .labels
            .insert(RUN_LABEL.to_owned(), self.run.as_str().to_owned());
        let anonymous = Self::anonymous_volumes(spec);
        let label = format!("{RUN_LABEL}={}", self.run);
        for (index, mount) in fresh
            .mounts
            .iter_mut()
            .filter(|m| anonymous.contains(&m.source))
            .enumerate()
        {
            let name = format!("{}-g{}-{index}", spec.name, self.generation);
            self.docker_cli
                .run(["volume", "create", "--label", label.as_str(), name.as_str()])?;
            mount.source = name;
        }
        Ok(fresh)
    }

    /// The address of a running control plane other than `except`.
    fn healthy_peer(&self, except: &str) -> Result<String, DriverError> {
        for node in self.nodes.iter().filter(|n| n.plan.control_plane) {
            if node.container == except {
                continue;
            }
            let running = matches!(
                self.docker.state(&node.container),
                Ok(ContainerState::Running)
            );
            if let (true, Some(ip)) = (running, node.ip) {
                return Ok(ip.to_string());
            }
        }
        Err(DriverError::NoHealthyPeer(except.to_owned()))
    }

    fn recreate(&mut self, name: &str) -> Result<(), DriverError> {
        let node = self.node(name)?.clone();
        if !node.plan.control_plane {
            return Err(DriverError::UnknownNode(format!(
                "{name} (not a control plane)"
            )));
        }
        let peer = self.healthy_peer(&node.container)?;
        let container = self.claim(&node.container)?;
        let spec = self.docker.inspect(container.id())?;
        // Written down before anything is removed: a crash from here on
        // still leaves the way back.
        let kept = self.dir.join(format!("specs/{}.json", node.container));
        provision::write_file(
            &kept,
            &serde_json::to_string_pretty(&spec).unwrap_or_default(),
        )?;
        let members = parse_member_rows(&self.talos(&peer, &["etcd", "members"])?)?;
        let member = members
            .iter()
            .find(|m| m.hostname == spec.hostname || m.hostname == node.container)
            .ok_or_else(|| DriverError::NoMember(spec.hostname.clone()))?
            .id
            .clone();
        self.remove_container(container, &spec)?;
        self.talos(&peer, &["etcd", "remove-member", member.as_str()])?;
        let fresh = self.fresh_spec(&spec)?;
        self.docker.recreate(&fresh)?;
        Ok(())
    }
}

/// What a Talos-in-Docker cluster can do: everything but the runbook
/// faults; its autoscaler is the bench's, as on kind.
pub const CAPABILITIES: Capabilities = Capabilities {
    recreate_control_planes: true,
    crash_nodes: true,
    delete_nodes: true,
    // Emulated by the bench over standby nodes (see `kube::autoscaler`).
    autoscaler: true,
    replace_nodes: true,
    whole_cluster_faults: false,
    // Talos in Docker ships none; the backend installs local-path.
    storage: true,
    restore_namespaces: true,
};

impl Machines for TalosMachines {
    fn name(&self) -> &'static str {
        "talos"
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn kubeconfig(&self) -> (PathBuf, Option<String>) {
        (self.kubeconfig.clone(), None)
    }

    fn api_servers(&self) -> Vec<(String, SocketAddr)> {
        self.nodes
            .iter()
            .filter_map(provision::api_server)
            .collect()
    }

    /// `docker stop --time 0`: no time for a goodbye to the API server.
    fn crash(&mut self, node: &str) -> Result<(), BackendError> {
        let container = self.node(node)?.container.clone();
        let container = self.claim(&container)?;
        self.docker
            .stop(&container, Duration::ZERO)
            .map_err(|e| DriverError::from(e).into())
    }

    /// Removes the container and its state; its spec is kept for
    /// [`Machines::replace`].
    fn remove(&mut self, node: &str) -> Result<(), BackendError> {
        let name = self.node(node)?.container.clone();
        let container = self.claim(&name)?;
        let spec = self
            .docker
            .inspect(container.id())
            .map_err(DriverError::from)?;
        self.remove_container(container, &spec)?;
        self.removed.insert(name, spec);
        Ok(())
    }

    /// Starts a removed node again from its recorded spec and machine
    /// configuration, with fresh state: the same hostname, so the same Node.
    fn replace(&mut self, node: &str) -> Result<(), BackendError> {
        let name = self.node(node)?.container.clone();
        let spec =
            self.removed.get(&name).cloned().ok_or_else(|| {
                BackendError::NotFound(format!("no removed node {node} to replace"))
            })?;
        let fresh = self.fresh_spec(&spec)?;
        self.docker.recreate(&fresh).map_err(DriverError::from)?;
        self.removed.remove(&name);
        Ok(())
    }

    fn recreate_control_plane(&mut self, node: &str) -> Result<(), BackendError> {
        Ok(self.recreate(node)?)
    }

    fn etcd_members(&mut self) -> Option<(u32, u32)> {
        let peers: Vec<IpAddr> = self
            .nodes
            .iter()
            .filter(|n| n.plan.control_plane)
            .filter_map(|n| n.ip)
            .collect();
        peers.into_iter().find_map(|ip| {
            let table = self.talos(&ip.to_string(), &["etcd", "members"]).ok()?;
            let counts = parse_members(&table).ok()?;
            Some((
                u32::try_from(counts.voters).ok()?,
                u32::try_from(counts.learners).ok()?,
            ))
        })
    }

    /// `talosctl cluster destroy`, then anything labelled with the run (the
    /// state volumes of recreated nodes), then the run's record.
    fn teardown(&mut self) -> Result<(), BackendError> {
        if self.torn_down {
            return Ok(());
        }
        let (state, talosconfig) = (
            self.state.display().to_string(),
            self.talosconfig.display().to_string(),
        );
        self.talosctl
            .run([
                "cluster",
                "destroy",
                "--provisioner",
                "docker",
                "--name",
                self.cluster.as_str(),
                "--state",
                state.as_str(),
                "--talosconfig",
                talosconfig.as_str(),
            ])
            .map_err(DriverError::from)?;
        self.docker.clean(&self.run).map_err(DriverError::from)?;
        self.registry
            .forget(&self.record)
            .map_err(DriverError::from)?;
        self.torn_down = true;
        Ok(())
    }
}

impl Drop for TalosMachines {
    /// Teardown always runs; a failure here leaves the record for
    /// `bench clean`.
    fn drop(&mut self) {
        if !self.torn_down {
            let _ = self.teardown();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_rows_give_ids_by_hostname() {
        let table = include_str!("../../../harness/fixtures/preflight/etcd-members-learner.txt");
        let rows = parse_member_rows(table).unwrap();
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert_eq!(rows.iter().filter(|m| m.learner).count(), 1);
        assert!(
            rows.iter()
                .all(|m| !m.id.is_empty() && !m.hostname.is_empty())
        );
        assert!(parse_member_rows("error: unavailable\n").is_err());
    }

    #[test]
    fn talosctl_outside_the_pinned_minor_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let fake = |tag: &str| {
            let path = dir.path().join(format!("talosctl-{tag}"));
            drillbench_model::test_support::write_script(
                &path,
                format!("#!/bin/sh\nprintf 'Client:\\n\\tTag:         {tag}\\n'\n"),
            );
            Tool::new(path, TALOSCTL_HINT, Duration::from_secs(30))
        };
        assert_eq!(
            check_version(&fake("v1.11.5")).unwrap(),
            "Tag:         v1.11.5"
        );
        assert!(check_version(&fake("v1.11.0")).is_ok());
        let newer = check_version(&fake("v1.12.1")).unwrap_err();
        assert!(newer.to_string().contains("v1.11"), "{newer}");
        assert!(check_version(&fake("v1.10.7")).is_err());
    }
}
