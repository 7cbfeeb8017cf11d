//! Container operations through the `docker` CLI, driven with `duct`: what
//! the kind and Talos-in-Docker backends need to crash, pause, remove and
//! recreate nodes, and what `bench clean` needs to leave nothing behind.
//!
//! The CLI rather than an API crate, because the backends already shell out
//! to `kind` and `talosctl`, and the CLI honours the user's Docker context
//! and `DOCKER_HOST` exactly as those tools do.
//!
//! Safety: every container the bench creates carries [`RUN_LABEL`]. The
//! operations that change a container take a [`Container`], which can only
//! be had from [`Docker::claim`] (the container carries the label) or
//! [`Docker::claim_foreign`] (the caller passed a named
//! [`ForeignAllowance`]). A container is claimed by name and then addressed
//! by its id, so a container replaced under the same name in between is not
//! touched by accident.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::exit::Exit;
use crate::labels::RUN_LABEL;

/// How long one `docker` call may take before it is killed. Stopping a
/// container waits up to its own stop timeout first, so this is generous.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// What to install when the CLI or the engine is missing.
const INSTALL_HINT: &str =
    "install Docker (Debian: `apt-get install docker.io`) and make sure `docker info` works";

/// Why a container operation failed.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    /// The `docker` executable could not be started.
    #[error("cannot run {program}; {INSTALL_HINT}")]
    Missing {
        /// The executable.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The CLI runs but cannot reach an engine.
    #[error("the Docker engine is unreachable through {program}: {stderr}; {INSTALL_HINT}")]
    EngineUnreachable {
        /// The executable.
        program: String,
        /// What the CLI said.
        stderr: String,
    },
    /// A `docker` call ran and failed.
    #[error("`docker {command}` failed ({status}): {stderr}")]
    Failed {
        /// The arguments, joined by spaces.
        command: String,
        /// Its exit status.
        status: String,
        /// What it printed on stderr, trimmed.
        stderr: String,
    },
    /// A `docker` call did not finish in time and was killed.
    #[error("`docker {command}` did not finish within {seconds} s")]
    Timeout {
        /// The arguments, joined by spaces.
        command: String,
        /// The limit.
        seconds: u64,
    },
    /// A `docker` call printed something this module cannot read.
    #[error("cannot read the output of `docker {command}`")]
    Output {
        /// The arguments, joined by spaces.
        command: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// No container has that name or id.
    #[error("no container named {0}")]
    NoSuchContainer(String),
    /// The container is not the bench's and no allowance was given.
    #[error(
        "container {name} does not carry the bench's label {RUN_LABEL}; \
         refusing to touch it without an explicit allowance"
    )]
    NotBenchOwned {
        /// The name asked for.
        name: String,
    },
    /// A spec to create from lacks the run label, so the container would be
    /// invisible to `bench clean`.
    #[error("the spec for container {name} has no {RUN_LABEL} label")]
    SpecUnlabelled {
        /// The container's name in the spec.
        name: String,
    },
    /// A run id that cannot be a label value.
    #[error(
        "invalid run id {0:?}: use 1 to 63 letters, digits, '-', '_' or '.', \
         starting and ending with a letter or digit"
    )]
    InvalidRunId(String),
}

impl DockerError {
    /// The exit code the CLI reports: a missing or unreachable Docker, and
    /// any failing call, is infrastructure (3); refusing a foreign container
    /// or a bad run id is the caller's input (2).
    pub fn exit(&self) -> Exit {
        match self {
            Self::NotBenchOwned { .. } | Self::InvalidRunId(_) => Exit::BadInput,
            _ => Exit::Infrastructure,
        }
    }

    /// Whether Docker itself is missing or unreachable, as opposed to one
    /// operation failing on a working engine.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Missing { .. } | Self::EngineUnreachable { .. })
    }
}

/// One bench run's id, the value of [`RUN_LABEL`]; checked against
/// Docker's and Kubernetes' label-value rules so the same id can label
/// containers and cluster objects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

