//! PodDisruptionBudgets: the disruption controller's status (what
//! `disruptionsAllowed` is for a budget and its pods) and the eviction
//! API's decision (`pods/eviction` against the budget's status).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use serde_json::{Value, json};

use super::{Behaviour, Pair, Source, from_json, pair, row};
use drillbench_model::k8s::disruption::{
    Budget, IntOrPercent, PdbCounts, SelectedPod, check_eviction, pdb_counts,
};

fn pod(ready: bool) -> SelectedPod {
    SelectedPod {
        ready,
        terminating: false,
        recently_evicted: false,
        has_controller: true,
    }
}

/// `disruptionsAllowed` for a budget over pods (ready or not), with the
/// controllers' replicas; the error when it cannot be computed.
fn allowed(budget: Budget, ready: &[bool], replicas: Option<i32>) -> Result<i32, String> {
    let pods: Vec<SelectedPod> = ready.iter().map(|&r| pod(r)).collect();
    pdb_counts(budget, &pods, replicas)
        .map(|c: PdbCounts| c.disruptions_allowed)
        .map_err(|e| e.to_string())
}

/// A pod in `phase`, Ready or not.
fn live(phase: &str, ready: bool) -> Pod {
    from_json(json!({
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "web"}},
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]},
    }))
}

/// A budget `web` with this spec and status (generation 1, observed 1
/// unless the status says otherwise).
fn budget(spec: Value, status: Value) -> PodDisruptionBudget {
    let mut status = status;
    if status.get("observedGeneration").is_none() {
        status["observedGeneration"] = json!(1);
    }
    from_json(json!({
        "metadata": {"name": "web", "namespace": "default", "generation": 1},
        "spec": spec,
        "status": status,
    }))
}

/// What the eviction API answers: `allowed: …` or the HTTP status.
fn evict(pod: &Pod, budgets: &[&PodDisruptionBudget]) -> String {
    match check_eviction(pod, budgets) {
        Ok(a) => format!("allowed: {a}"),
        Err(e) => format!("{} {e}", e.http_status()),
    }
}

fn healthy(current: i32, desired: i32, allowed: i32) -> Value {
    json!({"currentHealthy": current, "desiredHealthy": desired, "disruptionsAllowed": allowed, "expectedPods": 3})
}

