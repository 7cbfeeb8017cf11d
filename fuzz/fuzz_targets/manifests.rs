//! Rendered manifests: the budgeted YAML stream, Flux substitution, and the
//! API-server rules every object is checked against at validate time.
#![no_main]

use std::collections::BTreeMap;

use drillbench_model::{flux_substitute, manifest, manifest_rules, object_rules};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    let text = flux_substitute::substitute_manifest(text, &BTreeMap::new())
        .unwrap_or_else(|_| text.to_owned());
    let Ok(documents) = manifest::parse_documents("fuzz.yaml", &text) else {
        return;
    };
    for document in &documents {
        let _ = manifest_rules::object_field_problems(&document.value);
        let _ = object_rules::object_problem(&document.value);
        let _ = object_rules::object_rule_problems(&document.value);
    }
});
