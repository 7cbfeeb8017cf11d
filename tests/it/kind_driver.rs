//! The kind driver against the stand-in `kind` and `docker` of
//! `harness/fake-cli`, acting on a served simulator: the exact command
//! lines are snapshot-tested, and a crash and a removal through the driver
//! show up as NotReady nodes in the served cluster.

use crate::fake_support;

use std::time::Duration;

use drillbench_backend::BackendError;
use drillbench_backend::docker::RunId;
use drillbench_backend::kind::{KindOptions, provision};
use drillbench_backend::machines::Machines;
use drillbench_model::exit::Exit;
use fake_support::{Served, calls, registry, serve, serve_drill, tools};

fn options(dir: &std::path::Path, run: &str, server: &str, token: &str) -> KindOptions {
    let mut options = KindOptions::new(RunId::new(run).unwrap(), registry(dir));
    options.tools = tools(
        dir,
        &[
            ("DRILLBENCH_FAKE_SERVER", server),
            ("DRILLBENCH_FAKE_TOKEN", token),
        ],
    );
    // The served cluster has no standby nodes to wait for.
    options.standby_per_pool = 0;
    options.ready_timeout = Duration::from_secs(60);
    options
}

#[test]
fn a_kind_run_creates_labels_crashes_removes_and_deletes_with_these_commands() {
    let drill = serve_drill();
    let server = serve(&drill);
    let served = Served::new(&server);
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path(), "k1", &server.url(), server.token().as_str());

    let mut machines = provision(&drill, &options).expect("provisioned");
    let record = dir.path().join("runs/k1.json");
    assert!(record.exists(), "the run is recorded while it runs");
    let config = std::fs::read_to_string(dir.path().join("runs/k1/kind.yaml")).unwrap();
    assert!(
        config.contains("\"platform.devantler.tech/baseline-worker\": \"true\""),
        "{config}"
    );
    let worker = machines
        .nodes()
        .iter()
        .find(|n| n.plan.drill_name == "prod-worker-2")
        .expect("prod-worker-2 planned")
        .clone();
    assert_eq!(worker.container, "drillbench-k1-worker2");
    // The role label the kubelet may not set went in through the API.
    let labels = served
        .node("prod-worker-2")
        .unwrap()
        .metadata
        .labels
        .unwrap();
    assert_eq!(
        labels
            .get("node-role.kubernetes.io/worker")
            .map(String::as_str),
        Some("")
    );
    // The kind config's labels, as the kubelet registers them.
    assert_eq!(
        labels.get("drillbench.dev/run").map(String::as_str),
        Some("k1")
    );
    assert_eq!(
        labels.get("drillbench.dev/node").map(String::as_str),
        Some("prod-worker-2")
    );
    assert_eq!(
        machines.api_servers().len(),
        3,
        "{:?}",
        machines.api_servers()
    );

    assert_eq!(served.ready("prod-worker-2").as_deref(), Some("True"));
    machines.crash("prod-worker-2").expect("crash");
    served.advance("2m");
    assert_ne!(
        served.ready("prod-worker-2").as_deref(),
        Some("True"),
        "a crashed node stops heartbeating"
    );

    assert_eq!(served.ready("prod-worker-3").as_deref(), Some("True"));
    machines.remove("drillbench-k1-worker3").expect("remove");
    served.advance("2m");
    assert_ne!(
        served.ready("prod-worker-3").as_deref(),
        Some("True"),
        "a removed container's node no longer answers"
    );

    let refused = machines
        .recreate_control_plane("prod-control-plane-1")
        .unwrap_err();
    assert!(
        matches!(&refused, BackendError::Unsupported { backend: "kind", what }
            if what.contains("use --backend talos or sim")),
        "{refused}"
    );
    assert!(matches!(
        machines.crash("prod-worker-9"),
        Err(BackendError::NotFound(_))
    ));

    machines.teardown().expect("teardown");
    assert!(!record.exists(), "a clean teardown forgets the run");
    assert!(!dir.path().join("runs/k1").exists());
    insta::assert_snapshot!(calls(dir.path()));
}

#[test]
fn a_failing_create_is_infrastructure_and_still_deletes_the_cluster() {
    let drill = serve_drill();
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path(), "k2", "http://127.0.0.1:9", "none");
    // Only `kind create cluster` fails, as it does when an image cannot be
    // pulled or a node container cannot start.
    options.tools.kind = fake_support::wrapped(
        dir.path(),
        "kind",
        &[
            (
                "DRILLBENCH_FAKE_CLI_FAIL",
                "ERROR: failed to create cluster",
            ),
            ("DRILLBENCH_FAKE_CLI_FAIL_ON", "kind create cluster"),
        ],
    );
    let error = provision(&drill, &options).unwrap_err();
    assert_eq!(error.exit(), Exit::Infrastructure, "{error}");
    assert!(
        error
            .to_string()
            .contains("ERROR: failed to create cluster"),
        "{error}"
    );
    // Torn down at once, and with nothing left the record goes too.
    assert!(!dir.path().join("runs/k2.json").exists());
    insta::assert_snapshot!(calls(dir.path()), @r"
    docker version --format '{{.Server.Version}}'
    kind version
    kind create cluster --name drillbench-k2 --config $DIR/runs/k2/kind.yaml --kubeconfig $DIR/runs/k2/kubeconfig
    kind delete cluster --name drillbench-k2 --kubeconfig $DIR/runs/k2/kubeconfig
    docker ps --all --no-trunc --filter label=drillbench.dev/run=k2 --format '{{.ID}}	{{.Names}}	{{.State}}'
    docker network ls --filter label=drillbench.dev/run=k2 --format '{{.Name}}'
    docker volume ls --quiet --filter label=drillbench.dev/run=k2
    ");
}

#[test]
fn a_missing_kind_names_what_to_install() {
    let drill = serve_drill();
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path(), "k3", "http://127.0.0.1:9", "none");
    options.tools.kind = dir.path().join("no-such-kind");
    let error = provision(&drill, &options).unwrap_err();
    assert_eq!(error.exit(), Exit::Infrastructure);
    assert!(
        error.to_string().contains("install kind v0.27.0"),
        "{error}"
    );
}

#[test]
fn a_dropped_cluster_is_deleted_even_without_a_teardown_call() {
    let drill = serve_drill();
    let server = serve(&drill);
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path(), "k4", &server.url(), server.token().as_str());
    let machines = provision(&drill, &options).expect("provisioned");
    let before = calls(dir.path());
    assert!(!before.contains("kind delete"), "{before}");
    // What a panic between provisioning and teardown does to the value.
    drop(machines);
    let after = calls(dir.path());
    assert!(
        after[before.len()..].starts_with("kind delete cluster --name drillbench-k4"),
        "{after}"
    );
    assert!(!dir.path().join("runs/k4.json").exists());
}

#[test]
fn nodes_that_never_register_fail_the_wait_and_the_cluster_is_deleted() {
    let drill = serve_drill();
    let server = serve(&drill);
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path(), "k5", &server.url(), server.token().as_str());
    // Standby nodes are planned, but the served cluster has none: the wait
    // must name them and give up, not start a drill on a partial cluster.
    options.standby_per_pool = 1;
    options.ready_timeout = Duration::from_secs(3);
    let error = provision(&drill, &options).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains("autoscale-cx43-standby-1: not registered"),
        "{text}"
    );
    assert!(!text.contains("prod-worker-1"), "{text}");
    assert_eq!(error.exit(), Exit::Infrastructure);
    assert!(calls(dir.path()).contains("kind delete cluster --name drillbench-k5"));
    assert!(!dir.path().join("runs/k5.json").exists());
}
