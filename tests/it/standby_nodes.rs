//! Standby nodes on a served simulator: the drivers' taint goes on through
//! the API beside the node's own, and the emulated autoscaler's scale-up
//! takes only it off again.

use crate::fake_support;

use drillbench_backend::docker::RunId;
use drillbench_backend::provision::{
    ProvisionedNode, apply_api_labels, block_on, plan_nodes, release_standby,
};
use drillbench_model::labels::STANDBY_KEY;
use fake_support::{Served, serve, serve_drill};

#[test]
fn a_standby_node_is_tainted_then_released() {
    let drill = serve_drill();
    let server = serve(&drill);
    let served = Served::new(&server);
    let run = RunId::new("s1").unwrap();
    // A planned standby node of the cx43 pool, standing on a served node.
    let mut plan = plan_nodes(&drill.topology, &run, 1)
        .into_iter()
        .find(|n| n.standby)
        .expect("a standby node is planned");
    plan.taints
        .push(("dedicated".into(), "burst".into(), "NoSchedule"));
    let node = ProvisionedNode {
        plan,
        node: "prod-worker-1".into(),
        container: "drillbench-s1-worker".into(),
        ip: None,
    };
    // A client lives on the runtime that made it; each call gets its own.
    let client = || kube::Client::try_from(server.client_config()).unwrap();
    block_on(async { apply_api_labels(&client(), std::slice::from_ref(&node)).await })
        .unwrap()
        .unwrap();
    let keys = |served: &Served| -> Vec<String> {
        served
            .node("prod-worker-1")
            .unwrap()
            .spec
            .and_then(|s| s.taints)
            .unwrap_or_default()
            .into_iter()
            .map(|t| t.key)
            .collect()
    };
    let tainted = keys(&served);
    assert!(tainted.contains(&STANDBY_KEY.to_owned()), "{tainted:?}");
    assert!(tainted.contains(&"dedicated".to_owned()), "{tainted:?}");

    block_on(async { release_standby(&client(), "prod-worker-1").await })
        .unwrap()
        .unwrap();
    let released = keys(&served);
    assert_eq!(released, ["dedicated"]);
    let labels = served
        .node("prod-worker-1")
        .unwrap()
        .metadata
        .labels
        .unwrap();
    assert!(!labels.contains_key(STANDBY_KEY), "{labels:?}");
}

#[test]
fn a_simulator_with_standby_nodes_boots_them_tainted_and_scales_nothing_itself() {
    use drillbench_backend::provision::plan_nodes;
    use drillbench_observe::EventKind;
    use drillbench_sim::Simulation;

    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios/autoscaler-scale-down.yaml");
    let drill = drillbench_model::drill::Drill::load(&path)
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
    let mut sim = Simulation::with_standby_nodes(&drill, 1, 2).expect("provisioned");
    // The names kind's driver plans, so a stand-in finds each.
    let planned: Vec<String> = plan_nodes(&drill.topology, &RunId::new("s2").unwrap(), 2)
        .into_iter()
        .filter(|n| n.standby)
        .map(|n| n.drill_name)
        .collect();
    assert_eq!(planned.len(), 4, "{planned:?}");
    for name in &planned {
        let id = sim.node_id(name).expect("the standby node exists");
        let node = sim.node_view(id);
        let taints = node.spec.and_then(|s| s.taints).unwrap_or_default();
        assert!(taints.iter().any(|t| t.key == STANDBY_KEY), "{name}");
        assert_eq!(
            node.metadata
                .labels
                .unwrap()
                .get(STANDBY_KEY)
                .map(String::as_str),
            Some("true")
        );
    }
    // Burst that only an autoscaler could place stays pending.
    let burst = sim.workload_id("load/Deployment/burst").expect("burst");
    sim.set_replicas(burst, 24).unwrap();
    sim.advance_to(30 * 60_000);
    assert!(
        !sim.observation()
            .events
            .iter()
            .any(|e| e.kind == EventKind::ScaleUp),
        "the simulator's own autoscaler stays off"
    );
    assert!(
        sim.observation()
            .events
            .iter()
            .any(|e| e.kind == EventKind::PodUnschedulable),
        "the burst found no room"
    );
}
