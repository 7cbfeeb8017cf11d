//! The real `kubectl` against `bench sim serve`: every command a person
//! uses to watch or poke a drill works on the simulator's API façade.
//!
//! Each test serves `harness/serve/serve.yaml` in-process on a free
//! loopback port with `--step` time, writes a kubeconfig, and drives
//! `kubectl` as a child process with a deadline. Time moves only when a
//! test advances it, so nothing here depends on how fast the machine is.

use crate::common;

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use drillbench::drill::Drill;
use drillbench::serve::{Clock, ServeOptions, Server};

const DEADLINE: Duration = Duration::from_secs(90);

/// A served drill and a kubeconfig for it.
struct Served {
    server: Server,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

fn kubectl_present() {
    match Command::new("kubectl")
        .args(["version", "--client"])
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "`kubectl version --client` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "kubectl is not installed ({e}); these tests drive the real kubectl. `.ci/run` installs Debian's `kubernetes-client`"
        ),
    }
}

fn serve() -> Served {
    serve_drill("harness/serve/serve.yaml")
}

/// A drill of the repository (a path under its root), served.
fn serve_drill(path: &str) -> Served {
    kubectl_present();
    let drill =
        Drill::load(&common::root().join(path)).unwrap_or_else(|d| panic!("{}", d.render(false)));
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let server = Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: Some(kubeconfig.clone()),
            clock: Clock::Step,
            seed: 1,
            history_window: drillbench::serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
        },
    )
    .expect("the server starts");
    let served = Served {
        server,
        dir,
        kubeconfig,
    };
    // Let every workload come up before the test pokes the cluster.
    served.advance("2m");
    served
}

/// What a finished kubectl printed.
struct Out {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Served {
    fn post(&self, path_and_query: &str) -> String {
        let mut stream = TcpStream::connect(self.server.addr()).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        write!(
            stream,
            "POST {path_and_query} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "POST {path_and_query}: {response}"
        );
        response
    }

    fn advance(&self, by: &str) {
        self.post(&format!("/bench/v1/advance?by={by}"));
    }

    fn spawn(&self, args: &[&str], name: &str) -> (Child, PathBuf, PathBuf) {
        let out = self.dir.path().join(format!("{name}.out"));
        let err = self.dir.path().join(format!("{name}.err"));
        let child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--request-timeout=30s")
            .args(args)
            .stdin(Stdio::null())
            .stdout(File::create(&out).expect("stdout file"))
            .stderr(File::create(&err).expect("stderr file"))
            .spawn()
            .expect("kubectl starts");
        (child, out, err)
    }

    /// Runs kubectl to the end; `tick` runs while it has not finished
    /// (to advance virtual time for commands that wait on the cluster).
    fn run_with(&self, args: &[&str], mut tick: impl FnMut()) -> Out {
        let (mut child, out, err) = self.spawn(args, "run");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!("kubectl {args:?} did not finish within {DEADLINE:?}");
            }
            tick();
            std::thread::sleep(Duration::from_millis(100));
        };
        Out {
            ok: status.success(),
            stdout: read(&out),
            stderr: read(&err),
        }
    }

    fn run(&self, args: &[&str]) -> Out {
        self.run_with(args, || {})
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.ok,
            "kubectl {args:?} failed: {}{}",
            out.stdout, out.stderr
        );
        out.stdout
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn get_nodes_wide_shows_the_pools_labels() {
    let s = serve();
    let out = s.ok(&[
        "get",
        "nodes",
        "-o",
        "wide",
        "-L",
        "platform.devantler.tech/baseline-worker",
    ]);
    let header = out.lines().next().expect("a header");
    for column in [
        "NAME",
        "STATUS",
        "ROLES",
        "INTERNAL-IP",
        "OS-IMAGE",
        "BASELINE-WORKER",
    ] {
        assert!(header.contains(column), "{column} missing in {out}");
    }
    let worker = out
        .lines()
        .find(|l| l.starts_with("prod-worker-1 "))
        .expect("prod-worker-1 listed");
    assert!(
        worker.contains("Ready") && worker.trim_end().ends_with("true"),
        "{worker}"
    );
    let cp = out
        .lines()
        .find(|l| l.starts_with("prod-control-plane-1 "))
        .expect("control plane listed");
    assert!(cp.contains("control-plane"), "{cp}");
    let labels = s.ok(&["get", "nodes", "--show-labels", "--no-headers"]);
    assert_eq!(
        labels
            .lines()
            .filter(|l| l.contains("platform.devantler.tech/baseline-worker=true"))
            .count(),
        3,
        "the three baseline workers carry the pool label: {labels}"
    );
    // Short names resolve through discovery.
    assert!(
        s.ok(&["get", "no", "-o", "name"])
            .contains("node/prod-worker-2")
    );
}

