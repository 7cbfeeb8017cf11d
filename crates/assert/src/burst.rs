//! Pods outside a guard still reach the autoscaled pools: the guard must
//! not take burst capacity from everything else.

use std::collections::BTreeMap;

use super::placement::pods_match;
use super::{Figures, result};
use drillbench_model::scenario::assertion::Assertion;
use drillbench_model::scenario::spec::BurstAssertion;
use drillbench_observe::{Observation, Placement};
use drillbench_report::{AssertionResult, Evidence, Figure};

pub(super) fn judge(
    assertion: &Assertion,
    b: &BurstAssertion,
    obs: &Observation,
    figures: &mut Figures,
) -> AssertionResult {
    let name = &assertion.name;
    let pools: Vec<&str> = b.pools.iter().map(|p| p.as_str()).collect();
    let burst: Vec<&Placement> = obs
        .placements
        .iter()
        .filter(|p| pods_match(&b.pods, p) && pools.contains(&p.pool.as_str()))
        .collect();
    let ok = !burst.is_empty();
    figures.insert(
        format!("burst-placements.{name}"),
        Figure {
            value: burst.len() as f64,
            unit: "count".to_owned(),
        },
    );
    result(
        assertion,
        ok,
        format!("pods burst onto {}", pools.join(", ")),
        format!("{} placement(s)", burst.len()),
        if ok {
            format!(
                "{} pod(s) outside the guard ran on autoscaler pools",
                burst.len()
            )
        } else {
            "no pod outside the guard reached an autoscaler pool: burst is broken".to_owned()
        },
        burst
            .iter()
            .take(5)
            .map(|p| Evidence {
                at_ms: p.at,
                pod: Some(p.pod.clone()),
                node: Some(p.node.clone()),
                rule: "burst onto autoscaler pools".to_owned(),
                detail: format!("pool {}", p.pool),
                labels: BTreeMap::new(),
            })
            .collect(),
    )
}
