//! What the API wrote that the simulator does not keep: labels and
//! annotations of objects whose metadata it does not model, ConfigMaps,
//! and the namespaces created or deleted through the API. Metadata only,
//! never behaviour: nothing here changes what the simulator does.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::history::Key;
use super::managed_fields::ManagedFields;

/// Kinds stored as written, from the drill's manifests and through the
/// API, like ConfigMaps: the simulator models no behaviour for them, but
/// a drill, a platform's preflight or an installer reads and writes them
/// (a pod's PriorityClass, the Services, Secrets and ServiceAccounts an
/// application ships, the RBAC, network objects and autoscalers of a
/// platform's rendered manifests). A CronJob reads as written too, and the
/// simulator also runs it ([`RUN_DECLARED`]).
pub(super) const DECLARED_KINDS: [&str; 13] = [
    "PriorityClass",
    "Service",
    "Secret",
    "ServiceAccount",
    "CronJob",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "NetworkPolicy",
    "Ingress",
    "IngressClass",
    "HorizontalPodAutoscaler",
];

/// Declared kinds the simulator also runs: it loads a CronJob, from the
/// drill or written through the API, and starts its Jobs on its
/// schedule; the object reads as written, and only its labels and
/// annotations change afterwards (the simulator keeps the schedule it
/// loaded).
pub(super) const RUN_DECLARED: [&str; 1] = ["CronJob"];

#[derive(Debug, Clone, Default)]
pub(super) struct Written {
    /// Labels and annotations (each `null` when not given) written for
    /// objects whose metadata the simulator does not keep (workloads,
    /// budgets, namespaces).
    metadata: BTreeMap<Key, (Value, Value)>,
    /// ConfigMaps by (namespace, name), stored as written: the simulator
    /// models no behaviour for them.
    config_maps: BTreeMap<(String, String), Value>,
    created_namespaces: BTreeSet<String>,
    /// Namespaces deleted through the API and not created again: each is
    /// Terminating while its pods terminate, then gone (the simulator
    /// itself keeps a namespace as long as anything ever lived in it).
    deleted_namespaces: BTreeSet<String>,
    /// Objects of the kinds the simulator gives no behaviour
    /// ([`DECLARED_KINDS`]), as the drill's manifests or the API wrote them.
    declared: BTreeMap<Key, Value>,
    /// `metadata.generation` of workloads whose spec the API changed:
    /// the API server increments it on every spec change and never on a
    /// status change. Absent means 1, a workload as created.
    generations: BTreeMap<Key, i64>,
    /// Who owns which fields of each object written through the API
    /// (`metadata.managedFields`); the drill's own objects have none.
    managed: BTreeMap<Key, ManagedFields>,
    /// How many times an object of each declared kind was stored or
    /// removed: what is derived from them (the OpenAPI documents from the
    /// CustomResourceDefinitions, the endpoints from the Services) is kept
    /// until its count moves.
    changes: BTreeMap<&'static str, u64>,
}

impl Written {
    /// The labels and annotations written for an object, if any were.
    pub(super) fn metadata(&self, key: &Key) -> Option<&(Value, Value)> {
        self.metadata.get(key)
    }

    /// Keeps the labels and annotations of `object` as written (`null`
    /// where it has none).
    pub(super) fn remember_metadata(&mut self, key: Key, object: &Value) {
        let field = |name: &str| {
            object
                .pointer(&format!("/metadata/{name}"))
                .cloned()
                .unwrap_or(Value::Null)
        };
        self.metadata
            .insert(key, (field("labels"), field("annotations")));
    }

    pub(super) fn set_metadata(&mut self, key: Key, labels: Value, annotations: Value) {
        self.metadata.insert(key, (labels, annotations));
    }

    /// Forgets what was written for an object that is gone: a workload
    /// created again under its name starts at generation 1.
    pub(super) fn forget_metadata(&mut self, key: &Key) {
        self.metadata.remove(key);
        self.generations.remove(key);
        self.managed.remove(key);
    }

    pub(super) fn managed_fields(&self, key: &Key) -> Option<&ManagedFields> {
        self.managed.get(key)
    }

    /// The object's field ownership, to record a write in.
    pub(super) fn managed_fields_mut(&mut self, key: &Key) -> &mut ManagedFields {
        self.managed.entry(key.clone()).or_default()
    }

    /// Forgets who owned the fields of an object that is gone.
    pub(super) fn forget_managed_fields(&mut self, key: &Key) {
        self.managed.remove(key);
    }

    /// The object's `metadata.generation`.
    pub(super) fn generation(&self, key: &Key) -> i64 {
        self.generations.get(key).copied().unwrap_or(1)
    }

    /// Records a change of the object's spec.
    pub(super) fn bump_generation(&mut self, key: &Key) {
        let next = self.generation(key).saturating_add(1);
        self.generations.insert(key.clone(), next);
    }

    /// Keeps a manifest of a [`DECLARED_KINDS`] kind as served.
    pub(super) fn declare(&mut self, key: Key, object: Value) {
        self.note_change(&key);
        self.declared.insert(key, object);
    }

    pub(super) fn declared(&self, key: &Key) -> Option<&Value> {
        self.declared.get(key)
    }

    /// Removes a declared object, returning what it was.
    pub(super) fn undeclare(&mut self, key: &Key) -> Option<Value> {
        let removed = self.declared.remove(key);
        if removed.is_some() {
            self.note_change(key);
        }
        removed
    }

