//! A custom resource's printer columns and `scale` subresource through the
//! real kubectl, as the page "Extend the Kubernetes API with
//! CustomResourceDefinitions" describes them
//! (<https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/>,
//! sections "Additional printer columns" and "Scale subresource") and
//! apiextensions-apiserver's table convertor and `ScaleREST` serve them.
//! The fixture is the page's CronTab (`harness/serve/crds/crontabs.yaml`).

use crate::kubectl_support::*;

const CRONTAB_CRD: &str = "harness/serve/crds/crontabs.yaml";

fn root_path(path: &str) -> String {
    crate::common::root().join(path).display().to_string()
}

/// The page's CronTab definition stored, and two CronTabs in `apps`: the
/// page's `my-new-cron-object` with 3 replicas, and `bare`, without any.
fn with_crontabs() -> Option<Served> {
    let s = serve()?;
    s.ok(&["apply", "-f", &root_path(CRONTAB_CRD)]);
    let objects = manifest(
        &s,
        "crontabs",
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: my-new-cron-object, namespace: apps}\nspec: {cronSpec: '* * * * */5', image: my-awesome-cron-image, replicas: 3}\n---\napiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: bare, namespace: apps}\nspec: {cronSpec: '*/1'}\n",
    );
    s.ok(&["apply", "-f", &objects]);
    Some(s)
}

/// The text under `column` in the row of `name`, read at the header's
/// offsets (kubectl's tab writer aligns cells under their headers).
fn cell(table: &str, name: &str, column: &str) -> String {
    let mut lines = table.lines();
    let header = lines.next().expect("a header");
    let start = header
        .find(column)
        .unwrap_or_else(|| panic!("no {column} in {header}"));
    let end = header[start + column.len()..]
        .find(|c: char| !c.is_whitespace())
        .map_or(usize::MAX, |i| start + column.len() + i);
    let row = lines
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row {name} in {table}"));
    row.get(start..end.min(row.len()))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// "Additional printer columns": `kubectl get ct` prints the version's
/// columns (SPEC, REPLICAS, AGE), each JSONPath evaluated on the object,
/// an empty cell where the object lacks the field (`bare` has no
/// replicas), and the priority-1 READY column only with `-o wide`.
/// Control: v1beta1 declares no columns and is printed with the API
/// server's default, AGE alone.
#[test]
fn kubectl_get_prints_the_definitions_columns() {
    let Some(s) = with_crontabs() else { return };
    s.advance("90s");
    let table = s.ok(&["get", "ct", "-n", "apps"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
    assert_eq!(cell(&table, "my-new-cron-object", "SPEC"), "* * * * */5");
    assert_eq!(cell(&table, "my-new-cron-object", "REPLICAS"), "3");
    assert_eq!(cell(&table, "my-new-cron-object", "AGE"), "90s");
    assert_eq!(cell(&table, "bare", "SPEC"), "*/1");
    assert_eq!(cell(&table, "bare", "REPLICAS"), "", "{table}");
    assert!(!table.contains("READY"), "priority 1 is wide only");
    s.ok(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "-n",
        "apps",
        "--subresource=status",
        "--type=merge",
        "-p",
        "{\"status\":{\"conditions\":[{\"type\":\"Stalled\",\"status\":\"False\"},{\"type\":\"Ready\",\"status\":\"True\"}]}}",
    ]);
    let wide = s.ok(&["get", "ct", "-n", "apps", "-o", "wide"]);
    assert_eq!(cell(&wide, "my-new-cron-object", "READY"), "True", "{wide}");
    assert_eq!(cell(&wide, "bare", "READY"), "", "{wide}");
    let beta = s.ok(&["get", "crontabs.v1beta1.stable.example.com", "-n", "apps"]);
    let header: Vec<&str> = beta
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "AGE"], "{beta}");
    assert_eq!(cell(&beta, "bare", "AGE"), "90s");
}

