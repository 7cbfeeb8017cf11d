//! The S3 target a real backend's Velero backs up to: MinIO, started by the
//! bench beside the cluster with `testcontainers`, on the cluster's Docker
//! network so Velero inside the cluster reaches it; or an S3 endpoint the
//! user names (`DRILLBENCH_S3_URL`), for clusters whose network the bench
//! does not know.
//!
//! The MinIO container carries the run label, so `bench clean` finds it if
//! the bench dies before its teardown; the teardown is dropping the
//! [`Minio`], which removes the container.

use std::collections::BTreeMap;
use std::net::IpAddr;

use testcontainers::core::WaitFor;
use testcontainers::runners::SyncRunner;
use testcontainers::{Container, GenericImage, ImageExt};

use drillbench_model::labels::{ROLE_LABEL, RUN_LABEL};

/// The MinIO image started unless `DRILLBENCH_S3_IMAGE` names another.
pub const MINIO_IMAGE: &str = "minio/minio:RELEASE.2025-04-22T22-12-26Z";
/// What the MinIO container prints once it serves with its bucket made
/// (the bench's own line, printed by [`minio_script`]).
pub const MINIO_READY: &str = "drillbench-s3-ready";
/// The bucket Velero writes to.
pub const BUCKET: &str = "velero";
/// MinIO's S3 port.
pub const MINIO_PORT: u16 = 9000;

/// Why the S3 target could not be had.
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// The container did not start (no engine, no image, a bad network).
    #[error(
        "cannot start the S3 target {image} on Docker network `{network}` (the image must be present or pullable; `DRILLBENCH_S3_IMAGE` names another)"
    )]
    Start {
        /// The image.
        image: String,
        /// The network.
        network: String,
        /// The cause.
        #[source]
        source: Box<testcontainers::TestcontainersError>,
    },
    /// The container runs but has no address on the network.
    #[error("the S3 target has no address on Docker network `{network}`")]
    Address {
        /// The network.
        network: String,
        /// The cause.
        #[source]
        source: Box<testcontainers::TestcontainersError>,
    },
    /// Neither a network to start MinIO on nor an S3 URL.
    #[error(
        "the {backend} backend has no Docker network the bench knows to start MinIO on; set DRILLBENCH_S3_URL (and DRILLBENCH_S3_ACCESS_KEY, DRILLBENCH_S3_SECRET_KEY) to an S3 endpoint the cluster reaches"
    )]
    NoTarget {
        /// The backend.
        backend: &'static str,
    },
}

/// Where Velero stores its backups, as Velero inside the cluster sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Target {
    /// The endpoint URL, reachable from the cluster's pods.
    pub url: String,
    /// The bucket.
    pub bucket: String,
    /// The region (MinIO ignores it; the aws plugin wants one).
    pub region: String,
    /// The access key.
    pub access_key: String,
    /// The secret key.
    pub secret_key: String,
}

impl S3Target {
    /// The credentials file `velero install --secret-file` reads (the aws
    /// plugin's format).
    pub fn credentials_file(&self) -> String {
        format!(
            "[default]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            self.access_key, self.secret_key
        )
    }

    /// The target the environment names, if `DRILLBENCH_S3_URL` is set.
    pub fn from_env() -> Option<S3Target> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        let url = var("DRILLBENCH_S3_URL")?;
        Some(S3Target {
            url,
            bucket: var("DRILLBENCH_S3_BUCKET").unwrap_or_else(|| BUCKET.to_owned()),
            region: var("DRILLBENCH_S3_REGION").unwrap_or_else(|| "minio".to_owned()),
            access_key: var("DRILLBENCH_S3_ACCESS_KEY").unwrap_or_default(),
            secret_key: var("DRILLBENCH_S3_SECRET_KEY").unwrap_or_default(),
        })
    }
}

/// How to start MinIO.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinioOptions {
    /// `name:tag`.
    pub image: String,
    /// The Docker network the cluster's nodes are on (`kind` for kind).
    pub network: String,
    /// The run id: the container's run label and part of its name.
    pub run_id: String,
    /// A line the container prints once it serves; `None`: running is
    /// enough (an image that is not MinIO, in tests).
    pub ready_log: Option<String>,
    /// The entrypoint replacing the image's, if any.
    pub entrypoint: Option<String>,
    /// The command (the entrypoint's arguments).
    pub command: Vec<String>,
}

impl MinioOptions {
    /// MinIO on `network` for run `run_id`; `DRILLBENCH_S3_IMAGE` overrides
    /// the image.
    pub fn new(network: &str, run_id: &str) -> MinioOptions {
        let image = std::env::var("DRILLBENCH_S3_IMAGE")
            .ok()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| MINIO_IMAGE.to_owned());
        MinioOptions {
            image,
            network: network.to_owned(),
            run_id: run_id.to_owned(),
            ready_log: Some(MINIO_READY.to_owned()),
            entrypoint: Some("sh".to_owned()),
            command: vec!["-c".to_owned(), minio_script()],
        }
    }

    /// The container's name: the run's, so a leftover says whose it was.
    pub fn container_name(&self) -> String {
        format!("drillbench-{}-s3", self.run_id)
    }
}

/// A running MinIO; dropping it removes the container.
pub struct Minio {
    container: Container<GenericImage>,
    target: S3Target,
}

impl std::fmt::Debug for Minio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Minio")
            .field("container", &self.container.id())
            .field("target", &self.target)
            .finish()
    }
}

