//! Tests of the parts working together inside a simulation: what needs a
//! provisioned cluster rather than one part on its own.

use super::Simulation;
use super::world::{NodePhase, PodPhase};

use drillbench_model::test_support::with_namespaces;

/// A drill of `pools` (YAML list items) running `manifests`.
fn simulation(pools: &str, manifests: &str, seed: u64) -> Simulation {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("manifests.yaml"),
        with_namespaces(manifests),
    )
    .expect("write");
    let text = format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {{name: parts}}
cluster:
  pools:
{pools}workloads: [{{path: manifests.yaml}}]
assertions: [{{name: quorum, quorum: {{}}}}]
"
    );
    let source = drillbench_model::scenario::SourceFile::new(dir.path().join("drill.yaml"), text);
    let drill = drillbench_model::drill::Drill::from_source(source)
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    Simulation::new(&drill, seed).expect("provisions")
}

fn deployment(name: &str, replicas: u32, memory: &str, spec: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: apps}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
{spec}      containers: [{{name: c, image: pause, resources: {{requests: {{cpu: 100m, memory: {memory}}}}}}}]
---
"
    )
}

/// A cluster whose nodes are in every state the compact flag must not
/// vouch for: cordoned, draining, NotReady with the unreachable taints,
/// tainted beyond their class; and templates at node level (hostname
/// affinity), pod level (anti-affinity, repelled by running pods,
/// topology spread), tolerating everything, too big.
fn varied() -> Simulation {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifests = [
        deployment("plain", 6, "1Gi", "      nodeSelector: {tier: a}\n"),
        deployment(
            "spread",
            3,
            "1Gi",
            "      tolerations: [{key: dedicated, operator: Equal, value: b, effect: NoSchedule}]\n      affinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{labelSelector: {matchLabels: {app: spread}}, topologyKey: kubernetes.io/hostname}]}}\n",
        ),
        deployment(
            "pinned",
            1,
            "1Gi",
            "      affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [a-2, b-1]}]}]}}}\n",
        ),
        deployment("anywhere", 2, "1Gi", "      tolerations: [{operator: Exists}]\n"),
        deployment("huge", 1, "30Gi", "      nodeSelector: {tier: a}\n"),
        // Other-pod filters with no terms of their own to flag them: a
        // pod the `spread` pods repel, and a DoNotSchedule spread.
        deployment("repelled", 1, "1Gi", "      nodeSelector: {tier: a}\n")
            .replace("{app: repelled}", "{app: spread}"),
        deployment(
            "skewed",
            4,
            "1Gi",
            "      topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: skewed}}}]\n",
        ),
    ]
    .concat();
    std::fs::write(
        dir.path().join("manifests.yaml"),
        with_namespaces(&manifests),
    )
    .expect("write");
    let text = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: varied}
cluster:
  pools:
    - {name: a, count: 5, serverType: cx43, namePattern: 'a-{n}', labels: {tier: a}}
    - name: b
      count: 4
      serverType: cx43
      namePattern: 'b-{n}'
      labels: {tier: b}
      taints: [{key: dedicated, value: b, effect: NoSchedule}]
workloads: [{path: manifests.yaml}]
assertions: [{name: quorum, quorum: {}}]
";
    let source =
        drillbench_model::scenario::SourceFile::new(dir.path().join("drill.yaml"), text.to_owned());
    let drill = drillbench_model::drill::Drill::from_source(source)
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    let mut sim = Simulation::new(&drill, 3).expect("provisions");
    sim.advance_to(60_000);
    let id = |sim: &Simulation, name: &str| sim.node_id(name).expect("node");
    let cordoned = id(&sim, "a-2");
    sim.cordon(cordoned);
    let draining = id(&sim, "a-4");
    sim.world.node_mut(draining).draining = true;
    let lost = id(&sim, "b-3");
    sim.crash_node(lost);
    let extra = id(&sim, "a-5");
    sim.add_taint(extra, "example.com/maintenance", "NoSchedule");
    let soft = id(&sim, "b-2");
    sim.add_taint(soft, "example.com/slow", "PreferNoSchedule");
    sim.advance_to(3 * 60_000);
    sim
}

