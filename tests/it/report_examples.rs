//! The committed example reports in `reports/examples/` are what the bench
//! writes today: each is regenerated here, the way its README line says it
//! was made, and compared byte for byte. A change to the renderers that
//! moves them fails this test until they are re-blessed on purpose with
//! `BENCH_BLESS_EXAMPLES=1 cargo test --test it examples`, which rewrites
//! them (and, where Chromium is installed, their screenshots).

use crate::common;

use std::path::{Path, PathBuf};

use common::{bench_in, root};
use drillbench_report::sweep::{self, SweepReport};
use drillbench_report::{DrillReport, junit};

const BLESS: &str = "BENCH_BLESS_EXAMPLES";

fn examples() -> PathBuf {
    root().join("reports/examples")
}

/// Compares `files` with the committed ones in `dir`, or writes them when
/// blessing; returns the names that differ.
fn compare_or_bless(dir: &Path, files: &[(&str, String)]) -> Vec<String> {
    let bless = std::env::var_os(BLESS).is_some();
    let mut differ = Vec::new();
    for (name, now) in files {
        let path = dir.join(name);
        if bless {
            std::fs::create_dir_all(dir).expect("the examples folder");
            std::fs::write(&path, now).expect("bless an example");
            continue;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if &committed != now {
            differ.push(path.display().to_string());
        }
    }
    differ
}

/// A screenshot of `page` beside the example, when blessing with Chromium
/// at hand; never compared (fonts differ between machines).
fn screenshot(page: &Path, png: &Path) {
    if std::env::var_os(BLESS).is_none() {
        return;
    }
    let _ = std::process::Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1500,2400",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output();
}

/// `bench run harness/examples/autoscaler-scale-down-without-guard.yaml
/// --seed 1` from the repository root. JUnit is rendered without the run's
/// wall time, so it is as reproducible as the rest.
#[test]
fn the_failing_drill_example_is_what_the_bench_writes() {
    let out = tempfile::tempdir().expect("tempdir");
    let run = bench_in(
        &root(),
        &[
            "run",
            "harness/examples/autoscaler-scale-down-without-guard.yaml",
            "--seed",
            "1",
            "--out",
            out.path().to_str().expect("utf-8"),
        ],
    );
    assert_eq!(
        run.code, 1,
        "the example fails: {}{}",
        run.stdout, run.stderr
    );
    let report = DrillReport::read(&out.path().join("report.json")).expect("report.json");
    let read = |name: &str| std::fs::read_to_string(out.path().join(name)).expect(name);
    let dir = examples().join("autoscaler-scale-down-failing");
    let differ = compare_or_bless(
        &dir,
        &[
            ("report.json", read("report.json")),
            ("report.md", read("report.md")),
            ("report.html", read("report.html")),
            ("report.junit.xml", junit::render(&report)),
        ],
    );
    screenshot(
        &dir.join("report.html"),
        &examples().join("autoscaler-scale-down-failing.png"),
    );
    assert!(
        differ.is_empty(),
        "stale examples {differ:?}; re-bless on purpose with {BLESS}=1"
    );
}

/// The sweep example's renderings are what the bench renders from its
/// `sweep.json` today. (Re-running its 1 000 seeds is the nightly's job,
/// not a unit test's: the JSON is checked by `report_sweep`'s tests.)
#[test]
fn the_sweep_example_renders_as_the_bench_renders_it() {
    let dir = examples().join("cp-recreate-sweep-1000");
    let sweep = SweepReport::read(&dir.join("sweep.json")).expect("sweep.json");
    assert_eq!(sweep.runs, 1000);
    let differ = compare_or_bless(
        &dir,
        &[
            ("sweep.md", sweep::markdown(&sweep)),
            ("sweep.html", sweep::html(&sweep)),
            ("sweep.junit.xml", sweep::junit(&sweep)),
        ],
    );
    screenshot(
        &dir.join("sweep.html"),
        &examples().join("cp-recreate-sweep-1000.png"),
    );
    assert!(
        differ.is_empty(),
        "stale examples {differ:?}; re-bless on purpose with {BLESS}=1"
    );
}
