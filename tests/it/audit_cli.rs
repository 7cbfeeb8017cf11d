//! `bench audit placement` through the real binary, over a realistic
//! rendered bundle (OpenBao, the Coroot StatefulSets, the snapshot CronJob
//! and Job, Longhorn and stateless workloads) and single-change ablations of
//! it that must each fail for the right reason.

use crate::audit_support;

use audit_support::{BUNDLE, LABEL, audit_json, replace_once, run, write};

const FIXTURE: &str = "harness/fixtures/audit/bundle.yaml";

/// The seven `hcloud` consumers the platform knows, all guarded.
const HCLOUD_CONSUMERS: [&str; 7] = [
    "coroot-clickhouse-keeper",
    "coroot-clickhouse-shard-0",
    "coroot-coroot",
    "coroot-prometheus",
    "openbao",
    "vault-snapshot",
    "vault-snapshot-init",
];

fn all_pass_but(outcome: &audit_support::Outcome, name: &str, verdict: &str) {
    let verdicts = outcome.verdicts();
    assert_eq!(verdicts.len(), HCLOUD_CONSUMERS.len(), "{outcome:#?}");
    for (consumer, got) in verdicts {
        let expected = if consumer == name { verdict } else { "pass" };
        assert_eq!(got, expected, "{consumer}: {outcome:#?}");
    }
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    assert_eq!(outcome.json()["summary"]["verdict"], "fail");
}

// ------------------------------------------------------------ the bundle

#[test]
fn the_guarded_bundle_passes_and_finds_every_hcloud_consumer() {
    let outcome = audit_json(BUNDLE);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let mut names: Vec<String> = outcome.verdicts().into_iter().map(|(n, _)| n).collect();
    names.sort();
    assert_eq!(names, HCLOUD_CONSUMERS);
    assert!(outcome.verdicts().iter().all(|(_, v)| v == "pass"));
    let summary = &outcome.json()["summary"];
    assert_eq!(summary["consumers"], 7);
    assert_eq!(summary["pass"], 7);
    assert_eq!(summary["verdict"], "pass");
}

#[test]
fn text_report_of_the_guarded_bundle() {
    let outcome = run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            FIXTURE,
        ],
        None,
    );
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    insta::assert_snapshot!(outcome.stdout);
}

#[test]
fn json_report_of_the_longhorn_consumers() {
    // Nothing on Longhorn requires the baseline label: both consumers fail,
    // and the hcloud consumers are not mistaken for Longhorn ones.
    let outcome = run(
        &[
            "--storage-class",
            "longhorn",
            "--require-label",
            LABEL,
            "--format",
            "json",
            FIXTURE,
        ],
        None,
    );
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    insta::assert_snapshot!(outcome.stdout);
}

#[test]
fn standard_input_reads_the_same_bundle() {
    let outcome = run(
        &["--storage-class", "hcloud", "--require-label", LABEL, "-"],
        Some(BUNDLE),
    );
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert!(outcome.stdout.contains("7 pass, 0 fail, 0 unknown"));
}

#[test]
fn a_claim_is_resolved_across_files() {
    // The PVC and its consumers in separate files, as two kustomize builds.
    let split = BUNDLE
        .find("---\napiVersion: batch/v1\nkind: CronJob")
        .expect("the CronJob document");
    let dir = tempfile::tempdir().unwrap();
    let first = write(dir.path(), "infra.yaml", &BUNDLE[..split]);
    let second = write(dir.path(), "apps.yaml", &BUNDLE[split..]);
    let outcome = run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            "--format",
            "json",
            &first,
            &second,
        ],
        None,
    );
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert_eq!(outcome.verdicts().len(), 7);
}

// ------------------------------------------------------------ ablations

#[test]
fn ablation_an_extra_unlabelled_or_term_fails() {
    let bundle = replace_once(
        BUNDLE,
        "                    - \"true\"\n          containers:",
        "                    - \"true\"\n                - matchExpressions:\n                  - key: kubernetes.io/os\n                    operator: In\n                    values:\n                    - linux\n          containers:",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "vault-snapshot", "fail");
    assert_eq!(
        outcome.reasons("vault-snapshot"),
        [
            "term 2 of 2 does not require platform.devantler.tech/baseline-worker=true \
          and admits nodes without it (its rules: `kubernetes.io/os In [linux]`)"
        ]
    );
}

