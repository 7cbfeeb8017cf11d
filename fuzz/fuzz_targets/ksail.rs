//! A ksail Cluster file imported as a drill's topology.
#![no_main]

use drillbench_model::scenario::SourceFile;
use drillbench_model::topology::ksail;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = ksail::import_source(&SourceFile::new("fuzz/ksail.yaml", text));
});
