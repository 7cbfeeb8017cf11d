//! Negative controls that prove something: the built-in drills' controls
//! bite on many seeds, a control that bites for the wrong reason is
//! inconclusive with its own exit code, and the reports tell controls
//! apart from the platform's assertions.

use rayon::prelude::*;

use crate::common::{bench_in, root};
use drillbench::run::run_drill;
use drillbench_model::drill::Drill;
use drillbench_report::{ControlConclusion, DrillReport, Outcome, junit, markdown};

fn cp_recreate() -> Drill {
    Drill::load(&root().join("scenarios/cp-recreate.yaml")).expect("built-in drill")
}

/// A thousand seeds of `cp-recreate`, each with its five controls re-run:
/// ~12 s of CPU in a debug build (measured with `bench run cp-recreate
/// --runs 1000` on the same build: 21 s wall on two busy cores), so the
/// seeds are spread over every core as `--runs` does.
#[test]
fn cp_recreate_controls_bite_on_a_thousand_seeds() {
    let drill = cp_recreate();
    let controls = drill
        .assertions
        .iter()
        .filter(|a| a.kind.name() == "negativeControl")
        .count();
    assert!(controls >= 4, "{controls} controls");
    let unproven: Vec<String> = (0..1000u64)
        .into_par_iter()
        .filter_map(|seed| {
            let report =
                run_drill(&drill, seed, &drillbench_backend::sim::provision).expect("runs");
            let broken: Vec<String> = report
                .controls()
                .filter(|c| {
                    c.control.as_ref().map(|p| p.conclusion) != Some(ControlConclusion::Bites)
                })
                .map(|c| format!("{}: {}", c.name, c.summary))
                .collect();
            (report.outcome != Outcome::Passed || !broken.is_empty())
                .then(|| format!("seed {seed}: {:?} {broken:?}", report.outcome))
        })
        .collect();
    assert!(unproven.is_empty(), "{unproven:#?}");
}

