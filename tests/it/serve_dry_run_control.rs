//! The admission negative control on a real API server: run with
//! `--backend kubeconfig` against `bench sim serve`, the planted object is
//! submitted with server-side dry run (`dryRun=All`) through the served
//! cluster's admission, the control's evidence is the server's answer,
//! and nothing is created.
//!
//! Proof that the request was a dry run, beside the evidence naming it:
//! the object the server *admitted* (answered 201) does not exist after
//! the run, and the backend's watches never saw it appear. Control: the
//! object the server admits makes the control fail with no teeth.

use crate::common;

use std::path::{Path, PathBuf};

use drillbench::app::{self, Backend, Io, RunOptions};
use drillbench_model::drill::Drill;
use drillbench_model::exit::Exit;
use drillbench_report::{ControlConclusion, DrillReport, Verdict};
use drillbench_serve::{Clock, ServeOptions, Server};
use k8s_openapi::api::apps::v1::StatefulSet;
use kube::api::Api;

const SEED: u64 = 1;

/// An `hcloud` consumer without the baseline requirement, in `namespace`:
/// guard `openbao-requires-baseline` refuses it in `openbao` only.
fn planted(name: &str, namespace: &str) -> String {
    format!(
        r#"
          apiVersion: apps/v1
          kind: StatefulSet
          metadata: {{name: {name}, namespace: {namespace}}}
          spec:
            replicas: 1
            serviceName: planted
            selector: {{matchLabels: {{app: planted}}}}
            template:
              metadata: {{labels: {{app: planted}}}}
              spec:
                containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]
            volumeClaimTemplates:
              - metadata: {{name: data}}
                spec:
                  accessModes: [ReadWriteOnce]
                  storageClassName: hcloud
                  resources: {{requests: {{storage: 1Gi}}}}"#
    )
}

/// A drill with one enforcing guard and two admission controls naming it:
/// one whose object the guard refuses, one whose object it does not match.
fn write_drill(dir: &Path) -> PathBuf {
    let import = common::root().join("harness/ksail/ksail.prod.yaml");
    let text = format!(
        r#"apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: dry-run-control
  description: Admission controls judged by the served cluster's admission.
cluster:
  import: {import}
  storageClasses:
    - name: hcloud
      attach: SingleNode
    - name: longhorn
      attach: Replicated
      default: true
# A real API server creates nothing in a namespace that does not exist
# (NamespaceLifecycle), so the planted objects' namespaces are declared.
workloads:
  - inline: {{apiVersion: v1, kind: Namespace, metadata: {{name: openbao}}}}
  - inline: {{apiVersion: v1, kind: Namespace, metadata: {{name: apps}}}}
guards:
  - name: openbao-requires-baseline
    action: Enforce
    match: {{mountsClaimOfClass: hcloud, namespaces: [openbao]}}
    require:
      nodeAffinity: {{key: platform.devantler.tech/baseline-worker, operator: In, values: ["true"]}}
steps:
  - wait: {{for: 1m}}
assertions:
  - name: quorum
    quorum: {{}}
  - name: the-cluster-refuses-the-planted-consumer
    negativeControl:
      admission:
        guard: openbao-requires-baseline
        object:{refused}
  - name: the-cluster-admits-a-consumer-outside-openbao
    negativeControl:
      admission:
        guard: openbao-requires-baseline
        object:{admitted}
"#,
        import = import.display(),
        refused = planted("planted-refused", "openbao"),
        admitted = planted("planted-admitted", "apps"),
    );
    let path = dir.join("dry-run-control.yaml");
    std::fs::write(&path, text).expect("drill written");
    path
}

fn serve(drill: &Path, kubeconfig: &Path) -> Server {
    let drill = Drill::load(drill).unwrap_or_else(|d| panic!("{}", d.render(false)));
    Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: Some(kubeconfig.to_path_buf()),
            clock: Clock::Step,
            seed: SEED,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts")
}

