//! `bench validate` on a corpus of malformed drills: each must exit 2 and
//! name the right line, column and problem; the rendered diagnostics are
//! snapshot-tested so their wording and source context are reviewed.

use crate::common;

use std::collections::BTreeSet;

use common::{bench, root};

/// Every file of `tests/bad-drills/`, the position of its first problem
/// (`line:column` in the file itself, or `file:line:column` in a file it
/// refers to), and a fragment of the message that says what was expected.
const CORPUS: &[(&str, &str, &str)] = &[
    (
        "duplicate-object",
        "manifests/duplicate-object.yaml:23:1",
        "duplicate Deployment `default/web`; expected each object once",
    ),
    ("alias-bomb", "18:14", "alias bomb"),
    (
        "unknown-policy-guard",
        "21:13",
        "`hcloud-on-baselin` is not a Kyverno policy among the workloads (did you mean `hcloud-on-baseline`?)",
    ),
    (
        "unknown-policy-rule",
        "29:17",
        "`chek` is not a rule of policy `hcloud-on-baseline` (did you mean `check`?)",
    ),
    (
        "policy-patch-does-not-apply",
        "30:11",
        "the JSON patch does not apply to the policy",
    ),
    (
        "assertion-without-kind",
        "11:11",
        "sets 0 kinds; expected exactly one of rto",
    ),
    (
        "bad-duration-unit",
        "11:28",
        "unknown unit `d` in duration `10d`",
    ),
    (
        "bad-indentation",
        "8:6",
        "did not find expected '-' indicator",
    ),
    ("binary-garbage", "4:9", "not UTF-8 text"),
    (
        "cluster-above-max-nodes-total",
        "7:20",
        "starts with 7 nodes",
    ),
    ("comments-only", "1:1", "holds no drill"),
    (
        "count-and-autoscaled",
        "7:7",
        "sets both `count` and `autoscaled`",
    ),
    ("deep-nesting", "11:74", "nests deeper than 64 levels"),
    (
        "duplicate-assertion",
        "13:11",
        "duplicate assertion `quorum`; the first is at line 11",
    ),
    ("duplicate-key", "10:1", "duplicate key `metadata`"),
    (
        "duration-without-unit",
        "12:14",
        "duration `24` lacks a unit",
    ),
    ("empty", "1:1", "holds no drill"),
    (
        "empty-assertions-list",
        "5:9",
        "`empty-verdicts` has no assertions, so it would pass on nothing",
    ),
    (
        "endpoint-holder-without-endpoint",
        "13:17",
        "needs a stable endpoint",
    ),
    (
        "gt-not-an-integer",
        "15:11",
        "operator Gt needs exactly one integer value",
    ),
    ("import-missing", "6:11", "cannot import"),
    (
        "invalid-drill-name",
        "4:9",
        "`CP_Recreate` is not a valid name",
    ),
    (
        "malformed-workload-yaml",
        "manifests/broken.yaml:7:13",
        "expected well-formed YAML: unclosed bracket",
    ),
    ("min-above-max", "11:25", "min 5 above max 2"),
    ("missing-cluster", "3:1", "missing field `cluster`"),
    (
        "missing-workload-file",
        "11:5",
        "`manifests/does-not-exist.yaml` does not exist",
    ),
    (
        "skip-steps-unknown-or-every-fault",
        "22:17",
        "`skipSteps` names `drain the node`, which is not a step of the drill",
    ),
    (
        "must-fail-unknown-assertion",
        "22:20",
        "`openbao-on-baseline` is not an assertion",
    ),
    (
        "set-values-on-does-not-exist",
        "25:17",
        "`setValues` cannot weaken guard `off-autoscalers`",
    ),
    (
        "negative-count",
        "8:14",
        "expected a whole number, not negative",
    ),
    (
        "no-assertions",
        "5:9",
        "`no-verdict` has no assertions, so it would pass on nothing",
    ),
    ("not-a-mapping", "1:1", "a drill file is a mapping"),
    (
        "pool-above-max-nodes-total",
        "10:14",
        "starts with 12 nodes, above maxNodesTotal 9",
    ),
    (
        "pool-without-size",
        "7:7",
        "sets neither `count` nor `autoscaled`",
    ),
    (
        "probability-out-of-range",
        "13:27",
        "failureProbability is 1.5",
    ),
    (
        "recovery-cycle",
        "15:13",
        "cycle: converge -> restore -> provision -> converge",
    ),
    (
        "recovery-unknown-after",
        "16:15",
        "comes after `provison`, which is not a recovery step",
    ),
    (
        "scale-unknown-workload",
        "16:23",
        "the drill deploys no workload `load/Deployment/burst`; none is defined",
    ),
    ("step-with-two-actions", "11:5", "sets 2 actions"),
    ("two-documents", "11:1", "more than one YAML document"),
    ("unclosed-flow", "10:9", "unclosed bracket"),
    (
        "undefined-guard",
        "16:16",
        "`hcloud-on-baseline` is not a guard",
    ),
    (
        "undefined-node",
        "13:17",
        "`workers-7` is not a node of the cluster",
    ),
    (
        "undefined-pool",
        "13:17",
        "`autoscale-cx63` is not a pool of the cluster",
    ),
    (
        "undefined-storage-class",
        "13:33",
        "`hcloud-ssd` is not a storage class",
    ),
    (
        "unknown-fault",
        "12:7",
        "unknown variant `rebootNode`, expected one of deleteNode",
    ),
    (
        "unknown-nested-field",
        "10:7",
        "unknown field `lables`, expected one of name",
    ),
    ("unknown-operator", "15:33", "unknown variant `Equals`"),
    ("unknown-placeholder", "10:20", "unknown placeholder `{i}`"),
    ("unknown-server-type", "9:19", "unknown server type `cx63`"),
    ("unknown-top-field", "5:1", "unknown field `clusters`"),
    ("wait-until-without-timeout", "12:14", "has no `timeout`"),
    (
        "wrong-api-version",
        "1:13",
        "unsupported apiVersion `drillbench/v1`",
    ),
    (
        "workload-without-kind",
        "manifests/no-kind.yaml:6:1",
        "a Kubernetes object without kind",
    ),
    ("wrong-kind", "2:7", "unsupported kind `Scenario`"), // Issue 19: refused by `validate` instead of exit 3 at run time or silence.
    (
        "empty-selector",
        "manifests/empty-selector.yaml:1:1",
        "DaemonSet `web` has an empty spec.selector",
    ),
    (
        "fault-on-empty-pool",
        "16:17",
        "pool `spare` is a static pool of 0 nodes",
    ),
    (
        "inline-negative-replicas",
        "12:5",
        "inline workload: StatefulSet `db` has spec.replicas -3",
    ),
    (
        "invalid-label-value",
        "manifests/invalid-label-value.yaml:1:1",
        "labels.tier = \"front end\", not a valid label value",
    ),
    (
        "negative-replicas",
        "manifests/negative-replicas.yaml:1:1",
        "spec.replicas -1; expected a number greater than or equal to 0",
    ),
    (
        "no-containers",
        "manifests/no-containers.yaml:1:1",
        "no containers in spec.template.spec.containers",
    ),
    (
        "no-control-plane-ordinals",
        "6:29",
        "control-plane ordinals are empty",
    ),
    (
        "no-selector",
        "manifests/no-selector.yaml:1:1",
        "Deployment `web` has no spec.selector",
    ),
    (
        "pdb-policy-v1beta1",
        "manifests/pdb-policy-v1beta1.yaml:6:1",
        "apiVersion `policy/v1beta1`, which the API server does not serve",
    ),
    (
        "pool-removed-twice",
        "17:26",
        "pool `batch` was already removed by the step at line 15",
    ),
    (
        "selector-mismatch",
        "manifests/selector-mismatch.yaml:1:1",
        "Deployment `web`: `selector` does not match template `labels`",
    ),
    (
        "statefulset-apps-v2",
        "manifests/statefulset-apps-v2.yaml:1:1",
        "StatefulSet `web` has apiVersion `apps/v2`",
    ),
    (
        "statefulset-selector-mismatch",
        "manifests/statefulset-selector-mismatch.yaml:1:1",
        "StatefulSet `web`: `selector` does not match template `labels`",
    ),
];