#[test]
fn ablation_the_requirement_removed_fails() {
    let bundle = replace_once(
        BUNDLE,
        "      affinity:\n        nodeAffinity:\n          requiredDuringSchedulingIgnoredDuringExecution:\n            nodeSelectorTerms:\n            - matchExpressions:\n              - key: platform.devantler.tech/baseline-worker\n                operator: In\n                values:\n                - \"true\"\n        podAntiAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:",
        "      affinity:\n        podAntiAffinity:\n          preferredDuringSchedulingIgnoredDuringExecution:",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "coroot-clickhouse-keeper", "fail");
    assert_eq!(
        outcome.reasons("coroot-clickhouse-keeper"),
        ["no required placement rule: neither a nodeSelector \
          platform.devantler.tech/baseline-worker=true nor required node affinity"]
    );
}

#[test]
fn ablation_the_value_changed_to_false_fails() {
    let bundle = replace_once(
        BUNDLE,
        "                - \"true\"\n              - key: kubernetes.io/hostname",
        "                - \"false\"\n              - key: kubernetes.io/hostname",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "openbao", "fail");
    assert_eq!(
        outcome.reasons("openbao"),
        [
            "term 1 of 1 does not require platform.devantler.tech/baseline-worker=true: \
          `platform.devantler.tech/baseline-worker In [false]` requires a different value than true"
        ]
    );
}

/// Rewrites coroot-coroot's requirement on the label (operator and values).
fn coroot_requirement(replacement: &str) -> String {
    replace_once(
        BUNDLE,
        "              - key: platform.devantler.tech/baseline-worker\n                operator: In\n                values:\n                - \"true\"\n      containers:\n      - args:\n        - --listen=:8080",
        &format!("{replacement}\n      containers:\n      - args:\n        - --listen=:8080"),
    )
}

#[test]
fn ablation_only_a_does_not_exist_guard_fails_open() {
    // The shape of the original incident's guard.
    let bundle = coroot_requirement(
        "              - key: ksail.io/autoscaled\n                operator: DoesNotExist",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "coroot-coroot", "fail");
    let reasons = outcome.reasons("coroot-coroot");
    assert_eq!(reasons.len(), 1);
    assert!(
        reasons[0].contains("only guard is a DoesNotExist exclusion (`ksail.io/autoscaled DoesNotExist`), which fails open on any node missing that label"),
        "{reasons:?}"
    );
}

#[test]
fn ablation_exists_admits_other_values() {
    let bundle = coroot_requirement(
        "              - key: platform.devantler.tech/baseline-worker\n                operator: Exists",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "coroot-coroot", "fail");
    assert!(outcome.reasons("coroot-coroot")[0].contains("admits any value of"));
}

#[test]
fn ablation_a_second_value_admits_other_values() {
    let bundle = coroot_requirement(
        "              - key: platform.devantler.tech/baseline-worker\n                operator: In\n                values: [\"true\", \"false\"]",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "coroot-coroot", "fail");
    assert!(outcome.reasons("coroot-coroot")[0].contains("admits values of"));
}

#[test]
fn ablation_not_in_false_admits_unlabelled_nodes() {
    let bundle = coroot_requirement(
        "              - key: platform.devantler.tech/baseline-worker\n                operator: NotIn\n                values: [\"false\"]",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "coroot-coroot", "fail");
    assert!(outcome.reasons("coroot-coroot")[0].contains("admits nodes without"));
}

#[test]
fn a_duplicated_value_is_still_only_that_value() {
    let bundle = coroot_requirement(
        "              - key: platform.devantler.tech/baseline-worker\n                operator: In\n                values: [\"true\", \"true\"]",
    );
    let outcome = audit_json(&bundle);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
}

#[test]
fn an_empty_term_list_can_never_schedule_and_is_reported() {
    let bundle = replace_once(
        BUNDLE,
        "            nodeSelectorTerms:\n            - matchExpressions:\n              - key: platform.devantler.tech/baseline-worker\n                operator: In\n                values:\n                - \"true\"\n      containers:\n      - args:\n        - --listen=:8080",
        "            nodeSelectorTerms: []\n      containers:\n      - args:\n        - --listen=:8080",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "coroot-coroot", "fail");
    assert_eq!(
        outcome.reasons("coroot-coroot"),
        ["required node affinity has no terms; the pod can never schedule"]
    );
}

#[test]
fn ablation_the_node_selector_removed_fails() {
    let bundle = replace_once(
        BUNDLE,
        "      nodeSelector:\n        kubernetes.io/os: linux\n        platform.devantler.tech/baseline-worker: \"true\"\n",
        "      nodeSelector:\n        kubernetes.io/os: linux\n",
    );
    let outcome = audit_json(&bundle);
    all_pass_but(&outcome, "coroot-prometheus", "fail");
    assert!(
        outcome.reasons("coroot-prometheus")[0]
            .contains("(nodeSelector has only kubernetes.io/os=linux)")
    );
}

