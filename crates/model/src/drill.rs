//! A drill ready to run: the parsed file, its resolved topology, and every
//! reference between them checked.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::cluster_workloads::ClusterWorkloads;
use crate::embedded;
use crate::flux_values::{self, ValuesError, ValuesFile};
use crate::manifest::{self, Document, ManifestError};
use crate::manifest_rules::{self, FieldProblem};
use crate::object_rules::{self, object_rule_problems};
use crate::policy_guard;
use crate::scenario::assertion::Assertion;
use crate::scenario::catalog;
use crate::scenario::check::{Checker, check, check_requirement};
use crate::scenario::parse::{MAX_DRILL_BYTES, parse, read_source};
use crate::scenario::spec::{
    AssertionSpec, Condition, DrillSpec, Fault, FromCluster, GuardChange, NodeOperator, PodMatch,
    PolicyRef, Subject, Target, WorkloadSource,
};
use crate::scenario::step::{Action, DELETABLE_KINDS, Step};
use crate::scenario::{Diagnostic, Diagnostics, Located, Position, SourceFile};
use crate::snapshot_drill::{self, Captured};
use crate::topology::{self, CONTROL_PLANE_POOL, Topology};
use crate::workload_ref::WorkloadRef;
#[derive(Debug, Clone)]
pub struct Drill {
    /// The drill as written.
    pub spec: DrillSpec,
    /// Its steps, lowered from the file's, in the file's order.
    pub steps: Vec<Step>,
    /// Its assertions, lowered from the file's, in the file's order.
    pub assertions: Vec<Assertion>,
    /// The file it was read from.
    pub source: SourceFile,
    /// The cluster it builds.
    pub topology: Topology,
    /// The manifest files it deploys and the files of their substitution
    /// values, resolved against the drill's folder.
    pub workload_files: Vec<PathBuf>,
    /// Every object it deploys, in order: the files' documents and the
    /// inline objects, each with where it was written.
    pub workloads: Arc<Vec<Document>>,
    /// Every Kyverno policy the cluster's admission runs: the ClusterPolicy
    /// and Policy objects among the workloads, then those of `policy:` guard
    /// files not already there, each once.
    pub policies: Arc<Vec<Document>>,
    /// The policies `guards:` names, by policy name (`namespace/name` for a
    /// Policy), each with where the guard was written.
    pub policy_guards: Vec<Located<String>>,
    /// Where the pods of a `fromSnapshot` cluster run now, and which
    /// captured pods are not simulated.
    pub snapshot: Option<Captured>,
    /// The objects a `fromCluster` drill read from its cluster when the run
    /// started (the first of `workloads`); `None` until then.
    pub from_cluster: Option<ClusterWorkloads>,
    /// [`Drill::content_hash`], once asked for: every report of every seed
    /// names it, and hashing re-reads every file the drill deploys.
    content_hash: OnceLock<String>,
}

impl Drill {
    /// Reads, parses and checks a drill file. Every problem found is
    /// returned at once, each with its file, line and column.
    pub fn load(path: &Path) -> Result<Drill, Diagnostics> {
        let source = read_source(path, MAX_DRILL_BYTES).map_err(|d| Diagnostics(vec![d]))?;
        Self::from_source(source)
    }

    /// Reads a drill file and runs it on a snapshot instead of its own
    /// cluster (`bench run NAME --snapshot FILE`): `snapshot` becomes its
    /// `fromSnapshot`, its control planes, pools and manifest files are
    /// dropped (but for the Kyverno policies among them, the drill's guards,
    /// unless the snapshot has a policy of the same name), and what a
    /// snapshot cannot see stays: its `import:` pools at zero nodes, the
    /// autoscaler's settings, the endpoint, the storage-class and backup
    /// settings, the guards, and its inline objects (a drill's own probes
    /// and writers). `snapshot` is taken as it is,
    /// not against the drill's folder.
    pub fn load_on_snapshot(path: &Path, snapshot: &Path) -> Result<Drill, Diagnostics> {
        let source = read_source(path, MAX_DRILL_BYTES).map_err(|d| Diagnostics(vec![d]))?;
        // Resolved here, not against the drill's folder (which may be the
        // binary's embedded one); reports name it as it was given.
        let absolute = std::path::absolute(snapshot).unwrap_or_else(|_| snapshot.to_path_buf());
        let mut drill = Self::build(source, Some(&absolute), None)?;
        // A built-in run on a snapshot is still that built-in, on another
        // cluster: reports name it by its name.
        let builtin = Drill::load(path).is_ok_and(|d| d.is_builtin());
        if let Some(captured) = drill.snapshot.as_mut() {
            captured.given = Some(snapshot.to_path_buf());
            captured.given_to_builtin = builtin;
        }
        Ok(drill)
    }

    /// Parses and checks a drill whose text is already read.
    pub fn from_source(source: SourceFile) -> Result<Drill, Diagnostics> {
        Self::build(source, None, None)
    }

    /// Builds the drill; a `fromCluster` drill's objects are `cluster`
    /// once they are read, and until then the references into its
    /// namespaces are taken on trust (they are checked when they are read).
    pub(crate) fn build(
        source: SourceFile,
        on_snapshot: Option<&Path>,
        cluster: Option<ClusterWorkloads>,
    ) -> Result<Drill, Diagnostics> {
        let mut spec = parse(&source)?;
        if let Some(snapshot) = on_snapshot {
            spec.cluster.from_snapshot =
                Some(Located::at(snapshot.to_path_buf(), Position::UNKNOWN));
            spec.cluster.control_planes = None;
            spec.cluster.pools.clear();
        }
        let mut checker = Checker::new(&source);
        let (mut steps, assertions) = check(&spec, &mut checker);
        let drill_dir = source
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let snapshot = match &spec.cluster.from_snapshot {
            Some(named) => {
                let path = embedded::join(&drill_dir, &named.value);
                match snapshot_drill::load(named, &path, &spec.cluster, &source) {
                    Ok(loaded) => Some(loaded),
                    Err(problems) => {
                        checker.diagnostics.0.extend(problems.0);
                        return Err(checker.diagnostics);
                    }
                }
            }
            None => None,
        };
        // A snapshot's workloads are its cluster's own, as `fromCluster`
        // asks: only a drill on neither waits for the cluster's.
        let unread = match (&snapshot, &cluster) {
            (None, None) => crate::cluster_workloads::entry(&spec).cloned(),
            _ => None,
        };
        let (captured_documents, captured, captured_cluster) = match snapshot {
            Some(loaded) => (
                loaded.documents,
                Some(loaded.captured),
                Some(loaded.cluster),
            ),
            None => (
                cluster
                    .as_ref()
                    .map(|c| c.documents.clone())
                    .unwrap_or_default(),
                None,
                None,
            ),
        };
        let topology = match topology::resolve(&spec.cluster, &source, &drill_dir, captured_cluster)
        {
            Ok(topology) => Some(topology),
            Err(problems) => {
                checker.diagnostics.0.extend(problems.0);
                None
            }
        };
        let (mut workload_files, workloads, mut sources) = load_workloads(
            &spec,
            &source,
            &drill_dir,
            captured_documents,
            on_snapshot.is_some(),
            &mut checker,
        );
        if let Some(captured) = &captured {
            workload_files.push(captured.path.clone());
        }
        let (applied_files, applied, mut applied_sources) =
            load_apply_steps(&spec, &drill_dir, &mut checker);
        workload_files.extend(applied_files);
        fill_apply_steps(&mut steps, &applied);
        let (policy_files, policies, policy_guards) =
            load_policies(&spec, &drill_dir, &workloads, unread.as_ref(), &mut checker);
        workload_files.extend(policy_files);
        if let Some(topology) = &topology {
            check_references(
                &spec,
                topology,
                &workloads,
                &applied,
                &policy_guards,
                unread.as_ref(),
                &mut checker,
            );
            if unread.is_none() {
                check_policy_controls(&spec, &policies, &policy_guards, &mut checker);
                check_object_references(topology, &workloads, &mut sources, &mut checker);
                check_applied_references(
                    topology,
                    &workloads,
                    &applied,
                    &mut applied_sources,
                    &mut checker,
                );
            }
            check_budgets(&spec, topology, &workloads, &mut sources, &mut checker);
        }
        let diagnostics = checker.diagnostics;
        match topology {
            Some(topology) if diagnostics.is_empty() => Ok(Drill {
                spec,
                steps,
                assertions,
                source,
                topology,
                workload_files,
                workloads: Arc::new(workloads),
                policies: Arc::new(policies),
                policy_guards,
                snapshot: captured,
                from_cluster: cluster,
                content_hash: OnceLock::new(),
            }),
            _ => Err(diagnostics),
        }
    }
    pub fn name(&self) -> &str {
        &self.spec.metadata.name
    }

