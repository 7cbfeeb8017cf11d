//! The share of the drill's time a subject was available, with every
//! outage as evidence.

use super::series::{outages, subject_series};
use super::{Figures, fact, result, round4};
use drillbench_model::scenario::assertion::Assertion;
use drillbench_model::scenario::spec::{AvailabilityAssertion, Subject};
use drillbench_model::topology::Topology;
use drillbench_observe::Time;
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
    let (series, label) = match (&a.of.value, &a.min_ready) {
        (Subject::Workload(key), Some(min)) => (
            floor_series(obs, key, min.value),
            format!("workload {key} with at least {} Ready", min.value),
        ),
        _ => subject_series(&a.of, obs, topology),
    };
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
        match &a.min_ready {
            Some(min) => format!(">= {} with >= {} Ready", a.at_least.value, min.value),
            None => format!(">= {}", a.at_least.value),
        },
        format!("{:.4}", ratio),
        format!(
            "{label} was available {:.2} % of the {} the drill ran",
            ratio * 100.0,
            format_ms(window)
        ),
        evidence,
    )
}

/// A workload counted up while `min` of its replicas are Ready, or all of
/// them when fewer are desired (a workload scaled to one has one to lose).
fn floor_series(obs: &Observation, key: &str, min: u32) -> Vec<(Time, bool)> {
    obs.workloads.get(key).map_or_else(Vec::new, |s| {
        s.points
            .iter()
            .map(|&(t, ready, desired)| (t, ready >= desired.min(min)))
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_observe::WorkloadSeries;

    fn web(points: Vec<(Time, u32, u32)>) -> Observation {
        let mut obs = Observation::default();
        obs.workloads
            .insert("apps/Deployment/web".to_owned(), WorkloadSeries { points });
        obs
    }

    /// A floor of 2 holds with one replica of three away, fails with two
    /// away; a workload scaled to one is up with its one replica.
    #[test]
    fn a_floor_counts_the_ready_replicas_it_needs() {
        let obs = web(vec![
            (0, 3, 3),
            (10, 2, 3),
            (20, 1, 3),
            (30, 1, 1),
            (40, 0, 1),
        ]);
        let up = |min| -> Vec<bool> {
            floor_series(&obs, "apps/Deployment/web", min)
                .iter()
                .map(|p| p.1)
                .collect()
        };
        assert_eq!(up(2), [true, true, false, true, false]);
        assert_eq!(up(3), [true, false, false, true, false]);
        assert_eq!(up(1), [true, true, true, true, false]);
        assert!(floor_series(&obs, "apps/Deployment/api", 2).is_empty());
    }
}
