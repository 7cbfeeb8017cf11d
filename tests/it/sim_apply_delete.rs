//! The `apply` and `delete` steps, run through `bench run` on the
//! simulator and judged on the report's timeline, as a person reads it.
//!
//! Semantics transcribed (not copied):
//! - kubernetes.io/docs/tasks/manage-kubernetes-objects/declarative-config/
//!   ("kubectl apply" creates the objects a file declares; the Deployment
//!   controller then creates its pods and the scheduler binds them);
//! - kubernetes.io/docs/concepts/architecture/garbage-collection/
//!   ("Cascading deletion": `kubectl delete` uses background propagation by
//!   default, so the controller is deleted and the garbage collector deletes
//!   its dependents, the pods, each with its termination grace period).

use std::path::Path;

use serde_json::Value;

const EXTRA: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: extra, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: extra}}
  template:
    metadata: {labels: {app: extra}}
    spec:
      containers:
        - {name: extra, image: nginx, resources: {requests: {cpu: 100m, memory: 128Mi}}}
";

/// A drill on two workers running `steps` (YAML list items, indented by
/// two), with the manifest `manifests/extra.yaml` beside it.
pub(crate) fn drill(dir: &Path, steps: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir.join("manifests")).unwrap();
    std::fs::write(dir.join("manifests/extra.yaml"), EXTRA).unwrap();
    let text = format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: apply-delete
cluster:
  pools:
    - name: workers
      count: 2
      serverType: cx43
steps:
  - wait: {{for: 1m}}
{steps}  - wait: {{for: 3m}}
assertions:
  - name: quorum
    quorum: {{}}
