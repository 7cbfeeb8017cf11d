//! `restoreNamespace` through the real-backend procedure, end to end on a
//! served simulator: `bench run --backend kubeconfig` writes markers into
//! the namespace, backs it up with (a stand-in) Velero while writing on,
//! deletes the namespace, restores it and measures the RPO from the markers
//! that came back.
//!
//! The stand-in `harness/fake-cli/velero` saves the namespace's ConfigMaps
//! when the backup starts and then lags for a while, so the markers written
//! meanwhile are acknowledged but not in the backup: the window is
//! non-zero, and checked here against what the stand-in saved and what is
//! in the cluster after the restore, not against the bench's own account.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::prelude::*;
use drillbench_model::drill::Drill;
use drillbench_report::{DrillReport, Outcome, Verdict};
use drillbench_serve::{Clock, ServeOptions, Server};
use predicates::str::contains;
use serde_json::Value;

/// The marker interval of the procedure (`backend::kube::restore`).
const EVERY: u64 = drillbench_backend::kube::restore::MARKER_EVERY;

const MANIFESTS: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: db, namespace: data}
spec:
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers:
        - name: db
          image: postgres
          resources: {requests: {cpu: 100m, memory: 256Mi}}
";

const DRILL: &str = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: restore-data
cluster:
  pools:
    - name: baseline
      count: 2
      serverType: cx43
  backups:
    - schedule: daily
      every: 24h
      duration: 20m
      lastStartedAgo: 6h
workloads:
  - path: manifests.yaml
steps:
  - wait: {for: 1m}
  - fault:
      restoreNamespace: {namespace: data, schedule: daily}
  - wait: {for: 1m}
assertions:
  - name: loose
    rpo: {schedule: daily, within: 24h}
  - name: tight
    rpo: {schedule: daily, within: 1s}
";

/// The drill in a temporary folder, served in `--step` mode: the folder,
/// the drill file, the kubeconfig and the server.
fn served() -> (tempfile::TempDir, PathBuf, PathBuf, Server) {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(MANIFESTS),
    )
    .expect("write");
    let drill_path = dir.path().join("drill.yaml");
    std::fs::write(&drill_path, DRILL).expect("write");
    let drill = Drill::load(&drill_path).unwrap_or_else(|d| panic!("{}", d.render(false)));
    let kubeconfig = dir.path().join("kubeconfig.yaml");
    let server = Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: Some(kubeconfig.clone()),
            clock: Clock::Step,
            seed: 1,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts");
    (dir, drill_path, kubeconfig, server)
}

