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

mod ids;
mod inspect;
mod spec;

#[cfg(test)]
mod tests;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use self::ids::{Container, ContainerState, ContainerSummary, ForeignAllowance, RunId};
use self::inspect::Inspected;
pub use self::spec::{ContainerSpec, MountSpec, NetworkAttachment, PortBinding, RestartPolicy};
use drillbench_model::exit::Exit;
use drillbench_model::labels::RUN_LABEL;

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
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// The CLI runs but cannot reach an engine.
    #[error("the Docker engine is unreachable through {program}: {stderr}; {INSTALL_HINT}")]
    EngineUnreachable {
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
        seconds: u64,
    },
    /// A `docker` call printed something this module cannot read.
    #[error("cannot read the output of `docker {command}`")]
    Output {
        /// The arguments, joined by spaces.
        command: String,
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

/// What [`Docker::clean`] removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cleaned {
    pub containers: Vec<String>,
    pub networks: Vec<String>,
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

    pub fn unpause(&self, container: &Container) -> Result<(), DockerError> {
        self.run(["unpause", container.id()]).map(drop)
    }

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
