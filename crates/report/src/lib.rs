//! The drill report: one versioned JSON document per drill run, the source
//! of truth that every other format is rendered from.
//!
//! The model knows nothing of which backend produced it: the assertions
//! fill it from a timeline of events, and the renderers ([`markdown`],
//! [`junit`], [`html`]) read only this model. Many runs of one drill
//! aggregate into a [`sweep::SweepReport`]; [`compare`] tells what got worse
//! between two runs. Times are milliseconds since the drill
//! started (virtual time on the simulator), integers so that the same seed
//! gives the same bytes.

pub mod budget;
pub mod compare;
pub mod github;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod not_simulated;
pub mod out_dir;
pub mod sweep;
pub mod sweep_tally;
pub mod terminal;
pub mod timeline_summary;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::out_dir::OutDir;
use crate::timeline_summary::{EVENTS_FILE, Owners, TimelineSummary};
use drillbench_model::topology::Topology;
use drillbench_observe::{Event, ObjectRef};

/// The version of the report format. Readers refuse other versions rather
/// than misread them; bump it on any incompatible change.
pub const REPORT_FORMAT: &str = "drillbench.dev/report/v1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DrillReport {
    /// Always [`REPORT_FORMAT`].
    pub format: String,
    /// The version of the bench that ran the drill.
    pub bench_version: String,
    pub drill: DrillIdentity,
    /// Where it ran: `sim`, `kind`, `talos` or `kubeconfig`.
    pub backend: String,
    /// The seed of the run's random generator; `bench run --seed` replays it.
    pub seed: u64,
    /// The cluster the drill built.
    pub topology: Topology,
    pub outcome: Outcome,
    /// How long the drill lasted, in milliseconds of drill time.
    pub duration_ms: u64,
    /// The verdicts, in the order the drill lists its assertions.
    pub assertions: Vec<AssertionResult>,
    /// Measured figures (RTO, RPO, availability, ...), by name.
    pub figures: BTreeMap<String, Figure>,
    /// Everything that happened, in time order; only the drill's own
    /// events when `timelineSummary` is present.
    pub timeline: Vec<Event>,
    /// Present when the run recorded more events than the timeline budget:
    /// the events `timeline` leaves out, tallied per workload and pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeline_summary: Option<TimelineSummary>,
    /// The file beside this report that holds every event, one per line
    /// (`bench run --events-ndjson`); absent when none was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_file: Option<String>,
    /// Objects of kinds the backend does not model, listed rather than dropped.
    pub not_simulated: Vec<ObjectRef>,
    /// How each workload fared while the steps ran, by `namespace/Kind/name`.
    #[serde(default)]
    pub workloads: Vec<WorkloadAvailability>,
}

/// How one workload fared while the drill's steps ran: the answer to "what
/// was the lowest it went" that a rolling upgrade is planned around.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadAvailability {
    /// `namespace/Kind/name`.
    pub workload: String,
    /// Ready replicas at the lowest point.
    pub lowest_ready: u32,
    /// Desired replicas at that point.
    pub desired: u32,
    /// When the lowest point began, in milliseconds of drill time.
    pub lowest_at_ms: u64,
    /// The fraction of the steps' time with every desired replica ready.
    pub whole_ratio: f64,
}

/// Which drill a report is about, so two reports are compared only when
/// they should be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DrillIdentity {
    pub name: String,
    pub description: String,
    /// The drill file as given, for a drill that is not built in. A
    /// built-in is named by its name and hash alone, wherever it was read
    /// from, so running it by name or by path writes the same report and
    /// its replay line works in any folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// SHA-256 of the drill file and every manifest it deploys.
    pub content_hash: String,
    /// The snapshot `--snapshot` ran the drill on, as it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// Where a `fromCluster` drill's workloads were read, and how many
    /// objects: inputs the content hash covers but no file holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_cluster: Option<String>,
}

impl DrillIdentity {
    /// The command that replays `seed` of this drill on `backend`: the
    /// built-in's name, else the file as it was given.
    pub fn replay(&self, backend: &str, seed: u64) -> String {
        let name = self.file.as_deref().unwrap_or(&self.name);
        let drill = match &self.snapshot {
            Some(snapshot) => format!("{name} --snapshot {snapshot}"),
            None => name.to_owned(),
        };
        if backend == "sim" {
            format!("bench run {drill} --seed {seed}")
        } else {
            format!("bench run {drill} --backend {backend} --seed {seed}")
        }
    }
}

