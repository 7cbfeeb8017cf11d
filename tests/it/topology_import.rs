//! The ksail import: the production ksail file becomes the production
//! topology, and a drill's own settings override it.

use crate::common;

use std::path::Path;

use common::root;
use drillbench_model::drill::Drill;
use drillbench_model::duration::Duration;
use drillbench_model::scenario::SourceFile;
use drillbench_model::scenario::spec::Expander;
use drillbench_model::topology::PoolSize;

fn drill(text: &str) -> Result<Drill, String> {
    let path = root().join("scenarios/inline-test.yaml");
    // A drill must hold an assertion; these tests are about the cluster alone.
    let text = format!("{text}assertions: [{{name: quorum, quorum: {{}}}}]\n");
    Drill::from_source(SourceFile::new(path, text)).map_err(|d| d.to_string())
}

const HEADER: &str =
    "apiVersion: drillbench.dev/v1alpha1\nkind: Drill\nmetadata:\n  name: import-test\n";

#[test]
fn the_production_ksail_file_becomes_the_production_topology() {
    // The file exactly as the platform ships it, from shared/context.
    let shared = root().join("../shared/context/ksail.prod.yaml");
    let import = if shared.is_file() {
        shared.canonicalize().expect("canonical")
    } else {
        root().join("harness/ksail/ksail.prod.yaml")
    };
    let text = format!("{HEADER}cluster:\n  import: {}\n", import.display());
    let drill = drill(&text).expect("imports");
    let t = &drill.topology;

    assert_eq!(
        t.control_planes.names(),
        [
            "prod-control-plane-1",
            "prod-control-plane-2",
            "prod-control-plane-3"
        ]
    );
    assert_eq!(t.control_planes.server_type.as_deref(), Some("cx33"));
    assert_eq!(t.control_planes.capacity.cpu, "4");

    let baseline = t.pool("baseline").expect("a baseline pool");
    assert_eq!(baseline.size, PoolSize::Static(3));
    assert_eq!(
        baseline.static_names(),
        ["prod-worker-1", "prod-worker-2", "prod-worker-3"]
    );
    assert_eq!(
        baseline
            .labels
            .get("platform.devantler.tech/baseline-worker")
            .map(String::as_str),
        Some("true")
    );
    assert_eq!(baseline.capacity.memory, "16Gi");

    for (name, cpu) in [("autoscale-cx43", "8"), ("autoscale-cx53", "16")] {
        let pool = t.pool(name).unwrap_or_else(|| panic!("pool {name}"));
        assert_eq!(pool.size, PoolSize::Autoscaled { min: 0, max: 4 }, "{name}");
        assert_eq!(pool.capacity.cpu, cpu, "{name}");
        assert!(pool.name_pattern.as_str().ends_with("-{hex12}"), "{name}");
        assert!(
            !pool
                .labels
                .contains_key("platform.devantler.tech/baseline-worker")
        );
    }
    assert_eq!(t.pools.len(), 3);
    assert_eq!(t.autoscaler.max_nodes_total, Some(9));
    assert_eq!(
        t.autoscaler.scale_down_unneeded_time,
        Duration::from_mins(10)
    );
    assert_eq!(
        t.autoscaler.expanders,
        [Expander::LeastNodes, Expander::LeastWaste]
    );
    let endpoint = t
        .endpoint
        .as_ref()
        .expect("floatingIPEnabled gives an endpoint");
    assert_eq!(endpoint.name, "prod-floating-ip");
    assert_eq!(endpoint.holder, "prod-control-plane-1");
}

#[test]
fn the_drill_overrides_the_import() {
    let text = format!(
        "{HEADER}cluster:
  import: ../harness/ksail/ksail.prod.yaml
  controlPlanes:
    ordinals: [2, 4, 5]
  pools:
    - name: autoscale-cx43
      labels:
        node.longhorn.io/create-default-disk: \"true\"
    - name: load
      count: 1
      serverType: cx23
  autoscaler:
    scaleDownUnneededTime: 2m
  endpoint:
    name: prod-floating-ip
    holder: prod-control-plane-4
"
    );
    let drill = drill(&text).expect("valid");
    let t = &drill.topology;
    assert_eq!(
        t.control_planes.names(),
        [
            "prod-control-plane-2",
            "prod-control-plane-4",
            "prod-control-plane-5"
        ]
    );
    let pool = t.pool("autoscale-cx43").expect("pool");
    // Labels are replaced as a whole: this is how a drill removes the
    // `ksail.io/autoscaled` marker, as production once did by accident.
    assert!(!pool.labels.contains_key("ksail.io/autoscaled"));
    assert_eq!(
        pool.size,
        PoolSize::Autoscaled { min: 0, max: 4 },
        "unset fields keep the import"
    );
    assert_eq!(t.pool("load").map(|p| p.size), Some(PoolSize::Static(1)));
    assert_eq!(
        t.autoscaler.scale_down_unneeded_time,
        Duration::from_mins(2)
    );
    assert_eq!(t.autoscaler.max_nodes_total, Some(9));
    assert_eq!(
        t.endpoint.as_ref().map(|e| e.holder.as_str()),
        Some("prod-control-plane-4")
    );
}

#[test]
fn errors_in_the_imported_file_point_into_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ksail = dir.path().join("ksail.yaml");
    std::fs::write(
        &ksail,
        "apiVersion: ksail.io/v1alpha1
kind: Cluster
metadata:
  name: prod
spec:
  cluster:
    workers: 3
    autoscaler:
      node:
        enabled: true
        expander: [LeastNodes, Cheapest]
        pools:
          - name: autoscale-cx43
            serverType: cx43
            max: 4
",
    )
    .expect("write");
    let text = format!("{HEADER}cluster:\n  import: {}\n", ksail.display());
    let error = drill(&text).expect_err("an unknown expander is refused");
    assert!(
        error.contains("ksail.yaml:11:32: unknown expander `Cheapest`"),
        "{error}"
    );
}

#[test]
fn an_import_above_max_nodes_total_is_refused() {
    let text = format!(
        "{HEADER}cluster:
  import: ../harness/ksail/ksail.prod.yaml
  pools:
    - name: baseline
      count: 7
"
    );
    let error = drill(&text).expect_err("3 control planes + 7 workers > 9");
    assert!(error.contains("starts with 10 nodes"), "{error}");
    assert!(
        Path::new(&root())
            .join("harness/ksail/ksail.prod.yaml")
            .is_file()
    );
}

/// Control planes are numbered, and the drill names them before they boot
/// (the endpoint's holder, `nodes:` assertions), so their pattern is `{n}`
/// alone; a pool's may draw `{hex12}`.
#[test]
fn a_control_plane_pattern_is_numbered_by_n_alone() {
    let with = |pattern: &str| {
        drill(&format!(
            "{HEADER}cluster:\n  controlPlanes:\n    count: 3\n    namePattern: '{pattern}'\n"
        ))
    };
    let numbered = with("cp-{n}").expect("valid");
    assert_eq!(
        numbered.topology.control_planes.names(),
        ["cp-1", "cp-2", "cp-3"]
    );
    for refused in ["cp-{hex12}", "cp-{n}-{hex12}"] {
        let err = with(refused).expect_err(refused);
        assert!(
            err.contains("is not numbered by `{n}` alone"),
            "{refused}: {err}"
        );
        assert!(err.contains(":8:18:"), "names the pattern: {err}");
    }
}
