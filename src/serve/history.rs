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
}

/// The last state announced of an object that exists.
#[derive(Debug)]
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

    /// The newest version a watch cannot resume from: every change after
    /// it is still in the window.
    pub(super) fn oldest_rv(&self) -> u64 {
        self.changes.front().map_or(0, |c| c.rv.saturating_sub(1))
    }

    /// The changes after `rv` still in the window, oldest first.
    pub(super) fn since(&self, rv: u64) -> impl Iterator<Item = &Change> {
        self.changes.iter().filter(move |c| c.rv > rv)
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