/// Every other built-in drill's controls on ten seeds each (cp-recreate
/// has its thousand above): 70 runs with their weakened re-runs, 8.6 s on
/// two busy cores in a debug build (100 seeds of six of them: 91 s).
/// Only the controls are judged: full-rebuild fails its own RTO on a few
/// seeds by design, and that proves nothing about its controls.
#[test]
fn every_built_in_control_bites_on_ten_seeds() {
    let drills = [
        "autoscaler-scale-down",
        "node-loss",
        "unlabelled-autoscaler-node",
        "pre-upgrade",
        "full-rebuild",
        "stranded-pool",
        "namespace-restore",
    ];
    let runs: Vec<(Drill, u64)> = drills
        .iter()
        .flat_map(|name| {
            let drill = Drill::load(&root().join(format!("scenarios/{name}.yaml")))
                .expect("built-in drill");
            (0..10u64).map(move |seed| (drill.clone(), seed))
        })
        .collect();
    let unproven: Vec<String> = runs
        .par_iter()
        .flat_map(|(drill, seed)| {
            let report =
                run_drill(drill, *seed, &drillbench_backend::sim::provision).expect("runs");
            assert!(report.controls().count() >= 2, "{}", drill.name());
            report
                .controls()
                .filter(|c| {
                    c.control.as_ref().map(|p| p.conclusion) != Some(ControlConclusion::Bites)
                })
                .map(|c| format!("{} seed {seed}: {}: {}", drill.name(), c.name, c.summary))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(unproven.is_empty(), "{unproven:#?}");
}

#[test]
fn every_cp_recreate_assertion_has_a_control_that_makes_it_fail() {
    let drill = cp_recreate();
    assert_eq!(
        drillbench_model::scenario::assertion::uncontrolled(&drill.assertions, &drill.spec.guards),
        Vec::<&str>::new()
    );
}

/// The incident the issue reported: node-loss's old control weakened the
/// guard to values ["false"], the hcloud consumers stayed Pending, the
/// cluster never converged, the crash never ran and the RTO "failed".
#[test]
fn the_old_node_loss_control_is_inconclusive_with_both_traces_and_exit_4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(root().join("scenarios/node-loss.yaml"))
        .expect("built-in")
        .replace("../harness", &root().join("harness").display().to_string())
        .replace(
            "      weaken:\n        change: noNodeReplacement\n",
            "      ablation:\n        guard: hcloud-on-baseline\n        change: {setValues: [\"false\"]}\n",
        );
    assert!(text.contains("setValues"), "the control was rewritten");
    let path = dir.path().join("node-loss.yaml");
    std::fs::write(&path, text).expect("write");
    let out = dir.path().join("out");
    let run = bench_in(
        dir.path(),
        &[
            "run",
            path.to_str().expect("utf-8"),
            "--seed",
            "3",
            "--out",
            out.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(run.code, 4, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("UNPROVEN"), "{}", run.stdout);
    let report = DrillReport::read(&out.join("report.json")).expect("report");
    assert_eq!(report.outcome, Outcome::Unproven);
    let control = report
        .controls()
        .find(|c| c.name == "no-replacement-bites")
        .expect("the control");
    assert_eq!(control.measured, "inconclusive");
    let proof = control.control.as_ref().expect("a proof");
    assert_eq!(proof.conclusion, ControlConclusion::Inconclusive);
    assert!(
        proof.diverged[0].contains("`crash node prod-worker-1` was never injected"),
        "{:?}",
        proof.diverged
    );
    assert!(
        proof
            .real_trace
            .iter()
            .any(|t| t.what == "fault: crash node prod-worker-1"),
        "{:?}",
        proof.real_trace
    );
    assert!(
        proof
            .weakened_trace
            .iter()
            .any(|t| t.step == "converge" && t.what.starts_with("stopped:")),
        "{:?}",
        proof.weakened_trace
    );
    // The reports say it too: the Markdown's controls section and the
    // JUnit failure carry both runs.
    let md = std::fs::read_to_string(out.join("report.md")).expect("md");
    assert!(md.contains("### Negative controls"), "{md}");
    assert!(md.contains("⚠️ inconclusive"), "{md}");
    let xml = std::fs::read_to_string(out.join("report.junit.xml")).expect("junit");
    assert!(xml.contains("real run:"), "{xml}");
    assert!(xml.contains("weakened run:"), "{xml}");
}

/// cp-recreate's reports on seed 1: the controls are a classname of their
/// own and carry `drillbench.kind`, every testcase has a time and its
/// measured value; the Markdown has a controls section.
#[test]
fn cp_recreate_reports_tell_controls_apart() {
    let report = run_drill(&cp_recreate(), 1, &drillbench_backend::sim::provision).expect("runs");
    let xml = junit::render(&report);
    assert!(
        xml.contains("classname=\"drillbench.cp-recreate.negativeControl\""),
        "{xml}"
    );
    insta::assert_snapshot!("cp_recreate_junit", xml);
    let md = markdown::render(&report);
    let controls = &md[md
        .find("### Negative controls")
        .expect("a controls section")..];
    let controls = &controls[..controls.find("\n### ").unwrap_or(controls.len())];
    insta::assert_snapshot!("cp_recreate_markdown_controls", controls);
    let html = drillbench_report::html::render(&report);
    assert!(html.contains("<section id=\"controls\"><h2>Negative controls</h2>"));
    assert!(html.contains("weakened run: "), "both traces, folded away");
}

/// `bench validate` says which assertions no control can make fail, and
/// stays exit 0: a warning, not bad input.
#[test]
fn validate_warns_about_an_assertion_no_control_can_make_fail() {
    // stranded-pool with its remedy's control gone: `no-stranded-nodes`
    // is left with nothing that can make it fail.
    let text = std::fs::read_to_string(root().join("scenarios/stranded-pool.yaml"))
        .expect("built-in drill");
    let control = "  - name: no-remedy-bites\n";
    let start = text.find(control).expect("the remedy's control");
    let end = start
        + control.len()
        + text[start + control.len()..]
            .find("  - name: ")
            .expect("a control after it");
    let dir = tempfile::tempdir().expect("tempdir");
    std::os::unix::fs::symlink(root().join("harness"), dir.path().join("harness"))
        .expect("link harness");
    std::fs::create_dir(dir.path().join("scenarios")).expect("scenarios dir");
    let path = dir.path().join("scenarios/stranded-pool.yaml");
    std::fs::write(&path, format!("{}{}", &text[..start], &text[end..])).expect("variant");
    let uncovered = crate::common::bench(&["validate", path.to_str().expect("utf-8")]);
    assert_eq!(uncovered.code, 0, "{}", uncovered.stderr);
    assert!(
        uncovered.stderr.starts_with("warning: ") && uncovered.stderr.contains(
            "stranded-pool.yaml: assertion `no-stranded-nodes` has no negative control that can make it fail"
        ),
        "{}",
        uncovered.stderr
    );
    // The guard ablation still names it.
    assert!(
        !uncovered.stderr.contains("`no-stranded-volumes`"),
        "a control names it: {}",
        uncovered.stderr
    );
    // Its placement is covered by the admission control of the guard
    // that enforces it, which names no assertion.
    assert!(
        !uncovered.stderr.contains("`hcloud-off-autoscalers`"),
        "an admission control covers it: {}",
        uncovered.stderr
    );
    for built_in in ["cp-recreate", "stranded-pool"] {
        let covered = crate::common::bench(&["validate", built_in]);
        assert_eq!(covered.code, 0, "{}", covered.stderr);
        assert!(!covered.stderr.contains("warning"), "{}", covered.stderr);
    }
}

/// Every assertion of every built-in drill has a control that can make
/// it fail. Where none could, the assertion went rather than stay as a
/// check with no teeth: `pdbRespected` where no drain ever meets a budget
/// at its limit (node-loss: a crash evicts nothing; the scale-down drills:
/// one burst pod on each reclaimed node; stranded-pool: empty nodes).
///
/// Some are covered in ways worth knowing: node-loss's availabilities by
/// `pinWorkload` controls, namespace-restore's RTO by an
/// `excludedFromBackup` one, pre-upgrade's OpenBao floor by budget and
/// settling taken away together (each alone leaves it whole), and the
/// scale-down drills' `burst-unchanged` by an ablation whose guard pins
/// every pod: it is judged up to the real run's first burst, which settled
/// it, since the reclaim after that finds no autoscaler node in the
/// weakened run.
#[test]
fn every_built_in_assertion_has_a_control_that_can_make_it_fail() {
    for entry in std::fs::read_dir(root().join("scenarios")).expect("scenarios") {
        let path = entry.expect("entry").path();
        let drill = Drill::load(&path).expect("built-in drill");
        let uncovered = drillbench_model::scenario::assertion::uncontrolled(
            &drill.assertions,
            &drill.spec.guards,
        );
        assert!(uncovered.is_empty(), "{}: {uncovered:?}", path.display());
    }
}
