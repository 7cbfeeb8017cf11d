//! The bench's emulated cluster autoscaler, end to end: `bench run
//! autoscaler-scale-down --backend kind` with the stand-in `kind` and
//! `docker` of `harness/fake-cli`, on a served simulator that boots standby
//! nodes and runs no autoscaler of its own (`--standby-nodes`), as a kind
//! cluster is. Every scale-up and scale-down then comes from the bench, and
//! the drill must reach the simulator's verdicts.

use crate::fake_support;

use std::collections::BTreeMap;
use std::path::Path;

use drillbench_model::drill::Drill;
use drillbench_serve::{Clock, ServeOptions, Server};
use fake_support::wrapped;
use serde_json::Value;

const DRILL: &str = "autoscaler-scale-down";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The served cluster listens where the stand-in `kind` says its first
/// control plane is (`ip`, port 6443), so the bench reaches it through its
/// own stable endpoint as on a real kind cluster. Each test takes its own
/// loopback address (see [`loopback`]).
fn serve_with_standby(per_pool: u32, ip: &str) -> Server {
    let path = root().join("scenarios").join(format!("{DRILL}.yaml"));
    let drill = Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)));
    Server::start(
        &drill,
        &ServeOptions {
            listen: format!("{ip}:6443").parse().unwrap(),
            kubeconfig_out: None,
            clock: Clock::Step,
            seed: 1,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: Some(per_pool),
            limits: Default::default(),
        },
    )
    .expect("the server starts")
}

/// `127.<second>.x.y` with `x.y` this process's id: the port is kind's
/// fixed 6443, so two checkouts testing at once need different addresses.
fn loopback(second: u8) -> String {
    let [.., x, y] = std::process::id().to_be_bytes();
    format!("127.{second}.{x}.{y}")
}

struct Outcome {
    code: i32,
    stderr: String,
    report: Option<Value>,
}

impl Outcome {
    fn report(&self) -> &Value {
        self.report
            .as_ref()
            .unwrap_or_else(|| panic!("no report; stderr:\n{}", self.stderr))
    }
}

/// `bench run DRILL` with `args`, the stand-ins first on PATH.
fn bench(dir: &Path, server: Option<&Server>, args: &[&str]) -> Outcome {
    let env: Vec<(&str, String)> = server
        .map(|s| {
            vec![
                ("DRILLBENCH_FAKE_SERVER", s.url()),
                ("DRILLBENCH_FAKE_TOKEN", s.token().as_str().to_owned()),
                ("DRILLBENCH_FAKE_API_IP", s.addr().ip().to_string()),
            ]
        })
        .unwrap_or_default();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for program in ["kind", "docker", "talosctl"] {
        wrapped(dir, program, &env);
    }
    let out = dir.join("out");
    let output = crate::common::bench_bin()
        .args(["run", DRILL, "--out"])
        .arg(&out)
        .args(args)
        .current_dir(root())
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", dir.join("bin").display()),
        )
        .env("DRILLBENCH_RUNS_DIR", dir.join("runs"))
        .env("NO_COLOR", "1")
        .output()
        .expect("bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let report = std::fs::read_to_string(out.join("report.json"))
        .ok()
        .map(|text| serde_json::from_str(&text).expect("the report is JSON"));
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stderr,
        report,
    }
}

/// Each assertion's name and verdict.
fn verdicts(report: &Value) -> BTreeMap<String, String> {
    report["assertions"]
        .as_array()
        .expect("assertions")
        .iter()
        .map(|a| {
            (
                a["name"].as_str().unwrap().to_owned(),
                a["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The timeline's events of a kind: (node, message).
fn events(report: &Value, kind: &str) -> Vec<(String, String)> {
    report["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .filter(|e| e["kind"] == kind)
        .map(|e| {
            (
                e["node"].as_str().unwrap_or_default().to_owned(),
                e["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_bench_autoscales_a_kind_cluster_to_the_simulators_verdicts() {
    let sim_dir = tempfile::tempdir().unwrap();
    let sim = bench(sim_dir.path(), None, &["--backend", "sim"]);
    assert_eq!(sim.code, 0, "{}", sim.stderr);

    let server = serve_with_standby(2, &loopback(13));
    let dir = tempfile::tempdir().unwrap();
    let kind = bench(
        dir.path(),
        Some(&server),
        &["--backend", "kind", "--standby-nodes", "2"],
    );
    assert_eq!(kind.report()["backend"], "kind");
    // The admission control is judged by the kind cluster's own admission
    // (a dry run), by the emulation of the drill's admission chain on sim.
    // A kind cluster the bench creates runs no policy engine (the stand-in
    // resets the served simulator with no guards and no policies), so its
    // API server admits the planted consumer and the control truthfully
    // has no teeth there (docs/backends.md); every other verdict is the
    // simulator's.
    const ADMISSION: &str = "guard-refuses-an-unguarded-consumer";
    let mut on_kind = verdicts(kind.report());
    let mut on_sim = verdicts(sim.report());
    assert_eq!(on_kind.remove(ADMISSION).as_deref(), Some("fail"));
    assert_eq!(on_sim.remove(ADMISSION).as_deref(), Some("pass"));
    assert_eq!(on_kind, on_sim, "stderr:\n{}", kind.stderr);
    let admission = kind.report()["assertions"]
        .as_array()
        .expect("assertions")
        .iter()
        .find(|a| a["name"] == ADMISSION)
        .expect("the admission control");
    let answer = admission["evidence"][0]["detail"]
        .as_str()
        .unwrap_or_default();
    assert!(
        answer.contains("dryRun=All") && answer.ends_with("-> 201: admitted"),
        "{answer}"
    );
    assert_eq!(
        kind.code, 4,
        "unproven by the server's admission: {}",
        kind.stderr
    );

    // The scale-up was the bench's: standby nodes, named as kind's driver
    // names them, chosen for the unschedulable burst.
    let ups = events(kind.report(), "ScaleUp");
    assert!(!ups.is_empty(), "no scale-up");
    for (node, message) in &ups {
        assert!(node.contains("-standby-"), "{node}: {message}");
        assert!(message.contains("unschedulable pod(s)"), "{message}");
    }
    // And so was the scale-down of what the load no longer needed.
    let downs = events(kind.report(), "ScaleDown");
    assert!(!downs.is_empty(), "no scale-down");
    assert!(
        downs.iter().all(|(n, _)| n.contains("-standby-")),
        "{downs:?}"
    );
    let deleted: Vec<String> = events(kind.report(), "NodeDeleted")
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    for (node, _) in &downs {
        assert!(deleted.contains(node), "{node} scaled down but not deleted");
    }
}

#[test]
fn without_standby_nodes_nothing_scales_up_and_the_drill_cannot_go_on() {
    // The control for the test above: with no standby node to release,
    // the burst never reaches the autoscaled pools, so the drill finds no
    // node there for the autoscaler to reclaim and stops.
    let server = serve_with_standby(0, &loopback(14));
    let dir = tempfile::tempdir().unwrap();
    let kind = bench(
        dir.path(),
        Some(&server),
        &["--backend", "kind", "--standby-nodes", "0"],
    );
    assert_eq!(kind.code, 3, "{}", kind.stderr);
    assert!(
        kind.stderr
            .contains("the autoscaler would pick no node of pool `autoscale-cx53`"),
        "{}",
        kind.stderr
    );
}
