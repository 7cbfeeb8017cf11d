//! Kinds the simulator gives no behaviour, stored as written (the
//! façade's `DECLARED_KINDS`): the drill's CronJob is there for `kubectl
//! get`, and a Secret created with `kubectl create -f` reads back
//! (defaulted, as the API server defaults it) and is deleted like on any
//! API server.

use crate::kubectl_support::*;

#[test]
fn the_drills_cronjob_is_served_and_a_secret_is_stored_as_written() {
    let Some(s) = serve_drill("harness/examples/autoscaler-scale-down-without-guard.yaml") else {
        return;
    };
    let cronjobs = s.ok(&["get", "cronjobs", "-n", "openbao", "-o", "name"]);
    assert_eq!(cronjobs.trim(), "cronjob.batch/vault-snapshot");
    let secret = manifest(
        &s,
        "secret",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: openbao}\ndata: {password: czNjcjN0}\n",
    );
    s.ok(&["create", "-f", &secret]);
    let field = |path: &str| {
        s.ok(&[
            "get",
            "secret",
            "db",
            "-n",
            "openbao",
            "-o",
            &format!("jsonpath={path}"),
        ])
    };
    assert_eq!(field("{.data.password}"), "czNjcjN0");
    // Written without a type, stored as `SetDefaults_Secret` leaves it.
    assert_eq!(field("{.type}"), "Opaque");
    s.ok(&["delete", "secret", "db", "-n", "openbao"]);
    // Control: deleted means gone.
    let gone = s.run(&["get", "secret", "db", "-n", "openbao"]);
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );
}