fn run(
    drill: &Path,
    backend: Backend,
    kubeconfig: Option<&Path>,
    out: &Path,
) -> (Exit, String, DrillReport) {
    let options = RunOptions {
        standby_nodes: 2,
        shard: None,
        snapshot: None,
        timeline_budget: drillbench_report::timeline_summary::DEFAULT_TIMELINE_BUDGET,
        events_ndjson: false,
        drill: drill.display().to_string(),
        backend,
        seed: SEED,
        runs: 1,
        out: Some(out.to_path_buf()),
        kubeconfig: kubeconfig.map(Path::to_path_buf),
        context: None,
        allow_destructive: None,
        format: app::OutputFormat::default(),
    };
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    let exit = app::run(
        &options,
        &mut Io {
            out: &mut stdout,
            err: &mut stderr,
            color: false,
            terminal: false,
        },
    );
    let stderr = String::from_utf8_lossy(&stderr).into_owned();
    let report = DrillReport::read(&out.join("report.json"))
        .unwrap_or_else(|e| panic!("no report ({e}): {stderr}"));
    (exit, stderr, report)
}

/// The StatefulSets of a namespace, through kube-rs.
fn stateful_sets(server: &Server, namespace: &str) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = kube::Client::try_from(server.client_config()).expect("client");
        let api: Api<StatefulSet> = Api::namespaced(client, namespace);
        api.list(&Default::default())
            .await
            .expect("list")
            .items
            .into_iter()
            .filter_map(|s| s.metadata.name)
            .collect()
    })
}

#[test]
fn the_real_admission_control_dry_runs_the_planted_object_and_creates_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let drill = write_drill(dir.path());
    let kubeconfig = dir.path().join("kubeconfig.yaml");
    let server = serve(&drill, &kubeconfig);
    let before = (
        stateful_sets(&server, "openbao"),
        stateful_sets(&server, "apps"),
    );
    let (exit, stderr, report) = run(
        &drill,
        Backend::Kubeconfig,
        Some(&kubeconfig),
        &dir.path().join("kube"),
    );
    let after = (
        stateful_sets(&server, "openbao"),
        stateful_sets(&server, "apps"),
    );
    server.stop();

    let control = |name: &str| {
        report
            .assertions
            .iter()
            .find(|a| a.name == name)
            .unwrap_or_else(|| panic!("{name} in the report"))
    };
    // The guard's refusal comes from the server, with its words.
    let refused = control("the-cluster-refuses-the-planted-consumer");
    assert_eq!(refused.verdict, Verdict::Pass, "{}", refused.summary);
    let detail = &refused.evidence[0].detail;
    assert!(
        detail.starts_with("POST /apis/apps/v1/namespaces/openbao/statefulsets?")
            && detail.contains("dryRun=All"),
        "{detail}"
    );
    assert!(
        detail.contains("400 BadRequest: admission webhook")
            && detail.contains("denied the request: guard openbao-requires-baseline refused openbao/StatefulSet/planted-refused"),
        "{detail}"
    );
    // Control: the object the server admits is a control without teeth,
    // and the run says so with exit 4.
    let admitted = control("the-cluster-admits-a-consumer-outside-openbao");
    assert_eq!(admitted.verdict, Verdict::Fail, "{}", admitted.summary);
    let proof = admitted.control.as_ref().expect("a proof");
    assert_eq!(proof.conclusion, ControlConclusion::NoTeeth);
    assert!(
        admitted.evidence[0].detail.ends_with("-> 201: admitted")
            && admitted.evidence[0].detail.contains("dryRun=All"),
        "{:?}",
        admitted.evidence
    );
    assert_eq!(exit, Exit::ControlUnproven, "{stderr}");
    // Nothing was created: the admitted object was answered 201 and is
    // not there, and no watch saw either planted object appear.
    assert_eq!(before, after);
    assert!(
        !after.1.iter().any(|n| n.starts_with("planted")),
        "{after:?}"
    );
    assert!(
        !report
            .timeline
            .iter()
            .any(|e| e.object.name.starts_with("planted")),
        "the backend's watches saw a planted object"
    );
}

#[test]
fn on_the_simulator_the_same_controls_are_judged_by_its_emulation_as_before() {
    let dir = tempfile::tempdir().expect("temp dir");
    let drill = write_drill(dir.path());
    let (_, _, report) = run(&drill, Backend::Sim, None, &dir.path().join("sim"));
    let refused = report
        .assertions
        .iter()
        .find(|a| a.name == "the-cluster-refuses-the-planted-consumer")
        .expect("in the report");
    assert_eq!(refused.verdict, Verdict::Pass);
    // The emulation's evidence: the guard's own reason, no HTTP answer.
    assert!(
        !refused.evidence[0].detail.contains("dryRun"),
        "{:?}",
        refused.evidence
    );
}