    /// Whether this is a built-in drill: one of `bench list` with this name
    /// and the same contents, wherever it was read from (the binary, or an
    /// exported or checked-out copy), so reports name it the same way.
    pub fn is_builtin(&self) -> bool {
        if let Some(captured) = self.snapshot.as_ref().filter(|c| c.given.is_some()) {
            return captured.given_to_builtin;
        }
        builtin_hash(self.name()).is_some_and(|hash| hash == self.content_hash())
    }

    /// `sha256:<hex>` over the drill file, the ksail file it imports and
    /// every manifest file it deploys, so two reports are compared only when
    /// they ran the same drill on the same inputs. Paths are not hashed: a
    /// built-in read from the binary and its copy on disk hash the same.
    pub fn content_hash(&self) -> &str {
        self.content_hash.get_or_init(|| self.hash_contents())
    }

    fn hash_contents(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut hasher = Sha256::new();
        hasher.update(self.source.text.as_bytes());
        let import = self.spec.cluster.import.as_ref().map(|import| {
            let drill_dir = self.source.path.parent().unwrap_or(Path::new(""));
            embedded::join(drill_dir, &import.value)
        });
        for file in import.iter().chain(&self.workload_files) {
            // A file that vanished since validation hashes as empty; the run
            // that needs it fails loudly when it reads it.
            let bytes = embedded::read_bytes(file).unwrap_or_default();
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(&bytes);
        }
        // Objects read from a cluster are inputs as much as files are.
        for document in self.from_cluster.iter().flat_map(|c| &c.documents) {
            let bytes = document.value.to_string();
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(bytes.as_bytes());
        }
        let digest = hasher.finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("sha256:{hex}")
    }
}

/// The content hash of the built-in drill of this name, if there is one.
/// A run asks about one drill, so only that built-in is loaded and hashed,
/// once per process; the others are only parsed, for their names.
fn builtin_hash(name: &str) -> Option<String> {
    static PATHS: OnceLock<BTreeMap<String, PathBuf>> = OnceLock::new();
    static HASHES: Mutex<BTreeMap<String, Option<String>>> = Mutex::new(BTreeMap::new());
    let paths = PATHS.get_or_init(|| {
        catalog::list()
            .unwrap_or_default()
            .into_iter()
            .map(|entry| (entry.name, entry.path))
            .collect()
    });
    let path = paths.get(name)?;
    let mut hashes = HASHES.lock().unwrap_or_else(PoisonError::into_inner);
    hashes
        .entry(name.to_owned())
        // A built-in that does not load is reported by `bench list` and its
        // tests; here it is simply no match.
        .or_insert_with(|| Drill::load(path).ok().map(|d| d.content_hash().to_owned()))
        .clone()
}

/// Where each loaded document's text is, so a problem found in a field of
/// it points at that field: the parsed text of every manifest file, and the
/// position of every inline object in the drill file.
#[derive(Default)]
struct Sources {
    texts: BTreeMap<String, String>,
    maps: BTreeMap<String, crate::field_locate::FieldMap>,
    /// Inline objects, by their index among all documents.
    inline: BTreeMap<usize, Position>,
}

impl Sources {
    /// A diagnostic at every object that repeats an earlier one's kind,
    /// namespace and name, naming where the first is.
    fn duplicates(&mut self, documents: &[Document], checker: &mut Checker<'_>) {
        for (index, earlier, problem) in object_rules::duplicate_objects(documents) {
            let first = &documents[earlier];
            let problem = FieldProblem {
                pointer: "/metadata/name".to_owned(),
                message: format!("{problem}; the first is at {}:{}", first.source, first.line),
            };
            self.diagnostic(documents, index, &problem, checker);
        }
    }

    /// The diagnostic of `problem` in `documents[index]`.
    fn diagnostic(
        &mut self,
        documents: &[Document],
        index: usize,
        problem: &FieldProblem,
        checker: &mut Checker<'_>,
    ) {
        let document = &documents[index];
        if let Some(at) = self.inline.get(&index) {
            checker.error(*at, format!("inline workload: {}", problem.message));
            return;
        }
        let (mut line, mut column) = (document.line, document.column);
        if !problem.pointer.is_empty()
            && let Some(text) = self.texts.get(&document.source)
        {
            let map = self
                .maps
                .entry(document.source.clone())
                .or_insert_with(|| crate::field_locate::FieldMap::parse(text));
            if let Some(at) = map.locate(document.index, &problem.pointer) {
                (line, column) = at;
            }
        }
        checker.diagnostics.push(manifest_diagnostic(
            Path::new(&document.source),
            line,
            column,
            problem.message.clone(),
        ));
    }
}

/// The rules one object breaks on its own: what every object needs, the
/// API server's rules for its kind, and its fields decoded into their type.
fn own_problems(object: &serde_json::Value) -> Vec<FieldProblem> {
    if let Some(problem) = object_rules::object_problem(object) {
        return vec![FieldProblem {
            pointer: String::new(),
            message: problem,
        }];
    }
    let mut problems = object_rule_problems(object);
    // An apiVersion the kind is not served at leaves nothing to decode.
    if !problems.iter().any(|p| p.pointer == "/apiVersion") {
        problems.extend(manifest_rules::object_field_problems(object));
    }
    problems
}

/// One manifest file a drill names, under `workloads:` or in an `apply`
/// step.
struct ManifestFile<'a> {
    /// What the drill calls it, for the message when it is missing.
    what: &'static str,
    /// As written, relative to the drill's folder.
    path: &'a Path,
    /// Where the drill names it.
    at: Position,
    substitute: &'a BTreeMap<String, String>,
    substitute_from: &'a [crate::scenario::spec::SubstituteFrom],
}

impl ManifestFile<'_> {
    /// Reads the file's documents onto `documents`, each checked on its
    /// own; returns the files read (the manifest and its values files).
    /// A file that is missing or malformed is a diagnostic at the place
    /// the problem is: the drill's line for a missing file, the file's own
    /// line and column for bad YAML, and the offending field for an object
    /// the API server would refuse.
    fn load(
        &self,
        drill_dir: &Path,
        documents: &mut Vec<Document>,
        sources: &mut Sources,
        checker: &mut Checker<'_>,
    ) -> Vec<PathBuf> {
        let resolved = embedded::join(drill_dir, self.path);
        if !embedded::is_file(&resolved) {
            let what = if embedded::exists(&resolved) {
                "is not a regular file (a folder, pipe or device)"
            } else {
                "does not exist"
            };
            checker.error(
                self.at,
                format!(
                    "{} `{}` {what} (resolved against the drill's folder)",
                    self.what,
                    self.path.display()
                ),
            );
            return Vec::new();
        }
        let value_files: Vec<ValuesFile> = self
            .substitute_from
            .iter()
            .map(|entry| ValuesFile {
                path: embedded::join(drill_dir, &entry.path),
                optional: entry.optional,
            })
            .collect();
        let values = match flux_values::gather(self.substitute, &value_files) {
            Ok(values) => values,
            Err(
                ValuesError::Shape { location, expected }
                | ValuesError::Manifest(ManifestError::Malformed { location, expected }),
            ) => {
                checker.diagnostics.push(manifest_diagnostic(
                    Path::new(&location.source),
                    location.line,
                    location.column,
                    expected,
                ));
                return Vec::new();
            }
            Err(error) => {
                checker.error(self.at, error.to_string());
                return Vec::new();
            }
        };
        match manifest::load_substituted_text(&resolved, &values) {
            Ok((loaded, text)) => {
                if let Some(first) = loaded.first() {
                    sources.texts.insert(first.source.clone(), text);
                }
                let start = documents.len();
                documents.extend(loaded);
                for index in start..documents.len() {
                    for problem in own_problems(&documents[index].value) {
                        sources.diagnostic(documents, index, &problem, checker);
                    }
                }
            }
            Err(ManifestError::Malformed { location, expected }) => {
                checker.diagnostics.push(manifest_diagnostic(
                    &resolved,
                    location.line,
                    location.column,
                    expected,
                ));
            }
            Err(ManifestError::Substitution { problems, .. }) => {
                for problem in problems {
                    checker.diagnostics.push(manifest_diagnostic(
                        &resolved,
                        problem.line,
                        problem.column,
                        problem.message,
                    ));
                }
            }
            Err(error) => checker.error(self.at, error.to_string()),
        }
        std::iter::once(resolved)
            .chain(value_files.into_iter().map(|file| file.path))
            .collect()
    }
}

