//! `bench clean` with the stand-in `kind`, `talosctl` and `docker` first on
//! its PATH: recorded clusters of dead runs and labelled containers go;
//! a live run, a kind cluster the bench did not record and an unlabelled
//! container stay, whatever their names. Never against the real engine:
//! other people's test containers carry the label too.

use crate::common::bench_bin;
use crate::fake_support;

use std::path::Path;
use std::process::Command;

use drillbench_backend::clean::{RecordedBackend, Registry, RunRecord};
use drillbench_backend::docker::RunId;
use fake_support::{calls, wrapped};
use predicates::str::contains;

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn bench_clean(dir: &Path, args: &[&str]) -> Out {
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = bench_bin()
        .arg("clean")
        .args(args)
        .env("PATH", path)
        .env("DRILLBENCH_RUNS_DIR", dir.join("runs"))
        .output()
        .unwrap();
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout)
            .replace(&dir.display().to_string(), "$DIR")
            .replace(&std::process::id().to_string(), "$TEST_PID"),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A process id that no longer runs.
fn dead_pid() -> u32 {
    let mut child = Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

fn record(registry: &Registry, id: &str, backend: RecordedBackend, pid: u32) {
    let run = RunId::new(id).unwrap();
    let dir = registry.run_dir(&run);
    std::fs::create_dir_all(&dir).unwrap();
    registry
        .record(&RunRecord {
            cluster: format!("drillbench-{id}"),
            kubeconfig: dir.join("kubeconfig"),
            talosconfig: (backend == RecordedBackend::Talos).then(|| dir.join("talosconfig")),
            talos_state: (backend == RecordedBackend::Talos).then(|| dir.join("talos-state")),
            dir,
            backend,
            id: run,
            pid,
            started: 1,
        })
        .unwrap();
}

fn state(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("fake-docker.state")).unwrap()
}

fn alive(state: &str, container: &str) -> bool {
    state.lines().any(|line| {
        let fields: Vec<&str> = line.split(' ').collect();
        fields[0] == container && fields[3] != "removed"
    })
}

#[test]
fn clean_removes_only_what_dead_runs_recorded_or_labelled() {
    let dir = tempfile::tempdir().unwrap();
    for program in ["kind", "talosctl", "docker"] {
        wrapped(dir.path(), program, &[]);
    }
    std::fs::write(
        dir.path().join("fake-docker.state"),
        "\
drillbench-dead1-control-plane - 172.18.0.2 running io.x-k8s.kind.cluster=drillbench-dead1,io.x-k8s.kind.role=control-plane
drillbench-dead2-controlplane-1 - 10.5.0.2 removed talos.owned=true,talos.cluster.name=drillbench-dead2,talos.type=controlplane
drillbench-dead2-controlplane-1 - 10.5.0.2 exited talos.owned=true,talos.cluster.name=drillbench-dead2,drillbench.dev/run=dead2
drillbench-dead2-worker-1 - 10.5.0.3 running talos.owned=true,talos.cluster.name=drillbench-dead2,talos.type=worker
drillbench-live1-control-plane - 172.18.0.3 running io.x-k8s.kind.cluster=drillbench-live1,io.x-k8s.kind.role=control-plane
leftover-sleeper - 172.17.0.9 exited drillbench.dev/run=orphan
someone-else-control-plane - 172.18.0.4 running io.x-k8s.kind.cluster=someone-else,io.x-k8s.kind.role=control-plane
drillbench-dead9-control-plane - 172.18.0.5 running io.x-k8s.kind.cluster=drillbench-dead9,io.x-k8s.kind.role=control-plane
postgres - 172.17.0.2 running com.example.app=db
",
    )
    .unwrap();
    // A state volume whose container is long gone, of a run nobody recorded.
    std::fs::write(
        dir.path().join("fake-docker.state.volumes"),
        "drillbench-lonely-cp-g1-0 drillbench.dev/run=lonely\nsomeones-data com.example=1\n",
    )
    .unwrap();
    let registry = Registry::new(dir.path().join("runs"));
    let dead = dead_pid();
    record(&registry, "dead1", RecordedBackend::Kind, dead);
    record(&registry, "dead2", RecordedBackend::Talos, dead);
    record(
        &registry,
        "live1",
        RecordedBackend::Kind,
        std::process::id(),
    );

    let listed = bench_clean(dir.path(), &["--dry-run"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    insta::assert_snapshot!("dry_run", listed.stdout);
    let looked = calls(dir.path());
    for verb in ["delete", "destroy", " rm ", "volume rm"] {
        assert!(!looked.contains(verb), "a dry run only looks: {looked}");
    }
    assert_eq!(registry.list().unwrap().0.len(), 3);

    let cleaned = bench_clean(dir.path(), &[]);
    assert_eq!(cleaned.code, 0, "{}", cleaned.stderr);
    insta::assert_snapshot!("clean", cleaned.stdout);

    let state = state(dir.path());
    for gone in [
        "drillbench-dead1-control-plane",
        "drillbench-dead2-controlplane-1",
        "drillbench-dead2-worker-1",
        "leftover-sleeper",
    ] {
        assert!(!alive(&state, gone), "{gone} should be gone:\n{state}");
    }
    // Not recorded (dead9 looks like ours but nothing says so), not
    // labelled, or still running: untouched.
    for kept in [
        "drillbench-live1-control-plane",
        "someone-else-control-plane",
        "drillbench-dead9-control-plane",
        "postgres",
    ] {
        assert!(alive(&state, kept), "{kept} must stay:\n{state}");
    }
    let volumes = std::fs::read_to_string(dir.path().join("fake-docker.state.volumes")).unwrap();
    assert_eq!(volumes, "someones-data com.example=1\n");
    let left: Vec<String> = registry
        .list()
        .unwrap()
        .0
        .into_iter()
        .map(|r| r.id.to_string())
        .collect();
    assert_eq!(left, ["live1"]);

    // Nothing is left to do.
    let again = bench_clean(dir.path(), &["--dry-run"]);
    assert_eq!(again.code, 0);
    assert!(!again.stdout.contains("would"), "{}", again.stdout);
}

#[test]
fn clean_without_docker_is_an_infrastructure_error_naming_what_to_install() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("bin")).unwrap();
    bench_bin()
        .arg("clean")
        .env("PATH", dir.path().join("bin"))
        .env("DRILLBENCH_RUNS_DIR", dir.path().join("runs"))
        .assert()
        .code(3)
        .stderr(contains("install Docker"));
}
