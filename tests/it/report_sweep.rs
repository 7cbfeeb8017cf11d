//! Sweeps: the aggregator's percentiles and counts checked against values
//! computed by hand, and the Markdown, JUnit and HTML renderings.

use crate::report_support;

use drillbench_report::sweep::{
    self, Distribution, SWEEP_FORMAT, SweepError, SweepReport, nearest_rank,
};
use drillbench_report::{DrillReport, Figure, Outcome, Verdict};
use report_support::{external_references, fixture, look, outline, parse};

/// One run: the passing fixture with this seed and RTO, failing the
/// placement assertion when `failing`.
fn run(seed: u64, rto_ms: f64, failing: bool) -> DrillReport {
    let mut r = fixture(if failing {
        "failing.json"
    } else {
        "passing.json"
    });
    r.seed = seed;
    r.figures.insert(
        "rto.all-workloads".to_owned(),
        Figure {
            value: rto_ms,
            unit: "ms".to_owned(),
        },
    );
    r
}

#[test]
fn nearest_rank_by_hand() {
    // The textbook example: 15, 20, 35, 40, 50.
    let v = [15.0, 20.0, 35.0, 40.0, 50.0];
    assert_eq!(nearest_rank(&v, 5.0), Some(15.0)); // rank ceil(0.25) = 1
    assert_eq!(nearest_rank(&v, 30.0), Some(20.0)); // rank ceil(1.5) = 2
    assert_eq!(nearest_rank(&v, 40.0), Some(20.0)); // rank ceil(2.0) = 2
    assert_eq!(nearest_rank(&v, 50.0), Some(35.0)); // rank ceil(2.5) = 3
    assert_eq!(nearest_rank(&v, 100.0), Some(50.0));
    assert_eq!(nearest_rank(&v, 0.0), Some(15.0));
    assert_eq!(nearest_rank(&[], 50.0), None);
    // 1..=100: the p-th percentile is p itself.
    let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
    for p in [1.0, 50.0, 95.0, 99.0] {
        assert_eq!(nearest_rank(&hundred, p), Some(p));
    }
}

#[test]
fn aggregates_ten_runs() {
    // RTOs in seconds for seeds 7..=16, given out of order; seeds 9 and 14 fail.
    let rto_s = [
        (12, 300),
        (7, 240),
        (9, 600),
        (8, 250),
        (10, 260),
        (11, 280),
        (13, 310),
        (14, 900),
        (15, 270),
        (16, 255),
    ];
    let runs: Vec<DrillReport> = rto_s
        .iter()
        .map(|&(seed, s)| run(seed, s as f64 * 1000.0, seed == 9 || seed == 14))
        .collect();
    let s = SweepReport::from_runs(&runs).expect("one drill");
    assert_eq!(s.format, SWEEP_FORMAT);
    assert_eq!((s.first_seed, s.runs, s.failures), (7, 10, 2));
    let seeds: Vec<(u64, Outcome, Vec<String>)> = s
        .failing_seeds
        .iter()
        .map(|f| (f.seed, f.outcome, f.assertions.clone()))
        .collect();
    assert_eq!(
        seeds,
        [
            (
                9,
                Outcome::Failed,
                vec!["hcloud-off-autoscalers".to_owned()]
            ),
            (
                14,
                Outcome::Failed,
                vec!["hcloud-off-autoscalers".to_owned()]
            )
        ]
    );
    let tallies: Vec<(&str, u64, u64)> = s
        .assertions
        .iter()
        .map(|a| (a.name.as_str(), a.passed, a.failed))
        .collect();
    assert_eq!(tallies, [("hcloud-off-autoscalers", 8, 2), ("rto", 10, 0)]);
    // Sorted (s): 240 250 255 260 270 280 300 310 600 900.
    // p50: rank ceil(5) = 5 -> 270; p95: rank ceil(9.5) = 10 -> 900; p99 -> 900.
    let d = &s.figures["rto.all-workloads"];
    assert_eq!(d.count, 10);
    assert_eq!(
        (d.min, d.p50, d.p95, d.p99, d.max),
        (240_000.0, 270_000.0, 900_000.0, 900_000.0, 900_000.0)
    );
    // 20 bins of 33 s from 240 s: 8 runs in the first bins, 600 s in bin 10, 900 s in the last.
    assert_eq!(d.histogram.iter().sum::<u64>(), 10);
    assert_eq!(d.histogram[10], 1);
    assert_eq!(d.histogram[19], 1);
    assert_eq!(d.histogram[0] + d.histogram[1] + d.histogram[2], 8);
    // The ratio figure is aggregated too.
    assert_eq!(s.figures["availability.api"].p50, 0.9983);
    assert_eq!(s.figures["availability.api"].histogram, [10]);
    // The JSON round-trips.
    let back =
        SweepReport::from_json(std::path::Path::new("s.json"), &s.to_json()).expect("parses");
    assert_eq!(back, s);
    let v0 = s.to_json().replace(SWEEP_FORMAT, "drillbench.dev/sweep/v0");
    let err = SweepReport::from_json(std::path::Path::new("s.json"), &v0).expect_err("v0");
    assert!(matches!(err, SweepError::Version { .. }), "{err}");
}