    fn note_change(&mut self, key: &Key) {
        *self.changes.entry(key.0).or_default() += 1;
    }

    /// Changes with every object of `kind` stored or removed, and only
    /// then (see `changes`).
    pub(super) fn changes_of(&self, kind: &str) -> u64 {
        self.changes.get(kind).copied().unwrap_or(0)
    }

    /// [`Written::changes_of`] the CustomResourceDefinitions.
    pub(super) fn definition_changes(&self) -> u64 {
        self.changes_of(super::crds::CRD_KIND)
    }

    /// The keys of the declared objects in a namespace, in order.
    pub(super) fn declared_in(&self, namespace: &str) -> Vec<Key> {
        self.declared
            .keys()
            .filter(|k| k.1 == namespace)
            .cloned()
            .collect()
    }

    /// The declared objects of a kind, by namespace then name.
    pub(super) fn declared_of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Value> {
        self.declared
            .iter()
            .filter(move |(k, _)| k.0 == kind)
            .map(|(_, v)| v)
    }

    pub(super) fn config_map(&self, namespace: &str, name: &str) -> Option<&Value> {
        self.config_maps
            .get(&(namespace.to_owned(), name.to_owned()))
    }

    /// Every ConfigMap, by namespace then name.
    pub(super) fn config_maps(&self) -> impl Iterator<Item = &Value> {
        self.config_maps.values()
    }

    /// The names of a namespace's ConfigMaps, in order.
    pub(super) fn config_maps_in(&self, namespace: &str) -> Vec<String> {
        self.config_maps
            .keys()
            .filter(|(ns, _)| ns == namespace)
            .map(|(_, name)| name.clone())
            .collect()
    }

    pub(super) fn put_config_map(&mut self, namespace: &str, name: &str, object: Value) {
        self.config_maps
            .insert((namespace.to_owned(), name.to_owned()), object);
    }

    /// Removes a ConfigMap, returning what it was.
    pub(super) fn remove_config_map(&mut self, namespace: &str, name: &str) -> Option<Value> {
        self.config_maps
            .remove(&(namespace.to_owned(), name.to_owned()))
    }

    pub(super) fn created_namespaces(&self) -> impl Iterator<Item = &String> {
        self.created_namespaces.iter()
    }

    pub(super) fn was_created(&self, namespace: &str) -> bool {
        self.created_namespaces.contains(namespace)
    }

    pub(super) fn was_deleted(&self, namespace: &str) -> bool {
        self.deleted_namespaces.contains(namespace)
    }

    /// A namespace created through the API, which ends a deletion of it.
    pub(super) fn create_namespace(&mut self, namespace: &str) {
        self.deleted_namespaces.remove(namespace);
        self.created_namespaces.insert(namespace.to_owned());
    }

    /// A namespace deleted through the API, Terminating until its pods
    /// are gone.
    pub(super) fn delete_namespace(&mut self, namespace: &str) {
        self.created_namespaces.remove(namespace);
        self.deleted_namespaces.insert(namespace.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(name: &str) -> Key {
        ("Deployment", "apps".to_owned(), name.to_owned())
    }

    #[test]
    fn metadata_is_kept_as_written_with_null_for_what_is_missing() {
        let mut written = Written::default();
        assert!(written.metadata(&key("api")).is_none());
        written.remember_metadata(
            key("api"),
            &json!({"metadata": {"name": "api", "labels": {"team": "platform"}}}),
        );
        assert_eq!(
            written.metadata(&key("api")),
            Some(&(json!({"team": "platform"}), Value::Null))
        );
        written.remember_metadata(
            key("api"),
            &json!({"metadata": {"annotations": {"a": "b"}}}),
        );
        assert_eq!(
            written.metadata(&key("api")),
            Some(&(Value::Null, json!({"a": "b"}))),
            "a later write replaces both"
        );
        written.forget_metadata(&key("api"));
        assert!(written.metadata(&key("api")).is_none());
    }

    #[test]
    fn config_maps_are_found_by_namespace_and_name() {
        let mut written = Written::default();
        written.put_config_map("apps", "b", json!({"data": {"k": "2"}}));
        written.put_config_map("apps", "a", json!({"data": {"k": "1"}}));
        written.put_config_map("other", "a", json!({"data": {"k": "3"}}));
        assert_eq!(
            written.config_map("apps", "a").map(|c| &c["data"]["k"]),
            Some(&json!("1"))
        );
        assert!(written.config_map("apps", "c").is_none());
        assert_eq!(written.config_maps_in("apps"), ["a", "b"]);
        assert_eq!(written.config_maps().count(), 3);
        let removed = written.remove_config_map("apps", "a");
        assert_eq!(removed.map(|c| c["data"]["k"].clone()), Some(json!("1")));
        assert_eq!(written.remove_config_map("apps", "a"), None);
        assert_eq!(written.config_maps_in("apps"), ["b"]);
    }

    #[test]
    fn creating_a_namespace_again_ends_its_deletion() {
        let mut written = Written::default();
        written.create_namespace("team");
        assert!(written.was_created("team") && !written.was_deleted("team"));
        written.delete_namespace("team");
        assert!(!written.was_created("team") && written.was_deleted("team"));
        assert_eq!(written.created_namespaces().count(), 0);
        written.create_namespace("team");
        assert!(written.was_created("team") && !written.was_deleted("team"));
        assert_eq!(written.created_namespaces().collect::<Vec<_>>(), ["team"]);
    }
}
