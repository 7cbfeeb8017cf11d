//! Watch events to an [`Observation`]: the same timeline events,
//! placements, workload readiness series and strandings the simulator
//! records for the same happenings, rebuilt from what a watch on the API
//! server shows.
//!
//! Where a claim's volume is attached, read in this order for the
//! stranding the drills judge ("a single-attach volume still attached to
//! a node that is gone", [`Stranding`]):
//!
//! 1. **VolumeAttachments** (`storage.k8s.io/v1`): a CSI driver that
//!    attaches (production's `hcloud`) records each attachment as one,
//!    naming the PersistentVolume (`spec.source.persistentVolumeName`) and
//!    the node (`spec.nodeName`, an API name, mapped to the drill name);
//!    only those with `status.attached` attach. The volume's claim is the
//!    one its PV's `spec.claimRef` names (or whose `spec.volumeName` names
//!    the PV). When any VolumeAttachment names a claim's PV, they alone
//!    say where it is attached.
//! 2. **A node-pinned PersistentVolume**: a volume on one node's disk
//!    (kind's local-path) has no VolumeAttachment; its PV's required node
//!    affinity on `kubernetes.io/hostname` names the one node it can be
//!    used on, so it is attached there for as long as the PV exists.
//! 3. **The claim's `volume.kubernetes.io/selected-node` annotation**
//!    ([`ATTACHED_NODE_ANNOTATION`]), the fallback where neither exists and
//!    the PV is not a CSI volume (or is not known: a cluster that does not
//!    serve PersistentVolumes). A CSI volume with no VolumeAttachment is
//!    attached nowhere: the annotation is the scheduler's pick for the
//!    first consumer and stays after the volume detaches or moves.
//!
//! A node deleted while a claim of a single-attach class is attached to it
//! strands that claim there; the stranding is released when the claim's
//! attachment no longer names the node (its VolumeAttachment deleted or
//! moved, its PV gone, its annotation changed). Which classes are
//! single-attach is the drill's to say, not the volume's: kind and Talos
//! back every class with local-path, so a replicated (Longhorn-like)
//! class's volume is node-pinned there too, and is not judged, as the
//! simulator does not judge it.
//!
//! Pure: the caller feeds each change with the drill time it happened at
//! ([`Observer::apply`]) and closes each batch of one instant with
//! [`Observer::settle`]; nothing here talks to a cluster, so the mapping is
//! tested with plain objects.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};

use crate::k8s::node_selector::RequiredNodeAffinity;
use crate::k8s::quantity::{ParsedQuantity, pod_requests};
use crate::labels::{CONTROL_PLANE_LABEL, NODE_LABEL, POOL_LABEL, STANDBY_KEY};
use crate::observe::{BudgetBreach, Observation, Placement, Stranding, Time};
use crate::observe::{Event, EventKind, ObjectRef};
use crate::policy::scale_down;
use crate::policy::view::Resources;
use crate::scenario::spec::AttachModel;
use crate::topology::{CONTROL_PLANE_POOL, Topology};

/// The claim annotation read as its attachment where neither a
/// VolumeAttachment nor a node-pinned PersistentVolume says (the third
/// source in the module documentation).
pub const ATTACHED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";

/// The node label a node-pinned PersistentVolume's affinity requires.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// One watched object.
#[derive(Debug, Clone)]
pub enum Object {
    /// A Node.
    Node(Box<Node>),
    /// A Pod.
    Pod(Box<Pod>),
    /// A PersistentVolumeClaim.
    Claim(Box<PersistentVolumeClaim>),
    /// A Deployment.
    Deployment(Box<Deployment>),
    /// A StatefulSet.
    StatefulSet(Box<StatefulSet>),
    /// A DaemonSet.
    DaemonSet(Box<DaemonSet>),
    /// A Job.
    Job(Box<Job>),
    /// A PodDisruptionBudget.
    Budget(Box<PodDisruptionBudget>),
    /// A PersistentVolume.
    Volume(Box<PersistentVolume>),
    /// A VolumeAttachment.
    Attachment(Box<VolumeAttachment>),
}

impl Object {
    /// The kind, as the API names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Node(_) => "Node",
            Object::Pod(_) => "Pod",
            Object::Claim(_) => "PersistentVolumeClaim",
            Object::Deployment(_) => "Deployment",
            Object::StatefulSet(_) => "StatefulSet",
            Object::DaemonSet(_) => "DaemonSet",
            Object::Job(_) => "Job",
            Object::Budget(_) => "PodDisruptionBudget",
            Object::Volume(_) => "PersistentVolume",
            Object::Attachment(_) => "VolumeAttachment",
        }
    }

    /// The object's resourceVersion as a number, when it is one.
    pub fn resource_version(&self) -> Option<u64> {
        let rv = match self {
            Object::Node(o) => o.resource_version(),
            Object::Pod(o) => o.resource_version(),
            Object::Claim(o) => o.resource_version(),
            Object::Deployment(o) => o.resource_version(),
            Object::StatefulSet(o) => o.resource_version(),
            Object::DaemonSet(o) => o.resource_version(),
            Object::Job(o) => o.resource_version(),
            Object::Budget(o) => o.resource_version(),
            Object::Volume(o) => o.resource_version(),
            Object::Attachment(o) => o.resource_version(),
        };
        rv.and_then(|rv| rv.parse().ok())
    }
}

impl Object {
    /// The newest timestamp the object carries (its conditions'
    /// `lastTransitionTime`, its creation and deletion): on a real cluster
    /// the best account of when its latest change happened, to the second.
    pub fn newest_timestamp(&self) -> Option<jiff::Timestamp> {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time as MetaTime;
        let meta = match self {
            Object::Node(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::Claim(o) => &o.metadata,
            Object::Deployment(o) => &o.metadata,
            Object::StatefulSet(o) => &o.metadata,
            Object::DaemonSet(o) => &o.metadata,
            Object::Job(o) => &o.metadata,
            Object::Budget(o) => &o.metadata,
            Object::Volume(o) => &o.metadata,
            Object::Attachment(o) => &o.metadata,
        };
        let conditions: Vec<Option<&MetaTime>> = match self {
            Object::Node(o) => o
                .status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .map(|c| c.last_transition_time.as_ref())
                .collect(),
            Object::Pod(o) => o
                .status
                .iter()
                .flat_map(|s| s.conditions.iter().flatten())
                .map(|c| c.last_transition_time.as_ref())
                .collect(),
            _ => Vec::new(),
        };
        conditions
            .into_iter()
            .chain([
                meta.creation_timestamp.as_ref(),
                meta.deletion_timestamp.as_ref(),
            ])
            .flatten()
            .map(|t| t.0)
            .max()
    }
}

/// The drill time of a change seen on a wall-clock cluster: the object's
/// own timestamp when it falls between the previous look (`floor`) and now
/// (timestamps have whole seconds and clocks may be skewed, so anything
/// outside is clamped), else the moment it was seen.
pub fn drill_time(
    timestamp: Option<jiff::Timestamp>,
    origin: jiff::Timestamp,
    floor: Time,
    now: Time,
) -> Time {
    let Some(timestamp) = timestamp else {
        return now;
    };
    let ms = timestamp.as_millisecond() - origin.as_millisecond();
    if ms < 0 {
        return floor.min(now);
    }
    (ms as Time).clamp(floor.min(now), now)
}

/// What a watch said about an object.
#[derive(Debug, Clone)]
pub enum Change {
    /// Created or changed.
    Applied(Object),
    /// Deleted.
    Deleted(Object),
}

/// A node as the watches show it, under its drill name.
#[derive(Debug, Clone)]
pub(super) struct NodeState {
    /// Its name in the API (kind and Talos name nodes after the cluster).
    pub(super) api_name: String,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) pool: String,
    /// An autoscaler standby node not yet released: in no pool yet.
    pub(super) standby: bool,
    pub(super) ready: bool,
    pub(super) unschedulable: bool,
    taints: BTreeSet<(String, String)>,
    pub(super) cpu_millis: i64,
    pub(super) memory: i64,
    /// Allocatable pods.
    pub(super) max_pods: u32,
    /// The object, for the scheduling rules that read it whole.
    pub(super) object: Rc<Node>,
}

