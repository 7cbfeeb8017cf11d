use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, PersistentVolume, Pod};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use serde_json::json;

use super::names::HOSTNAME_LABEL;
use super::volumes::ATTACHED_NODE_ANNOTATION;
use super::*;
use drillbench_model::labels::NODE_LABEL;
use drillbench_observe::{BudgetBreach, Stranding};

pub(super) fn drill() -> drillbench_model::drill::Drill {
    drillbench_model::drill::Drill::load(&drillbench_model::test_support::repo_file(
        "scenarios/node-loss.yaml",
    ))
    .unwrap_or_else(|d| panic!("{}", d.render(false)))
}

fn node(name: &str, ready: bool, labels: serde_json::Value) -> Change {
    Change::Applied(Object::Node(Box::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "labels": labels},
            "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": if ready {"True"} else {"Unknown"}}],
                       "allocatable": {"cpu": "4", "memory": "8Gi"}},
        }))
        .expect("node"),
    )))
}

fn pod(name: &str, node: Option<&str>, ready: bool, claim: Option<&str>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "apps", "labels": {"app": "db"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u", "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                 "volumes": claim.map(|c| json!([{"name": "data", "persistentVolumeClaim": {"claimName": c}}]))},
        "status": {"conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]},
    }))
    .expect("pod")
}

fn claim(name: &str, attached: Option<&str>) -> Change {
    let annotations = attached.map(|n| json!({ATTACHED_NODE_ANNOTATION: n}));
    Change::Applied(Object::Claim(Box::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "apps", "annotations": annotations},
            "spec": {"storageClassName": "hcloud"},
        }))
        .expect("claim"),
    )))
}

fn kinds(observer: &Observer) -> Vec<(Time, EventKind, String)> {
    observer
        .obs
        .events
        .iter()
        .map(|e| (e.at_ms, e.kind, e.object.name.clone()))
        .collect()
}

#[test]
fn a_binding_is_placed_with_the_nodes_labels_and_the_claims_class_settled_in_its_instant() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    observer.apply(
        0,
        node(
            "prod-worker-1",
            true,
            json!({"platform.devantler.tech/baseline-worker": "true"}),
        ),
    );
    observer.settle(0);
    // The pod is announced before its claim in the same instant.
    observer.apply(
        5_000,
        Change::Applied(Object::Pod(Box::new(pod(
            "db-0",
            Some("prod-worker-1"),
            false,
            Some("data-db-0"),
        )))),
    );
    observer.apply(5_000, claim("data-db-0", Some("prod-worker-1")));
    observer.settle(5_000);
    observer.apply(
        9_000,
        Change::Applied(Object::Pod(Box::new(pod(
            "db-0",
            Some("prod-worker-1"),
            true,
            Some("data-db-0"),
        )))),
    );
    observer.settle(9_000);

    let [placement] = observer.obs.placements.as_slice() else {
        panic!("one placement: {:?}", observer.obs.placements);
    };
    assert_eq!(placement.at, 5_000);
    assert_eq!(placement.pod, "apps/db-0");
    assert_eq!(placement.workload.as_deref(), Some("apps/StatefulSet/db"));
    assert_eq!(placement.pool, "baseline");
    assert!(!placement.autoscaled);
    assert_eq!(
        placement.claims,
        [("data-db-0".to_owned(), Some("hcloud".to_owned()))]
    );
    assert_eq!(
        placement
            .node_labels
            .get("platform.devantler.tech/baseline-worker")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(
        kinds(&observer),
        [
            (0, EventKind::NodeAdded, "prod-worker-1".to_owned()),
            (0, EventKind::NodeReady, "prod-worker-1".to_owned()),
            (5_000, EventKind::PodCreated, "db-0".to_owned()),
            (5_000, EventKind::PodScheduled, "db-0".to_owned()),
            (9_000, EventKind::PodReady, "db-0".to_owned()),
        ]
    );
}

