//! PodDisruptionBudgets: the disruption controller's arithmetic and the
//! eviction API's decision.
//!
//! The controller (`pkg/controller/disruption`, `getExpectedPodCount`,
//! `countHealthyPods`, `updatePdbStatus`) computes four numbers per budget:
//!
//! - **expectedPods**: for an integer `minAvailable`, the number of selected
//!   pods; for a percentage `minAvailable` and for any `maxUnavailable`, the
//!   sum of the scales (`spec.replicas`) of the distinct controllers of the
//!   selected pods — pods without a controller add nothing (the controller
//!   warns with an `UnmanagedPods` event);
//! - **desiredHealthy**: `minAvailable`, or `expectedPods − maxUnavailable`
//!   floored at zero; a percentage is taken of `expectedPods` and rounded
//!   *up* for both fields (`GetScaledValueFromIntOrPercent(…, roundUp=true)`):
//!   `minAvailable: 50%` of 3 needs 2 healthy pods, `maxUnavailable: 50%` of 3
//!   lets 2 go;
//! - **currentHealthy**: selected pods that are Ready (`status.conditions`
//!   `Ready=True`), not being deleted, and not recently evicted (listed in
//!   `status.disruptedPods` for less than two minutes);
//! - **disruptionsAllowed**: `currentHealthy − desiredHealthy`, or zero if that
//!   is negative or `expectedPods` is zero (so a budget whose pods have not
//!   appeared yet starts safe).
//!
//! The eviction API (`pkg/registry/core/pod/storage/eviction.go`) then reads
//! the budget's *status*:
//!
//! - a `Pending`, `Succeeded` or `Failed` pod, or one already being deleted,
//!   is deleted without consulting any budget;
//! - no matching budget: deleted; more than one: refused with a 500;
//! - a pod that is not Ready: under `AlwaysAllow` deleted without touching the
//!   budget; under `IfHealthyBudget` (the default) deleted without touching
//!   it if `currentHealthy ≥ desiredHealthy` and `desiredHealthy > 0`,
//!   otherwise it must pass the same check as a Ready pod;
//! - a Ready pod: refused with a 429 ("Cannot evict pod as it would violate
//!   the pod's disruption budget.") if `disruptionsAllowed` is zero or the
//!   status is older than the spec (`observedGeneration < generation`),
//!   forbidden (403) if it is negative or if more than 2000 evictions await
//!   the controller; otherwise allowed, and `disruptionsAllowed` drops by one.
//!
//! ```
//! use drillbench::k8s::disruption::{pdb_counts, Budget, IntOrPercent, SelectedPod};
//!
//! // openbao: 3 replicas, maxUnavailable 1, one pod not Ready.
//! let ready = SelectedPod { ready: true, has_controller: true, ..Default::default() };
//! let unready = SelectedPod { has_controller: true, ..Default::default() };
//! let counts = pdb_counts(
//!     Budget::MaxUnavailable(IntOrPercent::Int(1)),
//!     &[ready, ready, unready],
//!     Some(3),
//! )?;
//! assert_eq!((counts.desired_healthy, counts.current_healthy), (2, 2));
//! assert_eq!(counts.disruptions_allowed, 0); // a drain of a Ready pod now blocks
//! # Ok::<(), drillbench::k8s::disruption::DisruptionError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::core::{Selector, SelectorExt};

/// How long an eviction keeps a pod out of `currentHealthy` while the
/// controller waits for it to be deleted (`DeletionTimeout`).
pub const DELETION_TIMEOUT_SECONDS: i64 = 120;
/// The number of evictions awaiting the controller above which the eviction
/// API refuses more (`MaxDisruptedPodSize`).
pub const MAX_DISRUPTED_PODS: usize = 2000;
/// The apiserver's message for a refused eviction.
pub const EVICTION_REFUSED_MESSAGE: &str =
    "Cannot evict pod as it would violate the pod's disruption budget.";

/// Why a budget could not be read or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DisruptionError {
    /// Both `minAvailable` and `maxUnavailable` are set.
    #[error("minAvailable and maxUnavailable cannot be both set")]
    BothSet,
    /// A negative integer.
    #[error("{field} must not be negative, got {value}")]
    Negative {
        /// `minAvailable` or `maxUnavailable`.
        field: &'static str,
        /// The value.
        value: i32,
    },
    /// A string that is not `<digits>%`, or a percentage above 100.
    #[error("{field} must be an integer or a percentage from 0% to 100%, got `{value}`")]
    InvalidPercent {
        /// `minAvailable` or `maxUnavailable`.
        field: &'static str,
        /// The value as written.
        value: String,
    },
    /// An `unhealthyPodEvictionPolicy` other than the two Kubernetes knows.
    #[error("unknown unhealthyPodEvictionPolicy `{0}`; expected IfHealthyBudget or AlwaysAllow")]
    UnknownPolicy(String),
    /// A selector the apiserver would refuse.
    #[error("invalid selector: {0}")]
    InvalidSelector(String),
    /// A percentage or `maxUnavailable` budget whose pods' controller scale is
    /// unknown (a controller without a scale, such as a Job). The controller
    /// then fails safe: `disruptionsAllowed` becomes 0.
    #[error("found no controller scale for the selected pods")]
    UnknownScale,
}

