//! Invariants of the simulator over random clusters, workloads, faults and
//! seeds: a pod is never bound to two nodes, a single-attach volume is never
//! attached to two nodes, no eviction takes a budget below what it
//! protects, no pod is bound to a node its required affinity refuses, the
//! autoscaler never drains two non-empty nodes at once, no pod is
//! preempted by a pod of lower or equal priority nor by a
//! `preemptionPolicy: Never` pod, no etcd learner is promoted without
//! quorum, and every run replays byte for byte.

use std::collections::{BTreeMap, BTreeSet};

use drillbench::run::run_drill;
use drillbench_backend::sim::provision;
use drillbench_model::drill::Drill;
use drillbench_model::k8s::node_selector::RequiredNodeAffinity;
use drillbench_model::scenario::SourceFile;
use drillbench_observe::EventKind;
use drillbench_report::DrillReport;
use k8s_openapi::api::core::v1::{Node, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Workload {
    stateful: bool,
    replicas: u32,
    memory_mi: u32,
    placement: u8,
    budget: Option<u8>,
    /// Its pods repel (required anti-affinity, per node) the pods of the
    /// workload of this index, modulo the number of workloads.
    repels: Option<u8>,
    /// Its pods spread per node with `DoNotSchedule` and this `maxSkew`
    /// (1 or 2).
    spread: Option<u8>,
    /// Its PriorityClass, one of [`CLASSES`] by this index modulo their
    /// number (none: the global default).
    priority: Option<u8>,
}

/// The PriorityClasses every random drill declares: (name, value,
/// preemptionPolicy); `standard` is the global default.
const CLASSES: [(&str, i32, &str); 4] = [
    ("low", 10, "PreemptLowerPriority"),
    ("standard", 100, "PreemptLowerPriority"),
    ("high", 1000, "PreemptLowerPriority"),
    ("high-never", 1000, "Never"),
];

impl Workload {
    /// Its priority value and whether it may preempt.
    fn priority(&self) -> (i32, bool) {
        let (_, value, policy) = match self.priority {
            Some(i) => CLASSES[usize::from(i) % CLASSES.len()],
            None => CLASSES[1],
        };
        (value, policy != "Never")
    }

    /// The `priorityClassName:` line of its pod spec, or nothing.
    fn priority_yaml(&self) -> String {
        self.priority.map_or(String::new(), |i| {
            format!(
                "      priorityClassName: {}\n",
                CLASSES[usize::from(i) % CLASSES.len()].0
            )
        })
    }
}

impl Workload {
    fn max_skew(&self) -> Option<usize> {
        self.spread.map(|s| 1 + usize::from(s % 2))
    }
}

#[derive(Debug, Clone)]
enum Step {
    Crash,
    Delete(bool),
    Scale(usize, u32),
    Wait(u32),
}

/// The node affinity each placement choice writes, as YAML under
/// `affinity:`.
fn placement_yaml(choice: u8) -> &'static str {
    match choice % 4 {
        0 => "",
        1 => {
            "nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: platform.devantler.tech/baseline-worker, operator: In, values: [\"true\"]}]}]}}"
        }
        2 => {
            "nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: ksail.io/autoscaled, operator: DoesNotExist}]}]}}"
        }
        _ => {
            "nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, preference: {matchExpressions: [{key: platform.devantler.tech/baseline-worker, operator: In, values: [\"true\"]}]}}]}"
        }
    }
}

/// The workload a workload's pods repel, if any.
fn repelled(workloads: &[Workload], i: usize) -> Option<usize> {
    workloads[i]
        .repels
        .map(|j| usize::from(j) % workloads.len())
}

/// The `affinity:` line of workload `i`'s pod spec, or nothing.
fn affinity_yaml(workloads: &[Workload], i: usize) -> String {
    let mut parts = Vec::new();
    let node = placement_yaml(workloads[i].placement);
    if !node.is_empty() {
        parts.push(node.to_owned());
    }
    if let Some(j) = repelled(workloads, i) {
        parts.push(format!("podAntiAffinity: {{requiredDuringSchedulingIgnoredDuringExecution: [{{labelSelector: {{matchLabels: {{app: w{j}}}}}, topologyKey: kubernetes.io/hostname}}]}}"));
    }
    let mut out = if parts.is_empty() {
        String::new()
    } else {
        format!("      affinity: {{{}}}\n", parts.join(", "))
    };
    if let Some(k) = workloads[i].max_skew() {
        out.push_str(&format!("      topologySpreadConstraints: [{{maxSkew: {k}, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {{matchLabels: {{app: w{i}}}}}}}]\n"));
    }
    out
}

