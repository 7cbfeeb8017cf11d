//! What the façade's unit tests share: the cluster `tests/it/serve_*.rs`
//! serve (three control planes, three workers, a Deployment `apps/api`
//! whose budget allows no disruption, a Deployment `apps/cache`, a
//! DaemonSet), built without a server, and requests as the HTTP side
//! hands them over.

use std::collections::BTreeMap;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::api::{Reply, Request};
use super::cluster::Cluster;
use drillbench_model::drill::Drill;
use drillbench_sim::Simulation;

pub(super) fn drill() -> Drill {
    drill_at("harness/serve/serve.yaml")
}

/// A drill of this repository by its path from the root.
pub(super) fn drill_at(path: &str) -> Drill {
    let path = drillbench_model::test_support::repo_file(path);
    Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

/// The served cluster at time zero, keeping `window` changes.
pub(super) fn cluster_with_window(window: usize) -> Cluster {
    let drill = drill();
    let sim = Simulation::new(&drill, 7).expect("the serve drill provisions");
    Cluster::new(&drill, sim, window, 0)
}

pub(super) fn cluster() -> Cluster {
    cluster_with_window(1_000)
}

/// A request for `path?query` (the query given as `key=value&...`,
/// already decoded) with a body.
pub(super) fn request(method: &str, path_and_query: &str, body: &str) -> Request {
    let (path, query) = path_and_query
        .split_once('?')
        .unwrap_or((path_and_query, ""));
    let query: BTreeMap<String, String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (k.to_owned(), v.to_owned())
        })
        .collect();
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    Request {
        method: method.to_owned(),
        path: path.to_owned(),
        query,
        content_type: content_type.to_owned(),
        accept: "application/json".to_owned(),
        user_agent: "kubectl/v1.32.0 (linux/amd64) kubernetes/70d3cc9".to_owned(),
        body: Bytes::from(body.to_owned()),
    }
}

pub(super) fn get(path_and_query: &str) -> Request {
    request("GET", path_and_query, "")
}

/// A JSON reply's status and body.
pub(super) fn json(reply: Reply) -> (u16, Value) {
    match reply {
        Reply::Json(code, body) => (code, body),
        Reply::Raw {
            status,
            media_type: "application/json",
            body,
        } => (
            status,
            serde_json::from_slice(&body).expect("a serialised reply is JSON"),
        ),
        _ => panic!("expected a JSON reply"),
    }
}

/// A watch reply's stream and timeout.
pub(super) fn watch(reply: Reply) -> (mpsc::UnboundedReceiver<Bytes>, Option<std::time::Duration>) {
    match reply {
        Reply::Watch {
            events, timeout, ..
        } => (events, timeout),
        Reply::Json(code, body) => panic!("expected a watch, got {code} {body}"),
        Reply::Raw { status, .. } => panic!("expected a watch, got {status} and bytes"),
    }
}

/// The watch lines queued so far, each parsed.
pub(super) fn lines(events: &mut mpsc::UnboundedReceiver<Bytes>) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(line) = events.try_recv() {
        assert_eq!(line.last(), Some(&b'\n'), "one event a line");
        out.push(serde_json::from_slice(&line).expect("a JSON line"));
    }
    out
}

/// The `resourceVersion` of an object, as a number.
pub(super) fn rv_of(object: &Value) -> u64 {
    object
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no resourceVersion in {object}"))
}

/// The names of the objects in a list, `namespace/name` when namespaced.
pub(super) fn names(items: &[Value]) -> Vec<String> {
    items
        .iter()
        .map(|o| {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            match o["metadata"]["namespace"].as_str() {
                Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
                _ => name.to_owned(),
            }
        })
        .collect()
}

/// A watcher of every `kind` object in every namespace, added to `cluster`.
pub(super) fn watch_kind(cluster: &mut Cluster, kind: &str) -> mpsc::UnboundedReceiver<Bytes> {
    let (watcher, rx) = super::watch::Watcher::new(super::watch::WatchFilter {
        resource: super::resources::by_kind(kind).expect("a served kind"),
        namespace: None,
        labels: super::select::parse_labels("").expect("empty"),
        fields: Vec::new(),
        table: false,
        columns: None,
        bookmarks: false,
    });
    cluster.add_watcher(watcher);
    rx
}
