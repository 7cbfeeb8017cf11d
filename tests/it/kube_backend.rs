//! The kube-rs backend end to end against `bench sim serve`: a drill run
//! with `--backend kubeconfig` on a served simulator (in `--step` mode)
//! reaches the same verdicts as `--backend sim` for the same drill and seed,
//! and a drill that would change a cluster the bench did not create is
//! refused before anything changes.
//!
//! What may differ between the two runs, and why (the verdicts may not):
//! - the backend sees the cluster through watches, so it knows of a change
//!   only at the instant the façade announces it; stepping the served
//!   clock change by change makes those instants the simulator's own;
//! - an eviction-based drain blocks the runner until it ends (as `kubectl
//!   drain` does), where the simulator drains beside the next steps, so a
//!   drill with a drained deletion runs longer by the drain's duration;
//! - `random_node_of` draws from the backend's own seeded generator, not
//!   the simulator's, and the bench's picks do not consume the served
//!   simulator's generator, so later random draws (boot delays) can differ;
//! - the stable endpoint's address is the kubeconfig's server URL, not the
//!   drill's endpoint name.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use drillbench::app::{self, Backend, Io, RunOptions};
use drillbench_model::drill::Drill;
use drillbench_model::exit::Exit;
use drillbench_observe::EventKind;
use drillbench_report::{DrillReport, Verdict};
use drillbench_serve::{Clock, ServeOptions, Server};

const SEED: u64 = 1;

/// A served simulator of the drill in `--step` mode, with its kubeconfig.
fn serve(drill: &Path, dir: &Path) -> (Server, PathBuf) {
    let drill = Drill::load(drill).unwrap_or_else(|d| panic!("{}", d.render(false)));
    let kubeconfig = dir.join("kubeconfig.yaml");
    let server = Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: Some(kubeconfig.clone()),
            clock: Clock::Step,
            seed: SEED,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts");
    (server, kubeconfig)
}

struct Outcome {
    exit: Exit,
    stderr: String,
    report: Option<DrillReport>,
}

fn run(
    drill: &Path,
    backend: Backend,
    kubeconfig: Option<&Path>,
    out: &Path,
    allow: Option<&str>,
) -> Outcome {
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
        allow_destructive: allow.map(str::to_owned),
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
    Outcome {
        exit,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        report: DrillReport::read(&out.join("report.json")).ok(),
    }
}

/// The verdicts of every assertion, the admission controls included: a
/// real API server judges those on the kubeconfig backend (see
/// [`judged_by_the_server`]) and the simulator's emulation of the same
/// admission chain on sim, and both must agree.
fn verdicts(report: &DrillReport) -> BTreeMap<String, Verdict> {
    report
        .assertions
        .iter()
        .map(|a| (a.name.clone(), a.verdict))
        .collect()
}

fn is_admission_control(a: &drillbench_report::AssertionResult) -> bool {
    a.control
        .as_ref()
        .is_some_and(|c| c.weakened.starts_with("an object planted"))
}

/// The admission controls of a kubeconfig run, each judged by the served
/// cluster's answer to a `dryRun=All` create: name, verdict, the answer.
fn judged_by_the_server(report: &DrillReport) -> Vec<(String, Verdict, String)> {
    report
        .assertions
        .iter()
        .filter(|a| is_admission_control(a))
        .map(|a| {
            let answer = a
                .evidence
                .first()
                .map(|e| e.detail.clone())
                .unwrap_or_default();
            assert!(answer.contains("dryRun=All"), "{}: {answer}", a.name);
            (a.name.clone(), a.verdict, answer)
        })
        .collect()
}

/// Runs a drill on the simulator and on a served simulator through the
/// kubeconfig backend; returns both reports.
fn both(drill: &Path) -> (DrillReport, DrillReport) {
    let dir = tempfile::tempdir().expect("temp dir");
    let sim = run(drill, Backend::Sim, None, &dir.path().join("sim"), None);
    let (server, kubeconfig) = serve(drill, dir.path());
    let kube = run(
        drill,
        Backend::Kubeconfig,
        Some(&kubeconfig),
        &dir.path().join("kube"),
        None,
    );
    server.stop();
    let sim_report = sim
        .report
        .unwrap_or_else(|| panic!("the sim run wrote no report: {}", sim.stderr));
    let kube_report = kube
        .report
        .unwrap_or_else(|| panic!("the kubeconfig run wrote no report: {}", kube.stderr));
    assert_eq!(kube_report.backend, "kubeconfig");
    assert_eq!(
        sim.exit, kube.exit,
        "both runs exit alike; kubeconfig stderr: {}",
        kube.stderr
    );
    (sim_report, kube_report)
}