fn manifests(workloads: &[Workload]) -> String {
    let mut out = String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: apps}\n---\n");
    for (i, (name, value, policy)) in CLASSES.iter().enumerate() {
        out.push_str(&format!(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {{name: {name}}}\nvalue: {value}\nglobalDefault: {}\npreemptionPolicy: {policy}\n---\n",
            i == 1
        ));
    }
    for (i, w) in workloads.iter().enumerate() {
        let name = format!("w{i}");
        let kind = if w.stateful {
            "StatefulSet"
        } else {
            "Deployment"
        };
        let claims = if w.stateful {
            "  volumeClaimTemplates:\n    - metadata: {name: data}\n      spec: {storageClassName: hcloud, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
        } else {
            ""
        };
        let service = if w.stateful {
            format!("  serviceName: {name}\n")
        } else {
            String::new()
        };
        out.push_str(&format!(
            "apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: {name}, namespace: apps}}\nspec:\n  replicas: {}\n{service}  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n{}      containers:\n        - name: c\n          image: pause\n          resources: {{requests: {{cpu: 200m, memory: {}Mi}}}}\n{claims}---\n",
            w.replicas,
            affinity_yaml(workloads, i) + &w.priority_yaml(),
            w.memory_mi
        ));
        if let Some(budget) = w.budget {
            let spec = if budget % 2 == 0 {
                format!("minAvailable: {}", budget / 2)
            } else {
                "maxUnavailable: 1".to_owned()
            };
            out.push_str(&format!(
                "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {{name: {name}, namespace: apps}}\nspec: {{{spec}, selector: {{matchLabels: {{app: {name}}}}}}}\n---\n"
            ));
        }
    }
    out
}

fn steps(steps: &[Step], workloads: usize) -> String {
    let mut out = String::from("steps:\n");
    for step in steps {
        match step {
            Step::Crash => out.push_str("  - fault: {crashNode: {target: {randomNodeOf: baseline}}}\n"),
            Step::Delete(drain) => out.push_str(&format!("  - fault: {{deleteNode: {{target: {{randomNodeOf: baseline}}, drain: {drain}}}}}\n")),
            Step::Scale(w, r) if workloads > 0 => out.push_str(&format!("  - scale: {{workload: apps/{}/w{}, replicas: {r}}}\n", "Deployment", w % workloads)),
            Step::Scale(..) => {}
            Step::Wait(m) => out.push_str(&format!("  - wait: {{for: {m}m}}\n")),
        }
    }
    out.push_str("  - wait: {for: 20m}\n");
    out
}

