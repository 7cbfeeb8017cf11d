//! Admission negative controls judged by a real cluster's admission chain.
//!
//! On a backend with a real API server (kubeconfig, kind, Talos, a served
//! simulator), the planted object is submitted as a create with
//! server-side dry run (`dryRun=All`) before the cluster goes away; the
//! backend only sends it ([`Backend::dry_run_create`]). The control bites
//! only when the API server refuses the object *at admission*, and its
//! evidence is the server's own answer (HTTP status, reason, message),
//! never the bench's emulation of the guard: that is what proves the
//! platform's guard rather than the bench's copy of it. Nothing is created.
//!
//! A refusal that is not admission's (the namespace does not exist, the
//! object is invalid, RBAC forbids the create) says nothing about the
//! guard: inconclusive. So does a request that got no answer.

use std::collections::BTreeMap;

use super::controls::admission_judged;
use drillbench_assert::Judged;
use drillbench_backend::{Backend, BackendError, DryRunAnswer};
use drillbench_model::drill::Drill;
use drillbench_model::scenario::assertion::{Assertion, AssertionKind, Control};
use drillbench_model::scenario::spec::AdmissionControl;
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_report::{ControlConclusion, Evidence};

/// The API server's answers to the drill's admission controls, by
/// assertion name; an error is the reason the request got no answer.
pub(super) type DryRuns = BTreeMap<String, Result<DryRunAnswer, String>>;

/// Submits every admission control's planted object with `dryRun=All`,
/// while the cluster is still there. A backend without a real admission
/// chain (the simulator) answers `Unsupported` and its controls are left to
/// the emulation.
pub(super) fn submit(drill: &Drill, backend: &mut dyn Backend) -> DryRuns {
    let mut answers = DryRuns::new();
    for assertion in &drill.assertions {
        let AssertionKind::NegativeControl(Control::Admission(control)) = &assertion.kind else {
            continue;
        };
        let answer = match backend.dry_run_create(&control.object.value) {
            Err(BackendError::Unsupported { .. }) => continue,
            Err(e) => Err(drillbench_model::error_text::error_chain(&e)),
            Ok(answer) => Ok(answer),
        };
        answers.insert(assertion.name.clone(), answer);
    }
    answers
}

/// Whether a refusal came from admission: an admission webhook's denial
/// (`admission webhook "…" denied the request`, how the API server words
/// every webhook refusal, Kyverno's included), a ValidatingAdmissionPolicy's
/// (`… denied request`), or another admission plugin's 403 that is not an
/// authorization refusal (`… cannot create resource …`) nor the
/// NamespaceLifecycle plugin's refusal in a namespace being deleted.
pub fn refused_at_admission(answer: &DryRunAnswer) -> bool {
    if answer.admitted() {
        return false;
    }
    answer.message.contains("denied the request")
        || answer.message.contains("denied request")
        || (answer.code == 403
            && !answer.message.contains("cannot create resource")
            && !answer.message.contains("because it is being terminated"))
}

/// Whether the refusal names the control's guard (and rule): Kyverno lists
/// every blocking policy and rule in its denial (`POLICY:\n  RULE: message`),
/// the served simulator every refusing guard. A refusal that names only
/// other guards was the chain's, not this guard's.
fn names_the_guard(answer: &DryRunAnswer, control: &AdmissionControl) -> bool {
    answer.message.contains(control.guard.as_str())
        && control
            .rule
            .as_ref()
            .is_none_or(|rule| answer.message.contains(rule.as_str()))
}

