//! Many seeds of one drill (`bench run --runs N`) aggregated into one
//! versioned document: the distribution of every figure, the failing seeds
//! with the exact command that replays each, and per-assertion pass counts.
//!
//! Percentiles use the **nearest-rank** method on the sorted values: the
//! p-th percentile of `n` values is the value at 1-based rank
//! `ceil(p / 100 × n)` (rank 1 for p = 0). It always returns a value that was
//! measured (no interpolation invents an RTO nobody saw), and it is the
//! method a person can check by hand on a sorted list.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use serde::{Deserialize, Serialize};

use super::html::{CSS, esc};
use super::sweep_tally::SweepTally;
use super::{DrillIdentity, DrillReport, Outcome};

/// The version of the sweep format; bump it on any incompatible change.
pub const SWEEP_FORMAT: &str = "drillbench.dev/sweep/v1";

/// Equal-width bins of each figure's histogram, between its min and max.
pub const HISTOGRAM_BINS: usize = 20;

/// The failing seeds listed before the rest fold away in HTML and Markdown.
const SEEDS_SHOWN: usize = 20;

/// Many runs of one drill, aggregated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SweepReport {
    /// Always [`SWEEP_FORMAT`].
    pub format: String,
    /// The version of the bench that ran the drills.
    pub bench_version: String,
    pub drill: DrillIdentity,
    pub backend: String,
    /// The lowest seed of the sweep.
    pub first_seed: u64,
    /// How many runs were aggregated.
    pub runs: u64,
    /// Runs whose outcome was not `passed`.
    pub failures: u64,
    /// The seeds of those runs, ascending, each with what failed.
    pub failing_seeds: Vec<FailingSeed>,
    /// Pass and fail counts of each assertion, in the drill's order.
    pub assertions: Vec<AssertionTally>,
    /// The distribution of each figure, by name.
    pub figures: BTreeMap<String, Distribution>,
    /// Whether the sweep was stopped (Ctrl-C, SIGTERM) before every seed
    /// ran: the figures are then those of the seeds that did.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FailingSeed {
    pub seed: u64,
    /// `failed`, `aborted` or `unproven`.
    pub outcome: Outcome,
    /// The assertions that failed in it, in the drill's order.
    pub assertions: Vec<String>,
}

/// How often one assertion held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AssertionTally {
    pub name: String,
    pub kind: String,
    /// Runs in which it held.
    pub passed: u64,
    /// Runs in which it failed.
    pub failed: u64,
    /// The bound, as written (`<= 15m`), for the line it draws on its
    /// figure's histogram; empty in sweeps written before it was recorded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub bound: String,
}

/// The distribution of one figure over the runs that measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Distribution {
    pub unit: String,
    /// Runs that measured it.
    pub count: u64,
    pub min: f64,
    /// Median (nearest rank).
    pub p50: f64,
    /// 95th percentile (nearest rank).
    pub p95: f64,
    /// 99th percentile (nearest rank).
    pub p99: f64,
    pub max: f64,
    /// Counts of [`HISTOGRAM_BINS`] equal-width bins from `min` to `max`
    /// (the last bin includes `max`); one bin when every value is equal.
    pub histogram: Vec<u64>,
}

