//! The real `kubectl` against `bench sim serve`: every command a person
//! uses to watch or poke a drill works on the simulator's API façade.
//!
//! Each test serves `harness/serve/serve.yaml` in-process on a free
//! loopback port with `--step` time, writes a kubeconfig, and drives
//! `kubectl` as a child process with a deadline. Time moves only when a
//! test advances it, so nothing here depends on how fast the machine is.

use std::time::{Duration, Instant};

use crate::kubectl_support::*;

#[test]
fn get_nodes_wide_shows_the_pools_labels() {
    let Some(s) = serve() else { return };
    let out = s.ok(&[
        "get",
        "nodes",
        "-o",
        "wide",
        "-L",
        "platform.devantler.tech/baseline-worker",
    ]);
    let header = out.lines().next().expect("a header");
    for column in [
        "NAME",
        "STATUS",
        "ROLES",
        "INTERNAL-IP",
        "OS-IMAGE",
        "BASELINE-WORKER",
    ] {
        assert!(header.contains(column), "{column} missing in {out}");
    }
    let worker = out
        .lines()
        .find(|l| l.starts_with("prod-worker-1 "))
        .expect("prod-worker-1 listed");
    assert!(
        worker.contains("Ready") && worker.trim_end().ends_with("true"),
        "{worker}"
    );
    let cp = out
        .lines()
        .find(|l| l.starts_with("prod-control-plane-1 "))
        .expect("control plane listed");
    assert!(cp.contains("control-plane"), "{cp}");
    let labels = s.ok(&["get", "nodes", "--show-labels", "--no-headers"]);
    assert_eq!(
        labels
            .lines()
            .filter(|l| l.contains("platform.devantler.tech/baseline-worker=true"))
            .count(),
        3,
        "the three baseline workers carry the pool label: {labels}"
    );
    // Short names resolve through discovery.
    assert!(
        s.ok(&["get", "no", "-o", "name"])
            .contains("node/prod-worker-2")
    );
}

#[test]
fn get_pods_in_all_namespaces() {
    let Some(s) = serve() else { return };
    let out = s.ok(&["get", "pods", "-A", "-o", "wide"]);
    let header = out.lines().next().expect("a header");
    assert!(
        header.starts_with("NAMESPACE") && header.contains("NODE"),
        "{out}"
    );
    let agents = out
        .lines()
        .filter(|l| l.starts_with("kube-system ") && l.contains("node-agent-"))
        .count();
    assert_eq!(agents, 3, "one agent per worker: {out}");
    let api = out
        .lines()
        .filter(|l| l.contains(" api-"))
        .collect::<Vec<_>>();
    assert_eq!(api.len(), 2, "{out}");
    assert!(
        api.iter()
            .all(|l| l.contains("1/1") && l.contains("Running")),
        "{out}"
    );
    // Selectors and short names.
    let selected = s.ok(&[
        "get",
        "po",
        "-n",
        "apps",
        "-l",
        "app in (cache)",
        "-o",
        "name",
    ]);
    assert_eq!(selected.lines().count(), 2, "{selected}");
    assert!(
        selected.lines().all(|l| l.starts_with("pod/cache-")),
        "{selected}"
    );
    let sts = s.run(&["get", "sts", "-A"]);
    assert!(sts.ok, "{}", sts.stderr);
    let pdb = s.ok(&["get", "pdb", "-n", "apps", "api"]);
    assert!(
        pdb.contains("api") && pdb.lines().nth(1).is_some_and(|l| l.contains(" 0 ")),
        "no disruption allowed: {pdb}"
    );
}

