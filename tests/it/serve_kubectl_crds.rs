//! CustomResourceDefinitions and custom resources on `bench sim serve`,
//! driven by the real `kubectl` and by kube-rs (`DynamicObject`), as the
//! page "Extend the Kubernetes API with CustomResourceDefinitions"
//! describes them: a definition serves its kind under every served
//! version, objects are validated against the version's
//! `openAPIV3Schema` (a `422` with the API server's words), pruned and
//! defaulted, the `status` subresource is its own endpoint, and deleting
//! the definition deletes its objects. Each behaviour is paired with a
//! control that flips it.

use crate::kubectl_support::*;
use crate::serve_kube_rs;

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
    PostParams, WatchEvent, WatchParams,
};

const HELM_CRD: &str = "harness/serve/crds/helmreleases.yaml";
const KYVERNO_CRD: &str = "harness/serve/crds/clusterpolicies.yaml";

fn root_path(path: &str) -> String {
    crate::common::root().join(path).display().to_string()
}

fn release(s: &Served, name: &str, spec: &str) -> String {
    manifest(
        s,
        name,
        &format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n{spec}"
        ),
    )
}

const GOOD_SPEC: &str = "  interval: 5m\n  chart:\n    spec:\n      chart: podinfo\n      sourceRef: {kind: HelmRepository, name: podinfo}\n  values: {replicaCount: 2, ingress: {enabled: true}}\n";

/// A HelmRelease before its CRD is a kind the server does not know
/// (the control); after it, it applies, reads back pruned and defaulted,
/// under both served versions, by short name, described, and deleted.
#[test]
fn a_helm_release_applies_once_its_definition_is_stored() {
    let Some(s) = serve() else { return };
    let podinfo = release(&s, "podinfo", GOOD_SPEC);
    let before = s.run(&["apply", "-f", &podinfo]);
    assert!(
        !before.ok
            && before
                .stderr
                .contains("no matches for kind \"HelmRelease\""),
        "{}",
        before.stderr
    );
    assert!(
        s.ok(&["apply", "-f", &root_path(HELM_CRD)])
            .contains("created")
    );
    assert_eq!(
        s.ok(&[
            "get",
            "crd",
            "helmreleases.helm.toolkit.fluxcd.io",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}"
        ]),
        "True"
    );
    let resources = s.ok(&["api-resources", "--api-group=helm.toolkit.fluxcd.io"]);
    assert!(
        resources.contains("helmreleases")
            && resources.contains("hr")
            && resources.contains("true"),
        "{resources}"
    );
    // kubectl asks for strict field validation: an unknown field is
    // refused, as the API server's strict decoder refuses it; without it
    // (the control) the field is pruned.
    let unknown = manifest(
        &s,
        "podinfo-unknown",
        &format!(
            "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {{name: podinfo, namespace: apps}}\nspec:\n{GOOD_SPEC}  unknownField: dropped\n"
        ),
    );
    let strict = s.run(&["apply", "-f", &unknown]);
    assert!(
        !strict.ok
            && strict.stderr.contains(
                "HelmRelease in version \"v2\" cannot be handled as a HelmRelease: strict decoding error: unknown field \"spec.unknownField\""
            ),
        "{}",
        strict.stderr
    );
    assert!(
        s.ok(&["apply", "--validate=false", "-f", &unknown])
            .contains("helmrelease.helm.toolkit.fluxcd.io/podinfo created")
    );
    let spec = |path: &str| {
        s.ok(&[
            "get",
            "hr",
            "podinfo",
            "-n",
            "apps",
            "-o",
            &format!("jsonpath={path}"),
        ])
    };
    assert_eq!(spec("{.spec.chart.spec.version}"), "*", "defaulted");
    assert_eq!(spec("{.spec.unknownField}"), "", "pruned");
    assert_eq!(spec("{.spec.values.ingress.enabled}"), "true", "preserved");
    assert_eq!(spec("{.metadata.generation}"), "1");
    assert_eq!(
        s.ok(&[
            "get",
            "helmreleases.v2beta2.helm.toolkit.fluxcd.io",
            "podinfo",
            "-n",
            "apps",
            "-o",
            "jsonpath={.apiVersion}"
        ]),
        "helm.toolkit.fluxcd.io/v2beta2"
    );
    let explained = s.ok(&["explain", "hr.spec.interval"]);
    assert!(
        explained.contains("KIND:       HelmRelease")
            && explained.contains("Interval at which to reconcile the Helm release."),
        "{explained}"
    );
    let described = s.ok(&["describe", "hr", "podinfo", "-n", "apps"]);
    assert!(
        described.contains("Kind:         HelmRelease") && described.contains("Interval:"),
        "{described}"
    );
    // A spec change raises the generation; a label does not.
    s.ok(&["label", "hr", "podinfo", "-n", "apps", "team=platform"]);
    assert_eq!(spec("{.metadata.generation}"), "1");
    // A custom resource takes no strategic merge patch (kubectl's
    // default); a merge patch (the control) applies.
    let strategic = s.run(&[
        "patch",
        "hr",
        "podinfo",
        "-n",
        "apps",
        "-p",
        "{\"spec\":{\"interval\":\"10m\"}}",
    ]);
    assert!(
        !strategic.ok
            && strategic
                .stderr
                .contains("the body of the request was in an unknown format"),
        "{}",
        strategic.stderr
    );
    assert_eq!(spec("{.metadata.generation}"), "1");
    s.ok(&[
        "patch",
        "hr",
        "podinfo",
        "-n",
        "apps",
        "--type=merge",
        "-p",
        "{\"spec\":{\"interval\":\"10m\"}}",
    ]);
    assert_eq!(spec("{.metadata.generation}"), "2");
    assert_eq!(spec("{.metadata.labels.team}"), "platform");
    s.ok(&["delete", "hr", "podinfo", "-n", "apps"]);
    let gone = s.run(&["get", "hr", "podinfo", "-n", "apps"]);
    assert!(
        !gone.ok && gone.stderr.contains("NotFound"),
        "{}",
        gone.stderr
    );
    // Deleting the definition deletes its objects and its kind.
    s.ok(&["apply", "-f", &podinfo]);
    s.ok(&["delete", "crd", "helmreleases.helm.toolkit.fluxcd.io"]);
    let unknown = s.run(&["get", "helmreleases.helm.toolkit.fluxcd.io", "-A"]);
    assert!(!unknown.ok, "{}", unknown.stdout);
    s.ok(&["apply", "-f", &root_path(HELM_CRD)]);
    assert_eq!(
        s.ok(&["get", "hr", "-A", "-o", "name"]),
        "",
        "its objects went with it"
    );
}

