//! Where a manifest's Flux post-build variables get their values: a
//! Kustomization's `spec.postBuild.substitute` map and its `substituteFrom`
//! ConfigMaps and Secrets, here read from files shaped like those objects.
//!
//! The rules are kustomize-controller's
//! (<https://fluxcd.io/flux/components/kustomize/kustomizations/#post-build-variable-substitution>):
//! the data keys of each ConfigMap or Secret are variable names; a later
//! `substituteFrom` entry overwrites an earlier one's value for the same key;
//! the inline `substitute` map wins over all of them; an `optional` entry that
//! is absent counts as present and empty, any other absent entry is an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

use crate::flux_substitute::is_variable_name;
use crate::manifest::{self, ManifestError, SourceLocation};

/// One `substituteFrom` entry: a file holding one ConfigMap or Secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesFile {
    /// The file, already resolved against the drill's folder.
    pub path: PathBuf,
    /// A missing file counts as an empty one.
    pub optional: bool,
}

/// Why the values could not be gathered.
#[derive(Debug, thiserror::Error)]
pub enum ValuesError {
    /// A file that is not optional does not exist.
    #[error(
        "substituteFrom file `{}` does not exist; mark the entry `optional: true` if \
         the cluster may lack it",
        path.display()
    )]
    Missing { path: PathBuf },
    /// The file could not be read or parsed.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The file was read, but is not what `substituteFrom` takes.
    #[error("{location}: {expected}")]
    Shape {
        location: SourceLocation,
        expected: String,
    },
}

/// The values Flux would substitute: every file's data in order, then the
/// inline map on top.
pub fn gather(
    inline: &BTreeMap<String, String>,
    files: &[ValuesFile],
) -> Result<BTreeMap<String, String>, ValuesError> {
    let mut values = BTreeMap::new();
    for file in files {
        if !crate::embedded::exists(&file.path) {
            if file.optional {
                continue;
            }
            return Err(ValuesError::Missing {
                path: file.path.clone(),
            });
        }
        values.extend(read_values(&file.path)?);
    }
    values.extend(inline.iter().map(|(k, v)| (k.clone(), v.clone())));
    Ok(values)
}

/// The variables of one ConfigMap or Secret file.
fn read_values(path: &Path) -> Result<BTreeMap<String, String>, ValuesError> {
    let documents = manifest::load_documents(path)?;
    let [document] = documents.as_slice() else {
        let location = documents.get(1).map_or_else(
            || SourceLocation {
                source: path.display().to_string(),
                line: 1,
                column: 1,
            },
            manifest::Document::location,
        );
        return Err(ValuesError::Shape {
            location,
            expected: format!(
                "expected exactly one ConfigMap or Secret in a substituteFrom file, found {}",
                documents.len()
            ),
        });
    };
    let shape = |expected: String| ValuesError::Shape {
        location: document.location(),
        expected,
    };
    let kind = document.kind().unwrap_or("");
    if document.value.get("sops").is_some() {
        return Err(shape(
            "this Secret is SOPS-encrypted; decrypt it (`sops -d`) into the file the drill names"
                .to_owned(),
        ));
    }
    let mut values = BTreeMap::new();
    match kind {
        "ConfigMap" => {
            for (key, value) in entries(&document.value, "data") {
                let Some(value) = value.as_str() else {
                    return Err(shape(format!("ConfigMap data `{key}`: expected a string")));
                };
                values.insert(key.clone(), value.to_owned());
            }
        }
        "Secret" => {
            // The API server merges `stringData` over `data`; the controller
            // reads the merged, decoded data.
            for (key, value) in entries(&document.value, "data") {
                let decoded = value
                    .as_str()
                    .and_then(|text| base64::engine::general_purpose::STANDARD.decode(text).ok())
                    .and_then(|bytes| String::from_utf8(bytes).ok());
                let Some(decoded) = decoded else {
                    return Err(shape(format!(
                        "Secret data `{key}`: expected base64 of UTF-8 text (plain text goes \
                         under `stringData`)"
                    )));
                };
                values.insert(key.clone(), decoded);
            }
            for (key, value) in entries(&document.value, "stringData") {
                let Some(value) = value.as_str() else {
                    return Err(shape(format!(
                        "Secret stringData `{key}`: expected a string"
                    )));
                };
                values.insert(key.clone(), value.to_owned());
            }
        }
        other => {
            return Err(shape(format!(
                "expected a ConfigMap or a Secret (what Flux's substituteFrom names), found \
                 kind `{other}`"
            )));
        }
    }
    if let Some(bad) = values.keys().find(|key| !is_variable_name(key)) {
        return Err(shape(format!(
            "{kind} key `{bad}` is not a variable name: Flux requires letters, digits and `_`, \
             not starting with a digit"
        )));
    }
    Ok(values)
}

