//! The served cluster: the simulator, what the API wrote beside it, and
//! the changes announced about both.
//!
//! Every timeline event about a served object is one change with the next
//! resourceVersion; an API edit the timeline has no kind for (a label, an
//! annotation, a new workload) is one change too. A handler that acts on
//! the simulator calls [`Cluster::sync`] (and [`Cluster::api_change`] for
//! the object it edited) so watchers see what it did.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use super::cache::ListCache;
use super::cluster_ips;
use super::events::Events;
use super::history::{History, Key, key_of, strip_rv_mut};
use super::objects::Objects;
use super::objects::stamp;
use super::resources::{self, Resource};
use super::transitions::Transitions;
use super::watch::{Watcher, Watchers};
use super::written::{DECLARED_KINDS, Written};
use drillbench_model::drill::Drill;
use drillbench_model::labels::RUN_LABEL;
use drillbench_model::scenario::spec::GuardSpec;
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_observe::EventKind;
use drillbench_sim::Simulation;
use drillbench_sim::api_ops::{ApiOpError, Applied};
use drillbench_sim::clock::Time;
use drillbench_sim::world::PodPhase;

/// Derived kinds whose objects come and go with the state they show, so
/// [`Cluster::sync`] announces their disappearance itself: no timeline
/// event and no API call deletes a VolumeAttachment.
const DERIVED_LIFETIMES: [&str; 6] = [
    "PersistentVolume",
    "VolumeAttachment",
    "Lease",
    "ReplicaSet",
    "EndpointSlice",
    "Endpoints",
];

/// Kinds whose state follows from other objects' events without one of
/// their own, compared with their last announced state at every sync.
const DERIVED_KINDS: [&str; 10] = [
    // A node's kubelet renews its Lease every ten seconds while it is up
    // (the simulator's `LEASE_RENEW_INTERVAL_MS`): each renewal is a
    // change, so a watch of Leases sees heartbeats stop when a node is
    // lost; a node's Lease goes with it (its owner reference).
    "Lease",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "VolumeAttachment",
    "Deployment",
    // A Deployment's ReplicaSets follow its pods and its rollouts; an old
    // one pruned past the revision history limit is deleted.
    "ReplicaSet",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "PodDisruptionBudget",
];

/// Kinds derived from the Services and the pods they select, as their
/// controllers keep them (`super::endpoint_slices`, `super::endpoints`):
/// derived after every pod a sync announced, only when a pod, a node or a
/// Service changed since they last were, and once per advance of the
/// clock rather than at each of its instants, as a controller batches
/// the pod changes of a period. Deriving them costs a pass over a
/// namespace's pods per Service, which at every instant of a scale-up
/// was most of the simulation's time.
const SERVICE_DERIVED: [&str; 2] = ["EndpointSlice", "Endpoints"];

/// Derived kinds that own pods.
const WORKLOAD_KINDS: [&str; 4] = ["Deployment", "StatefulSet", "DaemonSet", "Job"];

pub(super) struct Cluster {
    /// The simulator; handlers change it only through its API primitives
    /// ([`drillbench_sim::api_ops`]) and then sync.
    pub(super) sim: Simulation,
    pub(super) written: Written,
    /// The drill's guards, which admit every workload written through the
    /// API as they admitted the drill's own.
    guards: Vec<GuardSpec>,
    history: History,
    /// The timeline's events as the Event objects components record.
    events: Events,
    /// When each announced condition last changed status.
    transitions: Transitions,
    watchers: Watchers,
    /// How many of the timeline's events have been turned into changes.
    seen_events: usize,
    /// The announced objects' JSON bytes that lists are spliced from.
    list_cache: ListCache,
    /// The most pods one workload written through the API may ask for
    /// ([`super::limits::Limits::max_pods`]).
    pub(super) max_pods: u64,
    /// What [`SERVICE_DERIVED`] were last derived from: the newest Pod and
    /// Node versions and the Services' change count.
    service_inputs: Option<(u64, u64, u64)>,
}

