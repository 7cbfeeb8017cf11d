//! The node lifecycle: a node boots and is Ready; one whose server stops
//! heartbeating goes NotReady after the grace period and is tainted
//! unreachable, its pods evicted as their tolerations say and its volumes
//! stranded as their classes say; a deleted Node's pods are collected
//! after the quarantine. A control plane's etcd member follows its server,
//! and the endpoint fails over when its holder goes down.

use super::clock::after;
use super::world::{NodeId, NodePhase, PodId, PodPhase};
use super::{Action, Simulation, endpoint_ref, etcd_member_ref, node_ref};
use drillbench_model::duration::Duration;
use drillbench_observe::{EventKind, Stranding};

/// How often a learner's promotion is retried while etcd has no quorum
/// (Talos retries `MemberPromote` on a short backoff).
const PROMOTION_RETRY: Duration = Duration::from_secs(10);

impl Simulation {
    pub(super) fn node_booted(&mut self, node: NodeId) {
        if self.world.node(node).phase != NodePhase::Booting || !self.world.node(node).server_up {
            return;
        }
        self.world.node_mut(node).phase = NodePhase::Ready;
        let name = self.world.node(node).name.clone();
        self.record(
            EventKind::NodeReady,
            node_ref(&name),
            Some(node),
            "node Ready",
        );
        self.daemonsets_dirty();
        if self.world.node(node).control_plane {
            self.schedule(self.now(), Action::JoinEtcd(node));
        }
    }

    /// The node stopped heartbeating a grace period ago: NotReady, tainted
    /// unreachable, its pods scheduled for eviction by their tolerations.
    pub(super) fn node_unresponsive(&mut self, node: NodeId) {
        let n = self.world.node(node);
        if n.server_up || n.phase == NodePhase::Gone || n.phase == NodePhase::NotReady {
            return;
        }
        self.world.node_mut(node).phase = NodePhase::NotReady;
        let name = self.world.node(node).name.clone();
        self.record(
            EventKind::NodeNotReady,
            node_ref(&name),
            Some(node),
            "node stopped posting status",
        );
        for (key, effect) in [
            ("node.kubernetes.io/unreachable", "NoSchedule"),
            ("node.kubernetes.io/unreachable", "NoExecute"),
        ] {
            self.add_taint(node, key, effect);
        }
        let pods: Vec<PodId> = self.world.node(node).pods.iter().copied().collect();
        for pod in pods {
            if !self.world.pod(pod).is_active() {
                continue;
            }
            if self.world.pod(pod).phase == PodPhase::Ready {
                self.world.set_pod_phase(pod, PodPhase::Starting);
                let r = self.world.pod_ref(pod);
                self.record(
                    EventKind::PodNotReady,
                    r,
                    Some(node),
                    "its node is NotReady",
                );
                self.mark_owner_dirty(pod);
            }
        }
        self.no_execute_taints_changed(node);
        self.start_volume_release(node);
        self.for_members_on(node, false);
        if !self.world.node(node).server_exists {
            let at = after(self.now(), self.engine.timings().cloud_node_deletion);
            self.schedule(at, Action::CloudDeleteNode(node));
        }
    }

    pub(super) fn remove_taint(&mut self, node: NodeId, key: &str) {
        self.world.remove_taint(node, key);
    }

    pub(super) fn add_taint(&mut self, node: NodeId, key: &str, effect: &str) {
        if !self.world.add_taint(node, key, effect) {
            return;
        }
        let name = self.world.node(node).name.clone();
        self.record(
            EventKind::NodeTainted,
            node_ref(&name),
            Some(node),
            &format!("{key}:{effect}"),
        );
    }

    /// The attachments of a departed node's single-attach volumes are
    /// released as each storage class says: never, at once, or later.
    pub(super) fn start_volume_release(&mut self, node: NodeId) {
        let now = self.now();
        for (claim, release_at) in self.volumes.strand(node, now) {
            self.obs.strandings.push(Stranding {
                claim: self.volumes.key(claim),
                node: self.world.node(node).name.clone(),
                since: now,
                released: None,
            });
            if let Some(at) = release_at {
                self.schedule(at, Action::ReleaseVolume(claim, node));
            }
        }
    }

