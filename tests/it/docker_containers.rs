//! Container operations against the local Docker engine, for real.
//!
//! The engine has no images and cannot pull, so the tests build their own:
//! `harness/images/sleeper` (a static C program in a `FROM scratch` image),
//! tagged `drillbench-test/sleeper:local`. Every test makes uniquely named
//! objects under a run id of its own, and a guard removes them on the way
//! out, passing or failing.
//!
//! These tests need a reachable engine. Without one they skip, saying so,
//! except under `CI=true`, where they fail loudly: CI runs them on a
//! machine that has Docker, and a silent skip would hide a broken runner.

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use drillbench_backend::docker::{ContainerState, Docker, DockerError, ForeignAllowance, RunId};
use drillbench_model::exit::Exit;
use drillbench_model::labels::RUN_LABEL;

const IMAGE: &str = "drillbench-test/sleeper:local";

/// Runs the `docker` CLI directly, as kind or talosctl would, and returns
/// stdout; the tests make their starting state with it so the module under
/// test does not grade its own homework.
fn raw(args: &[&str]) -> Result<String, String> {
    let output = Command::new("docker")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run docker: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    } else {
        Err(format!(
            "docker {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn must(args: &[&str]) -> String {
    raw(args).unwrap_or_else(|e| panic!("{e}"))
}

/// The engine with the test image built; `None` (the test skips) where
/// `docker info` does not work, and a failure instead under CI.
fn docker() -> Option<Docker> {
    if !crate::common::tool_or_skip(
        "docker",
        &["info"],
        "these tests need a reachable Docker engine",
    ) {
        return None;
    }
    let docker = Docker::new();
    if let Err(error) = docker.ping() {
        panic!("`docker info` works but the engine does not answer: {error}");
    }
    sleeper_image();
    Some(docker)
}

/// Builds the test image once per test process. Rebuilding is cheap and
/// cached by the engine, and never leaves a stale image after the source
/// changed.
fn sleeper_image() {
    static BUILT: OnceLock<Result<(), String>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/images/sleeper");
        let context = tempfile::tempdir().map_err(|e| format!("temporary dir: {e}"))?;
        let binary = context.path().join("sleeper");
        let compiled = Command::new("gcc")
            .args(["-static", "-Os", "-o"])
            .arg(&binary)
            .arg(source.join("sleeper.c"))
            .output()
            .map_err(|e| format!("cannot run gcc: {e}"))?;
        if !compiled.status.success() {
            return Err(format!(
                "gcc -static failed (is libc6-dev installed?): {}",
                String::from_utf8_lossy(&compiled.stderr)
            ));
        }
        std::fs::copy(source.join("Dockerfile"), context.path().join("Dockerfile"))
            .map_err(|e| format!("copy Dockerfile: {e}"))?;
        let context_dir = context.path().to_string_lossy().into_owned();
        raw(&["build", "--quiet", "--tag", IMAGE, &context_dir]).map(drop)
    });
    if let Err(error) = built {
        panic!("cannot build the test image {IMAGE}: {error}");
    }
}