#[test]
fn the_compact_path_decides_what_the_full_filters_decide() {
    let mut sim = varied();
    let lost = sim.node_id("b-3").expect("node");
    assert!(
        !sim.nodes()[lost].is_ready(),
        "the crashed node is NotReady"
    );
    let templates: Vec<_> = sim
        .workloads()
        .iter()
        .filter_map(|w| Some((w.template.clone(), *w.pods.first()?)))
        .collect();
    let (compared, fitting, vouched) = sim
        .scheduler
        .compact_path_agrees(&sim.world, &sim.volumes, &templates)
        .unwrap_or_else(|e| panic!("the paths disagree: {e}"));
    // The comparison covers both outcomes and both paths.
    assert!(fitting > 0 && fitting < compared, "{fitting} of {compared}");
    assert!(vouched > 0 && vouched < compared, "{vouched} of {compared}");
}

#[test]
fn a_relabelled_node_moves_class_and_a_waiting_pod_is_placed_on_it() {
    let pools =
        "    - {name: a, count: 3, serverType: cx43, namePattern: 'a-{n}', labels: {tier: a}}\n";
    let manifests = deployment("fast", 1, "1Gi", "      nodeSelector: {disk: ssd}\n");
    let mut sim = simulation(pools, &manifests, 1);
    sim.advance_to(60_000);
    let pod = sim.pod_id("apps", "fast", false);
    assert!(
        pod.is_none(),
        "no pod of that exact name: names are generated"
    );
    let waiting: Vec<_> = sim
        .pods()
        .iter()
        .filter(|p| p.name.starts_with("fast-"))
        .collect();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].phase, PodPhase::Pending, "no node has the label");
    let template = waiting[0].template.clone();
    let node = sim.node_id("a-2").expect("node");
    let before = sim.nodes()[node].class;
    let same = sim.nodes()[sim.node_id("a-1").expect("node")].class;
    assert_eq!(before, same, "nodes of a pool share a class");
    let views_before = template.class_views.borrow().len();
    let mut labels = sim.nodes()[node].labels().clone();
    labels.insert("disk".to_owned(), "ssd".to_owned());
    sim.set_node_metadata(node, labels.clone(), Default::default());
    let after = sim.nodes()[node].class;
    assert_ne!(after, before, "a relabelled node is in another class");
    assert!(
        template.class_views.borrow().len() > views_before,
        "the template judged the new class"
    );
    sim.advance_to(sim.now() + 60_000);
    let placed = sim
        .pods()
        .iter()
        .find(|p| p.name.starts_with("fast-"))
        .and_then(|p| p.node);
    assert_eq!(placed, Some(node));
    // The same labels again change nothing; the old labels bring the old class back.
    sim.set_node_metadata(node, labels, Default::default());
    assert_eq!(sim.nodes()[node].class, after);
    let mut plain = sim.nodes()[node].labels().clone();
    plain.remove("disk");
    sim.set_node_metadata(node, plain, Default::default());
    assert_eq!(sim.nodes()[node].class, before);
}

#[test]
fn resources_count_on_a_node_while_its_pods_hold_them() {
    let pools = "    - {name: a, count: 1, serverType: cx43, namePattern: 'a-{n}'}\n";
    let mut sim = simulation(pools, &deployment("web", 3, "1Gi", ""), 1);
    sim.advance_to(60_000);
    let node = sim.node_id("a-1").expect("node");
    let n = &sim.nodes()[node];
    assert_eq!(n.pods.len(), 3);
    assert_eq!(n.requested.cpu, 300);
    sim.scale_workload("apps/Deployment/web", 1)
        .expect("scales");
    sim.advance_to(sim.now() + 60_000);
    let n = &sim.nodes()[node];
    assert_eq!(n.pods.len(), 1, "terminated pods no longer count");
    assert_eq!(n.requested.cpu, 100);
    let live = sim
        .pods()
        .iter()
        .filter(|p| p.phase != PodPhase::Gone)
        .count();
    assert_eq!(live, 1);
}

