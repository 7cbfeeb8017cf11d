//! Helpers shared by the integration tests: run the real `bench` binary
//! from the repository root, as a person would.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

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

/// Runs `bench` with `args` in `dir`.
pub fn bench_in(dir: &Path, args: &[&str]) -> Run {
    let output: Output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
        .current_dir(dir)
        .env_remove("BENCH_SCENARIO_DIR")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .expect("the bench binary runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
