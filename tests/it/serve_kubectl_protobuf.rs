//! `kubectl create KIND` on `bench sim serve`: kubectl's typed clients send
//! the object as protobuf (`application/vnd.kubernetes.protobuf`, the
//! API server's wire format of `runtime.Unknown` around the group's
//! `generated.proto` message), which the façade reads into the JSON a
//! JSON client would have sent (`crates/serve/src/protobuf.rs`). Each
//! command's object is read back field by field; the control is the same
//! object sent as JSON (`--dry-run=client -o json | kubectl create -f`),
//! which must read back the same.
//!
//! kubectl asks for protobuf answers first (`Accept:
//! application/vnd.kubernetes.protobuf,application/json`) and decodes
//! them with its own codecs: what `kubectl create -o json` prints from the
//! protobuf answer must be what `kubectl get -o json` prints from JSON.

use crate::kubectl_support::*;

fn field(s: &Served, args: &[&str], path: &str) -> String {
    let mut all: Vec<&str> = args.to_vec();
    let jsonpath = format!("jsonpath={path}");
    all.extend(["-o", jsonpath.as_str()]);
    s.ok(&all)
}

/// kubectl says it sent protobuf, and the server created the object.
#[test]
fn kubectl_create_sends_protobuf_and_the_object_is_stored() {
    let Some(s) = serve() else { return };
    let verbose = s.run(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "apps",
        "--from-literal=b=2",
        "--from-literal=a=1",
        "-v=8",
    ]);
    assert!(verbose.ok, "{}", verbose.stderr);
    assert!(
        verbose
            .stderr
            .contains("Content-Type: application/vnd.kubernetes.protobuf"),
        "kubectl sent protobuf: {}",
        verbose.stderr
    );
    assert_eq!(
        field(&s, &["get", "cm", "settings", "-n", "apps"], "{.data}"),
        "{\"a\":\"1\",\"b\":\"2\"}"
    );
    s.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "apps",
        "--from-literal=password=hunter2",
    ]);
    assert_eq!(
        field(
            &s,
            &["get", "secret", "creds", "-n", "apps"],
            "{.data.password}"
        ),
        "aHVudGVyMg==",
        "bytes arrive as base64"
    );
    s.ok(&["create", "namespace", "team-a"]);
    assert_eq!(
        field(&s, &["get", "ns", "team-a"], "{.metadata.name}"),
        "team-a"
    );
    s.ok(&["create", "serviceaccount", "robot", "-n", "apps"]);
    assert_eq!(
        field(
            &s,
            &["get", "sa", "robot", "-n", "apps"],
            "{.metadata.name}"
        ),
        "robot"
    );
    s.ok(&[
        "create",
        "pdb",
        "web-min",
        "-n",
        "apps",
        "--selector=app=web",
        "--min-available=1",
    ]);
    s.ok(&[
        "create",
        "pdb",
        "web-max",
        "-n",
        "apps",
        "--selector=app=web",
        "--max-unavailable=50%",
    ]);
    // IntOrString: an int and a string.
    assert_eq!(
        field(
            &s,
            &["get", "pdb", "web-min", "-n", "apps"],
            "{.spec.minAvailable}"
        ),
        "1"
    );
    assert_eq!(
        field(
            &s,
            &["get", "pdb", "web-max", "-n", "apps"],
            "{.spec.maxUnavailable}"
        ),
        "50%"
    );
    s.ok(&[
        "create",
        "service",
        "clusterip",
        "api-svc",
        "-n",
        "apps",
        "--tcp=80:8080",
    ]);
    assert_eq!(
        field(
            &s,
            &["get", "svc", "api-svc", "-n", "apps"],
            "{.spec.ports[0].targetPort}"
        ),
        "8080"
    );
    assert!(
        field(
            &s,
            &["get", "svc", "api-svc", "-n", "apps"],
            "{.spec.clusterIP}"
        )
        .starts_with("10.9"),
        "allocated"
    );
    s.ok(&["create", "job", "once", "-n", "apps", "--image=busybox"]);
    assert_eq!(
        field(
            &s,
            &["get", "job", "once", "-n", "apps"],
            "{.spec.template.spec.containers[0].image}"
        ),
        "busybox"
    );
    s.ok(&[
        "create",
        "deployment",
        "web",
        "-n",
        "apps",
        "--image=nginx",
        "--replicas=2",
        "--port=80",
    ]);
    assert_eq!(
        field(
            &s,
            &["get", "deploy", "web", "-n", "apps"],
            "{.spec.replicas}"
        ),
        "2"
    );
}

