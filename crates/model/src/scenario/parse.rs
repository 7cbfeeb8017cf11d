//! Reading a drill file and parsing it into [`DrillSpec`], within bounds.
//!
//! Hostile input (an alias bomb, a 50 MB file, binary garbage, deep nesting)
//! must end in a prompt diagnostic with bounded memory, never a panic: the
//! file is read through a size cap, and the YAML parser runs under a budget.

use std::io::Read;
use std::path::Path;

use serde_saphyr::{Budget, MessageFormatter, Options};

use super::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use super::located::{Located, Position};
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
    // A drill or ksail file records a handful of anchors, if any. Left at
    // a million, an alias bomb that re-anchors what it expands took seconds
    // to refuse (found by the `drill` fuzz target).
    budget.max_recorded_anchor_events = 100_000;
    options.budget = Some(budget);
    options.alias_limits.max_total_replayed_events = 100_000;
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

/// Most syntax errors reported from one file: past this, the rest are
/// likely one mistake repeated, and each retry re-reads the file.
const MAX_SYNTAX_ERRORS: usize = 20;

/// Parses a drill file, reporting every syntax error the parser can
/// recover from in one pass, not one per run: after an error on a
/// `key: value` entry (an unknown field, a value of the wrong kind), the
/// entry is blanked out, lines kept, and the file read again; the next
/// error, if any, is the next one to report. A "missing field" error after
/// a recovery ends the pass unsaid (see below).
/// Errors elsewhere (broken YAML, an entry of a sequence item) end it too.
pub fn parse(source: &SourceFile) -> Result<DrillSpec, Diagnostics> {
    if is_blank(&source.text) {
        let diagnostic = Diagnostic::at(
            source,
            Position::UNKNOWN,
            "the file holds no drill; expected a mapping with apiVersion, kind, metadata and cluster",
        );
        return Err(Diagnostics(vec![diagnostic]));
    }
    let mut text = source.text.to_string();
    let mut found: Vec<Diagnostic> = Vec::new();
    // The entries blanked out so far: line and key.
    let mut blanked: Vec<(u32, String)> = Vec::new();
    loop {
        let error = match serde_saphyr::from_str_with_options::<DrillSpec>(&text, yaml_options()) {
            Ok(mut spec) if found.is_empty() => {
                spec.guards = spec
                    .guard_entries
                    .iter()
                    .filter_map(|e| Some(Located::at(e.shorthand()?, e.at)))
                    .collect();
                return Ok(spec);
            }
            Ok(_) => break,
            Err(error) => error,
        };
        let mut message = yaml_message(&error);
        let at = yaml_position(&error);
        // The parser meets errors in file order, so a real next error lies
        // past the entry blanked last. One at or before it is the
        // blanking's own doing (a mapping left empty, a field now missing,
        // most often the same mistake: `clusters:` for `cluster:`), and a
        // missing field is said at its mapping's start: either ends the
        // pass unsaid.
        if blanked.last().is_some_and(|(line, _)| at.line <= *line)
            || (!blanked.is_empty() && message.contains("missing field"))
        {
            break;
        }
        if at.line <= 1 && at.column <= 1 && message.contains("mapping") {
            message.push_str(
                "; a drill file is a mapping with apiVersion, kind, metadata and cluster",
            );
        }
        // Only an entry whose key or value the schema refused can be
        // blanked out; broken YAML (an unclosed quote, a second document)
        // leaves nothing safe to retry.
        let recoverable = [
            "unknown field",
            "invalid type",
            "invalid value",
            "unknown variant",
        ]
        .iter()
        .any(|kind| message.contains(kind));
        found.push(Diagnostic::at(source, at, message));
        if !recoverable || found.len() >= MAX_SYNTAX_ERRORS {
            break;
        }
        match blank_entry(&text, at) {
            Some((next, key)) => {
                text = next;
                blanked.push((at.line, key));
            }
            None => break,
        }
    }
    // Each error once, in the order the parser met them: the schema's
    // refusals in file order, then what a mapping still lacks at its end.
    found.dedup_by(|a, b| a.line == b.line && a.column == b.column && a.message == b.message);
    Err(Diagnostics(found))
}