/// Why runs could not be aggregated or a sweep could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// Nothing to aggregate.
    #[error("no runs to aggregate")]
    NoRuns,
    /// Runs of different drills, drill contents or backends.
    #[error(
        "run with seed {seed} is {found}, but the sweep is {expected}; a sweep aggregates runs of one drill"
    )]
    Mixed {
        /// The seed of the odd run.
        seed: u64,
        /// What the first run was.
        expected: String,
        /// What this run was.
        found: String,
    },
    /// A figure recorded in two units.
    #[error("figure `{figure}` is in `{expected}` in one run and `{found}` in seed {seed}")]
    Unit {
        figure: String,
        /// Its unit in the first run.
        expected: String,
        /// Its unit in the odd run.
        found: String,
        /// The odd run's seed.
        seed: u64,
    },
    #[error("cannot read sweep {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Shards that ran some of the same seeds.
    #[error("seeds {first}..={last} are in two shards; expected shards of disjoint seeds")]
    Overlap { first: u64, last: u64 },
    /// A shard tally of another format version.
    #[error(
        "{path}: tally format `{found}` is not supported; expected `{}`",
        super::sweep_tally::TALLY_FORMAT
    )]
    TallyVersion { path: PathBuf, found: String },
    /// A sweep of another format version.
    #[error("{path}: sweep format `{found}` is not supported; expected `{SWEEP_FORMAT}`")]
    Version { path: PathBuf, found: String },
    /// The file is not a sweep of this format.
    #[error("{path}:{line}:{column}: not a sweep report: {message}")]
    Parse {
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        message: String,
    },
}

/// A figure for a sweep's tables: durations of a minute or more to the
/// second, since a distribution's milliseconds are noise to a reader (the
/// JSON keeps them exact).
fn figure_value(value: f64, unit: &str) -> String {
    if unit == "ms" && value >= 60_000.0 {
        super::html::figure_value((value / 1000.0).round() * 1000.0, unit)
    } else {
        super::html::figure_value(value, unit)
    }
}

/// The nearest-rank percentile of ascending `sorted` values; `None` when
/// empty. `p` is clamped to 0–100.
pub fn nearest_rank(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let p = if p.is_finite() {
        p.clamp(0.0, 100.0)
    } else {
        100.0
    };
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

impl Distribution {
    /// The distribution of `values`; non-finite values are ignored (no
    /// backend records them, and JSON cannot carry them).
    pub fn of(unit: &str, values: &[f64]) -> Option<Distribution> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        sorted.sort_by(f64::total_cmp);
        let (min, max) = (*sorted.first()?, *sorted.last()?);
        let pick = |p| nearest_rank(&sorted, p).unwrap_or(min);
        let histogram = if max > min {
            let mut bins = vec![0u64; HISTOGRAM_BINS];
            for v in &sorted {
                let i = (((v - min) / (max - min)) * HISTOGRAM_BINS as f64) as usize;
                bins[i.min(HISTOGRAM_BINS - 1)] += 1;
            }
            bins
        } else {
            vec![sorted.len() as u64]
        };
        Some(Distribution {
            unit: unit.to_owned(),
            count: sorted.len() as u64,
            min,
            p50: pick(50.0),
            p95: pick(95.0),
            p99: pick(99.0),
            max,
            histogram,
        })
    }
}

impl SweepReport {
    /// Aggregates runs of one drill (same name, content hash and backend),
    /// in any order.
    pub fn from_runs(runs: &[DrillReport]) -> Result<SweepReport, SweepError> {
        let first = runs.first().ok_or(SweepError::NoRuns)?;
        let mut by_seed: Vec<&DrillReport> = runs.iter().collect();
        by_seed.sort_by_key(|r| r.seed);
        let mut tally = SweepTally::like(first);
        for run in by_seed {
            tally.add(run)?;
        }
        tally.finish()
    }

    /// The sweep as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(self).unwrap_or_default();
        json.push('\n');
        json
    }

    /// Parses a stored sweep, refusing other format versions.
    pub fn from_json(path: &Path, text: &str) -> Result<SweepReport, SweepError> {
        // The version first, so an old sweep says so instead of failing on
        // whichever field changed.
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text)
            && let Some(found) = map.get("format").and_then(|f| f.as_str())
            && found != SWEEP_FORMAT
        {
            return Err(SweepError::Version {
                path: path.to_path_buf(),
                found: found.to_owned(),
            });
        }
        serde_json::from_str(text).map_err(|e| SweepError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    pub fn read(path: &Path) -> Result<SweepReport, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|source| SweepError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(path, &text)
    }

    /// The command that replays one seed of this sweep.
    pub fn replay(&self, seed: u64) -> String {
        self.drill.replay(&self.backend, seed)
    }

    fn headline(&self) -> String {
        let headline = if self.failures == 0 {
            format!("`{}` held in all {} runs", self.drill.name, self.runs)
        } else {
            format!(
                "`{}` failed in {} of {} runs",
                self.drill.name, self.failures, self.runs
            )
        };
        if self.interrupted {
            format!("{headline} (Interrupted: only these seeds ran)")
        } else {
            headline
        }
    }
}

