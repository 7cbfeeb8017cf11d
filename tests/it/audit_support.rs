//! Running `bench audit placement` on the realistic rendered bundle and on
//! single-change ablations of it.

#![allow(dead_code)] // Each test crate that includes this uses a subset.

use std::path::Path;

use serde_json::Value;

/// The passing production-shaped bundle, as `kustomize build` prints it.
pub const BUNDLE: &str = include_str!("../../harness/fixtures/audit/bundle.yaml");
/// The label every `hcloud` consumer must require.
pub const LABEL: &str = "platform.devantler.tech/baseline-worker=true";

/// What one run printed and returned.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// The JSON report; panics with the outcome when stdout is not JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:#?}"))
    }

    /// `name -> verdict` for every consumer of a JSON report.
    pub fn verdicts(&self) -> Vec<(String, String)> {
        self.json()["consumers"]
            .as_array()
            .expect("a consumers array")
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["verdict"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    /// The reasons given for one consumer of a JSON report.
    pub fn reasons(&self, name: &str) -> Vec<String> {
        let json = self.json();
        let consumer = json["consumers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no consumer {name}: {self:#?}"));
        consumer["reasons"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap().to_owned())
            .collect()
    }
}

/// `text` with `from` replaced by `to`, which must occur exactly once, so an
/// ablation can never silently stop applying when the fixture changes.
pub fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert_eq!(
        text.matches(from).count(),
        1,
        "the ablation's anchor must occur exactly once:\n{from}"
    );
    text.replacen(from, to, 1)
}

/// Runs `bench audit placement` with `args`, feeding `stdin` when given.
pub fn run(args: &[&str], stdin: Option<&str>) -> Outcome {
    let mut cmd = crate::common::bench_bin();
    cmd.args(["audit", "placement"]).args(args);
    if let Some(text) = stdin {
        cmd.write_stdin(text);
    }
    let output = cmd.output().expect("the bench binary runs");
    Outcome {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

/// Audits `bundle` for `hcloud` consumers requiring [`LABEL`], as JSON.
pub fn audit_json(bundle: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "bundle.yaml", bundle);
    run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            "--format",
            "json",
            file.as_str(),
        ],
        None,
    )
}

/// Writes `text` to `dir/name` and returns the path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}
