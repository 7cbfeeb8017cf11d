//! The cluster autoscaler's scale-down: the rescheduling simulation that
//! decides whether a node's pods fit elsewhere (the scheduler's filters,
//! inter-pod anti-affinity and topology spread included), the delays
//! after a scale-up, a deletion and a failure, and the grace period its
//! evictions ask for. The small cluster here implements the same
//! `ClusterView` the simulator and the kube layer implement.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, PodAffinityTerm, PodSpec, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use super::{Behaviour, Pair, Source, from_json, labels, pair, row};
use drillbench_model::duration::Duration;
use drillbench_model::k8s::node_selector::RequiredNodeAffinity;
use drillbench_model::topology::Autoscaler;
use drillbench_policy::cooldown::{Cooldown, Hold};
use drillbench_policy::drain::{autoscaler_grace, pod_grace};
use drillbench_policy::interpod::AffinityTerm;
use drillbench_policy::scale_down::{Blocker, blocker, fits_elsewhere};
use drillbench_policy::spread::SpreadConstraint;
use drillbench_policy::view::{
    Budget, ClusterView, NodeFacts, Placement, PodFacts, Resources, Room,
};

/// A pod of the small cluster.
#[derive(Clone)]
pub(super) struct Pod {
    pub(super) node: usize,
    pub(super) namespace: String,
    pub(super) labels: BTreeMap<String, String>,
    pub(super) cpu: i64,
    pub(super) required: RequiredNodeAffinity,
    pub(super) anti: Vec<AffinityTerm>,
    pub(super) spread: Vec<SpreadConstraint>,
    pub(super) safe_to_evict: Option<bool>,
    pub(super) local_storage: bool,
    pub(super) controlled: bool,
    pub(super) budgets: Vec<Budget>,
}

/// Nodes of 4 CPUs named `n0`, `n1`, … (hostname labels), with pods.
#[derive(Clone)]
pub(super) struct Cluster {
    nodes: Vec<Node>,
    pub(super) pods: Vec<Pod>,
    no_labels: BTreeMap<String, String>,
}

impl Cluster {
    pub(super) fn new(nodes: usize) -> Cluster {
        let nodes = (0..nodes)
            .map(|i| Node {
                metadata: ObjectMeta {
                    name: Some(format!("n{i}")),
                    labels: Some(labels(&[
                        ("kubernetes.io/hostname", &format!("n{i}")),
                        ("zone", if i % 2 == 0 { "z0" } else { "z1" }),
                    ])),
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect();
        Cluster {
            nodes,
            pods: Vec::new(),
            no_labels: BTreeMap::new(),
        }
    }

    /// Adds a ReplicaSet's pod of `app` requesting `cpu` millicores.
    pub(super) fn with(
        mut self,
        node: usize,
        app: &str,
        cpu: i64,
        edit: impl FnOnce(&mut Pod),
    ) -> Cluster {
        let mut pod = Pod {
            node,
            namespace: "default".to_owned(),
            labels: labels(&[("app", app)]),
            cpu,
            required: RequiredNodeAffinity::from_pod_spec(&PodSpec::default()).expect("empty"),
            anti: Vec::new(),
            spread: Vec::new(),
            safe_to_evict: None,
            local_storage: false,
            controlled: true,
            budgets: Vec::new(),
        };
        edit(&mut pod);
        self.pods.push(pod);
        self
    }

    fn requested(&self, node: usize) -> Room {
        let mut room = Room::default();
        for p in self.pods.iter().filter(|p| p.node == node) {
            room.add(Resources {
                cpu: p.cpu,
                memory: 0,
            });
        }
        room
    }

    /// Whether node `node`'s pods fit on the other nodes.
    fn drains(&self, node: usize) -> bool {
        fits_elsewhere(self, node, &self.movable_pods(node), &[])
    }
}

/// Every node Ready, schedulable and counted, in pool `auto`: the rules
/// read only the nodes' labels and room here.
impl ClusterView for Cluster {
    type Pod = usize;
    type Node = usize;

    fn node(&self, node: usize) -> NodeFacts<'_> {
        let allocatable = Room {
            cpu: 4000,
            memory: 1 << 34,
            pods: 110,
        };
        NodeFacts {
            object: &self.nodes[node],
            requested: self.requested(node),
            allocatable,
            pool: "auto",
            set_aside: false,
            ready: true,
            running: true,
            schedulable: true,
            counted: true,
        }
    }

    fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        0..self.nodes.len()
    }

    fn movable_pods(&self, node: usize) -> Vec<usize> {
        (0..self.pods.len())
            .filter(|&p| self.pods[p].node == node)
            .collect()
    }

    fn pods_on(&self, node: usize) -> Vec<usize> {
        self.movable_pods(node)
    }

    fn pod(&self, pod: usize) -> PodFacts<'_> {
        let p = &self.pods[pod];
        PodFacts {
            namespace: &p.namespace,
            namespace_labels: &self.no_labels,
            requests: Resources {
                cpu: p.cpu,
                memory: 0,
            },
            placement: Placement {
                required: Some(&p.required),
                tolerations: &[],
            },
            labels: &p.labels,
            affinity: &[],
            anti_affinity: &p.anti,
            spread: &p.spread,
            safe_to_evict: p.safe_to_evict,
            local_storage: p.local_storage,
            controlled: p.controlled,
            terminating: false,
        }
    }

