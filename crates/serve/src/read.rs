//! The read path: get, list (with selectors, pagination and server-side
//! tables) and watch.

use std::collections::BTreeMap;

use kube::core::Selector;
use serde_json::{Value, json};

use super::api::{ApiError, ApiResult, Reply, Request, status_body};
use super::cache::{self, Cached, ListCache};
use super::cluster::Cluster;
use super::history::{Key, key_of, text};
use super::partial;
use super::protobuf_reply;
use super::resources::Resource;
use super::select::{self, FieldTerm};
use super::table;
use super::watch::{WatchFilter, Watcher};
use super::{crds, events_v1, versions};

/// One object, or its one-row Table when the client asked for tables.
pub(super) fn single(
    cluster: &Cluster,
    request: &Request,
    resource: &Resource,
    mut object: Value,
) -> Reply {
    if table::wants_table(&request.accept) && !partial::wants_metadata(&request.accept) {
        // A table's columns read the stored form.
        let rv = cluster.history().rv().to_string();
        return Reply::Json(200, table_of(cluster, resource, &[object], &rv));
    }
    versions::as_served(resource, &mut object);
    if partial::wants_metadata(&request.accept) {
        return Reply::Json(200, partial::object(&object));
    }
    Reply::Json(200, object)
}

/// The Table of `objects`: a custom resource's as its definition's
/// printer columns say (`super::crd_table`), a built-in kind's as
/// kubectl's printers print it.
fn table_of(cluster: &Cluster, resource: &Resource, objects: &[Value], rv: &str) -> Value {
    let now = cluster.sim.now();
    match crds::columns_of(&cluster.written, resource) {
        Some(columns) => columns.table(objects, rv, now),
        None => table::table(resource.key, objects, rv, now),
    }
}

