//! No eviction took a PodDisruptionBudget below what it protects.

use std::collections::BTreeMap;

use super::result;
use drillbench_model::scenario::assertion::Assertion;
use drillbench_observe::Observation;
use drillbench_report::{AssertionResult, Evidence};

pub(super) fn judge(assertion: &Assertion, obs: &Observation) -> AssertionResult {
    let evidence: Vec<Evidence> = obs
        .budget_breaches
        .iter()
        .map(|b| Evidence {
            at_ms: b.at,
            pod: Some(b.pod.clone()),
            node: None,
            rule: format!("PodDisruptionBudget {}", b.pdb),
            detail: format!(
                "{} healthy after the eviction, {} desired",
                b.healthy, b.desired
            ),
            labels: BTreeMap::new(),
        })
        .collect();
    let ok = evidence.is_empty();
    result(
        assertion,
        ok,
        "no eviction below budget".to_owned(),
        format!("{} breach(es)", evidence.len()),
        if ok {
            "every eviction respected its budget".to_owned()
        } else {
            "an eviction took a budget below what it protects".to_owned()
        },
        evidence,
    )
}
