//! Field ownership as the API server records it in
//! `metadata.managedFields`, and the conflicts of server-side apply.
//!
//! Transcribed from the page "Server-Side Apply"
//! (kubernetes.io/docs/reference/using-api/server-side-apply) and from
//! how apimachinery's field manager (`pkg/util/managedfields/internal`)
//! and structured-merge-diff's updater (`merge/update.go`) keep it:
//!
//! - Every write records who changed what. An apply makes its manager
//!   own exactly the fields of its applied configuration (operation
//!   `Apply`, one entry per manager whatever the apiVersion); a create,
//!   update or non-apply patch adds the fields it added or changed to its
//!   manager's `Update` entry (one per manager and apiVersion), and those
//!   fields leave every other manager.
//! - An apply that would change a field another manager owns (to a value
//!   it does not already have) is refused with a 409 naming every such
//!   field and its manager, unless forced (`force=true`), which moves the
//!   fields to the applier. Applying the value a field already has
//!   shares its ownership. Updates never conflict.
//! - Removed fields leave every manager; a manager left owning nothing
//!   is dropped. The identity fields (`apiVersion`, `kind`, the name,
//!   namespace, uid, resourceVersion, generation, creationTimestamp) are
//!   never owned, and a write of the main resource owns no `status` (its
//!   reset fields).
//!
//! The object's structure is read without a schema, as the rest of the
//! façade's patches read it ([`super::patch`]): objects are maps of
//! fields, a list whose items all carry a string `name` is a map keyed by
//! it (`k:{"name":"web"}`: containers, volumes, env), and any other list
//! is atomic, owned whole.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::api::{ApiError, Request};
use super::objects::stamp;
use super::patch;
use super::resources::Resource;

/// One step of a path into an object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    /// A field of a map or struct: `f:NAME`, printed `.NAME`.
    Field(String),
    /// The item of a list keyed by `name`: `k:{"name":NAME}`, printed
    /// `[name="NAME"]`.
    Named(String),
}

type Path = Vec<Step>;

/// The metadata no manager owns (apimachinery's `stripMetaManager`).
const UNOWNED_METADATA: [&str; 9] = [
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// Which part of an object a write may own: the main resource owns all
/// but `status`; the `status` subresource only `status`; `scale` only
/// the replicas it sets, by their path in the object (`spec.replicas`,
/// or a custom resource's `specReplicasPath`, as apiextensions-apiserver's
/// scale handler maps a Scale's fields onto the object's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    Main,
    Status,
    Scale(Vec<String>),
}

impl Part {
    /// The part a write of `subresource` owns; `replicas` is where a
    /// custom resource keeps what its Scale calls `.spec.replicas`.
    pub(super) fn of(subresource: Option<&str>, replicas: Option<&str>) -> Part {
        match subresource {
            Some("status") => Part::Status,
            Some("scale") => {
                let path = replicas.unwrap_or(".spec.replicas");
                let fields = path.strip_prefix('.').unwrap_or(path).split('.');
                Part::Scale(fields.map(str::to_owned).collect())
            }
            _ => Part::Main,
        }
    }

    fn subresource(&self) -> &'static str {
        match self {
            Part::Main => "",
            Part::Status => "status",
            Part::Scale(_) => "scale",
        }
    }

    fn owns(&self, path: &Path) -> bool {
        let field = |i: usize| match path.get(i) {
            Some(Step::Field(f)) => Some(f.as_str()),
            _ => None,
        };
        match (self, field(0)) {
            (_, None) | (_, Some("apiVersion" | "kind")) => false,
            (_, Some("metadata")) => {
                *self == Part::Main && field(1).is_some_and(|f| !UNOWNED_METADATA.contains(&f))
            }
            (Part::Main, Some(top)) => top != "status",
            (Part::Status, Some(top)) => top == "status",
            (Part::Scale(fields), Some(_)) => {
                path.len() == fields.len()
                    && fields.iter().enumerate().all(|(i, f)| field(i) == Some(f))
            }
        }
    }
}

/// What an object holds at each path a manager can own: leaves (scalars,
/// atomic lists, empty maps) with their values, and the named items of
/// keyed lists, which are members themselves (`None`).
fn walk<'a>(value: &'a Value, path: &mut Path, out: &mut BTreeMap<Path, Option<&'a Value>>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (key, child) in map {
                path.push(Step::Field(key.clone()));
                walk(child, path, out);
                path.pop();
            }
        }
        Value::Array(items) if is_keyed(items) => {
            for item in items {
                let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
                path.push(Step::Named(name.to_owned()));
                out.insert(path.clone(), None);
                walk(item, path, out);
                path.pop();
            }
        }
        _ => {
            out.insert(path.clone(), Some(value));
        }
    }
}

