//! `kyverno test` suites run with this engine (kyverno.io/docs/kyverno-cli/
//! usage/test, `cmd/cli/kubectl-kyverno/apis/v1alpha1/test.go`): a
//! `kyverno-test.yaml` names policies, resources, values, user info,
//! cluster resources and the expected result per policy, rule and resource;
//! each expectation becomes a row of a result table, `Pass` when the engine
//! agrees.
//!
//! Both shapes are read: `apiVersion: cli.kyverno.io/v1alpha1, kind: Test`
//! and the older un-versioned file with `name:`, `resource:` and `status:`.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use drillbench_model::manifest::{self, Document, SourceLocation};
use serde::Deserialize;
use serde_json::{Map, Value};
use serde_saphyr::Spanned;

use crate::context::InMemoryCluster;
use crate::engine::{Engine, RuleStatus};
use crate::policy::{self, Policy};
use crate::request::{AdmissionRequest, Operation, UserInfo};

/// The test file name `kyverno test` looks for in a folder.
pub const TEST_FILE_NAME: &str = "kyverno-test.yaml";

/// Bad input, said where it was met: nothing was judged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{expected}", if at.is_empty() { String::new() } else { format!("{at}: ") })]
pub struct SuiteError {
    /// `file:line:column`, or the file alone when no position applies.
    pub at: String,
    pub expected: String,
}

impl SuiteError {
    fn at(location: &SourceLocation, expected: impl Into<String>) -> Self {
        SuiteError {
            at: location.to_string(),
            expected: expected.into(),
        }
    }

    fn file(path: &Path, expected: impl Into<String>) -> Self {
        SuiteError {
            at: path.display().to_string(),
            expected: expected.into(),
        }
    }
}

/// A result a test expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Expected {
    Pass,
    Fail,
    Skip,
    Warn,
    Error,
}

impl fmt::Display for Expected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Expected::Pass => "pass",
            Expected::Fail => "fail",
            Expected::Skip => "skip",
            Expected::Warn => "warn",
            Expected::Error => "error",
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    policies: Vec<Spanned<String>>,
    #[serde(default)]
    resources: Vec<Spanned<String>>,
    #[serde(default)]
    cluster_resources: Vec<Spanned<String>>,
    #[serde(default)]
    exceptions: Vec<Spanned<String>>,
    #[serde(default)]
    variables: Option<Spanned<String>>,
    #[serde(default)]
    userinfo: Option<Spanned<String>>,
    #[serde(default)]
    values: Option<Value>,
    #[serde(default)]
    results: Vec<Spanned<TestResult>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TestResult {
    policy: String,
    #[serde(default)]
    rule: Option<String>,
    #[serde(default)]
    resources: Vec<String>,
    #[serde(default)]
    resource: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    result: Option<Spanned<Expected>>,
    #[serde(default)]
    status: Option<Spanned<Expected>>,
    #[serde(default)]
    patched_resource: Option<Spanned<String>>,
}

/// One row of the result table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub policy: String,
    pub rule: String,
    /// `kind/namespace/name` (`kind/name` when cluster-scoped).
    pub resource: String,
    pub expected: Expected,
    /// Whether the engine agreed with the expectation.
    pub matched: bool,
    /// `Ok`, or what differed.
    pub reason: String,
}

/// The outcome of one test file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SuiteOutcome {
    pub file: PathBuf,
    pub policies: usize,
    pub resources: usize,
    pub rows: Vec<Row>,
}

impl SuiteOutcome {
    pub fn passed(&self) -> usize {
        self.rows.iter().filter(|r| r.matched).count()
    }

    pub fn failed(&self) -> usize {
        self.rows.len() - self.passed()
    }
}

