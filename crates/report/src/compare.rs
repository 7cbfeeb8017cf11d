//! What got worse between two runs of the same drill (`bench report compare
//! OLD.json NEW.json`).
//!
//! Three things count as a regression:
//!
//! - **a new failure**: an assertion that passed in OLD fails in NEW (or
//!   fails in NEW and does not exist in OLD, which only a forced comparison
//!   of different drill contents can produce);
//! - **a negative control that stopped biting**: an assertion of kind
//!   `negativeControl` records `pass` when the guard bit (the planted object
//!   was refused, or the weakened drill failed the named assertions), so
//!   `pass` in OLD and `fail` in NEW means the guard no longer proves
//!   anything. It is reported as its own kind rather than as a new failure,
//!   because it says the *test* lost its teeth, not that the platform broke;
//! - **a duration figure up beyond noise**: any figure in `ms` (RTO, RPO,
//!   downtime) that grew by more than [`Noise::relative`] of its OLD value
//!   **and** by more than [`Noise::absolute_ms`]. Both must hold: 10 % of a
//!   4-second RTO is jitter, and 30 s more on a 4-hour rebuild is jitter too.
//!
//! Improvements and figures present on one side only are listed as notes,
//! never as regressions.

use std::fmt::Write;

use super::{DrillReport, Verdict, format_ms};

/// How much a duration figure may grow before it counts as worse.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// Growth relative to the OLD value (0.10 = 10 %).
    pub relative: f64,
    /// Growth in milliseconds.
    pub absolute_ms: f64,
}

impl Default for Noise {
    /// More than 10 % and more than 30 s.
    fn default() -> Self {
        Noise {
            relative: 0.10,
            absolute_ms: 30_000.0,
        }
    }
}

impl Noise {
    /// Whether going from `old` to `new` milliseconds is beyond noise.
    pub fn is_worse(&self, old: f64, new: f64) -> bool {
        let growth = new - old;
        growth > self.absolute_ms && growth > self.relative * old.abs()
    }
}

/// One thing that got worse.
#[derive(Debug, Clone, PartialEq)]
pub enum Regression {
    /// An assertion fails in NEW that passed in (or was absent from) OLD.
    NewFailure {
        assertion: String,
        kind: String,
        /// NEW's one-sentence reason.
        summary: String,
        /// Whether OLD had the assertion at all.
        in_old: bool,
    },
    /// A negative control passed in OLD and fails in NEW.
    NegativeControlStoppedBiting {
        assertion: String,
        /// NEW's one-sentence reason.
        summary: String,
    },
    /// A duration figure grew beyond noise.
    FigureWorse {
        figure: String,
        /// OLD value, milliseconds.
        old_ms: f64,
        /// NEW value, milliseconds.
        new_ms: f64,
    },
}

/// The result of comparing two runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub old_seed: u64,
    pub new_seed: u64,
    /// The drill both runs are of.
    pub drill: String,
    /// What got worse, in the drill's assertion order, then figures by name.
    pub regressions: Vec<Regression>,
    /// What got better or changed without being worse, for people.
    pub notes: Vec<String>,
}

impl Comparison {
    /// Whether anything got worse.
    pub fn regressed(&self) -> bool {
        !self.regressions.is_empty()
    }
}

/// Why two reports were not compared.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompareError {
    /// Reports of different drills.
    #[error(
        "refusing to compare different drills: OLD is `{old}`, NEW is `{new}` (pass --force to compare anyway)"
    )]
    DifferentDrill {
        /// OLD's drill.
        old: String,
        /// NEW's drill.
        new: String,
    },
    /// The same drill with different contents (drill file or manifests).
    #[error(
        "refusing to compare `{drill}` across different contents: OLD is {old}, NEW is {new}; the drill file or its manifests changed (pass --force to compare anyway)"
    )]
    DifferentContent {
        drill: String,
        /// OLD's content hash.
        old: String,
        /// NEW's content hash.
        new: String,
    },
}

