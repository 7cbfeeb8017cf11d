//! Sweeps split across machines and stopped midway: `--shard I/N` runs a
//! slice of the seeds and writes its tally, `bench report merge` folds the
//! tallies into the very report one run writes, and Ctrl-C stops a sweep
//! with the seeds that ran reported and marked interrupted (exit 130).

use crate::common::bench;

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn two_shards_merged_are_one_sweep_byte_for_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let at = |name: &str| dir.path().join(name).to_str().expect("utf-8").to_owned();
    let whole = bench(&[
        "run",
        "node-loss",
        "--seed",
        "3",
        "--runs",
        "7",
        "--out",
        &at("whole"),
    ]);
    assert!(matches!(whole.code, 0 | 1 | 4), "{}", whole.stderr);
    for shard in ["1/2", "2/2"] {
        let out = at(&format!("shard{}", &shard[..1]));
        let run = bench(&[
            "run",
            "node-loss",
            "--seed",
            "3",
            "--runs",
            "7",
            "--shard",
            shard,
            "--out",
            &out,
        ]);
        assert!(matches!(run.code, 0 | 1 | 4), "{shard}: {}", run.stderr);
    }
    // Shard 1 of 2 of seeds 3..=9 is 3..=5, shard 2 is 6..=9.
    let first = read(&dir.path().join("shard1/sweep.json"));
    assert!(
        first.contains("\"firstSeed\": 3") && first.contains("\"runs\": 3"),
        "{first}"
    );
    let tallies = [
        at("shard2/tally-2-of-2.json"),
        at("shard1/tally-1-of-2.json"),
    ];
    let merge = bench(&[
        "report",
        "merge",
        &tallies[0],
        &tallies[1],
        "--out",
        &at("merged"),
    ]);
    assert_eq!(merge.code, whole.code, "{}", merge.stderr);
    for file in ["sweep.json", "sweep.md", "sweep.junit.xml", "sweep.html"] {
        assert_eq!(
            read(&dir.path().join("merged").join(file)),
            read(&dir.path().join("whole").join(file)),
            "{file}"
        );
    }
    // Controls: the same shard twice overlaps; one shard alone is a
    // smaller sweep, not the whole one.
    let twice = bench(&[
        "report",
        "merge",
        &tallies[1],
        &tallies[1],
        "--out",
        &at("twice"),
    ]);
    assert_eq!(twice.code, 2, "{}", twice.stderr);
    assert!(
        twice.stderr.contains("are in two shards"),
        "{}",
        twice.stderr
    );
    let alone = bench(&["report", "merge", &tallies[1], "--out", &at("alone")]);
    assert_ne!(
        read(&dir.path().join("alone/sweep.json")),
        read(&dir.path().join("whole/sweep.json")),
        "{}",
        alone.stderr
    );
}

#[test]
fn a_shard_that_cannot_be_run_is_exit_2_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("out");
    let out = out.to_str().expect("utf-8");
    for args in [
        vec!["--runs", "4", "--shard", "3/2"],
        vec!["--runs", "4", "--shard", "0/2"],
        vec!["--runs", "2", "--shard", "1/3"],
        vec![
            "--runs",
            "4",
            "--shard",
            "1/2",
            "--backend",
            "kubeconfig",
            "--kubeconfig",
            "/nonexistent",
        ],
    ] {
        let mut all = vec!["run", "node-loss", "--out", out];
        all.extend(&args);
        let run = bench(&all);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
    }
    assert!(
        !dir.path().join("out").exists(),
        "nothing ran, nothing written"
    );
}

#[test]
fn ctrl_c_stops_a_sweep_with_the_seeds_that_ran_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("sweep");
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("bench"))
        .args(["run", "cp-recreate", "--runs", "1000000", "--out"])
        .arg(&out)
        .current_dir(crate::common::root())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bench starts");
    // Let it get past validation into the sweep, whose handler takes the
    // signal; a signal before that would end it with no code at all.
    std::thread::sleep(std::time::Duration::from_secs(5));
    let pid = child.id().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .expect("kill runs");
    assert!(kill.success());
    let output = child.wait_with_output().expect("bench ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    let sweep: serde_json::Value =
        serde_json::from_str(&read(&out.join("sweep.json"))).expect("a whole sweep.json");
    assert_eq!(sweep["interrupted"], true);
    let runs = sweep["runs"].as_u64().expect("runs");
    assert!(runs > 0 && runs < 1_000_000, "{runs}");
    assert_eq!(runs % 512, 0, "it stops between chunks");
    assert!(read(&out.join("sweep.md")).contains("Interrupted"));
}