#[test]
fn get_pods_in_all_namespaces() {
    let s = serve();
    let out = s.ok(&["get", "pods", "-A", "-o", "wide"]);
    let header = out.lines().next().expect("a header");
    assert!(
        header.starts_with("NAMESPACE") && header.contains("NODE"),
        "{out}"
    );
    let agents = out
        .lines()
        .filter(|l| l.starts_with("kube-system ") && l.contains("node-agent-"))
        .count();
    assert_eq!(agents, 3, "one agent per worker: {out}");
    let api = out
        .lines()
        .filter(|l| l.contains(" api-"))
        .collect::<Vec<_>>();
    assert_eq!(api.len(), 2, "{out}");
    assert!(
        api.iter()
            .all(|l| l.contains("1/1") && l.contains("Running")),
        "{out}"
    );
    // Selectors and short names.
    let selected = s.ok(&[
        "get",
        "po",
        "-n",
        "apps",
        "-l",
        "app in (cache)",
        "-o",
        "name",
    ]);
    assert_eq!(selected.lines().count(), 2, "{selected}");
    assert!(
        selected.lines().all(|l| l.starts_with("pod/cache-")),
        "{selected}"
    );
    let sts = s.run(&["get", "sts", "-A"]);
    assert!(sts.ok, "{}", sts.stderr);
    let pdb = s.ok(&["get", "pdb", "-n", "apps", "api"]);
    assert!(
        pdb.contains("api") && pdb.lines().nth(1).is_some_and(|l| l.contains(" 0 ")),
        "no disruption allowed: {pdb}"
    );
}

#[test]
fn label_and_cordon_a_node() {
    let s = serve();
    assert!(
        s.ok(&["label", "node", "prod-worker-1", "drill=yes"])
            .contains("labeled")
    );
    let out = s.ok(&["get", "nodes", "-l", "drill=yes", "-o", "name"]);
    assert_eq!(out.trim(), "node/prod-worker-1");
    assert!(
        s.ok(&["annotate", "node", "prod-worker-1", "drill/why=test"])
            .contains("annotated")
    );
    let yaml = s.ok(&["get", "node", "prod-worker-1", "-o", "yaml"]);
    assert!(
        yaml.contains("drill/why: test") && yaml.contains("drill: \"yes\""),
        "{yaml}"
    );
    assert!(
        s.ok(&["label", "node", "prod-worker-1", "drill-"])
            .contains("unlabeled")
    );
    assert!(
        s.ok(&["get", "nodes", "-l", "drill=yes", "-o", "name"])
            .trim()
            .is_empty()
    );

    assert!(s.ok(&["cordon", "prod-worker-1"]).contains("cordoned"));
    let out = s.ok(&["get", "node", "prod-worker-1"]);
    assert!(out.contains("Ready,SchedulingDisabled"), "{out}");
    // A cordoned node takes no new pods: scaled-up pods go elsewhere.
    s.ok(&["scale", "deployment/cache", "-n", "apps", "--replicas=6"]);
    s.advance("1m");
    let on_cordoned = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=cache",
        "--field-selector",
        "spec.nodeName=prod-worker-1",
        "-o",
        "name",
    ]);
    let before = on_cordoned.lines().count();
    assert!(
        before <= 1,
        "at most the pod that was there before: {on_cordoned}"
    );
    assert!(s.ok(&["uncordon", "prod-worker-1"]).contains("uncordoned"));
    assert!(
        !s.ok(&["get", "node", "prod-worker-1"])
            .contains("SchedulingDisabled")
    );
}