fn assert_same_verdicts(name: &str) -> (DrillReport, DrillReport) {
    let drill = common::root()
        .join("scenarios")
        .join(format!("{name}.yaml"));
    assert_same_verdicts_of(&drill, name)
}

fn assert_same_verdicts_of(drill: &Path, name: &str) -> (DrillReport, DrillReport) {
    let (sim, kube) = both(drill);
    assert_eq!(
        verdicts(&kube),
        verdicts(&sim),
        "{name}: the kubeconfig backend judged differently"
    );
    assert_eq!(kube.outcome, sim.outcome);
    (sim, kube)
}

/// node-loss without its `pinWorkload` controls: a workload's spread is
/// the simulator's to take away, so on another backend they are skipped.
fn without_pinning(text: String) -> String {
    let at = text
        .find("  # The workloads keep serving because")
        .expect("the pinning controls are in the drill");
    text[..at].to_owned()
}

#[test]
fn node_loss_reaches_the_simulators_verdicts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let drill = variant(dir.path(), "node-loss", without_pinning);
    let (sim, kube) = assert_same_verdicts_of(&drill, "node-loss");
    // The admission control, judged by the served cluster's admission: its
    // guards run in order, the mutating `hcloud-on-baseline` leaves the
    // planted consumer's own term (it names the baseline label already),
    // and both guards refuse it. The server's denial names the control's
    // guard, as the simulator's emulation of the same chain does.
    let judged = judged_by_the_server(&kube);
    assert_eq!(judged.len(), 1, "{judged:?}");
    let (name, verdict, answer) = &judged[0];
    assert_eq!(name, "guard-refuses-an-unguarded-consumer");
    assert_eq!(*verdict, Verdict::Pass, "{answer}");
    assert!(
        answer.contains("400 BadRequest")
            && answer.contains("guard openbao-requires-baseline refused"),
        "{answer}"
    );
    // The RTO is measured from watched placements and readiness, not
    // copied: it must exist on both and be the fault-to-recovery time.
    let rto = |r: &DrillReport| {
        r.figures
            .get("rto.hcloud-consumers-recover")
            .map(|f| f.value)
    };
    assert!(rto(&kube).is_some(), "{:?}", kube.figures);
    assert_eq!(
        rto(&kube),
        rto(&sim),
        "a step-by-step served clock measures the same RTO"
    );
}

#[test]
fn autoscaler_scale_down_reaches_the_simulators_verdicts() {
    assert_same_verdicts("autoscaler-scale-down");
}

/// cp-recreate without its `weaken` controls: the safeguards they take
/// away (the endpoint's failover, the stable address, a healthy start) are
/// the simulator's to take, so on another backend they are reported
/// inconclusive, never bitten (see below).
fn cp_recreate_without_weakenings(dir: &Path) -> PathBuf {
    variant(dir, "cp-recreate", |text| {
        let at = text
            .find("  # Each safeguard of the runbook's procedure")
            .expect("the weakenings are in the drill");
        text[..at].to_owned()
    })
}

#[test]
fn cp_recreate_reaches_the_simulators_verdicts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (sim, kube) = both(&cp_recreate_without_weakenings(dir.path()));
    assert_eq!(verdicts(&kube), verdicts(&sim));
    assert_eq!(kube.outcome, sim.outcome);
    assert!(
        kube.timeline
            .iter()
            .any(|e| e.kind == drillbench_observe::EventKind::EtcdMemberPromoted),
        "the promotion was seen through the machines' etcd"
    );
}

