//! Negative controls: the proof that a guard or a safeguard bites.
//!
//! A control weakens the drill (a guard removed or loosened, a safeguard of
//! the procedure taken away), runs it again on the same seed, and requires
//! the named assertions to fail. That proves the guard only when the
//! failure has the right cause, so a control bites only if
//! - the weakened run met every fault of the real run ([`super::trace`]):
//!   otherwise the assertions failed because nothing happened, and the
//!   control is *inconclusive* (for an assertion a run settles before its
//!   end, a burst placed, only the path up to where the real run settled
//!   it is compared: `settled_by`);
//! - each named assertion failed on the guard's own subjects: the pods the
//!   guard governs, or, for a control-plane safeguard, the control plane
//!   after the fault.
//!
//! A control that proves nothing fails the drill with its own outcome
//! ([`Outcome::Unproven`](drillbench_report::Outcome::Unproven)), never as a
//! platform regression.

use std::collections::{BTreeMap, BTreeSet};

use super::weaken::{
    ablate, changes_only_steps, describe_change, describe_weakening, dropped_steps, weaken_drill,
};
use super::{Provision, RunError, Start, run_steps_from, trace};
use drillbench_assert::{self as assert, Judged, pods_match};
use drillbench_backend::{Backend, BackendError};
use drillbench_model::drill::Drill;
use drillbench_model::policy_guard;
use drillbench_model::scenario::assertion::{Assertion, AssertionKind, Control};
use drillbench_model::scenario::located::Located;
use drillbench_model::scenario::spec::{
    AdmissionControl, DrillChange, GuardSpec, PreflightGuard, Subject,
};
use drillbench_observe::{BYPASSED_EVICTION, EventKind, Observation};
use drillbench_policy::admission::{Candidate, admit, claim_classes};
use drillbench_policy::admission_memo::{self, Digest};
use drillbench_policy::kyverno_admission;
use drillbench_report::{
    AssertionResult, ControlConclusion, ControlProof, Evidence, NEGATIVE_CONTROL, TraceStep,
    Verdict,
};

/// What a weakened run must show.
enum Expect<'a> {
    /// These assertions fail.
    MustFail(&'a [Located<String>]),
    /// The preflight says no-go for this guard, so no fault is injected.
    PreflightRefuses(PreflightGuard),
}