/// An integer or a percentage, as a budget field holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOrPercent {
    /// A number of pods.
    Int(i32),
    /// A percentage of `expectedPods`, 0..=100.
    Percent(u8),
}

impl IntOrPercent {
    fn parse(value: &IntOrString, field: &'static str) -> Result<Self, DisruptionError> {
        match value {
            IntOrString::Int(n) if *n < 0 => Err(DisruptionError::Negative { field, value: *n }),
            IntOrString::Int(n) => Ok(IntOrPercent::Int(*n)),
            IntOrString::String(s) => s
                .strip_suffix('%')
                .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|digits| digits.parse::<u8>().ok())
                .filter(|p| *p <= 100)
                .map(IntOrPercent::Percent)
                .ok_or_else(|| DisruptionError::InvalidPercent {
                    field,
                    value: s.clone(),
                }),
        }
    }

    /// The value scaled to `total`, a percentage rounded up. A negative
    /// integer, which [`Budget::from_spec`] refuses, counts as zero.
    fn scaled(self, total: i32) -> i32 {
        match self {
            IntOrPercent::Int(n) => n.max(0),
            IntOrPercent::Percent(p) => {
                let product = i64::from(p) * i64::from(total.max(0));
                i32::try_from((product + 99) / 100).unwrap_or(i32::MAX)
            }
        }
    }
}

/// What a budget asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// At least this many (or this share of) pods stay healthy.
    MinAvailable(IntOrPercent),
    /// At most this many (or this share of) pods may be unavailable.
    MaxUnavailable(IntOrPercent),
    /// Neither field, which `policy/v1` accepts without defaulting. The
    /// controller then computes `expectedPods` 0, so such a budget never
    /// allows a Ready pod's eviction.
    Unset,
}

impl Budget {
    /// The budget of a spec, validated as the apiserver does.
    pub fn from_spec(spec: &PodDisruptionBudgetSpec) -> Result<Self, DisruptionError> {
        match (&spec.min_available, &spec.max_unavailable) {
            (Some(_), Some(_)) => Err(DisruptionError::BothSet),
            (Some(v), None) => Ok(Budget::MinAvailable(IntOrPercent::parse(
                v,
                "minAvailable",
            )?)),
            (None, Some(v)) => Ok(Budget::MaxUnavailable(IntOrPercent::parse(
                v,
                "maxUnavailable",
            )?)),
            (None, None) => Ok(Budget::Unset),
        }
    }

    /// Whether `expectedPods` comes from controller scale rather than from
    /// the number of selected pods.
    pub fn needs_controller_scale(&self) -> bool {
        !matches!(
            self,
            Budget::MinAvailable(IntOrPercent::Int(_)) | Budget::Unset
        )
    }
}

/// How a budget treats pods that are running but not Ready.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnhealthyPodEvictionPolicy {
    /// Evict an unready pod only while the application is not disrupted
    /// (`currentHealthy ≥ desiredHealthy`). The default.
    #[default]
    IfHealthyBudget,
    /// Always allow evicting an unready pod.
    AlwaysAllow,
}

impl UnhealthyPodEvictionPolicy {
    /// The policy of a spec; absent means `IfHealthyBudget`.
    pub fn from_spec(spec: &PodDisruptionBudgetSpec) -> Result<Self, DisruptionError> {
        match spec.unhealthy_pod_eviction_policy.as_deref() {
            None | Some("IfHealthyBudget") => Ok(UnhealthyPodEvictionPolicy::IfHealthyBudget),
            Some("AlwaysAllow") => Ok(UnhealthyPodEvictionPolicy::AlwaysAllow),
            Some(other) => Err(DisruptionError::UnknownPolicy(other.to_owned())),
        }
    }
}

/// A budget's label selector. `policy/v1` semantics: an absent selector
/// selects no pod, an empty one (`{}`) selects every pod in the namespace.
#[derive(Debug, Clone)]
pub struct PdbSelector(Option<Selector>);

impl PdbSelector {
    /// The selector of a spec. `In`/`NotIn` without values are refused, as
    /// `LabelSelectorAsSelector` refuses them (kube-core alone accepts them).
    pub fn from_spec(spec: &PodDisruptionBudgetSpec) -> Result<Self, DisruptionError> {
        spec.selector
            .as_ref()
            .map(Self::compile)
            .transpose()
            .map(PdbSelector)
    }

    fn compile(selector: &LabelSelector) -> Result<Selector, DisruptionError> {
        for req in selector.match_expressions.iter().flatten() {
            let values = req.values.as_deref().unwrap_or_default();
            if matches!(req.operator.as_str(), "In" | "NotIn") && values.is_empty() {
                return Err(DisruptionError::InvalidSelector(format!(
                    "`{} {}` needs at least one value",
                    req.key, req.operator
                )));
            }
            if matches!(req.operator.as_str(), "Exists" | "DoesNotExist") && !values.is_empty() {
                return Err(DisruptionError::InvalidSelector(format!(
                    "`{} {}` takes no values",
                    req.key, req.operator
                )));
            }
        }
        Selector::try_from(selector.clone())
            .map_err(|e| DisruptionError::InvalidSelector(e.0.to_lowercase()))
    }

