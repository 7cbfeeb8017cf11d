use super::plan::needs_api;
use super::*;
use drillbench_model::labels::{CONTROL_PLANE_LABEL, POOL_LABEL, RUN_LABEL, STANDBY_KEY};
use drillbench_model::topology::Topology;

#[test]
fn a_generated_run_id_always_names_a_cluster() {
    for drill in [
        "cp-recreate",
        "unlabelled-autoscaler-node",
        "A_B",
        "---",
        "",
    ] {
        let id = cluster_run_id(drill);
        let run = RunId::new(id.clone()).expect("a valid run id");
        assert!(cluster_name(&run).is_ok(), "{drill}: {id}");
    }
}

fn topology(yaml_pools: &str) -> Topology {
    let text = format!(
        "apiVersion: drillbench.dev/v1alpha1\nkind: Drill\nmetadata: {{name: plan}}\n\
         cluster:\n  controlPlanes: {{count: 1}}\n  pools:\n{yaml_pools}\n\
         steps:\n  - wait: {{for: 1m}}\nassertions:\n  - name: q\n    quorum: {{}}\n"
    );
    let source = drillbench_model::scenario::SourceFile::new("plan.yaml", text);
    drillbench_model::drill::Drill::from_source(source)
        .unwrap_or_else(|d| panic!("{}", d.render(false)))
        .topology
}

#[test]
fn standby_nodes_fill_an_autoscaled_pool_up_to_its_max_and_carry_a_taint() {
    let topology = topology(concat!(
        "    - {name: load, count: 2, serverType: cx23, namePattern: 'load-{n}',\n",
        "       taints: [{key: dedicated, value: load, effect: NoSchedule}]}\n",
        "    - {name: burst, autoscaled: {min: 1, max: 2}, serverType: cx43,\n",
        "       namePattern: 'burst-{hex12}'}",
    ));
    let run = RunId::new("p1").unwrap();
    let plan = plan_nodes(&topology, &run, 3);
    let names: Vec<&str> = plan.iter().map(|n| n.drill_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "control-plane-1",
            "load-1",
            "load-2",
            "burst-1",
            "burst-standby-1"
        ],
        "{plan:#?}"
    );
    let load = &plan[1];
    assert_eq!(
        load.taints,
        [("dedicated".to_owned(), "load".to_owned(), "NoSchedule")]
    );
    let standby = &plan[4];
    assert!(standby.standby);
    assert!(
        standby
            .taints
            .contains(&(STANDBY_KEY.to_owned(), "true".to_owned(), "NoSchedule"))
    );
    assert_eq!(
        standby.boot_labels.get(POOL_LABEL).map(String::as_str),
        Some("burst")
    );
    assert!(plan[0].api_labels.contains_key(CONTROL_PLANE_LABEL));
    assert!(
        plan.iter()
            .all(|n| n.boot_labels.get(RUN_LABEL).map(String::as_str) == Some("p1"))
    );
}

#[test]
fn run_ids_that_cannot_be_hostnames_are_refused_as_bad_input() {
    let name = |id: &str| cluster_name(&RunId::new(id).unwrap());
    assert_eq!(name("r1").unwrap(), "drillbench-r1");
    assert_eq!(
        name("cp-recreate-7-a1b2").unwrap(),
        "drillbench-cp-recreate-7-a1b2"
    );
    for bad in ["Upper", "snake_case", "dot.ted", &"x".repeat(25)] {
        let error = name(bad).unwrap_err();
        assert_eq!(error.exit(), Exit::BadInput, "{bad}: {error}");
    }
}

#[test]
fn role_labels_go_through_the_api_and_pool_labels_boot_with_the_node() {
    for key in [
        "node-role.kubernetes.io/control-plane",
        "kubernetes.io/role",
        "topology.k8s.io/zone",
    ] {
        assert!(needs_api(key), "{key}");
    }
    for key in [
        "platform.devantler.tech/baseline-worker",
        "ksail.io/autoscaled",
        "node.longhorn.io/create-default-disk",
        "node.kubernetes.io/instance-type",
        "plain",
    ] {
        assert!(!needs_api(key), "{key}");
    }
}