impl RunId {
    /// Checks `id`.
    pub fn new(id: impl Into<String>) -> Result<Self, DockerError> {
        let id = id.into();
        let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        let valid = !id.is_empty()
            && id.len() <= 63
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && edge_ok(id.chars().next())
            && edge_ok(id.chars().last());
        if valid {
            Ok(Self(id))
        } else {
            Err(DockerError::InvalidRunId(id))
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `docker --filter` argument that selects this run's objects.
    fn filter(&self) -> String {
        format!("label={RUN_LABEL}={}", self.0)
    }
}

impl TryFrom<String> for RunId {
    type Error = DockerError;
    fn try_from(id: String) -> Result<Self, Self::Error> {
        Self::new(id)
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> Self {
        id.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The caller's explicit permission to act on a container that does not
/// carry [`RUN_LABEL`]; the reason is there to be logged and reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignAllowance {
    reason: &'static str,
}

impl ForeignAllowance {
    /// Grants the allowance, saying why (e.g. "the user passed
    /// --allow-foreign-container").
    pub fn new(reason: &'static str) -> Self {
        Self { reason }
    }

    /// Why it was granted.
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

/// A container the bench may act on: either it carries [`RUN_LABEL`] or
/// the caller granted a [`ForeignAllowance`]. The fields are private so the
/// only ways to get one are the checks in [`Docker::claim`],
/// [`Docker::claim_foreign`] and [`Docker::create`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    id: String,
    name: String,
    run: Option<RunId>,
    allowance: Option<ForeignAllowance>,
}

impl Container {
    /// The full container id every operation addresses.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The name, without Docker's leading slash.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The run that owns it; `None` for a foreign container.
    pub fn run(&self) -> Option<&RunId> {
        self.run.as_ref()
    }

    /// The allowance it was claimed under, if it was claimed as foreign;
    /// kept so a log or report can say why the bench touched it.
    pub fn allowance(&self) -> Option<ForeignAllowance> {
        self.allowance
    }
}

/// A container's lifecycle state as `docker inspect` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerState {
    /// Created, never started.
    Created,
    /// Running.
    Running,
    /// Frozen by `docker pause`.
    Paused,
    /// Restarting after an exit, per its restart policy.
    Restarting,
    /// Being removed.
    Removing,
    /// Stopped or killed.
    Exited,
    /// Failed to stop or be removed.
    Dead,
}

/// One container of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSummary {
    /// The full id.
    pub id: String,
    /// The name.
    pub name: String,
    /// The state, as text (`docker ps` prints it so).
    pub state: String,
}

/// One network the container is attached to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkAttachment {
    /// The network's name.
    pub network: String,
    /// A static IPv4 address (`--ip`), if one was configured.
    pub ipv4: Option<Ipv4Addr>,
    /// A static IPv6 address (`--ip6`), if one was configured.
    pub ipv6: Option<Ipv6Addr>,
    /// Extra DNS names on that network, without the ones Docker adds
    /// itself (the short id).
    pub aliases: Vec<String>,
}

/// A mount, as `--mount` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountSpec {
    /// `bind` or `volume`.
    pub kind: String,
    /// The host path or the volume name.
    pub source: String,
    /// The path inside the container.
    pub target: String,
    /// Mounted read-only.
    pub read_only: bool,
}

/// A host port published for a container port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortBinding {
    /// The container port with its protocol, e.g. `6443/tcp`.
    pub container_port: String,
    /// The host address; empty for every address.
    pub host_ip: String,
    /// The host port; empty for one chosen by Docker.
    pub host_port: String,
}

/// A restart policy (`--restart`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartPolicy {
    /// `no`, `always`, `unless-stopped` or `on-failure`.
    pub name: String,
    /// For `on-failure`: how many retries; 0 for unlimited.
    pub maximum_retry_count: u32,
}

/// What `docker create` needs to make the same container again, read from
/// `docker inspect`. Serializable so a drill can keep it in its report or
/// on disk across a crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerSpec {
    /// The name, without Docker's leading slash.
    pub name: String,
    /// The image as it was asked for (a tag or a digest).
    pub image: String,
    /// The image id it resolved to when recorded, to notice a moved tag.
    pub image_id: String,
    /// The hostname.
    pub hostname: String,
    /// The domain name.
    pub domainname: String,
    /// The user, empty for the image's.
    pub user: String,
    /// The working directory, empty for the image's.
    pub working_dir: String,
    /// Labels, including the image's (re-applying them is harmless).
    pub labels: BTreeMap<String, String>,
    /// The environment, including the image's, sorted: the engine merges
    /// the image's variables with the container's in an order that differs
    /// between a container and one recreated from its spec, and holds each
    /// name once, so the order carries no meaning.
    pub env: Vec<String>,
    /// The command; `None` for the image's.
    pub cmd: Option<Vec<String>>,
    /// The entrypoint; `None` for the image's.
    pub entrypoint: Option<Vec<String>>,
    /// The network mode: `bridge`, `host`, `none`, `container:…` or the
    /// name of the primary user-defined network.
    pub network_mode: String,
    /// The networks, primary first, then the others by name.
    pub networks: Vec<NetworkAttachment>,
    /// Bind and volume mounts.
    pub mounts: Vec<MountSpec>,
    /// tmpfs mounts: path → options.
    pub tmpfs: BTreeMap<String, String>,
    /// Runs privileged (kind and Talos nodes do).
    pub privileged: bool,
    /// The root filesystem is read-only (Talos nodes have it so).
    pub read_only: bool,
    /// `--security-opt` values.
    pub security_opt: Vec<String>,
    /// Added capabilities.
    pub cap_add: Vec<String>,
    /// Dropped capabilities.
    pub cap_drop: Vec<String>,
    /// The cgroup namespace mode (`private`, `host`), empty for the default.
    pub cgroupns_mode: String,
    /// Published ports.
    pub ports: Vec<PortBinding>,
    /// The restart policy.
    pub restart: RestartPolicy,
    /// The stop signal, empty for the image's.
    pub stop_signal: String,
    /// Runs an init process (`--init`); `None` for the engine's default.
    pub init: Option<bool>,
}

