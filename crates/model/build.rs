//! Compiles the built-in drills, and the files they read, into the binary:
//! a copied `bench` lists and runs them from any folder. The list of files is
//! generated here rather than written by hand so a new drill or manifest in
//! these folders is embedded without anyone remembering to add it, and
//! `rerun-if-changed` on the folders makes Cargo notice added files too.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Folders embedded whole, relative to the repository root.
const FOLDERS: [&str; 4] = [
    "scenarios",
    "harness/ksail",
    "harness/manifests",
    "harness/kyverno/policies",
];
/// Single files embedded beside them: the schema the drills name in their
/// `yaml-language-server` line, so an exported drill is checked in editors.
const FILES: [&str; 1] = ["harness/schema/drill.schema.json"];

fn main() {
    // This crate sits in the repository's `crates/model`.
    let package = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = package.ancestors().nth(2).expect("crates/model").to_owned();
    let mut relative: Vec<String> = FILES.iter().map(|f| (*f).to_owned()).collect();
    for folder in FOLDERS {
        println!("cargo:rerun-if-changed={}", root.join(folder).display());
        collect(&root, Path::new(folder), &mut relative);
    }
    for file in FILES {
        println!("cargo:rerun-if-changed={}", root.join(file).display());
    }
    relative.sort();
    let mut out = String::from(
        "/// Every embedded file: its path relative to the repository root, \
         with `/` separators, and its text; sorted by path.\n\
         pub(crate) static FILES: &[(&str, &str)] = &[\n",
    );
    for file in &relative {
        let absolute = root.join(file);
        let absolute = absolute.to_str().expect("a UTF-8 path");
        writeln!(out, "    ({file:?}, include_str!({absolute:?})),").expect("to a string");
    }
    out.push_str("];\n");
    let generated =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("embedded_files.rs");
    std::fs::write(generated, out).expect("write the embedded file list");
}

/// The regular files under `folder`, recursively, as `/`-separated paths.
fn collect(root: &Path, folder: &Path, out: &mut Vec<String>) {
    let entries = std::fs::read_dir(root.join(folder)).expect("an embedded folder");
    for entry in entries {
        let entry = entry.expect("a folder entry");
        let relative = folder.join(entry.file_name());
        let kind = entry.file_type().expect("a file type");
        if kind.is_dir() {
            collect(root, &relative, out);
        } else if kind.is_file() {
            let parts: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            out.push(parts.join("/"));
        }
    }
}