/// A name no other test, process or earlier run uses.
fn unique(tag: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!(
        "dbt-{tag}-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Removes what a test made, on every way out: the run's labelled objects
/// and the unlabelled ones the test names.
struct Scratch {
    runs: Vec<RunId>,
    containers: Vec<String>,
    networks: Vec<String>,
}

impl Scratch {
    fn new() -> Self {
        Self {
            runs: Vec::new(),
            containers: Vec::new(),
            networks: Vec::new(),
        }
    }

    fn run(&mut self, tag: &str) -> RunId {
        let run = RunId::new(unique(tag)).unwrap();
        self.runs.push(run.clone());
        run
    }

    /// A user-defined bridge with a subnet of its own (a static `--ip`
    /// needs one), labelled with `run`. Tries subnets until one is free.
    fn network(&mut self, run: &RunId, tag: &str) -> (String, [u8; 3]) {
        let name = unique(tag);
        let label = format!("{RUN_LABEL}={run}");
        let seed = (std::process::id() as usize).wrapping_mul(7);
        let mut last = String::new();
        for attempt in 0..64 {
            let third = ((seed + attempt * 13) % 200 + 20) as u8;
            let prefix = [10, 213, third];
            let subnet = format!("10.213.{third}.0/24");
            match raw(&[
                "network", "create", "--subnet", &subnet, "--label", &label, &name,
            ]) {
                Ok(_) => {
                    self.networks.push(name.clone());
                    return (name, prefix);
                }
                Err(e) => last = e,
            }
        }
        panic!("no free subnet for a test network: {last}");
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Best effort, and never a second panic: the test's own failure is
        // the one worth reading.
        for run in &self.runs {
            let filter = format!("label={RUN_LABEL}={run}");
            if let Ok(ids) = raw(&["ps", "-aq", "--filter", &filter]) {
                for id in ids.lines() {
                    let _ = raw(&["rm", "-f", "-v", id]);
                }
            }
        }
        for name in &self.containers {
            let _ = raw(&["rm", "-f", "-v", name]);
        }
        for name in &self.networks {
            let _ = raw(&["network", "rm", name]);
        }
        for run in &self.runs {
            let filter = format!("label={RUN_LABEL}={run}");
            if let Ok(volumes) = raw(&["volume", "ls", "-q", "--filter", &filter]) {
                for volume in volumes.lines() {
                    let _ = raw(&["volume", "rm", "-f", volume]);
                }
            }
        }
    }
}

fn names(containers: &[drillbench_backend::docker::ContainerSummary]) -> Vec<&str> {
    containers.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn a_node_container_survives_stop_pause_kill_remove_and_recreate_from_its_spec() {
    let Some(docker) = docker() else { return };
    let mut scratch = Scratch::new();
    let run = scratch.run("life");
    let (net, prefix) = scratch.network(&run, "net");
    let (side, side_prefix) = scratch.network(&run, "side");
    let volume = unique("vol");
    let label = format!("{RUN_LABEL}={run}");
    must(&["volume", "create", "--label", &label, &volume]);
    let name = unique("cp");
    let ip = Ipv4Addr::from([prefix[0], prefix[1], prefix[2], 10]);
    let side_ip = Ipv4Addr::from([side_prefix[0], side_prefix[1], side_prefix[2], 10]);

    // Made the way kind and talosctl make node containers.
    must(&[
        "create",
        "--name",
        &name,
        "--hostname",
        "cp-1",
        "--label",
        &label,
        "--label",
        "drillbench.dev/role=control-plane",
        "--env",
        "NODE_ROLE=control-plane",
        "--network",
        &net,
        "--ip",
        &ip.to_string(),
        "--mount",
        &format!("type=volume,source={volume},target=/var"),
        "--tmpfs",
        "/run:size=1m",
        "--security-opt",
        "no-new-privileges",
        "--publish",
        "127.0.0.1::6443",
        "--restart",
        "on-failure:1",
        IMAGE,
        "--role",
        "control-plane",
    ]);
    must(&[
        "network",
        "connect",
        "--ip",
        &side_ip.to_string(),
        &side,
        &name,
    ]);
    must(&["start", &name]);

    let node = docker.claim(&name).unwrap();
    assert_eq!(node.name(), name);
    assert_eq!(node.run(), Some(&run));
    assert_eq!(node.allowance(), None);
    let spec = docker.inspect(&name).unwrap();
    assert_eq!(spec.name, name);
    assert_eq!(spec.image, IMAGE);
    assert_eq!(spec.hostname, "cp-1");
    assert_eq!(spec.run(), Some(run.as_str()));
    assert!(
        spec.env.contains(&"NODE_ROLE=control-plane".to_owned()),
        "{:?}",
        spec.env
    );
    assert_eq!(
        spec.cmd,
        Some(vec!["--role".into(), "control-plane".into()])
    );
    assert_eq!(spec.network_mode, net);
    let attached: BTreeMap<_, _> = spec
        .networks
        .iter()
        .map(|n| (n.network.as_str(), n.ipv4))
        .collect();
    assert_eq!(
        attached,
        BTreeMap::from([(net.as_str(), Some(ip)), (side.as_str(), Some(side_ip))])
    );
    assert_eq!(spec.mounts.len(), 1, "{:?}", spec.mounts);
    assert_eq!(
        (
            spec.mounts[0].source.as_str(),
            spec.mounts[0].target.as_str()
        ),
        (volume.as_str(), "/var")
    );
    assert_eq!(spec.tmpfs.get("/run").map(String::as_str), Some("size=1m"));
    assert_eq!(spec.restart.name, "on-failure");
    assert_eq!(spec.restart.maximum_retry_count, 1);
    assert_eq!(spec.ports.len(), 1, "{:?}", spec.ports);
    assert_eq!(spec.ports[0].container_port, "6443/tcp");
    assert_eq!(docker.state(&name).unwrap(), ContainerState::Running);

    docker.pause(&node).unwrap();
    assert_eq!(docker.state(&name).unwrap(), ContainerState::Paused);
    docker.unpause(&node).unwrap();
    assert_eq!(docker.state(&name).unwrap(), ContainerState::Running);
    docker.stop(&node, Duration::from_secs(10)).unwrap();
    assert_eq!(docker.state(&name).unwrap(), ContainerState::Exited);
    docker.start(&node).unwrap();
    assert_eq!(docker.state(&name).unwrap(), ContainerState::Running);
    // SIGTERM, which the sleeper answers by exiting 0: the container's
    // `on-failure` restart policy would restart it after a SIGKILL (exit
    // 137), racing the state check below.
    docker.kill(&node, "SIGTERM").unwrap();
    wait_for_exit(&docker, &name);
    assert_eq!(docker.state(&name).unwrap(), ContainerState::Exited);

    let old_id = node.id().to_owned();
    docker.remove(node).unwrap();
    assert!(matches!(
        docker.inspect(&name),
        Err(DockerError::NoSuchContainer(_))
    ));

    let again = docker.recreate(&spec).unwrap();
    assert_ne!(again.id(), old_id);
    assert_eq!(again.name(), name);
    assert_eq!(docker.state(&name).unwrap(), ContainerState::Running);
    let recreated = docker.inspect(&name).unwrap();
    assert_eq!(
        recreated, spec,
        "the recreated container differs from the recorded one"
    );
}

/// The sleeper exits on SIGTERM, a moment after the signal is delivered.
fn wait_for_exit(docker: &Docker, name: &str) {
    for _ in 0..100 {
        if docker.state(name).unwrap() == ContainerState::Exited {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn containers_without_the_run_label_are_refused_unless_allowed() {
    let Some(docker) = docker() else { return };
    let mut scratch = Scratch::new();
    let run = scratch.run("guard");
    let stranger = unique("stranger");
    scratch.containers.push(stranger.clone());
    must(&["run", "--detach", "--name", &stranger, IMAGE]);
    let ours = unique("ours");
    must(&[
        "run",
        "--detach",
        "--name",
        &ours,
        "--label",
        &format!("{RUN_LABEL}={run}"),
        IMAGE,
    ]);

    let refused = docker.claim(&stranger).unwrap_err();
    assert!(
        matches!(&refused, DockerError::NotBenchOwned { name } if *name == stranger),
        "{refused}"
    );
    assert_eq!(refused.exit(), Exit::BadInput);

    // A recorded spec without the label cannot be brought back either.
    let spec = docker.inspect(&stranger).unwrap();
    assert!(matches!(
        docker.create(&spec),
        Err(DockerError::SpecUnlabelled { .. })
    ));

    // Cleaning the run takes its own container and leaves the stranger.
    let cleaned = docker.clean(&run).unwrap();
    assert_eq!(cleaned.containers, vec![ours.clone()]);
    assert_eq!(docker.state(&stranger).unwrap(), ContainerState::Running);
    assert!(matches!(
        docker.state(&ours),
        Err(DockerError::NoSuchContainer(_))
    ));

    // With an allowance the caller may act on it.
    let allowance = ForeignAllowance::new("test: the caller named this container on purpose");
    let claimed = docker.claim_foreign(&stranger, allowance).unwrap();
    assert_eq!(claimed.run(), None);
    assert_eq!(claimed.allowance(), Some(allowance));
    docker.stop(&claimed, Duration::from_secs(10)).unwrap();
    assert_eq!(docker.state(&stranger).unwrap(), ContainerState::Exited);
}

#[test]
fn listing_and_cleaning_go_by_run_label_only() {
    let Some(docker) = docker() else { return };
    let mut scratch = Scratch::new();
    let run = scratch.run("clean");
    let other = scratch.run("other");
    let (net, _) = scratch.network(&run, "net");
    let volume = unique("vol");
    must(&[
        "volume",
        "create",
        "--label",
        &format!("{RUN_LABEL}={run}"),
        &volume,
    ]);
    let mut ours = vec![unique("b"), unique("a")];
    for name in &ours {
        must(&[
            "create",
            "--name",
            name,
            "--label",
            &format!("{RUN_LABEL}={run}"),
            "--network",
            &net,
            IMAGE,
        ]);
    }
    let theirs = unique("theirs");
    must(&[
        "run",
        "--detach",
        "--name",
        &theirs,
        "--label",
        &format!("{RUN_LABEL}={other}"),
        IMAGE,
    ]);
    ours.sort();

    let listed = docker.list(&run).unwrap();
    assert_eq!(
        names(&listed),
        ours.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert!(listed.iter().all(|c| c.state == "created"), "{listed:?}");
    let everything = docker.list_all_runs().unwrap();
    for name in ours.iter().chain([&theirs]) {
        assert!(
            names(&everything).contains(&name.as_str()),
            "{name} missing from {everything:?}"
        );
    }

    let cleaned = docker.clean(&run).unwrap();
    assert_eq!(cleaned.containers, ours);
    assert_eq!(cleaned.networks, vec![net.clone()]);
    assert_eq!(cleaned.volumes, vec![volume.clone()]);
    assert!(docker.list(&run).unwrap().is_empty());
    assert!(
        raw(&["network", "inspect", &net]).is_err(),
        "network {net} survived"
    );
    assert!(
        raw(&["volume", "inspect", &volume]).is_err(),
        "volume {volume} survived"
    );
    assert_eq!(names(&docker.list(&other).unwrap()), vec![theirs.as_str()]);

    // Cleaning again finds nothing and is not an error.
    assert_eq!(docker.clean(&run).unwrap(), Default::default());
}

#[test]
fn unknown_containers_are_reported_as_such() {
    let Some(docker) = docker() else { return };
    let name = unique("ghost");
    assert!(matches!(docker.claim(&name), Err(DockerError::NoSuchContainer(n)) if n == name));
    assert!(matches!(
        docker.inspect(&name),
        Err(DockerError::NoSuchContainer(_))
    ));
}

#[test]
fn a_missing_cli_and_an_unreachable_engine_are_infrastructure_errors() {
    let missing = Docker::new()
        .with_program("/nonexistent/drillbench/docker")
        .ping()
        .unwrap_err();
    assert!(matches!(missing, DockerError::Missing { .. }), "{missing}");
    assert!(missing.is_unavailable());
    assert_eq!(missing.exit(), Exit::Infrastructure);

    // The CLI itself is needed to find the engine unreachable.
    if !crate::common::tool_or_skip("docker", &["--version"], "the docker CLI is needed") {
        return;
    }
    let unreachable = Docker::new()
        .with_host("unix:///nonexistent/drillbench/docker.sock")
        .ping()
        .unwrap_err();
    assert!(
        matches!(unreachable, DockerError::EngineUnreachable { .. }),
        "{unreachable}"
    );
    assert!(unreachable.is_unavailable());
    assert_eq!(unreachable.exit(), Exit::Infrastructure);
}

#[test]
fn the_s3_target_is_labelled_on_the_clusters_network_and_removed_when_dropped() {
    use drillbench_backend::s3::{Minio, MinioOptions};
    if docker().is_none() {
        return;
    }
    let mut scratch = Scratch::new();
    let run = scratch.run("s3");
    let (net, prefix) = scratch.network(&run, "s3net");
    // The local test image stands in for MinIO: what is checked is where
    // the container is and what it carries, not that it serves S3.
    let options = MinioOptions {
        image: IMAGE.to_owned(),
        ready_log: None,
        entrypoint: None,
        command: Vec::new(),
        ..MinioOptions::new(&net, run.as_str())
    };
    let name = options.container_name();
    scratch.containers.push(name.clone());
    let minio = Minio::start(&options).unwrap_or_else(|e| panic!("{e}: {e:?}"));

    let labels = must(&["inspect", "--format", "{{json .Config.Labels}}", &name]);
    let labels: BTreeMap<String, String> = serde_json::from_str(&labels).expect("labels");
    assert_eq!(
        labels.get(RUN_LABEL).map(String::as_str),
        Some(run.as_str())
    );
    let networks = must(&[
        "inspect",
        "--format",
        "{{range $k, $v := .NetworkSettings.Networks}}{{$k}}={{$v.IPAddress}} {{end}}",
        &name,
    ]);
    let ip = networks
        .split_whitespace()
        .find_map(|n| n.strip_prefix(&format!("{net}=")))
        .unwrap_or_else(|| panic!("not on {net}: {networks}"));
    assert!(
        ip.starts_with(&format!("{}.{}.{}.", prefix[0], prefix[1], prefix[2])),
        "{ip}"
    );
    // Velero is pointed at the container's address on that network.
    assert_eq!(minio.target().url, format!("http://{ip}:9000"));
    assert!(
        minio
            .target()
            .credentials_file()
            .contains("aws_access_key_id")
    );

    drop(minio);
    let left = must(&["ps", "-aq", "--filter", &format!("name=^{name}$")]);
    assert_eq!(left, "", "the container is removed at teardown");
}
