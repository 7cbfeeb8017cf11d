//! The live mode: the same facts the runbook's dumps hold, read from a
//! cluster through kube-rs and from `talosctl etcd members` through `duct`.
//!
//! Objects read from the API go through the very item readers the file mode
//! uses ([`super::input`]), so both modes accept and refuse the same objects,
//! and then through the same [`super::decide`].

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::config::{KubeConfigOptions, KubeconfigError};
use kube::{Api, Client, Config};

use super::etcd::{MembersError, parse_members};
use super::input::{backup_from_item, node_from_item};
use super::{BackupFacts, EtcdCounts, Facts, InputError, NodeFacts};

/// The namespace Velero keeps its backups in.
const VELERO_NAMESPACE: &str = "velero";

/// How long one API request or `talosctl` call may take. A preflight that
/// hangs is worse than one that says "cannot tell": the operator is waiting
/// to decide, and a hung call never prints `ready=`.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Where and how the live mode reads a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveSource {
    pub context: String,
    /// The Talos node to ask for the etcd membership (`talosctl --nodes`);
    /// `None` leaves the choice to the talosconfig.
    pub talos_node: Option<String>,
    pub talosctl: PathBuf,
    /// How long `talosctl` may run before it is killed.
    pub talosctl_timeout: Duration,
}

/// Why the live mode could not read the cluster.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The kubeconfig or its context could not be loaded.
    #[error("cannot load kubeconfig context {context}")]
    Kubeconfig {
        context: String,
        #[source]
        source: KubeconfigError,
    },
    /// A client could not be built from the kubeconfig.
    #[error("cannot build a Kubernetes client")]
    Client(#[source] kube::Error),
    /// An API request failed.
    #[error("cannot list {what}")]
    List {
        what: &'static str,
        #[source]
        source: kube::Error,
    },
    /// An object from the API could not be re-encoded for the item readers.
    #[error("cannot re-encode {what} from the API")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// The async runtime could not start.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
    /// `talosctl` could not be started.
    #[error("cannot run {program}")]
    TalosctlSpawn {
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// `talosctl` ran and failed.
    #[error("`{program} etcd members` failed ({status}): {stderr}")]
    TalosctlFailed {
        program: String,
        status: String,
        /// What it printed on stderr, trimmed.
        stderr: String,
    },
    /// `talosctl` did not finish in time and was killed.
    #[error("`{program} etcd members` did not finish within {seconds} s")]
    TalosctlTimeout {
        program: String,
        /// The limit.
        seconds: u64,
    },
    /// `talosctl` printed something that is not the members table.
    #[error("cannot read `talosctl etcd members` output")]
    Members(#[source] MembersError),
    /// An object read from the API is unusable, exactly as in a dump file.
    #[error(transparent)]
    Input(InputError),
}

/// Reads nodes and backups through kube-rs, then etcd through `talosctl`,
/// on a runtime of its own so callers stay synchronous.
pub(crate) fn gather_blocking(source: &LiveSource) -> Result<Facts, LiveError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(LiveError::Runtime)?;
    let (nodes, backups) = runtime.block_on(async {
        let client = client_for_context(&source.context).await?;
        read_objects(client).await
    })?;
    let etcd = etcd_counts(source)?;
    Ok(Facts {
        nodes,
        backups,
        etcd,
    })
}

async fn client_for_context(context: &str) -> Result<Client, LiveError> {
    let options = KubeConfigOptions {
        context: Some(context.to_owned()),
        ..KubeConfigOptions::default()
    };
    let config =
        Config::from_kubeconfig(&options)
            .await
            .map_err(|source| LiveError::Kubeconfig {
                context: context.to_owned(),
                source,
            })?;
    Client::try_from(config).map_err(LiveError::Client)
}

fn velero_backups() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("velero.io", "v1", "Backup"),
        "backups",
    )
}

