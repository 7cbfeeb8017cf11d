//! Taints and tolerations: the scheduler's TaintToleration filter and score,
//! `NoExecute` eviction timing, and the tolerations the apiserver adds.
//!
//! Matching follows `Toleration.ToleratesTaint` (k8s.io/api `core/v1`):
//!
//! 1. a toleration with an effect matches only taints of that effect; an
//!    empty effect matches every effect;
//! 2. a toleration with a key matches only taints of that key; an empty key
//!    matches every key (validation allows it only with `Exists`, which then
//!    tolerates everything);
//! 3. operator `Equal` (also the default, an empty operator) needs the values
//!    to be equal — an absent value is the empty string; `Exists` ignores the
//!    value; `Lt`/`Gt` (`TaintTolerationComparisonOperators`, new in the 1.35
//!    API and behind a feature gate, which we model as enabled) compare the
//!    values as integers in canonical form, and tolerate when the *taint's*
//!    value is less than / greater than the toleration's; a value that is not
//!    such an integer tolerates nothing; any other operator tolerates nothing.
//!
//! Which taints matter where:
//!
//! - the scheduler filter refuses a node with any `NoSchedule` or `NoExecute`
//!   taint the pod does not tolerate ([`scheduling_blocker`]);
//! - the scheduler score counts untolerated `PreferNoSchedule` taints
//!   ([`intolerable_prefer_no_schedule`]);
//! - the taint-eviction controller evicts a pod from a node with a `NoExecute`
//!   taint it does not tolerate at once, and otherwise after the smallest
//!   `tolerationSeconds` of the tolerations it used ([`no_execute_verdict`]).
//!
//! `tolerates` never fails, as at run time; [`validate_tolerations`] applies
//! the apiserver's validation, for the simulator to run once when it loads a
//! manifest.

use std::fmt;

use k8s_openapi::api::core::v1::{Taint, Toleration};

/// The node controller's taint for a node whose Ready condition is False.
pub const TAINT_NODE_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The node controller's taint for a node whose Ready condition is Unknown
/// (heartbeats lost).
pub const TAINT_NODE_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// The taint of a cordoned node (`spec.unschedulable`).
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
/// The taint of a node under memory pressure.
pub const TAINT_NODE_MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
/// The taint of a node under disk pressure.
pub const TAINT_NODE_DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
/// The taint of a node under PID pressure.
pub const TAINT_NODE_PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
/// The taint of a node whose network is unavailable.
pub const TAINT_NODE_NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";
/// The taint an operator sets on a node known to be shut down, so that its
/// pods and volumes are released (non-graceful node shutdown).
pub const TAINT_NODE_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";
/// The taint a node carries until its cloud provider has initialised it.
pub const TAINT_NODE_UNINITIALIZED: &str = "node.cloudprovider.kubernetes.io/uninitialized";
/// The cluster autoscaler's `NoSchedule` taint on a node it is removing; its
/// value is the Unix time the removal started.
pub const TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER: &str = "ToBeDeletedByClusterAutoscaler";
/// The cluster autoscaler's `PreferNoSchedule` taint on a node it considers
/// unneeded.
pub const TAINT_DELETION_CANDIDATE_OF_CLUSTER_AUTOSCALER: &str =
    "DeletionCandidateOfClusterAutoscaler";
/// How long the DefaultTolerationSeconds admission plugin lets a pod stay on
/// a not-ready or unreachable node (its `--default-*-toleration-seconds`
/// defaults).
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// A taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TaintEffect {
    /// New pods that do not tolerate the taint are not scheduled onto the node.
    NoSchedule,
    /// The scheduler avoids the node for pods that do not tolerate the taint.
    PreferNoSchedule,
    /// Pods that do not tolerate the taint are evicted, and none are scheduled.
    NoExecute,
}

impl TaintEffect {
    /// The effect as written in a manifest, or `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "NoSchedule" => TaintEffect::NoSchedule,
            "PreferNoSchedule" => TaintEffect::PreferNoSchedule,
            "NoExecute" => TaintEffect::NoExecute,
            _ => return None,
        })
    }

    /// The effect as written in a manifest.
    pub const fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