#[test]
fn a_crashed_control_plane_loses_its_vote_and_the_endpoint_moves() {
    let path = drillbench_model::test_support::repo_file("scenarios/cp-recreate.yaml");
    let drill = drillbench_model::drill::Drill::load(&path)
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    let mut sim = Simulation::new(&drill, 1).expect("provisions");
    assert_eq!(sim.control_plane().voters(), 3);
    assert!(sim.api_available());
    let holder = sim.endpoint_holder().expect("a holder");
    let next = sim
        .pool_nodes(drillbench_model::topology::CONTROL_PLANE_POOL)
        .into_iter()
        .find(|n| *n != holder)
        .expect("another control plane");
    let node = sim.node_id(&holder).expect("node");
    sim.crash_node(node);
    assert_eq!(
        sim.control_plane().healthy_voters(),
        2,
        "the vote is lost at once"
    );
    assert!(sim.control_plane().has_quorum(), "two of three");
    assert!(!sim.api_available(), "the holder is down");
    sim.advance_to(sim.now() + 5 * 60_000);
    assert_eq!(
        sim.endpoint_holder(),
        Some(next),
        "the first healthy by name"
    );
    assert!(sim.api_available());
    assert_eq!(sim.nodes()[node].phase, NodePhase::NotReady);
    let moved = sim
        .observation()
        .events
        .iter()
        .filter(|e| e.kind == drillbench_observe::EventKind::EndpointMoved)
        .count();
    assert_eq!(moved, 1, "one failover");
}

/// A learner is promoted by a membership change the voters must commit by
/// majority (etcd's `MemberPromote`, see etcd-io/etcd#11640 on how
/// `mayPromoteMember` counts started voters): with quorum it is promoted
/// (the control row), with a second control plane down before the
/// promotion it stays a learner and quorum stays lost.
#[test]
fn a_learner_is_promoted_only_while_etcd_has_quorum() {
    let path = drillbench_model::test_support::repo_file("scenarios/cp-recreate.yaml");
    let drill = drillbench_model::drill::Drill::load(&path)
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    for second_fault in [false, true] {
        let mut sim = Simulation::new(&drill, 1).expect("provisions");
        let holder = sim.endpoint_holder().expect("a holder");
        sim.recreate_control_plane(sim.node_id(&holder).expect("node"), None);
        if second_fault {
            let other = sim.other_control_plane().expect("another control plane");
            sim.crash_node(sim.node_id(&other).expect("node"));
            assert!(!sim.control_plane().has_quorum(), "one of two voters");
        }
        sim.advance_to(sim.now() + 20 * 60_000);
        let cp = sim.control_plane();
        if second_fault {
            assert_eq!((cp.voters(), cp.learners()), (2, 1), "never promoted");
            assert!(!cp.has_quorum());
        } else {
            assert_eq!((cp.voters(), cp.learners()), (3, 0), "promoted");
            assert!(cp.has_quorum());
        }
    }
}

/// A pinned endpoint (a negative control's weakening) never fails over;
/// the floating one does (see the test above).
#[test]
fn a_pinned_endpoint_stays_on_its_dead_holder() {
    let path = drillbench_model::test_support::repo_file("scenarios/cp-recreate.yaml");
    let mut drill = drillbench_model::drill::Drill::load(&path)
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    if let Some(endpoint) = &mut drill.topology.endpoint {
        endpoint.mode = drillbench_model::topology::EndpointMode::Pinned;
    }
    let mut sim = Simulation::new(&drill, 1).expect("provisions");
    let holder = sim.endpoint_holder().expect("a holder");
    sim.crash_node(sim.node_id(&holder).expect("node"));
    sim.advance_to(sim.now() + 30 * 60_000);
    assert_eq!(sim.endpoint_holder(), Some(holder));
    assert!(!sim.api_available());
}

/// The StatefulSet documentation, "Pod Management Policies": with
/// `OrderedReady` (the default) each ordinal is created only once the one
/// before it is Running and Ready; with `Parallel` all are created at once,
/// none waiting. The control is the other policy on the same StatefulSet.
#[test]
fn a_parallel_statefulset_creates_every_pod_at_once_and_an_ordered_one_waits_for_ready() {
    let statefulset = |policy: &str| {
        format!(
            "apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, namespace: apps}}
spec:
  replicas: 3
  serviceName: db
{policy}  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers: [{{name: c, image: pause, resources: {{requests: {{cpu: 100m, memory: 1Gi}}}}}}]
"
        )
    };
    let pools = "    - {name: base, count: 2, serverType: cx43}\n";
    // (pod, when created, when Ready) per ordinal, after ten minutes.
    let created_and_ready = |policy: &str| -> Vec<(String, u64, u64)> {
        let mut sim = simulation(pools, &statefulset(policy), 1);
        sim.advance_to(600_000);
        let at = |kind: drillbench_observe::EventKind, name: &str| {
            sim.observation()
                .events
                .iter()
                .find(|e| e.kind == kind && e.object.name == name)
                .map(|e| e.at_ms)
                .unwrap_or_else(|| panic!("{name}: no {kind:?}"))
        };
        (0..3)
            .map(|i| {
                let name = format!("db-{i}");
                let created = at(drillbench_observe::EventKind::PodCreated, &name);
                let ready = at(drillbench_observe::EventKind::PodReady, &name);
                (name, created, ready)
            })
            .collect()
    };
    for policy in ["", "  podManagementPolicy: OrderedReady\n"] {
        let pods = created_and_ready(policy);
        for pair in pods.windows(2) {
            assert!(
                pair[1].1 >= pair[0].2,
                "{policy:?}: {} created before {} was Ready: {pods:?}",
                pair[1].0,
                pair[0].0
            );
        }
    }
    let parallel = created_and_ready("  podManagementPolicy: Parallel\n");
    assert!(
        parallel.iter().all(|p| p.1 == parallel[0].1),
        "all created at once: {parallel:?}"
    );
    assert!(
        parallel[1].1 < parallel[0].2,
        "db-1 did not wait for db-0 to be Ready: {parallel:?}"
    );
}