#[test]
fn a_node_selector_value_that_is_not_a_string_is_malformed() {
    let bundle = replace_once(
        BUNDLE,
        "        platform.devantler.tech/baseline-worker: \"true\"\n",
        "        platform.devantler.tech/baseline-worker: true\n",
    );
    let outcome = audit_json(&bundle);
    assert_eq!(outcome.code, 2, "{outcome:#?}");
    assert!(outcome.stderr.contains("found a boolean"), "{outcome:#?}");
}

// ------------------------------------------------------ claim resolution

#[test]
fn a_claim_missing_from_the_input_is_unknown() {
    let start = BUNDLE
        .find("---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  labels:\n    app.kubernetes.io/name: vault-snapshot")
        .unwrap();
    let end = start + 4 + BUNDLE[start + 4..].find("---\n").unwrap();
    let bundle = format!("{}{}", &BUNDLE[..start], &BUNDLE[end..]);
    let outcome = audit_json(&bundle);
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    for name in ["vault-snapshot", "vault-snapshot-init"] {
        let verdict = outcome.verdicts().into_iter().find(|(n, _)| n == name);
        assert_eq!(verdict, Some((name.to_owned(), "unknown".to_owned())));
        assert!(
            outcome.reasons(name)[0].contains(
                "persistentVolumeClaim/vault-snapshots: no PersistentVolumeClaim vault-snapshots in namespace openbao"
            ),
            "{outcome:#?}"
        );
    }
    assert_eq!(outcome.json()["summary"]["unknown"], 2);
}

#[test]
fn a_claim_without_a_class_takes_the_inputs_default_class() {
    // vault-snapshots names no class. Without a default in the input it is
    // unknown; with Longhorn as the default it is not an hcloud claim at all.
    let no_default = replace_once(
        BUNDLE,
        "    storageclass.kubernetes.io/is-default-class: \"true\"\n",
        "    storageclass.kubernetes.io/is-default-class: \"false\"\n",
    );
    let outcome = audit_json(&no_default);
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    assert!(outcome.reasons("vault-snapshot")[0].contains("no default StorageClass"));

    let longhorn_default = replace_once(
        &no_default,
        "    longhorn.io/last-applied-configmap: |",
        "    storageclass.kubernetes.io/is-default-class: \"true\"\n    longhorn.io/last-applied-configmap: |",
    );
    let outcome = audit_json(&longhorn_default);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let names: Vec<String> = outcome.verdicts().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(!names.contains(&"vault-snapshot".to_owned()));
}

#[test]
fn ephemeral_claims_and_pinned_pods_are_consumers() {
    let extra = "---
apiVersion: v1
kind: Pod
metadata:
  name: scratch-guarded
  namespace: tools
spec:
  nodeSelector:
    platform.devantler.tech/baseline-worker: \"true\"
  containers:
  - name: c
    image: busybox:1.37
  volumes:
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          storageClassName: hcloud
          resources:
            requests:
              storage: 1Gi
---
apiVersion: v1
kind: Pod
metadata:
  name: scratch-pinned
  namespace: tools
spec:
  nodeName: prod-worker-1
  nodeSelector:
    platform.devantler.tech/baseline-worker: \"true\"
  containers:
  - name: c
    image: busybox:1.37
  volumes:
  - name: scratch
    ephemeral:
      volumeClaimTemplate:
        spec:
          accessModes: [ReadWriteOnce]
          resources:
            requests:
              storage: 1Gi
";
    let outcome = audit_json(&format!("{BUNDLE}{extra}"));
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    let verdicts = outcome.verdicts();
    assert!(verdicts.contains(&("scratch-guarded".into(), "pass".into())));
    assert!(verdicts.contains(&("scratch-pinned".into(), "unknown".into())));
    assert!(outcome.reasons("scratch-pinned")[0].contains("spec.nodeName pins the pod"));
    let json = outcome.json();
    let guarded = json["consumers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "scratch-guarded")
        .unwrap();
    assert_eq!(guarded["claims"][0], "ephemeral/scratch");
    assert_eq!(guarded["kind"], "Pod");
}

#[test]
fn a_custom_resource_named_like_a_workload_is_not_a_pod_template() {
    let extra = "---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: volcano-job
  namespace: tools
spec:
  volumes:
  - mountPath: /data
    volumeClaimName: scratch
";
    let outcome = audit_json(&format!("{BUNDLE}{extra}"));
    assert_eq!(outcome.code, 0, "{outcome:#?}");
}

// ------------------------------------------------------- finding nothing

#[test]
fn finding_no_consumer_is_not_green() {
    let outcome = run(
        &[
            "--storage-class",
            "hcloud-volumes",
            "--require-label",
            LABEL,
            FIXTURE,
        ],
        None,
    );
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    assert_eq!(
        outcome.stdout,
        "no consumer of storage class hcloud-volumes found; an audit that finds nothing does not pass\n"
    );
    let outcome = run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            "--format",
            "json",
            "-",
        ],
        Some(""),
    );
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    assert_eq!(outcome.json()["summary"]["consumers"], 0);
    assert_eq!(outcome.json()["summary"]["verdict"], "fail");
}