/// The test files under `paths`: a file as given, a folder searched
/// recursively for [`TEST_FILE_NAME`], in path order.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<PathBuf>, SuiteError> {
    let mut found = Vec::new();
    for path in paths {
        let metadata = std::fs::metadata(path).map_err(|e| {
            SuiteError::file(path, format!("expected a test file or a folder: {e}"))
        })?;
        if metadata.is_file() {
            found.push(path.clone());
            continue;
        }
        let before = found.len();
        walk(path, 0, &mut found)?;
        if found.len() == before {
            return Err(SuiteError::file(
                path,
                format!("expected a folder holding a {TEST_FILE_NAME}; none was found"),
            ));
        }
    }
    Ok(found)
}

fn walk(dir: &Path, depth: usize, found: &mut Vec<PathBuf>) -> Result<(), SuiteError> {
    // A budget on depth: a symlink loop must end in an error, not a hang.
    if depth > 32 {
        return Err(SuiteError::file(dir, "folders nest deeper than 32 levels"));
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| SuiteError::file(dir, format!("cannot read the folder: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for entry in entries {
        if entry.is_dir() {
            walk(&entry, depth + 1, found)?;
        } else if entry.file_name().is_some_and(|n| n == TEST_FILE_NAME) {
            found.push(entry);
        }
    }
    Ok(())
}

fn location(file: &Path, at: &serde_saphyr::Location) -> SourceLocation {
    SourceLocation {
        source: file.display().to_string(),
        line: at.line(),
        column: at.column(),
    }
}

fn manifest_error(e: &manifest::ManifestError) -> SuiteError {
    let mut text = e.to_string();
    if let Some(source) = std::error::Error::source(e) {
        text.push_str(&format!(": {source}"));
    }
    match text.split_once(": ") {
        Some((at, rest)) if at.contains(':') => SuiteError {
            at: at.to_owned(),
            expected: rest.to_owned(),
        },
        _ => SuiteError {
            at: String::new(),
            expected: text,
        },
    }
}

/// Documents of a referenced file or of the YAML files of a referenced folder.
fn load_reference(
    base: &Path,
    file: &Path,
    reference: &Spanned<String>,
) -> Result<Vec<Document>, SuiteError> {
    let path = base.join(&reference.value);
    let at = location(file, &reference.referenced);
    let paths = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
            .map_err(|e| {
                SuiteError::at(&at, format!("cannot read folder {}: {e}", path.display()))
            })?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
            .collect();
        files.sort();
        files
    } else if path.is_file() {
        vec![path.clone()]
    } else {
        return Err(SuiteError::at(
            &at,
            format!(
                "expected a file or folder at {}; it does not exist",
                path.display()
            ),
        ));
    };
    let mut docs = Vec::new();
    for p in paths {
        docs.extend(manifest::load_documents(&p).map_err(|e| manifest_error(&e))?);
    }
    Ok(docs)
}

/// Variables and labels from the values file and the inline `values`.
#[derive(Debug, Default)]
struct Values {
    global: Map<String, Value>,
    /// (policy, resource name) → values.
    per_resource: Vec<(String, String, Map<String, Value>)>,
    /// (policy, rule) → values.
    per_rule: Vec<(String, String, Map<String, Value>)>,
    namespace_labels: Vec<(String, Map<String, Value>)>,
}

/// The entries of a list field of a values document (none when absent).
fn items<'a>(v: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    v.get(field).and_then(Value::as_array).into_iter().flatten()
}

