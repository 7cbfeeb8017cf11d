//! Every built-in drill, seeds 0 to 99, against the digests of the reports
//! they produced when this file was last blessed. A refactor that is meant
//! to change nothing must leave every digest as it is; a change that is
//! meant to change behaviour says which drill and seed moved, and is
//! blessed on purpose with `BENCH_BLESS_GOLDEN=1 cargo test golden`.

use std::fmt::Write as _;
use std::path::Path;

use drillbench::run::run_drill;
use drillbench_backend::BackendError;
use drillbench_backend::sim::SimBackend;
use drillbench_model::drill::Drill;
use drillbench_sim::Simulation;
use sha2::{Digest, Sha256};

const GOLDEN: &str = "tests/golden/report-digests.txt";
const SEEDS: u64 = 100;

fn provision(
    drill: &Drill,
    seed: u64,
) -> Result<Box<dyn drillbench_backend::Backend>, BackendError> {
    let sim = Simulation::new(drill, seed).map_err(|e| BackendError::Provision(Box::new(e)))?;
    Ok(Box::new(SimBackend::new(sim)))
}

/// `drill seed sha256` lines for every built-in drill, in name order. The
/// drill is loaded by a path relative to the repository root (the test's
/// working directory), so the report's `drill.file` is the same on every
/// checkout.
fn digests() -> String {
    let mut names: Vec<String> = std::fs::read_dir("scenarios")
        .expect("the built-in drills")
        .filter_map(|entry| {
            let name = entry.expect("entry").file_name().into_string().ok()?;
            name.strip_suffix(".yaml").map(str::to_owned)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 8, "every built-in drill is here: {names:?}");
    let mut out = String::new();
    for name in names {
        let path = format!("scenarios/{name}.yaml");
        let drill = Drill::load(Path::new(&path)).unwrap_or_else(|e| panic!("{e:?}"));
        for seed in 0..SEEDS {
            let json = run_drill(&drill, seed, &provision)
                .expect("the drill runs")
                .to_json();
            let digest = Sha256::digest(json.as_bytes());
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            writeln!(out, "{name} {seed} {hex}").expect("write to a string");
        }
    }
    out
}

#[test]
fn golden_reports_of_every_built_in_drill_over_100_seeds_are_unchanged() {
    let now = digests();
    if std::env::var_os("BENCH_BLESS_GOLDEN").is_some() {
        std::fs::write(GOLDEN, &now).expect("bless the golden digests");
        return;
    }
    let blessed = std::fs::read_to_string(GOLDEN).expect("the blessed digests");
    let moved: Vec<&str> = now
        .lines()
        .zip(blessed.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a)
        .collect();
    assert!(
        moved.is_empty() && now.lines().count() == blessed.lines().count(),
        "{} of {} reports changed, first: {:?}; bless on purpose with BENCH_BLESS_GOLDEN=1",
        moved.len(),
        blessed.lines().count(),
        moved.first()
    );
}
