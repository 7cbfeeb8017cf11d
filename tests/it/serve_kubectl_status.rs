//! Status as the real controllers write it, read by the real `kubectl`:
//! `kubectl wait --for=condition=Available` and `kubectl rollout status`
//! against a Deployment's conditions and generations
//! (`pkg/controller/deployment/sync.go` and `progress.go`; kubectl's
//! `DeploymentStatusViewer` compares `observedGeneration` with
//! `generation` before it reads the counts).

use crate::kubectl_support::*;

fn deployment(s: &Served, name: &str, node_selector: &str) -> String {
    manifest(
        s,
        name,
        &format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: apps}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      nodeSelector: {{{node_selector}}}
      containers:
        - name: {name}
          image: nginx:1.29
          resources:
            requests: {{cpu: 10m, memory: 16Mi}}
"
        ),
    )
}

#[test]
fn wait_for_available_and_rollout_status_follow_the_deployments_conditions() {
    let Some(s) = serve() else { return };
    let out = s.ok(&[
        "wait",
        "--for=condition=Available",
        "deploy/cache",
        "-n",
        "apps",
        "--timeout=20s",
    ]);
    assert!(out.contains("deployment.apps/cache condition met"), "{out}");
    let out = s.ok(&[
        "rollout",
        "status",
        "deploy/cache",
        "-n",
        "apps",
        "--timeout=20s",
    ]);
    assert!(out.contains("successfully rolled out"), "{out}");

    // Control: pods that no node can take leave the Deployment without
    // minimum availability, and both commands give up.
    let file = deployment(&s, "stuck", "disk: nvme-none");
    s.ok(&["apply", "-f", &file]);
    s.advance("1m");
    let reason = s.ok(&[
        "get",
        "deploy",
        "stuck",
        "-n",
        "apps",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"Available\")].reason}",
    ]);
    assert_eq!(reason, "MinimumReplicasUnavailable");
    let wait = s.run(&[
        "wait",
        "--for=condition=Available",
        "deploy/stuck",
        "-n",
        "apps",
        "--timeout=2s",
    ]);
    assert!(!wait.ok, "{}{}", wait.stdout, wait.stderr);
    assert!(wait.stderr.contains("timed out"), "{}", wait.stderr);
    let rollout = s.run(&[
        "rollout",
        "status",
        "deploy/stuck",
        "-n",
        "apps",
        "--timeout=2s",
    ]);
    assert!(!rollout.ok, "{}{}", rollout.stdout, rollout.stderr);

    // A node that matches: the pods schedule and the condition turns.
    let node = node_of(&s, "app=cache");
    s.ok(&["label", "node", &node, "disk=nvme-none"]);
    s.advance("1m");
    let out = s.ok(&[
        "wait",
        "--for=condition=Available",
        "deploy/stuck",
        "-n",
        "apps",
        "--timeout=20s",
    ]);
    assert!(out.contains("condition met"), "{out}");
}

#[test]
fn a_scale_raises_the_generation_and_the_status_observes_it() {
    let Some(s) = serve() else { return };
    let generations = |s: &Served| {
        s.ok(&[
            "get",
            "deploy",
            "cache",
            "-n",
            "apps",
            "-o",
            "jsonpath={.metadata.generation} {.status.observedGeneration}",
        ])
    };
    assert_eq!(generations(&s), "1 1");
    s.ok(&["label", "deploy", "cache", "-n", "apps", "tier=x"]);
    assert_eq!(generations(&s), "1 1", "a label is not the spec");
    s.ok(&["scale", "deploy", "cache", "-n", "apps", "--replicas=3"]);
    assert_eq!(generations(&s), "2 2");
    s.advance("1m");
    let out = s.ok(&[
        "rollout",
        "status",
        "deploy/cache",
        "-n",
        "apps",
        "--timeout=20s",
    ]);
    assert!(out.contains("successfully rolled out"), "{out}");
}

