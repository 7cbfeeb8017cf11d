//! kube-rs against `bench sim serve`: a `watcher` over pods sees exactly
//! the pod events the simulator's timeline records for the same seed and
//! the same operations, and the API's errors are Kubernetes `Status`
//! objects with the codes clients act on.

use crate::common;

use std::time::Duration;

use drillbench_model::drill::Drill;
use drillbench_observe::EventKind;
use drillbench_serve::{Clock, ServeOptions, Server};
use drillbench_sim::Simulation;
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, EvictParams, PostParams};
use kube::runtime::watcher::{self, Event};

const SEED: u64 = 7;

pub(crate) fn drill() -> Drill {
    Drill::load(&common::root().join("harness/serve/serve.yaml"))
        .unwrap_or_else(|d| panic!("{}", d.render(false)))
}

pub(crate) fn start(drill: &Drill) -> (Server, kube::Client) {
    let server = Server::start(
        drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: None,
            clock: Clock::Step,
            seed: SEED,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts");
    let mut config = server.client_config();
    // kube retries a 429 up to 15 times with backoff; these tests want to
    // see the refusal itself.
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    (server, client)
}

pub(crate) async fn bench_post(client: &kube::Client, path: &str) {
    let request = http::Request::post(path).body(Vec::new()).expect("request");
    client.request_text(request).await.expect(path);
}

fn key(pod: &Pod) -> String {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
}

#[tokio::test]
async fn a_pod_watcher_sees_the_simulators_timeline() {
    let drill = drill();
    let (server, client) = start(&drill);
    let pods: Api<Pod> = Api::all(client.clone());
    let mut stream = watcher::watcher(pods, watcher::Config::default()).boxed();

    let mut listed = Vec::new();
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .expect("the initial list arrives")
            .expect("the stream continues")
            .expect("no watch error");
        match event {
            Event::Init => {}
            Event::InitApply(pod) => listed.push(key(&pod)),
            Event::InitDone => break,
            other => panic!("unexpected event before the initial list ended: {other:?}"),
        }
    }

    // The same drill and seed, driven directly: what the timeline records.
    let mut sim = Simulation::new(&drill, SEED).expect("simulation");
    let mut expected_listed: Vec<String> = sim
        .pods()
        .iter()
        .filter(|p| p.phase != drillbench_sim::world::PodPhase::Gone)
        .map(|p| p.key())
        .collect();
    expected_listed.sort();
    listed.sort();
    assert_eq!(
        listed, expected_listed,
        "the initial list is the simulator's pods"
    );
    let from = sim.observation().events.len();
    let victim = "prod-worker-2";
    let node = sim.node_id(victim).expect("node");
    sim.crash_node_api(node);
    for minute in 1..=8 {
        sim.advance_to(minute * 60_000);
    }
    let expected: Vec<(&str, String)> = sim.observation().events[from..]
        .iter()
        .filter(|e| e.object.kind == "Pod")
        .map(|e| {
            let kind = if e.kind == EventKind::PodDeleted {
                "delete"
            } else {
                "apply"
            };
            (kind, format!("{}/{}", e.object.namespace, e.object.name))
        })
        .collect();
    assert!(
        expected
            .iter()
            .any(|(_, p)| p.contains("cache-") || p.contains("api-")),
        "the crash must affect pods: {expected:?}"
    );

    // The same operations through the API.
    bench_post(&client, &format!("/bench/v1/crash?node={victim}")).await;
    for _ in 0..8 {
        bench_post(&client, "/bench/v1/advance?by=1m").await;
    }
    let mut seen = Vec::new();
    while seen.len() < expected.len() {
        let event = tokio::time::timeout(Duration::from_secs(30), stream.next())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "only {} of {} events arrived: {seen:?}",
                    seen.len(),
                    expected.len()
                )
            })
            .expect("the stream continues")
            .expect("no watch error");
        match event {
            Event::Apply(pod) => seen.push(("apply", key(&pod))),
            Event::Delete(pod) => seen.push(("delete", key(&pod))),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(seen, expected);
    // Nothing more: the next event would be a surprise.
    let extra = tokio::time::timeout(Duration::from_millis(500), stream.next()).await;
    assert!(extra.is_err(), "an extra event arrived: {extra:?}");
    drop(stream);
    server.stop();
}

fn code(error: kube::Error) -> u16 {
    match error {
        kube::Error::Api(status) => status.code,
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn errors_are_kubernetes_status_objects() {
    let (server, client) = start(&drill());
    bench_post(&client, "/bench/v1/advance?by=2m").await;
    let nodes: Api<Node> = Api::all(client.clone());
    assert_eq!(code(nodes.get("no-such-node").await.expect_err("404")), 404);

    // A stale resourceVersion is a conflict.
    let mut node = nodes.get("prod-worker-1").await.expect("node");
    node.metadata.resource_version = Some("1".to_owned());
    let conflict = nodes
        .replace("prod-worker-1", &PostParams::default(), &node)
        .await
        .expect_err("409");
    assert_eq!(code(conflict), 409);

    // An object without a name is invalid.
    let pods: Api<Pod> = Api::namespaced(client.clone(), "apps");
    let nameless: Pod = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"containers": []}
    }))
    .expect("pod");
    assert_eq!(
        code(
            pods.create(&PostParams::default(), &nameless)
                .await
                .expect_err("422")
        ),
        422
    );

    // An eviction the budget refuses is a 429.
    let api_pod = pods
        .list(&kube::api::ListParams::default().labels("app=api"))
        .await
        .expect("list")
        .items
        .into_iter()
        .next()
        .expect("an api pod");
    let name = api_pod.metadata.name.expect("name");
    assert_eq!(
        code(
            pods.evict(&name, &EvictParams::default())
                .await
                .expect_err("429")
        ),
        429
    );

    // Paging: limit and continue walk every pod once.
    let all: Api<Pod> = Api::all(client.clone());
    let whole = all
        .list(&Default::default())
        .await
        .expect("list")
        .items
        .len();
    let mut paged = 0;
    let mut params = kube::api::ListParams::default().limit(2);
    loop {
        let page = all.list(&params).await.expect("page");
        paged += page.items.len();
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(paged, whole);
    // A malformed selector is a 400, not a crash.
    let bad = all
        .list(&kube::api::ListParams::default().labels("app in web"))
        .await
        .expect_err("400");
    assert_eq!(code(bad), 400);
    server.stop();
}
