//! Every built-in control bites as written, and broken the vacuous way
//! (its fault skipped, its target gone) is inconclusive.

use super::super::run_steps;
use super::*;
use drillbench_backend::sim::provision;
use drillbench_backend::{Backend, BackendError};
use drillbench_model::scenario::spec::{Fault, Target};
use drillbench_model::scenario::step::Action;

fn built_in(name: &str) -> Drill {
    let path = drillbench_model::scenario::catalog::resolve(name).expect("a built-in drill");
    Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

const DRILLS: [&str; 8] = [
    "cp-recreate",
    "autoscaler-scale-down",
    "node-loss",
    "unlabelled-autoscaler-node",
    "pre-upgrade",
    "full-rebuild",
    "stranded-pool",
    "namespace-restore",
];

/// Every control of every built-in drill that re-runs the drill, with
/// the real run's observation (seed 1).
fn each_control(mut check: impl FnMut(&str, &Drill, &Assertion, &Control, &Observation)) {
    for name in DRILLS {
        let drill = built_in(name);
        let backend = provision(&drill, 1).expect("provisions");
        let (real, _) = run_steps(&drill, backend, false).expect("runs");
        for assertion in &drill.assertions {
            if let AssertionKind::NegativeControl(control) = &assertion.kind
                && !matches!(control, Control::Admission(_))
            {
                check(name, &drill, assertion, control, &real);
            }
        }
    }
}

/// The real run of these tests: seed 1 on the simulator.
fn on_sim(observation: &Observation) -> RealRun<'_> {
    RealRun {
        seed: 1,
        backend: "sim",
        observation,
        converged: None,
    }
}

fn conclusion(judged: &Judged) -> ControlConclusion {
    judged.result.control.as_ref().expect("a proof").conclusion
}

/// A drill's first admission control, with its assertion.
fn first_admission_control(drill: &Drill) -> (&Assertion, &AdmissionControl) {
    drill
        .assertions
        .iter()
        .find_map(|a| match &a.kind {
            AssertionKind::NegativeControl(Control::Admission(c)) => Some((a, c)),
            _ => None,
        })
        .expect("an admission control")
}

/// Whether the real run settled every assertion the control must fail
/// before its end (a burst placed), so only its path up to then is compared.
fn is_settled_early(drill: &Drill, control: &Control, real: &Observation) -> bool {
    let must_fail = match control {
        Control::Ablation(a) => &a.must_fail,
        Control::Weaken(w) => &w.must_fail,
        Control::Admission(_) => return false,
    };
    settled_by(drill, must_fail, real).is_some()
}

fn is_preflight_control(control: &Control) -> bool {
    matches!(control, Control::Weaken(w) if w.preflight_refuses.is_some())
}

#[test]
fn every_built_in_control_bites_as_written() {
    let mut seen = 0;
    each_control(|name, drill, spec, control, real| {
        let judged = judge(drill, spec, control, &on_sim(real), &provision).expect("runs");
        assert_eq!(
            conclusion(&judged),
            ControlConclusion::Bites,
            "{name}/{}: {}",
            spec.name,
            judged.result.summary
        );
        seen += 1;
    });
    assert!(seen >= 12, "{seen} controls");
}

/// The vacuous way to "bite": the weakened run never meets the fault
/// (skipped), so the named assertions fail with nothing having
/// happened. Every built-in control must call that inconclusive.
#[test]
fn a_control_whose_fault_is_skipped_is_inconclusive_not_bitten() {
    each_control(|name, drill, spec, control, real| {
        let skip: &dyn Fn(&mut Drill) = if is_settled_early(drill, control, real) {
            // Settled before the first fault (a burst placed), it is
            // vacuous when the weakened run never takes the steps that
            // settled it: here, none at all.
            &|d: &mut Drill| d.steps.clear()
        } else if is_preflight_control(control) {
            // A refusal control is vacuous when the preflight never runs.
            &|d: &mut Drill| {
                d.steps
                    .retain(|s| !matches!(s.action, Action::Preflight(_)))
            }
        } else {
            &|d: &mut Drill| d.steps.retain(|s| !matches!(s.action, Action::Fault(_)))
        };
        let judged =
            judge_with(drill, spec, control, &on_sim(real), &provision, skip).expect("runs");
        assert_eq!(
            conclusion(&judged),
            ControlConclusion::Inconclusive,
            "{name}/{}: {}",
            spec.name,
            judged.result.summary
        );
        assert_eq!(judged.result.verdict, Verdict::Fail);
    });
}

