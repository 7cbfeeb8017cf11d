//! The simulated cluster's state: nodes, pods, workloads, claims, budgets.
//!
//! Objects live in vectors and are named by index, so the hot paths
//! (scheduling, controllers) never hash or clone names; a departed object
//! keeps its slot (its phase says it is gone) so indices stay valid.
//! Every collection that is iterated is ordered, never a `HashMap`.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use k8s_openapi::api::core::v1::{Node, NodeSpec, PodSpec, Toleration};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::clock::Time;
use drillbench_model::k8s::disruption::{Budget, PdbSelector};
use drillbench_model::k8s::node_selector::{CompiledPreferences, RequiredNodeAffinity};
use drillbench_model::k8s::rollout::Strategy;
use drillbench_model::scenario::spec::{AttachModel, BindingMode, Release};
use drillbench_policy::interpod::AffinityTerm;
use drillbench_policy::priority::Priority;
use drillbench_policy::spread::SpreadConstraint;

/// Index of a node.
pub type NodeId = usize;
/// Index of a pod.
pub type PodId = usize;
/// Index of a workload.
pub type WorkloadId = usize;
/// Index of a claim.
pub type ClaimId = usize;

/// CPU in millicores and memory in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Resources {
    /// Millicores.
    pub cpu: i64,
    /// Bytes.
    pub memory: i64,
}

impl Resources {
    /// Component-wise sum.
    pub fn plus(self, other: Resources) -> Resources {
        Resources {
            cpu: self.cpu + other.cpu,
            memory: self.memory + other.memory,
        }
    }

    /// Component-wise difference.
    pub fn minus(self, other: Resources) -> Resources {
        Resources {
            cpu: self.cpu - other.cpu,
            memory: self.memory - other.memory,
        }
    }

    /// Whether both components of `self` are at most those of `other`.
    pub fn fits_in(self, other: Resources) -> bool {
        self.cpu <= other.cpu && self.memory <= other.memory
    }
}

/// Where a node is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodePhase {
    /// The server is booting; the Node is not Ready yet.
    Booting,
    /// Ready.
    Ready,
    /// The node stopped heartbeating and was marked NotReady.
    NotReady,
    /// The Node object is deleted.
    Gone,
}

/// A node.
#[derive(Debug, Clone)]
pub struct SimNode {
    /// Name.
    pub name: String,
    /// Pool (`control-plane` for control planes).
    pub pool: String,
    /// Whether it is a control plane.
    pub control_plane: bool,
    /// The Node object as the matchers see it: labels, taints, unschedulable.
    /// Boxed: the object is large, and the scheduler scans thousands of
    /// nodes per pod, so keeping it out of line keeps the scan in cache.
    pub object: Box<Node>,
    /// Allocatable resources.
    pub allocatable: Resources,
    /// Most pods.
    pub max_pods: u32,
    /// Sum of requests of the pods bound to it that still hold resources.
    pub requested: Resources,
    /// Pods bound to it that still hold resources.
    pub pods: BTreeSet<PodId>,
    /// Life phase.
    pub phase: NodePhase,
    /// Whether its server is running and heartbeating.
    pub server_up: bool,
    /// When its server last stopped: its kubelet's last heartbeat (Lease
    /// renewal) came before it.
    pub server_stopped_at: Option<Time>,
    /// Whether the cloud server still exists.
    pub server_exists: bool,
    /// Scheduling equivalence class (nodes that only differ by name).
    pub class: usize,
    /// Since when the autoscaler has seen it unneeded.
    pub unneeded_since: Option<Time>,
    /// Until when the autoscaler leaves it out of scale-down, a scan
    /// having found it unremovable.
    pub unremovable_until: Option<Time>,
    /// When the Node object was deleted.
    pub gone_at: Option<Time>,
    /// Whether a drain or a scale-down is removing it.
    pub draining: bool,
}

