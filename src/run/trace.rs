//! What a drill's steps did, read back from the timeline, and where a
//! negative control's weakened run left the real run's path.
//!
//! A control proves a guard only if the weakened run met the same faults
//! the real run did: a fault that found no target, a preflight that said
//! no-go, a cluster that never converged all make the named assertions fail
//! with nothing having happened, and such a failure proves nothing. So both
//! runs are traced, and every fault of the real run must reappear in the
//! weakened run, in the same step, on the same node where that node still
//! exists. What the runs do after the last fault may differ: that is the
//! consequence the control measures, and both traces show it.

use std::collections::BTreeSet;

use drillbench_observe::{EventKind, Observation};
use drillbench_report::TraceStep;

/// The label of the wait for a converged cluster, before the first step.
const CONVERGE: &str = "converge";

/// How a weakened run says a fault found nothing to hit.
pub(crate) const NO_TARGET: &str = "the fault found no target";

/// The steps, faults, preflights and waits of a run, in time order, and
/// how it stopped if it stopped early.
pub(crate) fn trace(obs: &Observation) -> Vec<TraceStep> {
    let mut step = CONVERGE.to_owned();
    let mut out = Vec::new();
    let mut stopped = false;
    for event in &obs.events {
        let drill_event = event.object.kind == "Drill" && event.object.name != "fault";
        let what = match event.kind {
            EventKind::StepStarted if drill_event => {
                step = event.message.clone();
                "started".to_owned()
            }
            EventKind::FaultInjected => format!("fault: {}", event.message),
            EventKind::PreflightPassed if drill_event => "preflight: go".to_owned(),
            EventKind::PreflightFailed if drill_event => {
                stopped = true;
                format!("preflight: no-go ({})", event.message)
            }
            EventKind::WaitSatisfied if drill_event => "condition held".to_owned(),
            EventKind::WaitTimedOut if drill_event => {
                stopped = true;
                // A fault announced and then refused for want of a target
                // was never injected: it leaves the trace.
                if event.message.contains(NO_TARGET)
                    && out.last().is_some_and(|t: &TraceStep| {
                        t.step == step && t.what.starts_with("fault: ")
                    })
                {
                    out.pop();
                }
                format!("stopped: {}", event.message)
            }
            _ => continue,
        };
        out.push(TraceStep {
            at_ms: event.at_ms,
            step: step.clone(),
            node: (event.kind == EventKind::FaultInjected)
                .then(|| event.node.clone())
                .flatten(),
            what,
        });
    }
    if let Some(reason) = &obs.aborted
        && !stopped
    {
        out.push(TraceStep {
            at_ms: obs.end,
            step,
            node: None,
            what: format!("stopped: {reason}"),
        });
    }
    out
}

fn faults(trace: &[TraceStep]) -> Vec<&TraceStep> {
    trace
        .iter()
        .filter(|t| t.what.starts_with("fault: "))
        .collect()
}

/// What the weakening itself changes in the path: faults it adds, and
/// the steps it drops (whose faults the weakened run cannot meet).
#[derive(Debug, Default)]
pub(crate) struct Declared {
    pub added_faults: usize,
    pub dropped_steps: Vec<String>,
}

/// Where the weakened run left the real run's path; empty when it met
/// every fault of the real run (and, for a run without faults, started
/// every step), apart from what the weakening declared; `weakened_nodes`
/// is every node the weakened run saw, so a fault whose real target never
/// existed there may hit another node.
pub(crate) fn diverged(
    real: &[TraceStep],
    weakened: &[TraceStep],
    declared: &Declared,
    weakened_nodes: &BTreeSet<String>,
) -> Vec<String> {
    let extra_faults = declared.added_faults;
    let mut out = Vec::new();
    let stop = weakened
        .iter()
        .rev()
        .find(|t| t.what.starts_with("stopped: ") || t.what.starts_with("preflight: no-go"));
    let theirs = faults(weakened);
    let mut used = vec![false; theirs.len()];
    let mut cursor = 0;
    for fault in faults(real) {
        if declared.dropped_steps.contains(&fault.step) {
            continue;
        }
        let found = (cursor..theirs.len()).find(|&i| theirs[i].step == fault.step);
        let Some(i) = found else {
            let mut line = format!(
                "step `{}`: `{}` was never injected in the weakened run",
                fault.step,
                &fault.what["fault: ".len()..]
            );
            if let Some(stop) = stop {
                line.push_str(&format!(
                    " (it stopped at step `{}`: {})",
                    stop.step, stop.what
                ));
            }
            out.push(line);
            continue;
        };
        used[i] = true;
        cursor = i + 1;
        let ours = theirs[i];
        let real_node_exists = fault
            .node
            .as_ref()
            .is_some_and(|n| weakened_nodes.contains(n));
        let hit_nothing = fault.node.is_some() && ours.node.is_none();
        if ours.node != fault.node && (real_node_exists || hit_nothing) {
            out.push(format!(
                "step `{}`: the fault hit {} instead of {}, which the weakened run also had",
                fault.step,
                ours.node.as_deref().unwrap_or("no node"),
                fault.node.as_deref().unwrap_or("no node")
            ));
        }
    }
    let added: Vec<&TraceStep> = theirs
        .iter()
        .zip(&used)
        .filter(|(_, used)| !**used)
        .map(|(t, _)| *t)
        .collect();
    if added.len() > extra_faults {
        for extra in added {
            out.push(format!(
                "step `{}`: `{}` is not in the real run",
                extra.step,
                &extra.what["fault: ".len()..]
            ));
        }
    }
    // A drill without faults must take the same steps.
    if faults(real).is_empty() {
        let started = |t: &[TraceStep]| -> Vec<String> {
            t.iter()
                .filter(|s| s.what == "started")
                .map(|s| s.step.clone())
                .collect()
        };
        let (ours, theirs) = (started(real), started(weakened));
        if let Some(missing) = ours
            .iter()
            .find(|s| !theirs.contains(s) && !declared.dropped_steps.contains(s))
        {
            out.push(format!(
                "step `{missing}` was never reached in the weakened run{}",
                stop.map(|s| format!(" (it stopped at step `{}`: {})", s.step, s.what))
                    .unwrap_or_default()
            ));
        }
    }
    out
}

