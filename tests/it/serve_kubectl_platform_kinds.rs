//! The RBAC, network and autoscaling objects of a platform's rendered
//! manifests, stored as written by `bench sim serve` and read back through
//! the real kubectl: `kubectl create role|rolebinding|clusterrole|
//! clusterrolebinding|ingress` (protobuf bodies, the groups' vendored
//! `generated.proto`), `kubectl apply` of a NetworkPolicy, an Ingress and
//! its IngressClass, an `autoscaling/v2` HorizontalPodAutoscaler, and the
//! columns kubectl's printers show for them
//! (`pkg/printers/internalversion/printers.go`; Roles and ClusterRoles
//! have no printer, so the API server's default table: name and
//! creation time).

use crate::kubectl_support::*;

/// The row of `name` in a `kubectl get` table, split into columns.
fn row(table: &str, name: &str) -> Vec<String> {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no {name} row: {table}"))
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn kubectl_creates_roles_and_bindings_and_lists_them_as_its_printers_do() {
    let Some(s) = serve() else { return };
    s.ok(&[
        "create",
        "role",
        "pod-reader",
        "-n",
        "apps",
        "--verb=get,list",
        "--resource=pods",
    ]);
    s.ok(&[
        "create",
        "rolebinding",
        "read-pods",
        "-n",
        "apps",
        "--role=pod-reader",
        "--user=alice",
        "--serviceaccount=apps:deployer",
    ]);
    s.ok(&[
        "create",
        "clusterrole",
        "node-reader",
        "--verb=get",
        "--resource=nodes",
    ]);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "read-nodes",
        "--clusterrole=node-reader",
        "--group=ops",
    ]);
    let rules = s.ok(&[
        "get",
        "role",
        "pod-reader",
        "-n",
        "apps",
        "-o",
        "jsonpath={.rules[0].verbs} {.rules[0].resources}",
    ]);
    assert_eq!(rules, r#"["get","list"] ["pods"]"#);
    let roles = s.ok(&["get", "roles", "-n", "apps"]);
    assert!(roles.starts_with("NAME"), "{roles}");
    assert!(
        roles
            .lines()
            .next()
            .unwrap_or_default()
            .contains("CREATED AT"),
        "{roles}"
    );
    let created = &row(&roles, "pod-reader")[1];
    assert!(
        created.ends_with('Z') && created.contains('T'),
        "RFC 3339: {roles}"
    );
    let bindings = s.ok(&["get", "rolebinding", "-n", "apps", "-o", "wide"]);
    assert_eq!(
        row(&bindings, "read-pods")[1..],
        [
            "Role/pod-reader".to_owned(),
            row(&bindings, "read-pods")[2].clone(),
            "alice".to_owned(),
            "apps/deployer".to_owned()
        ],
        "{bindings}"
    );
    let cluster_bindings = s.ok(&["get", "clusterrolebinding", "read-nodes", "-o", "wide"]);
    let columns = row(&cluster_bindings, "read-nodes");
    assert_eq!(columns[1], "ClusterRole/node-reader", "{cluster_bindings}");
    assert_eq!(columns[3], "ops", "{cluster_bindings}");
    // Cluster-scoped: no namespace in its name.
    assert!(
        s.ok(&["get", "clusterrole", "node-reader", "-o", "name"])
            .trim()
            == "clusterrole.rbac.authorization.k8s.io/node-reader"
    );
    // Control: deleted, it is gone, and a role never created is not found.
    s.ok(&["delete", "role", "pod-reader", "-n", "apps"]);
    let gone = s.run(&["get", "role", "pod-reader", "-n", "apps"]);
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );
}