impl fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `content.IsDecimalInteger` then `ParseInt`: `0`, or an optional `-` and
/// digits without a leading zero, within i64. Stricter than Go's ParseInt so
/// that `0950` is not read as a number by one reader and as text by another.
fn canonical_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let canonical = s == "0"
        || (!digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && !digits.starts_with('0'));
    if canonical { s.parse().ok() } else { None }
}

/// Whether `toleration` tolerates `taint` (see the module documentation).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    tolerates_parts(
        toleration,
        &taint.key,
        taint.value.as_deref().unwrap_or_default(),
        &taint.effect,
    )
}

/// [`tolerates`] for a taint given by its parts, so that a check against a
/// well-known taint needs no `Taint` value.
fn tolerates_parts(toleration: &Toleration, key: &str, taint_value: &str, effect: &str) -> bool {
    let wanted_effect = toleration.effect.as_deref().unwrap_or_default();
    if !wanted_effect.is_empty() && wanted_effect != effect {
        return false;
    }
    let wanted_key = toleration.key.as_deref().unwrap_or_default();
    if !wanted_key.is_empty() && wanted_key != key {
        return false;
    }
    let toleration_value = toleration.value.as_deref().unwrap_or_default();
    match toleration.operator.as_deref().unwrap_or_default() {
        "" | "Equal" => toleration_value == taint_value,
        "Exists" => true,
        op @ ("Lt" | "Gt") => match (canonical_int(toleration_value), canonical_int(taint_value)) {
            (Some(bound), Some(value)) if op == "Lt" => value < bound,
            (Some(bound), Some(value)) => value > bound,
            _ => false,
        },
        _ => false,
    }
}

/// Whether any of `tolerations` tolerates `taint`.
pub fn tolerated_by_any(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// The first taint of the node, in node order, with an effect that `blocks`
/// and that none of the tolerations tolerates.
pub fn first_untolerated<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
    blocks: impl Fn(&str) -> bool,
) -> Option<&'a Taint> {
    taints
        .iter()
        .find(|taint| blocks(&taint.effect) && !tolerated_by_any(tolerations, taint))
}

/// The scheduler's TaintToleration filter: the first `NoSchedule` or
/// `NoExecute` taint the pod does not tolerate, which makes the node
/// unschedulable for it ("node(s) had untolerated taint {key: value}").
/// `None` means the node passes.
pub fn scheduling_blocker<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
) -> Option<&'a Taint> {
    first_untolerated(taints, tolerations, |effect| {
        effect == "NoSchedule" || effect == "NoExecute"
    })
}

/// The scheduler's NodeUnschedulable filter: a cordoned node
/// (`spec.unschedulable`) refuses pods that do not tolerate the
/// `node.kubernetes.io/unschedulable:NoSchedule` taint, whether or not the
/// node controller has added that taint yet.
pub fn cordon_blocks(node_unschedulable: bool, tolerations: &[Toleration]) -> bool {
    node_unschedulable
        && !tolerations
            .iter()
            .any(|t| tolerates_parts(t, TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule"))
}

/// The TaintToleration score's raw input: how many `PreferNoSchedule` taints
/// the pod does not tolerate (fewer is better). As upstream, only tolerations
/// whose effect is empty or `PreferNoSchedule` count here.
pub fn intolerable_prefer_no_schedule(taints: &[Taint], tolerations: &[Toleration]) -> usize {
    let relevant = |t: &&Toleration| {
        matches!(
            t.effect.as_deref().unwrap_or_default(),
            "" | "PreferNoSchedule"
        )
    };
    taints
        .iter()
        .filter(|taint| taint.effect == "PreferNoSchedule")
        .filter(|taint| {
            !tolerations
                .iter()
                .filter(relevant)
                .any(|t| tolerates(t, taint))
        })
        .count()
}

/// What the taint-eviction controller does with a pod on a node, given the
/// node's taints now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum NoExecuteVerdict<'a> {
    /// No `NoExecute` taint, or every one tolerated without a time limit.
    Stay,
    /// Every `NoExecute` taint is tolerated, the tightest for this long after
    /// the controller saw the taints (upstream schedules the eviction when it
    /// first processes the taint, and keeps an earlier schedule if one exists).
    EvictAfter {
        /// Seconds, always positive.
        seconds: i64,
    },
    /// Evict at once.
    EvictNow {
        /// The first `NoExecute` taint no toleration tolerates; `None` when all
        /// are tolerated but a used toleration has `tolerationSeconds` ≤ 0.
        untolerated: Option<&'a Taint>,
    },
}

impl fmt::Display for NoExecuteVerdict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoExecuteVerdict::Stay => f.write_str("no NoExecute taint limits the pod's stay"),
            NoExecuteVerdict::EvictAfter { seconds } => {
                write!(f, "evict after {seconds}s (tolerationSeconds)")
            }
            NoExecuteVerdict::EvictNow {
                untolerated: Some(taint),
            } => write!(
                f,
                "evict now: NoExecute taint `{}` is not tolerated",
                taint.key
            ),
            NoExecuteVerdict::EvictNow { untolerated: None } => {
                f.write_str("evict now: a matching toleration has tolerationSeconds <= 0")
            }
        }
    }
}

