//! `bench audit placement --consumers MAP`: a consumer map says where a
//! chart's values or an operator's resource keep each component's storage
//! class and placement, so a HelmRelease or custom resource that names the
//! class is judged pass/fail instead of `unknown` (issue 16, item 2). The
//! maps under `harness/consumer-maps/` are the ones tested here.

use crate::audit_support::{self, LABEL, Outcome};
use crate::common::root;

/// Required node affinity on the baseline label, as a pod spec carries it,
/// indented for a values block at `indent` spaces.
fn baseline_affinity(indent: usize) -> String {
    let pad = " ".repeat(indent);
    format!(
        "{pad}affinity:\n{pad}  nodeAffinity:\n{pad}    requiredDuringSchedulingIgnoredDuringExecution:\n\
         {pad}      nodeSelectorTerms:\n{pad}        - matchExpressions:\n\
         {pad}            - {{key: platform.devantler.tech/baseline-worker, operator: In, values: [\"true\"]}}\n"
    )
}

/// OpenBao's HelmRelease and a Coroot resource, the placement of each
/// component given by `openbao` and `keeper` (lines inside their blocks).
fn platform(openbao: &str, keeper: &str) -> String {
    format!(
        "---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {{name: openbao, namespace: openbao}}
spec:
  chart: {{spec: {{chart: openbao}}}}
  values:
    server:
      dataStorage: {{enabled: true, storageClass: hcloud}}
      auditStorage: {{enabled: true, storageClass: hcloud}}
{openbao}---
apiVersion: coroot.com/v1
kind: Coroot
metadata: {{name: coroot, namespace: coroot}}
spec:
  storage: {{className: longhorn}}
  clickhouse:
    keeper:
      storage: {{className: hcloud}}
{keeper}"
    )
}

fn audit(bundle: &str, maps: &[&str]) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    let file = audit_support::write(dir.path(), "platform.yaml", bundle);
    let maps: Vec<String> = maps
        .iter()
        .map(|m| {
            root()
                .join("harness/consumer-maps")
                .join(m)
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut args = vec![
        "--storage-class",
        "hcloud",
        "--require-label",
        LABEL,
        "--format",
        "json",
    ];
    for map in &maps {
        args.extend(["--consumers", map.as_str()]);
    }
    args.push(file.as_str());
    audit_support::run(&args, None)
}

#[test]
fn mapped_components_guarded_by_the_label_pass() {
    let bundle = platform(&baseline_affinity(6), &baseline_affinity(6));
    let outcome = audit(&bundle, &["openbao.yaml", "coroot.yaml"]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert_eq!(
        outcome.verdicts(),
        [
            ("coroot (clickhouse-keeper)".to_owned(), "pass".to_owned()),
            ("openbao (server-audit)".to_owned(), "pass".to_owned()),
            ("openbao (server-data)".to_owned(), "pass".to_owned()),
        ]
    );
    // Control: without the maps the same objects are unknown.
    let outcome = audit(&bundle, &[]);
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    assert_eq!(
        outcome.verdicts(),
        [
            ("coroot".to_owned(), "unknown".to_owned()),
            ("openbao".to_owned(), "unknown".to_owned()),
        ]
    );
}

#[test]
fn a_mapped_component_without_the_label_fails_with_its_reason() {
    let bundle = platform(&baseline_affinity(6), "");
    let outcome = audit(&bundle, &["openbao.yaml", "coroot.yaml"]);
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    let verdicts = outcome.verdicts();
    assert!(verdicts.contains(&("coroot (clickhouse-keeper)".to_owned(), "fail".to_owned())));
    assert!(verdicts.contains(&("openbao (server-data)".to_owned(), "pass".to_owned())));
    let reasons = outcome.reasons("coroot (clickhouse-keeper)");
    assert!(
        reasons[0].contains("no required placement rule"),
        "{reasons:?}"
    );
}

#[test]
fn a_templated_placement_or_an_unmapped_mention_stays_unknown() {
    // The chart takes `server.affinity` as a template string too.
    let templated = "      affinity: |\n        podAntiAffinity: {}\n";
    let outcome = audit(
        &platform(templated, &baseline_affinity(6)),
        &["openbao.yaml", "coroot.yaml"],
    );
    assert_eq!(outcome.code, 1, "{outcome:#?}");
    let reasons = outcome.reasons("openbao (server-data)");
    assert!(reasons[0].contains("is not an object"), "{reasons:?}");
    // Only the OpenBao map: Coroot's mention is covered by nothing.
    let outcome = audit(
        &platform(&baseline_affinity(6), &baseline_affinity(6)),
        &["openbao.yaml"],
    );
    assert!(
        outcome
            .verdicts()
            .contains(&("coroot".to_owned(), "unknown".to_owned())),
        "{outcome:#?}"
    );
    // A map whose `where` does not hold (another chart) judges nothing.
    let other_chart = platform(&baseline_affinity(6), &baseline_affinity(6))
        .replace("chart: openbao}", "chart: vault}");
    let outcome = audit(&other_chart, &["openbao.yaml", "coroot.yaml"]);
    assert!(
        outcome
            .verdicts()
            .contains(&("openbao".to_owned(), "unknown".to_owned())),
        "{outcome:#?}"
    );
}

#[test]
fn a_malformed_map_is_exit_2_with_its_location() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = audit_support::write(dir.path(), "platform.yaml", &platform("", ""));
    for (text, expected) in [
        (
            "apiVersion: drillbench.dev/v1alpha1\nkind: ConsumerMap\nspec:\n  consumers:\n    - {apiVersion: coroot.com/v1, kind: Coroot, components: [{name: c, storageClass: spec.x}]}\n",
            "is not a field path",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nspec: {consumers: []}\n",
            "kind: ConsumerMap",
        ),
        (
            "apiVersion: drillbench.dev/v1alpha1\nkind: ConsumerMap\nspec: {consumers: [{kind: Coroot}]}\n",
            "missing field",
        ),
    ] {
        let map = audit_support::write(dir.path(), "map.yaml", text);
        let outcome = audit_support::run(
            &[
                "--storage-class",
                "hcloud",
                "--require-label",
                LABEL,
                "--consumers",
                map.as_str(),
                bundle.as_str(),
            ],
            None,
        );
        assert_eq!(outcome.code, 2, "{text}: {outcome:#?}");
        assert!(outcome.stderr.contains("map.yaml:1:1"), "{outcome:#?}");
        assert!(
            outcome.stderr.contains(expected),
            "{expected}: {outcome:#?}"
        );
    }
}