/// A pod as the watches show it.
#[derive(Debug, Clone)]
pub(super) struct PodState {
    labels: BTreeMap<String, String>,
    /// Its node's drill name, once bound.
    pub(super) node: Option<String>,
    workload: Option<String>,
    claims: Vec<String>,
    ready: bool,
    pub(super) daemon: bool,
    pub(super) deleting: bool,
    /// Succeeded or Failed: it holds no resources.
    pub(super) finished: bool,
    /// The scheduler found no node for it (`PodScheduled` is `False` with
    /// reason `Unschedulable`).
    pub(super) unschedulable: bool,
    pub(super) cpu_millis: i64,
    pub(super) memory: i64,
    /// What the cluster autoscaler reads of its spec.
    pub(super) facts: Rc<PodFacts>,
}

/// What the cluster autoscaler reads of a pod's spec and metadata.
#[derive(Debug, Clone, Default)]
pub(super) struct PodFacts {
    pub(super) namespace: String,
    /// The DaemonSet owning it, if one does.
    pub(super) daemon_set: Option<String>,
    pub(super) labels: BTreeMap<String, String>,
    /// The required node affinity and node selector; `None` when they do
    /// not compile, which no node satisfies.
    pub(super) required: Option<RequiredNodeAffinity>,
    pub(super) tolerations: Vec<k8s_openapi::api::core::v1::Toleration>,
    /// `cluster-autoscaler.kubernetes.io/safe-to-evict`.
    pub(super) safe_to_evict: Option<bool>,
    /// Mounts `emptyDir` or `hostPath`.
    pub(super) local_storage: bool,
    /// Has a controller owner other than a bare Pod.
    pub(super) controlled: bool,
    /// Carries a required pod anti-affinity term.
    pub(super) anti_affinity: bool,
}

/// A PersistentVolume as the attachment rules read it.
#[derive(Debug, Clone, Default)]
struct VolumeState {
    /// `namespace/name` of the claim its `claimRef` names.
    claim: Option<String>,
    /// A CSI volume: attached only through VolumeAttachments.
    csi: bool,
    /// The hostname its required node affinity pins it to, if it does.
    pinned: Option<String>,
}

/// A VolumeAttachment: the PV it attaches, the node's drill name, and
/// whether it is attached.
#[derive(Debug, Clone)]
struct AttachmentState {
    volume: String,
    node: String,
    attached: bool,
}

/// The one hostname a PV's required node affinity pins it to: every term
/// requires `kubernetes.io/hostname In [h]`, with the same `h`.
fn pinned_host(volume: &PersistentVolume) -> Option<String> {
    let terms = &volume
        .spec
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required
        .as_ref()?
        .node_selector_terms;
    let mut hosts = terms.iter().map(|term| {
        term.match_expressions
            .iter()
            .flatten()
            .find(|r| r.key == HOSTNAME_LABEL && r.operator == "In")
            .and_then(|r| match r.values.as_deref() {
                Some([host]) => Some(host.clone()),
                _ => None,
            })
    });
    let first = hosts.next()??;
    hosts.all(|h| h.as_ref() == Some(&first)).then_some(first)
}

/// A pod bound in the current batch, placed once the batch is settled (so
/// a claim or node announced later in the same instant is known).
#[derive(Debug, Clone)]
struct Binding {
    at: Time,
    pod: String,
    node: String,
}

/// A pod the bench may evict from a node: `namespace`, `name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodOnNode {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// The cluster as the watches show it, and the observation built from it.
#[derive(Debug)]
pub struct Observer {
    topology: Topology,
    nodes: BTreeMap<String, NodeState>,
    pods: BTreeMap<String, PodState>,
    /// Every claim's storage class ever seen: a placement names its claims'
    /// classes even when the claim is gone by the time it is judged.
    claim_classes: BTreeMap<String, Option<String>>,
    /// Claims' `volume.kubernetes.io/selected-node`, as drill names (the
    /// fallback source of attachments).
    claim_annotated: BTreeMap<String, String>,
    /// Claims' `spec.volumeName`.
    claim_volumes: BTreeMap<String, String>,
    /// PersistentVolumes by name.
    volumes: BTreeMap<String, VolumeState>,
    /// VolumeAttachments by name.
    attachments: BTreeMap<String, AttachmentState>,
    /// Drill names of nodes by their `kubernetes.io/hostname`, kept after
    /// a node goes so a volume pinned to it still names it.
    hostnames: BTreeMap<String, String>,
    /// Attachments that ended in the current batch: (time, claim, node).
    /// A node deleted in the same instant strands them all the same (and
    /// releases them at once), whatever order the watches delivered in.
    ended: Vec<(Time, String, String)>,
    workloads: BTreeMap<String, (u32, u32)>,
    jobs: BTreeMap<String, (u32, u32)>,
    /// Claim template names of each StatefulSet: its pods mount
    /// `TEMPLATE-POD` claims whether or not their spec lists the volumes.
    claim_templates: BTreeMap<String, Vec<String>>,
    /// Budgets by `namespace/name`: their selector and healthy counts.
    budgets: BTreeMap<String, (Option<Selector>, i32, i32)>,
    /// Budgets' `disruptionsAllowed`, by `namespace/name`.
    allowed: BTreeMap<String, i32>,
    /// Drill names of nodes by their API names.
    drill_names: BTreeMap<String, String>,
    bindings: Vec<Binding>,
    /// The observation.
    pub obs: Observation,
}

fn node_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "Node".to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    }
}

fn pod_ref(key: &str) -> ObjectRef {
    let (namespace, name) = key.split_once('/').unwrap_or(("", key));
    ObjectRef {
        kind: "Pod".to_owned(),
        namespace: namespace.to_owned(),
        name: name.to_owned(),
    }
}

/// The pool a node belongs to: control planes by their role label, other
/// nodes by their pool's name pattern (`{n}` an ordinal, `{hex12}` twelve
/// hex digits), then by the pool's labels; `""` when none matches.
pub fn pool_of(topology: &Topology, name: &str, labels: &BTreeMap<String, String>) -> String {
    if labels.contains_key(CONTROL_PLANE_LABEL) {
        return CONTROL_PLANE_POOL.to_owned();
    }
    // The pool the kind and Talos drivers wrote on the node.
    if let Some(pool) = labels.get(POOL_LABEL)
        && topology.pool(pool).is_some()
    {
        return pool.clone();
    }
    if let Some(pool) = topology.pools.iter().find(|p| p.name_pattern.matches(name)) {
        return pool.name.clone();
    }
    topology
        .pools
        .iter()
        .find(|p| !p.labels.is_empty() && p.labels.iter().all(|(k, v)| labels.get(k) == Some(v)))
        .map(|p| p.name.clone())
        .unwrap_or_default()
}

/// What the cluster autoscaler reads of a pod.
fn pod_facts(pod: &Pod, spec: &k8s_openapi::api::core::v1::PodSpec) -> PodFacts {
    PodFacts {
        namespace: pod.namespace().unwrap_or_default(),
        daemon_set: pod
            .owner_references()
            .iter()
            .find(|o| o.kind == "DaemonSet")
            .map(|o| o.name.clone()),
        labels: pod.labels().clone(),
        required: RequiredNodeAffinity::from_pod_spec(spec).ok(),
        tolerations: spec.tolerations.clone().unwrap_or_default(),
        safe_to_evict: pod
            .annotations()
            .get("cluster-autoscaler.kubernetes.io/safe-to-evict")
            .map(|v| v == "true"),
        local_storage: spec
            .volumes
            .iter()
            .flatten()
            .any(|v| v.empty_dir.is_some() || v.host_path.is_some()),
        controlled: pod
            .owner_references()
            .iter()
            .any(|o| o.controller == Some(true) && o.kind != "Pod"),
        anti_affinity: spec
            .affinity
            .as_ref()
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .is_some_and(|terms| !terms.is_empty()),
    }
}

