//! Recovery time: from the first fault to the start of the subject's last
//! whole stretch, and, where a runbook ran, the automated part on its own.
//! No fault is a failure: there was nothing to recover from.

use super::series::{recovery, subject_series};
use super::{Figures, fact, ms, result};
use drillbench_model::scenario::assertion::Assertion;
use drillbench_model::scenario::spec::RtoAssertion;
use drillbench_model::topology::Topology;
use drillbench_observe::Observation;
use drillbench_report::{AssertionResult, format_ms};

pub(super) fn judge(
    assertion: &Assertion,
    r: &RtoAssertion,
    obs: &Observation,
    topology: &Topology,
    figures: &mut Figures,
) -> AssertionResult {
    let name = &assertion.name;
    let (series, label) = subject_series(&r.of, obs, topology);
    let fault = obs.faults.first().map(|(t, _)| *t);
    let within = r.within.as_millis();
    match (fault, recovery(&series, fault.unwrap_or(0), obs.end)) {
        (None, _) => result(
            assertion,
            false,
            format!("<= {}", format_ms(within)),
            "no fault".to_owned(),
            "no fault was injected, so there was nothing to recover from".to_owned(),
            Vec::new(),
        ),
        (Some(t0), Some(recovered)) => {
            let rto = recovered.saturating_sub(t0);
            figures.insert(format!("rto.{name}"), ms(rto));
            let mut evidence = vec![fact(
                recovered,
                &format!("{label} whole"),
                format!(
                    "recovered at {} (fault at {})",
                    format_ms(recovered),
                    format_ms(t0)
                ),
            )];
            // The automated part of a runbook has its own promise
            // (< 15 min in CI); it is judged only when a runbook ran.
            let automated = r.automated_within.map(|bound| {
                let took = obs.automated_recovery;
                if let Some(took) = took {
                    figures.insert(format!("rto-automated.{name}"), ms(took));
                }
                (bound.as_millis(), took)
            });
            let mut bound = format!("<= {}", format_ms(within));
            let mut measured = format_ms(rto);
            let mut ok = rto <= within;
            let mut summary = format!("{label} whole again {} after the fault", format_ms(rto));
            if !ok {
                summary.push_str(&format!(", over the {} bound", format_ms(within)));
            }
            if let Some((limit, took)) = automated {
                bound.push_str(&format!(", automated <= {}", format_ms(limit)));
                match took {
                    Some(took) => {
                        measured.push_str(&format!(", automated {}", format_ms(took)));
                        if took > limit {
                            ok = false;
                            summary.push_str(&format!(
                                "; the automated steps alone took {}, over their {} bound",
                                format_ms(took),
                                format_ms(limit)
                            ));
                            evidence.push(fact(
                                t0 + took,
                                "automated recovery within its bound",
                                format!("the automated steps alone took {}", format_ms(took)),
                            ));
                        }
                    }
                    None => {
                        ok = false;
                        measured.push_str(", no runbook ran");
                        summary.push_str("; no runbook ran, so the automated part is unknown");
                    }
                }
            }
            result(assertion, ok, bound, measured, summary, evidence)
        }
        (Some(t0), None) => result(
            assertion,
            false,
            format!("<= {}", format_ms(within)),
            "not recovered".to_owned(),
            format!(
                "{label} was not whole again when the drill ended, {} after the fault",
                format_ms(obs.end - t0)
            ),
            vec![fact(
                obs.end,
                &format!("{label} whole"),
                "still broken at the end of the drill".to_owned(),
            )],
        ),
    }
}
