//! The live mode end to end through the binary: a kubeconfig context that
//! points at a loopback server answering with the recorded API responses,
//! and a stand-in `talosctl` printing a recorded members table.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/harness/fixtures/preflight");

/// Serves each request by path from `routes`; anything else is a 404
/// Status. Returns the server's address and the paths it was asked for.
fn serve(routes: Vec<(&'static str, u16, String)>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            if reader.read_line(&mut request_line).is_err() {
                continue;
            }
            // Drain the headers; list requests carry no body.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let path = request_line
                .split_whitespace()
                .nth(1)
                .unwrap_or_default()
                .split('?')
                .next()
                .unwrap_or_default()
                .to_owned();
            log.lock().unwrap().push(path.clone());
            let (status, body) = routes
                .iter()
                .find(|(route, _, _)| *route == path)
                .map(|(_, status, body)| (*status, body.clone()))
                .unwrap_or((
                    404,
                    r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}"#
                        .to_owned(),
                ));
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (address, seen)
}

/// A kubeconfig whose current context leads nowhere, so only honouring
/// `--context` reaches the recorded server.
fn kubeconfig(dir: &Path, server: &str) -> PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster:
    server: {server}
- name: nowhere
  cluster:
    server: http://127.0.0.1:9
contexts:
- name: admin@prod
  context:
    cluster: prod
    user: admin
- name: elsewhere
  context:
    cluster: nowhere
    user: admin
current-context: elsewhere
users:
- name: admin
  user:
    token: not-a-secret
"
        ),
    )
    .unwrap();
    path
}

fn talosctl(dir: &Path, table: &str) -> PathBuf {
    let path = dir.join("talosctl");
    drillbench_model::test_support::write_script(
        &path,
        format!(
            "#!/bin/sh\n[ \"$*\" = \"--nodes 10.0.1.2 etcd members\" ] || {{ echo \"unexpected: $*\" >&2; exit 9; }}\ncat '{FIXTURES}/{table}'\n"
        ),
    );
    path
}

fn recorded(name: &str) -> String {
    std::fs::read_to_string(format!("{FIXTURES}/{name}")).unwrap()
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_live(server: &str, table: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = kubeconfig(dir.path(), server);
    let talosctl = talosctl(dir.path(), table);
    let output = crate::common::bench_bin()
        .args([
            "preflight",
            "cp-recreate",
            "--target",
            "prod-control-plane-4",
            "--vip-holder",
            "prod-control-plane-4",
            "--now",
            "1795953600",
            "--context",
            "admin@prod",
            "--talos-node",
            "10.0.1.2",
            "--talosctl",
        ])
        .arg(&talosctl)
        .env("KUBECONFIG", &kubeconfig)
        .output()
        .unwrap();
    Outcome {
        code: output.status.code().unwrap(),
        stdout: String::from_utf8(output.stdout).unwrap(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

fn healthy_routes() -> Vec<(&'static str, u16, String)> {
    vec![
        ("/api/v1/nodes", 200, recorded("api-nodes.json")),
        (
            "/apis/velero.io/v1/namespaces/velero/backups",
            200,
            recorded("api-backups.json"),
        ),
    ]
}

#[test]
fn a_healthy_live_cluster_is_ready() {
    let (server, seen) = serve(healthy_routes());
    let outcome = run_live(&server, "etcd-members-healthy.txt");
    assert_eq!(outcome.code, 0, "{}{}", outcome.stdout, outcome.stderr);
    assert_eq!(
        outcome.stdout,
        "target=prod-control-plane-4\ntarget_is_vip_holder=true\nready=true\n"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "/api/v1/nodes",
            "/apis/velero.io/v1/namespaces/velero/backups"
        ]
    );
}

#[test]
fn a_learner_seen_by_talosctl_is_not_ready() {
    let (server, _) = serve(healthy_routes());
    let outcome = run_live(&server, "etcd-members-learner.txt");
    assert_eq!(outcome.code, 1, "{}{}", outcome.stdout, outcome.stderr);
    assert_eq!(
        outcome.stdout,
        "target=prod-control-plane-4\ntarget_is_vip_holder=true\nready=false\n\
         reason=quorum: 2 voting etcd members, expected 3\n\
         reason=quorum: 1 etcd learners present; a membership change is still in progress\n"
    );
}

#[test]
fn a_refused_api_request_is_an_infrastructure_error_never_ready() {
    let forbidden = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nodes is forbidden","reason":"Forbidden","code":403}"#;
    let (server, _) = serve(vec![("/api/v1/nodes", 403, forbidden.to_owned())]);
    let outcome = run_live(&server, "etcd-members-healthy.txt");
    assert_eq!(outcome.code, 3, "{}{}", outcome.stdout, outcome.stderr);
    assert_eq!(outcome.stdout, "ready=false\n");
    assert!(
        outcome.stderr.contains("cannot list nodes"),
        "{}",
        outcome.stderr
    );
}
