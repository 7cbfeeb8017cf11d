//! Drilling a snapshot: `bench run NAME --snapshot FILE` and a drill's
//! `cluster.fromSnapshot`, on the production-shaped fixture of
//! `harness/snapshots/` and on a capture of a served drill taken with the
//! real `kubectl`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::common::{bench, bench_in, root};
use crate::kubectl_support::serve_drill;
use drillbench_model::snapshot::{ClusterSnapshot, SnapshotSource};

const PROD: &str = "harness/snapshots/prod.snapshot.json";

fn report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    serde_json::from_str(&text).expect("JSON report")
}

/// The node each pod was first bound to, from a report's timeline.
fn first_nodes(report: &Value) -> BTreeMap<String, String> {
    let mut nodes = BTreeMap::new();
    for event in report["timeline"].as_array().expect("timeline") {
        if event["kind"] == "PodScheduled" {
            let pod = format!(
                "{}/{}",
                event["object"]["namespace"].as_str().unwrap_or_default(),
                event["object"]["name"].as_str().unwrap_or_default()
            );
            let node = event["node"].as_str().unwrap_or_default().to_owned();
            nodes.entry(pod).or_insert(node);
        }
    }
    nodes
}

/// The nodes a workload's first pods were bound to at time zero, sorted.
fn initial_nodes_of(report: &Value, namespace: &str, prefix: &str) -> Vec<String> {
    let mut nodes: Vec<String> = report["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter(|e| e["kind"] == "PodScheduled" && e["atMs"] == 0)
        .filter(|e| {
            e["object"]["namespace"] == namespace
                && e["object"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with(prefix))
        })
        .map(|e| e["node"].as_str().unwrap_or_default().to_owned())
        .collect();
    nodes.sort();
    nodes
}

fn assertion<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["assertions"]
        .as_array()
        .expect("assertions")
        .iter()
        .find(|a| a["name"] == name)
        .unwrap_or_else(|| panic!("assertion {name}"))
}

#[test]
fn node_loss_judges_the_production_snapshot_from_where_its_pods_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("r");
    let run = bench(&[
        "run",
        "node-loss",
        "--snapshot",
        PROD,
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    // Production's Coroot keeper runs on an autoscaler node (#3287's
    // evidence): the placement guard's assertion says so, exit 1.
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let report = report(&out);
    let placement = assertion(&report, "hcloud-off-autoscalers");
    assert_eq!(placement["verdict"], "fail", "{placement}");
    assert!(
        placement.to_string().contains("coroot-clickhouse-keeper-0")
            && placement
                .to_string()
                .contains("autoscale-cx43-6406b46e4820452e"),
        "{placement}"
    );
    // Every captured pod starts on the node it was captured on.
    assert_eq!(
        initial_nodes_of(&report, "apps", "api-"),
        [
            "autoscale-cx43-6406b46e4820452e",
            "prod-worker-1",
            "prod-worker-2"
        ]
    );
    assert_eq!(
        initial_nodes_of(&report, "apps", "web-"),
        ["prod-worker-1", "prod-worker-3"]
    );
    let first = first_nodes(&report);
    assert_eq!(first["openbao/openbao-0"], "prod-worker-1");
    assert_eq!(
        first["observability/coroot-clickhouse-keeper-0"],
        "autoscale-cx43-6406b46e4820452e"
    );
    assert_eq!(first["apps/debug-shell"], "prod-worker-2");
    // The pod of an operator's custom resource is listed, not simulated.
    assert!(
        report["notSimulated"]
            .as_array()
            .expect("notSimulated")
            .iter()
            .any(|o| o["kind"] == "Pod" && o["name"] == "pg-1"),
        "{}",
        report["notSimulated"]
    );
    // The replay line names the snapshot.
    assert!(
        run.stdout
            .contains(&format!("bench run node-loss --snapshot {PROD} --seed 1")),
        "{}",
        run.stdout
    );
    // The pools: static baseline, the autoscaler's from its flags (the
    // one with no node included), the control planes as captured.
    let pools: Vec<&str> = report["topology"]["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(pools, ["autoscale-cx43", "baseline", "autoscale-cx53"]);
}

#[test]
fn the_same_snapshot_and_seed_write_the_same_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut reports = Vec::new();
    for name in ["a", "b"] {
        let out = dir.path().join(name);
        let run = bench(&[
            "run",
            "node-loss",
            "--snapshot",
            PROD,
            "--seed",
            "7",
            "--out",
            out.to_str().expect("utf-8"),
        ]);
        assert_eq!(run.code, 1, "{}", run.stderr);
        reports.push(std::fs::read(out.join("report.json")).expect("report"));
    }
    assert!(reports[0] == reports[1], "the two reports differ");
}

/// A drill file beside a copy of the production snapshot, edited by `edit`.
fn drill_on(dir: &Path, edit: impl FnOnce(&mut Value), drill: &str) -> std::path::PathBuf {
    let mut snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(PROD)).expect("fixture"))
            .expect("JSON");
    edit(&mut snapshot);
    std::fs::write(
        dir.join("prod.snapshot.json"),
        serde_json::to_string_pretty(&snapshot).expect("JSON"),
    )
    .expect("write snapshot");
    let path = dir.join("drill.yaml");
    std::fs::write(&path, drill).expect("write drill");
    path
}

