//! `bench validate` on a corpus of malformed drills: each must exit 2 and
//! name the right line, column and problem; the rendered diagnostics are
//! snapshot-tested so their wording and source context are reviewed.

use crate::common;

use std::collections::BTreeSet;

use common::{bench, root};

/// Every file of `tests/bad-drills/`, the position of its first problem
/// (`line:column` in the file itself, or `file:line:column` in a file it
/// refers to), and a fragment of the message that says what was expected.
const CORPUS: &[(&str, &str, &str)] = &[
    (
        "boot-delay-on-a-replace",
        "12:66",
        "`bootDelay` is the boot time of a recreated control plane; this fault boots no node of its own",
    ),
    (
        "min-ready-on-the-api",
        "13:39",
        "minReady counts one workload's Ready replicas; expected `of: {workload: namespace/Kind/name}`",
    ),
    (
        "min-ready-zero",
        "28:67",
        "minReady is 0, which every moment satisfies; expected at least 1",
    ),
    (
        "from-cluster-twice",
        "13:5",
        "a second `fromCluster:` entry; expected one",
    ),
    (
        "from-cluster-outside-its-namespaces",
        "14:23",
        "`fromCluster:` takes namespace(s) apps from the cluster, not `shop`",
    ),
    (
        "duplicate-object",
        "manifests/duplicate-object.yaml:25:18",
        "duplicate Deployment `default/web`; expected each object once",
    ),
    ("alias-bomb", "17:14", "alias bomb"),
    (
        "unknown-policy-guard",
        "21:13",
        "`hcloud-on-baselin` is not a Kyverno policy among the workloads (did you mean `hcloud-on-baseline`?)",
    ),
    (
        "unknown-policy-rule",
        "29:17",
        "`chek` is not a rule of policy `hcloud-on-baseline` (did you mean `check`?)",
    ),
    (
        "policy-patch-does-not-apply",
        "30:11",
        "the JSON patch does not apply to the policy",
    ),
    (
        "assertion-without-kind",
        "11:11",
        "sets 0 kinds; expected exactly one of rto",
    ),
    (
        "bad-duration-unit",
        "11:28",
        "unknown unit `d` in duration `10d`",
    ),
    (
        "bad-indentation",
        "8:6",
        "did not find expected '-' indicator",
    ),
    ("binary-garbage", "4:9", "not UTF-8 text"),
    (
        "autoscaler-drain-parallelism-zero",
        "7:26",
        "maxDrainParallelism is 0; expected at least 1",
    ),
    (
        "autoscaler-graceful-termination-negative",
        "7:32",
        "invalid u32; expected a whole number, not negative",
    ),
    (
        "autoscaler-delay-without-unit",
        "7:29",
        "duration `10` lacks a unit",
    ),
    ("autoscaler-skip-flag-not-bool", "7:32", "invalid boolean"),
    (
        "cluster-above-max-nodes-total",
        "7:20",
        "starts with 7 nodes",
    ),
    ("comments-only", "1:1", "holds no drill"),
    (
        "count-and-autoscaled",
        "7:7",
        "sets both `count` and `autoscaled`",
    ),
    ("deep-nesting", "11:74", "nests deeper than 64 levels"),
    (
        "duplicate-assertion",
        "13:11",
        "duplicate assertion `quorum`; the first is at line 11",
    ),
    ("duplicate-key", "10:1", "duplicate key `metadata`"),
    (
        "duration-without-unit",
        "12:14",
        "duration `24` lacks a unit",
    ),
    ("empty", "1:1", "holds no drill"),
    (
        "empty-assertions-list",
        "5:9",
        "`empty-verdicts` has no assertions, so it would pass on nothing",
    ),
    (
        "endpoint-holder-without-endpoint",
        "13:17",
        "needs a stable endpoint",
    ),
    (
        "gt-not-an-integer",
        "15:11",
        "operator Gt needs exactly one integer value",
    ),
    ("import-missing", "6:11", "cannot import"),
    (
        "invalid-drill-name",
        "4:9",
        "`CP_Recreate` is not a valid name",
    ),
    (
        "malformed-workload-yaml",
        "manifests/broken.yaml:7:13",
        "expected well-formed YAML: unclosed bracket",
    ),
    ("min-above-max", "11:25", "min 5 above max 2"),
    ("missing-cluster", "3:1", "missing field `cluster`"),
    (
        "missing-workload-file",
        "11:5",
        "`manifests/does-not-exist.yaml` does not exist",
    ),
    (
        "pool-names-collide-with-control-planes",
        "14:20",
        "can make the same names as the control planes",
    ),
    (
        "pool-names-collide-with-another-pool",
        "15:20",
        "can make the same names as pool `workers`",
    ),
    (
        "pin-workload-unknown-node",
        "33:17",
        "`pinWorkload` names `worker-9`, which is not a static node of the cluster",
    ),
    (
        "weaken-all-empty-or-unpaced",
        "22:17",
        "`all` names no change; expected the safeguards taken away",
    ),
    (
        "skip-steps-unknown-or-every-fault",
        "22:17",
        "`skipSteps` names `drain the node`, which is not a step of the drill",
    ),
    (
        "must-fail-unknown-assertion",
        "22:20",
        "`openbao-on-baseline` is not an assertion",
    ),
    (
        "set-values-on-does-not-exist",
        "25:17",
        "`setValues` cannot weaken guard `off-autoscalers`",
    ),
    (
        "negative-count",
        "8:14",
        "expected a whole number, not negative",
    ),
    (
        "no-assertions",
        "5:9",
        "`no-verdict` has no assertions, so it would pass on nothing",
    ),
    ("not-a-mapping", "1:1", "a drill file is a mapping"),
    (
        "pool-above-max-nodes-total",
        "10:14",
        "starts with 12 nodes, above maxNodesTotal 9",
    ),
    (
        "pool-without-size",
        "7:7",
        "sets neither `count` nor `autoscaled`",
    ),
    (
        "probability-out-of-range",
        "13:27",
        "failureProbability is 1.5",
    ),
    (
        "recovery-cycle",
        "15:13",
        "cycle: converge -> restore -> provision -> converge",
    ),
    (
        "recovery-unknown-after",
        "16:15",
        "comes after `provison`, which is not a recovery step",
    ),
    (
        "scale-unknown-workload",
        "16:23",
        "the drill deploys no workload `load/Deployment/burst`; none is defined",
    ),
    ("step-with-two-actions", "11:5", "sets 2 actions"),
    (
        "taint-unknown-node",
        "14:21",
        "`worker-9` is not a node of the cluster",
    ),
    (
        "untaint-unknown-node",
        "14:23",
        "`worker-9` is not a node of the cluster",
    ),
    (
        "cordon-undefined-pool",
        "15:15",
        "`gpu` is not a pool of the cluster",
    ),
    (
        "taint-key-invalid",
        "16:12",
        "taint key `maintenance window` is not a qualified name",
    ),
    (
        "taint-value-invalid",
        "17:14",
        "taint value `-yes-` is not a valid label value",
    ),
    ("taint-effect-unknown", "17:15", "unknown variant `NoEvict`"),
    (
        "label-value-invalid",
        "16:12",
        "label `tier` has value `gold plated`, not a valid label value",
    ),
    (
        "label-sets-nothing",
        "15:15",
        "the label step sets and removes nothing",
    ),
    (
        "annotate-set-and-removed",
        "17:15",
        "annotation `example.com/owner` is both set and removed",
    ),
    (
        "evict-unknown-workload",
        "14:23",
        "the drill deploys no workload `apps/Deployment/web`",
    ),
    (
        "pdb-step-unknown-budget",
        "18:17",
        "the drill has no PodDisruptionBudget `default/wbe` (did you mean `default/web`?)",
    ),
    (
        "pdb-step-both-bounds",
        "18:63",
        "a pdb step sets both `minAvailable` and `maxUnavailable`",
    ),
    ("pdb-step-negative", "18:44", "-1 is negative"),
    (
        "latency-out-of-order",
        "12:17",
        "podStartup: latency min 1s / median 9s / p99 5s is out of order",
    ),
    (
        "latency-median-at-floor",
        "12:15",
        "nodeBoot: latency median 2m equals its min but p99 5m is above it",
    ),
    ("latency-missing-p99", "12:26", "missing field `p99`"),
    (
        "pdb-step-over-100-percent",
        "18:46",
        "`150%` is not an integer >= 0 or a percentage from \"0%\" to \"100%\"",
    ),
    (
        "priority-class-value-too-high",
        "manifests/priority-class-value-too-high.yaml:5:8",
        "PriorityClass `platform-critical`: value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
    ),
    (
        "priority-class-two-global-defaults",
        "manifests/priority-class-two-global-defaults.yaml:13:16",
        "PriorityClass `batch`: is forbidden: PriorityClass standard is already marked as default. Only one default can exist",
    ),
    (
        "priority-class-system-prefix",
        "manifests/priority-class-system-prefix.yaml:4:9",
        "priority class names with 'system-' prefix are reserved for system use only. error: system-platform is not a known system priority class",
    ),
    (
        "apply-unknown-priority-class",
        "manifests/apply-unknown-priority-class.yaml:11:26",
        "Deployment `batch`: spec.template.spec.priorityClassName names PriorityClass `batch-low`, which does not exist",
    ),
    (
        "apply-missing-file",
        "23:19",
        "manifest file `manifests/apply-nowhere.yaml` does not exist",
    ),
    (
        "apply-changes-template",
        "23:19",
        "changes the pod template of `default/Deployment/web`, which the drill already has",
    ),
    (
        "apply-kyverno-policy",
        "manifests/apply-policy.yaml:3:7",
        "a Kyverno policy applied by a step is not modelled",
    ),
    (
        "delete-unknown-kind",
        "23:20",
        "a delete step cannot delete a `Service`; expected one of Deployment,",
    ),
    (
        "delete-never-created",
        "23:38",
        "the drill has no Deployment `default/wbe` at this step (did you mean `default/web`?)",
    ),
    (
        "delete-twice",
        "24:38",
        "the drill has no Deployment `default/web` at this step",
    ),
    (
        "delete-node-object-empty-pool",
        "14:32",
        "pool `spare` is a static pool of 0 nodes, so the step has no node to target",
    ),
    ("two-documents", "11:1", "more than one YAML document"),
    ("unclosed-flow", "10:9", "unclosed bracket"),
    (
        "undefined-guard",
        "16:16",
        "`hcloud-on-baseline` is not a guard",
    ),
    (
        "undefined-node",
        "13:17",
        "`workers-7` is not a node of the cluster",
    ),
    (
        "undefined-pool",
        "13:17",
        "`autoscale-cx63` is not a pool of the cluster",
    ),
    (
        "undefined-storage-class",
        "13:33",
        "`hcloud-ssd` is not a storage class",
    ),
    (
        "unknown-fault",
        "12:7",
        "unknown variant `rebootNode`, expected one of deleteNode",
    ),
    (
        "unknown-nested-field",
        "10:7",
        "unknown field `lables`, expected one of name",
    ),
    ("unknown-operator", "15:33", "unknown variant `Equals`"),
    ("unknown-placeholder", "10:20", "unknown placeholder `{i}`"),
    ("unknown-server-type", "9:19", "unknown server type `cx63`"),
    ("unknown-top-field", "5:1", "unknown field `clusters`"),
    ("wait-until-without-timeout", "12:14", "has no `timeout`"),
    (
        "wrong-api-version",
        "1:13",
        "unsupported apiVersion `drillbench/v1`",
    ),
    (
        "workload-without-kind",
        "manifests/no-kind.yaml:6:1",
        "a Kubernetes object without kind",
    ),
    ("wrong-kind", "2:7", "unsupported kind `Scenario`"), // Issue 19: refused by `validate` instead of exit 3 at run time or silence.
    (
        "empty-selector",
        "manifests/empty-selector.yaml:7:13",
        "DaemonSet `web` has an empty spec.selector",
    ),
    (
        "fault-on-empty-pool",
        "16:17",
        "pool `spare` is a static pool of 0 nodes",
    ),
    (
        "inline-negative-replicas",
        "12:5",
        "inline workload: StatefulSet `db` has spec.replicas -3",
    ),
    (
        "invalid-label-value",
        "manifests/invalid-label-value.yaml:11:32",
        "labels.tier = \"front end\", not a valid label value",
    ),
    (
        "negative-replicas",
        "manifests/negative-replicas.yaml:7:13",
        "spec.replicas -1; expected a number greater than or equal to 0",
    ),
    (
        "no-containers",
        "manifests/no-containers.yaml:13:19",
        "no containers in spec.template.spec.containers",
    ),
    (
        "no-control-plane-ordinals",
        "6:29",
        "control-plane ordinals are empty",
    ),
    (
        "no-selector",
        "manifests/no-selector.yaml:7:3",
        "Deployment `web` has no spec.selector",
    ),
    (
        "pdb-policy-v1beta1",
        "manifests/pdb-policy-v1beta1.yaml:6:13",
        "apiVersion `policy/v1beta1`, which the API server does not serve",
    ),
    (
        "pool-removed-twice",
        "17:26",
        "pool `batch` was already removed by the step at line 15",
    ),
    (
        "selector-mismatch",
        "manifests/selector-mismatch.yaml:8:13",
        "Deployment `web`: `selector` does not match template `labels`",
    ),
    (
        "statefulset-apps-v2",
        "manifests/statefulset-apps-v2.yaml:1:13",
        "StatefulSet `web` has apiVersion `apps/v2`",
    ),
    (
        "statefulset-selector-mismatch",
        "manifests/statefulset-selector-mismatch.yaml:8:13",
        "StatefulSet `web`: `selector` does not match template `labels`",
    ),
    (
        "quantity-double-dot",
        "manifests/quantity-double-dot.yaml:19:43",
        "Deployment `web`: spec.template.spec.containers[0].resources.requests.",
    ),
    (
        "quantity-negative-cpu",
        "manifests/quantity-negative-cpu.yaml:19:29",
        "Deployment `web`: spec.template.spec.containers[0].resources.requests.",
    ),
    (
        "quantity-unknown-suffix",
        "manifests/quantity-unknown-suffix.yaml:19:43",
        "Deployment `web`: spec.template.spec.containers[0].resources.requests.",
    ),
    (
        "quantity-empty",
        "manifests/quantity-empty.yaml:19:29",
        "Deployment `web`: spec.template.spec.containers[0].resources.requests.",
    ),
    (
        "quantity-not-a-scalar",
        "manifests/quantity-not-a-scalar.yaml:19:29",
        "Deployment `web` is not a valid apps/v1 Deployment: spec.template.spec",
    ),
    (
        "storage-double-dot",
        "manifests/storage-double-dot.yaml:10:25",
        "PersistentVolumeClaim `data`: spec.resources.requests.storage: quantit",
    ),
    (
        "storage-negative",
        "manifests/storage-negative.yaml:10:25",
        "PersistentVolumeClaim `data`: spec.resources.requests.storage: `-1` mu",
    ),
    (
        "storage-1e100",
        "manifests/storage-1e100.yaml:10:25",
        "PersistentVolumeClaim `data`: spec.resources.requests.storage: `1e+100",
    ),
    (
        "storage-zero",
        "manifests/storage-zero.yaml:10:25",
        "PersistentVolumeClaim `data`: spec.resources.requests.storage: `0` mus",
    ),
    (
        "storage-missing",
        "manifests/storage-missing.yaml:7:3",
        "PersistentVolumeClaim `data`: spec.resources.requests.storage: Require",
    ),
    (
        "storage-class-unknown",
        "manifests/storage-class-unknown.yaml:8:21",
        "PersistentVolumeClaim `data`: spec.storageClassName names StorageClass",
    ),
    (
        "claim-template-class-unknown",
        "manifests/claim-template-class-unknown.yaml:16:27",
        "StatefulSet `web`: spec.volumeClaimTemplates[0].spec.storageClassName ",
    ),
    (
        "claim-template-bad-storage",
        "manifests/claim-template-bad-storage.yaml:17:41",
        "StatefulSet `web`: spec.volumeClaimTemplates[0].spec.resources.request",
    ),
    (
        "pdb-both-forms",
        "manifests/pdb-both-forms.yaml:8:19",
        "PodDisruptionBudget `web`: minAvailable and maxUnavailable cannot be b",
    ),
    (
        "pdb-bad-percent",
        "manifests/pdb-bad-percent.yaml:7:19",
        "PodDisruptionBudget `web`: maxUnavailable must be an integer or a perc",
    ),
    (
        "pdb-bogus-operator",
        "manifests/pdb-bogus-operator.yaml:9:5",
        "PodDisruptionBudget `web`: invalid selector: invalid expression operat",
    ),
    (
        "selector-bogus-operator",
        "manifests/selector-bogus-operator.yaml:10:45",
        "Deployment `web`: spec.selector.matchExpressions[0].operator: not a va",
    ),
    (
        "selector-in-without-values",
        "manifests/selector-in-without-values.yaml:10:5",
        "Deployment `web`: `selector` does not match template `labels`; expecte",
    ),
    (
        "node-affinity-no-terms",
        "manifests/node-affinity-no-terms.yaml:18:32",
        "nodeSelectorTerms: Required value: must have at least one node selector term",
    ),
    (
        "spread-max-skew-zero",
        "manifests/spread-max-skew-zero.yaml:16:21",
        "topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
    ),
    (
        "request-above-limit",
        "manifests/request-above-limit.yaml:19:23",
        "Invalid value: \"1500m\": must be less than or equal to cpu limit of 1",
    ),
    (
        "selector-exists-with-values",
        "manifests/selector-exists-with-values.yaml:11:61",
        "Deployment `web`: spec.selector.matchExpressions[0].values: may not be",
    ),
    (
        "node-affinity-bogus-operator",
        "manifests/node-affinity-bogus-operator.yaml:19:58",
        "Deployment `web`: spec.template.spec.affinity.nodeAffinity.requiredDur",
    ),
    (
        "node-affinity-gt-two-values",
        "manifests/node-affinity-gt-two-values.yaml:19:70",
        "Deployment `web`: spec.template.spec.affinity.nodeAffinity.requiredDur",
    ),
    (
        "preferred-affinity-bogus-operator",
        "manifests/preferred-affinity-bogus-operator.yaml:20:58",
        "Deployment `web`: spec.template.spec.affinity.nodeAffinity.preferredDu",
    ),
    (
        "pod-anti-affinity-bogus-operator",
        "manifests/pod-anti-affinity-bogus-operator.yaml:20:57",
        "Deployment `web`: spec.template.spec.affinity.podAntiAffinity.required",
    ),
    (
        "spread-bogus-operator",
        "manifests/spread-bogus-operator.yaml:20:53",
        "Deployment `web`: spec.template.spec.topologySpreadConstraints[0].labe",
    ),
    (
        "toleration-bogus-operator",
        "manifests/toleration-bogus-operator.yaml:16:9",
        "Deployment `web`: tolerations[0]: unknown operator `Bogus`; expected E",
    ),
    (
        "replicas-not-a-number",
        "manifests/replicas-not-a-number.yaml:8:13",
        "Deployment `web` is not a valid apps/v1 Deployment: spec.replicas: inv",
    ),
    (
        "containers-not-a-list",
        "manifests/containers-not-a-list.yaml:15:19",
        "Deployment `web` has no containers in spec.template.spec.containers; e",
    ),
    (
        "container-without-name",
        "manifests/container-without-name.yaml:16:11",
        "Deployment `web`: spec.template.spec.containers[0].name `` is not a va",
    ),
    (
        "labels-not-a-mapping",
        "manifests/labels-not-a-mapping.yaml:6:11",
        "Deployment `web` is not a valid apps/v1 Deployment: metadata.labels: i",
    ),
    (
        "port-not-a-number",
        "manifests/port-not-a-number.yaml:18:35",
        "Deployment `web` is not a valid apps/v1 Deployment: spec.template.spec",
    ),
    (
        "kind-foo-core",
        "manifests/kind-foo-core.yaml:2:7",
        "Foo `web`: the core group has no kind `Foo` in `v1` (a custom resource",
    ),
    (
        "kind-foo-apps",
        "manifests/kind-foo-apps.yaml:2:7",
        "Foo `web`: the apps group has no kind `Foo` in `apps/v1` (a custom res",
    ),
    (
        "kind-typo",
        "manifests/kind-typo.yaml:2:7",
        "Deploymnet `web`: the apps group has no kind `Deploymnet` in `apps/v1`",
    ),
    (
        "batch-v2",
        "manifests/batch-v2.yaml:1:13",
        "Job `web`: the API server does not serve apiVersion `batch/v2` (the ba",
    ),
    (
        "core-v2",
        "manifests/core-v2.yaml:1:13",
        "ConfigMap `settings`: the API server does not serve apiVersion `v2` (t",
    ),
    (
        "malformed-api-version",
        "manifests/malformed-api-version.yaml:1:13",
        "Deployment `web` has apiVersion `apps/v1/beta`, which the API server d",
    ),
    (
        "name-uppercase",
        "manifests/name-uppercase.yaml:4:9",
        "Deployment `Web`: metadata.name `Web` is not a valid name; expected at",
    ),
    (
        "name-underscore",
        "manifests/name-underscore.yaml:4:9",
        "Deployment `web_front`: metadata.name `web_front` is not a valid name;",
    ),
    (
        "namespace-name-invalid",
        "manifests/namespace-name-invalid.yaml:3:18",
        "Namespace `Apps`: metadata.name `Apps` is not a valid name; expected a",
    ),
    (
        "service-name-digit",
        "manifests/service-name-digit.yaml:3:18",
        "Service `1web`: metadata.name `1web` is not a valid name; expected at ",
    ),
    (
        "namespace-field-invalid",
        "manifests/namespace-field-invalid.yaml:5:14",
        "Deployment `web`: metadata.namespace `Apps_Prod` is not a valid namesp",
    ),
    (
        "label-key-invalid",
        "manifests/label-key-invalid.yaml:6:29",
        "Deployment `web`: metadata.labels key `-tier` is not a qualified name;",
    ),
    (
        "label-key-bad-prefix",
        "manifests/label-key-bad-prefix.yaml:6:42",
        "Deployment `web`: metadata.labels key `Example.com/tier` is not a qual",
    ),
    (
        "annotation-key-invalid",
        "manifests/annotation-key-invalid.yaml:7:26",
        "Deployment `web`: metadata.annotations key `a/b/c` is not a qualified ",
    ),
    (
        "selector-label-key-invalid",
        "manifests/selector-label-key-invalid.yaml:10:5",
        "Deployment `web`: `selector` does not match template `labels`; expecte",
    ),
    (
        "priority-class-unknown",
        "manifests/priority-class-unknown.yaml:15:26",
        "Deployment `web`: spec.template.spec.priorityClassName names PriorityC",
    ),
    (
        "budget-replicas-ten-million",
        "manifests/budget-replicas-ten-million.yaml:8:13",
        "the workloads ask for 10000000 pods at once by this object, above the ",
    ),
    (
        "budget-pool-million-nodes",
        "9:14",
        "the cluster can grow to 1000003 nodes with pool `workers`, above the b",
    ),
    (
        "budget-wait-100000h",
        "18:5",
        "the steps let 100000h of drill time pass by this one, above the budget",
    ),
    (
        "budget-scale-million",
        "18:5",
        "the step scales to 1000000 replicas, above the budget `budgets.pods` o",
    ),
    (
        "budget-recovery-attempts",
        "22:20",
        "the recovery step allows 100000 attempts, above the budget `budgets.re",
    ),
    (
        "budget-lowered-pods",
        "manifests/budget-lowered-pods.yaml:8:13",
        "the workloads ask for 5 pods at once by this object, above the budget ",
    ),
    (
        "duration-unit-repeated",
        "12:17",
        "unit `h` in duration `1h1h` repeats or follows a smaller unit; expected each unit at most once, largest first",
    ),
    (
        "duration-units-out-of-order",
        "12:17",
        "unit `h` in duration `30m1h` repeats or follows a smaller unit",
    ),
    (
        "duration-timeout-out-of-order",
        "12:47",
        "unit `m` in duration `1s1m` repeats or follows a smaller unit",
    ),
    (
        "namespace-undeclared",
        "manifests/namespace-undeclared.yaml:5:14",
        "Deployment `web`: namespace `apps` does not exist (did you mean `app`?): no Namespace object among the workloads declares it, and the API server's NamespaceLifecycle admission refuses",
    ),
    (
        "namespace-undeclared-inline",
        "12:5",
        "inline workload: Deployment `api`: namespace `shop` does not exist",
    ),
    (
        "namespace-undeclared-pdb",
        "manifests/namespace-undeclared-pdb.yaml:30:14",
        "PodDisruptionBudget `web`: namespace `web-apps` does not exist",
    ),
    (
        "namespace-undeclared-custom-resource",
        "12:5",
        "HelmRelease `podinfo`: namespace `flux-system` does not exist",
    ),
    (
        "networkpolicy-selector-not-a-mapping",
        "manifests/networkpolicy-selector-not-a-mapping.yaml:7:16",
        "is not a valid networking.k8s.io/v1 NetworkPolicy: spec.podSelector: invalid type",
    ),
    (
        "rolebinding-subject-name-number",
        "manifests/rolebinding-subject-name-number.yaml:12:11",
        "is not a valid rbac.authorization.k8s.io/v1 RoleBinding: subjects[0].name: invalid type",
    ),
    (
        "custom-resource-labels-a-list",
        "manifests/custom-resource-labels-a-list.yaml:7:5",
        "HelmRelease `podinfo` is not an object with valid metadata: metadata.labels: invalid type: sequence",
    ),
    (
        "hpa-min-replicas-text",
        "manifests/hpa-min-replicas-text.yaml:8:16",
        "is not a valid autoscaling/v2 HorizontalPodAutoscaler: spec.minReplicas",
    ),
    (
        "budget-daemonsets-times-nodes",
        "manifests/budget-daemonsets-times-nodes.yaml:35:7",
        "the workloads ask for 120009 pods at once by this object (3 DaemonSets so far, each a pod on every one of up to 40003 nodes), above the budget `budgets.pods`",
    ),
];

