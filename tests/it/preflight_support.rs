//! Building preflight inputs from the recorded healthy cluster and running
//! the real `bench` binary on them.

#![allow(dead_code)] // Each test crate that includes this uses a subset.

use serde_json::Value;

/// `kubectl get nodes -o json` of the healthy production-shaped cluster.
pub const NODES: &str = include_str!("../../harness/fixtures/preflight/nodes.json");
/// `kubectl get backups.velero.io -n velero -o json` of the same cluster.
pub const BACKUPS: &str = include_str!("../../harness/fixtures/preflight/backups.json");
/// 2026-11-29T12:00:00Z: 8 h 17 min after the newest daily backup finished.
pub const NOW: &str = "1795953600";

/// What one run printed and returned.
#[derive(Debug)]
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// One preflight invocation: the healthy baseline plus one change.
pub struct Case {
    nodes: Value,
    backups: Value,
    nodes_text: Option<String>,
    args: Vec<(String, String)>,
}

impl Case {
    /// The recorded healthy cluster with healthy counts and flags.
    pub fn healthy() -> Self {
        Case {
            nodes: serde_json::from_str(NODES).expect("nodes fixture is JSON"),
            backups: serde_json::from_str(BACKUPS).expect("backups fixture is JSON"),
            nodes_text: None,
            args: [
                ("--target", "prod-control-plane-4"),
                ("--nodes", "{nodes}"),
                ("--backups", "{backups}"),
                ("--etcd-members", "3"),
                ("--etcd-learners", "0"),
                ("--vip-holder", "prod-control-plane-2"),
                ("--now", NOW),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
        }
    }

    /// Sets `flag` to `value`, replacing the baseline's value if any.
    pub fn arg(mut self, flag: &str, value: &str) -> Self {
        match self.args.iter_mut().find(|(k, _)| k == flag) {
            Some(slot) => slot.1 = value.to_owned(),
            None => self.args.push((flag.to_owned(), value.to_owned())),
        }
        self
    }

    /// Drops `flag` from the command line.
    pub fn without(mut self, flag: &str) -> Self {
        self.args.retain(|(k, _)| k != flag);
        self
    }

    /// Edits the nodes dump.
    pub fn nodes(mut self, edit: impl FnOnce(&mut Value)) -> Self {
        edit(&mut self.nodes);
        self
    }

    /// Edits the backups dump.
    pub fn backups(mut self, edit: impl FnOnce(&mut Value)) -> Self {
        edit(&mut self.backups);
        self
    }

    /// Replaces the nodes file with raw text.
    pub fn nodes_text(mut self, text: &str) -> Self {
        self.nodes_text = Some(text.to_owned());
        self
    }

    /// Writes the dumps to a fresh directory and runs the binary.
    pub fn run(self) -> Outcome {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let nodes = dir.path().join("nodes.json");
        let backups = dir.path().join("backups.json");
        let nodes_text = self
            .nodes_text
            .unwrap_or_else(|| serde_json::to_string_pretty(&self.nodes).unwrap());
        std::fs::write(&nodes, nodes_text).unwrap();
        std::fs::write(
            &backups,
            serde_json::to_string_pretty(&self.backups).unwrap(),
        )
        .unwrap();
        let mut argv = vec!["preflight".to_owned(), "cp-recreate".to_owned()];
        for (flag, value) in self.args {
            let value = value
                .replace("{nodes}", nodes.to_str().unwrap())
                .replace("{backups}", backups.to_str().unwrap());
            // `--flag=value`, so a value like `-1` cannot be read as a flag.
            argv.push(format!("{flag}={value}"));
        }
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        run_raw(&argv, &[])
    }
}

/// Runs `bench` with `args` and extra environment variables.
pub fn run_raw(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let output = crate::common::bench_bin()
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("the bench binary runs");
    Outcome {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

/// Sets a node's `Ready` condition status.
pub fn set_ready(node: &mut Value, status: &str) {
    let conditions = node["status"]["conditions"].as_array_mut().unwrap();
    let ready = conditions
        .iter_mut()
        .find(|c| c["type"] == "Ready")
        .expect("a Ready condition");
    ready["status"] = status.into();
}

/// Removes a node's `Ready` condition.
pub fn without_ready(node: &mut Value) {
    let conditions = node["status"]["conditions"].as_array_mut().unwrap();
    conditions.retain(|c| c["type"] != "Ready");
}
