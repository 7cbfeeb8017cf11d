//! The read path: get, list (with selectors, pagination and server-side
//! tables) and watch.

use kube::core::Selector;
use serde_json::{Value, json};

use super::api::{ApiError, ApiResult, Reply, Request, status_body};
use super::cluster::Cluster;
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
    if table::wants_table(&request.accept) {
        let rv = cluster.history().rv().to_string();
        Reply::Json(
            200,
            table::table(resource.kind, &[object], &rv, cluster.sim.now),
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
    if table::wants_table(&request.accept) {
        let mut t = table::table(resource.kind, &items, &rv.to_string(), cluster.sim.now);
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
    let now = cluster.sim.now;
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
