//! Pod priority: what the `Priority` admission plugin writes into a pod
//! (`spec.priority`, `spec.preemptionPolicy`) from its `priorityClassName`,
//! and the order kube-scheduler's `PrioritySort` pops its queue in.
//!
//! As upstream (`plugin/pkg/admission/priority/admission.go`,
//! `pkg/apis/scheduling/types.go`, and the docs page "Pod Priority and
//! Preemption"):
//!
//! - a named class resolves to its `value` and `preemptionPolicy`
//!   (`PreemptLowerPriority` when unset); the two system classes
//!   `system-cluster-critical` (2000000000) and `system-node-critical`
//!   (2000001000) exist in every cluster; a name no class has is refused;
//! - a pod naming no class gets the `globalDefault: true` class, the one
//!   of lowest value if several claim it, and otherwise priority 0 with
//!   `PreemptLowerPriority`;
//! - a pod that writes `priority` or `preemptionPolicy` itself must write
//!   what the class gives, or it is refused.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::api::scheduling::v1::PriorityClass;

pub use drillbench_model::priority_class_rules::{SYSTEM_CLUSTER_CRITICAL, SYSTEM_NODE_CRITICAL};

/// `preemptionPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PreemptionPolicy {
    /// The pod may preempt pods of lower priority (the default).
    #[default]
    PreemptLowerPriority,
    /// The pod waits for room and never preempts.
    Never,
}

impl PreemptionPolicy {
    fn parse(value: &str) -> Result<PreemptionPolicy, String> {
        match value {
            "PreemptLowerPriority" => Ok(PreemptionPolicy::PreemptLowerPriority),
            "Never" => Ok(PreemptionPolicy::Never),
            other => Err(format!(
                "preemptionPolicy `{other}` is not supported, expected PreemptLowerPriority or Never"
            )),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            PreemptionPolicy::PreemptLowerPriority => "PreemptLowerPriority",
            PreemptionPolicy::Never => "Never",
        }
    }
}

/// What admission resolved for a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Priority {
    pub value: i32,
    pub policy: PreemptionPolicy,
}

impl Priority {
    /// Whether a pod of this priority may preempt one of `victim`
    /// (`DefaultPreemption.isPreemptionAllowed` and
    /// `PodEligibleToPreemptOthers`): strictly lower only, and never for
    /// a `Never` pod.
    pub fn may_preempt(self, victim: i32) -> bool {
        self.policy == PreemptionPolicy::PreemptLowerPriority && victim < self.value
    }
}

/// The order `PrioritySort.Less` pops the scheduling queue in: higher
/// priority first, then the earlier-queued pod. Sort ascending by this key.
pub fn queue_key<T: Ord>(priority: i32, queued_at: T) -> (Reverse<i32>, T) {
    (Reverse(priority), queued_at)
}

/// The cluster's PriorityClasses, the system ones included.
#[derive(Debug, Clone)]
pub struct PriorityClasses {
    by_name: BTreeMap<String, Priority>,
    /// The classes marked `globalDefault`.
    global_defaults: BTreeMap<String, Priority>,
}

impl Default for PriorityClasses {
    /// A cluster's classes before any is created: the system ones.
    fn default() -> Self {
        let system = |value| Priority {
            value,
            policy: PreemptionPolicy::PreemptLowerPriority,
        };
        PriorityClasses {
            by_name: BTreeMap::from([
                (
                    "system-cluster-critical".to_owned(),
                    system(SYSTEM_CLUSTER_CRITICAL),
                ),
                (
                    "system-node-critical".to_owned(),
                    system(SYSTEM_NODE_CRITICAL),
                ),
            ]),
            global_defaults: BTreeMap::new(),
        }
    }
}