impl SimNode {
    /// A node as it is created, Booting: labels with its hostname, taints,
    /// capacity (allocatable, most pods); in class 0 until it is classed.
    pub fn new(
        name: &str,
        pool: &str,
        control_plane: bool,
        mut labels: BTreeMap<String, String>,
        taints: Vec<k8s_openapi::api::core::v1::Taint>,
        (allocatable, max_pods): (Resources, u32),
    ) -> SimNode {
        labels.insert("kubernetes.io/hostname".to_owned(), name.to_owned());
        labels.insert("kubernetes.io/os".to_owned(), "linux".to_owned());
        SimNode {
            name: name.to_owned(),
            pool: pool.to_owned(),
            control_plane,
            object: Box::new(Node {
                metadata: ObjectMeta {
                    name: Some(name.to_owned()),
                    labels: Some(labels),
                    ..Default::default()
                },
                spec: Some(NodeSpec {
                    taints: (!taints.is_empty()).then_some(taints),
                    ..Default::default()
                }),
                status: None,
            }),
            allocatable,
            max_pods,
            requested: Resources::default(),
            pods: BTreeSet::new(),
            phase: NodePhase::Booting,
            server_up: true,
            server_stopped_at: None,
            server_exists: true,
            class: 0,
            unneeded_since: None,
            unremovable_until: None,
            gone_at: None,
            draining: false,
        }
    }

    /// Whether the node can run pods now.
    pub fn is_ready(&self) -> bool {
        self.phase == NodePhase::Ready
    }

    /// Whether it is cordoned.
    pub fn unschedulable(&self) -> bool {
        self.object
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false)
    }

    /// Its labels.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.object.metadata.labels.as_ref().unwrap_or(&EMPTY)
    }

    /// Its taints.
    pub fn taints(&self) -> &[k8s_openapi::api::core::v1::Taint] {
        self.object
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[])
    }
}

/// A pod template compiled once and shared by every pod made from it.
#[derive(Debug)]
pub struct Template {
    /// Labels of the pods.
    pub labels: BTreeMap<String, String>,
    /// Annotations of the pods.
    pub annotations: BTreeMap<String, String>,
    /// The pod spec as written (after guards mutated it).
    pub spec: PodSpec,
    /// Requests, init containers and overhead included.
    pub requests: Resources,
    /// nodeSelector and required node affinity.
    pub required: RequiredNodeAffinity,
    /// Whether the required rules look at per-node fields (hostname label or
    /// `metadata.name`), so they cannot be judged once per node class.
    pub per_node: bool,
    /// Preferred node affinity.
    pub preferences: CompiledPreferences,
    /// Tolerations, with the defaults admission adds.
    pub tolerations: Vec<Toleration>,
    /// Required pod anti-affinity terms.
    pub anti_affinity: Vec<AffinityTerm>,
    /// Required pod affinity terms.
    pub affinity: Vec<AffinityTerm>,
    /// Declared topology spread constraints, `matchLabelKeys` merged.
    pub spread: Vec<SpreadConstraint>,
    /// Names of PVCs mounted through `persistentVolumeClaim` volumes.
    pub claim_volumes: Vec<String>,
    /// Whether it mounts emptyDir or hostPath volumes (blocks scale-down).
    pub local_storage: bool,
    /// How long after its containers started the pod is Ready: its
    /// readiness probe's initial delay (start-up itself is drawn).
    pub start_delay: u64,
    /// The pod's `cluster-autoscaler.kubernetes.io/safe-to-evict` annotation.
    pub safe_to_evict: Option<bool>,
    /// Which guard refused the template, if one did (`Enforce`).
    pub refused_by: Option<String>,
    /// A writer acknowledges one write this often (ms) while one of its
    /// pods is Ready (annotation `drillbench.dev/writes-every`).
    pub writes_every: Option<u64>,
    /// What the Priority admission plugin resolved from its
    /// `priorityClassName`.
    pub priority: Priority,
    /// The PriorityClass its pods name while no class of that name exists:
    /// the API server accepts the workload and the Priority admission
    /// plugin refuses each of its pods, so its controller creates none
    /// until the class is created (`plugin/pkg/admission/priority`).
    pub waits_for_class: Option<String>,
    /// `labels`, shared by the placements of the pods made from it.
    pub(crate) shared_labels: std::cell::OnceCell<Rc<BTreeMap<String, String>>>,
    /// Per node class: what the class's labels and taints make of this
    /// template (filters and the static part of the score). Filled lazily
    /// by the scheduler; a class never changes, so an entry never goes stale.
    pub(crate) class_views: std::cell::RefCell<Vec<Option<super::classes::ClassView>>>,
}

impl Template {
    /// The images its init containers and containers run, each once, in
    /// the order the kubelet pulls them.
    pub fn images(&self) -> Vec<String> {
        let mut images: Vec<String> = Vec::new();
        let init = self.spec.init_containers.iter().flatten();
        for image in init
            .chain(&self.spec.containers)
            .filter_map(|c| c.image.as_ref())
        {
            if !images.contains(image) {
                images.push(image.clone());
            }
        }
        images
    }