/// The same Deployment, Service and PodDisruptionBudget sent as protobuf
/// (in `apps`) and as JSON (in `team-a`) read back the same: the decoded
/// object is the JSON kubectl would have sent.
#[test]
fn a_protobuf_object_reads_back_as_its_json_twin() {
    let Some(s) = serve() else { return };
    s.ok(&["create", "namespace", "team-a"]);
    let commands: [&[&str]; 3] = [
        &[
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=0",
            "--port=80",
        ],
        &["service", "nodeport", "web", "--tcp=80:8080"],
        &["pdb", "web", "--selector=app=web", "--min-available=50%"],
    ];
    for command in commands {
        let mut protobuf = vec!["create"];
        protobuf.extend(command);
        protobuf.extend(["-n", "apps"]);
        s.ok(&protobuf);
        let mut json = vec!["create"];
        json.extend(command);
        json.extend(["-n", "team-a", "--dry-run=client", "-o", "json"]);
        let text = s.ok(&json);
        let file = manifest(&s, &format!("json-{}", command[0]), &text);
        s.ok(&["create", "-f", &file]);
        let kind = command[0];
        for path in ["{.spec}", "{.metadata.labels}", "{.metadata.generation}"] {
            let read = |ns: &str| field(&s, &["get", kind, "web", "-n", ns], path);
            let (from_protobuf, from_json) = (read("apps"), read("team-a"));
            if kind == "service" && path == "{.spec}" {
                // Each Service has its own address and node port.
                let strip = |t: &str| {
                    let mut v: serde_json::Value = serde_json::from_str(t).expect("JSON");
                    for f in ["clusterIP", "clusterIPs"] {
                        v[f] = serde_json::Value::Null;
                    }
                    v["ports"][0]["nodePort"] = serde_json::Value::Null;
                    v
                };
                assert_eq!(strip(&from_protobuf), strip(&from_json), "{kind}");
            } else {
                assert_eq!(from_protobuf, from_json, "{kind} {path}");
            }
        }
    }
    assert_eq!(
        field(
            &s,
            &["get", "deploy", "web", "-n", "apps"],
            "{.spec.replicas}"
        ),
        "0",
        "a pointer's zero is kept"
    );
}