// ---------------------------------------------------------- input errors

#[test]
fn malformed_yaml_names_file_line_and_column() {
    // Break the CronJob's schedule line with an unclosed flow sequence.
    let line = BUNDLE
        .lines()
        .position(|l| l == "  schedule: 30 3 * * *")
        .unwrap()
        + 1;
    let bundle = replace_once(BUNDLE, "  schedule: 30 3 * * *", "  schedule: [30 3 * * *");
    let dir = tempfile::tempdir().unwrap();
    let file = write(dir.path(), "bundle.yaml", &bundle);
    let outcome = run(
        &["--storage-class", "hcloud", "--require-label", LABEL, &file],
        None,
    );
    assert_eq!(outcome.code, 2, "{outcome:#?}");
    assert_eq!(outcome.stdout, "");
    let prefix = format!("error: {file}:");
    assert!(outcome.stderr.starts_with(&prefix), "{outcome:#?}");
    let position: Vec<u64> = outcome.stderr[prefix.len()..]
        .split(':')
        .take(2)
        .map(|n| n.parse().unwrap())
        .collect();
    assert!(position[0] >= line as u64, "{outcome:#?}");
    assert!(position[1] > 0, "{outcome:#?}");
}

#[test]
fn a_wrongly_shaped_field_names_the_document() {
    let bundle = replace_once(
        BUNDLE,
        "      volumes:\n      - name: snapshots\n        persistentVolumeClaim:\n          claimName: vault-snapshots\n",
        "      volumes:\n        snapshots:\n          persistentVolumeClaim:\n            claimName: vault-snapshots\n",
    );
    // The Job's document starts at its `apiVersion` line.
    let job_line = bundle[..bundle.find("apiVersion: batch/v1\nkind: Job").unwrap()]
        .matches('\n')
        .count()
        + 1;
    let outcome = audit_json(&bundle);
    assert_eq!(outcome.code, 2, "{outcome:#?}");
    assert!(
        outcome.stderr.contains(&format!(
            "bundle.yaml:{}:1: Job openbao/vault-snapshot-init: expected `spec.template.spec.volumes` to be a list, found a mapping",
            job_line
        )),
        "{outcome:#?}"
    );
}

#[test]
fn an_unreadable_file_is_an_input_error() {
    let outcome = run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            FIXTURE,
            "/nonexistent/bundle.yaml",
        ],
        None,
    );
    assert_eq!(outcome.code, 2, "{outcome:#?}");
    assert!(
        outcome
            .stderr
            .contains("cannot read /nonexistent/bundle.yaml")
    );
    assert_eq!(outcome.stdout, "");
}

#[test]
fn a_malformed_label_requirement_is_an_input_error() {
    let outcome = run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            "baseline-worker",
            FIXTURE,
        ],
        None,
    );
    assert_eq!(outcome.code, 2, "{outcome:#?}");
    assert!(outcome.stderr.contains("--require-label"), "{outcome:#?}");
}

#[test]
fn missing_files_are_a_usage_error() {
    let outcome = run(
        &["--storage-class", "hcloud", "--require-label", LABEL],
        None,
    );
    assert_eq!(outcome.code, 2, "{outcome:#?}");
}

