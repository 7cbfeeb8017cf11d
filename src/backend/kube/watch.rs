//! The watches on every kind the observer reads, merged into one stream,
//! and what they delivered so far: each kind's newest resourceVersion,
//! whether its first list is in, and what a re-list no longer holds.

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
use kube::runtime::{WatchStreamExt, watcher};

use super::observer::{Change, Object, Observer};
use crate::observe::Time;

pub(super) type Watched = (&'static str, Result<watcher::Event<Object>, watcher::Error>);

fn watch<K>(
    client: &kube::Client,
    kind: &'static str,
    wrap: fn(K) -> Object,
) -> BoxStream<'static, Watched>
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let api: Api<K> = Api::all(client.clone());
    // Without a backoff a watch that fails at once (an API server that
    // refuses) is retried in a tight loop.
    watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .map(move |event| {
            let event = event.map(|e| match e {
                watcher::Event::Apply(o) => watcher::Event::Apply(wrap(o)),
                watcher::Event::Delete(o) => watcher::Event::Delete(wrap(o)),
                watcher::Event::Init => watcher::Event::Init,
                watcher::Event::InitApply(o) => watcher::Event::InitApply(wrap(o)),
                watcher::Event::InitDone => watcher::Event::InitDone,
            });
            (kind, event)
        })
        .boxed()
}

/// The kinds watched.
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
fn optional(stream: BoxStream<'static, Watched>) -> BoxStream<'static, Watched> {
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

/// The key a re-list's object goes by in [`Observer::known`].
fn object_key(object: &Object) -> String {
    match object {
        Object::Node(o) => o.name_any(),
        Object::Pod(o) => format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()),
        Object::Volume(o) => o.name_any(),
        Object::Attachment(o) => o.name_any(),
        _ => String::new(),
    }
}

/// An object of `kind` known by `key` that a re-list no longer holds, as
/// the deletion it stands for.
fn gone(kind: &str, key: &str) -> Object {
    let (namespace, name) = key
        .split_once('/')
        .map_or((None, key), |(n, k)| (Some(n), k));
    let metadata = kube::api::ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        ..Default::default()
    };
    match kind {
        "Node" => Object::Node(Box::new(Node {
            metadata,
            ..Default::default()
        })),
        "PersistentVolume" => Object::Volume(Box::new(PersistentVolume {
            metadata,
            ..Default::default()
        })),
        "VolumeAttachment" => Object::Attachment(Box::new(VolumeAttachment {
            metadata,
            ..Default::default()
        })),
        _ => Object::Pod(Box::new(Pod {
            metadata,
            ..Default::default()
        })),
    }
}

/// The newest timestamp an event's object carries, if it carries one.
pub(super) fn stamp(
    event: &Result<watcher::Event<Object>, watcher::Error>,
) -> Option<jiff::Timestamp> {
    match event {
        Ok(watcher::Event::Apply(o) | watcher::Event::Delete(o) | watcher::Event::InitApply(o)) => {
            o.newest_timestamp()
        }
        _ => None,
    }
}

pub(super) struct Watches {
    streams: SelectAll<BoxStream<'static, Watched>>,
    /// The newest resourceVersion delivered of each kind.
    seen: BTreeMap<&'static str, u64>,
    /// The kinds whose first list is in.
    initialized: BTreeSet<&'static str>,
    /// The keys of each kind's list under way.
    relisted: BTreeMap<&'static str, BTreeSet<String>>,
    /// The newest error a watch reported, for when they do not catch up.
    error: Option<String>,
}

impl Watches {
    /// Starts a watch on every kind in [`WATCHED`].
    pub(super) fn start(client: &kube::Client) -> Watches {
        let streams = vec![
            watch::<Node>(client, "Node", |o| Object::Node(Box::new(o))),
            watch::<Pod>(client, "Pod", |o| Object::Pod(Box::new(o))),
            watch::<PersistentVolumeClaim>(client, "PersistentVolumeClaim", |o| {
                Object::Claim(Box::new(o))
            }),
            optional(watch::<PersistentVolume>(client, "PersistentVolume", |o| {
                Object::Volume(Box::new(o))
            })),
            optional(watch::<VolumeAttachment>(client, "VolumeAttachment", |o| {
                Object::Attachment(Box::new(o))
            })),
            watch::<Deployment>(client, "Deployment", |o| Object::Deployment(Box::new(o))),
            watch::<StatefulSet>(client, "StatefulSet", |o| Object::StatefulSet(Box::new(o))),
            watch::<DaemonSet>(client, "DaemonSet", |o| Object::DaemonSet(Box::new(o))),
            watch::<Job>(client, "Job", |o| Object::Job(Box::new(o))),
            watch::<PodDisruptionBudget>(client, "PodDisruptionBudget", |o| {
                Object::Budget(Box::new(o))
            }),
        ];
        Watches::of(streams)
    }

