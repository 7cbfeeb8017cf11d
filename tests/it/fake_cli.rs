//! The stand-in `kind`, `talosctl` and `docker` of `harness/fake-cli`, and
//! the preflight's duct driver calling them with the exact command lines.
//! The kind and Talos drivers have tests of their own
//! (`tests/kind_driver.rs`, `tests/talos_driver.rs`).
//!
//! Each test gets its own call log through a tiny wrapper script that sets
//! `DRILLBENCH_FAKE_CLI_LOG` and execs the stand-in, so no test changes the
//! test process's environment.

use std::path::{Path, PathBuf};
use std::time::Duration;

use drillbench_preflight::EtcdCounts;
use drillbench_preflight::live::{LiveError, LiveSource, etcd_counts};

use crate::fake_support::wrapped;

fn calls(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("calls.log")).unwrap_or_default()
}

fn source(talosctl: PathBuf, node: Option<&str>) -> LiveSource {
    LiveSource {
        context: "admin@drill".into(),
        talos_node: node.map(str::to_owned),
        talosctl,
        talosctl_timeout: Duration::from_secs(30),
    }
}

#[test]
fn the_preflight_asks_talosctl_for_etcd_members_of_the_named_node() {
    let dir = tempfile::tempdir().unwrap();
    let talosctl = wrapped(dir.path(), "talosctl", &[]);

    let with_node = etcd_counts(&source(talosctl.clone(), Some("10.5.0.2"))).unwrap();
    let without_node = etcd_counts(&source(talosctl, None)).unwrap();

    let healthy = EtcdCounts {
        voters: 3,
        learners: 0,
    };
    assert_eq!((with_node, without_node), (healthy, healthy));
    insta::assert_snapshot!(calls(dir.path()), @r"
    talosctl --nodes 10.5.0.2 etcd members
    talosctl etcd members
    ");
}

#[test]
fn the_preflight_reads_the_members_table_talosctl_prints() {
    let dir = tempfile::tempdir().unwrap();
    let members = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("harness/fixtures/preflight/etcd-members-learner.txt");
    let members = members.to_string_lossy();
    let talosctl = wrapped(
        dir.path(),
        "talosctl",
        &[("DRILLBENCH_FAKE_ETCD_MEMBERS", &members)],
    );
    let counts = etcd_counts(&source(talosctl, Some("10.5.0.3"))).unwrap();
    assert_eq!(counts.learners, 1, "{counts:?}");
}

#[test]
fn a_failing_talosctl_is_reported_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let talosctl = wrapped(
        dir.path(),
        "talosctl",
        &[("DRILLBENCH_FAKE_CLI_FAIL", "rpc error: connection refused")],
    );
    let error = etcd_counts(&source(talosctl, Some("10.5.0.2"))).unwrap_err();
    assert!(
        matches!(&error, LiveError::TalosctlFailed { stderr, .. }
            if stderr == "talosctl: rpc error: connection refused"),
        "{error}"
    );
    assert_eq!(
        calls(dir.path()),
        "talosctl --nodes 10.5.0.2 etcd members\n"
    );
}

/// The stand-in's own contract (log line, quoting, the kubeconfig's
/// server), independent of any driver.
#[test]
fn the_kind_stand_in_records_calls_and_points_its_kubeconfig_at_the_fake_server() {
    let dir = tempfile::tempdir().unwrap();
    let kind = wrapped(
        dir.path(),
        "kind",
        &[("DRILLBENCH_FAKE_SERVER", "http://127.0.0.1:41234")],
    );
    duct::cmd(
        &kind,
        [
            "create",
            "cluster",
            "--name",
            "drill-1",
            "--config",
            "/tmp/a dir/kind.yaml",
            "--wait",
            "",
        ],
    )
    .stderr_null()
    .run()
    .unwrap();
    let kubeconfig = duct::cmd(&kind, ["get", "kubeconfig", "--name=drill-1"])
        .read()
        .unwrap();
    assert!(
        kubeconfig.contains("server: http://127.0.0.1:41234"),
        "{kubeconfig}"
    );
    assert!(
        kubeconfig.contains("current-context: kind-drill-1"),
        "{kubeconfig}"
    );
    let unsupported = duct::cmd(&kind, ["load", "docker-image", "x"])
        .stderr_null()
        .unchecked()
        .run()
        .unwrap();
    assert_eq!(unsupported.status.code(), Some(2));
    insta::assert_snapshot!(calls(dir.path()), @r"
    kind create cluster --name drill-1 --config '/tmp/a dir/kind.yaml' --wait ''
    kind get kubeconfig --name=drill-1
    kind load docker-image x
    ");
}

/// The stand-in docker answers like the engine for what it does not know:
/// a missing container is the daemon's "No such container" (the driver
/// reads that as gone), an unknown command exits 2.
#[test]
fn the_docker_stand_in_knows_only_registered_containers() {
    use drillbench_backend::docker::{Docker, DockerError};
    let dir = tempfile::tempdir().unwrap();
    let docker_path = wrapped(dir.path(), "docker", &[]);
    let docker = Docker::new().with_program(&docker_path);
    assert_eq!(docker.ping().unwrap(), "20.10.24-fake");
    assert!(matches!(
        docker.inspect("nobody"),
        Err(DockerError::NoSuchContainer(_))
    ));
    std::fs::write(
        dir.path().join("fake-docker.state"),
        "drill-a-worker prod-worker-1 172.18.0.3 running io.x-k8s.kind.cluster=drill-a\n",
    )
    .unwrap();
    let spec = docker.inspect("drill-a-worker").unwrap();
    assert_eq!(
        spec.labels.get("io.x-k8s.kind.cluster").map(String::as_str),
        Some("drill-a")
    );
    let unknown = duct::cmd(&docker_path, ["swarm", "init"])
        .stderr_null()
        .unchecked()
        .run()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
}