    /// Whether the budget covers a pod with these labels (same namespace
    /// assumed).
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.as_ref().is_some_and(|s| s.matches(labels))
    }

    /// Whether the budget covers this pod (same namespace assumed).
    pub fn selects_pod(&self, pod: &Pod) -> bool {
        static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();
        self.selects(pod.metadata.labels.as_ref().unwrap_or(&NO_LABELS))
    }
}

/// Whether a pod's `Ready` condition is `True` (`podutil.IsPodReady`), which
/// is what "healthy" means to a budget.
pub fn is_pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// What the controller needs to know about one selected pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SelectedPod {
    /// `Ready=True`.
    pub ready: bool,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// Listed in the budget's `status.disruptedPods` less than
    /// [`DELETION_TIMEOUT_SECONDS`] ago: evicted, deletion not yet observed.
    pub recently_evicted: bool,
    /// Has a controller owner reference.
    pub has_controller: bool,
}

impl SelectedPod {
    /// The state of a pod object; `recently_evicted` is the caller's to set,
    /// since it lives in the budget's status, not in the pod.
    pub fn from_pod(pod: &Pod) -> Self {
        SelectedPod {
            ready: is_pod_ready(pod),
            terminating: pod.metadata.deletion_timestamp.is_some(),
            recently_evicted: false,
            has_controller: pod
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true)),
        }
    }

    fn counts_as_healthy(&self) -> bool {
        self.ready && !self.terminating && !self.recently_evicted
    }
}

/// A budget's status numbers as the controller computes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PdbCounts {
    /// `status.expectedPods`.
    pub expected_pods: i32,
    /// `status.desiredHealthy`.
    pub desired_healthy: i32,
    /// `status.currentHealthy`.
    pub current_healthy: i32,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: i32,
    /// Selected pods without a controller, which a percentage or
    /// `maxUnavailable` budget cannot account for (the `UnmanagedPods`
    /// warning); evidence for reports.
    pub unmanaged_pods: usize,
}

/// The controller's status computation for one budget.
///
/// `pods` are the pods the budget selects, in any order. `controller_replicas`
/// is the sum of `spec.replicas` over the distinct controllers of those pods
/// (a Deployment's, not its ReplicaSet's), or `None` if some selected pod's
/// controller has no scale; it is only consulted when
/// [`Budget::needs_controller_scale`].
pub fn pdb_counts(
    budget: Budget,
    pods: &[SelectedPod],
    controller_replicas: Option<i32>,
) -> Result<PdbCounts, DisruptionError> {
    let selected = i32::try_from(pods.len()).unwrap_or(i32::MAX);
    let scale = || {
        controller_replicas
            .map(|r| r.max(0))
            .ok_or(DisruptionError::UnknownScale)
    };
    let (expected_pods, desired_healthy) = match budget {
        Budget::MinAvailable(share @ IntOrPercent::Int(_)) => (selected, share.scaled(selected)),
        Budget::MinAvailable(share) => {
            let expected = scale()?;
            (expected, share.scaled(expected))
        }
        Budget::MaxUnavailable(share) => {
            let expected = scale()?;
            (
                expected,
                expected.saturating_sub(share.scaled(expected)).max(0),
            )
        }
        Budget::Unset => (0, 0),
    };
    let current_healthy =
        i32::try_from(pods.iter().filter(|p| p.counts_as_healthy()).count()).unwrap_or(i32::MAX);
    let headroom = current_healthy.saturating_sub(desired_healthy);
    let disruptions_allowed = if expected_pods <= 0 || headroom <= 0 {
        0
    } else {
        headroom
    };
    let unmanaged_pods = if budget.needs_controller_scale() {
        pods.iter().filter(|p| !p.has_controller).count()
    } else {
        0
    };
    Ok(PdbCounts {
        expected_pods,
        desired_healthy,
        current_healthy,
        disruptions_allowed,
        unmanaged_pods,
    })
}

/// Why the eviction API allowed an eviction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionAllowed {
    /// The pod is `Pending`, `Succeeded`, `Failed` or already being deleted:
    /// no budget is consulted.
    BudgetIgnored,
    /// No budget covers the pod.
    NoBudget,
    /// The pod is not Ready and the budget's policy lets it go without
    /// counting against the budget.
    UnhealthyPod {
        /// The budget's name.
        pdb: String,
        /// The policy that allowed it.
        policy: UnhealthyPodEvictionPolicy,
    },
    /// The budget had room; `disruptionsAllowed` drops by one and the pod is
    /// recorded in `status.disruptedPods`.
    WithinBudget {
        /// The budget's name.
        pdb: String,
        /// `disruptionsAllowed` after this eviction.
        disruptions_allowed_after: i32,
    },
}