fn node_of(s: &Served, selector: &str) -> String {
    s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        selector,
        "-o",
        "jsonpath={.items[0].spec.nodeName}",
    ])
}

#[test]
fn drain_is_refused_by_a_budget_then_succeeds_when_it_allows() {
    let s = serve();
    let node = node_of(&s, "app=api");
    assert!(node.starts_with("prod-worker-"), "{node}");
    let drain = [
        "drain",
        node.as_str(),
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=6s",
    ];
    // minAvailable 2 of 2: zero disruptions allowed, every eviction is a 429.
    let refused = s.run(&drain);
    assert!(!refused.ok, "the drain must fail: {}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{}",
        refused.stderr
    );
    assert!(
        s.ok(&["get", "pods", "-n", "apps", "-l", "app=api"])
            .lines()
            .count()
            == 3,
        "both api pods still there"
    );

    // A third replica makes one disruption allowed.
    assert!(
        s.ok(&["scale", "deploy/api", "-n", "apps", "--replicas=3"])
            .contains("scaled")
    );
    s.advance("1m");
    let pdb = s.ok(&[
        "get",
        "pdb",
        "api",
        "-n",
        "apps",
        "-o",
        "jsonpath={.status.disruptionsAllowed}",
    ]);
    assert_eq!(pdb, "1");
    let drain = [
        "drain",
        node.as_str(),
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=60s",
    ];
    let drained = s.run_with(&drain, || s.advance("10s"));
    assert!(drained.ok, "{}{}", drained.stdout, drained.stderr);
    assert!(
        drained.stdout.contains(&format!("node/{node} drained")),
        "{}",
        drained.stdout
    );
    let left = s.ok(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "-o",
        "name",
    ]);
    assert!(
        left.lines().all(|l| l.starts_with("pod/node-agent-")),
        "only the DaemonSet's pod stays: {left}"
    );
}

#[test]
fn apply_then_reapply_with_a_change() {
    let s = serve();
    let manifest = s.dir.path().join("extra.yaml");
    let write = |replicas: u32, team: &str| {
        std::fs::write(
            &manifest,
            format!(
                "apiVersion: apps/v1
kind: Deployment
metadata:
  name: extra
  namespace: apps
  labels: {{team: {team}}}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: extra}}
  template:
    metadata:
      labels: {{app: extra}}
    spec:
      containers:
        - name: extra
          image: nginx:1.29
          resources:
            requests: {{cpu: 10m, memory: 16Mi}}
"
            ),
        )
        .expect("write manifest");
    };
    let file = manifest.to_str().expect("utf-8");
    write(1, "a");
    assert!(
        s.ok(&["apply", "-f", file])
            .contains("deployment.apps/extra created")
    );
    s.advance("30s");
    assert!(
        s.ok(&["get", "deploy", "extra", "-n", "apps"])
            .contains("1/1")
    );
    write(3, "b");
    assert!(
        s.ok(&["apply", "-f", file])
            .contains("deployment.apps/extra configured")
    );
    s.advance("30s");
    assert!(
        s.ok(&["get", "deploy", "extra", "-n", "apps"])
            .contains("3/3")
    );
    let labels = s.ok(&[
        "get",
        "deploy",
        "extra",
        "-n",
        "apps",
        "-o",
        "jsonpath={.metadata.labels.team}",
    ]);
    assert_eq!(labels, "b");
    assert!(s.ok(&["apply", "-f", file]).contains("unchanged"));
    // A new image is a rollout: applied, rolled out, and then shown.
    std::fs::write(
        &manifest,
        read(&manifest).replace("nginx:1.29", "nginx:1.30"),
    )
    .expect("write");
    assert!(
        s.ok(&["apply", "-f", file])
            .contains("deployment.apps/extra configured")
    );
    s.advance("2m");
    let image = |s: &Served| {
        s.ok(&[
            "get",
            "deploy",
            "extra",
            "-n",
            "apps",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ])
    };
    assert_eq!(image(&s), "nginx:1.30");
    assert!(
        s.ok(&["get", "deploy", "extra", "-n", "apps"])
            .contains("3/3")
    );
    assert!(s.ok(&["apply", "-f", file]).contains("unchanged"));
    // `kubectl set image` is the same rollout, by strategic merge patch.
    assert!(
        s.ok(&[
            "set",
            "image",
            "deploy/extra",
            "-n",
            "apps",
            "extra=nginx:1.31"
        ])
        .contains("image updated")
    );
    assert_eq!(image(&s), "nginx:1.31");
    // Any other template change is not modelled: said so, as a 422.
    std::fs::write(
        &manifest,
        read(&manifest).replace("labels: {app: extra}", "labels: {app: extra, tier: web}"),
    )
    .expect("write");
    let refused = s.run(&["apply", "-f", file]);
    assert!(
        !refused.ok && refused.stderr.contains("not modelled"),
        "{}",
        refused.stderr
    );
    assert!(
        s.ok(&["delete", "deploy", "extra", "-n", "apps"])
            .contains("deleted")
    );
    s.advance("1m");
    assert!(
        s.ok(&["get", "pods", "-n", "apps", "-l", "app=extra", "-o", "name"])
            .trim()
            .is_empty()
    );
}