    fn budgets(&self, pod: usize) -> Vec<Budget> {
        self.pods[pod].budgets.clone()
    }
}

/// What keeps the only pod of node 0 there, under `settings`.
pub(super) fn blocks(cluster: &Cluster, settings: &Autoscaler) -> Option<Blocker> {
    blocker(cluster, 0, settings)
}

/// A required anti-affinity term against `app`, per hostname.
fn repels(app: &str) -> AffinityTerm {
    let term: PodAffinityTerm = from_json(json!({
        "labelSelector": {"matchLabels": {"app": app}},
        "topologyKey": "kubernetes.io/hostname",
    }));
    AffinityTerm::compile(&term).expect("compiles")
}

/// `app=<app>` spread per hostname, maxSkew 1, DoNotSchedule.
fn spread(app: &str, pod_labels: &BTreeMap<String, String>) -> SpreadConstraint {
    let c: TopologySpreadConstraint = from_json(json!({
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": app}},
    }));
    SpreadConstraint::compile(&c, pod_labels).expect("compiles")
}

const MIN: u64 = 60_000;

fn cooldown(up: Option<u64>, delete: Option<u64>, failure: Option<u64>) -> Cooldown {
    Cooldown {
        last_scale_up: up,
        last_delete: delete,
        last_failure: failure,
        ..Cooldown::default()
    }
}

