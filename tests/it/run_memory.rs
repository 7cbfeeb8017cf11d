//! Any drill `bench validate` accepts runs within its budgets in bounded
//! memory (issue 19): random clusters, workloads, DaemonSets, waits and
//! faults, some with the events budget lowered so the run's own check
//! stops it. Each drill runs as `bench run` in a child process, and the
//! child's peak resident memory (`wait4`'s `ru_maxrss`, the kernel's count,
//! not a clock) must stay under a bound derived from the drill's budgets.
//! Few cases: each is a process and a simulation.

#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Stdio};

use drillbench_model::budget::Budgets;
use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use proptest::prelude::*;

/// What the process needs before the drill: the binary, the simulator's
/// tables, the built-in drills compiled in (a debug build).
const BASE_BYTES: u64 = 160 << 20;
/// Upper costs per unit of a budget, above what the scale harness measures
/// (5 000 nodes and 150 000 pods in 342 MB, all of their events included).
const BYTES_PER_NODE: u64 = 32 << 10;
const BYTES_PER_POD: u64 = 4 << 10;
const BYTES_PER_EVENT: u64 = 512;

/// The most memory a run within `budgets` may take.
fn bound(budgets: &Budgets) -> u64 {
    BASE_BYTES
        + budgets.nodes * BYTES_PER_NODE
        + budgets.pods * BYTES_PER_POD
        + budgets.events * BYTES_PER_EVENT
}

#[derive(Debug, Clone)]
struct Shape {
    baseline: u32,
    autoscaled_max: u32,
    replicas: Vec<u32>,
    daemon_sets: u32,
    waits_h: Vec<u32>,
    crashes: u32,
    events_budget: Option<u64>,
}

fn shape() -> impl Strategy<Value = Shape> {
    (
        1u32..40,
        0u32..20,
        prop::collection::vec(0u32..300, 0..5),
        0u32..3,
        prop::collection::vec(1u32..30, 1..4),
        0u32..3,
        prop::option::weighted(0.3, 20u64..400),
    )
        .prop_map(
            |(baseline, autoscaled_max, replicas, daemon_sets, waits_h, crashes, events)| Shape {
                baseline,
                autoscaled_max,
                replicas,
                daemon_sets,
                waits_h,
                crashes,
                events_budget: events,
            },
        )
}

fn manifests(shape: &Shape) -> String {
    let mut out = String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n");
    for (i, replicas) in shape.replicas.iter().enumerate() {
        out.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: w{i}, namespace: apps}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: w{i}}}}}\n  template:\n    metadata: {{labels: {{app: w{i}}}}}\n    spec:\n      containers: [{{name: c, image: pause, resources: {{requests: {{cpu: 20m, memory: 32Mi}}}}}}]\n"
        ));
    }
    for i in 0..shape.daemon_sets {
        out.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: agent-{i}, namespace: kube-system}}\nspec:\n  selector: {{matchLabels: {{app: agent-{i}}}}}\n  template:\n    metadata: {{labels: {{app: agent-{i}}}}}\n    spec:\n      containers: [{{name: c, image: pause, resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}}}]\n"
        ));
    }
    out
}