impl PriorityClasses {
    /// The classes a cluster with these PriorityClass objects has.
    pub fn new<'a>(
        classes: impl IntoIterator<Item = &'a PriorityClass>,
    ) -> Result<PriorityClasses, String> {
        PriorityClasses::default().with(classes)
    }

    /// These classes with more created (one of the same name replaced).
    pub fn with<'a>(
        &self,
        classes: impl IntoIterator<Item = &'a PriorityClass>,
    ) -> Result<PriorityClasses, String> {
        let mut by_name = self.by_name.clone();
        let mut global_defaults = self.global_defaults.clone();
        for class in classes {
            let name = class.metadata.name.clone().unwrap_or_default();
            let priority = Priority {
                value: class
                    .value
                    .ok_or_else(|| format!("PriorityClass `{name}`: value: Required value"))?,
                policy: match class.preemption_policy.as_deref() {
                    None => PreemptionPolicy::PreemptLowerPriority,
                    Some(p) => PreemptionPolicy::parse(p)
                        .map_err(|e| format!("PriorityClass `{name}`: {e}"))?,
                },
            };
            if class.global_default == Some(true) {
                global_defaults.insert(name.clone(), priority);
            } else {
                global_defaults.remove(&name);
            }
            by_name.insert(name, priority);
        }
        Ok(PriorityClasses {
            by_name,
            global_defaults,
        })
    }

    /// These classes with the one named `name` deleted: pods created
    /// afterwards that name it are refused, and it is no longer a global
    /// default. The built-in system classes cannot be deleted (the API
    /// server recreates them), so they stay.
    pub fn without(&self, name: &str) -> PriorityClasses {
        let mut classes = self.clone();
        if !name.starts_with("system-") {
            classes.by_name.remove(name);
            classes.global_defaults.remove(name);
        }
        classes
    }

    /// Whether a class of this name exists.
    pub fn knows(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// What the Priority admission plugin computes for a pod spec, or its
    /// refusal.
    pub fn resolve(&self, spec: &PodSpec) -> Result<Priority, String> {
        let name = spec.priority_class_name.as_deref().unwrap_or_default();
        let resolved = if name.is_empty() {
            // Several defaults exist only through a race; admission then
            // takes the one of lowest value.
            self.global_defaults
                .values()
                .min_by_key(|p| p.value)
                .copied()
                .unwrap_or_default()
        } else {
            *self
                .by_name
                .get(name)
                .ok_or_else(|| format!("no PriorityClass with name {name} was found"))?
        };
        if let Some(written) = spec.priority
            && written != resolved.value
        {
            return Err(format!(
                "the integer value of priority ({written}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                resolved.value
            ));
        }
        if let Some(written) = spec.preemption_policy.as_deref()
            && written != resolved.policy.as_str()
        {
            return Err(format!(
                "the string value of PreemptionPolicy ({written}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
                resolved.policy.as_str()
            ));
        }
        Ok(resolved)
    }
}

// The admission and queue rows are cases of the conformance suite
// (`tests/it/conformance/priority.rs`).

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str, value: i32, global_default: bool) -> PriorityClass {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name}, "value": value, "globalDefault": global_default,
        }))
        .expect("a PriorityClass")
    }

    fn spec(class: Option<&str>) -> PodSpec {
        PodSpec {
            priority_class_name: class.map(str::to_owned),
            ..PodSpec::default()
        }
    }

    /// A deleted class is as if it never existed to the Priority admission
    /// plugin (`plugin/pkg/admission/priority`): a pod naming it is
    /// refused, and a deleted global default gives pods without a class
    /// nothing. Control: the system classes, which the API server keeps,
    /// stay.
    #[test]
    fn a_deleted_class_resolves_as_one_never_created() {
        let classes = PriorityClasses::new(&[class("vip", 1000, true)]).expect("valid");
        assert_eq!(
            classes.resolve(&spec(Some("vip"))).map(|p| p.value),
            Ok(1000)
        );
        assert_eq!(classes.resolve(&spec(None)).map(|p| p.value), Ok(1000));
        let deleted = classes.without("vip");
        assert_eq!(
            deleted.resolve(&spec(Some("vip"))),
            PriorityClasses::default().resolve(&spec(Some("vip")))
        );
        assert!(deleted.resolve(&spec(Some("vip"))).is_err());
        assert_eq!(deleted.resolve(&spec(None)).map(|p| p.value), Ok(0));
        let kept = deleted.without("system-cluster-critical");
        assert_eq!(
            kept.resolve(&spec(Some("system-cluster-critical")))
                .map(|p| p.value),
            Ok(SYSTEM_CLUSTER_CRITICAL)
        );
    }
}
