//! Taints and tolerations: the matching rule (`ToleratesTaint`), the
//! scheduler's TaintToleration and NodeUnschedulable filters, the
//! taint-eviction controller's NoExecute verdict, and the tolerations the
//! DaemonSet controller and the DefaultTolerationSeconds admission plugin
//! add.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use super::{Behaviour, Pair, Source, pair, row};
use drillbench_model::k8s::taints::{
    NoExecuteVerdict, TAINT_NODE_UNREACHABLE, admitted_tolerations, cordon_blocks,
    no_execute_verdict, scheduling_blocker, tolerates,
};
use drillbench_model::test_support::{self, toleration as tol};

/// A taint, an empty value none.
fn taint(key: &str, value: &str, effect: &str) -> Taint {
    test_support::taint(key, (!value.is_empty()).then_some(value), effect)
}

/// The NoExecute verdict, with the taint named by its key.
fn evicts(taints: &[Taint], tolerations: &[Toleration]) -> String {
    match no_execute_verdict(taints, tolerations) {
        NoExecuteVerdict::Stay => "stay".to_owned(),
        NoExecuteVerdict::EvictAfter { seconds } => format!("evict after {seconds}s"),
        NoExecuteVerdict::EvictNow { untolerated } => {
            format!("evict now ({:?})", untolerated.map(|t| t.key.as_str()))
        }
    }
}

/// The NoExecute verdict on an unreachable node for a Deployment's pod
/// that tolerates `unreachable` itself with this effect and time.
fn own_unreachable(effect: &str, seconds: Option<i64>) -> String {
    let own = [tol(TAINT_NODE_UNREACHABLE, "Exists", "", effect, seconds)];
    evicts(
        &[taint(TAINT_NODE_UNREACHABLE, "", "NoExecute")],
        &admitted_tolerations(&own, false),
    )
}

/// The first taint the scheduler's filter refuses the pod for.
fn blocks(taints: &[Taint], tolerations: &[Toleration]) -> Option<String> {
    scheduling_blocker(taints, tolerations).map(|t| t.key.clone())
}