fn drill_text(workloads: &[Workload], plan: &[Step], baseline: u32, unlabelled: bool) -> String {
    // Scale steps only target Deployments; StatefulSets keep their size.
    // Faults target the baseline and always leave one of its nodes, so
    // every fault finds a node to hit.
    let mut destructive = 0;
    let plan: Vec<Step> = plan
        .iter()
        .filter(|s| !matches!(s, Step::Scale(w, _) if workloads.get(w % workloads.len().max(1)).is_none_or(|x| x.stateful)))
        .filter(|s| {
            if matches!(s, Step::Crash | Step::Delete(_)) {
                destructive += 1;
                destructive < baseline
            } else {
                true
            }
        })
        .cloned()
        .collect();
    let labels = if unlabelled {
        "{node.longhorn.io/create-default-disk: \"true\"}"
    } else {
        "{ksail.io/autoscaled: \"true\"}"
    };
    format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {{name: random}}
cluster:
  pools:
    - name: baseline
      count: {baseline}
      serverType: cx43
      namePattern: prod-worker-{{n}}
      labels: {{platform.devantler.tech/baseline-worker: \"true\"}}
    - name: autoscale-cx43
      autoscaled: {{min: 0, max: 3}}
      serverType: cx43
      namePattern: burst-{{n}}
      labels: {labels}
  autoscaler: {{maxNodesTotal: 9, scaleDownUnneededTime: 5m}}
  storageClasses:
    - {{name: hcloud, attach: SingleNode, releaseOnNodeLoss: {{after: 6m}}}}
workloads:
  - path: manifests.yaml
{}assertions:
  - name: pdbs
    pdbRespected: {{}}
",
        steps(&plan, workloads.len())
    )
}

fn run(
    workloads: &[Workload],
    plan: &[Step],
    baseline: u32,
    unlabelled: bool,
    seed: u64,
) -> Option<(Drill, DrillReport)> {
    let dir = tempfile::tempdir().ok()?;
    std::fs::write(dir.path().join("manifests.yaml"), manifests(workloads)).ok()?;
    let text = drill_text(workloads, plan, baseline, unlabelled);
    let drill = Drill::from_source(SourceFile::new(dir.path().join("drill.yaml"), text))
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    match run_drill(&drill, seed, &provision) {
        Ok(report) => Some((drill, report)),
        Err(e) => panic!("{e}"),
    }
}

fn check_invariants(drill: &Drill, workloads: &[Workload], report: &DrillReport) {
    // Bindings and attachments, replayed from the timeline.
    let mut bound: BTreeMap<String, String> = BTreeMap::new();
    let mut attached: BTreeMap<String, String> = BTreeMap::new();
    // Nodes between their NodeAdded and NodeDeleted: an autoscaled pool's
    // `{n}` pattern must never name a node after a live one.
    let mut live_nodes: BTreeSet<String> = BTreeSet::new();
    for e in &report.timeline {
        let object = format!("{}/{}", e.object.namespace, e.object.name);
        let node = e.node.clone().unwrap_or_default();
        match e.kind {
            EventKind::PodScheduled => {
                if let Some(previous) = bound.insert(object.clone(), node.clone()) {
                    panic!("{object} bound to {node} while bound to {previous}");
                }
            }
            EventKind::PodDeleted => {
                bound.remove(&object);
            }
            EventKind::VolumeAttached => {
                if let Some(previous) = attached.insert(object.clone(), node.clone())
                    && previous != node
                {
                    panic!("{object} attached to {node} while attached to {previous}");
                }
            }
            EventKind::VolumeDetached => {
                attached.remove(&object);
            }
            EventKind::NodeAdded => {
                assert!(
                    live_nodes.insert(e.object.name.clone()),
                    "a second live node named {} at {} ms",
                    e.object.name,
                    e.at_ms
                );
            }
            EventKind::NodeDeleted => {
                live_nodes.remove(&e.object.name);
            }
            _ => {}
        }
    }
    // Required affinity: every placement satisfies its workload's rules.
    let specs: BTreeMap<String, PodSpec> = drill
        .workloads
        .iter()
        .filter_map(|d| {
            let spec: PodSpec =
                serde_json::from_value(d.value.pointer("/spec/template/spec")?.clone()).ok()?;
            Some((
                drillbench_model::workload_ref::WorkloadRef::of_object(&d.value).to_string(),
                spec,
            ))
        })
        .collect();
    for e in report
        .timeline
        .iter()
        .filter(|e| e.kind == EventKind::PodScheduled && e.object.namespace == "apps")
    {
        let workload = e
            .object
            .name
            .rsplit_once('-')
            .map(|(w, _)| w)
            .unwrap_or_default();
        let spec = specs
            .iter()
            .find(|(k, _)| k.ends_with(&format!("/{workload}")))
            .map(|(_, s)| s)
            .expect("a workload for every pod");
        let required = RequiredNodeAffinity::from_pod_spec(spec).expect("compiles");
        let node_labels = node_labels(report, e.node.as_deref().unwrap_or_default());
        let node = Node {
            metadata: ObjectMeta {
                labels: Some(node_labels),
                ..Default::default()
            },
            ..Default::default()
        };
        assert!(
            required.matches(&node),
            "{} bound to {:?} against its required affinity",
            e.object.name,
            e.node
        );
    }
    // No pod was placed against a required anti-affinity term: neither its
    // own nor, symmetrically, a running pod's (upstream's
    // `satisfyExistingPodsAntiAffinity`).
    let workload_of = |pod: &str| {
        pod.rsplit_once('-')
            .map(|(w, _)| w.to_owned())
            .unwrap_or_default()
    };
    let repels: BTreeMap<String, String> = drill
        .workloads
        .iter()
        .filter_map(|d| {
            let name = d.value.pointer("/metadata/name")?.as_str()?.to_owned();
            let app = d.value.pointer(
                "/spec/template/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/0/labelSelector/matchLabels/app",
            )?;
            Some((name, app.as_str()?.to_owned()))
        })
        .collect();
    // Spread: when a pod of a workload spread with DoNotSchedule is
    // placed, its node's count (itself included) is at most maxSkew above
    // the least count over the domains: the nodes that exist and that the
    // workload's required node affinity admits (nodeAffinityPolicy
    // Honor), tainted or not (nodeTaintsPolicy Ignore).
    let skews: BTreeMap<String, (usize, RequiredNodeAffinity)> = drill
        .workloads
        .iter()
        .filter_map(|d| {
            let name = d.value.pointer("/metadata/name")?.as_str()?.to_owned();
            let k = d
                .value
                .pointer("/spec/template/spec/topologySpreadConstraints/0/maxSkew")?
                .as_u64()? as usize;
            let spec: PodSpec =
                serde_json::from_value(d.value.pointer("/spec/template/spec")?.clone()).ok()?;
            Some((name, (k, RequiredNodeAffinity::from_pod_spec(&spec).ok()?)))
        })
        .collect();
    let mut live: Vec<String> = Vec::new();
    let mut on: BTreeMap<String, String> = BTreeMap::new();
    // Terminating pods still hold their node (and repel), but the spread
    // filter does not count them (`countPodsMatchSelector` skips a pod
    // with a deletionTimestamp).
    let mut terminating: BTreeSet<String> = BTreeSet::new();
    for e in &report.timeline {
        match e.kind {
            EventKind::NodeAdded => {
                // No two live nodes share a name, whatever the pool's
                // pattern makes of its ordinals.
                assert!(
                    !live.contains(&e.object.name),
                    "{} added while a live node has that name",
                    e.object.name
                );
                live.push(e.object.name.clone());
            }
            EventKind::NodeDeleted => live.retain(|n| *n != e.object.name),
            _ => {}
        }
        if e.kind == EventKind::PodScheduled
            && e.object.namespace == "apps"
            && let Some((k, required)) = skews.get(&workload_of(&e.object.name))
        {
            let mine = workload_of(&e.object.name);
            let count = |node: &str| {
                on.iter()
                    .filter(|(p, n)| {
                        *n == node && workload_of(p) == mine && !terminating.contains(*p)
                    })
                    .count()
            };
            let admits = |node: &str| {
                required.matches(&Node {
                    metadata: ObjectMeta {
                        labels: Some(node_labels(report, node)),
                        ..Default::default()
                    },
                    ..Default::default()
                })
            };
            let least = live
                .iter()
                .filter(|n| admits(n))
                .map(|n| count(n))
                .min()
                .unwrap_or(0);
            let here = count(e.node.as_deref().unwrap_or_default()) + 1;
            assert!(
                here <= least + k,
                "{} placed on {:?}: {here} there, {least} on the emptiest domain, maxSkew {k}",
                e.object.name,
                e.node
            );
        }
        match e.kind {
            EventKind::PodScheduled if e.object.namespace == "apps" => {
                let node = e.node.clone().unwrap_or_default();
                let mine = workload_of(&e.object.name);
                for (other, there) in &on {
                    if *there != node {
                        continue;
                    }
                    let theirs = workload_of(other);
                    assert!(
                        repels.get(&theirs) != Some(&mine),
                        "{} placed on {node} next to {other}, whose anti-affinity repels it",
                        e.object.name
                    );
                    assert!(
                        repels.get(&mine) != Some(&theirs),
                        "{} placed on {node} next to {other}, which its anti-affinity repels",
                        e.object.name
                    );
                }
                on.insert(e.object.name.clone(), node);
            }
            EventKind::PodTerminating if e.object.namespace == "apps" => {
                terminating.insert(e.object.name.clone());
            }
            EventKind::PodDeleted if e.object.namespace == "apps" => {
                on.remove(&e.object.name);
                terminating.remove(&e.object.name);
            }
            _ => {}
        }
    }
    // cluster-autoscaler drains one non-empty node at a time
    // (`--max-drain-parallelism` 1): when a removal of a node with pods
    // starts, no other node the autoscaler is removing still holds one of
    // the drill's pods (a removal ends when its node is deleted, goes
    // NotReady, or the scale-down is aborted).
    let mut held: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut removing: BTreeSet<String> = BTreeSet::new();
    for e in &report.timeline {
        let node = e.node.clone().unwrap_or_default();
        match e.kind {
            EventKind::PodScheduled if e.object.namespace == "apps" => {
                held.entry(node).or_default().insert(e.object.name.clone());
            }
            EventKind::PodDeleted if e.object.namespace == "apps" => {
                for pods in held.values_mut() {
                    pods.remove(&e.object.name);
                }
            }
            EventKind::ScaleDown => {
                let has_pods = held.get(&node).is_some_and(|p| !p.is_empty());
                if has_pods {
                    for other in &removing {
                        let left = held.get(other).map_or(0, BTreeSet::len);
                        assert!(
                            left == 0,
                            "drain of {node} started at {} while {other} still held {left} pod(s)",
                            e.at_ms
                        );
                    }
                }
                removing.insert(node);
            }
            EventKind::ScaleDownAborted | EventKind::NodeDeleted | EventKind::NodeNotReady => {
                removing.remove(&node);
            }
            _ => {}
        }
    }
    // Preemption: every victim had a strictly lower priority than its
    // preemptor, and no `Never` pod preempted (DefaultPreemption's
    // `isPreemptionAllowed` and `PodEligibleToPreemptOthers`).
    let priority_of = |pod: &str| {
        let name = pod.rsplit_once('/').map_or(pod, |(_, n)| n);
        let index: usize = workload_of(name)
            .strip_prefix('w')
            .and_then(|i| i.parse().ok())
            .expect("a random workload's pod");
        workloads[index].priority()
    };
    for e in report
        .timeline
        .iter()
        .filter(|e| e.kind == EventKind::PodPreempted)
    {
        let preemptor = e
            .message
            .strip_prefix("preempted by ")
            .and_then(|m| m.split_whitespace().next())
            .expect("the preemptor is named");
        let (value, may_preempt) = priority_of(preemptor);
        let (victim, _) = priority_of(&e.object.name);
        assert!(
            may_preempt,
            "{preemptor} preempted {} with preemptionPolicy Never",
            e.object.name
        );
        assert!(
            victim < value,
            "{preemptor} ({value}) preempted {} ({victim})",
            e.object.name
        );
    }
    // No eviction took a budget below what it protects.
    let pdbs = &report.assertions[0];
    assert_eq!(pdbs.verdict, drillbench_report::Verdict::Pass, "{pdbs:?}");
}

/// A node's labels, from the topology its pool was made from.
fn node_labels(report: &DrillReport, node: &str) -> BTreeMap<String, String> {
    let pool = report
        .timeline
        .iter()
        .find(|e| e.kind == EventKind::NodeAdded && e.node.as_deref() == Some(node))
        .and_then(|e| e.pool.clone())
        .unwrap_or_default();
    report
        .topology
        .pools
        .iter()
        .find(|p| p.name == pool)
        .map(|p| p.labels.clone())
        .unwrap_or_default()
}

fn workload() -> impl Strategy<Value = Workload> {
    (
        any::<bool>(),
        0u32..5,
        256u32..6144,
        any::<u8>(),
        proptest::option::of(any::<u8>()),
        proptest::option::of(any::<u8>()),
        proptest::option::of(any::<u8>()),
        proptest::option::of(any::<u8>()),
    )
        .prop_map(
            |(stateful, replicas, memory_mi, placement, budget, repels, spread, priority)| {
                Workload {
                    stateful,
                    replicas,
                    memory_mi,
                    placement,
                    budget,
                    repels,
                    spread,
                    priority,
                }
            },
        )
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::Crash),
        any::<bool>().prop_map(Step::Delete),
        (0usize..8, 0u32..8).prop_map(|(w, r)| Step::Scale(w, r)),
        (1u32..15).prop_map(Step::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn invariants_hold_and_runs_replay(
        workloads in prop::collection::vec(workload(), 0..6),
        plan in prop::collection::vec(step(), 0..6),
        baseline in 1u32..4,
        unlabelled in any::<bool>(),
        seed in any::<u64>(),
    ) {
        if let Some((drill, report)) = run(&workloads, &plan, baseline, unlabelled, seed) {
            check_invariants(&drill, &workloads, &report);
            let (_, again) = run(&workloads, &plan, baseline, unlabelled, seed).expect("replays");
            // The drill file lives in a fresh temp dir each time; the rest is equal.
            let strip = |r: &DrillReport| { let mut r = r.clone(); r.drill.file = None; r.to_json() };
            prop_assert_eq!(strip(&report), strip(&again));
        }
    }
}

/// A control-plane fault of a random plan: a control plane other than the
/// endpoint holder crashes, or the holder is recreated (removed from etcd,
/// replaced by a node that joins as a learner), or time passes.
#[derive(Debug, Clone)]
enum ControlPlaneStep {
    CrashOther,
    RecreateHolder,
    Wait(u32),
}

/// A drill on the production topology that runs `plan`, then 30 minutes.
fn control_plane_drill(plan: &[ControlPlaneStep]) -> Drill {
    let ksail = crate::common::root().join("harness/ksail/ksail.prod.yaml");
    let mut steps = String::new();
    for step in plan {
        steps.push_str(
            match step {
                ControlPlaneStep::CrashOther => {
                    "  - fault: {crashNode: {target: otherControlPlane}}\n".to_owned()
                }
                ControlPlaneStep::RecreateHolder => {
                    "  - fault: {recreateControlPlane: {target: endpointHolder}}\n".to_owned()
                }
                ControlPlaneStep::Wait(m) => format!("  - wait: {{for: {m}m}}\n"),
            }
            .as_str(),
        );
    }
    let text = format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {{name: random-control-plane}}
cluster:
  import: {}
steps:
{steps}  - wait: {{for: 30m}}
assertions:
  - name: quorum
    quorum: {{}}
",
        ksail.display()
    );
    Drill::from_source(SourceFile::new(
        std::path::PathBuf::from("control-plane.yaml"),
        text,
    ))
    .unwrap_or_else(|d| panic!("{}", d.render(false)))
}

