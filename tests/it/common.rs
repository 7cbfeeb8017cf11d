//! Helpers shared by the integration tests: run the real `bench` binary
//! from the repository root, as a person would.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The repository root, where relative paths in tests resolve.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// What a `bench` run printed and how it exited.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `bench` with `args` in the repository root.
pub fn bench(args: &[&str]) -> Run {
    bench_in(&root(), args)
}

/// The `bench` binary this test run built, with nothing of its own set.
pub fn bench_bin() -> assert_cmd::Command {
    assert_cmd::Command::cargo_bin("bench").expect("the bench binary is built")
}

/// `bench` as a person runs it in `dir`: no colour, no input, and no
/// scenario directory inherited from the environment; nor the GitHub
/// Actions step the tests may run in, whose job summary is not theirs.
pub fn bench_cmd(dir: &Path) -> assert_cmd::Command {
    let mut cmd = bench_bin();
    cmd.current_dir(dir)
        .env_remove("BENCH_SCENARIO_DIR")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("NO_COLOR", "1");
    cmd
}

/// Runs `bench` with `args` in `dir`.
pub fn bench_in(dir: &Path, args: &[&str]) -> Run {
    Run::from(
        bench_cmd(dir)
            .args(args)
            .output()
            .expect("the bench binary runs"),
    )
}

impl From<Output> for Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

/// Whether `program` runs (`program probe…` succeeds). When it does not,
/// a test that needs it skips, saying so on stderr, except under `CI=true`:
/// CI installs every tool its tests need, so there a missing one fails.
pub fn tool_or_skip(program: &str, probe: &[&str], install: &str) -> bool {
    let why = match Command::new(program).args(probe).output() {
        Ok(out) if out.status.success() => return true,
        Ok(out) => format!(
            "`{program} {}` failed: {}",
            probe.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => format!("{program} cannot run: {e}"),
    };
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{why}; under CI every tool must be there ({install})"
    );
    eprintln!("skipped: {why}; {install}");
    false
}

pub use drillbench_model::test_support::with_namespaces;

/// Every latency pinned to the constant the simulator used before latencies
/// were drawn (a 5 s start-up, a 10 s detach, no image pull, attach or
/// replacement boot): for tests that time an upstream rule, not a latency.
pub const FIXED_LATENCIES: &str = "  latencies:
    podStartup: {min: 5s, median: 5s, p99: 5s}
    imagePull: {min: 0s, median: 0s, p99: 0s}
    volumeAttach: {min: 0s, median: 0s, p99: 0s}
    volumeDetach: {min: 10s, median: 10s, p99: 10s}
    nodeBoot: {min: 0s, median: 0s, p99: 0s}
";

/// A drill's text with [`FIXED_LATENCIES`] in its `cluster:` section.
pub fn with_fixed_latencies(drill: &str) -> String {
    drill.replacen("\ncluster:\n", &format!("\ncluster:\n{FIXED_LATENCIES}"), 1)
}