    /// The same template with another pod spec whose changes do not touch
    /// scheduling (an image), as a rollout makes it: a new object, so pods
    /// made from it are told from the old ones by identity.
    pub fn with_spec(&self, spec: PodSpec) -> Template {
        Template {
            labels: self.labels.clone(),
            annotations: self.annotations.clone(),
            spec,
            requests: self.requests,
            required: self.required.clone(),
            per_node: self.per_node,
            preferences: self.preferences.clone(),
            tolerations: self.tolerations.clone(),
            anti_affinity: self.anti_affinity.clone(),
            affinity: self.affinity.clone(),
            spread: self.spread.clone(),
            claim_volumes: self.claim_volumes.clone(),
            local_storage: self.local_storage,
            start_delay: self.start_delay,
            safe_to_evict: self.safe_to_evict,
            refused_by: self.refused_by.clone(),
            writes_every: self.writes_every,
            priority: self.priority,
            waits_for_class: self.waits_for_class.clone(),
            shared_labels: Default::default(),
            class_views: Default::default(),
        }
    }
}

/// Where a pod is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodPhase {
    /// Not bound to a node.
    Pending,
    /// Bound; containers starting.
    Starting,
    /// Bound but cannot start (a volume attached elsewhere).
    Blocked,
    /// Running and Ready.
    Ready,
    /// Deleted, waiting for its node to confirm (a lost node never does).
    Terminating,
    /// Finished successfully (Jobs).
    Succeeded,
    /// The pod object is gone.
    Gone,
}

/// Who owns a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A workload (and the StatefulSet ordinal, if any).
    Workload(WorkloadId, Option<u32>),
    /// Nobody: a bare pod.
    None,
}

/// A pod.
#[derive(Debug, Clone)]
pub struct SimPod {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Owner.
    pub owner: Owner,
    /// Its compiled template.
    pub template: Rc<Template>,
    /// Claims it mounts.
    pub claims: Vec<ClaimId>,
    /// The node it is bound to.
    pub node: Option<NodeId>,
    /// Life phase.
    pub phase: PodPhase,
    /// When it was created.
    pub created_at: Time,
    /// When it last became Ready (its Ready condition's transition time);
    /// meaningful while `phase` is `Ready`.
    pub ready_at: Time,
    /// When the scheduler last reported it unschedulable (to avoid
    /// repeating the same event every pass).
    pub unschedulable_reported: bool,
    /// Whether its resources still count on its node.
    pub holds_resources: bool,
    /// When it was deleted (its `deletionTimestamp`), once it was.
    pub deleted_at: Option<Time>,
    /// The node its preemption made room on (`status.nominatedNodeName`),
    /// while it waits for the victims to go.
    pub nominated: Option<NodeId>,
}

impl SimPod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }

    /// Whether it counts as a live replica for its controller.
    pub fn is_active(&self) -> bool {
        matches!(
            self.phase,
            PodPhase::Pending | PodPhase::Starting | PodPhase::Blocked | PodPhase::Ready
        )
    }
}

/// What kind of controller a workload is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadKind {
    /// A Deployment (its ReplicaSet is folded into it).
    Deployment,
    /// A bare ReplicaSet.
    ReplicaSet,
    /// A StatefulSet with its claim templates: (template name, class).
    StatefulSet {
        /// volumeClaimTemplates: name and storage class.
        claim_templates: Vec<(String, Option<String>)>,
        /// `podManagementPolicy: Parallel`: every missing pod is created,
        /// and every surplus one deleted, at once, none waiting for
        /// another (the default, `OrderedReady`, goes one ordinal at a
        /// time, each waiting for its predecessors to be Ready).
        parallel: bool,
    },
    /// A DaemonSet.
    DaemonSet,
    /// A Job: completions wanted.
    Job {
        /// Completions wanted.
        completions: u32,
        /// How long one pod runs before it succeeds.
        run_for: u64,
    },
    /// A bare pod, kept as a workload of one so it is reported like the others.
    Pod,
}

