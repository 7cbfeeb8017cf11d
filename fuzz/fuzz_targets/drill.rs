//! A drill file: parsing, the typed lowering and every check `validate`
//! runs. Any input must end in a drill or diagnostics, never a panic.
#![no_main]

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let _ = Drill::from_source(SourceFile::new("fuzz/drill.yaml", text));
});