/// The apiserver refuses any other policy (StatefulSet validation:
/// "supported values: \"OrderedReady\", \"Parallel\"").
#[test]
fn an_unknown_pod_management_policy_is_refused_at_load() {
    let documents = |policy: &str| {
        vec![drillbench_model::manifest::Document {
            source: "<test>".to_owned(),
            index: 0,
            line: 1,
            column: 1,
            value: serde_json::json!({
                "apiVersion": "apps/v1", "kind": "StatefulSet",
                "metadata": {"name": "db", "namespace": "apps"},
                "spec": {"replicas": 1, "serviceName": "db", "podManagementPolicy": policy,
                    "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}},
                        "spec": {"containers": [{"name": "c", "image": "pause"}]}}},
            }),
        }]
    };
    let refused = super::load::load(&documents("Sometimes"), &[], None, &Default::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(refused.contains("supported values"), "{refused}");
    assert!(
        super::load::load(&documents("Parallel"), &[], None, &Default::default()).is_ok(),
        "control"
    );
}

/// The drill's Kyverno policies at the simulator's admission: found among
/// the workloads, applied to the Pod each controller creates (mutations,
/// then validations: kubernetes.io/docs/reference/access-authn-authz/
/// extensible-admission-controllers/#admission-webhook-phases), Enforce
/// refusing and Audit recording (kyverno.io/docs/policy-types/
/// cluster-policy/validate/#validation-failure-action), rules it cannot
/// evaluate listed (kyverno.io/docs/policy-types/cluster-policy/generate/
/// is not simulated).
mod policies {
    use drillbench_observe::EventKind;

    use super::*;

    const POOLS: &str = "    - {name: a, count: 2, serverType: cx43, namePattern: 'a-{n}', labels: {tier: gold}}\n    - {name: b, count: 2, serverType: cx43, namePattern: 'b-{n}'}\n";

    /// A policy pinning `apps` pods to `tier: gold` by mutation (the
    /// `+()` anchor adds the nodeSelector when absent), with a check that
    /// refuses (or audits) pods labelled `forbidden: "yes"`, and a generate
    /// rule the bench does not evaluate.
    fn policy(action: &str) -> String {
        format!(
            "apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {{name: gold-only}}
spec:
  validationFailureAction: {action}
  rules:
    - name: pin-to-gold
      match: {{any: [{{resources: {{kinds: [Pod], namespaces: [apps]}}}}]}}
      mutate:
        patchStrategicMerge:
          spec:
            +(nodeSelector): {{tier: gold}}
    - name: no-forbidden
      match: {{any: [{{resources: {{kinds: [Pod]}}}}]}}
      validate:
        message: forbidden pods are refused
        pattern:
          metadata:
            =(labels):
              X(forbidden): \"null\"
    - name: a-config-map
      match: {{any: [{{resources: {{kinds: [Pod]}}}}]}}
      generate:
        apiVersion: v1
        kind: ConfigMap
        name: generated
        namespace: apps
        data: {{data: {{a: b}}}}
---
"
        )
    }

    fn forbidden(name: &str) -> String {
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: apps}}
spec:
  replicas: 2
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}, forbidden: \"yes\"}}}}
    spec:
      containers: [{{name: c, image: pause}}]
