//! The simulator's speed: how fast it places pods at scale, and how many
//! complete production-shaped drills it runs per second on one core.
//!
//! `cargo bench --bench simulator`. The README's numbers table quotes
//! these results on the 2-core CI machine.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use drillbench::run::run_drill;
use drillbench_backend::sim::provision;
use drillbench_model::drill::Drill;
use drillbench_sim::Simulation;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// 150 000 pods with required and preferred node affinity onto 5 000
/// nodes: provisioning the simulation schedules every pod. Throughput is
/// 150 000 divided by the time per iteration.
fn scheduling_at_scale(c: &mut Criterion) {
    let drill = Drill::load(&root().join("harness/scale/5000-nodes.yaml")).expect("scale drill");
    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    group.bench_function("schedule 150k pods onto 5k nodes", |b| {
        b.iter(|| {
            let sim = Simulation::new(&drill, 1).expect("provisions");
            assert_eq!(
                sim.pods().iter().filter(|p| p.node.is_some()).count(),
                150_000
            );
            black_box(sim)
        })
    });
    group.finish();
}

/// Complete drills, end to end: provision, converge, faults, recovery,
/// every assertion judged, the report assembled (not written).
fn whole_drills(c: &mut Criterion) {
    let mut group = c.benchmark_group("drill");
    for (name, path) in [
        ("cp-recreate", "scenarios/cp-recreate.yaml"),
        (
            "hcloud incident (burst, scale-down, strand)",
            "harness/incident/drill.yaml",
        ),
    ] {
        let drill = Drill::load(&root().join(path)).expect("drill");
        let mut seed = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                seed += 1;
                black_box(run_drill(&drill, seed, &provision).expect("runs"))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, scheduling_at_scale, whole_drills);
criterion_main!(benches);
