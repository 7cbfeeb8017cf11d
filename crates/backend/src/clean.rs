//! The run registry and `bench clean`: what a crashed run left behind can
//! always be found and removed, and nothing else is touched.
//!
//! Before a real backend creates anything it writes a [`RunRecord`] (run
//! id, backend, cluster name, the files it will write) to the registry
//! folder; a clean teardown deletes it. So a record that outlives its
//! process names exactly the clusters to delete. Containers the bench
//! creates itself carry [`RUN_LABEL`] and are found by it. `bench clean`
//! acts on those two sources only: a kind or Talos cluster the bench did
//! not record, or a container without the label, is never touched, whatever
//! its name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::docker::{DockerError, RunId};
use super::tool::{Tool, ToolError, Tools};
use drillbench_model::exit::Exit;
use drillbench_model::labels::RUN_LABEL;

/// Overrides the registry folder (tests, CI jobs that keep state apart).
pub const RUNS_DIR_ENV: &str = "DRILLBENCH_RUNS_DIR";

/// Which CLI created a recorded cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordedBackend {
    /// `kind create cluster`.
    Kind,
    /// `talosctl cluster create --provisioner docker`.
    Talos,
}

impl RecordedBackend {
    /// `kind` or `talos`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Kind => "kind",
            Self::Talos => "talos",
        }
    }
}

/// One run, written before anything is created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunRecord {
    /// The run id, also the value of [`RUN_LABEL`].
    pub id: RunId,
    /// The backend that creates the cluster.
    pub backend: RecordedBackend,
    /// The run-specific cluster name (`drillbench-<id>`).
    pub cluster: String,
    /// The folder the run writes its files to.
    pub dir: PathBuf,
    /// The kubeconfig the run writes (never the user's own).
    pub kubeconfig: PathBuf,
    /// The talosconfig the run writes (Talos only).
    pub talosconfig: Option<PathBuf>,
    /// talosctl's cluster state folder (Talos only).
    pub talos_state: Option<PathBuf>,
    /// The process that runs it; a live process's run is left alone.
    pub pid: u32,
    /// When it started, seconds since the Unix epoch.
    pub started: u64,
}

/// Why the registry could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// Neither the override nor a state or home folder is set.
    #[error("cannot place the run registry: set {RUNS_DIR_ENV}, XDG_STATE_HOME or HOME")]
    NoFolder,
    /// A file could not be read or written.
    #[error("cannot {action} {path}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A record could not be encoded.
    #[error("cannot encode the run record")]
    Encode(#[source] serde_json::Error),
}

/// The folder of run records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    dir: PathBuf,
}

impl Registry {
    /// A registry in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self { dir: dir.into() }
    }

    /// `$DRILLBENCH_RUNS_DIR`, else `$XDG_STATE_HOME/drillbench/runs`, else
    /// `$HOME/.local/state/drillbench/runs`.
    pub fn from_env() -> Result<Self, RegistryError> {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        if let Some(dir) = var(RUNS_DIR_ENV) {
            return Ok(Self::new(dir));
        }
        if let Some(state) = var("XDG_STATE_HOME") {
            return Ok(Self::new(Path::new(&state).join("drillbench/runs")));
        }
        let home = var("HOME").ok_or(RegistryError::NoFolder)?;
        Ok(Self::new(
            Path::new(&home).join(".local/state/drillbench/runs"),
        ))
    }

    /// The registry folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The folder a run's files go to unless the caller picks another.
    pub fn run_dir(&self, id: &RunId) -> PathBuf {
        self.dir.join(id.as_str())
    }

    fn record_path(&self, id: &RunId) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// Writes the record (through a temporary file, so a crash mid-write
    /// never leaves half a record).
    pub fn record(&self, record: &RunRecord) -> Result<PathBuf, RegistryError> {
        let io = |action, path: &Path| {
            let path = path.to_owned();
            move |source| RegistryError::Io {
                action,
                path,
                source,
            }
        };
        std::fs::create_dir_all(&self.dir).map_err(io("create", &self.dir))?;
        let path = self.record_path(&record.id);
        let temporary = self.dir.join(format!(".{}.json.tmp", record.id));
        let text = serde_json::to_string_pretty(record).map_err(RegistryError::Encode)?;
        std::fs::write(&temporary, text + "\n").map_err(io("write", &temporary))?;
        std::fs::rename(&temporary, &path).map_err(io("write", &path))?;
        Ok(path)
    }

    /// Deletes a run's record, and its files when they live in the
    /// registry's own folder for it (the bench made them; elsewhere the
    /// caller chose the folder and keeps it).
    pub fn forget(&self, record: &RunRecord) -> Result<(), RegistryError> {
        let io = |action, path: PathBuf| {
            move |source| RegistryError::Io {
                action,
                path,
                source,
            }
        };
        let own_dir = self.run_dir(&record.id);
        if record.dir == own_dir {
            match std::fs::remove_dir_all(&own_dir) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("remove", own_dir)(e));
                }
                _ => {}
            }
        }
        let path = self.record_path(&record.id);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("remove", path)(e)),
            _ => Ok(()),
        }
    }

    /// Every record, by run id, and the files that are not readable records
    /// (reported, never deleted: they may be someone's).
    pub fn list(&self) -> Result<(Vec<RunRecord>, Vec<String>), RegistryError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Vec::new(), Vec::new()));
            }
            Err(source) => {
                return Err(RegistryError::Io {
                    action: "read",
                    path: self.dir.clone(),
                    source,
                });
            }
        };
        let mut records = Vec::new();
        let mut unreadable = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".json") || name.starts_with('.') {
                continue;
            }
            let parsed = std::fs::read_to_string(&path)
                .map_err(|e| e.to_string())
                .and_then(|text| {
                    serde_json::from_str::<RunRecord>(&text).map_err(|e| e.to_string())
                });
            match parsed {
                Ok(record) => records.push(record),
                Err(why) => unreadable.push(format!("{}: {why}", path.display())),
            }
        }
        records.sort_by(|a, b| a.id.cmp(&b.id));
        unreadable.sort();
        Ok((records, unreadable))
    }
}