/// Pod status as the kubelet reports it (kubernetes.io/docs/concepts/
/// workloads/pods/pod-lifecycle/#pod-conditions) and the QoS class of
/// kubernetes.io/docs/concepts/workloads/pods/pod-qos/.
#[test]
fn wait_for_ready_pods_reads_the_kubelets_conditions() {
    let Some(s) = serve() else { return };
    let out = s.ok(&[
        "wait",
        "--for=condition=ContainersReady",
        "pod",
        "-l",
        "app=cache",
        "-n",
        "apps",
        "--timeout=20s",
    ]);
    assert_eq!(out.matches("condition met").count(), 2, "{out}");
    let fields = s.ok(&[
        "get",
        "pods",
        "-l",
        "app=cache",
        "-n",
        "apps",
        "-o",
        "jsonpath={.items[0].status.qosClass} {.items[0].spec.restartPolicy} {.items[0].status.containerStatuses[0].ready} {.items[0].status.containerStatuses[0].state.running.startedAt}",
    ]);
    // cache asks for CPU and memory and sets no limits: Burstable.
    let parts: Vec<&str> = fields.split(' ').collect();
    assert_eq!(parts[..3], ["Burstable", "Always", "true"], "{fields}");
    assert!(parts[3].starts_with("20"), "a start time: {fields}");

    // Control: pods no node takes are not Ready, and the wait gives up.
    let file = deployment(&s, "stuck", "disk: nvme-none");
    s.ok(&["apply", "-f", &file]);
    s.advance("1m");
    let wait = s.run(&[
        "wait",
        "--for=condition=Ready",
        "pod",
        "-l",
        "app=stuck",
        "-n",
        "apps",
        "--timeout=2s",
    ]);
    assert!(!wait.ok, "{}{}", wait.stdout, wait.stderr);
    let out = s.ok(&[
        "wait",
        "--for=condition=Ready",
        "pod",
        "-l",
        "app=cache",
        "-n",
        "apps",
        "--timeout=20s",
    ]);
    assert!(out.contains("condition met"), "{out}");
}

/// `lastTransitionTime` is the simulated instant a condition last changed
/// status (the kubelet's `updateLastTransitionTime`, the deployment
/// controller's `SetDeploymentCondition`): a pod created two minutes in
/// turns Ready after the nodes did, and its Deployment turns Available
/// then; the control: time passing without a change keeps the instant.
#[test]
fn conditions_are_dated_by_their_last_change_in_simulated_time() {
    let Some(s) = serve() else { return };
    let condition_time = |what: &[&str], kind: &str| {
        let path =
            format!("jsonpath={{.status.conditions[?(@.type==\"{kind}\")].lastTransitionTime}}");
        let mut args = vec!["get"];
        args.extend(what);
        args.extend(["-o", path.as_str()]);
        s.ok(&args)
    };
    let nodes = s.ok(&["get", "nodes", "-o", "jsonpath={.items[0].metadata.name}"]);
    let node_ready = condition_time(&["node", &nodes], "Ready");
    assert!(node_ready.starts_with("2026-01-01T00:0"), "{node_ready}");
    s.ok(&["create", "-f", &deployment(&s, "dated", "")]);
    s.advance("30s");
    let pod = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=dated",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let pod_ready = condition_time(&["pod", &pod, "-n", "apps"], "Ready");
    let available = condition_time(&["deploy", "dated", "-n", "apps"], "Available");
    assert!(
        pod_ready.as_str() > node_ready.as_str() && pod_ready.as_str() >= "2026-01-01T00:02:00Z",
        "pod Ready at {pod_ready}, node Ready at {node_ready}"
    );
    assert!(available.as_str() >= "2026-01-01T00:02:00Z", "{available}");
    s.advance("5m");
    assert_eq!(
        condition_time(&["pod", &pod, "-n", "apps"], "Ready"),
        pod_ready
    );
    assert_eq!(condition_time(&["node", &nodes], "Ready"), node_ready);
    assert_eq!(
        condition_time(&["deploy", "dated", "-n", "apps"], "Available"),
        available
    );
}

/// The API server's defaults on what a client applied without them
/// (`pkg/apis/apps/v1/defaults.go` `SetDefaults_Deployment`, core/v1
/// `SetDefaults_PodSpec` and `SetDefaults_Container` over its template),
/// so `kubectl get -o yaml` shows what a real server would; the control:
/// a field the manifest set keeps its value.
#[test]
fn an_applied_deployment_reads_back_with_the_servers_defaults() {
    let Some(s) = serve() else { return };
    let file = deployment(&s, "defaulted", "tier: baseline");
    s.ok(&["apply", "-f", &file]);
    let fields = s.ok(&[
        "get",
        "deployment",
        "defaulted",
        "-n",
        "apps",
        "-o",
        "jsonpath={.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds} {.spec.template.spec.terminationGracePeriodSeconds} {.spec.template.spec.dnsPolicy} {.spec.template.spec.containers[0].imagePullPolicy} {.spec.replicas}",
    ]);
    assert_eq!(fields, "10 600 30 ClusterFirst IfNotPresent 2");
}
