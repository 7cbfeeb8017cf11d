//! How a negative control weakens a drill: a guard loosened or removed
//! (an ablation), or a safeguard of the procedure taken away (a
//! weakening), and how each reads in a report.

use std::sync::Arc;

use drillbench_assert as assert;
use drillbench_model::drill::Drill;
use drillbench_model::policy_guard;
use drillbench_model::scenario::located::{Located, Position};
use drillbench_model::scenario::spec::{
    AblationControl, BackupPhase, DrillChange, Fault, GuardChange, NodeFault, Target, WeakenControl,
};
use drillbench_model::scenario::step::{Action, Step};
use drillbench_model::topology::EndpointMode;
use drillbench_model::workload_ref::WorkloadRef;

pub(super) fn describe_change(change: &GuardChange) -> String {
    match change {
        GuardChange::Remove => "removed".to_owned(),
        GuardChange::ReplaceRequirement(r) => format!("replaced by `{}`", assert::describe(r)),
        GuardChange::SetValues(v) => format!("set to values [{}]", v.join(",")),
        GuardChange::AddUnlabelledTerm => "given an extra unlabelled OR term".to_owned(),
        GuardChange::RemovePolicy => "removed (the Kyverno policy deleted)".to_owned(),
        GuardChange::RemoveRule(rule) => format!("without its rule `{rule}`"),
        GuardChange::Patch(ops) => format!("patched ({})", describe_patch(ops)),
    }
}