/// Whose failure counts as the guard's.
enum Subjects<'a> {
    /// The pods a guard governs.
    Guard(&'a GuardSpec),
    /// The pods a Kyverno policy guard's rules apply to, in the real or the
    /// weakened drill, by their workloads (`namespace/Kind/name`).
    Policy(&'a str, BTreeSet<String>),
    /// The control plane, from the first fault on.
    ControlPlane,
    /// The pods on the nodes the real run's faults hit.
    FaultedNodes,
    /// The restores from the weakened backups: an RPO's evidence.
    Restores,
    /// The pods the weakened run's drains deleted without the eviction API.
    Deleted,
    /// The pods of the workload a weakening pinned to one node.
    Pinned(&'a str),
    /// The pods of the workloads the backups left out.
    LeftOut(&'a [String]),
    /// Any of these: several safeguards were taken away at once.
    Any(Vec<Subjects<'a>>),
}

/// Judges a negative control against the real run's observation.
pub(super) fn judge(
    drill: &Drill,
    spec: &Assertion,
    control: &Control,
    real: &RealRun<'_>,
    provision: &Provision<'_>,
) -> Result<Judged, RunError> {
    judge_with(drill, spec, control, real, provision, &|_| {})
}

/// The real run a control is compared with.
pub(super) struct RealRun<'a> {
    pub seed: u64,
    /// The backend it ran on (`sim`, `kind`, …): a weakened run goes to
    /// the same kind of backend.
    pub backend: &'static str,
    pub observation: &'a Observation,
    /// A copy of its cluster once converged, before the first step, when
    /// the backend could make one.
    pub converged: Option<&'a dyn Backend>,
}

/// Whether this control's weakened run starts from the real run's
/// converged cluster: its weakening changes only the steps, so its
/// cluster would converge to the very same state.
fn starts_converged(control: &Control) -> bool {
    matches!(control, Control::Weaken(w) if changes_only_steps(&w.change.value))
}

/// Whether any of the drill's controls starts from the real run's
/// converged cluster (so the real run keeps a copy of it).
pub(super) fn any_starts_converged(drill: &Drill) -> bool {
    drill.assertions.iter().any(
        |a| matches!(&a.kind, AssertionKind::NegativeControl(control) if starts_converged(control)),
    )
}

/// A control left unrun because the real run stopped early; an admission
/// control needs no run and is judged all the same.
pub(super) fn not_run(drill: &Drill, spec: &Assertion, control: &Control, why: &str) -> Judged {
    if let Control::Admission(admission) = control {
        return admission_control(drill, spec, admission);
    }
    unproven(
        spec,
        ControlConclusion::Inconclusive,
        "the drill weakened as written".to_owned(),
        "not run".to_owned(),
        format!(
            "the real run stopped early ({why}), so there is nothing to compare a weakened run with"
        ),
        Vec::new(),
        Vec::new(),
        Vec::new(),
    )
}

/// [`judge`], with the weakened drill changed once more before it runs:
/// the tests break a control the vacuous way through it, always in its
/// steps (a weakened run may start from the real run's converged cluster,
/// which a change to anything else would not have converged to).
fn judge_with(
    drill: &Drill,
    spec: &Assertion,
    control: &Control,
    run: &RealRun<'_>,
    provision: &Provision<'_>,
    sabotage: &dyn Fn(&mut Drill),
) -> Result<Judged, RunError> {
    let real = run.observation;
    let (mut weakened, how, expect, subjects, declared) = match control {
        Control::Admission(admission) => return Ok(admission_control(drill, spec, admission)),
        Control::Ablation(ablation)
            if drill
                .policy_guards
                .iter()
                .any(|g| g.as_str() == ablation.guard.as_str()) =>
        {
            let weakened = ablate(drill, ablation);
            let governed = policy_governed(drill, &weakened, ablation.guard.as_str());
            (
                weakened,
                format!(
                    "policy `{}` {}",
                    ablation.guard.value,
                    describe_change(&ablation.change.value)
                ),
                Expect::MustFail(&ablation.must_fail),
                Subjects::Policy(ablation.guard.as_str(), governed),
                trace::Declared::default(),
            )
        }
        Control::Ablation(ablation) => {
            let Some(guard) = drill
                .spec
                .guards
                .iter()
                .find(|g| g.name.as_str() == ablation.guard.as_str())
            else {
                // Validation names every guard; a missing one proves nothing.
                return Ok(unproven(
                    spec,
                    ControlConclusion::Inconclusive,
                    format!("guard `{}` weakened", ablation.guard.value),
                    "nothing ran".to_owned(),
                    "the drill has no such guard".to_owned(),
                    Vec::new(),
                    Vec::new(),
                    Vec::new(),
                ));
            };
            (
                ablate(drill, ablation),
                format!(
                    "guard `{}` {}",
                    ablation.guard.value,
                    describe_change(&ablation.change.value)
                ),
                Expect::MustFail(&ablation.must_fail),
                Subjects::Guard(&guard.value),
                trace::Declared::default(),
            )
        }
        Control::Weaken(weaken) => {
            let expect = match &weaken.preflight_refuses {
                Some(guard) => Expect::PreflightRefuses(guard.value),
                None => Expect::MustFail(&weaken.must_fail),
            };
            let parts = weaken.change.value.parts();
            let declared = trace::Declared {
                added_faults: parts
                    .iter()
                    .filter(|c| ***c == DrillChange::SecondFaultBeforePromotion)
                    .count(),
                dropped_steps: dropped_steps(drill, &weaken.change.value),
            };
            let mut subjects: Vec<Subjects<'_>> = parts.into_iter().map(subjects_of).collect();
            let subjects = if subjects.len() == 1 {
                subjects.remove(0)
            } else {
                Subjects::Any(subjects)
            };
            (
                weaken_drill(drill, weaken),
                describe_weakening(&weaken.change.value),
                expect,
                subjects,
                declared,
            )
        }
    };
    sabotage(&mut weakened);
    let real_trace = trace::trace(real);
    // Refused before a cluster is made for it: nothing would run there.
    if !weakening_supported(control, run.backend) {
        // Skipped, not failed: the simulator proves this control for the
        // drill; here it claims nothing, and the report says why.
        let mut judged = unproven(
            spec,
            ControlConclusion::Inconclusive,
            how,
            "not run".to_owned(),
            format!(
                "the {} backend cannot take this safeguard away; run the control on the simulator",
                run.backend
            ),
            Vec::new(),
            real_trace,
            Vec::new(),
        );
        judged.result.verdict = Verdict::Skipped;
        return Ok(judged);
    }
    let copied = run
        .converged
        .filter(|_| starts_converged(control))
        .and_then(|converged| converged.fork());
    let start = match copied {
        Some(copy) => Start::Converged(copy),
        None => Start::Provisioned(match provision(&weakened, run.seed) {
            Ok(backend) => backend,
            // Never green: a control that could not run proves nothing.
            Err(BackendError::NoReprovision(why)) => {
                return Ok(unproven(
                    spec,
                    ControlConclusion::Inconclusive,
                    how,
                    "not run".to_owned(),
                    format!("the negative control was not run: {why}"),
                    Vec::new(),
                    real_trace,
                    Vec::new(),
                ));
            }
            Err(e) => return Err(RunError::Provision(e)),
        }),
    };
    let (obs, _) = run_steps_from(&weakened, start, true, &mut |_| {}, &mut |_| {})?;
    let weakened_trace = trace::trace(&obs);
    match expect {
        Expect::PreflightRefuses(guard) => Ok(preflight_refusal(
            spec,
            how,
            guard,
            real_trace,
            weakened_trace,
        )),
        Expect::MustFail(must_fail) => {
            let settled = settled_by(drill, must_fail, real);
            let compared: Vec<TraceStep> = match settled {
                Some(at) => real_trace
                    .iter()
                    .filter(|t| t.at_ms <= at)
                    .cloned()
                    .collect(),
                None => real_trace.clone(),
            };
            let mut diverged =
                trace::diverged(&compared, &weakened_trace, &declared, &trace::nodes(&obs));
            if let Some(at) = settled
                && obs.end < at
            {
                diverged.push(format!(
                    "the weakened run ended at {}, before the real run had settled {}",
                    drillbench_report::format_ms(obs.end),
                    drillbench_report::format_ms(at)
                ));
            }
            let mut judged = must_fail_verdict(
                drill,
                spec,
                how,
                must_fail,
                &subjects,
                real,
                &obs,
                &weakened.topology,
                diverged,
                real_trace,
                weakened_trace,
            );
            if let (Some(at), Some(proof)) = (settled, judged.result.control.as_mut())
                && proof.conclusion == ControlConclusion::Bites
            {
                proof.why = format!(
                    "the weakened run followed the real run's path up to {}, when the real run had settled {} (its first burst onto the pools: nothing later takes back a placement), and only the weakening separates the two runs: the check has teeth",
                    drillbench_report::format_ms(at),
                    proof.failed.split(" failed on ").next().unwrap_or_default()
                );
            }
            Ok(judged)
        }
    }
}

/// When the real run had settled every assertion a control must fail, if
/// each is one a run settles before its end: a `burstUnchanged` holds for
/// good from the first placement of burst on the pools, since the run's
/// later events cannot undo a placement it made. A weakening that keeps
/// burst off the pools also leaves the autoscaler nothing to add, so a
/// later fault on an autoscaler node may find no target; that fault comes
/// after the point at which the real run had already shown what the
/// weakened run must fail, so only the path up to that point is compared.
/// Any other assertion is settled only at the end, and the whole path is.
fn settled_by(drill: &Drill, must_fail: &[Located<String>], real: &Observation) -> Option<u64> {
    let mut latest = None;
    for target in must_fail {
        let assertion = drill
            .assertions
            .iter()
            .find(|a| a.name == target.as_str())?;
        if !matches!(assertion.kind, AssertionKind::BurstUnchanged(_)) {
            return None;
        }
        let judged = assert::judge(assertion, real, &drill.topology);
        if judged.result.verdict != Verdict::Pass {
            return None;
        }
        let first = judged.result.evidence.iter().map(|e| e.at_ms).min()?;
        latest = latest.max(Some(first));
    }
    latest
}

/// Whose failure proves a single weakening bit.
fn subjects_of(change: &DrillChange) -> Subjects<'_> {
    match change {
        DrillChange::NoNodeReplacement
        | DrillChange::SkipSteps(_)
        | DrillChange::UpgradeWithoutSettling => Subjects::FaultedNodes,
        DrillChange::NewestBackupFailed | DrillChange::BackupTakes(_) => Subjects::Restores,
        DrillChange::DrainWithoutEviction => Subjects::Deleted,
        DrillChange::PinWorkload(pin) => Subjects::Pinned(&pin.workload),
        DrillChange::ExcludedFromBackup(w) => Subjects::LeftOut(w),
        DrillChange::All(changes) => Subjects::Any(changes.iter().map(subjects_of).collect()),
        DrillChange::SecondFaultBeforePromotion
        | DrillChange::EndpointWithoutFailover
        | DrillChange::KubeconfigOnNode
        | DrillChange::StartWithControlPlanes(_)
        | DrillChange::StartWithLearner => Subjects::ControlPlane,
    }
}

/// Safeguards a real backend cannot take away are refused rather than
/// run without effect (which would read as "no teeth").
fn weakening_supported(control: &Control, backend: &str) -> bool {
    match control {
        Control::Weaken(w) => {
            backend == "sim"
                || w.change.value.parts().into_iter().all(|c| {
                    matches!(
                        c,
                        DrillChange::SecondFaultBeforePromotion
                            | DrillChange::NoNodeReplacement
                            | DrillChange::SkipSteps(_)
                    )
                })
        }
        _ => true,
    }
}

/// The verdict of a control whose weakened run must fail named assertions.
#[expect(clippy::too_many_arguments, reason = "one verdict from both runs")]
fn must_fail_verdict(
    drill: &Drill,
    spec: &Assertion,
    how: String,
    must_fail: &[Located<String>],
    subjects: &Subjects<'_>,
    real: &Observation,
    obs: &Observation,
    topology: &drillbench_model::topology::Topology,
    diverged: Vec<String>,
    real_trace: Vec<TraceStep>,
    weakened_trace: Vec<TraceStep>,
) -> Judged {
    let first_fault = trace::first_fault(&weakened_trace);
    let mut evidence = Vec::new();
    let mut still_green = Vec::new();
    let mut off_subject = Vec::new();
    let mut bitten = Vec::new();
    for target in must_fail {
        let Some(assertion) = drill.assertions.iter().find(|a| a.name == target.as_str()) else {
            continue;
        };
        let judged = assert::judge(assertion, obs, topology);
        if judged.result.verdict == Verdict::Pass {
            still_green.push(target.value.clone());
            continue;
        }
        let involved = involves(subjects, assertion, &judged.result, real, obs, first_fault);
        let first = judged.result.evidence.iter().find(|e| involved.contains(e));
        let first = first.or(judged.result.evidence.first());
        evidence.push(Evidence {
            at_ms: first.map_or(obs.end, |e| e.at_ms),
            pod: first.and_then(|e| e.pod.clone()),
            node: first.and_then(|e| e.node.clone()),
            rule: format!("with the guard weakened, `{target}` must fail"),
            detail: format!("`{target}` failed: {}", judged.result.summary),
            labels: BTreeMap::new(),
        });
        if involved.is_empty() {
            off_subject.push(target.value.clone());
        } else {
            bitten.push(target.value.clone());
        }
    }
    let names = must_fail
        .iter()
        .map(|m| m.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let whose = whose(subjects);
    let (conclusion, failed, why) = if !diverged.is_empty() {
        (
            ControlConclusion::Inconclusive,
            format!(
                "the weakened run did not reach the real run's faults; {names} judged on a different run"
            ),
            format!(
                "a failure after a different path proves nothing about the guard: {}",
                diverged.join("; ")
            ),
        )
    } else if !still_green.is_empty() {
        (
            ControlConclusion::NoTeeth,
            format!("{} still passed", still_green.join(", ")),
            format!(
                "the weakened run met every fault of the real run, yet {} held: this check has no teeth",
                still_green.join(", ")
            ),
        )
    } else if !off_subject.is_empty() {
        (
            ControlConclusion::Inconclusive,
            format!("{} failed, but not on {whose}", off_subject.join(", ")),
            format!(
                "the failure of {} does not involve {whose}, so it is not the guard's doing",
                off_subject.join(", ")
            ),
        )
    } else {
        (
            ControlConclusion::Bites,
            format!("{} failed on {whose}", bitten.join(", ")),
            format!(
                "the weakened run met every fault of the real run, and only the weakening separates it from the real run, where {} held: the check has teeth",
                bitten.join(", ")
            ),
        )
    };
    let mut judged = unproven(
        spec,
        conclusion,
        how.clone(),
        failed,
        why,
        diverged,
        real_trace,
        weakened_trace,
    );
    judged.result.bound = format!("{names} must fail with {how}");
    judged.result.evidence = evidence;
    judged
}

/// The subjects, as a control's verdict names them.
fn whose(subjects: &Subjects<'_>) -> String {
    match subjects {
        Subjects::Guard(g) => format!("the pods guard `{}` governs", g.name.value),
        Subjects::Policy(name, _) => format!("the pods policy `{name}` governs"),
        Subjects::ControlPlane => "the control plane after the fault".to_owned(),
        Subjects::FaultedNodes => "the nodes the faults hit and their pods".to_owned(),
        Subjects::Restores => "the restore from the weakened backups".to_owned(),
        Subjects::Deleted => "the pods a drain deleted without the eviction API".to_owned(),
        Subjects::Pinned(w) => format!("the pods of `{w}`, pinned to one node"),
        Subjects::LeftOut(w) => format!("the pods of {}, left out of the backups", w.join(", ")),
        Subjects::Any(all) => all.iter().map(whose).collect::<Vec<_>>().join(" or "),
    }
}

/// The failing evidence that involves the subjects; empty when none does.
fn involves<'e>(
    subjects: &Subjects<'_>,
    assertion: &Assertion,
    result: &'e AssertionResult,
    real: &Observation,
    obs: &Observation,
    first_fault: Option<u64>,
) -> Vec<&'e Evidence> {
    match subjects {
        Subjects::Guard(_)
        | Subjects::Policy(..)
        | Subjects::FaultedNodes
        | Subjects::Pinned(_)
        | Subjects::LeftOut(_) => {
            let hit = trace::fault_nodes(real);
            let governs = |p: &&drillbench_observe::Placement| match subjects {
                Subjects::Guard(guard) => pods_match(&guard.matches, p),
                Subjects::Policy(_, governed) => {
                    p.workload.as_deref().is_some_and(|w| governed.contains(w))
                }
                Subjects::Pinned(w) => p.workload.as_deref() == Some(*w),
                Subjects::LeftOut(w) => p.workload.as_ref().is_some_and(|p| w.contains(p)),
                _ => hit.contains(p.node.as_str()),
            };
            let placements = || {
                real.placements
                    .iter()
                    .chain(&obs.placements)
                    .filter(governs)
            };
            let governed: BTreeSet<&str> = placements().map(|p| p.pod.as_str()).collect();
            // Their claims, as `namespace/name`, name them in volume evidence.
            let claims: BTreeSet<String> = placements()
                .flat_map(|p| p.claims.iter().map(|(c, _)| format!("{}/{c}", p.namespace)))
                .collect();
            let named: Vec<&Evidence> = result
                .evidence
                .iter()
                .filter(|e| {
                    e.pod.as_deref().is_some_and(|p| governed.contains(p))
                        // A node the real run's faults hit, named by
                        // node-level evidence (a stranded node).
                        || matches!(subjects, Subjects::FaultedNodes)
                            && e.node.as_deref().is_some_and(|n| hit.contains(n))
                        || governed.iter().any(|p| e.detail.contains(p))
                        || claims.iter().any(|c| e.detail.contains(c.as_str()))
                })
                .collect();
            if !named.is_empty() {
                return named;
            }
            // An RTO or availability names no pod: it is the guard's when
            // a workload it measures, one of whose pods the guard governs,
            // was short of replicas at the moment the evidence names.
            short_workload_evidence(assertion, result, obs, placements(), 0)
        }
        // Every backup is weakened, so an RPO's evidence (what a restore
        // lost, or where it restored to) is the weakening's doing.
        Subjects::Restores => match &assertion.kind {
            AssertionKind::Rpo(_) => result.evidence.iter().collect(),
            _ => Vec::new(),
        },
        // A breach is the bypassing drain's only when the pod it names is
        // one that drain deleted.
        Subjects::Deleted => {
            let mut deleted: BTreeMap<String, u64> = BTreeMap::new();
            for e in obs
                .events
                .iter()
                .filter(|e| e.kind == EventKind::PodDeleted && e.message == BYPASSED_EVICTION)
            {
                deleted
                    .entry(format!("{}/{}", e.object.namespace, e.object.name))
                    .or_insert(e.at_ms);
            }
            let named: Vec<&Evidence> = result
                .evidence
                .iter()
                .filter(|e| e.pod.as_ref().is_some_and(|p| deleted.contains_key(p)))
                .collect();
            if !named.is_empty() {
                return named;
            }
            // An availability or RTO names no pod: it is the bypassing
            // drain's when a workload it measures lost a pod to it and was
            // short of replicas at the evidence's moment, not before the
            // first such deletion.
            let lost = obs
                .placements
                .iter()
                .filter(|p| deleted.contains_key(&p.pod));
            let since = deleted.values().copied().min().unwrap_or(u64::MAX);
            short_workload_evidence(assertion, result, obs, lost, since)
        }
        Subjects::Any(all) => {
            let mut found: Vec<&Evidence> = Vec::new();
            for subjects in all {
                for e in involves(subjects, assertion, result, real, obs, first_fault) {
                    if !found.iter().any(|f| std::ptr::eq(*f, e)) {
                        found.push(e);
                    }
                }
            }
            found
        }
        Subjects::ControlPlane => {
            let about_the_control_plane = match &assertion.kind {
                AssertionKind::Quorum(_)
                | AssertionKind::EndpointUnchanged
                | AssertionKind::MemberPromoted => true,
                AssertionKind::Rto(r) => {
                    matches!(r.of.value, Subject::Api | Subject::ControlPlane)
                }
                AssertionKind::Availability(a) => {
                    matches!(a.of.value, Subject::Api | Subject::ControlPlane)
                }
                _ => false,
            };
            match first_fault {
                Some(fault) if about_the_control_plane => result
                    .evidence
                    .iter()
                    .filter(|e| e.at_ms >= fault)
                    .collect(),
                _ => Vec::new(),
            }
        }
    }
}

/// The evidence of an RTO or availability, from `since` on, at a moment
/// when a workload it measures, one of `placements`' workloads, was short
/// of replicas; empty for every other kind of assertion.
fn short_workload_evidence<'e, 'p>(
    assertion: &Assertion,
    result: &'e AssertionResult,
    obs: &Observation,
    placements: impl Iterator<Item = &'p drillbench_observe::Placement>,
    since: u64,
) -> Vec<&'e Evidence> {
    let measured = match &assertion.kind {
        AssertionKind::Rto(r) => &r.of.value,
        AssertionKind::Availability(a) => &a.of.value,
        _ => return Vec::new(),
    };
    let workloads: BTreeSet<&str> = placements
        .filter(|p| match measured {
            Subject::Pods(m) => pods_match(m, p),
            Subject::Workload(w) => p.workload.as_deref() == Some(w.as_str()),
            Subject::AllWorkloads => true,
            Subject::Api | Subject::ControlPlane => false,
        })
        .filter_map(|p| p.workload.as_deref())
        .collect();
    let short_at = |t: u64| {
        workloads.iter().any(|w| {
            obs.workloads
                .get(*w)
                .is_some_and(|s| !s.whole_at(t.saturating_sub(1)) || !s.whole_at(t))
        })
    };
    result
        .evidence
        .iter()
        .filter(|e| e.at_ms >= since && short_at(e.at_ms))
        .collect()
}