impl Cluster {
    /// Serves a provisioned simulation of the drill, with resourceVersions
    /// continuing after `rv`; the drill's own objects keep the labels and
    /// annotations they were written with.
    pub(super) fn new(drill: &Drill, sim: Simulation, window: usize, rv: u64) -> Cluster {
        let mut cluster = Cluster {
            sim,
            written: Written::default(),
            guards: drill.spec.guards.iter().map(|g| g.value.clone()).collect(),
            history: History::new(window, rv),
            events: Events::default(),
            transitions: Transitions::default(),
            watchers: Watchers::default(),
            seen_events: 0,
            list_cache: ListCache::default(),
            max_pods: super::limits::DEFAULT_MAX_PODS,
            service_inputs: None,
        };
        // The API server's own Service, there before anything else.
        let kubernetes = ("Service", "default".to_owned(), "kubernetes".to_owned());
        let mut service = cluster_ips::kubernetes_service();
        service["metadata"]["uid"] = json!(drillbench_sim::view::uid(34, 0));
        service["metadata"]["creationTimestamp"] = json!(stamp(0));
        cluster.written.declare(kubernetes, service);
        cluster.written.set_metadata(
            ("Namespace", String::new(), "kube-system".to_owned()),
            json!({ RUN_LABEL: format!("served-{}", drill.name()) }),
            Value::Null,
        );
        for (index, doc) in drill.workloads.iter().enumerate() {
            let kind = doc.kind().unwrap_or_default();
            if let Some(resource) = resources::by_kind(kind) {
                let key = (
                    resource.kind,
                    if resource.namespaced {
                        doc.namespace().unwrap_or("default").to_owned()
                    } else {
                        String::new()
                    },
                    doc.name().unwrap_or_default().to_owned(),
                );
                // Stored as written, so only at the version it is served
                // at: an `autoscaling/v1` HPA is not an `autoscaling/v2` one.
                let served_version = doc.value.get("apiVersion").and_then(|v| v.as_str())
                    == Some(&resource.api_version());
                if DECLARED_KINDS.contains(&resource.kind) && served_version {
                    let mut object = declared(&doc.value, &key, index);
                    if key.0 == "Service" {
                        // A Service the drill declares is allocated its
                        // ClusterIP as if created in the drill's order;
                        // one that asks for a taken address keeps it as
                        // written.
                        let taken = cluster_ips::taken(cluster.written.declared_of_kind("Service"));
                        let _ = cluster_ips::allocate(&mut object, &taken);
                    }
                    cluster.written.declare(key.clone(), object);
                }
                cluster.written.remember_metadata(key, &doc.value);
            }
        }
        cluster.sync();
        cluster
    }

    /// A copy of the cluster to try a request on and throw away
    /// (`dryRun=All`): the same simulation and objects, no watchers, so
    /// nothing it does is seen or kept. The copy shares the pod templates
    /// and their per-node-class memo with the cluster; an API write never
    /// adds a node class, so the memo stays right for both.
    pub(super) fn scratch(&self) -> Cluster {
        Cluster {
            sim: self.sim.clone(),
            written: self.written.clone(),
            guards: self.guards.clone(),
            history: self.history.scratch(),
            // A dry run reads no Event, and copying every one recorded
            // would make each admission check cost the drill's length.
            events: Events::default(),
            transitions: self.transitions.clone(),
            watchers: Watchers::default(),
            seen_events: self.seen_events,
            list_cache: ListCache::default(),
            max_pods: self.max_pods,
            service_inputs: self.service_inputs,
        }
    }