impl Minio {
    /// Starts MinIO with its bucket, labelled with the run, on the network.
    /// Must not be called from inside a tokio runtime (the blocking runner
    /// has one of its own).
    pub fn start(options: &MinioOptions) -> Result<Minio, S3Error> {
        let (name, tag) = match options.image.rsplit_once(':') {
            Some((name, tag)) if !tag.contains('/') => (name, tag),
            _ => (options.image.as_str(), "latest"),
        };
        let mut image = GenericImage::new(name, tag);
        if let Some(entrypoint) = &options.entrypoint {
            image = image.with_entrypoint(entrypoint);
        }
        if let Some(line) = &options.ready_log {
            image = image.with_wait_for(WaitFor::message_on_stdout(line.as_str()));
        }
        // The credentials only need to agree between the container and
        // Velero's secret, both made here; they stay within MinIO's
        // bounds (an access key of 3 to 20 characters, a secret of 8 to 40)
        // whatever the run id's length.
        let access_key = "drillbench".to_owned();
        let secret_key = {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            (options.run_id.as_str(), std::process::id()).hash(&mut hasher);
            format!("drillbench-{:016x}", hasher.finish())
        };
        let labels = BTreeMap::from([
            (RUN_LABEL.to_owned(), options.run_id.clone()),
            (ROLE_LABEL.to_owned(), "s3".to_owned()),
        ]);
        let request = image
            .with_cmd(options.command.clone())
            .with_container_name(options.container_name())
            .with_network(options.network.clone())
            .with_labels(labels)
            .with_env_var("MINIO_ROOT_USER", access_key.clone())
            .with_env_var("MINIO_ROOT_PASSWORD", secret_key.clone());
        let container = request.start().map_err(|source| S3Error::Start {
            image: options.image.clone(),
            network: options.network.clone(),
            source: Box::new(source),
        })?;
        let ip: IpAddr = container
            .get_bridge_ip_address()
            .map_err(|source| S3Error::Address {
                network: options.network.clone(),
                source: Box::new(source),
            })?;
        // By address, not by name: a pod's DNS does not always resolve
        // the containers of the node's Docker network.
        let target = S3Target {
            url: format!("http://{}", url_host(ip, MINIO_PORT)),
            bucket: BUCKET.to_owned(),
            region: "minio".to_owned(),
            access_key,
            secret_key,
        };
        Ok(Minio { container, target })
    }

    /// Where Velero finds it.
    pub fn target(&self) -> &S3Target {
        &self.target
    }

    /// The container's id.
    pub fn id(&self) -> &str {
        self.container.id()
    }
}

/// The MinIO container's start: the bucket as a directory before the
/// server starts (a single-drive MinIO serves top-level directories as
/// buckets), then, where the image has `mc`, the bucket made through the
/// API as well, which is the documented way; the ready line only after
/// that, so Velero never sees the target without its bucket.
pub fn minio_script() -> String {
    format!(
        "mkdir -p /data/{BUCKET}
minio server /data --address :{MINIO_PORT} &
server=$!
if command -v mc >/dev/null 2>&1; then
  until mc alias set drillbench http://127.0.0.1:{MINIO_PORT} \"$MINIO_ROOT_USER\" \"$MINIO_ROOT_PASSWORD\" >/dev/null 2>&1; do sleep 1; done
  mc mb --ignore-existing drillbench/{BUCKET}
else
  # Without a client there is nothing to ask; MinIO serves within seconds.
  sleep 5
fi
echo {MINIO_READY}
wait $server
"
    )
}

fn url_host(ip: IpAddr, port: u16) -> String {
    match ip {
        IpAddr::V4(v4) => format!("{v4}:{port}"),
        IpAddr::V6(v6) => format!("[{v6}]:{port}"),
    }
}

/// The Docker network a backend's nodes are on, when the bench knows it:
/// kind puts every cluster on `kind`, talosctl makes one named after the
/// cluster.
pub fn network_of(backend: &str, run_id: &str) -> Option<String> {
    match backend {
        "kind" => Some("kind".to_owned()),
        "talos" => Some(format!("drillbench-{run_id}")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_credentials_file_is_the_aws_plugins() {
        let target = S3Target {
            url: "http://10.0.0.2:9000".to_owned(),
            bucket: BUCKET.to_owned(),
            region: "minio".to_owned(),
            access_key: "a".to_owned(),
            secret_key: "b".to_owned(),
        };
        assert_eq!(
            target.credentials_file(),
            "[default]\naws_access_key_id = a\naws_secret_access_key = b\n"
        );
    }

    #[test]
    fn the_start_script_is_valid_shell_and_ends_ready_and_serving() {
        let script = minio_script();
        let checked = std::process::Command::new("sh")
            .args(["-n", "-c", &script])
            .output()
            .unwrap();
        assert!(
            checked.status.success(),
            "{}",
            String::from_utf8_lossy(&checked.stderr)
        );
        let ready = script.find(MINIO_READY).unwrap();
        assert!(
            script.find("mc mb").unwrap() < ready,
            "ready only after the bucket"
        );
        assert!(
            script.trim_end().ends_with("wait $server"),
            "the server is the container's life"
        );
    }

    #[test]
    fn addresses_and_networks() {
        assert_eq!(url_host("10.0.0.2".parse().unwrap(), 9000), "10.0.0.2:9000");
        assert_eq!(url_host("fd00::2".parse().unwrap(), 9000), "[fd00::2]:9000");
        assert_eq!(network_of("kind", "r1").as_deref(), Some("kind"));
        assert_eq!(network_of("talos", "r1").as_deref(), Some("drillbench-r1"));
        assert_eq!(network_of("kubeconfig", "r1"), None);
    }
}