#[test]
fn a_node_deleted_with_a_single_attach_volume_strands_it_until_released() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    observer.apply(0, node("prod-worker-1", true, json!({})));
    observer.apply(0, claim("data-db-0", Some("prod-worker-1")));
    observer.settle(0);
    observer.apply(60_000, node("prod-worker-1", false, json!({})));
    observer.apply(
        70_000,
        Change::Deleted(Object::Node(Box::new(Node {
            metadata: kube::api::ObjectMeta {
                name: Some("prod-worker-1".to_owned()),
                ..Default::default()
            },
            ..Default::default()
        }))),
    );
    assert_eq!(
        observer.obs.strandings,
        [Stranding {
            claim: "apps/data-db-0".to_owned(),
            node: "prod-worker-1".to_owned(),
            since: 70_000,
            released: None
        }]
    );
    observer.apply(90_000, claim("data-db-0", None));
    assert_eq!(observer.obs.strandings[0].released, Some(90_000));
    assert!(kinds(&observer).contains(&(
        60_000,
        EventKind::NodeNotReady,
        "prod-worker-1".to_owned()
    )));
    assert!(kinds(&observer).contains(&(
        70_000,
        EventKind::NodeDeleted,
        "prod-worker-1".to_owned()
    )));
}

/// A claim of the single-attach class `hcloud`, bound to `volume`,
/// with the scheduler's `selected-node` for its first consumer.
fn bound_claim(name: &str, volume: &str, selected: Option<&str>) -> Change {
    let annotations = selected.map(|n| json!({ATTACHED_NODE_ANNOTATION: n}));
    Change::Applied(Object::Claim(Box::new(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "apps", "annotations": annotations},
            "spec": {"storageClassName": "hcloud", "volumeName": volume},
        }))
        .expect("claim"),
    )))
}

/// A PersistentVolume bound to `apps/CLAIM`: a CSI volume, or, with
/// `pinned`, a local one required on that hostname (kind's local-path).
fn volume(name: &str, claim: &str, pinned: Option<&str>) -> PersistentVolume {
    let mut spec = json!({
        "claimRef": {"namespace": "apps", "name": claim},
        "storageClassName": "hcloud",
    });
    match pinned {
        Some(host) => {
            spec["hostPath"] = json!({"path": format!("/var/local-path/{name}")});
            spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [host]}]}
            ]}});
        }
        None => spec["csi"] = json!({"driver": "csi.hetzner.cloud", "volumeHandle": "1234"}),
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("volume")
}

fn attachment(name: &str, volume: &str, node: &str, attached: bool) -> VolumeAttachment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"attacher": "csi.hetzner.cloud", "nodeName": node,
                 "source": {"persistentVolumeName": volume}},
        "status": {"attached": attached},
    }))
    .expect("attachment")
}

fn node_gone(api_name: &str) -> Change {
    Change::Deleted(Object::Node(Box::new(Node {
        metadata: kube::api::ObjectMeta {
            name: Some(api_name.to_owned()),
            ..Default::default()
        },
        ..Default::default()
    })))
}

fn open_strandings(observer: &Observer) -> Vec<(String, String, Time)> {
    observer
        .obs
        .strandings
        .iter()
        .filter(|s| s.released.is_none())
        .map(|s| (s.claim.clone(), s.node.clone(), s.since))
        .collect()
}

#[test]
fn a_volume_attachment_on_a_deleted_node_strands_its_claim_until_it_moves() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    // kind names its nodes after the cluster; the drill name is the label.
    for (api, drill_name) in [
        ("r1-worker", "prod-worker-1"),
        ("r1-worker2", "prod-worker-2"),
    ] {
        observer.apply(0, node(api, true, json!({NODE_LABEL: drill_name})));
    }
    // The scheduler's pick is stale (prod-worker-2): the attachment says
    // where the volume is.
    observer.apply(0, bound_claim("data-db-0", "pvc-1", Some("r1-worker2")));
    observer.apply(
        0,
        Change::Applied(Object::Volume(Box::new(volume("pvc-1", "data-db-0", None)))),
    );
    let on_worker_1 = attachment("csi-a", "pvc-1", "r1-worker", true);
    observer.apply(
        0,
        Change::Applied(Object::Attachment(Box::new(on_worker_1.clone()))),
    );
    observer.settle(0);
    assert_eq!(
        observer.claim_attachments("apps/data-db-0"),
        ["prod-worker-1"]
    );

    observer.apply(60_000, node_gone("r1-worker2"));
    observer.settle(60_000);
    assert!(
        observer.obs.strandings.is_empty(),
        "the stale annotation strands nothing"
    );

    observer.apply(70_000, node_gone("r1-worker"));
    observer.settle(70_000);
    assert_eq!(
        open_strandings(&observer),
        [(
            "apps/data-db-0".to_owned(),
            "prod-worker-1".to_owned(),
            70_000
        )]
    );
    // Still attached there: a change that keeps it there releases nothing.
    observer.apply(
        80_000,
        Change::Applied(Object::Attachment(Box::new(on_worker_1))),
    );
    assert_eq!(observer.obs.strandings[0].released, None);
    // Detached from the dead node (the attacher gave up on it) and
    // attached to a new one: released when the old one goes.
    observer.apply(
        90_000,
        node("r1-worker3", true, json!({NODE_LABEL: "prod-worker-3"})),
    );
    observer.apply(
        90_000,
        Change::Applied(Object::Attachment(Box::new(attachment(
            "csi-b",
            "pvc-1",
            "r1-worker3",
            false,
        )))),
    );
    assert_eq!(
        observer.obs.strandings[0].released, None,
        "the old one is still attached"
    );
    observer.apply(
        95_000,
        Change::Deleted(Object::Attachment(Box::new(attachment(
            "csi-a",
            "pvc-1",
            "r1-worker",
            true,
        )))),
    );
    assert_eq!(observer.obs.strandings[0].released, Some(95_000));
    assert!(open_strandings(&observer).is_empty());
}