---
"
        )
    }

    fn pods_of<'s>(sim: &'s Simulation, prefix: &str) -> Vec<&'s super::super::world::SimPod> {
        sim.pods()
            .iter()
            .filter(|p| p.name.starts_with(prefix) && p.phase != PodPhase::Gone)
            .collect()
    }

    fn events(sim: &Simulation, kind: EventKind) -> Vec<String> {
        sim.observation()
            .events
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| format!("{}/{}: {}", e.object.namespace, e.object.name, e.message))
            .collect()
    }

    #[test]
    fn a_policy_among_the_workloads_mutates_every_pod_its_controller_creates() {
        let manifests = policy("Enforce") + &deployment("web", 4, "1Gi", "");
        let mut sim = simulation(POOLS, &manifests, 1);
        sim.advance_to(60_000);
        let web = pods_of(&sim, "web-");
        assert_eq!(web.len(), 4);
        for pod in &web {
            let node = pod.node.expect("placed");
            assert!(sim.nodes()[node].name.starts_with("a-"), "{}", pod.name);
        }
        // Control: without the policy the same pods spread over both pools.
        let mut plain = simulation(POOLS, &deployment("web", 4, "1Gi", ""), 1);
        plain.advance_to(60_000);
        assert!(
            pods_of(&plain, "web-")
                .iter()
                .any(|p| plain.nodes()[p.node.expect("placed")]
                    .name
                    .starts_with("b-")),
            "without the mutation some pod lands on pool b"
        );
    }

    #[test]
    fn enforce_refuses_the_controllers_pods_and_audit_admits_them_with_a_record() {
        let manifests = policy("Enforce") + &forbidden("bad");
        let mut sim = simulation(POOLS, &manifests, 1);
        sim.advance_to(60_000);
        assert!(pods_of(&sim, "bad-").is_empty(), "refused: no pod created");
        let refused = events(&sim, EventKind::AdmissionRefused);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].contains("gold-only/no-forbidden") && refused[0].contains("forbidden"),
            "{refused:?}"
        );
        let manifests = policy("Audit") + &forbidden("bad");
        let mut sim = simulation(POOLS, &manifests, 1);
        sim.advance_to(60_000);
        assert_eq!(pods_of(&sim, "bad-").len(), 2, "audited: admitted");
        assert!(events(&sim, EventKind::AdmissionRefused).is_empty());
        let audited = events(&sim, EventKind::AdmissionAudited);
        assert_eq!(audited.len(), 1, "{audited:?}");
        assert!(audited[0].contains("gold-only/no-forbidden"), "{audited:?}");
    }

    #[test]
    fn a_rule_the_engine_cannot_evaluate_is_listed_per_policy_and_rule() {
        let manifests = policy("Enforce") + &deployment("web", 1, "1Gi", "");
        let sim = simulation(POOLS, &manifests, 1);
        let listed = events(&sim, EventKind::PolicyNotEvaluated);
        assert_eq!(listed.len(), 1, "{listed:?}");
        assert!(
            listed[0].contains("gold-only/a-config-map") && listed[0].contains("not evaluated"),
            "{listed:?}"
        );
        // The ClusterPolicy is simulated now, so no longer "not simulated".
        assert!(sim.observation().not_simulated.is_empty());
    }

    #[test]
    fn a_replacement_pod_after_its_node_is_lost_is_admitted_again() {
        let manifests = policy("Enforce") + &deployment("web", 2, "1Gi", "");
        let mut sim = simulation(POOLS, &manifests, 1);
        sim.advance_to(60_000);
        let first: Vec<String> = pods_of(&sim, "web-")
            .iter()
            .map(|p| p.name.clone())
            .collect();
        let node = pods_of(&sim, "web-")[0].node.expect("placed");
        sim.delete_node(
            node,
            false,
            drillbench_model::duration::Duration::from_mins(1),
        );
        sim.advance_to(sim.now() + 600_000);
        let now = pods_of(&sim, "web-");
        let replacement = now
            .iter()
            .find(|p| !first.contains(&p.name))
            .expect("a replacement pod");
        let placed = replacement.node.expect("the replacement is placed");
        assert!(
            sim.nodes()[placed].name.starts_with("a-"),
            "the replacement carries the mutation: {}",
            sim.nodes()[placed].name
        );
        assert_eq!(
            replacement
                .template
                .spec
                .node_selector
                .as_ref()
                .and_then(|s| s.get("tier")),
            Some(&"gold".to_owned())
        );
    }

    /// The harness's node policy over the provisioned nodes: its positive
    /// rule fails every node without the baseline label (an Audit policy
    /// with `background: true` reports, kyverno.io/docs/policy-reports/
    /// background/); the same policy with `background: false` reports
    /// nothing.
    #[test]
    fn a_background_policy_reports_each_node_that_breaks_it() {
        let text = std::fs::read_to_string(drillbench_model::test_support::repo_file(
            "harness/kyverno/policies/hcloud-eligible-nodes.yaml",
        ))
        .expect("the node policy");
        let pools = "    - {name: a, count: 2, serverType: cx43, namePattern: 'a-{n}', labels: {platform.devantler.tech/baseline-worker: 'true'}}\n    - {name: b, count: 1, serverType: cx43, namePattern: 'b-{n}'}\n";
        let manifests = format!("{text}\n---\n") + &deployment("web", 1, "1Gi", "");
        let sim = simulation(pools, &manifests, 1);
        let audited: Vec<String> = events(&sim, EventKind::AdmissionAudited)
            .iter()
            .map(|e| e.split(": ").next().unwrap_or_default().to_owned())
            .collect();
        // The control planes and the unlabelled pool; never the labelled pool.
        assert_eq!(
            audited,
            [
                "/control-plane-1",
                "/control-plane-2",
                "/control-plane-3",
                "/b-1"
            ]
        );
        assert!(events(&sim, EventKind::AdmissionAudited)[3].contains(
            "background scan: policy `hcloud-eligible-nodes` rule `labelled-baseline-worker` fail"
        ));
        let quiet = manifests.replace("background: true", "background: false");
        let sim = simulation(pools, &quiet, 1);
        assert!(events(&sim, EventKind::AdmissionAudited).is_empty());
    }
}