/// Reads the manifest file of every `apply` step, by the step's index:
/// each is checked as a workload file is, and a Kyverno policy in one is
/// refused (admission runs the policies the drill starts with).
fn load_apply_steps(
    spec: &DrillSpec,
    drill_dir: &Path,
    checker: &mut Checker<'_>,
) -> (Vec<PathBuf>, BTreeMap<usize, Vec<Document>>, Sources) {
    // Their own: no inline object is among a step's documents.
    let mut own = Sources::default();
    let sources = &mut own;
    let mut files = Vec::new();
    let mut applied = BTreeMap::new();
    for (index, step) in spec.steps.iter().enumerate() {
        let Some(apply) = &step.apply else {
            continue;
        };
        let file = ManifestFile {
            what: "manifest file",
            path: &apply.path,
            at: apply.path.at,
            substitute: &apply.substitute,
            substitute_from: &apply.substitute_from,
        };
        let mut documents = Vec::new();
        files.extend(file.load(drill_dir, &mut documents, sources, checker));
        sources.duplicates(&documents, checker);
        for at in 0..documents.len() {
            if policy_guard::is_policy(&documents[at].value) {
                let problem = FieldProblem {
                    pointer: "/kind".to_owned(),
                    message: "a Kyverno policy applied by a step is not modelled: admission \
                              runs the policies the drill starts with; expected it under \
                              `workloads:`"
                        .to_owned(),
                };
                sources.diagnostic(&documents, at, &problem, checker);
            }
        }
        applied.insert(index, documents);
    }
    (files, applied, own)
}

/// The references of the objects `apply` steps bring (a namespace, a
/// StorageClass, a PriorityClass) resolve against the drill's objects and
/// every applied one, and a `globalDefault` PriorityClass among them is
/// refused when one exists already, as for the drill's own.
fn check_applied_references(
    topology: &Topology,
    workloads: &[Document],
    applied: &BTreeMap<usize, Vec<Document>>,
    sources: &mut Sources,
    checker: &mut Checker<'_>,
) {
    let flat: Vec<Document> = applied.values().flatten().cloned().collect();
    if flat.is_empty() {
        return;
    }
    let classes: Vec<String> = topology
        .storage_classes
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let values: Vec<&serde_json::Value> = workloads.iter().chain(&flat).map(|d| &d.value).collect();
    let declared = manifest_rules::Declared::new(&values, &classes);
    for (index, document) in flat.iter().enumerate() {
        for problem in declared.unresolved(&document.value) {
            sources.diagnostic(&flat, index, &problem, checker);
        }
    }
    let all: Vec<Document> = workloads.iter().chain(&flat).cloned().collect();
    for (index, problem) in
        crate::priority_class_rules::second_global_defaults(&all, workloads.len())
    {
        sources.diagnostic(&flat, index - workloads.len(), &problem, checker);
    }
}

/// Gives each lowered `apply` step the objects of its file, in step order.
fn fill_apply_steps(steps: &mut [Step], applied: &BTreeMap<usize, Vec<Document>>) {
    let mut files = applied.values();
    for step in steps {
        if let Action::Apply(manifest) = &mut step.action
            && let Some(documents) = files.next()
        {
            manifest.documents = documents.clone();
        }
    }
}

/// Reads every workload file and inline object.
fn load_workloads(
    spec: &DrillSpec,
    source: &SourceFile,
    drill_dir: &Path,
    captured: Vec<Document>,
    policies_only: bool,
    checker: &mut Checker<'_>,
) -> (Vec<PathBuf>, Vec<Document>, Sources) {
    let captured_count = captured.len();
    let mut files = Vec::new();
    // A snapshot's objects come first, so a drill's object of the same
    // name is the duplicate reported, at the drill's file.
    let mut documents = captured;
    let mut sources = Sources::default();
    let mut from_cluster_seen = false;
    for index in 0..documents.len() {
        for problem in own_problems(&documents[index].value) {
            sources.diagnostic(&documents, index, &problem, checker);
        }
    }
    for workload in &spec.workloads {
        match &workload.value {
            WorkloadSource::Path {
                path,
                substitute,
                substitute_from,
            } => {
                let file = ManifestFile {
                    what: "workload file",
                    path,
                    at: workload.at,
                    substitute,
                    substitute_from,
                };
                let start = documents.len();
                files.extend(file.load(drill_dir, &mut documents, &mut sources, checker));
                if policies_only {
                    let mut index = 0;
                    documents.retain(|doc| {
                        index += 1;
                        index <= start || policy_guard::is_policy(&doc.value)
                    });
                }
            }
            WorkloadSource::FromCluster(_) => {
                if std::mem::replace(&mut from_cluster_seen, true) {
                    checker.error(
                        workload.at,
                        "a second `fromCluster:` entry; expected one, naming every namespace \
                         the drill takes from the cluster",
                    );
                }
            }
            WorkloadSource::Inline(object) => {
                sources.inline.insert(documents.len(), workload.at);
                documents.push(Document {
                    source: source.path.display().to_string(),
                    index: documents.len(),
                    line: u64::from(workload.at.line),
                    column: u64::from(workload.at.column),
                    value: object.clone(),
                });
                let index = documents.len() - 1;
                for problem in own_problems(object) {
                    sources.diagnostic(&documents, index, &problem, checker);
                }
            }
        }
    }
    if policies_only {
        // On a snapshot, its live policy wins over the drill's copy.
        let duplicates: BTreeSet<usize> = object_rules::duplicate_objects(&documents)
            .into_iter()
            .filter(|&(index, earlier, _)| earlier < captured_count && index >= captured_count)
            .map(|(index, _, _)| index)
            .collect();
        let mut index = 0;
        documents.retain(|_| {
            index += 1;
            !duplicates.contains(&(index - 1))
        });
        // Inline objects are found by their place among the documents.
        sources.inline = std::mem::take(&mut sources.inline)
            .into_iter()
            .map(|(at, position)| (at - duplicates.range(..at).count(), position))
            .collect();
    }
    sources.duplicates(&documents, checker);
    for (index, problem) in
        crate::priority_class_rules::second_global_defaults(&documents, captured_count)
    {
        sources.diagnostic(&documents, index, &problem, checker);
    }
    (files, documents, sources)
}

/// The references between objects, and to the cluster's storage classes,
/// that do not resolve: a StorageClass, namespace or PriorityClass that
/// neither the cluster nor the manifests have.
fn check_object_references(
    topology: &Topology,
    documents: &[Document],
    sources: &mut Sources,
    checker: &mut Checker<'_>,
) {
    let classes: Vec<String> = topology
        .storage_classes
        .iter()
        .map(|c| c.name.clone())
        .collect();
    let values: Vec<&serde_json::Value> = documents.iter().map(|d| &d.value).collect();
    let declared = manifest_rules::Declared::new(&values, &classes);
    for (index, document) in documents.iter().enumerate() {
        for problem in declared.unresolved(&document.value) {
            sources.diagnostic(documents, index, &problem, checker);
        }
    }
}