#[test]
fn label_and_cordon_a_node() {
    let Some(s) = serve() else { return };
    assert!(
        s.ok(&["label", "node", "prod-worker-1", "drill=yes"])
            .contains("labeled")
    );
    let out = s.ok(&["get", "nodes", "-l", "drill=yes", "-o", "name"]);
    assert_eq!(out.trim(), "node/prod-worker-1");
    assert!(
        s.ok(&["annotate", "node", "prod-worker-1", "drill/why=test"])
            .contains("annotated")
    );
    let yaml = s.ok(&["get", "node", "prod-worker-1", "-o", "yaml"]);
    assert!(
        yaml.contains("drill/why: test") && yaml.contains("drill: \"yes\""),
        "{yaml}"
    );
    assert!(
        s.ok(&["label", "node", "prod-worker-1", "drill-"])
            .contains("unlabeled")
    );
    assert!(
        s.ok(&["get", "nodes", "-l", "drill=yes", "-o", "name"])
            .trim()
            .is_empty()
    );

    assert!(s.ok(&["cordon", "prod-worker-1"]).contains("cordoned"));
    let out = s.ok(&["get", "node", "prod-worker-1"]);
    assert!(out.contains("Ready,SchedulingDisabled"), "{out}");
    // A cordoned node takes no new pods: scaled-up pods go elsewhere.
    s.ok(&["scale", "deployment/cache", "-n", "apps", "--replicas=6"]);
    s.advance("1m");
    let on_cordoned = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=cache",
        "--field-selector",
        "spec.nodeName=prod-worker-1",
        "-o",
        "name",
    ]);
    let before = on_cordoned.lines().count();
    assert!(
        before <= 1,
        "at most the pod that was there before: {on_cordoned}"
    );
    assert!(s.ok(&["uncordon", "prod-worker-1"]).contains("uncordoned"));
    assert!(
        !s.ok(&["get", "node", "prod-worker-1"])
            .contains("SchedulingDisabled")
    );
}

#[test]
fn drain_is_refused_by_a_budget_then_succeeds_when_it_allows() {
    let Some(s) = serve() else { return };
    let node = node_of(&s, "app=api");
    assert!(node.starts_with("prod-worker-"), "{node}");
    let drain = [
        "drain",
        node.as_str(),
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=6s",
    ];
    // minAvailable 2 of 2: zero disruptions allowed, every eviction is a 429.
    let refused = s.run(&drain);
    assert!(!refused.ok, "the drain must fail: {}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{}",
        refused.stderr
    );
    assert!(
        s.ok(&["get", "pods", "-n", "apps", "-l", "app=api"])
            .lines()
            .count()
            == 3,
        "both api pods still there"
    );

    // A third replica makes one disruption allowed.
    assert!(
        s.ok(&["scale", "deploy/api", "-n", "apps", "--replicas=3"])
            .contains("scaled")
    );
    s.advance("1m");
    let pdb = s.ok(&[
        "get",
        "pdb",
        "api",
        "-n",
        "apps",
        "-o",
        "jsonpath={.status.disruptionsAllowed}",
    ]);
    assert_eq!(pdb, "1");
    let drain = [
        "drain",
        node.as_str(),
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=60s",
    ];
    let drained = s.run_with(&drain, || s.advance("10s"));
    assert!(drained.ok, "{}{}", drained.stdout, drained.stderr);
    assert!(
        drained.stdout.contains(&format!("node/{node} drained")),
        "{}",
        drained.stdout
    );
    let left = s.ok(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "-o",
        "name",
    ]);
    assert!(
        left.lines().all(|l| l.starts_with("pod/node-agent-")),
        "only the DaemonSet's pod stays: {left}"
    );
}

