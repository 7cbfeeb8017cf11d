//! Stored reports read back by `bench report` and `bench report merge`: a
//! drill report, a sweep, a shard's tally.
#![no_main]

use std::path::Path;

use drillbench_report::DrillReport;
use drillbench_report::sweep::SweepReport;
use drillbench_report::sweep_tally::SweepTally;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let path = Path::new("fuzz.json");
    let _ = DrillReport::from_json(path, text);
    let _ = SweepReport::from_json(path, text);
    if let Ok(mut tally) = serde_json::from_str::<SweepTally>(text) {
        let _ = tally.clone().merge(tally.clone());
        tally.interrupted = false;
        let _ = tally.finish();
    }
});
