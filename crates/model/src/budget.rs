//! Budgets: how large a drill may be before `bench validate` refuses it, so
//! a drill that would exhaust the machine ends in exit 2 with a location
//! instead of an OOM or a hang (issue 19 item 2: `replicas: 10000000` ate
//! 8.8 GB, a pool of 1 000 000 nodes and `wait: {for: 100000h}` never ended).
//!
//! The defaults fit the CI machine class (2 cores, 24 GiB) with room: the
//! scale harness (5 000 nodes, 150 000 pods) runs in 342 MB and a few
//! seconds, and the simulated clock advances in event steps whose count
//! grows with drill time. A drill raises any of them under `budgets:`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::duration::Duration;
use crate::scenario::Located;

/// Events per run by default. An event is a few hundred bytes (names, a
/// message), so the timeline stays under a gigabyte, and a report of this
/// many events is still written in seconds.
const DEFAULT_EVENTS: u64 = 2_000_000;

/// Simulator actions per run by default.
const DEFAULT_SIMULATOR_ACTIONS: u64 = 20_000_000;

/// The limits a drill runs within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Nodes at the largest the cluster can grow: control planes, static
    /// pools, autoscaled pools at their maximum.
    pub nodes: u64,
    /// Pods the workloads ask for at once: replicas, job parallelism, a
    /// DaemonSet's pod on every node, and every scale step's target.
    pub pods: u64,
    /// Kubernetes objects the drill deploys.
    pub objects: u64,
    /// Drill time the steps let pass (waits and wait timeouts).
    pub simulated_time: Duration,
    /// Steps of the drill.
    pub steps: u64,
    /// Attempts of one recovery step (`maxAttempts`).
    pub recovery_attempts: u64,
    /// Events one run records on its timeline (checked while it runs: how
    /// many a drill produces depends on what the cluster does).
    pub events: u64,
    /// Actions the simulator's event loop takes in one run (a pod started,
    /// a node lost, a retry): the simulated run's length in steps, which
    /// bounds its wall time (checked while it runs).
    pub simulator_actions: u64,
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets {
            nodes: 10_000,
            pods: 200_000,
            objects: 100_000,
            simulated_time: Duration::from_mins(1_000 * 60),
            steps: 1_000,
            recovery_attempts: 1_000,
            events: DEFAULT_EVENTS,
            simulator_actions: DEFAULT_SIMULATOR_ACTIONS,
        }
    }
}

/// `budgets:` in a drill: each limit it raises (or lowers) from the default.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BudgetSpec {
    /// Most nodes (default 10 000).
    #[serde(default)]
    pub nodes: Option<Located<u64>>,
    /// Most pods at once (default 200 000).
    #[serde(default)]
    pub pods: Option<Located<u64>>,
    /// Most Kubernetes objects (default 100 000).
    #[serde(default)]
    pub objects: Option<Located<u64>>,
    /// Most drill time the steps let pass (default 1000h).
    #[serde(default)]
    pub simulated_time: Option<Located<Duration>>,
    /// Most steps (default 1 000).
    #[serde(default)]
    pub steps: Option<Located<u64>>,
    /// Most attempts of one recovery step (default 1 000).
    #[serde(default)]
    pub recovery_attempts: Option<Located<u64>>,
    /// Most events one run records (default 2 000 000).
    #[serde(default)]
    pub events: Option<Located<u64>>,
    /// Most actions the simulator takes in one run (default 20 000 000).
    #[serde(default)]
    pub simulator_actions: Option<Located<u64>>,
}

impl Budgets {
    /// The defaults with a drill's overrides applied.
    pub fn of(spec: Option<&BudgetSpec>) -> Budgets {
        let mut budgets = Budgets::default();
        if let Some(spec) = spec {
            let pick = |value: &Option<Located<u64>>, default: u64| {
                value.as_ref().map_or(default, |v| v.value)
            };
            budgets.nodes = pick(&spec.nodes, budgets.nodes);
            budgets.pods = pick(&spec.pods, budgets.pods);
            budgets.objects = pick(&spec.objects, budgets.objects);
            budgets.steps = pick(&spec.steps, budgets.steps);
            budgets.recovery_attempts = pick(&spec.recovery_attempts, budgets.recovery_attempts);
            budgets.events = pick(&spec.events, budgets.events);
            budgets.simulator_actions = pick(&spec.simulator_actions, budgets.simulator_actions);
            if let Some(time) = &spec.simulated_time {
                budgets.simulated_time = time.value;
            }
        }
        budgets
    }
}

/// The sentence of a budget exceeded: what the drill asks for, the budget
/// it exceeds, and how to raise it.
pub fn exceeded(asked: &str, name: &str, limit: impl std::fmt::Display) -> String {
    format!(
        "{asked}, above the budget `budgets.{name}` of {limit}; expected at most that, or a higher `budgets.{name}` in the drill if the machine can take it"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_replace_only_what_they_name() {
        let spec = BudgetSpec {
            pods: Some(Located::new(5)),
            simulated_time: Some(Located::new(Duration::from_mins(1))),
            ..BudgetSpec::default()
        };
        let budgets = Budgets::of(Some(&spec));
        assert_eq!(budgets.pods, 5);
        assert_eq!(budgets.simulated_time, Duration::from_mins(1));
        assert_eq!(budgets.nodes, Budgets::default().nodes);
        assert_eq!(Budgets::of(None), Budgets::default());
    }
}
