//! Loading rendered Kubernetes manifests: multi-document YAML as `kustomize
//! build`, `helm template` or `kubectl get -o yaml` print it.
//!
//! Every document keeps where it came from (source, index, line and column),
//! so whoever judges it later can point a person at the exact object. Input is
//! treated as hostile: YAML is parsed with [`serde_saphyr`] under an explicit
//! [`serde_saphyr::Budget`], so an alias bomb or a huge file ends in a prompt
//! [`ManifestError`], never a panic or unbounded memory.
//!
//! ```
//! use drillbench_model::manifest::parse_documents;
//!
//! let docs = parse_documents("bundle.yaml", "---\n# a comment\n---\nkind: Pod\n").unwrap();
//! assert_eq!(docs.len(), 1);
//! assert_eq!(docs[0].kind(), Some("Pod"));
//! assert_eq!((docs[0].line, docs[0].column), (4, 1));
//! ```

use std::fmt;
use std::io::Read;
use std::path::Path;

use serde_json::Value;
use serde_saphyr::{Budget, Options, Spanned};

use crate::flux_substitute::{self, SubstitutionProblem};

/// The largest manifest input read, in bytes. Rendered bundles of whole
/// platforms are a few MiB; anything far larger is a mistake or an attack.
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// The source name used for standard input (`-` on the command line).
pub const STDIN_NAME: &str = "<stdin>";

/// One YAML document of a manifest stream, with where it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The file it came from, as the user named it, or [`STDIN_NAME`].
    pub source: String,
    /// Zero-based position among the non-empty documents of its source.
    /// Empty documents (a bare `---`, or only comments) are skipped and not
    /// counted, so the index names the n-th object a reader can see.
    pub index: usize,
    /// 1-based line where the document's root node starts.
    pub line: u64,
    /// 1-based column where the document's root node starts.
    pub column: u64,
    /// The document's content, as JSON would represent it.
    pub value: Value,
}

impl Document {
    /// `kind` of the object, if it is a mapping with a string `kind`.
    pub fn kind(&self) -> Option<&str> {
        self.value.get("kind").and_then(Value::as_str)
    }

    /// `metadata.name` of the object, if present and a string.
    pub fn name(&self) -> Option<&str> {
        self.value.pointer("/metadata/name").and_then(Value::as_str)
    }

    /// `metadata.namespace` of the object, if present and a string.
    pub fn namespace(&self) -> Option<&str> {
        self.value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
    }

    /// Decodes the document into a typed object, such as a k8s-openapi
    /// `Pod` or a scenario type; a mismatch is a [`ManifestError`] at the
    /// document's start, naming what the type expected.
    ///
    /// ```
    /// use drillbench_model::manifest::parse_documents;
    /// use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    ///
    /// let text = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n\
    ///             spec: {storageClassName: hcloud}\n";
    /// let docs = parse_documents("pvc.yaml", text).unwrap();
    /// let pvc: PersistentVolumeClaim = docs[0].decode().unwrap();
    /// let class = pvc.spec.and_then(|spec| spec.storage_class_name);
    /// assert_eq!(class.as_deref(), Some("hcloud"));
    /// ```
    pub fn decode<T: serde::de::DeserializeOwned>(&self) -> Result<T, ManifestError> {
        T::deserialize(&self.value).map_err(|err| {
            let what = match (self.kind(), self.name()) {
                (Some(kind), Some(name)) => format!("{kind} {name}"),
                (Some(kind), None) => kind.to_owned(),
                _ => "document".to_owned(),
            };
            ManifestError::malformed(self.location(), format!("{what}: {err}"))
        })
    }

    /// Where the document starts, as `file:line:column`.
    pub fn location(&self) -> SourceLocation {
        SourceLocation {
            source: self.source.clone(),
            line: self.line,
            column: self.column,
        }
    }
}

/// A place in a manifest source, printed as `file:line:column`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct SourceLocation {
    /// The file, or [`STDIN_NAME`].
    pub source: String,
    /// 1-based line.
    pub line: u64,
    /// 1-based column.
    pub column: u64,
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.source, self.line, self.column)
    }
}

