//! etcd kept quorum, or lost it for no longer than allowed. A backend
//! that never observed membership fails it: no evidence is not quorum kept.

use super::{Figures, fact, ms, result};
use drillbench_model::duration::Duration;
use drillbench_model::scenario::assertion::Assertion;
use drillbench_model::scenario::spec::QuorumAssertion;
use drillbench_observe::{Observation, time_false};
use drillbench_report::{AssertionResult, format_ms};

pub(super) fn judge(
    assertion: &Assertion,
    q: &QuorumAssertion,
    obs: &Observation,
    figures: &mut Figures,
) -> AssertionResult {
    if obs.quorum.is_empty() {
        // A backend that cannot read etcd membership (an existing cluster
        // without its machines) must not report quorum kept on no evidence.
        return result(
            assertion,
            false,
            "never lost".to_owned(),
            "not observed".to_owned(),
            "etcd quorum was never observed on this backend, so it cannot be said to have held"
                .to_owned(),
            Vec::new(),
        );
    }
    let name = &assertion.name;
    let lost = time_false(&obs.quorum, obs.start, obs.end);
    let allowed = q.max_loss.unwrap_or(Duration::ZERO).as_millis();
    figures.insert(format!("quorum-lost.{name}"), ms(lost));
    let evidence = obs
        .quorum
        .iter()
        .filter(|(_, q)| !q)
        .map(|&(at, _)| {
            fact(
                at,
                "quorum = a majority of voting members healthy",
                "etcd lost quorum".to_owned(),
            )
        })
        .collect();
    result(
        assertion,
        lost <= allowed,
        if allowed == 0 {
            "never lost".to_owned()
        } else {
            format!("lost <= {}", format_ms(allowed))
        },
        if lost == 0 {
            "never lost".to_owned()
        } else {
            format!("lost for {}", format_ms(lost))
        },
        if lost <= allowed {
            "etcd kept quorum".to_owned()
        } else {
            format!("etcd was without quorum for {}", format_ms(lost))
        },
        evidence,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_model::scenario::assertion::AssertionKind;
    use drillbench_report::Verdict;

    #[test]
    fn quorum_never_observed_is_not_quorum_kept() {
        let spec: drillbench_model::scenario::spec::AssertionSpec =
            serde_saphyr::from_str("name: quorum-kept\nquorum: {}\n").expect("spec");
        let assertion = Assertion::lower(&spec).expect("one kind");
        let AssertionKind::Quorum(q) = &assertion.kind else {
            panic!("a quorum assertion");
        };
        let mut obs = Observation {
            end: 60_000,
            ..Observation::default()
        };
        let unseen = judge(&assertion, q, &obs, &mut Figures::new());
        assert_eq!(unseen.verdict, Verdict::Fail, "{unseen:?}");
        assert_eq!(unseen.measured, "not observed");
        obs.quorum.push((0, true));
        let seen = judge(&assertion, q, &obs, &mut Figures::new());
        assert_eq!(seen.verdict, Verdict::Pass);
    }
}
