//! `bench policy scan`: the live background check of one Kyverno policy
//! over the running Pods and the Nodes of a cluster, here `bench sim serve`
//! read through kube-rs. Reads only: the served cluster's version does not
//! move.

use crate::common;

use std::path::Path;

use drillbench::app;
use drillbench::io::Io;
use drillbench_model::drill::Drill;
use drillbench_model::exit::Exit;
use drillbench_serve::{Clock, ServeOptions, Server};

/// In `apps`, every Pod must be one of `api`'s; `cache`'s break it.
const ONLY_API: &str = r#"apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: only-api-in-apps}
spec:
  validationFailureAction: Audit
  background: true
  rules:
    - name: app-is-api
      match:
        any:
          - resources: {kinds: [Pod], namespaces: [apps]}
      validate:
        message: "only api runs in apps"
        pattern:
          metadata:
            labels: {app: api}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: app-label}
spec:
  background: true
  rules:
    - name: has-app
      match:
        any:
          - resources: {kinds: [Pod]}
      validate:
        message: "label app is required"
        pattern:
          metadata:
            labels: {app: "?*"}
"#;

fn scan(kubeconfig: &Path, policies: &Path, policy: &str) -> (Exit, String, String) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = app::policy_scan(
        kubeconfig,
        None,
        policy,
        &[policies.to_path_buf()],
        &mut Io {
            out: &mut out,
            err: &mut err,
            color: false,
            terminal: false,
        },
    );
    (
        exit,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

#[test]
fn the_running_pods_that_break_a_policy_are_listed_from_the_live_cluster() {
    let dir = tempfile::tempdir().expect("temp dir");
    let drill = Drill::load(&common::root().join("harness/serve/serve.yaml"))
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    let kubeconfig = dir.path().join("kubeconfig.yaml");
    let server = Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: Some(kubeconfig.clone()),
            clock: Clock::Step,
            seed: 1,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts");
    let policies = dir.path().join("policies.yaml");
    std::fs::write(&policies, ONLY_API).expect("policies written");
    let version = || {
        drillbench_backend::bench_api::BenchApi::new(server.addr())
            .with_token(Some(server.token().as_str().to_owned()))
            .now()
            .map(|n| n.resource_version)
            .ok()
    };
    // Pods Running: one still starting its containers is Pending, and a
    // live scan reads running pods only.
    drillbench_backend::bench_api::BenchApi::new(server.addr())
        .with_token(Some(server.token().as_str().to_owned()))
        .advance_to(120_000)
        .expect("time advances");
    let before = version();

    let (exit, out, err) = scan(&kubeconfig, &policies, "only-api-in-apps");
    assert_eq!(exit, Exit::AssertionFailed, "{out}{err}");
    let findings: Vec<&str> = out.lines().skip(1).collect();
    assert!(!findings.is_empty(), "{out}");
    for line in &findings {
        assert!(
            line.trim_start().starts_with("fail")
                && line.contains("Pod/apps/cache-")
                && line.contains("app-is-api: validation error: only api runs in apps."),
            "{line}"
        );
    }
    assert!(!out.contains("Pod/apps/api-"), "{out}");
    assert!(out.starts_with("policy only-api-in-apps over "), "{out}");
    // Control: a policy every running pod satisfies.
    let (exit, out, _) = scan(&kubeconfig, &policies, "app-label");
    assert_eq!(exit, Exit::Success, "{out}");
    assert!(out.contains(", 0 did not"), "{out}");
    // Bad input: a policy the files do not hold.
    let (exit, _, err) = scan(&kubeconfig, &policies, "absent");
    assert_eq!(exit, Exit::BadInput);
    assert!(err.contains("no policy named `absent`"), "{err}");
    assert_eq!(version(), before, "a read-only check wrote nothing");
    server.stop();
}