/// Why a manifest source could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The file (or standard input) could not be read.
    #[error("cannot read {source_name}")]
    Read {
        /// The file as named, or [`STDIN_NAME`].
        source_name: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{source_name} is not a regular file (a folder, pipe or device); expected a YAML file")]
    NotAFile { source_name: String },
    /// The input is larger than [`MAX_INPUT_BYTES`].
    #[error("{source_name} is larger than {limit} bytes; refusing to parse it")]
    TooLarge {
        /// The file as named, or [`STDIN_NAME`].
        source_name: String,
        /// The limit that was exceeded.
        limit: u64,
    },
    /// The input is not UTF-8 text.
    #[error("{source_name} is not UTF-8 text")]
    NotText {
        /// The file as named, or [`STDIN_NAME`].
        source_name: String,
    },
    /// Flux post-build variables that could not be filled in, each with
    /// where its `${` is (see [`crate::flux_substitute`]).
    #[error("{}", substitution_summary(source_name, problems))]
    Substitution {
        /// The file as named, or [`STDIN_NAME`].
        source_name: String,
        /// Every placeholder that could not be filled in, in file order.
        problems: Vec<SubstitutionProblem>,
    },
    /// The input is not well-formed YAML, breaks the parsing budget, or a
    /// document does not have the expected shape.
    #[error("{location}: {expected}")]
    Malformed {
        /// Where the problem is; line and column are 0 when the parser
        /// could not tell.
        location: SourceLocation,
        /// What was wrong, phrased as what was expected.
        expected: String,
    },
}

fn substitution_summary(source_name: &str, problems: &[SubstitutionProblem]) -> String {
    let mut text = String::new();
    for (n, problem) in problems.iter().enumerate() {
        if n > 0 {
            text.push('\n');
        }
        text.push_str(&format!(
            "{source_name}:{}:{}: {}",
            problem.line, problem.column, problem.message
        ));
    }
    text
}

impl ManifestError {
    /// A shape error inside an otherwise well-formed document: `expected`
    /// says what the field should have been, `at` where the document starts.
    pub fn malformed(at: SourceLocation, expected: impl Into<String>) -> Self {
        ManifestError::Malformed {
            location: at,
            expected: expected.into(),
        }
    }
}

/// The parsing budget for manifests: generous for real bundles (thousands of
/// objects), small enough that an alias bomb or a deeply nested document is
/// refused in well under a second.
pub fn budget() -> Budget {
    // `Budget` is non-exhaustive: start from the defaults, set what matters.
    let mut budget = Budget::default();
    budget.max_events = 2_000_000;
    budget.max_aliases = 1_000;
    budget.max_anchors = 10_000;
    budget.max_depth = 128;
    budget.max_documents = 100_000;
    budget.max_nodes = 2_000_000;
    budget.max_total_scalar_bytes = MAX_INPUT_BYTES as usize;
    budget
}

pub(crate) fn options() -> Options {
    let mut options = Options::default();
    options.budget = Some(budget());
    // Rendered manifests almost never use aliases; expanding a few
    // thousand events is plenty, and caps an alias bomb's work early.
    options.alias_limits.max_total_replayed_events = 100_000;
    // The error message is printed after our own `file:line:column`;
    // a rendered source snippet would repeat it across several lines.
    options.with_snippet = false;
    options
}

/// Loads every document of `path`; `-` reads standard input.
///
/// The source name recorded in each [`Document`] is `path` as given, so
/// errors point at the file the user named.
pub fn load_documents(path: &Path) -> Result<Vec<Document>, ManifestError> {
    let (name, text) = read_source(path)?;
    parse_documents(&name, &text)
}