/// The answer to a typed client is protobuf, and kubectl's own decoder
/// reads it as the object JSON readers see: a Deployment (Quantity,
/// IntOrString, Time, a pointer's zero) and a PodDisruptionBudget.
#[test]
fn kubectl_reads_the_protobuf_answer_as_the_json_one() {
    let Some(s) = serve() else { return };
    let created = s.run(&[
        "create",
        "deployment",
        "typed",
        "-n",
        "apps",
        "--image=registry.k8s.io/pause:3.10",
        "--replicas=0",
        "-o",
        "json",
        "-v=8",
    ]);
    assert!(created.ok, "{}", created.stderr);
    let answered_protobuf = created.stderr.lines().any(|l| {
        l.contains("round_trippers")
            && !l.contains("Accept")
            && l.contains("Content-Type: application/vnd.kubernetes.protobuf")
    });
    assert!(
        answered_protobuf,
        "the server answered protobuf: {}",
        created.stderr
    );
    let from_protobuf: serde_json::Value =
        serde_json::from_str(&created.stdout).expect("kubectl printed JSON");
    let fetched: serde_json::Value =
        serde_json::from_str(&s.ok(&["get", "deployment", "typed", "-n", "apps", "-o", "json"]))
            .expect("JSON");
    for pointer in [
        "/metadata/uid",
        "/metadata/creationTimestamp",
        "/metadata/generation",
        "/spec/replicas",
        "/spec/strategy/rollingUpdate/maxSurge",
        "/spec/template/spec/containers/0/image",
        "/metadata/annotations",
        "/status/conditions/0/lastTransitionTime",
    ] {
        assert!(fetched.pointer(pointer).is_some(), "{pointer} in {fetched}");
        assert_eq!(
            from_protobuf.pointer(pointer),
            fetched.pointer(pointer),
            "{pointer}"
        );
    }
    assert_eq!(
        from_protobuf["spec"]["replicas"], 0,
        "a pointer's zero kept"
    );
    // A PodDisruptionBudget's IntOrString and an error's Status, too.
    let budget = s.ok(&[
        "create",
        "pdb",
        "typed",
        "-n",
        "apps",
        "--selector=app=typed",
        "--min-available=50%",
        "-o",
        "jsonpath={.spec.minAvailable}",
    ]);
    assert_eq!(budget, "50%");
    let again = s.run(&[
        "create",
        "pdb",
        "typed",
        "-n",
        "apps",
        "--selector=app=typed",
        "--min-available=1",
    ]);
    assert!(!again.ok);
    assert!(
        again.stderr.contains("AlreadyExists") || again.stderr.contains("already exists"),
        "{}",
        again.stderr
    );
    // Control: a JSON-first client is answered JSON.
    let json_first = s.run(&[
        "get",
        "deployment",
        "typed",
        "-n",
        "apps",
        "-o",
        "json",
        "-v=8",
    ]);
    assert!(
        !json_first.stderr.lines().any(|l| !l.contains("Accept")
            && l.contains("Content-Type: application/vnd.kubernetes.protobuf")),
        "{}",
        json_first.stderr
    );
}

/// `kubectl events --watch` watches through kubectl's typed client, which
/// asks for protobuf first: the stream comes as the API server's protobuf
/// watch writes it (`…protobuf;stream=watch`, length-delimited
/// `WatchEvent` frames) and kubectl's own decoder reads each event as it
/// arrives. Control: `kubectl get events -w`, which asks for a Table,
/// streams JSON.
#[test]
fn kubectl_events_watch_reads_protobuf_frames() {
    let Some(s) = serve() else { return };
    let (mut events, out, err) = s.spawn(&["events", "-n", "apps", "--watch", "-v=8"], "events");
    let (mut table, _, table_err) =
        s.spawn(&["get", "events", "-n", "apps", "-w", "-v=8"], "table");
    // Both watches are open once kubectl has listed; give them the time to.
    std::thread::sleep(std::time::Duration::from_secs(2));
    s.ok(&[
        "create",
        "deployment",
        "framed",
        "-n",
        "apps",
        "--image=registry.k8s.io/pause:3.10",
    ]);
    let start = std::time::Instant::now();
    let seen = loop {
        s.advance("10s");
        let seen = read(&out);
        if seen.contains("Pod/framed-") || start.elapsed() > DEADLINE {
            break seen;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    for child in [&mut events, &mut table] {
        let _ = child.kill();
        let _ = child.wait();
    }
    assert!(
        seen.contains("Scheduled") && seen.contains("Pod/framed-"),
        "{seen}"
    );
    let media = |log: &str| {
        log.lines()
            .filter(|l| l.contains("Content-Type:") && l.contains("stream=watch"))
            .count()
    };
    assert!(media(&read(&err)) > 0, "a protobuf watch: {}", read(&err));
    assert_eq!(media(&read(&table_err)), 0, "the Table watch stays JSON");
}
