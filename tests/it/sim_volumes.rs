//! Volume binding modes, from the documented semantics of a
//! StorageClass's `volumeBindingMode`: `WaitForFirstConsumer` binds a claim
//! when its first pod is scheduled and provisions the volume in that node's
//! topology domain; `Immediate` binds and provisions at creation, before
//! any consumer exists, and the pods are then confined to the volume's
//! domain (its PV node affinity) whether or not a node there fits them.

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use drillbench_observe::EventKind;
use drillbench_sim::Simulation;
use drillbench_sim::world::{Claim, PodPhase};

const MIN: u64 = 60_000;
const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

/// Three control planes, two workers in zone `a` and one in zone `b`, a
/// storage class `local` with the given binding mode and topology key, and
/// a Deployment `db` of `replicas` pods mounting the claim `data`.
fn cluster(binding: &str, topology_key: Option<&str>, replicas: u32, seed: u64) -> Simulation {
    let dir = tempfile::tempdir().expect("tempdir");
    let manifests = format!(
        "apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data, namespace: apps}}
spec: {{storageClassName: local, accessModes: [ReadWriteOnce], resources: {{requests: {{storage: 1Gi}}}}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: db, namespace: apps}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      containers:
        - name: db
          image: postgres
          resources: {{requests: {{cpu: 100m, memory: 256Mi}}}}
      volumes:
        - name: data
          persistentVolumeClaim: {{claimName: data}}
"
    );
    std::fs::write(
        dir.path().join("manifests.yaml"),
        crate::common::with_namespaces(&manifests),
    )
    .expect("write");
    let key = topology_key
        .map(|k| format!("      topologyKey: {k}\n"))
        .unwrap_or_default();
    let text = format!(
        "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: volumes
cluster:
  pools:
    - name: zone-a
      count: 2
      serverType: cx43
      namePattern: worker-a-{{n}}
      labels: {{{ZONE}: a}}
    - name: zone-b
      count: 1
      serverType: cx43
      namePattern: worker-b-{{n}}
      labels: {{{ZONE}: b}}
  storageClasses:
    - name: local
      attach: Replicated
      bindingMode: {binding}
{key}workloads:
  - path: manifests.yaml
assertions: [{{name: quorum, quorum: {{}}}}]
"
    );
    let source = SourceFile::new(dir.path().join("drill.yaml"), text);
    let drill = Drill::from_source(source).unwrap_or_else(|d| panic!("{}", d.render(false)));
    Simulation::new(&drill, seed).expect("provisions")
}

fn data(sim: &Simulation) -> &Claim {
    sim.claims()
        .iter()
        .find(|c| c.name == "data")
        .expect("claim data")
}

/// The node of the live `db` pod, if one is bound.
fn db_node(sim: &Simulation) -> Option<String> {
    sim.pods()
        .iter()
        .filter(|p| p.name.starts_with("db-") && p.is_active())
        .find_map(|p| p.node)
        .map(|n| sim.nodes()[n].name.clone())
}

fn label(sim: &Simulation, node: &str, key: &str) -> Option<String> {
    let id = sim.node_id(node).expect("node");
    sim.nodes()[id].labels().get(key).cloned()
}

fn unschedulable_messages(sim: &Simulation) -> Vec<String> {
    sim.observation()
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PodUnschedulable)
        .map(|e| e.message.clone())
        .collect()
}

/// Crashes the node of the `db` pod and lets the taint manager evict it
/// (50 s grace, 300 s toleration), so a replacement is scheduled.
fn lose_db_node(sim: &mut Simulation) -> String {
    let node = db_node(sim).expect("db scheduled");
    let id = sim.node_id(&node).expect("node");
    sim.crash_node(id);
    sim.advance_to(sim.now() + 10 * MIN);
    node
}

#[test]
fn wait_for_first_consumer_binds_where_the_first_pod_lands() {
    let mut sim = cluster("WaitForFirstConsumer", Some(HOST), 0, 1);
    sim.advance_to(MIN);
    assert!(!data(&sim).bound, "no consumer yet: the claim waits");
    assert_eq!(data(&sim).pv_topology, None);
    sim.scale_workload("apps/Deployment/db", 1).expect("scales");
    sim.advance_to(2 * MIN);
    let node = db_node(&sim).expect("scheduled");
    assert!(data(&sim).bound);
    assert_eq!(data(&sim).pv_topology.as_deref(), Some(node.as_str()));
}