/// Loads every document of `path` after filling in its Flux post-build
/// variables from `values` (see [`crate::flux_substitute`]): a placeholder
/// with neither a value nor a default is a [`ManifestError::Substitution`]
/// naming its line and column in the file as written.
pub fn load_substituted(
    path: &Path,
    values: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<Document>, ManifestError> {
    load_substituted_text(path, values).map(|(documents, _)| documents)
}

/// [`load_substituted`], also returning the text the documents were parsed
/// from (after substitution), so a field of them can be located later.
pub fn load_substituted_text(
    path: &Path,
    values: &std::collections::BTreeMap<String, String>,
) -> Result<(Vec<Document>, String), ManifestError> {
    let (name, text) = read_source(path)?;
    if !flux_substitute::has_placeholders(&text) {
        return parse_documents(&name, &text).map(|documents| (documents, text));
    }
    let text = flux_substitute::substitute_manifest(&text, values).map_err(|problems| {
        ManifestError::Substitution {
            source_name: name.clone(),
            problems,
        }
    })?;
    parse_documents(&name, &text).map(|documents| (documents, text))
}

/// Reads `path` (or standard input for `-`) as UTF-8 text, refusing anything
/// larger than [`MAX_INPUT_BYTES`]. Returns the source name and the text.
pub fn read_source(path: &Path) -> Result<(String, String), ManifestError> {
    let name = if path == Path::new("-") {
        STDIN_NAME.to_owned()
    } else {
        path.display().to_string()
    };
    let read_err = |source| ManifestError::Read {
        source_name: name.clone(),
        source,
    };
    let mut bytes = Vec::new();
    if crate::embedded::is_embedded(path) {
        bytes = crate::embedded::read_bytes(path)
            .map_err(read_err)?
            .into_owned();
    } else if path == Path::new("-") {
        std::io::stdin()
            .lock()
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(read_err)?;
    } else {
        // Opening a FIFO blocks until something writes to it, and a device
        // may never end: only regular files are read.
        let metadata = std::fs::metadata(path).map_err(read_err)?;
        if !metadata.is_file() {
            return Err(ManifestError::NotAFile { source_name: name });
        }
        std::fs::File::open(path)
            .and_then(|file| file.take(MAX_INPUT_BYTES + 1).read_to_end(&mut bytes))
            .map_err(read_err)?;
    }
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(ManifestError::TooLarge {
            source_name: name,
            limit: MAX_INPUT_BYTES,
        });
    }
    let text = String::from_utf8(bytes).map_err(|_| ManifestError::NotText {
        source_name: name.clone(),
    })?;
    Ok((name, text))
}

/// Parses a multi-document YAML stream. `source_name` is recorded in every
/// document and error. Empty documents are skipped; every other document must
/// be a mapping (a Kubernetes object).
pub fn parse_documents(source_name: &str, text: &str) -> Result<Vec<Document>, ManifestError> {
    if text.len() as u64 > MAX_INPUT_BYTES {
        return Err(ManifestError::TooLarge {
            source_name: source_name.to_owned(),
            limit: MAX_INPUT_BYTES,
        });
    }
    let parsed: Vec<Spanned<Value>> = serde_saphyr::from_multiple_with_options(text, options())
        .map_err(|err| {
            let (line, column) = err
                .location()
                .map(|loc| (loc.line(), loc.column()))
                .unwrap_or((0, 0));
            ManifestError::Malformed {
                location: SourceLocation {
                    source: source_name.to_owned(),
                    line,
                    column,
                },
                expected: format!(
                    "expected well-formed YAML: {}",
                    first_line(&err.to_string())
                ),
            }
        })?;
    let mut documents = Vec::with_capacity(parsed.len());
    for (index, spanned) in parsed.into_iter().enumerate() {
        let location = SourceLocation {
            source: source_name.to_owned(),
            line: spanned.referenced.line(),
            column: spanned.referenced.column(),
        };
        if !spanned.value.is_object() {
            return Err(ManifestError::malformed(
                location,
                format!(
                    "expected a Kubernetes object (a mapping), found {}",
                    json_type(&spanned.value)
                ),
            ));
        }
        documents.push(Document {
            source: location.source,
            index,
            line: location.line,
            column: location.column,
            value: spanned.value,
        });
    }
    Ok(documents)
}

/// The kind of JSON value, as an error message names it.
pub fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a mapping",
    }
}

