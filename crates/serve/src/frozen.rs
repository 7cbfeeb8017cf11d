//! `bench sim serve --snapshot FILE`: a captured cluster served frozen.
//!
//! The snapshot's objects are the store, exactly as captured: no
//! simulator runs behind them, so no controller reconciles, no pod is
//! scheduled or fails, no time passes. Reads (discovery, get, list with
//! selectors, pagination and server-side tables, watch) answer as the
//! simulator's façade answers them; every write is refused with a 405, and
//! discovery lists only the read verbs, so `kubectl` and kube-rs see a
//! read-only copy of production, not a cluster they can drill.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::api::{ApiError, ApiResult, Reply, Request};
use super::partial;
use super::protobuf_reply;
use super::resources::{self, RESOURCES, Resource, SNAPSHOT_ONLY};
use super::select::{self, FieldTerm};
use super::table;
use super::watch::{WatchFilter, Watcher, Watchers};
use drillbench_model::snapshot::ClusterSnapshot;
use drillbench_sim::EPOCH_SECONDS;

/// The one resourceVersion of a frozen list: nothing ever changes, so
/// every list is as of this version and a watch from it sees nothing new.
const RESOURCE_VERSION: &str = "1";

/// Every kind a frozen snapshot can serve.
fn served() -> impl Iterator<Item = &'static Resource> {
    RESOURCES.iter().chain(SNAPSHOT_ONLY.iter())
}

/// The captured objects, by the resource that serves them.
pub(super) struct Frozen {
    objects: BTreeMap<(&'static str, &'static str), Vec<Value>>,
    groups: Vec<&'static str>,
    /// The tables' "now": the newest creation in the snapshot, the last
    /// moment the file vouches for, as simulator milliseconds.
    now_ms: u64,
    watchers: Watchers,
}

impl Frozen {
    /// The store of a snapshot, and the kinds it holds that are not served
    /// (`apiVersion Kind` and how many objects), which it leaves out.
    pub(super) fn new(snapshot: &ClusterSnapshot) -> (Frozen, Vec<(String, usize)>) {
        let mut objects: BTreeMap<(&'static str, &'static str), Vec<Value>> = BTreeMap::new();
        let mut unserved: BTreeMap<String, usize> = BTreeMap::new();
        let mut newest = EPOCH_SECONDS;
        for item in &snapshot.items {
            let api_version = text(item, "/apiVersion");
            let kind = text(item, "/kind");
            match served().find(|r| r.kind == kind && r.api_version() == api_version) {
                Some(r) => {
                    if let Some(created) = item
                        .pointer("/metadata/creationTimestamp")
                        .and_then(Value::as_str)
                        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                    {
                        newest = newest.max(created.as_second());
                    }
                    objects
                        .entry((r.group, r.plural))
                        .or_default()
                        .push(item.clone());
                }
                None => *unserved.entry(format!("{api_version} {kind}")).or_default() += 1,
            }
        }
        let mut groups: Vec<&'static str> = Vec::new();
        for r in served() {
            if !r.group.is_empty() && !groups.contains(&r.group) {
                groups.push(r.group);
            }
        }
        let frozen = Frozen {
            objects,
            groups,
            now_ms: (newest - EPOCH_SECONDS).max(0) as u64 * 1000,
            watchers: Watchers::default(),
        };
        (frozen, unserved.into_iter().collect())
    }

    /// Answers one request.
    pub(super) fn handle(&mut self, request: Request) -> Reply {
        match self.route(&request) {
            Ok(reply) => reply,
            Err(error) => error.reply(),
        }
    }

    /// Sends a bookmark to every watcher that asked for them, and forgets
    /// those whose clients have gone.
    pub(super) fn bookmarks(&mut self) {
        self.watchers.bookmarks(1);
    }