/// Renders a sweep as Markdown for a CI job summary.
pub fn markdown(sweep: &SweepReport) -> String {
    let mut md = String::new();
    let mark = if sweep.failures == 0 { "✅" } else { "❌" };
    let _ = writeln!(md, "## {mark} {}\n", sweep.headline());
    let _ = writeln!(
        md,
        "backend `{}` · seeds {}–{} · bench {}\n",
        sweep.backend,
        sweep.first_seed,
        sweep
            .first_seed
            .saturating_add(sweep.runs.saturating_sub(1)),
        sweep.bench_version
    );
    let _ = writeln!(md, "| | Assertion | Kind | Passed | Failed |");
    let _ = writeln!(md, "|---|---|---|---|---|");
    for a in &sweep.assertions {
        let mark = if a.failed == 0 { "✅" } else { "❌" };
        let _ = writeln!(
            md,
            "| {mark} | {} | {} | {} | {} |",
            cell(&a.name),
            cell(&a.kind),
            a.passed,
            a.failed
        );
    }
    if !sweep.figures.is_empty() {
        let _ = writeln!(md, "\n### Figures (nearest-rank percentiles)\n");
        let _ = writeln!(md, "| Figure | Runs | Min | p50 | p95 | p99 | Max |");
        let _ = writeln!(md, "|---|---|---|---|---|---|---|");
        for (name, d) in &sweep.figures {
            let v = |x| figure_value(x, &d.unit);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} | {} |",
                cell(name),
                d.count,
                v(d.min),
                v(d.p50),
                v(d.p95),
                v(d.p99),
                v(d.max)
            );
        }
    }
    if !sweep.failing_seeds.is_empty() {
        let _ = writeln!(md, "\n### Failing seeds\n");
        let _ = writeln!(md, "| Seed | Failed | Replay |");
        let _ = writeln!(md, "|---|---|---|");
        for f in sweep.failing_seeds.iter().take(SEEDS_SHOWN) {
            let _ = writeln!(
                md,
                "| {} | {} | `{}` |",
                f.seed,
                cell(&failed_text(f)),
                sweep.replay(f.seed)
            );
        }
        if sweep.failing_seeds.len() > SEEDS_SHOWN {
            let rest: Vec<String> = sweep.failing_seeds[SEEDS_SHOWN..]
                .iter()
                .map(|f| f.seed.to_string())
                .collect();
            let _ = writeln!(
                md,
                "\n{} more failing seeds: {}",
                rest.len(),
                rest.join(", ")
            );
        }
    }
    md
}

