//! The simulator's state as Kubernetes objects, built on demand for the API
//! façade (`bench sim serve`). Read-only: every field is derived from the
//! state the controllers keep, so the façade can never disagree with the
//! model it shows.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use drillbench_policy::priority::PreemptionPolicy;
use k8s_openapi::api::apps::v1::{
    DaemonSet, DaemonSetSpec, DaemonSetStatus, Deployment, DeploymentCondition, DeploymentSpec,
    DeploymentStatus, ReplicaSet, ReplicaSetCondition, ReplicaSetSpec, ReplicaSetStatus,
    StatefulSet, StatefulSetSpec, StatefulSetStatus,
};
use k8s_openapi::api::batch::v1::{Job, JobSpec, JobStatus};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    CSIPersistentVolumeSource, Namespace, Node, NodeAddress, NodeCondition, NodeSelector,
    NodeSelectorRequirement, NodeSelectorTerm, NodeStatus, NodeSystemInfo, ObjectReference,
    PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeClaimStatus, PersistentVolumeSpec, PersistentVolumeStatus, Pod,
    PodTemplateSpec, VolumeNodeAffinity, VolumeResourceRequirements,
};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::storage::v1::{
    StorageClass, VolumeAttachment, VolumeAttachmentSource, VolumeAttachmentSpec,
    VolumeAttachmentStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    LabelSelector, MicroTime, ObjectMeta, OwnerReference, Time as MetaTime,
};
use sha2::{Digest, Sha256};

use super::clock::Time;
use super::world::{
    ClaimId, NodeId, NodePhase, Owner, PodId, PodPhase, Revision, WorkloadId, WorkloadKind,
};
use super::{EPOCH_SECONDS, Simulation};
use drillbench_model::labels::ATTACH_ANNOTATION;
use drillbench_model::scenario::spec::{AttachModel, BindingMode};
use drillbench_observe::EventKind;

/// A controller condition: pods it could not create
/// (`ReplicaSetReplicaFailure`, `DeploymentReplicaFailure`).
const REPLICA_FAILURE: &str = "ReplicaFailure";
/// Its reason when the API server refused a pod it created.
const FAILED_CREATE: &str = "FailedCreate";

/// The CSI driver (a StorageClass's provisioner, a PersistentVolume's
/// `spec.csi.driver` and a VolumeAttachment's attacher) of single-attach
/// volumes, which attach to one node at a time as `csi.hetzner.cloud` does.
pub const SINGLE_ATTACH_DRIVER: &str = "single-attach.csi.drillbench.dev";

/// The CSI driver of replicated volumes (Longhorn-like: any node can use
/// them, so the simulator tracks no attachment and shows none), and of
/// claims whose class the drill does not define.
pub const REPLICATED_DRIVER: &str = "replicated.csi.drillbench.dev";

/// The size every simulated volume shows: the simulator does not model
/// sizes, and 10 GiB is the smallest `hcloud` volume.
pub const VOLUME_CAPACITY: &str = "10Gi";

/// The name of a claim's PersistentVolume: `pvc-` and the claim's UID, as
/// dynamic provisioning names volumes.
pub fn volume_name(claim: ClaimId) -> String {
    format!("pvc-{}", uid(4, claim))
}

