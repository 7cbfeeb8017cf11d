//! `bench snapshot` against a served simulator, the reader's requests
//! for Secrets and ConfigMaps (metadata only, recorded by a kube-rs mock
//! API server), and `bench sim serve --snapshot` shown to kubectl.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drillbench_backend::kube::capture::{self, CaptureOptions};
use drillbench_model::drill::Drill;
use drillbench_model::snapshot::{ClusterSnapshot, SnapshotSource};
use drillbench_serve::{Clock, ServeOptions, Server};
use http::{Request, Response};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};
use kube::client::Body;
use serde_json::{Value, json};

use crate::common;

/// The built-in drill captured: pools with labels, Deployments,
/// StatefulSets, a DaemonSet, Jobs, claims of two classes, PDBs.
const DRILL: &str = "scenarios/node-loss.yaml";

fn drill() -> Drill {
    Drill::load(&common::root().join(DRILL)).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

/// The drill served in step mode, with its kubeconfig in `dir`.
fn serve(dir: &Path) -> (Server, PathBuf) {
    let kubeconfig = dir.join("served.kubeconfig");
    let server = Server::start(
        &drill(),
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: Some(kubeconfig.clone()),
            clock: Clock::Step,
            seed: 1,
            history_window: drillbench_serve::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts");
    (server, kubeconfig)
}

/// `POST /bench/v1/advance?by=BY` on a served simulator.
fn advance(server: &Server, by: &str) {
    let mut stream = TcpStream::connect(server.addr()).expect("connect");
    write!(
        stream,
        "POST /bench/v1/advance?by={by} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        server.token().as_str()
    )
    .expect("write");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
}

fn snapshot_cmd(kubeconfig: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("snapshot")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("-o")
        .arg(out)
        .args(extra)
        .output()
        .expect("bench runs")
}

fn capture_file(kubeconfig: &Path, out: &Path) -> String {
    let output = snapshot_cmd(kubeconfig, out, &[]);
    assert!(
        output.status.success(),
        "bench snapshot: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    std::fs::read_to_string(out).expect("the snapshot was written")
}

fn of_kind<'a>(snapshot: &'a ClusterSnapshot, kind: &str) -> Vec<&'a Value> {
    snapshot
        .items
        .iter()
        .filter(|o| o["kind"] == kind)
        .collect()
}

fn name(object: &Value) -> String {
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{ns}/{}", object["metadata"]["name"].as_str().unwrap_or("")),
        None => object["metadata"]["name"].as_str().unwrap_or("").to_owned(),
    }
}

/// Deletes a pod through the served API.
fn delete_pod(server: &Server, namespace: &str, pod: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = kube::Client::try_from(server.client_config()).expect("client");
        Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client, namespace)
            .delete(pod, &Default::default())
            .await
            .expect("the pod is deleted");
    });
}

/// What the served API itself lists for a kind, by kube-rs.
fn served_objects(server: &Server, api_version: &str, plural: &str) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let client = kube::Client::try_from(server.client_config()).expect("client");
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let resource = kube::api::ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version: api_version.to_owned(),
            kind: String::new(),
            plural: plural.to_owned(),
        };
        let api: Api<kube::api::DynamicObject> = Api::all_with(client, &resource);
        api.list(&ListParams::default())
            .await
            .expect("a list")
            .items
            .into_iter()
            .map(|o| serde_json::to_value(o).expect("json"))
            .collect()
    })
}

