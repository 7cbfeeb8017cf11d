//! The fuzz targets' committed seeds (`fuzz/seeds/TARGET`), replayed through
//! the same loaders on the stable toolchain: every seed must load or be
//! refused with an error, never panic. The fuzzing itself runs with
//! `fuzz/run.sh TARGET SECONDS` (nightly, libFuzzer) in the nightly
//! workflow; a crash it finds becomes a seed here.

use std::collections::BTreeMap;
use std::path::Path;

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;
use drillbench_model::topology::ksail;
use drillbench_model::{flux_substitute, manifest, manifest_rules, object_rules};
use drillbench_preflight::{etcd, input};
use drillbench_report::DrillReport;
use drillbench_report::sweep::SweepReport;
use drillbench_report::sweep_tally::SweepTally;

use crate::common::root;

fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = root().join("fuzz/seeds").join(target);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.expect("entry").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{target} has seeds");
    files
        .into_iter()
        .map(|f| (f.display().to_string(), std::fs::read(&f).expect("seed")))
        .collect()
}

#[test]
fn drill_seeds_load_or_are_refused() {
    let mut bad = 0;
    for (name, bytes) in seeds("drill") {
        // The target takes text, as the loader refuses anything else first.
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let loaded = Drill::from_source(SourceFile::new(name.clone(), text));
        // The bad-drill corpus's seeds stay refused; the built-ins import
        // files by paths relative to a folder the seed is not in, so
        // whether they load says nothing. None may panic.
        if name.contains("/bad-") {
            assert!(loaded.is_err(), "{name}");
            bad += 1;
        }
    }
    assert!(bad >= 100, "{bad}");
}

#[test]
fn manifest_seeds_are_judged_object_by_object() {
    let mut objects = 0;
    for (name, bytes) in seeds("manifests") {
        let text = String::from_utf8(bytes).expect("utf-8 seed");
        let text = flux_substitute::substitute_manifest(&text, &BTreeMap::new())
            .unwrap_or_else(|_| text.clone());
        let documents = manifest::parse_documents(&name, &text).expect("seeds are well-formed");
        for document in &documents {
            let _ = manifest_rules::object_field_problems(&document.value);
            let _ = object_rules::object_problem(&document.value);
            let _ = object_rules::object_rule_problems(&document.value);
            objects += 1;
        }
    }
    assert!(objects > 50, "{objects}");
}

#[test]
fn ksail_preflight_and_report_seeds_load() {
    for (name, bytes) in seeds("ksail") {
        let text = String::from_utf8(bytes).expect("utf-8 seed");
        ksail::import_source(&SourceFile::new(name, text)).expect("the seed is a good import");
    }
    for (name, bytes) in seeds("preflight") {
        let (&which, rest) = bytes.split_first().expect("a selector byte");
        let text = std::str::from_utf8(rest).expect("utf-8 seed");
        let loaded = match which % 3 {
            0 => etcd::parse_members(text).is_ok(),
            1 => input::nodes_from_list(&name, &serde_json::from_str(text).expect("json")).is_ok(),
            _ => {
                input::backups_from_list(&name, &serde_json::from_str(text).expect("json")).is_ok()
            }
        };
        assert!(loaded, "{name}");
    }
    for (name, bytes) in seeds("report") {
        let text = String::from_utf8(bytes).expect("utf-8 seed");
        let path = Path::new(&name);
        let loaded = DrillReport::from_json(path, &text).is_ok()
            || SweepReport::from_json(path, &text).is_ok()
            || serde_json::from_str::<SweepTally>(&text).is_ok();
        assert!(loaded, "{name}");
    }
}
