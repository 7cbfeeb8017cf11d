//! A Service's EndpointSlices as the real `kubectl` reads them: `kubectl
//! get endpointslices` and the `Endpoints:` line of `kubectl describe
//! service` (kubectl 1.32 reads the slices labelled
//! `kubernetes.io/service-name`, and lists the ready endpoints). The
//! slices follow the pods the Service selects (`crates/serve/src/
//! endpoint_slices.rs`): a pod being deleted stops being ready there. The
//! legacy v1 Endpoints (`endpoints.rs`) follow the same pods.

use crate::kubectl_support::*;

fn api_service(s: &Served) -> String {
    manifest(
        s,
        "api-service",
        "apiVersion: v1
kind: Service
metadata: {name: api, namespace: apps, labels: {team: platform}}
spec:
  selector: {app: api}
  ports:
    - {name: http, port: 80, targetPort: 8080}
",
    )
}

fn pod_ip(s: &Served, pod: &str) -> String {
    s.ok(&[
        "get",
        "pod",
        pod,
        "-n",
        "apps",
        "-o",
        "jsonpath={.status.podIP}",
    ])
}

#[test]
fn a_services_endpoint_slices_list_the_ready_pods_it_selects() {
    let Some(s) = serve() else { return };
    s.ok(&["create", "-f", &api_service(&s)]);
    let (first, second) = (pod_ip(&s, "api-00000"), pod_ip(&s, "api-00001"));
    assert!(!first.is_empty() && first != second, "{first} {second}");

    let table = s.ok(&["get", "endpointslices", "-n", "apps"]);
    let header = table.lines().next().unwrap_or_default();
    for column in ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"] {
        assert!(header.contains(column), "{table}");
    }
    let row = table
        .lines()
        .find(|l| l.starts_with("api-"))
        .unwrap_or_else(|| panic!("no slice of api: {table}"));
    assert!(
        row.contains("IPv4") && row.contains("8080") && row.contains(&first),
        "{row}"
    );
    let labelled = s.ok(&[
        "get",
        "endpointslices",
        "-n",
        "apps",
        "-l",
        "kubernetes.io/service-name=api,endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io",
        "-o",
        "jsonpath={range .items[*].endpoints[*]}{.targetRef.name}={.conditions.ready}{\"\\n\"}{end}",
    ]);
    assert_eq!(labelled.trim(), "api-00000=true\napi-00001=true");

    let endpoints_line = |s: &Served| -> String {
        let described = s.ok(&["describe", "service", "api", "-n", "apps"]);
        described
            .lines()
            .find(|l| l.starts_with("Endpoints:"))
            .unwrap_or_else(|| panic!("no Endpoints line: {described}"))
            .to_owned()
    };
    let line = endpoints_line(&s);
    assert!(
        line.contains(&format!("{first}:8080")) && line.contains(&format!("{second}:8080")),
        "{line}"
    );
    // A target port the Service gives is kept (the control of the
    // defaulted one in the test below).
    let described = s.ok(&["describe", "service", "api", "-n", "apps"]);
    assert!(
        described
            .lines()
            .any(|l| l.starts_with("TargetPort:") && l.trim_end().ends_with("8080/TCP")),
        "{described}"
    );

    // The legacy Endpoints of the same Service say the same.
    let endpoints = |s: &Served| -> String {
        s.ok(&[
            "get",
            "endpoints",
            "api",
            "-n",
            "apps",
            "-o",
            "jsonpath={range .subsets[*].addresses[*]}{.targetRef.name}{\"\\n\"}{end}",
        ])
    };
    assert_eq!(endpoints(&s).trim(), "api-00000\napi-00001");
    let table = s.ok(&["get", "endpoints", "api", "-n", "apps"]);
    assert!(table.contains(&format!("{first}:8080")), "{table}");

    // Control: a pod being deleted is terminating in its slice and no
    // longer ready, so describe leaves it out. (Serving follows the pod's
    // Ready condition, which the simulator drops as deletion starts.)
    s.ok(&["delete", "pod", "api-00000", "-n", "apps", "--wait=false"]);
    let conditions = s.ok(&[
        "get",
        "endpointslices",
        "-n",
        "apps",
        "-l",
        "kubernetes.io/service-name=api",
        "-o",
        "jsonpath={range .items[*].endpoints[?(@.targetRef.name==\"api-00000\")]}{.conditions.ready} {.conditions.serving} {.conditions.terminating}{end}",
    ]);
    assert_eq!(conditions, "false false true");
    let line = endpoints_line(&s);
    assert!(
        !line.contains(&first) && line.contains(&format!("{second}:8080")),
        "{line}"
    );
    assert_eq!(
        endpoints(&s).trim(),
        "api-00001",
        "a terminating pod leaves"
    );
}

/// A Service whose selector matches no pod still has its one slice, with
/// no endpoints (the controller's placeholder), so describe's
/// `Endpoints:` line names no address (kubectl's `formatEndpointSlices`
/// says `<none>` only when there is no slice at all); deleting the
/// Service takes its slice away.
#[test]
fn a_service_selecting_nothing_has_an_empty_slice_until_it_is_deleted() {
    let Some(s) = serve() else { return };
    let nothing = manifest(
        &s,
        "nothing",
        "apiVersion: v1
kind: Service
metadata: {name: nothing, namespace: apps}
spec:
  selector: {app: no-such-app}
  ports:
    - {port: 80}
",
    );
    s.ok(&["create", "-f", &nothing]);
    let by_service = [
        "get",
        "endpointslices",
        "-n",
        "apps",
        "-l",
        "kubernetes.io/service-name=nothing",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.addressType} [{.endpoints}]{\"\\n\"}{end}",
    ];
    let listed = s.ok(&by_service);
    assert!(
        listed.starts_with("nothing-") && listed.trim_end().ends_with("IPv4 [[]]"),
        "{listed}"
    );
    let described = s.ok(&["describe", "service", "nothing", "-n", "apps"]);
    let line = described
        .lines()
        .find(|l| l.starts_with("Endpoints:"))
        .unwrap_or_else(|| panic!("no Endpoints line: {described}"));
    assert_eq!(line.trim_end(), "Endpoints:", "{described}");
    // Stored with the API server's defaults (`SetDefaults_Service`): the
    // type, the protocol, the port as target port, no affinity.
    for (field, value) in [
        ("Type:", "ClusterIP"),
        ("TargetPort:", "80/TCP"),
        ("Session Affinity:", "None"),
    ] {
        assert!(
            described
                .lines()
                .any(|l| l.starts_with(field) && l.trim_end().ends_with(value)),
            "{field} {value}: {described}"
        );
    }
    s.ok(&["delete", "service", "nothing", "-n", "apps"]);
    assert_eq!(s.ok(&by_service).trim(), "");
}
