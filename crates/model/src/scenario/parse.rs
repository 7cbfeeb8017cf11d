//! Reading a drill file and parsing it into [`DrillSpec`], within bounds.
//!
//! Hostile input (an alias bomb, a 50 MB file, binary garbage, deep nesting)
//! must end in a prompt diagnostic with bounded memory, never a panic: the
//! file is read through a size cap, and the YAML parser runs under a budget.

use std::io::Read;
use std::path::Path;

use serde_saphyr::{Budget, MessageFormatter, Options};

use super::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use super::located::Position;
use super::spec::DrillSpec;

/// The largest drill file the bench reads. Drills are short; a bigger file
/// is a mistake (or an attack), and refusing it early bounds memory.
pub(crate) const MAX_DRILL_BYTES: u64 = 1024 * 1024;

/// Reads a text file of at most `limit` bytes, as a diagnostic on failure.
pub(crate) fn read_source(path: &Path, limit: u64) -> Result<SourceFile, Diagnostic> {
    if crate::embedded::is_embedded(path) {
        return match crate::embedded::read(path) {
            Some(text) => Ok(SourceFile::new(path, text)),
            None => Err(Diagnostic::file(
                path,
                format!(
                    "cannot read the file: {}",
                    crate::embedded::not_embedded(path)
                ),
            )),
        };
    }
    // Opening a FIFO blocks until something writes to it, and a device may
    // never end: only regular files are read.
    let metadata = std::fs::metadata(path)
        .map_err(|e| Diagnostic::file(path, format!("cannot read the file: {e}")))?;
    if !metadata.is_file() {
        return Err(Diagnostic::file(
            path,
            "not a regular file (a folder, pipe or device); expected a YAML file",
        ));
    }
    let file = std::fs::File::open(path)
        .map_err(|e| Diagnostic::file(path, format!("cannot read the file: {e}")))?;
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Diagnostic::file(path, format!("cannot read the file: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(Diagnostic::file(
            path,
            format!("the file is larger than {limit} bytes, the most this kind of file may hold"),
        ));
    }
    decode(path, bytes)
}

/// Turns bytes read from `path` into a source, or a diagnostic at the first
/// byte that is not UTF-8.
pub fn decode(path: &Path, bytes: Vec<u8>) -> Result<SourceFile, Diagnostic> {
    match String::from_utf8(bytes) {
        Ok(text) => Ok(SourceFile::new(path, text)),
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let prefix = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
            let source = SourceFile::new(path, prefix);
            Err(Diagnostic::at_offset(
                &source,
                valid,
                "the file is not UTF-8 text; expected a YAML drill file",
            ))
        }
    }
}

/// The parser options for every YAML file the bench reads: duplicate keys
/// are errors, and a budget far above any real drill or manifest bundle but
/// far below what would exhaust memory.
pub(crate) fn yaml_options() -> Options {
    let mut options = Options::default();
    let mut budget = Budget::default();
    budget.max_events = 2_000_000;
    budget.max_aliases = 10_000;
    budget.max_anchors = 10_000;
    budget.max_depth = 64;
    budget.max_nodes = 1_000_000;
    options.budget = Some(budget);
    options.with_snippet = false;
    options
}

/// The message of a YAML error for a person: without its position (a
/// diagnostic carries it separately), without hints aimed at developers of
/// the parser, and without control characters.
pub(crate) fn yaml_message(error: &serde_saphyr::Error) -> String {
    use serde_saphyr::Error;
    use serde_saphyr::budget::BudgetBreach;
    let mut original = error;
    while let Error::AliasError { error, .. } | Error::WithSnippet { error, .. } = original {
        original = error;
    }
    let message = match original {
        Error::Budget {
            breach: BudgetBreach::Depth { .. },
            ..
        } => "the YAML nests deeper than 64 levels; no drill or manifest needs that".to_owned(),
        Error::Budget { breach, .. } => format!(
            "the YAML exceeds the parser's budget ({}): an alias bomb or a file far larger than \
             any drill; refused before it could exhaust memory",
            breach_name(breach)
        ),
        Error::MultipleDocuments { .. } => {
            "the file holds more than one YAML document; expected exactly one".to_owned()
        }
        other => {
            let text = serde_saphyr::DefaultMessageFormatter.format_message(other);
            if let Some(key) = text
                .strip_prefix("duplicate mapping key: ")
                .and_then(|rest| rest.split(", set DuplicateKeyPolicy").next())
            {
                format!("duplicate key `{key}`; a key may appear only once in a mapping")
            } else if let Some(kind) = text.strip_prefix("invalid ").filter(|k| k.starts_with('u'))
            {
                format!("invalid {kind}; expected a whole number, not negative")
            } else {
                text.into_owned()
            }
        }
    };
    message
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

fn breach_name(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    let debug = format!("{breach:?}");
    debug
        .split([' ', '{', '('])
        .next()
        .unwrap_or_default()
        .to_owned()
}

pub(crate) fn yaml_position(error: &serde_saphyr::Error) -> Position {
    error
        .location()
        .map(Position::from_saphyr)
        .unwrap_or(Position::UNKNOWN)
}

pub fn parse(source: &SourceFile) -> Result<DrillSpec, Diagnostics> {
    if is_blank(&source.text) {
        let diagnostic = Diagnostic::at(
            source,
            Position::UNKNOWN,
            "the file holds no drill; expected a mapping with apiVersion, kind, metadata and cluster",
        );
        return Err(Diagnostics(vec![diagnostic]));
    }
    serde_saphyr::from_str_with_options::<DrillSpec>(&source.text, yaml_options()).map_err(
        |error| {
            let mut message = yaml_message(&error);
            let at = yaml_position(&error);
            if at.line <= 1 && at.column <= 1 && message.contains("mapping") {
                message.push_str(
                    "; a drill file is a mapping with apiVersion, kind, metadata and cluster",
                );
            }
            Diagnostics(vec![Diagnostic::at(source, at, message)])
        },
    )
}

/// Whether a text holds nothing but blank lines, comments and document markers.
fn is_blank(text: &str) -> bool {
    text.lines().all(|line| {
        let line = line.trim();
        line.is_empty() || line.starts_with('#') || line == "---" || line == "..."
    })
}