impl ContainerSpec {
    /// The run label's value, if the spec carries one.
    pub fn run(&self) -> Option<&str> {
        self.labels.get(RUN_LABEL).map(String::as_str)
    }

    /// The `docker create` arguments that recreate this container on its
    /// primary network (the others are connected before it starts).
    pub fn create_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["create".into(), "--name".into(), (&self.name).into()];
        let mut flag = |name: &str, value: &str| {
            args.push(name.into());
            args.push(value.into());
        };
        for (option, value) in [
            ("--hostname", &self.hostname),
            ("--domainname", &self.domainname),
            ("--user", &self.user),
            ("--workdir", &self.working_dir),
            ("--cgroupns", &self.cgroupns_mode),
            ("--stop-signal", &self.stop_signal),
        ] {
            if !value.is_empty() {
                flag(option, value);
            }
        }
        for (key, value) in &self.labels {
            flag("--label", &format!("{key}={value}"));
        }
        for variable in &self.env {
            flag("--env", variable);
        }
        flag("--network", &self.network_mode);
        if let Some(primary) = self.primary_network() {
            if let Some(ip) = primary.ipv4 {
                flag("--ip", &ip.to_string());
            }
            if let Some(ip) = primary.ipv6 {
                flag("--ip6", &ip.to_string());
            }
            for alias in &primary.aliases {
                flag("--network-alias", alias);
            }
        }
        for mount in &self.mounts {
            let mut value = format!(
                "type={},source={},target={}",
                mount.kind, mount.source, mount.target
            );
            if mount.read_only {
                value.push_str(",readonly");
            }
            flag("--mount", &value);
        }
        for (path, options) in &self.tmpfs {
            if options.is_empty() {
                flag("--tmpfs", path);
            } else {
                flag("--tmpfs", &format!("{path}:{options}"));
            }
        }
        for option in &self.security_opt {
            flag("--security-opt", option);
        }
        for capability in &self.cap_add {
            flag("--cap-add", capability);
        }
        for capability in &self.cap_drop {
            flag("--cap-drop", capability);
        }
        for port in &self.ports {
            let host = match (port.host_ip.as_str(), port.host_port.as_str()) {
                ("", "") => String::new(),
                ("", host_port) => format!("{host_port}:"),
                (ip, host_port) => format!("{}:{host_port}:", bracket_v6(ip)),
            };
            flag("--publish", &format!("{host}{}", port.container_port));
        }
        let restart = match (self.restart.name.as_str(), self.restart.maximum_retry_count) {
            ("", _) => "no".to_owned(),
            ("on-failure", n) if n > 0 => format!("on-failure:{n}"),
            (name, _) => name.to_owned(),
        };
        flag("--restart", &restart);
        if self.privileged {
            args.push("--privileged".into());
        }
        if self.read_only {
            args.push("--read-only".into());
        }
        match self.init {
            Some(true) => args.push("--init".into()),
            Some(false) => args.push("--init=false".into()),
            None => {}
        }
        if let Some(entrypoint) = &self.entrypoint {
            // `--entrypoint` takes one word; the rest goes before the command.
            match entrypoint.split_first() {
                Some((first, rest)) => {
                    args.push("--entrypoint".into());
                    args.push(first.into());
                    args.push((&self.image).into());
                    args.extend(rest.iter().map(OsString::from));
                }
                None => {
                    args.push("--entrypoint=".into());
                    args.push((&self.image).into());
                }
            }
        } else {
            args.push((&self.image).into());
        }
        args.extend(self.cmd.iter().flatten().map(OsString::from));
        args
    }

    /// The network `--network` names, if it is a network (not `host`,
    /// `none`, `container:…` or the default bridge without a static IP).
    fn primary_network(&self) -> Option<&NetworkAttachment> {
        self.networks
            .iter()
            .find(|network| network.network == self.network_mode)
    }

    /// The networks to connect after creation, before the start.
    fn secondary_networks(&self) -> impl Iterator<Item = &NetworkAttachment> {
        self.networks
            .iter()
            .filter(|network| network.network != self.network_mode)
    }
}

