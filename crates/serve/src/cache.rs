//! LIST answers from the watch cache: the objects as last announced,
//! each serialised once per resourceVersion.
//!
//! The API server answers a LIST from its watch cache (apiserver's
//! `Cacher.GetList`: the state the watch stream built, at the cache's
//! resourceVersion), not by reading every object again. So does the
//! façade: [`History`] keeps the last state announced of every object,
//! which for the kinds in [`ANNOUNCED_KINDS`] is exactly the current
//! state (each change of theirs is announced at the sync that sees it),
//! and this cache keeps each object's JSON bytes beside the version they
//! were written at. A list is then a filter over the announced objects
//! and a splice of their bytes: nothing is rebuilt on the simulator
//! thread, and an object is serialised again only after it changed. A
//! list is by construction what a watch from its resourceVersion
//! continues from.

use std::cell::RefCell;
use std::collections::BTreeMap;

use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;

use super::history::{History, Key, set_rv};

/// Kinds whose announced state is their current state: every change of
/// one is a change in the [`History`] (a timeline event, a derived kind
/// compared at every sync, an API edit). `cache::tests` checks it over the
/// built-in drills; a kind left out (StorageClasses, which never change
/// and are never announced) is read from the simulator as before.
pub(super) const ANNOUNCED_KINDS: [&str; 14] = [
    "Node",
    "Pod",
    "Event",
    "ConfigMap",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "Deployment",
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "PodDisruptionBudget",
    "VolumeAttachment",
    "Lease",
];

/// One object as a list serves it: its state (for selectors and table
/// cells; without its resourceVersion) and its JSON bytes (with it).
pub(super) struct Cached<'a> {
    pub(super) key: &'a Key,
    pub(super) rv: u64,
    pub(super) bare: &'a Value,
    pub(super) json: Bytes,
}

/// The JSON bytes of each announced object, at the version they show.
#[derive(Default)]
pub(super) struct ListCache {
    bytes: RefCell<BTreeMap<Key, (u64, Bytes)>>,
    /// Each object's Table row, at its version and the virtual second its
    /// age was written for (an age is shown in whole seconds).
    rows: RefCell<BTreeMap<Key, (u64, u64, Bytes)>>,
}

impl ListCache {
    /// Whether lists of `kind` are served from the announced state.
    pub(super) fn serves(kind: &str) -> bool {
        ANNOUNCED_KINDS.contains(&kind)
    }

    /// The announced objects of `kind` in key order (namespace, then
    /// name), each with its bytes: serialised now if the object changed
    /// since they were, else the bytes kept. Entries of objects gone since
    /// are dropped.
    pub(super) fn objects<'h>(&self, history: &'h History, kind: &'static str) -> Vec<Cached<'h>> {
        let mut bytes = self.bytes.borrow_mut();
        let mut out = Vec::new();
        let mut seen: Vec<Key> = Vec::new();
        for (key, bare, rv) in history.announced_with_rv(kind) {
            let json = match bytes.get(key) {
                Some((at, json)) if *at == rv => json.clone(),
                _ => {
                    let mut object = bare.clone();
                    set_rv(&mut object, rv);
                    let json = Bytes::from(serde_json::to_vec(&object).unwrap_or_default());
                    bytes.insert(key.clone(), (rv, json.clone()));
                    json
                }
            };
            seen.push(key.clone());
            out.push(Cached {
                key,
                rv,
                bare,
                json,
            });
        }
        // Forget the bytes of this kind's objects no longer announced, so
        // the cache holds one entry per live object.
        if bytes.range(kind_range(kind)).count() > seen.len() {
            let live: std::collections::BTreeSet<Key> = seen.into_iter().collect();
            bytes.retain(|k, _| k.0 != kind || live.contains(k));
            self.rows
                .borrow_mut()
                .retain(|k, _| k.0 != kind || live.contains(k));
        }
        out
    }

    /// An object's Table row (`{"cells":[...],"object":{...}}`) at
    /// `now_ms`: the one kept if neither the object nor the second its age
    /// is counted at moved, else made by `cells` and kept.
    pub(super) fn row(
        &self,
        object: &Cached<'_>,
        now_ms: u64,
        cells: impl FnOnce() -> Vec<Value>,
    ) -> Bytes {
        let second = now_ms / 1000;
        let mut rows = self.rows.borrow_mut();
        if let Some((rv, at, row)) = rows.get(object.key)
            && *rv == object.rv
            && *at == second
        {
            return row.clone();
        }
        let cells = serde_json::to_vec(&cells()).unwrap_or_default();
        let mut row = BytesMut::with_capacity(cells.len() + object.json.len() + 22);
        row.put_slice(b"{\"cells\":");
        row.put_slice(&cells);
        row.put_slice(b",\"object\":");
        row.put_slice(&object.json);
        row.put_u8(b'}');
        let row = row.freeze();
        rows.insert(object.key.clone(), (object.rv, second, row.clone()));
        row
    }
}

