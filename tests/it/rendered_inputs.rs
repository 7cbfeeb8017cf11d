//! A platform's rendered output fed to the bench exactly as its tooling
//! prints it: `helm template` (documents after `---` and `# Source:`
//! comments, comment-only documents for templates that render nothing) and
//! `flux build kustomization` (a HelmRelease whose chart is not rendered).
//! The fixtures and the commands that made them are described in
//! `harness/fixtures/rendered/README.md`.

use crate::audit_support::{LABEL, Outcome, replace_once, run, write};

const HELM: &str = include_str!("../../harness/fixtures/rendered/helm-template-openbao.yaml");
const FLUX: &str = include_str!("../../harness/fixtures/rendered/flux-build-openbao.yaml");
const OPENBAO_MAP: &str = "harness/consumer-maps/openbao.yaml";

fn audit(text: &str, extra: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "rendered.yaml", text);
    let mut args = vec![
        "--storage-class",
        "hcloud",
        "--require-label",
        LABEL,
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    args.push(file.as_str());
    let root = crate::common::root();
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            if a.starts_with("harness/") {
                root.join(a).display().to_string()
            } else {
                (*a).to_owned()
            }
        })
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&args, None)
}

/// The chart's server placement as `--set-json server.affinity=…` renders it.
const BASELINE_AFFINITY: &str = "      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - key: platform.devantler.tech/baseline-worker
                    operator: In
                    values: [\"true\"]
        podAntiAffinity:";

#[test]
fn helm_template_output_is_read_whole_and_its_unpinned_statefulset_fails() {
    let outcome = audit(HELM, &[]);
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    assert_eq!(
        outcome.verdicts(),
        [("openbao".to_owned(), "fail".to_owned())]
    );
    let json = outcome.json();
    let claims = json["consumers"][0]["claims"].to_string();
    assert!(
        claims.contains("volumeClaimTemplate/data") && claims.contains("volumeClaimTemplate/audit"),
        "{claims}"
    );
    assert!(
        outcome.reasons("openbao")[0].starts_with("no required placement rule"),
        "{outcome:#?}"
    );
    // Control: the same render with the chart's affinity set to the
    // baseline passes, so the failure was the placement, not the format.
    let pinned = replace_once(
        HELM,
        "      affinity:\n        podAntiAffinity:",
        BASELINE_AFFINITY,
    );
    let outcome = audit(&pinned, &[]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert_eq!(
        outcome.verdicts(),
        [("openbao".to_owned(), "pass".to_owned())]
    );
}

#[test]
fn flux_build_output_calls_the_unrendered_helmrelease_unknown_until_a_map_judges_it() {
    let outcome = audit(FLUX, &[]);
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    let mut verdicts = outcome.verdicts();
    verdicts.sort();
    assert_eq!(
        verdicts,
        [
            ("openbao".to_owned(), "unknown".to_owned()),
            ("openbao-snapshot".to_owned(), "pass".to_owned()),
        ]
    );
    let reasons = outcome.reasons("openbao").join("\n");
    for path in [
        ".spec.values.server.dataStorage.storageClass",
        ".spec.values.server.auditStorage.storageClass",
    ] {
        assert!(
            reasons.contains(&format!("HelmRelease openbao/openbao {path}")),
            "{reasons}"
        );
    }

    // With the chart's consumer map, each storage component is judged: the
    // values set no placement, so both fail.
    let outcome = audit(FLUX, &["--consumers", OPENBAO_MAP]);
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    let mut verdicts = outcome.verdicts();
    verdicts.sort();
    assert_eq!(
        verdicts,
        [
            ("openbao (server-audit)".to_owned(), "fail".to_owned()),
            ("openbao (server-data)".to_owned(), "fail".to_owned()),
            ("openbao-snapshot".to_owned(), "pass".to_owned()),
        ]
    );
    // Control: values that pin the server to the baseline pass.
    let pinned = replace_once(
        FLUX,
        "      ha:\n",
        "      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: platform.devantler.tech/baseline-worker, operator: In, values: [\"true\"]}
      ha:\n",
    );
    let outcome = audit(&pinned, &["--consumers", OPENBAO_MAP]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert!(
        outcome.verdicts().iter().all(|(_, v)| v == "pass"),
        "{outcome:#?}"
    );
}

/// Both renders as a drill's workloads, unchanged: the chart's StatefulSet
/// is simulated (its pods, anti-affinity and `hcloud` claims), the Flux
/// objects it cannot render are listed as not simulated, and a node loss
/// is judged on it with a control that bites.
#[test]
fn both_renders_are_a_drills_workloads_as_printed() {
    let root = crate::common::root();
    let dir = tempfile::tempdir().unwrap();
    let drill = format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {{name: rendered}}
cluster:
  import: {ksail}
  storageClasses:
    - {{name: hcloud, attach: SingleNode, releaseOnNodeLoss: never}}
    - {{name: longhorn, attach: Replicated, default: true}}
workloads:
  - path: {flux}
  - path: {helm}
steps:
  - name: a baseline worker loses power
    fault:
      crashNode: {{target: {{node: prod-worker-1}}}}
  - name: wait
    wait: {{for: 15m}}
  - name: the node is replaced
    fault:
      replaceNode: {{target: {{node: prod-worker-1}}}}
  - name: observe
    wait: {{for: 15m}}
assertions:
  - name: openbao-recovers
    rto: {{of: {{workload: openbao/StatefulSet/openbao}}, within: 40m}}
  - name: no-replacement-bites
    negativeControl:
      weaken:
        change: noNodeReplacement
        mustFail: [openbao-recovers]
",
        ksail = root.join("harness/ksail/ksail.prod.yaml").display(),
        flux = root
            .join("harness/fixtures/rendered/flux-build-openbao.yaml")
            .display(),
        helm = root
            .join("harness/fixtures/rendered/helm-template-openbao.yaml")
            .display(),
    );
    let path = write(dir.path(), "rendered.yaml", &drill);
    let out = dir.path().join("out");
    let output = crate::common::bench(&["run", path.as_str(), "--out", out.to_str().unwrap()]);
    assert_eq!(output.code, 0, "{}", output.stderr);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("report.json")).unwrap()).unwrap();
    let mut kinds: Vec<&str> = report["notSimulated"]
        .as_array()
        .expect("notSimulated")
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    kinds.sort();
    assert_eq!(kinds, ["HelmRelease", "HelmRepository", "ServiceAccount"]);
    let placed = report["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["kind"] == "PodScheduled"
                && e["object"]["namespace"] == "openbao"
                && e["object"]["name"]
                    .as_str()
                    .is_some_and(|p| p.starts_with("openbao-"))
        })
        .count();
    assert!(placed >= 3, "the chart's three replicas run: {placed}");
}
