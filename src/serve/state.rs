//! The simulator's side of the façade: it owns the [`Simulation`] on one
//! thread and answers API requests in the order they arrive, so the model
//! never depends on request timing beyond that order.
//!
//! Every timeline event about a served object is one change with the next
//! resourceVersion; an API edit the timeline has no kind for (a label, an
//! annotation, a new workload) is one change too. Changes are kept in a
//! window ([`DEFAULT_HISTORY_WINDOW`] by default) so a watch can resume from a
//! resourceVersion; an older one is `410 Gone`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;
use kube::core::Selector;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::resources::{self, Resource};
use super::select::{self, FieldTerm};
use super::{patch, table};
use crate::bench_protocol::{self as protocol, NodeOperation};
use crate::drill::Drill;
use crate::duration::Duration;
use crate::labels::{RUN_LABEL, VELERO_SCHEDULE_LABEL};
use crate::observe::EventKind;
use crate::scenario::spec::GuardSpec;
use crate::sim::Simulation;
use crate::sim::api_ops::{ApiOpError, Propagation};
use crate::sim::clock::Time;
use crate::sim::world::{NodePhase, PodPhase, WorkloadKind};

/// How many changes a watch can resume from, by default.
pub const DEFAULT_HISTORY_WINDOW: usize = 10_000;

/// How time passes in the served simulator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Clock {
    /// Virtual time follows the wall clock times this factor.
    Speed(f64),
    /// Virtual time moves only through `POST /bench/v1/advance`.
    Step,
}

/// One HTTP request, as the simulator thread needs it.
#[derive(Debug)]
pub struct Request {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// Query parameters (decoded).
    pub query: BTreeMap<String, String>,
    /// `Content-Type`.
    pub content_type: String,
    /// `Accept`.
    pub accept: String,
    /// The body.
    pub body: Bytes,
}

/// The answer to a request.
#[derive(Debug)]
pub enum Reply {
    /// A JSON body with an HTTP status.
    Json(u16, Value),
    /// A stream of watch events, one JSON line each.
    Watch {
        /// The events.
        events: mpsc::UnboundedReceiver<Bytes>,
        /// When the server ends the watch (`timeoutSeconds`).
        timeout: Option<std::time::Duration>,
    },
}

/// What the HTTP side asks of the simulator thread.
#[derive(Debug)]
pub enum Command {
    /// An API request and where to answer.
    Api(Request, oneshot::Sender<Reply>),
    /// Stop serving.
    Stop,
}

type Key = (&'static str, String, String);

#[derive(Debug, Clone)]
struct Change {
    rv: u64,
    kind: &'static str,
    namespace: String,
    kind_type: &'static str,
    object: Value,
}

struct Watcher {
    resource: &'static Resource,
    namespace: Option<String>,
    labels: Selector,
    fields: Vec<FieldTerm>,
    table: bool,
    bookmarks: bool,
    tx: mpsc::UnboundedSender<Bytes>,
}

/// A Kubernetes `Status` error.
#[derive(Debug)]
pub struct ApiError {
    code: u16,
    reason: &'static str,
    message: String,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
        }
    }

    fn not_found(resource: &Resource, name: &str) -> Self {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", resource.qualified()),
        )
    }

    fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BadRequest", message)
    }

    fn invalid(message: impl Into<String>) -> Self {
        ApiError::new(422, "Invalid", message)
    }

    /// The `Status` object.
    pub fn status(&self) -> Value {
        status_body(self.code, self.reason, &self.message)
    }

    fn reply(self) -> Reply {
        Reply::Json(self.code, self.status())
    }
}

/// A bench endpoint's answer.
fn answer(value: &impl serde::Serialize) -> Reply {
    Reply::Json(200, serde_json::to_value(value).unwrap_or_default())
}

/// A `Status` body.
pub fn status_body(code: u16, reason: &str, message: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
           "status": "Failure", "message": message, "reason": reason, "code": code})
}

/// The containers whose image differs between two workloads whose pod
/// templates differ in nothing else, as (container, new image); `None`
/// when anything but images changed.
fn image_changes(current: &Value, wanted: &Value) -> Option<Vec<(String, String)>> {
    let containers = "/spec/template/spec/containers";
    let mut patched = current.pointer("/spec/template")?.clone();
    let mut changes = Vec::new();
    for (have, want) in patched
        .pointer_mut("/spec/containers")?
        .as_array_mut()?
        .iter_mut()
        .zip(wanted.pointer(containers)?.as_array()?)
    {
        if have.get("name") != want.get("name") {
            return None;
        }
        if have.get("image") != want.get("image") {
            let name = want.get("name")?.as_str()?.to_owned();
            let image = want.get("image")?.as_str()?.to_owned();
            have["image"] = Value::String(image.clone());
            changes.push((name, image));
        }
    }
    (Some(&patched) == wanted.pointer("/spec/template")).then_some(changes)
}

fn from_op(error: ApiOpError) -> ApiError {
    match error {
        ApiOpError::NotFound(m) => ApiError::new(404, "NotFound", m),
        ApiOpError::Conflict(m) => ApiError::new(409, "Conflict", m),
        ApiOpError::Invalid(m) => ApiError::invalid(m),
    }
}

type ApiResult = Result<Reply, ApiError>;

/// The simulator and everything the façade keeps about it.
pub struct Facade {
    sim: Simulation,
    guards: Vec<GuardSpec>,
    clock: Clock,
    history: VecDeque<Change>,
    window: usize,
    rv: u64,
    seen_events: usize,
    known: BTreeSet<Key>,
    object_rv: BTreeMap<Key, u64>,
    /// Labels and annotations written through the API for objects whose
    /// metadata the simulator does not keep (workloads, budgets,
    /// namespaces): metadata only, never behaviour.
    metadata: BTreeMap<Key, (Value, Value)>,
    created_namespaces: BTreeSet<String>,
    /// Namespaces deleted through the API and not created again: each is
    /// Terminating while its pods terminate, then gone (the simulator
    /// itself keeps a namespace as long as anything ever lived in it).
    deleted_namespaces: BTreeSet<String>,
    /// ConfigMaps by (namespace, name), stored as written: the simulator
    /// models no behaviour for them.
    config_maps: BTreeMap<(String, String), Value>,
    /// The last state announced of each object (without resourceVersion),
    /// so a change derived or made through the API is announced once.
    last: BTreeMap<Key, Value>,
    watchers: Vec<Watcher>,
    /// The drill served, kept so `POST /bench/v1/reset` can provision it
    /// again with other guards (a negative control's re-run).
    drill: Drill,
    /// The resourceVersion of the newest change of each kind, so a client
    /// stepping the clock knows when its watch of a kind has caught up.
    latest: BTreeMap<&'static str, u64>,
    /// `--standby-nodes`: a reset provisions the same way.
    pub standby_nodes: Option<u32>,
}

/// The served cluster at time zero: the simulator's own, or, with standby
/// nodes, the one kind and Talos provision (see [`ServeOptions::standby_nodes`]).
///
/// [`ServeOptions::standby_nodes`]: super::ServeOptions::standby_nodes
pub fn provision(
    drill: &Drill,
    seed: u64,
    standby_nodes: Option<u32>,
) -> Result<Simulation, crate::sim::SimError> {
    match standby_nodes {
        Some(per_pool) => Simulation::with_standby_nodes(drill, seed, per_pool),
        None => Simulation::new(drill, seed),
    }
}

const WATCH_TYPES: [&str; 3] = ["ADDED", "MODIFIED", "DELETED"];