/// The control's verdict from the API server's answer.
pub(super) fn judge(
    spec: &Assertion,
    control: &AdmissionControl,
    answer: &Result<DryRunAnswer, String>,
    backend: &str,
) -> Judged {
    let guard = &control.guard.value;
    let object = WorkloadRef::of_object(&control.object.value).to_string();
    let named = match &control.rule {
        Some(rule) => format!("rule `{}` of guard `{guard}`", rule.as_str()),
        None => format!("guard `{guard}`"),
    };
    let how = format!(
        "an object planted that breaks guard `{guard}`, submitted to the {backend} cluster's API server with dryRun=All"
    );
    let evidence = |answer: &DryRunAnswer| {
        let said = if answer.admitted() {
            format!("{}: admitted", answer.code)
        } else {
            format!("{} {}: {}", answer.code, answer.reason, answer.message)
        };
        vec![Evidence {
            at_ms: 0,
            pod: None,
            node: None,
            rule: "the API server's answer to the dry run".to_owned(),
            detail: format!("{} -> {said}", answer.request),
            labels: BTreeMap::new(),
        }]
    };
    let (conclusion, failed, why, evidence) = match answer {
        Err(why) => (
            ControlConclusion::Inconclusive,
            format!("{object} got no answer from the API server"),
            format!("the dry run could not be sent: {why}"),
            Vec::new(),
        ),
        Ok(answer) if answer.admitted() => (
            ControlConclusion::NoTeeth,
            format!(
                "the API server admitted {object} ({}, dryRun=All)",
                answer.code
            ),
            format!(
                "the cluster's admission chain let in the object guard `{guard}` exists to keep out: on this cluster the guard keeps nothing out"
            ),
            evidence(answer),
        ),
        Ok(answer) if refused_at_admission(answer) && names_the_guard(answer, control) => (
            ControlConclusion::Bites,
            format!(
                "the API server refused {object} at admission ({} {})",
                answer.code, answer.reason
            ),
            "the cluster's own admission chain refused the object the guard exists to keep out: the guard bites".to_owned(),
            evidence(answer),
        ),
        Ok(answer) if refused_at_admission(answer) => (
            ControlConclusion::Inconclusive,
            format!(
                "the API server refused {object} at admission, but its answer does not name {named} ({} {})",
                answer.code, answer.reason
            ),
            format!(
                "another part of the admission chain refused it, which proves nothing about guard `{guard}`: {}",
                answer.message
            ),
            evidence(answer),
        ),
        Ok(answer) => (
            ControlConclusion::Inconclusive,
            format!(
                "the API server refused {object}, but not at admission ({} {})",
                answer.code, answer.reason
            ),
            format!(
                "a refusal for another reason proves nothing about guard `{guard}`: {}",
                answer.message
            ),
            evidence(answer),
        ),
    };
    admission_judged(
        spec,
        (conclusion, how, failed, why),
        format!("the cluster's admission refuses the object planted against guard `{guard}`"),
        evidence,
    )
}

#[cfg(test)]
mod tests {
    use drillbench_model::scenario::located::Located;
    use drillbench_report::Verdict;
    use serde_json::json;

    use super::*;

    fn answer(code: u16, reason: &str, message: &str) -> DryRunAnswer {
        DryRunAnswer {
            code,
            reason: reason.to_owned(),
            message: message.to_owned(),
            request: "POST /apis/apps/v1/namespaces/openbao/statefulsets?&dryRun=All".to_owned(),
        }
    }