/// A variant of a built-in drill, written beside links to the repository's
/// `harness/`, so its relative paths resolve as the original's do.
fn variant(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let root = common::root();
    std::os::unix::fs::symlink(root.join("harness"), dir.join("harness")).expect("link harness");
    std::fs::create_dir_all(dir.join("scenarios")).expect("scenarios dir");
    let text = std::fs::read_to_string(root.join("scenarios").join(format!("{name}.yaml")))
        .expect("drill");
    let path = dir.join("scenarios").join(format!("{name}-broken.yaml"));
    std::fs::write(&path, edit(text)).expect("variant");
    path
}

#[test]
fn a_platform_without_its_guard_fails_the_same_assertion_on_both() {
    // The incident: no fail-closed guard, so hcloud consumers may land on
    // autoscaler nodes, and their volumes strand when the nodes go.
    let dir = tempfile::tempdir().expect("temp dir");
    let drill = variant(dir.path(), "autoscaler-scale-down", |text| {
        let guard = "  - policy: {name: hcloud-consumers-on-baseline-workers}\n";
        let policy =
            "  - path: ../harness/kyverno/policies/hcloud-consumers-on-baseline-workers.yaml\n";
        assert!(
            text.contains(guard) && text.contains(policy),
            "the guard is in the drill"
        );
        // The controls name the guard: they go with it.
        let control = "  - name: guard-refuses-an-unguarded-consumer\n";
        let at = text.find(control).expect("the control is in the drill");
        text[..at]
            .replace(guard, "")
            .replace(policy, "")
            .replace("guards:\n", "guards: []\n")
    });
    let (sim, kube) = both(&drill);
    let failed = |r: &DrillReport| {
        r.assertions
            .iter()
            .filter(|a| a.verdict == Verdict::Fail && !is_admission_control(a))
            .map(|a| a.name.clone())
            .collect::<Vec<_>>()
    };
    assert!(
        failed(&sim).contains(&"hcloud-off-autoscalers".to_owned()),
        "the variant must break the platform: {:?}",
        failed(&sim)
    );
    assert_eq!(failed(&kube), failed(&sim));
    // The stranding is read from the served VolumeAttachments (the served
    // claims' PVs are CSI volumes, so their `selected-node` annotation is
    // not read): the same claims, stranded on the same departed nodes.
    let stranded = |r: &DrillReport| {
        let assertion = r
            .assertions
            .iter()
            .find(|a| a.name == "no-stranded-volumes")
            .expect("the drill asserts no stranded volumes");
        assert_eq!(assertion.verdict, Verdict::Fail);
        assertion
            .evidence
            .iter()
            .map(|e| {
                let node = e.node.clone().expect("the evidence names the node");
                let claim = e.detail.split(' ').next().unwrap_or_default().to_owned();
                (claim, node)
            })
            .collect::<Vec<_>>()
    };
    let on_kube = stranded(&kube);
    assert!(!on_kube.is_empty());
    assert_eq!(on_kube, stranded(&sim));
    for (claim, node) in &on_kube {
        assert!(
            !node.starts_with("prod-worker"),
            "{claim} strands on an autoscaler node, not {node}"
        );
        assert!(
            kube.timeline
                .iter()
                .any(|e| e.kind == EventKind::NodeDeleted && &e.object.name == node),
            "{node}, where {claim} stranded, was seen deleted"
        );
    }
}

#[test]
fn a_rollout_through_the_api_reaches_the_simulators_verdicts() {
    // The bench's rollout is a strategic-merge patch of the image, as
    // `kubectl set image` sends it; the served simulator rolls it out.
    let dir = tempfile::tempdir().expect("temp dir");
    let drill = variant(dir.path(), "node-loss", |text| {
        without_pinning(text).replacen(
            "steps:\n",
            "steps:\n  - name: web rolls out\n    rollout: {workload: apps/Deployment/web, image: registry.k8s.io/pause:3.11}\n  - name: the rollout settles\n    wait: {until: allWorkloadsReady, timeout: 10m}\n",
            1,
        )
    });
    let (sim, kube) = both(&drill);
    assert_eq!(verdicts(&kube), verdicts(&sim));
    for report in [&sim, &kube] {
        assert!(
            report
                .timeline
                .iter()
                .any(|e| e.kind == EventKind::WorkloadRolledOut && e.object.name == "web"),
            "{}: no rollout of web in the timeline",
            report.backend
        );
    }
}

