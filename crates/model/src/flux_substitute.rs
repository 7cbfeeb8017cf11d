//! Flux post-build variable substitution in rendered manifests.
//!
//! A Flux repository's rendered output carries `${var}` placeholders that
//! kustomize-controller fills in after `kustomize build` from a
//! Kustomization's `spec.postBuild.substitute` map
//! (<https://fluxcd.io/flux/components/kustomize/kustomizations/#post-build-variable-substitution>).
//! The bench applies the same rules to the text of a manifest before it is
//! parsed, so `replicas: ${replicas:=2}` becomes the number `2` exactly as it
//! does on the cluster:
//!
//! - only `${name}` with a valid variable name is a placeholder (Flux's
//!   `^[_[:alpha:]][_[:alpha:][:digit:]]*$`); `$name` without braces and
//!   `${{ … }}` are left as written, as Flux documents for scripts;
//! - `$${name}` is an escape and prints `${name}`;
//! - `${name:=default}`, `${name:-default}` (and the colon-less `=`/`-`)
//!   use the default when the variable is unset or empty: Flux's envsubst
//!   reads variables as strings and cannot tell the two apart;
//!   `${name:+alt}` is `alt` when the variable is set and non-empty, else
//!   empty; `${name:?message}` refuses an unset variable with `message`;
//! - a variable with neither a value nor a default is refused, as Flux's
//!   `StrictPostBuildSubstitutions` feature gate refuses it, rather than
//!   silently becoming an empty string: a drill of a half-rendered platform
//!   would rehearse something that never runs.
//!
//! Every refusal carries the 1-based line and column of its `${`, so the
//! caller can point at the place in the file.
//!
//! An object labelled or annotated `kustomize.toolkit.fluxcd.io/substitute:
//! disabled` is left exactly as written, placeholders and escapes included,
//! as kustomize-controller leaves it ([`substitute_manifest`]).

use std::collections::BTreeMap;

/// Why a placeholder could not be filled in, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubstitutionProblem {
    /// 1-based line of the placeholder's `$`.
    pub line: u64,
    /// 1-based column (in characters) of the placeholder's `$`.
    pub column: u64,
    /// What was wrong, phrased for the person who wrote it.
    pub message: String,
}

/// Whether `name` is a variable name Flux accepts in `postBuild.substitute`.
pub fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first == '_' || first.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Whether `text` holds anything substitution could change; most manifests
/// do not, and are then used as read.
pub fn has_placeholders(text: &str) -> bool {
    text.contains("${")
}