/// Lists every node and every Velero backup and reads them as the file
/// mode reads `kubectl ... -o json` items.
pub async fn read_objects(client: Client) -> Result<(Vec<NodeFacts>, Vec<BackupFacts>), LiveError> {
    let nodes = Api::<Node>::all(client.clone())
        .list(&ListParams::default())
        .await
        .map_err(|source| LiveError::List {
            what: "nodes",
            source,
        })?;
    let nodes = nodes
        .items
        .iter()
        .enumerate()
        .map(|(i, node)| {
            let item = serde_json::to_value(node).map_err(|source| LiveError::Encode {
                what: "a node",
                source,
            })?;
            node_from_item(&format!("nodes from the API: items[{i}]"), &item)
                .map_err(LiveError::Input)
        })
        .collect::<Result<Vec<_>, _>>()?;

    let resource = velero_backups();
    let backups = Api::<DynamicObject>::namespaced_with(client, VELERO_NAMESPACE, &resource)
        .list(&ListParams::default())
        .await
        .map_err(|source| LiveError::List {
            what: "backups.velero.io",
            source,
        })?;
    let backups = backups
        .items
        .iter()
        .enumerate()
        .map(|(i, backup)| {
            let item = serde_json::to_value(backup).map_err(|source| LiveError::Encode {
                what: "a backup",
                source,
            })?;
            backup_from_item(&format!("backups from the API: items[{i}]"), &item)
                .map_err(LiveError::Input)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((nodes, backups))
}

/// Runs `talosctl [--nodes NODE] etcd members` and counts its table.
pub fn etcd_counts(source: &LiveSource) -> Result<EtcdCounts, LiveError> {
    let program = source.talosctl.display().to_string();
    let mut args: Vec<String> = Vec::new();
    if let Some(node) = &source.talos_node {
        args.extend(["--nodes".to_owned(), node.clone()]);
    }
    args.extend(["etcd".to_owned(), "members".to_owned()]);
    let spawn_error = |source| LiveError::TalosctlSpawn {
        program: program.clone(),
        source,
    };
    // As an OsStr, not a Path: duct runs a relative Path as `./talosctl`,
    // which would skip the PATH lookup the default `--talosctl talosctl` needs.
    let handle = duct::cmd(source.talosctl.as_os_str(), &args)
        .stdout_capture()
        .stderr_capture()
        .stdin_null()
        .unchecked()
        .start()
        .map_err(spawn_error)?;
    if handle
        .wait_timeout(source.talosctl_timeout)
        .map_err(spawn_error)?
        .is_none()
    {
        // Best effort: the error below is what matters to the operator.
        let _ = handle.kill();
        return Err(LiveError::TalosctlTimeout {
            program,
            seconds: source.talosctl_timeout.as_secs(),
        });
    }
    let output = handle.into_output().map_err(spawn_error)?;
    if !output.status.success() {
        return Err(LiveError::TalosctlFailed {
            program,
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        });
    }
    parse_members(&String::from_utf8_lossy(&output.stdout)).map_err(LiveError::Members)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use http::{Request, Response, StatusCode};
    use kube::client::Body;
    use tower_test::mock;

    use super::*;
    use crate::{DEFAULT_SCHEDULE, Policy, Readiness, decide};

    fn fixture(name: &str) -> Vec<u8> {
        let path =
            drillbench_model::test_support::repo_file("harness/fixtures/preflight").join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// A client whose API server answers the two list requests with the
    /// recorded responses, asserting each request on the way.
    fn recorded_cluster(nodes: Vec<u8>, backups: Vec<u8>) -> (Client, tokio::task::JoinHandle<()>) {
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let server = tokio::spawn(async move {
            for (path, body) in [
                ("/api/v1/nodes", nodes),
                ("/apis/velero.io/v1/namespaces/velero/backups", backups),
            ] {
                let (request, respond) = handle.next_request().await.expect("a request");
                assert_eq!(request.method(), http::Method::GET);
                assert_eq!(request.uri().path(), path);
                respond.send_response(
                    Response::builder()
                        .status(StatusCode::OK)
                        .body(Body::from(body))
                        .expect("a response"),
                );
            }
        });
        (Client::new(service, "default"), server)
    }

    fn policy(target: &str) -> Policy {
        Policy {
            target: target.into(),
            vip_holder: Some("prod-control-plane-2".into()),
            schedule: DEFAULT_SCHEDULE.into(),
            max_backup_age_hours: 26,
            now: "2026-11-30T02:30:00Z".parse().unwrap(),
        }
    }

    #[tokio::test]
    async fn recorded_healthy_cluster_is_ready() {
        let (client, server) =
            recorded_cluster(fixture("api-nodes.json"), fixture("api-backups.json"));
        let (nodes, backups) = read_objects(client).await.unwrap();
        server.await.unwrap();
        assert_eq!(nodes.len(), 6);
        assert_eq!(
            nodes.iter().filter(|n| n.control_plane).count(),
            3,
            "{nodes:?}"
        );
        let facts = Facts {
            nodes,
            backups,
            etcd: parse_members(&String::from_utf8(fixture("etcd-members-healthy.txt")).unwrap())
                .unwrap(),
        };
        let decision = decide(&facts, &policy("prod-control-plane-4"));
        assert!(decision.ready(), "{}", decision.render());
    }

    #[tokio::test]
    async fn recorded_cluster_with_a_not_ready_control_plane_is_not_ready() {
        let mut nodes: serde_json::Value =
            serde_json::from_slice(&fixture("api-nodes.json")).unwrap();
        let cp5 = nodes["items"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|n| n["metadata"]["name"] == "prod-control-plane-5")
            .unwrap();
        for condition in cp5["status"]["conditions"].as_array_mut().unwrap() {
            if condition["type"] == "Ready" {
                condition["status"] = "Unknown".into();
            }
        }
        let (client, server) = recorded_cluster(
            serde_json::to_vec(&nodes).unwrap(),
            fixture("api-backups.json"),
        );
        let (nodes, backups) = read_objects(client).await.unwrap();
        server.await.unwrap();
        let cp5 = nodes
            .iter()
            .find(|n| n.name == "prod-control-plane-5")
            .unwrap();
        assert_eq!(cp5.ready, Readiness::Unknown);
        let facts = Facts {
            nodes,
            backups,
            etcd: EtcdCounts {
                voters: 3,
                learners: 0,
            },
        };
        let decision = decide(&facts, &policy("prod-control-plane-4"));
        assert_eq!(
            decision.render(),
            "target=prod-control-plane-4\ntarget_is_vip_holder=false\nready=false\n\
             reason=quorum: control-plane nodes not Ready: prod-control-plane-5\n"
        );
    }

    #[tokio::test]
    async fn a_backup_without_a_creation_time_from_the_api_is_an_input_error() {
        let mut backups: serde_json::Value =
            serde_json::from_slice(&fixture("api-backups.json")).unwrap();
        backups["items"][0]["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("creationTimestamp");
        let (client, server) = recorded_cluster(
            fixture("api-nodes.json"),
            serde_json::to_vec(&backups).unwrap(),
        );
        let err = read_objects(client).await.unwrap_err();
        server.await.unwrap();
        assert!(
            matches!(err, LiveError::Input(InputError::Shape { .. })),
            "{err}"
        );
    }

    #[tokio::test]
    async fn an_api_error_is_reported_not_read_as_an_empty_cluster() {
        let (service, mut handle) = mock::pair::<Request<Body>, Response<Body>>();
        let server = tokio::spawn(async move {
            let (_, respond) = handle.next_request().await.expect("a request");
            let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nodes is forbidden","reason":"Forbidden","code":403}"#;
            respond.send_response(
                Response::builder()
                    .status(StatusCode::FORBIDDEN)
                    .body(Body::from(status.to_vec()))
                    .unwrap(),
            );
        });
        let err = read_objects(Client::new(service, "default"))
            .await
            .unwrap_err();
        server.await.unwrap();
        assert!(
            matches!(err, LiveError::List { what: "nodes", .. }),
            "{err}"
        );
    }

    #[cfg(unix)]
    fn fake_talosctl(dir: &Path, script: &str) -> PathBuf {
        let path = dir.join("talosctl");
        drillbench_model::test_support::write_script(&path, format!("#!/bin/sh\n{script}\n"));
        path
    }

    /// A bare program name is looked up on PATH, as `--talosctl talosctl`
    /// (the default) needs: `sh` exists there but not in the working folder,
    /// so a spawn error would mean the name was run as `./sh`.
    #[cfg(unix)]
    #[test]
    fn a_bare_program_name_is_found_on_the_path() {
        let source = LiveSource {
            context: "admin@prod".into(),
            talos_node: None,
            talosctl: PathBuf::from("sh"),
            talosctl_timeout: CALL_TIMEOUT,
        };
        let err = etcd_counts(&source).expect_err("`sh etcd members` fails");
        assert!(matches!(err, LiveError::TalosctlFailed { .. }), "{err:?}");
    }

    #[cfg(unix)]
    #[test]
    fn talosctl_runs_through_duct_and_its_table_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let recorded = drillbench_model::test_support::repo_file(
            "harness/fixtures/preflight/etcd-members-learner.txt",
        );
        // The fake asserts the arguments the real one would need.
        let talosctl = fake_talosctl(
            dir.path(),
            &format!(
                "[ \"$*\" = \"--nodes 10.0.1.2 etcd members\" ] || {{ echo \"bad args: $*\" >&2; exit 9; }}\ncat '{}'",
                recorded.display()
            ),
        );
        let source = LiveSource {
            context: "admin@prod".into(),
            talos_node: Some("10.0.1.2".into()),
            talosctl,
            talosctl_timeout: CALL_TIMEOUT,
        };
        assert_eq!(
            etcd_counts(&source).unwrap(),
            EtcdCounts {
                voters: 2,
                learners: 1
            }
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_failing_talosctl_is_an_error_with_its_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let talosctl = fake_talosctl(
            dir.path(),
            "echo 'rpc error: code = Unavailable' >&2; exit 1",
        );
        let source = LiveSource {
            context: "admin@prod".into(),
            talos_node: None,
            talosctl,
            talosctl_timeout: CALL_TIMEOUT,
        };
        let err = etcd_counts(&source).unwrap_err();
        assert!(
            matches!(&err, LiveError::TalosctlFailed { stderr, .. } if stderr.contains("Unavailable")),
            "{err}"
        );
        let missing = LiveSource {
            talosctl: dir.path().join("no-such-talosctl"),
            ..source
        };
        assert!(matches!(
            etcd_counts(&missing),
            Err(LiveError::TalosctlSpawn { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_hung_talosctl_is_killed_and_reported() {
        let dir = tempfile::tempdir().unwrap();
        // Never finishes on its own; only the kill ends it.
        let talosctl = fake_talosctl(dir.path(), "exec sleep 3600");
        let source = LiveSource {
            context: "admin@prod".into(),
            talos_node: None,
            talosctl,
            talosctl_timeout: Duration::from_millis(50),
        };
        assert!(matches!(
            etcd_counts(&source),
            Err(LiveError::TalosctlTimeout { .. })
        ));
    }
}