#[test]
fn kubectl_applies_network_policies_and_ingresses_and_explains_them() {
    let Some(s) = serve() else { return };
    let path = manifest(
        &s,
        "network",
        "apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: api-from-web, namespace: apps}
spec:
  podSelector:
    matchLabels: {app: api}
    matchExpressions: [{key: tier, operator: In, values: [web, edge]}]
  policyTypes: [Ingress]
  ingress: [{from: [{podSelector: {matchLabels: {app: web}}}]}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: apps}
spec: {podSelector: {}}
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec:
  controller: k8s.io/ingress-nginx
  parameters: {apiGroup: k8s.example.com, kind: IngressParameters, name: external-lb}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: web, namespace: apps}
spec:
  ingressClassName: nginx
  tls: [{hosts: [web.example.com], secretName: web-tls}]
  rules:
    - host: web.example.com
      http:
        paths: [{path: /, pathType: Prefix, backend: {service: {name: web, port: {number: 80}}}}]
",
    );
    s.ok(&["apply", "--server-side", "-f", &path]);
    let policies = s.ok(&["get", "netpol", "-n", "apps"]);
    assert_eq!(
        row(&policies, "api-from-web")[1],
        "app=api,tier in (edge,web)",
        "{policies}"
    );
    assert_eq!(row(&policies, "deny-all")[1], "<none>", "{policies}");
    let classes = s.ok(&["get", "ingressclass"]);
    assert_eq!(
        row(&classes, "nginx")[1..3],
        [
            "k8s.io/ingress-nginx",
            "IngressParameters.k8s.example.com/external-lb"
        ],
        "{classes}"
    );
    // `kubectl create ingress` sends protobuf; its rule without TLS
    // serves port 80 only.
    s.ok(&[
        "create",
        "ingress",
        "api",
        "-n",
        "apps",
        "--class=nginx",
        "--rule=api.example.com/v1*=api:8080",
    ]);
    let ingresses = s.ok(&["get", "ing", "-n", "apps"]);
    let web = row(&ingresses, "web");
    assert_eq!(web[1..3], ["nginx", "web.example.com"], "{ingresses}");
    assert!(web.contains(&"80, 443".to_owned()), "{ingresses}");
    let api = row(&ingresses, "api");
    assert_eq!(api[1..3], ["nginx", "api.example.com"], "{ingresses}");
    assert!(api.contains(&"80".to_owned()), "{ingresses}");
    let path_type = s.ok(&[
        "get",
        "ing",
        "api",
        "-n",
        "apps",
        "-o",
        "jsonpath={.spec.rules[0].http.paths[0].pathType}",
    ]);
    // The rule's `http` sits beside its `host`, as JSON writes the
    // embedded `IngressRuleValue`.
    assert_eq!(path_type, "Prefix");
    let explained = s.ok(&["explain", "networkpolicy.spec.podSelector"]);
    assert!(explained.contains("matchLabels"), "{explained}");
    let groups = s.ok(&[
        "api-resources",
        "--api-group=networking.k8s.io",
        "-o",
        "name",
    ]);
    for plural in ["ingressclasses", "ingresses", "networkpolicies"] {
        assert!(
            groups.contains(&format!("{plural}.networking.k8s.io")),
            "{groups}"
        );
    }
}

/// An `autoscaling/v2` HPA as Helm charts and Flux renders write it: the
/// group is served at v2, the HPA is in `kubectl get all`, and its
/// targets read as `formatHPAMetrics` writes them, `<unknown>` with no
/// metrics server behind them.
#[test]
fn kubectl_applies_an_autoscaling_v2_hpa_and_lists_its_targets() {
    let Some(s) = serve() else { return };
    let path = manifest(
        &s,
        "hpa",
        "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: api, namespace: apps}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: api}
  minReplicas: 2
  maxReplicas: 5
  metrics:
    - type: Resource
      resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}
    - type: Pods
      pods: {metric: {name: rps}, target: {type: AverageValue, averageValue: \"100\"}}
    - type: Resource
      resource: {name: memory, target: {type: AverageValue, averageValue: 1Gi}}
",
    );
    s.ok(&["apply", "--server-side", "-f", &path]);
    let table = s.ok(&["get", "hpa", "-n", "apps"]);
    let columns = row(&table, "api");
    assert_eq!(
        columns[1..6],
        [
            "Deployment/api",
            "cpu: <unknown>/80%, <unknown>/100 + 1 more...",
            "2",
            "5",
            "0"
        ],
        "{table}"
    );
    let all = s.ok(&["get", "all", "-n", "apps", "-o", "name"]);
    assert!(
        all.lines()
            .any(|l| l == "horizontalpodautoscaler.autoscaling/api"),
        "{all}"
    );
    let explained = s.ok(&["explain", "hpa.spec.metrics"]);
    assert!(explained.contains("VERSION:    v2"), "{explained}");
    // Control: autoscaling/v1, which `kubectl autoscale` still writes, is
    // not served.
    let v1 = s.run(&["get", "--raw", "/apis/autoscaling/v1"]);
    assert!(!v1.ok, "{}", v1.stdout);
}

/// A Deployment in `apps` of one small replica whose pod spec carries
/// `spec_line` (indented for the pod spec), as a file to apply.
fn deployment(s: &Served, name: &str, spec_line: &str) -> String {
    manifest(
        s,
        name,
        &format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: apps}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      {spec_line}
      containers: [{{name: c, image: registry.k8s.io/pause:3.10, resources: {{requests: {{cpu: 10m}}}}}}]
"
        ),
    )
}