    fn route(&mut self, request: &Request) -> ApiResult {
        if let Some(review) = super::access::answer(request, true) {
            return review;
        }
        let path = request.path.trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        if !matches!(request.method.as_str(), "GET" | "HEAD") {
            return Err(ApiError::new(
                405,
                "MethodNotAllowed",
                "the served cluster is a frozen snapshot: nothing can change it",
            ));
        }
        let ok = |v| Ok(Reply::Json(200, v));
        let found = |v: Option<_>| {
            v.map(|g| Reply::Json(200, g))
                .ok_or_else(ApiError::no_such_path)
        };
        match segments.as_slice() {
            ["version"] => ok(resources::version()),
            ["healthz"] | ["readyz"] | ["livez"] => ok(json!("ok")),
            ["api"] => ok(resources::core_versions()),
            ["apis"] => ok(resources::groups_of(&self.groups)),
            ["api", "v1"] => found(resources::resource_list_of(
                served(),
                &self.groups,
                "",
                "v1",
                true,
            )),
            ["apis", group] => found(resources::group_of(&self.groups, group)),
            ["apis", group, version] => found(resources::resource_list_of(
                served(),
                &self.groups,
                group,
                version,
                true,
            )),
            ["api", "v1", rest @ ..] => self.resource(request, "", "v1", rest),
            ["apis", group, version, rest @ ..] => self.resource(request, group, version, rest),
            _ => Err(ApiError::no_such_path()),
        }
    }

    /// `[namespaces/NS/]PLURAL[/NAME]`.
    fn resource(
        &mut self,
        request: &Request,
        group: &str,
        version: &str,
        rest: &[&str],
    ) -> ApiResult {
        let (namespace, rest) = match rest {
            ["namespaces", ns, tail @ ..] if !tail.is_empty() => (Some(ns.to_string()), tail),
            _ => (None, rest),
        };
        let resource = served()
            .find(|r| r.group == group && r.version == version && Some(&r.plural) == rest.first())
            .ok_or_else(ApiError::no_such_path)?;
        if namespace.is_some() && !resource.namespaced {
            return Err(ApiError::new(
                404,
                "NotFound",
                format!("{} is not namespaced", resource.qualified()),
            ));
        }
        match rest {
            [_] if is_watch(request) => self.watch(request, resource, namespace),
            [_] => self.list(request, resource, namespace),
            [_, name] => {
                let object = self
                    .stored(resource)
                    .iter()
                    .find(|o| {
                        text(o, "/metadata/name") == *name
                            && (!resource.namespaced
                                || namespace.as_deref() == Some(text(o, "/metadata/namespace")))
                    })
                    .cloned()
                    .ok_or_else(|| ApiError::not_found(resource, name))?;
                Ok(if partial::wants_metadata(&request.accept) {
                    Reply::Json(200, partial::object(&object))
                } else if table::wants_table(&request.accept) {
                    Reply::Json(
                        200,
                        table::table(resource.kind, &[object], RESOURCE_VERSION, self.now_ms),
                    )
                } else {
                    Reply::Json(200, object)
                })
            }
            [_, _, sub] => Err(ApiError::new(
                404,
                "NotFound",
                format!("{}/{sub} is not served", resource.qualified()),
            )),
            _ => Err(ApiError::no_such_path()),
        }
    }

    fn stored(&self, resource: &Resource) -> &[Value] {
        self.objects
            .get(&(resource.group, resource.plural))
            .map_or(&[], Vec::as_slice)
    }

    /// The objects of a resource the request's namespace and selectors let
    /// through, in the file's order.
    fn selected(
        &self,
        request: &Request,
        resource: &Resource,
        namespace: &Option<String>,
    ) -> Result<Vec<Value>, ApiError> {
        let (labels, fields) = selectors(request)?;
        Ok(self
            .stored(resource)
            .iter()
            .filter(|o| {
                namespace
                    .as_deref()
                    .is_none_or(|ns| text(o, "/metadata/namespace") == ns)
            })
            .filter(|o| select::labels_match(&labels, o) && select::fields_match(&fields, o))
            .cloned()
            .collect())
    }

