//! The Service network of `bench sim serve` through the real kubectl, as
//! the page "Service ClusterIP allocation" describes it: the API server's
//! own `default/kubernetes` Service on the range's first address, its
//! EndpointSlice listing the control planes, ClusterIPs allocated from
//! kubeadm's 10.96.0.0/12, and a 422 for an address already held.

use crate::kubectl_support::*;

fn service(s: &Served, name: &str, cluster_ip: Option<&str>) -> String {
    let ip = cluster_ip
        .map(|ip| format!("  clusterIP: {ip}\n"))
        .unwrap_or_default();
    manifest(
        s,
        &format!("svc-{name}"),
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n{ip}  selector: {{app: api}}\n  ports: [{{port: 80}}]\n"
        ),
    )
}

fn cluster_ip(s: &Served, name: &str) -> String {
    s.ok(&[
        "get",
        "svc",
        name,
        "-n",
        "apps",
        "-o",
        "jsonpath={.spec.clusterIP}",
    ])
}

/// `kubectl get svc kubernetes` shows the range's first address on
/// 443, and its EndpointSlice the control planes' addresses on 6443.
#[test]
fn the_kubernetes_service_fronts_the_control_planes() {
    let Some(s) = serve() else { return };
    let table = s.ok(&["get", "svc", "kubernetes"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("kubernetes "))
        .unwrap_or_else(|| panic!("no kubernetes row: {table}"));
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        columns[1..4],
        ["ClusterIP", "10.96.0.1", "<none>"],
        "{table}"
    );
    assert_eq!(columns[4], "443/TCP", "{table}");
    let control_planes = s.ok(&[
        "get",
        "nodes",
        "-l",
        "node-role.kubernetes.io/control-plane",
        "-o",
        "jsonpath={.items[*].status.addresses[?(@.type==\"InternalIP\")].address}",
    ]);
    let mut expected: Vec<&str> = control_planes.split_whitespace().collect();
    assert!(!expected.is_empty(), "the drill has control planes");
    expected.sort_by_key(|ip| ip.parse::<std::net::Ipv4Addr>().ok());
    let endpoints = s.ok(&[
        "get",
        "endpointslice",
        "kubernetes",
        "-o",
        "jsonpath={.endpoints[*].addresses[0]} {.ports[0].port}",
    ]);
    let mut words: Vec<&str> = endpoints.split_whitespace().collect();
    assert_eq!(words.pop(), Some("6443"), "{endpoints}");
    assert_eq!(words, expected, "{endpoints}");
    // Control: a worker is no API server.
    let worker = s.ok(&[
        "get",
        "nodes",
        "-l",
        "!node-role.kubernetes.io/control-plane",
        "-o",
        "jsonpath={.items[0].status.addresses[?(@.type==\"InternalIP\")].address}",
    ]);
    assert!(!words.contains(&worker.as_str()), "{worker} in {endpoints}");
}

/// A Service that asks for no address gets one of the range's upper
/// band; one that asks for a held address is refused with the API
/// server's 422, and the control, a free address, is kept.
#[test]
fn cluster_ips_are_allocated_and_a_held_one_is_refused() {
    let Some(s) = serve() else { return };
    s.ok(&["create", "-f", &service(&s, "web", None)]);
    let web = cluster_ip(&s, "web");
    let ip: std::net::Ipv4Addr = web.parse().expect("an address");
    let [a, b, c, _] = ip.octets();
    assert!(
        a == 10 && (96..112).contains(&b) && (b, c) != (96, 0),
        "{web} is in 10.96.0.0/12, above the static band"
    );
    s.ok(&["create", "-f", &service(&s, "dns", Some("10.96.0.10"))]);
    assert_eq!(cluster_ip(&s, "dns"), "10.96.0.10");
    let refused = s.run(&["create", "-f", &service(&s, "dup", Some("10.96.0.10"))]);
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains(
            "Service \"dup\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.96.0.10\"}: failed to allocate IP 10.96.0.10: provided IP is already allocated"
        ),
        "{}",
        refused.stderr
    );
    assert!(!s.run(&["get", "svc", "dup", "-n", "apps"]).ok);
    s.ok(&["create", "-f", &service(&s, "dup", Some("10.96.0.11"))]);
    assert_eq!(cluster_ip(&s, "dup"), "10.96.0.11");
    // Control: the kubernetes Service's own address is held too.
    let kubernetes = s.run(&["create", "-f", &service(&s, "twin", Some("10.96.0.1"))]);
    assert!(
        !kubernetes.ok
            && kubernetes
                .stderr
                .contains("provided IP is already allocated"),
        "{}",
        kubernetes.stderr
    );
}

/// An allocated ClusterIP through the update paths kubectl takes, as the
/// Service REST storage and `ValidateServiceUpdate` treat them
/// (`pkg/registry/core/service/storage/storage.go`'s
/// `patchAllocatedValues` and `normalizeClusterIPs`,
/// `pkg/apis/core/validation/validation.go`'s
/// `validateUpgradeDowngradeClusterIPs`): `kubectl replace` of the
/// manifest it was created from (no address) keeps the address; a client-
/// side apply, a patch and a server-side apply that change it are the
/// API server's 422 and change nothing. Control: an apply naming the
/// allocated address, with a new label, passes.
#[test]
fn an_allocated_cluster_ip_is_kept_and_may_not_change_once_set() {
    let Some(s) = serve() else { return };
    let created = service(&s, "web", None);
    s.ok(&["apply", "-f", &created]);
    let allocated = cluster_ip(&s, "web");
    assert!(allocated.starts_with("10.9"), "{allocated}");
    s.ok(&["replace", "-f", &created]);
    assert_eq!(cluster_ip(&s, "web"), allocated, "replace keeps it");
    assert_eq!(
        s.ok(&[
            "get",
            "svc",
            "web",
            "-n",
            "apps",
            "-o",
            "jsonpath={.spec.clusterIPs[0]}"
        ]),
        allocated
    );
    let message = "The Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.50\"}: may not change once set";
    let moved = service(&s, "web", Some("10.96.0.50"));
    for (how, args) in [
        ("apply", vec!["apply", "-f", moved.as_str()]),
        (
            "patch",
            vec![
                "patch",
                "svc",
                "web",
                "-n",
                "apps",
                "-p",
                "{\"spec\":{\"clusterIP\":\"10.96.0.50\"}}",
            ],
        ),
        (
            "server-side apply",
            vec![
                "apply",
                "--server-side",
                "--force-conflicts",
                "-f",
                moved.as_str(),
            ],
        ),
    ] {
        let refused = s.run(&args);
        assert!(
            !refused.ok && refused.stderr.contains(message),
            "{how}: {}{}",
            refused.stdout,
            refused.stderr
        );
        assert_eq!(cluster_ip(&s, "web"), allocated, "{how}");
    }
    let same = manifest(
        &s,
        "svc-web-same",
        &format!(
            "apiVersion: v1\nkind: Service\nmetadata: {{name: web, namespace: apps, labels: {{tier: front}}}}\nspec:\n  clusterIP: {allocated}\n  selector: {{app: api}}\n  ports: [{{port: 80}}]\n"
        ),
    );
    s.ok(&["apply", "-f", &same]);
    assert_eq!(cluster_ip(&s, "web"), allocated);
    assert_eq!(
        s.ok(&[
            "get",
            "svc",
            "web",
            "-n",
            "apps",
            "-o",
            "jsonpath={.metadata.labels.tier}"
        ]),
        "front"
    );
}