/// The taint-eviction controller's decision (`processPodOnNode`).
///
/// For each `NoExecute` taint, in node order, the *first* toleration that
/// tolerates it is the one used (`GetMatchingTolerations` stops at the first
/// match), so a broad toleration listed after a narrow one with
/// `tolerationSeconds` does not extend the narrow one. The pod may stay for
/// the smallest `tolerationSeconds` among the used tolerations; none set means
/// forever, and zero or negative means evict at once.
pub fn no_execute_verdict<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
) -> NoExecuteVerdict<'a> {
    let no_execute = || taints.iter().filter(|t| t.effect == "NoExecute");
    let used = |taint: &Taint| tolerations.iter().find(|t| tolerates(t, taint));
    if let Some(taint) = no_execute().find(|taint| used(taint).is_none()) {
        return NoExecuteVerdict::EvictNow {
            untolerated: Some(taint),
        };
    }
    let mut shortest: Option<i64> = None;
    for seconds in no_execute().filter_map(|taint| used(taint).and_then(|t| t.toleration_seconds)) {
        if seconds <= 0 {
            return NoExecuteVerdict::EvictNow { untolerated: None };
        }
        shortest = Some(shortest.map_or(seconds, |s| s.min(seconds)));
    }
    match shortest {
        Some(seconds) => NoExecuteVerdict::EvictAfter { seconds },
        None => NoExecuteVerdict::Stay,
    }
}

fn no_execute_toleration(key: &str) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: Some("NoExecute".to_owned()),
        toleration_seconds: Some(DEFAULT_TOLERATION_SECONDS),
        value: None,
    }
}

/// The two tolerations the DefaultTolerationSeconds admission plugin adds:
/// `not-ready` and `unreachable`, `Exists`, `NoExecute`, 300 s. They are why a
/// pod on a lost node is evicted five minutes after the node is tainted.
pub fn default_tolerations() -> [Toleration; 2] {
    [
        no_execute_toleration(TAINT_NODE_NOT_READY),
        no_execute_toleration(TAINT_NODE_UNREACHABLE),
    ]
}

/// Applies the DefaultTolerationSeconds admission plugin to a pod's
/// tolerations: each default is appended unless some toleration already has
/// that key (or an empty key) and effect `NoExecute` (or an empty effect). The
/// plugin looks at key and effect only, not at operator or value.
pub fn add_default_tolerations(tolerations: &mut Vec<Toleration>) {
    for default in default_tolerations() {
        let covered = tolerations.iter().any(|t| {
            let key = t.key.as_deref().unwrap_or_default();
            let effect = t.effect.as_deref().unwrap_or_default();
            (key.is_empty() || Some(key) == default.key.as_deref())
                && (effect.is_empty() || effect == "NoExecute")
        });
        if !covered {
            tolerations.push(default);
        }
    }
}

