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
use super::{crd_table, table};
use drillbench_sim::clock::Time;

const WATCH_TYPES: [&str; 3] = ["ADDED", "MODIFIED", "DELETED"];

/// What one watch asked to see, and where its lines go.
pub(super) struct Watcher {
    resource: &'static Resource,
    namespace: Option<String>,
    labels: Selector,
    fields: Vec<FieldTerm>,
    table: bool,
    columns: Option<crd_table::Columns>,
    bookmarks: bool,
    /// The version the watch started at: nothing at or before it is sent
    /// (one not reached yet when the watch opened is waited for).
    after: u64,
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
    /// A custom resource's printer columns, read when the watch opens
    /// (`None`: the kind's built-in printer).
    pub(super) columns: Option<crd_table::Columns>,
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
            columns,
            bookmarks,
        } = filter;
        let watcher = Watcher {
            resource,
            namespace,
            labels,
            fields,
            table,
            columns,
            bookmarks,
            after: 0,
            tx,
        };
        (watcher, rx)
    }

    /// Starts the watch at `rv`: as the API server's cache watcher only
    /// sends events newer than the version it started at (apiserver's
    /// `cacheWatcher.process`), a watch at a version the server has not
    /// reached yet waits for it, as the API Concepts page allows ("Watch
    /// requests for an unrecognized resource version may wait
    /// indefinitely"), instead of sending changes older than it.
    pub(super) fn start_after(&mut self, rv: u64) {
        self.after = rv;
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
            if !w.bookmarks || rv <= w.after {
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
    let mut object = object.clone();
    let object = if watcher.table {
        let rv = text(&object, "/metadata/resourceVersion");
        let objects = std::slice::from_ref(&object);
        match &watcher.columns {
            Some(columns) => columns.table(objects, &rv, now),
            None => table::table(watcher.resource.key, objects, &rv, now),
        }
    } else {
        super::versions::as_served(watcher.resource, &mut object);
        object
    };
    line(&json!({"type": kind_type, "object": object}))
}

fn watch_line(watcher: &Watcher, change: &Change, now: Time) -> Option<Bytes> {
    if change.kind != watcher.resource.key
        || change.rv <= watcher.after
        || watcher
            .namespace
            .as_ref()
            .is_some_and(|ns| *ns != change.namespace)
        || !WATCH_TYPES.contains(&change.kind_type)
    {
        return None;
    }
    // As the API server's watch cache converts an event for a filtered
    // watcher (apiserver's `cacheWatcher.convertToWatchEvent`): an object
    // that starts passing the filter is ADDED, one that stops passing it
    // is DELETED with its previous content at the event's version.
    let passes = |object: &Value| {
        select::labels_match(&watcher.labels, object)
            && select::fields_match(&watcher.fields, object)
    };
    let (now_passes, before_passed) = if change.kind_type == "DELETED" {
        (false, passes(&change.object))
    } else {
        (
            passes(&change.object),
            change.before.as_ref().is_some_and(passes),
        )
    };
    match (now_passes, before_passed) {
        (true, false) => Some(event_line(watcher, "ADDED", &change.object, now)),
        (true, true) => Some(event_line(watcher, change.kind_type, &change.object, now)),
        (false, true) => {
            let mut gone = match (change.kind_type, &change.before) {
                ("DELETED", _) | (_, None) => change.object.clone(),
                (_, Some(before)) => before.clone(),
            };
            super::history::set_rv(&mut gone, change.rv);
            Some(event_line(watcher, "DELETED", &gone, now))
        }
        (false, false) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_kind;
    use crate::testing::lines;

    fn filter(kind: &str, namespace: Option<&str>, labels: &str, fields: &str) -> WatchFilter {
        WatchFilter {
            resource: by_kind(kind).expect("a served kind"),
            namespace: namespace.map(str::to_owned),
            labels: select::parse_labels(labels).expect("labels"),
            fields: select::parse_fields(fields).expect("fields"),
            table: false,
            columns: None,
            bookmarks: false,
        }
    }

    fn pod_change(
        rv: u64,
        kind_type: &'static str,
        namespace: &str,
        name: &str,
        app: &str,
    ) -> Change {
        Change {
            rv,
            kind: "Pod",
            namespace: namespace.to_owned(),
            kind_type,
            object: json!({"kind": "Pod", "apiVersion": "v1",
                           "metadata": {"name": name, "namespace": namespace,
                                        "resourceVersion": rv.to_string(),
                                        "labels": {"app": app}},
                           "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}),
            before: None,
            before_rv: 0,
        }
    }

    /// A pod relabelled from `from` to `to`, as the history records it.
    fn relabelled(rv: u64, name: &str, from: &str, to: &str) -> Change {
        let mut change = pod_change(rv, "MODIFIED", "apps", name, to);
        let mut before = pod_change(rv - 1, "MODIFIED", "apps", name, from).object;
        if let Some(meta) = before["metadata"].as_object_mut() {
            meta.remove("resourceVersion");
        }
        change.before = Some(before);
        change
    }

    /// apiserver's `cacheWatcher.convertToWatchEvent`: entering a
    /// selector is ADDED, leaving it DELETED with the previous content at
    /// the event's version; a change outside it, nothing.
    #[test]
    fn an_object_entering_or_leaving_a_selector_is_added_or_deleted() {
        let (watcher, mut rx) = Watcher::new(filter("Pod", Some("apps"), "app=web", ""));
        let mut watchers = Watchers::default();
        watchers.add(watcher);
        watchers.announce(&relabelled(5, "p", "db", "web"), 0);
        watchers.announce(&relabelled(6, "p", "web", "web"), 0);
        watchers.announce(&relabelled(7, "p", "web", "db"), 0);
        watchers.announce(&relabelled(8, "p", "db", "cache"), 0);
        let mut seen = Vec::new();
        while let Ok(line) = rx.try_recv() {
            seen.push(serde_json::from_slice::<Value>(&line).expect("json"));
        }
        let types: Vec<&str> = seen.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"]);
        assert_eq!(
            seen[2]["object"]["metadata"]["labels"]["app"], "web",
            "its previous content"
        );
        assert_eq!(
            seen[2]["object"]["metadata"]["resourceVersion"], "7",
            "at the event's version"
        );
    }

    #[test]
    fn a_watcher_sees_only_the_changes_its_filter_lets_through() {
        let (watcher, mut rx) = Watcher::new(filter("Pod", Some("apps"), "app=web", ""));
        let mut watchers = Watchers::default();
        watchers.add(watcher);
        watchers.announce(&pod_change(1, "ADDED", "apps", "web-1", "web"), 0);
        watchers.announce(&pod_change(2, "ADDED", "apps", "db-1", "db"), 0);
        watchers.announce(&pod_change(3, "ADDED", "other", "web-2", "web"), 0);
        let mut node = pod_change(4, "ADDED", "", "n1", "web");
        node.kind = "Node";
        watchers.announce(&node, 0);
        watchers.announce(&pod_change(5, "DELETED", "apps", "web-1", "web"), 0);
        let seen: Vec<(String, String)> = lines(&mut rx)
            .iter()
            .map(|l| {
                (
                    l["type"].as_str().unwrap_or_default().to_owned(),
                    l["object"]["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("ADDED".to_owned(), "1".to_owned()),
                ("DELETED".to_owned(), "5".to_owned())
            ]
        );
    }

    #[test]
    fn field_selectors_filter_like_label_selectors() {
        let (watcher, mut rx) = Watcher::new(filter("Pod", None, "", "spec.nodeName=n2"));
        let mut watchers = Watchers::default();
        watchers.add(watcher);
        let mut on_n2 = pod_change(2, "MODIFIED", "apps", "b", "web");
        on_n2.object["spec"]["nodeName"] = json!("n2");
        watchers.announce(&pod_change(1, "MODIFIED", "apps", "a", "web"), 0);
        watchers.announce(&on_n2, 0);
        let seen = lines(&mut rx);
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0]["object"]["metadata"]["name"], "b");
    }

    #[test]
    fn a_table_watcher_is_sent_one_row_tables() {
        let mut wanted = filter("Pod", None, "", "");
        wanted.table = true;
        let (watcher, mut rx) = Watcher::new(wanted);
        watcher.send_change(&pod_change(7, "ADDED", "apps", "web-1", "web"), 0);
        let seen = lines(&mut rx);
        assert_eq!(seen[0]["type"], "ADDED");
        let table = &seen[0]["object"];
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["metadata"]["resourceVersion"], "7");
        assert_eq!(table["rows"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn bookmarks_go_only_to_watchers_that_asked_and_carry_the_version() {
        let mut asked = filter("Node", None, "", "");
        asked.bookmarks = true;
        let (with, mut with_rx) = Watcher::new(asked);
        let (without, mut without_rx) = Watcher::new(filter("Node", None, "", ""));
        let mut watchers = Watchers::default();
        watchers.add(with);
        watchers.add(without);
        watchers.bookmarks(12);
        let seen = lines(&mut with_rx);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0]["type"], "BOOKMARK");
        assert_eq!(seen[0]["object"]["kind"], "Node");
        assert_eq!(seen[0]["object"]["metadata"]["resourceVersion"], "12");
        assert!(lines(&mut without_rx).is_empty());
    }

    #[test]
    fn a_watcher_whose_client_has_gone_is_dropped() {
        let (kept, _kept_rx) = Watcher::new(filter("Pod", None, "", ""));
        let (gone, gone_rx) = Watcher::new(filter("Pod", None, "", ""));
        let (other_kind, other_rx) = Watcher::new(filter("Node", None, "", ""));
        let mut watchers = Watchers::default();
        watchers.add(kept);
        watchers.add(gone);
        watchers.add(other_kind);
        drop(gone_rx);
        drop(other_rx);
        watchers.announce(&pod_change(1, "ADDED", "apps", "a", "web"), 0);
        // The Node watcher was not sent the pod, but its client has gone
        // all the same.
        assert_eq!(watchers.open.len(), 1);
    }

    #[test]
    fn only_added_modified_and_deleted_changes_are_watch_events() {
        let (watcher, mut rx) = Watcher::new(filter("Pod", None, "", ""));
        watcher.send_change(&pod_change(1, "BOOKMARK", "apps", "a", "web"), 0);
        assert!(lines(&mut rx).is_empty());
        watcher.send_raw("ERROR", json!({"code": 410}));
        assert_eq!(lines(&mut rx)[0]["object"]["code"], 410);
    }
}