fn selectors(request: &Request) -> Result<(Selector, Vec<FieldTerm>), ApiError> {
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

/// The objects of a resource that the request's namespace and selectors
/// let through, as they were at `rv` (now, or a version still in the
/// change window), in their stored form ([`versions::as_served`] turns
/// them into what the resource serves).
fn selected(
    cluster: &Cluster,
    request: &Request,
    resource: &Resource,
    namespace: &Option<String>,
    rv: u64,
) -> Result<Vec<Value>, ApiError> {
    let (labels, fields) = selectors(request)?;
    let mut objects = cluster.objects().list(resource);
    if rv < cluster.history().rv() {
        let mut by_key: BTreeMap<Key, Value> = objects
            .into_iter()
            .map(|o| (key_of(resource.key, &o), o))
            .collect();
        cluster.history().rewind(resource.key, rv, &mut by_key);
        objects = by_key.into_values().collect();
    }
    Ok(objects
        .into_iter()
        .filter(|o| {
            namespace.as_ref().is_none_or(|ns| {
                o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
            })
        })
        .filter(|o| select::labels_match(&labels, o) && select::fields_match(&fields, o))
        .collect())
}

/// Where a list starts: the version it shows and the key after which its
/// page begins.
struct ListStart {
    rv: u64,
    after: Option<(String, String)>,
}

/// The API server's `504 Timeout` for a version it has not reached
/// (apiserver's `watchCache.waitUntilFreshAndBlock`, after its
/// three-second wait: `Too large resource version: N, current: M`, cause
/// `ResourceVersionTooLarge`, retry after one second). Nothing moves the
/// façade's versions while a request is answered, so it answers at once
/// what the wait would end with.
fn too_large(requested: u64, current: u64) -> ApiError {
    ApiError::new(
        504,
        "Timeout",
        format!("Timeout: Too large resource version: {requested}, current: {current}"),
    )
    .with_details(json!({
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }))
}

/// A `ListOptions` the API server refuses before reading anything
/// (apimachinery's `ValidateListOptions`, answered as 422 `Invalid`).
fn invalid_options(detail: &str) -> ApiError {
    ApiError::invalid(format!(
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: {detail}"
    ))
}

/// A continue token: the list's version and the last key it returned
/// (`-1` for a version: continue at the newest, as the token in an
/// expired continuation's 410 does).
fn continue_token(rv: i64, key: &(String, String)) -> String {
    format!("{rv}:{}/{}", key.0, key.1)
}

fn parse_continue(token: &str) -> Option<(i64, (String, String))> {
    let (rv, key) = token.split_once(':')?;
    let (namespace, name) = key.split_once('/')?;
    Some((rv.parse().ok()?, (namespace.to_owned(), name.to_owned())))
}

/// The version a list shows and where its page starts, by the API
/// Concepts' table of `resourceVersion`, `resourceVersionMatch`, `limit`
/// and `continue` ("The ResourceVersion Parameter"): unset or `0`, the
/// newest; a version with `Exact` (or, legacy, with a `limit`), exactly
/// that one; any other version, not older than it. A continuation shows
/// the version of its first page, whatever changed since (apiserver's
/// `TestAPIListChunking`); a version older than the window is `410
/// Expired`, one not reached yet `504` ([`too_large`]).
fn list_start(cluster: &Cluster, request: &Request, limit: usize) -> Result<ListStart, ApiError> {
    let history = cluster.history();
    let (current, oldest) = (history.rv(), history.oldest_rv());
    let rv = request
        .query
        .get("resourceVersion")
        .filter(|v| !v.is_empty());
    let matching = request
        .query
        .get("resourceVersionMatch")
        .filter(|m| !m.is_empty());
    let token = request.query.get("continue").filter(|c| !c.is_empty());
    if let Some(matching) = matching {
        if rv.is_none() {
            return Err(invalid_options(
                "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if token.is_some() {
            return Err(invalid_options(
                "Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if matching != "Exact" && matching != "NotOlderThan" {
            return Err(invalid_options(&format!(
                "Unsupported value: \"{matching}\": supported values: \"Exact\", \"NotOlderThan\", \"\""
            )));
        }
        if matching == "Exact" && rv.is_some_and(|v| v == "0") {
            return Err(invalid_options(
                "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
    }
    if let Some(token) = token {
        if rv.is_some_and(|v| v != "0") {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (from, after) =
            parse_continue(token).ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
        if from == -1 {
            return Ok(ListStart {
                rv: current,
                after: Some(after),
            });
        }
        let from =
            u64::try_from(from).map_err(|_| ApiError::bad_request("invalid continue token"))?;
        if from > current {
            return Err(too_large(from, current));
        }
        if from < oldest {
            // etcd3's `handleCompactedErrorForPaging`: the snapshot is
            // gone; the answer carries a token that continues at the
            // newest version, an inconsistent list the client may accept.
            return Err(ApiError::new(410, "Expired", INCONSISTENT_CONTINUE)
                .with_list_continue(continue_token(-1, &after)));
        }
        return Ok(ListStart {
            rv: from,
            after: Some(after),
        });
    }
    let Some(rv) = rv.filter(|v| *v != "0") else {
        return Ok(ListStart {
            rv: current,
            after: None,
        });
    };
    let rv: u64 = rv
        .parse()
        .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion `{rv}`")))?;
    if rv > current {
        return Err(too_large(rv, current));
    }
    let exact = matching.is_some_and(|m| m == "Exact") || (matching.is_none() && limit > 0);
    if !exact {
        return Ok(ListStart {
            rv: current,
            after: None,
        });
    }
    if rv < oldest {
        return Err(ApiError::new(
            410,
            "Expired",
            "The resourceVersion for the provided list is too old.",
        ));
    }
    Ok(ListStart { rv, after: None })
}

/// etcd3's message for a continuation whose version was compacted.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// A list, paginated by `limit` and `continue` (a token of the first
/// page's resourceVersion and the last key returned), served from the
/// state at that version while it is in the change window.
pub(super) fn list(
    cluster: &Cluster,
    request: &Request,
    resource: &Resource,
    namespace: Option<String>,
) -> ApiResult {
    let limit = match request.query.get("limit") {
        Some(l) => l
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit `{l}`")))?,
        None => 0,
    };
    let start = list_start(cluster, request, limit)?;
    let rv = start.rv;
    if rv == cluster.history().rv()
        && ListCache::serves(resource.kind)
        && !events_v1::converts(resource)
        && !partial::wants_metadata(&request.accept)
    {
        return cached_list(cluster, request, resource, namespace, &start, limit);
    }
    let mut items = selected(cluster, request, resource, &namespace, rv)?;
    if let Some(after) = &start.after {
        items.retain(|o| (text(o, "/metadata/namespace"), text(o, "/metadata/name")) > *after);
    }
    let metadata = page(request, &mut items, limit, rv);
    if table::wants_table(&request.accept) && !partial::wants_metadata(&request.accept) {
        let mut t = table_of(cluster, resource, &items, &rv.to_string());
        t["metadata"] = metadata;
        return Ok(Reply::Json(200, t));
    }
    for item in &mut items {
        versions::as_served(resource, item);
    }
    if partial::wants_metadata(&request.accept) {
        return Ok(Reply::Json(200, partial::list(&items, metadata)));
    }
    Ok(Reply::Json(
        200,
        json!({
            "kind": format!("{}List", resource.kind), "apiVersion": resource.api_version(),
            "metadata": metadata, "items": items,
        }),
    ))
}

/// Cuts a list to its page (`limit`) and returns the list's metadata: its
/// version and, when items are left, the continue token and (for an
/// unfiltered list) how many are left.
fn page<T: Listed>(request: &Request, items: &mut Vec<T>, limit: usize, rv: u64) -> Value {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if limit > 0 && items.len() > limit {
        let remaining = items.len() - limit;
        items.truncate(limit);
        if let Some(last) = items.last().map(Listed::position) {
            metadata["continue"] = json!(continue_token(rv as i64, &last));
        }
        // etcd3 counts what is left only when no selector filters it
        // (`remainingItemCount` is unset for a filtered list).
        let unfiltered = ["labelSelector", "fieldSelector"]
            .iter()
            .all(|k| request.query.get(*k).is_none_or(|v| v.is_empty()));
        if unfiltered {
            metadata["remainingItemCount"] = json!(remaining);
        }
    }
    metadata
}

/// An item of a list: where it sits (namespace, name).
trait Listed {
    fn position(&self) -> (String, String);
}

impl Listed for Value {
    fn position(&self) -> (String, String) {
        (
            text(self, "/metadata/namespace"),
            text(self, "/metadata/name"),
        )
    }
}

impl Listed for Cached<'_> {
    fn position(&self) -> (String, String) {
        self.bare.position()
    }
}

/// A list at the newest version of a kind the cache serves
/// ([`super::cache`]): the same selection, paging and answer as
/// [`list`], spliced from the objects' kept bytes instead of rebuilt.
fn cached_list(
    cluster: &Cluster,
    request: &Request,
    resource: &Resource,
    namespace: Option<String>,
    start: &ListStart,
    limit: usize,
) -> ApiResult {
    let (labels, fields) = selectors(request)?;
    let all_labels = labels.selects_all();
    let mut items: Vec<Cached<'_>> = cluster
        .list_cache()
        .objects(cluster.history(), resource.kind)
        .into_iter()
        .filter(|o| {
            namespace.as_ref().is_none_or(|ns| {
                o.bare
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    == Some(ns)
            })
        })
        .filter(|o| {
            start
                .after
                .as_ref()
                .is_none_or(|after| o.position() > *after)
        })
        .filter(|o| {
            (all_labels || select::labels_match(&labels, o.bare))
                && select::fields_match(&fields, o.bare)
        })
        .collect();
    let metadata = page(request, &mut items, limit, start.rv);
    let metadata = serde_json::to_string(&metadata).unwrap_or_default();
    let body = if table::wants_table(&request.accept) {
        let now = cluster.sim.now();
        let columns = serde_json::to_string(&table::columns(resource.kind)).unwrap_or_default();
        let head = format!(
            r#"{{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{metadata},"columnDefinitions":{columns},"rows":["#
        );
        let cache = cluster.list_cache();
        let rows: Vec<bytes::Bytes> = items
            .iter()
            .map(|o| cache.row(o, now, || table::cells(resource.kind, o.bare, now)))
            .collect();
        cache::splice(head.as_bytes(), rows.iter().map(|r| &r[..]), b"]}")
    } else {
        let head = format!(
            r#"{{"kind":"{}List","apiVersion":"{}","metadata":{metadata},"items":["#,
            resource.kind,
            resource.api_version()
        );
        cache::splice(head.as_bytes(), items.iter().map(|o| &o.json[..]), b"]}")
    };
    Ok(Reply::Raw {
        status: 200,
        media_type: "application/json",
        body,
    })
}

/// Opens a watch: from a resourceVersion, the changes after it still in
/// the window (an older one is a `410` event, then the end); without one,
/// the current objects as `ADDED` (and, with `sendInitialEvents`, a
/// bookmark marking their end). Then every change as it happens.
pub(super) fn watch(
    cluster: &mut Cluster,
    request: &Request,
    resource: &'static Resource,
    namespace: Option<String>,
) -> ApiResult {
    let (labels, fields) = selectors(request)?;
    let (mut watcher, rx) = Watcher::new(WatchFilter {
        resource,
        namespace: namespace.clone(),
        labels,
        fields,
        table: table::wants_table(&request.accept),
        columns: crds::columns_of(&cluster.written, resource),
        bookmarks: request
            .query
            .get("allowWatchBookmarks")
            .is_some_and(|b| b == "true"),
    });
    let timeout = request
        .query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(std::time::Duration::from_secs);
    let from = request
        .query
        .get("resourceVersion")
        .filter(|v| !v.is_empty() && *v != "0");
    let send_initial = request
        .query
        .get("sendInitialEvents")
        .is_some_and(|s| s == "true");
    let protobuf = protobuf_reply::watch_in_protobuf(&request.accept, resource);
    let now = cluster.sim.now();
    let history = cluster.history();
    match from {
        Some(rv) if !send_initial => {
            let rv: u64 = rv
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion `{rv}`")))?;
            if rv > history.rv() {
                // Not reached yet: waited for (see `Watcher::start_after`).
                watcher.start_after(rv);
            } else if rv < history.oldest_rv() {
                let status = status_body(
                    410,
                    "Expired",
                    &format!(
                        "too old resource version: {rv} ({})",
                        history.oldest_rv() + 1
                    ),
                );
                watcher.send_raw("ERROR", status);
                return Ok(Reply::Watch {
                    events: rx,
                    timeout: Some(std::time::Duration::ZERO),
                    protobuf,
                });
            } else {
                for change in history.since(rv) {
                    watcher.send_change(change, now);
                }
            }
        }
        Some(rv) if rv.parse::<u64>().is_ok_and(|rv| rv > history.rv()) => {
            // A watch list (`sendInitialEvents`) from a version the cache
            // has not reached: the API server waits for it
            // (`Cacher.waitUntilWatchCacheFreshAndForceAllEvents`), then
            // ends the watch with the timeout as its ERROR event.
            let rv = rv.parse::<u64>().unwrap_or_default();
            watcher.send_raw("ERROR", too_large(rv, history.rv()).status());
            return Ok(Reply::Watch {
                events: rx,
                timeout: Some(std::time::Duration::ZERO),
                protobuf,
            });
        }
        _ => {
            // No resourceVersion: the current state as ADDED events.
            for object in selected(cluster, request, resource, &namespace, history.rv())? {
                watcher.send_event("ADDED", &object, now);
            }
            if send_initial {
                let object = json!({"kind": resource.kind, "apiVersion": resource.api_version(),
                    "metadata": {"resourceVersion": history.rv().to_string(),
                                 "annotations": {"k8s.io/initial-events-end": "true"}}});
                watcher.send_raw("BOOKMARK", object);
            }
        }
    }
    cluster.add_watcher(watcher);
    Ok(Reply::Watch {
        events: rx,
        timeout,
        protobuf,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::by_kind;
    use crate::testing::{self, cluster, cluster_with_window, get, lines, names, rv_of};

    fn pods() -> &'static Resource {
        by_kind("Pod").expect("pods are served")
    }

    fn listed(cluster: &Cluster, path: &str, namespace: Option<&str>) -> (u16, Value) {
        let reply = list(cluster, &get(path), pods(), namespace.map(str::to_owned));
        match reply {
            Ok(reply) => testing::json(reply),
            Err(e) => testing::json(e.reply()),
        }
    }

    /// Crashes a node and lets ten minutes pass, so its pods fail and
    /// are replaced.
    fn crash(cluster: &mut Cluster, node: &str) {
        let node = cluster.sim.node_id(node).expect("a node");
        cluster.sim.crash_node_api(node);
        cluster.sync();
        let until = cluster.sim.now() + 600_000;
        cluster.advance_to(until);
    }

    #[test]
    fn a_label_selector_and_a_namespace_narrow_a_list() {
        let cluster = cluster();
        let (code, body) = listed(&cluster, "/api/v1/pods?labelSelector=app=api", None);
        assert_eq!(code, 200);
        assert_eq!(body["kind"], "PodList");
        let items = body["items"].as_array().expect("items");
        assert_eq!(names(items), ["apps/api-00000", "apps/api-00001"]);
        let (_, body) = listed(
            &cluster,
            "/api/v1/pods?labelSelector=app!=api",
            Some("apps"),
        );
        let items = body["items"].as_array().expect("items");
        assert_eq!(names(items), ["apps/cache-00000", "apps/cache-00001"]);
        let (code, _) = listed(&cluster, "/api/v1/pods?labelSelector=app in (", None);
        assert_eq!(code, 400);
    }

    #[test]
    fn a_field_selector_narrows_a_list() {
        let cluster = cluster();
        let (_, body) = listed(
            &cluster,
            "/api/v1/pods?fieldSelector=metadata.namespace=kube-system",
            None,
        );
        assert_eq!(body["items"].as_array().map(Vec::len), Some(3));
    }

    #[test]
    fn a_limited_list_continues_where_it_stopped_until_the_window_moves_on() {
        let mut cluster = cluster_with_window(2);
        let (_, first) = listed(&cluster, "/api/v1/pods?limit=3", None);
        assert_eq!(first["items"].as_array().map(Vec::len), Some(3));
        assert_eq!(first["metadata"]["remainingItemCount"], 4);
        let token = first["metadata"]["continue"]
            .as_str()
            .expect("a token")
            .to_owned();
        let (_, rest) = listed(
            &cluster,
            &format!("/api/v1/pods?limit=10&continue={token}"),
            None,
        );
        let rest = rest["items"].as_array().expect("items");
        assert_eq!(names(rest)[0], "apps/cache-00001");
        assert_eq!(rest.len(), 4);
        let (code, _) = listed(&cluster, "/api/v1/pods?continue=nonsense", None);
        assert_eq!(code, 400);
        crash(&mut cluster, "prod-worker-1");
        let (code, body) = listed(&cluster, &format!("/api/v1/pods?continue={token}"), None);
        assert_eq!((code, body["reason"].as_str()), (410, Some("Expired")));
    }

    fn token_of(page: &Value) -> String {
        page["metadata"]["continue"]
            .as_str()
            .expect("a continue token")
            .to_owned()
    }

    /// API Concepts, "Retrieving large results sets in chunks", and
    /// apiserver's `TestAPIListChunking`: every page shows the first
    /// page's version, and what changed between pages is not shown.
    /// Control: a list without the token shows the change.
    #[test]
    fn a_continued_list_is_the_snapshot_of_its_first_page() {
        let mut cluster = cluster();
        let (_, whole) = listed(&cluster, "/api/v1/pods", None);
        let at = whole["metadata"]["resourceVersion"].clone();
        let (_, first) = listed(&cluster, "/api/v1/pods?limit=2", None);
        assert_eq!(first["metadata"]["resourceVersion"], at);
        crash(&mut cluster, "prod-worker-1");
        crash(&mut cluster, "prod-worker-2");
        let (_, now) = listed(&cluster, "/api/v1/pods", None);
        assert_ne!(now["items"], whole["items"], "the crashes changed the pods");
        let (code, rest) = listed(
            &cluster,
            &format!("/api/v1/pods?limit=100&continue={}", token_of(&first)),
            None,
        );
        assert_eq!(code, 200, "{rest}");
        assert_eq!(rest["metadata"]["resourceVersion"], at);
        assert!(rest["metadata"].get("continue").is_none());
        let mut paged = first["items"].as_array().expect("items").clone();
        paged.extend(rest["items"].as_array().expect("items").iter().cloned());
        assert_eq!(paged, *whole["items"].as_array().expect("items"));
    }

    /// API Concepts, "Unavailable resource versions", as apiserver's
    /// `watchCache.waitUntilFreshAndBlock` answers: a list at a version
    /// not reached is 504 `Timeout` with a `ResourceVersionTooLarge`
    /// cause; paired with the current version, which lists.
    #[test]
    fn a_list_at_a_version_not_reached_is_a_timeout_with_its_cause() {
        let cluster = cluster();
        let current = cluster.history().rv();
        let (code, body) = listed(
            &cluster,
            &format!("/api/v1/pods?resourceVersion={}", current + 5),
            None,
        );
        assert_eq!((code, body["reason"].as_str()), (504, Some("Timeout")));
        assert_eq!(
            body["message"],
            format!(
                "Timeout: Too large resource version: {}, current: {current}",
                current + 5
            )
        );
        assert_eq!(
            body["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
        assert_eq!(body["details"]["retryAfterSeconds"], 1);
        for query in ["", "&resourceVersionMatch=Exact", "&limit=2"] {
            let (code, body) = listed(
                &cluster,
                &format!("/api/v1/pods?resourceVersion={current}{query}"),
                None,
            );
            assert_eq!(code, 200, "{query}: {body}");
        }
    }

    /// API Concepts, "The ResourceVersion Parameter" (apiserver's
    /// `TestListOptions`): `Exact` (or legacy: a `limit`) lists at that
    /// version, `NotOlderThan` (or nothing) the newest; an exact version
    /// older than the window is 410 "too old".
    #[test]
    fn an_exact_list_shows_its_version_and_not_older_than_shows_the_newest() {
        let mut cluster = cluster();
        let (_, then) = listed(&cluster, "/api/v1/pods", None);
        let at = rv_of(&then);
        crash(&mut cluster, "prod-worker-1");
        let (_, now) = listed(&cluster, "/api/v1/pods", None);
        let at_now = rv_of(&now);
        assert!(at_now > at);
        assert!(at >= cluster.history().oldest_rv(), "still in the window");
        for query in ["resourceVersionMatch=Exact", "limit=100"] {
            let (_, exact) = listed(
                &cluster,
                &format!("/api/v1/pods?resourceVersion={at}&{query}"),
                None,
            );
            assert_eq!(rv_of(&exact), at, "{query}");
            assert_eq!(exact["items"], then["items"], "{query}");
        }
        for query in ["resourceVersionMatch=NotOlderThan", "x=y"] {
            let (_, newest) = listed(
                &cluster,
                &format!("/api/v1/pods?resourceVersion={at}&{query}"),
                None,
            );
            assert_eq!(rv_of(&newest), at_now, "{query}");
            assert_eq!(newest["items"], now["items"], "{query}");
        }
        // A window of two changes: a version is soon older than it.
        let mut cluster = cluster_with_window(2);
        let at = cluster.history().rv();
        crash(&mut cluster, "prod-worker-2");
        assert!(
            at < cluster.history().oldest_rv(),
            "the window moved past it"
        );
        let (code, body) = listed(
            &cluster,
            &format!("/api/v1/pods?resourceVersion={at}&resourceVersionMatch=Exact"),
            None,
        );
        assert_eq!((code, body["reason"].as_str()), (410, Some("Expired")));
        assert_eq!(
            body["message"],
            "The resourceVersion for the provided list is too old."
        );
    }

    /// etcd3's `handleCompactedErrorForPaging`: a continuation whose
    /// version left the window is 410 with a token that continues at the
    /// newest version, inconsistently; that token lists the rest.
    #[test]
    fn an_expired_continuation_offers_an_inconsistent_token() {
        let mut cluster = cluster_with_window(2);
        let (_, first) = listed(&cluster, "/api/v1/pods?limit=3", None);
        crash(&mut cluster, "prod-worker-1");
        let (code, gone) = listed(
            &cluster,
            &format!("/api/v1/pods?limit=3&continue={}", token_of(&first)),
            None,
        );
        assert_eq!((code, gone["reason"].as_str()), (410, Some("Expired")));
        assert!(
            gone["message"].as_str().is_some_and(|m| m
                .contains("Continuing with the provided token results in an inconsistent list")),
            "{gone}"
        );
        let inconsistent = token_of(&gone);
        assert!(inconsistent.starts_with("-1:"), "{inconsistent}");
        let (code, rest) = listed(
            &cluster,
            &format!("/api/v1/pods?limit=100&continue={inconsistent}"),
            None,
        );
        assert_eq!(code, 200);
        assert_eq!(rv_of(&rest), cluster.history().rv(), "the newest version");
        let last_first = names(first["items"].as_array().expect("items")).pop();
        let rest_names = names(rest["items"].as_array().expect("items"));
        assert!(
            rest_names.iter().all(|n| Some(n) > last_first.as_ref()),
            "{rest_names:?} after {last_first:?}"
        );
    }

    /// apimachinery's `ValidateListOptions` (422) and etcd3's `GetList`
    /// (400 for a version beside a continue token); each paired with the
    /// same request made valid.
    #[test]
    fn list_options_the_api_server_refuses_are_refused_with_its_words() {
        let cluster = cluster();
        let rv = cluster.history().rv();
        let (_, first) = listed(&cluster, "/api/v1/pods?limit=2", None);
        let token = token_of(&first);
        let cases: [(String, u16, &str, String); 4] = [
            (
                "resourceVersionMatch=Exact".to_owned(),
                422,
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
                format!("resourceVersionMatch=Exact&resourceVersion={rv}"),
            ),
            (
                "resourceVersionMatch=Exact&resourceVersion=0".to_owned(),
                422,
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                "resourceVersionMatch=NotOlderThan&resourceVersion=0".to_owned(),
            ),
            (
                format!("resourceVersionMatch=Newest&resourceVersion={rv}"),
                422,
                "Unsupported value: \"Newest\"",
                format!("resourceVersionMatch=NotOlderThan&resourceVersion={rv}"),
            ),
            (
                format!("continue={token}&resourceVersion={rv}"),
                400,
                "specifying resource version is not allowed when using continue",
                format!("continue={token}&resourceVersion=0"),
            ),
        ];
        for (bad, code, message, good) in cases {
            let (got, body) = listed(&cluster, &format!("/api/v1/pods?{bad}"), None);
            assert_eq!(got, code, "{bad}: {body}");
            assert!(
                body["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(message)),
                "{bad}: {body}"
            );
            let (got, body) = listed(&cluster, &format!("/api/v1/pods?{good}"), None);
            assert_eq!(got, 200, "{good}: {body}");
        }
    }

    /// API Concepts: "Watch requests for an unrecognized resource version
    /// may wait indefinitely"; apiserver's `cacheWatcher.process` sends
    /// only events newer than the watch's version. Control: the same
    /// changes reach a watch from the current version.
    #[test]
    fn a_watch_at_a_version_not_reached_waits_for_it() {
        let mut cluster = cluster();
        let current = cluster.history().rv();
        let future = current + 3;
        let (mut waiting, _) = testing::watch(
            watch(
                &mut cluster,
                &get(&format!("/api/v1/pods?watch=true&resourceVersion={future}")),
                pods(),
                None,
            )
            .expect("a watch"),
        );
        let (mut now, _) = testing::watch(
            watch(
                &mut cluster,
                &get(&format!(
                    "/api/v1/pods?watch=true&resourceVersion={current}"
                )),
                pods(),
                None,
            )
            .expect("a watch"),
        );
        assert!(lines(&mut waiting).is_empty(), "nothing before the version");
        crash(&mut cluster, "prod-worker-1");
        let all: Vec<u64> = lines(&mut now)
            .iter()
            .map(|l| rv_of(&l["object"]))
            .collect();
        let after: Vec<u64> = lines(&mut waiting)
            .iter()
            .map(|l| rv_of(&l["object"]))
            .collect();
        assert!(all.iter().any(|rv| *rv <= future), "{all:?}");
        let expected: Vec<u64> = all.into_iter().filter(|rv| *rv > future).collect();
        assert!(!expected.is_empty());
        assert_eq!(after, expected);
    }

    /// apiserver's `Cacher.Watch` for a watch list (`sendInitialEvents`)
    /// at a version not reached: an ERROR event with the 504, then the
    /// end. Control: at the current version it lists and stays open.
    #[test]
    fn a_watch_list_at_a_version_not_reached_ends_with_a_timeout() {
        let mut cluster = cluster();
        let current = cluster.history().rv();
        let path = |rv: u64| {
            get(&format!(
                "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={rv}"
            ))
        };
        let (mut events, timeout) =
            testing::watch(watch(&mut cluster, &path(current + 1), pods(), None).expect("a watch"));
        assert_eq!(timeout, Some(std::time::Duration::ZERO));
        let seen = lines(&mut events);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0]["type"], "ERROR");
        assert_eq!(seen[0]["object"]["code"], 504);
        assert_eq!(
            seen[0]["object"]["details"]["causes"][0]["reason"],
            "ResourceVersionTooLarge"
        );
        let (mut events, timeout) =
            testing::watch(watch(&mut cluster, &path(current), pods(), None).expect("a watch"));
        assert_eq!(timeout, None);
        assert_eq!(
            lines(&mut events).last().map(|l| l["type"].clone()),
            Some(json!("BOOKMARK"))
        );
    }

    #[test]
    fn a_table_list_has_one_row_an_object() {
        let cluster = cluster();
        let mut request = get("/api/v1/pods");
        request.accept = "application/json;as=Table;v=v1;g=meta.k8s.io".to_owned();
        let (_, body) = testing::json(list(&cluster, &request, pods(), None).expect("a list"));
        assert_eq!(body["kind"], "Table");
        assert_eq!(body["rows"].as_array().map(Vec::len), Some(7));
        assert_eq!(
            body["metadata"]["resourceVersion"],
            cluster.history().rv().to_string()
        );
    }

    #[test]
    fn a_watch_from_a_version_sees_exactly_the_changes_after_it() {
        let mut cluster = cluster();
        let from = cluster.history().rv();
        crash(&mut cluster, "prod-worker-1");
        let expected: Vec<u64> = cluster
            .history()
            .since(from)
            .filter(|c| c.kind == "Pod")
            .map(|c| c.rv)
            .collect();
        assert!(!expected.is_empty(), "a crash changes its pods");
        let request = get(&format!("/api/v1/pods?watch=true&resourceVersion={from}"));
        let (mut events, timeout) =
            testing::watch(watch(&mut cluster, &request, pods(), None).expect("a watch"));
        assert_eq!(timeout, None);
        let seen: Vec<u64> = lines(&mut events)
            .iter()
            .map(|l| rv_of(&l["object"]))
            .collect();
        assert_eq!(seen, expected);
        // The watch stays open: the next change reaches it.
        crash(&mut cluster, "prod-worker-2");
        let next = lines(&mut events);
        assert!(!next.is_empty());
        assert!(next.iter().all(|l| rv_of(&l["object"]) > from));
    }

    #[test]
    fn a_watch_from_a_version_older_than_the_window_ends_with_410() {
        let mut cluster = cluster_with_window(2);
        let request = get("/api/v1/pods?watch=true&resourceVersion=1");
        let (mut events, timeout) =
            testing::watch(watch(&mut cluster, &request, pods(), None).expect("a watch"));
        assert_eq!(timeout, Some(std::time::Duration::ZERO));
        let seen = lines(&mut events);
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0]["type"], "ERROR");
        assert_eq!(seen[0]["object"]["code"], 410);
        let oldest = cluster.history().oldest_rv();
        assert_eq!(
            seen[0]["object"]["message"],
            format!("too old resource version: 1 ({})", oldest + 1)
        );
    }

    #[test]
    fn a_watch_without_a_version_starts_with_the_current_objects() {
        let mut cluster = cluster();
        let request = get(
            "/api/v1/pods?watch=true&labelSelector=app=cache&sendInitialEvents=true&timeoutSeconds=5",
        );
        let (mut events, timeout) = testing::watch(
            watch(&mut cluster, &request, pods(), Some("apps".to_owned())).expect("a watch"),
        );
        assert_eq!(timeout, Some(std::time::Duration::from_secs(5)));
        let seen = lines(&mut events);
        let types: Vec<&str> = seen.iter().filter_map(|l| l["type"].as_str()).collect();
        assert_eq!(types, ["ADDED", "ADDED", "BOOKMARK"]);
        assert_eq!(
            seen[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
        let bad = get("/api/v1/pods?watch=true&resourceVersion=abc");
        assert!(watch(&mut cluster, &bad, pods(), None).is_err());
    }

    #[test]
    fn a_metadata_only_list_carries_no_spec() {
        let cluster = cluster();
        let mut request = get("/api/v1/pods");
        request.accept =
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1".to_owned();
        let (_, body) = testing::json(list(&cluster, &request, pods(), None).expect("a list"));
        assert_eq!(body["kind"], "PartialObjectMetadataList");
        let items = body["items"].as_array().expect("items");
        assert_eq!(items.len(), 7);
        assert!(
            items
                .iter()
                .all(|i| i.get("spec").is_none() && i["metadata"]["name"].is_string())
        );
        // Control: the plain list of the same pods carries their specs.
        let (_, plain) =
            testing::json(list(&cluster, &get("/api/v1/pods"), pods(), None).expect("a list"));
        assert!(plain["items"][0]["spec"].is_object());
    }

    #[test]
    fn one_object_is_a_table_when_asked_for_one() {
        let cluster = cluster();
        let object = cluster
            .view("Pod", "apps", "api-00000", false)
            .expect("a pod");
        let (_, plain) = testing::json(single(&cluster, &get("/"), pods(), object.clone()));
        assert_eq!(plain, object);
        let mut request = get("/");
        request.accept = "application/json;as=Table;v=v1;g=meta.k8s.io".to_owned();
        let (_, table) = testing::json(single(&cluster, &request, pods(), object));
        assert_eq!(table["kind"], "Table");
    }
}