fn quantity(
    q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
) -> Option<ParsedQuantity> {
    q.and_then(|q| ParsedQuantity::from_quantity(q).ok())
}

impl Observer {
    /// An observer for a drill's topology.
    pub fn new(topology: Topology) -> Self {
        Observer {
            topology,
            nodes: BTreeMap::new(),
            pods: BTreeMap::new(),
            claim_classes: BTreeMap::new(),
            claim_annotated: BTreeMap::new(),
            claim_volumes: BTreeMap::new(),
            volumes: BTreeMap::new(),
            attachments: BTreeMap::new(),
            hostnames: BTreeMap::new(),
            ended: Vec::new(),
            workloads: BTreeMap::new(),
            jobs: BTreeMap::new(),
            claim_templates: BTreeMap::new(),
            budgets: BTreeMap::new(),
            allowed: BTreeMap::new(),
            drill_names: BTreeMap::new(),
            bindings: Vec::new(),
            obs: Observation::default(),
        }
    }

    fn event(
        &mut self,
        at: Time,
        kind: EventKind,
        object: ObjectRef,
        node: Option<&str>,
        message: String,
    ) {
        let pool = node.and_then(|n| self.nodes.get(n)).map(|n| n.pool.clone());
        self.obs.events.push(Event {
            at_ms: at,
            kind,
            object,
            node: node.map(str::to_owned),
            pool,
            message,
        });
    }

