//! kube-scheduler's `scheduler_perf` workloads, shaped for the simulator:
//! how many pods per second it places for each, at 500, 5 000 and 10 000
//! nodes, every node with its own hostname and the zones as pools.
//!
//! The drills are `harness/scale/scheduler-perf/<workload>/<n>-nodes.yaml`;
//! each names the upstream workload, its source file and its published
//! threshold (pods/s, at 5 000 nodes). Throughput here is every pod of the
//! drill (init and measured) divided by the time to provision the
//! simulation, which schedules them all: node creation included, so it
//! understates the placement rate upstream's `collectMetrics` measures.
//!
//! `cargo bench --bench scheduler_perf` (all), or a filter such as
//! `cargo bench --bench scheduler_perf -- pod-anti-affinity/5000`.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use drillbench_model::drill::Drill;
use drillbench_sim::Simulation;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The workloads the simulator runs, with the pods each drill creates at
/// 500, 5 000 and 10 000 nodes (init + measured, as the drill files).
const WORKLOADS: [(&str, [usize; 3]); 6] = [
    ("scheduling-basic", [1_500, 55_000, 110_000]),
    ("node-affinity", [1_500, 15_000, 30_000]),
    ("pod-anti-affinity", [500, 3_000, 6_000]),
    ("pod-affinity", [1_500, 10_000, 20_000]),
    ("topology-spreading", [2_000, 10_000, 20_000]),
    ("preferred-topology-spreading", [2_000, 10_000, 20_000]),
];

const NODES: [usize; 3] = [500, 5_000, 10_000];

fn scheduler_perf(c: &mut Criterion) {
    let mut group = c.benchmark_group("scheduler_perf");
    group.sample_size(10);
    for (workload, pods) in WORKLOADS {
        for (nodes, pods) in NODES.into_iter().zip(pods) {
            let path = format!("harness/scale/scheduler-perf/{workload}/{nodes}-nodes.yaml");
            let drill = Drill::load(&root().join(&path)).expect("scheduler_perf drill");
            group.throughput(Throughput::Elements(pods as u64));
            group.bench_function(format!("{workload}/{nodes}"), |b| {
                b.iter(|| {
                    let sim = Simulation::new(&drill, 1).expect("provisions");
                    assert_eq!(
                        sim.pods().iter().filter(|p| p.node.is_some()).count(),
                        pods,
                        "{path}: every pod placed"
                    );
                    black_box(sim)
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, scheduler_perf);
criterion_main!(benches);
