//! `bench sim serve` keeps a real API server's bounds: a body over the
//! limit is a 413 before it is read (apiserver's `MaxRequestBodyBytes`, 3
//! MiB), a JSON patch of more than 10 000 operations is a 413 (apiserver's
//! `maxJSONPatchOperations`), a workload asking for more pods than the
//! simulation holds is a 422, a watcher that stops reading is dropped
//! instead of queueing without end, and a connection that never finishes
//! its request head is closed. After each, the server still answers.

use crate::common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use drillbench_model::drill::Drill;
use drillbench_serve::{Clock, Limits, ServeOptions, Server};

fn serve(limits: Limits) -> Server {
    let drill = Drill::load(&common::root().join("harness/serve/serve.yaml"))
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: None,
            clock: Clock::Step,
            seed: 1,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits,
        },
    )
    .expect("the server starts")
}

fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    stream
}

/// One request with a body, `Connection: close`; the whole response.
fn request(server: &Server, method: &str, path: &str, content_type: &str, body: &[u8]) -> String {
    let mut stream = connect(server.addr());
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        server.token().as_str(),
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("write");
    stream.write_all(body).expect("write body");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    response
}

fn get(server: &Server, path: &str) -> String {
    request(server, "GET", path, "application/json", b"")
}

fn responsive(server: &Server) {
    let version = get(server, "/version");
    assert!(version.starts_with("HTTP/1.1 200"), "{version}");
}

#[test]
fn a_fifty_megabyte_body_is_refused_before_it_is_read() {
    let server = serve(Limits::default());
    let mut stream = connect(server.addr());
    write!(
        stream,
        "POST /api/v1/namespaces/apps/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        server.token().as_str(),
        50 * 1024 * 1024
    )
    .expect("write");
    // A first slice of the body; the answer comes without the rest.
    stream.write_all(&[b' '; 64 * 1024]).expect("write a slice");
    let mut response = vec![0u8; 4096];
    let n = stream.read(&mut response).expect("an answer");
    let response = String::from_utf8_lossy(&response[..n]);
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(
        response.contains("Request entity too large: limit is 3145728"),
        "{response}"
    );
    responsive(&server);
}

#[test]
fn a_body_streamed_past_the_limit_is_refused_and_one_within_it_is_not() {
    let server = serve(Limits {
        max_body_bytes: 4096,
        ..Limits::default()
    });
    let data = "x".repeat(8192);
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big","namespace":"apps"}},"data":{{"a":"{data}"}}}}"#
    );
    // Chunked: no declared length to refuse up front.
    let mut stream = connect(server.addr());
    write!(
        stream,
        "POST /api/v1/namespaces/apps/configmaps HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{big}\r\n0\r\n\r\n",
        server.token().as_str(),
        big.len()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    let small =
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"small","namespace":"apps"}}"#;
    let created = request(
        &server,
        "POST",
        "/api/v1/namespaces/apps/configmaps",
        "application/json",
        small.as_bytes(),
    );
    assert!(created.starts_with("HTTP/1.1 201"), "{created}");
}

#[test]
fn a_json_patch_of_more_than_ten_thousand_operations_is_413() {
    let server = serve(Limits::default());
    let ops = |n: usize| {
        let op = r#"{"op":"test","path":"/spec/replicas","value":2}"#;
        format!("[{}]", vec![op; n].join(","))
    };
    let path = "/apis/apps/v1/namespaces/apps/deployments/cache";
    let refused = request(
        &server,
        "PATCH",
        path,
        "application/json-patch+json",
        ops(10_001).as_bytes(),
    );
    assert!(refused.starts_with("HTTP/1.1 413"), "{refused}");
    assert!(
        refused.contains("The allowed maximum operations in a JSON patch is 10000, got 10001"),
        "{refused}"
    );
    let accepted = request(
        &server,
        "PATCH",
        path,
        "application/json-patch+json",
        ops(10_000).as_bytes(),
    );
    assert!(accepted.starts_with("HTTP/1.1 200"), "{accepted}");
}

