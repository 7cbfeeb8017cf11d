//! `bench audit placement`: a static, fail-closed audit of rendered manifests.
//!
//! Every pod template that mounts a claim of one storage class (a
//! *consumer*) must require a node label, so that no pod holding such a
//! volume can land on a node without it — the guard the stranded `hcloud`
//! volume incident called for. The audit reads manifests only: it finds the
//! consumers ([`consumers`]), judges each one's placement rules
//! ([`placement`]) and prints a table or JSON.
//!
//! Fail-closed means four things here: a claim whose class cannot be
//! resolved is `unknown` and counts as failing; an object the audit cannot
//! see inside (HelmRelease values, an operator's custom resource) that names
//! the class is `unknown` too ([`opaque`]); an input that cannot be
//! parsed is an error naming file, line and column; and an input with no
//! consumer at all fails, because an audit that found nothing proves nothing.

pub mod consumer_map;
pub mod consumers;
pub mod opaque;
pub mod placement;

use std::fmt;
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use drillbench_model::exit::Exit;
use drillbench_model::flux_values::{self, ValuesFile};

use consumer_map::ConsumerMap;
use drillbench_model::manifest::{self, Document, ManifestError};

/// The node label every consumer must require.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredLabel {
    pub key: String,
    /// The value it must have.
    pub value: String,
}

impl fmt::Display for RequiredLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// A `--require-label` value that is not `key=value`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a label requirement; expected key=value")]
pub struct LabelError(String);

/// Parses `key=value`; the key must be non-empty, the value may be empty
/// (Kubernetes allows empty label values).
pub fn parse_required_label(text: &str) -> Result<RequiredLabel, LabelError> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() && !value.contains('=') => Ok(RequiredLabel {
            key: key.to_owned(),
            value: value.to_owned(),
        }),
        _ => Err(LabelError(text.to_owned())),
    }
}

/// A `--substitute` value that is not `NAME=VALUE` with a Flux variable name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a substitution; expected NAME=VALUE, NAME of letters, digits and `_`, \
     not starting with a digit"
)]
pub struct SubstitutionError(String);

/// Parses `NAME=VALUE` for `--substitute`; the value may be empty or hold `=`.
pub fn parse_substitution(text: &str) -> Result<(String, String), SubstitutionError> {
    match text.split_once('=') {
        Some((name, value)) if drillbench_model::flux_substitute::is_variable_name(name) => {
            Ok((name.to_owned(), value.to_owned()))
        }
        _ => Err(SubstitutionError(text.to_owned())),
    }
}

/// How the result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An aligned table for people.
    Text,
    /// JSON for tools.
    Json,
}

/// A `bench audit placement` request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The storage class whose consumers are audited.
    pub storage_class: String,
    /// The node label each consumer must require.
    pub required_label: RequiredLabel,
    pub format: Format,
    /// The manifest files; `-` is standard input.
    pub files: Vec<PathBuf>,
    /// Flux post-build variables, as a Kustomization's
    /// `postBuild.substitute` gives them.
    pub substitute: std::collections::BTreeMap<String, String>,
    /// ConfigMap or Secret files with more values, as `postBuild.substituteFrom`
    /// names them (`substitute` wins; a later file over an earlier one).
    pub substitute_from: Vec<PathBuf>,
    /// Consumer-map files: where charts and operators keep each
    /// component's storage class and placement.
    pub consumer_maps: Vec<PathBuf>,
}

/// The verdict on one consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every node it could run on carries the label.
    Pass,
    /// Some node without the label is admitted.
    Fail,
    /// It cannot be told from the manifests; counts as failing.
    Unknown,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unknown => "unknown",
        }
    }
}

/// One pod template that mounts (or may mount) a claim of the class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Consumer {
    pub kind: String,
    /// Its namespace; `default` when the manifest names none.
    pub namespace: String,
    pub name: String,
    /// Its claims of the class (or of unresolved class), as
    /// `volumeClaimTemplate/NAME`, `persistentVolumeClaim/NAME` or
    /// `ephemeral/VOLUME`.
    pub claims: Vec<String>,
    pub verdict: Verdict,
    /// Why it is not a pass; empty for a pass.
    pub reasons: Vec<String>,
    /// Where the workload's document starts, as `file:line:column`.
    pub source: String,
}

