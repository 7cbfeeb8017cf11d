//! The observed cluster and the emulated autoscaler's nodes in flight as
//! the policy's read-only view ([`ClusterView`], [`AutoscalerView`]): the
//! same questions the simulator answers from its own state.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::super::observer::{NodeState, Observer, PodState};
use drillbench_model::labels::STANDBY_KEY;
use drillbench_observe::Time;
use drillbench_policy::cooldown::Cooldown;
use drillbench_policy::scale_down::InProgress;
use drillbench_policy::scale_up;
use drillbench_policy::view::{
    AutoscalerView, Budget, ClusterView, NodeFacts, Placement, PodFacts, Resources, Room, Template,
};

/// The observed cluster and the emulated autoscaler's own state, as the
/// policy reads them.
pub(super) struct ObservedView<'a> {
    cluster: &'a Observer,
    booting: &'a BTreeMap<String, Time>,
    removing: &'a BTreeSet<String>,
    unneeded_since: &'a BTreeMap<String, Time>,
    /// Per node: requests and number of the pods holding resources there.
    requested: BTreeMap<&'a str, Room>,
    cooldown: Cooldown,
    in_progress: InProgress,
    /// Nodes a scan found unremovable, until when they are left out.
    unremovable_until: BTreeMap<String, Time>,
}

fn requests(pod: &PodState) -> Resources {
    Resources {
        cpu: pod.cpu_millis,
        memory: pod.memory,
    }
}

impl<'a> ObservedView<'a> {
    /// The view of `cluster` with the autoscaler's nodes in flight: those
    /// booting, being removed, and unneeded since when.
    pub(super) fn new(
        cluster: &'a Observer,
        booting: &'a BTreeMap<String, Time>,
        removing: &'a BTreeSet<String>,
        unneeded_since: &'a BTreeMap<String, Time>,
    ) -> Self {
        let mut requested: BTreeMap<&str, Room> = BTreeMap::new();
        for pod in cluster.pods().values().filter(|p| !p.finished) {
            if let Some(node) = &pod.node {
                requested
                    .entry(node.as_str())
                    .or_default()
                    .add(requests(pod));
            }
        }
        ObservedView {
            cluster,
            booting,
            removing,
            unneeded_since,
            requested,
            cooldown: Cooldown::default(),
            in_progress: InProgress::default(),
            unremovable_until: BTreeMap::new(),
        }
    }

    /// The view with the autoscaler's memory of its own actions: when it
    /// last scaled up, deleted, failed, the removals in progress, and the
    /// nodes it found unremovable.
    pub(super) fn remembering(
        mut self,
        cooldown: Cooldown,
        in_progress: InProgress,
        unremovable_until: BTreeMap<String, Time>,
    ) -> Self {
        self.cooldown = cooldown;
        self.in_progress = in_progress;
        self.unremovable_until = unremovable_until;
        self
    }

    fn state(&self, node: &str) -> &'a NodeState {
        &self.cluster.nodes()[node]
    }

    /// The standby nodes of a pool still free to choose, by name.
    pub(super) fn free_standby(&self, pool: &str) -> Vec<String> {
        self.cluster
            .nodes()
            .iter()
            .filter(|(name, n)| n.pool == pool && n.standby && !self.booting.contains_key(*name))
            .map(|(name, _)| name.clone())
            .collect()
    }
}

impl<'a> ClusterView for ObservedView<'a> {
    type Node = &'a str;
    type Pod = &'a PodState;

    fn nodes(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.cluster.nodes().keys().map(String::as_str)
    }