/// `PATH` with the stand-in CLIs first.
fn stand_in_path() -> String {
    format!(
        "{}:{}",
        common::root().join("harness/fake-cli").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn get(server: &Server, path: &str) -> Value {
    let out = Command::new("curl")
        .args(["-fsS", &format!("http://{}{path}", server.addr())])
        .arg("-H")
        .arg(format!("Authorization: Bearer {}", server.token().as_str()))
        .output()
        .expect("curl runs");
    assert!(
        out.status.success(),
        "GET {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// (seq, drill ms) of every marker in a ConfigMap list.
fn markers(list: &Value) -> BTreeMap<u64, u64> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|m| m["metadata"]["labels"]["drillbench.dev/marker"] == "daily")
        .map(|m| {
            let field = |k: &str| m["data"][k].as_str().expect(k).parse::<u64>().expect(k);
            (field("seq"), field("drillTimeMs"))
        })
        .collect()
}

/// The call log with the machine's paths and the run's id made stable.
fn calls(dir: &Path, kubeconfig: &Path) -> String {
    let log = std::fs::read_to_string(dir.join("calls.log")).expect("the stand-in was called");
    let temp = std::env::temp_dir().display().to_string();
    let mut text = log
        .replace(&kubeconfig.display().to_string(), "$KUBECONFIG")
        .replace(&temp, "$TMP");
    // The run id is the drill, the seed and the second it started.
    while let Some(at) = text.find("restore-data-1-") {
        let end = text[at + 15..]
            .find(|c: char| !c.is_ascii_digit())
            .map_or(text.len(), |n| at + 15 + n);
        text.replace_range(at..end, "$RUN");
    }
    text
}

#[test]
fn a_real_restore_measures_the_window_from_the_markers_that_came_back() {
    let (dir, drill_path, kubeconfig, server) = served();

    let out = dir.path().join("out");
    let run = crate::common::bench_bin()
        .arg("run")
        .arg(&drill_path)
        .args(["--backend", "kubeconfig", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--out")
        .arg(&out)
        .env("PATH", stand_in_path())
        .env("DRILLBENCH_FAKE_CLI_LOG", dir.path().join("calls.log"))
        .env("DRILLBENCH_FAKE_VELERO_LAG", "0.5")
        .env("DRILLBENCH_S3_URL", "http://s3.drillbench.invalid:9000")
        .env("DRILLBENCH_S3_ACCESS_KEY", "access")
        .env("DRILLBENCH_S3_SECRET_KEY", "secret")
        .env("DRILLBENCH_RUNS_DIR", dir.path().join("runs"))
        .output()
        .expect("bench runs");
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    let report = DrillReport::read(&out.join("report.json"))
        .unwrap_or_else(|e| panic!("no report ({e}): {stderr}"));

    // The markers in the cluster now are exactly those the backup saved.
    let restored = markers(&get(&server, "/api/v1/namespaces/data/configmaps"));
    let store = dir.path().join("fake-velero");
    let saved_file = std::fs::read_dir(&store)
        .expect("the stand-in kept its backups")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.display().to_string().ends_with(".configmaps.json"))
        .expect("one backup");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&saved_file).expect("read")).expect("JSON");
    assert_eq!(
        restored,
        markers(&saved),
        "the restore brought back what the backup saved"
    );
    assert!(
        restored.len() as u64 >= drillbench_backend::kube::restore::MARKERS_BEFORE,
        "the markers written before the backup are in it: {restored:?}"
    );
    // The restored Deployment is back too.
    assert_eq!(
        get(&server, "/apis/apps/v1/namespaces/data/deployments")["items"][0]["metadata"]["name"],
        "db"
    );
    server.stop();

    // The window: from the newest restored marker to the newest lost one;
    // markers are one interval apart, so it is the lost count in intervals.
    let (&newest_seq, &captured) = restored.iter().next_back().expect("a marker came back");
    let loose = report
        .assertions
        .iter()
        .find(|a| a.name == "loose")
        .expect("loose judged");
    let window = report.figures["rpo.loose"].value as u64;
    let lost: u64 = loose
        .summary
        .split(' ')
        .next()
        .expect("count")
        .parse()
        .expect("count");
    assert!(
        lost >= 1,
        "the lag lost acknowledged markers: {}",
        loose.summary
    );
    assert_eq!(window, lost * EVERY, "{}", loose.summary);
    assert!(
        loose.evidence[0].detail.contains(&format!(
            "data/ConfigMap/drillbench-marker: {lost} write(s) after the capture point"
        )),
        "{:?}",
        loose.evidence
    );
    // Every marker written was acknowledged (the namespace was there
    // throughout): those that came back and those lost are all of them,
    // numbered without a gap, the lost ones after the newest restored.
    assert_eq!(
        restored.keys().copied().collect::<Vec<_>>(),
        (1..=newest_seq).collect::<Vec<_>>()
    );
    let timeline: Vec<_> = report
        .timeline
        .iter()
        .filter(|e| e.object.kind == "Backup")
        .map(|e| e.message.clone())
        .collect();
    assert!(
        timeline.iter().any(|m| m.contains(&format!(
            "{} of {} acknowledged marker(s) came back, the newest written at +{captured} ms; {lost} lost",
            restored.len(),
            newest_seq + lost
        ))),
        "{timeline:?}"
    );

    // The bound judges the measured window.
    let verdicts: BTreeMap<_, _> = report
        .assertions
        .iter()
        .map(|a| (a.name.as_str(), a.verdict))
        .collect();
    assert_eq!(verdicts["loose"], Verdict::Pass, "{stderr}");
    assert_eq!(verdicts["tight"], Verdict::Fail, "{stderr}");
    assert_eq!(report.outcome, Outcome::Failed);

    insta::assert_snapshot!(calls(dir.path(), &kubeconfig));
}

#[test]
fn a_missing_velero_is_an_infrastructure_failure_naming_what_to_install() {
    let (dir, drill_path, kubeconfig, server) = served();
    // A PATH with curl and sh but no velero.
    let run = crate::common::bench_bin()
        .arg("run")
        .arg(&drill_path)
        .args(["--backend", "kubeconfig", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("PATH", "/usr/bin:/bin")
        .env("DRILLBENCH_S3_URL", "http://s3.drillbench.invalid:9000")
        .env("DRILLBENCH_RUNS_DIR", dir.path().join("runs"))
        .output()
        .expect("bench runs");
    server.stop();
    run.assert()
        .code(3)
        .stderr(contains("install the velero CLI v1.16"));
}

#[test]
fn a_failed_backup_is_an_infrastructure_failure_and_nothing_is_deleted() {
    let (dir, drill_path, kubeconfig, server) = served();
    crate::common::bench_bin()
        .arg("run")
        .arg(&drill_path)
        .args(["--backend", "kubeconfig", "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--out")
        .arg(dir.path().join("out"))
        .env("PATH", stand_in_path())
        .env("DRILLBENCH_FAKE_CLI_LOG", dir.path().join("calls.log"))
        .env(
            "DRILLBENCH_FAKE_CLI_FAIL",
            "backup storage location not available",
        )
        .env("DRILLBENCH_FAKE_CLI_FAIL_ON", "backup create")
        .env("DRILLBENCH_S3_URL", "http://s3.drillbench.invalid:9000")
        .env("DRILLBENCH_RUNS_DIR", dir.path().join("runs"))
        .assert()
        .code(3)
        .stderr(contains("backup storage location not available"));
    // The namespace was not deleted: without a backup there is nothing to
    // restore it from.
    assert_eq!(
        get(&server, "/apis/apps/v1/namespaces/data/deployments")["items"][0]["metadata"]["name"],
        "db"
    );
    server.stop();
    let calls = calls(dir.path(), &kubeconfig);
    assert!(!calls.contains("restore create"), "{calls}");
}