/// Every node the run saw, by name.
pub(crate) fn nodes(obs: &Observation) -> BTreeSet<String> {
    obs.events
        .iter()
        .filter(|e| e.object.kind == "Node")
        .map(|e| e.object.name.clone())
        .chain(obs.placements.iter().map(|p| p.node.clone()))
        .collect()
}

/// The nodes the run's faults hit.
pub(crate) fn fault_nodes(obs: &Observation) -> BTreeSet<&str> {
    obs.events
        .iter()
        .filter(|e| e.kind == EventKind::FaultInjected)
        .filter_map(|e| e.node.as_deref())
        .collect()
}

/// When the run's first fault was injected.
pub(crate) fn first_fault(trace: &[TraceStep]) -> Option<u64> {
    faults(trace).first().map(|t| t.at_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(at_ms: u64, step: &str, what: &str, node: Option<&str>) -> TraceStep {
        TraceStep {
            at_ms,
            step: step.to_owned(),
            what: what.to_owned(),
            node: node.map(str::to_owned),
        }
    }

    fn real() -> Vec<TraceStep> {
        vec![
            step(0, "converge", "condition held", None),
            step(0, "crash", "started", None),
            step(0, "crash", "fault: crash node w-1", Some("w-1")),
            step(0, "wait", "started", None),
        ]
    }

    fn none() -> Declared {
        Declared::default()
    }

    fn nodes(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn the_same_faults_on_the_same_nodes_do_not_diverge() {
        assert!(diverged(&real(), &real(), &none(), &nodes(&["w-1"])).is_empty());
    }

    #[test]
    fn a_run_that_never_converged_met_no_fault_and_diverged() {
        let weakened = vec![step(
            1_800_000,
            "converge",
            "stopped: converge: the condition did not hold within 30m",
            None,
        )];
        let out = diverged(&real(), &weakened, &none(), &nodes(&["w-1"]));
        assert_eq!(out.len(), 1, "{out:?}");
        assert!(
            out[0].contains("`crash node w-1` was never injected"),
            "{out:?}"
        );
        assert!(out[0].contains("stopped at step `converge`"), "{out:?}");
    }

    #[test]
    fn another_target_diverges_only_where_the_real_one_still_existed() {
        let mut weakened = real();
        weakened[2] = step(0, "crash", "fault: crash node w-2", Some("w-2"));
        assert_eq!(
            diverged(&real(), &weakened, &none(), &nodes(&["w-1", "w-2"])).len(),
            1
        );
        // A name the weakened run never had (a seeded autoscaler node) may differ.
        assert!(diverged(&real(), &weakened, &none(), &nodes(&["w-2"])).is_empty());
    }

    #[test]
    fn an_added_fault_diverges_unless_the_weakening_declared_it() {
        let mut weakened = real();
        weakened.insert(3, step(0, "crash", "fault: crash node cp-2", Some("cp-2")));
        let all = nodes(&["w-1", "cp-2"]);
        assert_eq!(diverged(&real(), &weakened, &none(), &all).len(), 1);
        let added = Declared {
            added_faults: 1,
            ..Declared::default()
        };
        assert!(diverged(&real(), &weakened, &added, &all).is_empty());
    }

    #[test]
    fn a_dropped_step_is_not_missed_but_an_undeclared_one_is() {
        let weakened: Vec<TraceStep> = real().into_iter().take(2).collect();
        let all = nodes(&["w-1"]);
        assert_eq!(diverged(&real(), &weakened, &none(), &all).len(), 1);
        let dropped = Declared {
            dropped_steps: vec!["crash".to_owned()],
            ..Declared::default()
        };
        assert!(diverged(&real(), &weakened, &dropped, &all).is_empty());
    }
}
