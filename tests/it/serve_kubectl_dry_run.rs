//! `--dry-run=server` and `kubectl diff` against `bench sim serve`: the
//! server validates and admits the write as it would make it, answers with
//! the result, and keeps nothing (`dryRun=All`, "Dry-run" in the
//! Kubernetes API concepts: "the request is still validated and admitted
//! ... but never persisted").

use crate::kubectl_support::*;

fn replicas(s: &Served, deployment: &str) -> String {
    s.ok(&[
        "get",
        "deploy",
        deployment,
        "-n",
        "apps",
        "-o",
        "jsonpath={.spec.replicas}",
    ])
}

#[test]
fn scale_with_a_server_dry_run_leaves_the_replicas() {
    let Some(s) = serve() else { return };
    assert_eq!(replicas(&s, "cache"), "2");
    let out = s.ok(&[
        "scale",
        "deploy",
        "cache",
        "-n",
        "apps",
        "--replicas=7",
        "--dry-run=server",
    ]);
    assert!(out.contains("scaled (server dry run)"), "{out}");
    s.advance("1m");
    assert_eq!(replicas(&s, "cache"), "2", "nothing was kept");
    let pods = s.ok(&["get", "pods", "-n", "apps", "-l", "app=cache", "-o", "name"]);
    assert_eq!(pods.lines().count(), 2, "no pod was made: {pods}");
    // Control: the same command without the dry run scales.
    s.ok(&["scale", "deploy", "cache", "-n", "apps", "--replicas=7"]);
    assert_eq!(replicas(&s, "cache"), "7");
}

#[test]
fn apply_create_and_delete_with_a_server_dry_run_keep_nothing() {
    let Some(s) = serve() else { return };
    let file = config_map(&s, "dry");
    let out = s.ok(&["apply", "-f", &file, "--dry-run=server"]);
    assert!(
        out.contains("configmap/dry created (server dry run)"),
        "{out}"
    );
    let out = s.ok(&["create", "-f", &file, "--dry-run=server"]);
    assert!(out.contains("(server dry run)"), "{out}");
    let missing = s.run(&["get", "configmap", "dry", "-n", "apps"]);
    assert!(
        !missing.ok && missing.stderr.contains("NotFound"),
        "{}",
        missing.stderr
    );

    let pod = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=cache",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let out = s.ok(&["delete", "pod", &pod, "-n", "apps", "--dry-run=server"]);
    assert!(out.contains("deleted (server dry run)"), "{out}");
    s.advance("1m");
    s.ok(&["get", "pod", &pod, "-n", "apps"]);

    // A dry run still validates: a write the server would refuse is refused.
    let bad = manifest(
        &s,
        "bad",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: apps}\ndata: {a: b}\n",
    );
    let refused = s.run(&["create", "-f", &bad, "--dry-run=server"]);
    assert!(!refused.ok, "{}", refused.stdout);
}

#[test]
fn diff_shows_the_change_and_keeps_nothing() {
    let Some(s) = serve() else { return };
    let file = manifest(
        &s,
        "cache",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: cache, namespace: apps}\nspec: {replicas: 5}\n",
    );
    // `kubectl diff` exits 1 when there are differences.
    let out = s.run(&["diff", "-f", &file]);
    assert!(!out.ok, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("-  replicas: 2"),
        "{}{}",
        out.stdout,
        out.stderr
    );
    assert!(out.stdout.contains("+  replicas: 5"), "{}", out.stdout);
    assert_eq!(replicas(&s, "cache"), "2", "a diff changes nothing");
    // Control: once the object is as applied, no difference: exit 0 (a
    // first diff also shows the last-applied annotation apply would add).
    let same = manifest(
        &s,
        "same",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: cache, namespace: apps}\nspec: {replicas: 2}\n",
    );
    s.ok(&["apply", "-f", &same]);
    let out = s.run(&["diff", "-f", &same]);
    assert!(out.ok, "{}{}", out.stdout, out.stderr);
    let out = s.run(&["diff", "-f", &file]);
    assert!(
        !out.ok && out.stdout.contains("+  replicas: 5"),
        "{}",
        out.stdout
    );
}