/// The name of the VolumeAttachment of a volume to a node: `csi-` and the
/// SHA-256 of volume, attacher and node, as the CSI external-attacher
/// names them, so the same attachment always has the same name and a
/// move to another node is a new object.
pub fn attachment_name(volume: &str, attacher: &str, node: &str) -> String {
    let digest = Sha256::digest(format!("{volume}{attacher}{node}").as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("csi-{hex}")
}

/// Drill time as an API timestamp, from the same fixed epoch reports use.
pub fn timestamp(at: Time) -> MetaTime {
    let seconds = EPOCH_SECONDS + (at / 1000) as i64;
    MetaTime(jiff::Timestamp::from_second(seconds).unwrap_or(jiff::Timestamp::UNIX_EPOCH))
}

/// The label a Deployment's ReplicaSet and pods carry to tell its
/// templates apart (`apps/v1` `DefaultDeploymentUniqueLabelKey`).
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// `deployment.kubernetes.io/revision`, on a Deployment and its
/// ReplicaSets (the deployment controller's `RevisionAnnotation`).
pub const REVISION_ANNOTATION: &str = "deployment.kubernetes.io/revision";

/// A template's `pod-template-hash`, as `controller.ComputeHash`
/// (`pkg/controller/controller_utils.go`) makes it: the 32-bit FNV-1a of
/// the template, written in decimal and each digit mapped by
/// `rand.SafeEncodeString` to its alphabet of consonants and digits that
/// spell no words. Upstream hashes Go's printed form of the template; this
/// hashes its JSON, so the value differs from a real cluster's, but is as
/// stable and as short.
pub fn template_hash(template: &PodTemplateSpec) -> String {
    const SAFE: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut hash: u32 = 0x811c_9dc5;
    for byte in serde_json::to_vec(template).unwrap_or_default() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash.to_string()
        .bytes()
        .map(|b| char::from(SAFE[usize::from(b) % SAFE.len()]))
        .collect()
}

/// The uid of one of a Deployment's ReplicaSets.
pub fn replicaset_uid(w: WorkloadId, index: usize) -> String {
    uid(10, (w << 16) | index)
}

/// A stable UID for an object: its kind and index, so the same seed gives
/// the same UIDs and a recreated pod (a new index) gets a new one.
pub fn uid(kind: u8, index: usize) -> String {
    format!("00000000-0000-4000-8{kind:03x}-{index:012x}")
}

/// How often a kubelet renews its node's Lease: a quarter of the lease's
/// 40 s (`nodeLeaseRenewIntervalFraction` in kubelet's `kubelet.go`
/// times the `nodeLeaseDurationSeconds` default).
pub const LEASE_RENEW_INTERVAL_MS: u64 = 10_000;

/// What a served StatefulSet's claim templates ask for: the API server
/// requires a claim's `resources.requests.storage`, and a client that
/// reads a StatefulSet back (a snapshot of the served cluster) must find
/// one; the simulator does not model sizes, so it is [`VOLUME_CAPACITY`].
/// A standalone claim shows its manifest's own size instead, so a
/// re-apply of the manifest (the kube backend's) changes nothing.
fn claim_request() -> VolumeResourceRequirements {
    VolumeResourceRequirements {
        requests: Some(BTreeMap::from([(
            "storage".to_owned(),
            Quantity(VOLUME_CAPACITY.to_owned()),
        )])),
        ..Default::default()
    }
}

/// The CSI driver of a class's volumes, by how they attach.
fn class_driver(attach: AttachModel) -> &'static str {
    match attach {
        AttachModel::SingleNode => SINGLE_ATTACH_DRIVER,
        AttachModel::Replicated => REPLICATED_DRIVER,
    }
}

impl Simulation {
    /// When an object first appeared on the timeline (time zero if never).
    fn first_seen(&self, kind: EventKind, name: &str) -> Time {
        self.obs
            .events
            .iter()
            .find(|e| e.kind == kind && e.object.name == name)
            .map_or(0, |e| e.at_ms)
    }

    /// Whether a Node object exists (not deleted).
    pub fn node_exists(&self, node: NodeId) -> bool {
        self.world.node(node).phase != NodePhase::Gone
    }

    /// Whether a Pod object exists (not deleted).
    pub fn pod_exists(&self, pod: PodId) -> bool {
        self.world.pod(pod).phase != PodPhase::Gone
    }

    /// The Node object: labels, taints, cordon, and a Ready condition that
    /// follows the node lifecycle.
    pub fn node_view(&self, node: NodeId) -> Node {
        let n = self.world.node(node);
        let mut object = n.object.clone();
        let created = self.first_seen(EventKind::NodeAdded, &n.name);
        object.metadata.uid = Some(uid(1, node));
        object.metadata.creation_timestamp = Some(timestamp(created));
        if n.phase == NodePhase::Gone {
            object.metadata.deletion_timestamp = n.gone_at.map(timestamp);
        }
        let (status, reason) = match n.phase {
            NodePhase::Ready => ("True", "KubeletReady"),
            NodePhase::Booting => ("False", "KubeletNotReady"),
            NodePhase::NotReady | NodePhase::Gone => ("Unknown", "NodeStatusUnknown"),
        };
        let quantity = |s: String| Quantity(s);
        let resources = BTreeMap::from([
            (
                "cpu".to_owned(),
                quantity(format!("{}m", n.allocatable.cpu)),
            ),
            (
                "memory".to_owned(),
                quantity(n.allocatable.memory.to_string()),
            ),
            ("pods".to_owned(), quantity(n.max_pods.to_string())),
        ]);
        object.status = Some(NodeStatus {
            conditions: Some(vec![NodeCondition {
                type_: "Ready".to_owned(),
                status: status.to_owned(),
                reason: Some(reason.to_owned()),
                ..Default::default()
            }]),
            addresses: Some(vec![
                NodeAddress {
                    type_: "InternalIP".to_owned(),
                    address: format!("10.0.{}.{}", node / 250, node % 250 + 2),
                },
                NodeAddress {
                    type_: "Hostname".to_owned(),
                    address: n.name.clone(),
                },
            ]),
            allocatable: Some(resources.clone()),
            capacity: Some(resources),
            node_info: Some(NodeSystemInfo {
                architecture: "amd64".to_owned(),
                container_runtime_version: "containerd://2.1.4".to_owned(),
                kernel_version: "6.12.0-drillbench".to_owned(),
                kubelet_version: "v1.36.3".to_owned(),
                kube_proxy_version: String::new(),
                operating_system: "linux".to_owned(),
                os_image: format!("drillbench simulated node ({})", n.pool),
                boot_id: String::new(),
                machine_id: String::new(),
                system_uuid: String::new(),
                ..Default::default()
            }),
            ..Default::default()
        });
        *object
    }