#[test]
fn text_report_of_the_pre_fix_guards() {
    // The guards as they stood before the fix: OpenBao behind the inert
    // `ksail.io/autoscaled DoesNotExist`, Prometheus with no label at all.
    let bundle = replace_once(
        BUNDLE,
        "              - key: platform.devantler.tech/baseline-worker\n                operator: In\n                values:\n                - \"true\"\n              - key: kubernetes.io/hostname",
        "              - key: ksail.io/autoscaled\n                operator: DoesNotExist\n              - key: kubernetes.io/hostname",
    );
    let bundle = replace_once(
        &bundle,
        "        platform.devantler.tech/baseline-worker: \"true\"\n",
        "",
    );
    let outcome = run(
        &["--storage-class", "hcloud", "--require-label", LABEL, "-"],
        Some(&bundle),
    );
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    insta::assert_snapshot!(outcome.stdout);
}

#[test]
fn a_document_that_is_not_an_api_object_is_malformed() {
    // A Helm values file passed by mistake alongside the bundle.
    let dir = tempfile::tempdir().unwrap();
    let values = write(
        dir.path(),
        "values.yaml",
        "# values\nreplicas: 3\nstorageClass: hcloud\n",
    );
    let outcome = run(
        &[
            "--storage-class",
            "hcloud",
            "--require-label",
            LABEL,
            FIXTURE,
            &values,
        ],
        None,
    );
    assert_eq!(outcome.code, 2, "{outcome:#?}");
    assert!(
        outcome.stderr.contains(&format!(
            "{values}:2:1: expected a Kubernetes object with string `apiVersion` and `kind`"
        )),
        "{outcome:#?}"
    );
}

#[test]
fn an_explicitly_empty_class_is_no_class_not_the_default() {
    // `storageClassName: ""` binds statically; it must not fall back to the
    // default class, so the snapshot workloads stop being hcloud consumers.
    let bundle = replace_once(
        BUNDLE,
        "      storage: 5Gi\n---",
        "      storage: 5Gi\n  storageClassName: \"\"\n---",
    );
    let outcome = audit_json(&bundle);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    let names: Vec<String> = outcome.verdicts().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(!names.contains(&"vault-snapshot-init".to_owned()));
}

// ------------------------------------------------- what it cannot see inside

/// A HelmRelease whose values set the class (OpenBao's data and audit
/// storage) and an operator CR with storage components (Coroot), in the shape
/// `flux build` renders them.
const OPAQUE: &str = "---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: openbao-chart, namespace: openbao}
spec:
  chart: {spec: {chart: openbao}}
  values:
    server:
      dataStorage: {enabled: true, storageClass: CLASS}
      auditStorage: {enabled: true, storageClass: CLASS}
---
apiVersion: coroot.com/v1
kind: Coroot
metadata: {name: coroot-cr, namespace: coroot}
spec:
  storage: {className: CLASS, size: 10Gi}
  clickhouse:
    keeper: {storage: {className: CLASS}}
";

#[test]
fn helm_values_and_custom_resources_naming_the_class_are_unknown_with_paths() {
    let outcome = audit_json(&format!("{BUNDLE}{}", OPAQUE.replace("CLASS", "hcloud")));
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    let json = outcome.json();
    assert_eq!(json["summary"]["verdict"], "fail");
    assert_eq!(json["summary"]["unknown"], 2, "{outcome:#?}");
    let verdicts = outcome.verdicts();
    for name in ["openbao-chart", "coroot-cr"] {
        assert!(
            verdicts.contains(&(name.to_owned(), "unknown".to_owned())),
            "{name}: {verdicts:?}"
        );
    }
    // Every guarded consumer of the bundle still passes.
    for consumer in HCLOUD_CONSUMERS {
        assert!(
            verdicts.contains(&(consumer.to_owned(), "pass".to_owned())),
            "{consumer}"
        );
    }
    assert_eq!(
        outcome.reasons("openbao-chart"),
        [
            "HelmRelease openbao/openbao-chart .spec.values.server.dataStorage.storageClass: names the class, but the bench cannot see the pods it creates",
            "HelmRelease openbao/openbao-chart .spec.values.server.auditStorage.storageClass: names the class, but the bench cannot see the pods it creates",
        ]
    );
    let coroot = outcome.reasons("coroot-cr");
    assert_eq!(coroot.len(), 2, "{coroot:?}");
    assert!(coroot[0].contains("Coroot coroot/coroot-cr .spec.storage.className"));
    assert!(coroot[1].contains(".spec.clickhouse.keeper.storage.className"));
}

#[test]
fn opaque_objects_naming_another_class_leave_the_verdict_alone() {
    // Control: the same objects with another class are not consumers.
    let outcome = audit_json(&format!("{BUNDLE}{}", OPAQUE.replace("CLASS", "longhorn")));
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert_eq!(outcome.verdicts().len(), HCLOUD_CONSUMERS.len());
}