#[test]
fn a_terminating_pod_carries_the_time_it_was_deleted() {
    // `metadata.deletionTimestamp` is set when the API server accepts the
    // delete ("Termination of Pods", Pod Lifecycle); a pod not deleted has
    // none.
    let pools = "    - {name: a, count: 1, serverType: cx43, namePattern: 'a-{n}'}\n";
    let mut sim = simulation(pools, &deployment("web", 2, "1Gi", ""), 1);
    sim.advance_to(60_000);
    sim.scale_workload("apps/Deployment/web", 1)
        .expect("scales");
    sim.advance_to(60_001);
    let mut stamps: Vec<Option<String>> = (0..sim.pods().len())
        .filter(|&p| sim.pods()[p].phase != PodPhase::Gone)
        .map(|p| {
            sim.pod_object(p)
                .metadata
                .deletion_timestamp
                .map(|t| t.0.to_string())
        })
        .collect();
    // Which of the two goes is the ReplicaSet's choice (by UID within one
    // age bucket); exactly one carries the stamp.
    stamps.sort();
    assert_eq!(
        stamps,
        [None, Some("2026-01-01T00:01:00Z".to_owned())],
        "the drill starts at 2026-01-01T00:00Z"
    );
}

#[test]
fn a_pod_whose_containers_have_not_started_is_pending_and_evicted_past_its_budget() {
    // Pod Lifecycle, "Pod phase": Pending includes the time after binding
    // spent starting containers; the eviction API ignores the budget of a
    // Pending pod (`canIgnorePDB`, pkg/registry/core/pod/storage/eviction.go).
    // Paired: once Ready (Running), the same budget refuses the eviction.
    let pools = "    - {name: a, count: 1, serverType: cx43, namePattern: 'a-{n}'}\n";
    let budget = "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: apps}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
";
    let manifests = format!("{}{budget}", deployment("web", 1, "1Gi", ""));
    let live = |sim: &Simulation| {
        (0..sim.pods().len())
            .find(|&p| sim.pods()[p].phase != PodPhase::Gone)
            .expect("a pod")
    };
    let mut sim = simulation(pools, &manifests, 1);
    let mut at = 0;
    while sim.pods().is_empty() || sim.pods()[live(&sim)].phase == PodPhase::Pending {
        at += 100;
        sim.advance_to(at);
    }
    let starting = live(&sim);
    assert_eq!(sim.pods()[starting].phase, PodPhase::Starting);
    let phase = |sim: &Simulation, p| sim.pod_object(p).status.unwrap().phase.unwrap();
    assert_eq!(phase(&sim, starting), "Pending");
    assert_eq!(sim.evict(starting), Ok(()));

    let mut sim = simulation(pools, &manifests, 1);
    sim.advance_to(600_000);
    let ready = live(&sim);
    assert_eq!(sim.pods()[ready].phase, PodPhase::Ready);
    assert_eq!(phase(&sim, ready), "Running");
    assert!(sim.evict(ready).is_err(), "the budget holds a Ready pod");
}