pub(super) fn pairs() -> Vec<Pair> {
    let controller = |case, control| {
        pair(
            Source::Disruption,
            Behaviour::DisruptionBudget,
            case,
            control,
        )
    };
    let eviction =
        |case, control| pair(Source::Eviction, Behaviour::DisruptionBudget, case, control);
    let min = |n| Budget::MinAvailable(IntOrPercent::Int(n));
    let min_pct = |p| Budget::MinAvailable(IntOrPercent::Percent(p));
    let max = |n| Budget::MaxUnavailable(IntOrPercent::Int(n));
    let max_pct = |p| Budget::MaxUnavailable(IntOrPercent::Percent(p));
    let web = budget(
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
        healthy(3, 2, 1),
    );
    let spent = budget(
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
        healthy(2, 2, 0),
    );
    let always = budget(
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}, "unhealthyPodEvictionPolicy": "AlwaysAllow"}),
        healthy(1, 2, 0),
    );
    let if_healthy = budget(
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
        healthy(1, 2, 0),
    );
    let stale = budget(
        json!({"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}),
        json!({"currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1, "observedGeneration": 0}),
    );
    vec![
        controller(
            row(
                "minAvailable 2 of 3 healthy pods allows one disruption",
                allowed(min(2), &[true; 3], None),
                Ok::<_, String>(1),
            ),
            row(
                "minAvailable 3 of 3 healthy pods allows none",
                allowed(min(3), &[true; 3], None),
                Ok::<_, String>(0),
            ),
        ),
        controller(
            row(
                "an unready pod is not healthy: minAvailable 2 with 2 of 3 ready allows none",
                allowed(min(2), &[true, true, false], None),
                Ok::<_, String>(0),
            ),
            row(
                "control: all three ready",
                allowed(min(2), &[true, true, true], None),
                Ok::<_, String>(1),
            ),
        ),
        controller(
            row(
                "minAvailable 50% of 3 rounds up to 2: one disruption",
                allowed(min_pct(50), &[true; 3], Some(3)),
                Ok::<_, String>(1),
            ),
            row(
                "minAvailable 67% of 3 rounds up to 3: none",
                allowed(min_pct(67), &[true; 3], Some(3)),
                Ok::<_, String>(0),
            ),
        ),
        controller(
            row(
                "maxUnavailable 1 of a 3-replica controller allows one",
                allowed(max(1), &[true; 3], Some(3)),
                Ok::<_, String>(1),
            ),
            row(
                "maxUnavailable 0 allows none",
                allowed(max(0), &[true; 3], Some(3)),
                Ok::<_, String>(0),
            ),
        ),
        controller(
            row(
                "maxUnavailable 1 counts the controller's replicas: 4 wanted, 3 healthy, none left",
                allowed(max(1), &[true; 3], Some(4)),
                Ok::<_, String>(0),
            ),
            row(
                "control: 3 wanted, 3 healthy",
                allowed(max(1), &[true; 3], Some(3)),
                Ok::<_, String>(1),
            ),
        ),
        controller(
            row(
                "maxUnavailable 34% of 3 rounds up to 2 unavailable",
                allowed(max_pct(34), &[true; 3], Some(3)),
                Ok::<_, String>(2),
            ),
            row(
                "maxUnavailable 33% of 3 rounds up to 1 unavailable",
                allowed(max_pct(33), &[true; 3], Some(3)),
                Ok::<_, String>(1),
            ),
        ),
        controller(
            row(
                "a percentage budget over pods without a scale (naked pods) cannot be computed",
                allowed(min_pct(50), &[true; 3], None).is_err(),
                true,
            ),
            row(
                "an integer minAvailable over the same pods can",
                allowed(min(1), &[true; 3], None).is_err(),
                false,
            ),
        ),
        controller(
            row(
                "a budget with neither field allows no disruption",
                allowed(Budget::Unset, &[true; 3], Some(3)),
                Ok::<_, String>(0),
            ),
            row(
                "control: minAvailable 0 allows every pod to go",
                allowed(min(0), &[true; 3], Some(3)),
                Ok::<_, String>(3),
            ),
        ),
        eviction(
            row(
                "a Running Ready pod is evicted while the budget has a disruption left",
                evict(&live("Running", true), &[&web]),
                "allowed: budget web allows it; 0 disruptions left",
            ),
            row(
                "the eviction is refused with 429 when disruptionsAllowed is 0",
                evict(&live("Running", true), &[&spent]),
                "429 cannot evict pod as it would violate the pod's disruption budget: the disruption budget web needs 2 healthy pods and has 2 currently",
            ),
        ),
        eviction(
            row(
                "a Pending pod is evicted whatever the budget says",
                evict(&live("Pending", false), &[&spent]).starts_with("allowed"),
                true,
            ),
            row(
                "control: the same pod Running and Ready is refused",
                evict(&live("Running", true), &[&spent]).starts_with("allowed"),
                false,
            ),
        ),
        eviction(
            row(
                "unhealthyPodEvictionPolicy AlwaysAllow lets an unready pod go with the budget spent",
                evict(&live("Running", false), &[&always]).starts_with("allowed"),
                true,
            ),
            row(
                "IfHealthyBudget (the default) refuses an unready pod while the budget is not healthy",
                evict(&live("Running", false), &[&if_healthy]).starts_with("allowed"),
                false,
            ),
        ),
        eviction(
            row(
                "a pod two budgets cover is refused with 500",
                evict(&live("Running", true), &[&web, &web])
                    .split(' ')
                    .next()
                    .map(str::to_owned),
                Some("500".to_owned()),
            ),
            row(
                "control: one budget covering it",
                evict(&live("Running", true), &[&web])
                    .split(' ')
                    .next()
                    .map(str::to_owned),
                Some("allowed:".to_owned()),
            ),
        ),
        eviction(
            row(
                "a budget whose status the controller has not caught up with refuses with 429",
                evict(&live("Running", true), &[&stale])
                    .split(' ')
                    .next()
                    .map(str::to_owned),
                Some("429".to_owned()),
            ),
            row(
                "control: the status observed the budget's generation",
                evict(&live("Running", true), &[&web])
                    .split(' ')
                    .next()
                    .map(str::to_owned),
                Some("allowed:".to_owned()),
            ),
        ),
    ]
}
