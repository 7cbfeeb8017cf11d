//! The real thing: a kind cluster (`BENCH_E2E=kind`) or a Talos-in-Docker
//! cluster (`BENCH_E2E=talos`) shaped like the `cp-recreate` drill, its
//! nodes and labels checked, a worker crashed, (Talos) a control plane
//! recreated until etcd has three voters again, then torn down, and nothing
//! left; MinIO as the bench starts it for Velero (`BENCH_E2E=minio`); a
//! namespace backed up and restored with Velero on kind, its RPO measured
//! from markers (`BENCH_E2E=velero`). These need the real CLIs, a Docker engine that can run privileged
//! containers and pull images: the nightly workflow runs them. Elsewhere
//! they print why they skipped and pass.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use drillbench_backend::clean::Registry;
use drillbench_backend::docker::RunId;
use drillbench_backend::machines::Machines;
use drillbench_backend::provision::{ProvisionedNode, block_on, client_for};
use drillbench_backend::{kind, talos};
use drillbench_model::drill::Drill;
use drillbench_model::labels::{NODE_LABEL, STANDBY_KEY};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, ListParams};

fn wanted(backend: &str) -> bool {
    wanted_for(
        backend,
        &format!("create a real {backend} cluster (needs {backend} and Docker)"),
    )
}

/// Whether `BENCH_E2E` names `name`; says why the test skips otherwise.
fn wanted_for(name: &str, what: &str) -> bool {
    let asked = std::env::var("BENCH_E2E").unwrap_or_default();
    if asked.split(',').any(|b| b.trim() == name) {
        return true;
    }
    eprintln!("skipped: set BENCH_E2E={name} to {what}");
    false
}

fn drill() -> Drill {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cp-recreate.yaml");
    Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

fn run_id(prefix: &str) -> RunId {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    RunId::new(format!("{prefix}{}-{}", std::process::id(), secs % 100_000)).unwrap()
}

fn nodes(kubeconfig: &Path) -> Vec<Node> {
    block_on(async {
        let client = client_for(kubeconfig).await.unwrap();
        Api::<Node>::all(client)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
    })
    .unwrap()
}

fn ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Every planned node is a Node with its drill name, its pool's labels and
/// its role; standby nodes are tainted; the `hcloud` class exists.
fn check_cluster(kubeconfig: &Path, planned: &[ProvisionedNode]) {
    let listed = nodes(kubeconfig);
    for node in planned {
        let found = listed
            .iter()
            .find(|n| n.metadata.name.as_deref() == Some(node.node.as_str()))
            .unwrap_or_else(|| panic!("no Node {}", node.node));
        let labels = found.metadata.labels.clone().unwrap_or_default();
        assert_eq!(labels.get(NODE_LABEL), Some(&node.plan.drill_name));
        for (key, value) in node.plan.boot_labels.iter().chain(&node.plan.api_labels) {
            assert_eq!(labels.get(key), Some(value), "{} label {key}", node.node);
        }
        assert!(ready(found), "{} is Ready", node.node);
        if node.plan.standby {
            let taints = found
                .spec
                .clone()
                .and_then(|s| s.taints)
                .unwrap_or_default();
            assert!(taints.iter().any(|t| t.key == STANDBY_KEY), "{taints:?}");
        }
    }
    let classes = block_on(async {
        let client = client_for(kubeconfig).await.unwrap();
        Api::<StorageClass>::all(client)
            .get_opt("hcloud")
            .await
            .unwrap()
    })
    .unwrap();
    assert_eq!(
        classes.map(|c| c.provisioner).as_deref(),
        Some(drillbench_backend::provision::LOCAL_PATH_PROVISIONER)
    );
}

/// Polls until `done` holds; the limit is generous, it is not a measurement.
fn eventually(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < limit, "{what} within {limit:?}");
        std::thread::sleep(Duration::from_secs(5));
    }
}