/// An entry's `name` (empty when absent).
fn name_of(v: &Value) -> String {
    v.get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Values {
    fn absorb(&mut self, spec: &Value) {
        let map = |v: Option<&Value>| v.and_then(Value::as_object).cloned().unwrap_or_default();
        self.global.extend(map(spec.get("globalValues")));
        for p in items(spec, "policies") {
            let name = name_of(p);
            for r in items(p, "resources") {
                self.per_resource
                    .push((name.clone(), name_of(r), map(r.get("values"))));
            }
            for r in items(p, "rules") {
                self.per_rule
                    .push((name.clone(), name_of(r), map(r.get("values"))));
            }
        }
        for ns in items(spec, "namespaceSelector") {
            self.namespace_labels
                .push((name_of(ns), map(ns.get("labels"))));
        }
    }

    fn for_request(&self, policy: &str, resource: &str) -> Map<String, Value> {
        let mut out = self.global.clone();
        for (p, _, values) in &self.per_rule {
            if p == policy {
                out.extend(values.clone());
            }
        }
        for (p, r, values) in &self.per_resource {
            if p == policy && r == resource {
                out.extend(values.clone());
            }
        }
        out
    }

    fn labels_of(&self, namespace: &str) -> std::collections::BTreeMap<String, String> {
        self.namespace_labels
            .iter()
            .filter(|(n, _)| n == namespace)
            .flat_map(|(_, labels)| labels.iter())
            .map(|(k, v)| (k.clone(), crate::scalar::sprint(v)))
            .collect()
    }
}

fn read_user_info(docs: &[Document]) -> UserInfo {
    let Some(doc) = docs.first() else {
        return UserInfo::default();
    };
    let v = &doc.value;
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    UserInfo {
        username: v
            .pointer("/userInfo/username")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        groups: strings(v.pointer("/userInfo/groups")),
        roles: strings(v.get("roles")),
        cluster_roles: strings(v.get("clusterRoles")),
    }
}

fn resource_id(object: &Value) -> String {
    let kind = object
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
    {
        Some(ns) => format!("{kind}/{ns}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// Runs one test file.
pub fn run_suite(file: &Path) -> Result<SuiteOutcome, SuiteError> {
    let (name, text) = manifest::read_source(file).map_err(|e| manifest_error(&e))?;
    let options = serde_saphyr::options! { budget: serde_saphyr::budget! { max_documents: 1 } };
    let test: TestFile = serde_saphyr::from_str_with_options(&text, options).map_err(|e| {
        let at = e
            .location()
            .map(|l| location(file, &l))
            .unwrap_or(SourceLocation {
                source: name.clone(),
                line: 0,
                column: 0,
            });
        let first = e.to_string();
        let first = first
            .lines()
            .next()
            .unwrap_or_default()
            .split(" at line ")
            .next()
            .unwrap_or_default()
            .to_owned();
        SuiteError::at(&at, format!("expected a Kyverno test file: {first}"))
    })?;
    let _ = (&test.name, &test.metadata);
    let base = file.parent().unwrap_or(Path::new("."));

    let mut policies: Vec<Policy> = Vec::new();
    for reference in &test.policies {
        let docs = load_reference(base, file, reference)?;
        let before = policies.len();
        for doc in &docs {
            if policy::is_policy(&doc.value) {
                policies.push(
                    policy::from_document(doc).map_err(|e| SuiteError::at(&e.at, e.expected))?,
                );
            }
        }
        if policies.len() == before {
            return Err(SuiteError::at(
                &location(file, &reference.referenced),
                format!(
                    "expected a kyverno.io ClusterPolicy or Policy in {}",
                    reference.value
                ),
            ));
        }
    }
    let mut resources: Vec<Document> = Vec::new();
    for reference in &test.resources {
        resources.extend(load_reference(base, file, reference)?);
    }
    let mut cluster: Vec<Value> = Vec::new();
    for reference in &test.cluster_resources {
        cluster.extend(
            load_reference(base, file, reference)?
                .into_iter()
                .map(|d| d.value),
        );
    }
    let mut exceptions = Vec::new();
    for reference in &test.exceptions {
        for doc in load_reference(base, file, reference)? {
            if crate::exception::is_exception(&doc.value) {
                exceptions.push(
                    crate::exception::from_value(&doc.value)
                        .map_err(|e| SuiteError::at(&doc.location(), e))?,
                );
            }
        }
    }
    let mut values = Values::default();
    if let Some(reference) = &test.variables {
        for doc in load_reference(base, file, reference)? {
            values.absorb(&doc.value);
        }
    }
    if let Some(inline) = &test.values {
        values.absorb(inline);
    }
    let user_info = match &test.userinfo {
        Some(reference) => read_user_info(&load_reference(base, file, reference)?),
        None => UserInfo::default(),
    };
    // Expected results are checked before anything runs: a bad result word
    // or a missing patched resource is bad input, not a failed test.
    let mut expectations = Vec::new();
    for spanned in &test.results {
        let r = &spanned.value;
        let at = location(file, &spanned.referenced);
        let expected = r
            .result
            .as_ref()
            .or(r.status.as_ref())
            .map(|s| s.value)
            .ok_or_else(|| {
                SuiteError::at(
                    &at,
                    "expected `result: pass|fail|skip|warn|error` on the test result",
                )
            })?;
        let patched = match &r.patched_resource {
            Some(reference) => Some(load_reference(base, file, reference)?),
            None => None,
        };
        expectations.push((r, expected, patched));
    }

    let cluster = InMemoryCluster::new(cluster);
    // Each policy applied to each resource on its own, as the CLI does.
    let mut responses: Vec<Response> = Vec::new();
    for doc in &resources {
        let object = &doc.value;
        let rname = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for policy in &policies {
            let preset = values.for_request(&policy.name, &rname);
            let operation = preset
                .get("request.operation")
                .and_then(Value::as_str)
                .and_then(Operation::parse)
                .unwrap_or(Operation::Create);
            let ns = object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let req = AdmissionRequest {
                operation,
                object: if operation == Operation::Delete {
                    Value::Null
                } else {
                    object.clone()
                },
                old_object: if operation == Operation::Create {
                    Value::Null
                } else {
                    object.clone()
                },
                namespace_labels: values.labels_of(ns),
                user_info: user_info.clone(),
            };
            let mut engine = Engine::new(&cluster);
            engine.preset = preset;
            engine.exceptions = exceptions.clone();
            let outcome = engine.admit(std::slice::from_ref(policy), &req);
            for r in outcome.results {
                responses.push(Response {
                    policy: r.policy,
                    rule: r.rule,
                    object: object.clone(),
                    status: r.status,
                    message: r.message,
                    patched: outcome.patched.clone(),
                });
            }
        }
    }

    let mut rows = Vec::new();
    for (r, expected, patched) in expectations {
        let mut names: Vec<String> = r.resources.clone();
        names.extend(r.resource.clone());
        let policy_name = match &r.namespace {
            Some(ns)
                if !r.policy.contains('/')
                    && policies.iter().any(|p| p.namespace.as_deref() == Some(ns)) =>
            {
                format!("{ns}/{}", r.policy)
            }
            _ => r.policy.clone(),
        };
        for name in names {
            let (want_ns, want_name) = match name.split_once('/') {
                Some((ns, n)) => (Some(ns.to_owned()), n.to_owned()),
                None => (r.namespace.clone(), name.clone()),
            };
            let found: Vec<&Response> = responses
                .iter()
                .filter(|resp| {
                    resp.policy == policy_name
                        && r.rule.as_ref().is_none_or(|rule| &resp.rule == rule)
                        && resp
                            .object
                            .pointer("/metadata/name")
                            .and_then(Value::as_str)
                            == Some(&want_name)
                        && r.kind.as_ref().is_none_or(|k| {
                            k.is_empty()
                                || resp.object.get("kind").and_then(Value::as_str) == Some(k)
                        })
                        && want_ns.as_ref().is_none_or(|ns| {
                            resp.object
                                .pointer("/metadata/namespace")
                                .and_then(Value::as_str)
                                .unwrap_or_default()
                                == ns
                        })
                })
                .collect();
            let resource = found
                .first()
                .map(|f| resource_id(&f.object))
                .unwrap_or_else(|| format!("{}/{}", r.kind.clone().unwrap_or_default(), name));
            let (matched, reason) = judge(expected, &found, patched.as_deref());
            rows.push(Row {
                policy: policy_name.clone(),
                rule: r.rule.clone().unwrap_or_default(),
                resource,
                expected,
                matched,
                reason,
            });
        }
    }
    Ok(SuiteOutcome {
        file: file.to_path_buf(),
        policies: policies.len(),
        resources: resources.len(),
        rows,
    })
}

struct Response {
    policy: String,
    rule: String,
    object: Value,
    status: RuleStatus,
    message: String,
    patched: Value,
}

fn judge(expected: Expected, found: &[&Response], patched: Option<&[Document]>) -> (bool, String) {
    let Some(first) = found.first() else {
        return (false, "Not found".into());
    };
    let got = match first.status {
        RuleStatus::Pass => Some(Expected::Pass),
        RuleStatus::Fail => Some(Expected::Fail),
        RuleStatus::Skip => Some(Expected::Skip),
        RuleStatus::Error => Some(Expected::Error),
        RuleStatus::NotEvaluated => None,
    };
    let Some(got) = got else {
        return (false, format!("Not evaluated: {}", first.message));
    };
    if got != expected {
        return (
            false,
            format!("Want {expected}, got {got}: {}", first.message),
        );
    }
    if let Some(docs) = patched {
        let name = first.object.pointer("/metadata/name");
        let kind = first.object.get("kind");
        let want = docs
            .iter()
            .find(|d| d.value.pointer("/metadata/name") == name && d.value.get("kind") == kind)
            .or(docs.first());
        match want {
            Some(doc) if doc.value == first.patched => {}
            Some(doc) => {
                return (
                    false,
                    format!(
                        "Patched resource didn't match the patched resource in the test result ({}:{}:{})",
                        doc.source, doc.line, doc.column
                    ),
                );
            }
            None => return (false, "The patched resource file holds no object".into()),
        }
    }
    (true, "Ok".into())
}

/// Runs every suite and prints the `kyverno test`-style tables to `out`;
/// `Ok(true)` when every expectation held.
pub fn run_all(paths: &[PathBuf], out: &mut dyn Write) -> Result<bool, SuiteError> {
    let files = discover(paths)?;
    // Everything is loaded and checked before any table prints: bad input
    // anywhere means nothing is judged.
    let outcomes: Vec<SuiteOutcome> = files
        .iter()
        .map(|f| run_suite(f))
        .collect::<Result<_, _>>()?;
    let mut all = true;
    for outcome in &outcomes {
        print_outcome(outcome, out);
        all &= outcome.failed() == 0;
    }
    Ok(all)
}

/// The table of one suite, in the layout of `kyverno test`.
pub fn print_outcome(outcome: &SuiteOutcome, out: &mut dyn Write) {
    let _ = writeln!(out, "Loading test ( {} ) ...", outcome.file.display());
    let _ = writeln!(
        out,
        "  Applying {} {} to {} {} ...",
        outcome.policies,
        if outcome.policies == 1 {
            "policy"
        } else {
            "policies"
        },
        outcome.resources,
        if outcome.resources == 1 {
            "resource"
        } else {
            "resources"
        }
    );
    let _ = writeln!(out, "  Checking results ...");
    let header = ["ID", "POLICY", "RULE", "RESOURCE", "RESULT", "REASON"];
    let rows: Vec<[String; 6]> = outcome
        .rows
        .iter()
        .enumerate()
        .map(|(i, r)| {
            [
                (i + 1).to_string(),
                r.policy.clone(),
                r.rule.clone(),
                r.resource.clone(),
                if r.matched {
                    "Pass".into()
                } else {
                    "Fail".into()
                },
                r.reason.clone(),
            ]
        })
        .collect();
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let rule = widths
        .iter()
        .map(|w| "-".repeat(w + 2))
        .collect::<Vec<_>>()
        .join("+");
    let line = |cells: &[String]| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!(" {c:<w$} "))
            .collect::<Vec<_>>()
            .join("|")
    };
    let _ = writeln!(out);
    let _ = writeln!(out, "+{rule}+");
    let _ = writeln!(out, "|{}|", line(&header.map(str::to_owned)));
    let _ = writeln!(out, "+{rule}+");
    for row in &rows {
        let _ = writeln!(out, "|{}|", line(row));
    }
    let _ = writeln!(out, "+{rule}+");
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "Test Summary: {} tests passed and {} tests failed",
        outcome.passed(),
        outcome.failed()
    );
    let _ = writeln!(out);
}