#[test]
fn delete_a_node() {
    let s = serve();
    assert!(
        s.ok(&["delete", "node", "prod-worker-3"])
            .contains("node \"prod-worker-3\" deleted")
    );
    assert!(!s.ok(&["get", "nodes"]).contains("prod-worker-3"));
    let missing = s.run(&["get", "node", "prod-worker-3"]);
    assert!(
        !missing.ok && missing.stderr.contains("NotFound"),
        "{}",
        missing.stderr
    );
    // Pod GC removes the pods of the deleted node.
    s.advance("2m");
    let left = s.run(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        "spec.nodeName=prod-worker-3",
        "-o",
        "name",
    ]);
    assert!(left.ok && left.stdout.trim().is_empty(), "{}", left.stdout);
}

#[test]
fn get_pods_watch_shows_what_a_crash_causes() {
    let s = serve();
    let node = node_of(&s, "app=cache");
    let victim = s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        "app=cache",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "-o",
        "jsonpath={.items[0].metadata.name}",
    ]);
    let (mut watch, out, _) = s.spawn(
        &["get", "pods", "-A", "-w", "--output-watch-events"],
        "watch",
    );
    let start = Instant::now();
    while !read(&out).contains(&victim) {
        assert!(
            start.elapsed() < DEADLINE,
            "the watch never listed the pods"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    s.post(&format!("/bench/v1/crash?node={node}"));
    for _ in 0..7 {
        s.advance("1m");
    }
    // The events arrive as the simulator emits them; give kubectl a moment.
    let start = Instant::now();
    let terminating = |text: &str| {
        text.lines()
            .any(|l| l.starts_with("MODIFIED") && l.contains(&victim) && l.contains("Terminating"))
    };
    while !terminating(&read(&out)) && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    let text = read(&out);
    assert!(
        text.lines()
            .any(|l| l.starts_with("MODIFIED") && l.contains(&victim) && l.contains("0/1")),
        "the pod on the crashed node goes NotReady: {text}"
    );
    assert!(
        terminating(&text),
        "then it is evicted by the taint manager: {text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("ADDED") && l.contains(" cache-") && !l.contains(&victim)),
        "and a replacement is created: {text}"
    );
}

/// Writes a manifest beside the kubeconfig for `kubectl create -f`
/// (`kubectl create configmap` speaks protobuf, which the façade does not).
fn manifest(s: &Served, name: &str, text: &str) -> String {
    let path = s.dir.path().join(format!("{name}.yaml"));
    std::fs::write(&path, text).expect("write manifest");
    path.display().to_string()
}

fn config_map(s: &Served, name: &str) -> String {
    manifest(
        s,
        name,
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: apps}}\ndata: {{seq: \"1\"}}\n"
        ),
    )
}

