//! No single-attach volume stayed attached to a node that departed.

use std::collections::BTreeMap;

use super::result;
use drillbench_model::scenario::assertion::Assertion;
use drillbench_observe::Observation;
use drillbench_report::{AssertionResult, Evidence, format_ms};

pub(super) fn judge(assertion: &Assertion, obs: &Observation) -> AssertionResult {
    let stranded: Vec<Evidence> = obs
        .strandings
        .iter()
        .filter(|s| s.released.is_none())
        .map(|s| Evidence {
            at_ms: s.since,
            pod: None,
            node: Some(s.node.clone()),
            rule: "a single-attach volume must not stay attached to a departed node".to_owned(),
            detail: format!(
                "{} still attached to {} at the end, {} after the node departed",
                s.claim,
                s.node,
                format_ms(obs.end - s.since)
            ),
            labels: BTreeMap::new(),
        })
        .collect();
    let ok = stranded.is_empty();
    result(
        assertion,
        ok,
        "none stranded".to_owned(),
        format!("{} stranded", stranded.len()),
        if ok {
            "no volume stayed attached to a departed node".to_owned()
        } else {
            "volumes stayed attached to departed nodes".to_owned()
        },
        stranded,
    )
}
