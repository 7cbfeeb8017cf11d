//! `bench list`, `bench schema` and `bench run` as a person uses them.

use crate::common;

use common::{bench, root};

#[test]
fn list_shows_every_built_in_drill_on_one_line() {
    let run = bench(&["list"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let drills: Vec<_> = std::fs::read_dir(root().join("scenarios"))
        .expect("scenarios/")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        .collect();
    assert_eq!(run.stdout.lines().count(), drills.len());
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("cp-recreate "))
        .expect("cp-recreate is listed");
    assert!(line.contains("Recreate the control plane"), "{line}");
}

#[test]
fn schema_is_the_committed_one_and_accepts_the_built_in_drills() {
    let run = bench(&["schema"]);
    assert_eq!(run.code, 0);
    let committed = std::fs::read_to_string(root().join("harness/schema/drill.schema.json"))
        .expect("committed schema");
    assert_eq!(
        run.stdout, committed,
        "harness/schema/drill.schema.json is stale: run `cargo run -- schema > harness/schema/drill.schema.json`"
    );
    let schema: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    for entry in std::fs::read_dir(root().join("scenarios")).expect("scenarios/") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        let doc: serde_json::Value = serde_saphyr::from_str(&text).expect("YAML");
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
    // The schema refuses what the loader refuses: an unknown field, an
    // unknown enum value, a wrong apiVersion.
    for (name, pointer) in [
        ("unknown-top-field", "clusters"),
        ("unknown-nested-field", "lables"),
        ("wrong-api-version", "drillbench/v1"),
        ("unknown-operator", "Equals"),
    ] {
        let text = std::fs::read_to_string(root().join(format!("tests/bad-drills/{name}.yaml")))
            .expect("corpus file");
        let doc: serde_json::Value = serde_saphyr::from_str(&text).expect("YAML");
        assert!(
            !validator.is_valid(&doc),
            "{name}: the schema must refuse `{pointer}`"
        );
    }
}

#[test]
fn run_validates_first_and_never_pretends_a_drill_ran() {
    let out = tempfile::tempdir().expect("tempdir");
    let out_dir = out.path().join("reports");
    let out_arg = out_dir.to_str().expect("utf-8");

    let run = bench(&[
        "run",
        "tests/bad-drills/undefined-pool.yaml",
        "--out",
        out_arg,
    ]);
    assert_eq!(
        run.code, 2,
        "bad input is exit 2, before any backend is considered"
    );
    assert!(run.stderr.contains("undefined-pool.yaml:13:17"));

    let run = bench(&["run", "no-such-drill"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains(
            "no drill named `no-such-drill`; expected a drill file or one of: autoscaler-scale-down, cp-recreate, full-rebuild, namespace-restore, node-loss, pre-upgrade, stranded-pool, unlabelled-autoscaler-node"
        ),
        "{}",
        run.stderr
    );

    // The kubeconfig backend is built: without its kubeconfig the flags
    // are incomplete, which is bad input and runs nothing.
    let run = bench(&[
        "run",
        "cp-recreate",
        "--backend",
        "kubeconfig",
        "--out",
        out_arg,
    ]);
    assert_eq!(run.code, 2, "kubeconfig: {}", run.stderr);
    assert!(run.stderr.contains("--kubeconfig <FILE>"), "{}", run.stderr);
    assert!(!out_dir.exists(), "kubeconfig: no report without a cluster");

    // kind cannot recreate control planes: refused before a cluster exists.
    // (Missing CLIs are covered by tests/real_backends_cli.rs.)
    let run = bench(&["run", "cp-recreate", "--backend", "kind", "--out", out_arg]);
    assert_eq!(run.code, 3, "kind: {}", run.stderr);
    assert!(
        run.stderr
            .contains("the kind backend cannot recreate control-plane nodes; use --backend talos or sim; nothing ran"),
        "{}",
        run.stderr
    );
    assert!(
        !out_dir.exists(),
        "kind: no report for a drill that did not run"
    );
}

#[test]
fn a_sweep_in_a_ci_log_prints_one_progress_line_per_tenth() {
    let out = tempfile::tempdir().expect("tempdir");
    let run = bench(&[
        "run",
        "cp-recreate",
        "--runs",
        "20",
        "--out",
        out.path().to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let expected: Vec<String> = (1..=10)
        .map(|t| format!("progress: {}/20 runs", 2 * t))
        .collect();
    assert_eq!(run.stderr.lines().collect::<Vec<_>>(), expected);
    assert!(
        run.stdout
            .starts_with("cp-recreate on sim: 20 runs from seed 1, 0 failed"),
        "{}",
        run.stdout
    );
}

#[test]
fn sim_serve_keeps_a_kubeconfig_it_did_not_write() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config");
    let users = "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster: {server: https://prod.example}\n";
    std::fs::write(&config, users).expect("write");
    let config_arg = config.to_str().expect("utf-8");
    let run = bench(&[
        "sim",
        "serve",
        "cp-recreate",
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig-out",
        config_arg,
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("pass --force"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&config).expect("kept"), users);
}
