//! The read path: get, list (with selectors, pagination and server-side
//! tables) and watch.

use kube::core::Selector;
use serde_json::{Value, json};

use super::api::{ApiError, ApiResult, Reply, Request, status_body};
use super::cluster::Cluster;
use super::partial;
use super::resources::Resource;
use super::select::{self, FieldTerm};
use super::table;
use super::watch::{WatchFilter, Watcher};

/// One object, or its one-row Table when the client asked for tables.
pub(super) fn single(
    cluster: &Cluster,
    request: &Request,
    resource: &Resource,
    object: Value,
) -> Reply {
    if partial::wants_metadata(&request.accept) {
        return Reply::Json(200, partial::object(&object));
    }
    if table::wants_table(&request.accept) {
        let rv = cluster.history().rv().to_string();
        Reply::Json(
            200,
            table::table(resource.kind, &[object], &rv, cluster.sim.now()),
        )
    } else {
        Reply::Json(200, object)
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
/// let through.
fn selected(
    cluster: &Cluster,
    request: &Request,
    resource: &Resource,
    namespace: &Option<String>,
) -> Result<Vec<Value>, ApiError> {
    let (labels, fields) = selectors(request)?;
    Ok(cluster
        .objects()
        .list(resource)
        .into_iter()
        .filter(|o| {
            namespace.as_ref().is_none_or(|ns| {
                o.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
            })
        })
        .filter(|o| select::labels_match(&labels, o) && select::fields_match(&fields, o))
        .collect())
}

/// A list, paginated by `limit` and `continue` (a token of the list's
/// resourceVersion and the offset, valid while that version is in the
/// change window).
pub(super) fn list(
    cluster: &Cluster,
    request: &Request,
    resource: &Resource,
    namespace: Option<String>,
) -> ApiResult {
    let rv = cluster.history().rv();
    let mut items = selected(cluster, request, resource, &namespace)?;
    let offset = match request.query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => {
            let (from, offset) = token
                .split_once(':')
                .and_then(|(rv, o)| Some((rv.parse::<u64>().ok()?, o.parse::<usize>().ok()?)))
                .ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
            if from < cluster.history().oldest_rv() {
                return Err(ApiError::new(
                    410,
                    "Expired",
                    "the provided continue parameter is too old to display a consistent list result",
                ));
            }
            offset
        }
        None => 0,
    };
    let limit = match request.query.get("limit") {
        Some(l) => l
            .parse::<usize>()
            .map_err(|_| ApiError::bad_request(format!("invalid limit `{l}`")))?,
        None => 0,
    };
    let total = items.len();
    items = items.into_iter().skip(offset).collect();
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if limit > 0 && items.len() > limit {
        items.truncate(limit);
        let next = offset + limit;
        metadata["continue"] = json!(format!("{rv}:{next}"));
        metadata["remainingItemCount"] = json!(total - next);
    }
    if partial::wants_metadata(&request.accept) {
        return Ok(Reply::Json(200, partial::list(&items, metadata)));
    }
    if table::wants_table(&request.accept) {
        let mut t = table::table(resource.kind, &items, &rv.to_string(), cluster.sim.now());
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
    let (watcher, rx) = Watcher::new(WatchFilter {
        resource,
        namespace: namespace.clone(),
        labels,
        fields,
        table: table::wants_table(&request.accept),
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
    let now = cluster.sim.now();
    let history = cluster.history();
    match from {
        Some(rv) if !send_initial => {
            let rv: u64 = rv
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion `{rv}`")))?;
            if rv < history.oldest_rv() {
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
                });
            }
            for change in history.since(rv) {
                watcher.send_change(change, now);
            }
        }
        _ => {
            // No resourceVersion: the current state as ADDED events.
            for object in selected(cluster, request, resource, &namespace)? {
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
