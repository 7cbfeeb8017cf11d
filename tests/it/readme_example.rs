//! The documentation's examples are true: the drill example of
//! docs/drill-language.md is a valid drill, and the README's sample output
//! is what its first command prints. Documentation that cannot rot.

use std::path::Path;

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;

use crate::common::bench_in;

/// The text of the first fenced block that starts with `opening`.
fn block<'t>(text: &'t str, opening: &str) -> &'t str {
    let start = text
        .find(opening)
        .unwrap_or_else(|| panic!("no block starting {opening:?}"))
        + opening.find('\n').map_or(0, |n| n + 1);
    let end = start + text[start..].find("```").expect("closed block");
    &text[start..end]
}

#[test]
fn the_drill_language_example_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/drill-language.md")).expect("the doc");
    let example = block(&doc, "```yaml\napiVersion: drillbench.dev/v1alpha1");
    // Paths in the example are written as a built-in drill would write them.
    let source = SourceFile::new(
        root.join("scenarios/readme-example.yaml"),
        example.to_owned(),
    );
    match Drill::from_source(source) {
        Ok(drill) => assert_eq!(drill.name(), "autoscaler-scale-down"),
        Err(diagnostics) => panic!("{}", diagnostics.render(false)),
    }
}

#[test]
fn the_readme_sample_output_is_what_its_first_command_prints() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    let commands = block(&readme, "```sh\n");
    let first = commands.lines().next().expect("a first command");
    assert!(
        first.starts_with("cargo run --release -- run cp-recreate "),
        "{first}"
    );
    let sample = block(&readme, "```text\ncp-recreate on sim");
    // In an empty folder, as the README says it works from any folder.
    let dir = tempfile::tempdir().expect("tempdir");
    let run = bench_in(dir.path(), &["run", "cp-recreate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, sample);
}
