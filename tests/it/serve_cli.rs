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
fn http(addr: SocketAddr, token: &str, method: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// A request written as given (head and body), the whole response as text.
fn raw(addr: SocketAddr, request: &[u8]) -> String {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    stream.write_all(request).expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

/// The bearer token of a kubeconfig `bench sim serve` wrote.
fn token_of(kubeconfig: &str) -> &str {
    kubeconfig
        .lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .unwrap_or_else(|| panic!("no token in {kubeconfig}"))
}

fn rv_of(response: &str) -> u64 {
    let body: serde_json::Value =
        serde_json::from_str(response.split("\r\n\r\n").nth(1).expect("a body")).expect("json");
    body["resourceVersion"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .expect("resourceVersion")
}

/// Starts `bench sim serve` on a free port, writing its kubeconfig to
/// `kubeconfig`; returns the process and the first line it printed.
fn start_serving(kubeconfig: &std::path::Path) -> (std::process::Child, String) {
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
        .arg(kubeconfig)
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
    (child, line)
}

/// Sends `SIG<signal>` and waits (at most 20 s) for the process to end.
fn stop_with(child: &mut std::process::Child, signal: &str) -> std::process::ExitStatus {
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("bench sim serve did not stop on SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_binary_prints_its_address_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let (mut child, line) = start_serving(&kubeconfig);
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let addr: SocketAddr = url.trim_start_matches("http://").parse().expect("address");
    assert_ne!(addr.port(), 0);
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    assert!(text.contains(&format!("server: {url}")), "{text}");
    let token = token_of(&text);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&kubeconfig)
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "the token is its owner's alone");
    }
    let version = http(addr, token, "GET", "/version");
    assert!(
        version.starts_with("HTTP/1.1 200") && version.contains("gitVersion"),
        "{version}"
    );

    let status = stop_with(&mut child, "INT");
    assert_eq!(status.code(), Some(0));
    assert!(
        !kubeconfig.exists(),
        "a stopped server's kubeconfig, and its dead token, are removed"
    );
}

#[test]
fn the_binary_stops_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let (mut child, line) = start_serving(&kubeconfig);
    assert!(kubeconfig.exists(), "{line}");
    let status = stop_with(&mut child, "TERM");
    assert_eq!(status.code(), Some(0), "a clean stop, not death by signal");
    assert!(!kubeconfig.exists());
}

#[test]
fn every_request_needs_the_token() {
    let server = serve(drillbench_serve::state::DEFAULT_HISTORY_WINDOW);
    let addr = server.addr();
    let token = server.token().as_str();
    let body = |response: String| response.split("\r\n\r\n").nth(1).map(str::to_owned);
    let node_before = body(http(addr, token, "GET", "/api/v1/nodes/prod-worker-1"));
    for (method, path) in [
        ("GET", "/version"),
        ("GET", "/api/v1/pods"),
        ("POST", "/bench/v1/crash?node=prod-worker-1"),
    ] {
        let anonymous = raw(
            addr,
            format!("{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        );
        assert!(
            anonymous.starts_with("HTTP/1.1 401"),
            "{method} {path}: {anonymous}"
        );
        assert!(
            anonymous.contains(r#""reason":"Unauthorized""#),
            "{anonymous}"
        );
        let wrong = http(addr, &format!("{token}0"), method, path);
        assert!(wrong.starts_with("HTTP/1.1 401"), "{wrong}");
    }
    // Control: the same reads with the token are answered.
    assert!(http(addr, token, "GET", "/version").starts_with("HTTP/1.1 200"));
    let node_after = body(http(addr, token, "GET", "/api/v1/nodes/prod-worker-1"));
    assert!(node_before.is_some());
    assert_eq!(node_before, node_after, "the refused crash did nothing");
}

#[test]
fn a_browsers_simple_post_is_refused_even_with_the_token() {
    // A page can POST text/plain (or a form) without a CORS preflight;
    // the API accepts JSON and YAML only, as the API server does.
    let server = serve(drillbench_serve::state::DEFAULT_HISTORY_WINDOW);
    let addr = server.addr();
    let token = server.token().as_str();
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-a-page"}}"#;
    let post = |content_type: &str| {
        raw(
            addr,
            format!(
                "POST /api/v1/namespaces/apps/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .as_bytes(),
        )
    };
    for content_type in [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ] {
        let refused = post(content_type);
        assert!(
            refused.starts_with("HTTP/1.1 415"),
            "{content_type}: {refused}"
        );
        assert!(refused.contains("UnsupportedMediaType"), "{refused}");
    }
    let gone = http(
        addr,
        token,
        "GET",
        "/api/v1/namespaces/apps/configmaps/from-a-page",
    );
    assert!(
        gone.starts_with("HTTP/1.1 404"),
        "nothing was created: {gone}"
    );
    // Control: the same body as JSON creates it.
    let created = post("application/json");
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    // A percent-escaped path names the same object.
    let escaped = http(
        addr,
        token,
        "GET",
        "/api/v1/namespaces/apps/configmaps/from%2Da%2Dpage",
    );
    assert!(escaped.starts_with("HTTP/1.1 200"), "{escaped}");
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
            limits: Default::default(),
        },
    )
    .expect("the server starts")
}

#[test]
fn a_watch_replays_from_a_resource_version_and_expires_old_ones() {
    // Wide enough for the minute after the crash (node leases renew every
    // 10 s, pods start at drawn latencies), narrow enough for ten more
    // minutes of crashes to push it out.
    let server = serve(120);
    let addr = server.addr();
    let token = server.token().as_str();
    let before = rv_of(&http(addr, token, "POST", "/bench/v1/advance?by=2m"));
    let crash = http(addr, token, "POST", "/bench/v1/crash?node=prod-worker-1");
    assert!(crash.starts_with("HTTP/1.1 200"), "{crash}");
    let after = rv_of(&http(addr, token, "POST", "/bench/v1/advance?by=1m"));
    assert!(after > before, "the crash made changes");

    // Replay: the node's NotReady after the crash, nothing from before.
    let replay = http(
        addr,
        token,
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
        token,
        "GET",
        &format!("/apis/apps/v1/deployments?watch=true&resourceVersion={before}&timeoutSeconds=1"),
    );
    assert!(
        deployments.contains("\"type\":\"MODIFIED\"")
            && deployments.contains("\"kind\":\"Deployment\""),
        "{deployments}"
    );

    // Push the start of the crash out of the 120-change window.
    for _ in 0..10 {
        http(addr, token, "POST", "/bench/v1/advance?by=1m");
        let _ = http(addr, token, "POST", "/bench/v1/crash?node=prod-worker-2");
        let _ = http(addr, token, "POST", "/bench/v1/crash?node=prod-worker-3");
    }
    let expired = http(
        addr,
        token,
        "GET",
        "/api/v1/pods?watch=true&resourceVersion=1",
    );
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
    let token = server.token().as_str();
    let rv = rv_of(&http(addr, token, "GET", "/bench/v1/now"));
    let watch = http(
        addr,
        token,
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
        token,
        "GET",
        &format!("/api/v1/nodes?watch=true&resourceVersion={rv}&timeoutSeconds=2"),
    );
    assert!(!without.contains("BOOKMARK"), "{without}");
    server.stop();
}