/// The schema's rules refuse with the API server's `422` and its words,
/// each paired with the same release made valid.
#[test]
fn a_release_the_schema_refuses_is_invalid_with_the_api_servers_message() {
    let Some(s) = serve() else { return };
    s.ok(&["apply", "-f", &root_path(HELM_CRD)]);
    let cases = [
        (
            "  chart:\n    spec: {chart: podinfo, sourceRef: {kind: HelmRepository, name: podinfo}}\n",
            "spec.interval: Required value",
        ),
        (
            "  interval: 5m\n  chart:\n    spec: {chart: podinfo, sourceRef: {kind: OCIRepository, name: podinfo}}\n",
            "spec.chart.spec.sourceRef.kind: Unsupported value: \"OCIRepository\": supported values: \"HelmRepository\", \"GitRepository\", \"Bucket\"",
        ),
        (
            "  interval: 5m\n  maxHistory: lots\n",
            "spec.maxHistory: Invalid value: \"string\": spec.maxHistory in body must be of type integer: \"string\"",
        ),
        (
            "  interval: often\n",
            "spec.interval: Invalid value: \"often\": spec.interval in body should match",
        ),
    ];
    for (i, (spec, message)) in cases.iter().enumerate() {
        let name = format!("bad-{i}");
        let refused = s.run(&["apply", "-f", &release(&s, &name, spec)]);
        assert!(
            !refused.ok
                && refused
                    .stderr
                    .contains(&format!("The HelmRelease \"{name}\" is invalid"))
                && refused.stderr.contains(message),
            "{spec}: {}",
            refused.stderr
        );
        assert!(
            !s.run(&["get", "hr", &name, "-n", "apps"]).ok,
            "nothing stored"
        );
    }
    let good = s.run(&["apply", "-f", &release(&s, "good", GOOD_SPEC)]);
    assert!(good.ok, "{}", good.stderr);
    // An update is checked as a create is.
    let patched = s.run(&[
        "patch",
        "hr",
        "good",
        "-n",
        "apps",
        "--type=merge",
        "-p",
        "{\"spec\":{\"maxHistory\":\"lots\"}}",
    ]);
    assert!(
        !patched.ok
            && patched
                .stderr
                .contains("spec.maxHistory in body must be of type integer"),
        "{}",
        patched.stderr
    );
    s.ok(&[
        "patch",
        "hr",
        "good",
        "-n",
        "apps",
        "--type=merge",
        "-p",
        "{\"spec\":{\"maxHistory\":3}}",
    ]);
}