    /// Takes in one change, seen at drill time `at`.
    pub fn apply(&mut self, at: Time, change: Change) {
        match change {
            Change::Applied(Object::Node(node)) => self.node_applied(at, &node),
            Change::Deleted(Object::Node(node)) => {
                let name = self.drill_name(&node.name_any());
                self.node_deleted(at, &name);
            }
            Change::Applied(Object::Pod(pod)) => self.pod_applied(at, &pod),
            Change::Deleted(Object::Pod(pod)) => self.pod_deleted(at, &pod),
            Change::Applied(Object::Claim(claim)) => {
                self.storage_change(at, |o| o.claim_applied(&claim));
            }
            Change::Deleted(Object::Claim(claim)) => {
                // Its volume outlives it until the PV goes (whose claimRef
                // still names it); its annotation is kept, as it always was.
                let key = format!(
                    "{}/{}",
                    claim.namespace().unwrap_or_default(),
                    claim.name_any()
                );
                self.storage_change(at, |o| {
                    o.claim_volumes.remove(&key);
                });
            }
            Change::Applied(Object::Volume(volume)) => {
                self.storage_change(at, |o| o.volume_applied(&volume));
            }
            Change::Deleted(Object::Volume(volume)) => {
                self.storage_change(at, |o| {
                    o.volumes.remove(&volume.name_any());
                });
            }
            Change::Applied(Object::Attachment(attachment)) => {
                self.storage_change(at, |o| o.attachment_applied(&attachment));
            }
            Change::Deleted(Object::Attachment(attachment)) => {
                self.storage_change(at, |o| {
                    o.attachments.remove(&attachment.name_any());
                });
            }
            Change::Applied(Object::Deployment(d)) => {
                let key = workload_key(
                    "Deployment",
                    &d.namespace().unwrap_or_default(),
                    &d.name_any(),
                );
                let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                let ready = d
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0);
                self.workload_point(at, key, ready, desired);
            }
            Change::Applied(Object::StatefulSet(s)) => {
                let key = workload_key(
                    "StatefulSet",
                    &s.namespace().unwrap_or_default(),
                    &s.name_any(),
                );
                let desired = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                let ready = s
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0);
                let templates = s
                    .spec
                    .as_ref()
                    .and_then(|s| s.volume_claim_templates.as_ref())
                    .map(|t| t.iter().map(|c| c.name_any()).collect())
                    .unwrap_or_default();
                self.claim_templates.insert(key.clone(), templates);
                self.workload_point(at, key, ready, desired);
            }
            Change::Applied(Object::DaemonSet(d)) => {
                let key = workload_key(
                    "DaemonSet",
                    &d.namespace().unwrap_or_default(),
                    &d.name_any(),
                );
                let status = d.status.clone().unwrap_or_default();
                self.workload_point(
                    at,
                    key,
                    status.number_ready,
                    status.desired_number_scheduled,
                );
            }
            Change::Applied(Object::Job(j)) => {
                // A Job is whole once it completed; until then its ready
                // pods count (settled from the pods, as the simulator does).
                let key = workload_key("Job", &j.namespace().unwrap_or_default(), &j.name_any());
                let completions = j
                    .spec
                    .as_ref()
                    .and_then(|s| s.completions)
                    .unwrap_or(1)
                    .max(0) as u32;
                let succeeded = j
                    .status
                    .as_ref()
                    .and_then(|s| s.succeeded)
                    .unwrap_or(0)
                    .max(0) as u32;
                self.jobs.insert(key, (completions, succeeded));
            }
            Change::Applied(Object::Budget(b)) => {
                let key = format!("{}/{}", b.namespace().unwrap_or_default(), b.name_any());
                let selector = b
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.clone())
                    .and_then(|s| Selector::try_from(s).ok());
                let status = b.status.clone().unwrap_or_default();
                self.allowed
                    .insert(key.clone(), status.disruptions_allowed.unwrap_or(0).max(0));
                self.budgets
                    // A status not yet computed says nothing about health.
                    .insert(
                        key,
                        (
                            selector,
                            status.current_healthy.unwrap_or(i32::MAX),
                            status.desired_healthy.unwrap_or(0),
                        ),
                    );
            }
            Change::Deleted(Object::Budget(b)) => {
                let key = format!("{}/{}", b.namespace().unwrap_or_default(), b.name_any());
                self.budgets.remove(&key);
                self.allowed.remove(&key);
            }
            Change::Deleted(
                Object::Deployment(_)
                | Object::StatefulSet(_)
                | Object::DaemonSet(_)
                | Object::Job(_),
            ) => {}
        }
    }

    fn workload_point(&mut self, at: Time, key: String, ready: i32, desired: i32) {
        let value = (ready.max(0) as u32, desired.max(0) as u32);
        if self.workloads.get(&key) == Some(&value) {
            return;
        }
        self.workloads.insert(key.clone(), value);
        self.obs
            .workloads
            .entry(key)
            .or_default()
            .points
            .push((at, value.0, value.1));
    }

    /// A node's drill name (`prod-worker-1`) from its API name
    /// (`drillbench-r1-worker2` on kind): its [`NODE_LABEL`], which kind and
    /// Talos nodes carry, else the API name itself.
    pub fn drill_name(&self, api_name: &str) -> String {
        self.drill_names
            .get(api_name)
            .cloned()
            .unwrap_or_else(|| api_name.to_owned())
    }

    /// A node's API name from its drill name (the two are one where the
    /// nodes are named as the drill names them).
    pub fn api_name(&self, name: &str) -> String {
        self.nodes
            .get(name)
            .map_or_else(|| name.to_owned(), |n| n.api_name.clone())
    }

    fn node_applied(&mut self, at: Time, node: &Node) {
        let api_name = node.name_any();
        let labels = node.labels().clone();
        let name = labels
            .get(NODE_LABEL)
            .cloned()
            .unwrap_or_else(|| api_name.clone());
        self.drill_names.insert(api_name.clone(), name.clone());
        self.hostnames.insert(
            labels
                .get(HOSTNAME_LABEL)
                .cloned()
                .unwrap_or_else(|| api_name.clone()),
            name.clone(),
        );
        let ready = node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let spec = node.spec.clone().unwrap_or_default();
        let unschedulable = spec.unschedulable.unwrap_or(false);
        let taints: BTreeSet<(String, String)> = spec
            .taints
            .unwrap_or_default()
            .into_iter()
            .map(|t| (t.key, t.effect))
            .collect();
        let allocatable = node
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default();
        let state = NodeState {
            api_name,
            pool: pool_of(&self.topology, &name, &labels),
            standby: labels.contains_key(STANDBY_KEY),
            labels,
            ready,
            unschedulable,
            taints: taints.clone(),
            cpu_millis: quantity(allocatable.get("cpu")).map_or(0, |q| q.milli_value()),
            memory: quantity(allocatable.get("memory")).map_or(0, |q| q.value()),
            max_pods: quantity(allocatable.get("pods"))
                .map_or(110, |q| q.value().clamp(0, u32::MAX as i64) as u32),
            object: Rc::new(node.clone()),
        };
        let before = self.nodes.insert(name.clone(), state);
        let r = node_ref(&name);
        match before {
            None => {
                self.event(
                    at,
                    EventKind::NodeAdded,
                    r.clone(),
                    Some(&name),
                    "node created".to_owned(),
                );
                if ready {
                    self.event(at, EventKind::NodeReady, r, Some(&name), "Ready".to_owned());
                }
            }
            Some(before) => {
                if ready != before.ready {
                    let kind = if ready {
                        EventKind::NodeReady
                    } else {
                        EventKind::NodeNotReady
                    };
                    self.event(
                        at,
                        kind,
                        r.clone(),
                        Some(&name),
                        if ready { "Ready" } else { "not Ready" }.to_owned(),
                    );
                }
                if unschedulable != before.unschedulable {
                    let kind = if unschedulable {
                        EventKind::NodeCordoned
                    } else {
                        EventKind::NodeUncordoned
                    };
                    self.event(at, kind, r.clone(), Some(&name), String::new());
                }
                for (key, effect) in taints.difference(&before.taints) {
                    self.event(
                        at,
                        EventKind::NodeTainted,
                        r.clone(),
                        Some(&name),
                        format!("{key}:{effect}"),
                    );
                }
            }
        }
    }

    fn node_deleted(&mut self, at: Time, name: &str) {
        if !self.nodes.contains_key(name) {
            return;
        }
        // A single-attach volume still attached to a departed node is
        // stranded until its attachment is released; one whose attachment
        // ended in this very instant was stranded and released at once.
        let mut stranded: BTreeMap<String, Option<Time>> = self
            .attachments_now()
            .into_iter()
            .filter(|(_, n)| n == name)
            .map(|(c, _)| (c, None))
            .collect();
        for (when, claim, node) in &self.ended {
            if *when == at && node == name {
                stranded.entry(claim.clone()).or_insert(Some(at));
            }
        }
        for (claim, released) in stranded {
            let open = self
                .obs
                .strandings
                .iter()
                .any(|s| s.claim == claim && s.node == name && s.released.is_none());
            if self.single_attach(&claim) && !open {
                self.obs.strandings.push(Stranding {
                    claim,
                    node: name.to_owned(),
                    since: at,
                    released,
                });
            }
        }
        self.event(
            at,
            EventKind::NodeDeleted,
            node_ref(name),
            Some(name),
            "the Node was deleted".to_owned(),
        );
        self.nodes.remove(name);
    }

    fn single_attach(&self, claim: &str) -> bool {
        let class = self.claim_classes.get(claim).cloned().flatten();
        let class = class.or_else(|| {
            self.topology
                .storage_classes
                .iter()
                .find(|c| c.default)
                .map(|c| c.name.clone())
        });
        class.is_some_and(|class| {
            self.topology
                .storage_classes
                .iter()
                .any(|c| c.name == class && c.attach == AttachModel::SingleNode)
        })
    }

    fn claim_applied(&mut self, claim: &PersistentVolumeClaim) {
        let key = format!(
            "{}/{}",
            claim.namespace().unwrap_or_default(),
            claim.name_any()
        );
        let spec = claim.spec.as_ref();
        let class = spec.and_then(|s| s.storage_class_name.clone());
        self.claim_classes.insert(key.clone(), class);
        match spec.and_then(|s| s.volume_name.clone()) {
            Some(volume) => self.claim_volumes.insert(key.clone(), volume),
            None => self.claim_volumes.remove(&key),
        };
        let annotated = claim
            .annotations()
            .get(ATTACHED_NODE_ANNOTATION)
            .map(|n| self.drill_name(n));
        match annotated {
            Some(node) => self.claim_annotated.insert(key, node),
            None => self.claim_annotated.remove(&key),
        };
    }

    fn volume_applied(&mut self, volume: &PersistentVolume) {
        let spec = volume.spec.as_ref();
        let claim = spec.and_then(|s| s.claim_ref.as_ref()).and_then(|r| {
            Some(format!(
                "{}/{}",
                r.namespace.as_deref()?,
                r.name.as_deref()?
            ))
        });
        // A claim known only through its volume (deleted, or not listed
        // yet) is judged by the volume's class.
        if let Some(claim) = &claim {
            self.claim_classes
                .entry(claim.clone())
                .or_insert_with(|| spec.and_then(|s| s.storage_class_name.clone()));
        }
        self.volumes.insert(
            volume.name_any(),
            VolumeState {
                claim,
                csi: spec.is_some_and(|s| s.csi.is_some()),
                pinned: pinned_host(volume),
            },
        );
    }

    fn attachment_applied(&mut self, attachment: &VolumeAttachment) {
        let Some(volume) = attachment.spec.source.persistent_volume_name.clone() else {
            // An inline volume belongs to a pod, not to a claim.
            return;
        };
        self.attachments.insert(
            attachment.name_any(),
            AttachmentState {
                volume,
                node: self.drill_name(&attachment.spec.node_name),
                attached: attachment.status.as_ref().is_some_and(|s| s.attached),
            },
        );
    }

    /// Applies a change to claims, volumes or attachments, then releases
    /// every stranding whose attachment it ended.
    fn storage_change(&mut self, at: Time, change: impl FnOnce(&mut Self)) {
        let before = self.attachments_now();
        change(self);
        let after = self.attachments_now();
        for (claim, node) in before.difference(&after) {
            for s in self
                .obs
                .strandings
                .iter_mut()
                .filter(|s| &s.claim == claim && &s.node == node && s.released.is_none())
            {
                s.released = Some(at);
            }
            self.ended.push((at, claim.clone(), node.clone()));
        }
    }

    /// Every (claim, node) attachment, read from the three sources in the
    /// module documentation's order.
    fn attachments_now(&self) -> BTreeSet<(String, String)> {
        // PV name -> attached nodes; a PV with only unattached
        // VolumeAttachments maps to none, which still rules out the rest.
        let mut by_volume: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for a in self.attachments.values() {
            let nodes = by_volume.entry(a.volume.as_str()).or_default();
            if a.attached {
                nodes.insert(a.node.as_str());
            }
        }
        let mut volume_of: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, v) in &self.volumes {
            if let Some(claim) = &v.claim {
                volume_of.insert(claim.as_str(), name.as_str());
            }
        }
        for (claim, volume) in &self.claim_volumes {
            volume_of.insert(claim.as_str(), volume.as_str());
        }
        let claims: BTreeSet<&str> = volume_of
            .keys()
            .copied()
            .chain(self.claim_annotated.keys().map(String::as_str))
            .collect();
        let mut out = BTreeSet::new();
        for claim in claims {
            let volume = volume_of.get(claim).copied();
            if let Some(nodes) = volume.and_then(|v| by_volume.get(v)) {
                out.extend(nodes.iter().map(|n| (claim.to_owned(), (*n).to_owned())));
                continue;
            }
            if let Some(state) = volume.and_then(|v| self.volumes.get(v)) {
                if let Some(host) = &state.pinned {
                    let node = self
                        .hostnames
                        .get(host)
                        .cloned()
                        .unwrap_or_else(|| self.drill_name(host));
                    out.insert((claim.to_owned(), node));
                    continue;
                }
                if state.csi {
                    continue;
                }
            }
            if let Some(node) = self.claim_annotated.get(claim) {
                out.insert((claim.to_owned(), node.clone()));
            }
        }
        out
    }

    /// The nodes a claim's volume is attached to, as the watches show it.
    pub fn claim_attachments(&self, claim: &str) -> Vec<String> {
        self.attachments_now()
            .into_iter()
            .filter(|(c, _)| c == claim)
            .map(|(_, n)| n)
            .collect()
    }

    fn pod_workload(&self, pod: &Pod) -> Option<String> {
        let namespace = pod.namespace().unwrap_or_default();
        let owner = pod
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))?;
        let kind = match owner.kind.as_str() {
            // A Deployment's pods belong to its ReplicaSet, named after it
            // with a template hash (the simulator folds the two into one
            // and keeps the Deployment's name).
            "ReplicaSet" => {
                let exact = workload_key("Deployment", &namespace, &owner.name);
                if self.workloads.contains_key(&exact) {
                    return Some(exact);
                }
                if let Some((trimmed, _)) = owner.name.rsplit_once('-') {
                    let trimmed = workload_key("Deployment", &namespace, trimmed);
                    if self.workloads.contains_key(&trimmed) {
                        return Some(trimmed);
                    }
                }
                return Some(exact);
            }
            other => other,
        };
        Some(workload_key(kind, &namespace, &owner.name))
    }

    fn pod_applied(&mut self, at: Time, pod: &Pod) {
        let key = format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any());
        let spec = pod.spec.clone().unwrap_or_default();
        let ready = pod
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .is_some_and(|c| c.status == "True");
        let requests = pod_requests(&spec).ok();
        let claims = spec
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .map(|c| c.claim_name.clone())
            .collect();
        let status = pod.status.clone().unwrap_or_default();
        let unschedulable = status.conditions.iter().flatten().any(|c| {
            c.type_ == "PodScheduled"
                && c.status == "False"
                && c.reason.as_deref() == Some("Unschedulable")
        });
        let state = PodState {
            labels: pod.labels().clone(),
            node: spec.node_name.as_deref().map(|n| self.drill_name(n)),
            workload: self.pod_workload(pod),
            claims,
            ready,
            daemon: pod.owner_references().iter().any(|o| o.kind == "DaemonSet"),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            finished: matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")),
            unschedulable,
            cpu_millis: requests.as_ref().map_or(0, |r| r.cpu_millis()),
            memory: requests.as_ref().map_or(0, |r| r.memory_bytes()),
            facts: Rc::new(pod_facts(pod, &spec)),
        };
        let before = self.pods.insert(key.clone(), state.clone());
        let r = pod_ref(&key);
        let node = state.node.as_deref();
        if before.is_none() {
            self.event(
                at,
                EventKind::PodCreated,
                r.clone(),
                None,
                "pod created".to_owned(),
            );
        }
        let bound_before = before.as_ref().and_then(|b| b.node.clone());
        if let Some(n) = &state.node
            && bound_before.as_ref() != Some(n)
        {
            self.event(
                at,
                EventKind::PodScheduled,
                r.clone(),
                Some(n),
                format!("bound to {n}"),
            );
            self.bindings.push(Binding {
                at,
                pod: key.clone(),
                node: n.clone(),
            });
        }
        let was_ready = before.as_ref().is_some_and(|b| b.ready);
        if ready != was_ready && (ready || before.is_some()) {
            let kind = if ready {
                EventKind::PodReady
            } else {
                EventKind::PodNotReady
            };
            self.event(at, kind, r, node, String::new());
        }
    }

    fn pod_deleted(&mut self, at: Time, pod: &Pod) {
        let key = format!("{}/{}", pod.namespace().unwrap_or_default(), pod.name_any());
        if let Some(state) = self.pods.remove(&key) {
            self.event(
                at,
                EventKind::PodDeleted,
                pod_ref(&key),
                state.node.as_deref(),
                "pod deleted".to_owned(),
            );
        }
    }

    /// Closes the changes of one instant: places the pods bound in it with
    /// their node's labels and their claims' classes as they stand now, and
    /// updates the series derived from several objects.
    pub fn settle(&mut self, at: Time) {
        self.ended.clear();
        for binding in std::mem::take(&mut self.bindings) {
            let Some(pod) = self.pods.get(&binding.pod) else {
                continue;
            };
            let (labels, pool) = self
                .nodes
                .get(&binding.node)
                .map(|n| (n.labels.clone(), n.pool.clone()))
                .unwrap_or_default();
            let namespace = binding.pod.split('/').next().unwrap_or_default().to_owned();
            let pod_name = binding.pod.split_once('/').map_or("", |(_, n)| n);
            let mut names = pod.claims.clone();
            if let Some(templates) = pod
                .workload
                .as_ref()
                .and_then(|w| self.claim_templates.get(w))
            {
                for template in templates {
                    let claim = format!("{template}-{pod_name}");
                    if !names.contains(&claim) {
                        names.push(claim);
                    }
                }
            }
            let claims = names
                .iter()
                .map(|c| {
                    let class = self
                        .claim_classes
                        .get(&format!("{namespace}/{c}"))
                        .cloned()
                        .flatten();
                    (c.clone(), class)
                })
                .collect();
            let autoscaled = self.topology.pool(&pool).is_some_and(|p| p.is_autoscaled());
            self.obs.placements.push(Placement {
                at: binding.at,
                pod: binding.pod.clone(),
                namespace,
                pod_labels: Rc::new(pod.labels.clone()),
                workload: pod.workload.clone(),
                node: binding.node.clone(),
                pool,
                autoscaled,
                node_labels: Rc::new(labels),
                claims,
            });
        }
        let jobs: Vec<(String, (u32, u32))> =
            self.jobs.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (key, (completions, succeeded)) in jobs {
            let ready = if succeeded >= completions {
                completions
            } else {
                (self
                    .pods
                    .values()
                    .filter(|p| p.ready && p.workload.as_deref() == Some(key.as_str()))
                    .count() as u32)
                    .min(completions)
            };
            self.workload_point(at, key, ready as i32, completions as i32);
        }
        let ready = self
            .nodes
            .values()
            .filter(|n| n.pool == CONTROL_PLANE_POOL && n.ready)
            .count() as u32;
        if self.obs.control_planes_ready.last().map(|(_, r)| *r) != Some(ready) {
            self.obs.control_planes_ready.push((at, ready));
        }
    }

    /// Live nodes of a pool, by name (standby nodes are in none yet).
    pub fn pool_nodes(&self, pool: &str) -> Vec<String> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.pool == pool && !n.standby)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Ready nodes of a pool.
    pub fn ready_nodes(&self, pool: &str) -> u32 {
        self.nodes
            .values()
            .filter(|n| n.pool == pool && n.ready && !n.standby)
            .count() as u32
    }

    /// Every node, by drill name.
    pub(super) fn nodes(&self) -> &BTreeMap<String, NodeState> {
        &self.nodes
    }

    /// Every pod, by `namespace/name`.
    pub(super) fn pods(&self) -> &BTreeMap<String, PodState> {
        &self.pods
    }

    /// The budgets selecting a pod: `namespace/name` and their
    /// `disruptionsAllowed`.
    pub(super) fn covering_budgets(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<(String, i32)> {
        self.budgets
            .iter()
            .filter(|(key, (selector, _, _))| {
                key.split('/').next() == Some(namespace)
                    && selector.as_ref().is_some_and(|s| s.matches(labels))
            })
            .map(|(key, _)| (key.clone(), self.allowed.get(key).copied().unwrap_or(0)))
            .collect()
    }

    /// Nodes and whether they are Ready, with whether each is a control
    /// plane.
    pub fn node_readiness(&self) -> Vec<(String, bool, bool)> {
        self.nodes
            .iter()
            .filter(|(_, n)| !n.standby)
            .map(|(name, n)| (name.clone(), n.pool == CONTROL_PLANE_POOL, n.ready))
            .collect()
    }

    /// Whether every workload seen has all its replicas ready.
    pub fn all_workloads_ready(&self) -> bool {
        self.obs
            .workloads
            .values()
            .all(|s| s.points.last().is_none_or(|(_, r, d)| r >= d))
    }

    /// Whether one workload has all its replicas ready (an unknown one is
    /// not).
    pub fn workload_ready(&self, key: &str) -> bool {
        self.obs
            .workloads
            .get(key)
            .and_then(|s| s.points.last())
            .is_some_and(|(_, r, d)| r >= d)
    }

    /// The pods a drain must evict from a node: every pod bound to it but
    /// DaemonSet pods, as `kubectl drain --ignore-daemonsets` does.
    pub fn pods_to_evict(&self, node: &str) -> Vec<PodOnNode> {
        self.pods
            .iter()
            .filter(|(_, p)| p.node.as_deref() == Some(node) && !p.daemon)
            .map(|(key, _)| {
                let (namespace, name) = key.split_once('/').unwrap_or(("", key));
                PodOnNode {
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                }
            })
            .collect()
    }

    /// Whether a pod is being deleted (its termination is under way).
    pub fn pod_deleting(&self, namespace: &str, name: &str) -> bool {
        self.pods
            .get(&format!("{namespace}/{name}"))
            .is_some_and(|p| p.deleting)
    }

    /// The node the cluster autoscaler would remove next from a pool, as it
    /// computes it on the observed state: the least utilised Ready,
    /// schedulable node (utilisation is the larger of the requested CPU and
    /// memory shares), the first by name among equals — the simulator's
    /// rule ([`crate::sim::Simulation::autoscaler_pick`]).
    pub fn autoscaler_pick(&self, pool: &str) -> Option<String> {
        let utilisation = |name: &str, n: &NodeState| {
            let (cpu, memory) = self
                .pods
                .values()
                .filter(|p| p.node.as_deref() == Some(name))
                .fold((0, 0), |(c, m), p| (c + p.cpu_millis, m + p.memory));
            scale_down::utilisation(
                Resources { cpu, memory },
                Resources {
                    cpu: n.cpu_millis,
                    memory: n.memory,
                },
            )
        };
        let candidates = self
            .nodes
            .iter()
            .filter(|(_, n)| n.pool == pool && n.ready && !n.unschedulable && !n.standby)
            .map(|(name, n)| (utilisation(name, n), name.as_str()));
        scale_down::least_utilised(candidates).map(str::to_owned)
    }

    /// After an eviction the bench made was accepted and its effects were
    /// seen: every budget selecting the pod must still have the healthy
    /// pods it wants, else the eviction broke it (the Eviction API must
    /// never let that happen).
    pub fn check_budgets_after_eviction(
        &mut self,
        at: Time,
        namespace: &str,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) {
        for (key, (selector, healthy, desired)) in &self.budgets {
            let in_namespace = key.split('/').next() == Some(namespace);
            let selects = selector.as_ref().is_some_and(|s| s.matches(labels));
            if in_namespace && selects && healthy < desired {
                self.obs.budget_breaches.push(BudgetBreach {
                    at,
                    pdb: key.clone(),
                    pod: format!("{namespace}/{name}"),
                    healthy: *healthy,
                    desired: *desired,
                });
            }
        }
    }

    /// A pod's labels, while it is known.
    pub fn pod_labels(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>> {
        self.pods
            .get(&format!("{namespace}/{name}"))
            .map(|p| p.labels.clone())
    }

    /// Whether a node exists.
    pub fn has_node(&self, name: &str) -> bool {
        self.nodes.contains_key(name)
    }

    /// Names of every pod, node, volume and attachment known, to reconcile
    /// after a re-list.
    pub fn known(&self, kind: &str) -> Vec<String> {
        match kind {
            "Node" => self.nodes.keys().cloned().collect(),
            "Pod" => self.pods.keys().cloned().collect(),
            "PersistentVolume" => self.volumes.keys().cloned().collect(),
            "VolumeAttachment" => self.attachments.keys().cloned().collect(),
            _ => Vec::new(),
        }
    }
}

/// `namespace/Kind/name`, the key workloads go by in drills and reports.
pub fn workload_key(kind: &str, namespace: &str, name: &str) -> String {
    format!("{namespace}/{kind}/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn drill() -> crate::drill::Drill {
        crate::drill::Drill::load(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/node-loss.yaml"),
        )
        .unwrap_or_else(|d| panic!("{}", d.render(false)))
    }

    fn node(name: &str, ready: bool, labels: serde_json::Value) -> Change {
        Change::Applied(Object::Node(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels},
                "spec": {},
                "status": {"conditions": [{"type": "Ready", "status": if ready {"True"} else {"Unknown"}}],
                           "allocatable": {"cpu": "4", "memory": "8Gi"}},
            }))
            .expect("node"),
        )))
    }

    fn pod(name: &str, node: Option<&str>, ready: bool, claim: Option<&str>) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "apps", "labels": {"app": "db"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db", "uid": "u", "controller": true}]},
            "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
                     "volumes": claim.map(|c| json!([{"name": "data", "persistentVolumeClaim": {"claimName": c}}]))},
            "status": {"conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]},
        }))
        .expect("pod")
    }

    fn claim(name: &str, attached: Option<&str>) -> Change {
        let annotations = attached.map(|n| json!({ATTACHED_NODE_ANNOTATION: n}));
        Change::Applied(Object::Claim(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "apps", "annotations": annotations},
                "spec": {"storageClassName": "hcloud"},
            }))
            .expect("claim"),
        )))
    }

    fn kinds(observer: &Observer) -> Vec<(Time, EventKind, String)> {
        observer
            .obs
            .events
            .iter()
            .map(|e| (e.at_ms, e.kind, e.object.name.clone()))
            .collect()
    }

    #[test]
    fn a_binding_is_placed_with_the_nodes_labels_and_the_claims_class_settled_in_its_instant() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        observer.apply(
            0,
            node(
                "prod-worker-1",
                true,
                json!({"platform.devantler.tech/baseline-worker": "true"}),
            ),
        );
        observer.settle(0);
        // The pod is announced before its claim in the same instant.
        observer.apply(
            5_000,
            Change::Applied(Object::Pod(Box::new(pod(
                "db-0",
                Some("prod-worker-1"),
                false,
                Some("data-db-0"),
            )))),
        );
        observer.apply(5_000, claim("data-db-0", Some("prod-worker-1")));
        observer.settle(5_000);
        observer.apply(
            9_000,
            Change::Applied(Object::Pod(Box::new(pod(
                "db-0",
                Some("prod-worker-1"),
                true,
                Some("data-db-0"),
            )))),
        );
        observer.settle(9_000);

        let [placement] = observer.obs.placements.as_slice() else {
            panic!("one placement: {:?}", observer.obs.placements);
        };
        assert_eq!(placement.at, 5_000);
        assert_eq!(placement.pod, "apps/db-0");
        assert_eq!(placement.workload.as_deref(), Some("apps/StatefulSet/db"));
        assert_eq!(placement.pool, "baseline");
        assert!(!placement.autoscaled);
        assert_eq!(
            placement.claims,
            [("data-db-0".to_owned(), Some("hcloud".to_owned()))]
        );
        assert_eq!(
            placement
                .node_labels
                .get("platform.devantler.tech/baseline-worker")
                .map(String::as_str),
            Some("true")
        );
        assert_eq!(
            kinds(&observer),
            [
                (0, EventKind::NodeAdded, "prod-worker-1".to_owned()),
                (0, EventKind::NodeReady, "prod-worker-1".to_owned()),
                (5_000, EventKind::PodCreated, "db-0".to_owned()),
                (5_000, EventKind::PodScheduled, "db-0".to_owned()),
                (9_000, EventKind::PodReady, "db-0".to_owned()),
            ]
        );
    }

    #[test]
    fn a_node_deleted_with_a_single_attach_volume_strands_it_until_released() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        observer.apply(0, node("prod-worker-1", true, json!({})));
        observer.apply(0, claim("data-db-0", Some("prod-worker-1")));
        observer.settle(0);
        observer.apply(60_000, node("prod-worker-1", false, json!({})));
        observer.apply(
            70_000,
            Change::Deleted(Object::Node(Box::new(Node {
                metadata: kube::api::ObjectMeta {
                    name: Some("prod-worker-1".to_owned()),
                    ..Default::default()
                },
                ..Default::default()
            }))),
        );
        assert_eq!(
            observer.obs.strandings,
            [Stranding {
                claim: "apps/data-db-0".to_owned(),
                node: "prod-worker-1".to_owned(),
                since: 70_000,
                released: None
            }]
        );
        observer.apply(90_000, claim("data-db-0", None));
        assert_eq!(observer.obs.strandings[0].released, Some(90_000));
        assert!(kinds(&observer).contains(&(
            60_000,
            EventKind::NodeNotReady,
            "prod-worker-1".to_owned()
        )));
        assert!(kinds(&observer).contains(&(
            70_000,
            EventKind::NodeDeleted,
            "prod-worker-1".to_owned()
        )));
    }

    /// A claim of the single-attach class `hcloud`, bound to `volume`,
    /// with the scheduler's `selected-node` for its first consumer.
    fn bound_claim(name: &str, volume: &str, selected: Option<&str>) -> Change {
        let annotations = selected.map(|n| json!({ATTACHED_NODE_ANNOTATION: n}));
        Change::Applied(Object::Claim(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "apps", "annotations": annotations},
                "spec": {"storageClassName": "hcloud", "volumeName": volume},
            }))
            .expect("claim"),
        )))
    }

    /// A PersistentVolume bound to `apps/CLAIM`: a CSI volume, or, with
    /// `pinned`, a local one required on that hostname (kind's local-path).
    fn volume(name: &str, claim: &str, pinned: Option<&str>) -> PersistentVolume {
        let mut spec = json!({
            "claimRef": {"namespace": "apps", "name": claim},
            "storageClassName": "hcloud",
        });
        match pinned {
            Some(host) => {
                spec["hostPath"] = json!({"path": format!("/var/local-path/{name}")});
                spec["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": [host]}]}
                ]}});
            }
            None => spec["csi"] = json!({"driver": "csi.hetzner.cloud", "volumeHandle": "1234"}),
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).expect("volume")
    }

    fn attachment(name: &str, volume: &str, node: &str, attached: bool) -> VolumeAttachment {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {"attacher": "csi.hetzner.cloud", "nodeName": node,
                     "source": {"persistentVolumeName": volume}},
            "status": {"attached": attached},
        }))
        .expect("attachment")
    }

    fn node_gone(api_name: &str) -> Change {
        Change::Deleted(Object::Node(Box::new(Node {
            metadata: kube::api::ObjectMeta {
                name: Some(api_name.to_owned()),
                ..Default::default()
            },
            ..Default::default()
        })))
    }

    fn open_strandings(observer: &Observer) -> Vec<(String, String, Time)> {
        observer
            .obs
            .strandings
            .iter()
            .filter(|s| s.released.is_none())
            .map(|s| (s.claim.clone(), s.node.clone(), s.since))
            .collect()
    }

    #[test]
    fn a_volume_attachment_on_a_deleted_node_strands_its_claim_until_it_moves() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        // kind names its nodes after the cluster; the drill name is the label.
        for (api, drill_name) in [
            ("r1-worker", "prod-worker-1"),
            ("r1-worker2", "prod-worker-2"),
        ] {
            observer.apply(0, node(api, true, json!({NODE_LABEL: drill_name})));
        }
        // The scheduler's pick is stale (prod-worker-2): the attachment says
        // where the volume is.
        observer.apply(0, bound_claim("data-db-0", "pvc-1", Some("r1-worker2")));
        observer.apply(
            0,
            Change::Applied(Object::Volume(Box::new(volume("pvc-1", "data-db-0", None)))),
        );
        let on_worker_1 = attachment("csi-a", "pvc-1", "r1-worker", true);
        observer.apply(
            0,
            Change::Applied(Object::Attachment(Box::new(on_worker_1.clone()))),
        );
        observer.settle(0);
        assert_eq!(
            observer.claim_attachments("apps/data-db-0"),
            ["prod-worker-1"]
        );

        observer.apply(60_000, node_gone("r1-worker2"));
        observer.settle(60_000);
        assert!(
            observer.obs.strandings.is_empty(),
            "the stale annotation strands nothing"
        );

        observer.apply(70_000, node_gone("r1-worker"));
        observer.settle(70_000);
        assert_eq!(
            open_strandings(&observer),
            [(
                "apps/data-db-0".to_owned(),
                "prod-worker-1".to_owned(),
                70_000
            )]
        );
        // Still attached there: a change that keeps it there releases nothing.
        observer.apply(
            80_000,
            Change::Applied(Object::Attachment(Box::new(on_worker_1))),
        );
        assert_eq!(observer.obs.strandings[0].released, None);
        // Detached from the dead node (the attacher gave up on it) and
        // attached to a new one: released when the old one goes.
        observer.apply(
            90_000,
            node("r1-worker3", true, json!({NODE_LABEL: "prod-worker-3"})),
        );
        observer.apply(
            90_000,
            Change::Applied(Object::Attachment(Box::new(attachment(
                "csi-b",
                "pvc-1",
                "r1-worker3",
                false,
            )))),
        );
        assert_eq!(
            observer.obs.strandings[0].released, None,
            "the old one is still attached"
        );
        observer.apply(
            95_000,
            Change::Deleted(Object::Attachment(Box::new(attachment(
                "csi-a",
                "pvc-1",
                "r1-worker",
                true,
            )))),
        );
        assert_eq!(observer.obs.strandings[0].released, Some(95_000));
        assert!(open_strandings(&observer).is_empty());
    }

    #[test]
    fn a_detached_csi_volume_strands_nothing_whatever_its_annotation_says() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        observer.apply(0, node("prod-worker-1", true, json!({})));
        observer.apply(0, bound_claim("data-db-0", "pvc-1", Some("prod-worker-1")));
        observer.apply(
            0,
            Change::Applied(Object::Volume(Box::new(volume("pvc-1", "data-db-0", None)))),
        );
        let attached = attachment("csi-a", "pvc-1", "prod-worker-1", true);
        observer.apply(
            0,
            Change::Applied(Object::Attachment(Box::new(attached.clone()))),
        );
        observer.settle(0);
        observer.apply(
            10_000,
            Change::Deleted(Object::Attachment(Box::new(attached))),
        );
        observer.settle(10_000);
        assert!(observer.claim_attachments("apps/data-db-0").is_empty());
        observer.apply(20_000, node_gone("prod-worker-1"));
        assert!(
            observer.obs.strandings.is_empty(),
            "{:?}",
            observer.obs.strandings
        );
    }

    #[test]
    fn an_attachment_ended_in_the_instant_its_node_went_is_stranded_and_released_at_once() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        observer.apply(0, node("prod-worker-1", true, json!({})));
        observer.apply(0, bound_claim("data-db-0", "pvc-1", None));
        observer.apply(
            0,
            Change::Applied(Object::Volume(Box::new(volume("pvc-1", "data-db-0", None)))),
        );
        let attached = attachment("csi-a", "pvc-1", "prod-worker-1", true);
        observer.apply(
            0,
            Change::Applied(Object::Attachment(Box::new(attached.clone()))),
        );
        observer.settle(0);
        // The watches deliver the release before the node's deletion.
        observer.apply(
            30_000,
            Change::Deleted(Object::Attachment(Box::new(attached))),
        );
        observer.apply(30_000, node_gone("prod-worker-1"));
        observer.settle(30_000);
        assert_eq!(
            observer.obs.strandings,
            [Stranding {
                claim: "apps/data-db-0".to_owned(),
                node: "prod-worker-1".to_owned(),
                since: 30_000,
                released: Some(30_000)
            }]
        );
    }

    #[test]
    fn a_local_volume_pinned_to_a_deleted_node_strands_its_claim_until_the_volume_goes() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        observer.apply(
            0,
            node(
                "r1-worker",
                true,
                json!({NODE_LABEL: "prod-worker-1", HOSTNAME_LABEL: "r1-worker"}),
            ),
        );
        observer.apply(
            0,
            node("r1-worker2", true, json!({NODE_LABEL: "prod-worker-2"})),
        );
        // No annotation, no attachment: the PV's affinity pins it.
        observer.apply(0, bound_claim("data-db-0", "pvc-1", None));
        let local = volume("pvc-1", "data-db-0", Some("r1-worker"));
        observer.apply(0, Change::Applied(Object::Volume(Box::new(local.clone()))));
        observer.settle(0);
        assert_eq!(
            observer.claim_attachments("apps/data-db-0"),
            ["prod-worker-1"]
        );
        observer.apply(50_000, node_gone("r1-worker2"));
        assert!(observer.obs.strandings.is_empty());
        observer.apply(60_000, node_gone("r1-worker"));
        assert_eq!(
            open_strandings(&observer),
            [(
                "apps/data-db-0".to_owned(),
                "prod-worker-1".to_owned(),
                60_000
            )]
        );
        // The volume's node is gone, and the volume with it: released only
        // when the PV is deleted.
        observer.apply(
            70_000,
            Change::Applied(Object::Volume(Box::new(local.clone()))),
        );
        assert_eq!(observer.obs.strandings[0].released, None);
        observer.apply(80_000, Change::Deleted(Object::Volume(Box::new(local))));
        assert_eq!(observer.obs.strandings[0].released, Some(80_000));
    }

    #[test]
    fn a_volume_of_a_replicated_class_never_strands() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        observer.apply(0, node("prod-worker-1", true, json!({})));
        let mut pv = volume("pvc-2", "pg-0", None);
        if let Some(spec) = pv.spec.as_mut() {
            spec.storage_class_name = Some("longhorn".to_owned());
        }
        observer.apply(0, Change::Applied(Object::Volume(Box::new(pv))));
        observer.apply(
            0,
            Change::Applied(Object::Attachment(Box::new(attachment(
                "csi-c",
                "pvc-2",
                "prod-worker-1",
                true,
            )))),
        );
        assert_eq!(observer.claim_attachments("apps/pg-0"), ["prod-worker-1"]);
        observer.apply(10_000, node_gone("prod-worker-1"));
        assert!(observer.obs.strandings.is_empty());
    }

    #[test]
    fn workload_series_change_only_when_the_counts_do() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        let deployment = |ready: i32, replicas: i32| {
            Change::Applied(Object::Deployment(Box::new(
                serde_json::from_value(json!({
                    "metadata": {"name": "api", "namespace": "apps"},
                    "spec": {"replicas": replicas, "selector": {}, "template": {}},
                    "status": {"readyReplicas": ready},
                }))
                .expect("deployment"),
            )))
        };
        observer.apply(0, deployment(0, 3));
        observer.apply(10, deployment(0, 3));
        observer.apply(20, deployment(3, 3));
        assert_eq!(
            observer.obs.workloads["apps/Deployment/api"].points,
            [(0, 0, 3), (20, 3, 3)]
        );
        assert!(observer.workload_ready("apps/Deployment/api"));
        assert!(!observer.workload_ready("apps/Deployment/nope"));
        assert!(observer.all_workloads_ready());
    }

    #[test]
    fn an_accepted_eviction_that_leaves_a_budget_short_is_a_breach() {
        let drill = drill();
        let mut observer = Observer::new(drill.topology.clone());
        let budget = |healthy: i32| {
            Change::Applied(Object::Budget(Box::new(
                serde_json::from_value(json!({
                    "metadata": {"name": "db", "namespace": "apps"},
                    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
                    "status": {"currentHealthy": healthy, "desiredHealthy": 2, "disruptionsAllowed": 0, "expectedPods": 3},
                }))
                .expect("budget"),
            )))
        };
        let labels = BTreeMap::from([("app".to_owned(), "db".to_owned())]);
        observer.apply(0, budget(2));
        observer.check_budgets_after_eviction(10, "apps", "db-0", &labels);
        assert!(
            observer.obs.budget_breaches.is_empty(),
            "at the budget is within it"
        );
        observer.check_budgets_after_eviction(10, "other", "db-0", &labels);
        observer.apply(20, budget(1));
        observer.check_budgets_after_eviction(20, "apps", "db-1", &BTreeMap::new());
        assert!(
            observer.obs.budget_breaches.is_empty(),
            "a pod the budget does not select"
        );
        observer.check_budgets_after_eviction(20, "apps", "db-1", &labels);
        assert_eq!(
            observer.obs.budget_breaches,
            [BudgetBreach {
                at: 20,
                pdb: "apps/db".to_owned(),
                pod: "apps/db-1".to_owned(),
                healthy: 1,
                desired: 2
            }]
        );
    }

    #[test]
    fn a_wall_clock_change_takes_the_objects_own_time_within_the_window_it_was_seen_in() {
        let origin = jiff::Timestamp::from_second(1_000).expect("time");
        let at = |s: i64| Some(jiff::Timestamp::from_second(1_000 + s).expect("time"));
        // Seen between 10 s and 14.5 s, stamped at 12 s: 12 s.
        assert_eq!(drill_time(at(12), origin, 10_000, 14_500), 12_000);
        // Stamped before the previous look (an old condition): the look.
        assert_eq!(drill_time(at(3), origin, 10_000, 14_500), 10_000);
        // Stamped in the future (skew): now.
        assert_eq!(drill_time(at(30), origin, 10_000, 14_500), 14_500);
        assert_eq!(drill_time(at(-5), origin, 10_000, 14_500), 10_000);
        assert_eq!(drill_time(None, origin, 10_000, 14_500), 14_500);
        let node: Object = Object::Node(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "n", "creationTimestamp": "2026-01-01T00:00:00Z"},
                "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-01-01T00:05:00Z"}]},
            }))
            .expect("node"),
        ));
        assert_eq!(
            node.newest_timestamp().map(|t| t.to_string()),
            Some("2026-01-01T00:05:00Z".to_owned())
        );
    }

    #[test]
    fn node_names_map_to_pools_by_pattern_then_labels() {
        let drill = drill();
        let topology = &drill.topology;
        let none = BTreeMap::new();
        assert_eq!(pool_of(topology, "prod-worker-1", &none), "baseline");
        let cp = BTreeMap::from([(CONTROL_PLANE_LABEL.to_owned(), String::new())]);
        assert_eq!(pool_of(topology, "anything", &cp), CONTROL_PLANE_POOL);
    }
}
