//! `bench run`'s own inputs are checked before anything runs: a seed range
//! that would wrap, a sweep past its budget, an `--out` that cannot hold
//! reports are bad input, and an assertion name too long to align is a
//! plain line; never a panic, a silent short run or a verdict lost after
//! the run.

use crate::common::{bench, root};

#[test]
fn a_seed_range_past_the_last_seed_is_bad_input_and_runs_nothing() {
    let out = tempfile::tempdir().expect("tempdir");
    let out_arg = out.path().join("reports");
    let out_arg = out_arg.to_str().expect("utf-8");
    for (seed, runs) in [
        ("18446744073709551615", "2"),
        ("18446744073709551610", "10"),
    ] {
        let run = bench(&[
            "run",
            "node-loss",
            "--seed",
            seed,
            "--runs",
            runs,
            "--out",
            out_arg,
        ]);
        assert_eq!(run.code, 2, "--seed {seed} --runs {runs}: {}", run.stderr);
        assert!(
            run.stderr.contains("goes past the last seed"),
            "{}",
            run.stderr
        );
    }
    let run = bench(&[
        "run",
        "node-loss",
        "--runs",
        "18446744073709551615",
        "--out",
        out_arg,
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("is outside 1..=1000000"),
        "{}",
        run.stderr
    );
    assert!(
        !out.path().join("reports").exists(),
        "nothing ran, nothing written"
    );

    // Control: the last seeds that fit run, and say so.
    let run = bench(&[
        "run",
        "node-loss",
        "--seed",
        "18446744073709551614",
        "--runs",
        "2",
        "--out",
        out_arg,
    ]);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    assert!(
        run.stdout.contains("2 runs from seed 18446744073709551614"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_very_long_assertion_name_is_printed_not_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    let long = "a".repeat(70_000);
    let harness = root().join("harness");
    let harness = harness.to_str().expect("utf-8");
    let text = std::fs::read_to_string(root().join("scenarios/node-loss.yaml"))
        .expect("built-in drill")
        .replace("../harness", harness)
        .replace("- name: api-keeps-serving", &format!("- name: {long}"))
        .replace(
            "mustFail: [api-keeps-serving]",
            &format!("mustFail: [{long}]"),
        );
    let drill = dir.path().join("long-name.yaml");
    std::fs::write(&drill, text).expect("write drill");
    let out = dir.path().join("reports");
    let run = bench(&[
        "run",
        drill.to_str().expect("utf-8"),
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(
        run.code == 0 || run.code == 1,
        "exit {}: {}",
        run.code,
        run.stderr
    );
    // Printed within the terminal's line budget, the cut said; the report
    // keeps the whole name.
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("aaaaaaaaaa"))
        .expect("the assertion's line");
    assert!(
        line.chars().count() <= drillbench_report::budget::TERMINAL_LINE,
        "{} chars",
        line.chars().count()
    );
    assert!(line.ends_with(" chars)"), "{line}");
    let report = drillbench_report::DrillReport::read(&out.join("report.json")).expect("report");
    assert!(
        report.assertions.iter().any(|a| a.name == long),
        "the whole name is kept"
    );
}

#[test]
fn an_out_that_cannot_hold_reports_is_bad_input_before_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").expect("write");
    let below = file.join("reports");
    for out in [file.to_str(), below.to_str(), Some("/dev/full")] {
        let out = out.expect("utf-8");
        for runs in ["1", "3"] {
            let run = bench(&["run", "node-loss", "--runs", runs, "--out", out]);
            assert_eq!(run.code, 2, "--out {out} --runs {runs}: {}", run.stderr);
            assert!(
                run.stderr
                    .contains(&format!("--out {out} cannot hold the reports")),
                "{}",
                run.stderr
            );
            assert!(
                !run.stdout.contains("node-loss on sim"),
                "nothing ran: {}",
                run.stdout
            );
        }
    }
    // Control: a folder that does not exist yet is made.
    let fresh = dir.path().join("new/reports");
    let run = bench(&["run", "node-loss", "--out", fresh.to_str().expect("utf-8")]);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    assert!(fresh.join("report.json").is_file());
}
