//! A sweep as it is being run: what the aggregate needs of each seed's
//! report (verdict counts, figure values, the failing seeds) and nothing
//! else, so a sweep's memory grows by a few numbers a seed instead of a
//! whole report, and tallies of disjoint seed ranges merge exactly.
//!
//! That exactness is what lets a sweep be split: `bench run --shard I/N`
//! writes the tally of one slice of the seeds, and `bench report merge`
//! folds the slices into the sweep report one run would have written, byte
//! for byte. Percentiles need every value, so values are kept, not
//! sketched: 8 bytes per figure per seed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::sweep::{
    AssertionTally, Distribution, FailingSeed, SWEEP_FORMAT, SweepError, SweepReport,
};
use super::{DrillIdentity, DrillReport, Outcome, Verdict};

/// The version of the tally format a shard writes.
pub const TALLY_FORMAT: &str = "drillbench.dev/sweep-tally/v1";

/// The seeds of one drill run so far, aggregated exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SweepTally {
    /// Always [`TALLY_FORMAT`].
    pub format: String,
    pub bench_version: String,
    pub drill: DrillIdentity,
    pub backend: String,
    /// The seed ranges covered, `[first, last]` inclusive, ascending and
    /// disjoint.
    pub seeds: Vec<[u64; 2]>,
    /// Pass and fail counts of each assertion, in the drill's order.
    pub assertions: Vec<AssertionTally>,
    /// Every value of each figure, by name, with its unit.
    pub values: BTreeMap<String, FigureValues>,
    /// Runs whose outcome was not `passed`, ascending by seed.
    pub failing_seeds: Vec<FailingSeed>,
    /// Whether the sweep was stopped before every seed ran.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
}

/// One figure's values over the seeds that measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FigureValues {
    pub unit: String,
    pub values: Vec<f64>,
}

impl SweepTally {
    /// An empty tally for runs like `first`.
    pub fn like(first: &DrillReport) -> SweepTally {
        SweepTally {
            format: TALLY_FORMAT.to_owned(),
            bench_version: first.bench_version.clone(),
            drill: first.drill.clone(),
            backend: first.backend.clone(),
            seeds: Vec::new(),
            assertions: Vec::new(),
            values: BTreeMap::new(),
            failing_seeds: Vec::new(),
            interrupted: false,
        }
    }

    fn identity(&self) -> String {
        identity(&self.drill, &self.backend, &self.bench_version)
    }

    /// Adds one seed's report. Runs of another drill, drill content,
    /// backend or bench version are refused.
    pub fn add(&mut self, run: &DrillReport) -> Result<(), SweepError> {
        let found = identity(&run.drill, &run.backend, &run.bench_version);
        if found != self.identity() {
            return Err(SweepError::Mixed {
                seed: run.seed,
                expected: self.identity(),
                found,
            });
        }
        for a in &run.assertions {
            let tally = self.tally(&a.name, &a.kind, &a.bound);
            match a.verdict {
                Verdict::Pass => tally.passed += 1,
                Verdict::Fail => tally.failed += 1,
                Verdict::Skipped => {}
            }
        }
        for (name, figure) in &run.figures {
            let entry = self
                .values
                .entry(name.clone())
                .or_insert_with(|| FigureValues {
                    unit: figure.unit.clone(),
                    values: Vec::new(),
                });
            if entry.unit != figure.unit {
                return Err(SweepError::Unit {
                    figure: name.clone(),
                    expected: entry.unit.clone(),
                    found: figure.unit.clone(),
                    seed: run.seed,
                });
            }
            entry.values.push(figure.value);
        }
        if run.outcome != Outcome::Passed {
            self.failing_seeds.push(FailingSeed {
                seed: run.seed,
                outcome: run.outcome,
                assertions: run
                    .assertions
                    .iter()
                    .filter(|a| a.verdict == Verdict::Fail)
                    .map(|a| a.name.clone())
                    .collect(),
            });
        }
        self.cover(run.seed, run.seed);
        Ok(())
    }