/// Counts over all consumers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The audited storage class.
    pub storage_class: String,
    /// The required label, as `key=value`.
    pub required_label: String,
    /// How many consumers were found.
    pub consumers: usize,
    pub pass: usize,
    pub fail: usize,
    pub unknown: usize,
    /// `pass` only when at least one consumer was found and all pass.
    pub verdict: Verdict,
}

/// The audit's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// Every consumer, sorted by namespace, kind and name.
    pub consumers: Vec<Consumer>,
    pub summary: Summary,
}

impl Report {
    /// Exit 0 only when consumers were found and all pass.
    pub fn exit(&self) -> Exit {
        if self.summary.verdict == Verdict::Pass {
            Exit::Success
        } else {
            Exit::AssertionFailed
        }
    }

    pub fn to_json(&self) -> String {
        // Serializing plain structs of strings and numbers cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    /// The report as an aligned table, reasons indented under their row.
    fn to_text(&self) -> String {
        let header = ["VERDICT", "KIND", "NAMESPACE", "NAME", "CLAIMS"];
        let rows: Vec<[String; 5]> = self
            .consumers
            .iter()
            .map(|c| {
                [
                    c.verdict.as_str().to_owned(),
                    c.kind.clone(),
                    c.namespace.clone(),
                    c.name.clone(),
                    c.claims.join(","),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let line = |cells: [&str; 5]| {
            let mut text = String::new();
            for (i, cell) in cells.iter().enumerate() {
                if i + 1 == cells.len() {
                    text.push_str(cell);
                } else {
                    text.push_str(&format!("{cell:<width$}  ", width = widths[i]));
                }
            }
            text.trim_end().to_owned() + "\n"
        };
        let mut out = String::new();
        if !rows.is_empty() {
            out.push_str(&line(header));
        }
        for (row, consumer) in rows.iter().zip(&self.consumers) {
            out.push_str(&line([&row[0], &row[1], &row[2], &row[3], &row[4]]));
            for reason in &consumer.reasons {
                out.push_str(&format!("    - {reason}\n"));
            }
        }
        let s = &self.summary;
        if s.consumers == 0 {
            out.push_str(&format!(
                "no consumer of storage class {} found; an audit that finds nothing does not pass\n",
                s.storage_class
            ));
        } else {
            let noun = if s.consumers == 1 {
                "consumer"
            } else {
                "consumers"
            };
            out.push_str(&format!(
                "{} {noun} of storage class {} must require {}: {} pass, {} fail, {} unknown\n",
                s.consumers, s.storage_class, s.required_label, s.pass, s.fail, s.unknown
            ));
        }
        out
    }
}

/// Audits `documents` for consumers of `storage_class` requiring `label`.
pub fn audit(
    documents: &[Document],
    storage_class: &str,
    label: &RequiredLabel,
    map: &ConsumerMap,
) -> Result<Report, ManifestError> {
    let found = consumers::find(documents, storage_class)?;
    let mut consumers: Vec<Consumer> = found
        .into_iter()
        .map(|found| {
            let (verdict, reasons) = found.verdict(label);
            Consumer {
                kind: found.kind,
                namespace: found.namespace,
                name: found.name,
                claims: found
                    .claims
                    .iter()
                    .map(|claim| claim.label.clone())
                    .collect(),
                verdict,
                reasons,
                source: found.location.to_string(),
            }
        })
        .collect();
    // What the audit cannot see inside but that names the class: judged
    // where a consumer map says where its components' placement is,
    // otherwise unknown.
    for found in opaque::find(documents, storage_class) {
        consumers.extend(map.consumers(&found, storage_class, label));
    }
    consumers.sort_by(|a, b| {
        (&a.namespace, &a.kind, &a.name, &a.source).cmp(&(
            &b.namespace,
            &b.kind,
            &b.name,
            &b.source,
        ))
    });
    let count = |verdict| consumers.iter().filter(|c| c.verdict == verdict).count();
    let (pass, fail, unknown) = (
        count(Verdict::Pass),
        count(Verdict::Fail),
        count(Verdict::Unknown),
    );
    let summary = Summary {
        storage_class: storage_class.to_owned(),
        required_label: label.to_string(),
        consumers: consumers.len(),
        pass,
        fail,
        unknown,
        verdict: if consumers.is_empty() || fail + unknown > 0 {
            Verdict::Fail
        } else {
            Verdict::Pass
        },
    };
    Ok(Report { consumers, summary })
}

/// Says what was wrong with the input, with its causes; exit 2.
fn bad_input(err: &mut dyn Write, error: &(dyn std::error::Error + 'static)) -> Exit {
    let _ = writeln!(
        err,
        "error: {}",
        drillbench_model::error_text::error_chain(error)
    );
    Exit::BadInput
}

/// Runs the audit: loads every file, audits, prints the report to `out` and
/// any input error to `err`, and returns the exit.
pub fn run(request: &Request, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let files: Vec<ValuesFile> = request
        .substitute_from
        .iter()
        .map(|path| ValuesFile {
            path: path.clone(),
            optional: false,
        })
        .collect();
    let values = match flux_values::gather(&request.substitute, &files) {
        Ok(values) => values,
        Err(error) => return bad_input(err, &error),
    };
    let mut documents = Vec::new();
    let mut stdin_read = false;
    for file in &request.files {
        if file.as_os_str() == "-" {
            // Standard input can be read once; a second `-` would read nothing
            // and hide that mistake.
            if stdin_read {
                let _ = writeln!(err, "error: `-` (standard input) given more than once");
                return Exit::BadInput;
            }
            stdin_read = true;
        }
        // Flux post-build variables take the values given, else their
        // defaults; one with neither is bad input, located, as in a drill's
        // workloads.
        match manifest::load_substituted(file, &values) {
            Ok(mut docs) => documents.append(&mut docs),
            Err(error) => return bad_input(err, &error),
        }
    }
    let map = match ConsumerMap::load(&request.consumer_maps) {
        Ok(map) => map,
        Err(error) => return bad_input(err, &error),
    };
    let report = match audit(
        &documents,
        &request.storage_class,
        &request.required_label,
        &map,
    ) {
        Ok(report) => report,
        Err(error) => return bad_input(err, &error),
    };
    let text = match request.format {
        Format::Text => report.to_text(),
        Format::Json => report.to_json() + "\n",
    };
    if out.write_all(text.as_bytes()).is_err() {
        return Exit::Infrastructure;
    }
    report.exit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn required_label_is_key_equals_value() {
        assert_eq!(
            parse_required_label("platform.devantler.tech/baseline-worker=true"),
            Ok(RequiredLabel {
                key: "platform.devantler.tech/baseline-worker".into(),
                value: "true".into()
            })
        );
        assert!(parse_required_label("a=").is_ok());
        for bad in ["", "novalue", "=true", "a=b=c"] {
            assert!(parse_required_label(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn one_guarded_consumer_passes_and_reads_in_the_singular() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\nspec:\n  \
                    nodeSelector: {k: v}\n  volumes:\n  - name: s\n    ephemeral:\n      \
                    volumeClaimTemplate: {spec: {storageClassName: hcloud}}\n";
        let docs = manifest::parse_documents("pod.yaml", text).unwrap();
        let label = parse_required_label("k=v").unwrap();
        let report = audit(&docs, "hcloud", &label, &ConsumerMap::default()).unwrap();
        assert_eq!(report.exit(), Exit::Success);
        assert!(
            report.to_text().ends_with(
                "\n1 consumer of storage class hcloud must require k=v: 1 pass, 0 fail, 0 unknown\n"
            ),
            "{}",
            report.to_text()
        );
    }

    #[test]
    fn finding_nothing_is_not_a_pass() {
        let label = parse_required_label("k=v").unwrap();
        let report = audit(&[], "hcloud", &label, &ConsumerMap::default()).unwrap();
        assert_eq!(report.summary.verdict, Verdict::Fail);
        assert_eq!(report.exit(), Exit::AssertionFailed);
    }
}