fn served_state(server: &Server) -> (u64, String) {
    let api = drillbench_backend::bench_api::BenchApi::new(server.addr())
        .with_token(Some(server.token().as_str().to_owned()));
    let now = api.get("/bench/v1/now").expect("now");
    (
        now["nowMs"].as_u64().expect("nowMs"),
        now["resourceVersion"].as_str().expect("rv").to_owned(),
    )
}

#[test]
fn a_fault_drill_on_a_cluster_the_bench_did_not_create_is_refused_before_anything_changes() {
    let drill = common::root().join("scenarios/node-loss.yaml");
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, kubeconfig) = serve(&drill, dir.path());
    // Make it a cluster the bench did not create: no run label anywhere.
    let api = drillbench_backend::bench_api::BenchApi::new(server.addr())
        .with_token(Some(server.token().as_str().to_owned()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = kube::Client::try_from(server.client_config()).expect("client");
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client);
        namespaces
            .patch(
                "kube-system",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(serde_json::json!({
                    "metadata": {"labels": {drillbench_model::labels::RUN_LABEL: null}}
                })),
            )
            .await
            .expect("unlabel kube-system");
    });
    let before = served_state(&server);
    let timeline_before = api.get("/bench/v1/timeline").expect("timeline");

    let refused = run(
        &drill,
        Backend::Kubeconfig,
        Some(&kubeconfig),
        &dir.path().join("refused"),
        None,
    );
    assert_eq!(refused.exit, Exit::BadInput, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("--allow-destructive drillbench-sim")
            && refused.stderr.contains("prod-worker-1 loses power"),
        "the refusal names the step and the way out: {}",
        refused.stderr
    );
    assert!(refused.report.is_none(), "nothing ran, so no report");
    // Nothing changed: no apply, no reset, no fault, no time passed.
    assert_eq!(served_state(&server), before);
    assert_eq!(
        api.get("/bench/v1/timeline").expect("timeline"),
        timeline_before
    );

    // Naming the context lets the same drill run on the same cluster.
    let allowed = run(
        &drill,
        Backend::Kubeconfig,
        Some(&kubeconfig),
        &dir.path().join("allowed"),
        Some("drillbench-sim"),
    );
    assert_ne!(allowed.exit, Exit::BadInput, "{}", allowed.stderr);
    assert!(allowed.report.is_some(), "{}", allowed.stderr);
    assert_ne!(
        served_state(&server),
        before,
        "the allowed run changed the cluster"
    );
    server.stop();
}

/// The served simulator's machines, with its one address named as the API
/// server of the control plane holding the endpoint: the bench then holds
/// the stable endpoint itself, and every request goes through its proxy.
struct BehindProxy {
    machines: drillbench_backend::served::ServedSimMachines,
    api_server: (String, std::net::SocketAddr),
}

impl drillbench_backend::machines::Machines for BehindProxy {
    fn name(&self) -> &'static str {
        self.machines.name()
    }
    fn capabilities(&self) -> drillbench_backend::Capabilities {
        self.machines.capabilities()
    }
    fn kubeconfig(&self) -> (PathBuf, Option<String>) {
        self.machines.kubeconfig()
    }
    fn api_servers(&self) -> Vec<(String, std::net::SocketAddr)> {
        vec![self.api_server.clone()]
    }
    fn crash(&mut self, node: &str) -> Result<(), drillbench_backend::BackendError> {
        self.machines.crash(node)
    }
    fn remove(&mut self, node: &str) -> Result<(), drillbench_backend::BackendError> {
        self.machines.remove(node)
    }
    fn replace(&mut self, node: &str) -> Result<(), drillbench_backend::BackendError> {
        self.machines.replace(node)
    }
    fn recreate_control_plane(
        &mut self,
        node: &str,
    ) -> Result<(), drillbench_backend::BackendError> {
        self.machines.recreate_control_plane(node)
    }
    fn etcd_members(&mut self) -> Option<(u32, u32)> {
        self.machines.etcd_members()
    }
    fn teardown(&mut self) -> Result<(), drillbench_backend::BackendError> {
        self.machines.teardown()
    }
}

