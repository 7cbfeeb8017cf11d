//! How problems read: each said once, and a misspelt drill, node or flag
//! answered with the name that was probably meant.

use crate::common::{bench, bench_in, root};

#[test]
fn each_problem_of_a_drill_is_printed_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drill = dir.path().join("typo.yaml");
    std::fs::write(
        &drill,
        "apiVersion: drillbench.dev/v1alpha1\nkind: Drill\nmetadata:\n  name: x\n\
         cluster:\n  pools: []\nsteps: []\nassertionz: []\n",
    )
    .expect("write");
    for command in ["validate", "run"] {
        let run = bench(&[command, drill.to_str().unwrap()]);
        assert_eq!(run.code, 2, "{command}: {}", run.stderr);
        assert_eq!(
            run.stderr.matches("unknown field `assertionz`").count(),
            1,
            "{command}: {}",
            run.stderr
        );
        // Still with its place and the source around it.
        assert!(
            run.stderr.contains("typo.yaml:8:1: unknown field"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("8 │ assertionz: []"), "{}", run.stderr);
    }
}

/// Every field the schema refuses is reported in one run, in order, each
/// once with its own place: one round to fix a file, not one per error.
#[test]
fn all_the_refused_fields_of_a_drill_come_in_one_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drill = dir.path().join("typos.yaml");
    std::fs::write(
        &drill,
        "apiVersion: drillbench.dev/v1alpha1\nkind: Drill\nmetadata:\n  name: x\n  descripton: d\n\
         cluster:\n  pools: []\n  poolz: []\nsteps: []\nassertionz: []\n",
    )
    .expect("write");
    let run = bench(&["validate", drill.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    let headers: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    let at: Vec<String> = [
        "5:3: unknown field `descripton`",
        "8:3: unknown field `poolz`",
        "10:1: unknown field `assertionz`",
    ]
    .iter()
    .map(|s| format!("typos.yaml:{s}"))
    .collect();
    assert_eq!(headers.len(), at.len(), "{}", run.stderr);
    for (header, at) in headers.iter().zip(&at) {
        assert!(
            header.contains(at.as_str()),
            "{header} / {at}\n{}",
            run.stderr
        );
    }
    for field in ["descripton", "poolz", "assertionz"] {
        assert_eq!(
            run.stderr
                .matches(&format!("unknown field `{field}`"))
                .count(),
            1,
            "{}",
            run.stderr
        );
    }
}

#[test]
fn a_misspelt_drill_name_gets_the_built_in_it_resembles() {
    let dir = tempfile::tempdir().expect("tempdir");
    for command in ["run", "validate"] {
        let run = bench_in(dir.path(), &[command, "cp-recreat"]);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("no drill named `cp-recreat` (did you mean `cp-recreate`?)"),
            "{}",
            run.stderr
        );
    }
    // A name like none gets the list, and no guess.
    let run = bench_in(dir.path(), &["run", "rebuild-the-world"]);
    assert_eq!(run.code, 2);
    assert!(!run.stderr.contains("did you mean"), "{}", run.stderr);
    assert!(
        run.stderr.contains("one of: autoscaler-scale-down"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_misspelt_node_gets_the_node_it_resembles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(root().join("scenarios/node-loss.yaml")).expect("drill");
    let text = text
        .replace("{node: prod-worker-1}", "{node: prod-wroker-1}")
        .replace("../harness/", &format!("{}/harness/", root().display()));
    let drill = dir.path().join("node-loss.yaml");
    std::fs::write(&drill, text).expect("write");
    let run = bench(&["validate", drill.to_str().unwrap()]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "`prod-wroker-1` is not a node of the cluster (did you mean `prod-worker-1`?)"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn seeds_is_answered_with_runs_not_only_seed() {
    let run = bench(&["run", "cp-recreate", "--seeds", "10"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("to sweep many seeds, use '--runs N'"),
        "{}",
        run.stderr
    );
    // An unrelated unknown flag gets no such tip.
    let other = bench(&["run", "cp-recreate", "--sead", "10"]);
    assert_eq!(other.code, 2);
    assert!(!other.stderr.contains("--runs N"), "{}", other.stderr);
}
