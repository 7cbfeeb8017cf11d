//! The API server's create validation of the scheduling fields of a pod
//! spec (core `ValidatePodSpec` in `pkg/apis/core/validation/validation.go`,
//! and apps `ValidatePodTemplateSpecForReplicaSet`), checked when a drill is
//! loaded: an affinity with no node selector term, a spread constraint with
//! `maxSkew: 0`, a request above its limit or two containers of one name are
//! refused by a real cluster, so the simulator must not place their pods.
//!
//! Each message ends with the API server's own `field.Error` text (`Required
//! value`, `Invalid value`, `Unsupported value`, `Duplicate value`), after
//! the field's path, so a reader sees what `kubectl apply` would print.
//!
//! Transcribed from upstream, not copied:
//! - `ValidateNodeSelector`: a required node affinity has at least one
//!   node selector term;
//! - `ValidatePreferredSchedulingTerms` and `validateWeightedPodAffinityTerms`:
//!   a preferred term's weight is 1–100;
//! - `validatePodAffinityTerm`: a topology key, and a qualified name;
//! - `validateTopologySpreadConstraints`: `ValidateMaxSkew`,
//!   `ValidateTopologyKey`, `ValidateWhenUnsatisfiable`,
//!   `ValidateSpreadConstraintNotRepeat` and `validateMinDomains`;
//! - `validateContainers`: container names are unique across init and
//!   regular containers;
//! - `ValidateContainerResourceRequirements`: a request at most its limit;
//! - apps `ValidatePodTemplateSpecForReplicaSet` (also the StatefulSet and
//!   DaemonSet templates): `restartPolicy` is `Always`.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::k8s::quantity::ParsedQuantity;
use crate::manifest_rules::{FieldProblem, dotted, is_qualified_name, pod_spec_pointers};

/// upstream `isNotPositiveErrorMsg`.
const NOT_POSITIVE: &str = "must be greater than zero";

/// Every scheduling-field rule the pod spec at `pointer` breaks.
pub(crate) fn pod_spec_problems(
    spec: &Value,
    pointer: &str,
    what: &str,
    problems: &mut Vec<FieldProblem>,
) {
    let mut out = Problems {
        what,
        list: problems,
    };
    if let Some(affinity) = spec.get("affinity") {
        affinity_rules(affinity, &format!("{pointer}/affinity"), &mut out);
    }
    if let Some(constraints) = spec
        .get("topologySpreadConstraints")
        .and_then(Value::as_array)
    {
        spread_rules(
            constraints,
            &format!("{pointer}/topologySpreadConstraints"),
            &mut out,
        );
    }
    container_rules(spec, pointer, &mut out);
}

/// The pod template of a Deployment, ReplicaSet, StatefulSet or DaemonSet
/// restarts its containers always: its controller replaces a pod that
/// ends, so `Never` or `OnFailure` would be a contradiction upstream
/// refuses.
pub(crate) fn template_restart_policy(
    object: &Value,
    kind: &str,
    what: &str,
    problems: &mut Vec<FieldProblem>,
) {
    if !matches!(
        kind,
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet"
    ) {
        return;
    }
    let at = "/spec/template/spec/restartPolicy";
    if let Some(policy) = object.pointer(at).and_then(Value::as_str)
        && policy != "Always"
    {
        Problems {
            what,
            list: problems,
        }
        .push(
            at,
            format!("Unsupported value: \"{policy}\": supported values: \"Always\""),
        );
    }
}

/// The same rules as the served API answers them in a 422 Status: one
/// `path: error` each, as the API server's `field.Error` prints.
pub fn api_errors(kind: &str, object: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    for pointer in pod_spec_pointers(kind) {
        if let Some(spec) = object.pointer(pointer) {
            pod_spec_problems(spec, pointer, "", &mut problems);
        }
    }
    template_restart_policy(object, kind, "", &mut problems);
    problems.into_iter().map(|p| p.message).collect()
}

/// Where the problems go, each message prefixed with the object it is
/// about (`Deployment `web`: `), or with nothing for the served API.
struct Problems<'a> {
    what: &'a str,
    list: &'a mut Vec<FieldProblem>,
}