/// Why the eviction API refused an eviction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvictionRefusal {
    /// The budget has no disruption left (429).
    #[error(
        "cannot evict pod as it would violate the pod's disruption budget: the disruption budget {pdb} needs {desired_healthy} healthy pods and has {current_healthy} currently"
    )]
    BudgetExhausted {
        /// The budget's name.
        pdb: String,
        /// `status.desiredHealthy`.
        desired_healthy: i32,
        /// `status.currentHealthy`.
        current_healthy: i32,
    },
    /// The controller has not caught up with the budget's spec (429).
    #[error(
        "cannot evict pod as it would violate the pod's disruption budget: the disruption budget {pdb} is still being processed by the server"
    )]
    StatusStale {
        /// The budget's name.
        pdb: String,
    },
    /// More than one budget covers the pod (500).
    #[error(
        "this pod has more than one poddisruptionbudget, which the eviction subresource does not support"
    )]
    MultipleBudgets {
        /// The budgets' names.
        pdbs: Vec<String>,
    },
    /// `status.disruptionsAllowed` is negative (403).
    #[error("pdb {pdb} disruptions allowed is negative")]
    NegativeDisruptionsAllowed {
        /// The budget's name.
        pdb: String,
    },
    /// Too many evictions await the controller (403).
    #[error(
        "pdb {pdb}: disruptedPods map too big - too many evictions not confirmed by pdb controller"
    )]
    TooManyDisruptedPods {
        /// The budget's name.
        pdb: String,
    },
}

impl EvictionRefusal {
    /// The HTTP status code the apiserver answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            EvictionRefusal::BudgetExhausted { .. } | EvictionRefusal::StatusStale { .. } => 429,
            EvictionRefusal::MultipleBudgets { .. } => 500,
            EvictionRefusal::NegativeDisruptionsAllowed { .. }
            | EvictionRefusal::TooManyDisruptedPods { .. } => 403,
        }
    }

    /// The `Status.message` the apiserver sends, verbatim, for the façade.
    pub fn status_message(&self) -> String {
        match self {
            EvictionRefusal::BudgetExhausted { .. } | EvictionRefusal::StatusStale { .. } => {
                EVICTION_REFUSED_MESSAGE.to_owned()
            }
            EvictionRefusal::MultipleBudgets { .. } => "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.".to_owned(),
            EvictionRefusal::NegativeDisruptionsAllowed { pdb } => format!(
                "poddisruptionbudgets.policy \"{pdb}\" is forbidden: pdb disruptions allowed is negative"
            ),
            EvictionRefusal::TooManyDisruptedPods { pdb } => format!(
                "poddisruptionbudgets.policy \"{pdb}\" is forbidden: DisruptedPods map too big - too many evictions not confirmed by PDB controller"
            ),
        }
    }

    /// The `DisruptionBudget` cause the apiserver attaches to a 429, verbatim.
    pub fn cause_message(&self) -> Option<String> {
        match self {
            EvictionRefusal::BudgetExhausted {
                pdb,
                desired_healthy,
                current_healthy,
            } => Some(format!(
                "The disruption budget {pdb} needs {desired_healthy} healthy pods and has {current_healthy} currently"
            )),
            EvictionRefusal::StatusStale { pdb } => Some(format!(
                "The disruption budget {pdb} is still being processed by the server."
            )),
            _ => None,
        }
    }

    /// The `Retry-After` seconds the apiserver suggests with a 429.
    pub fn retry_after_seconds(&self) -> Option<u32> {
        match self {
            EvictionRefusal::BudgetExhausted { .. } => Some(0),
            EvictionRefusal::StatusStale { .. } => Some(10),
            _ => None,
        }
    }
}

fn pdb_name(pdb: &PodDisruptionBudget) -> String {
    pdb.metadata.name.clone().unwrap_or_default()
}

/// The eviction API's decision for `pod`, given the budgets whose selector
/// covers it (see the module documentation for the rules, and
/// [`PdbSelector`] to find them). Reads each budget's `status` as the
/// controller last wrote it; a budget without a status has nothing allowed.
///
/// On [`EvictionAllowed::WithinBudget`] the caller does what the apiserver
/// does before deleting the pod: write `disruptions_allowed_after` into the
/// status and record the pod in `status.disruptedPods` with the current time,
/// which keeps it out of `currentHealthy` ([`SelectedPod::recently_evicted`])
/// until it is gone or [`DELETION_TIMEOUT_SECONDS`] pass.
pub fn check_eviction(
    pod: &Pod,
    covering: &[&PodDisruptionBudget],
) -> Result<EvictionAllowed, EvictionRefusal> {
    let phase = pod
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default();
    if matches!(phase, "Pending" | "Succeeded" | "Failed")
        || pod.metadata.deletion_timestamp.is_some()
    {
        return Ok(EvictionAllowed::BudgetIgnored);
    }
    let pdb = match covering {
        [] => return Ok(EvictionAllowed::NoBudget),
        [one] => *one,
        many => {
            return Err(EvictionRefusal::MultipleBudgets {
                pdbs: many.iter().map(|p| pdb_name(p)).collect(),
            });
        }
    };
    let name = pdb_name(pdb);
    let status = pdb.status.as_ref();
    let read = |f: fn(&PodDisruptionBudgetStatus) -> Option<i32>| status.and_then(f).unwrap_or(0);
    let current_healthy = read(|s| s.current_healthy);
    let desired_healthy = read(|s| s.desired_healthy);
    let disruptions_allowed = read(|s| s.disruptions_allowed);
    if !is_pod_ready(pod) {
        // The apiserver tests for AlwaysAllow and treats anything else as the
        // default, as here.
        let always = pdb
            .spec
            .as_ref()
            .and_then(|s| s.unhealthy_pod_eviction_policy.as_deref())
            == Some("AlwaysAllow");
        if always {
            return Ok(EvictionAllowed::UnhealthyPod {
                pdb: name,
                policy: UnhealthyPodEvictionPolicy::AlwaysAllow,
            });
        }
        if current_healthy >= desired_healthy && desired_healthy > 0 {
            return Ok(EvictionAllowed::UnhealthyPod {
                pdb: name,
                policy: UnhealthyPodEvictionPolicy::IfHealthyBudget,
            });
        }
    }
    let observed = status.and_then(|s| s.observed_generation).unwrap_or(0);
    if observed < pdb.metadata.generation.unwrap_or(0) {
        return Err(EvictionRefusal::StatusStale { pdb: name });
    }
    if disruptions_allowed < 0 {
        return Err(EvictionRefusal::NegativeDisruptionsAllowed { pdb: name });
    }
    let awaiting = status
        .and_then(|s| s.disrupted_pods.as_ref())
        .map_or(0, BTreeMap::len);
    if awaiting > MAX_DISRUPTED_PODS {
        return Err(EvictionRefusal::TooManyDisruptedPods { pdb: name });
    }
    if disruptions_allowed == 0 {
        return Err(EvictionRefusal::BudgetExhausted {
            pdb: name,
            desired_healthy,
            current_healthy,
        });
    }
    Ok(EvictionAllowed::WithinBudget {
        pdb: name,
        disruptions_allowed_after: disruptions_allowed - 1,
    })
}

