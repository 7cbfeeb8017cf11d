//! Server-side apply on `bench sim serve` through the real kubectl, as the
//! page "Server-Side Apply" describes it: each write is recorded in
//! `metadata.managedFields` (manager, operation, apiVersion, FieldsV1),
//! an apply that changes another manager's field is a 409 naming the
//! field and the manager, `--force-conflicts` takes the field, and an
//! apply of the value a field already has shares it. Each refusal is
//! paired with the control that lets it through.

use crate::kubectl_support::*;

use serde_json::Value;

/// A Deployment `name` running `image`, with `replicas` if given.
fn deployment(s: &Served, name: &str, replicas: Option<u32>, image: &str) -> String {
    let replicas_line = replicas
        .map(|n| format!("  replicas: {n}\n"))
        .unwrap_or_default();
    manifest(
        s,
        &format!(
            "{name}-{}-{}",
            replicas.map_or("none".to_owned(), |n| n.to_string()),
            image.replace([':', '.'], "-")
        ),
        &format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: apps}}
spec:
{replicas_line}  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: web
          image: {image}
          resources: {{requests: {{cpu: 10m, memory: 16Mi}}}}
"
        ),
    )
}

/// The object's `managedFields`, as `--show-managed-fields` prints them.
fn managed_fields(s: &Served, what: &[&str]) -> Vec<Value> {
    let mut args = vec!["get"];
    args.extend(what);
    args.extend(["-n", "apps", "-o", "json", "--show-managed-fields"]);
    let object: Value = serde_json::from_str(&s.ok(&args)).expect("JSON");
    object["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn entry<'a>(entries: &'a [Value], manager: &str, operation: &str) -> Option<&'a Value> {
    entries
        .iter()
        .find(|e| e["manager"] == manager && e["operation"] == operation)
}

/// A field of Deployment `name`, by kubectl's JSONPath.
fn field(s: &Served, name: &str, path: &str) -> String {
    s.ok(&[
        "get",
        "deploy",
        name,
        "-n",
        "apps",
        "-o",
        &format!("jsonpath={path}"),
    ])
}

const IMAGE: &str = "{.spec.template.spec.containers[0].image}";

/// Two field managers apply the same Deployment: the second, changing
/// the image the first owns, is refused with the API server's message
/// and the image stays; applying the value it already has shares it;
/// forced, the second takes the image and the first keeps the rest.
#[test]
fn a_second_manager_conflicts_until_it_forces() {
    let Some(s) = serve() else { return };
    let first = deployment(&s, "owned", Some(2), "nginx:1.27");
    assert!(
        s.ok(&["apply", "--server-side", "-f", &first])
            .contains("deployment.apps/owned serverside-applied")
    );
    let entries = managed_fields(&s, &["deploy", "owned"]);
    let kubectl = entry(&entries, "kubectl", "Apply").expect("kubectl's apply is recorded");
    assert_eq!(kubectl["apiVersion"], "apps/v1");
    assert_eq!(kubectl["fieldsType"], "FieldsV1");
    assert_eq!(
        kubectl["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"]
            ["f:image"],
        serde_json::json!({}),
        "{kubectl}"
    );

    let second = deployment(&s, "owned", Some(2), "nginx:1.28");
    let refused = s.run(&[
        "apply",
        "--server-side",
        "--field-manager=rollout-bot",
        "-f",
        &second,
    ]);
    assert!(!refused.ok, "{}", refused.stdout);
    assert!(
        refused.stderr.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.template.spec.containers[name=\"web\"].image"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(
        field(&s, "owned", IMAGE),
        "nginx:1.27",
        "a refused apply changes nothing"
    );

    // Control: the value the field already has is shared, not refused.
    assert!(
        s.ok(&[
            "apply",
            "--server-side",
            "--field-manager=rollout-bot",
            "-f",
            &first
        ])
        .contains("serverside-applied")
    );
    let shared = managed_fields(&s, &["deploy", "owned"]);
    assert!(
        entry(&shared, "rollout-bot", "Apply").is_some(),
        "{shared:?}"
    );

    // Control: forced, the second manager takes the image.
    assert!(
        s.ok(&[
            "apply",
            "--server-side",
            "--field-manager=rollout-bot",
            "--force-conflicts",
            "-f",
            &second
        ])
        .contains("serverside-applied")
    );
    assert_eq!(field(&s, "owned", IMAGE), "nginx:1.28");
    let after = managed_fields(&s, &["deploy", "owned"]);
    let web = |e: &Value| {
        e["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"]
            .clone()
    };
    let kubectl = entry(&after, "kubectl", "Apply").expect("kubectl keeps the rest");
    assert!(web(kubectl).get("f:image").is_none(), "{kubectl}");
    assert!(kubectl["fieldsV1"]["f:spec"].get("f:replicas").is_some());
    let bot = entry(&after, "rollout-bot", "Apply").expect("the bot's apply");
    assert!(web(bot).get("f:image").is_some(), "{bot}");
}

/// `kubectl scale` writes the replicas through the scale subresource,
/// an update recorded under it; the applier re-applying its own replicas
/// then conflicts with it, named as the API server names an updater.
/// The control: the applier's apply without the replicas goes through.
#[test]
fn an_apply_after_kubectl_scale_conflicts_with_the_scale() {
    let Some(s) = serve() else { return };
    let applied = deployment(&s, "scaled", Some(2), "nginx:1.27");
    s.ok(&["apply", "--server-side", "-f", &applied]);
    s.ok(&["scale", "deploy", "scaled", "-n", "apps", "--replicas=4"]);
    let entries = managed_fields(&s, &["deploy", "scaled"]);
    let scale = entries
        .iter()
        .find(|e| e["subresource"] == "scale")
        .expect("the scale is recorded under its subresource");
    assert_eq!(scale["operation"], "Update");
    assert_eq!(
        scale["fieldsV1"],
        serde_json::json!({"f:spec": {"f:replicas": {}}})
    );
    let manager = scale["manager"].as_str().expect("a manager").to_owned();

    let again = s.run(&["apply", "--server-side", "-f", &applied]);
    assert!(!again.ok);
    assert!(
        again.stderr.contains(&format!(
            "Apply failed with 1 conflict: conflict with \"{manager}\" with subresource \"scale\" using apps/v1: .spec.replicas"
        )),
        "{}",
        again.stderr
    );
    assert_eq!(field(&s, "scaled", "{.spec.replicas}"), "4");
    let without_replicas = deployment(&s, "scaled", None, "nginx:1.27");
    s.ok(&["apply", "--server-side", "-f", &without_replicas]);
    assert_eq!(field(&s, "scaled", "{.spec.replicas}"), "4");
}

/// A create is an update by the client's field manager (`kubectl
/// create` names itself `kubectl-create`), owning what it wrote; an
/// apply that changes it conflicts with that updater, printed with its
/// apiVersion. The control: an object nobody wrote through the API
/// (the drill's Deployment `apps/api`) has no managedFields.
#[test]
fn a_create_is_recorded_as_an_update_its_appliers_conflict_with() {
    let Some(s) = serve() else { return };
    let made = manifest(
        &s,
        "made",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: made, namespace: apps}\ndata: {mode: fast}\n",
    );
    s.ok(&["create", "-f", &made]);
    let entries = managed_fields(&s, &["configmap", "made"]);
    let create = entry(&entries, "kubectl-create", "Update").expect("the create is recorded");
    assert_eq!(create["apiVersion"], "v1");
    assert_eq!(
        create["fieldsV1"],
        serde_json::json!({"f:data": {"f:mode": {}}})
    );
    let changed = manifest(
        &s,
        "made-slow",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: made, namespace: apps}\ndata: {mode: slow}\n",
    );
    let refused = s.run(&["apply", "--server-side", "-f", &changed]);
    assert!(
        !refused.ok
            && refused.stderr.contains(
                "Apply failed with 1 conflict: conflict with \"kubectl-create\" using v1: .data.mode"
            ),
        "{}",
        refused.stderr
    );
    let plain = s.ok(&[
        "get",
        "deploy",
        "api",
        "-n",
        "apps",
        "-o",
        "json",
        "--show-managed-fields",
    ]);
    let plain: Value = serde_json::from_str(&plain).expect("JSON");
    assert!(
        plain["metadata"].get("managedFields").is_none(),
        "{}",
        plain["metadata"]
    );
}
