//! What the API server refuses in a PriorityClass, checked when a drill is
//! loaded so `bench validate` refuses it at its field, as `kubectl apply`
//! would be refused, instead of the simulator loading a class no cluster
//! holds.
//!
//! Transcribed from upstream, not copied:
//! - `ValidatePriorityClass` (`pkg/apis/scheduling/validation`): a name
//!   with the `system-` prefix must be one of the system classes with its
//!   exact value and `globalDefault` (`IsKnownSystemPriorityClass` in
//!   `pkg/apis/scheduling/v1/defaults.go`), any other class's value is at
//!   most `HighestUserDefinablePriority` (1000000000), and
//!   `preemptionPolicy` goes through core `ValidatePreemptionPolicy`;
//! - the `Priority` admission plugin's `validatePriorityClass`
//!   (`plugin/pkg/admission/priority/admission.go`): creating a second
//!   `globalDefault` class is forbidden ("PriorityClass X is already marked
//!   as default. Only one default can exist").

use serde_json::Value;

use crate::manifest::Document;
use crate::manifest_rules::FieldProblem;

/// `scheduling.HighestUserDefinablePriority`.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// `scheduling.SystemCriticalPriority`: the value of
/// `system-cluster-critical`.
pub const SYSTEM_CLUSTER_CRITICAL: i32 = 2_000_000_000;
/// `system-node-critical`: 1000 above [`SYSTEM_CLUSTER_CRITICAL`].
pub const SYSTEM_NODE_CRITICAL: i32 = SYSTEM_CLUSTER_CRITICAL + 1000;
/// `scheduling.SystemPriorityClassPrefix`.
const SYSTEM_PREFIX: &str = "system-";
/// The system classes every cluster has, with their values; neither is
/// `globalDefault`.
pub const SYSTEM_CLASSES: [(&str, i32); 2] = [
    ("system-node-critical", SYSTEM_NODE_CRITICAL),
    ("system-cluster-critical", SYSTEM_CLUSTER_CRITICAL),
];