#[test]
fn every_malformed_drill_exits_2_at_the_right_place() {
    for (name, location, fragment) in CORPUS {
        let path = format!("tests/bad-drills/{name}.yaml");
        let run = bench(&["validate", &path]);
        assert_eq!(run.code, 2, "{name}: exit code\n{}", run.stderr);
        let header = run.stderr.lines().next().unwrap_or_default();
        let expected = if location.contains(".yaml:") {
            format!("error: tests/bad-drills/{location}: ")
        } else {
            format!("error: {path}:{location}: ")
        };
        assert!(
            header.starts_with(&expected),
            "{name}: expected a diagnostic at {location}, got: {header}"
        );
        assert!(
            header.contains(fragment),
            "{name}: expected the message to say `{fragment}`, got: {header}"
        );
        assert!(
            run.stdout.is_empty(),
            "{name}: nothing on stdout for an invalid drill"
        );
        assert!(!run.stderr.contains("panicked"), "{name}: panicked");
    }
}

#[test]
fn the_corpus_table_covers_every_file() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(root().join("tests/bad-drills"))
        .expect("corpus folder")
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".yaml")
                .map(str::to_owned)
        })
        .collect();
    let in_table: BTreeSet<String> = CORPUS.iter().map(|c| c.0.to_owned()).collect();
    assert_eq!(on_disk, in_table);
    assert!(on_disk.len() >= 108, "{} files", on_disk.len());
}