/// The other vacuous way: the fault's target is gone, so the fault
/// finds nothing to hit and the weakened run stops there.
#[test]
fn a_control_whose_target_disappears_is_inconclusive_not_bitten() {
    let mut seen = 0;
    each_control(|name, drill, spec, control, real| {
        // The faults of the weakened drill: a step it leaves out cannot
        // lose its target.
        let weakened = match control {
            Control::Weaken(w) => weaken_drill(drill, w),
            Control::Ablation(a) => ablate(drill, a),
            Control::Admission(_) => return,
        };
        let targeted = weakened.steps.iter().any(|s| {
            matches!(&s.action, Action::Fault(f) if matches!(
                f.value,
                Fault::CrashNode(_) | Fault::DeleteNode(_) | Fault::ReplaceNode(_)
                    | Fault::RecreateControlPlane(_)
            ))
        });
        if !targeted || is_preflight_control(control) || is_settled_early(drill, control, real) {
            return;
        }
        let vanish = |d: &mut Drill| {
            for step in &mut d.steps {
                if let Action::Fault(f) = &mut step.action
                    && let Fault::CrashNode(n)
                    | Fault::DeleteNode(n)
                    | Fault::ReplaceNode(n)
                    | Fault::RecreateControlPlane(n) = &mut f.value
                {
                    n.target.value = Target::Node("a-node-that-is-gone".to_owned());
                }
            }
        };
        let judged =
            judge_with(drill, spec, control, &on_sim(real), &provision, &vanish).expect("runs");
        assert_eq!(
            conclusion(&judged),
            ControlConclusion::Inconclusive,
            "{name}/{}: {}",
            spec.name,
            judged.result.summary
        );
        let proof = judged.result.control.expect("a proof");
        assert!(
            proof
                .weakened_trace
                .iter()
                .any(|t| t.what.contains("found no target")),
            "{name}/{}: {:?}",
            spec.name,
            proof.weakened_trace
        );
        seen += 1;
    });
    assert!(seen >= 4, "{seen} controls with a targeted fault");
}

/// A safeguard only the simulator can take away is skipped on a real
/// backend, before a second cluster is made for it (the same controls bite
/// on the simulator, above).
#[test]
fn a_simulator_only_weakening_on_kind_provisions_nothing_and_proves_nothing() {
    let mut seen = 0;
    each_control(|name, drill, spec, control, real| {
        let Control::Weaken(weaken) = control else {
            return;
        };
        if weakening_supported(control, "kind") {
            return;
        }
        let on_kind = RealRun {
            seed: 1,
            backend: "kind",
            observation: real,
            converged: None,
        };
        let refuse = |_: &Drill, _: u64| -> Result<Box<dyn Backend>, BackendError> {
            panic!(
                "{name}/{}: a cluster was provisioned for {:?}",
                spec.name, weaken.change.value
            )
        };
        let judged = judge(drill, spec, control, &on_kind, &refuse).expect("judged");
        assert_eq!(conclusion(&judged), ControlConclusion::Inconclusive);
        assert_eq!(judged.result.measured, "not run");
        // Skipped: neither a pass nor the drill's proof failing.
        assert_eq!(judged.result.verdict, Verdict::Skipped);
        seen += 1;
    });
    assert!(seen >= 3, "{seen} simulator-only controls");
}

/// A policy guard's admission control bites while its rule enforces, and
/// the same control on the policy patched to `Audit` (an ablation's JSON
/// patch, RFC 6902) has no teeth: Kyverno admits an audited failure
/// (kyverno.io/docs/policy-types/cluster-policy/validate/#validation-failure-action).
#[test]
fn a_patch_to_a_policy_guard_flips_its_admission_control() {
    let drill = built_in("unlabelled-autoscaler-node");
    let (spec, control) = first_admission_control(&drill);
    assert_eq!(
        conclusion(&admission_control(&drill, spec, control)),
        ControlConclusion::Bites
    );
    let ablation = drillbench_model::scenario::spec::AblationControl {
        guard: control.guard.clone(),
        change: Located::new(drillbench_model::scenario::spec::GuardChange::Patch(vec![
            serde_json::json!({"op": "replace", "path": "/spec/validationFailureAction", "value": "Audit"}),
        ])),
        must_fail: Vec::new(),
    };
    let audited = ablate(&drill, &ablation);
    let judged = admission_control(&audited, spec, control);
    assert_eq!(conclusion(&judged), ControlConclusion::NoTeeth);
    assert!(
        judged
            .result
            .summary
            .contains("require-baseline-worker-affinity: fail"),
        "{}",
        judged.result.summary
    );
    // The policy a real cluster is given changes too, and `removePolicy`
    // takes it out of both.
    let in_workloads = |d: &Drill| {
        d.workloads
            .iter()
            .find(|w| {
                policy_guard::policy_name(&w.value).as_deref() == Some(control.guard.as_str())
            })
            .map(|w| w.value["spec"]["validationFailureAction"].clone())
    };
    assert_eq!(in_workloads(&audited), Some(serde_json::json!("Audit")));
    let removed = ablate(
        &drill,
        &drillbench_model::scenario::spec::AblationControl {
            change: Located::new(drillbench_model::scenario::spec::GuardChange::RemovePolicy),
            ..ablation
        },
    );
    assert_eq!(in_workloads(&removed), None);
    assert_eq!(removed.policies.len() + 1, drill.policies.len());
}