/// A toleration the apiserver's validation would refuse; `index` is its
/// position in `tolerations`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TolerationError {
    /// An empty key with an operator other than `Exists`.
    #[error(
        "tolerations[{index}]: operator must be Exists when the key is empty (which means match all keys and values)"
    )]
    EmptyKeyNeedsExists {
        /// The toleration's index.
        index: usize,
    },
    /// `Exists` with a value.
    #[error("tolerations[{index}]: value must be empty when the operator is Exists")]
    ExistsWithValue {
        /// The toleration's index.
        index: usize,
    },
    /// `Lt`/`Gt` with a value that is not an integer in canonical form.
    #[error(
        "tolerations[{index}]: `{operator}` needs an integer value without leading zeros, not `{value}`"
    )]
    NotAnInteger {
        /// The toleration's index.
        index: usize,
        /// `Lt` or `Gt`.
        operator: String,
        /// The value as written.
        value: String,
    },
    /// An operator other than Equal, Exists, Lt, Gt.
    #[error(
        "tolerations[{index}]: unknown operator `{operator}`; expected Equal, Exists, Lt or Gt"
    )]
    UnknownOperator {
        /// The toleration's index.
        index: usize,
        /// The operator as written.
        operator: String,
    },
    /// An effect other than NoSchedule, PreferNoSchedule, NoExecute.
    #[error(
        "tolerations[{index}]: unknown effect `{effect}`; expected NoSchedule, PreferNoSchedule or NoExecute"
    )]
    UnknownEffect {
        /// The toleration's index.
        index: usize,
        /// The effect as written.
        effect: String,
    },
    /// `tolerationSeconds` on a toleration whose effect is not `NoExecute`.
    #[error("tolerations[{index}]: effect must be NoExecute when tolerationSeconds is set")]
    SecondsWithoutNoExecute {
        /// The toleration's index.
        index: usize,
    },
}