/// A list merged by its items' names (as [`super::patch`] merges it).
fn is_keyed(items: &[Value]) -> bool {
    !items.is_empty()
        && items
            .iter()
            .all(|i| i.get("name").is_some_and(Value::is_string))
}

fn paths_of<'v>(object: &'v Value, part: &Part) -> BTreeMap<Path, Option<&'v Value>> {
    let mut out = BTreeMap::new();
    walk(object, &mut Vec::new(), &mut out);
    out.retain(|path, _| part.owns(path));
    out
}

/// The paths a write added or changed, and those it removed.
fn compare(before: &Value, after: &Value, part: &Part) -> (BTreeSet<Path>, BTreeSet<Path>) {
    let old = paths_of(before, part);
    let new = paths_of(after, part);
    let changed = new
        .iter()
        .filter(|(path, value)| old.get(*path) != Some(*value))
        .map(|(path, _)| path.clone())
        .collect();
    let removed = old
        .keys()
        .filter(|path| !new.contains_key(*path))
        .cloned()
        .collect();
    (changed, removed)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `managedFields` entry.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    subresource: &'static str,
    /// When its fields last changed, in drill milliseconds.
    time: i64,
    fields: BTreeSet<Path>,
}

impl Entry {
    /// Whether this is the entry of that writer: an applier has one
    /// entry whatever the apiVersion it applied with, an updater one per
    /// apiVersion (apimachinery's `BuildManagerIdentifier`).
    fn is(&self, writer: &Writer, operation: Operation) -> bool {
        self.manager == writer.manager
            && self.operation == operation
            && self.subresource == writer.part.subresource()
            && (operation == Operation::Apply || self.api_version == writer.api_version)
    }

    /// The manager as a conflict names it (apimachinery's
    /// `printManager`): an updater with its apiVersion.
    fn printed(&self) -> String {
        let mut printed = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            printed.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            printed.push_str(&format!(" using {}", self.api_version));
        }
        printed
    }

    fn to_json(&self) -> Value {
        let mut entry = json!({
            "manager": self.manager,
            "operation": self.operation.as_str(),
            "apiVersion": self.api_version,
            "time": stamp(self.time),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(&self.fields),
        });
        if !self.subresource.is_empty() {
            entry["subresource"] = json!(self.subresource);
        }
        entry
    }
}

/// The fields a forced apply takes from other managers.
#[derive(Debug)]
pub(super) struct Taken(Vec<(usize, Path)>);

impl Taken {
    /// What an apply that creates its object takes: nothing.
    pub(super) fn none() -> Taken {
        Taken(Vec::new())
    }
}

/// Who writes: the field manager, the apiVersion it writes with and the
/// part of the object its endpoint reaches.
#[derive(Debug, Clone)]
pub(super) struct Writer {
    pub(super) manager: String,
    pub(super) api_version: String,
    pub(super) part: Part,
}

impl Writer {
    /// The writer of a request to `resource` (or its `subresource`): the
    /// `fieldManager` it names, which an apply must name, or else the
    /// first word of its `User-Agent` (apiserver's
    /// `managerOrUserAgent`: `kubectl/v1.32.0 (linux/amd64)` is
    /// `kubectl`), cut to 128 characters.
    pub(super) fn of(
        request: &Request,
        resource: &Resource,
        subresource: Option<&str>,
        replicas: Option<&str>,
    ) -> Result<Writer, ApiError> {
        let apply = request.method == "PATCH" && patch::is_apply(&request.content_type);
        let named = request
            .query
            .get("fieldManager")
            .filter(|m| !m.is_empty())
            .cloned();
        let manager = match named {
            Some(manager) => manager,
            None if apply => {
                return Err(ApiError::invalid(
                    "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                ));
            }
            None => {
                let agent = request.user_agent.split('/').next().unwrap_or_default();
                if agent.is_empty() {
                    "unknown".to_owned()
                } else {
                    agent.chars().take(MAX_MANAGER_LENGTH).collect()
                }
            }
        };
        Ok(Writer {
            manager,
            api_version: resource.api_version(),
            part: Part::of(subresource, replicas),
        })
    }
}

/// The longest field manager name (apimachinery's
/// `FieldManagerMaxLength`).
const MAX_MANAGER_LENGTH: usize = 128;

/// The fields each manager of one object owns.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct ManagedFields {
    entries: Vec<Entry>,
}

impl ManagedFields {
    /// Refuses an apply that would change fields other managers own,
    /// unless `force`: then those fields are what it takes from them.
    /// `merged` is the object the apply makes of `before`.
    pub(super) fn check_apply(
        &self,
        writer: &Writer,
        before: &Value,
        merged: &Value,
        force: bool,
    ) -> Result<Taken, ApiError> {
        let conflicts = self.conflicts(writer, before, merged);
        if !conflicts.is_empty() && !force {
            return Err(self.conflict_error(&conflicts));
        }
        Ok(Taken(conflicts))
    }

