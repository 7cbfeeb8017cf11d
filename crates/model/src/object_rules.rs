//! Rules the Kubernetes API server applies to a workload object on create,
//! checked when a drill is loaded so an object a real cluster would refuse
//! is refused by `bench validate` too, instead of being simulated (or
//! dropped) as if it had been admitted. Issue 19 found `apps/v2`
//! StatefulSets dropped silently, `replicas: -1`, `containers: []` and
//! selectors that match nothing all accepted.
//!
//! Transcribed from upstream, not copied:
//! - apps validation (`k8s.io/kubernetes/pkg/apis/apps/validation`):
//!   `ValidateDeploymentSpec`/`ValidateStatefulSetSpec`/`ValidateDaemonSetSpec`
//!   require a non-empty selector that matches the template's labels
//!   ("`selector` does not match template `labels`") and a non-negative
//!   `replicas` (`ValidateNonnegativeField`).
//! - core validation (`validateContainers`): a pod template needs at least
//!   one container.
//! - apimachinery `validation.IsValidLabelValue`: at most 63 characters,
//!   empty or alphanumeric at both ends with `-`, `_`, `.` between.
//! - The `apps` group serves only `v1` since Kubernetes 1.16, and `policy`
//!   serves PodDisruptionBudget only as `v1` since 1.25.

use serde_json::Value;

use crate::manifest_rules::FieldProblem;

/// The kinds whose pods come from `spec.template` and are chosen by
/// `spec.selector`, with the one apiVersion each is served as.
const TEMPLATED: [(&str, &str); 4] = [
    ("Deployment", "apps/v1"),
    ("StatefulSet", "apps/v1"),
    ("DaemonSet", "apps/v1"),
    ("ReplicaSet", "apps/v1"),
];

/// Other kinds the bench reads, with the one apiVersion each is served as.
const SERVED: [(&str, &str); 1] = [("PodDisruptionBudget", "policy/v1")];

/// Every rule `object` breaks, one sentence each saying what was expected,
/// with the JSON pointer of the field that breaks it.
pub fn object_rule_problems(object: &Value) -> Vec<FieldProblem> {
    let mut problems = Vec::new();
    let (Some(kind), Some(api_version)) = (
        object.get("kind").and_then(Value::as_str),
        object.get("apiVersion").and_then(Value::as_str),
    ) else {
        return problems;
    };
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let what = format!("{kind} `{name}`");
    if let Some((_, served)) = TEMPLATED
        .iter()
        .chain(SERVED.iter())
        .find(|(k, _)| *k == kind)
        && api_version != *served
    {
        problems.push(FieldProblem {
            pointer: "/apiVersion".to_owned(),
            message: format!(
                "{what} has apiVersion `{api_version}`, which the API server does not serve for {kind}; expected `{served}`"
            ),
        });
        // The rest of the object is read against a schema it did not ask for.
        return problems;
    }
    label_values(
        &what,
        "/metadata/labels",
        object.pointer("/metadata/labels"),
        &mut problems,
    );
    if !TEMPLATED.iter().any(|(k, _)| *k == kind) {
        return problems;
    }
    if let Some(replicas) = object.pointer("/spec/replicas")
        && replicas.as_i64().is_some_and(|r| r < 0)
    {
        problems.push(FieldProblem {
            pointer: "/spec/replicas".to_owned(),
            message: format!(
                "{what} has spec.replicas {replicas}; expected a number greater than or equal to 0"
            ),
        });
    }
    let template_labels = object.pointer("/spec/template/metadata/labels");
    label_values(
        &what,
        "/spec/template/metadata/labels",
        template_labels,
        &mut problems,
    );
    let containers = object.pointer("/spec/template/spec/containers");
    if containers
        .and_then(Value::as_array)
        .is_none_or(|list| list.is_empty())
    {
        problems.push(FieldProblem {
            pointer: "/spec/template/spec/containers".to_owned(),
            message: format!(
                "{what} has no containers in spec.template.spec.containers; expected at least one"
            ),
        });
    }
    match object.pointer("/spec/selector") {
        None | Some(Value::Null) => problems.push(FieldProblem {
            pointer: "/spec".to_owned(),
            message: format!(
                "{what} has no spec.selector; expected one that matches spec.template.metadata.labels"
            ),
        }),
        Some(selector) => {
            let empty = |key: &str| {
                selector.get(key).is_none_or(|v| {
                    v.as_object().is_some_and(|m| m.is_empty())
                        || v.as_array().is_some_and(|a| a.is_empty())
                        || v.is_null()
                })
            };
            if empty("matchLabels") && empty("matchExpressions") {
                problems.push(FieldProblem {
                    pointer: "/spec/selector".to_owned(),
                    message: format!(
                        "{what} has an empty spec.selector, which would select every pod; expected matchLabels or matchExpressions"
                    ),
                });
            } else if !selector_matches(selector, template_labels) {
                problems.push(FieldProblem {
                    pointer: "/spec/selector".to_owned(),
                    message: format!(
                        "{what}: `selector` does not match template `labels`; expected spec.template.metadata.labels to satisfy spec.selector"
                    ),
                });
            }
        }
    }
    problems
}

