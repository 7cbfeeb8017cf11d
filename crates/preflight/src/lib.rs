//! Go/no-go decisions before a destructive drill.
//!
//! `bench preflight cp-recreate` is a drop-in for the platform's
//! `cp-recreate-drill-preflight.sh`: the same flags, the same `key=value`
//! output and the same exit codes, so the runbook can switch to it unchanged.
//!
//! The flow is one way: the inputs (files in [`input`], or a live cluster in
//! [`live`]) become [`Facts`]; [`decide`] — the only decision code, called by
//! both modes — turns facts and a [`Policy`] into a [`Decision`]; the
//! decision renders itself as the script's output. Every guard is evaluated
//! and every failing one is reported, so one run tells an operator all that
//! stands between them and a drill.

pub mod etcd;
pub mod input;
pub mod live;
pub mod upgrade;

use std::fmt::Write as _;
use std::io::Write;
use std::path::PathBuf;

use jiff::{SignedDuration, Timestamp};

use drillbench_model::exit::Exit;

/// The schedule whose newest backup gates a drill unless `--schedule` says otherwise.
pub const DEFAULT_SCHEDULE: &str = "velero-daily-full";
/// The age limit of that backup unless `--max-backup-age-hours` says otherwise.
pub const DEFAULT_MAX_BACKUP_AGE_HOURS: u64 = 26;
/// How many control-plane nodes and voting etcd members a healthy cluster has.
const EXPECTED_CONTROL_PLANES: usize = 3;

/// The state of a node's `Ready` condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// `Ready` is `True`.
    True,
    /// `Ready` is `False`.
    False,
    /// `Ready` is `Unknown`, missing, or something else.
    Unknown,
}

impl Readiness {
    /// The condition status as Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Readiness::True => "True",
            Readiness::False => "False",
            Readiness::Unknown => "Unknown",
        }
    }
}

/// What the decision needs to know about one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFacts {
    /// `metadata.name`.
    pub name: String,
    /// Whether it carries [`CONTROL_PLANE_LABEL`](drillbench_model::labels::CONTROL_PLANE_LABEL) (any value).
    pub control_plane: bool,
    pub ready: Readiness,
}

/// What the decision needs to know about one Velero backup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupFacts {
    /// `metadata.name`.
    pub name: String,
    /// The [`VELERO_SCHEDULE_LABEL`](drillbench_model::labels::VELERO_SCHEDULE_LABEL) value, if labelled.
    pub schedule: Option<String>,
    /// `metadata.creationTimestamp`.
    pub created: Timestamp,
    /// `status.phase`; `None` when missing or empty.
    pub phase: Option<String>,
    /// `status.completionTimestamp`; `None` while unfinished.
    pub completed: Option<Timestamp>,
}

/// The etcd membership as `talosctl etcd members` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EtcdCounts {
    /// Members whose LEARNER column is `false`.
    pub voters: u64,
    /// Members whose LEARNER column is `true`.
    pub learners: u64,
}

/// Everything observed about the cluster, however it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Every node, in the order read.
    pub nodes: Vec<NodeFacts>,
    /// Every backup, in the order read.
    pub backups: Vec<BackupFacts>,
    pub etcd: EtcdCounts,
}

/// What the operator asked: which node, and the thresholds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The control-plane node to recreate.
    pub target: String,
    /// The node holding the floating endpoint, when known.
    pub vip_holder: Option<String>,
    /// The Velero schedule whose newest backup gates the drill.
    pub schedule: String,
    /// A backup that finished this many hours ago, or longer, is too old.
    pub max_backup_age_hours: u64,
    /// The moment the decision is made for.
    pub now: Timestamp,
}

/// A guard of the preflight: each failing guard is one `reason=` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Guard {
    /// The target is an existing, Ready control-plane node.
    Target,
    /// Three Ready control planes, three voters, no learners.
    Quorum,
    /// The newest backup of the schedule is Completed and fresh.
    Backup,
}

impl Guard {
    /// The guard's name as the output prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Guard::Target => "target",
            Guard::Quorum => "quorum",
            Guard::Backup => "backup",
        }
    }
}