#[test]
fn through_the_benchs_stable_endpoint_cp_recreate_reaches_the_simulators_verdicts() {
    use drillbench_backend::bench_api::BenchApi;
    use drillbench_backend::kube::{KubeBackend, KubeOptions};
    use drillbench_backend::machines::Machines;
    use drillbench_backend::served::ServedSimMachines;

    let path = common::root().join("scenarios/cp-recreate.yaml");
    let drill = Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)));
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, kubeconfig) = serve(&path, dir.path());
    let api = BenchApi::new(server.addr()).with_token(Some(server.token().as_str().to_owned()));
    let holder = api.get("/bench/v1/now").expect("now")["endpointHolder"]
        .as_str()
        .expect("a holder")
        .to_owned();
    let provision = |drill: &Drill, seed: u64| {
        let machines = ServedSimMachines::new(api.clone(), kubeconfig.clone(), None);
        machines.reset(drill, seed)?;
        let machines = BehindProxy {
            machines,
            api_server: (holder.clone(), server.addr()),
        };
        assert_eq!(machines.api_servers().len(), 1);
        let backend = KubeBackend::connect(
            drill,
            seed,
            Box::new(machines),
            KubeOptions {
                name: "kubeconfig",
                run_id: drillbench_backend::kube::run_id(drill, seed),
                read_only: false,
                admit_guards: false,
                emulate_autoscaler: false,
            },
        )
        .map_err(drillbench_backend::BackendError::from)?;
        Ok(Box::new(backend) as Box<dyn drillbench_backend::Backend>)
    };
    let kube = drillbench::run::run_drill(&drill, SEED, &provision).expect("the drill runs");
    let sim = drillbench::run::run_drill(&drill, SEED, &drillbench_backend::sim::provision)
        .expect("the drill runs");
    let url = server.url();
    server.stop();
    // The weakenings the kubeconfig backend cannot apply are skipped there
    // (or inconclusive), never green; everything else is judged alike.
    let weakenings: Vec<&str> = drill
        .assertions
        .iter()
        .filter(|a| {
            matches!(
                a.kind,
                drillbench_model::scenario::assertion::AssertionKind::NegativeControl(
                    drillbench_model::scenario::assertion::Control::Weaken(_)
                )
            )
        })
        .map(|a| a.name.as_str())
        .collect();
    assert!(weakenings.len() >= 4, "{weakenings:?}");
    for name in &weakenings {
        let control = kube
            .assertions
            .iter()
            .find(|a| a.name == *name)
            .expect("control");
        let conclusion = control.control.as_ref().map(|p| p.conclusion);
        assert_ne!(
            conclusion,
            Some(drillbench_report::ControlConclusion::NoTeeth),
            "{name}: {}",
            control.summary
        );
        if conclusion != Some(drillbench_report::ControlConclusion::Bites) {
            assert_ne!(
                control.verdict,
                Verdict::Pass,
                "{name}: never green unproven"
            );
        }
    }
    let without = |r: &DrillReport| {
        let mut v = verdicts(r);
        v.retain(|name, _| !weakenings.contains(&name.as_str()));
        v
    };
    assert_eq!(without(&kube), without(&sim));
    // The API was probed through the proxy: one address, the proxy's.
    let judged = kube
        .assertions
        .iter()
        .find(|a| a.name == "no-credential-refresh")
        .expect("assertion");
    assert!(
        judged.measured.contains("stable endpoint 127.0.0.1:"),
        "{}",
        judged.measured
    );
    assert_ne!(
        judged.measured,
        format!("1 address(es): {url}"),
        "not the server's own address"
    );
}

/// Machines whose cluster vanishes right after a control plane is
/// recreated: the served simulator stops at the next look at etcd.
struct VanishesAfterRecreate {
    machines: drillbench_backend::served::ServedSimMachines,
    server: std::sync::Arc<std::sync::Mutex<Option<Server>>>,
    armed: bool,
}