/// Fills in every placeholder of `text` from `values`. Returns the new text,
/// or every placeholder that could not be filled in (all of them at once, in
/// the order they appear).
pub fn substitute(
    text: &str,
    values: &BTreeMap<String, String>,
) -> Result<String, Vec<SubstitutionProblem>> {
    let mut out = String::with_capacity(text.len());
    let mut problems = Vec::new();
    let (mut line, mut column) = (1u64, 1u64);
    let mut rest = text;
    while let Some(dollar) = rest.find('$') {
        let (before, from_dollar) = rest.split_at(dollar);
        advance(before, &mut line, &mut column);
        out.push_str(before);
        if let Some(after) = from_dollar.strip_prefix("$${") {
            // The escape: `$${` prints `${`, and what follows is text.
            out.push_str("${");
            advance("$${", &mut line, &mut column);
            rest = after;
            continue;
        }
        match placeholder(from_dollar) {
            Some(found) => {
                match found.resolve(values) {
                    Ok(value) => out.push_str(&value),
                    Err(message) => problems.push(SubstitutionProblem {
                        line,
                        column,
                        message,
                    }),
                }
                advance(&from_dollar[..found.len], &mut line, &mut column);
                rest = &from_dollar[found.len..];
            }
            None => {
                out.push('$');
                advance("$", &mut line, &mut column);
                rest = &from_dollar[1..];
            }
        }
    }
    out.push_str(rest);
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// The label or annotation with which an object opts out of substitution
/// (its value `disabled`).
pub const OPT_OUT_KEY: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// Fills in the placeholders of a multi-document manifest, document by
/// document, leaving alone every document whose object opts out with
/// [`OPT_OUT_KEY`]. Problems carry their line in the whole text.
pub fn substitute_manifest(
    text: &str,
    values: &BTreeMap<String, String>,
) -> Result<String, Vec<SubstitutionProblem>> {
    let mut out = String::with_capacity(text.len());
    let mut problems = Vec::new();
    for (first_line, document) in documents(text) {
        if !has_placeholders(document) || opts_out(document) {
            out.push_str(document);
            continue;
        }
        match substitute(document, values) {
            Ok(done) => out.push_str(&done),
            Err(found) => problems.extend(found.into_iter().map(|problem| SubstitutionProblem {
                line: problem.line + first_line - 1,
                ..problem
            })),
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Splits YAML text at its document markers (a line starting `---` then a
/// space or the line's end; YAML allows no such line inside a document, not
/// even in a block scalar), giving each piece with its 1-based first line.
/// The pieces put back together are the text.
fn documents(text: &str) -> Vec<(u64, &str)> {
    let mut pieces = Vec::new();
    let (mut start, mut start_line, mut line) = (0, 1u64, 1u64);
    let mut offset = 0;
    for text_line in text.split_inclusive('\n') {
        let is_marker = text_line
            .strip_prefix("---")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n']));
        if is_marker && offset > start {
            pieces.push((start_line, &text[start..offset]));
            (start, start_line) = (offset, line);
        }
        offset += text_line.len();
        line += 1;
    }
    if offset > start || pieces.is_empty() {
        pieces.push((start_line, &text[start..]));
    }
    pieces
}

/// Whether one document's object carries [`OPT_OUT_KEY`]` : disabled` as a
/// label or an annotation. A document that does not parse as written
/// (placeholders can make YAML invalid until filled in) has not opted out.
fn opts_out(document: &str) -> bool {
    if !document.contains(OPT_OUT_KEY) {
        return false;
    }
    let Ok(object) = serde_saphyr::from_str_with_options::<serde_json::Value>(
        document,
        crate::manifest::options(),
    ) else {
        return false;
    };
    ["labels", "annotations"].iter().any(|field| {
        object
            .pointer(&format!("/metadata/{field}"))
            .and_then(|map| map.get(OPT_OUT_KEY))
            .and_then(serde_json::Value::as_str)
            == Some("disabled")
    })
}

fn advance(text: &str, line: &mut u64, column: &mut u64) {
    for c in text.chars() {
        if c == '\n' {
            *line += 1;
            *column = 1;
        } else {
            *column += 1;
        }
    }
}

/// One `${…}` with a valid name, as written.
struct Placeholder<'a> {
    name: &'a str,
    /// The operator after the name (`:=`, `-`, …) and its word, if any.
    operator: Option<(&'a str, &'a str)>,
    /// Bytes from the `$` through the closing `}`.
    len: usize,
}

/// Reads a placeholder at the start of `text` (which starts with `$`); `None`
/// when it is not one Flux would substitute, and is therefore plain text.
fn placeholder(text: &str) -> Option<Placeholder<'_>> {
    let body = text.strip_prefix("${")?;
    // A placeholder ends on its own line: a `}` further down belongs to
    // something else.
    let close = body
        .find(['}', '\n'])
        .filter(|&at| body[at..].starts_with('}'))?;
    let inner = &body[..close];
    let name_end = inner
        .find(|c: char| !(c == '_' || c.is_ascii_alphanumeric()))
        .unwrap_or(inner.len());
    let name = &inner[..name_end];
    if !is_variable_name(name) {
        return None;
    }
    let tail = &inner[name_end..];
    let operator = if tail.is_empty() {
        None
    } else {
        let op_len = match tail.as_bytes() {
            [b':', b'=' | b'-' | b'+' | b'?', ..] => 2,
            [b'=' | b'-', ..] => 1,
            // Substrings, replacements, case changes: envsubst has them, the
            // bench does not; refused below rather than guessed.
            _ => 0,
        };
        Some(tail.split_at(op_len))
    };
    Some(Placeholder {
        name,
        operator,
        len: 2 + close + 1,
    })
}

impl Placeholder<'_> {
    fn resolve(&self, values: &BTreeMap<String, String>) -> Result<String, String> {
        let value = values.get(self.name).filter(|value| !value.is_empty());
        let name = self.name;
        match (self.operator, value) {
            (None, Some(value)) => Ok(value.clone()),
            (None, None) => Err(format!(
                "variable `{name}` has no value and no default: give it one in the \
                 workload's `substitute:` map, or write `${{{name}:=default}}`"
            )),
            (Some((":=" | ":-" | "=" | "-", _)), Some(value)) => Ok(value.clone()),
            (Some((":=" | ":-" | "=" | "-", default)), None) => Ok(default.to_owned()),
            (Some((":+", alternative)), Some(_)) => Ok(alternative.to_owned()),
            (Some((":+", _)), None) => Ok(String::new()),
            (Some((":?", _)), Some(value)) => Ok(value.clone()),
            (Some((":?", message)), None) => Err(format!(
                "variable `{name}` has no value: {}",
                if message.is_empty() {
                    "it is required (`:?`)"
                } else {
                    message
                }
            )),
            (Some((_, written)), _) => Err(format!(
                "`${{{name}{written}}}`: expected `${{{name}}}`, `${{{name}:=default}}`, \
                 `${{{name}:-default}}`, `${{{name}:+alternative}}` or `${{{name}:?message}}`; \
                 other envsubst operators are not supported"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Semantics transcribed from Flux's documentation of post-build
    //! variable substitution,
    //! <https://fluxcd.io/flux/components/kustomize/kustomizations/#post-build-variable-substitution>,
    //! and of `flux envsubst --strict`, <https://fluxcd.io/flux/cmd/flux_envsubst/>.
    //! Each case has a control that changes one thing and flips the outcome.

    use super::*;

    fn values(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// Text, the values given, and the text expected (`Err` when refused).
    type Case = (
        &'static str,
        &'static [(&'static str, &'static str)],
        Result<&'static str, ()>,
    );

    #[test]
    fn table_of_forms_with_and_without_a_value() {
        // (text, values, expected): each row is paired with its control on
        // the next row, the same text with the value given or taken away.
        let cases: [Case; 17] = [
            ("r: ${n}", &[("n", "3")], Ok("r: 3")),
            ("r: ${n}", &[], Err(())),
            ("r: ${n:=2}", &[], Ok("r: 2")),
            ("r: ${n:=2}", &[("n", "5")], Ok("r: 5")),
            ("r: ${n:-2}", &[], Ok("r: 2")),
            ("r: ${n:-2}", &[("n", "5")], Ok("r: 5")),
            // Empty counts as unset: Flux's envsubst cannot tell them apart.
            ("r: ${n:=2}", &[("n", "")], Ok("r: 2")),
            ("r: ${n}", &[("n", "")], Err(())),
            ("r: ${n:+on}", &[("n", "x")], Ok("r: on")),
            ("r: ${n:+on}", &[], Ok("r: ")),
            ("r: ${n:?needed}", &[("n", "x")], Ok("r: x")),
            ("r: ${n:?needed}", &[], Err(())),
            // The escape prints the placeholder, and needs no value.
            ("c: $${n}", &[], Ok("c: ${n}")),
            ("c: ${n}", &[], Err(())),
            // Only braced, validly named placeholders are substituted.
            (
                "c: $n ${1x} ${{ g }} ${a-b",
                &[],
                Ok("c: $n ${1x} ${{ g }} ${a-b"),
            ),
            ("c: $n ${x1}", &[], Err(())),
            ("c: ${a\n}", &[], Ok("c: ${a\n}")),
        ];
        for (text, given, expected) in cases {
            let got = substitute(text, &values(given));
            match expected {
                Ok(want) => assert_eq!(got.as_deref(), Ok(want), "{text} with {given:?}"),
                Err(()) => assert!(got.is_err(), "{text} with {given:?}: {got:?}"),
            }
        }
    }

    #[test]
    fn every_unset_variable_is_named_with_line_and_column() {
        let text = "kind: Deployment\nspec:\n  replicas: ${auth_proxy_replicas}\n  x: é${other}\n";
        let problems = substitute(text, &BTreeMap::new()).unwrap_err();
        let at: Vec<_> = problems.iter().map(|p| (p.line, p.column)).collect();
        assert_eq!(at, [(3, 13), (4, 7)]);
        assert!(problems[0].message.contains("`auth_proxy_replicas`"));
        assert!(problems[1].message.contains("`other`"));
        // Control: with both given, the text is filled in.
        let done = substitute(
            text,
            &values(&[("auth_proxy_replicas", "2"), ("other", "y")]),
        )
        .unwrap();
        assert!(done.contains("replicas: 2\n  x: éy\n"), "{done}");
    }

    #[test]
    fn unsupported_operators_are_refused_not_guessed() {
        let problems = substitute("a: ${n/x/y}", &values(&[("n", "x")])).unwrap_err();
        assert!(
            problems[0].message.contains("not supported"),
            "{problems:?}"
        );
        assert!(substitute("a: ${n:-x/y}", &values(&[("n", "x")])).is_ok());
    }

    #[test]
    fn an_object_labelled_or_annotated_disabled_is_left_as_written() {
        // Flux: "You can disable the variable substitution for certain
        // resources by either labelling or annotating them with
        // kustomize.toolkit.fluxcd.io/substitute: disabled".
        let doc = |meta: &str| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: script\n{meta}data:\n  \
                 run.sh: echo ${{HOME}} $${{x}}\n"
            )
        };
        for meta in [
            "  labels:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\n",
            "  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\n",
        ] {
            let text = format!("{}---\n{}", doc(meta), "kind: Pod\nx: ${n:=2}\n");
            let done = substitute_manifest(&text, &BTreeMap::new()).unwrap();
            assert!(done.starts_with(&doc(meta)), "{done}");
            // The other document is still substituted.
            assert!(done.ends_with("---\nkind: Pod\nx: 2\n"), "{done}");
        }
        // Controls: another value, or the key somewhere else, substitutes.
        for meta in [
            "  labels:\n    kustomize.toolkit.fluxcd.io/substitute: enabled\n",
            "  labels:\n    other: kustomize.toolkit.fluxcd.io/substitute\n",
        ] {
            let problems = substitute_manifest(&doc(meta), &BTreeMap::new()).unwrap_err();
            assert_eq!((problems[0].line, problems[0].column), (8, 16), "{meta}");
        }
    }

    #[test]
    fn problems_in_later_documents_keep_their_line_in_the_file() {
        let text = "a: 1\n---\nb: ${x}\n--- # c\nd: 2\n\ne: ${y}\n";
        let problems = substitute_manifest(text, &BTreeMap::new()).unwrap_err();
        let at: Vec<_> = problems.iter().map(|p| (p.line, p.column)).collect();
        assert_eq!(at, [(3, 4), (7, 4)]);
        assert_eq!(
            substitute_manifest(text, &values(&[("x", "1"), ("y", "2")])).unwrap(),
            "a: 1\n---\nb: 1\n--- # c\nd: 2\n\ne: 2\n"
        );
        // `----` and `---x` are not markers.
        assert_eq!(documents("a\n----\n---x\n").len(), 1);
    }

    #[test]
    fn variable_names_follow_flux_s_pattern() {
        for good in ["a", "_x", "cluster_region", "A1"] {
            assert!(is_variable_name(good), "{good}");
        }
        for bad in ["", "1a", "a-b", "a.b", "é"] {
            assert!(!is_variable_name(bad), "{bad}");
        }
    }
}
