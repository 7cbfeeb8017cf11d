//! `bench sim serve` as a process and the watch protocol on the wire:
//! the binary prints the bound address and stops cleanly on Ctrl-C; a watch
//! replays from a resourceVersion, sends bookmarks, and answers an expired
//! resourceVersion with a `410` Status event.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use drillbench_model::drill::Drill;
use drillbench_serve::{Clock, ServeOptions, Server};

/// One request, `Connection: close`, the whole response as text (a
/// chunked watch body is read until the server ends it).
fn http(addr: SocketAddr, method: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

fn rv_of(response: &str) -> u64 {
    let body: serde_json::Value =
        serde_json::from_str(response.split("\r\n\r\n").nth(1).expect("a body")).expect("json");
    body["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .expect("resourceVersion")
}

#[test]
fn the_binary_prints_its_address_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "sim",
            "serve",
            "harness/serve/serve.yaml",
            "--listen",
            "127.0.0.1:0",
            "--step",
        ])
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .current_dir(common::root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bench starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("a first line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let addr: SocketAddr = url.trim_start_matches("http://").parse().expect("address");
    assert_ne!(addr.port(), 0);
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    assert!(text.contains(&format!("server: {url}")), "{text}");
    let version = http(addr, "GET", "/version");
    assert!(
        version.starts_with("HTTP/1.1 200") && version.contains("gitVersion"),
        "{version}"
    );

    let interrupted = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(interrupted.success());
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("bench sim serve did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
}

#[test]
fn serving_a_public_address_is_refused() {
    let run = common::bench(&[
        "sim",
        "serve",
        "harness/serve/serve.yaml",
        "--listen",
        "0.0.0.0:0",
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("loopback"), "{}", run.stderr);
}

fn serve(window: usize) -> Server {
    let drill = Drill::load(&common::root().join("harness/serve/serve.yaml"))
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: None,
            clock: Clock::Step,
            seed: 1,
            history_window: window,
            standby_nodes: None,
        },
    )
    .expect("the server starts")
}

#[test]
fn a_watch_replays_from_a_resource_version_and_expires_old_ones() {
    let server = serve(40);
    let addr = server.addr();
    let before = rv_of(&http(addr, "POST", "/bench/v1/advance?by=2m"));
    let crash = http(addr, "POST", "/bench/v1/crash?node=prod-worker-1");
    assert!(crash.starts_with("HTTP/1.1 200"), "{crash}");
    let after = rv_of(&http(addr, "POST", "/bench/v1/advance?by=1m"));
    assert!(after > before, "the crash made changes");

    // Replay: the node's NotReady after the crash, nothing from before.
    let replay = http(
        addr,
        "GET",
        &format!("/api/v1/nodes?watch=true&resourceVersion={before}&timeoutSeconds=1"),
    );
    assert!(replay.contains("\"type\":\"MODIFIED\""), "{replay}");
    assert!(
        replay.contains("prod-worker-1") && replay.contains("\"status\":\"Unknown\""),
        "{replay}"
    );
    assert!(
        !replay.contains("prod-worker-2"),
        "only changes after {before}: {replay}"
    );

    // A workload's ready count follows its pods: the Deployment changes too.
    let deployments = http(
        addr,
        "GET",
        &format!("/apis/apps/v1/deployments?watch=true&resourceVersion={before}&timeoutSeconds=1"),
    );
    assert!(
        deployments.contains("\"type\":\"MODIFIED\"")
            && deployments.contains("\"kind\":\"Deployment\""),
        "{deployments}"
    );

    // Push the start of the crash out of the 40-change window.
    for _ in 0..10 {
        http(addr, "POST", "/bench/v1/advance?by=1m");
        let _ = http(addr, "POST", "/bench/v1/crash?node=prod-worker-2");
        let _ = http(addr, "POST", "/bench/v1/crash?node=prod-worker-3");
    }
    let expired = http(addr, "GET", "/api/v1/pods?watch=true&resourceVersion=1");
    assert!(expired.starts_with("HTTP/1.1 200"), "{expired}");
    assert!(
        expired.contains("\"type\":\"ERROR\"")
            && expired.contains("\"code\":410")
            && expired.contains("Expired"),
        "{expired}"
    );
    server.stop();
}

#[test]
fn a_watch_sends_bookmarks_when_asked() {
    let server = serve(drillbench_serve::state::DEFAULT_HISTORY_WINDOW);
    let addr = server.addr();
    let rv = rv_of(&http(addr, "GET", "/bench/v1/now"));
    let watch = http(
        addr,
        "GET",
        &format!(
            "/api/v1/nodes?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=3"
        ),
    );
    assert!(watch.contains("\"type\":\"BOOKMARK\""), "{watch}");
    assert!(
        watch.contains(&format!("\"resourceVersion\":\"{rv}\"")),
        "{watch}"
    );
    let without = http(
        addr,
        "GET",
        &format!("/api/v1/nodes?watch=true&resourceVersion={rv}&timeoutSeconds=2"),
    );
    assert!(!without.contains("BOOKMARK"), "{without}");
    server.stop();
}
