//! Flux post-build variables in rendered manifests
//! (<https://fluxcd.io/flux/components/kustomize/kustomizations/#post-build-variable-substitution>):
//! a drill's workload files and `bench audit placement` take defaults, a
//! drill's `substitute:` values and `substituteFrom:` ConfigMap/Secret files;
//! a variable with neither is exit 2 with the file, line and column of its
//! `${`, before anything runs; an object labelled
//! `kustomize.toolkit.fluxcd.io/substitute: disabled` is left as written.

use crate::audit_support::{self, BUNDLE, LABEL};
use crate::common::{bench, root};

/// The API Deployment's replica line in the production manifests.
const API_REPLICAS: &str = "  name: api\n  namespace: apps\nspec:\n  replicas: 2\n";

/// The built-in node-loss drill, reading `manifest` as its workloads, with
/// `entry_extra` appended to its workload entry (e.g. a `substitute:` map).
fn drill_on(dir: &std::path::Path, manifest: &str, entry_extra: &str) -> String {
    let harness = root().join("harness");
    let harness = harness.to_str().expect("utf-8");
    std::fs::write(dir.join("production.yaml"), manifest).expect("write manifest");
    let text = std::fs::read_to_string(root().join("scenarios/node-loss.yaml"))
        .expect("built-in drill")
        .replace(
            "  - path: ../harness/manifests/production.yaml\n",
            &format!("  - path: production.yaml\n{entry_extra}"),
        )
        .replace("../harness", harness);
    let drill = dir.join("drill.yaml");
    std::fs::write(&drill, text).expect("write drill");
    drill.to_str().expect("utf-8").to_owned()
}

fn production_with(replicas_line: &str) -> String {
    let text = std::fs::read_to_string(root().join("harness/manifests/production.yaml"))
        .expect("production manifests");
    audit_support::replace_once(
        &text,
        API_REPLICAS,
        &API_REPLICAS.replace("  replicas: 2\n", replicas_line),
    )
}

#[test]
fn a_default_is_applied_and_a_drill_can_give_the_value() {
    for (line, extra) in [
        ("  replicas: ${api_replicas:=2}\n", ""),
        ("  replicas: ${api_replicas:-2}\n", ""),
        (
            "  replicas: ${api_replicas}\n",
            "    substitute: {api_replicas: \"2\"}\n",
        ),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let drill = drill_on(dir.path(), &production_with(line), extra);
        let validate = bench(&["validate", &drill]);
        assert_eq!(validate.code, 0, "{line}: {}", validate.stderr);
        let out = dir.path().join("reports");
        let run = bench(&["run", &drill, "--out", out.to_str().expect("utf-8")]);
        assert!(
            run.code == 0 || run.code == 1,
            "{line}: exit {}: {}",
            run.code,
            run.stderr
        );
        let report = std::fs::read_to_string(out.join("report.json")).expect("report");
        assert!(report.contains("api-keeps-serving"), "{line}");
    }
}

#[test]
fn a_variable_without_value_or_default_is_exit_2_with_its_location() {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = production_with("  replicas: ${api_replicas}\n");
    let line = manifest
        .lines()
        .position(|l| l == "  replicas: ${api_replicas}")
        .expect("the placeholder's line")
        + 1;
    // A value for another variable does not fill this one.
    let drill = drill_on(
        dir.path(),
        &manifest,
        "    substitute: {web_replicas: \"3\"}\n",
    );
    let out = dir.path().join("reports");
    for args in [
        vec!["validate", drill.as_str()],
        vec!["run", drill.as_str(), "--out", out.to_str().expect("utf-8")],
    ] {
        let result = bench(&args);
        assert_eq!(result.code, 2, "{args:?}: {}", result.stderr);
        let location = format!("production.yaml:{line}:13");
        assert!(
            result.stderr.contains(&location),
            "{location}: {}",
            result.stderr
        );
        assert!(
            result.stderr.contains("`api_replicas`"),
            "{}",
            result.stderr
        );
    }
    assert!(!out.exists(), "nothing ran, nothing written");
}

#[test]
fn a_substitute_key_flux_would_refuse_is_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let drill = drill_on(
        dir.path(),
        &production_with("  replicas: ${api_replicas:=2}\n"),
        "    substitute: {api-replicas: \"2\"}\n",
    );
    let validate = bench(&["validate", &drill]);
    assert_eq!(validate.code, 2, "{}", validate.stderr);
    assert!(
        validate
            .stderr
            .contains("`api-replicas` is not a variable name"),
        "{}",
        validate.stderr
    );
}

#[test]
fn the_audit_applies_defaults_and_refuses_an_unset_variable_with_its_location() {
    let with_default = BUNDLE.replace(
        "storageClassName: hcloud",
        "storageClassName: ${storage_class:=hcloud}",
    );
    assert_ne!(with_default, BUNDLE);
    let outcome = audit_support::audit_json(&with_default);
    let original = audit_support::audit_json(BUNDLE);
    assert_eq!(outcome.code, original.code, "{outcome:#?}");
    assert_eq!(outcome.verdicts(), original.verdicts());
    assert!(!outcome.verdicts().is_empty());

    let unset = BUNDLE.replace(
        "storageClassName: hcloud",
        "storageClassName: ${storage_class}",
    );
    let line = unset
        .lines()
        .position(|l| l.contains("${storage_class}"))
        .expect("a placeholder")
        + 1;
    let dir = tempfile::tempdir().unwrap();
    let file = audit_support::write(dir.path(), "bundle.yaml", &unset);
    let outcome = audit_support::run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            file.as_str(),
        ],
        None,
    );
    assert_eq!(outcome.code, 2, "{outcome:#?}");
    let location = format!("bundle.yaml:{line}:25");
    assert!(
        outcome.stderr.contains(&location),
        "{location}: {outcome:#?}"
    );
    assert!(outcome.stderr.contains("`storage_class`"), "{outcome:#?}");
}