/// etcd's rule, from the timeline alone: a learner is promoted only by a
/// leader, so never while quorum is lost (`mayPromoteMember` counts the
/// started voters; etcd docs "Learner" and "Failure modes"); and each
/// quorum change says its counts, lost exactly when the healthy voters are
/// not a majority of the voting membership.
fn check_control_plane(report: &DrillReport) {
    let mut quorum = true;
    for e in &report.timeline {
        match e.kind {
            EventKind::QuorumLost | EventKind::QuorumRestored => {
                let counts: Vec<u32> = e
                    .message
                    .split(|c: char| !c.is_ascii_digit())
                    .filter_map(|n| n.parse().ok())
                    .collect();
                let [voters, healthy] = counts[..] else {
                    panic!("a quorum change says its counts: {}", e.message);
                };
                quorum = e.kind == EventKind::QuorumRestored;
                assert_eq!(
                    quorum,
                    healthy * 2 > voters,
                    "at {} ms: {}",
                    e.at_ms,
                    e.message
                );
            }
            EventKind::EtcdMemberPromoted => {
                assert!(
                    quorum,
                    "{} promoted without quorum at {} ms",
                    e.object.name, e.at_ms
                );
            }
            _ => {}
        }
    }
}

fn control_plane_step() -> impl Strategy<Value = ControlPlaneStep> {
    prop_oneof![
        Just(ControlPlaneStep::CrashOther),
        Just(ControlPlaneStep::RecreateHolder),
        (1u32..10).prop_map(ControlPlaneStep::Wait),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random control-plane faults, including a second loss mid-recreate
    /// that costs quorum: no learner is ever promoted without quorum, and
    /// a run replays byte for byte. A plan whose fault finds no target
    /// (every other control plane already lost) is not a drill: it is
    /// rejected, and proptest fails if too many are.
    #[test]
    fn no_learner_is_promoted_without_quorum(
        plan in prop::collection::vec(control_plane_step(), 1..6),
        seed in any::<u64>(),
    ) {
        let drill = control_plane_drill(&plan);
        let run = run_drill(&drill, seed, &provision);
        prop_assume!(run.is_ok());
        let report = run.expect("assumed");
        check_control_plane(&report);
        let again = run_drill(&drill, seed, &provision).expect("replays");
        prop_assert_eq!(report.to_json(), again.to_json());
    }
}

/// The property's two sides, on fixed plans: a recreate alone promotes
/// its learner; a second loss during it costs quorum, and the learner
/// then waits, never promoted while it is lost.
#[test]
fn a_recreate_promotes_unless_a_second_loss_costs_quorum() {
    let events = |plan: &[ControlPlaneStep]| {
        let report = run_drill(&control_plane_drill(plan), 1, &provision).expect("runs");
        check_control_plane(&report);
        report
            .timeline
            .iter()
            .map(|e| e.kind)
            .filter(|k| {
                matches!(
                    k,
                    EventKind::EtcdMemberPromoted
                        | EventKind::QuorumLost
                        | EventKind::QuorumRestored
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        events(&[ControlPlaneStep::RecreateHolder]),
        [EventKind::EtcdMemberPromoted]
    );
    let lost = events(&[
        ControlPlaneStep::RecreateHolder,
        ControlPlaneStep::CrashOther,
    ]);
    assert_eq!(lost.first(), Some(&EventKind::QuorumLost), "{lost:?}");
    assert!(!lost.contains(&EventKind::EtcdMemberPromoted), "{lost:?}");
}