"
    );
    let path = dir.join("drill.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The report's events on the `extra` pods, as (kind, at ms), and when
/// each step started, by label.
struct Timeline {
    extra: Vec<(String, u64)>,
    steps: Vec<(String, u64)>,
}

fn run(steps: &str) -> Timeline {
    let dir = tempfile::tempdir().unwrap();
    let path = drill(dir.path(), steps);
    run_in(dir.path(), &path)
}

/// Runs the drill at `path` (in `dir`) and reads its timeline.
fn run_in(dir: &Path, path: &Path) -> Timeline {
    let out = dir.join("out");
    let run = crate::common::bench(&[
        "run",
        path.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let events = report["timeline"].as_array().expect("a timeline");
    let field = |e: &Value, f: &str| e[f].as_str().unwrap_or_default().to_owned();
    Timeline {
        extra: events
            .iter()
            .filter(|e| e["object"]["kind"] == "Pod")
            .filter(|e| {
                e["object"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("extra-")
            })
            .map(|e| (field(e, "kind"), e["atMs"].as_u64().unwrap_or(0)))
            .collect(),
        steps: events
            .iter()
            .filter(|e| e["kind"] == "StepStarted")
            .map(|e| (field(e, "message"), e["atMs"].as_u64().unwrap_or(0)))
            .collect(),
    }
}

impl Timeline {
    fn count(&self, kind: &str) -> usize {
        self.extra.iter().filter(|(k, _)| k == kind).count()
    }

    fn first(&self, kind: &str) -> Option<u64> {
        self.extra
            .iter()
            .find(|(k, _)| k == kind)
            .map(|(_, at)| *at)
    }

    fn step(&self, label: &str) -> u64 {
        self.steps
            .iter()
            .find(|(l, _)| l == label)
            .unwrap_or_else(|| panic!("no step `{label}` in {:?}", self.steps))
            .1
    }
}

#[test]
fn a_deployment_applied_mid_drill_gets_its_pods_scheduled_from_that_step_on() {
    let applied = run("  - name: apply extra\n    apply: {path: manifests/extra.yaml}\n");
    let at = applied.step("apply extra");
    assert!(at >= 60_000, "the apply runs after the first minute: {at}");
    assert_eq!(applied.count("PodScheduled"), 2, "{:?}", applied.extra);
    assert!(
        applied.first("PodCreated").is_some_and(|t| t >= at),
        "no extra pod before the step: {:?}",
        applied.extra
    );
    assert_eq!(applied.count("PodDeleted"), 0, "{:?}", applied.extra);
    // Control: without the step the drill never has an extra pod.
    let without = run("");
    assert!(without.extra.is_empty(), "{:?}", without.extra);
}

/// Steps that apply `extra`, wait for it, and delete it.
pub(crate) const APPLY_THEN_DELETE: &str = "  - name: apply extra\n    apply: {path: manifests/extra.yaml}\n  \
     - wait: {until: {workloadReady: default/Deployment/extra}, timeout: 5m}\n  \
     - name: delete extra\n    delete: {kind: Deployment, name: extra}\n";

#[test]
fn deleting_the_applied_deployment_takes_its_pods_away_and_nothing_replaces_them() {
    let steps = APPLY_THEN_DELETE;
    let deleted = run(steps);
    let at = deleted.step("delete extra");
    assert_eq!(deleted.count("PodScheduled"), 2, "{:?}", deleted.extra);
    assert_eq!(deleted.count("PodDeleted"), 2, "{:?}", deleted.extra);
    assert!(
        deleted
            .extra
            .iter()
            .filter(|(k, _)| k == "PodDeleted" || k == "PodTerminating")
            .all(|(_, t)| *t >= at),
        "{:?}",
        deleted.extra
    );
    // The controller is gone: no pod is created after the deletion.
    assert!(
        deleted
            .extra
            .iter()
            .filter(|(k, _)| k == "PodCreated")
            .all(|(_, t)| *t < at),
        "{:?}",
        deleted.extra
    );
    // Control: the same drill without the delete step keeps both pods to
    // the end.
    let kept = run(&steps.replace(
        "  - name: delete extra\n    delete: {kind: Deployment, name: extra}\n",
        "",
    ));
    assert_eq!(kept.count("PodDeleted"), 0, "{:?}", kept.extra);
}

// plugin/pkg/admission/priority: a pod naming a PriorityClass that does not
// exist is refused ("no PriorityClass with name … was found"), whether the
// drill applies it at the start or in a step; the control applies the
// class in the same file before the Deployment and validates.
#[test]
fn an_applied_pods_priority_class_must_exist_and_may_come_in_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = drill(dir.path(), "  - apply: {path: manifests/extra.yaml}\n");
    let classed = EXTRA.replace(
        "    spec:\n",
        "    spec:\n      priorityClassName: extra-low\n",
    );
    std::fs::write(dir.path().join("manifests/extra.yaml"), &classed).unwrap();
    let refused = crate::common::bench(&["validate", path.to_str().unwrap()]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("names PriorityClass `extra-low`, which does not exist"),
        "{}",
        refused.stderr
    );
    let class = "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: extra-low}\nvalue: 10\n---\n";
    std::fs::write(
        dir.path().join("manifests/extra.yaml"),
        format!("{class}{classed}"),
    )
    .unwrap();
    let admitted = crate::common::bench(&["validate", path.to_str().unwrap()]);
    assert_eq!(admitted.code, 0, "{}", admitted.stderr);
}

// Flux's post-build substitution
// (fluxcd.io/flux/components/kustomize/kustomizations/#post-build-variable-substitution)
// applies to a file an `apply` step applies as to a workload file: the
// step's `substitute:` fills `${extra_replicas}`. Control: without a
// value the variable is refused before anything runs, at its `${`.
#[test]
fn an_applied_file_gets_the_steps_flux_values() {
    let placeholder = EXTRA.replace("replicas: 2", "replicas: ${extra_replicas}");
    let dir = tempfile::tempdir().unwrap();
    let path = drill(
        dir.path(),
        "  - apply: {path: manifests/extra.yaml, substitute: {extra_replicas: \"3\"}}\n",
    );
    std::fs::write(dir.path().join("manifests/extra.yaml"), &placeholder).unwrap();
    assert_eq!(run_in(dir.path(), &path).count("PodScheduled"), 3);

    let dir = tempfile::tempdir().unwrap();
    let path = drill(dir.path(), "  - apply: {path: manifests/extra.yaml}\n");
    std::fs::write(dir.path().join("manifests/extra.yaml"), &placeholder).unwrap();
    let unset = crate::common::bench(&["validate", path.to_str().unwrap()]);
    assert_eq!(unset.code, 2, "{}", unset.stderr);
    assert!(
        unset.stderr.contains("extra.yaml:5:") && unset.stderr.contains("extra_replicas"),
        "{}",
        unset.stderr
    );
}