#[test]
fn rendered_diagnostics_show_the_source() {
    insta::glob!("..", "bad-drills/*.yaml", |path| {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let relative = format!("tests/bad-drills/{name}");
        let run = bench(&["validate", &relative]);
        insta::assert_snapshot!(run.stderr);
    });
}

#[test]
fn every_problem_of_a_file_is_reported_in_one_pass() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("many.yaml");
    std::fs::write(
        &path,
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: Many_Problems
cluster:
  pools:
    - name: burst
      autoscaled: {min: 3, max: 1}
      serverType: cx53
assertions:
  - name: a
    quorum: {}
  - name: a
    quorum: {}
",
    )
    .expect("write");
    let run = bench(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(run.code, 2);
    let headers: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error: "))
        .collect();
    assert_eq!(headers.len(), 3, "{}", run.stderr);
    assert!(headers[0].contains(":4:9: drill name `Many_Problems`"));
    assert!(headers[1].contains(":8:25: pool `burst` has min 3 above max 1"));
    assert!(headers[2].contains(":13:11: duplicate assertion `a`"));
}

#[test]
fn a_valid_drill_exits_0_and_an_unreadable_one_2() {
    let run = bench(&["validate", "scenarios/cp-recreate.yaml"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("valid drill `cp-recreate`"));

    let run = bench(&["validate", "tests/bad-drills/no-such-file.yaml"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("tests/bad-drills/no-such-file.yaml: cannot read the file")
    );

    // One bad file among good ones still fails the whole command.
    let run = bench(&[
        "validate",
        "scenarios/cp-recreate.yaml",
        "tests/bad-drills/empty.yaml",
    ]);
    assert_eq!(run.code, 2);
}

#[test]
fn a_huge_file_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("huge.yaml");
    let line = "# padding padding padding padding padding padding padding padding\n";
    let text = line.repeat(50 * 1024 * 1024 / line.len());
    std::fs::write(&path, text).expect("write");
    let run = bench(&["validate", path.to_str().expect("utf-8 path")]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("larger than 1048576 bytes"),
        "{}",
        run.stderr
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(bench(&["validate"]).code, 2);
    assert_eq!(bench(&["no-such-command"]).code, 2);
    assert_eq!(
        bench(&["run", "cp-recreate", "--seed", "minus-one"]).code,
        2
    );
    assert_eq!(bench(&["run", "cp-recreate", "--runs", "0"]).code, 2);
    assert_eq!(bench(&["--help"]).code, 0);
}

#[test]
fn validate_takes_built_in_names_as_run_does() {
    let run = bench(&["validate", "cp-recreate", "node-loss"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("cp-recreate: valid drill `cp-recreate`"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("node-loss: valid drill `node-loss`"),
        "{}",
        run.stdout
    );

    let run = bench(&["validate", "no-such-drill"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with(
            "error: no drill named `no-such-drill`; expected a drill file or one of: "
        ),
        "{}",
        run.stderr
    );
}

/// A pipe would block the read until something writes to it, so a drill
/// or manifest that is a FIFO, a folder or a device is refused at once
/// (issue 19: `validate` of a FIFO blocked forever).
#[test]
fn a_pipe_a_folder_or_a_device_is_refused_not_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("drill.yaml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    for path in [fifo.to_str().expect("utf-8"), "scenarios/", "/dev/zero"] {
        let run = bench(&["validate", path]);
        assert_eq!(run.code, 2, "{path}: {}", run.stderr);
        assert!(
            run.stderr.contains("not a regular file"),
            "{path}: {}",
            run.stderr
        );
    }

    // A drill whose workloads are a pipe.
    let harness = root().join("harness");
    let text = std::fs::read_to_string(root().join("scenarios/node-loss.yaml"))
        .expect("built-in drill")
        .replace("../harness/ksail", &format!("{}/ksail", harness.display()))
        .replace(
            "../harness/manifests/production.yaml",
            fifo.to_str().expect("utf-8"),
        );
    let drill = dir.path().join("piped.yaml");
    std::fs::write(&drill, text).expect("write");
    let run = bench(&["validate", drill.to_str().expect("utf-8")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("not a regular file"), "{}", run.stderr);
}

/// `bench run` refuses what `validate` refuses, before anything runs or is
/// written (issue 19: a pool removed twice and a fault on an empty pool
/// exited 3 mid-run; an `apps/v2` StatefulSet ran as if absent).
#[test]
fn run_refuses_the_issue_19_drills_before_writing_a_report() {
    for name in [
        "pool-removed-twice",
        "fault-on-empty-pool",
        "statefulset-apps-v2",
        "no-assertions",
    ] {
        let out = tempfile::tempdir().expect("tempdir");
        let reports = out.path().join("reports");
        let path = format!("tests/bad-drills/{name}.yaml");
        let run = bench(&["run", &path, "--out", reports.to_str().expect("utf-8 path")]);
        assert_eq!(run.code, 2, "{name}: {}", run.stderr);
        assert!(
            run.stderr.starts_with("error: tests/bad-drills/"),
            "{name}: {}",
            run.stderr
        );
        assert!(!reports.exists(), "{name}: a report folder was written");
    }
}

/// The scheduler_perf-shaped drills the scale benchmark loads stay valid
/// drills (the benchmark would otherwise measure a refusal).
#[test]
fn every_scheduler_perf_drill_validates() {
    let dir = crate::common::root().join("harness/scale/scheduler-perf");
    let mut seen = 0;
    for workload in std::fs::read_dir(&dir).expect("the suite") {
        let workload = workload.expect("entry").path();
        if !workload.is_dir() {
            continue;
        }
        for size in ["500", "5000", "10000"] {
            let drill = workload.join(format!("{size}-nodes.yaml"));
            let run = crate::common::bench(&["validate", drill.to_str().unwrap()]);
            assert_eq!(run.code, 0, "{}: {}", drill.display(), run.stderr);
            seen += 1;
        }
    }
    assert_eq!(seen, 24, "eight workloads at three sizes");
}