    /// Records an apply [`ManagedFields::check_apply`] let through: its
    /// manager owns exactly the applied configuration's fields, the
    /// fields it took leave their old managers, and removed fields leave
    /// everyone. `after` is the object as stored.
    pub(super) fn record_apply(
        &mut self,
        writer: &Writer,
        taken: Taken,
        applied: &Value,
        (before, after): (&Value, &Value),
        now: i64,
    ) {
        for (index, path) in &taken.0 {
            self.entries[*index].fields.remove(path);
        }
        let (changed, removed) = compare(before, after, &writer.part);
        self.forget(&removed);
        let owned: BTreeSet<Path> = paths_of(applied, &writer.part).into_keys().collect();
        // The time of the last apply that changed the object.
        let previous = self
            .entries
            .iter()
            .find(|e| e.is(writer, Operation::Apply))
            .map(|e| e.time);
        let time = match previous {
            Some(time) if changed.is_empty() && removed.is_empty() => time,
            _ => now,
        };
        self.entries.retain(|e| !e.is(writer, Operation::Apply));
        self.entries.push(Entry {
            manager: writer.manager.clone(),
            operation: Operation::Apply,
            api_version: writer.api_version.clone(),
            subresource: writer.part.subresource(),
            time,
            fields: owned,
        });
        self.drop_empty();
    }

    /// Records a create, an update or a non-apply patch: what it added
    /// or changed moves to its manager, what it removed leaves everyone.
    pub(super) fn update(&mut self, writer: &Writer, before: &Value, after: &Value, now: i64) {
        let (changed, removed) = compare(before, after, &writer.part);
        for entry in &mut self.entries {
            if !entry.is(writer, Operation::Update) {
                entry.fields.retain(|p| !changed.contains(p));
            }
        }
        self.forget(&removed);
        if !changed.is_empty() {
            match self
                .entries
                .iter_mut()
                .find(|e| e.is(writer, Operation::Update))
            {
                Some(entry) => {
                    entry.fields.extend(changed);
                    entry.time = now;
                }
                None => self.entries.push(Entry {
                    manager: writer.manager.clone(),
                    operation: Operation::Update,
                    api_version: writer.api_version.clone(),
                    subresource: writer.part.subresource(),
                    time: now,
                    fields: changed,
                }),
            }
        }
        self.drop_empty();
    }

    /// The fields an apply would change that another manager owns, each
    /// with the index of that manager's entry.
    fn conflicts(&self, writer: &Writer, before: &Value, merged: &Value) -> Vec<(usize, Path)> {
        let (changed, _) = compare(before, merged, &writer.part);
        let mut conflicts = Vec::new();
        for (index, entry) in self.entries.iter().enumerate() {
            if entry.is(writer, Operation::Apply) {
                continue;
            }
            for path in entry.fields.intersection(&changed) {
                conflicts.push((index, path.clone()));
            }
        }
        conflicts.sort_by(|a, b| {
            self.entries[a.0]
                .manager
                .cmp(&self.entries[b.0].manager)
                .then_with(|| set_order(&a.1, &b.1))
        });
        conflicts
    }