impl drillbench_backend::machines::Machines for VanishesAfterRecreate {
    fn name(&self) -> &'static str {
        self.machines.name()
    }
    fn capabilities(&self) -> drillbench_backend::Capabilities {
        self.machines.capabilities()
    }
    fn kubeconfig(&self) -> (PathBuf, Option<String>) {
        self.machines.kubeconfig()
    }
    fn api_servers(&self) -> Vec<(String, std::net::SocketAddr)> {
        Vec::new()
    }
    fn crash(&mut self, node: &str) -> Result<(), drillbench_backend::BackendError> {
        self.machines.crash(node)
    }
    fn remove(&mut self, node: &str) -> Result<(), drillbench_backend::BackendError> {
        self.machines.remove(node)
    }
    fn replace(&mut self, node: &str) -> Result<(), drillbench_backend::BackendError> {
        self.machines.replace(node)
    }
    fn recreate_control_plane(
        &mut self,
        node: &str,
    ) -> Result<(), drillbench_backend::BackendError> {
        self.armed = true;
        self.machines.recreate_control_plane(node)
    }
    fn etcd_members(&mut self) -> Option<(u32, u32)> {
        let members = self.machines.etcd_members();
        if self.armed
            && let Some(server) = self.server.lock().expect("lock").take()
        {
            server.stop();
        }
        members
    }
    fn teardown(&mut self) -> Result<(), drillbench_backend::BackendError> {
        self.machines.teardown()
    }
}

#[test]
fn a_cluster_lost_mid_drill_aborts_the_drill_never_green() {
    use drillbench_backend::bench_api::BenchApi;
    use drillbench_backend::kube::{KubeBackend, KubeOptions};
    use drillbench_backend::served::ServedSimMachines;

    let path = common::root().join("scenarios/cp-recreate.yaml");
    let drill = Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)));
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, kubeconfig) = serve(&path, dir.path());
    let api = BenchApi::new(server.addr()).with_token(Some(server.token().as_str().to_owned()));
    let server = std::sync::Arc::new(std::sync::Mutex::new(Some(server)));
    let provision = |drill: &Drill, seed: u64| {
        let machines = ServedSimMachines::new(api.clone(), kubeconfig.clone(), None);
        machines.reset(drill, seed)?;
        let backend = KubeBackend::connect(
            drill,
            seed,
            Box::new(VanishesAfterRecreate {
                machines,
                server: server.clone(),
                armed: false,
            }),
            KubeOptions {
                name: "kubeconfig",
                run_id: drillbench_backend::kube::run_id(drill, seed),
                read_only: false,
                admit_guards: false,
                emulate_autoscaler: false,
            },
        )
        .map_err(drillbench_backend::BackendError::from)?;
        Ok(Box::new(backend) as Box<dyn drillbench_backend::Backend>)
    };
    let report = drillbench::run::run_drill(&drill, SEED, &provision).expect("the drill ends");
    assert_eq!(report.outcome, drillbench_report::Outcome::Aborted);
    assert!(!report.passed());
    assert!(
        server.lock().expect("lock").is_none(),
        "the cluster did vanish"
    );
}

/// The served cluster's Deployments and StatefulSets that carry the run
/// label: the ones a run of the bench applied.
fn applied_by_a_run(server: &Server) -> Vec<String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = kube::Client::try_from(server.client_config()).expect("client");
        let params = kube::api::ListParams::default().labels(drillbench_model::labels::RUN_LABEL);
        let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
            kube::Api::all(client.clone());
        let statefulsets: kube::Api<k8s_openapi::api::apps::v1::StatefulSet> =
            kube::Api::all(client);
        let mut names: Vec<String> = Vec::new();
        for d in deployments.list(&params).await.expect("deployments") {
            names.extend(d.metadata.name);
        }
        for s in statefulsets.list(&params).await.expect("statefulsets") {
            names.extend(s.metadata.name);
        }
        names
    })
}