pub(super) fn pairs() -> Vec<Pair> {
    let filters = |case, control| {
        pair(
            Source::AutoscalerSimulator,
            Behaviour::ScaleDownFilters,
            case,
            control,
        )
    };
    let delays = |case, control| {
        pair(
            Source::AutoscalerFaq,
            Behaviour::ScaleDownDelays,
            case,
            control,
        )
    };
    let grace = |case, control| {
        pair(
            Source::AutoscalerActuation,
            Behaviour::TerminationGrace,
            case,
            control,
        )
    };
    let defaults = Autoscaler::default();
    let mut delete_delay = defaults.clone();
    delete_delay.scale_down_delay_after_delete = Duration::from_mins(2);
    let mut local = defaults.clone();
    local.scale_down_delay_type_local = true;
    // Pool `a` scaled up at minute 4, as the autoscaler records it.
    let scaled_up_a = |_: &Autoscaler| {
        let mut c = Cooldown::default();
        c.scaled_up("a", 4 * MIN);
        c
    };
    // Node 0 runs a `web` pod; node 1 runs a `db` pod; node 1 is the only
    // other node.
    let two = || Cluster::new(2).with(1, "db", 100, |_| {});
    vec![
        filters(
            row(
                "a pod that could only join a pod that repels it (its own anti-affinity) keeps its node",
                two().with(0, "web", 100, |p| p.anti = vec![repels("db")]).drains(0),
                false,
            ),
            row(
                "control: the same pod without the term moves",
                two().with(0, "web", 100, |_| {}).drains(0),
                true,
            ),
        ),
        filters(
            row(
                "existing pods' anti-affinity counts in the simulation: the db pod repels web",
                Cluster::new(2)
                    .with(1, "db", 100, |p| p.anti = vec![repels("web")])
                    .with(0, "web", 100, |_| {})
                    .drains(0),
                false,
            ),
            row(
                "control: the db pod repels another app",
                Cluster::new(2)
                    .with(1, "db", 100, |p| p.anti = vec![repels("cache")])
                    .with(0, "web", 100, |_| {})
                    .drains(0),
                true,
            ),
        ),
        filters(
            row(
                "a pod whose DoNotSchedule spread constraint refuses every other node keeps its node (the drained node, emptied, holds the minimum at 0)",
                Cluster::new(3)
                    .with(1, "web", 100, |_| {})
                    .with(2, "web", 100, |_| {})
                    .with(0, "web", 100, |p| p.spread = vec![spread("web", &p.labels)])
                    .drains(0),
                false,
            ),
            row(
                "control: a third node without a web pod takes it",
                Cluster::new(3)
                    .with(1, "web", 100, |_| {})
                    .with(0, "web", 100, |p| p.spread = vec![spread("web", &p.labels)])
                    .drains(0),
                true,
            ),
        ),
        filters(
            row(
                "a pod larger than any other node's free CPU keeps its node",
                two().with(1, "big", 3500, |_| {}).with(0, "web", 1000, |_| {}).drains(0),
                false,
            ),
            row(
                "control: a pod that fits the free CPU moves",
                two().with(1, "big", 3500, |_| {}).with(0, "web", 300, |_| {}).drains(0),
                true,
            ),
        ),
        filters(
            row(
                "two pods checked together: the first placed takes the room the second needed",
                two().with(1, "big", 2000, |_| {}).with(0, "web", 1000, |_| {}).with(0, "web", 1000, |_| {}).drains(0),
                false,
            ),
            row(
                "control: room for both",
                two().with(1, "big", 1000, |_| {}).with(0, "web", 1000, |_| {}).with(0, "web", 1000, |_| {}).drains(0),
                true,
            ),
        ),
        filters(
            row(
                "a pod whose required node affinity admits only its own node keeps it",
                two().with(0, "web", 100, |p| {
                    p.required = RequiredNodeAffinity::from_pod_spec(&from_json(json!({"containers": [], "nodeSelector": {"kubernetes.io/hostname": "n0"}}))).expect("compiles");
                }).drains(0),
                false,
            ),
            row(
                "control: affinity admitting the other node",
                two().with(0, "web", 100, |p| {
                    p.required = RequiredNodeAffinity::from_pod_spec(&from_json(json!({"containers": [], "nodeSelector": {"kubernetes.io/hostname": "n1"}}))).expect("compiles");
                }).drains(0),
                true,
            ),
        ),
        delays(
            row("9 minutes after a scale-up the scale-down waits (scale-down-delay-after-add 10m)", cooldown(Some(0), None, None).holds_all(&defaults, 9 * MIN), Some(Hold::AfterAdd)),
            row("control: 10 minutes after it", cooldown(Some(0), None, None).holds_all(&defaults, 10 * MIN), None::<Hold>),
        ),
        delays(
            row("2m59s after a failed scale-down (scale-down-delay-after-failure 3m)", cooldown(None, None, Some(0)).holds_all(&defaults, 3 * MIN - 1_000), Some(Hold::AfterFailure)),
            row("control: 3 minutes after it", cooldown(None, None, Some(0)).holds_all(&defaults, 3 * MIN), None::<Hold>),
        ),
        delays(
            row("scale-down-delay-after-delete set to 2m holds a minute after a deletion", cooldown(None, Some(0), None).holds_all(&delete_delay, MIN), Some(Hold::AfterDelete)),
            row("control: the default delay after delete (0s) holds nothing", cooldown(None, Some(0), None).holds_all(&defaults, MIN), None::<Hold>),
        ),
        delays(
            row("a scale-up in this very scan holds the scale-down", cooldown(Some(5 * MIN), None, None).holds_all(&defaults, 5 * MIN), Some(Hold::AfterAdd)),
            row("control: nothing happened", cooldown(None, None, None).holds_all(&defaults, 5 * MIN), None::<Hold>),
        ),
        // `--scale-down-delay-type-local`: `isScaleDownInCooldown` skips
        // the delays, and `ScaleDownCandidatesDelayProcessor` drops the
        // candidates of the node group that scaled up within them.
        delays(
            row("with local delays, a scale-up of one pool holds that pool's scale-down", scaled_up_a(&local).holds_pool(&local, "a", 5 * MIN), Some(Hold::AfterAdd)),
            row("control: another pool's scale-down goes on", scaled_up_a(&local).holds_pool(&local, "b", 5 * MIN), None::<Hold>),
        ),
        delays(
            row("with global delays, a scale-up of one pool holds every pool's scale-down", scaled_up_a(&defaults).holds_all(&defaults, 5 * MIN), Some(Hold::AfterAdd)),
            row("control: with local delays, nothing holds every pool", scaled_up_a(&local).holds_all(&local, 5 * MIN), None::<Hold>),
        ),
        grace(
            row("a scale-down eviction caps terminationGracePeriodSeconds at max-graceful-termination-sec (600)", autoscaler_grace(Some(3600), 600), Duration::from_secs(600)),
            row("control: a pod's 120 s is below the cap", autoscaler_grace(Some(120), 600), Duration::from_secs(120)),
        ),
        grace(
            row("a pod setting no grace period is evicted with 30 s whatever the cap", autoscaler_grace(None, 10), Duration::from_secs(30)),
            row("control: a pod's own 5 s", autoscaler_grace(Some(5), 10), Duration::from_secs(5)),
        ),
        grace(
            row("a low max-graceful-termination-sec cuts a short grace period too", autoscaler_grace(Some(30), 10), Duration::from_secs(10)),
            row("control: a flag above the pod's 30 s", autoscaler_grace(Some(30), 60), Duration::from_secs(30)),
        ),
        pair(
            Source::PodTermination,
            Behaviour::TerminationGrace,
            row("terminationGracePeriodSeconds unset: 30 s", pod_grace(None), Duration::from_secs(30)),
            row("terminationGracePeriodSeconds 0: at once", pod_grace(Some(0)), Duration::from_secs(0)),
        ),
        pair(
            Source::PodTermination,
            Behaviour::TerminationGrace,
            row("a negative terminationGracePeriodSeconds is taken as 1 s, as the API server sets it", pod_grace(Some(-5)), Duration::from_secs(1)),
            row("control: terminationGracePeriodSeconds 45", pod_grace(Some(45)), Duration::from_secs(45)),
        ),
    ]
}