/// The parser's message without its own position, which the error already
/// carries as `file:line:column`.
fn first_line(text: &str) -> &str {
    let line = text.lines().next().unwrap_or(text);
    line.split(" at line ").next().unwrap_or(line).trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_source_index_and_start_of_every_document() {
        let text = "\
# rendered by kustomize
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
---
---   # an empty document with a comment
---
apiVersion: v1
kind: Secret
metadata:
  name: b
";
        let docs = parse_documents("bundle.yaml", text).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].kind(), Some("ConfigMap"));
        assert_eq!(docs[0].name(), Some("a"));
        assert_eq!((docs[0].index, docs[0].line, docs[0].column), (0, 3, 1));
        assert_eq!(docs[1].kind(), Some("Secret"));
        assert_eq!((docs[1].index, docs[1].line, docs[1].column), (1, 10, 1));
        assert_eq!(docs[1].location().to_string(), "bundle.yaml:10:1");
    }

    #[test]
    fn decodes_into_k8s_openapi_types_or_names_the_document() {
        use k8s_openapi::api::apps::v1::StatefulSet;
        let text = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: openbao\nspec:\n  replicas: 3\n  selector: {}\n  template: {}\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: broken\nspec:\n  replicas: three\n";
        let docs = parse_documents("sts.yaml", text).unwrap();
        let sts: StatefulSet = docs[0].decode().unwrap();
        assert_eq!(sts.spec.and_then(|spec| spec.replicas), Some(3));
        let err = docs[1].decode::<StatefulSet>().unwrap_err().to_string();
        assert!(
            err.starts_with("sts.yaml:10:1: StatefulSet broken: invalid type"),
            "{err}"
        );
    }

    #[test]
    fn an_empty_stream_has_no_documents() {
        assert!(parse_documents("empty", "").unwrap().is_empty());
        assert!(
            parse_documents("empty", "---\n# nothing\n")
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn malformed_yaml_names_file_line_and_column() {
        let text = "kind: Pod\nmetadata:\n  name: [unclosed\n";
        let err = parse_documents("bad.yaml", text).unwrap_err();
        let ManifestError::Malformed { location, expected } = &err else {
            panic!("expected a malformed error, got {err:?}");
        };
        assert_eq!(location.source, "bad.yaml");
        assert!(location.line >= 3, "line {}", location.line);
        assert!(location.column > 0);
        assert!(
            expected.starts_with("expected well-formed YAML"),
            "{expected}"
        );
    }

    #[test]
    fn a_scalar_document_is_not_an_object() {
        let err = parse_documents("x.yaml", "kind: Pod\n---\njust text\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "x.yaml:3:1: expected a Kubernetes object (a mapping), found a string"
        );
    }

    #[test]
    fn duplicate_keys_are_refused() {
        let err = parse_documents("d.yaml", "kind: Pod\nkind: Job\n").unwrap_err();
        assert!(matches!(err, ManifestError::Malformed { .. }), "{err}");
    }

    #[test]
    fn an_alias_bomb_ends_in_a_prompt_error() {
        // Nine levels of ten aliases each: 10^9 nodes if expanded.
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let prev = level - 1;
            text.push_str(&format!(
                "a{level}: &a{level} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"
            ));
        }
        let err = parse_documents("bomb.yaml", &text).unwrap_err();
        assert!(matches!(err, ManifestError::Malformed { .. }), "{err}");
    }

    #[test]
    fn deep_nesting_ends_in_a_prompt_error() {
        let text = format!("a: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
        let err = parse_documents("deep.yaml", &text).unwrap_err();
        assert!(matches!(err, ManifestError::Malformed { .. }), "{err}");
    }

    proptest::proptest! {
        /// Whatever the bytes, parsing ends in documents or an error, never a
        /// panic; and an error always names the source.
        #[test]
        fn arbitrary_text_never_panics(text in "[-:\\[\\]{}&*!|>'\" #a-z0-9\n]{0,200}") {
            if let Err(err) = parse_documents("fuzz.yaml", &text) {
                proptest::prop_assert!(err.to_string().starts_with("fuzz.yaml"), "{}", err);
            }
        }
    }

    #[test]
    fn an_unreadable_file_is_a_read_error() {
        let err = load_documents(Path::new("/nonexistent/bundle.yaml")).unwrap_err();
        assert!(matches!(err, ManifestError::Read { .. }));
        assert_eq!(err.to_string(), "cannot read /nonexistent/bundle.yaml");
    }
}
