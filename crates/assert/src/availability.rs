//! The share of the drill's time a subject was available, with every
//! outage as evidence.

use super::series::{outages, subject_series};
use super::{Figures, fact, result, round4};
use drillbench_model::scenario::assertion::Assertion;
use drillbench_model::scenario::spec::AvailabilityAssertion;
use drillbench_model::topology::Topology;
use drillbench_observe::{Observation, time_false};
use drillbench_report::{AssertionResult, Figure, format_ms};

pub(super) fn judge(
    assertion: &Assertion,
    a: &AvailabilityAssertion,
    obs: &Observation,
    topology: &Topology,
    figures: &mut Figures,
) -> AssertionResult {
    let name = &assertion.name;
    let (series, label) = subject_series(&a.of, obs, topology);
    let window = obs.end.saturating_sub(obs.start);
    let down = time_false(&series, obs.start, obs.end);
    let ratio = if window == 0 {
        1.0
    } else {
        1.0 - down as f64 / window as f64
    };
    figures.insert(
        format!("availability.{name}"),
        Figure {
            value: round4(ratio),
            unit: "ratio".to_owned(),
        },
    );
    let evidence = outages(&series, obs.end)
        .into_iter()
        .filter(|(_, to)| *to > obs.start)
        .map(|(from, to)| {
            fact(
                from,
                &format!("{label} available"),
                format!("unavailable for {}", format_ms(to - from)),
            )
        })
        .collect();
    result(
        assertion,
        ratio + 1e-12 >= a.at_least.value,
        format!(">= {}", a.at_least.value),
        format!("{:.4}", ratio),
        format!(
            "{label} was available {:.2} % of the {} the drill ran",
            ratio * 100.0,
            format_ms(window)
        ),
        evidence,
    )
}