    /// The Pod object: the simulator's view ([`Simulation::pod_object`])
    /// plus what clients read: node, owner, UID, times, conditions.
    pub fn pod_view(&self, pod: PodId) -> Pod {
        let p = self.world.pod(pod);
        let mut object = self.pod_object(pod);
        object.metadata.uid = Some(uid(2, pod));
        object.metadata.creation_timestamp = Some(timestamp(p.created_at));
        if p.phase == PodPhase::Gone {
            object.metadata.deletion_timestamp = Some(timestamp(self.now()));
        }
        if !p.template.annotations.is_empty() {
            object.metadata.annotations = Some(p.template.annotations.clone());
        }
        if let Owner::Workload(w, _) = p.owner
            && let Some((kind, api_version, name)) = self.pod_owner(w)
        {
            let (name, owner_uid) = match self.pod_revision(pod) {
                // A Deployment's pod belongs to the ReplicaSet of its
                // template and carries that template's hash label, as
                // the ReplicaSet controller creates it.
                Some(revision) => {
                    let hash = template_hash(&self.revision_template(revision));
                    object
                        .metadata
                        .labels
                        .get_or_insert_default()
                        .insert(POD_TEMPLATE_HASH.to_owned(), hash.clone());
                    let workload = self.world.workload(w);
                    (
                        format!("{}-{hash}", workload.name),
                        replicaset_uid(w, revision.index),
                    )
                }
                None => (name, uid(3, w)),
            };
            object.metadata.owner_references = Some(vec![OwnerReference {
                api_version: api_version.to_owned(),
                kind: kind.to_owned(),
                name,
                uid: owner_uid,
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]);
        }
        if let Some(spec) = object.spec.as_mut() {
            spec.node_name = p.node.map(|n| self.world.node(n).name.clone());
            // What the Priority admission plugin wrote into the pod
            // (`plugin/pkg/admission/priority/admission.go`): the value
            // resolved from its class (or the global default, or 0), and
            // the class's preemption policy, `PreemptLowerPriority` unless
            // the class says `Never`.
            spec.priority = Some(p.template.priority.value);
            spec.preemption_policy = Some(
                match p.template.priority.policy {
                    PreemptionPolicy::PreemptLowerPriority => "PreemptLowerPriority",
                    PreemptionPolicy::Never => "Never",
                }
                .to_owned(),
            );
        }
        if let Some(status) = object.status.as_mut() {
            status.host_ip = p.node.map(|n| format!("10.0.{}.{}", n / 250, n % 250 + 2));
            status.pod_ip = p
                .node
                .map(|_| format!("10.244.{}.{}", pod / 250, pod % 250 + 2));
            status.start_time = p.node.map(|_| timestamp(p.created_at));
            // The node a preemption made room on, while the pod waits for
            // its victims to go (`status.nominatedNodeName`).
            status.nominated_node_name = p.nominated.map(|n| self.world.node(n).name.clone());
            if p.phase == PodPhase::Blocked {
                status.reason = Some("ContainerCreating".to_owned());
                status.message = Some("a volume is still attached to another node".to_owned());
            }
            if let Some(conditions) = status.conditions.as_mut() {
                // The scheduler's verdict, as an autoscaler reads it: a pod
                // it tried and could not place is `Unschedulable`.
                let unschedulable = p.node.is_none() && p.unschedulable_reported;
                conditions.push(k8s_openapi::api::core::v1::PodCondition {
                    type_: "PodScheduled".to_owned(),
                    status: if p.node.is_some() { "True" } else { "False" }.to_owned(),
                    reason: unschedulable.then(|| "Unschedulable".to_owned()),
                    ..Default::default()
                });
            }
        }
        object
    }

    /// The controller a workload's pods name as their owner. A Deployment's
    /// pods belong to its ReplicaSet, which the simulator folds into the
    /// Deployment; the name is the Deployment's. A bare pod has none.
    fn pod_owner(&self, w: WorkloadId) -> Option<(&'static str, &'static str, String)> {
        let workload = self.world.workload(w);
        let (kind, api_version) = match workload.kind {
            WorkloadKind::Deployment | WorkloadKind::ReplicaSet => ("ReplicaSet", "apps/v1"),
            WorkloadKind::StatefulSet { .. } => ("StatefulSet", "apps/v1"),
            WorkloadKind::DaemonSet => ("DaemonSet", "apps/v1"),
            WorkloadKind::Job { .. } => ("Job", "batch/v1"),
            WorkloadKind::Pod => return None,
        };
        Some((kind, api_version, workload.name.clone()))
    }

    /// Live workloads: indexed (not deleted) and admitted (no guard refused
    /// them), in index order.
    pub fn live_workloads(&self) -> Vec<WorkloadId> {
        let mut ids: Vec<WorkloadId> = self
            .world
            .indexed_workloads()
            .filter(|&w| self.world.workload(w).template.refused_by.is_none())
            .collect();
        ids.sort_unstable();
        ids
    }

    /// The live workload of a `namespace/Kind/name` key.
    pub fn workload_id(&self, key: &str) -> Option<WorkloadId> {
        self.world
            .workload_id(key)
            .filter(|&w| self.world.workload(w).template.refused_by.is_none())
    }

    fn workload_meta(&self, w: WorkloadId) -> ObjectMeta {
        let workload = self.world.workload(w);
        let created = workload
            .pods
            .first()
            .map_or(0, |&p| self.world.pod(p).created_at);
        ObjectMeta {
            name: Some(workload.name.clone()),
            namespace: Some(workload.namespace.clone()),
            uid: Some(uid(3, w)),
            generation: Some(1),
            creation_timestamp: Some(timestamp(created)),
            ..Default::default()
        }
    }

    /// The revision (ReplicaSet) of a Deployment's pod: the one whose
    /// template it was made from; `None` for other pods.
    fn pod_revision(&self, pod: PodId) -> Option<&Revision> {
        let p = self.world.pod(pod);
        let Owner::Workload(w, _) = p.owner else {
            return None;
        };
        let revisions = &self.world.workload(w).revisions;
        revisions
            .iter()
            .find(|r| Rc::ptr_eq(&r.template, &p.template))
            .or_else(|| {
                revisions
                    .iter()
                    .find(|r| r.template.spec == p.template.spec)
            })
            .or_else(|| revisions.iter().max_by_key(|r| r.number))
    }

    /// A revision's pod template as its Deployment shows it (no hash).
    fn revision_template(&self, revision: &Revision) -> PodTemplateSpec {
        let template = &revision.template;
        PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(template.labels.clone()),
                annotations: (!template.annotations.is_empty())
                    .then(|| template.annotations.clone()),
                ..Default::default()
            }),
            spec: Some(template.spec.clone()),
        }
    }

    /// The newest revision number of a Deployment (its
    /// `deployment.kubernetes.io/revision`), if it keeps revisions.
    pub fn deployment_revision(&self, w: WorkloadId) -> Option<u64> {
        self.world
            .workload(w)
            .revisions
            .iter()
            .map(|r| r.number)
            .max()
    }

    /// Every live Deployment's ReplicaSets, one per revision it keeps
    /// ([`Revision`]), as the deployment controller writes them: named
    /// after the Deployment and the template's hash, labelled and
    /// selecting with `pod-template-hash`, owned by the Deployment,
    /// annotated with the revision (`deployment.kubernetes.io/revision`,
    /// `revision-history`, `desired-replicas`). The newest wants what
    /// the Deployment's old pods leave of its replicas; an old one, the
    /// pods it still has (the rolling update scales it down as they go).
    pub fn replicaset_views(&self) -> Vec<ReplicaSet> {
        let mut out = Vec::new();
        for w in self.live_workloads() {
            let workload = self.world.workload(w);
            if workload.kind != WorkloadKind::Deployment {
                continue;
            }
            let newest = self.deployment_revision(w).unwrap_or(0);
            let pods_of = |revision: &Revision| -> (i32, i32) {
                let mut counts = (0, 0);
                for &p in &workload.pods {
                    let pod = self.world.pod(p);
                    if !pod.is_active()
                        || self.pod_revision(p).map(|r| r.index) != Some(revision.index)
                    {
                        continue;
                    }
                    counts.0 += 1;
                    if pod.phase == PodPhase::Ready {
                        counts.1 += 1;
                    }
                }
                counts
            };
            let old_pods: i32 = workload
                .revisions
                .iter()
                .filter(|r| r.number != newest)
                .map(|r| pods_of(r).0)
                .sum();
            for revision in &workload.revisions {
                let (live, ready) = pods_of(revision);
                let wanted = if revision.number == newest {
                    live.max(workload.replicas as i32 - old_pods)
                } else {
                    live
                };
                let mut template = self.revision_template(revision);
                let hash = template_hash(&template);
                let mut labels = template
                    .metadata
                    .as_ref()
                    .and_then(|m| m.labels.clone())
                    .unwrap_or_default();
                labels.insert(POD_TEMPLATE_HASH.to_owned(), hash.clone());
                if let Some(meta) = template.metadata.as_mut() {
                    meta.labels = Some(labels.clone());
                }
                let mut annotations = BTreeMap::from([
                    (
                        "deployment.kubernetes.io/desired-replicas".to_owned(),
                        workload.replicas.to_string(),
                    ),
                    (REVISION_ANNOTATION.to_owned(), revision.number.to_string()),
                ]);
                if !revision.history.is_empty() {
                    let history: Vec<String> =
                        revision.history.iter().map(u64::to_string).collect();
                    annotations.insert(
                        "deployment.kubernetes.io/revision-history".to_owned(),
                        history.join(","),
                    );
                }
                out.push(ReplicaSet {
                    metadata: ObjectMeta {
                        name: Some(format!("{}-{hash}", workload.name)),
                        namespace: Some(workload.namespace.clone()),
                        uid: Some(replicaset_uid(w, revision.index)),
                        generation: Some(1),
                        creation_timestamp: Some(timestamp(revision.created_at)),
                        labels: Some(labels.clone()),
                        annotations: Some(annotations),
                        owner_references: Some(vec![OwnerReference {
                            api_version: "apps/v1".to_owned(),
                            kind: "Deployment".to_owned(),
                            name: workload.name.clone(),
                            uid: uid(3, w),
                            controller: Some(true),
                            block_owner_deletion: Some(true),
                        }]),
                        ..Default::default()
                    },
                    spec: Some(ReplicaSetSpec {
                        replicas: Some(wanted),
                        selector: LabelSelector {
                            match_labels: Some(labels),
                            match_expressions: None,
                        },
                        template: Some(template),
                        ..Default::default()
                    }),
                    status: Some(ReplicaSetStatus {
                        replicas: live,
                        fully_labeled_replicas: Some(live),
                        ready_replicas: Some(ready),
                        available_replicas: Some(ready),
                        observed_generation: Some(1),
                        // The ReplicaSet controller's `ReplicaFailure`
                        // for pods it could not create (`manageReplicas`).
                        conditions: self
                            .pod_refusal(w)
                            .filter(|_| revision.number == newest)
                            .map(|message| {
                                vec![ReplicaSetCondition {
                                    type_: REPLICA_FAILURE.to_owned(),
                                    status: "True".to_owned(),
                                    reason: Some(FAILED_CREATE.to_owned()),
                                    message: Some(message),
                                    ..Default::default()
                                }]
                            }),
                        ..Default::default()
                    }),
                });
            }
        }
        out
    }

    fn workload_template(&self, w: WorkloadId) -> (LabelSelector, PodTemplateSpec) {
        let template = &self.world.workload(w).template;
        let selector = LabelSelector {
            match_labels: Some(template.labels.clone()),
            match_expressions: None,
        };
        let pod_template = PodTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(template.labels.clone()),
                annotations: (!template.annotations.is_empty())
                    .then(|| template.annotations.clone()),
                ..Default::default()
            }),
            spec: Some(template.spec.clone()),
        };
        (selector, pod_template)
    }

    /// (live pods, ready pods) of a workload.
    fn workload_counts(&self, w: WorkloadId) -> (i32, i32) {
        let pods = &self.world.workload(w).pods;
        let live = pods
            .iter()
            .filter(|&&p| self.world.pod(p).is_active())
            .count() as i32;
        let ready = pods
            .iter()
            .filter(|&&p| self.world.pod(p).phase == PodPhase::Ready)
            .count() as i32;
        (live, ready)
    }

    /// A Deployment (or a bare ReplicaSet, shown as one) with its replica
    /// counts.
    pub fn deployment_view(&self, w: WorkloadId) -> Deployment {
        let (selector, template) = self.workload_template(w);
        let (live, ready) = self.workload_counts(w);
        let replicas = self.world.workload(w).replicas as i32;
        Deployment {
            metadata: self.workload_meta(w),
            spec: Some(DeploymentSpec {
                replicas: Some(replicas),
                selector,
                template,
                strategy: Some(self.world.workload(w).strategy.to_spec()),
                ..Default::default()
            }),
            status: Some(DeploymentStatus {
                replicas: Some(live),
                ready_replicas: Some(ready),
                available_replicas: Some(ready),
                updated_replicas: Some(live),
                unavailable_replicas: Some((replicas - ready).max(0)),
                observed_generation: Some(1),
                // The deployment controller copies its ReplicaSet's
                // (`calculateStatus` in `sync.go`).
                conditions: self.pod_refusal(w).map(|message| {
                    vec![DeploymentCondition {
                        type_: REPLICA_FAILURE.to_owned(),
                        status: "True".to_owned(),
                        reason: Some(FAILED_CREATE.to_owned()),
                        message: Some(message),
                        ..Default::default()
                    }]
                }),
                ..Default::default()
            }),
        }
    }

    /// A StatefulSet with its replica counts and claim templates.
    pub fn statefulset_view(&self, w: WorkloadId) -> StatefulSet {
        let (selector, template) = self.workload_template(w);
        let (live, ready) = self.workload_counts(w);
        let claim_templates = match &self.world.workload(w).kind {
            WorkloadKind::StatefulSet {
                claim_templates, ..
            } => claim_templates
                .iter()
                .map(|(name, class)| PersistentVolumeClaim {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        ..Default::default()
                    },
                    spec: Some(PersistentVolumeClaimSpec {
                        storage_class_name: class.clone(),
                        access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
                        resources: Some(claim_request()),
                        ..Default::default()
                    }),
                    status: None,
                })
                .collect(),
            _ => Vec::new(),
        };
        StatefulSet {
            metadata: self.workload_meta(w),
            spec: Some(StatefulSetSpec {
                replicas: Some(self.world.workload(w).replicas as i32),
                selector,
                template,
                service_name: Some(self.world.workload(w).name.clone()),
                pod_management_policy: Some(
                    match self.world.workload(w).kind {
                        WorkloadKind::StatefulSet { parallel: true, .. } => "Parallel",
                        _ => "OrderedReady",
                    }
                    .to_owned(),
                ),
                volume_claim_templates: (!claim_templates.is_empty()).then_some(claim_templates),
                ..Default::default()
            }),
            status: Some(StatefulSetStatus {
                replicas: live,
                ready_replicas: Some(ready),
                available_replicas: Some(ready),
                current_replicas: Some(live),
                updated_replicas: Some(live),
                observed_generation: Some(1),
                ..Default::default()
            }),
        }
    }

    /// A DaemonSet: desired is the nodes its pods fit, as the controller
    /// counts them.
    pub fn daemonset_view(&self, w: WorkloadId) -> DaemonSet {
        let (selector, template) = self.workload_template(w);
        let (live, ready) = self.workload_counts(w);
        let desired = self.desired_replicas(w) as i32;
        DaemonSet {
            metadata: self.workload_meta(w),
            spec: Some(DaemonSetSpec {
                selector,
                template,
                ..Default::default()
            }),
            status: Some(DaemonSetStatus {
                current_number_scheduled: live,
                desired_number_scheduled: desired,
                number_ready: ready,
                number_available: Some(ready),
                updated_number_scheduled: Some(live),
                number_misscheduled: 0,
                observed_generation: Some(1),
                ..Default::default()
            }),
        }
    }

    /// A Job (a CronJob's run shows as its Job).
    pub fn job_view(&self, w: WorkloadId) -> Job {
        let (selector, template) = self.workload_template(w);
        let (live, _) = self.workload_counts(w);
        let completions = match self.world.workload(w).kind {
            WorkloadKind::Job { completions, .. } => completions as i32,
            _ => 1,
        };
        Job {
            metadata: self.workload_meta(w),
            spec: Some(JobSpec {
                completions: Some(completions),
                parallelism: Some(self.world.workload(w).replicas as i32),
                selector: Some(selector),
                template,
                ..Default::default()
            }),
            status: Some(JobStatus {
                active: Some(live),
                succeeded: Some(self.world.workload(w).succeeded as i32),
                ..Default::default()
            }),
        }
    }

    /// The claim of a namespace and name.
    pub fn claim_id(&self, namespace: &str, name: &str) -> Option<ClaimId> {
        self.volumes.claim_id(namespace, name)
    }

    /// The pod of a namespace and name: the live one, or with `gone`, the
    /// newest deleted one (a StatefulSet reuses names).
    pub fn pod_id(&self, namespace: &str, name: &str, gone: bool) -> Option<PodId> {
        (0..self.world.pods().len()).rev().find(|&p| {
            let pod = self.world.pod(p);
            pod.name == name && pod.namespace == namespace && (pod.phase == PodPhase::Gone) == gone
        })
    }

    /// The claims that exist (every claim the simulator knows is bound to a
    /// volume once a pod using it was scheduled). The
    /// `volume.kubernetes.io/selected-node` annotation names the node of the
    /// first consumer of a `WaitForFirstConsumer` claim.
    pub fn claim_view(&self, claim: ClaimId) -> PersistentVolumeClaim {
        let c = self.volumes.claim(claim);
        let mut annotations = BTreeMap::new();
        // The scheduler's pick for the first consumer, kept after the
        // volume detaches or moves, as on a real cluster: where the volume
        // is attached is its VolumeAttachment's to say.
        if let Some(node) = c.selected_node {
            annotations.insert(
                "volume.kubernetes.io/selected-node".to_owned(),
                self.world.node(node).name.clone(),
            );
        }
        PersistentVolumeClaim {
            metadata: ObjectMeta {
                name: Some(c.name.clone()),
                namespace: Some(c.namespace.clone()),
                uid: Some(uid(4, claim)),
                creation_timestamp: Some(timestamp(0)),
                annotations: (!annotations.is_empty()).then_some(annotations),
                ..Default::default()
            },
            spec: Some(PersistentVolumeClaimSpec {
                storage_class_name: c.class.clone(),
                access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
                volume_name: c.bound.then(|| volume_name(claim)),
                // The API server requires a claim's size; a standalone
                // claim shows its manifest's, one a StatefulSet made the
                // template's as served ([`claim_request`]).
                resources: Some(match &c.storage {
                    Some(size) => VolumeResourceRequirements {
                        requests: Some(BTreeMap::from([(
                            "storage".to_owned(),
                            Quantity(size.clone()),
                        )])),
                        ..Default::default()
                    },
                    None => claim_request(),
                }),
                ..Default::default()
            }),
            status: Some(PersistentVolumeClaimStatus {
                phase: Some(if c.bound { "Bound" } else { "Pending" }.to_owned()),
                ..Default::default()
            }),
        }
    }

    /// A budget, with the status the disruption controller last computed.
    pub fn pdb_view(&self, index: usize) -> PodDisruptionBudget {
        let mut object = self.world.pdbs()[index].object.clone();
        if object.metadata.namespace.is_none() {
            object.metadata.namespace = Some("default".to_owned());
        }
        object.metadata.uid = Some(uid(5, index));
        object.metadata.creation_timestamp = Some(timestamp(0));
        object
    }

    /// The drill's storage classes.
    pub fn storage_class_views(&self) -> Vec<StorageClass> {
        self.topology
            .storage_classes
            .iter()
            .enumerate()
            .map(|(i, class)| {
                let mut annotations = BTreeMap::new();
                if class.default {
                    annotations.insert(
                        "storageclass.kubernetes.io/is-default-class".to_owned(),
                        "true".to_owned(),
                    );
                }
                annotations.insert(
                    ATTACH_ANNOTATION.to_owned(),
                    match class.attach {
                        AttachModel::SingleNode => "SingleNode",
                        AttachModel::Replicated => "Replicated",
                    }
                    .to_owned(),
                );
                StorageClass {
                    metadata: ObjectMeta {
                        name: Some(class.name.clone()),
                        uid: Some(uid(6, i)),
                        creation_timestamp: Some(timestamp(0)),
                        annotations: Some(annotations),
                        ..Default::default()
                    },
                    provisioner: class_driver(class.attach).to_owned(),
                    volume_binding_mode: Some(
                        match class.binding_mode {
                            BindingMode::Immediate => "Immediate",
                            BindingMode::WaitForFirstConsumer => "WaitForFirstConsumer",
                        }
                        .to_owned(),
                    ),
                    ..Default::default()
                }
            })
            .collect()
    }

    /// The CSI driver of a claim's volume: its class's.
    fn claim_driver(&self, claim: ClaimId) -> &'static str {
        class_driver(self.volumes.claim(claim).attach)
    }

    /// The PersistentVolume of every bound claim, in claim order: bound
    /// to its claim (`claimRef`), a CSI volume of its class's driver, and,
    /// when its class confines volumes to a node label and the volume was
    /// provisioned in a domain, required to be there (`nodeAffinity`: a
    /// `kubernetes.io/hostname` class pins the volume to one node). The
    /// simulator never deletes a claim, so a volume is never `Released`.
    pub fn volume_views(&self) -> Vec<PersistentVolume> {
        self.volumes
            .claims()
            .iter()
            .enumerate()
            .filter(|(_, c)| c.bound)
            .map(|(id, c)| {
                let affinity =
                    c.topology_key
                        .clone()
                        .zip(c.pv_topology.clone())
                        .map(|(key, value)| VolumeNodeAffinity {
                            required: Some(NodeSelector {
                                node_selector_terms: vec![NodeSelectorTerm {
                                    match_expressions: Some(vec![NodeSelectorRequirement {
                                        key,
                                        operator: "In".to_owned(),
                                        values: Some(vec![value]),
                                    }]),
                                    match_fields: None,
                                }],
                            }),
                        });
                PersistentVolume {
                    metadata: ObjectMeta {
                        name: Some(volume_name(id)),
                        uid: Some(uid(8, id)),
                        creation_timestamp: Some(timestamp(0)),
                        ..Default::default()
                    },
                    spec: Some(PersistentVolumeSpec {
                        capacity: Some(BTreeMap::from([(
                            "storage".to_owned(),
                            Quantity(VOLUME_CAPACITY.to_owned()),
                        )])),
                        access_modes: Some(vec!["ReadWriteOnce".to_owned()]),
                        claim_ref: Some(ObjectReference {
                            api_version: Some("v1".to_owned()),
                            kind: Some("PersistentVolumeClaim".to_owned()),
                            namespace: Some(c.namespace.clone()),
                            name: Some(c.name.clone()),
                            uid: Some(uid(4, id)),
                            ..Default::default()
                        }),
                        csi: Some(CSIPersistentVolumeSource {
                            driver: self.claim_driver(id).to_owned(),
                            volume_handle: uid(8, id),
                            ..Default::default()
                        }),
                        node_affinity: affinity,
                        persistent_volume_reclaim_policy: Some("Delete".to_owned()),
                        storage_class_name: c.class.clone(),
                        volume_mode: Some("Filesystem".to_owned()),
                        ..Default::default()
                    }),
                    status: Some(PersistentVolumeStatus {
                        phase: Some("Bound".to_owned()),
                        ..Default::default()
                    }),
                }
            })
            .collect()
    }

    /// A VolumeAttachment for every attached single-attach volume, in
    /// claim order, naming the node it is attached to, whether or not that
    /// node still exists: an attachment to a deleted node is the stranding
    /// the drills judge, and stays until the class's release rule (or a
    /// detach) ends it. Created when the volume last attached.
    pub fn attachment_views(&self) -> Vec<VolumeAttachment> {
        self.volumes
            .claims()
            .iter()
            .enumerate()
            .filter_map(|(id, c)| c.attached.map(|node| (id, c, node)))
            .map(|(id, c, node)| {
                let volume = volume_name(id);
                let attacher = self.claim_driver(id);
                let node_name = self.world.node(node).name.clone();
                VolumeAttachment {
                    metadata: ObjectMeta {
                        name: Some(attachment_name(&volume, attacher, &node_name)),
                        // One UID per claim and node: an attachment made
                        // again on another node is another object.
                        uid: Some(uid(9, (id << 20) | node)),
                        creation_timestamp: Some(timestamp(c.attached_at)),
                        ..Default::default()
                    },
                    spec: VolumeAttachmentSpec {
                        attacher: attacher.to_owned(),
                        node_name,
                        source: VolumeAttachmentSource {
                            persistent_volume_name: Some(volume),
                            inline_volume_spec: None,
                        },
                    },
                    status: Some(VolumeAttachmentStatus {
                        attached: true,
                        ..Default::default()
                    }),
                }
            })
            .collect()
    }

    /// Node heartbeats as the kubelet's Leases in `kube-node-lease`: a
    /// node whose server is up renewed at the last multiple of
    /// [`LEASE_RENEW_INTERVAL_MS`]; a lost one stopped when it went.
    pub fn lease_views(&self) -> Vec<Lease> {
        self.world
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.phase != NodePhase::Gone)
            .map(|(i, n)| {
                // The last renewal on the kubelet's grid before the server
                // stopped (or now, while it runs).
                let until = if n.server_up {
                    self.now()
                } else {
                    n.server_stopped_at.unwrap_or(0)
                };
                let renewed = until - until % LEASE_RENEW_INTERVAL_MS;
                Lease {
                    metadata: ObjectMeta {
                        name: Some(n.name.clone()),
                        namespace: Some("kube-node-lease".to_owned()),
                        uid: Some(uid(7, i)),
                        creation_timestamp: Some(timestamp(0)),
                        ..Default::default()
                    },
                    spec: Some(LeaseSpec {
                        holder_identity: Some(n.name.clone()),
                        lease_duration_seconds: Some(40),
                        renew_time: Some(MicroTime(timestamp(renewed).0)),
                        ..Default::default()
                    }),
                }
            })
            .collect()
    }

    /// Namespaces: the system ones, every namespace an object lives in,
    /// and those the manifests declare.
    pub fn namespace_names(&self) -> BTreeSet<String> {
        let mut names: BTreeSet<String> =
            ["default", "kube-node-lease", "kube-public", "kube-system"]
                .into_iter()
                .map(str::to_owned)
                .collect();
        names.extend(self.world.workloads().iter().map(|w| w.namespace.clone()));
        names.extend(self.volumes.claims().iter().map(|c| c.namespace.clone()));
        // Namespaces the drill's manifests declare, used or not.
        names.extend(
            self.obs
                .not_simulated
                .iter()
                .filter(|o| o.kind == "Namespace")
                .map(|o| o.name.clone()),
        );
        names.extend(
            self.world
                .pdbs()
                .iter()
                .filter_map(|p| p.object.metadata.namespace.clone()),
        );
        names
    }

    /// A Namespace object.
    pub fn namespace_view(name: &str) -> Namespace {
        Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                creation_timestamp: Some(timestamp(0)),
                ..Default::default()
            },
            spec: None,
            status: Some(k8s_openapi::api::core::v1::NamespaceStatus {
                phase: Some("Active".to_owned()),
                ..Default::default()
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attachment_is_named_by_its_volume_attacher_and_node_alone() {
        let name = attachment_name("pvc-1", SINGLE_ATTACH_DRIVER, "prod-worker-1");
        assert_eq!(
            name,
            attachment_name("pvc-1", SINGLE_ATTACH_DRIVER, "prod-worker-1")
        );
        assert!(name.starts_with("csi-") && name.len() == 4 + 64, "{name}");
        assert_ne!(
            name,
            attachment_name("pvc-1", SINGLE_ATTACH_DRIVER, "prod-worker-2"),
            "a move to another node is another object"
        );
        assert_ne!(
            name,
            attachment_name("pvc-2", SINGLE_ATTACH_DRIVER, "prod-worker-1")
        );
    }
}
