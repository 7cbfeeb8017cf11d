//! The watches on every kind the observer reads, merged into one stream,
//! and what they delivered so far: each kind's newest resourceVersion and
//! whether its first list is in.
//!
//! A watch that breaks re-lists its kind; what was deleted while it was
//! down is what the re-list no longer holds. Each watch keeps its objects
//! in a kube-runtime reflector store, which swaps in a complete list only
//! at its end (`InitDone`): the objects the store held before the swap and
//! not after are delivered as deleted, with their last known state, so an
//! object is recognised by its API identity (namespace and name), not by
//! the name the drill gives it.

use std::collections::{BTreeMap, BTreeSet};

use futures::StreamExt;
use futures::stream::{BoxStream, SelectAll};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::reflector::Lookup;
use kube::runtime::reflector::store::Writer;
use kube::runtime::{WatchStreamExt, watcher};

use super::observer::{Change, Object, Observer};
use drillbench_observe::Time;

/// One event of a watch on `K`, tagged with its kind.
type Watched<K = Object> = (&'static str, Result<watcher::Event<K>, watcher::Error>);

/// What a watch delivers once its re-lists are reconciled.
#[derive(Debug)]
pub(super) enum Delivery {
    /// Created or changed, or listed.
    Applied(Object),
    Deleted(Object),
    /// A list began.
    Listing,
    /// A list is complete; `gone` are the objects the watch held before it
    /// that it no longer holds, in the order of their keys.
    Listed {
        gone: Vec<Object>,
    },
}

pub(super) type Delivered = (&'static str, Result<Delivery, watcher::Error>);

trait Watchable:
    kube::Resource<DynamicType = ()>
    + Clone
    + serde::de::DeserializeOwned
    + std::fmt::Debug
    + Send
    + Sync
    + 'static
{
}

impl<K> Watchable for K where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static
{
}

fn watch<K: Watchable>(
    client: &kube::Client,
    kind: &'static str,
    wrap: fn(K) -> Object,
    may_be_unserved: bool,
) -> BoxStream<'static, Delivered> {
    let api: Api<K> = Api::all(client.clone());
    // Without a backoff a watch that fails at once (an API server that
    // refuses) is retried in a tight loop.
    let events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .map(move |event| (kind, event))
        .boxed();
    let events = if may_be_unserved {
        optional(events)
    } else {
        events
    };
    reconciled(events, wrap)
}

/// `namespace/name`, or `name` for a cluster-scoped object: the order of
/// the objects a re-list no longer holds.
fn key<K: kube::Resource>(object: &K) -> String {
    let name = ResourceExt::name_any(object);
    match ResourceExt::namespace(object) {
        Some(namespace) => format!("{namespace}/{name}"),
        None => name,
    }
}

/// A watch's events as [`Delivery`]s, its objects kept in a reflector
/// store so a list's end says which of them the list no longer holds.
fn reconciled<K: Watchable>(
    events: BoxStream<'static, Watched<K>>,
    wrap: fn(K) -> Object,
) -> BoxStream<'static, Delivered> {
    let mut writer: Writer<K> = Writer::default();
    let store = writer.as_reader();
    events
        .map(move |(kind, event)| {
            let delivery = event.map(|event| {
                // Until the list's end the store holds what the watch held
                // before it; the end swaps the list in.
                let held = matches!(event, watcher::Event::InitDone).then(|| store.state());
                writer.apply_watcher_event(&event);
                match event {
                    watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                        Delivery::Applied(wrap(o))
                    }
                    watcher::Event::Delete(o) => Delivery::Deleted(wrap(o)),
                    watcher::Event::Init => Delivery::Listing,
                    watcher::Event::InitDone => {
                        let mut gone: Vec<(String, Object)> = held
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|o| store.get(&o.to_object_ref(())).is_none())
                            .map(|o| (key(o.as_ref()), wrap(K::clone(&o))))
                            .collect();
                        gone.sort_by(|a, b| a.0.cmp(&b.0));
                        Delivery::Listed {
                            gone: gone.into_iter().map(|(_, o)| o).collect(),
                        }
                    }
                }
            });
            (kind, delivery)
        })
        .boxed()
}

