//! The nightly workflow's verdict script: which exit codes mean the
//! platform regressed (1) and which that the bench or the runner broke
//! (3), with the annotation title each gets.

use std::path::Path;

use crate::common::root;

struct Verdict {
    code: i32,
    stdout: String,
    output: String,
}

fn verdict(lines: Option<&str>) -> Verdict {
    let dir = tempfile::tempdir().expect("tempdir");
    let codes = dir.path().join("exit-codes.txt");
    if let Some(lines) = lines {
        std::fs::write(&codes, lines).expect("write codes");
    }
    let github_output = dir.path().join("github_output");
    let run = std::process::Command::new("bash")
        .arg(root().join(".github/workflows/nightly-verdict.sh"))
        .arg(&codes)
        .env("GITHUB_OUTPUT", &github_output)
        .output()
        .expect("bash runs the verdict script");
    Verdict {
        code: run.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&run.stdout).into_owned(),
        output: read(&github_output),
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn every_drill_and_test_passing_is_a_pass() {
    let v = verdict(Some("cp-recreate 0\nnode-loss 0\ne2e-talos 0\n"));
    assert_eq!(
        (v.code, v.output.as_str()),
        (0, "verdict=passed\n"),
        "{}",
        v.stdout
    );
    assert!(!v.stdout.contains("::error"), "{}", v.stdout);
}

#[test]
fn a_failed_assertion_is_the_platform_regressing() {
    let v = verdict(Some("cp-recreate 0\nnode-loss 1\ne2e-talos 0\n"));
    assert_eq!(v.code, 1, "{}", v.stdout);
    assert_eq!(v.output, "verdict=platform-regressed\n");
    assert!(
        v.stdout
            .contains("::error title=Platform regressed (exit 1)::node-loss"),
        "{}",
        v.stdout
    );
}

#[test]
fn a_failed_end_to_end_test_is_the_bench_broken_not_the_runner() {
    // cargo test exits 101 when a test fails.
    let v = verdict(Some("autoscaler-scale-down 0\ne2e-kind 101\n"));
    assert_eq!(v.code, 3, "{}", v.stdout);
    assert_eq!(v.output, "verdict=bench-broke\n");
    assert!(
        v.stdout
            .contains("::error title=Bench broke (exit 3)::e2e-kind"),
        "{}",
        v.stdout
    );
}

#[test]
fn an_unproven_built_in_drill_is_the_bench_broken_not_the_runner() {
    // Exit 4: every assertion held, a negative control proved nothing.
    let v = verdict(Some("node-loss 0\ncp-recreate 4\n"));
    assert_eq!(v.code, 3, "{}", v.stdout);
    assert_eq!(v.output, "verdict=bench-broke\n");
    assert!(
        v.stdout
            .contains("::error title=Bench broke (exit 3)::cp-recreate: every assertion held"),
        "{}",
        v.stdout
    );
}

#[test]
fn infrastructure_outranks_a_regression_and_each_gets_its_own_title() {
    let v = verdict(Some("cp-recreate 3\nnode-loss 1\n"));
    assert_eq!(v.code, 3, "{}", v.stdout);
    assert_eq!(v.output, "verdict=runner-broke\n");
    assert!(
        v.stdout
            .contains("::error title=Bench or runner broke (exit 3)::cp-recreate")
    );
    assert!(
        v.stdout
            .contains("::error title=Platform regressed (exit 1)::node-loss")
    );
}

#[test]
fn nothing_recorded_is_the_runner_broken() {
    let v = verdict(None);
    assert_eq!((v.code, v.output.as_str()), (3, "verdict=runner-broke\n"));
}