    fn node(&self, name: &'a str) -> NodeFacts<'_> {
        let n = self.state(name);
        NodeFacts {
            pool: &n.pool,
            object: &n.object,
            ready: n.ready,
            running: true,
            schedulable: !n.unschedulable,
            set_aside: n.standby || self.removing.contains(name),
            counted: !n.standby || self.booting.contains_key(name),
            allocatable: Room {
                cpu: n.cpu_millis,
                memory: n.memory,
                pods: n.max_pods,
            },
            requested: self.requested.get(name).copied().unwrap_or_default(),
        }
    }

    /// The pods holding resources on the node, DaemonSet pods aside.
    fn movable_pods(&self, node: &'a str) -> Vec<&'a PodState> {
        self.cluster
            .pods()
            .values()
            .filter(|p| p.node.as_deref() == Some(node) && !p.finished && !p.daemon)
            .collect()
    }

    /// The pods holding resources on the node, DaemonSet pods included.
    fn pods_on(&self, node: &'a str) -> Vec<&'a PodState> {
        self.cluster
            .pods()
            .values()
            .filter(|p| p.node.as_deref() == Some(node) && !p.finished)
            .collect()
    }

    fn pod(&self, pod: &'a PodState) -> PodFacts<'_> {
        let facts = &pod.facts;
        PodFacts {
            namespace: &facts.namespace,
            namespace_labels: &facts.namespace_labels,
            requests: requests(pod),
            placement: Placement {
                required: facts.required.as_ref(),
                tolerations: &facts.tolerations,
            },
            labels: &facts.labels,
            affinity: &facts.affinity,
            anti_affinity: &facts.anti_affinity,
            spread: &facts.spread,
            safe_to_evict: facts.safe_to_evict,
            local_storage: facts.local_storage,
            controlled: facts.controlled,
            terminating: pod.deleting,
        }
    }

    fn budgets(&self, pod: &'a PodState) -> Vec<Budget> {
        self.cluster
            .covering_budgets(&pod.facts.namespace, &pod.facts.labels)
            .into_iter()
            .map(|(name, disruptions_allowed)| Budget {
                name,
                disruptions_allowed,
            })
            .collect()
    }
}

impl<'a> AutoscalerView for ObservedView<'a> {
    fn cooldown(&self) -> &Cooldown {
        &self.cooldown
    }

    fn deletions_in_progress(&self) -> InProgress {
        self.in_progress
    }

    /// When the observer first saw it (`PodState::first_seen`).
    fn created_at(&self, pod: &'a PodState) -> Option<u64> {
        Some(pod.first_seen)
    }

    fn unschedulable_pods(&self) -> Vec<&'a PodState> {
        self.cluster
            .pods()
            .values()
            .filter(|p| p.node.is_none() && p.unschedulable && !p.deleting && !p.finished)
            .collect()
    }

    /// One of the pool's standby nodes as it will be once released; its
    /// room is what is left once the DaemonSet pods that would run there
    /// (one of each DaemonSet seen) take theirs, pod slots included, and
    /// the waste of a growth is measured against that room.
    fn template(&self, pool: &str) -> Option<Template<'_>> {
        let (_, standby) = self
            .cluster
            .nodes()
            .iter()
            .find(|(_, n)| n.pool == pool && n.standby)?;
        let mut node = (*standby.object).clone();
        if let Some(labels) = node.metadata.labels.as_mut() {
            labels.remove(STANDBY_KEY);
        }
        if let Some(spec) = node.spec.as_mut()
            && let Some(taints) = spec.taints.as_mut()
        {
            taints.retain(|t| t.key != STANDBY_KEY);
        }
        let mut seen = BTreeSet::new();
        let daemons = self
            .cluster
            .pods()
            .values()
            .filter(|p| p.daemon)
            .filter(|p| {
                p.facts
                    .daemon_set
                    .as_ref()
                    .is_some_and(|ds| seen.insert(ds))
            })
            .map(|p| self.pod(p));
        let overhead = scale_up::daemon_overhead(&node, daemons);
        let room = Room {
            cpu: standby.cpu_millis,
            memory: standby.memory,
            pods: standby.max_pods,
        }
        .minus(overhead);
        Some(Template {
            node: Cow::Owned(node),
            room,
            capacity: room.resources(),
        })
    }

    fn booting(&self) -> Vec<(String, Room)> {
        self.booting
            .keys()
            .filter_map(|name| {
                let pool = &self.cluster.nodes().get(name)?.pool;
                Some((pool.clone(), self.template(pool)?.room))
            })
            .collect()
    }

    fn provisionable(&self, pool: &str) -> u32 {
        self.free_standby(pool).len() as u32
    }

    fn unneeded_since(&self, node: &'a str) -> Option<u64> {
        self.unneeded_since.get(node).copied()
    }

    fn unremovable_until(&self, node: &'a str) -> Option<u64> {
        self.unremovable_until.get(node).copied()
    }
}

#[cfg(test)]
mod tests {
    use kube::ResourceExt;
    use serde_json::json;

    use super::super::tests::{cluster, node, pod};
    use super::*;

    #[test]
    fn standby_and_removed_nodes_are_set_aside_and_only_a_chosen_standby_counts() {
        let observer = cluster(vec![
            node("prod-worker-1", "baseline", false, "4"),
            node("autoscale-cx43-standby-1", "autoscale-cx43", true, "8"),
            node("autoscale-cx43-standby-2", "autoscale-cx43", true, "8"),
            pod("burst-a", Some("prod-worker-1"), "1", json!({})),
            pod(
                "burst-b",
                Some("prod-worker-1"),
                "500m",
                json!({"status": {"phase": "Succeeded"}}),
            ),
            pod("burst-c", None, "2", json!({})),
        ]);
        let booting = BTreeMap::from([("autoscale-cx43-standby-1".to_owned(), 5_000)]);
        let removing = BTreeSet::from(["prod-worker-1".to_owned()]);
        let unneeded = BTreeMap::from([("prod-worker-1".to_owned(), 42)]);
        let view = ObservedView::new(&observer, &booting, &removing, &unneeded);
        let worker = view.node("prod-worker-1");
        assert!(worker.set_aside && worker.counted);
        assert_eq!(
            (worker.requested.cpu, worker.requested.pods),
            (1_000, 1),
            "a finished pod holds nothing"
        );
        assert_eq!(worker.allocatable.cpu, 4_000);
        let chosen = view.node("autoscale-cx43-standby-1");
        assert!(chosen.set_aside && chosen.counted);
        let idle = view.node("autoscale-cx43-standby-2");
        assert!(idle.set_aside && !idle.counted);
        assert_eq!(
            view.free_standby("autoscale-cx43"),
            ["autoscale-cx43-standby-2"]
        );
        assert_eq!(view.provisionable("autoscale-cx43"), 1);
        assert_eq!(view.unneeded_since("prod-worker-1"), Some(42));
        assert_eq!(view.unneeded_since("autoscale-cx43-standby-2"), None);
        assert_eq!(view.unschedulable_pods().len(), 1);
        assert_eq!(view.movable_pods("prod-worker-1").len(), 1);
        assert_eq!(
            view.booting(),
            [(
                "autoscale-cx43".to_owned(),
                view.template("autoscale-cx43").expect("a standby").room
            )]
        );
    }

    #[test]
    fn a_pools_template_is_its_standby_node_as_released() {
        let observer = cluster(vec![
            node("prod-worker-1", "baseline", false, "4"),
            node("autoscale-cx43-standby-1", "autoscale-cx43", true, "8"),
        ]);
        let (booting, removing, unneeded) = Default::default();
        let view = ObservedView::new(&observer, &booting, &removing, &unneeded);
        let template = view.template("autoscale-cx43").expect("a standby node");
        assert!(!template.node.labels().contains_key(STANDBY_KEY));
        let taints = template
            .node
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default();
        assert!(taints.iter().all(|t| t.key != STANDBY_KEY), "{taints:?}");
        assert_eq!((template.room.cpu, template.room.pods), (8_000, 110));
        assert_eq!(
            template.capacity.cpu, 8_000,
            "no DaemonSet pod to make room for"
        );
        assert!(view.template("baseline").is_none(), "no standby node");
    }
}