pub(super) const WATCHED: [&str; 10] = [
    "Node",
    "Pod",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "VolumeAttachment",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "PodDisruptionBudget",
];

/// A watch of a kind the cluster may not serve: a 404 on its initial list
/// reads as an empty list and ends the watch, so the kind counts as caught
/// up (the observer then falls back to what the other kinds show) instead
/// of holding the backend's sync until its deadline. Any other error is
/// left to the watcher's retries: a kind served but forbidden must not
/// pass for an empty one.
fn optional<K: Send + 'static>(
    stream: BoxStream<'static, Watched<K>>,
) -> BoxStream<'static, Watched<K>> {
    stream
        .flat_map(|(kind, event)| {
            let unserved = matches!(
                &event,
                Err(watcher::Error::InitialListFailed(kube::Error::Api(status)))
                    if status.code == 404
            );
            let items = if unserved {
                vec![
                    Some((kind, Ok(watcher::Event::Init))),
                    Some((kind, Ok(watcher::Event::InitDone))),
                    None,
                ]
            } else {
                vec![Some((kind, event))]
            };
            futures::stream::iter(items)
        })
        .take_while(|item| futures::future::ready(item.is_some()))
        .filter_map(futures::future::ready)
        .boxed()
}

/// The newest timestamp an event's object carries, if it carries one.
pub(super) fn stamp(delivery: &Result<Delivery, watcher::Error>) -> Option<jiff::Timestamp> {
    match delivery {
        Ok(Delivery::Applied(o) | Delivery::Deleted(o)) => o.newest_timestamp(),
        _ => None,
    }
}

pub(super) struct Watches {
    streams: SelectAll<BoxStream<'static, Delivered>>,
    /// The newest resourceVersion delivered of each kind.
    seen: BTreeMap<&'static str, u64>,
    /// The kinds whose first list is in.
    initialized: BTreeSet<&'static str>,
    /// The newest error a watch reported, for when they do not catch up.
    error: Option<String>,
}

impl Watches {
    /// Starts a watch on every kind in [`WATCHED`].
    pub(super) fn start(client: &kube::Client) -> Watches {
        let streams = vec![
            watch::<Node>(client, "Node", |o| Object::Node(Box::new(o)), false),
            watch::<Pod>(client, "Pod", |o| Object::Pod(Box::new(o)), false),
            watch::<PersistentVolumeClaim>(
                client,
                "PersistentVolumeClaim",
                |o| Object::Claim(Box::new(o)),
                false,
            ),
            watch::<PersistentVolume>(
                client,
                "PersistentVolume",
                |o| Object::Volume(Box::new(o)),
                true,
            ),
            watch::<VolumeAttachment>(
                client,
                "VolumeAttachment",
                |o| Object::Attachment(Box::new(o)),
                true,
            ),
            watch::<Deployment>(
                client,
                "Deployment",
                |o| Object::Deployment(Box::new(o)),
                false,
            ),
            watch::<StatefulSet>(
                client,
                "StatefulSet",
                |o| Object::StatefulSet(Box::new(o)),
                false,
            ),
            watch::<DaemonSet>(
                client,
                "DaemonSet",
                |o| Object::DaemonSet(Box::new(o)),
                false,
            ),
            watch::<Job>(client, "Job", |o| Object::Job(Box::new(o)), false),
            watch::<PodDisruptionBudget>(
                client,
                "PodDisruptionBudget",
                |o| Object::Budget(Box::new(o)),
                false,
            ),
        ];
        Watches::of(streams)
    }

