//! Pod priority and preemption: the Priority admission plugin's rows
//! (`admission_test.go` `TestPodAdmission`), the scheduling queue's order
//! (`queuesort/priority_sort_test.go`), and DefaultPreemption's victim
//! choice (`default_preemption_test.go` `TestSelectNodesForPreemption`,
//! `TestDryRunPreemption`'s PDB cases). A node of the victim rows is a CPU
//! capacity; a pod fits when the CPU left after the removals takes it.

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use serde_json::{Value, json};

use super::{Behaviour, Pair, Source, from_json, pair, row};
use drillbench_policy::preemption::{Resident, select_victims};
use drillbench_policy::priority::{PreemptionPolicy, Priority, PriorityClasses, queue_key};

fn class(name: &str, value: i32, global_default: bool, policy: Option<&str>) -> PriorityClass {
    from_json(json!({
        "metadata": {"name": name},
        "value": value,
        "globalDefault": global_default,
        "preemptionPolicy": policy,
    }))
}

/// What admission computes for a pod spec (its fields besides one
/// container) in a cluster with these classes.
fn admit(classes: &[PriorityClass], pod: Value) -> Result<Priority, String> {
    let mut spec = json!({"containers": [{"name": "c"}]});
    if let (Some(into), Value::Object(extra)) = (spec.as_object_mut(), pod) {
        into.extend(extra);
    }
    let spec: PodSpec = from_json(spec);
    PriorityClasses::new(classes)?.resolve(&spec)
}

fn p(value: i32) -> Result<Priority, String> {
    Ok(Priority {
        value,
        policy: PreemptionPolicy::PreemptLowerPriority,
    })
}

fn never(value: i32) -> Result<Priority, String> {
    Ok(Priority {
        value,
        policy: PreemptionPolicy::Never,
    })
}

const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;

/// A resident: (name, priority, cpu, started, budgets).
type Row = (&'static str, i32, i64, u64, &'static [usize]);

/// The victims on a node of `capacity` CPU for a pod of `priority` (and
/// `policy`) asking for `cpu`, with each budget's allowance; how many
/// break a budget.
fn victims(
    policy: PreemptionPolicy,
    cpu: i64,
    capacity: i64,
    rows: &[Row],
    allowed: &[i32],
) -> Option<(Vec<&'static str>, usize)> {
    let residents: Vec<Resident<&'static str>> = rows
        .iter()
        .map(|&(pod, priority, _, started_at, budgets)| Resident {
            pod,
            priority,
            started_at,
            budgets: budgets.to_vec(),
        })
        .collect();
    let preemptor = Priority {
        value: HIGH,
        policy,
    };
    select_victims(preemptor, &residents, allowed, |removed| {
        let used: i64 = rows
            .iter()
            .zip(removed)
            .filter(|(_, r)| !**r)
            .map(|(row, _)| row.2)
            .sum();
        used + cpu <= capacity
    })
    .map(|v| (v.pods, v.pdb_violations))
}

fn high(
    cpu: i64,
    capacity: i64,
    rows: &[Row],
    allowed: &[i32],
) -> Option<(Vec<&'static str>, usize)> {
    victims(
        PreemptionPolicy::PreemptLowerPriority,
        cpu,
        capacity,
        rows,
        allowed,
    )
}