impl fmt::Display for EvictionAllowed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EvictionAllowed::BudgetIgnored => {
                f.write_str("pod is pending, finished or terminating; no budget applies")
            }
            EvictionAllowed::NoBudget => f.write_str("no disruption budget covers the pod"),
            EvictionAllowed::UnhealthyPod { pdb, policy } => write!(
                f,
                "pod is not ready and budget {pdb} ({policy:?}) lets it go without counting it"
            ),
            EvictionAllowed::WithinBudget {
                pdb,
                disruptions_allowed_after,
            } => write!(
                f,
                "budget {pdb} allows it; {disruptions_allowed_after} disruptions left"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelectorRequirement, ObjectMeta, Time,
    };
    use proptest::prelude::*;

    fn ready(n: usize) -> Vec<SelectedPod> {
        vec![
            SelectedPod {
                ready: true,
                has_controller: true,
                ..Default::default()
            };
            n
        ]
    }

    fn unready(n: usize) -> Vec<SelectedPod> {
        vec![
            SelectedPod {
                has_controller: true,
                ..Default::default()
            };
            n
        ]
    }

    fn pods(healthy: usize, unhealthy: usize) -> Vec<SelectedPod> {
        let mut v = ready(healthy);
        v.extend(unready(unhealthy));
        v
    }

    fn counts(budget: Budget, pods: &[SelectedPod], replicas: i32) -> (i32, i32, i32, i32) {
        let c = pdb_counts(budget, pods, Some(replicas)).unwrap();
        (
            c.expected_pods,
            c.desired_healthy,
            c.current_healthy,
            c.disruptions_allowed,
        )
    }

    use Budget::{MaxUnavailable, MinAvailable};
    use IntOrPercent::{Int, Percent};

    #[test]
    fn every_budget_form() {
        // (budget, healthy, unhealthy, replicas) → (expected, desired, current, allowed)
        let table = [
            // Integer minAvailable counts selected pods, not replicas.
            ((MinAvailable(Int(2)), 3, 0, 5), (3, 2, 3, 1)),
            ((MinAvailable(Int(2)), 2, 1, 3), (3, 2, 2, 0)),
            ((MinAvailable(Int(5)), 3, 0, 3), (3, 5, 3, 0)),
            ((MinAvailable(Int(0)), 3, 0, 3), (3, 0, 3, 3)),
            // Percentages round up: 50% of 3 is 2 (of 5, 3).
            ((MinAvailable(Percent(50)), 3, 0, 3), (3, 2, 3, 1)),
            ((MinAvailable(Percent(50)), 5, 0, 5), (5, 3, 5, 2)),
            ((MinAvailable(Percent(100)), 3, 0, 3), (3, 3, 3, 0)),
            ((MinAvailable(Percent(0)), 3, 0, 3), (3, 0, 3, 3)),
            ((MinAvailable(Percent(1)), 3, 0, 3), (3, 1, 3, 2)),
            // Percentages are of the controller's scale, not of the pods seen.
            ((MinAvailable(Percent(50)), 2, 0, 4), (4, 2, 2, 0)),
            // maxUnavailable: desired = expected − ceil(share).
            ((MaxUnavailable(Int(1)), 3, 0, 3), (3, 2, 3, 1)),
            ((MaxUnavailable(Int(1)), 2, 1, 3), (3, 2, 2, 0)),
            ((MaxUnavailable(Int(0)), 3, 0, 3), (3, 3, 3, 0)),
            ((MaxUnavailable(Int(5)), 3, 0, 3), (3, 0, 3, 3)),
            ((MaxUnavailable(Percent(50)), 3, 0, 3), (3, 1, 3, 2)),
            ((MaxUnavailable(Percent(34)), 3, 0, 3), (3, 1, 3, 2)),
            ((MaxUnavailable(Percent(33)), 3, 0, 3), (3, 2, 3, 1)),
            ((MaxUnavailable(Percent(100)), 3, 0, 3), (3, 0, 3, 3)),
            ((MaxUnavailable(Percent(25)), 5, 2, 7), (7, 5, 5, 0)),
            // Zero replicas: nothing expected, nothing allowed.
            ((MaxUnavailable(Int(1)), 0, 0, 0), (0, 0, 0, 0)),
            ((MinAvailable(Percent(50)), 0, 0, 0), (0, 0, 0, 0)),
            // Healthy leftovers of a scaled-to-zero controller: still nothing.
            ((MaxUnavailable(Int(1)), 2, 0, 0), (0, 0, 2, 0)),
            // No pods at all with an integer minAvailable.
            ((MinAvailable(Int(0)), 0, 0, 3), (0, 0, 0, 0)),
            ((Budget::Unset, 3, 0, 3), (0, 0, 3, 0)),
        ];
        for ((budget, healthy, unhealthy, replicas), expected) in table {
            assert_eq!(
                counts(budget, &pods(healthy, unhealthy), replicas),
                expected,
                "{budget:?} healthy={healthy} unhealthy={unhealthy} replicas={replicas}"
            );
        }
    }

    #[test]
    fn terminating_and_recently_evicted_pods_are_not_healthy() {
        let mut p = ready(4);
        p[0].terminating = true;
        p[1].recently_evicted = true;
        assert_eq!(counts(MinAvailable(Int(1)), &p, 4), (4, 1, 2, 1));
    }

    #[test]
    fn unmanaged_pods_count_for_integer_min_available_only() {
        let unmanaged = vec![
            SelectedPod {
                ready: true,
                ..Default::default()
            };
            3
        ];
        // No controllers: integer minAvailable works on the pods themselves.
        let c = pdb_counts(MinAvailable(Int(2)), &unmanaged, None).unwrap();
        assert_eq!(
            (c.expected_pods, c.disruptions_allowed, c.unmanaged_pods),
            (3, 1, 0)
        );
        // A percentage sees no controller scale: expected 0, nothing allowed.
        let c = pdb_counts(MinAvailable(Percent(50)), &unmanaged, Some(0)).unwrap();
        assert_eq!(
            (c.expected_pods, c.disruptions_allowed, c.unmanaged_pods),
            (0, 0, 3)
        );
        // A controller without a scale (a Job) is an error: fail safe.
        assert_eq!(
            pdb_counts(MaxUnavailable(Int(1)), &ready(2), None),
            Err(DisruptionError::UnknownScale)
        );
    }

    fn spec(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudgetSpec {
        PodDisruptionBudgetSpec {
            min_available: min,
            max_unavailable: max,
            ..Default::default()
        }
    }

    #[test]
    fn budgets_are_read_and_validated_from_the_spec() {
        let s = |v: &str| Some(IntOrString::String(v.to_owned()));
        let i = |v: i32| Some(IntOrString::Int(v));
        assert_eq!(
            Budget::from_spec(&spec(i(2), None)),
            Ok(MinAvailable(Int(2)))
        );
        assert_eq!(
            Budget::from_spec(&spec(None, s("25%"))),
            Ok(MaxUnavailable(Percent(25)))
        );
        assert_eq!(
            Budget::from_spec(&spec(s("100%"), None)),
            Ok(MinAvailable(Percent(100)))
        );
        assert_eq!(Budget::from_spec(&spec(None, None)), Ok(Budget::Unset));
        assert_eq!(
            Budget::from_spec(&spec(i(1), i(1))),
            Err(DisruptionError::BothSet)
        );
        assert!(matches!(
            Budget::from_spec(&spec(i(-1), None)),
            Err(DisruptionError::Negative {
                field: "minAvailable",
                value: -1
            })
        ));
        for bad in ["101%", "50", "-5%", "%", "5.5%", "fifty%", " 5%", "5 %"] {
            assert!(
                matches!(
                    Budget::from_spec(&spec(None, s(bad))),
                    Err(DisruptionError::InvalidPercent {
                        field: "maxUnavailable",
                        ..
                    })
                ),
                "{bad}"
            );
        }
        let policy = |p: Option<&str>| {
            UnhealthyPodEvictionPolicy::from_spec(&PodDisruptionBudgetSpec {
                unhealthy_pod_eviction_policy: p.map(str::to_owned),
                ..Default::default()
            })
        };
        assert_eq!(
            policy(None),
            Ok(UnhealthyPodEvictionPolicy::IfHealthyBudget)
        );
        assert_eq!(
            policy(Some("IfHealthyBudget")),
            Ok(UnhealthyPodEvictionPolicy::IfHealthyBudget)
        );
        assert_eq!(
            policy(Some("AlwaysAllow")),
            Ok(UnhealthyPodEvictionPolicy::AlwaysAllow)
        );
        assert!(matches!(
            policy(Some("Sometimes")),
            Err(DisruptionError::UnknownPolicy(_))
        ));
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn selectors_follow_policy_v1() {
        let with = |selector: Option<LabelSelector>| {
            PdbSelector::from_spec(&PodDisruptionBudgetSpec {
                selector,
                ..Default::default()
            })
        };
        let app = labels(&[("app", "openbao")]);
        assert!(!with(None).unwrap().selects(&app), "null selects nothing");
        assert!(
            with(Some(LabelSelector::default())).unwrap().selects(&app),
            "empty selects all"
        );
        let by_app = with(Some(LabelSelector {
            match_labels: Some(labels(&[("app", "openbao")])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".to_owned(),
                operator: "NotIn".to_owned(),
                values: Some(vec!["canary".to_owned()]),
            }]),
        }))
        .unwrap();
        assert!(by_app.selects(&app));
        assert!(!by_app.selects(&labels(&[("app", "openbao"), ("tier", "canary")])));
        assert!(!by_app.selects(&labels(&[("app", "coroot")])));
        for (op, values) in [
            ("In", Some(vec![])),
            ("In", None),
            ("Exists", Some(vec!["x".to_owned()])),
            ("Near", None),
        ] {
            let err = with(Some(LabelSelector {
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "k".to_owned(),
                    operator: op.to_owned(),
                    values,
                }]),
                ..Default::default()
            }));
            assert!(
                matches!(err, Err(DisruptionError::InvalidSelector(_))),
                "{op}"
            );
        }
    }

    fn pod(phase: &str, ready: bool, terminating: bool) -> Pod {
        Pod {
            metadata: ObjectMeta {
                name: Some("openbao-0".to_owned()),
                deletion_timestamp: terminating.then(|| Time(Default::default())),
                ..Default::default()
            },
            status: Some(PodStatus {
                phase: Some(phase.to_owned()),
                conditions: Some(vec![PodCondition {
                    type_: "Ready".to_owned(),
                    status: if ready { "True" } else { "False" }.to_owned(),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn pdb(policy: Option<&str>, c: PdbCounts) -> PodDisruptionBudget {
        PodDisruptionBudget {
            metadata: ObjectMeta {
                name: Some("openbao".to_owned()),
                generation: Some(3),
                ..Default::default()
            },
            spec: Some(PodDisruptionBudgetSpec {
                unhealthy_pod_eviction_policy: policy.map(str::to_owned),
                ..Default::default()
            }),
            status: Some(PodDisruptionBudgetStatus {
                current_healthy: Some(c.current_healthy),
                desired_healthy: Some(c.desired_healthy),
                expected_pods: Some(c.expected_pods),
                disruptions_allowed: Some(c.disruptions_allowed),
                observed_generation: Some(3),
                ..Default::default()
            }),
        }
    }

    fn status(expected: i32, desired: i32, current: i32) -> PdbCounts {
        PdbCounts {
            expected_pods: expected,
            desired_healthy: desired,
            current_healthy: current,
            disruptions_allowed: (current - desired).max(0),
            unmanaged_pods: 0,
        }
    }

    #[test]
    fn ready_pods_need_a_disruption_left() {
        let running = pod("Running", true, false);
        let room = pdb(None, status(3, 2, 3));
        assert_eq!(
            check_eviction(&running, &[&room]),
            Ok(EvictionAllowed::WithinBudget {
                pdb: "openbao".to_owned(),
                disruptions_allowed_after: 0
            })
        );
        let full = pdb(Some("AlwaysAllow"), status(3, 2, 2));
        let refusal = check_eviction(&running, &[&full]).unwrap_err();
        assert_eq!(
            refusal,
            EvictionRefusal::BudgetExhausted {
                pdb: "openbao".to_owned(),
                desired_healthy: 2,
                current_healthy: 2
            }
        );
        assert_eq!(refusal.http_status(), 429);
        assert_eq!(
            refusal.status_message(),
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        assert_eq!(
            refusal.cause_message().as_deref(),
            Some("The disruption budget openbao needs 2 healthy pods and has 2 currently")
        );
        assert_eq!(refusal.retry_after_seconds(), Some(0));
        assert_eq!(check_eviction(&running, &[]), Ok(EvictionAllowed::NoBudget));
    }

    #[test]
    fn unready_pods_under_both_policies() {
        let unready_pod = pod("Running", false, false);
        let healthy_app = status(3, 2, 2);
        let disrupted_app = status(3, 2, 1);
        let name = || "openbao".to_owned();

        // AlwaysAllow: always, even when the application is disrupted.
        for s in [healthy_app, disrupted_app, status(3, 0, 0)] {
            assert_eq!(
                check_eviction(&unready_pod, &[&pdb(Some("AlwaysAllow"), s)]),
                Ok(EvictionAllowed::UnhealthyPod {
                    pdb: name(),
                    policy: UnhealthyPodEvictionPolicy::AlwaysAllow
                })
            );
        }
        // IfHealthyBudget (explicit or default): only while currentHealthy ≥ desiredHealthy.
        for policy in [None, Some("IfHealthyBudget")] {
            assert_eq!(
                check_eviction(&unready_pod, &[&pdb(policy, healthy_app)]),
                Ok(EvictionAllowed::UnhealthyPod {
                    pdb: name(),
                    policy: UnhealthyPodEvictionPolicy::IfHealthyBudget
                })
            );
            assert_eq!(
                check_eviction(&unready_pod, &[&pdb(policy, disrupted_app)]),
                Err(EvictionRefusal::BudgetExhausted {
                    pdb: name(),
                    desired_healthy: 2,
                    current_healthy: 1
                })
            );
        }
        // desiredHealthy 0 skips the shortcut and falls back to disruptionsAllowed.
        assert_eq!(
            check_eviction(&unready_pod, &[&pdb(None, status(2, 0, 1))]),
            Ok(EvictionAllowed::WithinBudget {
                pdb: name(),
                disruptions_allowed_after: 0
            })
        );
        assert!(check_eviction(&unready_pod, &[&pdb(None, status(0, 0, 0))]).is_err());
    }

    #[test]
    fn pending_finished_and_terminating_pods_skip_budgets() {
        let full = pdb(None, status(3, 3, 3));
        for p in [
            pod("Pending", false, false),
            pod("Succeeded", false, false),
            pod("Failed", false, false),
            pod("Running", true, true),
        ] {
            assert_eq!(
                check_eviction(&p, &[&full, &full]),
                Ok(EvictionAllowed::BudgetIgnored)
            );
        }
        assert!(check_eviction(&pod("Unknown", true, false), &[&full]).is_err());
    }

    #[test]
    fn other_refusals() {
        let running = pod("Running", true, false);
        let room = pdb(None, status(3, 1, 3));
        let two = check_eviction(&running, &[&room, &room]).unwrap_err();
        assert_eq!(two.http_status(), 500);
        assert!(matches!(two, EvictionRefusal::MultipleBudgets { ref pdbs } if pdbs.len() == 2));

        let mut stale = room.clone();
        stale.metadata.generation = Some(4);
        let refusal = check_eviction(&running, &[&stale]).unwrap_err();
        assert_eq!(
            refusal,
            EvictionRefusal::StatusStale {
                pdb: "openbao".to_owned()
            }
        );
        assert_eq!(
            (refusal.http_status(), refusal.retry_after_seconds()),
            (429, Some(10))
        );

        let mut negative = room.clone();
        negative.status.as_mut().unwrap().disruptions_allowed = Some(-1);
        assert_eq!(
            check_eviction(&running, &[&negative])
                .unwrap_err()
                .http_status(),
            403
        );

        let mut flooded = room.clone();
        flooded.status.as_mut().unwrap().disrupted_pods = Some(
            (0..=MAX_DISRUPTED_PODS)
                .map(|i| (format!("p{i}"), Time(Default::default())))
                .collect(),
        );
        assert!(matches!(
            check_eviction(&running, &[&flooded]),
            Err(EvictionRefusal::TooManyDisruptedPods { .. })
        ));

        let mut no_status = room;
        no_status.status = None;
        no_status.metadata.generation = None;
        assert!(matches!(
            check_eviction(&running, &[&no_status]),
            Err(EvictionRefusal::BudgetExhausted { .. })
        ));
    }

    #[test]
    fn selected_pod_reads_the_pod_object() {
        let p = pod("Running", true, true);
        assert_eq!(
            SelectedPod::from_pod(&p),
            SelectedPod {
                ready: true,
                terminating: true,
                recently_evicted: false,
                has_controller: false
            }
        );
        assert!(!is_pod_ready(&Pod::default()));
    }

    fn budget_strategy() -> impl Strategy<Value = Budget> {
        prop_oneof![
            (0i32..8).prop_map(|n| MinAvailable(Int(n))),
            (0u8..=100).prop_map(|p| MinAvailable(Percent(p))),
            (0i32..8).prop_map(|n| MaxUnavailable(Int(n))),
            (0u8..=100).prop_map(|p| MaxUnavailable(Percent(p))),
        ]
    }

    proptest! {
        /// Evicting, one at a time through the API, every pod the budget
        /// allows never takes currentHealthy below desiredHealthy.
        #[test]
        fn evictions_never_breach_the_budget(
            budget in budget_strategy(),
            healthy in 0usize..8,
            unhealthy in 0usize..4,
            extra_replicas in 0i32..3,
        ) {
            let replicas = (healthy + unhealthy) as i32 + extra_replicas;
            let mut selected = pods(healthy, unhealthy);
            let running = pod("Running", true, false);
            loop {
                let c = pdb_counts(budget, &selected, Some(replicas)).unwrap();
                let object = pdb(None, c);
                match check_eviction(&running, &[&object]) {
                    Ok(EvictionAllowed::WithinBudget { .. }) => {
                        let healthy_after = c.current_healthy - 1;
                        prop_assert!(healthy_after >= c.desired_healthy, "{c:?}");
                        let victim = selected.iter_mut().find(|p| p.counts_as_healthy()).unwrap();
                        victim.recently_evicted = true;
                    }
                    Ok(other) => prop_assert!(false, "unexpected {other:?}"),
                    Err(_) => {
                        prop_assert!(c.disruptions_allowed == 0);
                        break;
                    }
                }
            }
        }

        #[test]
        fn percentages_round_up(p in 0u8..=100, total in 0i32..1000) {
            let scaled = IntOrPercent::Percent(p).scaled(total);
            let exact = f64::from(p) * f64::from(total) / 100.0;
            prop_assert_eq!(f64::from(scaled), exact.ceil());
        }
    }
}
