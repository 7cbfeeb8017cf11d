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
//! use drillbench_model::k8s::disruption::{pdb_counts, Budget, IntOrPercent, SelectedPod};
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
//! # Ok::<(), drillbench_model::k8s::disruption::DisruptionError>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::{
    PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube_core::{Selector, SelectorExt};

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
        value: i32,
    },
    /// A string that is not `<digits>%`, or a percentage above 100.
    #[error("{field} must be an integer or a percentage from 0% to 100%, got `{value}`")]
    InvalidPercent {
        /// `minAvailable` or `maxUnavailable`.
        field: &'static str,
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
        pdb: String,
        /// The policy that allowed it.
        policy: UnhealthyPodEvictionPolicy,
    },
    /// The budget had room; `disruptionsAllowed` drops by one and the pod is
    /// recorded in `status.disruptedPods`.
    WithinBudget {
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
    StatusStale { pdb: String },
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
    NegativeDisruptionsAllowed { pdb: String },
    /// Too many evictions await the controller (403).
    #[error(
        "pdb {pdb}: disruptedPods map too big - too many evictions not confirmed by pdb controller"
    )]
    TooManyDisruptedPods { pdb: String },
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
mod tests;