/// One failing guard and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    pub guard: Guard,
    /// What a person needs to know, without the guard prefix.
    pub detail: String,
}

/// Whether the target holds the floating endpoint: reported, never a gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VipHolder {
    /// The target holds it.
    True,
    /// Another node holds it.
    False,
    /// No holder was given.
    Unknown,
}

impl VipHolder {
    fn as_str(self) -> &'static str {
        match self {
            VipHolder::True => "true",
            VipHolder::False => "false",
            VipHolder::Unknown => "unknown",
        }
    }
}

/// The outcome of [`decide`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The node asked about.
    pub target: String,
    /// Whether it holds the floating endpoint.
    pub target_is_vip_holder: VipHolder,
    /// Every failing guard, in guard order; empty means ready.
    pub reasons: Vec<Reason>,
}

impl Decision {
    /// Ready means no guard failed.
    pub fn ready(&self) -> bool {
        self.reasons.is_empty()
    }

    /// The script's output: `target=`, `target_is_vip_holder=`, `ready=`, then
    /// one `reason=` per failing guard, one per line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(out, "target={}", self.target);
        let _ = writeln!(
            out,
            "target_is_vip_holder={}",
            self.target_is_vip_holder.as_str()
        );
        let _ = writeln!(out, "ready={}", self.ready());
        for reason in &self.reasons {
            let _ = writeln!(out, "reason={}: {}", reason.guard.as_str(), reason.detail);
        }
        out
    }

    /// The exit code the contract gives this decision.
    pub fn exit(&self) -> Exit {
        if self.ready() {
            Exit::Success
        } else {
            Exit::AssertionFailed
        }
    }
}

/// The single decision both modes call: evaluates every guard over `facts`.
pub fn decide(facts: &Facts, policy: &Policy) -> Decision {
    let mut reasons = Vec::new();
    target_guard(facts, policy, &mut reasons);
    quorum_guard(facts, &mut reasons);
    backup_guard(facts, policy, &mut reasons);
    let target_is_vip_holder = match &policy.vip_holder {
        None => VipHolder::Unknown,
        Some(holder) if *holder == policy.target => VipHolder::True,
        Some(_) => VipHolder::False,
    };
    Decision {
        target: policy.target.clone(),
        target_is_vip_holder,
        reasons,
    }
}

fn target_guard(facts: &Facts, policy: &Policy, reasons: &mut Vec<Reason>) {
    let target = &policy.target;
    let mut fail = |detail: String| {
        reasons.push(Reason {
            guard: Guard::Target,
            detail,
        })
    };
    let Some(node) = facts.nodes.iter().find(|node| node.name == *target) else {
        fail(format!("{target} is not a node in the cluster"));
        return;
    };
    // One reason at most, as the script's `case` gives: a node that is not
    // a control plane is not also reported for its readiness.
    if !node.control_plane {
        fail(format!("{target} is not a control-plane node"));
    } else if node.ready != Readiness::True {
        fail(format!("{target} is not Ready ({})", node.ready.as_str()));
    }
}

fn quorum_guard(facts: &Facts, reasons: &mut Vec<Reason>) {
    let mut fail = |detail: String| {
        reasons.push(Reason {
            guard: Guard::Quorum,
            detail,
        })
    };
    let control_planes: Vec<&NodeFacts> = facts
        .nodes
        .iter()
        .filter(|node| node.control_plane)
        .collect();
    if control_planes.len() != EXPECTED_CONTROL_PLANES {
        fail(format!(
            "{} control-plane nodes, expected {EXPECTED_CONTROL_PLANES}",
            control_planes.len()
        ));
    }
    // Sorted so the line is the same whatever order the API listed nodes in.
    let mut not_ready: Vec<&str> = control_planes
        .iter()
        .filter(|node| node.ready != Readiness::True)
        .map(|node| node.name.as_str())
        .collect();
    not_ready.sort_unstable();
    if !not_ready.is_empty() {
        fail(format!(
            "control-plane nodes not Ready: {}",
            not_ready.join(" ")
        ));
    }
    if facts.etcd.voters != EXPECTED_CONTROL_PLANES as u64 {
        fail(format!(
            "{} voting etcd members, expected {EXPECTED_CONTROL_PLANES}",
            facts.etcd.voters
        ));
    }
    if facts.etcd.learners != 0 {
        fail(format!(
            "{} etcd learners present; a membership change is still in progress",
            facts.etcd.learners
        ));
    }
}