/// Whether the process that wrote a record still runs; its run is then not
/// a leftover. Where `/proc` is missing the answer is "no", and the record's
/// age is what the operator has to go by.
pub fn process_alive(pid: u32) -> bool {
    Path::new("/proc/self").exists() && Path::new(&format!("/proc/{pid}")).exists()
}

/// One thing `bench clean` removes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanAction {
    /// `kind delete cluster --name CLUSTER --kubeconfig FILE`.
    DeleteKindCluster {
        /// The run.
        run: RunId,
        /// The cluster name it recorded.
        cluster: String,
        /// The kubeconfig it recorded, so kind edits that file, not the user's.
        kubeconfig: PathBuf,
    },
    /// `talosctl cluster destroy --name CLUSTER --state DIR`.
    DestroyTalosCluster {
        /// The run.
        run: RunId,
        /// The cluster name it recorded.
        cluster: String,
        /// talosctl's state folder it recorded.
        state: Option<PathBuf>,
        /// The talosconfig it recorded, so talosctl edits that file, not
        /// the user's.
        talosconfig: Option<PathBuf>,
    },
    /// Every container, network and volume labelled with the run.
    RemoveLabelled {
        /// The run.
        run: RunId,
        /// The labelled containers found, by name.
        containers: Vec<String>,
    },
    /// The run's record (and its folder, when it is the registry's).
    Forget(RunRecord),
}

impl CleanAction {
    /// One line for `bench clean` and `--dry-run`.
    pub fn describe(&self) -> String {
        match self {
            Self::DeleteKindCluster { run, cluster, .. } => {
                format!("delete kind cluster {cluster} (run {run})")
            }
            Self::DestroyTalosCluster { run, cluster, .. } => {
                format!("destroy talos cluster {cluster} (run {run})")
            }
            Self::RemoveLabelled { run, containers } => format!(
                "remove what is labelled {RUN_LABEL}={run} ({})",
                if containers.is_empty() {
                    "no containers".to_owned()
                } else {
                    format!("containers {}", containers.join(", "))
                }
            ),
            Self::Forget(record) => format!("forget run {}", record.id),
        }
    }

    fn run(&self) -> &RunId {
        match self {
            Self::DeleteKindCluster { run, .. }
            | Self::DestroyTalosCluster { run, .. }
            | Self::RemoveLabelled { run, .. } => run,
            Self::Forget(record) => &record.id,
        }
    }
}

/// What `bench clean` would do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanPlan {
    /// The actions, grouped by run, in order.
    pub actions: Vec<CleanAction>,
    /// Runs left alone, with why.
    pub skipped: Vec<String>,
    /// Registry files that are not readable records.
    pub unreadable: Vec<String>,
}