    /// The etcd member on a node follows its server; the endpoint fails
    /// over when its holder goes down.
    pub(super) fn for_members_on(&mut self, node: NodeId, healthy: bool) {
        self.cp.set_health_on(node, healthy);
        let fails_over = self
            .topology
            .endpoint
            .as_ref()
            .is_none_or(|e| e.mode.fails_over());
        if !healthy && fails_over && self.cp.holder() == Some(node) && self.cp.begin_failover() {
            let delay = self
                .topology
                .endpoint
                .as_ref()
                .map_or(Duration::ZERO, |e| e.failover_delay);
            self.schedule(after(self.now(), delay), Action::EndpointFailover);
        }
    }

    pub(super) fn endpoint_failover(&mut self) {
        self.cp.end_failover();
        if let Some(holder) = self.cp.holder()
            && self.world.node(holder).server_up
            && self.world.node(holder).phase != NodePhase::Gone
        {
            return;
        }
        let candidate = self
            .world
            .nodes()
            .iter()
            .enumerate()
            .filter(|(_, n)| n.control_plane && n.server_up && n.phase == NodePhase::Ready)
            .map(|(i, _)| i)
            .min_by(|a, b| self.world.node(*a).name.cmp(&self.world.node(*b).name));
        match candidate {
            Some(to) => {
                self.cp.move_endpoint(Some(to));
                let name = self.world.node(to).name.clone();
                let endpoint = endpoint_ref(&self.topology);
                self.record(
                    EventKind::EndpointMoved,
                    endpoint,
                    Some(to),
                    &format!("the stable endpoint moved to {name}"),
                );
            }
            None => {
                // Nothing healthy to move to: try again after another delay.
                self.cp.begin_failover();
                let delay = self
                    .topology
                    .endpoint
                    .as_ref()
                    .map_or(Duration::from_secs(30), |e| e.failover_delay);
                self.schedule(
                    after(self.now(), delay.max(Duration::from_secs(1))),
                    Action::EndpointFailover,
                );
            }
        }
    }

    pub(super) fn delete_node_object(&mut self, node: NodeId, why: &str) {
        if self.world.node(node).phase == NodePhase::Gone {
            return;
        }
        if self.world.node(node).phase != NodePhase::NotReady {
            self.start_volume_release(node);
        }
        self.world.node_mut(node).phase = NodePhase::Gone;
        self.world.node_mut(node).gone_at = Some(self.now());
        let name = self.world.node(node).name.clone();
        self.record(EventKind::NodeDeleted, node_ref(&name), Some(node), why);
        let at = after(self.now(), self.engine.timings().pod_gc_quarantine);
        self.schedule(at, Action::PodGc(node));
        self.daemonsets_dirty();
    }

    /// A learner caught up: it is promoted to voter. Promotion is a
    /// membership change, a raft log entry the current voters must commit
    /// by majority (etcd's `MemberPromote`; etcd-io/etcd#11640 on how
    /// `mayPromoteMember` counts started voters), so without quorum there
    /// is no leader to commit it: the promotion is retried until quorum
    /// returns.
    pub(super) fn promote_learner(&mut self, node: NodeId) {
        if !self.cp.has_quorum() {
            if self.world.node(node).phase != NodePhase::Gone {
                self.schedule(
                    after(self.now(), PROMOTION_RETRY),
                    Action::PromoteLearner(node),
                );
            }
            return;
        }
        let Some(name) = self.cp.promote_on(node) else {
            return;
        };
        let now = self.now();
        if let Some(entry) = self
            .obs
            .learners
            .iter_mut()
            .find(|(_, n, p)| *n == name && p.is_none())
        {
            entry.2 = Some(now);
        }
        self.record(
            EventKind::EtcdMemberPromoted,
            etcd_member_ref(&name),
            Some(node),
            "learner promoted to voter",
        );
    }

    /// A booted control plane joins etcd as a learner, promoted once it
    /// caught up.
    pub(super) fn join_etcd(&mut self, node: NodeId) {
        let name = self.world.node(node).name.clone();
        self.cp.join(&name, node, false);
        self.obs.learners.push((self.now(), name.clone(), None));
        self.record(
            EventKind::EtcdLearnerAdded,
            etcd_member_ref(&name),
            Some(node),
            "joined etcd as a learner",
        );
        let (lo, hi) = self.engine.timings().learner_catch_up;
        let delay = self.engine.rng().duration_between(lo, hi);
        self.schedule(after(self.now(), delay), Action::PromoteLearner(node));
    }

    /// Marks every DaemonSet to be reconciled: the nodes they cover changed.
    pub(super) fn daemonsets_dirty(&mut self) {
        for w in self.world.daemonsets() {
            self.controllers.mark_dirty(w);
        }
    }
}