/// Derived kinds whose objects come and go with the state they show, so
/// [`Facade::sync`] announces their disappearance itself: no timeline
/// event and no API call deletes a VolumeAttachment.
const DERIVED_LIFETIMES: [&str; 2] = ["PersistentVolume", "VolumeAttachment"];

impl Facade {
    /// Serves a drill's cluster, provisioned with the seed.
    pub fn new(drill: &Drill, sim: Simulation, clock: Clock, window: usize) -> Facade {
        Self::with_first_rv(drill, sim, clock, window, 0)
    }

    /// Like [`Facade::new`], with resourceVersions continuing after `rv`
    /// (a reset must never reuse a version a client has seen).
    fn with_first_rv(
        drill: &Drill,
        sim: Simulation,
        clock: Clock,
        window: usize,
        rv: u64,
    ) -> Facade {
        let mut facade = Facade {
            sim,
            guards: drill.spec.guards.iter().map(|g| g.value.clone()).collect(),
            clock,
            history: VecDeque::new(),
            window,
            rv,
            seen_events: 0,
            known: BTreeSet::new(),
            object_rv: BTreeMap::new(),
            metadata: BTreeMap::new(),
            created_namespaces: BTreeSet::new(),
            deleted_namespaces: BTreeSet::new(),
            config_maps: BTreeMap::new(),
            last: BTreeMap::new(),
            watchers: Vec::new(),
            drill: drill.clone(),
            latest: BTreeMap::new(),
            standby_nodes: None,
        };
        facade.metadata.insert(
            ("Namespace", String::new(), "kube-system".to_owned()),
            (
                json!({ RUN_LABEL: format!("served-{}", drill.name()) }),
                Value::Null,
            ),
        );
        for doc in &drill.workloads {
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
                facade.metadata.insert(
                    key,
                    (
                        doc.value
                            .pointer("/metadata/labels")
                            .cloned()
                            .unwrap_or(Value::Null),
                        doc.value
                            .pointer("/metadata/annotations")
                            .cloned()
                            .unwrap_or(Value::Null),
                    ),
                );
            }
        }
        facade.sync();
        facade
    }

    /// The simulation, read-only.
    pub fn simulation(&self) -> &Simulation {
        &self.sim
    }

    /// The current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    // ----- time -----

    /// Advances virtual time to `until`, one instant at a time, so every
    /// instant's changes are seen in the state of that instant.
    pub fn advance_to(&mut self, until: Time) {
        while let Some(at) = self.sim.next_event_time() {
            if at > until {
                break;
            }
            self.sim.advance_to(at);
            self.sync();
        }
        self.sim.advance_to(until);
        self.sync();
    }

    /// The clock in force.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    // ----- changes -----

    fn served_kind(kind: &str) -> Option<&'static str> {
        resources::by_kind(kind).map(|r| r.kind)
    }

    /// Turns the timeline's new events (and objects that appeared without
    /// one) into changes, and sends them to the watchers.
    fn sync(&mut self) {
        let events: Vec<_> = self.sim.observation().events[self.seen_events..].to_vec();
        self.seen_events = self.sim.observation().events.len();
        for event in events {
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
            } else if self.known.contains(&key) {
                "MODIFIED"
            } else {
                "ADDED"
            };
            self.push(key, kind_type, object);
        }
        // Objects whose state follows from their pods' and the budgets'
        // events without one of their own (a workload's ready count, a
        // budget's allowed disruptions, a claim made for a StatefulSet's
        // pod, a workload created through the API): a change when their
        // view changed.
        self.sim.refresh_budgets();
        for kind in [
            "PersistentVolumeClaim",
            "PersistentVolume",
            "VolumeAttachment",
            "Deployment",
            "StatefulSet",
            "DaemonSet",
            "Job",
            "PodDisruptionBudget",
        ] {
            let Some(resource) = resources::by_kind(kind) else {
                continue;
            };
            let objects = self.list(resource);
            if DERIVED_LIFETIMES.contains(&kind) {
                // Objects that exist only while the state they show does
                // (an attachment until its volume detaches): gone from the
                // list is a deletion, announced with its last state.
                let current: BTreeSet<Key> = objects.iter().map(|o| key_of(kind, o)).collect();
                let gone: Vec<(Key, Value)> = self
                    .last
                    .range((kind, String::new(), String::new())..)
                    .take_while(|(k, _)| k.0 == kind)
                    .filter(|(k, _)| !current.contains(*k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                for (key, object) in gone {
                    self.push(key, "DELETED", object);
                }
            }
            for object in objects {
                let key = key_of(kind, &object);
                let bare = strip_rv(&object);
                if self.last.get(&key) == Some(&bare) {
                    continue;
                }
                let kind_type = if self.known.contains(&key) {
                    "MODIFIED"
                } else {
                    "ADDED"
                };
                self.push(key, kind_type, object);
            }
        }
    }

    fn push(&mut self, key: Key, kind_type: &'static str, mut object: Value) {
        self.rv += 1;
        set_rv(&mut object, self.rv);
        self.latest.insert(key.0, self.rv);
        if kind_type == "DELETED" {
            self.last.remove(&key);
            self.known.remove(&key);
            self.object_rv.remove(&key);
        } else {
            self.last.insert(key.clone(), strip_rv(&object));
            self.known.insert(key.clone());
            self.object_rv.insert(key.clone(), self.rv);
        }
        let change = Change {
            rv: self.rv,
            kind: key.0,
            namespace: key.1,
            kind_type,
            object,
        };
        let now = self.sim.now();
        self.watchers.retain(|w| match watch_line(w, &change, now) {
            Some(line) => w.tx.send(line).is_ok(),
            None => !w.tx.is_closed(),
        });
        self.history.push_back(change);
        if self.history.len() > self.window {
            self.history.pop_front();
        }
    }

    /// Records an API edit that changed an object without a timeline event.
    fn api_change(&mut self, key: Key, before: Option<&Value>) {
        let after = self.view(key.0, &key.1, &key.2, false);
        match after {
            Some(object) => {
                if self.last.get(&key) != Some(&strip_rv(&object)) {
                    let kind_type = if self.known.contains(&key) {
                        "MODIFIED"
                    } else {
                        "ADDED"
                    };
                    self.push(key, kind_type, object);
                }
            }
            None => {
                if let Some(mut object) = before.cloned()
                    && self.known.contains(&key)
                {
                    strip_rv_mut(&mut object);
                    self.push(key, "DELETED", object);
                }
            }
        }
    }

    /// Sends a bookmark to every watcher that asked for them.
    pub fn bookmarks(&mut self) {
        let rv = self.rv;
        self.watchers.retain(|w| {
            if !w.bookmarks {
                return !w.tx.is_closed();
            }
            let object = json!({"kind": w.resource.kind, "apiVersion": w.resource.api_version(),
                                "metadata": {"resourceVersion": rv.to_string()}});
            w.tx.send(line(&json!({"type": "BOOKMARK", "object": object})))
                .is_ok()
        });
    }

    // ----- views -----

    /// The current object (or, with `gone`, the last state of a deleted
    /// node or pod) as JSON with its resourceVersion.
    fn view(&self, kind: &'static str, namespace: &str, name: &str, gone: bool) -> Option<Value> {
        let sim = &self.sim;
        let mut object = match kind {
            "Node" => {
                let id = sim.node_id(name).ok()?;
                if (sim.nodes()[id].phase == NodePhase::Gone) != gone {
                    return None;
                }
                to_json(&sim.node_view(id))
            }
            "Pod" => to_json(&sim.pod_view(sim.pod_id(namespace, name, gone)?)),
            _ if gone => return None,
            "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
                let w = sim.workload_id(&format!("{namespace}/{kind}/{name}"))?;
                self.workload_json(w)?
            }
            "PersistentVolumeClaim" => to_json(&sim.claim_view(sim.claim_id(namespace, name)?)),
            "PodDisruptionBudget" => to_json(&sim.pdb_view(sim.pdb_index(namespace, name)?)),
            "Namespace" => {
                let exists =
                    sim.namespace_names().contains(name) || self.created_namespaces.contains(name);
                if !exists {
                    return None;
                }
                let mut object = to_json(&Simulation::namespace_view(name));
                if self.deleted_namespaces.contains(name) {
                    // Terminating while its pods terminate, then gone.
                    if !self.has_pods(name) {
                        return None;
                    }
                    object["status"]["phase"] = json!("Terminating");
                }
                object
            }
            "ConfigMap" => self
                .config_maps
                .get(&(namespace.to_owned(), name.to_owned()))?
                .clone(),
            "StorageClass" => sim
                .storage_class_views()
                .iter()
                .find(|c| c.metadata.name.as_deref() == Some(name))
                .map(to_json)?,
            "PersistentVolume" => sim
                .volume_views()
                .iter()
                .find(|v| v.metadata.name.as_deref() == Some(name))
                .map(to_json)?,
            "VolumeAttachment" => sim
                .attachment_views()
                .iter()
                .find(|a| a.metadata.name.as_deref() == Some(name))
                .map(to_json)?,
            "Lease" => sim
                .lease_views()
                .iter()
                .find(|l| {
                    l.metadata.name.as_deref() == Some(name) && namespace == "kube-node-lease"
                })
                .map(to_json)?,
            _ => return None,
        };
        self.decorate(kind, &mut object);
        Some(object)
    }

    fn workload_json(&self, w: usize) -> Option<Value> {
        let sim = &self.sim;
        Some(match sim.workloads()[w].kind {
            WorkloadKind::Deployment => to_json(&sim.deployment_view(w)),
            WorkloadKind::StatefulSet { .. } => to_json(&sim.statefulset_view(w)),
            WorkloadKind::DaemonSet => to_json(&sim.daemonset_view(w)),
            WorkloadKind::Job { .. } => to_json(&sim.job_view(w)),
            _ => return None,
        })
    }

    /// Adds the resourceVersion and the metadata written through the API.
    fn decorate(&self, kind: &'static str, object: &mut Value) {
        let key = key_of(kind, object);
        if let Some((labels, annotations)) = self.metadata.get(&key)
            && let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut)
        {
            if !labels.is_null() {
                meta.insert("labels".to_owned(), labels.clone());
            }
            if !annotations.is_null() {
                meta.insert("annotations".to_owned(), annotations.clone());
            }
        }
        let rv = self.object_rv.get(&key).copied().unwrap_or(1);
        set_rv(object, rv);
    }

    /// Every object of a resource.
    fn list(&self, resource: &Resource) -> Vec<Value> {
        let sim = &self.sim;
        let kind = resource.kind;
        let mut objects: Vec<Value> = match kind {
            "Node" => (0..sim.nodes().len())
                .filter(|&n| sim.node_exists(n))
                .map(|n| to_json(&sim.node_view(n)))
                .collect(),
            "Pod" => (0..sim.pods().len())
                .filter(|&p| sim.pods()[p].phase != PodPhase::Gone)
                .map(|p| to_json(&sim.pod_view(p)))
                .collect(),
            "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => sim
                .live_workloads()
                .into_iter()
                .filter_map(|w| self.workload_json(w))
                .filter(|o| o["kind"] == kind)
                .collect(),
            "PersistentVolumeClaim" => (0..sim.claims().len())
                .map(|c| to_json(&sim.claim_view(c)))
                .collect(),
            "PodDisruptionBudget" => (0..sim.pdbs().len())
                .map(|i| to_json(&sim.pdb_view(i)))
                .collect(),
            "Namespace" => {
                let mut names = sim.namespace_names();
                names.extend(self.created_namespaces.iter().cloned());
                names
                    .iter()
                    .filter_map(|n| self.view("Namespace", "", n, false))
                    .collect()
            }
            "ConfigMap" => self.config_maps.values().cloned().collect(),
            "StorageClass" => sim.storage_class_views().iter().map(to_json).collect(),
            "Lease" => sim.lease_views().iter().map(to_json).collect(),
            "PersistentVolume" => sim.volume_views().iter().map(to_json).collect(),
            "VolumeAttachment" => sim.attachment_views().iter().map(to_json).collect(),
            _ => Vec::new(),
        };
        for object in &mut objects {
            self.decorate(kind, object);
        }
        objects.sort_by(|a, b| {
            let k = |o: &Value| (text(o, "/metadata/namespace"), text(o, "/metadata/name"));
            k(a).cmp(&k(b))
        });
        objects
    }

    // ----- requests -----

    /// Answers one request.
    pub fn handle(&mut self, request: Request) -> Reply {
        if matches!(request.method.as_str(), "GET" | "HEAD")
            && self.sim_pdb_needs_refresh(&request.path)
        {
            self.sim.refresh_budgets();
        }
        match self.route(&request) {
            Ok(reply) => reply,
            Err(error) => error.reply(),
        }
    }

    fn sim_pdb_needs_refresh(&self, path: &str) -> bool {
        path.contains("poddisruptionbudgets")
    }

    fn route(&mut self, request: &Request) -> ApiResult {
        let path = request.path.trim_end_matches('/');
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let ok = |v: Value| Ok(Reply::Json(200, v));
        match segments.as_slice() {
            ["version"] => ok(resources::version()),
            // Readiness follows the modelled API behind the stable
            // endpoint (quorum and a healthy apiserver holding it), so a
            // probe through the façade measures what the simulator models.
            ["readyz"] if self.drill.topology.endpoint.is_some() && !self.sim.api_available() => {
                Err(ApiError::new(
                    503,
                    "ServiceUnavailable",
                    "the modelled API is unavailable: no quorum or no healthy apiserver holds the endpoint",
                ))
            }
            ["healthz"] | ["readyz"] | ["livez"] => ok(json!("ok")),
            ["api"] => ok(resources::core_versions()),
            ["apis"] => ok(resources::groups()),
            ["api", "v1"] => ok(resources::resource_list("", "v1").unwrap_or_default()),
            ["apis", group] => resources::group(group)
                .map(|g| Reply::Json(200, g))
                .ok_or_else(|| {
                    ApiError::new(
                        404,
                        "NotFound",
                        "the server could not find the requested resource",
                    )
                }),
            ["apis", group, version] => resources::resource_list(group, version)
                .map(|g| Reply::Json(200, g))
                .ok_or_else(|| {
                    ApiError::new(
                        404,
                        "NotFound",
                        "the server could not find the requested resource",
                    )
                }),
            ["openapi", "v3"] => ok(resources::openapi_index()),
            ["openapi", "v3", rest @ ..] => resources::openapi_group(&rest.join("/"))
                .map(|g| Reply::Json(200, g))
                .ok_or_else(|| {
                    ApiError::new(
                        404,
                        "NotFound",
                        "the server could not find the requested resource",
                    )
                }),
            ["bench", "v1", rest @ ..] => self.bench(request, rest),
            ["api", "v1", rest @ ..] => self.resource(request, "", "v1", rest),
            ["apis", group, version, rest @ ..] => self.resource(request, group, version, rest),
            _ => Err(ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )),
        }
    }

    fn bench(&mut self, request: &Request, rest: &[&str]) -> ApiResult {
        let query =
            |name: &str| {
                request.query.get(name).cloned().ok_or_else(|| {
                    ApiError::bad_request(format!("missing query parameter `{name}`"))
                })
            };
        if request.method == "POST"
            && let [endpoint] = rest
            && let Some(operation) = NodeOperation::named(endpoint)
        {
            return self.on_node(&query("node")?, operation);
        }
        match (request.method.as_str(), rest) {
            ("POST", ["advance"]) => {
                if self.clock != Clock::Step {
                    return Err(ApiError::new(
                        409,
                        "Conflict",
                        "time follows the wall clock (--speed); advance needs --step",
                    ));
                }
                let parse = |s: &str| {
                    s.parse::<Duration>()
                        .map_err(|e| ApiError::bad_request(format!("`{s}`: {e}")))
                };
                let target = match (request.query.get("by"), request.query.get("to")) {
                    (Some(by), None) => self.sim.now() + parse(by)?.as_millis(),
                    (None, Some(to)) => parse(to)?.as_millis().max(self.sim.now()),
                    _ => return Err(ApiError::bad_request("give exactly one of `by` and `to`")),
                };
                self.advance_to(target);
                Ok(answer(&protocol::Advanced {
                    now_ms: self.sim.now(),
                    resource_version: self.rv.to_string(),
                }))
            }
            ("POST", ["fail-backup"]) => {
                let schedule = query("schedule")?;
                let name = self.sim.fail_backup(&schedule).map_err(from_op)?;
                self.sync();
                Ok(answer(&protocol::BackupFailed { failed: name }))
            }
            ("GET", ["now"]) => Ok(answer(&protocol::Now {
                now_ms: self.sim.now(),
                resource_version: self.rv.to_string(),
                next_ms: self.sim.next_event_time(),
                epoch_seconds: crate::sim::EPOCH_SECONDS,
                drill: self.drill.name().to_owned(),
                step: self.clock == Clock::Step,
                latest: self
                    .latest
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), v.to_string()))
                    .collect(),
                endpoint_holder: self.sim.endpoint_holder(),
                other_control_plane: self.sim.other_control_plane(),
            })),
            // etcd's member list needs quorum, as `etcdctl member list` does.
            ("GET", ["etcd"]) if !self.sim.control_plane().has_quorum() => Err(ApiError::new(
                503,
                "ServiceUnavailable",
                "etcd has no quorum: the member list cannot be read",
            )),
            ("GET", ["etcd"]) => Ok(answer(&protocol::EtcdMembers {
                voters: self.sim.control_plane().voters(),
                learners: self.sim.control_plane().learners(),
            })),
            ("GET", ["autoscaler-pick"]) => {
                let pool = query("pool")?;
                Ok(answer(&protocol::AutoscalerPick {
                    node: self.sim.autoscaler_pick(&pool),
                }))
            }
            ("GET", ["backups"]) => Ok(Reply::Json(200, self.velero_backups())),
            ("POST", ["reset"]) => self.reset(request),
            ("GET", ["timeline"]) => Ok(Reply::Json(
                200,
                serde_json::to_value(&self.sim.observation().events).unwrap_or_default(),
            )),
            _ => Err(ApiError::new(
                404,
                "NotFound",
                "no such bench endpoint; see POST /bench/v1/advance, /crash, /remove, /replace, /recreate-control-plane, /fail-backup, /reset, GET /bench/v1/now, /timeline, /etcd, /autoscaler-pick, /backups",
            )),
        }
    }

    /// A bench endpoint that acts on one node by name: the operation, the
    /// watchers told, and what was done as the answer.
    fn on_node(&mut self, name: &str, operation: NodeOperation) -> ApiResult {
        let node = self.node_of(name)?;
        match operation {
            NodeOperation::Crash => self.sim.crash_node_api(node),
            // The server goes; the Node object is the caller's (the bench
            // deletes it through the API after its drain).
            NodeOperation::Remove => self.sim.delete_node(node, false, Duration::ZERO),
            NodeOperation::Replace => self.sim.replace_node(node),
            NodeOperation::RecreateControlPlane => self.sim.recreate_control_plane(node, None),
        }
        self.sync();
        Ok(answer(&protocol::NodeDone {
            operation,
            node: name.to_owned(),
            now_ms: self.sim.now(),
        }))
    }

    fn node_of(&self, name: &str) -> Result<usize, ApiError> {
        self.sim
            .node_id(name)
            .map_err(|e| ApiError::new(404, "NotFound", e.to_string()))
    }

    /// The simulator's backups as Velero lists them (`velero.io/v1`
    /// Backups in namespace `velero`), for clients that judge a preflight.
    fn velero_backups(&self) -> Value {
        let stamp = |ms: i64| {
            jiff::Timestamp::from_second(crate::sim::EPOCH_SECONDS + ms.div_euclid(1000))
                .map(|t| t.to_string())
                .unwrap_or_default()
        };
        let items: Vec<Value> = self
            .sim
            .backups()
            .iter()
            .map(|b| {
                json!({
                    "apiVersion": "velero.io/v1", "kind": "Backup",
                    "metadata": {"name": b.name, "namespace": "velero",
                                 "labels": {VELERO_SCHEDULE_LABEL: b.schedule},
                                 "creationTimestamp": stamp(b.started)},
                    "status": {"phase": format!("{:?}", b.phase),
                               "startTimestamp": stamp(b.started),
                               "completionTimestamp": b.finished.map(stamp)},
                })
            })
            .collect();
        json!({"apiVersion": "velero.io/v1", "kind": "BackupList", "metadata": {}, "items": items})
    }

    /// `POST /bench/v1/reset?seed=N` with `{"guards": [...]}`: provisions the
    /// served drill again from nothing with these guards and seed (a real
    /// backend's re-provisioning for a negative control); with
    /// `"workloads": false`, its nodes only. Watches end; the
    /// resourceVersions continue.
    fn reset(&mut self, request: &Request) -> ApiResult {
        let seed = request
            .query
            .get("seed")
            .ok_or_else(|| ApiError::bad_request("missing query parameter `seed`"))?
            .parse::<u64>()
            .map_err(|e| ApiError::bad_request(format!("seed: {e}")))?;
        let body: protocol::Reset = if request.body.is_empty() {
            protocol::Reset::default()
        } else {
            serde_json::from_value(Self::body(request)?)
                .map_err(|e| ApiError::bad_request(format!("the reset body: {e}")))?
        };
        let mut drill = self.drill.clone();
        // The guards come as text: their positions make them YAML-shaped
        // (JSON is YAML), and `unlabelledTerms` carries the one ablation
        // their serialised form leaves out.
        if let Some(text) = &body.guards {
            let guards: Vec<crate::scenario::Located<GuardSpec>> = serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("guards: {e}")))?;
            drill.spec.guards = guards
                .into_iter()
                .map(|mut g| {
                    let name = g.value.name.as_str();
                    g.value.unlabelled_term = body.unlabelled_terms.iter().any(|t| t == name);
                    g
                })
                .collect();
        }
        // `"workloads": false`: an empty cluster, as kind and Talos create
        // one, for the bench to apply the workloads to.
        if body.workloads == Some(false) {
            drill.workloads.clear();
        }
        let sim = provision(&drill, seed, self.standby_nodes)
            .map_err(|e| ApiError::invalid(format!("cannot provision the drill again: {e}")))?;
        let rv = self.rv;
        let standby_nodes = self.standby_nodes;
        *self = Facade::with_first_rv(&drill, sim, self.clock, self.window, rv);
        self.standby_nodes = standby_nodes;
        Ok(answer(&protocol::ResetDone {
            reset: drill.name().to_owned(),
            seed,
            resource_version: self.rv.to_string(),
        }))
    }

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
        let (plural, name, sub) = match rest {
            [plural] => (*plural, None, None),
            [plural, name] => (*plural, Some(name.to_string()), None),
            [plural, name, sub] => (*plural, Some(name.to_string()), Some(*sub)),
            _ => {
                return Err(ApiError::new(
                    404,
                    "NotFound",
                    "the server could not find the requested resource",
                ));
            }
        };
        let resource = resources::find(group, version, plural).ok_or_else(|| {
            ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        })?;
        if namespace.is_some() && !resource.namespaced {
            return Err(ApiError::new(
                404,
                "NotFound",
                format!("{} is not namespaced", resource.qualified()),
            ));
        }
        if let Some(sub) = sub
            && !resource.subresources.contains(&sub)
        {
            return Err(ApiError::new(
                404,
                "NotFound",
                format!("{}/{sub} is not served", resource.qualified()),
            ));
        }
        let namespace_or_default = || namespace.clone().unwrap_or_else(|| "default".to_owned());
        let ns_of = || {
            if resource.namespaced {
                namespace_or_default()
            } else {
                String::new()
            }
        };
        match (request.method.as_str(), name, sub) {
            ("GET", None, None) => {
                if request
                    .query
                    .get("watch")
                    .is_some_and(|w| w == "true" || w == "1")
                {
                    self.watch(request, resource, namespace)
                } else {
                    self.list_reply(request, resource, namespace)
                }
            }
            ("GET", Some(name), None | Some("status")) => {
                if resource.namespaced && namespace.is_none() {
                    return Err(ApiError::not_found(resource, &name));
                }
                let object = self
                    .view(resource.kind, &ns_of(), &name, false)
                    .ok_or_else(|| ApiError::not_found(resource, &name))?;
                Ok(self.single(request, resource, object))
            }
            ("GET", Some(name), Some("scale")) => {
                let object = self
                    .view(resource.kind, &ns_of(), &name, false)
                    .ok_or_else(|| ApiError::not_found(resource, &name))?;
                Ok(Reply::Json(200, scale_of(&object)))
            }
            ("POST", None, None) => self.create(request, resource, ns_of()),
            ("POST", Some(name), Some("eviction")) => {
                self.evict(request, resource, &ns_of(), &name)
            }
            ("PUT" | "PATCH", Some(name), sub) => {
                self.update(request, resource, &ns_of(), &name, sub)
            }
            ("DELETE", Some(name), None) => self.delete(request, resource, &ns_of(), &name),
            _ => Err(ApiError::new(
                405,
                "MethodNotAllowed",
                format!("{} is not supported on this path", request.method),
            )),
        }
    }

    fn single(&self, request: &Request, resource: &Resource, object: Value) -> Reply {
        if table::wants_table(&request.accept) {
            Reply::Json(
                200,
                table::table(
                    resource.kind,
                    &[object],
                    &self.rv.to_string(),
                    self.sim.now(),
                ),
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

    fn selected(
        &self,
        request: &Request,
        resource: &Resource,
        namespace: &Option<String>,
    ) -> Result<Vec<Value>, ApiError> {
        let (labels, fields) = Self::selectors(request)?;
        Ok(self
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

    fn list_reply(
        &self,
        request: &Request,
        resource: &Resource,
        namespace: Option<String>,
    ) -> ApiResult {
        let mut items = self.selected(request, resource, &namespace)?;
        let offset = match request.query.get("continue").filter(|c| !c.is_empty()) {
            Some(token) => {
                let (rv, offset) = token
                    .split_once(':')
                    .and_then(|(rv, o)| Some((rv.parse::<u64>().ok()?, o.parse::<usize>().ok()?)))
                    .ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
                if rv < self.oldest_rv() {
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
        let mut metadata = json!({"resourceVersion": self.rv.to_string()});
        if limit > 0 && items.len() > limit {
            items.truncate(limit);
            let next = offset + limit;
            metadata["continue"] = json!(format!("{}:{next}", self.rv));
            metadata["remainingItemCount"] = json!(total - next);
        }
        if table::wants_table(&request.accept) {
            let mut t = table::table(resource.kind, &items, &self.rv.to_string(), self.sim.now());
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

    fn oldest_rv(&self) -> u64 {
        self.history.front().map_or(0, |c| c.rv.saturating_sub(1))
    }

    fn watch(
        &mut self,
        request: &Request,
        resource: &'static Resource,
        namespace: Option<String>,
    ) -> ApiResult {
        let (labels, fields) = Self::selectors(request)?;
        let (tx, rx) = mpsc::unbounded_channel();
        let watcher = Watcher {
            resource,
            namespace: namespace.clone(),
            labels,
            fields,
            table: table::wants_table(&request.accept),
            bookmarks: request
                .query
                .get("allowWatchBookmarks")
                .is_some_and(|b| b == "true"),
            tx,
        };
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
        match from {
            Some(rv) if !send_initial => {
                let rv: u64 = rv.parse().map_err(|_| {
                    ApiError::bad_request(format!("invalid resourceVersion `{rv}`"))
                })?;
                if rv < self.oldest_rv() {
                    let status = status_body(
                        410,
                        "Expired",
                        &format!("too old resource version: {rv} ({})", self.oldest_rv() + 1),
                    );
                    let _ = watcher
                        .tx
                        .send(line(&json!({"type": "ERROR", "object": status})));
                    return Ok(Reply::Watch {
                        events: rx,
                        timeout: Some(std::time::Duration::ZERO),
                    });
                }
                let now = self.sim.now();
                for change in self.history.iter().filter(|c| c.rv > rv) {
                    if let Some(l) = watch_line(&watcher, change, now) {
                        let _ = watcher.tx.send(l);
                    }
                }
            }
            _ => {
                // No resourceVersion: the current state as ADDED events.
                for object in self.selected(request, resource, &namespace)? {
                    let l = event_line(&watcher, "ADDED", &object, self.sim.now());
                    let _ = watcher.tx.send(l);
                }
                if send_initial {
                    let object = json!({"kind": resource.kind, "apiVersion": resource.api_version(),
                        "metadata": {"resourceVersion": self.rv.to_string(),
                                     "annotations": {"k8s.io/initial-events-end": "true"}}});
                    let _ = watcher
                        .tx
                        .send(line(&json!({"type": "BOOKMARK", "object": object})));
                }
            }
        }
        self.watchers.push(watcher);
        Ok(Reply::Watch {
            events: rx,
            timeout,
        })
    }

    fn body(request: &Request) -> Result<Value, ApiError> {
        serde_json::from_slice(&request.body)
            .map_err(|e| ApiError::bad_request(format!("the request body is not valid JSON: {e}")))
    }

    fn create(
        &mut self,
        request: &Request,
        resource: &'static Resource,
        namespace: String,
    ) -> ApiResult {
        let mut object = Self::body(request)?;
        if !object.is_object() {
            return Err(ApiError::bad_request("the request body is not an object"));
        }
        if object.get("kind").and_then(Value::as_str) != Some(resource.kind) {
            return Err(ApiError::bad_request(format!(
                "the body's kind is not {}",
                resource.kind
            )));
        }
        let name = object
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if name.is_empty() {
            return Err(ApiError::invalid(format!(
                "{} is invalid: metadata.name: Required value",
                resource.kind
            )));
        }
        if resource.namespaced {
            match object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
            {
                Some(ns) if ns != namespace => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => object["metadata"]["namespace"] = json!(namespace),
            }
        }
        // Nothing is created in a namespace that was deleted; ConfigMaps,
        // which the simulator does not derive from anything, also need it
        // to exist, as on a real API server.
        if resource.namespaced {
            let exists = self.view("Namespace", "", &namespace, false).is_some();
            if exists && self.deleted_namespaces.contains(&namespace) {
                return Err(ApiError::new(
                    403,
                    "Forbidden",
                    format!(
                        "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                        resource.qualified()
                    ),
                ));
            }
            if !exists
                && (resource.kind == "ConfigMap" || self.deleted_namespaces.contains(&namespace))
            {
                return Err(ApiError::new(
                    404,
                    "NotFound",
                    format!("namespaces \"{namespace}\" not found"),
                ));
            }
        }
        if self.view(resource.kind, &namespace, &name, false).is_some() {
            return Err(ApiError::new(
                409,
                "AlreadyExists",
                format!("{} \"{name}\" already exists", resource.qualified()),
            ));
        }
        let key: Key = (resource.kind, namespace.clone(), name.clone());
        match resource.kind {
            "Namespace" => {
                self.deleted_namespaces.remove(&name);
                self.created_namespaces.insert(name.clone());
            }
            "ConfigMap" => {
                strip_rv_mut(&mut object);
                if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert(
                        "creationTimestamp".to_owned(),
                        json!(stamp(self.sim.now() as i64)),
                    );
                }
                self.config_maps
                    .insert((namespace.clone(), name.clone()), object.clone());
            }
            "Node" | "StorageClass" | "Lease" => {
                return Err(ApiError::new(
                    405,
                    "MethodNotAllowed",
                    format!(
                        "{} are not created through the API: they come from the drill",
                        resource.qualified()
                    ),
                ));
            }
            "PersistentVolume" | "VolumeAttachment" => {
                return Err(ApiError::new(
                    405,
                    "MethodNotAllowed",
                    format!(
                        "{} are not created through the API: the simulator provisions and attaches volumes for the claims and pods that use them",
                        resource.qualified()
                    ),
                ));
            }
            _ => {
                self.sim
                    .apply_manifest(object.clone(), &self.guards)
                    .map_err(from_op)?;
            }
        }
        self.metadata.insert(
            key.clone(),
            (
                object
                    .pointer("/metadata/labels")
                    .cloned()
                    .unwrap_or(Value::Null),
                object
                    .pointer("/metadata/annotations")
                    .cloned()
                    .unwrap_or(Value::Null),
            ),
        );
        self.sync();
        self.api_change(key.clone(), None);
        let created = self
            .view(resource.kind, &namespace, &name, false)
            .ok_or_else(|| {
                ApiError::invalid(format!(
                    "{} \"{name}\" was refused by a guard",
                    resource.qualified()
                ))
            })?;
        Ok(Reply::Json(201, created))
    }

    fn evict(
        &mut self,
        request: &Request,
        resource: &Resource,
        namespace: &str,
        name: &str,
    ) -> ApiResult {
        let pod = self
            .sim
            .pod_id(namespace, name, false)
            .ok_or_else(|| ApiError::not_found(resource, name))?;
        let body: Value = if request.body.is_empty() {
            json!({})
        } else {
            Self::body(request)?
        };
        let grace = body
            .pointer("/deleteOptions/gracePeriodSeconds")
            .and_then(Value::as_u64)
            .map(Duration::from_secs);
        let result = self.sim.evict_api(pod, grace);
        self.sync();
        match result {
            Ok(()) => Ok(Reply::Json(
                201,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
            )),
            Err(message) => {
                let mut status = status_body(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                );
                status["details"] =
                    json!({"causes": [{"reason": "DisruptionBudget", "message": message}]});
                Ok(Reply::Json(429, status))
            }
        }
    }

    fn update(
        &mut self,
        request: &Request,
        resource: &'static Resource,
        namespace: &str,
        name: &str,
        sub: Option<&str>,
    ) -> ApiResult {
        let apply = request.method == "PATCH" && patch::is_apply(&request.content_type);
        let Some(current) = self.view(resource.kind, namespace, name, false) else {
            // Server-side apply creates what does not exist yet.
            if apply && sub.is_none() {
                return self.create(request, resource, namespace.to_owned());
            }
            return Err(ApiError::not_found(resource, name));
        };
        let base = if sub == Some("scale") {
            scale_of(&current)
        } else {
            current.clone()
        };
        let wanted = if request.method == "PATCH" {
            let mut patched = base.clone();
            patch::apply(&mut patched, &request.content_type, &request.body).map_err(
                |e| match e {
                    patch::PatchError::Unsupported(_) => {
                        ApiError::new(415, "UnsupportedMediaType", e.to_string())
                    }
                    other => ApiError::invalid(other.to_string()),
                },
            )?;
            if apply {
                let mut pruned = patch::prune_to(&patched, &base);
                self.readmit(namespace, &mut pruned);
                pruned
            } else {
                patched
            }
        } else {
            Self::body(request)?
        };
        let stale = wanted
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|rv| {
                Some(rv)
                    != base
                        .pointer("/metadata/resourceVersion")
                        .and_then(Value::as_str)
            });
        if stale {
            return Err(ApiError::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
                    resource.qualified()
                ),
            ));
        }
        if wanted
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .is_some_and(|n| n != name)
        {
            return Err(ApiError::bad_request(
                "the name of the object does not match the name on the URL",
            ));
        }
        let key: Key = (resource.kind, namespace.to_owned(), name.to_owned());
        match sub {
            Some("scale") => {
                let replicas = replicas_of(&wanted)?;
                self.set_replicas(namespace, resource.kind, name, replicas)?;
                self.sync();
                let after = self
                    .view(resource.kind, namespace, name, false)
                    .unwrap_or(current);
                return Ok(Reply::Json(200, scale_of(&after)));
            }
            Some(_) => {
                if strip_rv(&wanted).get("status") != strip_rv(&current).get("status") {
                    return Err(ApiError::invalid(
                        "status is computed by the simulator and cannot be written",
                    ));
                }
            }
            None => self.commit(resource, namespace, name, &current, &wanted)?,
        }
        self.sync();
        self.api_change(key, Some(&current));
        let after = self
            .view(resource.kind, namespace, name, false)
            .ok_or_else(|| ApiError::not_found(resource, name))?;
        Ok(Reply::Json(200, after))
    }

    fn set_replicas(
        &mut self,
        namespace: &str,
        kind: &str,
        name: &str,
        replicas: u32,
    ) -> Result<(), ApiError> {
        let w = self
            .sim
            .workload_id(&format!("{namespace}/{kind}/{name}"))
            .ok_or_else(|| {
                ApiError::new(404, "NotFound", format!("no {kind} {namespace}/{name}"))
            })?;
        self.sim.set_replicas(w, replicas).map_err(from_op)
    }

    /// Runs the guards' mutation over an applied workload's pod template,
    /// as admission does on every write: an apply of the manifest as
    /// written must not read as removing what the guard added.
    fn readmit(&self, namespace: &str, object: &mut Value) {
        let Some(spec_value) = object.pointer_mut("/spec/template/spec") else {
            return;
        };
        // A quantity written as a YAML number (`cpu: 1`) is the string
        // "1" once admitted, as the API server reads it.
        for list in ["containers", "initContainers"] {
            for container in spec_value
                .get_mut(list)
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                for part in ["requests", "limits"] {
                    if let Some(map) = container
                        .pointer_mut(&format!("/resources/{part}"))
                        .and_then(Value::as_object_mut)
                    {
                        for value in map.values_mut() {
                            if value.is_number() {
                                *value = Value::String(value.to_string());
                            }
                        }
                    }
                }
            }
        }
        let Ok(mut spec) =
            serde_json::from_value::<k8s_openapi::api::core::v1::PodSpec>(spec_value.clone())
        else {
            return;
        };
        let labels: BTreeMap<String, String> = object
            .pointer("/spec/template/metadata/labels")
            .and_then(|l| serde_json::from_value(l.clone()).ok())
            .unwrap_or_default();
        let mut classes: Vec<Option<String>> = object
            .pointer("/spec/volumeClaimTemplates")
            .and_then(Value::as_array)
            .map(|templates| {
                templates
                    .iter()
                    .map(|t| {
                        t.pointer("/spec/storageClassName")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .collect()
            })
            .unwrap_or_default();
        for volume in spec.volumes.iter().flatten() {
            if let Some(claim) = &volume.persistent_volume_claim
                && let Some(id) = self.sim.claim_id(namespace, &claim.claim_name)
            {
                classes.push(self.sim.claims()[id].class.clone());
            }
        }
        for guard in &self.guards {
            if guard.mutate
                && crate::policy::admission::guard_matches(
                    &guard.matches,
                    namespace,
                    &labels,
                    &classes,
                )
            {
                crate::policy::admission::inject_requirement(
                    &mut spec,
                    &guard.require.node_affinity,
                );
                if guard.unlabelled_term {
                    crate::policy::admission::add_unlabelled_term(&mut spec);
                }
            }
        }
        if let Ok(value) = serde_json::to_value(&spec) {
            object["spec"]["template"]["spec"] = value;
        }
    }

    /// Applies what changed between the current and the wanted object,
    /// through the simulator's primitives; a change the simulator cannot
    /// make is a 422 naming the field.
    fn commit(
        &mut self,
        resource: &Resource,
        namespace: &str,
        name: &str,
        current: &Value,
        wanted: &Value,
    ) -> Result<(), ApiError> {
        let kind = resource.kind;
        let labels = wanted
            .pointer("/metadata/labels")
            .cloned()
            .unwrap_or(Value::Null);
        let annotations = wanted
            .pointer("/metadata/annotations")
            .cloned()
            .unwrap_or(Value::Null);
        let changed = |pointer: &str| current.pointer(pointer) != wanted.pointer(pointer);
        match kind {
            "Node" => {
                let node = self
                    .sim
                    .node_id(name)
                    .map_err(|_| ApiError::not_found(resource, name))?;
                let map = |v: &Value| -> Result<BTreeMap<String, String>, ApiError> {
                    if v.is_null() {
                        return Ok(BTreeMap::new());
                    }
                    serde_json::from_value(v.clone())
                        .map_err(|e| ApiError::invalid(format!("metadata: {e}")))
                };
                let (l, a) = (map(&labels)?, map(&annotations)?);
                let taints: Vec<k8s_openapi::api::core::v1::Taint> =
                    match wanted.pointer("/spec/taints") {
                        Some(t) if !t.is_null() => serde_json::from_value(t.clone())
                            .map_err(|e| ApiError::invalid(format!("spec.taints: {e}")))?,
                        _ => Vec::new(),
                    };
                let unschedulable = wanted
                    .pointer("/spec/unschedulable")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                if changed("/metadata/labels") || changed("/metadata/annotations") {
                    self.sim.set_node_metadata(node, l, a);
                }
                if changed("/spec/taints") {
                    self.sim.set_node_taints(node, taints);
                }
                if changed("/spec/unschedulable") {
                    self.sim.set_unschedulable(node, unschedulable);
                }
                return Ok(());
            }
            "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
                if changed("/spec/selector") {
                    return Err(ApiError::invalid(format!(
                        "{kind}.spec.selector: a workload's selector cannot change"
                    )));
                }
                if changed("/spec/template") {
                    let images = image_changes(current, wanted)
                        .filter(|_| kind == "Deployment")
                        .ok_or_else(|| {
                            ApiError::invalid(format!(
                                "{kind}.spec.template: the simulator models a rollout as a Deployment's new container image; other template changes are not modelled"
                            ))
                        })?;
                    let key = format!("{namespace}/{kind}/{name}");
                    for (container, image) in images {
                        self.sim
                            .rollout_workload(&key, &image, Some(&container))
                            .map_err(|e| ApiError::invalid(e.to_string()))?;
                    }
                }
                if changed("/spec/replicas") {
                    let replicas = replicas_of(wanted)?;
                    self.set_replicas(namespace, kind, name, replicas)?;
                }
            }
            "PodDisruptionBudget" => {
                if changed("/spec") {
                    let index = self
                        .sim
                        .pdb_index(namespace, name)
                        .ok_or_else(|| ApiError::not_found(resource, name))?;
                    let mut object: k8s_openapi::api::policy::v1::PodDisruptionBudget =
                        serde_json::from_value(wanted.clone())
                            .map_err(|e| ApiError::invalid(e.to_string()))?;
                    object.metadata.namespace = Some(namespace.to_owned());
                    self.sim.set_pdb(index, object).map_err(from_op)?;
                }
            }
            "Namespace" => {}
            "ConfigMap" => {
                let mut object = wanted.clone();
                strip_rv_mut(&mut object);
                self.config_maps
                    .insert((namespace.to_owned(), name.to_owned()), object);
            }
            _ => {
                if changed("/spec") {
                    return Err(ApiError::invalid(format!(
                        "{kind}: only labels and annotations can change here; the simulator derives the rest"
                    )));
                }
            }
        }
        self.metadata.insert(
            (resource.kind, namespace.to_owned(), name.to_owned()),
            (labels, annotations),
        );
        Ok(())
    }

    fn delete(
        &mut self,
        request: &Request,
        resource: &'static Resource,
        namespace: &str,
        name: &str,
    ) -> ApiResult {
        let current = self
            .view(resource.kind, namespace, name, false)
            .ok_or_else(|| ApiError::not_found(resource, name))?;
        let options: Value = if request.body.is_empty() {
            json!({})
        } else {
            Self::body(request)?
        };
        let grace = request
            .query
            .get("gracePeriodSeconds")
            .and_then(|g| g.parse::<u64>().ok())
            .or_else(|| options.get("gracePeriodSeconds").and_then(Value::as_u64))
            .map(Duration::from_secs);
        let propagation = request.query.get("propagationPolicy").cloned().or_else(|| {
            options
                .get("propagationPolicy")
                .and_then(Value::as_str)
                .map(str::to_owned)
        });
        let propagation = match propagation.as_deref() {
            None | Some("Background") | Some("Foreground") => Propagation::Cascade,
            Some("Orphan") => Propagation::Orphan,
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "propagationPolicy: Unsupported value: \"{other}\""
                )));
            }
        };
        let key: Key = (resource.kind, namespace.to_owned(), name.to_owned());
        match resource.kind {
            "Node" => {
                let node = self
                    .sim
                    .node_id(name)
                    .map_err(|_| ApiError::not_found(resource, name))?;
                self.sim.delete_node_api(node).map_err(from_op)?;
            }
            "Pod" => {
                let pod = self
                    .sim
                    .pod_id(namespace, name, false)
                    .ok_or_else(|| ApiError::not_found(resource, name))?;
                self.sim.delete_pod_api(pod, grace);
            }
            "Deployment" | "StatefulSet" | "DaemonSet" | "Job" => {
                let w = self
                    .sim
                    .workload_id(&format!("{namespace}/{}/{name}", resource.kind))
                    .ok_or_else(|| ApiError::not_found(resource, name))?;
                self.sim.delete_workload(w, propagation);
                self.metadata.remove(&key);
            }
            "PodDisruptionBudget" => {
                let index = self
                    .sim
                    .pdb_index(namespace, name)
                    .ok_or_else(|| ApiError::not_found(resource, name))?;
                self.sim.delete_pdb(index);
                self.metadata.remove(&key);
            }
            "ConfigMap" => {
                self.config_maps
                    .remove(&(namespace.to_owned(), name.to_owned()));
                self.metadata.remove(&key);
            }
            "Namespace" => {
                self.delete_namespace(name);
                // Terminating until its pods are gone (no finalizers are
                // modelled beyond that).
                let mut terminating = current;
                terminating["status"] = json!({"phase": "Terminating"});
                let shown = self
                    .view(resource.kind, namespace, name, false)
                    .unwrap_or(terminating);
                return Ok(Reply::Json(200, shown));
            }
            _ => {
                return Err(ApiError::new(
                    405,
                    "MethodNotAllowed",
                    format!(
                        "deleting {} is not modelled by the simulator",
                        resource.qualified()
                    ),
                ));
            }
        }
        self.sync();
        self.api_change(key.clone(), Some(&current));
        let after = self
            .view(resource.kind, namespace, name, false)
            .unwrap_or(current);
        Ok(Reply::Json(200, after))
    }
}

impl Facade {
    /// Deletes a namespace and what lives in it: its ConfigMaps, budgets
    /// and workloads (their pods with them) and bare pods. Claims stay:
    /// the simulator does not model deleting them.
    fn delete_namespace(&mut self, namespace: &str) {
        let maps: Vec<(String, String)> = self
            .config_maps
            .keys()
            .filter(|(ns, _)| ns == namespace)
            .cloned()
            .collect();
        for (ns, name) in maps {
            let before = self.config_maps.remove(&(ns.clone(), name.clone()));
            self.metadata
                .remove(&("ConfigMap", ns.clone(), name.clone()));
            self.api_change(("ConfigMap", ns, name), before.as_ref());
        }
        let workloads: Vec<usize> = self
            .sim
            .live_workloads()
            .into_iter()
            .filter(|&w| self.sim.workloads()[w].namespace == namespace)
            .collect();
        for w in workloads {
            let kind = match self.sim.workloads()[w].kind {
                WorkloadKind::Deployment => "Deployment",
                WorkloadKind::StatefulSet { .. } => "StatefulSet",
                WorkloadKind::DaemonSet => "DaemonSet",
                WorkloadKind::Job { .. } => "Job",
                _ => "",
            };
            let name = self.sim.workloads()[w].name.clone();
            let before = self.view_known(kind, namespace, &name);
            self.sim.delete_workload(w, Propagation::Cascade);
            if let Some(kind) = resources::by_kind(kind).map(|r| r.kind) {
                self.metadata
                    .remove(&(kind, namespace.to_owned(), name.clone()));
                self.sync();
                self.api_change((kind, namespace.to_owned(), name), before.as_ref());
            }
        }
        let pods: Vec<usize> = (0..self.sim.pods().len())
            .filter(|&p| {
                self.sim.pods()[p].namespace == namespace && self.sim.pods()[p].is_active()
            })
            .collect();
        for pod in pods {
            self.sim.delete_pod_api(pod, None);
        }
        while let Some(index) = (0..self.sim.pdbs().len())
            .find(|&i| self.sim.pdbs()[i].object.metadata.namespace.as_deref() == Some(namespace))
        {
            let name = self.sim.pdbs()[index]
                .object
                .metadata
                .name
                .clone()
                .unwrap_or_default();
            let before = self.view_known("PodDisruptionBudget", namespace, &name);
            self.sim.delete_pdb(index);
            self.metadata
                .remove(&("PodDisruptionBudget", namespace.to_owned(), name.clone()));
            self.api_change(
                ("PodDisruptionBudget", namespace.to_owned(), name),
                before.as_ref(),
            );
        }
        self.created_namespaces.remove(namespace);
        self.deleted_namespaces.insert(namespace.to_owned());
        self.sync();
    }

    /// Whether a pod of the namespace has not finished terminating.
    fn has_pods(&self, namespace: &str) -> bool {
        self.sim
            .pods()
            .iter()
            .any(|p| p.namespace == namespace && p.phase != PodPhase::Gone)
    }

    /// The current object of a kind the façade serves, by its kind's name.
    fn view_known(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let kind = resources::by_kind(kind)?.kind;
        self.view(kind, namespace, name, false)
    }
}

/// RFC 3339 time of a drill instant (ms, negative before the drill).
fn stamp(ms: i64) -> String {
    jiff::Timestamp::from_second(crate::sim::EPOCH_SECONDS + ms.div_euclid(1000))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

fn to_json<T: serde::Serialize>(object: &T) -> Value {
    serde_json::to_value(object).unwrap_or(Value::Null)
}

fn text(object: &Value, pointer: &str) -> String {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn key_of(kind: &'static str, object: &Value) -> Key {
    (
        kind,
        text(object, "/metadata/namespace"),
        text(object, "/metadata/name"),
    )
}

fn set_rv(object: &mut Value, rv: u64) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".to_owned(), json!(rv.to_string()));
    }
}

fn strip_rv_mut(object: &mut Value) {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
    }
}

