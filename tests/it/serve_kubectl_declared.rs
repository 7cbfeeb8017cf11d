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
    let password = s.ok(&[
        "get",
        "secret",
        "db",
        "-n",
        "openbao",
        "-o",
        "jsonpath={.data.password}",
    ]);
    assert_eq!(password, "czNjcjN0");
    // Written without a type, stored as `SetDefaults_Secret` leaves it.
    let kind = s.ok(&[
        "get",
        "secret",
        "db",
        "-n",
        "openbao",
        "-o",
        "jsonpath={.type}",
    ]);
    assert_eq!(kind, "Opaque");
    s.ok(&["delete", "secret", "db", "-n", "openbao"]);
    // Control: deleted means gone.
    let gone = s.run(&["get", "secret", "db", "-n", "openbao"]);
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );
}