    /// A list, paginated by `limit` and `continue` (the offset: the store
    /// never changes, so a token never expires).
    fn list(&self, request: &Request, resource: &Resource, namespace: Option<String>) -> ApiResult {
        let items = self.selected(request, resource, &namespace)?;
        let offset = match request.query.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => token
                .parse::<usize>()
                .map_err(|_| ApiError::bad_request("invalid continue token"))?,
            None => 0,
        };
        let limit = match request.query.get("limit") {
            Some(l) => l
                .parse::<usize>()
                .map_err(|_| ApiError::bad_request(format!("invalid limit `{l}`")))?,
            None => 0,
        };
        let total = items.len();
        let mut items: Vec<Value> = items.into_iter().skip(offset).collect();
        let mut metadata = json!({"resourceVersion": RESOURCE_VERSION});
        if limit > 0 && items.len() > limit {
            items.truncate(limit);
            let next = offset + limit;
            metadata["continue"] = json!(next.to_string());
            metadata["remainingItemCount"] = json!(total - next);
        }
        if partial::wants_metadata(&request.accept) {
            return Ok(Reply::Json(200, partial::list(&items, metadata)));
        }
        if table::wants_table(&request.accept) {
            let mut t = table::table(resource.kind, &items, RESOURCE_VERSION, self.now_ms);
            t["metadata"] = metadata;
            return Ok(Reply::Json(200, t));
        }
        Ok(Reply::Json(
            200,
            json!({
                "kind": format!("{}List", resource.kind), "apiVersion": resource.api_version(),
                "metadata": metadata, "items": items,
            }),
        ))
    }

    /// A watch: without a resourceVersion, the objects as `ADDED` (and
    /// with `sendInitialEvents`, the bookmark ending them); from a version,
    /// nothing, since nothing changes. It stays open until the client or
    /// its `timeoutSeconds` ends it.
    fn watch(
        &mut self,
        request: &Request,
        resource: &'static Resource,
        namespace: Option<String>,
    ) -> ApiResult {
        let (labels, fields) = selectors(request)?;
        let (watcher, rx) = Watcher::new(WatchFilter {
            resource,
            namespace: namespace.clone(),
            labels,
            fields,
            table: table::wants_table(&request.accept),
            columns: None,
            bookmarks: request
                .query
                .get("allowWatchBookmarks")
                .is_some_and(|b| b == "true"),
        });
        let from = request
            .query
            .get("resourceVersion")
            .filter(|v| !v.is_empty() && *v != "0");
        let send_initial = request
            .query
            .get("sendInitialEvents")
            .is_some_and(|s| s == "true");
        if from.is_none() || send_initial {
            for object in self.selected(request, resource, &namespace)? {
                watcher.send_event("ADDED", &object, self.now_ms);
            }
        }
        if send_initial {
            let object = json!({"kind": resource.kind, "apiVersion": resource.api_version(),
                "metadata": {"resourceVersion": RESOURCE_VERSION,
                             "annotations": {"k8s.io/initial-events-end": "true"}}});
            watcher.send_raw("BOOKMARK", object);
        }
        self.watchers.add(watcher);
        let timeout = request
            .query
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok())
            .map(std::time::Duration::from_secs);
        Ok(Reply::Watch {
            events: rx,
            timeout,
            protobuf: protobuf_reply::watch_in_protobuf(&request.accept, resource),
        })
    }
}

fn is_watch(request: &Request) -> bool {
    request
        .query
        .get("watch")
        .is_some_and(|w| w == "true" || w == "1")
}