    /// The 409 of a refused apply, worded as apimachinery's
    /// `NewConflictError`: one cause per field, and a message listing
    /// the fields by manager when there are several.
    fn conflict_error(&self, conflicts: &[(usize, Path)]) -> ApiError {
        let causes: Vec<Value> = conflicts
            .iter()
            .map(|(index, path)| {
                json!({
                    "type": "FieldManagerConflict",
                    "message": format!("conflict with {}", self.entries[*index].printed()),
                    "field": printed(path),
                })
            })
            .collect();
        let message = if let [(index, path)] = conflicts {
            format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                self.entries[*index].printed(),
                printed(path)
            )
        } else {
            let mut lines = Vec::new();
            let mut last = None;
            for (index, path) in conflicts {
                let manager = self.entries[*index].printed();
                if last.as_ref() != Some(&manager) {
                    lines.push(format!("conflicts with {manager}:"));
                    last = Some(manager);
                }
                lines.push(format!("- {}", printed(path)));
            }
            format!(
                "Apply failed with {} conflicts: {}",
                conflicts.len(),
                lines.join("\n")
            )
        };
        ApiError::new(409, "Conflict", message).with_details(json!({ "causes": causes }))
    }

    fn forget(&mut self, removed: &BTreeSet<Path>) {
        for entry in &mut self.entries {
            entry.fields.retain(|p| !removed.contains(p));
        }
    }

    fn drop_empty(&mut self) {
        self.entries.retain(|e| !e.fields.is_empty());
    }

