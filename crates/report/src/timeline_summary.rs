//! A large run's timeline, summarised. A 5 000-node run records about
//! 460 000 events (each pod created, bound and Ready); stored whole they
//! are a 100 MB `report.json` no one reads and every renderer re-walks.
//! Over the budget, the report keeps the drill's own events (steps,
//! faults, waits, the control plane, the autoscaler) in `timeline` and
//! tallies the rest per workload and per pool: how many events of each
//! kind, over how many objects, first and last. The complete stream goes
//! to `events.ndjson` when asked for (`bench run --events-ndjson`), one
//! event per line, the same bytes for the same seed.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use drillbench_observe::{Event, EventKind, ObjectRef};

/// Most timeline events a report stores whole, unless `--timeline-budget`
/// says otherwise. Every built-in drill records far fewer (the largest,
/// `pre-upgrade`, 469 at seed 1; a test keeps them under a quarter of it),
/// so their reports keep the whole timeline; a stored event is about 230
/// bytes of pretty JSON, so at the budget the timeline is under 5 MB.
pub const DEFAULT_TIMELINE_BUDGET: usize = 20_000;

/// The name of the complete event stream beside the reports.
pub const EVENTS_FILE: &str = "events.ndjson";

/// What a summarised report says of the events it did not store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TimelineSummary {
    /// Every event the run recorded.
    pub events: u64,
    /// The budget the run's events exceeded.
    pub budget: u64,
    /// Events the report's `timeline` still holds: the drill's own.
    pub kept: u64,
    /// Drill events left out of `timeline` too because even they exceeded
    /// the budget (the first `budget` are kept).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kept_cut: u64,
    /// The tallies, workloads first, then pools, then other kinds of
    /// object, each by name.
    pub groups: Vec<TimelineGroup>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a group of objects went through.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum GroupBy {
    /// Pods and their workload's own events, by `namespace/Kind/name`. A
    /// pod no placement or workload name accounts for is grouped as
    /// `namespace/Pod`.
    Workload,
    /// Nodes, by the pool the event names (`control-plane` for control
    /// planes; `-` when it names none).
    Pool,
    /// Every other object, by `namespace/Kind` (or `Kind`).
    Kind,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TimelineGroup {
    pub by: GroupBy,
    pub name: String,
    /// Distinct objects the group's events happened to.
    pub objects: u64,
    pub events: u64,
    pub first_ms: u64,
    pub last_ms: u64,
    /// Per event kind, in the vocabulary's order.
    pub kinds: BTreeMap<EventKind, KindTally>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KindTally {
    pub count: u64,
    pub first_ms: u64,
    pub last_ms: u64,
}

/// Whether a summarised report keeps an event of this kind in `timeline`:
/// the drill's own steps and the cluster-wide events, which grow with
/// what the drill does, not with the cluster's size. Node, pod, volume,
/// admission and eviction events grow with the cluster and are tallied.
pub fn kept_whole(kind: EventKind) -> bool {
    use EventKind as K;
    match kind {
        K::StepStarted
        | K::FaultInjected
        | K::PreflightPassed
        | K::PreflightFailed
        | K::WaitSatisfied
        | K::WaitTimedOut
        | K::RecoveryStepFinished
        | K::EtcdMemberRemoved
        | K::EtcdLearnerAdded
        | K::EtcdMemberPromoted
        | K::QuorumLost
        | K::QuorumRestored
        | K::EndpointMoved
        | K::ApiUnavailable
        | K::ApiAvailable
        | K::ScaleUp
        | K::ScaleDown
        | K::ScaleDownAborted
        | K::BackupStarted
        | K::BackupFinished
        | K::RestoreFinished => true,
        K::NodeAdded
        | K::NodeReady
        | K::NodeNotReady
        | K::NodeCordoned
        | K::NodeUncordoned
        | K::NodeTainted
        | K::NodeUntainted
        | K::NodeRelabelled
        | K::NodeDeleted
        | K::PodCreated
        | K::PodScheduled
        | K::PodUnschedulable
        | K::PodReady
        | K::PodNotReady
        | K::PodBlocked
        | K::PodEvicted
        | K::PodPreempted
        | K::PodTerminating
        | K::PodDeleted
        | K::VolumeAttached
        | K::VolumeDetached
        | K::AdmissionRefused
        | K::AdmissionAudited
        | K::PolicyNotEvaluated
        | K::EvictionRefused
        | K::WorkloadScaled
        | K::WorkloadRolledOut => false,
    }
}

/// Which workload a pod (`namespace/name`) belongs to, as
/// `namespace/Kind/name`.
pub trait Owners {
    fn workload_of(&self, pod: &ObjectRef) -> Option<&str>;
}

impl Owners for BTreeMap<String, String> {
    fn workload_of(&self, pod: &ObjectRef) -> Option<&str> {
        self.get(&format!("{}/{}", pod.namespace, pod.name))
            .map(String::as_str)
    }
}

/// A group by what it groups and its name.
type GroupKey<'a> = (GroupBy, Cow<'a, str>);

/// The group an event is tallied in. The names a large run repeats for
/// every event (a pod's workload, a node's pool) are borrowed, not built.
fn group_of<'a>(event: &'a Event, owners: &'a dyn Owners) -> GroupKey<'a> {
    let object = &event.object;
    match object.kind.as_str() {
        "Pod" => match owners.workload_of(object) {
            Some(workload) => (GroupBy::Workload, Cow::Borrowed(workload)),
            None => (
                GroupBy::Workload,
                Cow::Owned(format!("{}/Pod", object.namespace)),
            ),
        },
        "Node" => (
            GroupBy::Pool,
            Cow::Borrowed(event.pool.as_deref().unwrap_or("-")),
        ),
        "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" | "Job" => {
            (GroupBy::Workload, Cow::Owned(object.to_string()))
        }
        _ if object.namespace.is_empty() => (GroupBy::Kind, Cow::Borrowed(object.kind.as_str())),
        _ => (
            GroupBy::Kind,
            Cow::Owned(format!("{}/{}", object.namespace, object.kind)),
        ),
    }
}

impl TimelineSummary {
    /// Tallies `events` and returns the summary with the events the report
    /// keeps: every drill event, the first `budget` of them if even they
    /// are more.
    pub fn of(
        events: &[Event],
        budget: usize,
        owners: &dyn Owners,
    ) -> (TimelineSummary, Vec<Event>) {
        let mut kept = Vec::new();
        let mut kept_cut = 0;
        // Each group's objects are gathered with repeats and counted once
        // at the end: sorting a vector once is cheaper than keeping a set
        // ordered through hundreds of thousands of inserts.
        let mut groups: BTreeMap<GroupKey<'_>, (TimelineGroup, Vec<&ObjectRef>)> = BTreeMap::new();
        for event in events {
            if kept_whole(event.kind) {
                if kept.len() < budget {
                    kept.push(event.clone());
                } else {
                    kept_cut += 1;
                }
                continue;
            }
            let (group, objects) =
                groups
                    .entry(group_of(event, owners))
                    .or_insert_with_key(|(by, name)| {
                        (
                            TimelineGroup {
                                by: by.clone(),
                                name: name.clone().into_owned(),
                                objects: 0,
                                events: 0,
                                first_ms: event.at_ms,
                                last_ms: event.at_ms,
                                kinds: BTreeMap::new(),
                            },
                            Vec::new(),
                        )
                    });
            objects.push(&event.object);
            group.events += 1;
            group.first_ms = group.first_ms.min(event.at_ms);
            group.last_ms = group.last_ms.max(event.at_ms);
            let tally = group.kinds.entry(event.kind).or_insert(KindTally {
                count: 0,
                first_ms: event.at_ms,
                last_ms: event.at_ms,
            });
            tally.count += 1;
            tally.first_ms = tally.first_ms.min(event.at_ms);
            tally.last_ms = tally.last_ms.max(event.at_ms);
        }
        let groups = groups
            .into_values()
            .map(|(mut group, mut objects)| {
                // Only the count is kept, so any total order serves: by
                // name first, where a group's objects differ (their kind
                // and namespace mostly repeat).
                objects.sort_unstable_by(|a, b| {
                    (&a.name, &a.namespace, &a.kind).cmp(&(&b.name, &b.namespace, &b.kind))
                });
                objects.dedup();
                group.objects = objects.len() as u64;
                group
            })
            .collect();
        let summary = TimelineSummary {
            events: events.len() as u64,
            budget: budget as u64,
            kept: kept.len() as u64,
            kept_cut,
            groups,
        };
        (summary, kept)
    }

    /// Events the summary tallies rather than keeps, summed over its groups.
    pub fn tallied(&self) -> u64 {
        self.groups.iter().map(|g| g.events).sum()
    }
}

impl TimelineGroup {
    /// `PodCreated 5000, PodReady 5000`: each kind and its count, in the
    /// vocabulary's order.
    pub fn kinds_line(&self) -> String {
        self.kinds
            .iter()
            .map(|(kind, tally)| format!("{kind:?} {}", tally.count))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What the group is, for a table: `workload app/Deployment/web`,
    /// `pool a`, or the kind of object (`app/PersistentVolumeClaim`).
    pub fn label(&self) -> String {
        match self.by {
            GroupBy::Workload => format!("workload {}", self.name),
            GroupBy::Pool => format!("pool {}", self.name),
            GroupBy::Kind => self.name.clone(),
        }
    }
}

/// One sentence on what a summarised report left out and where it is.
pub fn note(summary: &TimelineSummary, events_file: Option<&str>) -> String {
    let whole = match events_file {
        Some(file) => format!("every event is in {file}"),
        None => "`bench run --events-ndjson` writes every event".to_owned(),
    };
    let cut = if summary.kept_cut > 0 {
        format!(
            " (the first {}; {} more left out)",
            summary.kept, summary.kept_cut
        )
    } else {
        String::new()
    };
    format!(
        "The run recorded {} events, over the timeline budget of {}: the timeline keeps the {} of the drill itself{cut} (steps, faults, waits, control plane, autoscaler, backups) and tallies the other {} per workload and pool; {whole}.",
        summary.events,
        summary.budget,
        summary.kept,
        summary.tallied()
    )
}

/// Writes `events` as NDJSON: one compact JSON object per line, in
/// timeline order, each line ending in `\n`.
pub fn write_ndjson(events: &[Event], out: &mut dyn Write) -> io::Result<()> {
    for event in events {
        serde_json::to_writer(&mut *out, event)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at_ms: u64, kind: EventKind, object: (&str, &str, &str), pool: Option<&str>) -> Event {
        Event {
            at_ms,
            kind,
            object: ObjectRef {
                kind: object.0.to_owned(),
                namespace: object.1.to_owned(),
                name: object.2.to_owned(),
            },
            node: None,
            pool: pool.map(str::to_owned),
            message: String::new(),
        }
    }

    #[test]
    fn events_are_tallied_by_workload_pool_and_kind_and_drill_events_kept() {
        let owners = BTreeMap::from([("app/web-0".to_owned(), "app/Deployment/web".to_owned())]);
        let events = vec![
            event(0, EventKind::StepStarted, ("Drill", "", "d"), None),
            event(1, EventKind::NodeReady, ("Node", "", "a-1"), Some("a")),
            event(2, EventKind::NodeReady, ("Node", "", "a-2"), Some("a")),
            event(3, EventKind::PodCreated, ("Pod", "app", "web-0"), None),
            event(5, EventKind::PodReady, ("Pod", "app", "web-0"), None),
            event(6, EventKind::PodCreated, ("Pod", "app", "stray"), None),
            event(
                7,
                EventKind::WorkloadScaled,
                ("Deployment", "app", "web"),
                None,
            ),
            event(
                8,
                EventKind::VolumeAttached,
                ("PersistentVolumeClaim", "app", "data"),
                None,
            ),
            event(9, EventKind::FaultInjected, ("Drill", "", "d"), None),
        ];
        let (summary, kept) = TimelineSummary::of(&events, 100, &owners);
        assert_eq!(
            kept.iter().map(|e| e.kind).collect::<Vec<_>>(),
            [EventKind::StepStarted, EventKind::FaultInjected]
        );
        assert_eq!(summary.events, 9);
        assert_eq!(summary.kept + summary.tallied(), summary.events);
        let names: Vec<(GroupBy, &str)> = summary
            .groups
            .iter()
            .map(|g| (g.by.clone(), g.name.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                (GroupBy::Workload, "app/Deployment/web"),
                (GroupBy::Workload, "app/Pod"),
                (GroupBy::Pool, "a"),
                (GroupBy::Kind, "app/PersistentVolumeClaim"),
            ]
        );
        let web = &summary.groups[0];
        assert_eq!(
            (web.objects, web.events, web.first_ms, web.last_ms),
            (2, 3, 3, 7)
        );
        assert_eq!(
            web.kinds[&EventKind::PodCreated],
            KindTally {
                count: 1,
                first_ms: 3,
                last_ms: 3
            }
        );
        let pool = &summary.groups[2];
        assert_eq!((pool.objects, pool.events), (2, 2));
        // Control: a budget smaller than the drill's own events keeps the
        // first of them and counts the rest.
        let (summary, kept) = TimelineSummary::of(&events, 1, &owners);
        assert_eq!(kept.len(), 1);
        assert_eq!(summary.kept_cut, 1);
        assert_eq!(
            summary.kept + summary.kept_cut + summary.tallied(),
            summary.events
        );
    }

    #[test]
    fn ndjson_is_one_parseable_event_per_line() {
        let events = vec![
            event(0, EventKind::StepStarted, ("Drill", "", "d"), None),
            event(1, EventKind::NodeReady, ("Node", "", "a-1"), Some("a")),
        ];
        let mut out = Vec::new();
        write_ndjson(&events, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.ends_with('\n'));
        let back: Vec<Event> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(back, events);
    }

    #[test]
    fn the_summary_round_trips_through_json() {
        let (summary, _) = TimelineSummary::of(
            &[event(
                1,
                EventKind::NodeReady,
                ("Node", "", "a-1"),
                Some("a"),
            )],
            10,
            &BTreeMap::new(),
        );
        let json = serde_json::to_string(&summary).unwrap();
        assert!(
            json.contains(r#""kinds":{"NodeReady":{"count":1"#),
            "{json}"
        );
        let back: TimelineSummary = serde_json::from_str(&json).unwrap();
        assert_eq!(back, summary);
    }
}