/// Refuses a drill larger than its budgets (see [`crate::budget`]), at the
/// place that makes it so large.
fn check_budgets(
    spec: &DrillSpec,
    topology: &Topology,
    documents: &[Document],
    sources: &mut Sources,
    checker: &mut Checker<'_>,
) {
    use crate::budget::{Budgets, exceeded};
    let budgets = Budgets::of(spec.budgets.as_ref());
    let mut nodes = topology.control_planes.names().len() as u64;
    for pool in &topology.pools {
        let written = spec.cluster.pools.iter().find(|p| *p.name == pool.name);
        let (largest, at) = match pool.size {
            topology::PoolSize::Static(n) => {
                (n, written.and_then(|w| w.count.as_ref()).map(|c| c.at))
            }
            topology::PoolSize::Autoscaled { max, .. } => (
                max,
                written
                    .and_then(|w| w.autoscaled.as_ref())
                    .map(|a| a.value.max.at),
            ),
        };
        nodes += u64::from(largest);
        if nodes > budgets.nodes {
            checker.error(
                at.or(written.map(|w| w.at)).unwrap_or(Position::UNKNOWN),
                exceeded(
                    &format!(
                        "the cluster can grow to {nodes} nodes with pool `{}`",
                        pool.name
                    ),
                    "nodes",
                    budgets.nodes,
                ),
            );
            break;
        }
    }
    if documents.len() as u64 > budgets.objects {
        let document = &documents[budgets.objects as usize];
        checker.diagnostics.push(manifest_diagnostic(
            Path::new(&document.source),
            document.line,
            document.column,
            exceeded(
                &format!("the drill deploys {} objects", documents.len()),
                "objects",
                budgets.objects,
            ),
        ));
    }
    let mut pods: u64 = 0;
    let mut daemon_sets: u64 = 0;
    for (index, document) in documents.iter().enumerate() {
        let number = |pointer: &str| document.value.pointer(pointer).and_then(|v| v.as_u64());
        let (asked, pointer) = match document.kind() {
            Some("Deployment" | "StatefulSet" | "ReplicaSet") => {
                (number("/spec/replicas").unwrap_or(1), "/spec/replicas")
            }
            Some("Job") => (
                number("/spec/parallelism").unwrap_or(1),
                "/spec/parallelism",
            ),
            // A DaemonSet runs a pod on every node the cluster can have.
            Some("DaemonSet") => (nodes, "/kind"),
            Some("Pod" | "CronJob") => (1, "/kind"),
            _ => continue,
        };
        pods = pods.saturating_add(asked);
        daemon_sets += u64::from(document.kind() == Some("DaemonSet"));
        if pods > budgets.pods {
            // DaemonSet pods are nodes × DaemonSets: say so, as neither
            // number alone looks large.
            let how = if document.kind() == Some("DaemonSet") {
                format!(
                    " ({daemon_sets} DaemonSets so far, each a pod on every one of up to {nodes} nodes)"
                )
            } else {
                String::new()
            };
            let problem = FieldProblem {
                pointer: pointer.to_owned(),
                message: exceeded(
                    &format!("the workloads ask for {pods} pods at once by this object{how}"),
                    "pods",
                    budgets.pods,
                ),
            };
            sources.diagnostic(documents, index, &problem, checker);
            break;
        }
    }
    if spec.steps.len() as u64 > budgets.steps {
        checker.error(
            spec.steps[budgets.steps as usize].at,
            exceeded(
                &format!("the drill has {} steps", spec.steps.len()),
                "steps",
                budgets.steps,
            ),
        );
    }
    let mut time = crate::duration::Duration::ZERO;
    for step in &spec.steps {
        if let Some(scale) = &step.scale
            && u64::from(scale.replicas) > budgets.pods
        {
            checker.error(
                step.at,
                exceeded(
                    &format!("the step scales to {} replicas", scale.replicas),
                    "pods",
                    budgets.pods,
                ),
            );
        }
        if let Some(wait) = &step.wait {
            for waited in [wait.duration, wait.timeout].into_iter().flatten() {
                time = time.saturating_add(waited);
            }
            if time > budgets.simulated_time {
                checker.error(
                    step.at,
                    exceeded(
                        &format!("the steps let {time} of drill time pass by this one"),
                        "simulatedTime",
                        budgets.simulated_time,
                    ),
                );
                break;
            }
        }
    }
    for step in spec.recovery.iter().flat_map(|r| &r.steps) {
        if let Some(attempts) = &step.max_attempts
            && u64::from(attempts.value) > budgets.recovery_attempts
        {
            checker.error(
                attempts.at,
                exceeded(
                    &format!("the recovery step allows {} attempts", attempts.value),
                    "recoveryAttempts",
                    budgets.recovery_attempts,
                ),
            );
        }
    }
}

/// The Kyverno policies of the drill: those among the workloads, and those
/// `policy:` guards name, a file (read like a workload file; every document
/// in it must be a policy) or a workload by name. Unknown names and files
/// without a policy are diagnostics at the `policy:` entry.
fn load_policies(
    spec: &DrillSpec,
    drill_dir: &Path,
    workloads: &[Document],
    unread: Option<&FromCluster>,
    checker: &mut Checker<'_>,
) -> (Vec<PathBuf>, Vec<Document>, Vec<Located<String>>) {
    let mut policies: Vec<Document> = workloads
        .iter()
        .filter(|d| policy_guard::is_policy(&d.value))
        .cloned()
        .collect();
    let mut files = Vec::new();
    let mut guards: Vec<Located<String>> = Vec::new();
    for entry in &spec.guard_entries {
        let Some(policy) = &entry.policy else {
            continue;
        };
        match &policy.value {
            PolicyRef::Named(name) => {
                if policies
                    .iter()
                    .any(|d| policy_guard::policy_name(&d.value).as_deref() == Some(name))
                {
                    guards.push(Located::at(name.clone(), policy.at));
                } else if unread.is_some_and(|from| {
                    // A ClusterPolicy is always read; a Policy with its
                    // namespace.
                    name.split_once('/').is_none_or(|(ns, _)| from.covers(ns))
                }) {
                    // Checked once the cluster's policies are read.
                    guards.push(Located::at(name.clone(), policy.at));
                } else {
                    let known: Vec<String> = policies
                        .iter()
                        .filter_map(|d| policy_guard::policy_name(&d.value))
                        .collect();
                    let known: Vec<&str> = known.iter().map(String::as_str).collect();
                    checker.error(
                        policy.at,
                        format!(
                            "`{name}` is not a Kyverno policy among the workloads{}; {}",
                            did_you_mean(name, known.iter().copied()),
                            one_of(&known, "workloads")
                        ),
                    );
                }
            }
            PolicyRef::File(path) => {
                let resolved = embedded::join(drill_dir, path);
                if !embedded::is_file(&resolved) {
                    checker.error(
                        policy.at,
                        format!(
                            "policy file `{}` does not exist (resolved against the drill's folder)",
                            path.display()
                        ),
                    );
                    continue;
                }
                let documents = match manifest::load_documents(&resolved) {
                    Ok(documents) => documents,
                    Err(ManifestError::Malformed { location, expected }) => {
                        checker.diagnostics.push(manifest_diagnostic(
                            &resolved,
                            location.line,
                            location.column,
                            expected,
                        ));
                        continue;
                    }
                    Err(error) => {
                        checker.error(policy.at, error.to_string());
                        continue;
                    }
                };
                if documents.is_empty() {
                    checker.error(
                        policy.at,
                        format!("policy file `{}` holds no document", path.display()),
                    );
                }
                for document in documents {
                    let Some(name) = policy_guard::policy_name(&document.value) else {
                        checker.diagnostics.push(manifest_diagnostic(
                            &resolved,
                            document.line,
                            document.column,
                            "expected a Kyverno ClusterPolicy or Policy (apiVersion kyverno.io/v1)",
                        ));
                        continue;
                    };
                    guards.push(Located::at(name.clone(), policy.at));
                    let present = policies
                        .iter()
                        .any(|d| policy_guard::policy_name(&d.value).as_deref() == Some(&name));
                    if !present {
                        policies.push(document);
                    }
                }
                files.push(resolved);
            }
        }
    }
    let mut seen: BTreeMap<String, Position> = BTreeMap::new();
    for guard in &guards {
        if let Some(first) = seen.get(guard.as_str()) {
            checker.error(
                guard.at,
                format!(
                    "duplicate guard `{}`; the first is at line {}",
                    guard.value, first.line
                ),
            );
        } else {
            seen.insert(guard.value.clone(), guard.at);
        }
    }
    for shorthand in &spec.guards {
        if let Some(first) = seen.get(shorthand.name.as_str()) {
            checker.error(
                shorthand.name.at,
                format!(
                    "guard `{}` has the name of the policy guard at line {}",
                    shorthand.name.value, first.line
                ),
            );
        }
    }
    (files, policies, guards)
}