/// The apiserver's checks on a pod's tolerations (`ValidateTolerations`),
/// minus label-syntax checks of keys and values.
pub fn validate_tolerations(tolerations: &[Toleration]) -> Result<(), TolerationError> {
    for (index, t) in tolerations.iter().enumerate() {
        let operator = t.operator.as_deref().unwrap_or_default();
        let value = t.value.as_deref().unwrap_or_default();
        let effect = t.effect.as_deref().unwrap_or_default();
        if t.key.as_deref().unwrap_or_default().is_empty() && operator != "Exists" {
            return Err(TolerationError::EmptyKeyNeedsExists { index });
        }
        match operator {
            "" | "Equal" => {}
            "Exists" if !value.is_empty() => {
                return Err(TolerationError::ExistsWithValue { index });
            }
            "Exists" => {}
            "Lt" | "Gt" if canonical_int(value).is_none() => {
                return Err(TolerationError::NotAnInteger {
                    index,
                    operator: operator.to_owned(),
                    value: value.to_owned(),
                });
            }
            "Lt" | "Gt" => {}
            _ => {
                return Err(TolerationError::UnknownOperator {
                    index,
                    operator: operator.to_owned(),
                });
            }
        }
        if !effect.is_empty() && TaintEffect::parse(effect).is_none() {
            return Err(TolerationError::UnknownEffect {
                index,
                effect: effect.to_owned(),
            });
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            return Err(TolerationError::SecondsWithoutNoExecute { index });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
        Taint {
            key: key.to_owned(),
            value: value.map(str::to_owned),
            effect: effect.to_owned(),
            time_added: None,
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str, seconds: Option<i64>) -> Toleration {
        let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
        Toleration {
            key: opt(key),
            operator: opt(op),
            value: opt(value),
            effect: opt(effect),
            toleration_seconds: seconds,
        }
    }

    #[test]
    fn matching_rules() {
        let dedicated = taint("dedicated", Some("db"), "NoSchedule");
        let no_value = taint("gpu", None, "NoExecute");
        // (toleration, taint, tolerated)
        let table = [
            (
                tol("dedicated", "Equal", "db", "NoSchedule", None),
                &dedicated,
                true,
            ),
            (
                tol("dedicated", "", "db", "NoSchedule", None),
                &dedicated,
                true,
            ),
            (
                tol("dedicated", "Equal", "web", "NoSchedule", None),
                &dedicated,
                false,
            ),
            (
                tol("dedicated", "Equal", "", "NoSchedule", None),
                &dedicated,
                false,
            ),
            (
                tol("dedicated", "Exists", "", "NoSchedule", None),
                &dedicated,
                true,
            ),
            (tol("dedicated", "Exists", "", "", None), &dedicated, true),
            (
                tol("dedicated", "Exists", "", "NoExecute", None),
                &dedicated,
                false,
            ),
            (
                tol("dedicated", "Equal", "db", "PreferNoSchedule", None),
                &dedicated,
                false,
            ),
            (tol("other", "Exists", "", "", None), &dedicated, false),
            (tol("", "Exists", "", "", None), &dedicated, true),
            (tol("", "Exists", "", "NoExecute", None), &no_value, true),
            (tol("", "Exists", "", "NoSchedule", None), &no_value, false),
            (tol("gpu", "Equal", "", "", None), &no_value, true),
            (tol("gpu", "Equal", "x", "", None), &no_value, false),
            (tol("dedicated", "equal", "db", "", None), &dedicated, false),
            (tol("dedicated", "In", "db", "", None), &dedicated, false),
        ];
        for (t, taint, expected) in table {
            assert_eq!(tolerates(&t, taint), expected, "{t:?} vs {taint:?}");
        }
    }

    #[test]
    fn lt_and_gt_compare_the_taints_value_with_the_tolerations() {
        let t = |v: &str| taint("sla", Some(v), "NoSchedule");
        // (operator, toleration value, taint value, tolerated)
        let table = [
            ("Lt", "100", "99", true),
            ("Lt", "100", "100", false),
            ("Lt", "100", "101", false),
            ("Gt", "100", "101", true),
            ("Gt", "100", "100", false),
            ("Gt", "-5", "0", true),
            ("Lt", "0", "-1", true),
            ("Gt", "100", "0950", false),
            ("Gt", "0100", "950", false),
            ("Gt", "1", "+5", false),
            ("Gt", "1", "abc", false),
            ("Lt", "1", "", false),
            ("Gt", "1", "9223372036854775808", false),
        ];
        for (op, bound, value, expected) in table {
            assert_eq!(
                tolerates(&tol("sla", op, bound, "", None), &t(value)),
                expected,
                "taint {value} {op} toleration {bound}"
            );
        }
    }

    #[test]
    fn the_scheduler_filter_considers_no_schedule_and_no_execute_only() {
        let taints = [
            taint("soft", None, "PreferNoSchedule"),
            taint(TAINT_NODE_UNSCHEDULABLE, None, "NoSchedule"),
            taint(TAINT_NODE_UNREACHABLE, None, "NoExecute"),
        ];
        assert_eq!(
            scheduling_blocker(&taints, &[]).map(|t| t.key.as_str()),
            Some(TAINT_NODE_UNSCHEDULABLE)
        );
        let cordon = tol(TAINT_NODE_UNSCHEDULABLE, "Exists", "", "NoSchedule", None);
        assert_eq!(
            scheduling_blocker(&taints, std::slice::from_ref(&cordon)).map(|t| t.key.as_str()),
            Some(TAINT_NODE_UNREACHABLE)
        );
        let both = [cordon, default_tolerations()[1].clone()];
        assert_eq!(scheduling_blocker(&taints, &both), None);
        assert_eq!(scheduling_blocker(&[], &[]), None);
        assert_eq!(
            scheduling_blocker(&taints, &[tol("", "Exists", "", "", None)]),
            None
        );
        let autoscaler = [taint(
            TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER,
            Some("1764470000"),
            "NoSchedule",
        )];
        assert!(scheduling_blocker(&autoscaler, &default_tolerations()).is_some());
    }

    #[test]
    fn cordoned_nodes_need_the_unschedulable_toleration() {
        assert!(!cordon_blocks(false, &[]));
        assert!(cordon_blocks(true, &[]));
        assert!(cordon_blocks(true, &default_tolerations()));
        assert!(!cordon_blocks(
            true,
            &[tol(
                TAINT_NODE_UNSCHEDULABLE,
                "Exists",
                "",
                "NoSchedule",
                None
            )]
        ));
        assert!(!cordon_blocks(true, &[tol("", "Exists", "", "", None)]));
    }

    #[test]
    fn verdicts_explain_themselves() {
        let unreachable = [taint(TAINT_NODE_UNREACHABLE, None, "NoExecute")];
        assert_eq!(
            no_execute_verdict(&unreachable, &[]).to_string(),
            "evict now: NoExecute taint `node.kubernetes.io/unreachable` is not tolerated"
        );
        assert_eq!(
            no_execute_verdict(&unreachable, &default_tolerations()).to_string(),
            "evict after 300s (tolerationSeconds)"
        );
    }

    #[test]
    fn prefer_no_schedule_counts_ignore_other_effects_tolerations() {
        let taints = [
            taint("a", None, "PreferNoSchedule"),
            taint("b", None, "PreferNoSchedule"),
            taint("c", None, "NoSchedule"),
        ];
        assert_eq!(intolerable_prefer_no_schedule(&taints, &[]), 2);
        assert_eq!(
            intolerable_prefer_no_schedule(&taints, &[tol("a", "Exists", "", "", None)]),
            1
        );
        assert_eq!(
            intolerable_prefer_no_schedule(
                &taints,
                &[tol("b", "Exists", "", "PreferNoSchedule", None)]
            ),
            1
        );
        // A NoSchedule-only toleration cannot match a PreferNoSchedule taint.
        assert_eq!(
            intolerable_prefer_no_schedule(&taints, &[tol("a", "Exists", "", "NoSchedule", None)]),
            2
        );
    }

    #[test]
    fn no_execute_timing() {
        let unreachable = taint(TAINT_NODE_UNREACHABLE, None, "NoExecute");
        let not_ready = taint(TAINT_NODE_NOT_READY, None, "NoExecute");
        let soft = taint("soft", None, "NoSchedule");
        let defaults = default_tolerations();
        let ts = |list: &[&Taint]| list.iter().map(|t| (*t).clone()).collect::<Vec<_>>();

        assert_eq!(no_execute_verdict(&[], &[]), NoExecuteVerdict::Stay);
        assert_eq!(
            no_execute_verdict(&ts(&[&soft]), &[]),
            NoExecuteVerdict::Stay,
            "NoSchedule taints never evict"
        );
        let only_unreachable = ts(&[&unreachable]);
        assert_eq!(
            no_execute_verdict(&only_unreachable, &defaults),
            NoExecuteVerdict::EvictAfter { seconds: 300 }
        );
        assert_eq!(
            no_execute_verdict(&only_unreachable, &[]),
            NoExecuteVerdict::EvictNow {
                untolerated: Some(&only_unreachable[0])
            }
        );
        // No tolerationSeconds: tolerated forever (DaemonSet pods).
        assert_eq!(
            no_execute_verdict(
                &only_unreachable,
                &[tol(TAINT_NODE_UNREACHABLE, "Exists", "", "NoExecute", None)]
            ),
            NoExecuteVerdict::Stay
        );
        for seconds in [0, -30] {
            assert_eq!(
                no_execute_verdict(
                    &only_unreachable,
                    &[tol(
                        TAINT_NODE_UNREACHABLE,
                        "Exists",
                        "",
                        "NoExecute",
                        Some(seconds)
                    )]
                ),
                NoExecuteVerdict::EvictNow { untolerated: None },
                "{seconds}"
            );
        }
        // The smallest used tolerationSeconds wins.
        let both = ts(&[&not_ready, &unreachable]);
        let tolerations = [
            tol(TAINT_NODE_NOT_READY, "Exists", "", "NoExecute", Some(600)),
            tol(TAINT_NODE_UNREACHABLE, "Exists", "", "NoExecute", Some(120)),
        ];
        assert_eq!(
            no_execute_verdict(&both, &tolerations),
            NoExecuteVerdict::EvictAfter { seconds: 120 }
        );
        // One untolerated NoExecute taint evicts at once whatever the others say.
        let foreign = taint("foreign", Some("x"), "NoExecute");
        let three = ts(&[&not_ready, &foreign, &unreachable]);
        assert_eq!(
            no_execute_verdict(&three, &tolerations),
            NoExecuteVerdict::EvictNow {
                untolerated: Some(&three[1])
            }
        );
    }

    #[test]
    fn the_first_matching_toleration_is_the_one_used() {
        let unreachable = [taint(TAINT_NODE_UNREACHABLE, None, "NoExecute")];
        let narrow = tol(TAINT_NODE_UNREACHABLE, "Exists", "", "NoExecute", Some(60));
        let broad = tol("", "Exists", "", "", None);
        assert_eq!(
            no_execute_verdict(&unreachable, &[narrow.clone(), broad.clone()]),
            NoExecuteVerdict::EvictAfter { seconds: 60 }
        );
        assert_eq!(
            no_execute_verdict(&unreachable, &[broad, narrow]),
            NoExecuteVerdict::Stay
        );
    }

    #[test]
    fn default_tolerations_are_added_unless_key_and_effect_are_covered() {
        let [not_ready, unreachable] = default_tolerations();
        assert_eq!(not_ready.key.as_deref(), Some(TAINT_NODE_NOT_READY));
        assert_eq!(unreachable.key.as_deref(), Some(TAINT_NODE_UNREACHABLE));
        for t in [&not_ready, &unreachable] {
            assert_eq!(t.operator.as_deref(), Some("Exists"));
            assert_eq!(t.effect.as_deref(), Some("NoExecute"));
            assert_eq!(t.toleration_seconds, Some(300));
        }

        let mut none = Vec::new();
        add_default_tolerations(&mut none);
        assert_eq!(none, default_tolerations().to_vec());

        // Already tolerating unreachable (any operator/value): only not-ready is added.
        let own = tol(TAINT_NODE_UNREACHABLE, "Equal", "x", "NoExecute", Some(5));
        let mut one = vec![own.clone()];
        add_default_tolerations(&mut one);
        assert_eq!(one, vec![own, not_ready.clone()]);

        // Tolerate-everything and empty-effect tolerations cover both.
        for covering in [
            tol("", "Exists", "", "", None),
            tol("", "Exists", "", "NoExecute", None),
        ] {
            let mut list = vec![covering.clone()];
            add_default_tolerations(&mut list);
            assert_eq!(list, vec![covering]);
        }
        // A NoSchedule toleration for the same key does not.
        let mut list = vec![tol(TAINT_NODE_NOT_READY, "Exists", "", "NoSchedule", None)];
        add_default_tolerations(&mut list);
        assert_eq!(list.len(), 3);
    }

    #[test]
    fn validation_mirrors_the_apiserver() {
        let ok = [
            tol("", "Exists", "", "", None),
            tol("k", "", "v", "NoSchedule", None),
            tol("k", "Exists", "", "NoExecute", Some(30)),
            tol("k", "Gt", "-3", "", None),
        ];
        assert_eq!(validate_tolerations(&ok), Ok(()));
        let bad = [
            (tol("", "Equal", "v", "", None), "EmptyKeyNeedsExists"),
            (tol("k", "Exists", "v", "", None), "ExistsWithValue"),
            (tol("k", "Lt", "07", "", None), "NotAnInteger"),
            (tol("k", "Gt", "x", "", None), "NotAnInteger"),
            (tol("k", "In", "v", "", None), "UnknownOperator"),
            (tol("k", "Exists", "", "Sometimes", None), "UnknownEffect"),
            (
                tol("k", "Exists", "", "NoSchedule", Some(1)),
                "SecondsWithoutNoExecute",
            ),
            (
                tol("k", "Exists", "", "", Some(1)),
                "SecondsWithoutNoExecute",
            ),
        ];
        for (t, variant) in bad {
            let err = validate_tolerations(&[ok[0].clone(), t]).unwrap_err();
            assert!(format!("{err:?}").starts_with(variant), "{err:?}");
            assert!(err.to_string().starts_with("tolerations[1]: "), "{err}");
        }
    }

    fn effect() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["NoSchedule", "PreferNoSchedule", "NoExecute"])
    }

    proptest! {
        #[test]
        fn empty_key_exists_tolerates_every_taint(key in "[a-z./-]{0,12}", value in prop::option::of("[a-z0-9]{0,4}"), e in effect()) {
            prop_assert!(tolerates(&tol("", "Exists", "", "", None), &taint(&key, value.as_deref(), e)));
        }

        #[test]
        fn an_effect_restricts_and_an_empty_effect_does_not(key in "[a-z]{1,4}", e in effect(), other in effect()) {
            let t = taint(&key, None, e);
            prop_assert!(tolerates(&tol(&key, "Exists", "", "", None), &t));
            prop_assert_eq!(tolerates(&tol(&key, "Exists", "", other, None), &t), e == other);
        }

        #[test]
        fn the_filter_passes_iff_every_blocking_taint_is_tolerated(
            taints in prop::collection::vec(("[ab]", effect()), 0..5),
            tolerations in prop::collection::vec(("[ab]?", prop::sample::select(vec!["", "NoSchedule", "NoExecute", "PreferNoSchedule"])), 0..3),
        ) {
            let taints: Vec<Taint> = taints.iter().map(|(k, e)| taint(k, None, e)).collect();
            let tolerations: Vec<Toleration> = tolerations.iter().map(|(k, e)| tol(k, "Exists", "", e, None)).collect();
            let all = taints.iter().filter(|t| t.effect != "PreferNoSchedule").all(|t| tolerated_by_any(&tolerations, t));
            prop_assert_eq!(scheduling_blocker(&taints, &tolerations).is_none(), all);
        }
    }
}