    /// `metadata.managedFields`, ordered as the API server orders it
    /// (apimachinery's `sortEncodedManagedFields`): by operation, then
    /// time in seconds, manager, apiVersion and subresource.
    pub(super) fn to_json(&self) -> Value {
        let mut entries: Vec<&Entry> = self.entries.iter().collect();
        entries.sort_by(|a, b| {
            let k = |e: &Entry| {
                (
                    e.operation,
                    e.time.div_euclid(1000),
                    e.manager.clone(),
                    e.api_version.clone(),
                    e.subresource,
                )
            };
            k(a).cmp(&k(b))
        });
        Value::Array(entries.into_iter().map(Entry::to_json).collect())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The order structured-merge-diff iterates a set in: at each level the
/// paths that end there before those that go deeper, each by its step.
fn set_order(a: &Path, b: &Path) -> std::cmp::Ordering {
    let common = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let ends = |p: &Path| p.len() <= common + 1;
    match (ends(a), ends(b)) {
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.get(common).cmp(&b.get(common)),
    }
}

/// A path as a conflict prints it: `.spec.containers[name="web"].image`.
fn printed(path: &Path) -> String {
    path.iter()
        .map(|step| match step {
            Step::Field(name) => format!(".{name}"),
            Step::Named(name) => format!("[name={name:?}]"),
        })
        .collect()
}

/// A set of paths as `fieldsV1`: nested maps keyed `f:FIELD` or
/// `k:{"name":NAME}`, `{}` at a leaf, and `".": {}` where a path that has
/// children is owned itself.
fn fields_v1(fields: &BTreeSet<Path>) -> Value {
    #[derive(Default)]
    struct Node {
        owned: bool,
        children: BTreeMap<Step, Node>,
    }
    fn emit(node: &Node) -> Value {
        let mut map = Map::new();
        if node.owned && !node.children.is_empty() {
            map.insert(".".to_owned(), json!({}));
        }
        for (step, child) in &node.children {
            let key = match step {
                Step::Field(name) => format!("f:{name}"),
                Step::Named(name) => format!("k:{}", json!({ "name": name })),
            };
            map.insert(key, emit(child));
        }
        Value::Object(map)
    }
    let mut root = Node::default();
    for path in fields {
        let mut node = &mut root;
        for step in path {
            node = node.children.entry(step.clone()).or_default();
        }
        node.owned = true;
    }
    emit(&root)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writer(manager: &str, part: Part) -> Writer {
        Writer {
            manager: manager.to_owned(),
            api_version: "apps/v1".to_owned(),
            part,
        }
    }

    fn deployment(replicas: u64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "apps", "uid": "u-1",
                            "resourceVersion": "7", "labels": {"app": "web"}},
               "spec": {"replicas": replicas,
                        "template": {"spec": {"containers": [{"name": "web", "image": image}]}}},
               "status": {"replicas": replicas}})
    }

    /// `kubectl apply --server-side` of `object` by `manager` onto
    /// `before`, as the façade's write path does it (the merge stands in
    /// for the stored object).
    fn apply(
        managed: &mut ManagedFields,
        manager: &str,
        before: &Value,
        object: &Value,
        force: bool,
    ) -> Result<(), ApiError> {
        let who = writer(manager, Part::Main);
        let mut merged = before.clone();
        patch::strategic_merge(&mut merged, object);
        let taken = managed.check_apply(&who, before, &merged, force)?;
        managed.record_apply(&who, taken, object, (before, &merged), 1_000);
        Ok(())
    }

    /// A Deployment alice created by applying it.
    fn created_by_alice() -> ManagedFields {
        let mut managed = ManagedFields::default();
        apply(
            &mut managed,
            "alice",
            &Value::Null,
            &deployment(2, "nginx:1"),
            false,
        )
        .expect("created");
        managed
    }

    fn managers(managed: &ManagedFields) -> Vec<(String, String)> {
        managed
            .to_json()
            .as_array()
            .expect("a list")
            .iter()
            .map(|e| {
                (
                    e["manager"].as_str().unwrap_or_default().to_owned(),
                    e["operation"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    }

    /// The page "Server-Side Apply", section Conflicts: a field owned by
    /// another manager, applied with a different value, is a 409 that
    /// names it and its manager (apimachinery's `NewConflictError`); the
    /// controls: the same value shares the field, and a forced apply
    /// takes it.
    #[test]
    fn an_apply_that_changes_another_managers_field_conflicts() {
        let mut managed = created_by_alice();
        let live = deployment(2, "nginx:1");
        let bob = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "web"}, "spec": {"replicas": 5}});
        let error = apply(&mut managed, "bob", &live, &bob, false).expect_err("a conflict");
        let status = error.status();
        assert_eq!(status["code"], 409);
        assert_eq!(status["reason"], "Conflict");
        assert_eq!(
            status["message"],
            "Apply failed with 1 conflict: conflict with \"alice\": .spec.replicas"
        );
        assert_eq!(
            status["details"]["causes"],
            json!([{"type": "FieldManagerConflict", "message": "conflict with \"alice\"",
                    "field": ".spec.replicas"}])
        );
        // Control: the value the field already has is shared, not a
        // conflict.
        let same = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                          "metadata": {"name": "web"}, "spec": {"replicas": 2}});
        let mut shared = managed.clone();
        apply(&mut shared, "bob", &live, &same, false).expect("co-owned");
        let fields = shared.to_json();
        for entry in fields.as_array().expect("entries") {
            assert_eq!(
                entry["fieldsV1"]["f:spec"]["f:replicas"],
                json!({}),
                "{entry}"
            );
        }
        // Control: forced, bob takes the field and alice keeps the rest.
        apply(&mut managed, "bob", &live, &bob, true).expect("forced");
        let entries = managed.to_json();
        let alice = &entries[0];
        assert_eq!(alice["manager"], "alice");
        assert!(
            alice["fieldsV1"]["f:spec"].get("f:replicas").is_none(),
            "{alice}"
        );
        assert!(alice["fieldsV1"]["f:spec"].get("f:template").is_some());
        assert_eq!(entries[1]["manager"], "bob");
        assert_eq!(entries[1]["fieldsV1"]["f:spec"]["f:replicas"], json!({}));
    }

    /// A keyed list's item is its own path (`k:{"name":"web"}` with `.`),
    /// printed `[name="web"]` in a conflict (structured-merge-diff's
    /// `PathElement.String`); the control: an atomic list is one leaf.
    #[test]
    fn a_containers_field_is_owned_under_the_containers_name() {
        let mut managed = created_by_alice();
        let fields = &managed.to_json()[0]["fieldsV1"];
        assert_eq!(
            fields["f:spec"]["f:template"]["f:spec"]["f:containers"],
            json!({"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}})
        );
        let error = apply(
            &mut managed,
            "bob",
            &deployment(2, "nginx:1"),
            &deployment(2, "nginx:2"),
            false,
        )
        .expect_err("the image is alice's");
        assert_eq!(
            error.status()["message"],
            "Apply failed with 1 conflict: conflict with \"alice\": .spec.template.spec.containers[name=\"web\"].image"
        );
        let mut atomic = ManagedFields::default();
        let args = json!({"spec": {"args": ["a", "b"]}});
        apply(&mut atomic, "alice", &Value::Null, &args, false).expect("created");
        assert_eq!(
            atomic.to_json()[0]["fieldsV1"],
            json!({"f:spec": {"f:args": {}}})
        );
    }

    /// apimachinery's `stripMetaManager`: the identity, the name and the
    /// versions are nobody's, and the main resource owns no status (its
    /// reset fields); the control: labels are owned.
    #[test]
    fn identity_metadata_and_status_are_never_owned() {
        let managed = created_by_alice();
        let fields = &managed.to_json()[0]["fieldsV1"];
        assert_eq!(fields["f:metadata"], json!({"f:labels": {"f:app": {}}}));
        assert!(fields.get("f:status").is_none() && fields.get("f:kind").is_none());
    }

    /// structured-merge-diff's `Updater.Update`: an update takes what it
    /// changed from every other manager and never conflicts; a scale
    /// records under its subresource, printed as apimachinery's
    /// `printManager` does (`with subresource "scale" using apps/v1`).
    #[test]
    fn an_update_takes_the_fields_it_changed_and_an_apply_then_conflicts_with_it() {
        let mut managed = created_by_alice();
        let scaler = writer("kubectl", Part::of(Some("scale"), None));
        managed.update(
            &scaler,
            &deployment(2, "nginx:1"),
            &deployment(4, "nginx:1"),
            2_000,
        );
        assert_eq!(
            managers(&managed),
            [
                ("alice".to_owned(), "Apply".to_owned()),
                ("kubectl".to_owned(), "Update".to_owned())
            ]
        );
        let scale = &managed.to_json()[1];
        assert_eq!(scale["subresource"], "scale");
        assert_eq!(scale["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
        assert_eq!(scale["time"], "2026-01-01T00:00:02Z");
        // alice re-applies her replicas: the scaler's now.
        let error = apply(
            &mut managed,
            "alice",
            &deployment(4, "nginx:1"),
            &deployment(2, "nginx:1"),
            false,
        )
        .expect_err("the replicas are the scaler's");
        assert_eq!(
            error.status()["message"],
            "Apply failed with 1 conflict: conflict with \"kubectl\" with subresource \"scale\" using apps/v1: .spec.replicas"
        );
        // A custom resource's Scale owns its replicas where its
        // `specReplicasPath` keeps them (control: the built-in path above).
        let mut custom = ManagedFields::default();
        custom.update(
            &writer("kubectl", Part::of(Some("scale"), Some(".spec.size"))),
            &json!({"spec": {"size": 1, "replicas": 7}}),
            &json!({"spec": {"size": 3, "replicas": 7}}),
            2_000,
        );
        assert_eq!(
            custom.to_json()[0]["fieldsV1"],
            json!({"f:spec": {"f:size": {}}})
        );
        // Control: an update that changes nothing takes nothing.
        let mut unchanged = ManagedFields::default();
        unchanged.update(
            &scaler,
            &deployment(4, "nginx:1"),
            &deployment(4, "nginx:1"),
            3_000,
        );
        assert!(unchanged.is_empty());
    }

    /// apimachinery's `getConflictMessage`: several conflicts are listed
    /// by manager, each manager's fields in the set's order (a level's
    /// own fields before deeper ones).
    #[test]
    fn several_conflicts_are_listed_by_manager() {
        let mut managed = created_by_alice();
        let set_image = writer("kubectl-set", Part::Main);
        managed.update(
            &set_image,
            &deployment(2, "nginx:1"),
            &deployment(2, "nginx:3"),
            1_000,
        );
        let error = apply(
            &mut managed,
            "bob",
            &deployment(2, "nginx:3"),
            &deployment(7, "nginx:4"),
            false,
        )
        .expect_err("two managers' fields");
        assert_eq!(
            error.status()["message"],
            "Apply failed with 2 conflicts: conflicts with \"alice\":\n- .spec.replicas\nconflicts with \"kubectl-set\" using apps/v1:\n- .spec.template.spec.containers[name=\"web\"].image"
        );
        assert_eq!(
            error.status()["details"]["causes"].as_array().map(Vec::len),
            Some(2)
        );
    }

    /// structured-merge-diff orders a set's paths level by level; the
    /// control: the same first step orders by the step.
    #[test]
    fn paths_are_ordered_as_the_set_iterates_them() {
        let f = |names: &[&str]| -> Path {
            names.iter().map(|n| Step::Field((*n).to_owned())).collect()
        };
        use std::cmp::Ordering::*;
        assert_eq!(set_order(&f(&["spec", "z"]), &f(&["spec", "a", "b"])), Less);
        assert_eq!(set_order(&f(&["spec", "a"]), &f(&["spec", "z"])), Less);
        assert_eq!(set_order(&f(&["spec", "z"]), &f(&["spec", "a"])), Greater);
    }
}
