//! Resource versions and the change log a watch resumes from.
//!
//! Every change to a served object takes the next resourceVersion, one
//! counter for all kinds, as etcd's revision is. The newest changes are
//! kept in a window so a watch can resume from a version; one older than
//! the window is `410 Gone`. The last state announced of each object is
//! kept too, so a change is announced once however it was noticed.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{Value, json};

/// (kind, namespace, name); the namespace is empty for cluster-scoped kinds.
pub(super) type Key = (&'static str, String, String);

#[derive(Debug, Clone)]
pub(super) struct Change {
    pub(super) rv: u64,
    pub(super) kind: &'static str,
    pub(super) namespace: String,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    pub(super) kind_type: &'static str,
    /// The object with its resourceVersion (a deleted one's last state).
    pub(super) object: Value,
    /// A modification's or deletion's previous state, without its
    /// resourceVersion: a filtered watch tells from it whether the object
    /// entered or left its selection, and a list at an older version
    /// ([`History::rewind`]) puts it back.
    pub(super) before: Option<Value>,
    /// The resourceVersion `before` had (0 without one).
    pub(super) before_rv: u64,
}

/// The last state announced of an object that exists.
#[derive(Debug, Clone)]
struct Announced {
    rv: u64,
    /// Without its resourceVersion, to compare with a fresh view.
    bare: Value,
}

#[derive(Debug)]
pub(super) struct History {
    rv: u64,
    changes: VecDeque<Change>,
    window: usize,
    announced: BTreeMap<Key, Announced>,
    /// The resourceVersion of the newest change of each kind, so a client
    /// stepping the clock knows when its watch of a kind has caught up.
    latest: BTreeMap<&'static str, u64>,
}

impl History {
    /// An empty log keeping `window` changes, whose next version follows
    /// `rv` (a reset must never reuse a version a client has seen).
    pub(super) fn new(window: usize, rv: u64) -> History {
        History {
            rv,
            changes: VecDeque::new(),
            window,
            announced: BTreeMap::new(),
            latest: BTreeMap::new(),
        }
    }

    /// A copy to try a change on (a dry run): the versions and what was
    /// announced, without the changes a watch would replay.
    pub(super) fn scratch(&self) -> History {
        History {
            rv: self.rv,
            changes: VecDeque::new(),
            window: self.window,
            announced: self.announced.clone(),
            latest: self.latest.clone(),
        }
    }

    /// The resourceVersion of the newest change.
    pub(super) fn rv(&self) -> u64 {
        self.rv
    }

    /// Records a change under the next resourceVersion, which it writes
    /// into the object, and returns it for the watchers.
    pub(super) fn record(
        &mut self,
        key: Key,
        kind_type: &'static str,
        mut object: Value,
    ) -> &Change {
        self.rv += 1;
        set_rv(&mut object, self.rv);
        self.latest.insert(key.0, self.rv);
        let (before, before_rv) = match self.announced.get(&key) {
            Some(a) if kind_type != "ADDED" => (Some(a.bare.clone()), a.rv),
            _ => (None, 0),
        };
        if kind_type == "DELETED" {
            self.announced.remove(&key);
        } else {
            let announced = Announced {
                rv: self.rv,
                bare: strip_rv(&object),
            };
            self.announced.insert(key.clone(), announced);
        }
        self.changes.push_back(Change {
            rv: self.rv,
            kind: key.0,
            namespace: key.1,
            kind_type,
            object,
            before,
            before_rv,
        });
        if self.changes.len() > self.window {
            self.changes.pop_front();
        }
        self.changes.back().expect("a change was just recorded")
    }

    /// `MODIFIED` for an object announced before and not deleted since,
    /// `ADDED` for any other.
    pub(super) fn change_type(&self, key: &Key) -> &'static str {
        if self.announced.contains_key(key) {
            "MODIFIED"
        } else {
            "ADDED"
        }
    }

    pub(super) fn is_announced(&self, key: &Key) -> bool {
        self.announced.contains_key(key)
    }

    /// Whether `object` (with or without a resourceVersion) is what was
    /// last announced of `key`.
    pub(super) fn is_unchanged(&self, key: &Key, object: &Value) -> bool {
        self.announced
            .get(key)
            .is_some_and(|a| a.bare == strip_rv(object))
    }

    /// The resourceVersion of the object's last change; `None` for one
    /// never announced.
    pub(super) fn object_rv(&self, key: &Key) -> Option<u64> {
        self.announced.get(key).map(|a| a.rv)
    }

    /// The objects of a kind announced and not deleted, with their last
    /// state (without resourceVersion), in key order.
    pub(super) fn announced_of_kind(
        &self,
        kind: &'static str,
    ) -> impl Iterator<Item = (&Key, &Value)> {
        self.announced
            .range((kind, String::new(), String::new())..)
            .take_while(move |(k, _)| k.0 == kind)
            .map(|(k, a)| (k, &a.bare))
    }

    /// The objects of a kind in one namespace announced and not deleted,
    /// with their last state (without resourceVersion), in name order.
    pub(super) fn announced_in<'a>(
        &'a self,
        kind: &'static str,
        namespace: &'a str,
    ) -> impl Iterator<Item = &'a Value> {
        self.announced
            .range((kind, namespace.to_owned(), String::new())..)
            .take_while(move |(k, _)| k.0 == kind && k.1 == namespace)
            .map(|(_, a)| &a.bare)
    }

    /// The objects of a kind announced and not deleted, with their last
    /// state (without resourceVersion) and the version it was announced
    /// at, in key order.
    pub(super) fn announced_with_rv(
        &self,
        kind: &'static str,
    ) -> impl Iterator<Item = (&Key, &Value, u64)> {
        self.announced
            .range((kind, String::new(), String::new())..)
            .take_while(move |(k, _)| k.0 == kind)
            .map(|(k, a)| (k, &a.bare, a.rv))
    }

    /// The newest version a watch cannot resume from: every change after
    /// it is still in the window.
    pub(super) fn oldest_rv(&self) -> u64 {
        self.changes.front().map_or(0, |c| c.rv.saturating_sub(1))
    }

    /// The changes after `rv` still in the window, oldest first.
    pub(super) fn since(&self, rv: u64) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(move |c| c.rv > rv)
    }

    /// Turns `objects` (a kind's objects now, by key) back into what they
    /// were at `rv`: every change after it is undone, newest first (an
    /// addition removed, a modification or deletion put back as it was
    /// before). Exact only while `rv` is in the window
    /// (`rv >= oldest_rv()`); the caller checks.
    pub(super) fn rewind(&self, kind: &str, rv: u64, objects: &mut BTreeMap<Key, Value>) {
        for change in self.changes.iter().rev() {
            if change.rv <= rv {
                break;
            }
            if change.kind != kind {
                continue;
            }
            let key = key_of(change.kind, &change.object);
            match &change.before {
                Some(before) if change.kind_type != "ADDED" => {
                    let mut before = before.clone();
                    set_rv(&mut before, change.before_rv);
                    objects.insert(key, before);
                }
                _ => {
                    objects.remove(&key);
                }
            }
        }
    }

    /// The newest resourceVersion of a kind's changes (0 for none).
    pub(super) fn latest_of(&self, kind: &str) -> u64 {
        self.latest.get(kind).copied().unwrap_or(0)
    }

    /// The newest resourceVersion of each kind that changed.
    pub(super) fn latest(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.latest.iter().map(|(k, v)| (*k, *v))
    }
}