    /// Folds in the tally of other seeds of the same drill (a shard).
    pub fn merge(&mut self, other: SweepTally) -> Result<(), SweepError> {
        if other.identity() != self.identity() {
            return Err(SweepError::Mixed {
                seed: other.seeds.first().map_or(0, |s| s[0]),
                expected: self.identity(),
                found: other.identity(),
            });
        }
        for [first, last] in &other.seeds {
            if self.seeds.iter().any(|[a, b]| first <= b && a <= last) {
                return Err(SweepError::Overlap {
                    first: *first,
                    last: *last,
                });
            }
        }
        for range in other.seeds {
            self.cover(range[0], range[1]);
        }
        for a in other.assertions {
            let tally = self.tally(&a.name, &a.kind, &a.bound);
            tally.passed += a.passed;
            tally.failed += a.failed;
        }
        for (name, figure) in other.values {
            match self.values.get_mut(&name) {
                Some(mine) if mine.unit != figure.unit => {
                    return Err(SweepError::Unit {
                        figure: name,
                        expected: mine.unit.clone(),
                        found: figure.unit,
                        seed: other.failing_seeds.first().map_or(0, |s| s.seed),
                    });
                }
                Some(mine) => mine.values.extend(figure.values),
                None => {
                    self.values.insert(name, figure);
                }
            }
        }
        self.failing_seeds.extend(other.failing_seeds);
        self.failing_seeds.sort_by_key(|s| s.seed);
        self.interrupted |= other.interrupted;
        Ok(())
    }

    /// The sweep report of the seeds tallied.
    pub fn finish(self) -> Result<SweepReport, SweepError> {
        let runs: u64 = self.seeds.iter().map(|[a, b]| b - a + 1).sum();
        let first_seed = self.seeds.first().ok_or(SweepError::NoRuns)?[0];
        let figures = self
            .values
            .into_iter()
            .filter_map(|(name, f)| Distribution::of(&f.unit, &f.values).map(|d| (name, d)))
            .collect();
        Ok(SweepReport {
            format: SWEEP_FORMAT.to_owned(),
            bench_version: self.bench_version,
            drill: self.drill,
            backend: self.backend,
            first_seed,
            runs,
            failures: self.failing_seeds.len() as u64,
            failing_seeds: self.failing_seeds,
            assertions: self.assertions,
            figures,
            interrupted: self.interrupted,
        })
    }

    fn tally(&mut self, name: &str, kind: &str, bound: &str) -> &mut AssertionTally {
        let i = match self.assertions.iter().position(|t| t.name == name) {
            Some(i) => i,
            None => {
                self.assertions.push(AssertionTally {
                    name: name.to_owned(),
                    kind: kind.to_owned(),
                    passed: 0,
                    failed: 0,
                    bound: bound.to_owned(),
                });
                self.assertions.len() - 1
            }
        };
        &mut self.assertions[i]
    }

    /// Marks `first..=last` covered, joining touching ranges.
    fn cover(&mut self, first: u64, last: u64) {
        self.seeds.push([first, last]);
        self.seeds.sort_unstable();
        let mut joined: Vec<[u64; 2]> = Vec::with_capacity(self.seeds.len());
        for [a, b] in self.seeds.drain(..) {
            match joined.last_mut() {
                Some(prev) if a <= prev[1].saturating_add(1) => prev[1] = prev[1].max(b),
                _ => joined.push([a, b]),
            }
        }
        self.seeds = joined;
    }

    /// The tally as pretty JSON with a trailing newline.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(self).unwrap_or_default();
        json.push('\n');
        json
    }

    /// Reads a shard's tally, refusing other formats.
    pub fn read(path: &Path) -> Result<SweepTally, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|source| SweepError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(&text)
            && let Some(found) = map.get("format").and_then(|f| f.as_str())
            && found != TALLY_FORMAT
        {
            return Err(SweepError::TallyVersion {
                path: path.to_path_buf(),
                found: found.to_owned(),
            });
        }
        serde_json::from_str(&text).map_err(|e| SweepError::Parse {
            path: PathBuf::from(path),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }
}

fn identity(drill: &DrillIdentity, backend: &str, bench_version: &str) -> String {
    format!(
        "drill `{}` ({}) on `{}` by bench {}",
        drill.name, drill.content_hash, backend, bench_version
    )
}