/// The planted object goes through the whole admission chain, as a
/// cluster's API server takes it (mutating admission, then validating:
/// kubernetes.io/docs/reference/access-authn-authz/extensible-admission-controllers/#what-are-admission-webhooks).
/// The built-in drills plant a consumer whose own term keeps it off the
/// baseline, which no mutation fixes, so the check bites; planted without
/// that term, the chain's mutation makes it compliant before the check
/// looks and the same control has no teeth, for a shorthand guard behind
/// the mutating `hcloud-on-baseline` and for a Kyverno rule behind its
/// policy's own mutations alike.
#[test]
fn a_planted_object_the_chains_mutation_fixes_proves_nothing() {
    for name in ["node-loss", "unlabelled-autoscaler-node"] {
        let drill = built_in(name);
        let (spec, control) = first_admission_control(&drill);
        assert_eq!(
            conclusion(&admission_control(&drill, spec, control)),
            ControlConclusion::Bites,
            "{name}"
        );
        let mut fixable = control.clone();
        let template = fixable
            .object
            .value
            .pointer_mut("/spec/template/spec")
            .and_then(serde_json::Value::as_object_mut)
            .expect("a pod template");
        assert!(
            template.remove("affinity").is_some(),
            "{name}: the own term"
        );
        let judged = admission_control(&drill, spec, &fixable);
        assert_eq!(conclusion(&judged), ControlConclusion::NoTeeth, "{name}");
        assert!(
            judged.result.summary.contains("admitted"),
            "{name}: {}",
            judged.result.summary
        );
    }
}

/// `burst-unchanged` is settled at the real run's first burst onto the
/// pools: the over-reaching guard keeps every pod off them, so the reclaim
/// after the load drops finds no autoscaler node, and that does not make
/// the control inconclusive, because the real run had shown its burst
/// minutes before. Paired: the same control whose weakened run stops
/// before that point (the burst step and every step after it left out) is
/// inconclusive, for the real run's burst happened on a path the weakened
/// run never took.
#[test]
fn a_burst_control_is_judged_up_to_the_real_runs_first_burst() {
    for name in ["autoscaler-scale-down", "unlabelled-autoscaler-node"] {
        let drill = built_in(name);
        let backend = provision(&drill, 1).expect("provisions");
        let (real, _) = run_steps(&drill, backend, false).expect("runs");
        let spec = drill
            .assertions
            .iter()
            .find(|a| a.name == "guard-pins-every-pod-bites")
            .expect("the burst control");
        let AssertionKind::NegativeControl(control) = &spec.kind else {
            panic!("a control");
        };
        let judged = judge(&drill, spec, control, &on_sim(&real), &provision).expect("runs");
        assert_eq!(
            conclusion(&judged),
            ControlConclusion::Bites,
            "{name}: {}",
            judged.result.summary
        );
        let proof = judged.result.control.as_ref().expect("a proof");
        assert!(
            proof
                .weakened_trace
                .iter()
                .any(|t| t.what.contains("found no target")),
            "{name}: the reclaim found no node: {:?}",
            proof.weakened_trace
        );
        assert!(
            judged.result.evidence[0]
                .pod
                .as_deref()
                .is_some_and(|p| p.starts_with("load/burst-")),
            "{name}: a burst pod left Pending: {:?}",
            judged.result.evidence
        );
        let cut = |d: &mut Drill| d.steps.truncate(0);
        let vacuous =
            judge_with(&drill, spec, control, &on_sim(&real), &provision, &cut).expect("runs");
        assert_eq!(
            conclusion(&vacuous),
            ControlConclusion::Inconclusive,
            "{name}: {}",
            vacuous.result.summary
        );
    }
}