fn docker_names(filter: &str) -> String {
    let output = Command::new("docker")
        .args(["ps", "--all", "--filter", filter, "--format", "{{.Names}}"])
        .output()
        .expect("docker runs");
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

#[test]
fn kind_cluster_shaped_like_the_drill_crashes_a_worker_and_leaves_nothing() {
    if !wanted("kind") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new(dir.path().join("runs"));
    let run = run_id("ek");
    let options = kind::KindOptions::new(run.clone(), registry.clone());
    let drill = drill();
    let mut machines = kind::provision(&drill, &options).expect("kind cluster");
    let (kubeconfig, _) = machines.kubeconfig();
    check_cluster(&kubeconfig, machines.nodes());

    let worker = machines
        .nodes()
        .iter()
        .find(|n| n.plan.drill_name == "prod-worker-1")
        .unwrap()
        .node
        .clone();
    machines.crash(&worker).expect("crash");
    eventually(
        "the crashed worker goes NotReady",
        Duration::from_secs(300),
        || {
            nodes(&kubeconfig)
                .iter()
                .any(|n| n.metadata.name.as_deref() == Some(worker.as_str()) && !ready(n))
        },
    );

    let cluster = machines.cluster().to_owned();
    machines.teardown().expect("teardown");
    assert_eq!(
        docker_names(&format!("label=io.x-k8s.kind.cluster={cluster}")),
        ""
    );
    assert_eq!(docker_names(&format!("label=drillbench.dev/run={run}")), "");
    assert!(registry.list().unwrap().0.is_empty());
}

#[test]
fn talos_cluster_recreates_a_control_plane_and_leaves_nothing() {
    if !wanted("talos") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new(dir.path().join("runs"));
    let run = run_id("et");
    let mut options = talos::TalosOptions::new(run.clone(), registry.clone());
    // One standby worker is covered on kind; here the recreate matters.
    options.standby_per_pool = 0;
    let drill = drill();
    let mut machines = talos::provision(&drill, &options).expect("talos cluster");
    let (kubeconfig, _) = machines.kubeconfig();
    check_cluster(&kubeconfig, machines.nodes());
    assert_eq!(machines.etcd_members(), Some((3, 0)));

    machines.crash("prod-worker-1").expect("crash");
    machines
        .recreate_control_plane("prod-control-plane-1")
        .expect("recreate");
    eventually(
        "the recreated control plane is a voting member again",
        Duration::from_secs(900),
        || machines.etcd_members() == Some((3, 0)),
    );

    let cluster = machines.cluster().to_owned();
    machines.teardown().expect("teardown");
    assert_eq!(
        docker_names(&format!("label=talos.cluster.name={cluster}")),
        ""
    );
    assert_eq!(docker_names(&format!("label=drillbench.dev/run={run}")), "");
    let volumes = Command::new("docker")
        .args(["volume", "ls", "--quiet", "--filter"])
        .arg(format!("label=drillbench.dev/run={run}"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&volumes.stdout).trim(), "");
    assert!(registry.list().unwrap().0.is_empty());
}

#[test]
fn minio_serves_the_velero_bucket_on_a_network_and_leaves_nothing() {
    if !wanted_for(
        "minio",
        "start MinIO beside a cluster (needs Docker that can pull minio/minio)",
    ) {
        return;
    }
    use drillbench_backend::s3::{BUCKET, Minio, MinioOptions};
    let run = run_id("em");
    let network = format!("drillbench-{run}");
    let created = Command::new("docker")
        .args(["network", "create", "--label"])
        .arg(format!("drillbench.dev/run={run}"))
        .arg(&network)
        .status()
        .expect("docker runs");
    assert!(created.success(), "docker network create {network}");
    let minio = Minio::start(&MinioOptions::new(&network, run.as_str()));
    let checked = minio.as_ref().map_err(|e| e.to_string()).map(|minio| {
        // The bucket exists: an anonymous request is denied, not told that
        // there is no such bucket.
        let answer = Command::new("curl")
            .args(["-sS", &format!("{}/{BUCKET}/", minio.target().url)])
            .output()
            .expect("curl runs");
        String::from_utf8_lossy(&answer.stdout).into_owned()
    });
    drop(minio);
    let _ = Command::new("docker")
        .args(["network", "rm", &network])
        .status();
    let answer = checked.unwrap_or_else(|e| panic!("MinIO did not start: {e}"));
    assert!(answer.contains("AccessDenied"), "{answer}");
    assert_eq!(docker_names(&format!("label=drillbench.dev/run={run}")), "");
}

#[test]
fn kind_restores_a_namespace_with_velero_and_measures_the_rpo() {
    if !wanted_for(
        "velero",
        "back a kind cluster's namespace up and restore it (needs kind, velero v1.16 and Docker that can pull)",
    ) {
        return;
    }
    // A small cluster and one namespace of pause pods (kind's node image
    // carries the pause image, so nothing is pulled for the workload).
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("manifests.yaml"),
        "apiVersion: v1
kind: Namespace
metadata: {name: data}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: app, namespace: data}
spec:
  replicas: 1
  selector: {matchLabels: {app: app}}
  template:
    metadata: {labels: {app: app}}
    spec:
      containers: [{name: app, image: registry.k8s.io/pause:3.10}]
",
    )
    .unwrap();
    let drill = dir.path().join("drill.yaml");
    std::fs::write(
        &drill,
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: e2e-restore}
cluster:
  pools: [{name: baseline, count: 1, serverType: cx43}]
  backups: [{schedule: daily, every: 24h, duration: 1m}]
workloads: [{path: manifests.yaml}]
steps:
  - fault:
      restoreNamespace: {namespace: data, schedule: daily}
assertions:
  - name: rpo
    rpo: {schedule: daily, within: 10m}
",
    )
    .unwrap();
    let out = dir.path().join("out");
    let run = crate::common::bench_bin()
        .arg("run")
        .arg(&drill)
        .args(["--backend", "kind", "--out"])
        .arg(&out)
        .env("DRILLBENCH_RUNS_DIR", dir.path().join("runs"))
        .output()
        .expect("bench runs");
    let stderr = String::from_utf8_lossy(&run.stderr);
    let report = drillbench_report::DrillReport::read(&out.join("report.json"))
        .unwrap_or_else(|e| panic!("no report ({e}): {stderr}"));
    let rpo = &report.assertions[0];
    assert_eq!(rpo.name, "rpo");
    assert!(
        rpo.summary.contains("acknowledged write(s) lost"),
        "measured from the markers: {rpo:?}\n{stderr}"
    );
    assert_eq!(
        docker_names("label=drillbench.dev/role=s3"),
        "",
        "the MinIO is gone with the run"
    );
}