/// `workloads: [{fromCluster: {}}]`: node-loss drilled on the workloads a
/// cluster already runs (here the served drill's, as its own tooling
/// would have put them there) judges every assertion and control as the
/// drill that applies its manifests, and applies none of them.
#[test]
fn a_drill_taking_its_workloads_from_the_cluster_judges_as_the_one_that_applies_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let applying = variant(dir.path(), "node-loss", without_pinning);
    let manifests = "  - path: ../harness/manifests/production.yaml\n";
    let text = std::fs::read_to_string(&applying).expect("variant");
    assert!(text.contains(manifests), "node-loss applies one file");
    let live = dir.path().join("scenarios/node-loss-live.yaml");
    std::fs::write(&live, text.replace(manifests, "  - fromCluster: {}\n")).expect("write");

    let (server, kubeconfig) = serve(&applying, dir.path());
    let applied = run(
        &applying,
        Backend::Kubeconfig,
        Some(&kubeconfig),
        &dir.path().join("applied"),
        None,
    );
    // Control: the drill that applies its manifests labels them with its run.
    assert!(
        !applied_by_a_run(&server).is_empty(),
        "the applying run applied its workloads"
    );
    let taken = run(
        &live,
        Backend::Kubeconfig,
        Some(&kubeconfig),
        &dir.path().join("taken"),
        None,
    );
    // Each run starts from a reset: what carries a run label now was
    // applied by the drill that took its workloads from the cluster.
    assert_eq!(applied_by_a_run(&server), Vec::<String>::new());
    server.stop();
    assert_eq!(taken.exit, applied.exit, "{}", taken.stderr);
    let (applied, taken) = (
        applied.report.expect("the applying run's report"),
        taken.report.expect("the fromCluster run's report"),
    );
    assert_eq!(verdicts(&taken), verdicts(&applied));
    assert_eq!(taken.outcome, applied.outcome);
    // The report says where its workloads came from; the applying run's
    // came from files.
    let read = taken.drill.from_cluster.as_deref().unwrap_or_default();
    assert!(
        read.starts_with("context `drillbench-sim`, ") && read.ends_with(" objects"),
        "{read}"
    );
    assert_eq!(applied.drill.from_cluster, None);
    assert!(
        taken.assertions.iter().any(|a| a.control.is_some()),
        "the controls ran too"
    );
}

/// A `fromCluster` drill has no workloads but a cluster's: the simulator,
/// kind and Talos build clusters of their own, so they refuse it before
/// anything runs; a reference the read cluster cannot resolve is bad input
/// too, once it is read.
#[test]
fn a_from_cluster_drill_needs_a_cluster_that_has_its_workloads() {
    let dir = tempfile::tempdir().expect("temp dir");
    let applying = variant(dir.path(), "node-loss", without_pinning);
    let text = std::fs::read_to_string(&applying).expect("variant");
    let live = dir.path().join("scenarios/node-loss-live.yaml");
    std::fs::write(
        &live,
        text.replace(
            "  - path: ../harness/manifests/production.yaml\n",
            "  - fromCluster: {namespaces: [apps, openbao]}\n",
        ),
    )
    .expect("write");
    let on_sim = run(&live, Backend::Sim, None, &dir.path().join("sim"), None);
    assert_eq!(on_sim.exit, Exit::BadInput, "{}", on_sim.stderr);
    assert!(
        on_sim
            .stderr
            .contains("takes its workloads from the cluster (`fromCluster:`)")
            && on_sim.stderr.contains("--backend kubeconfig"),
        "{}",
        on_sim.stderr
    );
    assert!(on_sim.report.is_none(), "nothing ran");

    // A workload the namespaces taken hold is checked once read: the
    // served cluster has no `apps/Deployment/shop`.
    let missing = dir.path().join("scenarios/node-loss-missing.yaml");
    std::fs::write(
        &missing,
        std::fs::read_to_string(&live)
            .expect("live")
            .replace("apps/Deployment/web", "apps/Deployment/shop"),
    )
    .expect("write");
    let (server, kubeconfig) = serve(&applying, dir.path());
    let unresolved = run(
        &missing,
        Backend::Kubeconfig,
        Some(&kubeconfig),
        &dir.path().join("missing"),
        None,
    );
    // Control: the same drill with the workload the cluster has runs.
    let resolved = run(
        &live,
        Backend::Kubeconfig,
        Some(&kubeconfig),
        &dir.path().join("live"),
        None,
    );
    server.stop();
    assert_eq!(unresolved.exit, Exit::BadInput, "{}", unresolved.stderr);
    assert!(
        unresolved
            .stderr
            .contains("the drill deploys no workload `apps/Deployment/shop`"),
        "{}",
        unresolved.stderr
    );
    assert!(unresolved.report.is_none(), "nothing ran");
    assert!(resolved.report.is_some(), "{}", resolved.stderr);
}

