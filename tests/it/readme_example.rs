//! The README's drill example is a valid drill: documentation that cannot rot.

use std::path::Path;

use drillbench_model::drill::Drill;
use drillbench_model::scenario::SourceFile;

#[test]
fn the_readme_example_validates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    let start = readme
        .find("```yaml\napiVersion: drillbench.dev/v1alpha1")
        .expect("the README shows a drill")
        + "```yaml\n".len();
    let end = start + readme[start..].find("```").expect("closed block");
    let example = &readme[start..end];
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
