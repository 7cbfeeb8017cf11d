//! `bench run --backend kind|talos` refuses what it cannot do before it
//! creates anything, and says what to install when a CLI is missing.
//! (The drivers themselves are tested against stand-ins in
//! `kind_driver.rs` and `talos_driver.rs`; real clusters in `e2e_real.rs`.)

use crate::common;

struct Run {
    code: i32,
    stderr: String,
}

/// `bench` with a PATH holding only `dir` and the system folders, and a
/// run registry of its own, so nothing real can be created.
fn bench_without_tools(args: &[&str], registry: &std::path::Path) -> Run {
    let empty = tempfile::tempdir().expect("tempdir");
    let output = crate::common::bench_bin()
        .args(args)
        .current_dir(common::root())
        .env("PATH", format!("{}:/usr/bin:/bin", empty.path().display()))
        .env("DRILLBENCH_RUNS_DIR", registry)
        .env("NO_COLOR", "1")
        .output()
        .expect("bench runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn kind_refuses_a_control_plane_recreate_before_creating_anything() {
    let registry = tempfile::tempdir().expect("tempdir");
    let run = bench_without_tools(
        &["run", "cp-recreate", "--backend", "kind"],
        registry.path(),
    );
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "the kind backend cannot recreate control-plane nodes; use --backend talos or sim"
        ),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nothing ran"), "{}", run.stderr);
    let recorded = std::fs::read_dir(registry.path()).map_or(0, |d| d.count());
    assert_eq!(recorded, 0, "no run was recorded");
}

/// A drill every real backend can run: one worker crashes.
const CRASH_A_WORKER: &str = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: crash-a-worker
cluster:
  pools:
    - name: workers
      count: 2
      serverType: cx43
steps:
  - name: a worker loses power
    fault:
      crashNode: {target: {randomNodeOf: workers}}
  - wait: {for: 1m}
assertions:
  - name: quorum
    quorum: {}
";

#[test]
fn a_missing_cli_is_an_infrastructure_error_that_says_what_to_install() {
    let registry = tempfile::tempdir().expect("tempdir");
    let drill = registry.path().join("crash-a-worker.yaml");
    std::fs::write(&drill, CRASH_A_WORKER).expect("write the drill");
    let drill = drill.to_str().expect("utf-8");
    for (backend, tool) in [("kind", "install kind"), ("talos", "talosctl")] {
        let run = bench_without_tools(&["run", drill, "--backend", backend], registry.path());
        assert_eq!(run.code, 3, "{backend}: {}", run.stderr);
        // Docker may be missing too on the machine running the test; either
        // way the message names what to install.
        assert!(
            run.stderr.contains(tool) || run.stderr.contains("install Docker"),
            "{backend}: {}",
            run.stderr
        );
    }
}

#[test]
fn real_clusters_run_one_seed_at_a_time() {
    let registry = tempfile::tempdir().expect("tempdir");
    let run = bench_without_tools(
        &["run", "node-loss", "--backend", "kind", "--runs", "3"],
        registry.path(),
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("--runs sweeps seeds of the simulator"),
        "{}",
        run.stderr
    );
}

#[test]
fn list_for_a_backend_leaves_out_what_it_cannot_run_and_says_why() {
    let registry = tempfile::tempdir().expect("tempdir");
    let all = common::bench(&["list"]);
    let run = crate::common::bench_bin()
        .args(["list", "--backend", "kind"])
        .current_dir(common::root())
        .env("DRILLBENCH_RUNS_DIR", registry.path())
        .output()
        .expect("bench runs");
    assert_eq!(run.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let names = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_owned)
            .collect()
    };
    let listed = names(&stdout);
    assert!(!listed.contains(&"cp-recreate".to_owned()), "{stdout}");
    // Burst capacity comes from the bench's emulated autoscaler.
    assert!(
        listed.contains(&"autoscaler-scale-down".to_owned()),
        "{stdout}{stderr}"
    );
    assert!(
        stderr.contains("left out cp-recreate: the kind backend cannot recreate control-plane nodes; use --backend talos or sim"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "left out pre-upgrade: the kind backend cannot run a rolling upgrade; use --backend sim"
        ),
        "{stderr}"
    );
    // Every built-in drill is either listed or left out with a reason.
    assert_eq!(
        listed.len()
            + stderr
                .lines()
                .filter(|l| l.starts_with("left out "))
                .count(),
        names(&all.stdout).len()
    );
}
