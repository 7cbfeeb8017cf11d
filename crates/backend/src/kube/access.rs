//! Whether the bench may change a cluster it reaches through a kubeconfig:
//! only one it created (its run label on `kube-system` or on a node) or one
//! whose context the user named with `--allow-destructive`. Decided before
//! anything runs, from reads only.

use k8s_openapi::api::core::v1::{Namespace, Node};
use kube::api::{Api, ListParams};

use drillbench_model::drill::Drill;
use drillbench_model::labels::RUN_LABEL;
use drillbench_model::scenario::step::Action;

/// What the bench may do to a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Anything the drill asks; why.
    Destructive(String),
    /// Reads only.
    ReadOnly,
}

/// Decides the access from the run label found (if any), the context and
/// the context `--allow-destructive` named (if any).
pub fn decide(run_label: Option<&str>, context: &str, allowed: Option<&str>) -> Access {
    if let Some(run) = run_label {
        return Access::Destructive(format!(
            "the cluster was created by the bench (label {RUN_LABEL}={run})"
        ));
    }
    if allowed == Some(context) {
        return Access::Destructive(format!("--allow-destructive names context `{context}`"));
    }
    Access::ReadOnly
}

/// The steps of a drill that change the cluster (faults, scaling,
/// rollouts, node steps, evictions, budget changes, applies, deletions),
/// by label; a read-only cluster refuses a drill that has any.
pub fn changing_steps(drill: &Drill) -> Vec<String> {
    drill
        .steps
        .iter()
        .filter(|s| s.action.changes_the_cluster())
        .map(|s| {
            let label = &s.label;
            let what = match &s.action {
                Action::Fault(_) => "a fault".to_owned(),
                Action::Rollout(_) => "a rollout".to_owned(),
                Action::Node { change, .. } => change.to_string(),
                Action::Evict(_) => "an eviction".to_owned(),
                Action::Pdb(change) => change.to_string(),
                Action::Apply(manifest) => manifest.to_string(),
                Action::Delete(object) => object.to_string(),
                Action::Scale(_) => "scaling".to_owned(),
                Action::Preflight(_) | Action::Sleep(_) | Action::WaitUntil { .. } => {
                    "a change".to_owned()
                }
            };
            format!("`{label}` ({what})")
        })
        .collect()
}

/// The bench's run label on the cluster: on `kube-system`, else on any
/// node. Reads only.
pub async fn run_label(client: &kube::Client) -> Result<Option<String>, kube::Error> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    if let Some(ns) = namespaces.get_opt("kube-system").await?
        && let Some(run) = ns.metadata.labels.as_ref().and_then(|l| l.get(RUN_LABEL))
    {
        return Ok(Some(run.clone()));
    }
    let nodes: Api<Node> = Api::all(client.clone());
    let labelled = nodes
        .list(&ListParams::default().labels(RUN_LABEL).limit(1))
        .await?;
    Ok(labelled
        .items
        .first()
        .and_then(|n| n.metadata.labels.as_ref())
        .and_then(|l| l.get(RUN_LABEL))
        .cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_run_label_or_the_named_context_allows_changes() {
        assert!(matches!(
            decide(Some("served-node-loss"), "prod", None),
            Access::Destructive(_)
        ));
        assert!(matches!(
            decide(None, "staging", Some("staging")),
            Access::Destructive(_)
        ));
        assert_eq!(decide(None, "prod", Some("staging")), Access::ReadOnly);
        assert_eq!(decide(None, "prod", None), Access::ReadOnly);
    }

    #[test]
    fn faults_and_scaling_change_the_cluster_waits_do_not() {
        let drill = Drill::load(&drillbench_model::test_support::repo_file(
            "scenarios/node-loss.yaml",
        ))
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
        let steps = changing_steps(&drill);
        assert_eq!(steps.len(), 2, "{steps:?}");
        assert!(steps[0].contains("prod-worker-1 loses power"));
    }

    // A read-only cluster refuses a drill that applies or deletes objects;
    // the waits around them change nothing.
    #[test]
    fn apply_and_delete_steps_change_the_cluster() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("extra.yaml"),
            "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: extra}\n\
             spec: {minAvailable: 1, selector: {matchLabels: {app: extra}}}\n",
        )
        .expect("write");
        let text = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: x}
cluster:
  pools: [{name: workers, count: 1, serverType: cx43}]
steps:
  - wait: {for: 1m}
  - apply: {path: extra.yaml}
  - delete: {kind: PodDisruptionBudget, name: extra}
assertions: [{name: quorum, quorum: {}}]
";
        let drill = Drill::from_source(drillbench_model::scenario::SourceFile::new(
            dir.path().join("drill.yaml"),
            text.to_owned(),
        ))
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
        assert_eq!(
            changing_steps(&drill),
            [
                "`step 2` (apply extra.yaml)",
                "`step 3` (delete PodDisruptionBudget default/extra)"
            ]
        );
    }
}