// The apply and delete steps through the API: server-side apply of the
// file's Deployment, then a background-propagation delete; the served
// simulator schedules and removes the same two pods the simulator does.
#[test]
fn apply_and_delete_steps_through_the_api_reach_the_simulators_pods() {
    let dir = tempfile::tempdir().expect("temp dir");
    let drill =
        crate::sim_apply_delete::drill(dir.path(), crate::sim_apply_delete::APPLY_THEN_DELETE);
    let (sim, kube) = both(&drill);
    assert_eq!(verdicts(&kube), verdicts(&sim));
    for report in [&sim, &kube] {
        let extra = |kind: EventKind| {
            let mut pods: Vec<&str> = report
                .timeline
                .iter()
                .filter(|e| e.kind == kind && e.object.name.starts_with("extra-"))
                .map(|e| e.object.name.as_str())
                .collect();
            pods.dedup();
            pods.len()
        };
        assert_eq!(extra(EventKind::PodScheduled), 2, "{}", report.backend);
        assert_eq!(extra(EventKind::PodDeleted), 2, "{}", report.backend);
    }
}

#[test]
fn a_pdb_step_through_the_api_is_a_merge_patch_the_next_eviction_is_judged_by() {
    for (lowered, refusals) in [(false, 2), (true, 1)] {
        let dir = tempfile::tempdir().expect("temp dir");
        let drill = crate::sim_node_steps::pdb_step_drill(dir.path(), lowered);
        let (sim, kube) = both(&drill);
        assert_eq!(verdicts(&kube), verdicts(&sim));
        for report in [&sim, &kube] {
            let refused = report
                .timeline
                .iter()
                .filter(|e| e.kind == EventKind::EvictionRefused)
                .count();
            assert_eq!(refused, refusals, "{}: lowered {lowered}", report.backend);
        }
    }
}

#[test]
fn node_steps_through_the_api_reach_the_simulators_verdicts() {
    // Cordon and labels are merge patches, a taint edit writes spec.taints,
    // the eviction is the Eviction subresource, deleteNodeObject a delete:
    // the served simulator reacts as the simulator does to its own steps.
    for (min_available, refused) in [(3, true), (2, false)] {
        let dir = tempfile::tempdir().expect("temp dir");
        let drill = crate::sim_node_steps::node_steps_drill(dir.path(), min_available);
        let (sim, kube) = both(&drill);
        assert_eq!(verdicts(&kube), verdicts(&sim));
        assert_eq!(kube.outcome, sim.outcome);
        for report in [&sim, &kube] {
            let has = |kind: EventKind, fragment: &str| {
                report
                    .timeline
                    .iter()
                    .any(|e| e.kind == kind && e.message.contains(fragment))
            };
            let backend = &report.backend;
            assert!(has(EventKind::NodeCordoned, ""), "{backend}: cordon");
            assert!(
                has(EventKind::NodeTainted, "example.com/maintenance:NoExecute"),
                "{backend}: taint"
            );
            assert!(
                has(EventKind::NodeUntainted, "example.com/maintenance"),
                "{backend}: untaint"
            );
            assert!(
                has(EventKind::NodeRelabelled, "example.com/maintenance=true"),
                "{backend}: label"
            );
            assert!(has(EventKind::NodeDeleted, ""), "{backend}: Node deleted");
            // The NoExecute taint emptied baseline-1 of its web pod.
            assert!(
                report.timeline.iter().any(|e| {
                    matches!(
                        e.kind,
                        EventKind::PodEvicted | EventKind::PodTerminating | EventKind::PodDeleted
                    ) && e.node.as_deref() == Some("baseline-1")
                        && e.object.name.starts_with("web-")
                }),
                "{backend}: the taint evicted the pod on baseline-1: {:#?}",
                report
                    .timeline
                    .iter()
                    .filter(|e| e.object.name.starts_with("web-")
                        || e.node.as_deref() == Some("baseline-1"))
                    .map(|e| format!(
                        "{} {:?} {:?} {} {}",
                        e.at_ms, e.kind, e.node, e.object.name, e.message
                    ))
                    .collect::<Vec<_>>()
            );
            assert_eq!(
                has(EventKind::EvictionRefused, ""),
                refused,
                "{backend}: the budget decides the eviction"
            );
        }
    }
}
