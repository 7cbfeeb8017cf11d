//! What a watch delivers, type-erased so one stream carries every kind,
//! and the drill time a change seen on a wall-clock cluster is put at.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::VolumeAttachment;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time as MetaTime};

use drillbench_observe::Time;

#[derive(Debug, Clone)]
pub enum Object {
    Node(Box<Node>),
    Pod(Box<Pod>),
    Claim(Box<PersistentVolumeClaim>),
    Deployment(Box<Deployment>),
    StatefulSet(Box<StatefulSet>),
    DaemonSet(Box<DaemonSet>),
    Job(Box<Job>),
    Budget(Box<PodDisruptionBudget>),
    Volume(Box<PersistentVolume>),
    Attachment(Box<VolumeAttachment>),
}

impl Object {
    fn meta(&self) -> &ObjectMeta {
        match self {
            Object::Node(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::Claim(o) => &o.metadata,
            Object::Deployment(o) => &o.metadata,
            Object::StatefulSet(o) => &o.metadata,
            Object::DaemonSet(o) => &o.metadata,
            Object::Job(o) => &o.metadata,
            Object::Budget(o) => &o.metadata,
            Object::Volume(o) => &o.metadata,
            Object::Attachment(o) => &o.metadata,
        }
    }

    /// The object's resourceVersion as a number, when it is one.
    pub fn resource_version(&self) -> Option<u64> {
        self.meta().resource_version.as_deref()?.parse().ok()
    }

    /// The newest timestamp the object carries (its conditions'
    /// `lastTransitionTime`, its creation and deletion): on a real cluster
    /// the best account of when its latest change happened, to the second.
    pub fn newest_timestamp(&self) -> Option<jiff::Timestamp> {
        let meta = self.meta();
        let conditions: Vec<Option<&MetaTime>> = match self {
            Object::Node(o) => o
                .status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .map(|c| c.last_transition_time.as_ref())
                .collect(),
            Object::Pod(o) => o
                .status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .map(|c| c.last_transition_time.as_ref())
                .collect(),
            _ => Vec::new(),
        };
        conditions
            .into_iter()
            .chain([
                meta.creation_timestamp.as_ref(),
                meta.deletion_timestamp.as_ref(),
            ])
            .flatten()
            .map(|t| t.0)
            .max()
    }
}

/// The drill time of a change seen on a wall-clock cluster: the object's
/// own timestamp when it falls between the previous look (`floor`) and now
/// (timestamps have whole seconds and clocks may be skewed, so anything
/// outside is clamped), else the moment it was seen.
pub fn drill_time(
    timestamp: Option<jiff::Timestamp>,
    origin: jiff::Timestamp,
    floor: Time,
    now: Time,
) -> Time {
    let Some(timestamp) = timestamp else {
        return now;
    };
    let ms = timestamp.as_millisecond() - origin.as_millisecond();
    if ms < 0 {
        return floor.min(now);
    }
    (ms as Time).clamp(floor.min(now), now)
}

/// What a watch said about an object.
#[derive(Debug, Clone)]
pub enum Change {
    /// Created or changed.
    Applied(Object),
    Deleted(Object),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_wall_clock_change_takes_the_objects_own_time_within_the_window_it_was_seen_in() {
        let origin = jiff::Timestamp::from_second(1_000).expect("time");
        let at = |s: i64| Some(jiff::Timestamp::from_second(1_000 + s).expect("time"));
        // Seen between 10 s and 14.5 s, stamped at 12 s: 12 s.
        assert_eq!(drill_time(at(12), origin, 10_000, 14_500), 12_000);
        // Stamped before the previous look (an old condition): the look.
        assert_eq!(drill_time(at(3), origin, 10_000, 14_500), 10_000);
        // Stamped in the future (skew): now.
        assert_eq!(drill_time(at(30), origin, 10_000, 14_500), 14_500);
        assert_eq!(drill_time(at(-5), origin, 10_000, 14_500), 10_000);
        assert_eq!(drill_time(None, origin, 10_000, 14_500), 14_500);
        let node: Object = Object::Node(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "n", "creationTimestamp": "2026-01-01T00:00:00Z"},
                "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:05:00Z"}]},
            }))
            .expect("node"),
        ));
        assert_eq!(
            node.newest_timestamp().map(|t| t.to_string()),
            Some("2026-01-01T00:05:00Z".to_owned())
        );
    }

    #[test]
    fn a_deletion_stamp_newer_than_every_condition_is_the_newest() {
        let pod = Object::Pod(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "p", "creationTimestamp": "2026-01-01T00:00:00Z",
                             "deletionTimestamp": "2026-01-01T00:09:00Z"},
                "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:05:00Z"}]},
            }))
            .expect("pod"),
        ));
        assert_eq!(
            pod.newest_timestamp().map(|t| t.to_string()),
            Some("2026-01-01T00:09:00Z".to_owned())
        );
        // Only nodes' and pods' conditions are read; a claim has its creation.
        let claim = Object::Claim(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:01:00Z"},
            }))
            .expect("claim"),
        ));
        assert_eq!(
            claim.newest_timestamp().map(|t| t.to_string()),
            Some("2026-01-01T00:01:00Z".to_owned())
        );
        assert_eq!(
            Object::Job(Box::default()).newest_timestamp(),
            None,
            "no timestamp at all"
        );
    }

    #[test]
    fn a_resource_version_counts_only_when_it_is_a_number() {
        let with = |rv: &str| {
            Object::Volume(Box::new(PersistentVolume {
                metadata: ObjectMeta {
                    resource_version: Some(rv.to_owned()),
                    ..Default::default()
                },
                ..Default::default()
            }))
        };
        assert_eq!(with("42").resource_version(), Some(42));
        assert_eq!(with("opaque-7").resource_version(), None);
        assert_eq!(Object::Node(Box::default()).resource_version(), None);
    }
}