fn kind_range(kind: &'static str) -> std::ops::RangeFrom<Key> {
    (kind, String::new(), String::new())..
}

/// `{"items":[a,b,...]}`'s middle: the objects' bytes joined by commas
/// after `head`, then `tail`.
pub(super) fn splice<'a>(head: &[u8], items: impl Iterator<Item = &'a [u8]>, tail: &[u8]) -> Bytes {
    let items: Vec<&[u8]> = items.collect();
    let size = head.len() + tail.len() + items.iter().map(|i| i.len() + 1).sum::<usize>();
    let mut out = BytesMut::with_capacity(size);
    out.put_slice(head);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.put_u8(b',');
        }
        out.put_slice(item);
    }
    out.put_slice(tail);
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::Cluster;
    use crate::resources::RESOURCES;
    use crate::testing::{cluster, get, json, lines, names, rv_of, watch};
    use drillbench_sim::Simulation;

    /// The kinds whose announced objects differ from a fresh read of the
    /// simulator, with the first difference.
    fn stale_kinds(cluster: &Cluster) -> Vec<String> {
        let mut out = Vec::new();
        for resource in RESOURCES {
            let fresh = cluster.objects().list(resource);
            let announced: Vec<Value> = cluster
                .history()
                .announced_with_rv(resource.kind)
                .map(|(_, bare, rv)| {
                    let mut object = bare.clone();
                    set_rv(&mut object, rv);
                    object
                })
                .collect();
            if fresh != announced {
                let first = fresh
                    .iter()
                    .zip(&announced)
                    .find(|(a, b)| a != b)
                    .map(|(a, b)| format!("{a}\n  !=\n{b}"))
                    .unwrap_or_else(|| format!("{} vs {} objects", fresh.len(), announced.len()));
                out.push(format!("{}: {first}", resource.kind));
            }
        }
        out
    }

    /// The cache's premise: for every kind it serves, what was announced
    /// is what the simulator shows, over drills that scale down, finish
    /// Jobs (whose pods change without an event of their own), lose a
    /// node and move volumes. Control: a kind it does not serve (the
    /// drill's Namespaces and StorageClasses, never announced) differs,
    /// so the comparison can fail.
    #[test]
    fn every_kind_the_cache_serves_reads_as_announced() {
        let mut left_out = std::collections::BTreeSet::new();
        for name in ["autoscaler-scale-down", "node-loss"] {
            let entry = drillbench_model::scenario::catalog::list()
                .expect("the built-in drills")
                .into_iter()
                .find(|e| e.name == name)
                .expect("a built-in drill");
            let drill = drillbench_model::drill::Drill::load(&entry.path).expect("loads");
            let sim = Simulation::new(&drill, 3).expect("provisions");
            let mut cluster = Cluster::new(&drill, sim, 100_000, 0);
            for step in 0..24u64 {
                for stale in stale_kinds(&cluster) {
                    let kind = stale.split(':').next().unwrap_or_default().to_owned();
                    assert!(!ListCache::serves(&kind), "{name} at step {step}: {stale}");
                    left_out.insert(kind);
                }
                if step == 4
                    && let Some(node) = cluster
                        .sim
                        .nodes()
                        .iter()
                        .position(|n| n.name.contains("worker"))
                {
                    cluster.sim.crash_node_api(node);
                    cluster.sync();
                }
                let next = cluster.sim.now() + 30_000;
                cluster.advance_to(next);
            }
        }
        assert!(
            left_out.contains("Namespace") && left_out.contains("StorageClass"),
            "{left_out:?}"
        );
    }

    fn pods() -> &'static crate::resources::Resource {
        crate::resources::by_kind("Pod").expect("served")
    }

    fn listed(cluster: &Cluster, path: &str, accept: Option<&str>) -> Value {
        let mut request = get(path);
        if let Some(accept) = accept {
            request.accept = accept.to_owned();
        }
        let namespace = path
            .strip_prefix("/api/v1/namespaces/")
            .and_then(|rest| rest.split('/').next())
            .map(str::to_owned);
        let reply = crate::read::list(cluster, &request, pods(), namespace).expect("a list");
        assert!(
            matches!(reply, crate::api::Reply::Raw { status: 200, .. }),
            "served from the cache"
        );
        json(reply).1
    }

    /// A list after a change shows it, at the change's version. Control:
    /// with nothing changed, the same list is the same bytes, spliced
    /// from what was kept.
    #[test]
    fn a_list_after_a_change_sees_it() {
        let mut cluster = cluster();
        let before = listed(&cluster, "/api/v1/pods", None);
        let again = listed(&cluster, "/api/v1/pods", None);
        assert_eq!(before, again, "nothing changed");
        let node = cluster.sim.node_id("prod-worker-1").expect("a worker");
        cluster.sim.crash_node_api(node);
        cluster.advance_to(cluster.sim.now() + 600_000);
        let after = listed(&cluster, "/api/v1/pods", None);
        assert_eq!(rv_of(&after), cluster.history().rv());
        assert!(rv_of(&after) > rv_of(&before));
        let fresh = cluster.objects().list(pods());
        assert_eq!(
            after["items"],
            Value::Array(fresh),
            "what the simulator shows now"
        );
        assert_ne!(after["items"], before["items"], "the crash moved pods");
    }

    /// client-go's reflector: list, then watch from the list's version and
    /// apply every event. What it ends with is the list at the newest
    /// version; nothing between the two was missed.
    #[test]
    fn a_watch_from_a_cached_lists_version_misses_nothing() {
        let mut cluster = cluster();
        let listed_then = listed(&cluster, "/api/v1/pods", None);
        let from = rv_of(&listed_then);
        let node = cluster.sim.node_id("prod-worker-2").expect("a worker");
        cluster.sim.crash_node_api(node);
        cluster.advance_to(cluster.sim.now() + 600_000);
        let request = get(&format!("/api/v1/pods?watch=true&resourceVersion={from}"));
        let (mut events, _) =
            watch(crate::read::watch(&mut cluster, &request, pods(), None).expect("a watch"));
        let mut store: BTreeMap<String, Value> = listed_then["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|o| (names(std::slice::from_ref(o)).remove(0), o.clone()))
            .collect();
        let seen = lines(&mut events);
        assert!(!seen.is_empty(), "the crash changed pods");
        for event in seen {
            let name = names(std::slice::from_ref(&event["object"])).remove(0);
            match event["type"].as_str() {
                Some("DELETED") => {
                    store.remove(&name);
                }
                _ => {
                    store.insert(name, event["object"].clone());
                }
            }
        }
        let now = listed(&cluster, "/api/v1/pods", None);
        let replayed: Vec<Value> = store.into_values().collect();
        assert_eq!(Value::Array(replayed), now["items"]);
    }

    /// The cached list answers as the rebuilt one did: the same objects
    /// for a namespace, label and field selectors and pages, and the same
    /// Table rows `kubectl get` prints.
    #[test]
    fn cached_lists_select_page_and_tabulate_as_rebuilt_ones() {
        let cluster = cluster();
        let fresh = cluster.objects().list(pods());
        let in_apps: Vec<Value> = fresh
            .iter()
            .filter(|o| o["metadata"]["namespace"] == "apps")
            .cloned()
            .collect();
        let cache_pods: Vec<Value> = in_apps
            .iter()
            .filter(|o| o["metadata"]["labels"]["app"] == "cache")
            .cloned()
            .collect();
        let on_node: Vec<Value> = fresh
            .iter()
            .filter(|o| o["spec"]["nodeName"] == "prod-worker-1")
            .cloned()
            .collect();
        assert!(!cache_pods.is_empty() && !on_node.is_empty() && on_node.len() < fresh.len());
        let cases = [
            ("/api/v1/namespaces/apps/pods", in_apps.clone()),
            (
                "/api/v1/namespaces/apps/pods?labelSelector=app=cache",
                cache_pods,
            ),
            (
                "/api/v1/pods?fieldSelector=spec.nodeName=prod-worker-1",
                on_node,
            ),
        ];
        for (path, expected) in cases {
            assert_eq!(
                listed(&cluster, path, None)["items"],
                Value::Array(expected),
                "{path}"
            );
        }
        let first = listed(&cluster, "/api/v1/pods?limit=3", None);
        assert_eq!(first["items"], Value::Array(fresh[..3].to_vec()));
        assert_eq!(first["metadata"]["remainingItemCount"], fresh.len() - 3);
        let token = first["metadata"]["continue"].as_str().expect("a token");
        let rest = listed(
            &cluster,
            &format!("/api/v1/pods?limit=100&continue={token}"),
            None,
        );
        assert_eq!(rest["items"], Value::Array(fresh[3..].to_vec()));
        assert!(rest["metadata"].get("continue").is_none());
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io";
        let table = listed(&cluster, "/api/v1/namespaces/apps/pods", Some(accept));
        let rv = cluster.history().rv().to_string();
        let expected = crate::table::table("Pod", &in_apps, &rv, cluster.sim.now());
        assert_eq!(table, expected);
    }
}
