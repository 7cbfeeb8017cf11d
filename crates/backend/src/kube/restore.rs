//! `restoreNamespace` on a real cluster, measured the way a restore drill
//! measures it: the bench writes sequenced markers into the namespace,
//! Velero backs the namespace up to an S3 target beside the cluster, the
//! namespace is deleted and restored, and the markers that came back say
//! what was lost.
//!
//! - **Markers**: ConfigMaps `drillbench-marker-000001`, ... with the
//!   sequence number and the drill time of the write, one every
//!   [`MARKER_EVERY`] from the fault's start ([`MARKERS_BEFORE`] before the
//!   backup starts, then for as long as it runs). A marker is acknowledged
//!   when the API server answered the create with success.
//! - **Capture point**: the drill time of the newest marker the restore
//!   brought back (the fault's start when none came back).
//! - **Data loss**: the markers acknowledged before the deletion that came
//!   after the capture point; the window ends at the newest of them. Both
//!   go to the observation as the simulator's full rebuild records them, so
//!   the `rpo:` assertion judges a real restore unchanged.
//!
//! Velero and its S3 target are set up at the first such fault of a run
//! (see [`crate::velero`], [`crate::s3`]); the MinIO
//! container lives as long as the backend and is removed with it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};

use super::{KubeBackend, KubeError};
use crate::BackendError;
use crate::s3::{Minio, MinioOptions, S3Error, S3Target, network_of};
use crate::velero::{Velero, VeleroError};
use drillbench_model::labels::{MARKER_LABEL, RUN_LABEL};
use drillbench_observe::{DataLoss, Time};
use drillbench_observe::{EventKind, ObjectRef};

/// How often the bench writes a marker.
pub const MARKER_EVERY: Time = 5_000;
/// Markers written before the backup starts, so it has some to capture.
pub const MARKERS_BEFORE: u64 = 3;
/// How long the deleted namespace may take to disappear.
const GONE_WITHIN: Time = 600_000;
/// The Velero executable; looked up on `PATH`.
const VELERO: &str = "velero";

/// Why a real restore could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    #[error(transparent)]
    Velero(#[from] VeleroError),
    /// The S3 target could not be had.
    #[error(transparent)]
    S3(#[from] S3Error),
    /// A Kubernetes request failed.
    #[error(transparent)]
    Kube(#[from] KubeError),
    #[error("namespace `{namespace}` was still there {seconds} s after its deletion")]
    NotGone {
        namespace: String,
        /// How long the bench waited.
        seconds: u64,
    },
    /// The drill was aborted (cluster lost, interrupted) meanwhile.
    #[error("the restore stopped: {0}")]
    Aborted(String),
    /// The Velero backup's thread died.
    #[error("the Velero backup's thread panicked")]
    Panicked,
    /// The run's scratch folder could not be made.
    #[error("cannot make the folder for Velero's credentials {path}")]
    Scratch {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl From<RestoreError> for BackendError {
    fn from(error: RestoreError) -> Self {
        BackendError::infrastructure(error)
    }
}

/// What a backend keeps between restores: Velero installed, the MinIO it
/// backs up to (removed when this is dropped).
#[derive(Debug, Default)]
pub struct RestoreState {
    installed: bool,
    minio: Option<Minio>,
}

impl RestoreState {
    /// Removes the S3 container, if one was started (before the cluster
    /// goes: a Talos cluster's network cannot be removed while it is on it).
    pub fn teardown(&mut self) {
        self.minio = None;
    }
}

pub fn marker_name(seq: u64) -> String {
    format!("drillbench-marker-{seq:06}")
}

/// A marker: its sequence number and the drill time it was written at.
pub fn marker(namespace: &str, schedule: &str, run_id: &str, seq: u64, at: Time) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(marker_name(seq)),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([
                (RUN_LABEL.to_owned(), run_id.to_owned()),
                (MARKER_LABEL.to_owned(), schedule.to_owned()),
            ])),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            ("seq".to_owned(), seq.to_string()),
            ("drillTimeMs".to_owned(), at.to_string()),
        ])),
        ..ConfigMap::default()
    }
}

/// A marker's (seq, drill time), if it is one.
fn read_marker(map: &ConfigMap) -> Option<(u64, Time)> {
    let data = map.data.as_ref()?;
    Some((
        data.get("seq")?.parse().ok()?,
        data.get("drillTimeMs")?.parse().ok()?,
    ))
}