fn bracket_v6(ip: &str) -> String {
    if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip.to_owned()
    }
}

/// What [`Docker::clean`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleaned {
    /// Container names.
    pub containers: Vec<String>,
    /// Network names.
    pub networks: Vec<String>,
    /// Volume names.
    pub volumes: Vec<String>,
}

/// The `docker` CLI, as the user has it configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Docker {
    program: PathBuf,
    host: Option<String>,
    timeout: Duration,
}

impl Default for Docker {
    fn default() -> Self {
        Self::new()
    }
}

impl Docker {
    /// `docker` from `PATH`, with the user's context and `DOCKER_HOST`.
    pub fn new() -> Self {
        Self {
            program: PathBuf::from("docker"),
            host: None,
            timeout: DEFAULT_CALL_TIMEOUT,
        }
    }

    /// Uses another executable: a bare name is looked up in `PATH`, a
    /// path with a slash is used as it is.
    pub fn with_program(mut self, program: impl Into<PathBuf>) -> Self {
        self.program = program.into();
        self
    }

    /// Talks to another engine (`docker --host`).
    pub fn with_host(mut self, host: impl Into<String>) -> Self {
        self.host = Some(host.into());
        self
    }

    /// Bounds every call.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Checks that the CLI runs and reaches an engine; returns the
    /// engine's version. Call it before anything else so a missing Docker
    /// is reported as such, not as the first operation's failure.
    pub fn ping(&self) -> Result<String, DockerError> {
        let version = self.run(["version", "--format", "{{.Server.Version}}"])?;
        let version = version.trim();
        if version.is_empty() {
            // Some CLIs print an empty server section instead of failing.
            return Err(DockerError::EngineUnreachable {
                program: self.program.display().to_string(),
                stderr: "no server version".into(),
            });
        }
        Ok(version.to_owned())
    }

    /// Claims a container of the bench: refused unless it carries
    /// [`RUN_LABEL`].
    pub fn claim(&self, name: &str) -> Result<Container, DockerError> {
        let inspected = self.inspect_raw(name)?;
        let run = inspected
            .config
            .labels
            .get(RUN_LABEL)
            .and_then(|run| RunId::new(run.as_str()).ok())
            .ok_or_else(|| DockerError::NotBenchOwned {
                name: name.to_owned(),
            })?;
        Ok(Container {
            id: inspected.id,
            name: inspected.name.trim_start_matches('/').to_owned(),
            run: Some(run),
            allowance: None,
        })
    }

    /// Claims any container, the caller having said why that is allowed.
    pub fn claim_foreign(
        &self,
        name: &str,
        allowance: ForeignAllowance,
    ) -> Result<Container, DockerError> {
        let inspected = self.inspect_raw(name)?;
        let run = inspected
            .config
            .labels
            .get(RUN_LABEL)
            .and_then(|run| RunId::new(run.as_str()).ok());
        Ok(Container {
            id: inspected.id,
            name: inspected.name.trim_start_matches('/').to_owned(),
            run,
            allowance: Some(allowance),
        })
    }

    /// Records what is needed to recreate the container. Reading does not
    /// change anything, so any container may be inspected.
    pub fn inspect(&self, name_or_id: &str) -> Result<ContainerSpec, DockerError> {
        Ok(self.inspect_raw(name_or_id)?.into_spec())
    }

    /// The container's current state.
    pub fn state(&self, name_or_id: &str) -> Result<ContainerState, DockerError> {
        Ok(self.inspect_raw(name_or_id)?.state.status)
    }

    /// `docker stop`: SIGTERM (or the stop signal), then SIGKILL after
    /// `grace`.
    pub fn stop(&self, container: &Container, grace: Duration) -> Result<(), DockerError> {
        // The call itself may take the whole grace period, so its bound
        // must outlast it.
        let timeout = self.timeout.max(grace + Duration::from_secs(30));
        let grace = grace.as_secs().to_string();
        self.run_within(timeout, ["stop", "--time", grace.as_str(), container.id()])
            .map(drop)
    }

    /// `docker kill`: the signal at once, no grace; a node crash.
    pub fn kill(&self, container: &Container, signal: &str) -> Result<(), DockerError> {
        self.run(["kill", "--signal", signal, container.id()])
            .map(drop)
    }