/// The string at a JSON pointer, or `""`.
pub(super) fn text(object: &Value, pointer: &str) -> String {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn key_of(kind: &'static str, object: &Value) -> Key {
    (
        kind,
        text(object, "/metadata/namespace"),
        text(object, "/metadata/name"),
    )
}

pub(super) fn set_rv(object: &mut Value, rv: u64) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".to_owned(), json!(rv.to_string()));
    }
}

pub(super) fn strip_rv_mut(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
}

pub(super) fn strip_rv(object: &Value) -> Value {
    let mut copy = object.clone();
    strip_rv_mut(&mut copy);
    copy
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kind: &'static str, name: &str) -> Key {
        (kind, "apps".to_owned(), name.to_owned())
    }

    fn object(name: &str, phase: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "apps"}, "status": {"phase": phase}})
    }

    /// Records a change of the right type, as the cluster does.
    fn change(history: &mut History, kind: &'static str, name: &str, phase: &str) -> u64 {
        let key = key(kind, name);
        let kind_type = history.change_type(&key);
        history.record(key, kind_type, object(name, phase)).rv
    }

    #[test]
    fn every_change_takes_the_next_version_and_writes_it_into_the_object() {
        let mut history = History::new(100, 41);
        let change = history.record(key("Pod", "a"), "ADDED", object("a", "Pending"));
        assert_eq!(change.rv, 42);
        assert_eq!(change.object["metadata"]["resourceVersion"], "42");
        assert_eq!((change.kind, change.namespace.as_str()), ("Pod", "apps"));
        let change = history.record(key("Node", "n"), "ADDED", object("n", "Ready"));
        assert_eq!(change.rv, 43, "one counter for every kind");
        assert_eq!(history.rv(), 43);
        assert_eq!(history.object_rv(&key("Pod", "a")), Some(42));
        assert_eq!(history.object_rv(&key("Pod", "b")), None);
    }

    #[test]
    fn since_a_version_are_exactly_the_changes_after_it() {
        let mut history = History::new(100, 0);
        for (name, phase) in [("a", "Pending"), ("b", "Pending"), ("a", "Running")] {
            change(&mut history, "Pod", name, phase);
        }
        let after = |rv| history.since(rv).map(|c| c.rv).collect::<Vec<_>>();
        assert_eq!(after(0), [1, 2, 3]);
        assert_eq!(after(1), [2, 3]);
        assert_eq!(after(3), Vec::<u64>::new());
        let last = history.since(2).next().expect("a change after 2");
        assert_eq!(last.kind_type, "MODIFIED");
        assert_eq!(last.object["status"]["phase"], "Running");
    }

    #[test]
    fn the_window_forgets_the_oldest_changes_and_says_how_far_back_it_reaches() {
        let mut history = History::new(2, 0);
        assert_eq!(history.oldest_rv(), 0, "an empty log resumes from anything");
        for phase in ["Pending", "Running", "Succeeded"] {
            change(&mut history, "Pod", "a", phase);
        }
        assert_eq!(history.since(0).map(|c| c.rv).collect::<Vec<_>>(), [2, 3]);
        // A watch from 1 still sees every change after it; from 0 it
        // would miss version 1.
        assert_eq!(history.oldest_rv(), 1);
        // What was announced outlives the window.
        assert_eq!(history.object_rv(&key("Pod", "a")), Some(3));
    }

    #[test]
    fn a_deleted_object_is_forgotten_so_it_comes_back_as_added() {
        let mut history = History::new(10, 0);
        let pod = key("Pod", "a");
        assert_eq!(history.change_type(&pod), "ADDED");
        change(&mut history, "Pod", "a", "Pending");
        assert_eq!(history.change_type(&pod), "MODIFIED");
        assert!(history.is_announced(&pod));
        history.record(pod.clone(), "DELETED", object("a", "Running"));
        assert!(!history.is_announced(&pod));
        assert_eq!(history.object_rv(&pod), None);
        assert_eq!(history.change_type(&pod), "ADDED");
        assert_eq!(
            history.since(1).next().map(|c| c.kind_type),
            Some("DELETED"),
            "the deletion itself is in the log"
        );
    }

    #[test]
    fn an_unchanged_object_is_recognised_whatever_its_version_says() {
        let mut history = History::new(10, 0);
        let pod = key("Pod", "a");
        assert!(!history.is_unchanged(&pod, &object("a", "Pending")));
        change(&mut history, "Pod", "a", "Pending");
        let mut seen = object("a", "Pending");
        set_rv(&mut seen, 99);
        assert!(history.is_unchanged(&pod, &seen));
        assert!(history.is_unchanged(&pod, &object("a", "Pending")));
        assert!(!history.is_unchanged(&pod, &object("a", "Running")));
    }

    #[test]
    fn announced_objects_are_listed_by_kind_and_the_newest_version_of_each_kind_kept() {
        let mut history = History::new(10, 0);
        change(&mut history, "PersistentVolume", "pv-b", "Bound");
        change(&mut history, "Pod", "a", "Pending");
        change(&mut history, "PersistentVolume", "pv-a", "Bound");
        change(&mut history, "PersistentVolumeClaim", "c", "Bound");
        let volumes: Vec<&str> = history
            .announced_of_kind("PersistentVolume")
            .map(|(k, _)| k.2.as_str())
            .collect();
        assert_eq!(volumes, ["pv-a", "pv-b"]);
        let (_, last) = history.announced_of_kind("Pod").next().expect("the pod");
        assert!(last["metadata"].get("resourceVersion").is_none());
        let latest: Vec<_> = history.latest().collect();
        assert_eq!(
            latest,
            [
                ("PersistentVolume", 3),
                ("PersistentVolumeClaim", 4),
                ("Pod", 2)
            ]
        );
    }

    #[test]
    fn objects_are_keyed_by_kind_namespace_and_name() {
        let node = json!({"metadata": {"name": "n1"}});
        assert_eq!(
            key_of("Node", &node),
            ("Node", String::new(), "n1".to_owned())
        );
        assert_eq!(key_of("Pod", &object("a", "x")), key("Pod", "a"));
        let mut with_rv = object("a", "x");
        set_rv(&mut with_rv, 5);
        assert_eq!(with_rv["metadata"]["resourceVersion"], "5");
        assert_eq!(strip_rv(&with_rv), object("a", "x"));
        let mut no_metadata = json!({"kind": "Status"});
        set_rv(&mut no_metadata, 5);
        assert_eq!(no_metadata, json!({"kind": "Status"}));
    }
}
