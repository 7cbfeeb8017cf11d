//! The Velero CLI, through `duct` like kind and talosctl (see
//! [`super::tool`]): installing Velero against an S3 target, backing one
//! namespace up, restoring it, and reading a backup's or restore's phase.
//!
//! Every command names the kubeconfig and context explicitly, so the
//! operator's own `~/.kube/config` is never read or changed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use super::s3::S3Target;
use super::tool::{Tool, ToolError, parse_version};
use drillbench_model::labels::{BENCH_SCHEDULE_LABEL, RUN_LABEL};

/// What to install when `velero` is missing.
pub const VELERO_HINT: &str = "install the velero CLI v1.16 (https://github.com/vmware-tanzu/velero/releases) and put it on PATH";
/// The Velero release the bench drives, as `velero version` prints it.
pub const VELERO_MINOR: (u32, u32) = (1, 16);
/// The aws plugin matching [`VELERO_MINOR`].
pub const AWS_PLUGIN: &str = "velero/velero-plugin-for-aws:v1.12.1";
/// How long an install, a backup or a restore may take.
pub const VELERO_TIMEOUT: Duration = Duration::from_secs(600);

/// Why a Velero step failed.
#[derive(Debug, thiserror::Error)]
pub enum VeleroError {
    /// The CLI failed, is missing or is another release.
    #[error(transparent)]
    Tool(#[from] ToolError),
    /// A backup or restore ended in another phase than `Completed`.
    #[error("velero {what} `{name}` ended {phase}, not Completed")]
    Phase {
        /// `backup` or `restore`.
        what: &'static str,
        /// Its name.
        name: String,
        /// The phase it ended in.
        phase: String,
    },
    /// The credentials file could not be written.
    #[error("cannot write Velero's credentials file {path}")]
    Credentials {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The Velero CLI aimed at one cluster.
#[derive(Debug, Clone)]
pub struct Velero {
    tool: Tool,
    kubeconfig: PathBuf,
    context: Option<String>,
}

impl Velero {
    /// `program` (a bare name is looked up on `PATH`) against the cluster
    /// of `kubeconfig` and `context`.
    pub fn new(program: impl Into<PathBuf>, kubeconfig: &Path, context: Option<&str>) -> Self {
        Velero {
            tool: Tool::new(program, VELERO_HINT, VELERO_TIMEOUT),
            kubeconfig: kubeconfig.to_path_buf(),
            context: context.map(str::to_owned),
        }
    }

    /// The cluster flags every command carries.
    fn cluster_args(&self) -> Vec<String> {
        let mut args = vec![
            "--kubeconfig".to_owned(),
            self.kubeconfig.display().to_string(),
        ];
        if let Some(context) = &self.context {
            args.push("--kubecontext".to_owned());
            args.push(context.clone());
        }
        args
    }

    fn run(&self, args: Vec<String>) -> Result<String, VeleroError> {
        let mut all = args;
        all.extend(self.cluster_args());
        Ok(self.tool.run(all)?)
    }

    /// Checks that the CLI runs and is the release the bench drives;
    /// returns what it printed.
    pub fn check_version(&self) -> Result<String, VeleroError> {
        let printed = self
            .tool
            .run(["version", "--client-only"])
            .map_err(VeleroError::Tool)?;
        match parse_version(&printed) {
            Some((major, minor, _)) if (major, minor) == VELERO_MINOR => {
                Ok(printed.trim().to_owned())
            }
            _ => Err(VeleroError::Tool(ToolError::UnsupportedVersion {
                program: self.tool.program(),
                found: printed.trim().to_owned(),
                supported: "v1.16.x",
                hint: VELERO_HINT,
            })),
        }
    }

    /// The arguments of `velero install` against `target`, reading the
    /// credentials from `secret_file`: the aws plugin, no volume
    /// snapshots (the drill's data lives in API objects), path-style
    /// addressing as MinIO needs. Labels Velero's pods with the run.
    pub fn install_args(target: &S3Target, secret_file: &Path, run_id: &str) -> Vec<String> {
        vec![
            "install".to_owned(),
            "--provider".to_owned(),
            "aws".to_owned(),
            "--plugins".to_owned(),
            AWS_PLUGIN.to_owned(),
            "--bucket".to_owned(),
            target.bucket.clone(),
            "--secret-file".to_owned(),
            secret_file.display().to_string(),
            "--use-volume-snapshots=false".to_owned(),
            "--backup-location-config".to_owned(),
            format!(
                "region={},s3ForcePathStyle=true,s3Url={}",
                target.region, target.url
            ),
            // `install` has no `--labels`; the Velero pods carry the run.
            "--pod-labels".to_owned(),
            format!("{RUN_LABEL}={run_id}"),
            "--wait".to_owned(),
        ]
    }

    /// Installs Velero against `target`; the credentials file is written
    /// into `dir` (the run's folder), never beside the operator's files.
    pub fn install(&self, target: &S3Target, dir: &Path, run_id: &str) -> Result<(), VeleroError> {
        let secret_file = dir.join("velero-credentials");
        std::fs::write(&secret_file, target.credentials_file()).map_err(|source| {
            VeleroError::Credentials {
                path: secret_file.clone(),
                source,
            }
        })?;
        self.run(Self::install_args(target, &secret_file, run_id))?;
        Ok(())
    }

    /// The arguments of a backup of one namespace, waited for.
    pub fn backup_args(name: &str, namespace: &str, schedule: &str, run_id: &str) -> Vec<String> {
        vec![
            "backup".to_owned(),
            "create".to_owned(),
            name.to_owned(),
            "--include-namespaces".to_owned(),
            namespace.to_owned(),
            "--labels".to_owned(),
            format!("{RUN_LABEL}={run_id},{BENCH_SCHEDULE_LABEL}={schedule}"),
            "--wait".to_owned(),
        ]
    }

    /// Backs `namespace` up as `name` and waits; fails unless `Completed`.
    pub fn backup(
        &self,
        name: &str,
        namespace: &str,
        schedule: &str,
        run_id: &str,
    ) -> Result<(), VeleroError> {
        self.run(Self::backup_args(name, namespace, schedule, run_id))?;
        self.require_completed("backup", name)
    }

    /// The arguments of a restore from a backup, waited for.
    pub fn restore_args(name: &str, backup: &str) -> Vec<String> {
        vec![
            "restore".to_owned(),
            "create".to_owned(),
            name.to_owned(),
            "--from-backup".to_owned(),
            backup.to_owned(),
            "--wait".to_owned(),
        ]
    }

    /// Restores from `backup` as `name` and waits; fails unless `Completed`.
    pub fn restore(&self, name: &str, backup: &str) -> Result<(), VeleroError> {
        self.run(Self::restore_args(name, backup))?;
        self.require_completed("restore", name)
    }

    /// `velero backup|restore get NAME -o json`: `--wait` returns when the
    /// operation ends, whether or not it succeeded, so the phase decides.
    fn require_completed(&self, what: &'static str, name: &str) -> Result<(), VeleroError> {
        let printed = self.run(vec![
            what.to_owned(),
            "get".to_owned(),
            name.to_owned(),
            "-o".to_owned(),
            "json".to_owned(),
        ])?;
        let phase = serde_json::from_str::<Value>(&printed)
            .ok()
            .and_then(|v| v.pointer("/status/phase")?.as_str().map(str::to_owned))
            .unwrap_or_else(|| "without a phase".to_owned());
        if phase == "Completed" {
            Ok(())
        } else {
            Err(VeleroError::Phase {
                what,
                name: name.to_owned(),
                phase,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_release_is_refused_with_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let fake = |version: &str| {
            let path = dir.path().join(format!("velero-{version}"));
            drillbench_model::test_support::write_script(
                &path,
                format!(
                    "#!/bin/sh\nprintf 'Client:\\n\\tVersion: {version}\\n\\tGit commit: abc\\n'\n"
                ),
            );
            Velero::new(path, Path::new("/dev/null"), None)
        };
        assert!(fake("v1.16.1").check_version().is_ok());
        let old = fake("v1.12.0").check_version().unwrap_err();
        assert!(old.to_string().contains("v1.16"), "{old}");
        let missing = Velero::new("/nonexistent/velero", Path::new("/dev/null"), None)
            .check_version()
            .unwrap_err();
        assert!(
            missing.to_string().contains("install the velero CLI"),
            "{missing}"
        );
    }
}