#[test]
fn a_served_cluster_is_captured_whole_and_the_same_twice() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, kubeconfig) = serve(dir.path());
    // Let the workloads come up, so the capture holds running pods.
    advance(&server, "2m");
    let first = dir.path().join("prod.snapshot.json");
    let text = capture_file(&kubeconfig, &first);
    assert!(text.ends_with("}\n"), "pretty JSON with a trailing newline");
    let snapshot = ClusterSnapshot::read(&first).expect("a valid snapshot");
    assert_eq!(
        snapshot.source.server,
        server.url(),
        "the address, not the token"
    );
    assert!(
        !text.contains(server.token().as_str()),
        "no token in the file"
    );
    assert_eq!(snapshot.source.context.as_deref(), Some("drillbench-sim"));

    // Nodes: every node the drill's pools provision, with the pool's labels.
    let nodes = of_kind(&snapshot, "Node");
    let drill = drill();
    for pool in &drill.topology.pools {
        let members: Vec<_> = nodes
            .iter()
            .filter(|n| pool.name_pattern.matches(&name(n)))
            .collect();
        assert_eq!(
            members.len() as u32,
            pool.initial_nodes(),
            "pool {}",
            pool.name
        );
        for node in members {
            for (key, value) in &pool.labels {
                assert_eq!(
                    node["metadata"]["labels"][key],
                    *value,
                    "{} in pool {}",
                    name(node),
                    pool.name
                );
            }
            assert!(node["status"]["allocatable"]["cpu"].is_string(), "{node}");
            assert!(node["status"]["conditions"].is_array(), "{node}");
        }
    }
    assert!(
        drill.topology.pools.iter().any(|p| !p.labels.is_empty()),
        "the drill's pools carry labels to check"
    );

    // Pods where they run: exactly the served placement.
    let placed = |pods: Vec<&Value>| -> BTreeSet<(String, String)> {
        pods.into_iter()
            .map(|p| {
                (
                    name(p),
                    p["spec"]["nodeName"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    };
    let served_pods = served_objects(&server, "v1", "pods");
    let captured = placed(of_kind(&snapshot, "Pod"));
    assert_eq!(captured, placed(served_pods.iter().collect()));
    assert!(
        captured.iter().all(|(_, node)| !node.is_empty()),
        "{captured:?}"
    );
    assert!(captured.len() >= 10, "{captured:?}");
    assert!(
        of_kind(&snapshot, "Pod")
            .iter()
            .all(|p| p["metadata"].get("managedFields").is_none())
    );

    // Controllers, claims, classes and budgets.
    let names = |kind: &str| -> BTreeSet<String> {
        of_kind(&snapshot, kind).into_iter().map(name).collect()
    };
    assert!(names("Deployment").contains("apps/api"));
    assert!(names("Deployment").contains("apps/web"));
    assert!(names("StatefulSet").contains("apps/postgres"));
    assert!(names("StatefulSet").contains("openbao/openbao"));
    assert!(names("DaemonSet").contains("kube-system/node-agents"));
    assert!(!names("Job").is_empty());
    assert!(!names("PodDisruptionBudget").is_empty());
    assert_eq!(
        names("StorageClass"),
        BTreeSet::from(["hcloud".to_owned(), "longhorn".to_owned()])
    );
    let claims = of_kind(&snapshot, "PersistentVolumeClaim");
    assert!(
        claims
            .iter()
            .any(|c| c["spec"]["storageClassName"] == "hcloud")
    );
    assert!(
        claims
            .iter()
            .any(|c| c["spec"]["storageClassName"] == "longhorn")
    );
    assert_eq!(
        names("PersistentVolume").len(),
        claims.len(),
        "every claim bound"
    );
    // What the façade does not serve is said, not silently missing.
    assert!(
        snapshot
            .not_served
            .contains(&"velero.io/v1 Backup".to_owned())
    );
    assert!(
        !snapshot.not_served.contains(&"v1 Secret".to_owned()),
        "Secrets are stored and served, none here: {:?}",
        snapshot.not_served
    );
    assert!(
        !snapshot.not_served.contains(&"v1 Pod".to_owned()),
        "{:?}",
        snapshot.not_served
    );

    // The same cluster twice: the same bytes.
    let second = dir.path().join("again.snapshot.json");
    assert_eq!(capture_file(&kubeconfig, &second), text);
    // Control: a cluster that changed captures differently, so the
    // comparison above could fail.
    delete_pod(&server, "apps", "api-00000");
    let later = dir.path().join("later.snapshot.json");
    let changed = capture_file(&kubeconfig, &later);
    assert_ne!(changed, text, "a deleted pod changes the file");
    server.stop();
}

#[test]
fn the_exit_codes_say_whose_fault_it_is_and_nothing_is_written_on_failure() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("s.json");
    // A kubeconfig that does not exist, or names a missing context: 2.
    let missing = snapshot_cmd(&dir.path().join("nope"), &out, &[]);
    assert_eq!(missing.status.code(), Some(2), "{missing:?}");
    let (server, kubeconfig) = serve(dir.path());
    let no_context = snapshot_cmd(&kubeconfig, &out, &["--context", "prod"]);
    assert_eq!(no_context.status.code(), Some(2), "{no_context:?}");
    // More objects than the cap: 2, and no file.
    let over = snapshot_cmd(&kubeconfig, &out, &["--max-objects", "5"]);
    assert_eq!(over.status.code(), Some(2), "{over:?}");
    assert!(
        String::from_utf8_lossy(&over.stderr).contains("more than 5 objects"),
        "{over:?}"
    );
    assert!(!out.exists());
    // An -o that is not a snapshot is kept unless --force.
    std::fs::write(&out, "my notes\n").expect("write");
    let kept = snapshot_cmd(&kubeconfig, &out, &[]);
    assert_eq!(kept.status.code(), Some(2), "{kept:?}");
    assert_eq!(std::fs::read_to_string(&out).expect("read"), "my notes\n");
    let forced = snapshot_cmd(&kubeconfig, &out, &["--force"]);
    assert_eq!(forced.status.code(), Some(0), "{forced:?}");
    assert!(ClusterSnapshot::read(&out).is_ok());
    // A snapshot is replaced without --force.
    let again = snapshot_cmd(&kubeconfig, &out, &[]);
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    // The cluster gone: 3.
    server.stop();
    let unreachable_config = dir.path().join("unreachable.kubeconfig");
    std::fs::write(
        &unreachable_config,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'http://127.0.0.1:1'}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\nusers:\n- name: u\n  user: {token: t}\n",
    )
    .expect("write");
    let gone = snapshot_cmd(&unreachable_config, &dir.path().join("g.json"), &[]);
    assert_eq!(gone.status.code(), Some(3), "{gone:?}");
    assert!(!dir.path().join("g.json").exists());
}

/// One request the reader made: method, path, query and Accept header.
#[derive(Debug, Clone)]
struct Recorded {
    method: String,
    path: String,
    query: String,
    accept: String,
}

const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// `s3cr3t-value`, base64: what a Secret's data would carry.
const SECRET_DATA: &str = "czNjcjN0LXZhbHVl";

/// The requests that could carry Secret or ConfigMap data: any request
/// for either kind that is not a metadata-only read.
fn data_requests(recorded: &[Recorded]) -> Vec<Recorded> {
    recorded
        .iter()
        .filter(|r| r.path.contains("/secrets") || r.path.contains("/configmaps"))
        .filter(|r| r.method != "GET" || r.accept != METADATA_LIST)
        .cloned()
        .collect()
}

fn respond(code: u16, body: Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Body::from(serde_json::to_vec(&body).expect("json")))
        .expect("a response")
}