/// Whether a label selector selects a pod carrying `labels`: every
/// `matchLabels` pair present, every `matchExpressions` requirement met.
fn selector_matches(selector: &Value, labels: Option<&Value>) -> bool {
    let label = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
    let pairs_hold = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .is_none_or(|pairs| {
            pairs
                .iter()
                .all(|(key, value)| value.as_str().is_some_and(|v| label(key) == Some(v)))
        });
    let expressions_hold = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .is_none_or(|expressions| {
            expressions.iter().all(|expression| {
                let key = expression
                    .get("key")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let values: Vec<&str> = expression
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                match expression.get("operator").and_then(Value::as_str) {
                    Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                    Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                    Some("Exists") => label(key).is_some(),
                    Some("DoesNotExist") => label(key).is_none(),
                    // An unknown operator is refused as such by
                    // `manifest_rules`; saying the selector does not match
                    // as well would only mislead.
                    _ => true,
                }
            })
        });
    pairs_hold && expressions_hold
}

fn label_values(
    what: &str,
    pointer: &str,
    labels: Option<&Value>,
    problems: &mut Vec<FieldProblem>,
) {
    let Some(labels) = labels.and_then(Value::as_object) else {
        return;
    };
    for (key, value) in labels {
        let valid = value.as_str().is_some_and(is_label_value);
        if !valid {
            let field = pointer.trim_start_matches('/').replace('/', ".");
            problems.push(FieldProblem {
                pointer: format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")),
                message: format!(
                    "{what} has {field}.{key} = {value}, not a valid label value; expected at most 63 \
                     characters, empty or starting and ending with a letter or digit, with `-`, `_`, `.` between"
                ),
            });
        }
    }
}

pub(crate) fn is_label_value(value: &str) -> bool {
    let alphanumeric = |b: u8| b.is_ascii_alphanumeric();
    let bytes = value.as_bytes();
    value.is_empty()
        || (bytes.len() <= 63
            && bytes.first().copied().is_some_and(alphanumeric)
            && bytes.last().copied().is_some_and(alphanumeric)
            && bytes
                .iter()
                .all(|&b| alphanumeric(b) || matches!(b, b'-' | b'_' | b'.')))
}

/// For each object that repeats an earlier one's kind, namespace and name,
/// its index in `documents`, the earlier one's, and what is wrong: the API
/// server refuses the second create with AlreadyExists, so a drill that
/// declares both would simulate an object a cluster never holds.
pub(crate) fn duplicate_objects(
    documents: &[crate::manifest::Document],
) -> Vec<(usize, usize, String)> {
    let mut first: std::collections::BTreeMap<(String, String, String), usize> =
        std::collections::BTreeMap::new();
    let mut duplicates = Vec::new();
    for (index, document) in documents.iter().enumerate() {
        let (Some(kind), Some(name)) = (document.kind(), document.name()) else {
            continue;
        };
        // An object without a namespace is created in `default`.
        let namespace = document.namespace().unwrap_or("default");
        let key = (kind.to_owned(), namespace.to_owned(), name.to_owned());
        match first.get(&key) {
            Some(&earlier) => duplicates.push((
                index,
                earlier,
                format!("duplicate {kind} `{namespace}/{name}`; expected each object once"),
            )),
            None => {
                first.insert(key, index);
            }
        }
    }
    duplicates
}