/// What a restore lost, from the markers acknowledged before the loss and
/// those the restore brought back: the restore as the observation records
/// it (lost at, capture point, schedule) and the loss of the marker
/// writer. The capture point is the newest restored marker's time, or
/// `started` (the writer's start) when none came back.
pub fn measure(
    acked: &[(u64, Time)],
    restored: &[(u64, Time)],
    started: Time,
    lost_at: Time,
    namespace: &str,
    schedule: &str,
) -> ((Time, i64, String), DataLoss) {
    let newest_restored = restored.iter().max_by_key(|(seq, _)| *seq);
    let (captured_seq, captured) = newest_restored.map_or((0, started), |&(seq, at)| (seq, at));
    let lost: Vec<&(u64, Time)> = acked
        .iter()
        .filter(|(seq, _)| *seq > captured_seq)
        .collect();
    let last_lost_ack = lost.iter().map(|(_, at)| *at as i64).max();
    (
        (lost_at, captured as i64, schedule.to_owned()),
        DataLoss {
            lost_at,
            schedule: schedule.to_owned(),
            writer: format!("{namespace}/ConfigMap/drillbench-marker"),
            captured: captured as i64,
            last_lost_ack,
            lost_writes: lost.len() as u64,
        },
    )
}

impl KubeBackend {
    /// Backs `namespace` up with Velero under `schedule` while writing
    /// markers, deletes it, restores it and records what the markers say
    /// was lost.
    pub(super) fn restore_namespace_with_velero(
        &mut self,
        namespace: &str,
        schedule: &str,
    ) -> Result<(), RestoreError> {
        let (kubeconfig, context) = self.guard.machines().kubeconfig();
        let velero = Velero::new(VELERO, &kubeconfig, context.as_deref());
        self.set_up_velero(&velero)?;
        let run_id = self.options.run_id.clone();
        let maps: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);

        let started = self.clock.now();
        let mut acked = Vec::new();
        let mut seq = 0;
        for _ in 0..MARKERS_BEFORE {
            seq += 1;
            self.write_marker(&maps, namespace, schedule, seq, &mut acked);
            self.pass(MARKER_EVERY);
        }

        let backup = format!("{}-{}", schedule, backup_suffix(&run_id, seq));
        self.event(
            EventKind::BackupStarted,
            backup_ref(&backup),
            None,
            format!("velero backup of namespace {namespace} started"),
        );
        // The backup runs beside the writer: markers acknowledged while it
        // runs are the ones a restore can lose.
        let job = {
            let (velero, backup, namespace, schedule, run_id) = (
                velero.clone(),
                backup.clone(),
                namespace.to_owned(),
                schedule.to_owned(),
                run_id.clone(),
            );
            std::thread::spawn(move || velero.backup(&backup, &namespace, &schedule, &run_id))
        };
        while !job.is_finished() {
            if let Some(why) = self.observer.obs.aborted.clone() {
                // Time no longer passes: writing on would spin. The backup
                // ends within Velero's bound; its outcome no longer matters.
                let _ = job.join();
                return Err(RestoreError::Aborted(why));
            }
            seq += 1;
            self.write_marker(&maps, namespace, schedule, seq, &mut acked);
            self.pass(MARKER_EVERY);
        }
        job.join().map_err(|_| RestoreError::Panicked)??;
        self.event(
            EventKind::BackupFinished,
            backup_ref(&backup),
            None,
            format!("velero backup {backup} of namespace {namespace}: Completed"),
        );

        let lost_at = self.clock.now();
        self.delete_namespace(namespace)?;
        let restore = format!("{backup}-restore");
        velero.restore(&restore, &backup)?;
        let restored = self.read_markers(&maps)?;