/// A control whose weakened start must make the preflight say no-go.
fn preflight_refusal(
    spec: &Assertion,
    how: String,
    guard: PreflightGuard,
    real_trace: Vec<TraceStep>,
    weakened_trace: Vec<TraceStep>,
) -> Judged {
    let name = match guard {
        PreflightGuard::Target => "target",
        PreflightGuard::Quorum => "quorum",
        PreflightGuard::Backup => "backup",
    };
    let no_go = weakened_trace
        .iter()
        .find(|t| t.what.starts_with("preflight: no-go"));
    let went = weakened_trace.iter().any(|t| t.what == "preflight: go");
    let faulted = trace::first_fault(&weakened_trace).is_some();
    let ours = format!("reason={name}:");
    let (conclusion, failed, why, evidence) = match no_go {
        Some(step) if step.what.contains(&ours) && !faulted => (
            ControlConclusion::Bites,
            format!("the preflight said no-go at step `{}`", step.step),
            format!(
                "the {name} guard refused the weakened start and the drill injected no fault: the preflight has teeth"
            ),
            vec![Evidence {
                at_ms: step.at_ms,
                pod: None,
                node: None,
                rule: format!("the preflight's {name} guard says no-go"),
                detail: step.what.clone(),
                labels: BTreeMap::new(),
            }],
        ),
        Some(step) => (
            ControlConclusion::Inconclusive,
            format!(
                "the preflight said no-go at step `{}`, but not for {name}",
                step.step
            ),
            format!(
                "a refusal by another guard does not prove the {name} guard: {}",
                step.what
            ),
            Vec::new(),
        ),
        None if went => (
            ControlConclusion::NoTeeth,
            "the preflight said go".to_owned(),
            format!("the {name} guard let the weakened start through: it has no teeth"),
            Vec::new(),
        ),
        None => (
            ControlConclusion::Inconclusive,
            "the weakened run never reached the preflight".to_owned(),
            "a run that stopped before its preflight proves nothing about it".to_owned(),
            Vec::new(),
        ),
    };
    let mut judged = unproven(
        spec,
        conclusion,
        how.clone(),
        failed,
        why,
        Vec::new(),
        real_trace,
        weakened_trace,
    );
    judged.result.bound = format!("the preflight's {name} guard refuses the drill with {how}");
    judged.result.evidence = evidence;
    judged
}

