//! Events written by clients, and the same Events through
//! `events.k8s.io/v1`.
//!
//! The API server keeps one store of Events and serves it through both
//! `core/v1` and `events.k8s.io/v1`, converting field by field
//! (`pkg/apis/events/v1/conversion.go`): `regarding` is `involvedObject`,
//! `note` is `message`, `reportingController` is `reportingComponent`,
//! `deprecatedSource`, `deprecatedFirstTimestamp`,
//! `deprecatedLastTimestamp` and `deprecatedCount` are `source`,
//! `firstTimestamp`, `lastTimestamp` and `count`; every other field has
//! the same name. The façade stores the core form (the timeline's Events
//! and those clients write, `super::events`) and converts on the way in
//! and out.
//!
//! A written Event is checked as `ValidateEventCreate` and
//! `ValidateEventUpdate` check it (`pkg/apis/core/validation/events.go`):
//! the legacy rules for both APIs, and the strict ones for a create
//! through `events.k8s.io/v1`.

use serde_json::{Map, Value, json};

use super::history::text;
use super::resources::Resource;
use drillbench_model::manifest_rules::is_qualified_name;

/// The group whose Events are converted.
pub(super) const GROUP: &str = "events.k8s.io";

/// Core field name, `events.k8s.io/v1` field name: the renamed ones.
const RENAMED: [(&str, &str); 7] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
];

/// Whether objects read through `resource` are Events to convert.
pub(super) fn converts(resource: &Resource) -> bool {
    resource.group == GROUP
}

fn rename(object: &Value, api_version: &str, to_v1: bool) -> Value {
    let Some(fields) = object.as_object() else {
        return object.clone();
    };
    let mut out = Map::new();
    for (field, value) in fields {
        let renamed = RENAMED
            .iter()
            .find(|(core, v1)| if to_v1 { core == field } else { v1 == field })
            .map(|(core, v1)| if to_v1 { *v1 } else { *core });
        out.insert(renamed.unwrap_or(field).to_owned(), value.clone());
    }
    out.insert("apiVersion".to_owned(), json!(api_version));
    Value::Object(out)
}

/// A stored (core) Event as `events.k8s.io/v1` serves it.
pub(super) fn to_v1(event: &Value) -> Value {
    rename(event, "events.k8s.io/v1", true)
}

/// An `events.k8s.io/v1` Event in the stored (core) form.
pub(super) fn to_core(event: &Value) -> Value {
    rename(event, "v1", false)
}

/// `ReportingInstanceLengthLimit`, `ActionLengthLimit`,
/// `ReasonLengthLimit`, `NoteLengthLimit`.
const INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

fn is_set(event: &Value, pointer: &str) -> bool {
    match event.pointer(pointer) {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_i64() != Some(0),
        Some(Value::Object(o)) => o.values().any(|v| !v.is_null() && v != ""),
        Some(_) => true,
    }
}

fn required(field: &str) -> String {
    format!("{field}: Required value")
}

fn invalid(field: &str, value: &str, detail: &str) -> String {
    format!("{field}: Invalid value: \"{value}\": {detail}")
}

/// The errors `ValidateEventCreate` finds in a new Event (core form) in
/// `namespace`; `strict`: written through `events.k8s.io/v1`. Field paths
/// are the core form's, as the API server's are (it validates the
/// internal Event).
pub(super) fn create_errors(event: &Value, namespace: &str, strict: bool) -> Vec<String> {
    let mut errors = legacy_errors(event, namespace);
    if !strict {
        return errors;
    }
    errors.extend(series_errors(event));
    if !is_set(event, "/eventTime") {
        errors.push(required("eventTime"));
    }
    let kind = text(event, "/type");
    if kind != "Normal" && kind != "Warning" {
        errors.push(invalid("type", "", &format!("has invalid value: {kind}")));
    }
    for field in ["firstTimestamp", "lastTimestamp", "count", "source"] {
        if is_set(event, &format!("/{field}")) {
            errors.push(invalid(field, "", "needs to be unset"));
        }
    }
    errors
}

/// `validateV1EventSeries`.
fn series_errors(event: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    if let Some(series) = event.get("series").filter(|s| !s.is_null()) {
        if series["count"].as_i64().unwrap_or(0) < 2 {
            errors.push(invalid("series.count", "", "should be at least 2"));
        }
        if !is_set(series, "/lastObservedTime") {
            errors.push(required("series.lastObservedTime"));
        }
    }
    errors
}