    /// `docker pause`: freezes every process; the node hangs without
    /// exiting, as a stalled VM does.
    pub fn pause(&self, container: &Container) -> Result<(), DockerError> {
        self.run(["pause", container.id()]).map(drop)
    }

    /// `docker unpause`.
    pub fn unpause(&self, container: &Container) -> Result<(), DockerError> {
        self.run(["unpause", container.id()]).map(drop)
    }

    /// `docker start`.
    pub fn start(&self, container: &Container) -> Result<(), DockerError> {
        self.run(["start", container.id()]).map(drop)
    }

    /// `docker rm --force`: removes the container, running or not. Named
    /// volumes stay, so a recreate from the spec finds them again.
    pub fn remove(&self, container: Container) -> Result<(), DockerError> {
        self.run(["rm", "--force", container.id()]).map(drop)
    }

    /// `docker create` from a recorded spec, then connects its secondary
    /// networks. Refuses a spec without [`RUN_LABEL`], so everything the
    /// bench creates can be found by [`Docker::clean`].
    pub fn create(&self, spec: &ContainerSpec) -> Result<Container, DockerError> {
        let run = spec
            .run()
            .and_then(|run| RunId::new(run).ok())
            .ok_or_else(|| DockerError::SpecUnlabelled {
                name: spec.name.clone(),
            })?;
        let id = self.run(spec.create_args())?.trim().to_owned();
        let container = Container {
            id,
            name: spec.name.clone(),
            run: Some(run),
            allowance: None,
        };
        for network in spec.secondary_networks() {
            let mut args: Vec<OsString> = vec!["network".into(), "connect".into()];
            if let Some(ip) = network.ipv4 {
                args.extend(["--ip".into(), ip.to_string().into()]);
            }
            if let Some(ip) = network.ipv6 {
                args.extend(["--ip6".into(), ip.to_string().into()]);
            }
            for alias in &network.aliases {
                args.extend(["--alias".into(), alias.into()]);
            }
            args.extend([(&network.network).into(), container.id().into()]);
            self.run(args)?;
        }
        Ok(container)
    }

    /// [`Docker::create`] and [`Docker::start`]: the container again, as
    /// recorded, with a new id.
    pub fn recreate(&self, spec: &ContainerSpec) -> Result<Container, DockerError> {
        let container = self.create(spec)?;
        self.start(&container)?;
        Ok(container)
    }

    /// Every container of one run, running or not, by name.
    pub fn list(&self, run: &RunId) -> Result<Vec<ContainerSummary>, DockerError> {
        self.list_filtered(&run.filter())
    }

    /// Every container of any bench run, e.g. to find a crashed run's
    /// leftovers.
    pub fn list_all_runs(&self) -> Result<Vec<ContainerSummary>, DockerError> {
        self.list_filtered(&format!("label={RUN_LABEL}"))
    }

    fn list_filtered(&self, filter: &str) -> Result<Vec<ContainerSummary>, DockerError> {
        let output = self.run([
            "ps",
            "--all",
            "--no-trunc",
            "--filter",
            filter,
            "--format",
            "{{.ID}}\t{{.Names}}\t{{.State}}",
        ])?;
        let mut containers: Vec<ContainerSummary> = output
            .lines()
            .filter_map(|line| {
                let mut fields = line.split('\t');
                Some(ContainerSummary {
                    id: fields.next()?.to_owned(),
                    name: fields.next()?.to_owned(),
                    state: fields.next().unwrap_or_default().to_owned(),
                })
            })
            .collect();
        containers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(containers)
    }

    /// Removes everything labelled with `run`: containers (with their
    /// anonymous volumes), then networks, then volumes. Objects without the
    /// label are never touched, whatever their names.
    pub fn clean(&self, run: &RunId) -> Result<Cleaned, DockerError> {
        let filter = run.filter();
        let mut cleaned = Cleaned::default();
        for container in self.list(run)? {
            // Another clean (or the engine's own --rm) may have got there
            // first; gone is what we wanted.
            match self.run(["rm", "--force", "--volumes", container.id.as_str()]) {
                Ok(_) => cleaned.containers.push(container.name),
                Err(DockerError::Failed { stderr, .. })
                    if stderr.to_ascii_lowercase().contains("no such container") => {}
                Err(error) => return Err(error),
            }
        }
        let networks = self.run([
            "network",
            "ls",
            "--filter",
            filter.as_str(),
            "--format",
            "{{.Name}}",
        ])?;
        for network in sorted_lines(&networks) {
            self.run(["network", "rm", network.as_str()])?;
            cleaned.networks.push(network);
        }
        let volumes = self.run(["volume", "ls", "--quiet", "--filter", filter.as_str()])?;
        for volume in sorted_lines(&volumes) {
            self.run(["volume", "rm", "--force", volume.as_str()])?;
            cleaned.volumes.push(volume);
        }
        Ok(cleaned)
    }

