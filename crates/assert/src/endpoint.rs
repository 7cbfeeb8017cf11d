//! The stable endpoint kept one address and answered at the end, so no
//! client needed new credentials.

use super::{fact, result};
use drillbench_model::scenario::assertion::Assertion;
use drillbench_observe::Observation;
use drillbench_report::AssertionResult;

pub(super) fn judge(assertion: &Assertion, obs: &Observation) -> AssertionResult {
    let mut addresses: Vec<&str> = obs
        .endpoint_addresses
        .iter()
        .map(|(_, a)| a.as_str())
        .collect();
    addresses.dedup();
    let reachable = obs.api.last().is_some_and(|(_, up)| *up);
    let ok = addresses.len() == 1 && reachable;
    result(
        assertion,
        ok,
        "one address, reachable at the end".to_owned(),
        format!("{} address(es): {}", addresses.len(), addresses.join(", ")),
        if ok {
            format!(
                "clients kept using {} without a credential refresh",
                addresses[0]
            )
        } else if !reachable {
            "the API was not reachable through the endpoint at the end".to_owned()
        } else {
            "the endpoint's address changed: clients need new credentials".to_owned()
        },
        {
            let mut evidence: Vec<_> = obs
                .endpoint_addresses
                .iter()
                .map(|(at, a)| fact(*at, "the stable endpoint's address", a.clone()))
                .collect();
            // When the address outlived its server, say when it stopped
            // answering for good: from then on clients needed a new one.
            if !reachable && let Some((down, _)) = obs.api.last() {
                evidence.push(fact(
                    *down,
                    "the API answers through the address clients hold",
                    format!(
                        "{} stopped answering and never answered again",
                        addresses.last().copied().unwrap_or("the endpoint")
                    ),
                ));
            }
            evidence
        },
    )
}
