//! The drill's story as the real `kubectl` reads it: `kubectl get events`
//! and the Events section of `kubectl describe`, from the Events the
//! cluster's components would record for the simulator's timeline
//! (kube-scheduler's Scheduled and FailedScheduling, the node lifecycle
//! controller's NodeNotReady; see `crates/serve/src/events.rs`).

use crate::kubectl_support::*;

/// A Deployment whose pods no node can take: the scheduler says why.
fn stuck(s: &Served) -> String {
    manifest(
        s,
        "stuck",
        "apiVersion: apps/v1
kind: Deployment
metadata: {name: stuck, namespace: apps}
spec:
  replicas: 1
  selector:
    matchLabels: {app: stuck}
  template:
    metadata:
      labels: {app: stuck}
    spec:
      nodeSelector: {no-such-label: x}
      containers:
        - name: stuck
          image: nginx:1.29
          resources:
            requests: {cpu: 10m, memory: 16Mi}
",
    )
}

#[test]
fn get_events_and_describe_tell_what_the_scheduler_did() {
    let Some(s) = serve() else { return };
    let events = s.ok(&["get", "events", "-n", "apps"]);
    assert!(events.contains("LAST SEEN"), "{events}");
    assert!(
        events.contains("Scheduled") && events.contains("pod/api-00000"),
        "{events}"
    );
    let described = s.ok(&["describe", "pod", "api-00000", "-n", "apps"]);
    let section = described
        .split("Events:")
        .nth(1)
        .unwrap_or_else(|| panic!("no Events section: {described}"));
    assert!(
        section.contains("Scheduled")
            && section.contains("default-scheduler")
            && section.contains("Successfully assigned apps/api-00000 to"),
        "{section}"
    );
    assert!(!section.contains("FailedScheduling"), "{section}");

    // Control: a pod no node takes is described with the scheduler's
    // refusal instead.
    s.ok(&["create", "-f", &stuck(&s)]);
    s.advance("1m");
    let pod = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=stuck",
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let described = s.ok(&["describe", "pod", &pod, "-n", "apps"]);
    let section = described.split("Events:").nth(1).unwrap_or_default();
    assert!(
        section.contains("Warning") && section.contains("FailedScheduling"),
        "{described}"
    );
    assert!(!section.contains("Successfully assigned"), "{section}");
}

#[test]
fn a_crashed_node_is_told_by_the_node_controllers_event() {
    let Some(s) = serve() else { return };
    let about = [
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.name=prod-worker-1,reason=NodeNotReady",
        "-o",
        "jsonpath={range .items[*]}{.reason} {.message}{\"\\n\"}{end}",
    ];
    assert_eq!(s.ok(&about).trim(), "", "not before the crash");
    s.post("/bench/v1/crash?node=prod-worker-1");
    s.advance("2m");
    let out = s.ok(&about);
    assert!(
        out.contains("NodeNotReady Node prod-worker-1 status is now: NodeNotReady"),
        "{out}"
    );
}
