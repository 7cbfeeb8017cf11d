//! Latencies drawn from the seed: a sweep of a built-in drill spreads its
//! RTO over the seeds, and the same drill with every latency pinned to a
//! constant (`min = median = p99`) gives one value, so the spread comes from
//! the drawn latencies and nothing else.

use std::collections::BTreeSet;

use crate::common::root;
use drillbench::run::run_drill;
use drillbench_backend::sim::provision;
use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use drillbench_report::Outcome;

/// `node-loss`, with `extra` added to its `cluster:` section.
fn node_loss(extra: &str) -> Drill {
    let path = root().join("scenarios/node-loss.yaml");
    let text = std::fs::read_to_string(&path).expect("built-in drill");
    let edited = text.replacen("cluster:\n", &format!("cluster:\n{extra}"), 1);
    let source = SourceFile::new(root().join("scenarios/variant.yaml"), edited);
    Drill::from_source(source).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

/// The RTO of the hcloud consumers over seeds `0..n`, each run passing.
fn rtos(drill: &Drill, n: u64) -> BTreeSet<u64> {
    (0..n)
        .map(|seed| {
            let report = run_drill(drill, seed, &provision).expect("the drill runs");
            assert_eq!(report.outcome, Outcome::Passed, "seed {seed}");
            report.figures["rto.hcloud-consumers-recover"].value as u64
        })
        .collect()
}

#[test]
fn a_sweep_of_node_loss_spreads_its_rto_over_the_seeds() {
    let spread = rtos(&node_loss(""), 12);
    assert!(spread.len() >= 2, "one RTO for every seed: {spread:?}");
}

/// The control: the same sweep with every latency a constant.
#[test]
fn with_every_latency_pinned_the_rto_is_one_value() {
    let pinned = node_loss(
        "  latencies:\n\
         \x20   podStartup: {min: 2s, median: 2s, p99: 2s}\n\
         \x20   imagePull: {min: 20s, median: 20s, p99: 20s}\n\
         \x20   volumeAttach: {min: 5s, median: 5s, p99: 5s}\n\
         \x20   volumeDetach: {min: 10s, median: 10s, p99: 10s}\n\
         \x20   nodeBoot: {min: 2m30s, median: 2m30s, p99: 2m30s}\n",
    );
    let one = rtos(&pinned, 12);
    assert_eq!(one.len(), 1, "{one:?}");
    // 15 minutes until the replacement starts, its boot, the pods' start-up.
    let rto = *one.first().expect("one");
    assert!((17 * 60_000..18 * 60_000).contains(&rto), "{rto}");
}

/// The report carries the latencies in force, the drill's overrides over
/// the published defaults, so a sweep says what it drew from.
#[test]
fn the_topology_lists_the_latencies_a_drill_overrides() {
    let drill = node_loss("  latencies:\n    nodeBoot: {min: 1m, median: 2m, p99: 9m}\n");
    let l = &drill.topology.latencies;
    assert_eq!(l.node_boot.p99.as_millis(), 9 * 60_000);
    let defaults = drillbench_model::latency::Latencies::default();
    assert_eq!(l.pod_startup, defaults.pod_startup);
    assert_ne!(l.node_boot, defaults.node_boot);
}
