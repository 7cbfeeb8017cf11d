//! A Deployment's ReplicaSets as the real `kubectl` reads them: one per
//! revision the simulator's Deployment keeps, so `kubectl get rs`,
//! `kubectl rollout history` and `kubectl rollout undo` work. Revisions as
//! the deployment controller numbers them (`pkg/controller/deployment/
//! sync.go`, `getNewReplicaSet`: the new template's ReplicaSet takes one
//! more than the highest revision; a template rolled back to reuses its
//! old ReplicaSet, which takes the next number), and undo as kubectl's
//! `DeploymentRollbacker` does it (the previous revision's template
//! patched into the Deployment, which the simulator then rolls out).

use crate::kubectl_support::*;

fn image(s: &Served) -> String {
    s.ok(&[
        "get",
        "deploy",
        "api",
        "-n",
        "apps",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ])
}

/// `REVISION` numbers of `kubectl rollout history`, in its order.
fn revisions(s: &Served) -> Vec<String> {
    s.ok(&["rollout", "history", "deploy/api", "-n", "apps"])
        .lines()
        .skip_while(|l| !l.starts_with("REVISION"))
        .skip(1)
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn rollout_history_and_undo_follow_the_deployments_replicasets() {
    let Some(s) = serve() else { return };
    // One revision before any rollout: nothing to undo (the control).
    assert_eq!(revisions(&s), ["1"]);
    let nothing = s.run(&["rollout", "undo", "deploy/api", "-n", "apps"]);
    assert!(
        !nothing.ok && nothing.stderr.contains("no rollout history found"),
        "{}{}",
        nothing.stdout,
        nothing.stderr
    );
    let rs = s.ok(&["get", "rs", "-n", "apps", "-l", "app=api", "-o", "name"]);
    assert_eq!(rs.lines().count(), 1, "{rs}");
    // The pods are the ReplicaSet's, by owner reference and hash label.
    let owner = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=api",
        "-o",
        "jsonpath={.items[0].metadata.ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].name}",
    ]);
    assert_eq!(
        format!("{owner}\n"),
        rs.replace("replicaset.apps/", "ReplicaSet/")
    );
    let rs_owner = s.ok(&[
        "get",
        "rs",
        "-n",
        "apps",
        "-l",
        "app=api",
        "-o",
        "jsonpath={.items[0].metadata.ownerReferences[0].kind}/{.items[0].metadata.ownerReferences[0].name}",
    ]);
    assert_eq!(rs_owner, "Deployment/api");

    s.ok(&["set", "image", "deploy/api", "-n", "apps", "api=nginx:1.30"]);
    s.advance("5m");
    assert_eq!(revisions(&s), ["1", "2"]);
    let sets = s.ok(&["get", "rs", "-n", "apps", "-l", "app=api"]);
    assert_eq!(
        sets.lines().count(),
        3,
        "a header and two ReplicaSets: {sets}"
    );
    let revision_2 = s.ok(&[
        "rollout",
        "history",
        "deploy/api",
        "-n",
        "apps",
        "--revision=2",
    ]);
    assert!(revision_2.contains("nginx:1.30"), "{revision_2}");

    // Undo: back to revision 1's template, rolled out as revision 3.
    let undone = s.ok(&["rollout", "undo", "deploy/api", "-n", "apps"]);
    assert!(undone.contains("rolled back"), "{undone}");
    s.advance("5m");
    assert_eq!(image(&s), "nginx:1.29");
    assert_eq!(
        revisions(&s),
        ["2", "3"],
        "revision 1's ReplicaSet is now 3"
    );
    let images = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=api",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert_eq!(images, "nginx:1.29 nginx:1.29", "the rollback rolled out");
    let annotation = s.ok(&[
        "get",
        "deploy",
        "api",
        "-n",
        "apps",
        "-o",
        "jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
    ]);
    assert_eq!(annotation, "3");
    // Undo to a named revision works the same; one that does not exist is
    // refused by kubectl.
    assert!(
        s.ok(&[
            "rollout",
            "undo",
            "deploy/api",
            "-n",
            "apps",
            "--to-revision=2"
        ])
        .contains("rolled back")
    );
    s.advance("5m");
    assert_eq!(image(&s), "nginx:1.30");
    let missing = s.run(&[
        "rollout",
        "undo",
        "deploy/api",
        "-n",
        "apps",
        "--to-revision=9",
    ]);
    assert!(!missing.ok, "{}", missing.stdout);
}