#[test]
fn p95_of_twenty_runs_is_the_nineteenth() {
    let values: Vec<f64> = (1..=20).map(|i| f64::from(i) * 10.0).collect();
    let d = Distribution::of("ms", &values).expect("values");
    assert_eq!((d.p50, d.p95, d.p99), (100.0, 190.0, 200.0));
    assert_eq!(d.histogram, vec![1; 20]);
    // Extreme and non-finite values neither panic nor count.
    let d = Distribution::of("ms", &[f64::MAX, -f64::MAX, f64::NAN, f64::INFINITY])
        .expect("two finite values");
    assert_eq!((d.count, d.histogram.iter().sum::<u64>()), (2, 2));
    assert!(Distribution::of("ms", &[f64::NAN]).is_none());
}

#[test]
fn refuses_what_is_not_one_drill() {
    assert!(matches!(
        SweepReport::from_runs(&[]),
        Err(SweepError::NoRuns)
    ));
    let mut other = run(2, 1.0, false);
    other.drill.name = "cp-recreate".to_owned();
    let err = SweepReport::from_runs(&[run(1, 1.0, false), other]).expect_err("mixed");
    assert!(err.to_string().contains("seed 2"), "{err}");
    let mut kind = run(2, 1.0, false);
    kind.backend = "kind".to_owned();
    assert!(matches!(
        SweepReport::from_runs(&[run(1, 1.0, false), kind]),
        Err(SweepError::Mixed { .. })
    ));
    let mut unit = run(2, 1.0, false);
    unit.figures.insert(
        "rto.all-workloads".to_owned(),
        Figure {
            value: 1.0,
            unit: "count".to_owned(),
        },
    );
    assert!(matches!(
        SweepReport::from_runs(&[run(1, 1.0, false), unit]),
        Err(SweepError::Unit { .. })
    ));
}

fn small_sweep() -> SweepReport {
    let runs: Vec<DrillReport> = (1..=10)
        .map(|seed| run(seed, 200_000.0 + seed as f64 * 7_000.0, seed % 4 == 0))
        .collect();
    SweepReport::from_runs(&runs).expect("one drill")
}

#[test]
fn markdown_and_junit_of_a_sweep() {
    let s = small_sweep();
    insta::assert_snapshot!("sweep_markdown", sweep::markdown(&s));
    insta::assert_snapshot!("sweep_junit", sweep::junit(&s));
}

/// One testsuite, one testcase per assertion, the failing one listing the
/// failing seeds with their replay commands.
#[test]
fn a_sweep_is_one_junit_testsuite() {
    let xml = sweep::junit(&small_sweep());
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let suites: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    assert_eq!(suites[0].attribute("tests"), Some("2"));
    assert_eq!(suites[0].attribute("failures"), Some("1"));
    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure");
    assert_eq!(
        failure.parent().and_then(|c| c.attribute("name")),
        Some("hcloud-off-autoscalers")
    );
    assert_eq!(
        failure.attribute("message"),
        Some("failed in 2 of 10 runs; seeds 4, 8")
    );
    let text = failure.text().unwrap_or_default();
    assert!(
        text.contains("seed 4: bench run scenarios/autoscaler-scale-down.yaml --seed 4"),
        "{text}"
    );
    assert!(text.contains("--seed 8"), "{text}");
}