#[test]
fn two_billion_replicas_are_refused_and_the_server_stays_responsive() {
    let server = serve(Limits::default());
    let scale = request(
        &server,
        "PATCH",
        "/apis/apps/v1/namespaces/apps/deployments/cache/scale",
        "application/merge-patch+json",
        br#"{"spec": {"replicas": 2000000000}}"#,
    );
    assert!(scale.starts_with("HTTP/1.1 422"), "{scale}");
    assert!(
        scale.contains("spec.replicas: Invalid value: 2000000000: bench sim serve simulates at most 5000 pods per workload"),
        "{scale}"
    );
    let deployment = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"huge","namespace":"apps"},
        "spec":{"replicas":2000000000,"selector":{"matchLabels":{"app":"huge"}},
        "template":{"metadata":{"labels":{"app":"huge"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}"#;
    let created = request(
        &server,
        "POST",
        "/apis/apps/v1/namespaces/apps/deployments",
        "application/json",
        deployment.as_bytes(),
    );
    assert!(created.starts_with("HTTP/1.1 422"), "{created}");
    responsive(&server);
    let cache = get(&server, "/apis/apps/v1/namespaces/apps/deployments/cache");
    assert!(cache.contains(r#""replicas":2,"#), "{cache}");
    // Control: within the budget, the scale is made.
    let scale = request(
        &server,
        "PATCH",
        "/apis/apps/v1/namespaces/apps/deployments/cache/scale",
        "application/merge-patch+json",
        br#"{"spec": {"replicas": 3}}"#,
    );
    assert!(scale.starts_with("HTTP/1.1 200"), "{scale}");
}

#[test]
fn a_watcher_that_stops_reading_is_dropped_and_the_server_stays_responsive() {
    let server = serve(Limits {
        watch_queue: 4,
        slow_watcher_grace: Duration::from_millis(50),
        ..Limits::default()
    });
    let mut watch = connect(server.addr());
    write!(
        watch,
        "GET /api/v1/namespaces/apps/configmaps?watch=true HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
        server.token().as_str()
    )
    .expect("write");
    // The watcher reads nothing while 40 MB of changes go by: far more
    // than the socket buffers and the queue hold.
    let data = "x".repeat(1024 * 1024);
    let maps = 40;
    for i in 0..maps {
        let map = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"m{i}","namespace":"apps"}},"data":{{"a":"{data}"}}}}"#
        );
        let created = request(
            &server,
            "POST",
            "/api/v1/namespaces/apps/configmaps",
            "application/json",
            map.as_bytes(),
        );
        assert!(created.starts_with("HTTP/1.1 201"), "{created}");
    }
    responsive(&server);
    // Reading now finds the watch ended (a healthy watch without a
    // timeout never ends) before every change reached it.
    let mut seen = Vec::new();
    watch
        .read_to_end(&mut seen)
        .expect("the server ends the watch");
    let added = String::from_utf8_lossy(&seen)
        .matches(r#""type":"ADDED""#)
        .count();
    assert!(added < maps, "the dropped watcher got {added} of {maps}");
    responsive(&server);
}

#[test]
fn a_connection_that_never_finishes_its_request_head_is_closed() {
    let server = serve(Limits {
        header_read_timeout: Duration::from_millis(500),
        ..Limits::default()
    });
    let mut slow = connect(server.addr());
    slow.write_all(b"GET /version HTTP/1.1\r\nHost: x\r\n")
        .expect("half a head");
    // Meanwhile others are served.
    responsive(&server);
    let mut rest = Vec::new();
    let read = slow.read_to_end(&mut rest);
    assert!(read.is_ok(), "the server closes the connection: {read:?}");
    let answer = String::from_utf8_lossy(&rest);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
        "no answer to a head that never came: {answer}"
    );
    responsive(&server);
}