#[test]
fn a_node_local_volume_keeps_its_pod_on_its_node() {
    let mut sim = cluster("WaitForFirstConsumer", Some(HOST), 1, 1);
    sim.advance_to(MIN);
    let lost = lose_db_node(&mut sim);
    let live: Vec<_> = sim
        .pods()
        .iter()
        .filter(|p| p.name.starts_with("db-") && p.is_active())
        .collect();
    assert_eq!(live.len(), 1, "a replacement exists");
    assert_eq!(live[0].phase, PodPhase::Pending, "it cannot leave {lost}");
    assert!(
        unschedulable_messages(&sim)
            .iter()
            .any(|m| m.contains("volume node affinity conflict")),
        "{:?}",
        unschedulable_messages(&sim)
    );
}

#[test]
fn a_zonal_volume_keeps_its_pods_in_its_zone() {
    // Whichever zone the first pod lands in, its replacement stays there:
    // zone a has a second node to move to; zone b has none.
    for seed in 1..=8 {
        let mut sim = cluster("WaitForFirstConsumer", Some(ZONE), 1, seed);
        sim.advance_to(MIN);
        let first = db_node(&sim).expect("scheduled");
        let zone = label(&sim, &first, ZONE).expect("zoned");
        assert_eq!(data(&sim).pv_topology.as_deref(), Some(zone.as_str()));
        lose_db_node(&mut sim);
        match db_node(&sim) {
            Some(next) => {
                assert_ne!(next, first, "seed {seed}");
                assert_eq!(label(&sim, &next, ZONE), Some(zone.clone()), "seed {seed}");
            }
            None => assert_eq!(zone, "b", "seed {seed}: only zone b has no other node"),
        }
    }
}

#[test]
fn without_a_topology_key_a_volume_goes_anywhere() {
    for binding in ["WaitForFirstConsumer", "Immediate"] {
        let mut sim = cluster(binding, None, 1, 1);
        sim.advance_to(MIN);
        assert_eq!(data(&sim).pv_topology, None, "{binding}");
        let lost = lose_db_node(&mut sim);
        let next = db_node(&sim).expect("rescheduled");
        assert_ne!(next, lost, "{binding}");
    }
}

#[test]
fn immediate_binds_before_any_consumer_and_confines_it() {
    let mut confined = 0;
    let mut stuck = 0;
    for seed in 1..=24 {
        let mut sim = cluster("Immediate", Some(HOST), 0, seed);
        assert!(data(&sim).bound, "seed {seed}: bound at creation");
        let host = data(&sim)
            .pv_topology
            .clone()
            .expect("provisioned somewhere");
        sim.scale_workload("apps/Deployment/db", 1).expect("scales");
        sim.advance_to(MIN);
        match db_node(&sim) {
            Some(node) => {
                assert_eq!(node, host, "seed {seed}: the pod follows its volume");
                confined += 1;
            }
            None => {
                // The provisioner chose without knowing the pod: a control
                // plane's taint keeps the pod away from its own volume.
                assert!(host.contains("control-plane"), "seed {seed}: {host}");
                assert!(
                    unschedulable_messages(&sim)
                        .iter()
                        .any(|m| m.contains("volume node affinity conflict")),
                    "seed {seed}"
                );
                stuck += 1;
            }
        }
    }
    assert!(
        confined > 0 && stuck > 0,
        "{confined} confined, {stuck} stuck"
    );
}

#[test]
fn immediate_zonal_volumes_pick_a_zone_at_creation() {
    for seed in 1..=8 {
        let sim = cluster("Immediate", Some(ZONE), 2, seed);
        let zone = data(&sim).pv_topology.clone().expect("provisioned");
        for pod in sim.pods().iter().filter(|p| p.node.is_some()) {
            let node = &sim.nodes()[pod.node.expect("bound")];
            assert_eq!(node.labels().get(ZONE), Some(&zone), "seed {seed}");
        }
    }
}
