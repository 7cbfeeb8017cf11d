//! A step as the runner sees it: a label and exactly one action. The file
//! keeps one optional field per action (`- name: x` beside `fault: {…}`);
//! validation proves exactly one is set, and [`Step::lower`] turns it into
//! an enum, so the runner matches instead of probing options and a new
//! action is a compile error wherever it is not handled.

use super::located::Located;
use super::spec::{Condition, Fault, PreflightStep, RolloutStep, ScaleStep, StepSpec};
use crate::duration::Duration;

/// A validated step.
#[derive(Debug, Clone)]
pub struct Step {
    /// As the report names it: the step's `name`, else `step N`.
    pub label: String,
    pub action: Action,
}

#[derive(Debug, Clone)]
pub enum Action {
    /// Go/no-go guards before a destructive fault; a no-go stops the drill.
    Preflight(PreflightStep),
    /// Inject a fault (kept with its place in the file).
    Fault(Located<Fault>),
    /// Change a workload's replica count.
    Scale(ScaleStep),
    /// Change a Deployment's pod template.
    Rollout(RolloutStep),
    /// Let drill time pass.
    Sleep(Duration),
    /// Wait for a condition, and stop the drill if it does not hold in time.
    WaitUntil {
        condition: Condition,
        timeout: Duration,
    },
}

impl Action {
    /// Whether the step changes the cluster (a read-only cluster refuses it).
    pub fn changes_the_cluster(&self) -> bool {
        matches!(self, Action::Fault(_) | Action::Scale(_))
    }
}

impl StepSpec {
    /// How many actions the written step sets. The destructuring is
    /// exhaustive, so a new action cannot be left out of the count.
    pub(crate) fn actions_set(&self) -> usize {
        let StepSpec {
            name: _,
            preflight,
            fault,
            scale,
            rollout,
            wait,
        } = self;
        [
            preflight.is_some(),
            fault.is_some(),
            scale.is_some(),
            rollout.is_some(),
            wait.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }
}

impl Step {
    /// The typed step of a written one (the `index`th, from 0) that sets
    /// exactly one action, and for a wait exactly one of `for` and `until`
    /// with a timeout, as validation requires; `None` otherwise.
    pub fn lower(spec: &StepSpec, index: usize) -> Option<Step> {
        if spec.actions_set() != 1 {
            return None;
        }
        let action = if let Some(preflight) = &spec.preflight {
            Action::Preflight(preflight.clone())
        } else if let Some(fault) = &spec.fault {
            Action::Fault(fault.clone())
        } else if let Some(scale) = &spec.scale {
            Action::Scale(scale.clone())
        } else if let Some(rollout) = &spec.rollout {
            Action::Rollout(rollout.clone())
        } else {
            let wait = spec.wait.as_ref()?;
            match (wait.duration, &wait.until, wait.timeout) {
                (Some(duration), None, _) => Action::Sleep(duration),
                (None, Some(until), Some(timeout)) => Action::WaitUntil {
                    condition: until.value.clone(),
                    timeout,
                },
                _ => return None,
            }
        };
        Some(Step {
            label: spec
                .name
                .clone()
                .unwrap_or_else(|| format!("step {}", index + 1)),
            action,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> StepSpec {
        serde_saphyr::from_str(yaml).expect("a step")
    }

    #[test]
    fn one_action_lowers_and_is_labelled_by_name_or_position() {
        let named = Step::lower(&spec("name: settle\nwait: {for: 1m}\n"), 0).expect("one action");
        assert_eq!(named.label, "settle");
        assert!(matches!(named.action, Action::Sleep(d) if d == Duration::from_mins(1)));
        let unnamed = Step::lower(&spec("wait: {for: 1m}\n"), 2).expect("one action");
        assert_eq!(unnamed.label, "step 3");
        let two = spec("wait: {for: 1m}\nscale: {workload: a/Deployment/b, replicas: 1}\n");
        assert_eq!(two.actions_set(), 2);
        assert!(Step::lower(&two, 0).is_none());
    }

    #[test]
    fn a_wait_lowers_only_as_a_sleep_or_a_bounded_condition() {
        let bounded = spec("wait: {until: allWorkloadsReady, timeout: 5m}\n");
        assert!(matches!(
            Step::lower(&bounded, 0).expect("bounded").action,
            Action::WaitUntil { timeout, .. } if timeout == Duration::from_mins(5)
        ));
        assert!(Step::lower(&spec("wait: {until: allWorkloadsReady}\n"), 0).is_none());
        assert!(Step::lower(&spec("wait: {for: 1m, until: allWorkloadsReady}\n"), 0).is_none());
        assert!(Step::lower(&spec("wait: {}\n"), 0).is_none());
    }

    #[test]
    fn only_faults_and_scaling_change_the_cluster() {
        let scale = spec("scale: {workload: a/Deployment/b, replicas: 1}\n");
        assert!(
            Step::lower(&scale, 0)
                .expect("scale")
                .action
                .changes_the_cluster()
        );
        let wait = spec("wait: {for: 1m}\n");
        assert!(
            !Step::lower(&wait, 0)
                .expect("wait")
                .action
                .changes_the_cluster()
        );
    }
}