    fn of(streams: Vec<BoxStream<'static, Delivered>>) -> Watches {
        Watches {
            streams: futures::stream::select_all(streams),
            seen: BTreeMap::new(),
            initialized: BTreeSet::new(),
            error: None,
        }
    }

    /// The next delivery of any watch; `None` once every watch ended.
    pub(super) async fn next(&mut self) -> Option<Delivered> {
        self.streams.next().await
    }

    /// Whether every kind has its first list in and has delivered the
    /// cluster's newest change of its kind (`latest`).
    pub(super) fn caught_up(&self, latest: &BTreeMap<String, u64>) -> bool {
        WATCHED.iter().all(|k| {
            self.initialized.contains(k)
                && self.seen.get(k).copied().unwrap_or(0) >= latest.get(*k).copied().unwrap_or(0)
        })
    }

    /// What the watches saw and the last error one reported, to say how
    /// far behind the cluster they are.
    pub(super) fn progress(&self) -> String {
        format!(
            "seen {:?}{}",
            self.seen,
            self.error
                .as_ref()
                .map(|e| format!("; last watch error: {e}"))
                .unwrap_or_default()
        )
    }

    /// Takes one delivery of `kind` into the observer at drill time `at`.
    /// A list's end delivers what it no longer holds as deleted while the
    /// watch was down, and counts as having seen the cluster's newest
    /// change of the kind as `latest` had it before the list.
    pub(super) fn take(
        &mut self,
        at: Time,
        kind: &'static str,
        delivery: Result<Delivery, watcher::Error>,
        latest: &BTreeMap<String, u64>,
        observer: &mut Observer,
    ) {
        let delivery = match delivery {
            Ok(delivery) => delivery,
            Err(e) => {
                // The watcher retries on its own (with backoff); a re-list
                // follows and reconciles.
                self.error = Some(e.to_string());
                return;
            }
        };
        let note = |seen: &mut BTreeMap<&'static str, u64>, object: &Object| {
            if let Some(rv) = object.resource_version() {
                let entry = seen.entry(kind).or_insert(0);
                *entry = (*entry).max(rv);
            }
        };
        match delivery {
            Delivery::Applied(object) => {
                note(&mut self.seen, &object);
                observer.apply(at, Change::Applied(object));
            }
            Delivery::Deleted(object) => {
                note(&mut self.seen, &object);
                observer.apply(at, Change::Deleted(object));
            }
            Delivery::Listing => {}
            Delivery::Listed { gone } => {
                for object in gone {
                    observer.apply(at, Change::Deleted(object));
                }
                // The list was taken after the newest change read before it.
                let floor = latest.get(kind).copied().unwrap_or(0);
                let entry = self.seen.entry(kind).or_insert(0);
                *entry = (*entry).max(floor);
                self.initialized.insert(kind);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list_failed(code: u16) -> Watched {
        let status = kube::core::Status::failure("refused", "Refused").with_code(code);
        (
            "VolumeAttachment",
            Err(watcher::Error::InitialListFailed(kube::Error::Api(
                status.boxed(),
            ))),
        )
    }

    fn outcome(events: Vec<Watched>) -> Vec<String> {
        let stream = optional(futures::stream::iter(events).boxed());
        futures::executor::block_on(stream.collect::<Vec<_>>())
            .into_iter()
            .map(|(kind, event)| match event {
                Ok(watcher::Event::Init) => format!("{kind} Init"),
                Ok(watcher::Event::InitDone) => format!("{kind} InitDone"),
                Ok(_) => format!("{kind} object"),
                Err(e) => format!("{kind} error: {e}"),
            })
            .collect()
    }

    #[test]
    fn an_optional_kind_the_cluster_does_not_serve_is_an_empty_list_and_its_watch_ends() {
        // The watcher would retry the list for ever; what follows the 404
        // is never read.
        let events = vec![list_failed(404), list_failed(404)];
        assert_eq!(
            outcome(events),
            ["VolumeAttachment Init", "VolumeAttachment InitDone"]
        );
    }

    #[test]
    fn an_optional_kind_that_is_forbidden_is_not_taken_for_an_empty_one() {
        let events = vec![
            list_failed(403),
            ("VolumeAttachment", Ok(watcher::Event::Init)),
            ("VolumeAttachment", Ok(watcher::Event::InitDone)),
        ];
        let seen = outcome(events);
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[0].contains("error"), "{seen:?}");
    }

    fn pod(name: &str, rv: u64) -> Pod {
        Pod {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("apps".to_owned()),
                resource_version: Some(rv.to_string()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn pods_watched(events: Vec<Watched<Pod>>) -> BoxStream<'static, Delivered> {
        reconciled(futures::stream::iter(events).boxed(), |o| {
            Object::Pod(Box::new(o))
        })
    }

    fn observer() -> Observer {
        let drill = drillbench_model::drill::Drill::load(
            &drillbench_model::test_support::repo_file("scenarios/node-loss.yaml"),
        )
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
        Observer::new(drill.topology)
    }

    /// Feeds every delivery to `take` as the backend's sync does.
    fn feed(watches: &mut Watches, observer: &mut Observer, latest: &BTreeMap<String, u64>) {
        while let Some((kind, delivery)) = futures::executor::block_on(watches.next()) {
            watches.take(0, kind, delivery, latest, observer);
        }
    }

    fn pods(observer: &Observer) -> Vec<String> {
        observer.pods().keys().cloned().collect()
    }

    fn deleted(observer: &Observer, kind: drillbench_observe::EventKind) -> Vec<String> {
        observer
            .obs
            .events
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| e.object.name.clone())
            .collect()
    }

    #[test]
    fn a_kind_is_caught_up_once_listed_and_at_the_clusters_newest_change() {
        let latest = BTreeMap::from([("Pod".to_owned(), 7)]);
        let mut watches = Watches::of(vec![pods_watched(vec![
            ("Pod", Ok(watcher::Event::Init)),
            ("Pod", Ok(watcher::Event::InitApply(pod("a", 5)))),
            ("Pod", Ok(watcher::Event::InitDone)),
        ])]);
        let mut observer = observer();
        assert!(!watches.caught_up(&BTreeMap::new()), "nothing listed yet");
        feed(&mut watches, &mut observer, &latest);
        assert_eq!(pods(&observer), ["apps/a"]);
        // Only the Pod watch ran: the other kinds are not listed.
        assert!(!watches.caught_up(&latest));
        for kind in WATCHED {
            watches.initialized.insert(kind);
        }
        // The list counts as having seen the newest change before it.
        assert!(watches.caught_up(&latest));
        assert!(!watches.caught_up(&BTreeMap::from([("Pod".to_owned(), 8)])));
        let mut later = Watches::of(vec![pods_watched(vec![(
            "Pod",
            Ok(watcher::Event::Apply(pod("b", 9))),
        )])]);
        later.initialized = watches.initialized.clone();
        feed(&mut later, &mut observer, &latest);
        assert!(later.caught_up(&BTreeMap::from([("Pod".to_owned(), 9)])));
        assert!(
            later.progress().contains("\"Pod\": 9"),
            "{}",
            later.progress()
        );
    }

    #[test]
    fn a_relist_that_no_longer_holds_an_object_deletes_it() {
        let mut watches = Watches::of(vec![pods_watched(vec![
            ("Pod", Ok(watcher::Event::Init)),
            ("Pod", Ok(watcher::Event::InitApply(pod("a", 1)))),
            ("Pod", Ok(watcher::Event::InitApply(pod("b", 2)))),
            ("Pod", Ok(watcher::Event::InitDone)),
            // The watch broke; the re-list holds only `b`.
            ("Pod", Err(watcher::Error::NoResourceVersion)),
            ("Pod", Ok(watcher::Event::Init)),
            ("Pod", Ok(watcher::Event::InitApply(pod("b", 2)))),
            ("Pod", Ok(watcher::Event::InitDone)),
        ])]);
        let mut observer = observer();
        feed(&mut watches, &mut observer, &BTreeMap::new());
        assert_eq!(pods(&observer), ["apps/b"]);
        assert_eq!(
            deleted(&observer, drillbench_observe::EventKind::PodDeleted),
            ["a"]
        );
        assert!(watches.progress().contains("last watch error"));
    }

    #[test]
    fn a_list_end_delivers_what_the_store_no_longer_holds_in_key_order_and_nothing_on_the_first_list()
     {
        let deliveries = |events| {
            futures::executor::block_on(pods_watched(events).collect::<Vec<_>>())
                .into_iter()
                .filter_map(|(_, d)| match d {
                    Ok(Delivery::Listed { gone }) => Some(
                        gone.iter()
                            .map(|o| match o {
                                Object::Pod(p) => p.name_any(),
                                other => panic!("{other:?}"),
                            })
                            .collect::<Vec<_>>(),
                    ),
                    _ => None,
                })
                .collect::<Vec<_>>()
        };
        let lists = deliveries(vec![
            ("Pod", Ok(watcher::Event::Init)),
            ("Pod", Ok(watcher::Event::InitApply(pod("c", 1)))),
            ("Pod", Ok(watcher::Event::InitApply(pod("a", 2)))),
            ("Pod", Ok(watcher::Event::InitDone)),
            ("Pod", Ok(watcher::Event::Apply(pod("b", 3)))),
            ("Pod", Ok(watcher::Event::Delete(pod("c", 4)))),
            ("Pod", Ok(watcher::Event::Init)),
            ("Pod", Ok(watcher::Event::InitDone)),
        ]);
        // `c` was deleted while watched: only `a` and `b` went unseen.
        assert_eq!(
            lists,
            [Vec::<String>::new(), vec!["a".to_owned(), "b".to_owned()]]
        );
    }

    #[test]
    fn a_relisted_node_is_known_by_its_api_name_whatever_the_drill_calls_it() {
        // kind names its nodes after the cluster; the drill name is a label.
        let node = |api: &str, drill: &str| {
            let mut node = Node::default();
            node.metadata.name = Some(api.to_owned());
            node.metadata.labels = Some(BTreeMap::from([(
                drillbench_model::labels::NODE_LABEL.to_owned(),
                drill.to_owned(),
            )]));
            node
        };
        let events: Vec<Watched<Node>> = vec![
            ("Node", Ok(watcher::Event::Init)),
            (
                "Node",
                Ok(watcher::Event::InitApply(node(
                    "r1-worker",
                    "prod-worker-1",
                ))),
            ),
            (
                "Node",
                Ok(watcher::Event::InitApply(node(
                    "r1-worker2",
                    "prod-worker-2",
                ))),
            ),
            ("Node", Ok(watcher::Event::InitDone)),
        ];
        let relist: Vec<Watched<Node>> = vec![
            ("Node", Ok(watcher::Event::Init)),
            (
                "Node",
                Ok(watcher::Event::InitApply(node(
                    "r1-worker2",
                    "prod-worker-2",
                ))),
            ),
            ("Node", Ok(watcher::Event::InitDone)),
        ];
        let mut watches = Watches::of(vec![reconciled(
            futures::stream::iter(events.into_iter().chain(relist)).boxed(),
            |o| Object::Node(Box::new(o)),
        )]);
        let mut observer = observer();
        feed(&mut watches, &mut observer, &BTreeMap::new());
        assert_eq!(
            deleted(&observer, drillbench_observe::EventKind::NodeDeleted),
            ["prod-worker-1"],
            "the first list deletes nothing; the re-list deletes the node it lost"
        );
        assert_eq!(observer.pool_nodes("baseline"), ["prod-worker-2"]);
    }
}
