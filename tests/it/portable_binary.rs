//! A `bench` copied out of the build, run in an empty folder, still lists
//! and runs the built-in drills (they are compiled in), and the replay line
//! it prints runs there too. A built-in run by name, from an exported copy
//! or from the checkout writes the same report bytes.

use std::path::{Path, PathBuf};

use crate::common::{Run, root};

/// A copy of the bench binary in a scratch folder of its own, and an empty
/// working folder beside it.
struct Copied {
    dir: tempfile::TempDir,
    bin: PathBuf,
}

impl Copied {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let built = assert_cmd::cargo::cargo_bin("bench");
        let bin = dir.path().join("bin").join("bench");
        std::fs::create_dir_all(bin.parent().unwrap()).expect("bin folder");
        // A child `cp` writes the copy: had this process held it open for
        // writing while another test thread forked, running it would fail
        // with ETXTBSY until that child execs (see
        // `test_support::write_script`).
        let copied = std::process::Command::new("cp")
            .arg(&built)
            .arg(&bin)
            .status()
            .expect("cp runs");
        assert!(copied.success(), "copy the binary: {copied}");
        std::fs::create_dir(dir.path().join("work")).expect("work folder");
        Copied { dir, bin }
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// Runs the copied binary in the work folder, with nothing pointing it
    /// at a drill folder.
    fn run(&self, args: &[&str]) -> Run {
        Run::from(
            std::process::Command::new(&self.bin)
                .args(args)
                .current_dir(self.work())
                .env_remove("BENCH_SCENARIO_DIR")
                .env_remove("GITHUB_ACTIONS")
                .env_remove("GITHUB_STEP_SUMMARY")
                .env("NO_COLOR", "1")
                .output()
                .expect("the copied bench runs"),
        )
    }
}

fn replay_line(stdout: &str) -> Vec<String> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("replay: "))
        .unwrap_or_else(|| panic!("no replay line in:\n{stdout}"));
    line.split_whitespace().map(str::to_owned).collect()
}

fn report(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("report.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join("report.json").display()))
}

#[test]
fn a_copied_binary_in_an_empty_folder_runs_a_built_in_and_its_replay_line() {
    let copied = Copied::new();
    let listed = copied.run(&["list"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.lines().any(|l| l.starts_with("cp-recreate ")),
        "{}",
        listed.stdout
    );
    assert!(listed.stdout.lines().count() >= 8, "{}", listed.stdout);

    let first = copied.run(&["run", "cp-recreate"]);
    assert_eq!(first.code, 0, "{}{}", first.stdout, first.stderr);
    let replay = replay_line(&first.stdout);
    assert_eq!(replay, ["bench", "run", "cp-recreate", "--seed", "1"]);

    let mut again: Vec<&str> = replay[1..].iter().map(String::as_str).collect();
    again.extend(["--out", "replayed"]);
    let second = copied.run(&again);
    assert_eq!(second.code, 0, "{}{}", second.stdout, second.stderr);
    let by_name = report(&copied.work().join("reports/cp-recreate-seed1"));
    assert_eq!(by_name, report(&copied.work().join("replayed")));
    let text = String::from_utf8(by_name).expect("UTF-8");
    assert!(
        !text.contains("\"file\""),
        "a built-in names no file: {text}"
    );
}

#[test]
fn a_built_in_by_name_by_exported_path_and_from_the_checkout_writes_the_same_report() {
    let copied = Copied::new();
    let exported = copied.run(&["scenarios", "export", "drills"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    assert!(
        exported
            .stdout
            .lines()
            .any(|l| l.ends_with("harness/manifests/production.yaml")),
        "{}",
        exported.stdout
    );
    let checkout = root().join("scenarios/cp-recreate.yaml");
    let checkout = checkout.to_str().expect("a UTF-8 path");
    for (drill, out) in [
        ("cp-recreate", "by-name"),
        ("drills/scenarios/cp-recreate.yaml", "by-path"),
        (checkout, "from-checkout"),
    ] {
        let run = copied.run(&["run", drill, "--seed", "7", "--out", out]);
        assert_eq!(run.code, 0, "{drill}: {}{}", run.stdout, run.stderr);
        assert_eq!(
            replay_line(&run.stdout),
            ["bench", "run", "cp-recreate", "--seed", "7"],
            "{drill}"
        );
    }
    let by_name = report(&copied.work().join("by-name"));
    assert_eq!(by_name, report(&copied.work().join("by-path")));
    assert_eq!(by_name, report(&copied.work().join("from-checkout")));
}

#[test]
fn an_edited_copy_is_not_the_built_in_and_its_replay_names_the_file() {
    let copied = Copied::new();
    assert_eq!(copied.run(&["scenarios", "export", "drills"]).code, 0);
    let path = copied.work().join("drills/scenarios/cp-recreate.yaml");
    let text = std::fs::read_to_string(&path).expect("exported drill");
    std::fs::write(&path, format!("{text}\n# edited\n")).expect("edit");

    let run = copied.run(&[
        "run",
        "drills/scenarios/cp-recreate.yaml",
        "--out",
        "edited",
    ]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        replay_line(&run.stdout),
        [
            "bench",
            "run",
            "drills/scenarios/cp-recreate.yaml",
            "--seed",
            "1"
        ]
    );
    let report: serde_json::Value =
        serde_json::from_slice(&report(&copied.work().join("edited"))).expect("JSON");
    assert_eq!(report["drill"]["file"], "drills/scenarios/cp-recreate.yaml");
}

#[test]
fn export_keeps_what_is_there_and_refuses_to_overwrite_an_edit() {
    let copied = Copied::new();
    let first = copied.run(&["scenarios", "export", "drills"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    // Exporting again over identical files writes nothing and is fine.
    let again = copied.run(&["scenarios", "export", "drills"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stdout, "");

    let edited = copied.work().join("drills/harness/ksail/ksail.prod.yaml");
    std::fs::write(&edited, "# mine\n").expect("edit");
    let refused = copied.run(&["scenarios", "export", "drills"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("ksail.prod.yaml already exists"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        std::fs::read_to_string(&edited).expect("still there"),
        "# mine\n"
    );
}