pub(super) fn pairs() -> Vec<Pair> {
    let admission = |case, control| {
        pair(
            Source::PriorityAdmission,
            Behaviour::PriorityClass,
            case,
            control,
        )
    };
    let preemption = |case, control| pair(Source::Preemption, Behaviour::Preemption, case, control);
    let high_class = class("high", 1000, false, None);
    let batch_never = class("batch", 100, false, Some("Never"));
    let defaults = [
        class("default-high", 100, true, None),
        class("default-low", 20, true, None),
    ];
    vec![
        admission(
            row("pod with priority class", admit(std::slice::from_ref(&high_class), json!({"priorityClassName": "high"})), p(1000)),
            row("control: pod with the other class", admit(&[high_class.clone(), class("low", 10, false, None)], json!({"priorityClassName": "low"})), p(10)),
        ),
        admission(
            row("pod without priority class gets the globalDefault class's value", admit(&[class("default", 50, true, None)], json!({})), p(50)),
            row("control: no class is globalDefault, so 0", admit(&[class("default", 50, false, None)], json!({})), p(0)),
        ),
        admission(
            row("of several global defaults, the lowest value", admit(&defaults, json!({})), p(20)),
            row("control: a named class ignores the defaults", admit(&defaults, json!({"priorityClassName": "default-high"})), p(100)),
        ),
        admission(
            row("system-cluster-critical exists in every cluster", admit(&[], json!({"priorityClassName": "system-cluster-critical"})), p(2_000_000_000)),
            row("system-node-critical is above it", admit(&[], json!({"priorityClassName": "system-node-critical"})), p(2_000_001_000)),
        ),
        admission(
            row("pod with non-existing priority class is refused", admit(&[], json!({"priorityClassName": "missing"})), Err::<Priority, _>("no PriorityClass with name missing was found".to_owned())),
            row("control: the class exists", admit(&[class("missing", 3, false, None)], json!({"priorityClassName": "missing"})), p(3)),
        ),
        admission(
            row("class with preemptionPolicy Never", admit(std::slice::from_ref(&batch_never), json!({"priorityClassName": "batch"})), never(100)),
            row("control: class without preemptionPolicy", admit(&[class("batch", 100, false, None)], json!({"priorityClassName": "batch"})), p(100)),
        ),
        admission(
            row("a Never global default gives its policy to pods naming no class", admit(&[class("batch", 5, true, Some("Never"))], json!({})), never(5)),
            row("control: a globalDefault class without the policy", admit(&[class("batch", 5, true, None)], json!({})), p(5)),
        ),
        admission(
            row(
                "written priority that differs is refused",
                admit(std::slice::from_ref(&high_class), json!({"priorityClassName": "high", "priority": 7})),
                Err::<Priority, _>("the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name".to_owned()),
            ),
            row("control: written priority that agrees", admit(std::slice::from_ref(&high_class), json!({"priorityClassName": "high", "priority": 1000})), p(1000)),
        ),
        admission(
            row(
                "written preemptionPolicy that differs is refused",
                admit(std::slice::from_ref(&batch_never), json!({"priorityClassName": "batch", "preemptionPolicy": "PreemptLowerPriority"})),
                Err::<Priority, _>("the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name".to_owned()),
            ),
            row("control: written preemptionPolicy that agrees", admit(std::slice::from_ref(&batch_never), json!({"priorityClassName": "batch", "preemptionPolicy": "Never"})), never(100)),
        ),
        pair(
            Source::PriorityAdmission,
            Behaviour::ApiValidation,
            row("an unknown preemptionPolicy is refused", admit(&[class("odd", 1, false, Some("Sometimes"))], json!({})).is_err(), true),
            row("control: preemptionPolicy Never", admit(&[class("odd", 1, false, Some("Never"))], json!({})).is_err(), false),
        ),
        admission(
            row("p1.priority greater than p2.priority pops first (queue order)", queue_key(100, 20) < queue_key(10, 10), true),
            row("p1.priority equal to p2.priority, p1 added later pops second", queue_key(10, 20) < queue_key(10, 10), false),
        ),
        preemption(
            row(
                "a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
                high(2, 6, &[("a", HIGH, 3, 0, &[]), ("b", HIGH + 1, 3, 0, &[])], &[]),
                None::<(Vec<&str>, usize)>,
            ),
            row(
                "control: one of them lower priority goes",
                high(2, 6, &[("a", MID, 3, 0, &[]), ("b", HIGH + 1, 3, 0, &[])], &[]),
                Some((vec!["a"], 0)),
            ),
        ),
        preemption(
            row(
                "not eligible due to preemptionPolicy=Never",
                victims(PreemptionPolicy::Never, 2, 4, &[("a", LOW, 3, 0, &[])], &[]),
                None::<(Vec<&str>, usize)>,
            ),
            row(
                "control: PreemptLowerPriority preempts the low pod",
                high(2, 4, &[("a", LOW, 3, 0, &[])], &[]),
                Some((vec!["a"], 0)),
            ),
        ),
        preemption(
            row(
                "a node where removing every lower priority pod is not enough is no candidate",
                high(3, 5, &[("a", LOW, 2, 0, &[]), ("b", HIGH, 3, 0, &[])], &[]),
                None::<(Vec<&str>, usize)>,
            ),
            row(
                "a pod that would fit on the node after removing all lower priority pods",
                high(3, 6, &[("a", LOW, 2, 0, &[]), ("b", HIGH, 3, 0, &[])], &[]),
                Some((vec!["a"], 0)),
            ),
        ),
        preemption(
            row(
                "lower priority pods are reprieved in order of importance: the mid pod stays",
                high(2, 4, &[("low", LOW, 2, 0, &[]), ("mid", MID, 2, 0, &[])], &[]),
                Some((vec!["low"], 0)),
            ),
            row(
                "control: the priorities swapped, the other goes",
                high(2, 4, &[("low", MID, 2, 0, &[]), ("mid", LOW, 2, 0, &[])], &[]),
                Some((vec!["mid"], 0)),
            ),
        ),
        preemption(
            row(
                "of equal priority the pod started later is less important and goes",
                high(2, 4, &[("old", MID, 2, 10, &[]), ("new", MID, 2, 20, &[])], &[]),
                Some((vec!["new"], 0)),
            ),
            row(
                "control: the start times swapped",
                high(2, 4, &[("old", MID, 2, 30, &[]), ("new", MID, 2, 20, &[])], &[]),
                Some((vec!["old"], 0)),
            ),
        ),
        preemption(
            row(
                "preemption to resolve minimal victims: the latest started goes",
                high(1, 3, &[("a", LOW, 1, 0, &[]), ("b", LOW, 1, 1, &[]), ("c", LOW, 1, 2, &[])], &[]),
                Some((vec!["c"], 0)),
            ),
            row(
                "control: a larger pod needs two",
                high(2, 3, &[("a", LOW, 1, 0, &[]), ("b", LOW, 1, 1, &[]), ("c", LOW, 1, 2, &[])], &[]),
                Some((vec!["b", "c"], 0)),
            ),
        ),
        preemption(
            row(
                "preemption with violation of same pdb: the budget-breaking pod is reprieved first",
                high(2, 4, &[("a", LOW, 2, 0, &[0]), ("b", LOW, 2, 5, &[])], &[0]),
                Some((vec!["b"], 0)),
            ),
            row(
                "control: the budget protects the other pod, the victim flips",
                high(2, 4, &[("a", LOW, 2, 0, &[]), ("b", LOW, 2, 5, &[0])], &[0]),
                Some((vec!["a"], 0)),
            ),
        ),
        preemption(
            row(
                "preemption with violation of the pdb: both must go, one over the allowance is counted",
                high(4, 4, &[("a", LOW, 2, 0, &[0]), ("b", LOW, 2, 5, &[0])], &[1]).map(|(v, n)| (v.len(), n)),
                Some((2, 1)),
            ),
            row(
                "control: an allowance of two breaks nothing",
                high(4, 4, &[("a", LOW, 2, 0, &[0]), ("b", LOW, 2, 5, &[0])], &[2]).map(|(v, n)| (v.len(), n)),
                Some((2, 0)),
            ),
        ),
    ]
}
