//! `kubectl auth can-i` answered by the façade's own authorization (a
//! SelfSubjectAccessReview, sent by kubectl as protobuf), and the
//! kubelets' heartbeats as `kubectl get leases -n kube-node-lease` shows
//! them: renewed every ten seconds of virtual time while a node runs
//! (kubelet's `nodeLeaseRenewIntervalFraction` of its 40 s lease), stale
//! once it is lost.

use crate::kubectl_support::*;

#[test]
fn auth_can_i_answers_yes_with_the_token() {
    let Some(s) = serve() else { return };
    let cases: [&[&str]; 2] = [
        &["auth", "can-i", "create", "pods", "-n", "apps"],
        &["auth", "can-i", "delete", "nodes", "--all-namespaces"],
    ];
    for args in cases {
        let out = s.run(args);
        assert!(out.ok, "{args:?}: {}{}", out.stdout, out.stderr);
        assert_eq!(out.stdout.trim(), "yes", "{args:?}: {}", out.stderr);
    }
    let out = s.ok(&["auth", "can-i", "--list", "-n", "apps"]);
    assert!(out.contains("*.*"), "{out}");
}

/// The renew time of every node's Lease, by node.
fn renewals(s: &Served) -> Vec<(String, String)> {
    s.ok(&[
        "get",
        "leases",
        "-n",
        "kube-node-lease",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.renewTime}{\"\\n\"}{end}",
    ])
    .lines()
    .filter_map(|l| l.split_once(' '))
    .map(|(n, t)| (n.to_owned(), t.to_owned()))
    .collect()
}

#[test]
fn node_leases_are_renewed_while_a_node_runs_and_go_stale_when_it_is_lost() {
    let Some(s) = serve() else { return };
    let table = s.ok(&["get", "leases", "-n", "kube-node-lease"]);
    assert!(table.contains("prod-worker-1"), "{table}");
    let before = renewals(&s);
    assert!(before.len() >= 6, "{before:?}");
    s.post("/bench/v1/crash?node=prod-worker-1");
    s.advance("35s");
    let after = renewals(&s);
    for ((node, then), (same, now)) in before.iter().zip(&after) {
        assert_eq!(node, same);
        if node == "prod-worker-1" {
            assert_eq!(now, then, "a lost node's heartbeat stops");
        } else {
            assert!(now > then, "{node} renews: {then} then {now}");
            // On the kubelet's ten-second grid.
            assert!(now.ends_with("0.000000Z"), "{now}");
        }
    }
}