/// The overall verdict of a drill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    /// Every assertion held.
    Passed,
    /// At least one assertion failed.
    Failed,
    /// The drill stopped early (a preflight said no-go, a wait timed out);
    /// assertions were still judged on what happened.
    Aborted,
    /// Every real assertion held, but a negative control did not prove its
    /// guard: it stayed green (no teeth), or its weakened run did not reach
    /// the real run's steps and faults (inconclusive). Not "the platform
    /// regressed": the drill itself needs fixing.
    Unproven,
}

/// The verdict of one assertion, with the evidence that decided it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AssertionResult {
    pub name: String,
    /// Its kind (`rto`, `placement`, ...).
    pub kind: String,
    pub verdict: Verdict,
    /// The bound, as written (`<= 15m`, `>= 0.99`).
    pub bound: String,
    /// What was measured, as a person reads it (`4m12s`, `0.998`).
    pub measured: String,
    /// One sentence: why the verdict is what it is.
    pub summary: String,
    /// The facts that decided it.
    pub evidence: Vec<Evidence>,
    /// A negative control's proof: how the drill was weakened, both runs'
    /// traces and what that shows. Absent on other assertions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlProof>,
}

/// What a negative control did and why its verdict proves (or does not
/// prove) the guard: "weakened how → what failed → why that proves it".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ControlProof {
    pub conclusion: ControlConclusion,
    /// How the drill was weakened, as a person reads it.
    pub weakened: String,
    /// What failed in the weakened run (or stayed green, or diverged).
    pub failed: String,
    /// Why that proves the guard, or why it does not.
    pub why: String,
    /// Where the weakened run left the real run's steps and faults; empty
    /// when it reached all of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diverged: Vec<String>,
    /// The real run's steps, faults and waits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub real_trace: Vec<TraceStep>,
    /// The weakened run's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weakened_trace: Vec<TraceStep>,
}

/// How a negative control came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ControlConclusion {
    /// The weakened run reached the same steps and faults, and every
    /// named assertion failed on the guard's own subjects.
    Bites,
    /// The weakened run reached the same steps and faults and a named
    /// assertion still held: the check cannot fail.
    NoTeeth,
    /// The weakened run did not reach the real run's steps and faults, or
    /// failed for a reason that does not involve the guard's subjects: it
    /// proves nothing either way.
    Inconclusive,
}

impl ControlConclusion {
    /// As the terminal and the reports spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ControlConclusion::Bites => "bites",
            ControlConclusion::NoTeeth => "no teeth",
            ControlConclusion::Inconclusive => "inconclusive",
        }
    }
}

/// One thing a drill's steps did: a step began, a fault was injected, a
/// preflight or a wait ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceStep {
    /// When, in milliseconds of drill time.
    pub at_ms: u64,
    /// The step's label (`converge` before the first).
    pub step: String,
    /// What happened, e.g. `fault: crash node prod-worker-1`.
    pub what: String,
    /// The node a fault hit, when it hit one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    Pass,
    Fail,
    /// Not judged on this backend: a negative control whose safeguard only
    /// the simulator can take away. It proves nothing and claims nothing,
    /// and the report says so (JUnit: a skipped testcase).
    Skipped,
}

impl AssertionResult {
    /// Whether this is a negative control rather than a real assertion.
    pub fn is_control(&self) -> bool {
        self.kind == NEGATIVE_CONTROL
    }
}

/// The kind name of negative controls.
pub const NEGATIVE_CONTROL: &str = "negativeControl";

/// One fact behind a verdict: which pod, which node, when, which rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Evidence {
    /// When, in milliseconds of drill time.
    pub at_ms: u64,
    /// The pod, as `namespace/name`, when one is involved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The node, when one is involved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub rule: String,
    /// What was seen.
    pub detail: String,
    /// The labels that decided it (a node's labels for a placement rule).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// A measured number with its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Figure {
    pub value: f64,
    /// Its unit: `ms`, `ratio`, `count`.
    pub unit: String,
}