#[test]
fn a_detached_csi_volume_strands_nothing_whatever_its_annotation_says() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    observer.apply(0, node("prod-worker-1", true, json!({})));
    observer.apply(0, bound_claim("data-db-0", "pvc-1", Some("prod-worker-1")));
    observer.apply(
        0,
        Change::Applied(Object::Volume(Box::new(volume("pvc-1", "data-db-0", None)))),
    );
    let attached = attachment("csi-a", "pvc-1", "prod-worker-1", true);
    observer.apply(
        0,
        Change::Applied(Object::Attachment(Box::new(attached.clone()))),
    );
    observer.settle(0);
    observer.apply(
        10_000,
        Change::Deleted(Object::Attachment(Box::new(attached))),
    );
    observer.settle(10_000);
    assert!(observer.claim_attachments("apps/data-db-0").is_empty());
    observer.apply(20_000, node_gone("prod-worker-1"));
    assert!(
        observer.obs.strandings.is_empty(),
        "{:?}",
        observer.obs.strandings
    );
}

#[test]
fn an_attachment_ended_in_the_instant_its_node_went_is_stranded_and_released_at_once() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    observer.apply(0, node("prod-worker-1", true, json!({})));
    observer.apply(0, bound_claim("data-db-0", "pvc-1", None));
    observer.apply(
        0,
        Change::Applied(Object::Volume(Box::new(volume("pvc-1", "data-db-0", None)))),
    );
    let attached = attachment("csi-a", "pvc-1", "prod-worker-1", true);
    observer.apply(
        0,
        Change::Applied(Object::Attachment(Box::new(attached.clone()))),
    );
    observer.settle(0);
    // The watches deliver the release before the node's deletion.
    observer.apply(
        30_000,
        Change::Deleted(Object::Attachment(Box::new(attached))),
    );
    observer.apply(30_000, node_gone("prod-worker-1"));
    observer.settle(30_000);
    assert_eq!(
        observer.obs.strandings,
        [Stranding {
            claim: "apps/data-db-0".to_owned(),
            node: "prod-worker-1".to_owned(),
            since: 30_000,
            released: Some(30_000)
        }]
    );
}

#[test]
fn a_local_volume_pinned_to_a_deleted_node_strands_its_claim_until_the_volume_goes() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    observer.apply(
        0,
        node(
            "r1-worker",
            true,
            json!({NODE_LABEL: "prod-worker-1", HOSTNAME_LABEL: "r1-worker"}),
        ),
    );
    observer.apply(
        0,
        node("r1-worker2", true, json!({NODE_LABEL: "prod-worker-2"})),
    );
    // No annotation, no attachment: the PV's affinity pins it.
    observer.apply(0, bound_claim("data-db-0", "pvc-1", None));
    let local = volume("pvc-1", "data-db-0", Some("r1-worker"));
    observer.apply(0, Change::Applied(Object::Volume(Box::new(local.clone()))));
    observer.settle(0);
    assert_eq!(
        observer.claim_attachments("apps/data-db-0"),
        ["prod-worker-1"]
    );
    observer.apply(50_000, node_gone("r1-worker2"));
    assert!(observer.obs.strandings.is_empty());
    observer.apply(60_000, node_gone("r1-worker"));
    assert_eq!(
        open_strandings(&observer),
        [(
            "apps/data-db-0".to_owned(),
            "prod-worker-1".to_owned(),
            60_000
        )]
    );
    // The volume's node is gone, and the volume with it: released only
    // when the PV is deleted.
    observer.apply(
        70_000,
        Change::Applied(Object::Volume(Box::new(local.clone()))),
    );
    assert_eq!(observer.obs.strandings[0].released, None);
    observer.apply(80_000, Change::Deleted(Object::Volume(Box::new(local))));
    assert_eq!(observer.obs.strandings[0].released, Some(80_000));
}

