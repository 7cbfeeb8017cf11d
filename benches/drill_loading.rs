//! How long it takes to turn a drill file into a validated drill: parse,
//! check, resolve the topology (with the ksail import). Sweeps of thousands
//! of seeds load the drill once, but `bench validate` in an editor's save
//! hook loads it every time.

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;

fn load_cp_recreate(c: &mut Criterion) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cp-recreate.yaml");
    let text = std::fs::read_to_string(&path).expect("built-in drill");
    c.bench_function("load cp-recreate (parse, check, ksail import)", |b| {
        b.iter(|| {
            let source = SourceFile::new(path.clone(), text.clone());
            black_box(Drill::from_source(source).expect("valid"))
        })
    });
}

criterion_group!(benches, load_cp_recreate);
criterion_main!(benches);
