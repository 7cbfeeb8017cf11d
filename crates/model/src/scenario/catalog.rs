//! The built-in drills: one YAML file each in `scenarios/`, found by name.

use std::path::{Path, PathBuf};

use super::diagnostic::Diagnostic;
use super::parse::{MAX_DRILL_BYTES, parse, read_source};

/// The environment variable that points the bench at another drill folder.
const SCENARIO_DIR_ENV: &str = "BENCH_SCENARIO_DIR";

/// The folder of built-in drills: `$BENCH_SCENARIO_DIR` if set, else the
/// repository's `scenarios/` (drills refer to `harness/` files by relative
/// path, so they are read in place rather than embedded in the binary).
fn scenario_dir() -> PathBuf {
    match std::env::var_os(SCENARIO_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        // This crate sits in the repository's `crates/model`.
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .nth(2)
            .unwrap_or(Path::new("."))
            .join("scenarios"),
    }
}

/// One built-in drill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The drill's name (`bench run NAME`).
    pub name: String,
    pub path: PathBuf,
    /// The first sentence of its description.
    pub summary: String,
}

/// The built-in drills, sorted by name. A file that does not parse is
/// reported rather than skipped: a broken built-in is a bug to see.
pub fn list() -> Result<Vec<Entry>, Diagnostic> {
    let dir = scenario_dir();
    let read = std::fs::read_dir(&dir)
        .map_err(|e| Diagnostic::file(&dir, format!("cannot read the drill folder: {e}")))?;
    let mut paths: Vec<PathBuf> = read
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    let mut entries = Vec::new();
    for path in paths {
        let source = read_source(&path, MAX_DRILL_BYTES)?;
        let spec = parse(&source).map_err(|mut d| d.0.remove(0))?;
        let description = spec.metadata.description.unwrap_or_default();
        let summary = first_sentence(&description);
        entries.push(Entry {
            name: spec.metadata.name.value,
            path,
            summary,
        });
    }
    Ok(entries)
}

fn first_sentence(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.find(". ") {
        Some(end) => text[..=end].to_owned(),
        None => text,
    }
}

/// Why a drill could not be found.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Neither a file nor a built-in name.
    #[error("no drill named `{name}`; expected a drill file or one of: {known}")]
    Unknown {
        name: String,
        /// The built-in names, comma-separated.
        known: String,
    },
}

/// Resolves `bench run NAME|FILE`: an existing file, or a built-in by name.
pub fn resolve(name_or_path: &str) -> Result<PathBuf, ResolveError> {
    let as_path = Path::new(name_or_path);
    let looks_like_path = name_or_path.contains(std::path::MAIN_SEPARATOR)
        || name_or_path.ends_with(".yaml")
        || name_or_path.ends_with(".yml");
    if looks_like_path || as_path.is_file() {
        return Ok(as_path.to_path_buf());
    }
    let candidate = scenario_dir().join(format!("{name_or_path}.yaml"));
    if candidate.is_file() {
        return Ok(candidate);
    }
    let known = list()
        .map(|entries| {
            entries
                .into_iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    Err(ResolveError::Unknown {
        name: name_or_path.to_owned(),
        known,
    })
}
