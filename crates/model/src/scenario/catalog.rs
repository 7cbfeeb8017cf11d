//! The built-in drills, found by name: compiled into the binary with the
//! files they read (see [`crate::embedded`]), or read from the folder
//! `$BENCH_SCENARIO_DIR` names when it is set.

use std::path::{Path, PathBuf};

use super::diagnostic::Diagnostic;
use super::parse::{MAX_DRILL_BYTES, parse, read_source};
use crate::embedded;

/// The environment variable that points the bench at another drill folder.
const SCENARIO_DIR_ENV: &str = "BENCH_SCENARIO_DIR";

/// The folder of built-in drills: `$BENCH_SCENARIO_DIR` if set, else the
/// embedded `scenarios/`.
fn scenario_dir() -> PathBuf {
    match std::env::var_os(SCENARIO_DIR_ENV) {
        Some(dir) => PathBuf::from(dir),
        None => embedded::path_of("scenarios"),
    }
}

/// The drill files of the built-in folder, sorted.
fn drill_paths(dir: &Path) -> Result<Vec<PathBuf>, Diagnostic> {
    let mut paths: Vec<PathBuf> = if embedded::is_embedded(dir) {
        embedded::files()
            .iter()
            .filter_map(|(path, _)| path.strip_prefix("scenarios/"))
            .filter(|name| !name.contains('/'))
            .map(|name| dir.join(name))
            .collect()
    } else {
        std::fs::read_dir(dir)
            .map_err(|e| Diagnostic::file(dir, format!("cannot read the drill folder: {e}")))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .collect()
    };
    paths.retain(|p| p.extension().is_some_and(|e| e == "yaml"));
    paths.sort();
    Ok(paths)
}

/// One built-in drill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The drill's name (`bench run NAME`).
    pub name: String,
    /// Where it is read from: under [`embedded::ROOT`], or in
    /// `$BENCH_SCENARIO_DIR`.
    pub path: PathBuf,
    /// The first sentence of its description.
    pub summary: String,
}

/// The built-in drills, sorted by name. A file that does not parse is
/// reported rather than skipped: a broken built-in is a bug to see.
pub fn list() -> Result<Vec<Entry>, Diagnostic> {
    let mut entries = Vec::new();
    for path in drill_paths(&scenario_dir())? {
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
    #[error("no drill named `{name}`{}; expected a drill file or one of: {known}", did_you_mean(.suggestion))]
    Unknown {
        name: String,
        /// The built-in name closest to `name`, if one is close.
        suggestion: Option<String>,
        /// The built-in names, comma-separated.
        known: String,
    },
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default()
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
    if embedded::is_file(&candidate) {
        return Ok(candidate);
    }
    let names: Vec<String> = list()
        .map(|entries| entries.into_iter().map(|e| e.name).collect())
        .unwrap_or_default();
    Err(ResolveError::Unknown {
        name: name_or_path.to_owned(),
        suggestion: crate::suggest::closest(name_or_path, names.iter().map(String::as_str))
            .map(str::to_owned),
        known: names.join(", "),
    })
}

/// Why `bench scenarios export` wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// A file is already there with other contents; nothing is overwritten,
    /// so a user's edits are never lost to an export.
    #[error("{} already exists with other contents; expected a new or empty folder, or one exported before", .0.display())]
    Exists(PathBuf),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Writes every embedded file under `dir`, keeping its layout
/// (`scenarios/`, `harness/...`), so the exported drills' relative
/// references resolve and `bench run DIR/scenarios/NAME.yaml` runs the
/// built-in. Files already there with the same contents are left as they
/// are; any other existing file stops the export before anything is
/// written. Returns the files written.
pub fn export(dir: &Path) -> Result<Vec<PathBuf>, ExportError> {
    let target = |relative: &str| dir.join(relative.split('/').collect::<PathBuf>());
    for (relative, text) in embedded::files() {
        let path = target(relative);
        match std::fs::read(&path) {
            Ok(existing) if existing == text.as_bytes() => {}
            Ok(_) => return Err(ExportError::Exists(path)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(ExportError::Write { path, source }),
        }
    }
    let mut written = Vec::new();
    for (relative, text) in embedded::files() {
        let path = target(relative);
        if path.is_file() {
            continue;
        }
        let write = |path: &Path| {
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, text)
        };
        write(&path).map_err(|source| ExportError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}