    pub(super) fn objects(&self) -> Objects<'_> {
        Objects {
            sim: &self.sim,
            written: &self.written,
            history: &self.history,
            events: &self.events,
            transitions: &self.transitions,
        }
    }

    /// See [`Objects::view`].
    /// The ReplicaSet a Deployment's controller creates pods through
    /// now: its newest, as served.
    fn newest_replicaset(&self, namespace: &str, deployment: &str) -> Option<Value> {
        let newest = self
            .sim
            .replicaset_views()
            .into_iter()
            .filter(|rs| {
                rs.metadata.namespace.as_deref() == Some(namespace)
                    && rs
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .any(|o| o.kind == "Deployment" && o.name == deployment)
            })
            .max_by_key(|rs| {
                rs.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(drillbench_sim::view::REVISION_ANNOTATION))
                    .and_then(|r| r.parse::<u64>().ok())
                    .unwrap_or_default()
            })?;
        let name = newest.metadata.name?;
        self.view("ReplicaSet", namespace, &name, false)
    }

    pub(super) fn view(
        &self,
        kind: &'static str,
        namespace: &str,
        name: &str,
        gone: bool,
    ) -> Option<Value> {
        self.objects().view(kind, namespace, name, gone)
    }

    pub(super) fn history(&self) -> &History {
        &self.history
    }

    /// The Events, to store one a client wrote (announced by
    /// [`Cluster::api_change`] like any API edit).
    pub(super) fn events_mut(&mut self) -> &mut Events {
        &mut self.events
    }

    pub(super) fn list_cache(&self) -> &ListCache {
        &self.list_cache
    }

    pub(super) fn guards(&self) -> &[GuardSpec] {
        &self.guards
    }

    /// Applies a manifest written through the API, admitted by the guards.
    pub(super) fn apply_manifest(&mut self, object: Value) -> Result<Applied, ApiOpError> {
        self.sim.apply_manifest(object, &self.guards)
    }

    /// Every refusal the simulator's admission records for `object`, each
    /// as `guard: reason`: found by applying it to a copy, so the admission
    /// is exactly the one the simulator's loader runs (whatever it holds)
    /// and a refused object leaves nothing behind. A manifest the
    /// simulator itself refuses is not admission's to answer: `None`.
    pub(super) fn admission_refusal(&self, object: &Value) -> Option<String> {
        let mut trial = self.scratch();
        let before = trial.sim.observation().admissions.len();
        trial.apply_manifest(object.clone()).ok()?;
        // Every refusing guard, as Kyverno lists every blocking policy: a
        // client (an admission control's dry run) must see whether the
        // guard it names was among them.
        let refusals: Vec<String> = trial.sim.observation().admissions[before..]
            .iter()
            .filter(|d| d.refused)
            .map(|d| format!("guard {} refused {}: {}", d.guard, d.object, d.reason))
            .collect();
        (!refusals.is_empty()).then(|| refusals.join("; "))
    }

    pub(super) fn add_watcher(&mut self, watcher: Watcher) {
        self.watchers.add(watcher);
    }

    /// Sends a bookmark to every watcher that asked for them.
    pub(super) fn bookmarks(&mut self) {
        self.watchers.bookmarks(self.history.rv());
    }

    /// Advances virtual time to `until`, one instant at a time, so every
    /// instant's changes are seen in the state of that instant.
    pub(super) fn advance_to(&mut self, until: Time) {
        while let Some(at) = self.sim.next_event_time() {
            if at > until {
                break;
            }
            self.sim.advance_to(at);
            self.sync_instant();
        }
        self.sim.advance_to(until);
        self.sync();
    }

    fn served_kind(kind: &str) -> Option<&'static str> {
        resources::by_kind(kind).map(|r| r.kind)
    }

    /// Turns the timeline's new events (and objects that appeared without
    /// one) into changes, and sends them to the watchers.
    pub(super) fn sync(&mut self) {
        self.sync_instant();
        self.sync_service_derived();
    }

    /// [`Cluster::sync`] but for the kinds derived from Services, which
    /// an advance derives once, at its end.
    fn sync_instant(&mut self) {
        let first = self.seen_events;
        let events: Vec<_> = self.sim.observation().events[first..].to_vec();
        self.seen_events = self.sim.observation().events.len();
        for (offset, event) in events.into_iter().enumerate() {
            let Some(kind) = Self::served_kind(&event.object.kind) else {
                continue;
            };
            let namespace = if kind == "Node" {
                String::new()
            } else {
                event.object.namespace.clone()
            };
            let key = (kind, namespace, event.object.name.clone());
            let deleted = matches!(event.kind, EventKind::PodDeleted | EventKind::NodeDeleted);
            // A pod deleted in the same instant it changed is shown gone.
            let object = self
                .view(kind, &key.1, &key.2, deleted)
                .or_else(|| self.view(kind, &key.1, &key.2, !deleted));
            let Some(object) = object else {
                continue;
            };
            let kind_type = if deleted {
                "DELETED"
            } else {
                self.history.change_type(&key)
            };
            // A Deployment's pods are its ReplicaSet's, and so is the
            // Event for one the API server refused.
            let involved = match (event.kind, kind) {
                (EventKind::AdmissionRefused, "Deployment") => self
                    .newest_replicaset(&key.1, &key.2)
                    .unwrap_or(object.clone()),
                _ => object.clone(),
            };
            let recorded = self.events.record(first + offset, &event, &involved);
            self.push(key, kind_type, object);
            if let Some((key, record)) = recorded {
                self.push(key, "ADDED", record);
            }
        }
        // Objects whose state follows from their pods' and the budgets'
        // events without one of their own (a workload's ready count, a
        // budget's allowed disruptions, a claim made for a StatefulSet's
        // pod, a workload created through the API): a change when their
        // view changed.
        self.sim.refresh_budgets();
        for kind in DERIVED_KINDS {
            let Some(resource) = resources::by_kind(kind) else {
                continue;
            };
            self.sync_derived(resource);
        }
    }

    fn sync_service_derived(&mut self) {
        let inputs = (
            self.history.latest_of("Pod"),
            self.history.latest_of("Node"),
            self.written.changes_of("Service"),
        );
        if self.service_inputs == Some(inputs) {
            return;
        }
        for kind in SERVICE_DERIVED {
            if let Some(resource) = resources::by_kind(kind) {
                self.sync_derived(resource);
            }
        }
        self.service_inputs = Some(inputs);
    }

    fn sync_derived(&mut self, resource: &'static Resource) {
        let kind = resource.kind;
        let objects = self.objects().list(resource);
        if DERIVED_LIFETIMES.contains(&kind) {
            // Objects that exist only while the state they show does
            // (an attachment until its volume detaches): gone from the
            // list is a deletion, announced with its last state.
            let current: BTreeSet<Key> = objects.iter().map(|o| key_of(kind, o)).collect();
            let gone: Vec<(Key, Value)> = self
                .history
                .announced_of_kind(kind)
                .filter(|(k, _)| !current.contains(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            for (key, object) in gone {
                self.push(key, "DELETED", object);
            }
        }
        let mut changed_workloads = Vec::new();
        for object in objects {
            let key = key_of(kind, &object);
            if self.history.is_unchanged(&key, &object) {
                continue;
            }
            let kind_type = self.history.change_type(&key);
            if WORKLOAD_KINDS.contains(&kind) {
                changed_workloads.push(key.clone());
            }
            self.push(key, kind_type, object);
        }
        for workload in changed_workloads {
            self.sync_pods_of(&workload);
        }
    }

    /// Announces the pods of a workload whose view changed without an
    /// event of their own: a Job's pod that finishes (the simulator's
    /// `JobPodDone`) records nothing on the timeline but the Job's count,
    /// so its pod would otherwise read as Running to a watch (and to a
    /// list served from what was announced, [`super::cache`]).
    fn sync_pods_of(&mut self, workload: &Key) {
        let reference = WorkloadRef::new(&workload.1, workload.0, &workload.2).to_string();
        let Some(w) = self.sim.workload_id(&reference) else {
            return;
        };
        let pods: Vec<Key> = self.sim.workloads()[w]
            .pods
            .iter()
            .map(|&p| &self.sim.pods()[p])
            .filter(|p| p.phase != PodPhase::Gone)
            .map(|p| ("Pod", p.namespace.clone(), p.name.clone()))
            .collect();
        for key in pods {
            let Some(object) = self.view(key.0, &key.1, &key.2, false) else {
                continue;
            };
            if !self.history.is_unchanged(&key, &object) {
                let kind_type = self.history.change_type(&key);
                self.push(key, kind_type, object);
            }
        }
    }

    fn push(&mut self, key: Key, kind_type: &'static str, object: Value) {
        self.transitions
            .remember(&key, &object, kind_type == "DELETED");
        let change = self.history.record(key, kind_type, object);
        self.watchers.announce(change, self.sim.now());
    }

    /// Records an API edit that changed an object without a timeline
    /// event; `before` is its state before the edit, announced as
    /// `DELETED` if the edit removed it.
    pub(super) fn api_change(&mut self, key: Key, before: Option<&Value>) {
        let after = self.view(key.0, &key.1, &key.2, false);
        match after {
            Some(object) => {
                if !self.history.is_unchanged(&key, &object) {
                    let kind_type = self.history.change_type(&key);
                    self.push(key, kind_type, object);
                }
            }
            None => {
                self.written.forget_managed_fields(&key);
                if let Some(mut object) = before.cloned()
                    && self.history.is_announced(&key)
                {
                    strip_rv_mut(&mut object);
                    self.push(key, "DELETED", object);
                }
            }
        }
    }
}

/// A declared manifest as the API server would have stored it: in its
/// namespace, with a uid and the drill's start as its creation.
fn declared(manifest: &Value, key: &Key, index: usize) -> Value {
    let mut object = manifest.clone();
    super::defaults::default_object(key.0, &mut object);
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        if !key.1.is_empty() {
            meta.insert("namespace".to_owned(), json!(key.1));
        }
        meta.insert(
            "uid".to_owned(),
            json!(drillbench_sim::view::uid(33, index)),
        );
        meta.insert("creationTimestamp".to_owned(), json!(stamp(0)));
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{cluster, lines, rv_of, watch_kind};

    #[test]
    fn the_drills_objects_are_announced_once_at_the_start() {
        let mut cluster = cluster();
        let first = cluster.history().rv();
        assert!(first > 0);
        let added: Vec<&str> = cluster
            .history()
            .since(0)
            .filter(|c| c.kind == "Deployment")
            .map(|c| c.kind_type)
            .collect();
        assert_eq!(added, ["ADDED", "ADDED"], "apps/api and apps/cache");
        cluster.sync();
        cluster.sync();
        assert_eq!(
            cluster.history().rv(),
            first,
            "nothing changed, nothing announced"
        );
    }

    #[test]
    fn a_crash_is_announced_to_watchers_under_versions_after_the_last() {
        let mut cluster = cluster();
        let before = cluster.history().rv();
        let mut nodes = watch_kind(&mut cluster, "Node");
        let node = cluster.sim.node_id("prod-worker-1").expect("a worker");
        cluster.sim.crash_node_api(node);
        cluster.sync();
        let seen = lines(&mut nodes);
        assert!(!seen.is_empty());
        assert!(
            seen.iter()
                .all(|l| l["type"] == "MODIFIED" && rv_of(&l["object"]) > before),
            "{seen:?}"
        );
        assert!(
            seen.iter()
                .any(|l| l["object"]["metadata"]["name"] == "prod-worker-1")
        );
        let versions: Vec<u64> = cluster.history().since(before).map(|c| c.rv).collect();
        let expected: Vec<u64> = (before + 1..=cluster.history().rv()).collect();
        assert_eq!(versions, expected, "one version per change, none skipped");
    }

    #[test]
    fn advancing_time_moves_the_clock_and_syncs_every_instant() {
        let mut cluster = cluster();
        cluster.advance_to(90_000);
        assert_eq!(cluster.sim.now(), 90_000);
        // Whatever happened on the way has been announced: a sync now
        // finds nothing new.
        let rv = cluster.history().rv();
        cluster.sync();
        assert_eq!(cluster.history().rv(), rv);
    }

    #[test]
    fn an_api_edit_is_announced_once_and_its_removal_as_deleted() {
        let mut cluster = cluster();
        let mut maps = watch_kind(&mut cluster, "ConfigMap");
        let key: Key = ("ConfigMap", "apps".to_owned(), "settings".to_owned());
        cluster.written.put_config_map(
            "apps",
            "settings",
            json!({"kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "apps"}}),
        );
        cluster.api_change(key.clone(), None);
        cluster.api_change(key.clone(), None);
        let added = lines(&mut maps);
        assert_eq!(added.len(), 1, "{added:?}");
        assert_eq!(added[0]["type"], "ADDED");
        let rv = rv_of(&added[0]["object"]);
        assert_eq!(cluster.history().rv(), rv);
        let before = cluster.view("ConfigMap", "apps", "settings", false);
        cluster.written.remove_config_map("apps", "settings");
        cluster.api_change(key.clone(), before.as_ref());
        let deleted = lines(&mut maps);
        assert_eq!(deleted.len(), 1);
        assert_eq!(deleted[0]["type"], "DELETED");
        assert_eq!(deleted[0]["object"]["metadata"]["name"], "settings");
        assert_eq!(rv_of(&deleted[0]["object"]), rv + 1);
        // Removing what was never announced announces nothing.
        cluster.api_change(
            ("ConfigMap", "apps".to_owned(), "x".to_owned()),
            before.as_ref(),
        );
        assert_eq!(cluster.history().rv(), rv + 1);
    }

    /// What `kubectl describe pod` asks for (client-go's
    /// `events.Search`: the involved object's name, namespace and uid)
    /// finds the scheduler's Event for that pod; a crash is announced to
    /// Event watchers as the node controller's NodeNotReady. Control: no
    /// Event names a pod of another uid.
    #[test]
    fn the_timeline_is_served_as_events_about_the_objects_it_names() {
        let mut cluster = cluster();
        let pod = cluster
            .view("Pod", "apps", "api-00000", false)
            .expect("a pod");
        let events = resources::by_kind("Event").expect("events are served");
        let about = |cluster: &Cluster, uid: &str| -> Vec<String> {
            cluster
                .objects()
                .list(events)
                .into_iter()
                .filter(|e| e["involvedObject"]["uid"] == uid)
                .map(|e| e["reason"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        let uid = pod["metadata"]["uid"].as_str().expect("a uid");
        assert_eq!(about(&cluster, uid), ["Scheduled"]);
        assert!(about(&cluster, "no-such-uid").is_empty());
        let mut watched = watch_kind(&mut cluster, "Event");
        let node = cluster.sim.node_id("prod-worker-1").expect("a worker");
        cluster.sim.crash_node_api(node);
        cluster.advance_to(cluster.sim.now() + 120_000);
        let seen = lines(&mut watched);
        assert!(
            seen.iter().any(|l| l["type"] == "ADDED"
                && l["object"]["reason"] == "NodeNotReady"
                && l["object"]["involvedObject"]["name"] == "prod-worker-1"
                && l["object"]["metadata"]["namespace"] == "default"),
            "{seen:?}"
        );
    }

    /// A CronJob (which the simulator runs, but shows no object of) is
    /// served as the drill's manifest declares it, stored as the API
    /// server would (namespace, uid, creation). Control: a drill without
    /// one serves none.
    #[test]
    fn kinds_without_behaviour_are_served_as_the_drill_declares_them() {
        let drill =
            crate::testing::drill_at("harness/examples/autoscaler-scale-down-without-guard.yaml");
        let sim = Simulation::new(&drill, 7).expect("the drill provisions");
        let served = Cluster::new(&drill, sim, 100, 0);
        let cronjobs = resources::by_kind("CronJob").expect("served");
        let listed = served.objects().list(cronjobs);
        assert_eq!(crate::testing::names(&listed), ["openbao/vault-snapshot"]);
        let declared = drill
            .workloads
            .iter()
            .find(|d| d.kind() == Some("CronJob"))
            .expect("the manifest");
        assert_eq!(listed[0]["spec"], declared.value["spec"]);
        assert_eq!(
            listed[0]["metadata"]["creationTimestamp"],
            "2026-01-01T00:00:00Z"
        );
        assert!(listed[0]["metadata"]["uid"].is_string());
        assert!(
            served
                .view("CronJob", "openbao", "vault-snapshot", false)
                .is_some()
        );
        assert!(cluster().objects().list(cronjobs).is_empty());
    }

    /// Declared kinds are served at one version and stored as written, so
    /// a drill's HPA is served only when written at that version
    /// (`autoscaling/v2`); an `autoscaling/v1` one, which would read as v2
    /// with v1's fields, is left out. Control: the v2 one is served.
    #[test]
    fn a_declared_object_is_served_only_at_its_served_version() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("hpa.yaml"),
            "apiVersion: v1
kind: Namespace
metadata: {name: apps}
---
apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {name: old, namespace: apps}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
  targetCPUUtilizationPercentage: 80
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: new, namespace: apps}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 3
",
        )
        .expect("write");
        let text = "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {name: hpa}
cluster:
  pools: [{name: baseline, count: 1, serverType: cx43}]
workloads:
  - path: hpa.yaml
assertions:
  - name: quorum
    quorum: {}
";
        let drill = Drill::from_source(drillbench_model::scenario::SourceFile::new(
            dir.path().join("drill.yaml"),
            text.to_owned(),
        ))
        .unwrap_or_else(|d| panic!("{}", d.render(false)));
        let sim = Simulation::new(&drill, 7).expect("the drill provisions");
        let served = Cluster::new(&drill, sim, 100, 0);
        let hpas = resources::by_kind("HorizontalPodAutoscaler").expect("served");
        let listed = served.objects().list(hpas);
        assert_eq!(crate::testing::names(&listed), ["apps/new"]);
    }

    /// kubelet renews its node Lease every ten seconds while its server
    /// runs (`nodeLeaseRenewIntervalFraction` × 40 s): a Lease watcher sees
    /// each renewal on that grid; a crashed node's renewals stop at once
    /// (control: the other nodes' go on).
    #[test]
    fn node_leases_are_renewed_every_ten_seconds_until_the_node_is_lost() {
        let mut cluster = cluster();
        cluster.advance_to(60_000);
        let mut leases = watch_kind(&mut cluster, "Lease");
        let node = cluster.sim.node_id("prod-worker-1").expect("a worker");
        cluster.sim.crash_node_api(node);
        cluster.sync();
        cluster.advance_to(100_000);
        let seen = lines(&mut leases);
        let renewals = |name: &str| -> Vec<String> {
            seen.iter()
                .filter(|l| l["type"] == "MODIFIED" && l["object"]["metadata"]["name"] == name)
                .map(|l| {
                    l["object"]["spec"]["renewTime"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        };
        assert_eq!(
            renewals("prod-worker-2"),
            [
                "2026-01-01T00:01:10.000000Z",
                "2026-01-01T00:01:20.000000Z",
                "2026-01-01T00:01:30.000000Z",
                "2026-01-01T00:01:40.000000Z"
            ]
        );
        assert!(renewals("prod-worker-1").is_empty(), "{seen:?}");
        let lease = cluster
            .view("Lease", "kube-node-lease", "prod-worker-1", false)
            .expect("the lost node's lease");
        assert_eq!(lease["spec"]["renewTime"], "2026-01-01T00:01:00.000000Z");
    }

    /// A Service selecting apps/api, and the cluster after its node is
    /// crashed; `per_instant`: synced at every instant instead of once
    /// at the end of the advance. Returns how many Pod and EndpointSlice
    /// changes followed the crash.
    fn endpoint_changes_after_a_crash(per_instant: bool) -> (usize, usize) {
        let mut cluster = cluster();
        let key: Key = ("Service", "apps".to_owned(), "api".to_owned());
        cluster.written.declare(
            key.clone(),
            json!({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "api", "namespace": "apps", "uid": "s"},
                   "spec": {"selector": {"app": "api"}, "ports": [{"port": 80}]}}),
        );
        cluster.sync();
        cluster.api_change(key, None);
        let before = cluster.history().rv();
        let pod = cluster
            .view("Pod", "apps", "api-00000", false)
            .expect("a pod");
        let node = pod["spec"]["nodeName"].as_str().expect("bound").to_owned();
        let node = cluster.sim.node_id(&node).expect("its node");
        cluster.sim.crash_node_api(node);
        let until = cluster.sim.now() + 600_000;
        if per_instant {
            while let Some(at) = cluster.sim.next_event_time().filter(|&at| at <= until) {
                cluster.sim.advance_to(at);
                cluster.sync();
            }
        } else {
            cluster.advance_to(until);
        }
        let count = |kind: &str| {
            cluster
                .history()
                .since(before)
                .filter(|c| c.kind == kind)
                .count()
        };
        (count("Pod"), count("EndpointSlice"))
    }

    /// A Service's EndpointSlices are derived once per advance, as a
    /// controller batches the pod changes of a period: the pods change at
    /// several instants of the advance, the slice once. Control: synced
    /// at each instant, the same crash changes the slice more than once.
    #[test]
    fn a_services_endpoints_are_derived_once_per_advance() {
        let (pods, slices) = endpoint_changes_after_a_crash(false);
        assert!(pods > 1, "{pods} pod changes");
        assert_eq!(slices, 1);
        let (pods_each, slices_each) = endpoint_changes_after_a_crash(true);
        assert_eq!(pods_each, pods, "the same pod changes");
        assert!(slices_each > 1, "{slices_each} slice changes");
    }

    #[test]
    fn the_drills_labels_are_kept_and_kube_system_names_the_served_drill() {
        let cluster = cluster();
        let system = cluster
            .view("Namespace", "", "kube-system", false)
            .expect("kube-system");
        assert_eq!(system["metadata"]["labels"][RUN_LABEL], "served-serve");
    }
}