#[test]
fn a_volume_of_a_replicated_class_never_strands() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    observer.apply(0, node("prod-worker-1", true, json!({})));
    let mut pv = volume("pvc-2", "pg-0", None);
    if let Some(spec) = pv.spec.as_mut() {
        spec.storage_class_name = Some("longhorn".to_owned());
    }
    observer.apply(0, Change::Applied(Object::Volume(Box::new(pv))));
    observer.apply(
        0,
        Change::Applied(Object::Attachment(Box::new(attachment(
            "csi-c",
            "pvc-2",
            "prod-worker-1",
            true,
        )))),
    );
    assert_eq!(observer.claim_attachments("apps/pg-0"), ["prod-worker-1"]);
    observer.apply(10_000, node_gone("prod-worker-1"));
    assert!(observer.obs.strandings.is_empty());
}

#[test]
fn workload_series_change_only_when_the_counts_do() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    let deployment = |ready: i32, replicas: i32| {
        Change::Applied(Object::Deployment(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "api", "namespace": "apps"},
                "spec": {"replicas": replicas, "selector": {}, "template": {}},
                "status": {"readyReplicas": ready},
            }))
            .expect("deployment"),
        )))
    };
    observer.apply(0, deployment(0, 3));
    observer.apply(10, deployment(0, 3));
    observer.apply(20, deployment(3, 3));
    assert_eq!(
        observer.obs.workloads["apps/Deployment/api"].points,
        [(0, 0, 3), (20, 3, 3)]
    );
    assert!(observer.workload_ready("apps/Deployment/api"));
    assert!(!observer.workload_ready("apps/Deployment/nope"));
    assert!(observer.all_workloads_ready());
}

#[test]
fn an_accepted_eviction_that_leaves_a_budget_short_is_a_breach() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    let budget = |healthy: i32| {
        Change::Applied(Object::Budget(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "db", "namespace": "apps"},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
                "status": {"currentHealthy": healthy, "desiredHealthy": 2, "disruptionsAllowed": 0, "expectedPods": 3},
            }))
            .expect("budget"),
        )))
    };
    let labels = BTreeMap::from([("app".to_owned(), "db".to_owned())]);
    observer.apply(0, budget(2));
    observer.check_budgets_after_eviction(10, "apps", "db-0", &labels);
    assert!(
        observer.obs.budget_breaches.is_empty(),
        "at the budget is within it"
    );
    observer.check_budgets_after_eviction(10, "other", "db-0", &labels);
    observer.apply(20, budget(1));
    observer.check_budgets_after_eviction(20, "apps", "db-1", &BTreeMap::new());
    assert!(
        observer.obs.budget_breaches.is_empty(),
        "a pod the budget does not select"
    );
    observer.check_budgets_after_eviction(20, "apps", "db-1", &labels);
    assert_eq!(
        observer.obs.budget_breaches,
        [BudgetBreach {
            at: 20,
            pdb: "apps/db".to_owned(),
            pod: "apps/db-1".to_owned(),
            healthy: 1,
            desired: 2
        }]
    );
}

/// A watched pod whose `deletionTimestamp` appears is Terminating (the
/// event the simulator records when it starts a deletion), once, however
/// many updates follow; a pod updated without one (the control) is not.
#[test]
fn a_deletion_timestamp_records_the_pod_terminating_once() {
    let drill = drill();
    let mut observer = Observer::new(drill.topology.clone());
    observer.apply(0, node("prod-worker-1", true, json!({})));
    let running = pod("db-0", Some("prod-worker-1"), true, None);
    let mut stopping = running.clone();
    stopping.metadata.deletion_timestamp =
        Some(serde_json::from_value(json!("2026-01-01T00:00:10Z")).expect("a timestamp"));
    for (at, p) in [
        (1_000, &running),
        (2_000, &running),
        (10_000, &stopping),
        (11_000, &stopping),
    ] {
        observer.apply(at, Change::Applied(Object::Pod(Box::new(p.clone()))));
        observer.settle(at);
    }
    let terminating: Vec<Time> = kinds(&observer)
        .into_iter()
        .filter(|(_, kind, _)| *kind == EventKind::PodTerminating)
        .map(|(at, _, _)| at)
        .collect();
    assert_eq!(terminating, [10_000]);
}