#[test]
fn every_malformed_drill_exits_2_at_the_right_place() {
    for (name, location, fragment) in CORPUS {
        let path = format!("tests/bad-drills/{name}.yaml");
        let run = bench(&["validate", &path]);
        assert_eq!(run.code, 2, "{name}: exit code\n{}", run.stderr);
        let header = run.stderr.lines().next().unwrap_or_default();
        let expected = if location.contains(".yaml:") {
            format!("error: tests/bad-drills/{location}: ")
        } else {
            format!("error: {path}:{location}: ")
        };
        assert!(
            header.starts_with(&expected),
            "{name}: expected a diagnostic at {location}, got: {header}"
        );
        assert!(
            header.contains(fragment),
            "{name}: expected the message to say `{fragment}`, got: {header}"
        );
        assert!(
            run.stdout.is_empty(),
            "{name}: nothing on stdout for an invalid drill"
        );
        assert!(!run.stderr.contains("panicked"), "{name}: panicked");
    }
}

#[test]
fn the_corpus_table_covers_every_file() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(root().join("tests/bad-drills"))
        .expect("corpus folder")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".yaml")
                .map(str::to_owned)
        })
        .collect();
    let in_table: BTreeSet<String> = CORPUS.iter().map(|c| c.0.to_owned()).collect();
    assert_eq!(on_disk, in_table);
    assert!(on_disk.len() >= 25);
}