/// `legacyValidateEvent`, which every written Event passes.
fn legacy_errors(event: &Value, namespace: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let involved = text(event, "/involvedObject/namespace");
    let mismatch = || {
        invalid(
            "involvedObject.namespace",
            &involved,
            "does not match event.namespace",
        )
    };
    if !is_set(event, "/eventTime") {
        // An old-style Event: its namespace is its object's (or empty or
        // `default` for a cluster-scoped object).
        let agrees = if involved.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved
        };
        if !agrees {
            errors.push(mismatch());
        }
        return errors;
    }
    if involved.is_empty() && namespace != "default" && namespace != "kube-system" {
        errors.push(mismatch());
    }
    let controller = text(event, "/reportingComponent");
    if controller.is_empty() {
        errors.push(required("reportingController"));
    }
    if !is_qualified_name(&controller) {
        errors.push(invalid(
            "reportingController",
            &controller,
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ));
    }
    for (field, pointer, limit) in [
        ("reportingInstance", "/reportingInstance", INSTANCE_LIMIT),
        ("action", "/action", ACTION_LIMIT),
        ("reason", "/reason", REASON_LIMIT),
    ] {
        let value = text(event, pointer);
        if value.is_empty() {
            errors.push(required(field));
        }
        if value.len() > limit {
            errors.push(invalid(
                field,
                "",
                &format!("can have at most {limit} characters"),
            ));
        }
    }
    if text(event, "/message").len() > NOTE_LIMIT {
        errors.push(invalid(
            "message",
            "",
            &format!("can have at most {NOTE_LIMIT} characters"),
        ));
    }
    errors
}