/// A mock API server: the core group only (every other group 404, as
/// when not installed), a Secret and a ConfigMap whose data it sends to
/// any full read, and pods in two pages.
fn answer(request: &Request<Body>) -> Response<Body> {
    let path = request.uri().path();
    let query = request.uri().query().unwrap_or_default();
    let metadata_only = request
        .headers()
        .get("accept")
        .and_then(|v| v.to_str().ok())
        == Some(METADATA_LIST);
    let resource = |name: &str, kind: &str, namespaced: bool| {
        json!({"name": name, "singularName": "", "namespaced": namespaced, "kind": kind,
               "verbs": ["get", "list", "watch"]})
    };
    if path == "/api/v1" {
        return respond(
            200,
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1",
                   "resources": [resource("nodes", "Node", false), resource("pods", "Pod", true),
                                 resource("secrets", "Secret", true),
                                 resource("configmaps", "ConfigMap", true),
                                 resource("namespaces", "Namespace", false)]}),
        );
    }
    if path.starts_with("/apis/") {
        return respond(
            404,
            json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
                   "reason": "NotFound", "code": 404, "message": "the server could not find the requested resource"}),
        );
    }
    let data_object = |kind: &str, name: &str| {
        if metadata_only {
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
                   "metadata": {"name": name, "namespace": "apps", "resourceVersion": "7"}})
        } else {
            json!({"apiVersion": "v1", "kind": kind,
                   "metadata": {"name": name, "namespace": "apps", "resourceVersion": "7"},
                   "data": {"password": SECRET_DATA}})
        }
    };
    let list_kind = if metadata_only {
        "PartialObjectMetadataList"
    } else {
        "List"
    };
    let list = |items: Vec<Value>, next: Option<&str>| {
        let mut metadata = json!({"resourceVersion": "7"});
        if let Some(next) = next {
            metadata["continue"] = json!(next);
        }
        respond(
            200,
            json!({"kind": list_kind, "apiVersion": "v1", "metadata": metadata, "items": items}),
        )
    };
    let pod = |name: &str| json!({"metadata": {"name": name, "namespace": "apps"}, "spec": {"nodeName": "w1"}});
    match path {
        p if p.ends_with("/secrets") => list(vec![data_object("Secret", "db-password")], None),
        p if p.ends_with("/configmaps") => list(vec![data_object("ConfigMap", "settings")], None),
        p if p.ends_with("/pods") && query.contains("continue=page-2") => {
            list(vec![pod("web-1")], None)
        }
        p if p.ends_with("/pods") => list(vec![pod("web-0")], Some("page-2")),
        _ => list(vec![], None),
    }
}