/// Why a stored report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read report {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a report of this format.
    #[error("{path}:{line}:{column}: not a drill report: {message}")]
    Parse {
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        message: String,
    },
    /// A report of another format version.
    #[error("{path}: report format `{found}` is not supported; expected `{REPORT_FORMAT}`")]
    Version { path: PathBuf, found: String },
}

impl DrillReport {
    /// Whether every assertion held.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Passed
    }

    /// The negative controls' verdicts.
    pub fn controls(&self) -> impl Iterator<Item = &AssertionResult> {
        self.assertions.iter().filter(|a| a.is_control())
    }

    /// The report as pretty JSON with a trailing newline: the stored form.
    pub fn to_json(&self) -> String {
        let mut json = serde_json::to_string_pretty(self).unwrap_or_default();
        json.push('\n');
        json
    }

    /// The stored form written straight to `out`, the same bytes as
    /// [`DrillReport::to_json`] without holding them all at once.
    pub fn write_json(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, self)?;
        out.write_all(b"\n")
    }

    /// Summarises the timeline when it holds more than `budget` events:
    /// `timeline` keeps the drill's own events, `timelineSummary` tallies
    /// the rest, and the complete timeline is returned (for
    /// `events.ndjson`). `None`, and the report untouched, within budget.
    pub fn summarise_timeline(&mut self, budget: usize, owners: &dyn Owners) -> Option<Vec<Event>> {
        if self.timeline.len() <= budget {
            return None;
        }
        let (summary, kept) = TimelineSummary::of(&self.timeline, budget, owners);
        self.timeline_summary = Some(summary);
        Some(std::mem::replace(&mut self.timeline, kept))
    }

    /// Parses a stored report, refusing other format versions.
    pub fn from_json(path: &Path, text: &str) -> Result<DrillReport, ReportError> {
        // Check the version first, so an old report says so instead of
        // failing on whichever field changed.
        if let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(text)
            && let Some(found) = map.get("format").and_then(|f| f.as_str())
            && found != REPORT_FORMAT
        {
            return Err(ReportError::Version {
                path: path.to_path_buf(),
                found: found.to_owned(),
            });
        }
        serde_json::from_str(text).map_err(|e| ReportError::Parse {
            path: path.to_path_buf(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })
    }

    pub fn read(path: &Path) -> Result<DrillReport, ReportError> {
        let text = std::fs::read_to_string(path).map_err(|source| ReportError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_json(path, &text)
    }
}

/// Writes a report in every format into `dir` (created if missing) and
/// returns the files written: `report.json`, `report.md`, `report.junit.xml`,
/// `report.html`. `wall` is how long the run took by the wall clock, for
/// JUnit's suite time (see [`junit::render_timed`]); every other file is
/// the same for the same report.
pub fn write_all(
    report: &DrillReport,
    dir: &Path,
    wall: Option<std::time::Duration>,
) -> std::io::Result<Vec<PathBuf>> {
    write_reports(report, None, dir, wall)
}

/// [`write_all`], and with `events`, the complete event stream as
/// `events.ndjson` (see [`timeline_summary::write_ndjson`]), staged and
/// renamed into place with the reports. `report.json` is streamed to its
/// file, never held whole.
pub fn write_reports(
    report: &DrillReport,
    events: Option<&[Event]>,
    dir: &Path,
    wall: Option<std::time::Duration>,
) -> std::io::Result<Vec<PathBuf>> {
    let markdown = markdown::render(report);
    let junit = junit::render_timed(report, wall);
    let html = html::render(report);
    let mut files: Vec<out_dir::Staged<'_>> = vec![
        ("report.json", Box::new(|out| report.write_json(out))),
        ("report.md", out_dir::text(&markdown)),
        ("report.junit.xml", out_dir::text(&junit)),
        ("report.html", out_dir::text(&html)),
    ];
    if let Some(events) = events {
        files.push((
            EVENTS_FILE,
            Box::new(move |out| timeline_summary::write_ndjson(events, out)),
        ));
    }
    OutDir::prepare(dir)?.write_streamed(files)
}

/// Formats milliseconds of drill time as `1h02m03.456s`-style text.
pub fn format_ms(ms: u64) -> String {
    drillbench_model::duration::Duration::from_millis(ms).to_string()
}