/// A drill of three workers running `manifests`, its pods captured where
/// `placements` says (`namespace/Kind/name` → nodes).
fn captured(manifests: &str, placements: &[(&str, &[&str])]) -> Simulation {
    use drillbench_model::snapshot_workloads::{CapturedPod, Placements};
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("manifests.yaml"),
        with_namespaces(manifests),
    )
    .expect("write");
    let text = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: parts}
cluster:
  pools:
    - {name: w, count: 3, serverType: cx43}
workloads: [{path: manifests.yaml}]
assertions: [{name: quorum, quorum: {}}]
";
    let source = drillbench_model::scenario::SourceFile::new(dir.path().join("drill.yaml"), text);
    let mut drill = drillbench_model::drill::Drill::from_source(source)
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    let mut by_workload = std::collections::BTreeMap::new();
    for (workload, nodes) in placements {
        let pods = nodes
            .iter()
            .map(|node| CapturedPod {
                pod: String::new(),
                ordinal: None,
                node: (*node).to_owned(),
            })
            .collect();
        by_workload.insert((*workload).to_owned(), pods);
    }
    drill.snapshot = Some(drillbench_model::Captured {
        placements: Placements { by_workload },
        ..Default::default()
    });
    Simulation::new(&drill, 1).expect("provisions")
}

fn nodes_of(sim: &Simulation, prefix: &str) -> Vec<String> {
    let mut nodes: Vec<String> = sim
        .pods()
        .iter()
        .filter(|p| p.name.starts_with(prefix) && p.phase != PodPhase::Gone)
        .filter_map(|p| p.node.map(|n| sim.nodes()[n].name.clone()))
        .collect();
    nodes.sort();
    nodes
}

#[test]
fn captured_pods_start_on_their_nodes_and_only_the_first_ones_do() {
    let manifests = deployment("api", 2, "1Gi", "");
    // The scheduler spreads two replicas over three empty workers.
    let spread = captured(&manifests, &[]);
    assert_ne!(nodes_of(&spread, "api-"), ["w-3", "w-3"]);
    // Captured both on w-3, both start there.
    let placed = captured(
        &manifests,
        &[("apps/Deployment/api", &["w-3", "w-3", "w-2"])],
    );
    assert_eq!(nodes_of(&placed, "api-"), ["w-3", "w-3"]);
    // A captured node the cluster does not have leaves the pod to the
    // scheduler, and its creation says so.
    let missing = captured(&manifests, &[("apps/Deployment/api", &["w-9", "w-1"])]);
    assert!(nodes_of(&missing, "api-").contains(&"w-1".to_owned()));
    assert!(
        missing
            .observation()
            .events
            .iter()
            .any(|e| e.message.contains("captured on node `w-9`")),
        "the pod says where it was captured"
    );
}

#[test]
fn a_served_pod_carries_the_priority_admission_resolved() {
    // The Priority admission plugin writes `spec.priority` and
    // `spec.preemptionPolicy` into every pod
    // (plugin/pkg/admission/priority/admission.go): the class's value and
    // policy for a pod naming one, 0 and `PreemptLowerPriority` for a pod
    // naming none when no class is the global default.
    let pools = "    - {name: a, count: 1, serverType: cx43, namePattern: 'a-{n}'}\n";
    let class = "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch-low}
value: 1000
preemptionPolicy: Never
---
";
    let manifests = format!(
        "{class}{}{}",
        deployment("batch", 1, "1Gi", "      priorityClassName: batch-low\n"),
        deployment("web", 1, "1Gi", "")
    );
    let mut sim = simulation(pools, &manifests, 1);
    sim.advance_to(60_000);
    let served = |prefix: &str| {
        let pod = (0..sim.pods().len())
            .find(|&p| sim.pods()[p].name.starts_with(prefix))
            .expect("a pod");
        let spec = sim.pod_view(pod).spec.expect("a spec");
        (spec.priority, spec.preemption_policy)
    };
    assert_eq!(served("batch"), (Some(1000), Some("Never".to_owned())));
    // Control: the pod naming no class.
    assert_eq!(
        served("web"),
        (Some(0), Some("PreemptLowerPriority".to_owned()))
    );
}