/// The negative controls that name a policy guard: the change fits a
/// policy, a named rule exists, and the patch applies.
fn check_policy_controls(
    spec: &DrillSpec,
    policies: &[Document],
    policy_guards: &[Located<String>],
    checker: &mut Checker<'_>,
) {
    let policy_of = |name: &str| {
        policy_guards
            .iter()
            .any(|g| g.as_str() == name)
            .then(|| {
                policies
                    .iter()
                    .find(|d| policy_guard::policy_name(&d.value).as_deref() == Some(name))
            })
            .flatten()
    };
    let rule_known = |policy: &Document, rule: &Located<String>, checker: &mut Checker<'_>| {
        let rules = policy_guard::rule_names(&policy.value);
        if !rules.iter().any(|r| r == rule.as_str()) {
            let known: Vec<&str> = rules.iter().map(String::as_str).collect();
            checker.error(
                rule.at,
                format!(
                    "`{}` is not a rule of policy `{}`{}; {}",
                    rule.value,
                    policy_guard::policy_name(&policy.value).unwrap_or_default(),
                    did_you_mean(&rule.value, known.iter().copied()),
                    one_of(&known, "spec.rules")
                ),
            );
        }
    };
    for assertion in &spec.assertions {
        let Some(control) = &assertion.negative_control else {
            continue;
        };
        if let Some(admission) = &control.admission
            && let Some(rule) = &admission.rule
        {
            match policy_of(&admission.guard) {
                Some(policy) => rule_known(policy, rule, checker),
                None => checker.error(
                    rule.at,
                    format!(
                        "`rule:` names a rule of a policy guard; `{}` is a shorthand guard",
                        admission.guard.value
                    ),
                ),
            }
        }
        let Some(ablation) = &control.ablation else {
            continue;
        };
        let change = &ablation.change;
        match policy_of(&ablation.guard) {
            Some(policy) => {
                if !change.is_policy_change() {
                    checker.error(
                        change.at,
                        format!(
                            "guard `{}` is a Kyverno policy; expected `removePolicy`, `removeRule: NAME` or `patch: [...]`",
                            ablation.guard.value
                        ),
                    );
                    continue;
                }
                if let GuardChange::RemoveRule(rule) = &change.value {
                    rule_known(policy, &Located::at(rule.clone(), change.at), checker);
                } else if let Err(problem) = policy_guard::apply_change(&policy.value, change) {
                    checker.error(change.at, problem);
                }
            }
            None if change.is_policy_change() => {
                let known = spec
                    .guards
                    .iter()
                    .any(|g| g.name.as_str() == ablation.guard.as_str());
                if known {
                    checker.error(
                        change.at,
                        format!(
                            "guard `{}` is a shorthand guard; `removePolicy`, `removeRule` and `patch` change Kyverno policy guards",
                            ablation.guard.value
                        ),
                    );
                }
            }
            None => {}
        }
    }
}

/// A diagnostic inside a manifest file, with the file's text for context.
fn manifest_diagnostic(
    path: &Path,
    line: u64,
    column: u64,
    message: impl Into<String>,
) -> Diagnostic {
    let at = Position {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
        offset: 0,
        len: 0,
    };
    match read_source(path, manifest::MAX_INPUT_BYTES) {
        Ok(text) if at.is_known() => Diagnostic::at(&text, at, message),
        _ => Diagnostic::file(path, message),
    }
}

/// What the simulator compares when an object of the drill is applied
/// again: its pod template's labels and spec (a bare pod's own), or `None`
/// for an object without pods.
fn template_of(document: &Document) -> Option<serde_json::Value> {
    let template = match document.kind()? {
        "Pod" => "",
        "CronJob" => "/spec/jobTemplate/spec/template",
        kind if WORKLOAD_KINDS.contains(&kind) => "/spec/template",
        _ => return None,
    };
    let field = |pointer: &str| {
        document
            .value
            .pointer(&format!("{template}{pointer}"))
            .cloned()
            .unwrap_or_default()
    };
    Some(serde_json::json!([
        field("/metadata/labels"),
        field("/spec")
    ]))
}

/// The kinds a drill can scale or wait for: the pod controllers.
pub const WORKLOAD_KINDS: [&str; 6] = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
    "CronJob",
];

/// Checks that every name the drill uses refers to something that exists.
fn check_references(
    spec: &DrillSpec,
    topology: &Topology,
    workloads: &[Document],
    applied: &BTreeMap<usize, Vec<Document>>,
    policy_guards: &[Located<String>],
    unread: Option<&FromCluster>,
    checker: &mut Checker<'_>,
) {
    let mut refs = References::new(topology, workloads);
    refs.policy_guards = policy_guards.iter().map(|g| g.value.clone()).collect();
    refs.unread = unread;
    for guard in &spec.guards {
        refs.pod_match(&guard.matches, checker);
    }
    // Steps run in order: a step may name what an earlier `apply` created
    // and not what an earlier `delete` removed.
    let mut deleted = BTreeSet::new();
    for (index, step) in spec.steps.iter().enumerate() {
        if let (Some(apply), Some(documents)) = (&step.apply, applied.get(&index)) {
            refs.apply(&apply.path, documents, checker);
        }
        if let Some(delete) = &step.delete {
            deleted.extend(refs.delete(delete, checker));
        }
        if let Some(preflight) = &step.preflight {
            if let Some(target) = &preflight.target {
                refs.control_plane_target(target, checker);
            }
            match &preflight.schedule {
                Some(schedule) => refs.schedule(schedule, checker),
                None if topology.backups.is_empty() => checker.error(
                    step.at,
                    "a preflight checks the newest backup, but the cluster has no backup \
                     schedule; expected one under cluster.backups",
                ),
                None => {}
            }
        }
        if let Some(fault) = &step.fault {
            match &fault.value {
                Fault::DeleteNode(f) | Fault::CrashNode(f) | Fault::ReplaceNode(f) => {
                    refs.target(&f.target, checker)
                }
                Fault::RecreateControlPlane(f) => refs.control_plane_target(&f.target, checker),
                Fault::RemovePool(f) => refs.pool(&f.pool, checker),
                Fault::RollingUpgrade(_) => {}
                Fault::FullRebuild(f) => {
                    if let Some(schedule) = &f.restore_from {
                        refs.schedule(schedule, checker);
                    }
                }
                Fault::RestoreNamespace(f) => {
                    refs.namespace(&f.namespace, checker);
                    refs.schedule(&f.schedule, checker);
                }
            }
        }
        if let Some(scale) = &step.scale {
            refs.workload(&scale.workload, checker);
        }
        if let Some(rollout) = &step.rollout {
            refs.workload(&rollout.workload, checker);
        }
        if let Some(target) = step.node_target() {
            refs.target(target, checker);
        }
        if let Some(evict) = &step.evict {
            refs.workload(&evict.workload, checker);
        }
        if let Some(pdb) = &step.pdb {
            refs.pdb(&pdb.name, checker);
        }
        if let Some(wait) = &step.wait
            && let Some(until) = &wait.until
        {
            match &until.value {
                Condition::PoolSize(size) => {
                    refs.pool(&Located::at(size.pool.clone(), until.at), checker);
                }
                Condition::WorkloadReady(workload) => {
                    refs.workload(&Located::at(workload.clone(), until.at), checker);
                }
                Condition::AllWorkloadsReady | Condition::EtcdVoters(_) => {}
            }
        }
    }
    // An assertion judges the whole drill, so it may name a workload a
    // step deleted.
    refs.workloads.extend(deleted);
    crate::fault_targets::check_fault_targets(spec, topology, checker);
    let names: BTreeSet<&str> = spec.assertions.iter().map(|a| a.name.as_str()).collect();
    for assertion in &spec.assertions {
        refs.assertion(assertion, &names, spec, checker);
    }
}

/// " (did you mean `x`?)" when a known name is close to `wanted`.
fn did_you_mean<'k>(wanted: &str, known: impl IntoIterator<Item = &'k str>) -> String {
    crate::suggest::closest(wanted, known)
        .map(|name| format!(" (did you mean `{name}`?)"))
        .unwrap_or_default()
}

/// "expected one of: a, b", or where such names would be defined.
fn one_of(known: &[&str], section: &str) -> String {
    const SHOWN: usize = 12;
    if known.is_empty() {
        format!("none is defined under `{section}`")
    } else if known.len() > SHOWN {
        format!(
            "expected one of: {}, … ({} in all)",
            known[..SHOWN].join(", "),
            known.len()
        )
    } else {
        format!("expected one of: {}", known.join(", "))
    }
}

