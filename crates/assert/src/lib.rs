//! The verdicts: each assertion kind judged over an [`Observation`], with
//! the evidence that decided it. Nothing here knows which backend ran.
//! Negative controls re-run the drill and are judged by the runner.

use std::collections::BTreeMap;

use drillbench_model::scenario::assertion::{Assertion, AssertionKind};
use drillbench_model::topology::Topology;
use drillbench_observe::{Observation, Time};
use drillbench_report::{AssertionResult, Evidence, Figure, Verdict};

mod availability;
mod budgets;
mod burst;
mod endpoint;
mod members;
mod nodes;
mod placement;
mod quorum;
mod rpo;
mod rto;
mod series;
mod volumes;

pub use placement::describe;
pub use placement::pods_match;

/// Figures an assertion measured, by name.
type Figures = BTreeMap<String, Figure>;

/// A verdict and the figures it measured.
pub struct Judged {
    /// The verdict.
    pub result: AssertionResult,
    pub figures: BTreeMap<String, Figure>,
}

fn result(
    assertion: &Assertion,
    verdict: bool,
    bound: String,
    measured: String,
    summary: String,
    evidence: Vec<Evidence>,
) -> AssertionResult {
    AssertionResult {
        name: assertion.name.clone(),
        kind: assertion.kind.name().to_owned(),
        verdict: if verdict {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        bound,
        measured,
        summary,
        evidence,
        control: None,
    }
}

fn fact(at: Time, rule: &str, detail: String) -> Evidence {
    Evidence {
        at_ms: at,
        pod: None,
        node: None,
        rule: rule.to_owned(),
        detail,
        labels: BTreeMap::new(),
    }
}

/// Judges every assertion kind except negative controls, which the runner
/// judges by running the drill again.
pub fn judge(assertion: &Assertion, obs: &Observation, topology: &Topology) -> Judged {
    let mut figures = Figures::new();
    let result = match &assertion.kind {
        AssertionKind::Quorum(q) => quorum::judge(assertion, q, obs, &mut figures),
        AssertionKind::Availability(a) => {
            availability::judge(assertion, a, obs, topology, &mut figures)
        }
        AssertionKind::Rto(r) => rto::judge(assertion, r, obs, topology, &mut figures),
        AssertionKind::Placement(p) => placement::judge(assertion, p, obs),
        AssertionKind::PdbRespected => budgets::judge(assertion, obs),
        AssertionKind::NoStrandedVolumes => volumes::judge(assertion, obs),
        AssertionKind::EndpointUnchanged => endpoint::judge(assertion, obs),
        AssertionKind::MemberPromoted => members::judge(assertion, obs),
        AssertionKind::BurstUnchanged(b) => burst::judge(assertion, b, obs, &mut figures),
        AssertionKind::NoStrandedNodes => nodes::judge(assertion, obs),
        AssertionKind::Rpo(r) => rpo::judge(assertion, r, obs, &mut figures),
        AssertionKind::NegativeControl(_) => result(
            assertion,
            false,
            String::new(),
            String::new(),
            "this assertion kind is judged by the runner".to_owned(),
            Vec::new(),
        ),
    };
    Judged { result, figures }
}

fn ms(value: Time) -> Figure {
    Figure {
        value: value as f64,
        unit: "ms".to_owned(),
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}