fn backup_guard(facts: &Facts, policy: &Policy, reasons: &mut Vec<Reason>) {
    let schedule = &policy.schedule;
    let mut fail = |detail: String| {
        reasons.push(Reason {
            guard: Guard::Backup,
            detail,
        })
    };
    // Newest by creation time, finished or not: a newer backup that failed
    // or is still running must not hide behind an older good one. Among
    // equal creation times the last listed wins, as the script's stable
    // `sort_by(.created) | .[-1]` picks it (`max_by` keeps the last
    // maximum); the API lists by name, so that is also the greatest name.
    let newest = facts
        .backups
        .iter()
        .filter(|backup| backup.schedule.as_deref() == Some(schedule.as_str()))
        .max_by(|a, b| a.created.cmp(&b.created));
    let Some(backup) = newest else {
        fail(format!("no backup from schedule {schedule}"));
        return;
    };
    let name = &backup.name;
    let phase = backup.phase.as_deref().unwrap_or("Unknown");
    // Phase and completion are judged apart, as the script does: a backup
    // still running is both not Completed and not finished, and one that
    // finished PartiallyFailed long ago is both not Completed and too old.
    if phase != "Completed" {
        fail(format!(
            "newest {schedule} backup {name} is {phase}, not Completed"
        ));
    }
    let Some(completed) = backup.completed else {
        fail(format!("newest {schedule} backup {name} has not finished"));
        return;
    };
    let age = policy.now.duration_since(completed);
    let limit_secs =
        i64::try_from(policy.max_backup_age_hours.saturating_mul(3600)).unwrap_or(i64::MAX);
    if age >= SignedDuration::from_secs(limit_secs) {
        fail(format!(
            "newest {schedule} backup {name} finished {}h ago, limit {}h",
            age.as_secs() / 3600,
            policy.max_backup_age_hours
        ));
    }
}

/// Why an input could not be turned into [`Facts`]: the run is an input
/// error (exit 2), never ready.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A file could not be read.
    #[error("cannot read {path}")]
    Read {
        /// The file as named.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file is not JSON.
    #[error("{path} is not JSON")]
    Json {
        /// The file as named.
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// The content has the wrong shape; `what` says what was expected.
    #[error("{origin}: {what}")]
    Shape {
        /// The file, or the API resource it came from.
        origin: String,
        /// What was expected and not found.
        what: String,
    },
    /// A flag value is unusable.
    #[error("{0}")]
    Flag(String),
}

/// A count flag is not a non-negative decimal integer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a non-negative decimal integer")]
pub struct CountError(String);

/// Parses a count flag: ASCII digits only, decimal even with leading zeros
/// (`08` is eight, as the runbook's shell arithmetic must not read it as
/// octal), no sign, no spaces.
pub fn parse_count(text: &str) -> Result<u64, CountError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CountError(text.to_owned()));
    }
    text.parse().map_err(|_| CountError(text.to_owned()))
}

/// Where the facts of a `cp-recreate` preflight come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Recorded dumps, as the runbook collects them.
    Files {
        /// `kubectl get nodes -o json`.
        nodes: PathBuf,
        /// `kubectl get backups.velero.io -n velero -o json`.
        backups: PathBuf,
        /// Voting etcd members.
        etcd_members: u64,
        etcd_learners: u64,
    },
    /// A live cluster: kube-rs for nodes and backups, `talosctl` for etcd.
    Live(live::LiveSource),
}

/// A `bench preflight cp-recreate` request, as the command line gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The control-plane node to recreate.
    pub target: String,
    /// The floating endpoint's holder; empty means unknown, as the runbook
    /// passes an empty string when no node holds the floating IP.
    pub vip_holder: Option<String>,
    pub schedule: String,
    /// The backup age limit in hours.
    pub max_backup_age_hours: u64,
    /// The decision time in seconds since the epoch; `None` reads the clock.
    pub now: Option<u64>,
    pub source: Source,
}