/// Every rule the PriorityClass `object` (already decoded as one) breaks on
/// its own, each worded as the API server's `field.Error`.
pub(crate) fn class_problems(object: &Value, what: &str, problems: &mut Vec<FieldProblem>) {
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let value = object.get("value").and_then(Value::as_i64).unwrap_or(0);
    let global_default = object
        .get("globalDefault")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if name.starts_with(SYSTEM_PREFIX) {
        if let Some(error) = unknown_system_class(name, value, global_default) {
            problems.push(FieldProblem::new(
                "/metadata/name",
                format!(
                    "{what}: metadata.name: Forbidden: priority class names with \
                     '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {error}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        problems.push(FieldProblem::new(
            "/value",
            format!(
                "{what}: value: Forbidden: maximum allowed value of a user defined priority \
                 is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    match object.get("preemptionPolicy").and_then(Value::as_str) {
        None | Some("PreemptLowerPriority" | "Never") => {}
        Some("") => problems.push(FieldProblem::new(
            "/preemptionPolicy",
            format!("{what}: preemptionPolicy: Required value"),
        )),
        Some(other) => problems.push(FieldProblem::new(
            "/preemptionPolicy",
            format!(
                "{what}: preemptionPolicy: Unsupported value: \"{other}\": supported values: \
                 \"Never\", \"PreemptLowerPriority\""
            ),
        )),
    }
}

/// `IsKnownSystemPriorityClass`'s error for a `system-` class, or `None`
/// when it is one of the system classes exactly.
fn unknown_system_class(name: &str, value: i64, global_default: bool) -> Option<String> {
    let Some((_, system_value)) = SYSTEM_CLASSES.iter().find(|(n, _)| *n == name) else {
        return Some(format!("{name} is not a known system priority class"));
    };
    if value != i64::from(*system_value) {
        return Some(format!(
            "value of {name} PriorityClass must be {system_value}"
        ));
    }
    // Neither system class is a global default.
    global_default.then(|| format!("globalDefault of {name} PriorityClass must be false"))
}

/// Each `globalDefault` PriorityClass after the first among `documents`,
/// in their order (the order a `kubectl apply` creates them in), by index,
/// with the admission plugin's refusal of its create. The first `existing`
/// documents are already in the cluster (a snapshot's): they count as a
/// default, and are not refused, since admission judges creates only.
pub(crate) fn second_global_defaults(
    documents: &[Document],
    existing: usize,
) -> Vec<(usize, FieldProblem)> {
    let mut first: Option<&str> = None;
    let mut refused = Vec::new();
    for (index, document) in documents.iter().enumerate() {
        let is_default = document.kind() == Some("PriorityClass")
            && document.value.get("globalDefault").and_then(Value::as_bool) == Some(true);
        if !is_default {
            continue;
        }
        let name = document.name().unwrap_or_default();
        match first {
            None => first = Some(name),
            Some(_) if index < existing => {}
            Some(default) => refused.push((
                index,
                FieldProblem::new(
                    "/globalDefault",
                    format!(
                        "PriorityClass `{name}`: is forbidden: PriorityClass {default} is already \
                         marked as default. Only one default can exist"
                    ),
                ),
            )),
        }
    }
    refused
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn class(name: &str, value: i64, global_default: bool) -> Value {
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
               "metadata": {"name": name}, "value": value, "globalDefault": global_default})
    }

    fn problems_of(object: &Value) -> Vec<FieldProblem> {
        let mut problems = Vec::new();
        class_problems(object, "PriorityClass `x`", &mut problems);
        problems
    }

    /// One refused class, where and why, and its admitted twin.
    struct Case {
        source: &'static str,
        refused: Value,
        at: &'static str,
        says: &'static str,
        admitted: Value,
    }

    #[test]
    fn a_priority_class_is_refused_as_the_api_server_refuses_it() {
        let with_policy = |policy: &str| {
            let mut object = class("batch", 10, false);
            object["preemptionPolicy"] = json!(policy);
            object
        };
        let cases = [
            Case {
                source: "ValidatePriorityClass: Value > HighestUserDefinablePriority",
                refused: class("critical-app", 1_000_000_001, false),
                at: "/value",
                says: "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
                admitted: class("critical-app", 1_000_000_000, false),
            },
            Case {
                source: "ValidatePriorityClass: a system- name that is not a system class",
                refused: class("system-app", 10, false),
                at: "/metadata/name",
                says: "reserved for system use only. error: system-app is not a known system priority class",
                admitted: class("sys-app", 10, false),
            },
            Case {
                source: "IsKnownSystemPriorityClass: value of system-cluster-critical must be 2000000000",
                refused: class("system-cluster-critical", 1_000, false),
                at: "/metadata/name",
                says: "error: value of system-cluster-critical PriorityClass must be 2000000000",
                admitted: class("system-cluster-critical", 2_000_000_000, false),
            },
            Case {
                source: "IsKnownSystemPriorityClass: globalDefault of system-node-critical must be false",
                refused: class("system-node-critical", 2_000_001_000, true),
                at: "/metadata/name",
                says: "error: globalDefault of system-node-critical PriorityClass must be false",
                admitted: class("system-node-critical", 2_000_001_000, false),
            },
            Case {
                source: "core ValidatePreemptionPolicy: field.NotSupported",
                refused: with_policy("Sometimes"),
                at: "/preemptionPolicy",
                says: "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"Never\", \"PreemptLowerPriority\"",
                admitted: with_policy("Never"),
            },
        ];
        for case in cases {
            let refused = problems_of(&case.refused);
            assert_eq!(refused.len(), 1, "{}: {refused:?}", case.source);
            assert_eq!(refused[0].pointer, case.at, "{}", case.source);
            assert!(
                refused[0].message.contains(case.says),
                "{}: {}",
                case.source,
                refused[0].message
            );
            assert!(
                problems_of(&case.admitted).is_empty(),
                "{}: the control is admitted",
                case.source
            );
        }
        // A system class's own value is not held to the user limit.
        assert!(problems_of(&class("system-node-critical", 2_000_001_000, false)).is_empty());
    }

    fn document(index: usize, value: Value) -> Document {
        Document {
            source: "classes.yaml".to_owned(),
            index,
            line: 1,
            column: 1,
            value,
        }
    }

    // admission.go validatePriorityClass: a second globalDefault create is
    // forbidden; the control has one default and one ordinary class.
    #[test]
    fn only_the_first_global_default_class_is_admitted() {
        let two = [
            document(0, class("low", 10, true)),
            document(1, class("ordinary", 20, false)),
            document(2, class("high", 30, true)),
        ];
        let refused = second_global_defaults(&two, 0);
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].0, 2);
        assert_eq!(refused[0].1.pointer, "/globalDefault");
        assert!(
            refused[0].1.message.contains(
                "PriorityClass low is already marked as default. Only one default can exist"
            ),
            "{}",
            refused[0].1.message
        );
        let one = [
            document(0, class("low", 10, true)),
            document(1, class("high", 30, false)),
        ];
        assert!(second_global_defaults(&one, 0).is_empty());
        // Two defaults already in the cluster (a race admission lost) are
        // not refused; a third created after them is.
        let race = [
            document(0, class("low", 10, true)),
            document(1, class("high", 30, true)),
            document(2, class("later", 40, true)),
        ];
        assert!(second_global_defaults(&race[..2], 2).is_empty());
        let later = second_global_defaults(&race, 2);
        assert_eq!(later.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [2]);
    }
}