        let (record, loss) = measure(&acked, &restored, started, lost_at, namespace, schedule);
        let message = format!(
            "namespace {namespace} deleted and restored from {backup}: {} of {} acknowledged marker(s) came back, the newest written at +{} ms; {} lost",
            restored.len(),
            acked.len(),
            loss.captured,
            loss.lost_writes,
        );
        self.observer.obs.restores.push(record);
        self.observer.obs.data_loss.push(loss);
        self.event(
            EventKind::BackupFinished,
            backup_ref(&restore),
            None,
            message,
        );
        Ok(())
    }

    /// Installs Velero once per run, against `DRILLBENCH_S3_URL` or a MinIO
    /// the bench starts on the cluster's Docker network.
    fn set_up_velero(&mut self, velero: &Velero) -> Result<(), RestoreError> {
        if self.restore.installed {
            return Ok(());
        }
        velero.check_version()?;
        let run_id = self.options.run_id.clone();
        let target: S3Target = match S3Target::from_env() {
            Some(target) => target,
            None => {
                let network = network_of(self.options.name, &run_id).ok_or(S3Error::NoTarget {
                    backend: self.options.name,
                })?;
                let minio = Minio::start(&MinioOptions::new(&network, &run_id))?;
                let target = minio.target().clone();
                self.restore.minio = Some(minio);
                target
            }
        };
        let scratch = std::env::temp_dir().join(format!("drillbench-{run_id}-velero"));
        std::fs::create_dir_all(&scratch).map_err(|source| RestoreError::Scratch {
            path: scratch.clone(),
            source,
        })?;
        let installed = velero.install(&target, &scratch, &run_id);
        // The credentials are in the cluster's secret now; no copy stays.
        let _ = std::fs::remove_dir_all(&scratch);
        installed?;
        self.restore.installed = true;
        Ok(())
    }

    /// Writes one marker; acknowledged when the API server said so.
    fn write_marker(
        &mut self,
        maps: &Api<ConfigMap>,
        namespace: &str,
        schedule: &str,
        seq: u64,
        acked: &mut Vec<(u64, Time)>,
    ) {
        let at = self.clock.now();
        let object = marker(namespace, schedule, &self.options.run_id, seq, at);
        // A refused write is simply not acknowledged: a writer's client
        // would retry, and the loss counts acknowledged writes only.
        if self
            .runtime
            .block_on(maps.create(&PostParams::default(), &object))
            .is_ok()
        {
            acked.push((seq, at));
        }
    }

    /// Lets `ms` of drill time pass.
    fn pass(&mut self, ms: Time) {
        let until = self.clock.now() + ms;
        self.advance(until);
    }

    /// Deletes the namespace and waits until it is gone.
    fn delete_namespace(&mut self, namespace: &str) -> Result<(), RestoreError> {
        let api: Api<Namespace> = Api::all(self.client.clone());
        let api_error = |what: String| move |source| KubeError::Api { what, source };
        self.runtime
            .block_on(api.delete(namespace, &DeleteParams::default()))
            .map_err(api_error(format!("delete namespace {namespace}")))?;
        let deadline = self.clock.now() + GONE_WITHIN;
        loop {
            let present = self
                .runtime
                .block_on(api.get_opt(namespace))
                .map_err(api_error(format!("read namespace {namespace}")))?;
            if present.is_none() {
                return Ok(());
            }
            if let Some(why) = self.observer.obs.aborted.clone() {
                return Err(RestoreError::Aborted(why));
            }
            if self.clock.now() >= deadline {
                return Err(RestoreError::NotGone {
                    namespace: namespace.to_owned(),
                    seconds: GONE_WITHIN / 1000,
                });
            }
            self.pass(super::POLL.as_millis() as Time);
        }
    }

    /// The markers in the namespace now, as (seq, drill time).
    fn read_markers(&mut self, maps: &Api<ConfigMap>) -> Result<Vec<(u64, Time)>, RestoreError> {
        let list = self
            .runtime
            .block_on(maps.list(&ListParams::default().labels(MARKER_LABEL)))
            .map_err(|source| KubeError::Api {
                what: "list the restored markers".to_owned(),
                source,
            })?;
        Ok(list.items.iter().filter_map(read_marker).collect())
    }
}

/// A backup name unique to the run and the moment it is taken.
fn backup_suffix(run_id: &str, seq: u64) -> String {
    // Velero names are DNS labels: the run id is already one, trimmed so
    // the whole name stays under 63 characters.
    let tail: String = run_id
        .chars()
        .rev()
        .take(30)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    format!("{}-{seq}", tail.trim_start_matches('-'))
}

fn backup_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "Backup".to_owned(),
        namespace: "velero".to_owned(),
        name: name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_runs_from_the_newest_restored_marker_to_the_newest_lost_one() {
        let acked = [(1, 0), (2, 5_000), (3, 10_000), (4, 15_000), (5, 20_000)];
        let restored = [(1, 0), (2, 5_000), (3, 10_000)];
        let ((lost_at, captured, schedule), loss) =
            measure(&acked, &restored, 0, 21_000, "data", "daily");
        assert_eq!(
            (lost_at, captured, schedule.as_str()),
            (21_000, 10_000, "daily")
        );
        assert_eq!(loss.lost_writes, 2);
        assert_eq!(loss.last_lost_ack, Some(20_000));
        assert_eq!(loss.window(), 10_000);
        assert_eq!(loss.writer, "data/ConfigMap/drillbench-marker");
    }

    #[test]
    fn a_restore_that_brought_everything_back_lost_nothing() {
        let acked = [(1, 0), (2, 5_000)];
        let (_, loss) = measure(&acked, &acked, 0, 6_000, "data", "daily");
        assert_eq!((loss.lost_writes, loss.window()), (0, 0));
    }

    #[test]
    fn a_restore_that_brought_nothing_back_lost_everything_since_the_start() {
        let acked = [(1, 1_000), (2, 6_000)];
        let (_, loss) = measure(&acked, &[], 1_000, 7_000, "data", "daily");
        assert_eq!(loss.captured, 1_000);
        assert_eq!((loss.lost_writes, loss.window()), (2, 5_000));
    }

    #[test]
    fn markers_carry_their_sequence_time_and_the_run() {
        let map = marker("data", "daily", "run-1", 7, 35_000);
        assert_eq!(
            map.metadata.name.as_deref(),
            Some("drillbench-marker-000007")
        );
        assert_eq!(read_marker(&map), Some((7, 35_000)));
        let labels = map.metadata.labels.unwrap();
        assert_eq!(labels[RUN_LABEL], "run-1");
        assert_eq!(labels[MARKER_LABEL], "daily");
    }
}