    fn inspect_raw(&self, name_or_id: &str) -> Result<Inspected, DockerError> {
        let args = ["container", "inspect", name_or_id];
        let output = match self.run(args) {
            Err(DockerError::Failed { stderr, .. })
                if stderr.to_ascii_lowercase().contains("no such") =>
            {
                return Err(DockerError::NoSuchContainer(name_or_id.to_owned()));
            }
            other => other?,
        };
        let output_error = |source| DockerError::Output {
            command: args.join(" "),
            source,
        };
        let mut inspected: Vec<Inspected> = serde_json::from_str(&output).map_err(output_error)?;
        inspected
            .pop()
            .ok_or_else(|| DockerError::NoSuchContainer(name_or_id.to_owned()))
    }

    /// Runs one `docker` call, bounded by the timeout; stdout on success.
    fn run<I, A>(&self, args: I) -> Result<String, DockerError>
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        self.run_within(self.timeout, args)
    }

    /// [`Docker::run`] with a bound of its own.
    fn run_within<I, A>(&self, timeout: Duration, args: I) -> Result<String, DockerError>
    where
        I: IntoIterator<Item = A>,
        A: Into<OsString>,
    {
        let mut all: Vec<OsString> = Vec::new();
        if let Some(host) = &self.host {
            all.extend(["--host".into(), host.into()]);
        }
        let start = all.len();
        all.extend(args.into_iter().map(Into::into));
        let command = all[start..]
            .iter()
            .map(|arg| arg.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ");
        let program = self.program.display().to_string();
        let missing = |source| DockerError::Missing {
            program: program.clone(),
            source,
        };
        // As an OsStr, not a Path: duct turns a bare relative Path into
        // `./docker`, which would skip the PATH lookup.
        let handle = duct::cmd(self.program.as_os_str(), &all)
            .stdout_capture()
            .stderr_capture()
            .stdin_null()
            .unchecked()
            .start()
            .map_err(missing)?;
        if handle.wait_timeout(timeout).map_err(missing)?.is_none() {
            // Best effort: the timeout is what the caller must hear about.
            let _ = handle.kill();
            return Err(DockerError::Timeout {
                command,
                seconds: timeout.as_secs(),
            });
        }
        let output = handle.into_output().map_err(missing)?;
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
        }
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        if engine_unreachable(&stderr) {
            return Err(DockerError::EngineUnreachable { program, stderr });
        }
        Err(DockerError::Failed {
            command,
            status: output.status.to_string(),
            stderr,
        })
    }
}

/// The CLI's words for "there is no engine at the other end", across
/// versions and transports.
fn engine_unreachable(stderr: &str) -> bool {
    let stderr = stderr.to_ascii_lowercase();
    [
        "cannot connect to the docker daemon",
        "error during connect",
        "is the docker daemon running",
        "permission denied while trying to connect",
    ]
    .iter()
    .any(|needle| stderr.contains(needle))
}

