//! `bench policy test` through the real binary: the Kyverno suites under
//! `harness/kyverno/` all hold (exit 0); a suite whose expectation the
//! engine contradicts exits 1 with the row that failed; bad input exits 2
//! with file:line:column and judges nothing.

use crate::common::{bench, bench_in};

#[test]
fn the_harness_kyverno_suites_pass() {
    let run = bench(&["policy", "test", "harness/kyverno"]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.matches("Test Summary:").count(),
        4,
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("Test Summary: 12 tests passed and 0 tests failed"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("| Fail "), "{}", run.stdout);
}

#[test]
fn a_contradicted_expectation_exits_1_and_bad_input_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let copy = |name: &str| {
        let text = std::fs::read_to_string(format!("harness/kyverno/{name}")).unwrap();
        std::fs::create_dir_all(dir.path().join("policies")).unwrap();
        std::fs::create_dir_all(dir.path().join("incident")).unwrap();
        std::fs::write(dir.path().join(name), text).unwrap();
    };
    for name in [
        "policies/require-baseline-workers-for-hcloud-volumes.yaml",
        "policies/keep-hcloud-off-autoscaler-nodes-fail-open.yaml",
        "incident/pods.yaml",
        "incident/claims.yaml",
        "incident/kyverno-test.yaml",
    ] {
        copy(name);
    }
    // The incident's Pod expected to pass the fail-closed guard: it must not.
    let test = dir.path().join("incident/kyverno-test.yaml");
    let text = std::fs::read_to_string(&test).unwrap();
    let flipped = text.replacen(
        "resources: [openbao/openbao-0]\n    result: pass",
        "resources: [openbao/openbao-0, observability/coroot-clickhouse-shard-0-1]\n    result: pass",
        1,
    );
    assert_ne!(text, flipped, "the suite holds the line the test edits");
    std::fs::write(&test, flipped).unwrap();
    let run = bench_in(dir.path(), &["policy", "test", "."]);
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("Want pass, got fail"), "{}", run.stdout);

    // A reference to a file that is not there: exit 2, nothing judged.
    let broken = text.replacen("  - pods.yaml", "  - pods-missing.yaml", 1);
    std::fs::write(&test, broken).unwrap();
    let run = bench_in(
        dir.path(),
        &["policy", "test", "incident/kyverno-test.yaml"],
    );
    assert_eq!(run.code, 2, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.is_empty(), "{}", run.stdout);
    assert!(
        run.stderr.contains("incident/kyverno-test.yaml:14:5"),
        "{}",
        run.stderr
    );
}
