//! When each condition of each served object last changed its status:
//! `lastTransitionTime`, as the components that write conditions set it
//! (the kubelet's pod conditions, `pkg/kubelet/status/status_manager.go`
//! `updateLastTransitionTime`; the node lifecycle's Ready condition; the
//! deployment controller's `SetDeploymentCondition`, which keeps the time
//! when only the reason or message changes): the instant of the change
//! in simulated time, kept while the status stays.
//!
//! A condition's time is stamped when its object is viewed and
//! remembered when the object is announced, so every later view and
//! every list spliced from the announced bytes reads the same instant.
//! A condition its writer already dates is left as it is.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::history::Key;
use super::objects::stamp;

#[derive(Debug, Clone, Default)]
pub(super) struct Transitions {
    /// By object and condition type: the status last announced and when
    /// it began.
    since: BTreeMap<(Key, String), (String, String)>,
}

fn conditions_mut(object: &mut Value) -> Option<&mut Vec<Value>> {
    object
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut)
}

fn type_and_status(condition: &Value) -> Option<(String, String)> {
    Some((
        condition.get("type")?.as_str()?.to_owned(),
        condition.get("status")?.as_str()?.to_owned(),
    ))
}

impl Transitions {
    /// Dates the object's undated conditions: the remembered instant
    /// while the status is the one announced, else `now` (drill ms).
    pub(super) fn date(&self, key: &Key, object: &mut Value, now: i64) {
        let Some(conditions) = conditions_mut(object) else {
            return;
        };
        for condition in conditions.iter_mut() {
            if condition.get("lastTransitionTime").is_some() {
                continue;
            }
            let Some((kind, status)) = type_and_status(condition) else {
                continue;
            };
            let time = match self.since.get(&(key.clone(), kind)) {
                Some((was, at)) if *was == status => at.clone(),
                _ => stamp(now),
            };
            if let Some(fields) = condition.as_object_mut() {
                fields.insert("lastTransitionTime".to_owned(), json!(time));
            }
        }
    }

    /// Remembers the conditions of an object as announced; forgets an
    /// object announced gone.
    pub(super) fn remember(&mut self, key: &Key, object: &Value, gone: bool) {
        if gone {
            self.since.retain(|(k, _), _| k != key);
            return;
        }
        let conditions = object
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten();
        for condition in conditions {
            let (Some((kind, status)), Some(at)) = (
                type_and_status(condition),
                condition.get("lastTransitionTime").and_then(Value::as_str),
            ) else {
                continue;
            };
            self.since
                .insert((key.clone(), kind), (status, at.to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ready: &str) -> Value {
        json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "True"},
            {"type": "Ready", "status": ready},
        ]}})
    }

    fn times(object: &Value) -> Vec<String> {
        object["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .map(|c| {
                c["lastTransitionTime"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    }

    /// The kubelet's `updateLastTransitionTime`: a condition keeps its
    /// time while its status stays, and takes the current instant when
    /// the status changes; the control, the other condition, keeps its
    /// own.
    #[test]
    fn a_condition_is_dated_by_its_last_change_of_status() {
        let key: Key = ("Pod", "apps".to_owned(), "web-0".to_owned());
        let mut memo = Transitions::default();
        let mut first = pod("False");
        memo.date(&key, &mut first, 1_000);
        memo.remember(&key, &first, false);
        assert_eq!(
            times(&first),
            ["2026-01-01T00:00:01Z", "2026-01-01T00:00:01Z"]
        );
        let mut same = pod("False");
        memo.date(&key, &mut same, 9_000);
        assert_eq!(times(&same), times(&first), "no change, no new time");
        let mut ready = pod("True");
        memo.date(&key, &mut ready, 12_000);
        memo.remember(&key, &ready, false);
        assert_eq!(
            times(&ready),
            ["2026-01-01T00:00:01Z", "2026-01-01T00:00:12Z"]
        );
        // A condition its writer dated is left as it is.
        let mut dated = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2025-12-31T00:00:00Z"}]}});
        memo.date(&key, &mut dated, 20_000);
        assert_eq!(times(&dated), ["2025-12-31T00:00:00Z"]);
        // Gone, the object's memory goes with it.
        memo.remember(&key, &ready, true);
        let mut again = pod("True");
        memo.date(&key, &mut again, 30_000);
        assert_eq!(
            times(&again),
            ["2026-01-01T00:00:30Z", "2026-01-01T00:00:30Z"]
        );
    }
}
