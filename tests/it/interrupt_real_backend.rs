//! Ctrl-C during a drill on a real cluster (here a served simulator through
//! `--backend kubeconfig`): the drill ends through its teardown with a
//! report of what ran, and exits 130 — never 1, which would say the
//! platform regressed.

use drillbench_model::drill::Drill;
use drillbench_serve::{Clock, ServeOptions, Server};

use crate::common::root;

#[test]
fn ctrl_c_on_a_real_backend_is_exit_130_with_a_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig.yaml");
    let drill = Drill::load(&root().join("scenarios/node-loss.yaml")).expect("built-in");
    // Sixty times the wall clock: the drill's thirty minutes take thirty
    // seconds, so the signal lands while it runs.
    let server = Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: Some(kubeconfig.clone()),
            clock: Clock::Speed(60.0),
            seed: 1,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts");
    let out = dir.path().join("reports");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("bench"))
        .args([
            "run",
            "node-loss",
            "--backend",
            "kubeconfig",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .arg("--out")
        .arg(&out)
        .current_dir(root())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bench starts");
    // Past validation and connection, into the drill's steps.
    std::thread::sleep(std::time::Duration::from_secs(6));
    let kill = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    let output = child.wait_with_output().expect("bench ends");
    server.stop();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("report.json")).expect("a report of what ran"),
    )
    .expect("JSON");
    assert_eq!(report["outcome"], "aborted", "{report}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("interrupted"), "{stdout}");
}