/// Kyverno's ClusterPolicy CRD and one of the platform's policies: a
/// cluster-scoped kind found by its short name and category, the rule
/// bodies kept as written; its status is written through the status
/// subresource only (control: the same status sent to the main resource
/// is ignored).
#[test]
fn a_kyverno_cluster_policy_applies_and_its_status_is_a_subresource() {
    let Some(s) = serve() else { return };
    s.ok(&["apply", "-f", &root_path(KYVERNO_CRD)]);
    let policy = root_path("harness/kyverno/policies/hcloud-eligible-nodes.yaml");
    assert!(
        s.ok(&["apply", "-f", &policy])
            .contains("clusterpolicy.kyverno.io/hcloud-eligible-nodes created")
    );
    assert!(
        s.ok(&["get", "cpol", "-o", "name"])
            .contains("clusterpolicy.kyverno.io/hcloud-eligible-nodes")
    );
    assert!(
        s.ok(&["get", "kyverno", "-o", "name"])
            .contains("hcloud-eligible-nodes"),
        "by category"
    );
    assert_eq!(
        s.ok(&[
            "get",
            "cpol",
            "hcloud-eligible-nodes",
            "-o",
            "jsonpath={.spec.rules[1].validate.pattern.metadata.labels}"
        ]),
        "{\"platform.devantler.tech/baseline-worker\":\"true\"}"
    );
    let namespaced = s.run(&[
        "get",
        "clusterpolicies.kyverno.io",
        "-n",
        "apps",
        "hcloud-eligible-nodes",
    ]);
    assert!(
        namespaced.ok,
        "a cluster-scoped kind ignores -n: {}",
        namespaced.stderr
    );
    let status = |s: &Served| {
        s.ok(&[
            "get",
            "cpol",
            "hcloud-eligible-nodes",
            "-o",
            "jsonpath={.status.ready}",
        ])
    };
    s.ok(&[
        "patch",
        "cpol",
        "hcloud-eligible-nodes",
        "--type=merge",
        "-p",
        "{\"status\":{\"ready\":true}}",
    ]);
    assert_eq!(status(&s), "", "the main resource ignores status");
    s.ok(&[
        "patch",
        "cpol",
        "hcloud-eligible-nodes",
        "--subresource=status",
        "--type=merge",
        "-p",
        "{\"status\":{\"ready\":true}}",
    ]);
    assert_eq!(status(&s), "true");
    assert_eq!(
        s.ok(&[
            "get",
            "cpol",
            "hcloud-eligible-nodes",
            "-o",
            "jsonpath={.metadata.generation}"
        ]),
        "1",
        "a status write is not a spec change"
    );
    // Server-side apply of the same policy: applied over the stored one,
    // which keeps its status.
    assert!(
        s.ok(&["apply", "--server-side", "-f", &policy])
            .contains("clusterpolicy.kyverno.io/hcloud-eligible-nodes serverside-applied")
    );
    assert_eq!(status(&s), "true");
    s.ok(&["delete", "-f", &policy]);
    assert_eq!(s.ok(&["get", "cpol", "-o", "name"]), "");
}

/// `kubectl explain` reads the OpenAPI v3 document of the kind's group:
/// a built-in field with its upstream description. Control: a field the
/// type does not have is an error.
#[test]
fn explain_reads_the_built_in_schemas() {
    let Some(s) = serve() else { return };
    let replicas = s.ok(&["explain", "deployment.spec.replicas"]);
    assert!(
        replicas.contains("GROUP:      apps")
            && replicas.contains("FIELD: replicas <integer>")
            && replicas.contains("Number of desired pods"),
        "{replicas}"
    );
    let pod = s.ok(&["explain", "pods.spec.containers.image"]);
    assert!(pod.contains("Container image name"), "{pod}");
    let missing = s.run(&["explain", "deployment.spec.nonsense"]);
    assert!(
        !missing.ok && missing.stderr.contains("field \"nonsense\" does not exist"),
        "{}",
        missing.stderr
    );
}