/// The report of `drill` run in `dir`, which must pass.
fn run_green(dir: &Path, drill: &Path) -> Value {
    let run = bench_in(dir, &["run", drill.to_str().expect("utf-8"), "--out", "r"]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    report(&dir.join("r"))
}

const SMALL_DRILL: &str = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: snap}
cluster:
  fromSnapshot: prod.snapshot.json
steps:
  - name: a worker dies
    fault:
      crashNode: {target: {node: prod-worker-3}}
  - name: wait
    wait: {for: 1m}
assertions:
  - name: quorum-kept
    quorum: {}
";

#[test]
fn a_pod_whose_captured_node_is_gone_is_scheduled_and_says_so() {
    let dir = tempfile::tempdir().expect("tempdir");
    // web's pod on prod-worker-3 was captured on a node the snapshot no
    // longer lists.
    let drill = drill_on(
        dir.path(),
        |s| {
            for item in s["items"].as_array_mut().expect("items") {
                if item["kind"] == "Pod" && item["metadata"]["name"] == "web-7c9d5b8f6-r5t6y" {
                    item["spec"]["nodeName"] = "prod-worker-9".into();
                }
            }
        },
        SMALL_DRILL,
    );
    let report = run_green(dir.path(), &drill);
    let said: Vec<&Value> = report["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter(|e| {
            e["kind"] == "PodCreated"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("captured on node `prod-worker-9`"))
        })
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    // The other web pod still starts where it was captured; the moved one
    // wherever the scheduler put it, not on a node that does not exist.
    let nodes = initial_nodes_of(&report, "apps", "web-");
    assert!(nodes.contains(&"prod-worker-1".to_owned()), "{nodes:?}");
    assert!(!nodes.contains(&"prod-worker-9".to_owned()), "{nodes:?}");
}