/// The names a drill may refer to.
struct References<'t> {
    topology: &'t Topology,
    nodes: Vec<String>,
    control_planes: Vec<String>,
    workloads: BTreeSet<String>,
    /// The drill's PodDisruptionBudgets, as `namespace/name`.
    pdbs: BTreeSet<String>,
    /// The drill's bare pods, as `namespace/Pod/name`.
    bare_pods: BTreeSet<String>,
    /// The pod template of each workload and bare pod, by its
    /// `namespace/Kind/name`: what a later apply may not change.
    templates: BTreeMap<String, serde_json::Value>,
    /// Namespaces the drill's documents live in or create.
    namespaces: BTreeSet<String>,
    /// The names of the drill's policy guards.
    policy_guards: Vec<String>,
    /// What a `fromCluster` drill will read from its cluster: a workload
    /// or namespace there cannot be checked before the run reads it.
    unread: Option<&'t FromCluster>,
}

impl<'t> References<'t> {
    fn new(topology: &'t Topology, workloads: &[Document]) -> Self {
        References {
            topology,
            nodes: topology.static_node_names(),
            control_planes: topology.control_planes.names(),
            workloads: workloads
                .iter()
                .filter(|d| d.kind().is_some_and(|k| WORKLOAD_KINDS.contains(&k)))
                .map(|d| WorkloadRef::of_object(&d.value).to_string())
                .collect(),
            pdbs: workloads
                .iter()
                .filter(|d| d.kind() == Some("PodDisruptionBudget"))
                .filter_map(|d| {
                    let field = |pointer: &str| d.value.pointer(pointer).and_then(|v| v.as_str());
                    Some(format!(
                        "{}/{}",
                        field("/metadata/namespace").unwrap_or("default"),
                        field("/metadata/name")?
                    ))
                })
                .collect(),
            bare_pods: workloads
                .iter()
                .filter(|d| d.kind() == Some("Pod"))
                .map(|d| WorkloadRef::of_object(&d.value).to_string())
                .collect(),
            templates: workloads
                .iter()
                .filter_map(|d| {
                    Some((
                        WorkloadRef::of_object(&d.value).to_string(),
                        template_of(d)?,
                    ))
                })
                .collect(),
            namespaces: workloads
                .iter()
                .filter_map(|d| {
                    let field = |pointer: &str| d.value.pointer(pointer).and_then(|v| v.as_str());
                    match d.kind() {
                        Some("Namespace") => field("/metadata/name"),
                        _ => field("/metadata/namespace"),
                    }
                })
                .map(str::to_owned)
                .collect(),
            policy_guards: Vec::new(),
            unread: None,
        }
    }

    /// Whether `namespace` is one the cluster's objects are still to be
    /// read from.
    fn unread(&self, namespace: &str) -> bool {
        self.unread.is_some_and(|f| f.covers(namespace))
    }

    /// A weakening names real assertions, and takes away something the
    /// drill has: its endpoint, its recreate, its preflight, its control planes.
    fn weakening(
        &self,
        weaken: &crate::scenario::spec::WeakenControl,
        spec: &DrillSpec,
        names: &BTreeSet<&str>,
        checker: &mut Checker<'_>,
    ) {
        use crate::scenario::spec::DrillChange;
        for target in &weaken.must_fail {
            let is_control = spec
                .assertions
                .iter()
                .find(|a| a.name.as_str() == target.as_str())
                .is_some_and(|a| a.negative_control.is_some());
            if !names.contains(target.as_str()) {
                checker.error(
                    target.at,
                    format!(
                        "`{}` is not an assertion of the drill; expected one of: {}",
                        target.value,
                        names.iter().copied().collect::<Vec<_>>().join(", ")
                    ),
                );
            } else if is_control {
                checker.error(
                    target.at,
                    format!(
                        "`{}` is itself a negative control; a weakening must fail a real assertion",
                        target.value
                    ),
                );
            }
        }
        let recreates = spec.steps.iter().any(|s| {
            s.fault
                .as_ref()
                .is_some_and(|f| matches!(f.value, Fault::RecreateControlPlane(_)))
        });
        let preflight = spec.steps.iter().any(|s| s.preflight.is_some());
        let at = weaken.change.at;
        if let DrillChange::All(changes) = &weaken.change.value {
            if changes.is_empty() {
                checker.error(
                    at,
                    "`all` names no change; expected the safeguards taken away",
                );
            }
            if changes.iter().any(|c| matches!(c, DrillChange::All(_))) {
                checker.error(
                    at,
                    "`all` inside `all`; expected the changes listed in one `all`",
                );
            }
        }
        for change in weaken.change.value.parts() {
            match change {
            DrillChange::SecondFaultBeforePromotion if !recreates => checker.error(
                at,
                "`secondFaultBeforePromotion` follows a control-plane recreate, but the drill \
                 has no `recreateControlPlane` step",
            ),
            DrillChange::EndpointWithoutFailover | DrillChange::KubeconfigOnNode
                if self.topology.endpoint.is_none() =>
            {
                checker.error(
                    at,
                    "this weakening changes the stable endpoint, but the cluster has none; \
                     expected `cluster.endpoint`",
                )
            }
            DrillChange::SkipSteps(skipped) => {
                let label = |i: usize, s: &Located<crate::scenario::spec::StepSpec>| {
                    s.name.clone().unwrap_or_else(|| format!("step {}", i + 1))
                };
                let labels: Vec<String> = spec
                    .steps
                    .iter()
                    .enumerate()
                    .map(|(i, s)| label(i, s))
                    .collect();
                if skipped.is_empty() {
                    checker.error(at, "`skipSteps` names no step; expected the steps left out");
                }
                for name in skipped {
                    if !labels.contains(name) {
                        checker.error(
                            at,
                            format!(
                                "`skipSteps` names `{name}`, which is not a step of the drill; expected one of: {}",
                                labels.join(", ")
                            ),
                        );
                    }
                }
                let fault_left = spec
                    .steps
                    .iter()
                    .enumerate()
                    .any(|(i, s)| s.fault.is_some() && !skipped.contains(&label(i, s)));
                if !fault_left {
                    checker.error(
                        at,
                        "`skipSteps` leaves the drill no fault; a control whose weakened run \
                         meets no fault proves nothing",
                    );
                }
            }
            DrillChange::DrainWithoutEviction
                if !spec.steps.iter().any(|s| {
                    s.fault.as_ref().is_some_and(|f| match &f.value {
                        Fault::DeleteNode(n) => n.drain,
                        Fault::RollingUpgrade(_) => true,
                        _ => false,
                    })
                }) =>
            {
                checker.error(
                    at,
                    "`drainWithoutEviction` changes how drains delete pods, but no step drains \
                     a node; expected a `deleteNode` with `drain: true` or a `rollingUpgrade`",
                )
            }
            DrillChange::UpgradeWithoutSettling
                if !spec.steps.iter().any(|s| {
                    s.fault
                        .as_ref()
                        .is_some_and(|f| matches!(f.value, Fault::RollingUpgrade(_)))
                }) =>
            {
                checker.error(
                    at,
                    "`upgradeWithoutSettling` changes how a rolling upgrade paces its nodes, \
                     but the drill has no `rollingUpgrade` step",
                )
            }
            DrillChange::NewestBackupFailed | DrillChange::BackupTakes(_)
                if self.topology.backups.is_empty() =>
            {
                checker.error(
                    at,
                    "this weakening changes the cluster's backups, but it has none; \
                     expected `cluster.backups`",
                )
            }
            DrillChange::BackupTakes(d) if self.topology.backups.iter().all(|b| b.duration >= *d) => {
                checker.error(
                    at,
                    format!(
                        "every backup already takes {d} or longer, so `backupTakes: {d}` takes nothing away; expected a longer duration"
                    ),
                )
            }
            DrillChange::ExcludedFromBackup(workloads) => {
                if self.topology.backups.is_empty() {
                    checker.error(
                        at,
                        "this weakening changes the cluster's backups, but it has none; \
                         expected `cluster.backups`",
                    );
                }
                if workloads.is_empty() {
                    checker.error(
                        at,
                        "`excludedFromBackup` names no workload; expected the workloads left out",
                    );
                }
                for workload in workloads {
                    self.workload(&Located::at(workload.clone(), at), checker);
                }
            }
            DrillChange::PinWorkload(pin) => {
                self.workload(&Located::at(pin.workload.clone(), at), checker);
                if !self.nodes.contains(&pin.node) {
                    checker.error(
                        at,
                        format!(
                            "`pinWorkload` names `{}`, which is not a static node of the cluster{}; expected one of: {}",
                            pin.node,
                            did_you_mean(&pin.node, self.nodes.iter().map(String::as_str)),
                            self.nodes.join(", ")
                        ),
                    );
                }
            }
            DrillChange::StartWithControlPlanes(n)
                if *n as usize >= self.topology.control_planes.ordinals.len() =>
            {
                checker.error(
                    at,
                    format!(
                        "the cluster has {} control planes, so starting with {n} takes nothing away; expected fewer",
                        self.topology.control_planes.ordinals.len()
                    ),
                )
            }
            _ => {}
        }
        }
        if let Some(guard) = &weaken.preflight_refuses
            && !preflight
        {
            checker.error(
                guard.at,
                "`preflightRefuses` needs a `preflight` step to refuse; the drill has none",
            );
        }
    }