#[test]
fn substitute_from_files_give_values_and_the_inline_map_wins() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("cluster-vars.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars}\ndata:\n  api_replicas: \"2\"\n",
    )
    .expect("write vars");
    // `Mw==` is "3": a later file overwrites an earlier one's value.
    std::fs::write(
        dir.path().join("secret-vars.yaml"),
        "apiVersion: v1\nkind: Secret\nmetadata: {name: secret-vars}\ndata:\n  api_replicas: Mw==\n",
    )
    .expect("write secret");
    let manifest = production_with("  replicas: ${api_replicas}\n");
    let cases = [
        // (entry extra, the api's desired replicas in the report)
        ("    substituteFrom: [{path: cluster-vars.yaml}]\n", 2),
        (
            "    substituteFrom: [{path: cluster-vars.yaml}, {path: secret-vars.yaml}]\n",
            3,
        ),
        (
            "    substitute: {api_replicas: \"2\"}\n    substituteFrom: [{path: secret-vars.yaml}]\n",
            2,
        ),
        (
            "    substituteFrom: [{path: absent.yaml, optional: true}, {path: cluster-vars.yaml}]\n",
            2,
        ),
    ];
    for (extra, desired) in cases {
        let drill = drill_on(dir.path(), &manifest, extra);
        let out = dir.path().join("reports");
        let run = bench(&["run", &drill, "--out", out.to_str().expect("utf-8")]);
        assert!(run.code == 0 || run.code == 1, "{extra}: {}", run.stderr);
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(out.join("report.json")).expect("report"),
        )
        .expect("JSON");
        let api = report["workloads"]
            .as_array()
            .expect("workloads")
            .iter()
            .find(|w| w["workload"] == "apps/Deployment/api")
            .expect("the api");
        assert_eq!(api["desired"], desired, "{extra}");
    }
}

#[test]
fn a_missing_or_malformed_values_file_is_exit_2_before_anything_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("pod.yaml"),
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
    )
    .expect("write");
    let manifest = production_with("  replicas: ${api_replicas}\n");
    for (extra, expected) in [
        (
            "    substituteFrom: [{path: absent.yaml}]\n",
            "absent.yaml` does not exist".to_owned(),
        ),
        (
            "    substituteFrom: [{path: pod.yaml}]\n",
            "found kind `Pod`".to_owned(),
        ),
    ] {
        let drill = drill_on(dir.path(), &manifest, extra);
        let out = dir.path().join("reports");
        let run = bench(&["run", &drill, "--out", out.to_str().expect("utf-8")]);
        assert_eq!(run.code, 2, "{extra}: {}", run.stderr);
        assert!(run.stderr.contains(&expected), "{expected}: {}", run.stderr);
        assert!(!out.exists(), "nothing ran, nothing written");
    }
}

#[test]
fn an_object_that_opts_out_keeps_its_placeholders() {
    let script = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: backup-script\n  namespace: apps\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  run.sh: echo ${HOME}\n";
    let dir = tempfile::tempdir().expect("tempdir");
    let manifest = format!("{}{script}", production_with("  replicas: 2\n"));
    let drill = drill_on(dir.path(), &manifest, "");
    let validate = bench(&["validate", &drill]);
    assert_eq!(validate.code, 0, "{}", validate.stderr);
    // Control: without the annotation `${HOME}` has no value.
    let manifest = manifest.replace(
        "kustomize.toolkit.fluxcd.io/substitute: disabled",
        "team: ops",
    );
    let drill = drill_on(dir.path(), &manifest, "");
    let validate = bench(&["validate", &drill]);
    assert_eq!(validate.code, 2, "{}", validate.stderr);
    assert!(validate.stderr.contains("`HOME`"), "{}", validate.stderr);
}

#[test]
fn the_audit_takes_values_from_flags() {
    let unset = BUNDLE.replace(
        "storageClassName: hcloud",
        "storageClassName: ${storage_class}",
    );
    let dir = tempfile::tempdir().unwrap();
    let file = audit_support::write(dir.path(), "bundle.yaml", &unset);
    let vars = audit_support::write(
        dir.path(),
        "vars.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: v}\ndata: {storage_class: hcloud}\n",
    );
    let original = audit_support::audit_json(BUNDLE);
    for flags in [
        vec!["--substitute", "storage_class=hcloud"],
        vec!["--substitute-from", vars.as_str()],
    ] {
        let mut args = vec![
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            "--format",
            "json",
        ];
        args.extend(&flags);
        args.push(file.as_str());
        let outcome = audit_support::run(&args, None);
        assert_eq!(outcome.code, original.code, "{flags:?}: {outcome:#?}");
        assert_eq!(outcome.verdicts(), original.verdicts(), "{flags:?}");
    }
    // Control: another class's value leaves other consumers of hcloud.
    let outcome = audit_support::run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            "--format",
            "json",
            "--substitute",
            "storage_class=longhorn",
            file.as_str(),
        ],
        None,
    );
    assert_ne!(outcome.code, 2, "{outcome:#?}");
    assert_ne!(outcome.verdicts(), original.verdicts());
    let bad = audit_support::run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            "--substitute",
            "storage-class=x",
            file.as_str(),
        ],
        None,
    );
    assert_eq!(bad.code, 2, "{bad:#?}");
}
