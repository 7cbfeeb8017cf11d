//! `bench report compare OLD NEW`: what got worse between two runs, with
//! exit 1 on a regression, 0 otherwise, 2 on bad input or different drills.

use crate::report_support;

use drillbench_report::compare::{self, Noise, Regression};
use drillbench_report::{AssertionResult, DrillReport, Figure, Verdict};
use report_support::{bench, fixture};

const RTO: &str = "rto.all-workloads";

fn with_rto(mut r: DrillReport, ms: f64) -> DrillReport {
    r.figures.insert(
        RTO.to_owned(),
        Figure {
            value: ms,
            unit: "ms".to_owned(),
        },
    );
    r
}

fn negative_control(verdict: Verdict) -> AssertionResult {
    AssertionResult {
        name: "guard-has-teeth".to_owned(),
        kind: "negativeControl".to_owned(),
        verdict,
        bound: "ablation fails [hcloud-off-autoscalers]".to_owned(),
        measured: match verdict {
            Verdict::Pass => "hcloud-off-autoscalers failed under ablation",
            Verdict::Fail => "hcloud-off-autoscalers still passed under ablation",
            Verdict::Skipped => "not run",
        }
        .to_owned(),
        summary: "the weakened guard must let openbao onto an autoscaler node".to_owned(),
        evidence: Vec::new(),
        control: None,
    }
}

/// Writes both reports and runs `bench report compare` on them.
fn cli(old: &DrillReport, new: &DrillReport, extra: &[&str]) -> (i32, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (o, n) = (dir.path().join("old.json"), dir.path().join("new.json"));
    std::fs::write(&o, old.to_json()).expect("write");
    std::fs::write(&n, new.to_json()).expect("write");
    let mut args = vec![
        "report",
        "compare",
        o.to_str().expect("utf-8"),
        n.to_str().expect("utf-8"),
    ];
    args.extend_from_slice(extra);
    bench(&args)
}

#[test]
fn identical_reports_are_no_regression() {
    let r = fixture("passing.json");
    let (code, out, err) = cli(&r, &r, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("no regression"), "{out}");
    // A run that failed the same way before is not a new failure either.
    let f = fixture("failing.json");
    let (code, out, _) = cli(&f, &f, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("`hcloud-off-autoscalers` still fails"),
        "{out}"
    );
}

#[test]
fn a_new_failure_is_named() {
    let (code, out, _) = cli(&fixture("passing.json"), &fixture("failing.json"), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("new failure: `hcloud-off-autoscalers` (placement) passed in OLD, fails in NEW: openbao/openbao-0 ran on an autoscaler node"),
        "{out}"
    );
    // The other way round is an improvement, not a regression.
    let (code, out, _) = cli(&fixture("failing.json"), &fixture("passing.json"), &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("passes now"), "{out}");
}

#[test]
fn rto_within_noise_is_no_regression() {
    let old = with_rto(fixture("passing.json"), 252_000.0);
    // +5 % (12.6 s): below both thresholds.
    let (code, out, _) = cli(&old, &with_rto(fixture("passing.json"), 264_600.0), &[]);
    assert_eq!(code, 0, "{out}");
    // +50 % but only +20 s on a 40 s RTO: relative alone is not enough.
    let (code, out, _) = cli(
        &with_rto(fixture("passing.json"), 40_000.0),
        &with_rto(fixture("passing.json"), 60_000.0),
        &[],
    );
    assert_eq!(code, 0, "{out}");
    // +40 s on a 4-hour RTO: absolute alone is not enough.
    let (code, out, _) = cli(
        &with_rto(fixture("passing.json"), 14_400_000.0),
        &with_rto(fixture("passing.json"), 14_440_000.0),
        &[],
    );
    assert_eq!(code, 0, "{out}");
}

#[test]
fn rto_up_half_and_two_minutes_is_a_regression() {
    let old = with_rto(fixture("passing.json"), 240_000.0);
    let new = with_rto(fixture("passing.json"), 360_000.0);
    let (code, out, _) = cli(&old, &new, &[]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("worse: `rto.all-workloads` 4m → 6m, up 2m (+50 %)"),
        "{out}"
    );
    // Just past both thresholds counts; just below either does not.
    let noise = Noise::default();
    assert!(noise.is_worse(300_000.0, 330_001.0));
    assert!(!noise.is_worse(300_000.0, 330_000.0));
    assert!(!noise.is_worse(400_000.0, 439_000.0));
    // A ratio figure is not a duration and never counts.
    let mut worse_ratio = fixture("passing.json");
    worse_ratio
        .figures
        .get_mut("availability.api")
        .expect("figure")
        .value = 0.5;
    let (code, _, _) = cli(&fixture("passing.json"), &worse_ratio, &[]);
    assert_eq!(code, 0);
}

#[test]
fn a_negative_control_that_stopped_biting_is_a_regression() {
    let mut old = fixture("passing.json");
    old.assertions.push(negative_control(Verdict::Pass));
    let mut new = fixture("passing.json");
    new.assertions.push(negative_control(Verdict::Fail));
    let c = compare::compare(&old, &new, Noise::default(), false).expect("same drill");
    assert_eq!(
        c.regressions,
        [Regression::NegativeControlStoppedBiting {
            assertion: "guard-has-teeth".to_owned(),
            summary: "the weakened guard must let openbao onto an autoscaler node".to_owned(),
        }]
    );
    let (code, out, _) = cli(&old, &new, &["--format", "md"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("negative control stopped biting: `guard-has-teeth`"),
        "{out}"
    );
    assert!(out.starts_with("## ❌"), "{out}");
    // Biting again is good news.
    let (code, out, _) = cli(&new, &old, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("bites again"), "{out}");
}

#[test]
fn different_drills_or_contents_are_refused() {
    let old = fixture("passing.json");
    let mut other = fixture("passing.json");
    other.drill.name = "cp-recreate".to_owned();
    let (code, out, err) = cli(&old, &other, &[]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("refusing to compare different drills: OLD is `autoscaler-scale-down`, NEW is `cp-recreate`"), "{err}");
    let mut edited = fixture("passing.json");
    edited.drill.content_hash = "sha256:1111".to_owned();
    let (code, _, err) = cli(&old, &edited, &[]);
    assert_eq!(code, 2);
    assert!(
        err.contains("the drill file or its manifests changed"),
        "{err}"
    );
    // --force compares anyway, and says so.
    let (code, out, _) = cli(&old, &edited, &["--force"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("forced: the drill's contents differ"), "{out}");
}

#[test]
fn unreadable_input_is_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.json");
    std::fs::write(&good, fixture("passing.json").to_json()).expect("write");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{").expect("write");
    let (code, out, err) = bench(&[
        "report",
        "compare",
        good.to_str().expect("utf-8"),
        bad.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("not a drill report"), "{err}");
    let (code, _, _) = bench(&["report", "compare", good.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "NEW is required");
}