impl Problems<'_> {
    /// A problem at `at`, worded as the API server's `field.Error`.
    fn push(&mut self, at: &str, error: String) {
        let field = dotted(at);
        let message = if self.what.is_empty() {
            format!("{field}: {error}")
        } else {
            format!("{}: {field}: {error}", self.what)
        };
        self.list.push(FieldProblem::new(at, message));
    }
}

fn affinity_rules(affinity: &Value, at: &str, out: &mut Problems<'_>) {
    let required = format!(
        "{at}/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms"
    );
    if let Some(node_selector) =
        affinity.pointer("/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
        && node_selector
            .get("nodeSelectorTerms")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty)
    {
        out.push(
            &required,
            "Required value: must have at least one node selector term".to_owned(),
        );
    }
    let preferred = "/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution";
    for (index, term) in array(affinity.pointer(preferred)) {
        weight_rule(term, &format!("{at}{preferred}/{index}/weight"), out);
    }
    for kind in ["podAffinity", "podAntiAffinity"] {
        let required = format!("/{kind}/requiredDuringSchedulingIgnoredDuringExecution");
        for (index, term) in array(affinity.pointer(&required)) {
            pod_affinity_term(term, &format!("{at}{required}/{index}"), out);
        }
        let preferred = format!("/{kind}/preferredDuringSchedulingIgnoredDuringExecution");
        for (index, term) in array(affinity.pointer(&preferred)) {
            let base = format!("{at}{preferred}/{index}");
            weight_rule(term, &format!("{base}/weight"), out);
            if let Some(term) = term.get("podAffinityTerm") {
                pod_affinity_term(term, &format!("{base}/podAffinityTerm"), out);
            }
        }
    }
}

fn array(value: Option<&Value>) -> impl Iterator<Item = (usize, &Value)> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

fn weight_rule(term: &Value, at: &str, out: &mut Problems<'_>) {
    let weight = term.get("weight").and_then(Value::as_i64).unwrap_or(0);
    if !(1..=100).contains(&weight) {
        out.push(
            at,
            format!("Invalid value: {weight}: must be in the range 1-100"),
        );
    }
}

fn pod_affinity_term(term: &Value, at: &str, out: &mut Problems<'_>) {
    let key = term
        .get("topologyKey")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let at = format!("{at}/topologyKey");
    if key.is_empty() {
        out.push(&at, "Required value: can not be empty".to_owned());
    } else if !is_qualified_name(key) {
        out.push(&at, not_a_label_name(key));
    }
}

/// apimachinery `ValidateLabelName`'s message for a key that is not a
/// qualified name.
fn not_a_label_name(key: &str) -> String {
    format!(
        "Invalid value: \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', \
         and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/'"
    )
}

fn spread_rules(constraints: &[Value], at: &str, out: &mut Problems<'_>) {
    let pair = |c: &Value| {
        (
            c.get("topologyKey")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            c.get("whenUnsatisfiable")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        )
    };
    for (index, constraint) in constraints.iter().enumerate() {
        let here = format!("{at}/{index}");
        let max_skew = constraint
            .get("maxSkew")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if max_skew <= 0 {
            out.push(
                &format!("{here}/maxSkew"),
                format!("Invalid value: {max_skew}: {NOT_POSITIVE}"),
            );
        }
        let (key, when) = pair(constraint);
        if key.is_empty() {
            out.push(
                &format!("{here}/topologyKey"),
                "Required value: can not be empty".to_owned(),
            );
        }
        if !matches!(when.as_str(), "DoNotSchedule" | "ScheduleAnyway") {
            out.push(
                &format!("{here}/whenUnsatisfiable"),
                format!(
                    "Unsupported value: \"{when}\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
                ),
            );
        }
        // A pair repeated later is reported at its first occurrence.
        if constraints[index + 1..]
            .iter()
            .any(|c| pair(c) == (key.clone(), when.clone()))
        {
            out.push(
                &here,
                format!(
                    "{{topologyKey, whenUnsatisfiable}}: Duplicate value: \"{{{key}, {when}}}\""
                ),
            );
        }
        if let Some(min_domains) = constraint.get("minDomains").and_then(Value::as_i64) {
            let at = format!("{here}/minDomains");
            if min_domains <= 0 {
                out.push(&at, format!("Invalid value: {min_domains}: {NOT_POSITIVE}"));
            }
            if when != "DoNotSchedule" {
                out.push(
                    &at,
                    format!(
                        "Invalid value: {min_domains}: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"
                    ),
                );
            }
        }
    }
}