/// A JSON patch as `op path` pairs, the values left out: enough to say
/// which part of the policy changed.
fn describe_patch(ops: &[serde_json::Value]) -> String {
    ops.iter()
        .map(|op| {
            let field = |k: &str| op.get(k).and_then(|v| v.as_str()).unwrap_or("?");
            format!("{} {}", field("op"), field("path"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn describe_weakening(change: &DrillChange) -> String {
    match change {
        DrillChange::SecondFaultBeforePromotion => {
            "a second control plane crashing before the new member's promotion".to_owned()
        }
        DrillChange::EndpointWithoutFailover => "an endpoint that does not fail over".to_owned(),
        DrillChange::KubeconfigOnNode => {
            "a kubeconfig naming the holder node instead of the stable endpoint".to_owned()
        }
        DrillChange::StartWithControlPlanes(n) => {
            format!("a cluster that starts with {n} control planes (and voters)")
        }
        DrillChange::StartWithLearner => {
            "a cluster that starts with an etcd learner (a membership change in progress)"
                .to_owned()
        }
        DrillChange::NoNodeReplacement => "the lost node never replaced".to_owned(),
        DrillChange::DrainWithoutEviction => {
            "drains that delete pods without the eviction API".to_owned()
        }
        DrillChange::UpgradeWithoutSettling => {
            "an upgrade that takes the next node without waiting for the workloads to be Ready"
                .to_owned()
        }
        DrillChange::NewestBackupFailed => {
            "the newest backup not completed (PartiallyFailed)".to_owned()
        }
        DrillChange::BackupTakes(d) => {
            format!("backups that take {d} while the writers keep writing")
        }
        DrillChange::PinWorkload(pin) => format!(
            "every replica of `{}` pinned to {} (a `kubernetes.io/hostname` nodeSelector)",
            pin.workload, pin.node
        ),
        DrillChange::ExcludedFromBackup(workloads) => format!(
            "{} labelled `velero.io/exclude-from-backup: \"true\"`, so no backup holds them",
            workloads
                .iter()
                .map(|w| format!("`{w}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DrillChange::SkipSteps(steps) => format!(
            "the step(s) {} left out",
            steps
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DrillChange::All(changes) => changes
            .iter()
            .map(describe_weakening)
            .collect::<Vec<_>>()
            .join(", and "),
    }
}

/// The steps a weakening drops, by label.
pub(super) fn dropped_steps(drill: &Drill, change: &DrillChange) -> Vec<String> {
    match change {
        DrillChange::All(changes) => changes
            .iter()
            .flat_map(|c| dropped_steps(drill, c))
            .collect(),
        DrillChange::NoNodeReplacement => drill
            .steps
            .iter()
            .filter(|s| is_replacement(s))
            .map(|s| s.label.clone())
            .collect(),
        DrillChange::SkipSteps(steps) => steps.clone(),
        _ => Vec::new(),
    }
}

fn is_replacement(step: &Step) -> bool {
    matches!(&step.action, Action::Fault(f) if matches!(f.value, Fault::ReplaceNode(_)))
}

/// The drill with one guard weakened.
pub(super) fn ablate(drill: &Drill, ablation: &AblationControl) -> Drill {
    let mut weakened = drill.clone();
    if drill
        .policy_guards
        .iter()
        .any(|g| g.as_str() == ablation.guard.as_str())
    {
        ablate_policy(
            &mut weakened,
            ablation.guard.as_str(),
            &ablation.change.value,
        );
        return weakened;
    }
    let guards = &mut weakened.spec.guards;
    if let Some(index) = guards
        .iter()
        .position(|g| g.name.as_str() == ablation.guard.as_str())
    {
        match &ablation.change.value {
            GuardChange::Remove => {
                guards.remove(index);
            }
            GuardChange::ReplaceRequirement(r) => {
                guards[index].value.require.node_affinity.value = r.clone()
            }
            GuardChange::SetValues(v) => {
                guards[index].value.require.node_affinity.value.values = Some(v.clone())
            }
            GuardChange::AddUnlabelledTerm => guards[index].value.unlabelled_term = true,
            // Validation refuses a policy change on a shorthand guard.
            GuardChange::RemovePolicy | GuardChange::RemoveRule(_) | GuardChange::Patch(_) => {}
        }
    }
    weakened
}

/// A policy guard weakened: the policy document changed (or removed) both
/// where admission reads it and among the workloads a real cluster is given.
/// Validation applied the same change, so it cannot fail here; if it did,
/// the policy is left as it was and the control shows no teeth.
fn ablate_policy(weakened: &mut Drill, name: &str, change: &GuardChange) {
    for documents in [&mut weakened.policies, &mut weakened.workloads] {
        Arc::make_mut(documents).retain_mut(|doc| {
            if policy_guard::policy_name(&doc.value).as_deref() != Some(name) {
                return true;
            }
            match policy_guard::apply_change(&doc.value, change) {
                Ok(Some(changed)) => {
                    doc.value = changed;
                    true
                }
                Ok(None) => false,
                Err(_) => true,
            }
        });
    }
}

/// Whether a weakening changes nothing but the drill's steps: then the
/// weakened drill's cluster, workloads and seed are the real run's, and so
/// is the cluster they converge to. Every other weakening changes what is
/// built (the topology, the endpoint, the backups, a pod template).
pub(super) fn changes_only_steps(change: &DrillChange) -> bool {
    match change {
        DrillChange::SecondFaultBeforePromotion
        | DrillChange::NoNodeReplacement
        | DrillChange::SkipSteps(_) => true,
        DrillChange::EndpointWithoutFailover
        | DrillChange::KubeconfigOnNode
        | DrillChange::StartWithControlPlanes(_)
        | DrillChange::StartWithLearner
        | DrillChange::DrainWithoutEviction
        | DrillChange::UpgradeWithoutSettling
        | DrillChange::NewestBackupFailed
        | DrillChange::BackupTakes(_)
        | DrillChange::ExcludedFromBackup(_)
        | DrillChange::PinWorkload(_) => false,
        DrillChange::All(changes) => changes.iter().all(changes_only_steps),
    }
}

/// The drill with one safeguard of its procedure taken away.
pub(super) fn weaken_drill(drill: &Drill, weaken: &WeakenControl) -> Drill {
    let mut weakened = drill.clone();
    for change in weaken.change.value.parts() {
        take_away(&mut weakened, change, weaken.change.at);
    }
    weakened
}

/// One safeguard taken away from the drill; `at` is where the control
/// names it.
fn take_away(weakened: &mut Drill, change: &DrillChange, at: Position) {
    match change {
        DrillChange::SecondFaultBeforePromotion => {
            // Right after each recreate, before anything waits for the
            // new member: another control plane goes down.
            let mut steps = Vec::new();
            for step in std::mem::take(&mut weakened.steps) {
                let recreate = matches!(
                    &step.action,
                    Action::Fault(f) if matches!(f.value, Fault::RecreateControlPlane(_))
                );
                let at = match &step.action {
                    Action::Fault(f) => f.at,
                    _ => at,
                };
                steps.push(step);
                if recreate {
                    steps.push(Step {
                        label: "a second control plane goes down before the promotion".to_owned(),
                        action: Action::Fault(Located::at(
                            Fault::CrashNode(NodeFault {
                                target: Located::at(Target::OtherControlPlane, at),
                                drain: false,
                                boot_delay: None,
                            }),
                            at,
                        )),
                    });
                }
            }
            weakened.steps = steps;
        }
        DrillChange::EndpointWithoutFailover => {
            if let Some(e) = &mut weakened.topology.endpoint {
                e.mode = EndpointMode::Pinned;
            }
        }
        DrillChange::KubeconfigOnNode => {
            if let Some(e) = &mut weakened.topology.endpoint {
                e.mode = EndpointMode::HolderNode;
            }
        }
        DrillChange::StartWithControlPlanes(n) => {
            let control_planes = &mut weakened.topology.control_planes;
            control_planes.ordinals.truncate(*n as usize);
            // A snapshot's control planes are named, not numbered.
            control_planes.nodes.truncate(*n as usize);
        }
        DrillChange::StartWithLearner => weakened.topology.control_planes.learners_at_start = 1,
        DrillChange::NoNodeReplacement => weakened.steps.retain(|s| !is_replacement(s)),
        DrillChange::SkipSteps(skipped) => weakened.steps.retain(|s| !skipped.contains(&s.label)),
        DrillChange::DrainWithoutEviction => weakened.topology.drains_bypass_budgets = true,
        DrillChange::UpgradeWithoutSettling => weakened.topology.upgrade_skips_settling = true,
        DrillChange::NewestBackupFailed => {
            for backup in &mut weakened.topology.backups {
                backup.last_phase = BackupPhase::PartiallyFailed;
            }
        }
        DrillChange::BackupTakes(d) => {
            for backup in &mut weakened.topology.backups {
                backup.duration = *d;
            }
        }
        DrillChange::ExcludedFromBackup(workloads) => {
            for backup in &mut weakened.topology.backups {
                backup.excluded = workloads.clone();
            }
        }
        DrillChange::PinWorkload(pin) => {
            for document in Arc::make_mut(&mut weakened.workloads) {
                if WorkloadRef::of_object(&document.value).to_string() == pin.workload {
                    pin_to(&mut document.value, &pin.node);
                }
            }
            // A changed pod template is a rollout: the pinned pods are
            // scheduled anew, not started where a snapshot captured them.
            if let Some(captured) = &mut weakened.snapshot {
                captured.placements.by_workload.remove(&pin.workload);
            }
        }
        // Taken apart by `parts`.
        DrillChange::All(_) => {}
    }
}

/// A pod template's `nodeSelector` gains `kubernetes.io/hostname: NODE`:
/// the well-known label every kubelet sets to its node's name
/// (kubernetes.io/docs/reference/labels-annotations-taints/#kubernetesiohostname),
/// and a nodeSelector's pairs must all match the node's labels
/// (kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodeselector),
/// so the pods fit that node alone.
fn pin_to(workload: &mut serde_json::Value, node: &str) {
    let Some(spec) = workload.pointer_mut("/spec/template/spec") else {
        return;
    };
    let Some(spec) = spec.as_object_mut() else {
        return;
    };
    let selector = spec
        .entry("nodeSelector")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    if let Some(selector) = selector.as_object_mut() {
        selector.insert(
            "kubernetes.io/hostname".to_owned(),
            serde_json::Value::String(node.to_owned()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_steps_are_dropped_and_declared_and_nothing_else_is() {
        let path = drillbench_model::scenario::catalog::resolve("stranded-pool").expect("built-in");
        let drill = Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)));
        let skipped = "drain and delete the other";
        let change = DrillChange::SkipSteps(vec![skipped.to_owned()]);
        let weaken = WeakenControl {
            change: Located::at(change.clone(), Default::default()),
            must_fail: Vec::new(),
            preflight_refuses: None,
        };
        let weakened = weaken_drill(&drill, &weaken);
        let labels = |d: &Drill| d.steps.iter().map(|s| s.label.clone()).collect::<Vec<_>>();
        let mut expected = labels(&drill);
        expected.retain(|l| l != skipped);
        assert_eq!(labels(&weakened), expected);
        assert_eq!(weakened.steps.len() + 1, drill.steps.len());
        assert_eq!(dropped_steps(&drill, &change), [skipped]);
        assert_eq!(
            describe_weakening(&change),
            "the step(s) `drain and delete the other` left out"
        );
        // Another weakening leaves the steps alone.
        let other = DrillChange::EndpointWithoutFailover;
        assert!(dropped_steps(&drill, &other).is_empty());
    }

    /// `pinWorkload` transcribes a nodeSelector on the well-known
    /// `kubernetes.io/hostname` label, which the kubelet sets to the node's
    /// name (kubernetes.io/docs/reference/labels-annotations-taints/
    /// #kubernetesiohostname): a pod fits only a node carrying every
    /// nodeSelector pair (kubernetes.io/docs/concepts/scheduling-eviction/
    /// assign-pod-node/#nodeselector). So every replica runs on that node,
    /// and once it dies the replacements stay Pending until it is back:
    /// node-loss's api, available ≥ 80 % when it may move, is not when
    /// pinned to the node that dies. The pinned workload alone changes.
    #[test]
    fn a_pinned_workload_runs_only_on_its_node_and_dies_with_it() {
        let path = drillbench_model::scenario::catalog::resolve("node-loss").expect("built-in");
        let drill = Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)));
        let pin = DrillChange::PinWorkload(drillbench_model::scenario::spec::PinWorkload {
            workload: "apps/Deployment/api".to_owned(),
            node: "prod-worker-1".to_owned(),
        });
        let weaken = WeakenControl {
            change: Located::at(pin.clone(), Default::default()),
            must_fail: Vec::new(),
            preflight_refuses: None,
        };
        let weakened = weaken_drill(&drill, &weaken);
        let selector = |d: &Drill, key: &str| {
            d.workloads
                .iter()
                .find(|w| WorkloadRef::of_object(&w.value).to_string() == key)
                .and_then(|w| w.value.pointer("/spec/template/spec/nodeSelector").cloned())
        };
        assert_eq!(
            selector(&weakened, "apps/Deployment/api"),
            Some(serde_json::json!({"kubernetes.io/hostname": "prod-worker-1"}))
        );
        assert_eq!(selector(&weakened, "apps/Deployment/web"), None);
        assert_eq!(selector(&drill, "apps/Deployment/api"), None);
        let available = |d: &Drill| {
            let backend = drillbench_backend::sim::provision(d, 1).expect("provisions");
            let (obs, _) = super::super::run_steps(d, backend, true).expect("runs");
            let api = d
                .assertions
                .iter()
                .find(|a| a.name == "api-keeps-serving")
                .expect("the assertion");
            let pods: Vec<String> = obs
                .placements
                .iter()
                .filter(|p| p.workload.as_deref() == Some("apps/Deployment/api"))
                .map(|p| p.node.clone())
                .collect();
            (assert::judge(api, &obs, &d.topology).result.verdict, pods)
        };
        let (pinned, nodes) = available(&weakened);
        assert_eq!(pinned, drillbench_report::Verdict::Fail);
        assert!(
            !nodes.is_empty() && nodes.iter().all(|n| n == "prod-worker-1"),
            "{nodes:?}"
        );
        // The control: free to move, the same api on the same seed keeps
        // serving through the same crash.
        let (free, nodes) = available(&drill);
        assert_eq!(free, drillbench_report::Verdict::Pass);
        assert!(nodes.iter().any(|n| n != "prod-worker-1"), "{nodes:?}");
        assert!(describe_weakening(&pin).contains("pinned to prod-worker-1"));
    }
}
