//! The write path's validation as kubectl meets it against `bench sim
//! serve`: names checked by apimachinery's DNS-1123 rules with the API
//! server's messages, a pod without containers and negative replicas
//! refused (422), `generateName` honoured, and the pod spec's scheduling
//! fields checked by the rules `bench validate` applies.

use crate::kubectl_support::*;

#[test]
fn invalid_names_are_refused_with_the_api_servers_message() {
    let Some(s) = serve() else { return };
    let bad = manifest(
        &s,
        "bad",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Foo_Bar, namespace: apps}\n",
    );
    let out = s.run(&["create", "-f", &bad]);
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "metadata.name: Invalid value: \"Foo_Bar\": a lowercase RFC 1123 subdomain must consist of"
        ),
        "{}",
        out.stderr
    );
    let good = manifest(
        &s,
        "good",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: foo-bar, namespace: apps}\n",
    );
    s.ok(&["create", "-f", &good]);
}

#[test]
fn generate_name_and_required_fields() {
    let Some(s) = serve() else { return };
    let generated = manifest(
        &s,
        "generated",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: settings-, namespace: apps}\n",
    );
    let out = s.ok(&["create", "-f", &generated, "-o", "name"]);
    let name = out.trim();
    assert!(
        name.starts_with("configmap/settings-") && name.len() == "configmap/settings-".len() + 5,
        "{out}"
    );
    s.ok(&["get", name, "-n", "apps"]);

    let bare = manifest(
        &s,
        "bare",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bare, namespace: apps}\nspec: {containers: []}\n",
    );
    let out = s.run(&["create", "-f", &bare]);
    assert!(!out.ok);
    assert!(
        out.stderr.contains("spec.containers: Required value"),
        "{}",
        out.stderr
    );

    let negative = manifest(
        &s,
        "negative",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: neg, namespace: apps}\nspec:\n  replicas: -3\n  selector: {matchLabels: {app: neg}}\n  template:\n    metadata: {labels: {app: neg}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
    );
    let out = s.run(&["create", "-f", &negative]);
    assert!(!out.ok);
    assert!(
        out.stderr
            .contains("spec.replicas: Invalid value: -3: must be greater than or equal to 0"),
        "{}",
        out.stderr
    );
}

/// The pod spec's scheduling fields are refused as `bench validate`
/// refuses them in a drill's manifests (core `ValidateMaxSkew`,
/// `ValidateNodeSelector`), with the API server's words; the control one
/// field away is created.
#[test]
fn scheduling_fields_are_refused_as_the_api_server_refuses_them() {
    let Some(s) = serve() else { return };
    let deployment = |name: &str, pod_spec: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  replicas: 1\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: c, image: nginx}}]\n{pod_spec}"
        )
    };
    let spread = |skew: u32| {
        format!(
            "      topologySpreadConstraints:\n        - {{maxSkew: {skew}, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: spread}}}}}}\n"
        )
    };
    let skew_zero = manifest(&s, "skew-zero", &deployment("spread", &spread(0)));
    let out = s.run(&["create", "-f", &skew_zero]);
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "spec.template.spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"
        ),
        "{}",
        out.stderr
    );
    let no_terms = manifest(
        &s,
        "no-terms",
        &deployment(
            "pinned",
            "      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms: []\n",
        ),
    );
    let out = s.run(&["create", "-f", &no_terms]);
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr.contains(
            "nodeSelectorTerms: Required value: must have at least one node selector term"
        ),
        "{}",
        out.stderr
    );
    let skew_one = manifest(&s, "skew-one", &deployment("spread", &spread(1)));
    s.ok(&["create", "-f", &skew_one]);
}

/// A label-selector watch as kubectl shows it: an object that starts
/// matching is ADDED and one that stops matching is DELETED, as the API
/// server's watch cache converts events for a filtered watcher.
#[test]
fn a_selector_watch_sees_objects_enter_and_leave() {
    let Some(s) = serve() else { return };
    let map = |name: &str, team: &str| {
        manifest(
            &s,
            &format!("{name}-{team}"),
            &format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: apps, labels: {{team: {team}}}}}\n"
            ),
        )
    };
    s.ok(&["create", "-f", &map("first", "a")]);
    let (mut child, out, _err) = s.spawn(
        &[
            "get",
            "configmaps",
            "-n",
            "apps",
            "-l",
            "team=a",
            "-w",
            "--output-watch-events",
        ],
        "watch",
    );
    let wait_for = |what: &dyn Fn(&str) -> bool| {
        let start = std::time::Instant::now();
        while !what(&read(&out)) {
            assert!(start.elapsed() < DEADLINE, "watch output: {}", read(&out));
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    wait_for(&|o| o.contains("first"));
    s.ok(&["create", "-f", &map("second", "b")]);
    s.ok(&[
        "label",
        "configmap",
        "second",
        "-n",
        "apps",
        "team=a",
        "--overwrite",
    ]);
    wait_for(&|o| {
        o.lines()
            .any(|l| l.starts_with("ADDED") && l.contains("second"))
    });
    s.ok(&[
        "label",
        "configmap",
        "second",
        "-n",
        "apps",
        "team=c",
        "--overwrite",
    ]);
    wait_for(&|o| {
        o.lines()
            .any(|l| l.starts_with("DELETED") && l.contains("second"))
    });
    let _ = child.kill();
    let _ = child.wait();
    let text = read(&out);
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("MODIFIED") && l.contains("second")),
        "entering and leaving are not modifications: {text}"
    );
}