/// A control's verdict from its conclusion: only `Bites` passes.
#[expect(clippy::too_many_arguments, reason = "the fields of one proof")]
fn unproven(
    spec: &Assertion,
    conclusion: ControlConclusion,
    weakened: String,
    failed: String,
    why: String,
    diverged: Vec<String>,
    real_trace: Vec<TraceStep>,
    weakened_trace: Vec<TraceStep>,
) -> Judged {
    let summary = match conclusion {
        ControlConclusion::Bites => format!("with {weakened}, {failed}: the check has teeth"),
        ControlConclusion::NoTeeth => {
            format!("with {weakened}, {failed}: this check has no teeth")
        }
        ControlConclusion::Inconclusive => {
            format!("with {weakened}, {failed}: inconclusive, {why}")
        }
    };
    Judged {
        result: AssertionResult {
            name: spec.name.clone(),
            kind: NEGATIVE_CONTROL.to_owned(),
            verdict: if conclusion == ControlConclusion::Bites {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            bound: "the weakened drill fails".to_owned(),
            measured: if failed == "not run" {
                "not run".to_owned()
            } else {
                conclusion.as_str().to_owned()
            },
            summary,
            evidence: Vec::new(),
            control: Some(ControlProof {
                conclusion,
                weakened,
                failed,
                why,
                diverged,
                real_trace,
                weakened_trace,
            }),
        },
        figures: BTreeMap::new(),
    }
}

/// The workloads whose pods a policy guard's rules apply to, in the real
/// drill or once weakened (a patched policy may select other pods).
fn policy_governed(drill: &Drill, weakened: &Drill, name: &str) -> BTreeSet<String> {
    let cluster = policy_cluster(drill, None);
    let objects: Vec<serde_json::Value> = drill.workloads.iter().map(|d| d.value.clone()).collect();
    let mut governed = BTreeSet::new();
    for policies in [&drill.policies, &weakened.policies] {
        for doc in policies.iter() {
            if policy_guard::policy_name(&doc.value).as_deref() != Some(name) {
                continue;
            }
            if let Ok(policy) = drillbench_kyverno::policy::from_value(&doc.value) {
                let digest = Digest::of_values([&doc.value]);
                governed.extend(kyverno_admission::governed(
                    &policy, digest, &cluster, &objects,
                ));
            }
        }
    }
    governed
}

/// The drill's objects (and a planted one) as a policy's `apiCall` reads them.
fn policy_cluster(
    drill: &Drill,
    planted: Option<&serde_json::Value>,
) -> kyverno_admission::ManifestCluster {
    let default_class = drill
        .topology
        .storage_classes
        .iter()
        .find(|c| c.default)
        .map(|c| c.name.as_str());
    let mut documents = drill.workloads.to_vec();
    if let Some(object) = planted {
        documents.push(drillbench_model::manifest::Document {
            source: drill.source.path.display().to_string(),
            index: documents.len(),
            line: 0,
            column: 0,
            value: object.clone(),
        });
    }
    kyverno_admission::ManifestCluster::new(&documents, default_class)
}

/// An admission control naming a policy guard: the planted object's Pod,
/// as its controller submits it, goes through every policy of the drill as
/// the API server's admission chain takes it (every mutation first, then
/// every validation), so the simulator judges what a real cluster's dry
/// run judges. The control bites when the named policy (its named rule)
/// is among the refusers; a refusal by another policy alone proves nothing
/// about this one.
fn policy_admission_control(drill: &Drill, spec: &Assertion, control: &AdmissionControl) -> Judged {
    let name = control.guard.as_str();
    let rule = control.rule.as_ref().map(|r| r.as_str());
    let policies: Vec<_> = drill
        .policies
        .iter()
        .filter_map(|d| drillbench_kyverno::policy::from_value(&d.value).ok())
        .collect();
    let digest = Digest::of_values(drill.policies.iter().map(|d| &d.value));
    let cluster = policy_cluster(drill, Some(&control.object.value));
    let judged = kyverno_admission::submitted_pod(&control.object.value).map(|(key, kind, pod)| {
        (
            key,
            admission_memo::admit_pod(&policies, digest, &cluster, &kind, pod),
        )
    });
    let what = match rule {
        Some(rule) => format!("rule `{rule}` of policy `{name}`"),
        None => format!("policy `{name}`"),
    };
    let how = format!("an object planted that breaks {what}, through the whole admission chain");
    let refused_here = |judged: &kyverno_admission::PodAdmission| {
        judged.results.iter().any(|r| {
            r.policy == name
                && rule.is_none_or(|rule| r.rule == rule)
                && r.status == drillbench_kyverno::RuleStatus::Fail
                && r.failure_action == Some(drillbench_kyverno::FailureAction::Enforce)
        })
    };
    let (conclusion, failed, why, evidence) = match judged {
        Some((object, judged)) if refused_here(&judged) => (
            ControlConclusion::Bites,
            format!("{what} refused {object}"),
            "admission refused the object the policy exists to keep out: the guard bites"
                .to_owned(),
            vec![Evidence {
                at_ms: 0,
                pod: None,
                node: None,
                rule: format!("policy {name}"),
                detail: judged.refusal.unwrap_or_default().trim().to_owned(),
                labels: BTreeMap::new(),
            }],
        ),
        Some((object, judged)) => {
            let said: Vec<String> = judged
                .results
                .iter()
                .filter(|r| r.policy == name)
                .map(|r| format!("{}: {}", r.rule, r.status))
                .collect();
            let others = judged.refused_by().map_or(String::new(), |by| {
                format!("; refused by {by} instead, which proves nothing about this policy")
            });
            (
                ControlConclusion::NoTeeth,
                format!("{what} admitted {object} ({}){others}", said.join(", ")),
                "the policy keeps nothing out".to_owned(),
                Vec::new(),
            )
        }
        None => (
            ControlConclusion::NoTeeth,
            format!("{what} admitted the planted object"),
            "the policy keeps nothing out".to_owned(),
            Vec::new(),
        ),
    };
    admission_judged(
        spec,
        (conclusion, how, failed, why),
        format!("{what} refuses the planted object"),
        evidence,
    )
}

/// An admission control: the planted object goes through every guard of
/// the drill in order (a mutating guard first adds its requirement), as the
/// platform's admission chain takes it, and must be refused by the named
/// guard.
fn admission_control(drill: &Drill, spec: &Assertion, control: &AdmissionControl) -> Judged {
    if drill
        .policy_guards
        .iter()
        .any(|g| g.as_str() == control.guard.as_str())
    {
        return policy_admission_control(drill, spec, control);
    }
    let guards: Vec<GuardSpec> = drill.spec.guards.iter().map(|g| g.value.clone()).collect();
    let default_class = drill
        .topology
        .storage_classes
        .iter()
        .find(|c| c.default)
        .map(|c| c.name.as_str());
    // A claim the planted object mounts resolves to none of the drill's
    // standalone claims, so it gets the default class.
    let decision = guards
        .iter()
        .any(|g| g.name.as_str() == control.guard.as_str())
        .then(|| Candidate::read(&control.object.value))
        .flatten()
        .and_then(|mut planted| {
            let classes = claim_classes(
                planted.claim_templates,
                &planted.spec,
                |_| None,
                default_class,
            );
            admit(
                &guards,
                &planted.namespace,
                &planted.labels,
                &classes,
                &mut planted.spec,
            )
            .into_iter()
            .find(|d| d.guard == control.guard.value)
            .map(|d| (planted.key, d.refused, d.reason))
        });
    let guard_name = &control.guard.value;
    let how = format!(
        "an object planted that breaks guard `{guard_name}`, through the whole admission chain"
    );
    let (conclusion, failed, why, evidence) = match decision {
        Some((object, true, reason)) => (
            ControlConclusion::Bites,
            format!("guard `{guard_name}` refused {object}"),
            "admission refused the object the guard exists to keep out: the guard bites".to_owned(),
            vec![Evidence {
                at_ms: 0,
                pod: None,
                node: None,
                rule: format!("guard {guard_name}"),
                detail: reason,
                labels: BTreeMap::new(),
            }],
        ),
        Some((object, false, reason)) => (
            ControlConclusion::NoTeeth,
            format!("guard `{guard_name}` only audited {object} ({reason})"),
            "an audit admits the object: the guard keeps nothing out".to_owned(),
            Vec::new(),
        ),
        None => (
            ControlConclusion::NoTeeth,
            format!("guard `{guard_name}` admitted the planted object"),
            "the guard keeps nothing out".to_owned(),
            Vec::new(),
        ),
    };
    admission_judged(
        spec,
        (conclusion, how, failed, why),
        format!("guard `{guard_name}` refuses the planted object"),
        evidence,
    )
}

/// An admission control's result: no weakened run to compare, so no traces;
/// its bound says who must refuse, its measure is `refused` when it bit.
pub(super) fn admission_judged(
    spec: &Assertion,
    (conclusion, how, failed, why): (ControlConclusion, String, String, String),
    bound: String,
    evidence: Vec<Evidence>,
) -> Judged {
    let mut judged = unproven(
        spec,
        conclusion,
        how,
        failed,
        why,
        Vec::new(),
        Vec::new(),
        Vec::new(),
    );
    judged.result.bound = bound;
    if conclusion == ControlConclusion::Bites {
        judged.result.measured = "refused".to_owned();
    }
    judged.result.evidence = evidence;
    judged
}

#[cfg(test)]
mod tests;