fn helm_release_gvk() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("helm.toolkit.fluxcd.io", "v2", "HelmRelease"),
        "helmreleases",
    )
}

/// kube-rs: a CRD created through the typed API, then a watch of
/// `DynamicObject`s sees a release ADDED, MODIFIED and DELETED. Control:
/// before the CRD, the same API is a 404.
#[tokio::test]
async fn a_watch_of_custom_objects_sees_them_come_change_and_go() {
    let (server, client) = serve_kube_rs::start(&serve_kube_rs::drill());
    let releases: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "apps", &helm_release_gvk());
    match releases.list(&Default::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404),
        other => panic!("no CRD yet: {other:?}"),
    }
    let text = std::fs::read_to_string(root_path(HELM_CRD)).expect("the CRD");
    let crd: CustomResourceDefinition = serde_saphyr::from_str(&text).expect("a CRD");
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("created");
    let listed = releases
        .list(&Default::default())
        .await
        .expect("served now");
    let rv = listed.metadata.resource_version.expect("a version");
    let mut events = releases
        .watch(&WatchParams::default().timeout(20), &rv)
        .await
        .expect("a watch")
        .boxed();
    let object: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "watched", "namespace": "apps"},
        "spec": {"interval": "1m"}
    }))
    .expect("an object");
    releases
        .create(&PostParams::default(), &object)
        .await
        .expect("created");
    releases
        .patch(
            "watched",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"interval": "2m"}})),
        )
        .await
        .expect("patched");
    releases
        .delete("watched", &DeleteParams::default())
        .await
        .expect("deleted");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        match tokio::time::timeout(Duration::from_secs(20), events.next()).await {
            Ok(Some(Ok(WatchEvent::Added(o)))) => {
                seen.push(("ADDED", o.data["spec"]["interval"].clone()))
            }
            Ok(Some(Ok(WatchEvent::Modified(o)))) => {
                seen.push(("MODIFIED", o.data["spec"]["interval"].clone()))
            }
            Ok(Some(Ok(WatchEvent::Deleted(o)))) => {
                seen.push(("DELETED", o.data["spec"]["interval"].clone()))
            }
            Ok(Some(Ok(WatchEvent::Bookmark(_)))) => {}
            other => panic!("after {seen:?}: {other:?}"),
        }
    }
    assert_eq!(
        seen,
        [
            ("ADDED", serde_json::json!("1m")),
            ("MODIFIED", serde_json::json!("2m")),
            ("DELETED", serde_json::json!("2m"))
        ]
    );
    server.stop();
}

/// kubectl 1.30+ asks `/api` and `/apis` for aggregated discovery and is
/// answered with one `APIGroupDiscoveryList` that carries the stored
/// CRDs' kinds; `kubectl get --raw` (the control, plain JSON) gets the
/// unaggregated group list, with the same group in it.
#[test]
fn kubectl_discovers_custom_kinds_through_aggregated_discovery() {
    let Some(s) = serve() else { return };
    s.ok(&["apply", "-f", &root_path(HELM_CRD)]);
    let cache = s.dir.path().join("fresh-cache").display().to_string();
    let out = s.run(&["api-resources", "-v=8", "--cache-dir", &cache]);
    assert!(out.ok, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "Content-Type: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        ),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("/apis/helm.toolkit.fluxcd.io/v2?"),
        "no per-group request: {}",
        out.stderr
    );
    assert!(
        out.stdout.lines().any(|l| l.starts_with("helmreleases")
            && l.contains("hr")
            && l.contains("helm.toolkit.fluxcd.io/v2")),
        "{}",
        out.stdout
    );
    // kubectl sends no token over plain HTTP: the path carries it, as the
    // kubeconfig's server URL does.
    let raw = s.ok(&[
        "get",
        "--raw",
        &format!("/{}/apis", s.server.token().as_str()),
    ]);
    let groups: serde_json::Value = serde_json::from_str(&raw).expect("JSON");
    assert_eq!(groups["kind"], "APIGroupList");
    let helm = groups["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == "helm.toolkit.fluxcd.io"))
        .expect("the CRD's group");
    assert_eq!(helm["preferredVersion"]["version"], "v2");
    assert_eq!(helm["versions"][1]["version"], "v2beta2");
}