impl Request {
    #[expect(
        clippy::disallowed_methods,
        reason = "the go/no-go decision is taken now, before a real operation"
    )]
    fn policy(&self) -> Result<Policy, InputError> {
        if self.target.is_empty() {
            return Err(InputError::Flag("--target must name a node".into()));
        }
        let now = match self.now {
            None => Timestamp::now(),
            Some(secs) => i64::try_from(secs)
                .ok()
                .and_then(|secs| Timestamp::from_second(secs).ok())
                .ok_or_else(|| {
                    InputError::Flag(format!("--now {secs} is not a representable time"))
                })?,
        };
        Ok(Policy {
            target: self.target.clone(),
            vip_holder: self.vip_holder.clone().filter(|holder| !holder.is_empty()),
            schedule: self.schedule.clone(),
            max_backup_age_hours: self.max_backup_age_hours,
            now,
        })
    }
}

/// Runs a `cp-recreate` preflight: gathers the facts, decides, prints the
/// script's output to `out` and any error to `err`, and returns the exit.
///
/// An input error prints `ready=false` and exits 2; a live cluster or
/// `talosctl` that cannot be reached prints `ready=false` and exits 3.
/// Neither can ever print `ready=true`.
pub fn run(request: &Request, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let outcome = request
        .policy()
        .map_err(Failure::Input)
        .and_then(|policy| gather(&request.source).map(|facts| decide(&facts, &policy)));
    match outcome {
        Ok(decision) => {
            if out.write_all(decision.render().as_bytes()).is_err() {
                // Nobody saw the answer: that is not a "ready".
                return Exit::Infrastructure;
            }
            decision.exit()
        }
        Err(failure) => {
            let _ = writeln!(out, "ready=false");
            let (exit, error): (Exit, &dyn std::error::Error) = match &failure {
                Failure::Input(e) => (Exit::BadInput, e),
                Failure::Live(e) => (Exit::Infrastructure, e),
            };
            let _ = writeln!(
                err,
                "error: {}",
                drillbench_model::error_text::error_chain(error)
            );
            exit
        }
    }
}

enum Failure {
    Input(InputError),
    Live(live::LiveError),
}

