//! Every node belongs to a pool something manages: nodes of a removed
//! pool count against `maxNodesTotal` and are never scaled down.

use super::result;
use drillbench_model::scenario::assertion::Assertion;
use drillbench_observe::Observation;
use drillbench_report::{AssertionResult, Evidence};
use std::collections::BTreeMap;

pub(super) fn judge(assertion: &Assertion, obs: &Observation) -> AssertionResult {
    let ok = obs.stranded_nodes.is_empty();
    result(
        assertion,
        ok,
        "none".to_owned(),
        format!("{} stranded node(s)", obs.stranded_nodes.len()),
        if ok {
            "every node belongs to a pool something manages".to_owned()
        } else {
            "nodes of a removed pool still run, counted against maxNodesTotal and never scaled down"
                .to_owned()
        },
        obs.stranded_nodes
            .iter()
            .map(|(at, n)| Evidence {
                at_ms: *at,
                pod: None,
                node: Some(n.clone()),
                rule: "a node belongs to a managed pool".to_owned(),
                detail: "no autoscaler pool or static pool accounts for it".to_owned(),
                labels: BTreeMap::new(),
            })
            .collect(),
    )
}