/// "Scale subresource": `kubectl scale` writes `.spec.replicas` through
/// `/scale`, the Scale reads `.status.replicas` and
/// `.status.labelSelector` (written through `/status`), an update that
/// would make the replicas negative is the API server's 422, and a
/// CronTab without replicas has no Scale to read (its 500). Control:
/// v1beta1 declares no scale subresource, so its `/scale` is a 404.
#[test]
fn kubectl_scale_scales_a_custom_resource() {
    let Some(s) = with_crontabs() else { return };
    let token = s.server.token().as_str().to_owned();
    let scale_path = |version: &str, name: &str| {
        format!("/{token}/apis/stable.example.com/{version}/namespaces/apps/crontabs/{name}/scale")
    };
    let resources = s.ok(&[
        "api-resources",
        "--api-group=stable.example.com",
        "-o",
        "wide",
    ]);
    assert!(resources.contains("crontabs"), "{resources}");
    let scaled = s.ok(&[
        "scale",
        "ct",
        "my-new-cron-object",
        "-n",
        "apps",
        "--replicas=5",
    ]);
    assert!(
        scaled.contains("crontab.stable.example.com/my-new-cron-object scaled"),
        "{scaled}"
    );
    let field = |name: &str, path: &str| {
        s.ok(&[
            "get",
            "ct",
            name,
            "-n",
            "apps",
            "-o",
            &format!("jsonpath={path}"),
        ])
    };
    assert_eq!(field("my-new-cron-object", "{.spec.replicas}"), "5");
    assert_eq!(field("my-new-cron-object", "{.metadata.generation}"), "2");
    assert_eq!(
        field("my-new-cron-object", "{.spec.image}"),
        "my-awesome-cron-image"
    );
    // The status, written through its subresource; a spec sent with it is
    // ignored (and a status sent to the main resource, the control, too).
    s.ok(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "-n",
        "apps",
        "--subresource=status",
        "--type=merge",
        "-p",
        "{\"status\":{\"replicas\":4,\"labelSelector\":\"app=cron\"},\"spec\":{\"image\":\"ignored\"}}",
    ]);
    assert_eq!(
        field("my-new-cron-object", "{.spec.image}"),
        "my-awesome-cron-image"
    );
    s.ok(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "-n",
        "apps",
        "--type=merge",
        "-p",
        "{\"status\":{\"replicas\":9}}",
    ]);
    assert_eq!(field("my-new-cron-object", "{.status.replicas}"), "4");
    let raw = s.ok(&["get", "--raw", &scale_path("v1", "my-new-cron-object")]);
    let scale: serde_json::Value = serde_json::from_str(&raw).expect("JSON");
    assert_eq!(
        (&scale["kind"], &scale["apiVersion"]),
        (
            &serde_json::json!("Scale"),
            &serde_json::json!("autoscaling/v1")
        )
    );
    assert_eq!(scale["spec"]["replicas"], 5);
    assert_eq!(scale["status"]["replicas"], 4);
    assert_eq!(scale["status"]["selector"], "app=cron");
    assert_eq!(scale["metadata"]["namespace"], "apps");
    // A negative count, through the subresource: the Scale's validation.
    let negative = s.run(&[
        "patch",
        "ct",
        "my-new-cron-object",
        "-n",
        "apps",
        "--subresource=scale",
        "--type=merge",
        "-p",
        "{\"spec\":{\"replicas\":-1}}",
    ]);
    assert!(
        !negative.ok
            && negative.stderr.contains(
                "The Scale \"my-new-cron-object\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
            ),
        "{}",
        negative.stderr
    );
    assert_eq!(field("my-new-cron-object", "{.spec.replicas}"), "5");
    // With a precondition kubectl reads the Scale and PUTs it back (with
    // its resourceVersion); a precondition that does not hold (the
    // control) changes nothing.
    let wrong = s.run(&[
        "scale",
        "ct",
        "my-new-cron-object",
        "-n",
        "apps",
        "--current-replicas=4",
        "--replicas=6",
    ]);
    assert!(!wrong.ok, "{}", wrong.stdout);
    assert_eq!(field("my-new-cron-object", "{.spec.replicas}"), "5");
    s.ok(&[
        "scale",
        "ct",
        "my-new-cron-object",
        "-n",
        "apps",
        "--current-replicas=5",
        "--replicas=6",
    ]);
    assert_eq!(field("my-new-cron-object", "{.spec.replicas}"), "6");
    // `bare` has no replicas: no Scale to read; scaling it sets them.
    let missing = s.run(&["get", "--raw", &scale_path("v1", "bare")]);
    assert!(
        !missing.ok
            && missing
                .stderr
                .contains("(InternalError): Internal error occurred: the spec replicas field \".spec.replicas\" does not exist"),
        "{}",
        missing.stderr
    );
    s.ok(&["scale", "ct", "bare", "-n", "apps", "--replicas=2"]);
    assert_eq!(field("bare", "{.spec.replicas}"), "2");
    assert_eq!(field("bare", "{.spec.cronSpec}"), "*/1");
    let table = s.ok(&["get", "ct", "-n", "apps"]);
    assert_eq!(cell(&table, "bare", "REPLICAS"), "2", "{table}");
    // v1beta1 serves no scale subresource.
    let beta = s.run(&["get", "--raw", &scale_path("v1beta1", "bare")]);
    assert!(
        !beta.ok && beta.stderr.contains("NotFound"),
        "{}",
        beta.stderr
    );
}

/// `kubectl get ct -w` prints each watch event as a row of the same
/// columns: a scale shows up as a MODIFIED row with the new REPLICAS.
/// Control: the rows before it show the old count.
#[test]
fn a_watch_prints_rows_of_the_definitions_columns() {
    let Some(s) = with_crontabs() else { return };
    let (mut watch, out, _) = s.spawn(
        &["get", "ct", "-n", "apps", "-w", "--output-watch-events"],
        "watch",
    );
    // The watch is open once kubectl has listed; give it the time to.
    std::thread::sleep(std::time::Duration::from_secs(2));
    s.ok(&[
        "scale",
        "ct",
        "my-new-cron-object",
        "-n",
        "apps",
        "--replicas=7",
    ]);
    let start = std::time::Instant::now();
    fn modified(text: &str) -> Option<Vec<&str>> {
        text.lines()
            .find(|l| l.starts_with("MODIFIED") && l.contains("my-new-cron-object"))
            .map(|l| l.split_whitespace().collect())
    }
    let seen = loop {
        let seen = read(&out);
        if modified(&seen).is_some() || start.elapsed() > DEADLINE {
            break seen;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _ = watch.kill();
    let _ = watch.wait();
    let row = modified(&seen).unwrap_or_else(|| panic!("no MODIFIED row: {seen}"));
    assert_eq!(
        row,
        [
            "MODIFIED",
            "my-new-cron-object",
            "*",
            "*",
            "*",
            "*",
            "*/5",
            "7",
            "0s"
        ],
        "{seen}"
    );
    let added = seen
        .lines()
        .find(|l| l.starts_with("ADDED") && l.contains("my-new-cron-object"))
        .unwrap_or_else(|| panic!("no ADDED row: {seen}"));
    assert!(added.split_whitespace().any(|c| c == "3"), "{added}");
}
