//! Open watches and the lines they are sent: each watcher's filter (kind,
//! namespace, label and field selectors), its rendering (the object or a
//! one-row Table), and bookmarks for those that asked for them.

use bytes::Bytes;
use kube::core::Selector;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::history::{Change, text};
use super::resources::Resource;
use super::select::{self, FieldTerm};
use super::table;
use crate::sim::clock::Time;

const WATCH_TYPES: [&str; 3] = ["ADDED", "MODIFIED", "DELETED"];

/// What one watch asked to see, and where its lines go.
pub(super) struct Watcher {
    resource: &'static Resource,
    namespace: Option<String>,
    labels: Selector,
    fields: Vec<FieldTerm>,
    table: bool,
    bookmarks: bool,
    tx: mpsc::UnboundedSender<Bytes>,
}

/// How a watch filters and renders, as its request asked.
pub(super) struct WatchFilter {
    pub(super) resource: &'static Resource,
    pub(super) namespace: Option<String>,
    pub(super) labels: Selector,
    pub(super) fields: Vec<FieldTerm>,
    /// Send server-side Table rows instead of objects.
    pub(super) table: bool,
    /// `allowWatchBookmarks`.
    pub(super) bookmarks: bool,
}

impl Watcher {
    /// A watcher and the stream its lines arrive on.
    pub(super) fn new(filter: WatchFilter) -> (Watcher, mpsc::UnboundedReceiver<Bytes>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let WatchFilter {
            resource,
            namespace,
            labels,
            fields,
            table,
            bookmarks,
        } = filter;
        let watcher = Watcher {
            resource,
            namespace,
            labels,
            fields,
            table,
            bookmarks,
            tx,
        };
        (watcher, rx)
    }

    /// Sends an event about one object, whatever the filter.
    pub(super) fn send_event(&self, kind_type: &str, object: &Value, now: Time) {
        let _ = self.tx.send(event_line(self, kind_type, object, now));
    }

    /// Sends a change if the filter lets it through.
    pub(super) fn send_change(&self, change: &Change, now: Time) {
        if let Some(l) = watch_line(self, change, now) {
            let _ = self.tx.send(l);
        }
    }

    /// Sends a bare event (`ERROR`, a `BOOKMARK`) with its object as given.
    pub(super) fn send_raw(&self, kind_type: &str, object: Value) {
        let _ = self
            .tx
            .send(line(&json!({"type": kind_type, "object": object})));
    }
}

/// The open watches.
#[derive(Default)]
pub(super) struct Watchers {
    open: Vec<Watcher>,
}

impl Watchers {
    pub(super) fn add(&mut self, watcher: Watcher) {
        self.open.push(watcher);
    }

    /// Sends a change to every watcher it concerns, and forgets the
    /// watchers whose clients have gone.
    pub(super) fn announce(&mut self, change: &Change, now: Time) {
        self.open.retain(|w| match watch_line(w, change, now) {
            Some(line) => w.tx.send(line).is_ok(),
            None => !w.tx.is_closed(),
        });
    }

    /// Sends a bookmark at `rv` to every watcher that asked for them.
    pub(super) fn bookmarks(&mut self, rv: u64) {
        self.open.retain(|w| {
            if !w.bookmarks {
                return !w.tx.is_closed();
            }
            let object = json!({"kind": w.resource.kind, "apiVersion": w.resource.api_version(),
                                "metadata": {"resourceVersion": rv.to_string()}});
            w.tx.send(line(&json!({"type": "BOOKMARK", "object": object})))
                .is_ok()
        });
    }
}

fn line(value: &Value) -> Bytes {
    let mut text = serde_json::to_vec(value).unwrap_or_default();
    text.push(b'\n');
    Bytes::from(text)
}

fn event_line(watcher: &Watcher, kind_type: &str, object: &Value, now: Time) -> Bytes {
    let object = if watcher.table {
        let rv = text(object, "/metadata/resourceVersion");
        table::table(
            watcher.resource.kind,
            std::slice::from_ref(object),
            &rv,
            now,
        )
    } else {
        object.clone()
    };
    line(&json!({"type": kind_type, "object": object}))
}

fn watch_line(watcher: &Watcher, change: &Change, now: Time) -> Option<Bytes> {
    if change.kind != watcher.resource.kind
        || watcher
            .namespace
            .as_ref()
            .is_some_and(|ns| *ns != change.namespace)
        || !WATCH_TYPES.contains(&change.kind_type)
        || !select::labels_match(&watcher.labels, &change.object)
        || !select::fields_match(&watcher.fields, &change.object)
    {
        return None;
    }
    Some(event_line(watcher, change.kind_type, &change.object, now))
}
