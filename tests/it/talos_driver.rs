//! The Talos driver against the stand-in `talosctl` and `docker` of
//! `harness/fake-cli`, acting on a served simulator: the exact command
//! lines of a whole run (create, label, crash, control-plane recreate,
//! destroy) are snapshot-tested, and what the driver leaves behind is
//! checked through the stand-in `docker`.

use crate::fake_support;

use std::path::Path;
use std::time::Duration;

use drillbench_backend::docker::{Docker, RunId};
use drillbench_backend::machines::Machines;
use drillbench_backend::talos::{TalosOptions, provision};
use drillbench_model::labels::RUN_LABEL;
use fake_support::{Served, calls, registry, serve, serve_drill, tools};

const MEMBERS: &str = "\
NODE       ID                 HOSTNAME                     PEER URLS               CLIENT URLS             LEARNER
10.5.0.3   2f6c0c8a1b9e4d73   drillbench-t1-controlplane-1 https://10.5.0.2:2380   https://10.5.0.2:2379   false
10.5.0.3   7a3e95d04c21b8f6   drillbench-t1-controlplane-2 https://10.5.0.3:2380   https://10.5.0.3:2379   false
10.5.0.3   c41d8e2f9b07a365   drillbench-t1-controlplane-3 https://10.5.0.4:2380   https://10.5.0.4:2379   false
";

fn options(dir: &Path, server: &drillbench_serve::Server) -> TalosOptions {
    let members = dir.join("members.txt");
    std::fs::write(&members, MEMBERS).unwrap();
    let members = members.display().to_string();
    let mut options = TalosOptions::new(RunId::new("t1").unwrap(), registry(dir));
    options.tools = tools(
        dir,
        &[
            ("DRILLBENCH_FAKE_SERVER", &server.url()),
            ("DRILLBENCH_FAKE_TOKEN", server.token().as_str()),
            ("DRILLBENCH_FAKE_ETCD_MEMBERS", &members),
        ],
    );
    options.standby_per_pool = 0;
    options.ready_timeout = Duration::from_secs(60);
    options
}

#[test]
fn a_talos_run_creates_labels_crashes_recreates_and_destroys_with_these_commands() {
    let drill = serve_drill();
    let server = serve(&drill);
    let served = Served::new(&server);
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path(), &server);

    let mut machines = provision(&drill, &options).expect("provisioned");
    assert!(dir.path().join("runs/t1.json").exists());
    let pool_patch =
        std::fs::read_to_string(dir.path().join("runs/t1/patches/pool-baseline.yaml")).unwrap();
    assert!(
        pool_patch.contains("\"platform.devantler.tech/baseline-worker\": \"true\""),
        "{pool_patch}"
    );
    // The per-node patches put the run and the drill name on the Node.
    let labels = served
        .node("prod-worker-2")
        .unwrap()
        .metadata
        .labels
        .unwrap();
    assert_eq!(
        labels.get("drillbench.dev/run").map(String::as_str),
        Some("t1")
    );
    assert_eq!(
        labels.get("drillbench.dev/node").map(String::as_str),
        Some("prod-worker-2")
    );
    assert_eq!(machines.etcd_members(), Some((3, 0)));
    let cp1 = machines.nodes()[0].clone();
    assert_eq!(cp1.container, "drillbench-t1-controlplane-1");
    assert_eq!(cp1.node, "prod-control-plane-1");

    machines.crash("prod-worker-1").expect("crash");
    served.advance("2m");
    assert_ne!(served.ready("prod-worker-1").as_deref(), Some("True"));

    machines
        .recreate_control_plane("prod-control-plane-1")
        .expect("recreate");
    // The fresh container carries the run's label (so `bench clean` finds
    // it) beside talosctl's own, and its spec was written down first.
    let docker = Docker::new().with_program(&options.tools.docker);
    let fresh = docker.inspect("drillbench-t1-controlplane-1").unwrap();
    assert_eq!(fresh.labels.get(RUN_LABEL).map(String::as_str), Some("t1"));
    assert_eq!(
        fresh.labels.get("talos.cluster.name").map(String::as_str),
        Some("drillbench-t1")
    );
    assert!(
        dir.path()
            .join("runs/t1/specs/drillbench-t1-controlplane-1.json")
            .exists()
    );

    machines.teardown().expect("teardown");
    assert!(!dir.path().join("runs/t1.json").exists());
    let volumes =
        std::fs::read_to_string(dir.path().join("fake-docker.state.volumes")).unwrap_or_default();
    assert_eq!(volumes, "", "the fresh state volumes were removed");
    insta::assert_snapshot!(calls(dir.path()));
}

#[test]
fn a_recreate_without_a_healthy_peer_touches_nothing() {
    let drill = serve_drill();
    let server = serve(&drill);
    let dir = tempfile::tempdir().unwrap();
    let options = options(dir.path(), &server);
    let mut machines = provision(&drill, &options).expect("provisioned");
    machines.crash("prod-control-plane-2").unwrap();
    machines.crash("prod-control-plane-3").unwrap();
    let before = calls(dir.path());
    let error = machines
        .recreate_control_plane("prod-control-plane-1")
        .unwrap_err();
    assert!(
        error.to_string().contains("no healthy control plane"),
        "{error}"
    );
    let during = calls(dir.path())[before.len()..].to_owned();
    assert!(
        !during.contains("docker rm") && !during.contains("remove-member"),
        "{during}"
    );
    machines.teardown().unwrap();
}