/// An availability names no pod, so a bypassing drain's control counts its
/// failure only where a workload that lost a pod to that drain is short,
/// at or after the first such deletion: not a workload the drain spared,
/// not an outage before the drain.
#[test]
fn a_bypassing_drain_owns_only_the_outages_of_the_workloads_it_deleted_from() {
    use drillbench_observe::{Event, ObjectRef, Placement, WorkloadSeries};
    let drill = built_in("pre-upgrade");
    let web = drill
        .assertions
        .iter()
        .find(|a| a.name == "web-availability")
        .expect("web's floor");
    let openbao = drill
        .assertions
        .iter()
        .find(|a| a.name == "openbao-availability")
        .expect("openbao's floor");
    let mut obs = Observation::default();
    obs.events.push(Event {
        at_ms: 100,
        kind: EventKind::PodDeleted,
        object: ObjectRef {
            kind: "Pod".to_owned(),
            namespace: "apps".to_owned(),
            name: "web-1".to_owned(),
        },
        node: None,
        pool: None,
        message: BYPASSED_EVICTION.to_owned(),
    });
    obs.placements.push(Placement {
        at: 0,
        pod: "apps/web-1".to_owned(),
        namespace: "apps".to_owned(),
        pod_labels: Default::default(),
        workload: Some("apps/Deployment/web".to_owned()),
        node: "prod-worker-1".to_owned(),
        pool: "baseline".to_owned(),
        autoscaled: false,
        node_labels: Default::default(),
        claims: Vec::new(),
    });
    for key in ["apps/Deployment/web", "openbao/StatefulSet/openbao"] {
        obs.workloads.insert(
            key.to_owned(),
            WorkloadSeries {
                points: vec![(0, 3, 3), (50, 1, 3), (60, 3, 3), (100, 1, 3), (130, 3, 3)],
            },
        );
    }
    let outage = |at_ms: u64| Evidence {
        at_ms,
        pod: None,
        node: None,
        rule: "available".to_owned(),
        detail: "unavailable".to_owned(),
        labels: BTreeMap::new(),
    };
    let result = AssertionResult {
        name: "x".to_owned(),
        kind: "availability".to_owned(),
        verdict: Verdict::Fail,
        bound: String::new(),
        measured: String::new(),
        summary: String::new(),
        evidence: vec![outage(50), outage(100)],
        control: None,
    };
    let owned = |assertion: &Assertion| -> Vec<u64> {
        involves(&Subjects::Deleted, assertion, &result, &obs, &obs, None)
            .iter()
            .map(|e| e.at_ms)
            .collect()
    };
    assert_eq!(
        owned(web),
        vec![100],
        "the outage the drain caused, not the one before it"
    );
    assert_eq!(
        owned(openbao),
        Vec::<u64>::new(),
        "a workload the drain spared"
    );
}

/// A control that changes only the steps starts from a copy of the real
/// run's converged cluster, and its weakened run observes exactly what one
/// from a cluster built and converged afresh observes. Paired: a weakening
/// of what is built (a kubeconfig naming the holder node, an address set
/// when the cluster is provisioned) run from that copy misses its change,
/// which is why such a control builds its own cluster.
#[test]
fn a_steps_only_control_from_the_converged_copy_sees_what_a_fresh_run_sees() {
    let observed = |drill: &Drill, start: Start| {
        let (obs, _) = run_steps_from(drill, start, true, &mut |_| {}, &mut |_| {}).expect("runs");
        format!("{obs:?}")
    };
    let mut seen = 0;
    for name in DRILLS {
        let drill = built_in(name);
        let mut converged = None;
        let backend = provision(&drill, 1).expect("provisions");
        run_steps_from(
            &drill,
            Start::Provisioned(backend),
            false,
            &mut |backend| converged = backend.fork(),
            &mut |_| {},
        )
        .expect("runs");
        let converged = converged.expect("the simulator copies itself");
        let mut changes: Vec<(DrillChange, bool)> = drill
            .assertions
            .iter()
            .filter_map(|a| match &a.kind {
                AssertionKind::NegativeControl(c @ Control::Weaken(w)) if starts_converged(c) => {
                    Some((w.change.value.clone(), true))
                }
                _ => None,
            })
            .collect();
        if name == "cp-recreate" {
            changes.push((DrillChange::KubeconfigOnNode, false));
        }
        for (change, same) in changes {
            assert_eq!(changes_only_steps(&change), same, "{name}: {change:?}");
            let weakened = weaken_drill(
                &drill,
                &drillbench_model::scenario::spec::WeakenControl {
                    change: Located::at(change.clone(), Default::default()),
                    must_fail: Vec::new(),
                    preflight_refuses: None,
                },
            );
            let fresh = provision(&weakened, 1).expect("provisions");
            let fresh = observed(&weakened, Start::Provisioned(fresh));
            let copied = observed(
                &weakened,
                Start::Converged(converged.fork().expect("a copy")),
            );
            assert_eq!(fresh == copied, same, "{name}: {change:?}");
            seen += usize::from(same);
        }
    }
    assert!(seen >= 3, "{seen} controls that change only the steps");
}