/// A 1 000-seed sweep: RTOs spread over a long tail, one seed in 7 failing.
fn thousand_seeds() -> SweepReport {
    let runs: Vec<DrillReport> = (1..=1000u64)
        .map(|seed| {
            // A deterministic skewed spread: most runs near 4 min, a tail to 20 min.
            let x = (seed * 7919 % 1000) as f64 / 1000.0;
            let rto = 180_000.0 + 120_000.0 * x + 900_000.0 * x.powi(12);
            let mut r = run(seed, rto, seed % 7 == 0);
            r.figures.insert(
                "rpo.openbao".to_owned(),
                Figure {
                    value: 3_600_000.0 * (1.0 + 5.0 * x),
                    unit: "ms".to_owned(),
                },
            );
            if seed % 7 == 0 {
                r.assertions[1].verdict = if seed % 21 == 0 {
                    Verdict::Fail
                } else {
                    Verdict::Pass
                };
            }
            r
        })
        .collect();
    SweepReport::from_runs(&runs).expect("one drill")
}

#[test]
fn html_of_a_thousand_seeds() {
    let s = thousand_seeds();
    assert_eq!((s.runs, s.failures), (1000, 142));
    let text = sweep::html(&s);
    look("sweep-1000.html", &text);
    assert_eq!(external_references(&text), Vec::<String>::new());
    let doc = parse(&text);
    // Every failing seed is listed with its exact replay command.
    for f in &s.failing_seeds {
        let cmd = format!(
            "bench run scenarios/autoscaler-scale-down.yaml --seed {}</code>",
            f.seed
        );
        assert!(text.contains(&cmd), "seed {}", f.seed);
    }
    // Durations read to the second: p99 is 18m6.810s in the JSON.
    assert_eq!(s.figures["rto.all-workloads"].p99.round(), 1_086_810.0);
    assert!(text.contains("<td class=\"num\">18m7s</td>"));
    // Histograms for the RTO and the RPO figure, not for the ratio.
    let hists: Vec<_> = doc
        .descendants()
        .filter_map(|n| n.attribute("data-figure"))
        .collect();
    assert_eq!(hists, ["rpo.openbao", "rto.all-workloads"]);
    insta::assert_snapshot!("sweep_html_outline", outline(&sweep::html(&small_sweep())));
}

#[test]
fn bench_report_renders_a_stored_sweep() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("sweep.json");
    std::fs::write(&path, small_sweep().to_json()).expect("write");
    let path = path.to_str().expect("utf-8");
    for (format, expected) in [
        ("md", sweep::markdown(&small_sweep())),
        ("junit", sweep::junit(&small_sweep())),
        ("html", sweep::html(&small_sweep())),
    ] {
        let run = report_support::bench(&["report", path, "--format", format]);
        assert_eq!(run.0, 0, "{}", run.2);
        assert_eq!(run.1, expected);
    }
}

#[test]
fn tallies_of_disjoint_seeds_merge_into_the_sweep_of_all_byte_for_byte() {
    use drillbench_report::sweep_tally::SweepTally;
    let runs: Vec<DrillReport> = (1..=9)
        .map(|seed| run(seed, (seed * 37 % 11) as f64 * 1000.0, seed % 4 == 0))
        .collect();
    let whole = SweepReport::from_runs(&runs).expect("one drill").to_json();
    // Shards as `--shard I/N` cuts them, merged in any order.
    let tally = |seeds: &[DrillReport]| {
        let mut t = SweepTally::like(&seeds[0]);
        for r in seeds {
            t.add(r).expect("same drill");
        }
        t
    };
    let (a, b, c) = (tally(&runs[..3]), tally(&runs[3..7]), tally(&runs[7..]));
    for order in [[&a, &b, &c], [&c, &a, &b]] {
        let mut merged = order[0].clone();
        merged.merge(order[1].clone()).expect("disjoint");
        merged.merge(order[2].clone()).expect("disjoint");
        // Through JSON, as shard files travel.
        let merged: SweepTally = serde_json::from_str(&merged.to_json()).expect("round trip");
        assert_eq!(merged.seeds, [[1, 9]]);
        assert_eq!(merged.finish().expect("runs").to_json(), whole);
    }
    // Controls: a shard merged twice, or one of another drill, is refused.
    let mut twice = a.clone();
    let err = twice.merge(a.clone()).expect_err("overlap");
    assert!(
        err.to_string().contains("seeds 1..=3 are in two shards"),
        "{err}"
    );
    let mut other = runs[8].clone();
    other.drill.content_hash = "sha256:other".to_owned();
    let mut mixed = a.clone();
    assert!(mixed.merge(tally(&[other])).is_err());
    // A gap is a sweep of the seeds that ran, not of the range around them.
    let mut gap = a;
    gap.merge(c).expect("disjoint");
    assert_eq!(gap.seeds, [[1, 3], [8, 9]]);
    assert_eq!(gap.finish().expect("runs").runs, 5);
}
