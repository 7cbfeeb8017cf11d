//! `kyverno test` suites through the runner: the harness suites the bench
//! ships agree with the engine, a wrong expectation is a failed row, and bad
//! input is refused with file:line:column before anything is judged.

use std::path::{Path, PathBuf};

use drillbench_kyverno::test_runner::{self, run_all};

fn harness() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../harness/kyverno")
}

#[test]
fn the_harness_suites_all_hold() {
    let mut out = Vec::new();
    let all = run_all(&[harness()], &mut out).expect("the harness suites are valid input");
    let text = String::from_utf8(out).unwrap();
    assert!(all, "{text}");
    let suites = test_runner::discover(&[harness()]).unwrap();
    assert_eq!(suites.len(), 4, "{suites:?}");
    let rows: usize = suites
        .iter()
        .map(|s| test_runner::run_suite(s).unwrap().rows.len())
        .sum();
    assert!(rows >= 20, "{rows} rows\n{text}");
    assert!(
        text.contains("Test Summary: 12 tests passed and 0 tests failed"),
        "{text}"
    );
}

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

const POLICY: &str = "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: require-team}
spec:
  validationFailureAction: Enforce
  rules:
    - name: team-label
      match: {any: [{resources: {kinds: [Pod]}}]}
      validate:
        message: team label required
        pattern: {metadata: {labels: {team: \"?*\"}}}
";

const PODS: &str = "apiVersion: v1
kind: Pod
metadata: {name: good, namespace: a, labels: {team: x}}
---
apiVersion: v1
kind: Pod
metadata: {name: bad, namespace: a}
";

#[test]
fn a_wrong_expectation_is_a_failed_row_with_why() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "policy.yaml", POLICY);
    write(dir.path(), "pods.yaml", PODS);
    write(
        dir.path(),
        "kyverno-test.yaml",
        "apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata: {name: t}
policies: [policy.yaml]
resources: [pods.yaml]
results:
  - {policy: require-team, rule: team-label, kind: Pod, resources: [good], result: pass}
  - {policy: require-team, rule: team-label, kind: Pod, resources: [bad], result: pass}
  - {policy: require-team, rule: team-label, kind: Pod, resources: [missing], result: pass}
",
    );
    let mut out = Vec::new();
    let all = run_all(&[dir.path().to_path_buf()], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(!all, "{text}");
    assert!(text.contains("Want pass, got fail"), "{text}");
    assert!(text.contains("Not found"), "{text}");
    assert!(
        text.contains("Test Summary: 1 tests passed and 2 tests failed"),
        "{text}"
    );
}

#[test]
fn bad_input_names_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "policy.yaml", POLICY);
    write(dir.path(), "pods.yaml", PODS);
    let test = dir.path().join("kyverno-test.yaml");
    write(
        dir.path(),
        "kyverno-test.yaml",
        "policies: [policy.yaml]
resources: [pods.yaml, nope.yaml]
results: []
",
    );
    let err = run_all(std::slice::from_ref(&test), &mut Vec::new()).unwrap_err();
    assert_eq!(err.at, format!("{}:2:24", test.display()), "{err}");
    assert!(err.expected.contains("does not exist"), "{err}");

    write(
        dir.path(),
        "kyverno-test.yaml",
        "policies: [policy.yaml]
resources: [pods.yaml]
results:
  - {policy: require-team, rule: team-label, resources: [good], result: maybe}
",
    );
    let err = run_all(std::slice::from_ref(&test), &mut Vec::new()).unwrap_err();
    assert!(
        err.at.starts_with(&format!("{}:4:", test.display())),
        "{err}"
    );

    let empty = tempfile::tempdir().unwrap();
    let err = run_all(&[empty.path().to_path_buf()], &mut Vec::new()).unwrap_err();
    assert!(err.expected.contains("kyverno-test.yaml"), "{err}");
}

#[test]
fn a_suites_exceptions_exempt_the_resources_they_match() {
    // The docs' shape (kyverno.io/docs/exceptions/): the exception names
    // the policy and rule, and matches the Pod by name.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "policy.yaml", POLICY);
    write(dir.path(), "pods.yaml", PODS);
    write(
        dir.path(),
        "exception.yaml",
        "apiVersion: kyverno.io/v2
kind: PolicyException
metadata: {name: bad-is-fine, namespace: a}
spec:
  exceptions: [{policyName: require-team, ruleNames: [team-label]}]
  match: {any: [{resources: {kinds: [Pod], names: [bad]}}]}
",
    );
    let suite = |exceptions: &str| {
        format!(
            "apiVersion: cli.kyverno.io/v1alpha1
kind: Test
metadata: {{name: t}}
policies: [policy.yaml]
resources: [pods.yaml]
{exceptions}results:
  - {{policy: require-team, rule: team-label, kind: Pod, resources: [bad], result: skip}}
"
        )
    };
    write(
        dir.path(),
        "kyverno-test.yaml",
        &suite("exceptions: [exception.yaml]\n"),
    );
    let mut out = Vec::new();
    assert!(
        run_all(&[dir.path().to_path_buf()], &mut out).unwrap(),
        "{}",
        String::from_utf8_lossy(&out)
    );
    // Control: without the exception the same row fails.
    write(dir.path(), "kyverno-test.yaml", &suite(""));
    let mut out = Vec::new();
    assert!(!run_all(&[dir.path().to_path_buf()], &mut out).unwrap());
    assert!(String::from_utf8_lossy(&out).contains("Want skip, got fail"));
}
