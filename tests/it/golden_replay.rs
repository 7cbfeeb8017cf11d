//! Every built-in drill, seeds 0 to 99, against the digests of the reports
//! they produced when this file was last blessed. A refactor that is meant
//! to change nothing must leave every digest as it is; a change that is
//! meant to change behaviour says which drill and seed moved, and is
//! blessed on purpose with `BENCH_BLESS_GOLDEN=1 cargo test golden`.

use std::fmt::Write as _;

use drillbench::run::run_drill;
use drillbench_backend::BackendError;
use drillbench_backend::sim::SimBackend;
use drillbench_model::drill::Drill;
use drillbench_model::scenario::catalog;
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

/// `drill seed sha256` lines for every built-in drill, in name order, each
/// loaded by name as `bench run NAME` loads it (from the binary), so the
/// digests do not depend on the folder the test runs in.
fn digests() -> String {
    let entries = catalog::list().expect("the built-in drills");
    assert!(
        entries.len() >= 8,
        "every built-in drill is here: {entries:?}"
    );
    let mut out = String::new();
    for entry in entries {
        let name = entry.name;
        let path = catalog::resolve(&name).expect("a built-in resolves by name");
        let drill = Drill::load(&path).unwrap_or_else(|e| panic!("{e:?}"));
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