pub(super) fn pairs() -> Vec<Pair> {
    let matching = |case, control| {
        pair(
            Source::TaintToleration,
            Behaviour::TaintToleration,
            case,
            control,
        )
    };
    let eviction = |case, control| {
        pair(
            Source::TaintEviction,
            Behaviour::NoExecuteTaints,
            case,
            control,
        )
    };
    let daemon = |case, control| {
        pair(
            Source::DaemonSetTolerations,
            Behaviour::DaemonSetTolerations,
            case,
            control,
        )
    };
    let foo_bar = taint("foo", "bar", "NoSchedule");
    let unreachable = [taint(TAINT_NODE_UNREACHABLE, "", "NoExecute")];
    let dedicated = [taint("dedicated", "db", "NoExecute")];
    // `ToleratesTaint` rows, two by two: a row and its control, each
    // (name, toleration as key/operator/value/effect, taint as
    // key/value/effect, tolerated).
    type Tolerates = (&'static str, [&'static str; 4], [&'static str; 3], bool);
    let tolerates_rows: [(Tolerates, Tolerates); 6] = [
        (
            (
                "toleration and taint have the same key and effect, and operator is Exists, and taint has no value, expect tolerated",
                ["foo", "Exists", "", "NoSchedule"],
                ["foo", "", "NoSchedule"],
                true,
            ),
            (
                "control: Exists for another key",
                ["bar", "Exists", "", "NoSchedule"],
                ["foo", "", "NoSchedule"],
                false,
            ),
        ),
        (
            (
                "toleration and taint have the same key and effect, and operator is Exists, and taint has some value, expect tolerated",
                ["foo", "Exists", "", "NoSchedule"],
                ["foo", "bar", "NoSchedule"],
                true,
            ),
            (
                "control: Exists with effect NoExecute on a NoSchedule taint",
                ["foo", "Exists", "", "NoExecute"],
                ["foo", "bar", "NoSchedule"],
                false,
            ),
        ),
        (
            (
                "toleration and taint have the same effect, toleration has empty key and operator is Exists, means match all taints, expect tolerated",
                ["", "Exists", "", "NoSchedule"],
                ["foo", "bar", "NoSchedule"],
                true,
            ),
            (
                "control: an empty key with operator Equal still compares the value",
                ["", "Equal", "baz", "NoSchedule"],
                ["foo", "bar", "NoSchedule"],
                false,
            ),
        ),
        (
            (
                "toleration and taint have the same key, effect and value, and operator is Equal, expect tolerated",
                ["foo", "Equal", "bar", "NoSchedule"],
                ["foo", "bar", "NoSchedule"],
                true,
            ),
            (
                "toleration and taint have the same key and effect, but different values, and operator is Equal, expect not tolerated",
                ["foo", "Equal", "value1", "NoSchedule"],
                ["foo", "value2", "NoSchedule"],
                false,
            ),
        ),
        (
            (
                "an empty toleration effect matches every effect",
                ["foo", "Equal", "bar", ""],
                ["foo", "bar", "NoExecute"],
                true,
            ),
            (
                "toleration and taint have the same key and value, but different effects, and operator is Equal, expect not tolerated",
                ["foo", "Equal", "bar", "NoSchedule"],
                ["foo", "bar", "NoExecute"],
                false,
            ),
        ),
        (
            (
                "an operator left empty is Equal: matches the same value",
                ["foo", "", "bar", "NoSchedule"],
                ["foo", "bar", "NoSchedule"],
                true,
            ),
            (
                "control: an empty operator with no value on a valued taint",
                ["foo", "", "", "NoSchedule"],
                ["foo", "bar", "NoSchedule"],
                false,
            ),
        ),
    ];
    let judged = |(name, [key, op, value, effect], [t_key, t_value, t_effect], want): Tolerates| {
        row(
            name,
            tolerates(
                &tol(key, op, value, effect, None),
                &taint(t_key, t_value, t_effect),
            ),
            want,
        )
    };
    let mut pairs: Vec<Pair> = tolerates_rows
        .into_iter()
        .map(|(case, control)| matching(judged(case), judged(control)))
        .collect();
    pairs.extend([
        matching(
            row(
                "TaintToleration filter: a NoSchedule taint the pod does not tolerate refuses the node",
                blocks(std::slice::from_ref(&foo_bar), &[]),
                Some("foo"),
            ),
            row(
                "TaintToleration filter: a PreferNoSchedule taint only scores",
                blocks(&[taint("foo", "bar", "PreferNoSchedule")], &[]),
                None::<&str>,
            ),
        ),
        matching(
            row(
                "TaintToleration filter: an untolerated NoExecute taint refuses the node",
                blocks(&dedicated, &[tol("dedicated", "Equal", "web", "", None)]),
                Some("dedicated"),
            ),
            row(
                "TaintToleration filter: the tolerated NoExecute taint lets the pod on",
                blocks(&dedicated, &[tol("dedicated", "Equal", "db", "", None)]),
                None::<&str>,
            ),
        ),
        matching(
            row(
                "NodeUnschedulable filter: a cordoned node refuses a pod without the unschedulable toleration",
                cordon_blocks(true, &[]),
                true,
            ),
            row(
                "NodeUnschedulable filter: a pod tolerating node.kubernetes.io/unschedulable:NoSchedule goes on",
                cordon_blocks(
                    true,
                    &[tol(
                        "node.kubernetes.io/unschedulable",
                        "Exists",
                        "",
                        "NoSchedule",
                        None,
                    )],
                ),
                false,
            ),
        ),
        eviction(
            row(
                "NoExecute of any key: a pod not tolerating the taint is evicted at once",
                evicts(&dedicated, &[]),
                "evict now (Some(\"dedicated\"))",
            ),
            row(
                "NoExecute: a pod tolerating the taint without tolerationSeconds stays forever",
                evicts(
                    &dedicated,
                    &[tol("dedicated", "Exists", "", "NoExecute", None)],
                ),
                "stay",
            ),
        ),
        eviction(
            row(
                "NoExecute: a pod tolerating the taint for 60 s is evicted after 60 s",
                evicts(
                    &dedicated,
                    &[tol("dedicated", "Exists", "", "NoExecute", Some(60))],
                ),
                "evict after 60s",
            ),
            row(
                "control: a NoSchedule taint of the same key evicts nobody",
                evicts(
                    &[taint("dedicated", "db", "NoSchedule")],
                    &[tol("dedicated", "Exists", "", "NoExecute", Some(60))],
                ),
                "stay",
            ),
        ),
        eviction(
            row(
                "NoExecute: of two tolerated taints the shorter tolerationSeconds wins",
                evicts(
                    &[taint("a", "", "NoExecute"), taint("b", "", "NoExecute")],
                    &[
                        tol("a", "Exists", "", "NoExecute", Some(600)),
                        tol("b", "Exists", "", "NoExecute", Some(30)),
                    ],
                ),
                "evict after 30s",
            ),
            row(
                "control: the second taint untolerated evicts at once",
                evicts(
                    &[taint("a", "", "NoExecute"), taint("b", "", "NoExecute")],
                    &[tol("a", "Exists", "", "NoExecute", Some(600))],
                ),
                "evict now (Some(\"b\"))",
            ),
        ),
        eviction(
            row(
                "NoExecute: tolerationSeconds zero or negative evicts at once",
                evicts(
                    &dedicated,
                    &[tol("dedicated", "Exists", "", "NoExecute", Some(0))],
                ),
                "evict now (None)",
            ),
            row(
                "control: tolerationSeconds 1 waits a second",
                evicts(
                    &dedicated,
                    &[tol("dedicated", "Exists", "", "NoExecute", Some(1))],
                ),
                "evict after 1s",
            ),
        ),
        eviction(
            row(
                "the first matching toleration is the one used: a narrow one with 30 s before a broad one without",
                evicts(
                    &dedicated,
                    &[
                        tol("dedicated", "Equal", "db", "NoExecute", Some(30)),
                        tol("", "Exists", "", "", None),
                    ],
                ),
                "evict after 30s",
            ),
            row(
                "control: the broad one first keeps the pod",
                evicts(
                    &dedicated,
                    &[
                        tol("", "Exists", "", "", None),
                        tol("dedicated", "Equal", "db", "NoExecute", Some(30)),
                    ],
                ),
                "stay",
            ),
        ),
        daemon(
            row(
                "DefaultTolerationSeconds: a Deployment's pod on an unreachable node is evicted after 300 s",
                evicts(&unreachable, &admitted_tolerations(&[], false)),
                "evict after 300s",
            ),
            row(
                "DaemonSet pods get unreachable:NoExecute without tolerationSeconds and are never evicted",
                evicts(&unreachable, &admitted_tolerations(&[], true)),
                "stay",
            ),
        ),
        daemon(
            row(
                "DefaultTolerationSeconds is not added when the pod tolerates unreachable itself (60 s)",
                own_unreachable("NoExecute", Some(60)),
                "evict after 60s",
            ),
            row(
                "control: a pod tolerating unreachable only for NoSchedule still gets the 300 s default",
                own_unreachable("NoSchedule", None),
                "evict after 300s",
            ),
        ),
        daemon(
            row(
                "DaemonSet pods tolerate node.kubernetes.io/unschedulable:NoSchedule (a cordoned node)",
                cordon_blocks(true, &admitted_tolerations(&[], true)),
                false,
            ),
            row(
                "control: a Deployment's pod does not",
                cordon_blocks(true, &admitted_tolerations(&[], false)),
                true,
            ),
        ),
    ]);
    pairs
}
