//! Rows in the manner of upstream's
//! `plugin/pkg/admission/priority/admission_test.go` (`TestPodAdmission`)
//! and `pkg/scheduler/framework/plugins/queuesort/priority_sort_test.go`,
//! each paired with a control that flips its outcome.

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::json;

use super::*;

fn class(name: &str, value: i32, global_default: bool, policy: Option<&str>) -> PriorityClass {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
        "preemptionPolicy": policy,
    }))
    .expect("a PriorityClass")
}

fn spec(value: serde_json::Value) -> PodSpec {
    let mut v = json!({"containers": [{"name": "c"}]});
    v.as_object_mut()
        .unwrap()
        .extend(value.as_object().unwrap().clone());
    serde_json::from_value(v).expect("a pod spec")
}

fn classes(list: &[PriorityClass]) -> PriorityClasses {
    PriorityClasses::new(list).expect("valid classes")
}

/// One admission case: the classes, the pod spec, what admission computes.
struct Case {
    /// The upstream case (or doc paragraph) it transcribes.
    name: &'static str,
    classes: Vec<PriorityClass>,
    pod: serde_json::Value,
    want: Result<Priority, &'static str>,
}

fn p(value: i32) -> Priority {
    Priority {
        value,
        policy: PreemptionPolicy::PreemptLowerPriority,
    }
}

fn never(value: i32) -> Priority {
    Priority {
        value,
        policy: PreemptionPolicy::Never,
    }
}

#[test]
fn admission_resolves_priority_as_the_priority_plugin_does() {
    let cases = [
        // TestPodAdmission "Pod with priority class": the class's value.
        Case {
            name: "pod with priority class",
            classes: vec![class("high", 1000, false, None)],
            pod: json!({"priorityClassName": "high"}),
            want: Ok(p(1000)),
        },
        // Control: another class, another value.
        Case {
            name: "control: pod with the other class",
            classes: vec![
                class("high", 1000, false, None),
                class("low", 10, false, None),
            ],
            pod: json!({"priorityClassName": "low"}),
            want: Ok(p(10)),
        },
        // "pod without priority class, default class exists": the default.
        Case {
            name: "pod without priority class gets the global default",
            classes: vec![class("default", 50, true, None)],
            pod: json!({}),
            want: Ok(p(50)),
        },
        // Control: no class is globalDefault, so
        // DefaultPriorityWhenNoDefaultClassExists (0).
        Case {
            name: "control: no global default gives 0",
            classes: vec![class("default", 50, false, None)],
            pod: json!({}),
            want: Ok(p(0)),
        },
        // "multiple global defaults": the lowest value wins.
        Case {
            name: "of several global defaults, the lowest value",
            classes: vec![
                class("default-high", 100, true, None),
                class("default-low", 20, true, None),
            ],
            pod: json!({}),
            want: Ok(p(20)),
        },
        // Control: a named class is not overridden by the default.
        Case {
            name: "control: a named class ignores the defaults",
            classes: vec![
                class("default-high", 100, true, None),
                class("default-low", 20, true, None),
            ],
            pod: json!({"priorityClassName": "default-high"}),
            want: Ok(p(100)),
        },
        // "pod with a system priority class": every cluster has them.
        Case {
            name: "system-cluster-critical",
            classes: vec![],
            pod: json!({"priorityClassName": "system-cluster-critical"}),
            want: Ok(p(2_000_000_000)),
        },
        Case {
            name: "system-node-critical",
            classes: vec![],
            pod: json!({"priorityClassName": "system-node-critical"}),
            want: Ok(p(2_000_001_000)),
        },
        // "pod with non-existing priority class": refused.
        Case {
            name: "non-existing priority class",
            classes: vec![],
            pod: json!({"priorityClassName": "missing"}),
            want: Err("no PriorityClass with name missing was found"),
        },
        // "pod with preemption policy Never from its class".
        Case {
            name: "class with preemptionPolicy Never",
            classes: vec![class("batch", 100, false, Some("Never"))],
            pod: json!({"priorityClassName": "batch"}),
            want: Ok(never(100)),
        },
        // Control: the same class without the field preempts.
        Case {
            name: "control: class without preemptionPolicy",
            classes: vec![class("batch", 100, false, None)],
            pod: json!({"priorityClassName": "batch"}),
            want: Ok(p(100)),
        },
        // A Never global default gives its policy to pods naming no class
        // (the docs' "Non-preempting PriorityClass" as a default).
        Case {
            name: "a Never global default",
            classes: vec![class("batch", 5, true, Some("Never"))],
            pod: json!({}),
            want: Ok(never(5)),
        },
        // "pod with priority value in the spec that differs": refused.
        Case {
            name: "written priority that differs",
            classes: vec![class("high", 1000, false, None)],
            pod: json!({"priorityClassName": "high", "priority": 7}),
            want: Err(
                "the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name",
            ),
        },
        // Control: the same value written is accepted.
        Case {
            name: "control: written priority that agrees",
            classes: vec![class("high", 1000, false, None)],
            pod: json!({"priorityClassName": "high", "priority": 1000}),
            want: Ok(p(1000)),
        },
        // "pod with a preemptionPolicy that differs from its class".
        Case {
            name: "written preemptionPolicy that differs",
            classes: vec![class("batch", 100, false, Some("Never"))],
            pod: json!({"priorityClassName": "batch", "preemptionPolicy": "PreemptLowerPriority"}),
            want: Err(
                "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name",
            ),
        },
        Case {
            name: "control: written preemptionPolicy that agrees",
            classes: vec![class("batch", 100, false, Some("Never"))],
            pod: json!({"priorityClassName": "batch", "preemptionPolicy": "Never"}),
            want: Ok(never(100)),
        },
    ];
    for case in cases {
        let got = classes(&case.classes).resolve(&spec(case.pod));
        assert_eq!(got, case.want.map_err(str::to_owned), "{}", case.name);
    }
}

/// `scheduling/v1` types: preemptionPolicy is one of two words.
#[test]
fn an_unknown_preemption_policy_is_refused() {
    let err = PriorityClasses::new(&[class("odd", 1, false, Some("Sometimes"))]).unwrap_err();
    assert!(err.contains("`Sometimes`"), "{err}");
    assert!(PriorityClasses::new(&[class("odd", 1, false, Some("Never"))]).is_ok());
}

/// `DefaultPreemption.isPreemptionAllowed`: strictly lower priority only;
/// `PodEligibleToPreemptOthers`: never with `preemptionPolicy: Never`.
#[test]
fn only_strictly_lower_priority_pods_are_preemptible() {
    assert!(p(10).may_preempt(9));
    assert!(!p(10).may_preempt(10), "control: equal priority");
    assert!(!never(10).may_preempt(9), "control: Never");
}

/// `queuesort/priority_sort_test.go`: "p1.priority greater than
/// p2.priority" pops first; "p1.priority equal to p2.priority, p1 added
/// earlier" pops first.
#[test]
fn the_queue_pops_higher_priority_first_then_the_older_pod() {
    assert!(
        queue_key(100, 20) < queue_key(10, 10),
        "higher priority first"
    );
    assert!(
        queue_key(10, 10) < queue_key(10, 20),
        "control: equal, older first"
    );
}