/// What a Kubernetes object lacks, if anything.
pub fn object_problem(object: &serde_json::Value) -> Option<String> {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    };
    if !object.is_object() {
        return Some(format!(
            "expected a Kubernetes object (a mapping), found {}",
            crate::manifest::json_type(object)
        ));
    }
    let missing: Vec<&str> = [
        ("/apiVersion", "apiVersion"),
        ("/kind", "kind"),
        ("/metadata/name", "metadata.name"),
    ]
    .into_iter()
    .filter(|(pointer, _)| text(pointer).is_none())
    .map(|(_, name)| name)
    .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "a Kubernetes object without {}; expected apiVersion, kind and metadata.name",
            missing.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::object_rule_problems;
    use serde_json::{Value, json};

    /// A Deployment the API server admits, as the control of every pair.
    fn admitted() -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web", "tier": "front"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx"}]}
                }
            }
        })
    }

    fn with(pointer: &str, value: Value) -> Value {
        let mut object = admitted();
        *object.pointer_mut(pointer).expect("field of the control") = value;
        object
    }

    fn refused(object: &Value, fragment: &str) {
        let problems = object_rule_problems(object);
        assert!(
            problems.iter().any(|p| p.message.contains(fragment)),
            "expected `{fragment}` in {problems:?}"
        );
    }

    #[test]
    fn the_control_deployment_is_admitted() {
        assert_eq!(object_rule_problems(&admitted()), Vec::new());
    }

    /// apps validation: `ValidateNonnegativeField(spec.replicas)`.
    #[test]
    fn apps_validation_replicas_below_zero_refused_zero_admitted() {
        refused(&with("/spec/replicas", json!(-1)), "spec.replicas -1");
        assert!(object_rule_problems(&with("/spec/replicas", json!(0))).is_empty());
    }

    /// core validation `validateContainers`: at least one container.
    #[test]
    fn core_validation_no_containers_refused_one_admitted() {
        refused(
            &with("/spec/template/spec/containers", json!([])),
            "no containers",
        );
        refused(&with("/spec/template/spec", json!({})), "no containers");
    }

    /// apps validation: "`selector` does not match template `labels`".
    #[test]
    fn apps_validation_selector_must_match_template_labels() {
        refused(
            &with("/spec/selector", json!({"matchLabels": {"app": "db"}})),
            "does not match template",
        );
        // A subset of the template's labels matches.
        assert!(
            object_rule_problems(&with(
                "/spec/selector",
                json!({"matchLabels": {"tier": "front"}})
            ))
            .is_empty()
        );
        refused(
            &with(
                "/spec/selector",
                json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}),
            ),
            "does not match template",
        );
        assert!(
            object_rule_problems(&with(
                "/spec/selector",
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]}),
            ))
            .is_empty()
        );
        refused(
            &with(
                "/spec/selector",
                json!({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}),
            ),
            "does not match template",
        );
        assert!(
            object_rule_problems(&with(
                "/spec/selector",
                json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}),
            ))
            .is_empty()
        );
    }

    /// apps validation: a missing or empty selector is invalid in apps/v1.
    #[test]
    fn apps_validation_missing_or_empty_selector_refused() {
        refused(&with("/spec/selector", Value::Null), "no spec.selector");
        refused(&with("/spec/selector", json!({})), "empty spec.selector");
        refused(
            &with("/spec/selector", json!({"matchLabels": {}})),
            "empty spec.selector",
        );
    }

    /// apimachinery `IsValidLabelValue`.
    #[test]
    fn apimachinery_label_values_refused_and_admitted() {
        for bad in ["front end", "-front", "front-", &"a".repeat(64)] {
            refused(
                &with("/spec/template/metadata/labels/tier", json!(bad)),
                "not a valid label value",
            );
        }
        refused(
            &with("/metadata/labels/app", json!(3)),
            "not a valid label value",
        );
        for good in ["", "a", "front_end.v-2", &"a".repeat(63)] {
            let mut object = with("/spec/template/metadata/labels/tier", json!(good));
            *object.pointer_mut("/metadata/labels/app").expect("labels") = json!(good);
            assert!(object_rule_problems(&object).is_empty(), "{good:?}");
        }
    }

    /// The apps group serves only v1; policy serves PDBs only as v1.
    #[test]
    fn unserved_api_versions_refused_served_ones_admitted() {
        refused(&with("/apiVersion", json!("apps/v2")), "does not serve");
        refused(
            &with("/apiVersion", json!("extensions/v1beta1")),
            "does not serve",
        );
        let pdb = |version: &str| {
            json!({"apiVersion": version, "kind": "PodDisruptionBudget",
                   "metadata": {"name": "web"}, "spec": {"minAvailable": 1}})
        };
        refused(&pdb("policy/v1beta1"), "expected `policy/v1`");
        assert!(object_rule_problems(&pdb("policy/v1")).is_empty());
        // Kinds the bench does not model are not judged here.
        assert!(
            object_rule_problems(&json!({"apiVersion": "example.com/v9", "kind": "Widget",
                                         "metadata": {"name": "w"}}))
            .is_empty()
        );
    }

    /// The API server refuses a second create of one kind/namespace/name
    /// (AlreadyExists); another namespace or another kind is another object.
    #[test]
    fn duplicate_objects_refused_other_namespace_or_kind_admitted() {
        let docs = crate::manifest::parse_documents(
            "m.yaml",
            "kind: Deployment\nmetadata: {name: web, namespace: default}\n---\n\
             kind: Deployment\nmetadata: {name: web, namespace: shop}\n---\n\
             kind: StatefulSet\nmetadata: {name: web}\n---\n\
             kind: Deployment\nmetadata: {name: web}\n",
        )
        .expect("parses");
        let duplicates = super::duplicate_objects(&docs);
        assert_eq!(duplicates.len(), 1, "{duplicates:?}");
        assert_eq!((duplicates[0].0, duplicates[0].1), (3, 0));
        assert!(super::duplicate_objects(&docs[..3]).is_empty());
    }
}