#[test]
fn config_maps_are_stored_and_go_with_their_namespace() {
    let s = serve();
    s.ok(&["create", "-f", &config_map(&s, "marker")]);
    assert_eq!(
        s.ok(&[
            "get",
            "cm",
            "marker",
            "-n",
            "apps",
            "-o",
            "jsonpath={.data.seq}"
        ]),
        "1"
    );
    assert!(
        s.ok(&["get", "cm", "-A", "-o", "name"])
            .contains("configmap/marker")
    );
    s.ok(&["delete", "configmap", "marker", "-n", "apps"]);
    let gone = s.run(&["get", "cm", "marker", "-n", "apps"]);
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );

    s.ok(&["create", "-f", &config_map(&s, "kept")]);
    assert!(
        !s.ok(&["get", "deploy", "-n", "apps", "-o", "name"])
            .is_empty()
    );
    s.ok(&["delete", "namespace", "apps", "--wait=false"]);
    // Terminating while its pods terminate: nothing new goes in.
    assert!(s.ok(&["get", "ns", "apps"]).contains("Terminating"));
    let refused = s.run(&["create", "-f", &config_map(&s, "early")]);
    assert!(
        !refused.ok && refused.stderr.contains("because it is being terminated"),
        "{}",
        refused.stderr
    );
    s.advance("1m");
    // Everything in it went with it.
    for kind in ["configmaps", "deployments", "pods"] {
        assert_eq!(
            s.ok(&["get", kind, "-n", "apps", "-o", "name"]),
            "",
            "{kind}"
        );
    }
    assert!(
        !s.ok(&["get", "ns", "-o", "name"])
            .contains("namespace/apps")
    );
    // Gone: nothing can be put there.
    let refused = s.run(&["create", "-f", &config_map(&s, "late")]);
    assert!(
        !refused.ok && refused.stderr.contains("namespaces \"apps\" not found"),
        "{}",
        refused.stderr
    );
    // A namespace created again takes objects again.
    let namespace = manifest(
        &s,
        "ns",
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n",
    );
    s.ok(&["create", "-f", &namespace]);
    s.ok(&["create", "-f", &config_map(&s, "late")]);
    assert_eq!(
        s.ok(&["get", "cm", "-n", "apps", "-o", "name"]).trim(),
        "configmap/late"
    );
}

