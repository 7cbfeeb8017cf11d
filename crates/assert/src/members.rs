//! Every etcd member that joined as a learner was promoted to voter; a
//! drill in which none joined fails, since nothing was shown.

use super::{fact, result};
use drillbench_model::scenario::assertion::Assertion;
use drillbench_observe::Observation;
use drillbench_report::{AssertionResult, Evidence, format_ms};

pub(super) fn judge(assertion: &Assertion, obs: &Observation) -> AssertionResult {
    let joined = obs.learners.len();
    let unpromoted: Vec<Evidence> = obs
        .learners
        .iter()
        .filter(|(_, _, p)| p.is_none())
        .map(|(at, m, _)| {
            fact(
                *at,
                "a learner is promoted to voter",
                format!("{m} joined as a learner and was never promoted"),
            )
        })
        .collect();
    let promoted: Vec<Evidence> = obs
        .learners
        .iter()
        .filter_map(|(at, m, p)| {
            p.map(|p| {
                fact(
                    p,
                    "a learner is promoted to voter",
                    format!(
                        "{m} joined at {} and was promoted after {}",
                        format_ms(*at),
                        format_ms(p - at)
                    ),
                )
            })
        })
        .collect();
    let ok = joined > 0 && unpromoted.is_empty();
    result(
        assertion,
        ok,
        "every new member promoted".to_owned(),
        format!("{} of {joined} promoted", joined - unpromoted.len()),
        if joined == 0 {
            "no member joined etcd during the drill".to_owned()
        } else if ok {
            "every member that joined was promoted".to_owned()
        } else {
            "a member that joined was never promoted".to_owned()
        },
        if ok { promoted } else { unpromoted },
    )
}