fn sorted_lines(output: &str) -> Vec<String> {
    let mut lines: Vec<String> = output
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

/// The subset of `docker container inspect` this module reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Inspected {
    id: String,
    name: String,
    image: String,
    state: InspectedState,
    config: InspectedConfig,
    host_config: InspectedHostConfig,
    network_settings: InspectedNetworkSettings,
    #[serde(default)]
    mounts: Vec<InspectedMount>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedState {
    status: ContainerState,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedConfig {
    #[serde(default)]
    hostname: String,
    #[serde(default)]
    domainname: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    working_dir: String,
    #[serde(default, deserialize_with = "null_default")]
    labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_default")]
    env: Vec<String>,
    #[serde(default)]
    cmd: Option<Vec<String>>,
    #[serde(default)]
    entrypoint: Option<Vec<String>>,
    image: String,
    #[serde(default)]
    stop_signal: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedHostConfig {
    #[serde(default)]
    network_mode: String,
    #[serde(default)]
    privileged: bool,
    #[serde(default)]
    readonly_rootfs: bool,
    #[serde(default, deserialize_with = "null_default")]
    security_opt: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    cap_add: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    cap_drop: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    tmpfs: BTreeMap<String, String>,
    #[serde(default)]
    cgroupns_mode: String,
    #[serde(default, deserialize_with = "null_default")]
    port_bindings: BTreeMap<String, Option<Vec<InspectedPortBinding>>>,
    #[serde(default)]
    restart_policy: Option<InspectedRestartPolicy>,
    #[serde(default)]
    init: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedPortBinding {
    #[serde(default)]
    host_ip: String,
    #[serde(default)]
    host_port: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedRestartPolicy {
    #[serde(default)]
    name: String,
    #[serde(default)]
    maximum_retry_count: u32,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedNetworkSettings {
    #[serde(default, deserialize_with = "null_default")]
    networks: BTreeMap<String, InspectedNetwork>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedNetwork {
    #[serde(default, rename = "IPAMConfig")]
    ipam_config: Option<InspectedIpam>,
    #[serde(default, deserialize_with = "null_default")]
    aliases: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct InspectedIpam {
    #[serde(default, rename = "IPv4Address")]
    ipv4: Option<String>,
    #[serde(default, rename = "IPv6Address")]
    ipv6: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedMount {
    #[serde(rename = "Type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    source: String,
    destination: String,
    #[serde(default, rename = "RW")]
    rw: bool,
}

/// The aliases worth recreating: without the short id Docker adds itself
/// (a recreated container has another) and without repeats, in order.
fn own_aliases(aliases: Vec<String>, short_id: &str) -> Vec<String> {
    let mut own: Vec<String> = Vec::new();
    for alias in aliases {
        if alias != short_id && !own.contains(&alias) {
            own.push(alias);
        }
    }
    own
}

/// Docker prints `null` for empty lists and maps.
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

impl Inspected {
    fn into_spec(self) -> ContainerSpec {
        let short_id: String = self.id.chars().take(12).collect();
        let mut networks: Vec<NetworkAttachment> = self
            .network_settings
            .networks
            .into_iter()
            .map(|(network, settings)| {
                let ipam = settings.ipam_config;
                let (ipv4, ipv6) = match ipam {
                    Some(ipam) => (
                        ipam.ipv4.and_then(|ip| ip.parse().ok()),
                        ipam.ipv6.and_then(|ip| ip.parse().ok()),
                    ),
                    None => (None, None),
                };
                NetworkAttachment {
                    network,
                    ipv4,
                    ipv6,
                    aliases: own_aliases(settings.aliases, &short_id),
                }
            })
            .collect();
        // Primary first; the map already sorted the rest by name.
        let mode = self.host_config.network_mode.clone();
        networks.sort_by_key(|network| network.network != mode);

        let mounts = self
            .mounts
            .into_iter()
            .filter_map(|mount| {
                let source = match mount.kind.as_str() {
                    "volume" => mount.name?,
                    "bind" => mount.source,
                    // tmpfs comes from HostConfig.Tmpfs; anything else
                    // (npipe, cluster) does not occur on a Linux node.
                    _ => return None,
                };
                Some(MountSpec {
                    kind: mount.kind,
                    source,
                    target: mount.destination,
                    read_only: !mount.rw,
                })
            })
            .collect();

        let ports = self
            .host_config
            .port_bindings
            .into_iter()
            .flat_map(|(container_port, bindings)| {
                let bindings = bindings.unwrap_or_default();
                let container_port = container_port.clone();
                bindings.into_iter().map(move |binding| PortBinding {
                    container_port: container_port.clone(),
                    host_ip: binding.host_ip,
                    host_port: binding.host_port,
                })
            })
            .collect();

        let restart = self
            .host_config
            .restart_policy
            .map(|policy| RestartPolicy {
                name: policy.name,
                maximum_retry_count: policy.maximum_retry_count,
            })
            .unwrap_or(RestartPolicy {
                name: "no".into(),
                maximum_retry_count: 0,
            });

        ContainerSpec {
            name: self.name.trim_start_matches('/').to_owned(),
            image: self.config.image,
            image_id: self.image,
            hostname: self.config.hostname,
            domainname: self.config.domainname,
            user: self.config.user,
            working_dir: self.config.working_dir,
            labels: self.config.labels,
            env: {
                let mut env = self.config.env;
                env.sort();
                env
            },
            cmd: self.config.cmd,
            entrypoint: self.config.entrypoint,
            network_mode: self.host_config.network_mode,
            networks,
            mounts,
            tmpfs: self.host_config.tmpfs,
            privileged: self.host_config.privileged,
            read_only: self.host_config.readonly_rootfs,
            security_opt: self.host_config.security_opt,
            cap_add: self.host_config.cap_add,
            cap_drop: self.host_config.cap_drop,
            cgroupns_mode: self.host_config.cgroupns_mode,
            ports,
            restart,
            stop_signal: self.config.stop_signal.unwrap_or_default(),
            init: self.host_config.init,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> ContainerSpec {
        let text = include_str!("testdata/inspect-node.json");
        let mut inspected: Vec<Inspected> = serde_json::from_str(text).unwrap();
        inspected.pop().unwrap().into_spec()
    }

    #[test]
    fn a_recorded_node_spec_holds_what_docker_run_needs() {
        let spec = fixture();
        assert_eq!(spec.name, "drill-cp-1");
        assert_eq!(spec.image, "drillbench-test/sleeper:local");
        assert_eq!(spec.hostname, "cp-1");
        assert_eq!(spec.run(), Some("run-42"));
        assert_eq!(spec.cmd, Some(vec!["x".into(), "y".into()]));
        assert_eq!(spec.entrypoint, Some(vec!["/sleeper".into()]));
        assert_eq!(spec.network_mode, "drill-net");
        assert_eq!(spec.networks.len(), 2);
        assert_eq!(spec.networks[0].network, "drill-net");
        assert_eq!(spec.networks[0].ipv4, Some(Ipv4Addr::new(172, 29, 50, 10)));
        // The short id alias is Docker's own and would be stale on recreate.
        assert_eq!(spec.networks[0].aliases, vec!["cp-1".to_owned()]);
        assert_eq!(spec.networks[1].network, "drill-side");
        assert_eq!(spec.tmpfs.get("/run").map(String::as_str), Some("size=1m"));
        assert_eq!(spec.restart.name, "on-failure");
        assert_eq!(spec.restart.maximum_retry_count, 3);
        assert_eq!(spec.security_opt, vec!["no-new-privileges".to_owned()]);
        assert!(spec.privileged);
        assert_eq!(spec.mounts.len(), 2);
    }

    #[test]
    fn the_create_arguments_reproduce_the_recorded_settings() {
        let args: Vec<String> = fixture()
            .create_args()
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        insta::assert_snapshot!(args.join("\n"));
    }

    #[test]
    fn a_multi_word_entrypoint_keeps_its_tail_before_the_command() {
        let mut spec = fixture();
        spec.entrypoint = Some(vec!["/bin/sh".into(), "-c".into()]);
        spec.cmd = Some(vec!["sleep 1".into()]);
        let args: Vec<String> = spec
            .create_args()
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            args[args.len() - 5..],
            [
                "--entrypoint",
                "/bin/sh",
                "drillbench-test/sleeper:local",
                "-c",
                "sleep 1"
            ]
        );
    }

    #[test]
    fn a_recorded_spec_survives_a_trip_through_json() {
        // A drill writes the spec down before removing the container, so a
        // crash in between still leaves a way back.
        let spec = fixture();
        let text = serde_json::to_string(&spec).unwrap();
        assert_eq!(serde_json::from_str::<ContainerSpec>(&text).unwrap(), spec);
    }

    #[test]
    fn own_aliases_drop_the_short_id_and_repeats() {
        let aliases = ["0123456789ab", "cp-1", "api", "cp-1"]
            .map(String::from)
            .to_vec();
        assert_eq!(own_aliases(aliases, "0123456789ab"), ["cp-1", "api"]);
    }

    #[test]
    fn run_ids_follow_label_value_rules() {
        for ok in ["a", "run-42", "2026.11.30_1", &"x".repeat(63)] {
            assert!(RunId::new(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", "a b", "a=b", "ä", &"x".repeat(64)] {
            assert!(
                matches!(RunId::new(bad), Err(DockerError::InvalidRunId(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn engine_messages_are_told_apart_from_failures() {
        assert!(engine_unreachable(
            "Cannot connect to the Docker daemon at unix:///nope.sock. Is the docker daemon running?"
        ));
        assert!(engine_unreachable(
            "error during connect: Get \"http://x/v1.41/version\": dial tcp: lookup x: no such host"
        ));
        assert!(!engine_unreachable(
            "Error response from daemon: No such container: x"
        ));
    }

    #[test]
    fn unavailable_docker_is_an_infrastructure_error_and_a_refusal_is_bad_input() {
        let missing = DockerError::Missing {
            program: "docker".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert!(missing.is_unavailable());
        assert_eq!(missing.exit(), Exit::Infrastructure);
        assert!(missing.to_string().contains("apt-get install docker.io"));
        let refused = DockerError::NotBenchOwned { name: "db".into() };
        assert!(!refused.is_unavailable());
        assert_eq!(refused.exit(), Exit::BadInput);
    }
}
