//! The workspace's crates are the drill's spine, and an arrow between them
//! may only point down it: Cargo refuses cycles, this test refuses an arrow
//! that runs up the spine (the simulator depending on a backend, a report
//! on the simulator). A new crate has to be given its place here.

use std::process::Command;

use serde_json::Value;

/// Bottom to top: each crate may depend only on crates before it.
const SPINE: &[&str] = &[
    "drillbench-model",
    "drillbench-observe",
    "drillbench-kyverno",
    "drillbench-policy",
    "drillbench-sim",
    "drillbench-report",
    "drillbench-assert",
    "drillbench-preflight",
    "drillbench-endpoint",
    "drillbench-serve",
    "drillbench-backend",
    "drillbench",
];

/// Every normal (not dev, not build) dependency between workspace crates
/// that does not point down the spine, and every crate the spine omits.
fn upward_arrows(metadata: &Value) -> Vec<String> {
    let place = |name: &str| SPINE.iter().position(|s| *s == name);
    let mut wrong = Vec::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("a name");
        let Some(here) = place(name) else {
            wrong.push(format!("{name} has no place on the spine"));
            continue;
        };
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let target = dep["name"].as_str().expect("a name");
            let normal = dep["kind"].is_null();
            if let Some(there) = place(target)
                && normal
                && there >= here
            {
                wrong.push(format!("{name} -> {target}"));
            }
        }
    }
    wrong
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata is JSON")
}

#[test]
fn every_arrow_between_crates_points_down_the_spine() {
    let metadata = metadata();
    assert_eq!(
        metadata["packages"].as_array().map(Vec::len),
        Some(SPINE.len()),
        "the workspace and the spine name the same crates"
    );
    assert_eq!(upward_arrows(&metadata), Vec::<String>::new());
}

#[test]
fn an_arrow_up_the_spine_is_found() {
    let mut metadata = metadata();
    let sim = metadata["packages"]
        .as_array_mut()
        .expect("packages")
        .iter_mut()
        .find(|p| p["name"] == "drillbench-sim")
        .expect("the simulator crate");
    sim["dependencies"]
        .as_array_mut()
        .expect("dependencies")
        .push(serde_json::json!({ "name": "drillbench-backend", "kind": null }));
    assert_eq!(
        upward_arrows(&metadata),
        ["drillbench-sim -> drillbench-backend"]
    );
}

#[test]
fn a_dev_dependency_may_reach_up() {
    // Tests of a lower crate may use a higher one (the integration tests
    // drive everything); only what ships is layered.
    let mut metadata = metadata();
    let model = metadata["packages"]
        .as_array_mut()
        .expect("packages")
        .iter_mut()
        .find(|p| p["name"] == "drillbench-model")
        .expect("the model crate");
    model["dependencies"]
        .as_array_mut()
        .expect("dependencies")
        .push(serde_json::json!({ "name": "drillbench", "kind": "dev" }));
    assert_eq!(upward_arrows(&metadata), Vec::<String>::new());
}