fn failed_text(f: &FailingSeed) -> String {
    if f.assertions.is_empty() {
        match f.outcome {
            Outcome::Aborted => "(aborted)".to_owned(),
            _ => "(no assertion named)".to_owned(),
        }
    } else {
        f.assertions.join(", ")
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Renders a sweep as JUnit XML: ONE testsuite with the aggregate, one
/// testcase per assertion that fails when any seed failed it, its text
/// listing the failing seeds with their replay commands.
pub fn junit(sweep: &SweepReport) -> String {
    let mut suite = TestSuite::new(sweep.drill.name.as_str());
    suite.add_properties([
        Property::new("backend", sweep.backend.as_str()),
        Property::new("first-seed", sweep.first_seed.to_string()),
        Property::new("runs", sweep.runs.to_string()),
        Property::new("bench-version", sweep.bench_version.as_str()),
        Property::new("content-hash", sweep.drill.content_hash.as_str()),
    ]);
    suite.set_time(Duration::ZERO);
    for a in &sweep.assertions {
        let status = if a.failed == 0 {
            TestCaseStatus::success()
        } else {
            let seeds: Vec<u64> = sweep
                .failing_seeds
                .iter()
                .filter(|f| f.assertions.contains(&a.name))
                .map(|f| f.seed)
                .collect();
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            status.set_message(format!(
                "failed in {} of {} runs; seeds {}",
                a.failed,
                a.passed + a.failed,
                seeds
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            status.set_type(a.kind.as_str());
            let mut text = String::new();
            for seed in seeds {
                let _ = writeln!(text, "seed {seed}: {}", sweep.replay(seed));
            }
            status.set_description(text);
            status
        };
        let mut case = TestCase::new(a.name.as_str(), status);
        case.set_classname(format!("drillbench.{}", sweep.drill.name));
        suite.add_test_case(case);
    }
    let mut report = Report::new("drillbench");
    report.add_test_suite(suite);
    super::junit::xml_chars_only(report.to_string().unwrap_or_default())
}

const HIST_W: f64 = 520.0;
const HIST_H: f64 = 110.0;

/// Renders a sweep as one self-contained HTML document: pass counts,
/// figure distributions with histograms of the RTO and RPO figures, and the
/// failing seeds, each with its replay command.
pub fn html(sweep: &SweepReport) -> String {
    let mut h = String::new();
    let class = if sweep.failures == 0 { "pass" } else { "fail" };
    let headline = sweep.headline().replace('`', "");
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width\"/>\
         <title>{}</title><style>{CSS}</style></head>\n<body>\n",
        esc(&headline)
    );
    let _ = writeln!(
        h,
        "<header><h1 class=\"{class}\">{}</h1><p class=\"meta\">{}</p><p class=\"meta\">backend <code>{}</code> · \
         seeds {}–{} · bench {} · drill <code>{}</code></p></header>",
        esc(&headline),
        esc(&sweep.drill.description),
        esc(&sweep.backend),
        sweep.first_seed,
        sweep
            .first_seed
            .saturating_add(sweep.runs.saturating_sub(1)),
        esc(&sweep.bench_version),
        esc(&sweep.drill.content_hash)
    );
    h.push_str(
        "<section id=\"assertions\"><h2>Assertions</h2><table class=\"verdicts tally\"><thead><tr>\
         <th>Verdict</th><th>Assertion</th><th>Passed</th><th>Failed</th><th>Pass rate</th></tr></thead><tbody>\n",
    );
    for a in &sweep.assertions {
        let (class, word) = if a.failed == 0 {
            ("pass", "pass")
        } else {
            ("fail", "FAIL")
        };
        let total = (a.passed + a.failed).max(1);
        let _ = writeln!(
            h,
            "<tr class=\"{class}\"><td class=\"verdict\">{word}</td><td><b>{}</b><br/><span class=\"kind\">{}</span></td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{:.1} %</td></tr>",
            esc(&a.name),
            esc(&a.kind),
            a.passed,
            a.failed,
            a.passed as f64 * 100.0 / total as f64
        );
    }
    h.push_str("</tbody></table></section>\n");
    if !sweep.figures.is_empty() {
        h.push_str(
            "<section id=\"figures\"><h2>Figures</h2><p class=\"meta\">Percentiles by nearest rank: \
             the value at rank ⌈p/100 × n⌉ of the sorted runs.</p><table class=\"figures\"><thead><tr>\
             <th>Figure</th><th>Runs</th><th>Min</th><th>p50</th><th>p95</th><th>p99</th><th>Max</th></tr></thead><tbody>\n",
        );
        for (name, d) in &sweep.figures {
            let v = |x| esc(&figure_value(x, &d.unit));
            let _ = writeln!(
                h,
                "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>\
                 <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                esc(name),
                d.count,
                v(d.min),
                v(d.p50),
                v(d.p95),
                v(d.p99),
                v(d.max)
            );
        }
        h.push_str("</tbody></table>\n<div class=\"hists\">");
        for (name, d) in sweep
            .figures
            .iter()
            .filter(|(n, _)| n.starts_with("rto") || n.starts_with("rpo"))
        {
            histogram(&mut h, name, d, bound_of(sweep, name, d));
        }
        h.push_str("</div></section>\n");
    }
    if !sweep.failing_seeds.is_empty() {
        let _ = writeln!(
            h,
            "<section id=\"failing-seeds\"><h2>Failing seeds ({})</h2>",
            sweep.failing_seeds.len()
        );
        let (shown, rest) = sweep
            .failing_seeds
            .split_at(sweep.failing_seeds.len().min(SEEDS_SHOWN));
        seeds_table(&mut h, sweep, shown);
        if !rest.is_empty() {
            let _ = write!(
                h,
                "<details><summary>{} more failing seeds</summary>",
                rest.len()
            );
            seeds_table(&mut h, sweep, rest);
            h.push_str("</details>");
        }
        h.push_str("</section>\n");
    }
    h.push_str("</body></html>\n");
    h
}

fn seeds_table(h: &mut String, sweep: &SweepReport, seeds: &[FailingSeed]) {
    h.push_str(
        "<table class=\"seeds\"><thead><tr><th>Seed</th><th>Failed</th><th>Replay</th></tr></thead><tbody>",
    );
    for f in seeds {
        let _ = write!(
            h,
            "<tr><td class=\"num\">{}</td><td>{}</td><td><code>{}</code></td></tr>",
            f.seed,
            esc(&failed_text(f)),
            esc(&sweep.replay(f.seed))
        );
    }
    h.push_str("</tbody></table>\n");
}

/// The bound an assertion sets on a figure (`rto.NAME` is the figure of
/// the assertion NAME), in the figure's unit: `<= 15m` as milliseconds,
/// `>= 0.99` as a ratio. None when there is none or it does not parse.
fn bound_of(sweep: &SweepReport, figure: &str, d: &Distribution) -> Option<(String, f64)> {
    let (_, assertion) = figure.split_once('.')?;
    let tally = sweep.assertions.iter().find(|a| a.name == assertion)?;
    let value = tally.bound.trim_start_matches(['<', '>', '=', ' ']).trim();
    let parsed = match d.unit.as_str() {
        "ms" => value
            .parse::<drillbench_model::duration::Duration>()
            .ok()
            .map(|v| v.as_millis() as f64),
        _ => value.parse::<f64>().ok(),
    }?;
    Some((tally.bound.clone(), parsed))
}

/// Tick values for an axis over `lo..=hi`: a round step (1, 2 or 5 times
/// a power of ten; for durations, whole seconds, minutes or hours) giving
/// at most six ticks.
fn axis_ticks(lo: f64, hi: f64, unit: &str) -> Vec<f64> {
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let step = if unit == "ms" {
        const STEPS: [f64; 17] = [
            1.0,
            10.0,
            100.0,
            1_000.0,
            5_000.0,
            10_000.0,
            15_000.0,
            30_000.0,
            60_000.0,
            120_000.0,
            300_000.0,
            600_000.0,
            900_000.0,
            1_800_000.0,
            3_600_000.0,
            7_200_000.0,
            21_600_000.0,
        ];
        STEPS
            .iter()
            .copied()
            .find(|s| span / s <= 5.0 + 1e-9)
            .unwrap_or((span / 5.0).ceil())
    } else {
        let raw = span / 5.0;
        let power = 10f64.powf(raw.log10().floor());
        [1.0, 2.0, 5.0, 10.0]
            .iter()
            .map(|m| m * power)
            .find(|s| span / s <= 5.0 + 1e-9)
            .unwrap_or(raw)
    };
    let mut ticks = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + step * 1e-9 && ticks.len() < 12 {
        ticks.push(t);
        t += step;
    }
    ticks
}

fn histogram(h: &mut String, name: &str, d: &Distribution, bound: Option<(String, f64)>) {
    let bins = d.histogram.len().max(1);
    let top = d.histogram.iter().copied().max().unwrap_or(0).max(1);
    let (left, bottom) = (44.0, 50.0);
    let (w, hh) = (left + HIST_W + 10.0, HIST_H + bottom + 34.0);
    let _ = write!(
        h,
        "<figure class=\"hist\" data-figure=\"{0}\"><figcaption><code>{0}</code> over {1} runs</figcaption>\
         <svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w:.0}\" height=\"{hh:.0}\" viewBox=\"0 0 {w:.0} {hh:.0}\" role=\"img\" aria-label=\"histogram of {0}\">",
        esc(name),
        d.count
    );
    // The axis spans the runs and the bound, so a bound beyond every run
    // still shows where it is.
    let lo = bound.as_ref().map_or(d.min, |(_, b)| b.min(d.min));
    let hi = bound.as_ref().map_or(d.max, |(_, b)| b.max(d.max));
    let span = (hi - lo).max(f64::MIN_POSITIVE);
    let px = |v: f64| {
        if hi > lo {
            left + (v - lo) / span * HIST_W
        } else {
            left + HIST_W / 2.0
        }
    };
    let step = if bins > 1 {
        (d.max - d.min) / bins as f64
    } else {
        0.0
    };
    h.push_str("<g class=\"bars\">");
    for (i, &c) in d.histogram.iter().enumerate() {
        let bh = HIST_H * c as f64 / top as f64;
        let from = d.min + step * i as f64;
        let to = if bins > 1 { from + step } else { d.max };
        let (x0, x1) = if d.max > d.min {
            (px(from), px(to))
        } else {
            (px(from) - 6.0, px(from) + 6.0)
        };
        let _ = write!(
            h,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\"><title>{} to {}: {c} runs</title></rect>",
            x0 + 1.0,
            10.0 + HIST_H - bh,
            (x1 - x0 - 2.0).max(1.0),
            esc(&figure_value(from, &d.unit)),
            esc(&figure_value(to, &d.unit)),
        );
    }
    h.push_str("</g>");
    // A real axis: round ticks with their values, and the count scale.
    let _ = write!(
        h,
        "<g class=\"haxis\"><line x1=\"{left:.1}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\"/>\
         <text x=\"{2:.1}\" y=\"18\" text-anchor=\"end\">{top}</text><text x=\"{2:.1}\" y=\"{0:.1}\" text-anchor=\"end\">0</text>",
        10.0 + HIST_H,
        left + HIST_W,
        left - 4.0
    );
    let ticks = if hi > lo {
        axis_ticks(lo, hi, &d.unit)
    } else {
        vec![lo]
    };
    for t in ticks {
        let _ = write!(
            h,
            "<line class=\"tick\" x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>",
            px(t),
            10.0 + HIST_H,
            10.0 + HIST_H + 4.0,
            10.0 + HIST_H + 14.0,
            esc(&figure_value(t, &d.unit))
        );
    }
    h.push_str("</g>");
    // Percentile markers, so the tail reads at a glance.
    h.push_str("<g class=\"marks\">");
    let mut labels: Vec<(f64, String, &str)> = [("p50", d.p50), ("p95", d.p95), ("p99", d.p99)]
        .into_iter()
        .map(|(label, v)| {
            (
                px(v),
                format!("{label} {}", figure_value(v, &d.unit)),
                "pct",
            )
        })
        .collect();
    if let Some((written, b)) = &bound {
        labels.push((px(*b), format!("bound {written}"), "bound"));
    }
    for (row, (x, label, class)) in labels.iter().enumerate() {
        // Labels near an edge grow inwards, so none is clipped; each has
        // its own row, so none overlaps another.
        let anchor = if *x > left + HIST_W * 0.8 {
            "end"
        } else if *x < left + HIST_W * 0.2 {
            "start"
        } else {
            "middle"
        };
        let _ = write!(
            h,
            "<g class=\"{class}\"><line x1=\"{x:.1}\" y1=\"10\" x2=\"{x:.1}\" y2=\"{0:.1}\"/><text x=\"{x:.1}\" y=\"{1:.1}\" text-anchor=\"{anchor}\">{2}</text></g>",
            10.0 + HIST_H,
            10.0 + HIST_H + 27.0 + row as f64 * 12.0,
            esc(label)
        );
    }
    h.push_str("</g></svg></figure>");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn distribution(min: f64, max: f64) -> Distribution {
        Distribution {
            unit: "ms".to_owned(),
            count: 10,
            min,
            p50: (min + max) / 2.0,
            p95: max,
            p99: max,
            max,
            histogram: vec![1; HISTOGRAM_BINS],
        }
    }

    #[test]
    fn axis_ticks_are_round_and_few() {
        assert_eq!(
            axis_ticks(207_000.0, 270_000.0, "ms"),
            [210_000.0, 225_000.0, 240_000.0, 255_000.0, 270_000.0]
        );
        assert_eq!(axis_ticks(0.95, 1.0, "ratio").len(), 6);
        for (lo, hi) in [(0.0, 1.0), (1.0, 86_400_000.0), (5.0, 7.0)] {
            let ticks = axis_ticks(lo, hi, "ms");
            assert!((1..=12).contains(&ticks.len()), "{lo}..{hi}: {ticks:?}");
            assert!(ticks.iter().all(|t| (lo..=hi).contains(t)), "{ticks:?}");
        }
    }

    #[test]
    fn a_bound_beyond_every_run_is_drawn_on_a_widened_axis() {
        let d = distribution(200_000.0, 270_000.0);
        let mut h = String::new();
        histogram(
            &mut h,
            "rto.api",
            &d,
            Some(("<= 15m".to_owned(), 900_000.0)),
        );
        assert!(h.contains(">bound &lt;= 15m</text>"), "{h}");
        assert!(h.contains(">15m</text>"), "the axis reaches the bound: {h}");
        // The bound's line sits at the right end of the plot.
        assert!(h.contains("<g class=\"bound\"><line x1=\"564.0\""), "{h}");
        let mut plain = String::new();
        histogram(&mut plain, "rto.api", &d, None);
        assert!(!plain.contains("class=\"bound\""));
    }

    #[test]
    fn a_bound_is_read_from_the_assertion_of_its_figure() {
        let d = distribution(1.0, 2.0);
        let mut sweep = SweepReport {
            format: SWEEP_FORMAT.to_owned(),
            bench_version: "0".to_owned(),
            drill: crate::DrillIdentity {
                name: "d".to_owned(),
                description: String::new(),
                file: None,
                content_hash: String::new(),
                snapshot: None,
                from_cluster: None,
            },
            backend: "sim".to_owned(),
            first_seed: 1,
            runs: 1,
            failures: 0,
            failing_seeds: Vec::new(),
            interrupted: false,
            assertions: vec![AssertionTally {
                name: "api".to_owned(),
                kind: "rto".to_owned(),
                passed: 1,
                failed: 0,
                bound: "<= 1m30s".to_owned(),
            }],
            figures: BTreeMap::new(),
        };
        assert_eq!(
            bound_of(&sweep, "rto.api", &d),
            Some(("<= 1m30s".to_owned(), 90_000.0))
        );
        assert_eq!(bound_of(&sweep, "rto.other", &d), None);
        sweep.assertions[0].bound = "soon".to_owned();
        assert_eq!(bound_of(&sweep, "rto.api", &d), None);
    }
}