fn container_rules(spec: &Value, pointer: &str, out: &mut Problems<'_>) {
    let mut names = BTreeSet::new();
    for list in ["initContainers", "containers"] {
        for (index, container) in array(spec.get(list)) {
            let here = format!("{pointer}/{list}/{index}");
            if let Some(name) = container.get("name").and_then(Value::as_str)
                && !name.is_empty()
                && !names.insert(name)
            {
                out.push(
                    &format!("{here}/name"),
                    format!("Duplicate value: \"{name}\""),
                );
            }
            requests_within_limits(container, &here, out);
        }
    }
}

/// A request above its limit; quantities that do not parse are refused
/// by the quantity rule already.
fn requests_within_limits(container: &Value, at: &str, out: &mut Problems<'_>) {
    let quantities = |field: &str| {
        container
            .pointer(&format!("/resources/{field}"))
            .and_then(Value::as_object)
    };
    let (Some(requests), Some(limits)) = (quantities("requests"), quantities("limits")) else {
        return;
    };
    let parse = |q: &Value| match q {
        Value::String(s) => ParsedQuantity::parse(s).ok(),
        Value::Number(n) => ParsedQuantity::parse(&n.to_string()).ok(),
        _ => None,
    };
    for (resource, request) in requests {
        let (Some(limit_value), Some(request_q)) = (limits.get(resource), parse(request)) else {
            continue;
        };
        let Some(limit_q) = parse(limit_value) else {
            continue;
        };
        if request_q.nanos() > limit_q.nanos() {
            out.push(
                &format!("{at}/resources/requests"),
                format!(
                    "Invalid value: \"{request_q}\": must be less than or equal to {resource} limit of {limit_q}"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::manifest_rules::object_field_problems;

    /// A Deployment whose pod spec carries `spec` merged over one admitted
    /// container, so each case states only the field it breaks.
    fn deployment(spec: Value) -> Value {
        let mut pod = json!({"containers": [{"name": "web", "image": "nginx"}]});
        for (key, value) in spec.as_object().expect("a pod spec fragment") {
            pod[key] = value.clone();
        }
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}
            }
        })
    }

    fn messages(object: &Value) -> Vec<(String, String)> {
        object_field_problems(object)
            .into_iter()
            .map(|p| (p.pointer, p.message))
            .collect()
    }

    const POD: &str = "/spec/template/spec";

    /// One row: the upstream rule, the spec fragment it refuses (with the
    /// pointer and the API server's words), and the fragment one change
    /// away that it admits.
    struct Case {
        source: &'static str,
        refused: Value,
        at: &'static str,
        says: &'static str,
        admitted: Value,
    }

    fn node_affinity(required: Value, preferred: Value) -> Value {
        json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": required,
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        }}})
    }

    fn exists(key: &str) -> Value {
        json!({"matchExpressions": [{"key": key, "operator": "Exists"}]})
    }

    fn anti_affinity(required: Value, preferred: Value) -> Value {
        json!({"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": required,
            "preferredDuringSchedulingIgnoredDuringExecution": preferred,
        }}})
    }

    fn term(key: &str) -> Value {
        json!({"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": key})
    }

    fn spread(constraints: Value) -> Value {
        json!({"topologySpreadConstraints": constraints})
    }

    fn constraint(skew: i64, key: &str, when: &str) -> Value {
        json!({"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
               "labelSelector": {"matchLabels": {"app": "web"}}})
    }

    fn containers(list: Value) -> Value {
        json!({"containers": list})
    }

    fn cases() -> Vec<Case> {
        let zone = "topology.kubernetes.io/zone";
        let mut min_domains_anyway = constraint(1, zone, "ScheduleAnyway");
        min_domains_anyway["minDomains"] = json!(2);
        let mut min_domains_zero = constraint(1, zone, "DoNotSchedule");
        min_domains_zero["minDomains"] = json!(0);
        let mut min_domains_two = constraint(1, zone, "DoNotSchedule");
        min_domains_two["minDomains"] = json!(2);
        vec![
            Case {
                source: "core ValidateNodeSelector: \"must have at least one node selector term\"",
                refused: node_affinity(json!({"nodeSelectorTerms": []}), json!([])),
                at: "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
                says: "nodeSelectorTerms: Required value: must have at least one node selector term",
                admitted: node_affinity(json!({"nodeSelectorTerms": [exists("disk")]}), json!([])),
            },
            Case {
                source: "core ValidatePreferredSchedulingTerms: weight \"must be in the range 1-100\"",
                refused: node_affinity(
                    json!({"nodeSelectorTerms": [exists("disk")]}),
                    json!([{"weight": 0, "preference": exists("disk")}]),
                ),
                at: "/affinity/nodeAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/weight",
                says: "Invalid value: 0: must be in the range 1-100",
                admitted: node_affinity(
                    json!({"nodeSelectorTerms": [exists("disk")]}),
                    json!([{"weight": 1, "preference": exists("disk")}]),
                ),
            },
            Case {
                source: "core validateWeightedPodAffinityTerms: weight \"must be in the range 1-100\"",
                refused: anti_affinity(
                    json!([]),
                    json!([{"weight": 101, "podAffinityTerm": term(zone)}]),
                ),
                at: "/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/weight",
                says: "Invalid value: 101: must be in the range 1-100",
                admitted: anti_affinity(
                    json!([]),
                    json!([{"weight": 100, "podAffinityTerm": term(zone)}]),
                ),
            },
            Case {
                source: "core validatePodAffinityTerm: topologyKey \"can not be empty\"",
                refused: anti_affinity(json!([term("")]), json!([])),
                at: "/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/0/topologyKey",
                says: "topologyKey: Required value: can not be empty",
                admitted: anti_affinity(json!([term("kubernetes.io/hostname")]), json!([])),
            },
            Case {
                source: "core validatePodAffinityTerm: ValidateLabelName(topologyKey)",
                refused: anti_affinity(
                    json!([]),
                    json!([{"weight": 5, "podAffinityTerm": term("not a key")}]),
                ),
                at: "/affinity/podAntiAffinity/preferredDuringSchedulingIgnoredDuringExecution/0/podAffinityTerm/topologyKey",
                says: "Invalid value: \"not a key\": name part must consist of alphanumeric characters",
                admitted: anti_affinity(
                    json!([]),
                    json!([{"weight": 5, "podAffinityTerm": term("not-a-key")}]),
                ),
            },
            Case {
                source: "core ValidateMaxSkew: \"must be greater than zero\"",
                refused: spread(json!([constraint(0, zone, "DoNotSchedule")])),
                at: "/topologySpreadConstraints/0/maxSkew",
                says: "maxSkew: Invalid value: 0: must be greater than zero",
                admitted: spread(json!([constraint(1, zone, "DoNotSchedule")])),
            },
            Case {
                source: "core ValidateTopologyKey: \"can not be empty\"",
                refused: spread(json!([constraint(1, "", "DoNotSchedule")])),
                at: "/topologySpreadConstraints/0/topologyKey",
                says: "Required value: can not be empty",
                admitted: spread(json!([constraint(1, zone, "DoNotSchedule")])),
            },
            Case {
                source: "core ValidateWhenUnsatisfiable: field.NotSupported",
                refused: spread(json!([constraint(1, zone, "Sometimes")])),
                at: "/topologySpreadConstraints/0/whenUnsatisfiable",
                says: "Unsupported value: \"Sometimes\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\"",
                admitted: spread(json!([constraint(1, zone, "ScheduleAnyway")])),
            },
            Case {
                source: "core ValidateSpreadConstraintNotRepeat: field.Duplicate of {topologyKey, whenUnsatisfiable}",
                refused: spread(json!([
                    constraint(1, zone, "DoNotSchedule"),
                    constraint(2, zone, "DoNotSchedule")
                ])),
                at: "/topologySpreadConstraints/0",
                says: "Duplicate value: \"{topology.kubernetes.io/zone, DoNotSchedule}\"",
                admitted: spread(json!([
                    constraint(1, zone, "DoNotSchedule"),
                    constraint(2, zone, "ScheduleAnyway")
                ])),
            },
            Case {
                source: "core validateMinDomains: \"can only use minDomains if whenUnsatisfiable=DoNotSchedule\"",
                refused: spread(json!([min_domains_anyway])),
                at: "/topologySpreadConstraints/0/minDomains",
                says: "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway",
                admitted: spread(json!([min_domains_two.clone()])),
            },
            Case {
                source: "core validateMinDomains: \"must be greater than zero\"",
                refused: spread(json!([min_domains_zero])),
                at: "/topologySpreadConstraints/0/minDomains",
                says: "Invalid value: 0: must be greater than zero",
                admitted: spread(json!([min_domains_two])),
            },
            Case {
                source: "core validateContainers: field.Duplicate of a container name",
                refused: containers(
                    json!([{"name": "web", "image": "a"}, {"name": "web", "image": "b"}]),
                ),
                at: "/containers/1/name",
                says: "Duplicate value: \"web\"",
                admitted: containers(
                    json!([{"name": "web", "image": "a"}, {"name": "sidecar", "image": "b"}]),
                ),
            },
            Case {
                source: "core validateContainers over init and regular containers alike",
                refused: json!({"initContainers": [{"name": "web", "image": "a"}]}),
                at: "/containers/0/name",
                says: "Duplicate value: \"web\"",
                admitted: json!({"initContainers": [{"name": "init", "image": "a"}]}),
            },
            Case {
                source: "core ValidateContainerResourceRequirements: \"must be less than or equal to cpu limit of 1\"",
                refused: containers(json!([{"name": "web", "image": "a",
                    "resources": {"requests": {"cpu": "1500m"}, "limits": {"cpu": "1"}}}])),
                at: "/containers/0/resources/requests",
                says: "Invalid value: \"1500m\": must be less than or equal to cpu limit of 1",
                admitted: containers(json!([{"name": "web", "image": "a",
                    "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}])),
            },
            Case {
                source: "core ValidateContainerResourceRequirements, memory: 1Gi is more than 1000Mi",
                refused: containers(json!([{"name": "web", "image": "a",
                    "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "1000Mi"}}}])),
                at: "/containers/0/resources/requests",
                says: "must be less than or equal to memory limit of 1000Mi",
                admitted: containers(json!([{"name": "web", "image": "a",
                    "resources": {"requests": {"memory": "1000Mi"}, "limits": {"memory": "1Gi"}}}])),
            },
            Case {
                source: "apps ValidatePodTemplateSpecForReplicaSet: restartPolicy NotSupported but Always",
                refused: json!({"restartPolicy": "Never"}),
                at: "/restartPolicy",
                says: "restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
                admitted: json!({"restartPolicy": "Always"}),
            },
        ]
    }

    /// Each rule refuses its fragment at the field, in the API server's
    /// words, and admits the control one change away.
    #[test]
    fn the_api_servers_pod_spec_rules_refuse_and_their_controls_pass() {
        for case in cases() {
            let refused = messages(&deployment(case.refused));
            let pointer = format!("{POD}{}", case.at);
            assert!(
                refused
                    .iter()
                    .any(|(at, message)| *at == pointer && message.contains(case.says)),
                "{}: expected `{}` at {pointer}, got {refused:?}",
                case.source,
                case.says
            );
            let admitted = messages(&deployment(case.admitted));
            assert!(
                admitted.is_empty(),
                "{} (control): {admitted:?}",
                case.source
            );
        }
    }

    /// A Job's pods may end: `restartPolicy: Never` is its norm, and the
    /// ReplicaSet-template rule must not reach it.
    #[test]
    fn a_jobs_template_may_restart_never() {
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "once", "namespace": "apps"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "a"}]}}}
        });
        assert_eq!(messages(&job), vec![]);
        let mut deployment = deployment(json!({"restartPolicy": "Never"}));
        assert_eq!(
            messages(&deployment).len(),
            1,
            "control: a Deployment's is refused"
        );
        deployment["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(messages(&deployment), vec![]);
    }
}