/// A kube-rs client whose every request is recorded and answered by
/// [`answer`].
fn recording_client() -> (kube::Client, Arc<Mutex<Vec<Recorded>>>) {
    let (service, mut handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let log = recorded.clone();
    tokio::spawn(async move {
        while let Some((request, send)) = handle.next_request().await {
            log.lock().expect("log").push(Recorded {
                method: request.method().to_string(),
                path: request.uri().path().to_owned(),
                query: request.uri().query().unwrap_or_default().to_owned(),
                accept: request
                    .headers()
                    .get("accept")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned(),
            });
            send.send_response(answer(&request));
        }
    });
    (kube::Client::new(service, "default"), recorded)
}

#[tokio::test]
async fn the_reader_never_asks_for_secret_or_configmap_data() {
    let (client, recorded) = recording_client();
    let source = SnapshotSource {
        context: None,
        server: "https://mock".into(),
        namespaces: vec![],
    };
    let options = CaptureOptions {
        namespaces: vec!["apps".into()],
        max_objects: 1_000,
    };
    let snapshot = capture::capture(client.clone(), source, &options)
        .await
        .expect("the capture");
    let requests = recorded.lock().expect("log").clone();
    assert!(
        requests
            .iter()
            .any(|r| r.path == "/api/v1/namespaces/apps/secrets"),
        "the secrets were listed: {requests:?}"
    );
    assert!(
        requests
            .iter()
            .any(|r| r.path == "/api/v1/namespaces/apps/configmaps"),
        "{requests:?}"
    );
    assert_eq!(data_requests(&requests).len(), 0, "{requests:?}");
    assert!(requests.iter().all(|r| r.method == "GET"), "reads only");
    // Namespaced kinds in the named namespace only; nodes cluster-wide.
    assert!(
        requests
            .iter()
            .filter(|r| r.path.contains("/pods"))
            .all(|r| r.path == "/api/v1/namespaces/apps/pods"),
        "{requests:?}"
    );
    assert!(requests.iter().any(|r| r.path == "/api/v1/nodes"));
    // Lists are paged, and the second page of pods was asked for.
    assert!(
        requests
            .iter()
            .filter(|r| r.path.ends_with("/pods"))
            .all(|r| r.query.contains("limit=500")),
        "{requests:?}"
    );
    assert!(
        requests
            .iter()
            .any(|r| r.path.ends_with("/pods") && r.query.contains("continue=page-2")),
        "{requests:?}"
    );
    let pods: Vec<String> = of_kind(&snapshot, "Pod").into_iter().map(name).collect();
    assert_eq!(pods, ["apps/web-0", "apps/web-1"]);
    // The file: names only, no data, and says so.
    let secrets = of_kind(&snapshot, "Secret");
    assert_eq!(
        secrets,
        [&json!({"apiVersion": "v1", "kind": "Secret",
                 "metadata": {"name": "db-password", "namespace": "apps"}})]
    );
    let maps = of_kind(&snapshot, "ConfigMap");
    assert_eq!(maps.len(), 1);
    assert!(maps[0].get("data").is_none() && maps[0].get("stringData").is_none());
    let text = snapshot.to_json();
    assert!(!text.contains(SECRET_DATA), "no data in the file");
    assert_eq!(snapshot.omitted, drillbench_model::snapshot::OMITTED);
    assert!(
        snapshot
            .not_served
            .contains(&"velero.io/v1 Backup".to_owned())
    );
    assert!(
        snapshot
            .not_served
            .contains(&"apps/v1 Deployment".to_owned())
    );

    // Control: the same recorder flags a plain list of Secrets, and the
    // mock does send data to one, so the checks above could fail.
    recorded.lock().expect("log").clear();
    let plain = Api::<Secret>::namespaced(client, "apps")
        .list(&ListParams::default())
        .await
        .expect("a plain list");
    assert!(
        plain.items[0].data.is_some(),
        "a full read carries the data"
    );
    let flagged = data_requests(&recorded.lock().expect("log"));
    assert_eq!(flagged.len(), 1, "{flagged:?}");
    assert_eq!(flagged[0].path, "/api/v1/namespaces/apps/secrets");
}

/// Starts `bench sim serve` with `args`; returns the process and its
/// first line of output (empty if it ended first).
fn start_bench(args: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
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

fn stop(child: &mut Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.wait();
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--request-timeout=30s")
        .args(args)
        .output()
        .expect("kubectl runs")
}

#[test]
fn a_snapshot_served_frozen_shows_kubectl_the_captured_objects() {
    if !common::tool_or_skip(
        "kubectl",
        &["version", "--client"],
        "this test drives the real kubectl; `.ci/run` installs Debian's `kubernetes-client`",
    ) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, kubeconfig) = serve(dir.path());
    advance(&server, "2m");
    let file = dir.path().join("prod.snapshot.json");
    capture_file(&kubeconfig, &file);
    server.stop();
    let snapshot = ClusterSnapshot::read(&file).expect("a snapshot");

    let frozen_config = dir.path().join("frozen.kubeconfig");
    let file_arg = file.display().to_string();
    let config_arg = frozen_config.display().to_string();
    let (mut child, line) = start_bench(&[
        "sim",
        "serve",
        "--snapshot",
        &file_arg,
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig-out",
        &config_arg,
    ]);
    assert!(line.contains("frozen"), "the startup line says so: {line}");
    let listed = kubectl(&frozen_config, &["get", "nodes,pods", "-A", "-o", "json"]);
    let deleted = kubectl(
        &frozen_config,
        &["delete", "pod", "-n", "apps", "--wait=false", "api-00000"],
    );
    let after = kubectl(&frozen_config, &["get", "pods", "-n", "apps", "-o", "name"]);
    let controllers = kubectl(
        &frozen_config,
        &["get", "deploy,sts,ds,pvc,sc,pdb", "-A", "-o", "name"],
    );
    stop(&mut child);
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let list: Value = serde_json::from_slice(&listed.stdout).expect("kubectl's json");
    let shown: BTreeSet<(String, String, String)> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| {
            (
                o["kind"].as_str().unwrap_or("").to_owned(),
                name(o),
                o["spec"]["nodeName"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let captured: BTreeSet<(String, String, String)> = snapshot
        .items
        .iter()
        .filter(|o| o["kind"] == "Node" || o["kind"] == "Pod")
        .map(|o| {
            (
                o["kind"].as_str().unwrap_or("").to_owned(),
                name(o),
                o["spec"]["nodeName"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(shown, captured);
    assert!(shown.iter().any(|(kind, _, _)| kind == "Node"));
    // Frozen: the delete is refused and the pod stays.
    assert!(!deleted.status.success());
    assert!(
        String::from_utf8_lossy(&deleted.stderr).contains("frozen snapshot"),
        "{deleted:?}"
    );
    assert!(String::from_utf8_lossy(&after.stdout).contains("pod/api-00000"));
    let controllers = String::from_utf8_lossy(&controllers.stdout);
    for expected in [
        "deployment.apps/api",
        "statefulset.apps/postgres",
        "daemonset.apps/node-agents",
        "storageclass.storage.k8s.io/hcloud",
    ] {
        assert!(controllers.contains(expected), "{expected}: {controllers}");
    }
}

#[test]
fn a_bad_snapshot_file_is_exit_2_with_its_line_and_column_before_anything_listens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.snapshot.json");
    std::fs::write(
        &bad,
        "{\n  \"apiVersion\": \"drillbench.dev/v1alpha1\",\n  \"kind\": \"Cluster\",\n  \"items\": []\n}\n",
    )
    .expect("write");
    let kubeconfig = dir.path().join("k");
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["sim", "serve", "--listen", "127.0.0.1:0", "--snapshot"])
        .arg(&bad)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdin(Stdio::null())
        .output()
        .expect("bench runs");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:3:", bad.display())),
        "file:line:column: {stderr}"
    );
    assert!(stderr.contains("expected ClusterSnapshot"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing served");
    assert!(!kubeconfig.exists(), "nothing written");
    // Not JSON at all: its line and column too.
    std::fs::write(&bad, "{\n  oops\n").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["sim", "serve", "--snapshot"])
        .arg(&bad)
        .output()
        .expect("bench runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{}:2:3", bad.display())),
        "{stderr}"
    );
    // A drill and a snapshot at once is a usage error.
    let both = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["sim", "serve", "node-loss", "--snapshot"])
        .arg(&bad)
        .output()
        .expect("bench runs");
    assert_eq!(both.status.code(), Some(2));
}

/// The round trip the snapshots exist for: a served drill captured with
/// `bench snapshot`, then the same built-in drilled on the capture, judges
/// as it does on its own cluster: every assertion's verdict, every measure
/// the drawn latencies do not move, and the same figures. A Job the
/// capture saw finish does not run again (its `status.succeeded` is
/// kept); before, it ran again and its pod waited on a claim attached
/// elsewhere, so the control pinning `api` never converged. The capture holds the served claims, which show the
/// size their manifest asks for, as the API server requires.
#[test]
fn a_served_cluster_captured_and_drilled_gets_the_original_verdicts() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, kubeconfig) = serve(dir.path());
    advance(&server, "2m");
    let file = dir.path().join("served.snapshot.json");
    let text = capture_file(&kubeconfig, &file);
    drop(server);
    let snapshot: ClusterSnapshot = serde_json::from_str(&text).expect("a snapshot");
    let claims = of_kind(&snapshot, "PersistentVolumeClaim");
    assert!(!claims.is_empty(), "the capture holds the claims");
    for claim in &claims {
        assert!(
            claim
                .pointer("/spec/resources/requests/storage")
                .and_then(Value::as_str)
                .is_some(),
            "{claim}"
        );
    }
    let report = |extra: &[&str], out: &str| -> Value {
        let out = dir.path().join(out);
        let mut args = vec!["run", "node-loss", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        let run = common::bench(&args);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap())
            .expect("report JSON")
    };
    let judged = |r: &Value| -> Vec<(String, String, String)> {
        r["assertions"]
            .as_array()
            .expect("assertions")
            .iter()
            .map(|a| {
                (
                    a["name"].as_str().unwrap_or_default().to_owned(),
                    a["verdict"].as_str().unwrap_or_default().to_owned(),
                    a["measured"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    let original = report(&[], "original");
    let drilled = report(&["--snapshot", file.to_str().unwrap()], "drilled");
    // The placement count is the one measure that differs: the served
    // façade serves no CronJobs, so the capture holds the snapshot
    // CronJob's pod (`openbao/vault-snapshot-00000`) without its CronJob,
    // and it runs again on the snapshot as a pod of its own: one more
    // placement of an hcloud consumer. What the guard judges, none outside
    // the rule, holds.
    let outside = |measured: &str| measured.split(" of ").next().unwrap_or_default().to_owned();
    let comparable = |r: &Value| -> Vec<(String, String, String)> {
        judged(r)
            .into_iter()
            .map(|(name, verdict, measured)| {
                let measured = if name == "hcloud-off-autoscalers" {
                    outside(&measured)
                } else {
                    measured
                };
                (name, verdict, measured)
            })
            .collect()
    };
    // Start-ups, pulls and attaches are drawn from the seed (`latencies`),
    // and a run that starts from the capture draws fewer of them than one
    // that builds the cluster, so the durations and availabilities they
    // move are compared by verdict; every other measure exactly.
    let drawn = [
        "api-keeps-serving",
        "web-keeps-serving",
        "hcloud-consumers-recover",
    ];
    let without_drawn = |r: &Value| -> Vec<(String, String, String)> {
        comparable(r)
            .into_iter()
            .map(|(name, verdict, measured)| {
                let measured = if drawn.contains(&name.as_str()) {
                    String::new()
                } else {
                    measured
                };
                (name, verdict, measured)
            })
            .collect()
    };
    assert_eq!(without_drawn(&drilled), without_drawn(&original));
    let keys = |r: &Value| -> Vec<String> {
        r["figures"]
            .as_object()
            .map(|f| f.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(keys(&drilled), keys(&original));
}