/// `text` with the block-style `key: value` entry on the error's line
/// replaced by blank lines (its nested lines too), and the key; `None`
/// when that line holds no such entry, so recovery would be a guess.
fn blank_entry(text: &str, at: Position) -> Option<(String, String)> {
    if !at.is_known() || at.line == 0 {
        return None;
    }
    let lines: Vec<&str> = text.split('\n').collect();
    let index = usize::try_from(at.line).ok()?.checked_sub(1)?;
    let line = *lines.get(index)?;
    let indent = line.len() - line.trim_start().len();
    let content = line.trim_start();
    // Only a plain entry of a block mapping: a sequence item, a flow
    // collection or a comment is not blanked.
    if content.starts_with(['-', '{', '[', '#']) {
        return None;
    }
    let key = content.split_once(':')?.0.trim();
    if key.is_empty() || key.contains([' ', '"', '\'', '{', '[']) {
        return None;
    }
    let mut end = index + 1;
    while end < lines.len() {
        let next = lines[end];
        let next_indent = next.len() - next.trim_start().len();
        if next.trim().is_empty() || next_indent > indent {
            end += 1;
        } else {
            break;
        }
    }
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    out.extend(&lines[..index]);
    out.extend(std::iter::repeat_n("", end - index));
    out.extend(&lines[end..]);
    Some((out.join("\n"), key.to_owned()))
}

/// Whether a text holds nothing but blank lines, comments and document markers.
fn is_blank(text: &str) -> bool {
    text.lines().all(|line| {
        let line = line.trim();
        line.is_empty() || line.starts_with('#') || line == "---" || line == "..."
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DRILL: &str = "\
apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata:
  name: several
  descripton: misspelt
cluster:
  controlPlanes: {count: 3, serverType: cx23}
  workerz: 2
  pools:
    - name: w
      count: 2
      serverType: cx33
assertions:
  - name: api
    apiAvailability: {min: 0.99}
    colour: red
";

    fn errors(text: &str) -> Vec<(u32, String)> {
        let source = SourceFile::new("drill.yaml", text);
        match parse(&source) {
            Ok(_) => Vec::new(),
            Err(d) => d.0.into_iter().map(|d| (d.line, d.message)).collect(),
        }
    }

    #[test]
    fn every_unknown_field_of_a_file_is_reported_in_one_pass_in_order() {
        let found = errors(DRILL);
        let lines: Vec<u32> = found.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [5, 8, 15, 16], "{found:#?}");
        for (i, field) in ["descripton", "workerz", "apiAvailability", "colour"]
            .iter()
            .enumerate()
        {
            assert!(found[i].1.contains(&format!("`{field}`")), "{found:#?}");
        }
    }

    #[test]
    fn one_error_is_one_diagnostic_and_a_good_file_none() {
        let head = &DRILL[..DRILL.find("assertions:").expect("assertions")];
        let one = head.replace("  workerz: 2\n", "");
        let found = errors(&one);
        assert_eq!(found.len(), 1, "{found:#?}");
        assert_eq!(found[0].0, 5);
        assert_eq!(errors(&one.replace("descripton", "description")), []);
    }

    #[test]
    fn blanking_keeps_lines_and_refuses_what_it_cannot_blank() {
        let text = "a: 1\nb:\n  c: 2\n\n  d: 3\ne: 4\n";
        let at = |line| Position {
            line,
            column: 1,
            offset: 0,
            len: 0,
        };
        let (out, key) = blank_entry(text, at(2)).expect("an entry");
        assert_eq!(key, "b");
        assert_eq!(out, "a: 1\n\n\n\n\ne: 4\n");
        assert_eq!(out.lines().count(), text.lines().count());
        assert_eq!(blank_entry("- a: 1\n", at(1)), None);
        assert_eq!(blank_entry("x: {a: 1}\n", at(0)), None);
    }
}