fn priorities(s: &Served, app: &str) -> String {
    s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        &format!("app={app}"),
        "-o",
        "jsonpath={.items[*].spec.priority}",
    ])
}

/// A PriorityClass written through the API reaches the simulator's
/// Priority admission (docs "Pod Priority and Preemption"; upstream
/// `plugin/pkg/admission/priority`): pods created after it resolve their
/// priority by it, a global default gives pods without a class its value,
/// its value is immutable (`ValidatePriorityClassUpdate`), and once it is
/// deleted a pod naming it is refused again. The API server accepts a
/// Deployment whose class does not exist yet and refuses its pods one by
/// one (the ReplicaSet's `FailedCreate`), until the class is created;
/// the control is the class created, after which they come.
#[test]
fn a_priority_class_created_through_the_api_sets_the_priority_of_later_pods() {
    let Some(s) = serve() else { return };
    s.ok(&[
        "apply",
        "-f",
        &deployment(&s, "early", "priorityClassName: vip"),
    ]);
    s.advance("1m");
    assert_eq!(priorities(&s, "early"), "", "no pod is admitted");
    let refused = s.ok(&[
        "get",
        "events",
        "-n",
        "apps",
        "--field-selector",
        "involvedObject.kind=ReplicaSet",
        "-o",
        "jsonpath={.items[*].involvedObject.name} {.items[*].reason}: {.items[*].message}",
    ]);
    assert!(
        refused.starts_with("early-")
            && refused.ends_with(
                " FailedCreate: Error creating: pods \"early-\" is forbidden: no \
                 PriorityClass with name vip was found"
            ),
        "on the Deployment's ReplicaSet: {refused}"
    );
    // The ReplicaSet's `ReplicaFailure`, copied to its Deployment.
    let failure = |s: &Served| {
        s.ok(&[
            "get",
            "deployment",
            "early",
            "-n",
            "apps",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"ReplicaFailure\")].reason}",
        ])
    };
    assert_eq!(failure(&s), "FailedCreate");
    let replica_set = s.ok(&[
        "get",
        "replicasets",
        "-n",
        "apps",
        "-l",
        "app=early",
        "-o",
        "jsonpath={.items[*].status.conditions[*].message}",
    ]);
    assert_eq!(
        replica_set,
        "pods \"early-\" is forbidden: no PriorityClass with name vip was found"
    );
    s.ok(&["create", "priorityclass", "vip", "--value=1000"]);
    s.ok(&[
        "apply",
        "-f",
        &deployment(&s, "vip-app", "priorityClassName: vip"),
    ]);
    s.advance("1m");
    assert_eq!(priorities(&s, "vip-app"), "1000");
    assert_eq!(priorities(&s, "early"), "1000", "the waiting pods come");
    assert_eq!(failure(&s), "", "and the failure is gone");
    let changed = s.run(&[
        "patch",
        "priorityclass",
        "vip",
        "--type=merge",
        "-p",
        r#"{"value": 5}"#,
    ]);
    assert!(
        !changed.ok
            && changed
                .stderr
                .contains("value: Forbidden: may not be changed in an update."),
        "{}",
        changed.stderr
    );
    s.ok(&[
        "patch",
        "priorityclass",
        "vip",
        "--type=merge",
        "-p",
        r#"{"globalDefault": true}"#,
    ]);
    s.ok(&[
        "apply",
        "-f",
        &deployment(&s, "plain", "schedulerName: default-scheduler"),
    ]);
    s.advance("1m");
    assert_eq!(
        priorities(&s, "plain"),
        "1000",
        "the global default's value"
    );
    s.ok(&["delete", "priorityclass", "vip"]);
    s.ok(&[
        "apply",
        "-f",
        &deployment(&s, "late", "priorityClassName: vip"),
    ]);
    s.advance("1m");
    assert_eq!(priorities(&s, "late"), "", "refused again");
}
