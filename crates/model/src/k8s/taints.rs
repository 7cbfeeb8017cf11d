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

/// The tolerations the DaemonSet controller gives every pod it creates
/// (`AddOrUpdateDaemonPodTolerations`): the node conditions and cordoning,
/// `Exists`, without a time limit, so its pods stay on a node that is lost
/// or cordoned.
pub fn daemon_set_tolerations() -> [Toleration; 6] {
    [
        (TAINT_NODE_NOT_READY, "NoExecute"),
        (TAINT_NODE_UNREACHABLE, "NoExecute"),
        (TAINT_NODE_DISK_PRESSURE, "NoSchedule"),
        (TAINT_NODE_MEMORY_PRESSURE, "NoSchedule"),
        (TAINT_NODE_PID_PRESSURE, "NoSchedule"),
        (TAINT_NODE_UNSCHEDULABLE, "NoSchedule"),
    ]
    .map(|(key, effect)| Toleration {
        key: Some(key.to_owned()),
        operator: Some("Exists".to_owned()),
        effect: Some(effect.to_owned()),
        ..Default::default()
    })
}

/// The tolerations a pod runs with: those it declares, then (for a
/// DaemonSet's pod) what the DaemonSet controller adds to its template,
/// then what the DefaultTolerationSeconds admission plugin adds. The order
/// is upstream's: the controller writes its tolerations before the pod is
/// admitted, so the plugin finds `not-ready` and `unreachable` covered and
/// adds no 300 s limit to a DaemonSet's pod.
pub fn admitted_tolerations(declared: &[Toleration], daemon: bool) -> Vec<Toleration> {
    let mut tolerations = declared.to_vec();
    if daemon {
        for t in daemon_set_tolerations() {
            // `AddOrUpdateTolerationInPodSpec`: an equal toleration is not
            // added twice.
            if !tolerations.contains(&t) {
                tolerations.push(t);
            }
        }
    }
    add_default_tolerations(&mut tolerations);
    tolerations
}

/// A toleration the apiserver's validation would refuse; `index` is its
/// position in `tolerations`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TolerationError {
    /// An empty key with an operator other than `Exists`.
    #[error(
        "tolerations[{index}]: operator must be Exists when the key is empty (which means match all keys and values)"
    )]
    EmptyKeyNeedsExists { index: usize },
    /// `Exists` with a value.
    #[error("tolerations[{index}]: value must be empty when the operator is Exists")]
    ExistsWithValue { index: usize },
    /// `Lt`/`Gt` with a value that is not an integer in canonical form.
    #[error(
        "tolerations[{index}]: `{operator}` needs an integer value without leading zeros, not `{value}`"
    )]
    NotAnInteger {
        index: usize,
        /// `Lt` or `Gt`.
        operator: String,
        value: String,
    },
    /// An operator other than Equal, Exists, Lt, Gt.
    #[error(
        "tolerations[{index}]: unknown operator `{operator}`; expected Equal, Exists, Lt or Gt"
    )]
    UnknownOperator { index: usize, operator: String },
    /// An effect other than NoSchedule, PreferNoSchedule, NoExecute.
    #[error(
        "tolerations[{index}]: unknown effect `{effect}`; expected NoSchedule, PreferNoSchedule or NoExecute"
    )]
    UnknownEffect { index: usize, effect: String },
    /// `tolerationSeconds` on a toleration whose effect is not `NoExecute`.
    #[error("tolerations[{index}]: effect must be NoExecute when tolerationSeconds is set")]
    SecondsWithoutNoExecute { index: usize },
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
mod tests;