    /// An `apply` step's objects join the drill's from that step on. One
    /// that the drill already has may change its replicas, not its pod
    /// template: a rollout is its own step, and the simulator refuses it
    /// through an apply.
    fn apply(
        &mut self,
        path: &Located<PathBuf>,
        documents: &[Document],
        checker: &mut Checker<'_>,
    ) {
        for document in documents {
            let key = WorkloadRef::of_object(&document.value).to_string();
            if let Some(template) = template_of(document) {
                match self.templates.get(&key) {
                    Some(before) if *before != template => checker.error(
                        path.at,
                        format!(
                            "`{}` changes the pod template of `{key}`, which the drill already \
                             has; expected only a new replica count (a new image is a `rollout` \
                             step; or `delete` it first)",
                            path.value.display()
                        ),
                    ),
                    _ => {
                        self.templates.insert(key.clone(), template);
                    }
                }
            }
            let namespace = document.namespace().unwrap_or("default");
            match document.kind() {
                Some("Pod") => {
                    self.bare_pods.insert(key);
                }
                Some("PodDisruptionBudget") => {
                    self.pdbs.insert(format!(
                        "{namespace}/{}",
                        document.name().unwrap_or_default()
                    ));
                }
                Some(kind) if WORKLOAD_KINDS.contains(&kind) => {
                    self.workloads.insert(key);
                }
                _ => {}
            }
            // As `References::new` reads them: a Namespace object's name,
            // or the namespace an object names.
            let named = match document.kind() {
                Some("Namespace") => document.name(),
                _ => document.namespace(),
            };
            if let Some(named) = named {
                self.namespaces.insert(named.to_owned());
            }
        }
    }

    /// A `delete` step deletes an object the drill has at that step; it
    /// leaves the drill's objects from then on. Returns the workload it
    /// deleted, if it was one.
    fn delete(
        &mut self,
        delete: &crate::scenario::spec::DeleteStep,
        checker: &mut Checker<'_>,
    ) -> Option<String> {
        let kind = delete.kind.as_str();
        if !DELETABLE_KINDS.contains(&kind) {
            // Refused with the step.
            return None;
        }
        let namespace = delete.namespace.as_ref().map_or("default", |n| n.as_str());
        if self.unread(namespace) {
            return None;
        }
        let (set, key) = match kind {
            "PodDisruptionBudget" => (&mut self.pdbs, format!("{namespace}/{}", delete.name.value)),
            "Pod" => (
                &mut self.bare_pods,
                WorkloadRef::new(namespace, kind, &delete.name).to_string(),
            ),
            _ => (
                &mut self.workloads,
                WorkloadRef::new(namespace, kind, &delete.name).to_string(),
            ),
        };
        if set.remove(&key) {
            self.templates.remove(&key);
            return (kind != "PodDisruptionBudget" && kind != "Pod").then_some(key);
        }
        // As the step names them: `namespace/name`.
        let known: Vec<String> = set
            .iter()
            .filter_map(|k| match kind {
                "PodDisruptionBudget" => Some(k.clone()),
                _ => WorkloadRef::parse(k)
                    .filter(|w| w.kind == kind)
                    .map(|w| format!("{}/{}", w.namespace, w.name)),
            })
            .collect();
        let wanted = format!("{namespace}/{}", delete.name.value);
        checker.error(
            delete.name.at,
            format!(
                "the drill has no {kind} `{wanted}` at this step{}; expected one it deploys \
                 or an earlier `apply` created, and no earlier `delete` removed ({})",
                did_you_mean(&wanted, known.iter().map(String::as_str)),
                if known.is_empty() {
                    format!("it has no {kind}")
                } else {
                    format!("it has {}", known.join(", "))
                }
            ),
        );
        None
    }

    /// A budget step's budget is one of the drill's (the shape of the name
    /// is checked with the step).
    fn pdb(&self, name: &Located<String>, checker: &mut Checker<'_>) {
        let Some((namespace, _)) = name.split_once('/') else {
            return;
        };
        if self.pdbs.contains(name.as_str()) || self.unread(namespace) {
            return;
        }
        let known: Vec<&str> = self.pdbs.iter().map(String::as_str).collect();
        checker.error(
            name.at,
            format!(
                "the drill has no PodDisruptionBudget `{}`{}; {}",
                name.value,
                did_you_mean(&name.value, known.iter().copied()),
                one_of(&known, "workloads")
            ),
        );
    }