fn drill_text(shape: &Shape) -> String {
    let mut steps = String::new();
    for (i, hours) in shape.waits_h.iter().enumerate() {
        // Crashes leave a baseline node standing, so each finds a target.
        if (i as u32) < shape.crashes.min(shape.baseline - 1) {
            steps.push_str("  - fault: {crashNode: {target: {randomNodeOf: baseline}}}\n");
        }
        steps.push_str(&format!("  - wait: {{for: {hours}h}}\n"));
    }
    let autoscaled = if shape.autoscaled_max > 0 {
        format!(
            "    - name: burst\n      autoscaled: {{min: 0, max: {}}}\n      serverType: cx43\n",
            shape.autoscaled_max
        )
    } else {
        String::new()
    };
    let budgets = shape
        .events_budget
        .map(|events| format!("budgets: {{events: {events}}}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {{name: random}}
cluster:
  pools:
    - name: baseline
      count: {}
      serverType: cx43
{autoscaled}{budgets}workloads:
  - path: manifests.yaml
steps:
{steps}assertions:
  - name: quorum
    quorum: {{}}
",
        shape.baseline
    )
}

/// Runs `bench` in `dir` and returns its exit code, stderr and peak
/// resident memory in bytes, from `wait4` on that one child (so tests
/// running beside it do not count).
#[expect(
    clippy::zombie_processes,
    reason = "the child is reaped by wait4, which std's Child cannot do"
)]
fn run_measured(dir: &Path, args: &[&str]) -> (i32, String, u64) {
    let child = Command::new(assert_cmd::cargo::cargo_bin("bench"))
        .current_dir(dir)
        .args(args)
        .env_remove("BENCH_SCENARIO_DIR")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bench starts");
    let pid = child.id() as libc::pid_t;
    let mut stderr = child.stderr.expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut text).ok();
        text
    });
    let mut status: libc::c_int = 0;
    // SAFETY: an all-zero `rusage` is a valid value of that plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is our child, not yet waited for (std's `Child` is
    // dropped without waiting); `status` and `usage` outlive the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    // Linux reports ru_maxrss in kibibytes.
    let max_rss = u64::try_from(usage.ru_maxrss).unwrap_or(0) * 1024;
    (code, reader.join().unwrap_or_default(), max_rss)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn accepted_drills_run_within_their_budgets_in_bounded_memory(shape in shape()) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("manifests.yaml"), manifests(&shape)).expect("manifests");
        let text = drill_text(&shape);
        let path = dir.path().join("drill.yaml");
        std::fs::write(&path, &text).expect("drill");
        let Ok(drill) = Drill::from_source(SourceFile::new(path.clone(), text)) else {
            // Only what validate accepts is promised to run.
            return Ok(());
        };
        let budgets = Budgets::of(drill.spec.budgets.as_ref());
        let (code, stderr, max_rss) = run_measured(
            dir.path(),
            &["run", "drill.yaml", "--out", "reports"],
        );
        // Ran to a verdict (0 held, 1 failed, 4 unproven), or stopped at a
        // run budget with exit 2 and a sentence naming it; never a crash
        // (101), an infrastructure error (3) or a kill.
        let stopped_at_budget = code == 2 && stderr.contains("above the budget `budgets.");
        prop_assert!(
            matches!(code, 0 | 1 | 4) || stopped_at_budget,
            "exit {code} for {shape:?}: {stderr}"
        );
        if shape.events_budget.is_none() {
            prop_assert!(!stopped_at_budget, "{shape:?}: {stderr}");
        }
        let limit = bound(&budgets);
        prop_assert!(
            max_rss <= limit,
            "{shape:?} peaked at {max_rss} bytes, above the bound {limit} of its budgets"
        );
    }
}

/// The control: a drill whose events budget is far below what its run
/// records stops with exit 2 and the budget's name, and the same drill
/// with the default budgets runs to a verdict.
#[test]
fn a_run_stops_at_its_events_budget_and_runs_without_it() {
    let mut shape = Shape {
        baseline: 3,
        autoscaled_max: 0,
        replicas: vec![20],
        daemon_sets: 1,
        waits_h: vec![1],
        crashes: 1,
        events_budget: Some(10),
    };
    for (events, expect_stop) in [(Some(10), true), (None, false)] {
        shape.events_budget = events;
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("manifests.yaml"), manifests(&shape)).expect("manifests");
        std::fs::write(dir.path().join("drill.yaml"), drill_text(&shape)).expect("drill");
        let (code, stderr, _) =
            run_measured(dir.path(), &["run", "drill.yaml", "--out", "reports"]);
        if expect_stop {
            assert_eq!(code, 2, "{stderr}");
            assert!(
                stderr.contains("the run recorded 10 events")
                    && stderr.contains("`budgets.events` of 10"),
                "{stderr}"
            );
        } else {
            assert!(matches!(code, 0 | 1 | 4), "exit {code}: {stderr}");
        }
    }
}