fn gather(source: &Source) -> Result<Facts, Failure> {
    match source {
        Source::Files {
            nodes,
            backups,
            etcd_members,
            etcd_learners,
        } => {
            let nodes = input::read_nodes_file(nodes).map_err(Failure::Input)?;
            let backups = input::read_backups_file(backups).map_err(Failure::Input)?;
            Ok(Facts {
                nodes,
                backups,
                etcd: EtcdCounts {
                    voters: *etcd_members,
                    learners: *etcd_learners,
                },
            })
        }
        Source::Live(live) => live::gather_blocking(live).map_err(|e| match e {
            live::LiveError::Input(e) => Failure::Input(e),
            other => Failure::Live(other),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn healthy() -> (Facts, Policy) {
        let node = |name: &str, cp: bool| NodeFacts {
            name: name.into(),
            control_plane: cp,
            ready: Readiness::True,
        };
        let facts = Facts {
            nodes: vec![
                node("prod-control-plane-2", true),
                node("prod-control-plane-4", true),
                node("prod-control-plane-5", true),
                node("prod-worker-1", false),
            ],
            backups: vec![BackupFacts {
                name: "velero-daily-full-20261129033000".into(),
                schedule: Some(DEFAULT_SCHEDULE.into()),
                created: ts("2026-11-29T03:30:00Z"),
                phase: Some("Completed".into()),
                completed: Some(ts("2026-11-29T03:41:00Z")),
            }],
            etcd: EtcdCounts {
                voters: 3,
                learners: 0,
            },
        };
        let policy = Policy {
            target: "prod-control-plane-4".into(),
            vip_holder: None,
            schedule: DEFAULT_SCHEDULE.into(),
            max_backup_age_hours: 26,
            now: ts("2026-11-29T12:00:00Z"),
        };
        (facts, policy)
    }

    #[test]
    fn the_healthy_baseline_is_ready() {
        let (facts, policy) = healthy();
        let decision = decide(&facts, &policy);
        assert_eq!(decision.reasons, vec![]);
        assert!(decision.ready());
        assert_eq!(
            decision.render(),
            "target=prod-control-plane-4\ntarget_is_vip_holder=unknown\nready=true\n"
        );
    }

    #[test]
    fn a_backup_exactly_at_the_limit_is_too_old_and_one_second_younger_is_not() {
        let (facts, mut policy) = healthy();
        policy.now = ts("2026-11-30T05:41:00Z");
        let decision = decide(&facts, &policy);
        assert_eq!(
            decision.reasons[0].detail,
            "newest velero-daily-full backup velero-daily-full-20261129033000 finished 26h ago, limit 26h"
        );
        policy.now = ts("2026-11-30T05:40:59Z");
        assert!(decide(&facts, &policy).ready());
    }

    #[test]
    fn among_equal_creation_times_the_last_listed_is_the_newest() {
        // The script: `sort_by(.created) | .[-1]`, and jq sorts stably.
        let (mut facts, policy) = healthy();
        let mut failed = facts.backups[0].clone();
        failed.name = "velero-daily-full-20261129033001".into();
        failed.phase = Some("Failed".into());
        facts.backups.push(failed);
        assert!(!decide(&facts, &policy).ready());
        facts.backups.reverse();
        assert!(decide(&facts, &policy).ready());
    }

    /// The platform's `cp-recreate-drill-preflight.sh`, rule by rule: each
    /// row is a state the script's branches distinguish and the exact
    /// `reason=` lines it prints for it, in its order (target, quorum,
    /// backup; within backup: phase, then finished-or-age).
    #[test]
    fn every_reason_the_script_prints_in_its_order() {
        type Edit = fn(&mut Facts, &mut Policy);
        let rows: [(&str, Edit, &[&str]); 10] = [
            ("healthy", |_, _| {}, &[]),
            (
                "target absent",
                |_, p| p.target = "nope".into(),
                &["target: nope is not a node in the cluster"],
            ),
            (
                "target a worker that is also NotReady: one reason only",
                |f, p| {
                    p.target = "prod-worker-1".into();
                    f.nodes[3].ready = Readiness::False;
                },
                &["target: prod-worker-1 is not a control-plane node"],
            ),
            (
                "target NotReady",
                |f, _| f.nodes[1].ready = Readiness::Unknown,
                &[
                    "target: prod-control-plane-4 is not Ready (Unknown)",
                    "quorum: control-plane nodes not Ready: prod-control-plane-4",
                ],
            ),
            (
                "two voters and a learner",
                |f, _| {
                    f.etcd.voters = 2;
                    f.etcd.learners = 1;
                },
                &[
                    "quorum: 2 voting etcd members, expected 3",
                    "quorum: 1 etcd learners present; a membership change is still in progress",
                ],
            ),
            (
                "newest still running: not Completed and not finished",
                |f, _| {
                    f.backups[0].phase = Some("InProgress".into());
                    f.backups[0].completed = None;
                },
                &[
                    "backup: newest velero-daily-full backup velero-daily-full-20261129033000 is InProgress, not Completed",
                    "backup: newest velero-daily-full backup velero-daily-full-20261129033000 has not finished",
                ],
            ),
            (
                "too old",
                |_, p| p.now = ts("2026-12-01T00:00:00Z"),
                &[
                    "backup: newest velero-daily-full backup velero-daily-full-20261129033000 finished 44h ago, limit 26h",
                ],
            ),
            (
                "partially failed long ago",
                |f, p| {
                    f.backups[0].phase = Some("PartiallyFailed".into());
                    p.now = ts("2026-12-01T00:00:00Z");
                },
                &[
                    "backup: newest velero-daily-full backup velero-daily-full-20261129033000 is PartiallyFailed, not Completed",
                    "backup: newest velero-daily-full backup velero-daily-full-20261129033000 finished 44h ago, limit 26h",
                ],
            ),
            (
                "no phase: Unknown",
                |f, _| f.backups[0].phase = None,
                &[
                    "backup: newest velero-daily-full backup velero-daily-full-20261129033000 is Unknown, not Completed",
                ],
            ),
            (
                "no backup of the schedule",
                |_, p| p.schedule = "other".into(),
                &["backup: no backup from schedule other"],
            ),
        ];
        for (row, edit, expected) in rows {
            let (mut facts, mut policy) = healthy();
            edit(&mut facts, &mut policy);
            let decision = decide(&facts, &policy);
            let reasons: Vec<String> = decision
                .reasons
                .iter()
                .map(|r| format!("{}: {}", r.guard.as_str(), r.detail))
                .collect();
            assert_eq!(reasons, expected, "{row}");
            let rendered = decision.render();
            assert_eq!(
                rendered.lines().nth(2),
                Some(if expected.is_empty() {
                    "ready=true"
                } else {
                    "ready=false"
                }),
                "{row}: target=, target_is_vip_holder=, ready= come first"
            );
            assert_eq!(
                decision.exit().code(),
                u8::from(!expected.is_empty()),
                "{row}"
            );
        }
    }

    proptest::proptest! {
        /// An oracle written from the guard list, independent of
        /// `decide`'s structure: ready exactly when every guard holds, and
        /// never a `ready` with a reason or a refusal without one.
        #[test]
        fn ready_exactly_when_every_guard_holds(
            control_planes in proptest::collection::vec(0u8..3, 0..5),
            target in 0usize..6,
            voters in 0u64..5,
            learners in 0u64..3,
            phase in 0u8..4,
            finished_hours_ago in proptest::option::of(0i64..60),
        ) {
            let readiness = [Readiness::True, Readiness::False, Readiness::Unknown];
            let mut nodes: Vec<NodeFacts> = control_planes
                .iter()
                .enumerate()
                .map(|(i, r)| NodeFacts {
                    name: format!("cp-{i}"),
                    control_plane: true,
                    ready: readiness[usize::from(*r)],
                })
                .collect();
            nodes.push(NodeFacts {
                name: "worker".into(),
                control_plane: false,
                ready: Readiness::False,
            });
            let now = ts("2026-11-29T12:00:00Z");
            let phase = ["Completed", "Failed", "", "InProgress"][usize::from(phase)];
            let completed = finished_hours_ago
                .map(|h| now.checked_sub(SignedDuration::from_hours(h)).unwrap());
            let facts = Facts {
                nodes,
                backups: vec![BackupFacts {
                    name: "b".into(),
                    schedule: Some(DEFAULT_SCHEDULE.into()),
                    created: ts("2026-11-27T00:00:00Z"),
                    phase: (!phase.is_empty()).then(|| phase.to_owned()),
                    completed,
                }],
                etcd: EtcdCounts { voters, learners },
            };
            let policy = Policy {
                target: format!("cp-{target}"),
                vip_holder: None,
                schedule: DEFAULT_SCHEDULE.into(),
                max_backup_age_hours: 26,
                now,
            };
            let target_ok = control_planes.get(target) == Some(&0);
            let quorum_ok = control_planes.len() == 3
                && control_planes.iter().all(|r| *r == 0)
                && voters == 3
                && learners == 0;
            let backup_ok = phase == "Completed" && finished_hours_ago.is_some_and(|h| h < 26);
            let decision = decide(&facts, &policy);
            proptest::prop_assert_eq!(decision.ready(), target_ok && quorum_ok && backup_ok);
            proptest::prop_assert_eq!(
                decision.render().contains("\nready=true\n"),
                decision.reasons.is_empty()
            );
        }
    }

    #[test]
    fn counts_are_decimal_digits_only() {
        assert_eq!(parse_count("08"), Ok(8));
        assert_eq!(parse_count("0"), Ok(0));
        for bad in [
            "",
            "-1",
            "+3",
            " 3",
            "3x",
            "0x3",
            "1e3",
            "99999999999999999999999",
        ] {
            assert!(parse_count(bad).is_err(), "{bad:?}");
        }
    }
}
