//! Property tests of the drill loader: whatever the input, it never panics
//! and ends in either a valid drill or diagnostics that point into the file.

use std::path::Path;

use drillbench_model::drill::Drill;
use drillbench_model::scenario::parse::decode;
use proptest::prelude::*;

/// Loads bytes as if read from a file in `scenarios/` (so relative paths
/// in a generated drill resolve the way a built-in's would).
fn load(bytes: Vec<u8>) -> Result<Drill, Vec<(u32, u32, String)>> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/generated.yaml");
    let source = decode(&path, bytes).map_err(|d| vec![(d.line, d.column, d.message)])?;
    let lines = source.text.lines().count() as u32 + 1;
    Drill::from_source(source).map_err(|diagnostics| {
        assert!(
            !diagnostics.is_empty(),
            "an invalid drill names at least one problem"
        );
        diagnostics
            .0
            .iter()
            .map(|d| {
                assert!(d.file.ends_with("generated.yaml") || d.file.extension().is_some());
                if d.file.ends_with("generated.yaml") {
                    assert!(
                        d.line >= 1 && d.line <= lines,
                        "line {} of {lines}: {}",
                        d.line,
                        d.message
                    );
                    assert!(d.column >= 1, "{}", d.message);
                }
                assert!(!d.message.is_empty());
                (d.line, d.column, d.message.clone())
            })
            .collect()
    })
}

fn valid_drill() -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cp-recreate.yaml"),
    )
    .expect("built-in drill")
}

/// Scalars a drill might contain, and some it must refuse.
fn scalar() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| serde_json::json!(f)),
        prop_oneof![
            Just("drillbench.dev/v1alpha1"),
            Just("Drill"),
            Just("10m"),
            Just("cx43"),
            Just("hcloud"),
            Just("endpointHolder"),
            Just("In"),
            Just("prod-worker-{n}"),
            Just("{hex12}"),
        ]
        .prop_map(|s| serde_json::Value::String(s.to_owned())),
        "[a-z{}0-9 -]{0,12}".prop_map(serde_json::Value::String),
    ]
}

/// Keys of the drill language, so generated trees reach deep into it.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("apiVersion"),
        Just("kind"),
        Just("metadata"),
        Just("name"),
        Just("cluster"),
        Just("pools"),
        Just("count"),
        Just("autoscaled"),
        Just("min"),
        Just("max"),
        Just("serverType"),
        Just("labels"),
        Just("steps"),
        Just("fault"),
        Just("deleteNode"),
        Just("target"),
        Just("node"),
        Just("wait"),
        Just("until"),
        Just("timeout"),
        Just("assertions"),
        Just("quorum"),
        Just("rto"),
        Just("of"),
        Just("within"),
        Just("recovery"),
        Just("after"),
        Just("duration"),
        Just("fixed"),
        Just("import"),
        Just("storageClasses"),
        Just("attach"),
        Just("guards"),
        Just("negativeControl"),
        Just("bogus"),
    ]
    .prop_map(str::to_owned)
}

fn tree() -> impl Strategy<Value = serde_json::Value> {
    scalar().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(serde_json::Value::Array),
            prop::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = load(bytes);
    }

    #[test]
    fn arbitrary_yaml_trees_never_panic(tree in tree()) {
        let yaml = serde_saphyr::to_string(&tree).expect("a JSON tree serializes to YAML");
        let _ = load(yaml.into_bytes());
    }

    #[test]
    fn a_valid_drill_with_a_drill_shaped_tree_grafted_in_never_panics(
        tree in tree(),
        section in prop_oneof![Just("steps"), Just("assertions"), Just("guards"), Just("recovery"), Just("workloads")],
    ) {
        let mut doc: serde_json::Value = serde_saphyr::from_str(&valid_drill()).expect("valid drill parses as a tree");
        doc[section] = tree;
        let yaml = serde_saphyr::to_string(&doc).expect("serializes");
        let _ = load(yaml.into_bytes());
    }

    #[test]
    fn a_valid_drill_with_a_span_cut_out_never_panics(start in 0usize..2000, len in 0usize..200) {
        let text = valid_drill().into_bytes();
        let start = start.min(text.len());
        let end = (start + len).min(text.len());
        let mut cut = text[..start].to_vec();
        cut.extend_from_slice(&text[end..]);
        let _ = load(cut);
    }
}

#[test]
fn the_unmodified_drill_loads() {
    assert!(load(valid_drill().into_bytes()).is_ok());
}