#[test]
fn apply_then_reapply_with_a_change() {
    let Some(s) = serve() else { return };
    let manifest = s.dir.path().join("extra.yaml");
    let write = |replicas: u32, team: &str| {
        std::fs::write(
            &manifest,
            format!(
                "apiVersion: apps/v1
kind: Deployment
metadata:
  name: extra
  namespace: apps
  labels: {{team: {team}}}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: extra}}
  template:
    metadata:
      labels: {{app: extra}}
    spec:
      containers:
        - name: extra
          image: nginx:1.29
          resources:
            requests: {{cpu: 10m, memory: 16Mi}}
"
            ),
        )
        .expect("write manifest");
    };
    let file = manifest.to_str().expect("utf-8");
    write(1, "a");
    assert!(
        s.ok(&["apply", "-f", file])
            .contains("deployment.apps/extra created")
    );
    s.advance("30s");
    assert!(
        s.ok(&["get", "deploy", "extra", "-n", "apps"])
            .contains("1/1")
    );
    write(3, "b");
    assert!(
        s.ok(&["apply", "-f", file])
            .contains("deployment.apps/extra configured")
    );
    s.advance("30s");
    assert!(
        s.ok(&["get", "deploy", "extra", "-n", "apps"])
            .contains("3/3")
    );
    let labels = s.ok(&[
        "get",
        "deploy",
        "extra",
        "-n",
        "apps",
        "-o",
        "jsonpath={.metadata.labels.team}",
    ]);
    assert_eq!(labels, "b");
    assert!(s.ok(&["apply", "-f", file]).contains("unchanged"));
    // A new image is a rollout: applied, rolled out, and then shown.
    std::fs::write(
        &manifest,
        read(&manifest).replace("nginx:1.29", "nginx:1.30"),
    )
    .expect("write");
    assert!(
        s.ok(&["apply", "-f", file])
            .contains("deployment.apps/extra configured")
    );
    s.advance("2m");
    let image = |s: &Served| {
        s.ok(&[
            "get",
            "deploy",
            "extra",
            "-n",
            "apps",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ])
    };
    assert_eq!(image(&s), "nginx:1.30");
    assert!(
        s.ok(&["get", "deploy", "extra", "-n", "apps"])
            .contains("3/3")
    );
    assert!(s.ok(&["apply", "-f", file]).contains("unchanged"));
    // `kubectl set image` is the same rollout, by strategic merge patch.
    assert!(
        s.ok(&[
            "set",
            "image",
            "deploy/extra",
            "-n",
            "apps",
            "extra=nginx:1.31"
        ])
        .contains("image updated")
    );
    assert_eq!(image(&s), "nginx:1.31");
    // Any other template change is not modelled: said so, as a 422.
    std::fs::write(
        &manifest,
        read(&manifest).replace("labels: {app: extra}", "labels: {app: extra, tier: web}"),
    )
    .expect("write");
    let refused = s.run(&["apply", "-f", file]);
    assert!(
        !refused.ok && refused.stderr.contains("not modelled"),
        "{}",
        refused.stderr
    );
    assert!(
        s.ok(&["delete", "deploy", "extra", "-n", "apps"])
            .contains("deleted")
    );
    s.advance("1m");
    assert!(
        s.ok(&["get", "pods", "-n", "apps", "-l", "app=extra", "-o", "name"])
            .trim()
            .is_empty()
    );
}

#[test]
fn delete_a_node() {
    let Some(s) = serve() else { return };
    assert!(
        s.ok(&["delete", "node", "prod-worker-3"])
            .contains("node \"prod-worker-3\" deleted")
    );
    assert!(!s.ok(&["get", "nodes"]).contains("prod-worker-3"));
    let missing = s.run(&["get", "node", "prod-worker-3"]);
    assert!(
        !missing.ok && missing.stderr.contains("NotFound"),
        "{}",
        missing.stderr
    );
    // Pod GC removes the pods of the deleted node.
    s.advance("2m");
    let left = s.run(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        "spec.nodeName=prod-worker-3",
        "-o",
        "name",
    ]);
    assert!(left.ok && left.stdout.trim().is_empty(), "{}", left.stdout);
}

#[test]
fn get_pods_watch_shows_what_a_crash_causes() {
    let Some(s) = serve() else { return };
    let node = node_of(&s, "app=cache");
    let victim = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=cache",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let (mut watch, out, _) = s.spawn(
        &["get", "pods", "-A", "-w", "--output-watch-events"],
        "watch",
    );
    let start = Instant::now();
    while !read(&out).contains(&victim) {
        assert!(
            start.elapsed() < DEADLINE,
            "the watch never listed the pods"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    s.post(&format!("/bench/v1/crash?node={node}"));
    for _ in 0..7 {
        s.advance("1m");
    }
    // The events arrive as the simulator emits them; give kubectl a moment.
    let start = Instant::now();
    let terminating = |text: &str| {
        text.lines()
            .any(|l| l.starts_with("MODIFIED") && l.contains(&victim) && l.contains("Terminating"))
    };
    while !terminating(&read(&out)) && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    let text = read(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("MODIFIED") && l.contains(&victim) && l.contains("0/1")),
        "the pod on the crashed node goes NotReady: {text}"
    );
    assert!(
        terminating(&text),
        "then it is evicted by the taint manager: {text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("ADDED") && l.contains(" cache-") && !l.contains(&victim)),
        "and a replacement is created: {text}"
    );
}