    fn control() -> (Assertion, AdmissionControl) {
        let control = AdmissionControl {
            guard: Located::new("openbao-requires-baseline".to_owned()),
            rule: None,
            object: Located::new(json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
                                         "metadata": {"name": "planted", "namespace": "openbao"}})),
        };
        let spec = Assertion {
            name: "guard-refuses".to_owned(),
            kind: AssertionKind::NegativeControl(Control::Admission(control.clone())),
        };
        (spec, control)
    }

    fn conclusion(answer: &Result<DryRunAnswer, String>) -> (ControlConclusion, Judged) {
        let (spec, control) = control();
        let judged = judge(&spec, &control, answer, "kubeconfig");
        let proof = judged.result.control.clone().expect("a proof");
        (proof.conclusion, judged)
    }

    // A webhook's refusal, as the API server words it
    // (k8s.io/apiserver webhook/errors/statuserror.go `ToStatusErr`: "admission
    // webhook %q denied the request: %s", code at least 400).
    const KYVERNO: &str = "admission webhook \"validate.kyverno.svc-fail\" denied the request: \n\nresource StatefulSet/openbao/planted was blocked due to the following policies\n\nopenbao-requires-baseline:\n  autogen-require-baseline: every term must require the baseline label";

    #[test]
    fn a_webhook_refusal_bites_with_the_servers_words_as_evidence() {
        let (c, judged) = conclusion(&Ok(answer(400, "BadRequest", KYVERNO)));
        assert_eq!(c, ControlConclusion::Bites);
        assert_eq!(judged.result.verdict, Verdict::Pass);
        assert_eq!(judged.result.measured, "refused");
        let detail = &judged.result.evidence[0].detail;
        assert!(detail.contains("dryRun=All"), "{detail}");
        assert!(
            detail.contains("400 BadRequest: admission webhook"),
            "{detail}"
        );
    }

    #[test]
    fn an_admitted_object_is_a_guard_without_teeth() {
        let (c, judged) = conclusion(&Ok(answer(201, "", "")));
        assert_eq!(c, ControlConclusion::NoTeeth);
        assert_eq!(judged.result.verdict, Verdict::Fail);
        assert!(
            judged.result.evidence[0].detail.ends_with("201: admitted"),
            "{:?}",
            judged.result.evidence
        );
    }

    #[test]
    fn a_refusal_that_is_not_admissions_proves_nothing() {
        for (code, reason, message) in [
            (404, "NotFound", "namespaces \"openbao\" not found"),
            (
                422,
                "Invalid",
                "StatefulSet.apps \"planted\" is invalid: spec.selector: Required value",
            ),
            (
                409,
                "AlreadyExists",
                "statefulsets.apps \"planted\" already exists",
            ),
            (
                403,
                "Forbidden",
                "statefulsets.apps is forbidden: User \"x\" cannot create resource \"statefulsets\"",
            ),
            (
                403,
                "Forbidden",
                "statefulsets.apps \"planted\" is forbidden: unable to create new content in namespace openbao because it is being terminated",
            ),
        ] {
            let (c, judged) = conclusion(&Ok(answer(code, reason, message)));
            assert_eq!(c, ControlConclusion::Inconclusive, "{code} {message}");
            assert_eq!(judged.result.verdict, Verdict::Fail);
        }
        // Control: a 403 from an admission plugin (not authorization) is
        // admission's, and bites when it names the guard, as a
        // ValidatingAdmissionPolicy's denial does.
        let quota = answer(
            403,
            "Forbidden",
            "pods \"p\" is forbidden: exceeded quota: compute",
        );
        assert!(refused_at_admission(&quota));
        let vap = "statefulsets.apps \"planted\" is forbidden: ValidatingAdmissionPolicy 'openbao-requires-baseline' with binding 'b' denied request: no baseline";
        assert_eq!(
            conclusion(&Ok(answer(403, "Forbidden", vap))).0,
            ControlConclusion::Bites
        );
    }

    /// A real chain runs every policy: a refusal by another guard (here a
    /// quota, or another Kyverno policy) says nothing about the named one.
    /// Paired with [`a_webhook_refusal_bites_with_the_servers_words_as_evidence`],
    /// whose denial names it.
    #[test]
    fn an_admission_refusal_that_names_another_guard_proves_nothing() {
        let other = KYVERNO.replace("openbao-requires-baseline", "disallow-latest-tag");
        for (code, reason, message) in [
            (400, "BadRequest", other.as_str()),
            (
                403,
                "Forbidden",
                "pods \"p\" is forbidden: exceeded quota: compute",
            ),
        ] {
            let (c, judged) = conclusion(&Ok(answer(code, reason, message)));
            assert_eq!(c, ControlConclusion::Inconclusive, "{message}");
            assert!(
                judged.result.summary.contains("does not name guard"),
                "{}",
                judged.result.summary
            );
        }
    }

    #[test]
    fn no_answer_is_inconclusive() {
        let (c, judged) = conclusion(&Err("connection refused".to_owned()));
        assert_eq!(c, ControlConclusion::Inconclusive);
        assert!(
            judged.result.summary.contains("connection refused"),
            "{}",
            judged.result.summary
        );
    }
}