fn entries<'a>(object: &'a Value, field: &str) -> impl Iterator<Item = (&'a String, &'a Value)> {
    object
        .get(field)
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
}

#[cfg(test)]
mod tests {
    //! Precedence and shapes from kustomize-controller's documentation of
    //! `postBuild.substituteFrom`,
    //! <https://fluxcd.io/flux/components/kustomize/kustomizations/#post-build-variable-substitution>.

    use super::*;

    fn file(dir: &Path, name: &str, text: &str) -> ValuesFile {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        ValuesFile {
            path,
            optional: false,
        }
    }

    fn pairs(values: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
        values
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn later_files_overwrite_earlier_and_the_inline_map_wins() {
        let dir = tempfile::tempdir().unwrap();
        let cluster = file(
            dir.path(),
            "cluster.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars}\n\
             data: {region: eu, env: dev, size: s}\n",
        );
        // `cHJvZA==` is "prod"; stringData is merged over data.
        let secret = file(
            dir.path(),
            "secret.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n\
             data: {env: cHJvZA==, token: eA==}\nstringData: {token: plain}\n",
        );
        let inline = BTreeMap::from([("size".to_owned(), "xl".to_owned())]);
        let values = gather(&inline, &[cluster.clone(), secret.clone()]).unwrap();
        assert_eq!(
            pairs(&values),
            [
                ("env", "prod"),
                ("region", "eu"),
                ("size", "xl"),
                ("token", "plain")
            ]
        );
        // Control: in the other order the ConfigMap's `env` is the later one.
        let values = gather(&BTreeMap::new(), &[secret, cluster]).unwrap();
        assert_eq!(values["env"], "dev");
        assert_eq!(values["size"], "s");
    }

    #[test]
    fn an_absent_file_is_empty_only_when_optional() {
        let dir = tempfile::tempdir().unwrap();
        let mut missing = ValuesFile {
            path: dir.path().join("nope.yaml"),
            optional: true,
        };
        assert!(
            gather(&BTreeMap::new(), &[missing.clone()])
                .unwrap()
                .is_empty()
        );
        missing.optional = false;
        let err = gather(&BTreeMap::new(), &[missing]).unwrap_err();
        assert!(matches!(err, ValuesError::Missing { .. }), "{err}");
    }

    #[test]
    fn what_substitute_from_cannot_take_is_refused_with_its_place() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
                "found kind `Pod`",
            ),
            (
                "kind: ConfigMap\ndata: {a: x}\n---\nkind: ConfigMap\ndata: {b: y}\n",
                "found 2",
            ),
            (
                "kind: ConfigMap\ndata: {a-b: x}\n",
                "`a-b` is not a variable name",
            ),
            ("kind: ConfigMap\ndata: {a: [1]}\n", "expected a string"),
            ("kind: Secret\ndata: {a: '%%%'}\n", "expected base64"),
            (
                "kind: Secret\nsops: {version: 3}\ndata: {a: x}\n",
                "SOPS-encrypted",
            ),
        ];
        for (n, (text, expected)) in cases.into_iter().enumerate() {
            let f = file(dir.path(), &format!("{n}.yaml"), text);
            let err = gather(&BTreeMap::new(), &[f]).unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
            assert!(err.contains(&format!("{n}.yaml:")), "{err}");
        }
        // Control: a well-formed ConfigMap with the same key is taken.
        let f = file(dir.path(), "ok.yaml", "kind: ConfigMap\ndata: {a_b: x}\n");
        assert_eq!(gather(&BTreeMap::new(), &[f]).unwrap()["a_b"], "x");
    }
}
