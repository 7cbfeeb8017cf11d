//! Recovery point: what a restore lost, measured from acknowledged writes
//! where writers ran, else from the backup's capture point.

use super::{Figures, fact, ms, result};
use drillbench_model::scenario::assertion::Assertion;
use drillbench_model::scenario::spec::RpoAssertion;
use drillbench_observe::Observation;
use drillbench_report::{AssertionResult, format_ms};

pub(super) fn judge(
    assertion: &Assertion,
    r: &RpoAssertion,
    obs: &Observation,
    figures: &mut Figures,
) -> AssertionResult {
    let name = &assertion.name;
    let within = r.within.as_millis();
    match obs
        .restores
        .iter()
        .find(|(_, _, s)| s == r.schedule.as_str())
    {
        Some(&(lost_at, _, _))
            if obs
                .data_loss
                .iter()
                .any(|d| d.schedule == r.schedule.as_str() && d.lost_at == lost_at) =>
        {
            // Writers measured what was lost: the window ends at the
            // last acknowledged write the restore lost, not at the loss.
            let losses: Vec<_> = obs
                .data_loss
                .iter()
                .filter(|d| d.schedule == r.schedule.as_str() && d.lost_at == lost_at)
                .collect();
            let window = losses.iter().map(|d| d.window()).max().unwrap_or(0);
            figures.insert(format!("rpo.{name}"), ms(window));
            let lost: u64 = losses.iter().map(|d| d.lost_writes).sum();
            result(
                assertion,
                window <= within,
                format!("<= {}", format_ms(within)),
                format_ms(window),
                format!(
                    "{lost} acknowledged write(s) lost; the newest was written {} after the capture point",
                    format_ms(window)
                ),
                losses
                    .iter()
                    .map(|d| {
                        fact(
                            lost_at,
                            "acknowledged writes lost in the restore",
                            format!(
                                "{}: {} write(s) after the capture point, the last {} after it",
                                d.writer,
                                d.lost_writes,
                                format_ms(d.window())
                            ),
                        )
                    })
                    .collect(),
            )
        }
        Some(&(lost_at, captured, _)) => {
            let window = (lost_at as i64).saturating_sub(captured).max(0) as u64;
            figures.insert(format!("rpo.{name}"), ms(window));
            result(
                assertion,
                window <= within,
                format!("<= {}", format_ms(within)),
                format_ms(window),
                format!(
                    "data written in the last {} before the loss was lost",
                    format_ms(window)
                ),
                vec![fact(
                    lost_at,
                    "restore from the newest usable backup",
                    format!(
                        "restored to its capture point {} before the loss",
                        format_ms(window)
                    ),
                )],
            )
        }
        None => result(
            assertion,
            false,
            format!("<= {}", format_ms(within)),
            "no restore".to_owned(),
            format!("no restore from {} happened", r.schedule.value),
            Vec::new(),
        ),
    }
}