fn text<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn selectors(request: &Request) -> Result<(kube::core::Selector, Vec<FieldTerm>), ApiError> {
    let labels = select::parse_labels(
        request
            .query
            .get("labelSelector")
            .map_or("", String::as_str),
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let fields = select::parse_fields(
        request
            .query
            .get("fieldSelector")
            .map_or("", String::as_str),
    )
    .map_err(|e| ApiError::bad_request(e.to_string()))?;
    Ok((labels, fields))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::status_body;
    use crate::testing::{get, json as answer, request};
    use drillbench_model::snapshot::SnapshotSource;

    fn snapshot() -> ClusterSnapshot {
        let source = SnapshotSource {
            context: Some("prod".into()),
            server: "https://prod:6443".into(),
            namespaces: vec![],
        };
        ClusterSnapshot::new(
            source,
            vec![
                serde_json::json!({"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": "w1", "labels": {"pool": "workers"},
                                 "creationTimestamp": "2026-01-01T00:10:00Z"}}),
                serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "web-0", "namespace": "apps", "labels": {"app": "web"}},
                    "spec": {"nodeName": "w1"}}),
                serde_json::json!({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "db-0", "namespace": "data"}, "spec": {"nodeName": "w1"}}),
                serde_json::json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "metadata": {"name": "web-1", "namespace": "apps"}}),
                serde_json::json!({"apiVersion": "example.com/v1", "kind": "Widget",
                    "metadata": {"name": "w"}}),
            ],
        )
    }

    #[test]
    fn the_snapshot_is_read_as_captured_and_unknown_kinds_are_named() {
        let (mut frozen, unserved) = Frozen::new(&snapshot());
        assert_eq!(unserved, [("example.com/v1 Widget".to_owned(), 1)]);
        assert_eq!(frozen.now_ms, 600_000, "the newest creation");
        let (code, pods) = answer(frozen.handle(get("/api/v1/pods")));
        assert_eq!(code, 200);
        let names: Vec<&str> = pods["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|p| text(p, "/metadata/name"))
            .collect();
        assert_eq!(names, ["web-0", "db-0"]);
        let (_, apps) =
            answer(frozen.handle(get("/api/v1/namespaces/apps/pods?labelSelector=app=web")));
        assert_eq!(apps["items"].as_array().map(Vec::len), Some(1));
        let (code, pod) = answer(frozen.handle(get("/api/v1/namespaces/data/pods/db-0")));
        assert_eq!((code, pod["spec"]["nodeName"].as_str()), (200, Some("w1")));
        let (code, _) = answer(frozen.handle(get("/api/v1/namespaces/apps/pods/db-0")));
        assert_eq!(code, 404, "another namespace's pod");
        let (code, rs) = answer(frozen.handle(get("/apis/apps/v1/replicasets")));
        assert_eq!((code, rs["items"].as_array().map(Vec::len)), (200, Some(1)));
        let (code, page) = answer(frozen.handle(get("/api/v1/pods?limit=1")));
        assert_eq!(
            (code, page["metadata"]["continue"].as_str()),
            (200, Some("1"))
        );
        let (_, rest) = answer(frozen.handle(get("/api/v1/pods?limit=1&continue=1")));
        assert_eq!(text(&rest["items"][0], "/metadata/name"), "db-0");
    }

    #[test]
    fn discovery_lists_read_verbs_only_and_every_write_is_refused() {
        let (mut frozen, _) = Frozen::new(&snapshot());
        let (code, core) = answer(frozen.handle(get("/api/v1")));
        assert_eq!(code, 200);
        let resources = core["resources"].as_array().expect("resources");
        assert!(resources.iter().any(|r| r["name"] == "secrets"));
        assert!(
            resources
                .iter()
                .all(|r| r["verbs"] == serde_json::json!(["get", "list", "watch"])),
            "{core}"
        );
        let (code, _) = answer(frozen.handle(get("/apis/kyverno.io/v1")));
        assert_eq!(code, 200);
        let (code, body) =
            answer(frozen.handle(request("DELETE", "/api/v1/namespaces/apps/pods/web-0", "")));
        assert_eq!(code, 405);
        assert_eq!(
            body,
            status_body(
                405,
                "MethodNotAllowed",
                "the served cluster is a frozen snapshot: nothing can change it"
            )
        );
        let (_, still) = answer(frozen.handle(get("/api/v1/namespaces/apps/pods/web-0")));
        assert_eq!(still["metadata"]["name"], "web-0");
    }
}