/// Compares two runs. Unless `force`, reports of different drills or drill
/// contents are refused: a "regression" between them would be meaningless.
pub fn compare(
    old: &DrillReport,
    new: &DrillReport,
    noise: Noise,
    force: bool,
) -> Result<Comparison, CompareError> {
    let mut notes = Vec::new();
    if old.drill.name != new.drill.name {
        if !force {
            return Err(CompareError::DifferentDrill {
                old: old.drill.name.clone(),
                new: new.drill.name.clone(),
            });
        }
        notes.push(format!(
            "forced: comparing drill `{}` with drill `{}`",
            old.drill.name, new.drill.name
        ));
    } else if old.drill.content_hash != new.drill.content_hash {
        if !force {
            return Err(CompareError::DifferentContent {
                drill: new.drill.name.clone(),
                old: old.drill.content_hash.clone(),
                new: new.drill.content_hash.clone(),
            });
        }
        notes.push("forced: the drill's contents differ between OLD and NEW".to_owned());
    }
    if old.backend != new.backend {
        notes.push(format!(
            "backends differ: OLD ran on `{}`, NEW on `{}`",
            old.backend, new.backend
        ));
    }
    let mut regressions = Vec::new();
    for a in &new.assertions {
        let before = old.assertions.iter().find(|o| o.name == a.name);
        match (before.map(|b| b.verdict), a.verdict) {
            (Some(Verdict::Pass), Verdict::Fail) if a.is_control() => {
                regressions.push(Regression::NegativeControlStoppedBiting {
                    assertion: a.name.clone(),
                    summary: a.summary.clone(),
                });
            }
            (Some(Verdict::Pass) | None, Verdict::Fail) => {
                regressions.push(Regression::NewFailure {
                    assertion: a.name.clone(),
                    kind: a.kind.clone(),
                    summary: a.summary.clone(),
                    in_old: before.is_some(),
                });
            }
            (Some(Verdict::Fail), Verdict::Pass) if a.is_control() => {
                notes.push(format!("negative control `{}` bites again", a.name));
            }
            (Some(Verdict::Fail), Verdict::Pass) => {
                notes.push(format!("`{}` passes now (failed in OLD)", a.name));
            }
            (Some(Verdict::Fail), Verdict::Fail) => {
                notes.push(format!("`{}` still fails", a.name));
            }
            (None, Verdict::Pass) => {
                notes.push(format!("`{}` is new and passes", a.name));
            }
            (Some(Verdict::Pass), Verdict::Pass) => {}
            // A check not judged on one side cannot have regressed on it.
            (_, Verdict::Skipped) => {
                notes.push(format!("`{}` was not judged in NEW", a.name));
            }
            (Some(Verdict::Skipped), Verdict::Pass) => {}
            (Some(Verdict::Skipped), Verdict::Fail) => {
                regressions.push(Regression::NewFailure {
                    assertion: a.name.clone(),
                    kind: a.kind.clone(),
                    summary: a.summary.clone(),
                    in_old: true,
                });
            }
        }
    }
    for a in &old.assertions {
        if !new.assertions.iter().any(|n| n.name == a.name) {
            notes.push(format!("`{}` is no longer asserted", a.name));
        }
    }
    for (name, figure) in &new.figures {
        match old.figures.get(name) {
            Some(before) if before.unit == "ms" && figure.unit == "ms" => {
                if noise.is_worse(before.value, figure.value) {
                    regressions.push(Regression::FigureWorse {
                        figure: name.clone(),
                        old_ms: before.value,
                        new_ms: figure.value,
                    });
                } else if noise.is_worse(figure.value, before.value) {
                    notes.push(format!(
                        "`{name}` improved: {} → {}",
                        ms_text(before.value),
                        ms_text(figure.value)
                    ));
                }
            }
            Some(_) => {}
            None => notes.push(format!("figure `{name}` is new")),
        }
    }
    for name in old.figures.keys() {
        if !new.figures.contains_key(name) {
            notes.push(format!("figure `{name}` is no longer measured"));
        }
    }
    Ok(Comparison {
        old_seed: old.seed,
        new_seed: new.seed,
        drill: new.drill.name.clone(),
        regressions,
        notes,
    })
}

fn ms_text(value: f64) -> String {
    if value.is_finite() && value > 0.0 {
        format_ms(value as u64)
    } else {
        "0s".to_owned()
    }
}

fn regression_text(r: &Regression) -> String {
    match r {
        Regression::NewFailure {
            assertion,
            kind,
            summary,
            in_old,
        } => {
            let was = if *in_old {
                "passed in OLD"
            } else {
                "absent from OLD"
            };
            format!("new failure: `{assertion}` ({kind}) {was}, fails in NEW: {summary}")
        }
        Regression::NegativeControlStoppedBiting { assertion, summary } => format!(
            "negative control stopped biting: `{assertion}` passed in OLD, fails in NEW: {summary}"
        ),
        Regression::FigureWorse {
            figure,
            old_ms,
            new_ms,
        } => {
            let pct = if *old_ms > 0.0 {
                format!(" (+{:.0} %)", (new_ms - old_ms) / old_ms * 100.0)
            } else {
                String::new()
            };
            format!(
                "worse: `{figure}` {} → {}, up {}{pct}",
                ms_text(*old_ms),
                ms_text(*new_ms),
                ms_text(new_ms - old_ms)
            )
        }
    }
}

fn noise_text(noise: Noise) -> String {
    format!(
        "durations count as worse when up more than {:.0} % and more than {}",
        noise.relative * 100.0,
        ms_text(noise.absolute_ms)
    )
}

/// The comparison as plain text, one line per finding.
pub fn render_text(c: &Comparison, noise: Noise) -> String {
    let mut t = String::new();
    let verdict = if c.regressed() {
        format!("{} regression(s)", c.regressions.len())
    } else {
        "no regression".to_owned()
    };
    let _ = writeln!(
        t,
        "{}: seed {} → seed {}: {verdict}",
        c.drill, c.old_seed, c.new_seed
    );
    for r in &c.regressions {
        let _ = writeln!(t, "  {}", regression_text(r));
    }
    for n in &c.notes {
        let _ = writeln!(t, "  note: {n}");
    }
    let _ = writeln!(t, "  ({})", noise_text(noise));
    t
}

/// The comparison as Markdown for a CI job summary.
pub fn render_markdown(c: &Comparison, noise: Noise) -> String {
    let mut md = String::new();
    let (mark, verdict) = if c.regressed() {
        ("❌", format!("{} regression(s)", c.regressions.len()))
    } else {
        ("✅", "no regression".to_owned())
    };
    let _ = writeln!(
        md,
        "## {mark} `{}`: {verdict} (seed {} → seed {})\n",
        c.drill, c.old_seed, c.new_seed
    );
    for r in &c.regressions {
        let _ = writeln!(md, "- ❌ {}", regression_text(r).replace('\n', " "));
    }
    for n in &c.notes {
        let _ = writeln!(md, "- {n}");
    }
    let _ = writeln!(md, "\n_{}._", noise_text(noise));
    md
}