#[test]
fn get_volumes_and_attachments_through_the_incident() {
    // node-loss: production's hcloud volumes, released never.
    let s = serve_drill("scenarios/node-loss.yaml");
    let volumes = s.ok(&["get", "pv"]);
    let header = volumes.lines().next().unwrap_or_default();
    for column in [
        "CAPACITY",
        "ACCESS MODES",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
    ] {
        assert!(header.contains(column), "{volumes}");
    }
    assert!(
        volumes
            .lines()
            .any(|l| l.contains("Bound") && l.contains("hcloud") && l.contains("RWO")),
        "{volumes}"
    );
    // A single-attach volume, its PV and its node.
    let attachment = s.ok(&[
        "get",
        "volumeattachments",
        "-o",
        "jsonpath={.items[0].metadata.name} {.items[0].spec.source.persistentVolumeName} {.items[0].spec.nodeName} {.items[0].status.attached}",
    ]);
    let [name, volume, node, attached] = attachment.split(' ').collect::<Vec<_>>()[..] else {
        panic!("one attachment: {attachment}");
    };
    assert!(name.starts_with("csi-"), "{attachment}");
    assert_eq!(attached, "true");
    let claim = s.ok(&["get", "pv", volume, "-o", "jsonpath={.spec.claimRef.namespace}/{.spec.claimRef.name} {.spec.storageClassName} {.spec.csi.driver}"]);
    assert!(claim.contains(" hcloud "), "{claim}");
    let (claim_key, _) = claim.split_once(' ').expect("claim and class");
    let (namespace, claim_name) = claim_key.split_once('/').expect("namespace/name");
    assert_eq!(
        s.ok(&[
            "get",
            "pvc",
            "-n",
            namespace,
            claim_name,
            "-o",
            "jsonpath={.spec.volumeName}"
        ]),
        volume,
        "the claim names its volume"
    );
    let attacher = s.ok(&[
        "get",
        "volumeattachment",
        name,
        "-o",
        "jsonpath={.spec.attacher}",
    ]);
    assert!(
        claim.ends_with(&attacher),
        "the attacher is the PV's driver: {claim} / {attacher}"
    );

    // Read-only: the simulator attaches volumes, not the API.
    let refused = s.run(&["delete", "volumeattachment", name]);
    assert!(
        !refused.ok && refused.stderr.contains("not modelled"),
        "{}",
        refused.stderr
    );

    // The incident: the node goes with the volume attached; the
    // VolumeAttachment still names it, and a watch saw nothing deleted.
    let (mut watch, out, _) = s.spawn(
        &["get", "volumeattachments", "-w", "--output-watch-events"],
        "watch-attachments",
    );
    let start = Instant::now();
    while !read(&out).contains(name) {
        assert!(
            start.elapsed() < DEADLINE,
            "the watch never listed the attachments"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        s.ok(&["delete", "node", node])
            .contains(&format!("node \"{node}\" deleted"))
    );
    s.advance("10m");
    assert!(!s.ok(&["get", "nodes"]).contains(&format!("{node} ")));
    let table = s.ok(&["get", "volumeattachments"]);
    let row = table
        .lines()
        .find(|l| l.starts_with(name))
        .unwrap_or_else(|| panic!("the attachment is still there: {table}"));
    assert!(
        row.contains(node) && row.contains(volume) && row.contains("true"),
        "{table}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let _ = watch.kill();
    let _ = watch.wait();
    let events = read(&out);
    assert!(
        !events
            .lines()
            .any(|l| l.starts_with("DELETED") && l.contains(name)),
        "{events}"
    );
}

#[test]
fn an_attachment_released_with_its_node_is_deleted_for_watchers() {
    // The other way an attachment ends: its pods leave a running node,
    // which unmounts and detaches the volume.
    let s = serve_drill("scenarios/node-loss.yaml");
    let attachment = s.ok(&[
        "get",
        "volumeattachments",
        "-o",
        "jsonpath={.items[0].metadata.name} {.items[0].spec.nodeName}",
    ]);
    let (name, node) = attachment.split_once(' ').expect("name and node");
    let (mut watch, out, _) = s.spawn(
        &["get", "volumeattachments", "-w", "--output-watch-events"],
        "watch-released",
    );
    let start = Instant::now();
    while !read(&out).contains(name) {
        assert!(
            start.elapsed() < DEADLINE,
            "the watch never listed the attachments"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The node's pods deleted (it cordoned, so they come back elsewhere or
    // wait): their volumes detach from the running node, and the
    // attachment goes.
    s.ok(&["cordon", node]);
    s.ok(&[
        "delete",
        "pods",
        "-A",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "--wait=false",
    ]);
    for _ in 0..5 {
        s.advance("1m");
    }
    let start = Instant::now();
    let deleted = |text: &str| {
        text.lines()
            .any(|l| l.starts_with("DELETED") && l.contains(name))
    };
    while !deleted(&read(&out)) && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = watch.kill();
    let _ = watch.wait();
    let events = read(&out);
    assert!(deleted(&events), "the detach is announced: {events}");
    let left = s.ok(&["get", "volumeattachments", "-o", "name"]);
    assert!(!left.contains(name), "{left}");
}
