//! Whole-cluster views of the real `kubectl`: `kubectl get all`, which
//! lists the kinds discovery puts in the `all` category, and `kubectl
//! cluster-info`, which prints the server's URL and the Services of
//! kube-system labelled `kubernetes.io/cluster-service=true` (kubectl's
//! `clusterinfo.go`).

use crate::kubectl_support::*;

#[test]
fn get_all_lists_the_workloads_their_pods_and_services_but_not_config_maps() {
    let Some(s) = serve() else { return };
    let service = manifest(
        &s,
        "api-service",
        "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: apps}\nspec:\n  selector: {app: api}\n  ports: [{port: 80}]\n",
    );
    s.ok(&["create", "-f", &service]);
    s.ok(&["create", "-f", &config_map(&s, "settings")]);
    let all = s.ok(&["get", "all", "-A", "-o", "name"]);
    for expected in [
        "pod/api-00000",
        "service/api",
        "deployment.apps/api",
        "daemonset.apps/node-agent",
        "replicaset.apps/api-",
    ] {
        assert!(all.contains(expected), "{expected} missing: {all}");
    }
    // Control: a ConfigMap is not in the `all` category, nor is an
    // EndpointSlice.
    assert!(!all.contains("configmap/"), "{all}");
    assert!(!all.contains("endpointslice"), "{all}");
}

#[test]
fn cluster_info_names_the_server_and_the_cluster_services_of_kube_system() {
    let Some(s) = serve() else { return };
    let url = s.server.url();
    let info = s.ok(&["cluster-info"]);
    assert!(
        info.contains(&format!("Kubernetes control plane is running at {url}")),
        "{info}"
    );
    assert!(!info.contains("CoreDNS"), "{info}");
    let dns = manifest(
        &s,
        "kube-dns",
        "apiVersion: v1
kind: Service
metadata:
  name: kube-dns
  namespace: kube-system
  labels: {kubernetes.io/cluster-service: \"true\", kubernetes.io/name: CoreDNS}
spec:
  selector: {k8s-app: kube-dns}
  ports: [{name: dns, port: 53, protocol: UDP}]
",
    );
    // Control: a kube-system Service without the label is not listed.
    let other = manifest(
        &s,
        "other",
        "apiVersion: v1\nkind: Service\nmetadata: {name: metrics, namespace: kube-system}\nspec:\n  ports: [{port: 443}]\n",
    );
    s.ok(&["create", "-f", &dns]);
    s.ok(&["create", "-f", &other]);
    let info = s.ok(&["cluster-info"]);
    assert!(
        info.contains("CoreDNS is running at ")
            && info.contains("/api/v1/namespaces/kube-system/services/kube-dns:dns/proxy"),
        "{info}"
    );
    assert!(!info.contains("metrics"), "{info}");
}
