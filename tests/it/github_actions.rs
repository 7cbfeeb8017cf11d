//! `bench run` inside a GitHub Actions step, faked by the two variables the
//! runner sets on every step: the Markdown report is appended to the step's
//! summary file and each failing assertion is an `::error` annotation. The
//! same runs outside Actions touch neither.

use std::path::Path;

use crate::common::{Run, bench_cmd, root};

const FAILING: &str = "harness/examples/autoscaler-scale-down-without-guard.yaml";

/// Runs `bench` in the repository with the Actions variables set (or not).
fn bench_in_step(args: &[&str], summary: &Path, actions: bool) -> Run {
    let mut cmd = bench_cmd(&root());
    cmd.args(args).env("GITHUB_STEP_SUMMARY", summary);
    if actions {
        cmd.env("GITHUB_ACTIONS", "true");
    }
    Run::from(cmd.output().expect("bench runs"))
}

fn errors(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .filter(|l| l.starts_with("::error "))
        .collect()
}

#[test]
fn a_failing_drill_in_a_step_annotates_each_failure_and_appends_its_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step_summary.md");
    std::fs::write(&summary, "### an earlier step's line\n").expect("earlier");
    let out = dir.path().join("out");
    let run = bench_in_step(
        &["run", FAILING, "--out", out.to_str().unwrap()],
        &summary,
        true,
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let errors = errors(&run.stdout);
    assert!(!errors.is_empty(), "{}", run.stdout);
    assert!(errors.len() <= 10, "{errors:?}");
    assert!(
        errors.iter().any(|l| l.starts_with(
            "::error title=autoscaler-scale-down-without-guard/hcloud-off-autoscalers::"
        )),
        "{errors:?}"
    );
    assert!(
        errors
            .iter()
            .all(|l| l.contains(&format!("replay: bench run {FAILING} --seed 1"))),
        "{errors:?}"
    );
    // One annotation per failing assertion, as the report counts them.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let failed = report["assertions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["verdict"] == "fail")
        .count();
    assert_eq!(errors.len(), failed.min(10));

    let text = std::fs::read_to_string(&summary).expect("summary");
    let markdown = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert_eq!(text, format!("### an earlier step's line\n{markdown}"));
}

#[test]
fn a_passing_drill_in_a_step_appends_its_summary_and_annotates_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step_summary.md");
    for out in ["one", "two"] {
        let out = dir.path().join(out);
        let run = bench_in_step(
            &["run", "cp-recreate", "--out", out.to_str().unwrap()],
            &summary,
            true,
        );
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
        assert_eq!(errors(&run.stdout), Vec::<&str>::new());
    }
    let text = std::fs::read_to_string(&summary).expect("summary");
    assert_eq!(
        text.matches("## ✅ `cp-recreate` passed").count(),
        2,
        "{text}"
    );
}

#[test]
fn outside_actions_the_summary_file_is_not_touched_and_nothing_is_annotated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step_summary.md");
    let out = dir.path().join("out");
    let run = bench_in_step(
        &["run", FAILING, "--out", out.to_str().unwrap()],
        &summary,
        false,
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(errors(&run.stdout), Vec::<&str>::new());
    assert!(!summary.exists());
    // Asked for, the annotations come anywhere.
    let github = bench_in_step(
        &[
            "run",
            FAILING,
            "--out",
            out.to_str().unwrap(),
            "--format",
            "github",
        ],
        &summary,
        false,
    );
    assert_eq!(github.code, 1);
    assert!(!errors(&github.stdout).is_empty(), "{}", github.stdout);
    assert!(!summary.exists());
}

#[test]
fn a_step_summary_near_its_limit_stays_within_one_mebibyte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step_summary.md");
    let limit = 1024 * 1024;
    std::fs::write(&summary, "x".repeat(limit - 2_000)).expect("fill");
    let out = dir.path().join("out");
    let run = bench_in_step(
        &["run", FAILING, "--out", out.to_str().unwrap()],
        &summary,
        true,
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let len = std::fs::metadata(&summary).unwrap().len();
    assert!(len <= limit as u64, "{len}");
    assert!(
        len > (limit - 2_000) as u64,
        "something of the report was added"
    );
    assert!(run.stderr.contains("cut"), "{}", run.stderr);
}

#[test]
fn format_json_prints_the_report_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step_summary.md");
    let out = dir.path().join("out");
    let run = bench_in_step(
        &[
            "run",
            "cp-recreate",
            "--out",
            out.to_str().unwrap(),
            "--format",
            "json",
        ],
        &summary,
        true,
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout,
        std::fs::read_to_string(out.join("report.json")).unwrap()
    );
    assert!(
        run.stderr.contains("cp-recreate on sim, seed 1: PASSED"),
        "{}",
        run.stderr
    );
    assert!(summary.is_file(), "the summary is still appended");
}

#[test]
fn a_failing_sweep_in_a_step_annotates_each_failing_assertion_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step_summary.md");
    let out = dir.path().join("out");
    let run = bench_in_step(
        &[
            "run",
            FAILING,
            "--runs",
            "3",
            "--out",
            out.to_str().unwrap(),
        ],
        &summary,
        true,
    );
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let errors = errors(&run.stdout);
    assert!(
        errors
            .iter()
            .any(|l| l.contains("/hcloud-off-autoscalers::failed in ")),
        "{errors:?}"
    );
    let markdown = std::fs::read_to_string(out.join("sweep.md")).expect("sweep.md");
    assert_eq!(std::fs::read_to_string(&summary).unwrap(), markdown);
}

/// The `::error` lines of one run of the failing example in a step whose
/// summary is `summary` and whose runner temp folder is `temp`.
fn annotated_in_step(summary: &Path, temp: &Path, out: &Path) -> Vec<String> {
    let mut cmd = bench_cmd(&root());
    cmd.args(["run", FAILING, "--out", out.to_str().unwrap()])
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_STEP_SUMMARY", summary)
        .env("RUNNER_TEMP", temp);
    let run = Run::from(cmd.output().expect("bench runs"));
    assert_eq!(run.code, 1, "{}", run.stderr);
    errors(&run.stdout).into_iter().map(str::to_owned).collect()
}

#[test]
fn runs_sharing_a_step_share_its_ten_annotations() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step_summary.md");
    let out = dir.path().join("out");
    // The example fails 3 assertions: 3 + 3 + 3, then the one left says
    // how many more, then nothing: GitHub would drop it.
    let counts: Vec<usize> = (0..5)
        .map(|_| annotated_in_step(&summary, dir.path(), &out).len())
        .collect();
    assert_eq!(counts, [3, 3, 3, 1, 0]);
    let fresh = annotated_in_step(&dir.path().join("fresh.md"), dir.path(), &out);
    assert_eq!(fresh.len(), 3, "another step starts again: {fresh:?}");
    let last_of_step = {
        let other = dir.path().join("other_step.md");
        for _ in 0..3 {
            annotated_in_step(&other, dir.path(), &out);
        }
        annotated_in_step(&other, dir.path(), &out)
    };
    assert_eq!(
        last_of_step,
        [
            "::error title=autoscaler-scale-down-without-guard/+3 more::3 more failing assertions (see the job summary): hcloud-off-autoscalers, no-stranded-volumes, displaced-pods-recover"
        ]
    );
}