/// The errors `ValidateEventUpdate` finds in a change of a stored Event
/// (both core form); `strict`: written through `events.k8s.io/v1`, where
/// what the Event says may not change.
pub(super) fn update_errors(
    before: &Value,
    after: &Value,
    namespace: &str,
    strict: bool,
) -> Vec<String> {
    let mut errors = legacy_errors(after, namespace);
    if !strict {
        return errors;
    }
    if before.get("series") != after.get("series") {
        errors.extend(series_errors(after));
    }
    for field in [
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    ] {
        if before.get(field) != after.get(field) {
            // The API server names the field by the internal Event's.
            let path = if field == "reportingComponent" {
                "reportingController"
            } else {
                field
            };
            errors.push(format!(
                "{path}: Invalid value: {}: field is immutable",
                after.get(field).map_or("null".to_owned(), Value::to_string)
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorded() -> Value {
        json!({"kind": "Event", "apiVersion": "v1",
               "metadata": {"name": "api.1", "namespace": "apps"},
               "involvedObject": {"kind": "Pod", "name": "api", "namespace": "apps"},
               "reason": "Scheduled", "message": "Successfully assigned", "type": "Normal",
               "source": {"component": "default-scheduler"}, "reportingComponent": "default-scheduler",
               "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
               "count": 1})
    }

    /// `Convert_core_Event_To_v1_Event`: the renamed fields under their
    /// new names, the rest as they were; converting back gives the
    /// stored Event again.
    #[test]
    fn a_stored_event_reads_through_events_v1_and_back() {
        let v1 = to_v1(&recorded());
        assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
        assert_eq!(v1["regarding"]["name"], "api");
        assert_eq!(v1["note"], "Successfully assigned");
        assert_eq!(v1["reportingController"], "default-scheduler");
        assert_eq!(v1["deprecatedSource"]["component"], "default-scheduler");
        assert_eq!(v1["deprecatedCount"], 1);
        assert_eq!(v1["reason"], "Scheduled");
        for core in [
            "involvedObject",
            "message",
            "count",
            "source",
            "reportingComponent",
        ] {
            assert!(v1.get(core).is_none(), "{core}");
        }
        assert_eq!(to_core(&v1), recorded());
    }

    fn new_style() -> Value {
        json!({"metadata": {"name": "e", "namespace": "apps"},
               "eventTime": "2026-01-01T00:00:00.000000Z", "type": "Normal",
               "involvedObject": {"kind": "Pod", "name": "api", "namespace": "apps"},
               "reportingComponent": "example.com/drill", "reportingInstance": "drill-1",
               "action": "Checked", "reason": "Probed", "message": "ok"})
    }

    fn with(mut object: Value, field: &str, value: Value) -> Value {
        object[field] = value;
        object
    }

    /// `ValidateEventCreate`, row by row: each case refused with the API
    /// server's words, beside the control one field away that passes.
    #[test]
    fn written_events_are_validated_as_the_api_server_validates_them() {
        let rows: Vec<(&str, Value, &str, bool, Option<&str>)> = vec![
            // legacyValidateEvent, old style: the namespace is the object's.
            (
                "old style elsewhere",
                recorded(),
                "default",
                false,
                Some(
                    "involvedObject.namespace: Invalid value: \"apps\": does not match event.namespace",
                ),
            ),
            ("old style in place", recorded(), "apps", false, None),
            // legacyValidateEvent, new style: reporting fields required.
            (
                "no controller",
                with(new_style(), "reportingComponent", json!("")),
                "apps",
                false,
                Some("reportingController: Required value"),
            ),
            ("a controller", new_style(), "apps", false, None),
            (
                "no action",
                with(new_style(), "action", json!("")),
                "apps",
                false,
                Some("action: Required value"),
            ),
            (
                "an action",
                with(new_style(), "action", json!("Pinged")),
                "apps",
                false,
                None,
            ),
            (
                "a long reason",
                with(new_style(), "reason", json!("r".repeat(129))),
                "apps",
                false,
                Some("reason: Invalid value: \"\": can have at most 128 characters"),
            ),
            (
                "a reason of 128",
                with(new_style(), "reason", json!("r".repeat(128))),
                "apps",
                false,
                None,
            ),
            // Strict (events.k8s.io/v1): eventTime, type, no deprecated fields.
            (
                "strict without eventTime",
                with(recorded(), "count", json!(0)),
                "apps",
                true,
                Some("eventTime: Required value"),
            ),
            ("strict with eventTime", new_style(), "apps", true, None),
            (
                "strict with a count",
                with(new_style(), "count", json!(3)),
                "apps",
                true,
                Some("count: Invalid value: \"\": needs to be unset"),
            ),
            (
                "strict without a count",
                with(new_style(), "count", json!(0)),
                "apps",
                true,
                None,
            ),
            (
                "strict odd type",
                with(new_style(), "type", json!("Info")),
                "apps",
                true,
                Some("type: Invalid value: \"\": has invalid value: Info"),
            ),
            (
                "strict warning",
                with(new_style(), "type", json!("Warning")),
                "apps",
                true,
                None,
            ),
            (
                "strict short series",
                with(
                    new_style(),
                    "series",
                    json!({"count": 1, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}),
                ),
                "apps",
                true,
                Some("series.count: Invalid value: \"\": should be at least 2"),
            ),
            (
                "strict series",
                with(
                    new_style(),
                    "series",
                    json!({"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"}),
                ),
                "apps",
                true,
                None,
            ),
        ];
        for pair in rows.chunks(2) {
            for (what, event, namespace, strict, refusal) in pair {
                let errors = create_errors(event, namespace, *strict);
                match refusal {
                    Some(expected) => {
                        assert!(errors.iter().any(|e| e == expected), "{what}: {errors:?}")
                    }
                    None => assert!(errors.is_empty(), "{what}: {errors:?}"),
                }
            }
        }
    }

    /// `ValidateEventUpdate`: through events.k8s.io/v1 what an Event says
    /// is immutable (control: its series may grow); through core/v1 only
    /// the legacy rules apply.
    #[test]
    fn an_events_v1_update_may_not_change_what_the_event_says() {
        let before = new_style();
        let reworded = with(before.clone(), "message", json!("changed"));
        assert_eq!(
            update_errors(&before, &reworded, "apps", true),
            ["message: Invalid value: \"changed\": field is immutable"]
        );
        assert!(update_errors(&before, &reworded, "apps", false).is_empty());
        let counted = with(
            before.clone(),
            "series",
            json!({"count": 2, "lastObservedTime": "2026-01-01T00:00:05.000000Z"}),
        );
        assert!(update_errors(&before, &counted, "apps", true).is_empty());
    }
}