#[test]
fn a_bad_snapshot_is_bad_input_with_its_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("drill.yaml"), SMALL_DRILL).expect("drill");
    // Missing: the drill's `fromSnapshot:` line.
    let run = bench_in(dir.path(), &["validate", "drill.yaml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("drill.yaml:5:17") && run.stderr.contains("cannot read snapshot"),
        "{}",
        run.stderr
    );
    // Not JSON of the shape: the snapshot's own line and column.
    std::fs::write(
        dir.path().join("prod.snapshot.json"),
        "{\n  \"apiVersion\": \"drillbench.dev/v1alpha1\",\n  \"kind\": \"ClusterSnapshot\",\n  \"itemz\": []\n}\n",
    )
    .expect("snapshot");
    let run = bench_in(dir.path(), &["validate", "drill.yaml"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("prod.snapshot.json:4:") && run.stderr.contains("itemz"),
        "{}",
        run.stderr
    );
    // A provisioner of unknown behaviour: at its `provisioner` field, and
    // a `storageClasses:` entry of the drill settles it.
    let drill = drill_on(
        dir.path(),
        |s| {
            for item in s["items"].as_array_mut().expect("items") {
                if item["kind"] == "StorageClass" && item["metadata"]["name"] == "hcloud" {
                    item["provisioner"] = "ebs.csi.aws.com".into();
                }
            }
        },
        SMALL_DRILL,
    );
    let run = bench_in(dir.path(), &["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("prod.snapshot.json:")
            && run.stderr.contains("provisioner `ebs.csi.aws.com`"),
        "{}",
        run.stderr
    );
    let settled = SMALL_DRILL.replace(
        "  fromSnapshot: prod.snapshot.json\n",
        "  fromSnapshot: prod.snapshot.json\n  storageClasses:\n    - {name: hcloud, attach: SingleNode}\n",
    );
    std::fs::write(&drill, settled).expect("drill");
    let run = bench_in(dir.path(), &["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

/// The production snapshot with the cluster-autoscaler's `--expander` flag
/// (on every captured copy of its pod template) replaced by `flag`.
fn with_autoscaler_flag(snapshot: &mut Value, flag: &str) {
    for item in snapshot["items"].as_array_mut().expect("items") {
        let pointer = if item.pointer("/spec/template").is_some() {
            "/spec/template/spec/containers"
        } else {
            "/spec/containers"
        };
        let Some(containers) = item.pointer_mut(pointer).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers {
            for field in ["command", "args"] {
                for word in container[field].as_array_mut().into_iter().flatten() {
                    if word.as_str().is_some_and(|w| w.starts_with("--expander=")) {
                        *word = flag.into();
                    }
                }
            }
        }
    }
}

#[test]
fn the_autoscalers_flags_in_the_snapshot_set_its_settings_or_are_refused_at_their_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A flag value the autoscaler reads but the bench cannot: exit 2 at the
    // container in the snapshot, before anything runs.
    let drill = drill_on(
        dir.path(),
        |s| with_autoscaler_flag(s, "--scale-down-delay-after-add=ten minutes"),
        SMALL_DRILL,
    );
    let run = bench_in(dir.path(), &["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("prod.snapshot.json:")
            && run
                .stderr
                .contains("`--scale-down-delay-after-add=ten minutes`"),
        "{}",
        run.stderr
    );
    // Control: the same flag in Go's duration form is read, and the run
    // reports the setting it took.
    let drill = drill_on(
        dir.path(),
        |s| with_autoscaler_flag(s, "--scale-down-delay-after-add=25m"),
        SMALL_DRILL,
    );
    let report = run_green(dir.path(), &drill);
    assert_eq!(
        report
            .pointer("/topology/autoscaler/scaleDownDelayAfterAdd")
            .and_then(Value::as_str),
        Some("25m"),
        "{}",
        report["topology"]["autoscaler"]
    );
}

#[test]
fn a_fault_target_the_snapshot_lacks_names_the_snapshots_pools() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drill = drill_on(
        dir.path(),
        |_| {},
        &SMALL_DRILL.replace("prod-worker-3", "worker-3"),
    );
    let run = bench_in(dir.path(), &["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("`worker-3` is not a node of the cluster")
            && run.stderr.contains(
                "the snapshot's pools: control-plane, autoscale-cx43, baseline, autoscale-cx53"
            ),
        "{}",
        run.stderr
    );
    // The control: the node the snapshot has.
    let drill = drill_on(dir.path(), |_| {}, SMALL_DRILL);
    let run = bench_in(dir.path(), &["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn a_drill_workload_that_repeats_a_snapshot_object_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let with = |name: &str| {
        SMALL_DRILL.replace(
            "steps:\n",
            &format!(
                "workloads:\n  - inline:\n      apiVersion: v1\n      kind: Namespace\n      metadata: {{name: {name}}}\nsteps:\n"
            ),
        )
    };
    let drill = drill_on(dir.path(), |_| {}, &with("apps"));
    let run = bench_in(dir.path(), &["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("prod.snapshot.json"), "{}", run.stderr);
    // A new object combines with the snapshot's.
    let drill = drill_on(dir.path(), |_| {}, &with("extra"));
    let run = bench_in(dir.path(), &["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
}

#[test]
fn snapshot_runs_only_on_the_simulator() {
    let run = bench(&[
        "run",
        "node-loss",
        "--snapshot",
        PROD,
        "--backend",
        "kubeconfig",
        "--kubeconfig",
        "/nonexistent",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("--snapshot"), "{}", run.stderr);
}

/// `kubectl get … -o json` of a served cluster, as a ClusterSnapshot (what
/// `bench snapshot` writes, taken here with kubectl: the capture itself is
/// tested with `bench snapshot`).
fn capture(served: &crate::kubectl_support::Served) -> ClusterSnapshot {
    let listed = served.ok(&[
        "get",
        // No claims: the façade shows them without the size the API
        // server requires (the StatefulSets' claim templates make them).
        "nodes,pods,deployments,statefulsets,daemonsets,jobs,pv,storageclasses,pdb,namespaces",
        "-A",
        "-o",
        "json",
    ]);
    let list: Value = serde_json::from_str(&listed).expect("kubectl prints JSON");
    let items = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .cloned()
        .map(|mut item| {
            if let Some(meta) = item["metadata"].as_object_mut() {
                meta.remove("managedFields");
            }
            item
        })
        .collect();
    ClusterSnapshot::new(
        SnapshotSource {
            context: None,
            server: served.server.url(),
            namespaces: vec![],
        },
        items,
    )
}

#[test]
fn a_served_drill_captured_and_drilled_keeps_its_pods_and_its_verdicts() {
    let Some(served) = serve_drill("scenarios/node-loss.yaml") else {
        return;
    };
    let snapshot = capture(&served);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("served.snapshot.json");
    std::fs::write(
        &file,
        serde_json::to_string_pretty(&snapshot).expect("JSON"),
    )
    .expect("write");
    let out = dir.path().join("r");
    let run = bench(&[
        "run",
        "node-loss",
        "--snapshot",
        file.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    // The same verdicts as the drill on its own cluster: every one held.
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let report = report(&out);
    // Each captured pod of a StatefulSet (whose names the simulator
    // keeps) starts on the node it was captured on.
    let first = first_nodes(&report);
    let mut checked = 0;
    for item in &snapshot.items {
        let owned_by_sts = item["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet";
        if item["kind"] != "Pod" || !owned_by_sts {
            continue;
        }
        let pod = format!(
            "{}/{}",
            item["metadata"]["namespace"].as_str().unwrap_or_default(),
            item["metadata"]["name"].as_str().unwrap_or_default()
        );
        assert_eq!(
            first.get(&pod).map(String::as_str),
            item["spec"]["nodeName"].as_str(),
            "{pod}"
        );
        checked += 1;
    }
    assert!(checked >= 3, "only {checked} StatefulSet pods captured");
}