fn strip_rv(object: &Value) -> Value {
    let mut copy = object.clone();
    strip_rv_mut(&mut copy);
    copy
}

fn scale_of(object: &Value) -> Value {
    let selector = object
        .pointer("/spec/selector/matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1",
        "metadata": {"name": object.pointer("/metadata/name"), "namespace": object.pointer("/metadata/namespace"),
                     "resourceVersion": object.pointer("/metadata/resourceVersion"),
                     "uid": object.pointer("/metadata/uid")},
        "spec": {"replicas": object.pointer("/spec/replicas").cloned().unwrap_or(json!(0))},
        "status": {"replicas": object.pointer("/status/replicas").cloned().unwrap_or(json!(0)), "selector": selector},
    })
}

fn replicas_of(object: &Value) -> Result<u32, ApiError> {
    object
        .pointer("/spec/replicas")
        .and_then(Value::as_u64)
        .and_then(|r| u32::try_from(r).ok())
        .ok_or_else(|| {
            ApiError::invalid("spec.replicas: Invalid value: must be a non-negative integer")
        })
}

fn line(value: &Value) -> Bytes {
    let mut text = serde_json::to_vec(value).unwrap_or_default();
    text.push(b'\n');
    Bytes::from(text)
}

fn event_line(watcher: &Watcher, kind_type: &str, object: &Value, now: Time) -> Bytes {
    let object = if watcher.table {
        let rv = text(object, "/metadata/resourceVersion");
        table::table(
            watcher.resource.kind,
            std::slice::from_ref(object),
            &rv,
            now,
        )
    } else {
        object.clone()
    };
    line(&json!({"type": kind_type, "object": object}))
}

fn watch_line(watcher: &Watcher, change: &Change, now: Time) -> Option<Bytes> {
    if change.kind != watcher.resource.kind
        || watcher
            .namespace
            .as_ref()
            .is_some_and(|ns| *ns != change.namespace)
        || !WATCH_TYPES.contains(&change.kind_type)
        || !select::labels_match(&watcher.labels, &change.object)
        || !select::fields_match(&watcher.fields, &change.object)
    {
        return None;
    }
    Some(event_line(watcher, change.kind_type, &change.object, now))
}