    fn of(streams: Vec<BoxStream<'static, Watched>>) -> Watches {
        Watches {
            streams: futures::stream::select_all(streams),
            seen: BTreeMap::new(),
            initialized: BTreeSet::new(),
            relisted: BTreeMap::new(),
            error: None,
        }
    }

    /// The next delivery of any watch; `None` once every watch ended.
    pub(super) async fn next(&mut self) -> Option<Watched> {
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
    /// A list's end reads everything known but not listed as deleted
    /// while the watch was down, and counts as having seen the cluster's
    /// newest change of the kind as `latest` had it before the list.
    pub(super) fn take(
        &mut self,
        at: Time,
        kind: &'static str,
        event: Result<watcher::Event<Object>, watcher::Error>,
        latest: &BTreeMap<String, u64>,
        observer: &mut Observer,
    ) {
        let event = match event {
            Ok(event) => event,
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
        match event {
            watcher::Event::Apply(object) => {
                note(&mut self.seen, &object);
                observer.apply(at, Change::Applied(object));
            }
            watcher::Event::Delete(object) => {
                note(&mut self.seen, &object);
                observer.apply(at, Change::Deleted(object));
            }
            watcher::Event::Init => {
                self.relisted.insert(kind, BTreeSet::new());
            }
            watcher::Event::InitApply(object) => {
                note(&mut self.seen, &object);
                if let Some(set) = self.relisted.get_mut(kind) {
                    set.insert(object_key(&object));
                }
                observer.apply(at, Change::Applied(object));
            }
            watcher::Event::InitDone => {
                // Deleted while the watch was down: gone from the re-list.
                let listed = self.relisted.remove(kind).unwrap_or_default();
                for key in observer.known(kind) {
                    if !listed.contains(&key) {
                        observer.apply(at, Change::Deleted(gone(kind, &key)));
                    }
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

    fn pod(name: &str, rv: u64) -> Object {
        Object::Pod(Box::new(Pod {
            metadata: kube::api::ObjectMeta {
                name: Some(name.to_owned()),
                namespace: Some("apps".to_owned()),
                resource_version: Some(rv.to_string()),
                ..Default::default()
            },
            ..Default::default()
        }))
    }

    fn observer() -> Observer {
        let drill = crate::drill::Drill::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/node-loss.yaml"),
        )
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
        Observer::new(drill.topology)
    }

    /// Feeds every event to `take` as the backend's sync does.
    fn feed(watches: &mut Watches, observer: &mut Observer, latest: &BTreeMap<String, u64>) {
        while let Some((kind, event)) = futures::executor::block_on(watches.next()) {
            watches.take(0, kind, event, latest, observer);
        }
    }

    fn pods(observer: &Observer) -> Vec<String> {
        observer.pods().keys().cloned().collect()
    }

    #[test]
    fn a_kind_is_caught_up_once_listed_and_at_the_clusters_newest_change() {
        let latest = BTreeMap::from([("Pod".to_owned(), 7)]);
        let mut watches = Watches::of(vec![
            futures::stream::iter(vec![
                ("Pod", Ok(watcher::Event::Init)),
                ("Pod", Ok(watcher::Event::InitApply(pod("a", 5)))),
                ("Pod", Ok(watcher::Event::InitDone)),
            ])
            .boxed(),
        ]);
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
        let mut later = Watches::of(vec![
            futures::stream::iter(vec![("Pod", Ok(watcher::Event::Apply(pod("b", 9))))]).boxed(),
        ]);
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
        let mut watches = Watches::of(vec![
            futures::stream::iter(vec![
                ("Pod", Ok(watcher::Event::Init)),
                ("Pod", Ok(watcher::Event::InitApply(pod("a", 1)))),
                ("Pod", Ok(watcher::Event::InitApply(pod("b", 2)))),
                ("Pod", Ok(watcher::Event::InitDone)),
                // The watch broke; the re-list holds only `b`.
                ("Pod", Err(watcher::Error::NoResourceVersion)),
                ("Pod", Ok(watcher::Event::Init)),
                ("Pod", Ok(watcher::Event::InitApply(pod("b", 2)))),
                ("Pod", Ok(watcher::Event::InitDone)),
            ])
            .boxed(),
        ]);
        let mut observer = observer();
        feed(&mut watches, &mut observer, &BTreeMap::new());
        assert_eq!(pods(&observer), ["apps/b"]);
        let deleted: Vec<&str> = observer
            .obs
            .events
            .iter()
            .filter(|e| e.kind == crate::observe::EventKind::PodDeleted)
            .map(|e| e.object.name.as_str())
            .collect();
        assert_eq!(deleted, ["a"]);
        assert!(watches.progress().contains("last watch error"));
    }
}