/// Why `bench clean` could not finish.
#[derive(Debug, thiserror::Error)]
pub enum CleanError {
    /// The registry could not be read.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A CLI is missing or failed.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// Docker is missing or failed.
    #[error(transparent)]
    Docker(#[from] DockerError),
}

impl CleanError {
    /// Missing tools and failing calls are the machine's problem (3).
    pub fn exit(&self) -> Exit {
        match self {
            Self::Docker(e) => e.exit(),
            _ => Exit::Infrastructure,
        }
    }
}

/// The installation hints, shared with the drivers.
pub const KIND_HINT: &str =
    "install kind v0.27.0 (https://kind.sigs.k8s.io/docs/user/quick-start/#installation)";
/// What to install for Talos in Docker.
pub const TALOSCTL_HINT: &str =
    "install talosctl v1.11.5 (https://www.talos.dev/v1.11/talos-guides/install/talosctl/)";
/// What to install for raw docker calls.
pub const DOCKER_HINT: &str =
    "install Docker (Debian: `apt-get install docker.io`) and make sure `docker info` works";

/// Finds what crashed runs left: recorded clusters that still exist, and
/// labelled containers, of every run whose process is gone.
pub fn plan(registry: &Registry, tools: &Tools) -> Result<CleanPlan, CleanError> {
    let (records, unreadable) = registry.list()?;
    let mut plan = CleanPlan {
        unreadable,
        ..CleanPlan::default()
    };
    let mut live: Vec<RunId> = Vec::new();
    let mut dead: Vec<RunRecord> = Vec::new();
    for record in records {
        if process_alive(record.pid) {
            plan.skipped.push(format!(
                "run {}: its process {} still runs",
                record.id, record.pid
            ));
            live.push(record.id.clone());
        } else {
            dead.push(record);
        }
    }

    let kind = Tool::new(&tools.kind, KIND_HINT, tools.timeout);
    let docker_cli = Tool::new(&tools.docker, DOCKER_HINT, tools.timeout);
    let kind_clusters: Vec<String> = if dead.iter().any(|r| r.backend == RecordedBackend::Kind) {
        kind.run(["get", "clusters"])?
            .lines()
            .map(|l| l.trim().to_owned())
            .collect()
    } else {
        Vec::new()
    };

    let docker = tools.docker();
    docker.ping()?;
    // Labelled containers grouped by run; a container whose label is not a
    // valid run id is not one of ours.
    let mut labelled: BTreeMap<RunId, Vec<String>> = BTreeMap::new();
    for container in docker.list_all_runs()? {
        let spec = match docker.inspect(&container.id) {
            Ok(spec) => spec,
            // Gone between the listing and now: nothing to clean.
            Err(DockerError::NoSuchContainer(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        if let Some(run) = spec.run().and_then(|r| RunId::new(r).ok()) {
            labelled.entry(run).or_default().push(container.name);
        }
    }

    for record in dead {
        match record.backend {
            RecordedBackend::Kind => {
                if kind_clusters.contains(&record.cluster) {
                    plan.actions.push(CleanAction::DeleteKindCluster {
                        run: record.id.clone(),
                        cluster: record.cluster.clone(),
                        kubeconfig: record.kubeconfig.clone(),
                    });
                }
            }
            RecordedBackend::Talos => {
                let filter = format!("label=talos.cluster.name={}", record.cluster);
                let containers = docker_cli.run([
                    "ps",
                    "--all",
                    "--filter",
                    "label=talos.owned=true",
                    "--filter",
                    filter.as_str(),
                    "--format",
                    "{{.Names}}",
                ])?;
                let state_exists = record
                    .talos_state
                    .as_ref()
                    .is_some_and(|s| s.join(&record.cluster).exists());
                if !containers.trim().is_empty() || state_exists {
                    plan.actions.push(CleanAction::DestroyTalosCluster {
                        run: record.id.clone(),
                        cluster: record.cluster.clone(),
                        state: record.talos_state.clone(),
                        talosconfig: record.talosconfig.clone(),
                    });
                }
            }
        }
        let containers = labelled.remove(&record.id).unwrap_or_default();
        plan.actions.push(CleanAction::RemoveLabelled {
            run: record.id.clone(),
            containers,
        });
        plan.actions.push(CleanAction::Forget(record));
    }
    // Labelled leftovers of runs without a record (its record was removed,
    // or a test made them): the label alone says they are the bench's.
    // Volumes and networks outlive their containers (a recreated Talos
    // node's state volumes, when its container went first).
    for object in ["volume", "network"] {
        let label = format!("{{{{.Label \"{RUN_LABEL}\"}}}}");
        let filter = format!("label={RUN_LABEL}");
        let runs = docker_cli.run([
            object,
            "ls",
            "--filter",
            filter.as_str(),
            "--format",
            label.as_str(),
        ])?;
        for run in runs.lines().filter_map(|r| RunId::new(r.trim()).ok()) {
            let recorded = plan.actions.iter().any(|a| a.run() == &run);
            if !recorded {
                labelled.entry(run).or_default();
            }
        }
    }
    for (run, containers) in labelled {
        if live.contains(&run) {
            continue;
        }
        plan.actions
            .push(CleanAction::RemoveLabelled { run, containers });
    }
    Ok(plan)
}

/// What [`execute`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanOutcome {
    /// Actions done, as [`CleanAction::describe`] lines.
    pub done: Vec<String>,
    /// Actions that failed, with why; the run's later actions are skipped
    /// so its record stays for the next try.
    pub failed: Vec<String>,
}

/// Carries out a plan, run by run; a failing run keeps its record.
pub fn execute(plan: &CleanPlan, registry: &Registry, tools: &Tools) -> CleanOutcome {
    let kind = Tool::new(&tools.kind, KIND_HINT, tools.timeout);
    let talosctl = Tool::new(&tools.talosctl, TALOSCTL_HINT, tools.timeout);
    let docker = tools.docker();
    let mut outcome = CleanOutcome::default();
    let mut failed_runs: Vec<RunId> = Vec::new();
    for action in &plan.actions {
        if failed_runs.contains(action.run()) {
            continue;
        }
        let result: Result<(), String> = match action {
            CleanAction::DeleteKindCluster {
                cluster,
                kubeconfig,
                ..
            } => {
                let kubeconfig = kubeconfig.display().to_string();
                kind.run([
                    "delete",
                    "cluster",
                    "--name",
                    cluster.as_str(),
                    "--kubeconfig",
                    kubeconfig.as_str(),
                ])
                .map(drop)
                .map_err(|e| e.to_string())
            }
            CleanAction::DestroyTalosCluster {
                cluster,
                state,
                talosconfig,
                ..
            } => {
                let mut args = vec![
                    "cluster".to_owned(),
                    "destroy".to_owned(),
                    "--name".to_owned(),
                    cluster.clone(),
                    "--provisioner".to_owned(),
                    "docker".to_owned(),
                ];
                if let Some(state) = state {
                    args.extend(["--state".to_owned(), state.display().to_string()]);
                }
                if let Some(talosconfig) = talosconfig.as_ref().filter(|t| t.exists()) {
                    args.extend([
                        "--talosconfig".to_owned(),
                        talosconfig.display().to_string(),
                    ]);
                }
                talosctl.run(args).map(drop).map_err(|e| e.to_string())
            }
            CleanAction::RemoveLabelled { run, .. } => {
                docker.clean(run).map(drop).map_err(|e| e.to_string())
            }
            CleanAction::Forget(record) => registry.forget(record).map_err(|e| e.to_string()),
        };
        match result {
            Ok(()) => outcome.done.push(action.describe()),
            Err(why) => {
                outcome.failed.push(format!("{}: {why}", action.describe()));
                failed_runs.push(action.run().clone());
            }
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(dir: &Path, id: &str, pid: u32) -> RunRecord {
        let id = RunId::new(id).unwrap();
        RunRecord {
            cluster: format!("drillbench-{id}"),
            dir: dir.join(id.as_str()),
            kubeconfig: dir.join(id.as_str()).join("kubeconfig"),
            talosconfig: None,
            talos_state: None,
            backend: RecordedBackend::Kind,
            id,
            pid,
            started: 1,
        }
    }

    #[test]
    fn records_round_trip_and_forgetting_removes_the_runs_own_folder() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::new(dir.path().join("runs"));
        let a = record(registry.dir(), "a1", 1);
        let b = record(registry.dir(), "b2", 2);
        registry.record(&b).unwrap();
        registry.record(&a).unwrap();
        std::fs::create_dir_all(&a.dir).unwrap();
        std::fs::write(a.dir.join("kubeconfig"), "x").unwrap();
        std::fs::write(registry.dir().join("notes.json"), "{not a record").unwrap();

        let (records, unreadable) = registry.list().unwrap();
        assert_eq!(records, vec![a.clone(), b.clone()]);
        assert_eq!(unreadable.len(), 1, "{unreadable:?}");
        assert!(unreadable[0].contains("notes.json"), "{unreadable:?}");

        registry.forget(&a).unwrap();
        assert!(!a.dir.exists());
        assert_eq!(registry.list().unwrap().0, vec![b]);
        // The file that is not a record stays.
        assert!(registry.dir().join("notes.json").exists());
    }

    #[test]
    fn a_record_with_an_unknown_field_is_not_read_as_a_run() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::new(dir.path());
        let mut value = serde_json::to_value(record(dir.path(), "c3", 3)).unwrap();
        value["surprise"] = true.into();
        std::fs::write(dir.path().join("c3.json"), value.to_string()).unwrap();
        let (records, unreadable) = registry.list().unwrap();
        assert!(records.is_empty());
        assert_eq!(unreadable.len(), 1);
    }

    #[test]
    fn a_missing_registry_is_empty() {
        let registry = Registry::new("/nonexistent/drillbench/runs");
        assert_eq!(registry.list().unwrap(), (Vec::new(), Vec::new()));
    }

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        if !Path::new("/proc/self").exists() {
            return;
        }
        assert!(process_alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!process_alive(pid));
    }
}