#[test]
fn rendered_diagnostics_show_the_source() {
    insta::glob!("..", "bad-drills/*.yaml", |path| {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let relative = format!("tests/bad-drills/{name}");
        let run = bench(&["validate", &relative]);
        insta::assert_snapshot!(run.stderr);
    });
}

#[test]
fn every_problem_of_a_file_is_reported_in_one_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("many.yaml");
    std::fs::write(
        &path,
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: Many_Problems
cluster:
  pools:
    - name: burst
      autoscaled: {min: 3, max: 1}
      serverType: cx53
assertions:
  - name: a
    quorum: {}
  - name: a
    quorum: {}
",
    )
    .expect("write");
    let run = bench(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(run.code, 2);
    let headers: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(headers.len(), 3, "{}", run.stderr);
    assert!(headers[0].contains(":4:9: drill name `Many_Problems`"));
    assert!(headers[1].contains(":8:25: pool `burst` has min 3 above max 1"));
    assert!(headers[2].contains(":13:11: duplicate assertion `a`"));
}

#[test]
fn a_valid_drill_exits_0_and_an_unreadable_one_2() {
    let run = bench(&["validate", "scenarios/cp-recreate.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("valid drill `cp-recreate`"));

    let run = bench(&["validate", "tests/bad-drills/no-such-file.yaml"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("tests/bad-drills/no-such-file.yaml: cannot read the file")
    );

    // One bad file among good ones still fails the whole command.
    let run = bench(&[
        "validate",
        "scenarios/cp-recreate.yaml",
        "tests/bad-drills/empty.yaml",
    ]);
    assert_eq!(run.code, 2);
}

#[test]
fn a_huge_file_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.yaml");
    let line = "# padding padding padding padding padding padding padding padding\n";
    let text = line.repeat(50 * 1024 * 1024 / line.len());
    std::fs::write(&path, text).expect("write");
    let run = bench(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("larger than 1048576 bytes"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(bench(&["validate"]).code, 2);
    assert_eq!(bench(&["no-such-command"]).code, 2);
    assert_eq!(
        bench(&["run", "cp-recreate", "--seed", "minus-one"]).code,
        2
    );
    assert_eq!(bench(&["run", "cp-recreate", "--runs", "0"]).code, 2);
    assert_eq!(bench(&["--help"]).code, 0);
}

#[test]
fn validate_takes_built_in_names_as_run_does() {
    let run = bench(&["validate", "cp-recreate", "node-loss"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("cp-recreate: valid drill `cp-recreate`"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("node-loss: valid drill `node-loss`"),
        "{}",
        run.stdout
    );

    let run = bench(&["validate", "no-such-drill"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with(
            "error: no drill named `no-such-drill`; expected a drill file or one of: "
        ),
        "{}",
        run.stderr
    );
}

/// A pipe would block the read until something writes to it, so a drill
/// or manifest that is a FIFO, a folder or a device is refused at once
/// (issue 19: `validate` of a FIFO blocked forever).
#[test]
fn a_pipe_a_folder_or_a_device_is_refused_not_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("drill.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    for path in [fifo.to_str().expect("utf-8"), "scenarios/", "/dev/zero"] {
        let run = bench(&["validate", path]);
        assert_eq!(run.code, 2, "{path}: {}", run.stderr);
        assert!(
            run.stderr.contains("not a regular file"),
            "{path}: {}",
            run.stderr
        );
    }

    // A drill whose workloads are a pipe.
    let harness = root().join("harness");
    let text = std::fs::read_to_string(root().join("scenarios/node-loss.yaml"))
        .expect("built-in drill")
        .replace("../harness/ksail", &format!("{}/ksail", harness.display()))
        .replace(
            "../harness/manifests/production.yaml",
            fifo.to_str().expect("utf-8"),
        );
    let drill = dir.path().join("piped.yaml");
    std::fs::write(&drill, text).expect("write");
    let run = bench(&["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
}

/// `bench run` refuses what `validate` refuses, before anything runs or is
/// written (issue 19: a pool removed twice and a fault on an empty pool
/// exited 3 mid-run; an `apps/v2` StatefulSet ran as if absent).
#[test]
fn run_refuses_the_issue_19_drills_before_writing_a_report() {
    for name in [
        "pool-removed-twice",
        "fault-on-empty-pool",
        "statefulset-apps-v2",
        "no-assertions",
    ] {
        let out = tempfile::tempdir().expect("tempdir");
        let reports = out.path().join("reports");
        let path = format!("tests/bad-drills/{name}.yaml");
        let run = bench(&["run", &path, "--out", reports.to_str().expect("utf-8 path")]);
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("error: tests/bad-drills/"),
            "{name}: {}",
            run.stderr
        );
        assert!(!reports.exists(), "{name}: a report folder was written");
    }
}