    /// A workload named `namespace/Kind/name` that the drill deploys.
    fn workload(&self, workload: &Located<String>, checker: &mut Checker<'_>) {
        let parts: Vec<&str> = workload.split('/').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.is_empty()) {
            checker.error(
                workload.at,
                format!(
                    "workload `{}` is not `namespace/Kind/name`; expected e.g. `load/Deployment/burst`",
                    workload.value
                ),
            );
        } else if !self.workloads.contains(workload.as_str()) && !self.unread(parts[0]) {
            let known: Vec<&str> = self.workloads.iter().map(String::as_str).collect();
            let taken = self
                .unread
                .map(|from| {
                    format!(
                        "; `fromCluster:` takes namespace(s) {} from the cluster, not `{}`",
                        from.namespaces.join(", "),
                        parts[0]
                    )
                })
                .unwrap_or_default();
            checker.error(
                workload.at,
                format!(
                    "the drill deploys no workload `{}`{}; {}{taken}",
                    workload.value,
                    did_you_mean(&workload.value, known.iter().copied()),
                    one_of(&known, "workloads")
                ),
            );
        }
    }

    fn pool_names(&self) -> String {
        std::iter::once(CONTROL_PLANE_POOL)
            .chain(self.topology.pools.iter().map(|p| p.name.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn pool(&self, pool: &Located<String>, checker: &mut Checker<'_>) {
        if self.topology.pool(pool).is_none() {
            checker.error(
                pool.at,
                format!(
                    "`{}` is not a pool of the cluster{}; expected one of: {}",
                    pool.value,
                    did_you_mean(
                        &pool.value,
                        std::iter::once(CONTROL_PLANE_POOL)
                            .chain(self.topology.pools.iter().map(|p| p.name.as_str()))
                    ),
                    self.pool_names()
                ),
            );
        }
    }

    fn schedule(&self, schedule: &Located<String>, checker: &mut Checker<'_>) {
        if !self
            .topology
            .backups
            .iter()
            .any(|b| b.schedule == schedule.as_str())
        {
            let known: Vec<&str> = self
                .topology
                .backups
                .iter()
                .map(|b| b.schedule.as_str())
                .collect();
            checker.error(
                schedule.at,
                format!(
                    "`{}` is not a backup schedule of the cluster; {}",
                    schedule.value,
                    one_of(&known, "cluster.backups")
                ),
            );
        }
    }

    /// A namespace the drill deploys something into: a restore of any
    /// other would have nothing of the drill's to lose.
    fn namespace(&self, namespace: &Located<String>, checker: &mut Checker<'_>) {
        if !self.namespaces.contains(namespace.as_str()) && !self.unread(namespace) {
            let known: Vec<&str> = self.namespaces.iter().map(String::as_str).collect();
            checker.error(
                namespace.at,
                format!(
                    "the drill deploys nothing into namespace `{}`; {}",
                    namespace.value,
                    one_of(&known, "workloads")
                ),
            );
        }
    }

    fn storage_class(&self, class: &Located<String>, checker: &mut Checker<'_>) {
        if !self
            .topology
            .storage_classes
            .iter()
            .any(|c| c.name == class.as_str())
        {
            let known: Vec<&str> = self
                .topology
                .storage_classes
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            checker.error(
                class.at,
                format!(
                    "`{}` is not a storage class of the cluster; {}",
                    class.value,
                    one_of(&known, "cluster.storageClasses")
                ),
            );
        }
    }

    fn pod_match(&self, pods: &PodMatch, checker: &mut Checker<'_>) {
        for class in [&pods.mounts_claim_of_class, &pods.mounts_no_claim_of_class]
            .into_iter()
            .flatten()
        {
            self.storage_class(class, checker);
        }
    }

    fn needs_endpoint(&self, at: crate::scenario::Position, what: &str, checker: &mut Checker<'_>) {
        if self.topology.endpoint.is_none() {
            checker.error_with_help(
                at,
                format!("{what} needs a stable endpoint, but the cluster has none"),
                "add `endpoint: {name: prod-floating-ip}` under cluster",
            );
        }
    }

    fn target(&self, target: &Located<Target>, checker: &mut Checker<'_>) {
        match &target.value {
            Target::Node(name) => {
                if !self.nodes.contains(name) {
                    // On a snapshot the names are production's: say which
                    // pools it has, so a drill written for another cluster
                    // is easy to retarget.
                    let pools = if self.topology.control_planes.nodes.is_empty() {
                        String::new()
                    } else {
                        format!(" (the snapshot's pools: {})", self.pool_names())
                    };
                    checker.error_with_help(
                        target.at,
                        format!(
                            "`{name}` is not a node of the cluster{}; expected one of: {}{pools}",
                            did_you_mean(name, self.nodes.iter().map(String::as_str)),
                            self.nodes.join(", ")
                        ),
                        "autoscaler nodes get random names; target them with `randomNodeOf` or `autoscalerPick`",
                    );
                }
            }
            Target::RandomNodeOf(pool) => {
                if pool != CONTROL_PLANE_POOL {
                    self.pool(&Located::at(pool.clone(), target.at), checker);
                }
            }
            Target::AutoscalerPick(pool) => match self.topology.pool(pool) {
                Some(p) if p.is_autoscaled() => {}
                Some(_) => checker.error(
                    target.at,
                    format!("pool `{pool}` is static; the autoscaler only picks nodes of autoscaled pools"),
                ),
                None => self.pool(&Located::at(pool.clone(), target.at), checker),
            },
            Target::EndpointHolder => self.needs_endpoint(target.at, "target `endpointHolder`", checker),
            Target::OtherControlPlane => {
                self.needs_endpoint(target.at, "target `otherControlPlane`", checker);
                if self.control_planes.len() < 2 {
                    checker.error(target.at, "target `otherControlPlane` needs at least two control planes");
                }
            }
        }
    }

    fn control_plane_target(&self, target: &Located<Target>, checker: &mut Checker<'_>) {
        match &target.value {
            Target::Node(name) if !self.control_planes.contains(name) => checker.error(
                target.at,
                format!(
                    "`{name}` is not a control plane{}; expected one of: {}",
                    did_you_mean(name, self.control_planes.iter().map(String::as_str)),
                    self.control_planes.join(", ")
                ),
            ),
            Target::RandomNodeOf(pool) if pool != CONTROL_PLANE_POOL => checker.error(
                target.at,
                format!("pool `{pool}` holds no control planes; expected `randomNodeOf: {CONTROL_PLANE_POOL}`"),
            ),
            Target::AutoscalerPick(_) => checker.error(
                target.at,
                "the autoscaler never picks control planes; expected a control-plane target",
            ),
            _ => self.target(target, checker),
        }
    }

    fn subject(&self, subject: &Located<Subject>, checker: &mut Checker<'_>) {
        match &subject.value {
            Subject::Api => self.needs_endpoint(subject.at, "the subject `api`", checker),
            Subject::ControlPlane => {}
            Subject::Workload(w) => self.workload(&Located::at(w.clone(), subject.at), checker),
            Subject::Pods(pods) => self.pod_match(pods, checker),
            Subject::AllWorkloads => {}
        }
    }

    fn assertion(
        &self,
        assertion: &Located<AssertionSpec>,
        names: &BTreeSet<&str>,
        spec: &DrillSpec,
        checker: &mut Checker<'_>,
    ) {
        if let Some(rto) = &assertion.rto {
            self.subject(&rto.of, checker);
            if rto.automated_within.is_some() && spec.recovery.is_none() {
                checker.error(
                    assertion.name.at,
                    "`automatedWithin` bounds the automated steps of the recovery runbook, but the drill has no `recovery`",
                );
            }
        }
        if let Some(availability) = &assertion.availability {
            self.subject(&availability.of, checker);
        }
        if let Some(rpo) = &assertion.rpo {
            self.schedule(&rpo.schedule, checker);
        }
        if let Some(placement) = &assertion.placement {
            self.pod_match(&placement.pods, checker);
        }
        if let Some(burst) = &assertion.burst_unchanged {
            self.pod_match(&burst.pods, checker);
            for pool in &burst.pools {
                match self.topology.pool(pool) {
                    Some(p) if !p.is_autoscaled() => checker.error(
                        pool.at,
                        format!(
                            "pool `{}` is static; burst is about autoscaled pools",
                            pool.value
                        ),
                    ),
                    Some(_) => {}
                    None => self.pool(pool, checker),
                }
            }
        }
        if assertion.endpoint_unchanged.is_some() {
            self.needs_endpoint(assertion.name.at, "assertion `endpointUnchanged`", checker);
        }
        if let Some(control) = &assertion.negative_control {
            let guard = control
                .admission
                .as_ref()
                .map(|a| &a.guard)
                .or(control.ablation.as_ref().map(|a| &a.guard));
            let mut known: Vec<String> = spec.guards.iter().map(|g| g.name.value.clone()).collect();
            known.extend(self.policy_guards.iter().cloned());
            if let Some(guard) = guard
                && !known.iter().any(|g| g == guard.as_str())
            {
                let known: Vec<&str> = known.iter().map(String::as_str).collect();
                checker.error(
                    guard.at,
                    format!(
                        "`{}` is not a guard of the drill{}; {}",
                        guard.value,
                        did_you_mean(&guard.value, known.iter().copied()),
                        one_of(&known, "guards")
                    ),
                );
            }
            if let Some(weaken) = &control.weaken {
                self.weakening(weaken, spec, names, checker);
            }
            if let Some(ablation) = &control.ablation {
                if let GuardChange::SetValues(values) = &ablation.change.value
                    && let Some(guard) = spec
                        .guards
                        .iter()
                        .find(|g| g.name.as_str() == ablation.guard.as_str())
                {
                    let requirement = &guard.require.node_affinity.value;
                    let operator = requirement.operator;
                    if matches!(operator, NodeOperator::Exists | NodeOperator::DoesNotExist) {
                        // Values on these operators are invalid Kubernetes,
                        // so the ablated run would stop as a broken drill
                        // rather than prove anything.
                        checker.error(
                            ablation.change.at,
                            format!(
                                "`setValues` cannot weaken guard `{}`: it requires `{} {:?}`, \
                                 which takes no values; use `replaceRequirement` or `remove`",
                                guard.name.value, requirement.key, operator
                            ),
                        );
                    } else {
                        let mut weakened = requirement.clone();
                        weakened.values = Some(values.clone());
                        check_requirement(checker, ablation.change.at, &weakened);
                    }
                }
                for target in &ablation.must_fail {
                    let target_assertion = spec
                        .assertions
                        .iter()
                        .find(|a| a.name.as_str() == target.as_str());
                    if !names.contains(target.as_str()) {
                        checker.error(
                            target.at,
                            format!(
                                "`{}` is not an assertion of the drill{}; expected one of: {}",
                                target.value,
                                did_you_mean(&target.value, names.iter().copied()),
                                names.iter().copied().collect::<Vec<_>>().join(", ")
                            ),
                        );
                    } else if target_assertion.is_some_and(|a| a.negative_control.is_some()) {
                        checker.error(
                            target.at,
                            format!("`{}` is itself a negative control; an ablation must fail a real assertion", target.value),
                        );
                    }
                }
            }
        }
    }
}