/// A controller and the pods it owns.
#[derive(Debug, Clone)]
pub struct Workload {
    /// `namespace/Kind/name`.
    pub key: String,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: WorkloadKind,
    /// Desired replicas (for a DaemonSet: recomputed from the nodes).
    pub replicas: u32,
    /// The pod template.
    pub template: Rc<Template>,
    /// Pods it owns, live or not.
    pub pods: Vec<PodId>,
    /// Next pod-name suffix for generated names.
    pub next_suffix: u64,
    /// Jobs: completions so far.
    pub succeeded: u32,
    /// How a Deployment replaces pods made from an older template.
    pub strategy: Strategy,
    /// A CronJob's schedule: its Job runs again at each scheduled time.
    pub cron: Option<CronRun>,
    /// A Deployment's pod templates, one per ReplicaSet the deployment
    /// controller keeps, oldest first; empty for other kinds.
    pub revisions: Vec<Revision>,
}

/// One of a Deployment's pod templates, as the ReplicaSet the deployment
/// controller keeps for it (`pkg/controller/deployment/sync.go`).
#[derive(Debug, Clone)]
pub struct Revision {
    /// `deployment.kubernetes.io/revision`: the newest template's is one
    /// more than any other's, and a template that becomes the newest
    /// again (a rollback) takes the next number (`getNewReplicaSet`).
    pub number: u64,
    /// The numbers it had before (`deployment.kubernetes.io/revision-history`).
    pub history: Vec<u64>,
    pub template: Rc<Template>,
    pub created_at: super::clock::Time,
    /// Which of the workload's ReplicaSets it is, for its uid.
    pub index: usize,
}

/// How many old ReplicaSets without pods a Deployment keeps: the
/// `revisionHistoryLimit` default of `apps/v1`.
pub const REVISION_HISTORY_LIMIT: usize = 10;

/// A CronJob's schedule and the policies that decide each run.
#[derive(Debug, Clone, Copy)]
pub struct CronRun {
    /// When runs are due (UTC).
    pub schedule: drillbench_model::k8s::cron::Schedule,
    /// What a run due while the previous one is still active does.
    pub concurrency: Concurrency,
    /// `spec.suspend`: due runs are skipped.
    pub suspend: bool,
}

/// `spec.concurrencyPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Concurrency {
    /// The run starts anyway. The simulator keeps one pod count per
    /// CronJob, so overlapping runs share it rather than adding up.
    Allow,
    /// The run is skipped.
    Forbid,
    /// The active run's pods are deleted and the new run starts.
    Replace,
}

/// A persistent volume claim and the state of its volume.
#[derive(Debug, Clone)]
pub struct Claim {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Its storage class (after the default was applied), if any.
    pub class: Option<String>,
    /// The size its manifest asks for (`resources.requests.storage`),
    /// shown back as written; `None` for a claim a StatefulSet or an
    /// ephemeral volume makes (the simulator does not model sizes).
    pub storage: Option<String>,
    /// How its volume attaches.
    pub attach: AttachModel,
    /// What happens to an attachment when its node departs.
    pub release: Release,
    /// When its volume is bound (and, with a topology key, where).
    pub binding: BindingMode,
    /// The node label its volume is confined to, if its class has one.
    pub topology_key: Option<String>,
    /// Whether a volume is bound to it.
    pub bound: bool,
    /// The bound volume's node affinity: the value of `topology_key` it
    /// was provisioned in. Pods using the claim only fit nodes carrying it.
    pub pv_topology: Option<String>,
    /// The node its volume is attached to (single-attach volumes).
    pub attached: Option<NodeId>,
    /// When its volume last attached (its VolumeAttachment's creation).
    pub attached_at: Time,
    /// The node the scheduler picked for its first consumer when a
    /// `WaitForFirstConsumer` volume was provisioned: the claim's
    /// `volume.kubernetes.io/selected-node`, which, as on a real cluster,
    /// stays when the volume later detaches or moves.
    pub selected_node: Option<NodeId>,
    /// When a departed node's attachment will be released.
    pub release_at: Option<Time>,
}

/// A PodDisruptionBudget: the object (whose status the disruption
/// controller keeps current, as the eviction API reads it) and its parts.
#[derive(Debug, Clone)]
pub struct Pdb {
    /// The object, status included.
    pub object: PodDisruptionBudget,
    /// The budget.
    pub budget: Budget,
    /// Which pods it covers.
    pub selector: PdbSelector,
    /// Pods evicted and not yet gone (`status.disruptedPods`).
    pub disrupted: BTreeMap<PodId, Time>,
}

impl Pdb {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!(
            "{}/{}",
            self.object
                .metadata
                .namespace
                .as_deref()
                .unwrap_or("default"),
            self.object.metadata.name.as_deref().unwrap_or_default()
        )
    }
}
