//! kube-rs against `bench sim serve`'s resourceVersions, as the API
//! Concepts page ("Resource Versions", "Efficient detection of changes",
//! "Retrieving large results sets in chunks") describes them: a paged
//! list is one snapshot whatever changes between its pages; a list at a
//! version the server has not reached is a 504 the client can recognise;
//! a watch at such a version waits for it.

use crate::serve_kube_rs;

use std::time::Duration;

use drillbench_serve::Server;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, VersionMatch, WatchEvent, WatchParams};

/// The served simulator and client of the kube-rs façade tests.
fn start() -> (Server, kube::Client) {
    serve_kube_rs::start(&serve_kube_rs::drill())
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter()
        .map(|p| {
            format!(
                "{}/{}",
                p.metadata.namespace.as_deref().unwrap_or_default(),
                p.metadata.name.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

/// A node crashed and ten minutes passed: its pods are replaced.
async fn disturb(client: &kube::Client, node: &str) {
    serve_kube_rs::bench_post(client, &format!("/bench/v1/crash?node={node}")).await;
    serve_kube_rs::bench_post(client, "/bench/v1/advance?by=10m").await;
}

/// apiserver's `TestAPIListChunking`: pages after a change still show
/// the first page's version and its objects. Control: a list without the
/// token, after the same change, shows other pods.
#[tokio::test]
async fn a_paged_list_is_one_snapshot_while_pods_change_between_pages() {
    let (server, client) = start();
    serve_kube_rs::bench_post(&client, "/bench/v1/advance?by=2m").await;
    let pods: Api<Pod> = Api::all(client.clone());
    let whole = pods.list(&ListParams::default()).await.expect("list");
    let mut params = ListParams::default().limit(2);
    let first = pods.list(&params).await.expect("first page");
    assert_eq!(
        first.metadata.resource_version,
        whole.metadata.resource_version
    );
    let mut paged = first.items.clone();
    let mut token = first.metadata.continue_.clone();
    disturb(&client, "prod-worker-1").await;
    disturb(&client, "prod-worker-2").await;
    while let Some(next) = token.filter(|t| !t.is_empty()) {
        params = params.continue_token(&next);
        let page = pods.list(&params).await.expect("a page");
        assert_eq!(
            page.metadata.resource_version,
            whole.metadata.resource_version
        );
        paged.extend(page.items);
        token = page.metadata.continue_;
    }
    assert_eq!(names(&paged), names(&whole.items));
    let now = pods.list(&ListParams::default()).await.expect("list");
    assert_ne!(
        names(&now.items),
        names(&whole.items),
        "the crashes moved pods"
    );
    assert_ne!(
        now.metadata.resource_version,
        whole.metadata.resource_version
    );
    server.stop();
}

/// API Concepts, "Unavailable resource versions": a list at a version
/// not reached is a 504 `Timeout` with a `ResourceVersionTooLarge` cause
/// (what client-go's reflector looks for to fall back to a fresh list).
/// A watch at that version waits and then sends only what comes after
/// it. Control: a list at the current version answers.
#[tokio::test]
async fn a_version_not_reached_is_a_timeout_to_list_and_a_wait_to_watch() {
    let (server, client) = start();
    serve_kube_rs::bench_post(&client, "/bench/v1/advance?by=2m").await;
    let pods: Api<Pod> = Api::all(client.clone());
    let current: u64 = pods
        .list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .and_then(|v| v.parse().ok())
        .expect("a numeric version");
    let future = (current + 3).to_string();
    let error = pods
        .list(
            &ListParams::default()
                .at(&future)
                .matching(VersionMatch::NotOlderThan),
        )
        .await
        .expect_err("a version not reached");
    let kube::Error::Api(status) = error else {
        panic!("not an API error: {error}");
    };
    assert_eq!((status.code, status.reason.as_str()), (504, "Timeout"));
    let causes = status.details.map(|d| d.causes).unwrap_or_default();
    assert_eq!(
        causes.first().map(|c| c.reason.as_str()),
        Some("ResourceVersionTooLarge")
    );
    pods.list(
        &ListParams::default()
            .at(&current.to_string())
            .matching(VersionMatch::NotOlderThan),
    )
    .await
    .expect("the current version lists");

    let mut events = pods
        .watch(&WatchParams::default().timeout(60), &future)
        .await
        .expect("a watch")
        .boxed();
    disturb(&client, "prod-worker-1").await;
    let first = tokio::time::timeout(Duration::from_secs(30), events.next())
        .await
        .expect("an event once the version is passed")
        .expect("the stream continues")
        .expect("no error");
    let rv = match first {
        WatchEvent::Added(p) | WatchEvent::Modified(p) | WatchEvent::Deleted(p) => p
            .metadata
            .resource_version
            .and_then(|v| v.parse::<u64>().ok())
            .expect("a version"),
        other => panic!("unexpected {other:?}"),
    };
    assert!(
        rv > current + 3,
        "{rv}: only changes after the version waited for"
    );
    drop(events);
    server.stop();
}
