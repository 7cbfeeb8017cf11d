//! Scale-down: which nodes of autoscaled pools the cluster autoscaler
//! removes, and what keeps a node.
//!
//! As upstream's scale-down loop (cluster-autoscaler FAQ "How does
//! scale-down work?" and "What types of pods can prevent CA from removing
//! a node?"): a Ready node of an autoscaled pool is unneeded while its
//! utilisation (the larger of requested CPU and memory over allocatable,
//! DaemonSet pods included) is below the threshold and every pod on it can
//! move — no [`Blocker`], and room on the other nodes
//! ([`fits_elsewhere`]). Once it has been unneeded for
//! `scaleDownUnneededTime` it is removed, unless that would take its pool
//! below its min; empty nodes go together, non-empty ones one per scan.
//! A node annotated [`SCALE_DOWN_DISABLED`] is never considered.

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Node, PodSpec};

use super::cooldown::Hold;
use super::interpod::InterPodState;
use super::scale_up::pool_size;
use super::spread::SpreadState;
use super::view::{AutoscalerView, ClusterView, NodeFacts, Resources, Room};
use drillbench_model::topology::{Autoscaler, PoolSize, Topology};

/// The node annotation that keeps the autoscaler from removing a node.
pub const SCALE_DOWN_DISABLED: &str = "cluster-autoscaler.kubernetes.io/scale-down-disabled";

/// The autoscaler's utilisation of a node: the larger of its requested CPU
/// and memory shares (a node with nothing allocatable counts as full).
pub fn utilisation(requested: Resources, allocatable: Resources) -> f64 {
    let share = |used: i64, total: i64| {
        if total > 0 {
            used as f64 / total as f64
        } else {
            1.0
        }
    };
    share(requested.cpu, allocatable.cpu).max(share(requested.memory, allocatable.memory))
}

/// The node the autoscaler would remove first among candidates: the least
/// utilised, the first by name among equals.
pub fn least_utilised<'a>(nodes: impl IntoIterator<Item = (f64, &'a str)>) -> Option<&'a str> {
    nodes
        .into_iter()
        .min_by(|a, b| {
            a.0.partial_cmp(&b.0)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then_with(|| a.1.cmp(b.1))
        })
        .map(|(_, name)| name)
}

/// Why the autoscaler cannot move a pod off its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Blocker {
    /// Annotated `cluster-autoscaler.kubernetes.io/safe-to-evict: "false"`.
    NotSafeToEvict,
    /// Mounts `emptyDir` or `hostPath` and is not annotated safe to evict.
    LocalStorage,
    /// No controller would recreate it elsewhere.
    NoController,
    /// A kube-system pod no PodDisruptionBudget covers.
    KubeSystemWithoutBudget,
    /// This budget allows no disruption now.
    BudgetExhausted(String),
}

impl fmt::Display for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Blocker::NotSafeToEvict => f.write_str("has safe-to-evict: \"false\""),
            Blocker::LocalStorage => f.write_str("uses local storage"),
            Blocker::NoController => f.write_str("has no controller"),
            Blocker::KubeSystemWithoutBudget => {
                f.write_str("is a kube-system pod without a PodDisruptionBudget")
            }
            Blocker::BudgetExhausted(budget) => {
                write!(
                    f,
                    "is covered by PodDisruptionBudget {budget}, which allows no disruption"
                )
            }
        }
    }
}

/// The pod annotation that lets the autoscaler move a pod whatever else
/// would keep it (`"true"`), or keeps it (`"false"`).
pub const SAFE_TO_EVICT: &str = "cluster-autoscaler.kubernetes.io/safe-to-evict";

/// The pod annotation naming (comma-separated) the pod's local volumes
/// whose contents may be lost, so that they no longer keep it.
pub const SAFE_TO_EVICT_LOCAL_VOLUMES: &str =
    "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes";

/// A pod's [`SAFE_TO_EVICT`] annotation: only the exact values `"true"`
/// and `"false"` mean anything (`utils/drain`'s
/// `HasSafeToEvictAnnotation`/`HasNotSafeToEvictAnnotation`).
pub fn safe_to_evict(annotations: &BTreeMap<String, String>) -> Option<bool> {
    match annotations.get(SAFE_TO_EVICT).map(String::as_str) {
        Some("true") => Some(true),
        Some("false") => Some(false),
        _ => None,
    }
}

/// Whether a pod mounts local storage that keeps it (`utils/drain`'s
/// `HasBlockingLocalStorage`): a `hostPath` volume, or an `emptyDir` not
/// backed by memory, that [`SAFE_TO_EVICT_LOCAL_VOLUMES`] does not name.
pub fn blocking_local_storage(spec: &PodSpec, annotations: &BTreeMap<String, String>) -> bool {
    let disposable: Vec<&str> = annotations
        .get(SAFE_TO_EVICT_LOCAL_VOLUMES)
        .map(|names| names.split(',').collect())
        .unwrap_or_default();
    spec.volumes.iter().flatten().any(|v| {
        let local = v.host_path.is_some()
            || v.empty_dir
                .as_ref()
                .is_some_and(|e| e.medium.as_deref() != Some("Memory"));
        local && !disposable.contains(&v.name.as_str())
    })
}

/// What keeps the autoscaler from moving a pod, in the order of upstream's
/// drainability rules (`simulator/drainability/rules/rules.go`):
/// `safe-to-evict: "true"` ends the checks (the pod is drainable), then
/// the blocking checks replicated, system, not-safe-to-evict, local
/// storage, budgets; the first that applies.
///
/// The system and local-storage rules apply only while
/// `skipNodesWithSystemPods` and `skipNodesWithLocalStorage` are on (both
/// are by default), as upstream's `rules/system` and `rules/localstorage`
/// check `SkipNodesWithSystemPods`/`SkipNodesWithLocalStorage` first.
pub fn blocker<V: ClusterView>(view: &V, pod: V::Pod, settings: &Autoscaler) -> Option<Blocker> {
    let facts = view.pod(pod);
    if facts.safe_to_evict == Some(true) {
        return None;
    }
    if !facts.controlled {
        return Some(Blocker::NoController);
    }
    let budgets = view.budgets(pod);
    if settings.skip_nodes_with_system_pods
        && facts.namespace == "kube-system"
        && budgets.is_empty()
    {
        return Some(Blocker::KubeSystemWithoutBudget);
    }
    if facts.safe_to_evict == Some(false) {
        return Some(Blocker::NotSafeToEvict);
    }
    if settings.skip_nodes_with_local_storage && facts.local_storage {
        return Some(Blocker::LocalStorage);
    }
    budgets
        .into_iter()
        .find(|b| b.disruptions_allowed < 1)
        .map(|b| Blocker::BudgetExhausted(b.name))
}

/// Every pod where it runs, with whether it carries anti-affinity terms:
/// what the rescheduling simulation checks moved pods against. A pass reads
/// it once, and only when a candidate has pods to move: reading it for each
/// candidate cost the whole cluster every time.
pub struct Standing<V: ClusterView> {
    pods: Vec<(V::Pod, V::Node, bool)>,
    /// Whether any pod carries anti-affinity terms (then every moved pod
    /// needs the inter-pod filter, even one without terms of its own).
    repelling: bool,
}

impl<V: ClusterView> Standing<V> {
    pub fn read(view: &V) -> Standing<V> {
        let pods: Vec<_> = view
            .nodes()
            .flat_map(|n| view.pods_on(n).into_iter().map(move |p| (p, n)))
            .map(|(p, n)| (p, n, !view.pod(p).anti_affinity.is_empty()))
            .collect();
        let repelling = pods.iter().any(|&(_, _, r)| r);
        Standing { pods, repelling }
    }
}

/// Whether every one of `pods` (the movable pods of `node`) fits, first
/// fit, on the other Ready, schedulable nodes not being removed (`removing`
/// are the nodes this scan already chose): placement, requests and pod
/// slots, the pod's `DoNotSchedule` topology spread constraints (over the
/// nodes that exist, the drained one included without its pods; pods
/// already terminating not counted, as upstream's `countPodsMatchSelector`
/// skips them), and the required inter-pod (anti-)affinity of the pod and
/// of every pod already running, each placed pod taking its room (and
/// joining the pods the next one is checked against).
///
/// As upstream's rescheduling simulation (`cluster-autoscaler/simulator/
/// cluster.go`, which runs the scheduler framework's filters on a snapshot
/// without the drained pods), a pod that could only go next to a pod that
/// repels it keeps its node. The drained node's remaining (DaemonSet) pods
/// are left out: they leave with it.
pub fn fits_elsewhere<V: ClusterView>(
    view: &V,
    node: V::Node,
    pods: &[V::Pod],
    removing: &[V::Node],
) -> bool {
    fits_elsewhere_among(view, &OnceCell::new(), node, pods, removing)
}

/// [`fits_elsewhere`], with the standing pods read at most once for the
/// pass that shares `standing`.
fn fits_elsewhere_among<V: ClusterView>(
    view: &V,
    standing: &OnceCell<Standing<V>>,
    node: V::Node,
    pods: &[V::Pod],
    removing: &[V::Node],
) -> bool {
    if pods.is_empty() {
        return true;
    }
    simulate(view, standing, Some(node), pods, removing, true)
        .iter()
        .all(|&placed| placed)
}

/// Which of `pods` the other nodes take, first fit, in order (see
/// [`fits_elsewhere`]): `node`, when given, is the one being drained,
/// whose pods leave with it. With `all_or_nothing`, it stops at the first
/// pod that fits nowhere.
pub(crate) fn simulate<V: ClusterView>(
    view: &V,
    standing: &OnceCell<Standing<V>>,
    node: Option<V::Node>,
    pods: &[V::Pod],
    removing: &[V::Node],
    all_or_nothing: bool,
) -> Vec<bool> {
    let mut fitted = Vec::with_capacity(pods.len());
    let standing = standing.get_or_init(|| Standing::read(view));
    let mut extra: BTreeMap<V::Node, Room> = BTreeMap::new();
    // The pods placed so far by this simulation; with the standing pods
    // off the drained node, they are what the next pod is checked against.
    let mut placed: Vec<(V::Pod, V::Node, bool)> = Vec::new();
    let mut repelling = standing.repelling;
    'pods: for &pod in pods {
        let running = || {
            standing
                .pods
                .iter()
                .filter(|&&(_, on, _)| Some(on) != node)
                .chain(&placed)
        };
        let facts = view.pod(pod);
        let incoming = facts.terms();
        let spread_pod = facts.spread_pod();
        let spread = spread_pod.is_constrained().then(|| {
            let mut state = SpreadState::default();
            for n in view.nodes().filter(|&n| view.node(n).counted) {
                state.add_node(&spread_pod, view.node(n).object, |i| {
                    let c = &facts.spread[i];
                    running()
                        .filter(|&&(p, on, _)| {
                            let p = view.pod(p);
                            on == n
                                && !p.terminating
                                && c.counts(facts.namespace, p.namespace, p.labels)
                        })
                        .count() as u32
                });
            }
            state
        });
        let interpod =
            (repelling || !incoming.affinity.is_empty() || !incoming.anti_affinity.is_empty())
                .then(|| {
                    let mut state = InterPodState::default();
                    // Without terms of its own, only the pods that repel
                    // can refuse it a node.
                    let own = !incoming.affinity.is_empty() || !incoming.anti_affinity.is_empty();
                    for &(other, on, _) in running().filter(|&&(_, _, r)| own || r) {
                        state.add(
                            &incoming,
                            &view.pod(other).terms(),
                            labels(view.node(on).object),
                        );
                    }
                    state
                });
        for other in view.nodes() {
            if Some(other) == node || removing.contains(&other) {
                continue;
            }
            let target = view.node(other);
            if !target.ready || !target.schedulable || target.set_aside {
                continue;
            }
            let used = extra.get(&other).copied().unwrap_or_default();
            let free = target.allocatable.minus(target.requested).minus(used);
            if !facts.placement.admits(target.object) || !free.takes(facts.requests) {
                continue;
            }
            if spread
                .as_ref()
                .is_some_and(|s| s.filter(&spread_pod, target.object).is_err())
            {
                continue;
            }
            if interpod
                .as_ref()
                .is_some_and(|s| s.filter(&incoming, labels(target.object)).is_err())
            {
                continue;
            }
            extra.entry(other).or_default().add(facts.requests);
            placed.push((pod, other, !facts.anti_affinity.is_empty()));
            repelling |= !facts.anti_affinity.is_empty();
            fitted.push(true);
            continue 'pods;
        }
        fitted.push(false);
        if all_or_nothing {
            return fitted;
        }
    }
    fitted
}

fn labels(node: &Node) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// Whether the autoscaler considers removing the node at all.
fn candidate(node: &NodeFacts<'_>, topology: &Topology) -> bool {
    node.ready
        && node.running
        && !node.set_aside
        && topology.pool(node.pool).is_some_and(|p| p.is_autoscaled())
        && node
            .object
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(SCALE_DOWN_DISABLED))
            .is_none_or(|v| v != "true")
}

/// What one scale-down scan decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass<N> {
    /// Every candidate with since when it is unneeded (`None`: it is
    /// needed, and its unneeded time starts over).
    pub unneeded: Vec<(N, Option<u64>)>,
    /// The nodes to remove now, in order.
    pub remove: Vec<N>,
    /// The nodes whose removal this scan's simulation refused (a pod that
    /// may not or cannot move): left out of scale-down until
    /// `unremovableNodeRecheckTimeout` has passed.
    pub unremovable: Vec<N>,
    /// The delay that kept this scan from removing anything.
    pub held: Option<Hold>,
}

/// The nodes the autoscaler is removing now: how many were empty when
/// their removal started, and how many it is draining. Upstream's
/// `DeletionsInProgress`: a removal is in progress from the taint until
/// the node is deleted (or the removal fails).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InProgress {
    pub empty: u32,
    pub drained: u32,
}

/// A node's utilisation as the autoscaler measures it: its requests over
/// its allocatable, without its DaemonSet pods' requests when
/// `ignoreDaemonSetsUtilization` is on (`simulator/utilization`).
pub fn node_utilisation<V: ClusterView>(view: &V, node: V::Node, settings: &Autoscaler) -> f64 {
    let facts = view.node(node);
    let mut requested = facts.requested.resources();
    if settings.ignore_daemon_sets_utilization {
        // The pods a drain leaves are the DaemonSet pods.
        let daemons = view.pods_on(node).len() - view.movable_pods(node).len();
        if daemons > 0 {
            let movable = view
                .movable_pods(node)
                .iter()
                .fold(Room::default(), |mut r, &p| {
                    r.add(view.pod(p).requests);
                    r
                });
            let all = view
                .pods_on(node)
                .iter()
                .fold(Room::default(), |mut r, &p| {
                    r.add(view.pod(p).requests);
                    r
                });
            requested.cpu -= all.cpu - movable.cpu;
            requested.memory -= all.memory - movable.memory;
        }
    }
    utilisation(requested, facts.allocatable.resources())
}

/// One scale-down scan at `now` (milliseconds).
///
/// Unneeded times are kept up to date whatever happens next; then, unless
/// a delay of the [`crate::cooldown::Cooldown`] holds, the nodes unneeded
/// long enough are removed within upstream's parallelism budgets
/// (`core/scaledown/budgets` `CropNodes`): at most
/// `maxScaleDownParallelism` removals in progress in all, of which at most
/// `maxDrainParallelism` drains; empty nodes are served first.
pub fn pass<V: AutoscalerView>(view: &V, topology: &Topology, now: u64) -> Pass<V::Node> {
    let settings = &topology.autoscaler;
    let threshold = settings.scale_down_utilization_threshold;
    let unneeded_for = settings.scale_down_unneeded_time.as_millis();
    let cooldown = view.cooldown();
    let held = cooldown.holds_all(settings, now);
    let in_progress = view.deletions_in_progress();
    let mut total_budget = settings
        .max_scale_down_parallelism
        .saturating_sub(in_progress.empty + in_progress.drained);
    let drain_budget = settings
        .max_drain_parallelism
        .saturating_sub(in_progress.drained);
    let candidates: Vec<V::Node> = view
        .nodes()
        .filter(|&n| candidate(&view.node(n), topology))
        .collect();
    let mut out = Pass {
        unneeded: Vec::new(),
        remove: Vec::new(),
        unremovable: Vec::new(),
        held,
    };
    let mut empty = Vec::new();
    let mut drained = Vec::new();
    let standing = OnceCell::new();
    for node in candidates {
        let facts = view.node(node);
        // Found unremovable by a recent scan: not simulated again yet
        // (`FilterOutUnremovable`'s `RecentlyUnremovable`).
        if view
            .unremovable_until(node)
            .is_some_and(|until| now < until)
        {
            out.unneeded.push((node, None));
            continue;
        }
        if node_utilisation(view, node, settings) >= threshold {
            out.unneeded.push((node, None));
            continue;
        }
        // `SimulateNodeRemoval`: a refusal holds the node out of the
        // next scans (`categorizeNodes`' `AddTimeout`).
        let movable = view.movable_pods(node);
        let removable = movable
            .iter()
            .all(|&p| blocker(view, p, settings).is_none())
            && fits_elsewhere_among(view, &standing, node, &movable, &out.remove);
        if !removable {
            out.unremovable.push(node);
            out.unneeded.push((node, None));
            continue;
        }
        let since = view.unneeded_since(node).unwrap_or(now);
        out.unneeded.push((node, Some(since)));
        if held.is_some()
            || now < since + unneeded_for
            || cooldown.holds_pool(settings, facts.pool, now).is_some()
        {
            continue;
        }
        let Some(PoolSize::Autoscaled { min, .. }) = topology.pool(facts.pool).map(|p| p.size)
        else {
            continue;
        };
        let leaving = out
            .remove
            .iter()
            .filter(|&&r| view.node(r).pool == facts.pool)
            .count() as u32;
        if pool_size(view, facts.pool).saturating_sub(leaving) <= min {
            continue;
        }
        // A drain beyond the budget is not simulated either: the next
        // candidates may still count on its node as a destination.
        if movable.is_empty() {
            empty.push(node);
        } else if (drained.len() as u32) < drain_budget {
            drained.push(node);
        } else {
            continue;
        }
        out.remove.push(node);
    }
    // Empty nodes first, then drains within what is left of both budgets.
    empty.truncate(total_budget as usize);
    total_budget -= empty.len() as u32;
    drained.truncate(total_budget.min(drain_budget) as usize);
    out.remove
        .retain(|n| empty.contains(n) || drained.contains(n));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::{Fake, UNNEEDED, hostname, node, pinned, pod, repels, toleration, topology};

    /// A base node with room and an `auto` node running one movable pod.
    fn cluster() -> (Fake, usize) {
        let mut fake = Fake::default();
        fake.nodes.push(node("base"));
        fake.nodes.push(node("auto"));
        let p = fake.add(pod(Some(1), 500));
        (fake, p)
    }

    // The drainability rules' and local storage's table tests are cases
    // of the conformance suite (`tests/it/conformance/drainability.rs`).

    /// The FAQ's last blocker: "pods that cannot be moved elsewhere due to
    /// various constraints (lack of resources, non-matching node selectors
    /// or affinity, …)", which upstream checks by simulating the pods'
    /// rescheduling onto the remaining nodes
    /// (`cluster-autoscaler/simulator/cluster.go`). Each row makes the
    /// base node unable to take the pod; its control makes it able again.
    #[test]
    fn fits_elsewhere_needs_a_ready_schedulable_node_with_room_and_its_control_has_one() {
        type Edit = fn(&mut Fake, usize);
        let rows: &[(&str, Edit, bool)] = &[
            ("room on the base node", |_, _| {}, true),
            (
                "the base node is NotReady",
                |f, _| f.nodes[0].ready = false,
                false,
            ),
            (
                "the base node is cordoned",
                |f, _| f.nodes[0].schedulable = false,
                false,
            ),
            (
                "the base node is being removed",
                |f, _| f.nodes[0].set_aside = true,
                false,
            ),
            (
                "the base node lacks CPU",
                |f, _| f.nodes[0].requested.cpu = 3600,
                false,
            ),
            (
                "control: exactly the CPU left",
                |f, _| f.nodes[0].requested.cpu = 3500,
                true,
            ),
            (
                "the base node has no pod slot",
                |f, _| f.nodes[0].requested.pods = 110,
                false,
            ),
            (
                "control: one slot left",
                |f, _| f.nodes[0].requested.pods = 109,
                true,
            ),
            (
                "a taint the pod does not tolerate",
                |f, _| f.nodes[0].object = crate::fake::object("base", Some("dedicated")),
                false,
            ),
            (
                "control: the pod tolerates it",
                |f, p| {
                    f.nodes[0].object = crate::fake::object("base", Some("dedicated"));
                    f.pods[p].tolerations = vec![toleration("dedicated")];
                },
                true,
            ),
            (
                "a nodeSelector the base node misses",
                |f, p| f.pods[p] = pinned(f.pods[p].clone(), "gpu"),
                false,
            ),
            (
                "control: one it matches",
                |f, p| f.pods[p] = pinned(f.pods[p].clone(), "base"),
                true,
            ),
        ];
        for (why, edit, want) in rows {
            let (mut fake, p) = cluster();
            edit(&mut fake, p);
            let pods = fake.movable_pods(1);
            assert_eq!(fits_elsewhere(&fake, 1, &pods, &[]), *want, "{why}");
        }
    }

    /// The thrash: cluster-autoscaler simulates rescheduling with
    /// the scheduler's filters (`cluster-autoscaler/simulator/cluster.go`,
    /// FAQ "What types of pods can prevent CA from removing a node?": "pods
    /// that cannot be moved elsewhere due to … affinity"), and
    /// kube-scheduler's `InterPodAffinity` filter is symmetric
    /// (`interpodaffinity/filtering.go`, `satisfyExistingPodsAntiAffinity`).
    /// A pod that could only go next to a pod repelling it keeps its node;
    /// each row's control lets it go.
    #[test]
    fn a_pod_that_could_only_join_a_pod_that_repels_it_keeps_its_node() {
        type Edit = fn(&mut Fake, usize);
        // `base` runs `db`; `auto` runs `web` (pod p).
        let rows: &[(&str, Edit, bool)] = &[
            ("nothing repels", |_, _| {}, true),
            (
                "db, running on base, repels web",
                |f, _| f.pods[0].anti_affinity = vec![repels("web")],
                false,
            ),
            (
                "control: db repels another app",
                |f, _| f.pods[0].anti_affinity = vec![repels("cache")],
                true,
            ),
            (
                "web repels db",
                |f, p| f.pods[p].anti_affinity = vec![repels("db")],
                false,
            ),
            (
                "control: web repels another app",
                |f, p| f.pods[p].anti_affinity = vec![repels("cache")],
                true,
            ),
            (
                "two web pods repelling each other, one node to go to",
                |f, p| {
                    f.pods[p].anti_affinity = vec![repels("web")];
                    let twin = f.pods[p].clone();
                    f.add(twin);
                },
                false,
            ),
            (
                "control: a second node to go to",
                |f, p| {
                    f.pods[p].anti_affinity = vec![repels("web")];
                    let twin = f.pods[p].clone();
                    f.add(twin);
                    let mut other = node("base");
                    hostname(&mut other, "base-2");
                    f.nodes.push(other);
                },
                true,
            ),
        ];
        for (why, edit, want) in rows {
            let mut fake = Fake::default();
            fake.nodes.push(node("base"));
            fake.nodes.push(node("auto"));
            hostname(&mut fake.nodes[0], "base");
            hostname(&mut fake.nodes[1], "auto");
            let mut db = pod(Some(0), 500);
            db.labels = BTreeMap::from([("app".to_owned(), "db".to_owned())]);
            fake.add(db);
            let mut web = pod(Some(1), 500);
            web.labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
            let p = fake.add(web);
            edit(&mut fake, p);
            let pods = fake.movable_pods(1);
            assert_eq!(fits_elsewhere(&fake, 1, &pods, &[]), *want, "{why}");
            // The scan agrees: the node is needed, so it never goes.
            fake.nodes[1].unneeded_since = Some(0);
            let scan = pass(&fake, &topology(0, 3), UNNEEDED);
            assert_eq!(scan.remove.is_empty(), !*want, "{why}: the scan");
        }
    }

    /// Upstream's rescheduling simulation runs the `PodTopologySpread`
    /// filter too (`podtopologyspread/filtering.go`): `web` may not move to
    /// `base`, which already has two, while the cordoned `base-2` (a domain
    /// all the same) has none; the control's `maxSkew` of 3 allows it.
    #[test]
    fn a_pod_whose_spread_constraint_refuses_every_other_node_keeps_its_node() {
        for (max_skew, want) in [(1, false), (3, true)] {
            let mut fake = Fake::default();
            fake.nodes.push(node("base"));
            fake.nodes.push(node("auto"));
            fake.nodes.push(node("base"));
            hostname(&mut fake.nodes[0], "base");
            hostname(&mut fake.nodes[1], "auto");
            hostname(&mut fake.nodes[2], "base-2");
            fake.nodes[2].schedulable = false;
            let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
            let constraint = serde_json::from_value(serde_json::json!({
                "maxSkew": max_skew, "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }))
            .expect("a constraint");
            let spread =
                crate::spread::SpreadConstraint::compile(&constraint, &labels).expect("compiles");
            for on in [0, 0, 1] {
                let mut web = pod(Some(on), 100);
                web.labels = labels.clone();
                web.spread = vec![spread.clone()];
                fake.add(web);
            }
            let pods = fake.movable_pods(1);
            assert_eq!(
                fits_elsewhere(&fake, 1, &pods, &[]),
                want,
                "maxSkew {max_skew}"
            );
        }
    }

    /// `podtopologyspread/common.go`'s `countPodsMatchSelector` skips a
    /// pod with a deletionTimestamp ("Bypass terminating Pod"), and the
    /// autoscaler's simulation runs that filter: a terminating pod on the
    /// destination does not count against the moved pod's skew, while the
    /// same pod still running (the control) refuses it.
    #[test]
    fn a_terminating_pod_does_not_count_against_the_spread_of_a_moved_pod() {
        for (terminating, want) in [(true, true), (false, false)] {
            let mut fake = Fake::default();
            fake.nodes.push(node("base"));
            fake.nodes.push(node("auto"));
            hostname(&mut fake.nodes[0], "base");
            hostname(&mut fake.nodes[1], "auto");
            let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
            let constraint = serde_json::from_value(serde_json::json!({
                "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }))
            .expect("a constraint");
            let spread =
                crate::spread::SpreadConstraint::compile(&constraint, &labels).expect("compiles");
            for (on, stopping) in [(0, terminating), (1, false)] {
                let mut web = pod(Some(on), 100);
                web.labels = labels.clone();
                web.spread = vec![spread.clone()];
                web.terminating = stopping;
                fake.add(web);
            }
            let pods = fake.movable_pods(1);
            assert_eq!(
                fits_elsewhere(&fake, 1, &pods, &[]),
                want,
                "the pod on base terminating: {terminating}"
            );
        }
    }

    /// First fit: a placed pod takes its room for the next, and a node the
    /// scan already chose to remove is no destination.
    #[test]
    fn fits_elsewhere_counts_what_it_already_placed_and_skips_nodes_being_removed() {
        let (mut fake, _) = cluster();
        fake.nodes[0].requested.cpu = 3000;
        fake.add(pod(Some(1), 500));
        let pods = fake.movable_pods(1);
        assert!(
            fits_elsewhere(&fake, 1, &pods, &[]),
            "two 500m pods in 1000m"
        );
        fake.add(pod(Some(1), 500));
        let pods = fake.movable_pods(1);
        assert!(!fits_elsewhere(&fake, 1, &pods, &[]), "three do not");
        let (fake, _) = cluster();
        let pods = fake.movable_pods(1);
        assert!(!fits_elsewhere(&fake, 1, &pods, &[0]));
        assert!(fits_elsewhere(&fake, 1, &pods, &[]), "control");
    }

    /// The FAQ's "How does scale-down work?": unneeded (under the
    /// utilisation threshold, its pods movable) for the unneeded time, then
    /// removed.
    #[test]
    fn a_node_unneeded_for_the_unneeded_time_is_removed_and_a_busy_one_starts_over() {
        let topology = topology(0, 3);
        let (mut fake, _) = cluster();
        let first = pass(&fake, &topology, 1_000);
        assert_eq!(first.unneeded, [(1, Some(1_000))]);
        assert!(first.remove.is_empty(), "not for long enough yet");
        fake.nodes[1].unneeded_since = Some(1_000);
        let later = pass(&fake, &topology, 1_000 + UNNEEDED);
        assert_eq!(later.remove, [1]);
        // Control: above the threshold it is needed and its time resets.
        fake.nodes[1].requested.cpu = 2400;
        let busy = pass(&fake, &topology, 1_000 + UNNEEDED);
        assert_eq!(busy.unneeded, [(1, None)]);
        assert!(busy.remove.is_empty());
    }

    /// Upstream never takes a node group below its min size, skips nodes
    /// annotated `scale-down-disabled` (FAQ "How can I prevent Cluster
    /// Autoscaler from scaling down a particular node?"), and removes
    /// empty nodes together but non-empty ones one at a time.
    #[test]
    fn min_size_the_disabled_annotation_and_one_non_empty_node_at_a_time() {
        let unneeded = |fake: &mut Fake| {
            for n in &mut fake.nodes {
                n.unneeded_since = Some(0);
            }
        };
        let (mut fake, _) = cluster();
        unneeded(&mut fake);
        assert!(
            pass(&fake, &topology(1, 3), UNNEEDED).remove.is_empty(),
            "at min"
        );
        assert_eq!(
            pass(&fake, &topology(0, 3), UNNEEDED).remove,
            [1],
            "control"
        );

        let annotations = [(SCALE_DOWN_DISABLED.to_owned(), "true".to_owned())];
        fake.nodes[1].object.metadata.annotations = Some(annotations.into_iter().collect());
        assert!(
            pass(&fake, &topology(0, 3), UNNEEDED).unneeded.is_empty(),
            "not a candidate"
        );

        let (mut fake, _) = cluster();
        fake.nodes.push(node("auto"));
        fake.add(pod(Some(2), 500));
        unneeded(&mut fake);
        assert_eq!(
            pass(&fake, &topology(0, 3), UNNEEDED).remove,
            [1],
            "one non-empty"
        );
        // Control: empty nodes are not held back by each other.
        fake.pods.clear();
        fake.nodes[1].requested = Room::default();
        fake.nodes[2].requested = Room::default();
        assert_eq!(pass(&fake, &topology(0, 3), UNNEEDED).remove, [1, 2]);
    }

    /// Upstream's parallelism budgets (`core/scaledown/budgets/budgets.go`
    /// `CropNodes`; FAQ flags `max-drain-parallelism` 1,
    /// `max-scale-down-parallelism` 10): a drain in progress holds the next
    /// non-empty node back until it is deleted, while empty nodes still go
    /// within the total. Each row has its control.
    #[test]
    fn a_drain_in_progress_holds_the_next_drain_and_empty_nodes_share_the_total() {
        /// `base` with room, then `drains` non-empty and `empties` empty
        /// `auto` nodes, all unneeded long enough.
        fn cluster(drains: usize, empties: usize) -> Fake {
            let mut fake = Fake::default();
            fake.nodes.push(node("base"));
            for i in 0..drains + empties {
                fake.nodes.push(node("auto"));
                if i < drains {
                    fake.add(pod(Some(i + 1), 100));
                }
            }
            for n in &mut fake.nodes {
                n.unneeded_since = Some(0);
            }
            fake
        }
        let topology = topology(0, 20);
        type Row<'a> = (&'a str, Fake, InProgress, Option<(u32, u32)>, usize);
        let rows: Vec<Row> = vec![
            (
                "a drain in progress: no other drain starts",
                cluster(1, 0),
                InProgress {
                    empty: 0,
                    drained: 1,
                },
                None,
                0,
            ),
            (
                "control: the first drain is done",
                cluster(1, 0),
                InProgress::default(),
                None,
                1,
            ),
            (
                "two drainable nodes, none in progress: one at a time",
                cluster(2, 0),
                InProgress::default(),
                None,
                1,
            ),
            (
                "control: maxDrainParallelism 2",
                cluster(2, 0),
                InProgress::default(),
                Some((2, 10)),
                2,
            ),
            (
                "a drain in progress does not hold empty nodes",
                cluster(0, 3),
                InProgress {
                    empty: 0,
                    drained: 1,
                },
                None,
                3,
            ),
            (
                "nine removals in progress leave room for one more",
                cluster(0, 3),
                InProgress {
                    empty: 8,
                    drained: 1,
                },
                None,
                1,
            ),
            (
                "control: ten in progress leave none",
                cluster(0, 3),
                InProgress {
                    empty: 9,
                    drained: 1,
                },
                None,
                0,
            ),
            (
                "empty nodes are served before a drain",
                cluster(1, 2),
                InProgress::default(),
                Some((1, 2)),
                2,
            ),
        ];
        for (why, mut fake, in_progress, limits, want) in rows {
            fake.in_progress = in_progress;
            let mut topology = topology.clone();
            if let Some((drain, total)) = limits {
                topology.autoscaler.max_drain_parallelism = drain;
                topology.autoscaler.max_scale_down_parallelism = total;
            }
            let scan = pass(&fake, &topology, UNNEEDED);
            assert_eq!(scan.remove.len(), want, "{why}: {:?}", scan.remove);
            if why.starts_with("empty nodes are served") {
                assert!(
                    scan.remove.iter().all(|&n| fake.movable_pods(n).is_empty()),
                    "{why}"
                );
            }
        }
    }

    /// FAQ "I have a couple of nodes with low utilization, but they are not
    /// scaled down. Why?": "there was a scale-up in the last 10 min", "a
    /// failed scale-down … in the last 3 minutes"; and upstream keeps
    /// counting unneeded time meanwhile (`core/static_autoscaler.go`
    /// updates unneeded nodes before `isScaleDownInCooldown`). The control
    /// at the end of the delay removes the node.
    #[test]
    fn a_recent_scale_up_or_failure_holds_removal_but_not_the_unneeded_count() {
        let topology = topology(0, 3);
        let (mut fake, _) = cluster();
        fake.nodes[1].unneeded_since = Some(0);
        let at = |fake: &mut Fake, cooldown: &crate::cooldown::Cooldown, now: u64| {
            fake.cooldown = cooldown.clone();
            pass(&*fake, &topology, now)
        };
        let up = crate::cooldown::Cooldown {
            last_scale_up: Some(UNNEEDED - 60_000),
            ..Default::default()
        };
        let held = at(&mut fake, &up, UNNEEDED);
        assert!(held.remove.is_empty(), "9 minutes short of the delay");
        assert_eq!(held.held, Some(Hold::AfterAdd));
        assert_eq!(held.unneeded, [(1, Some(0))], "still counted unneeded");
        let later = at(&mut fake, &up, 2 * UNNEEDED - 60_000);
        assert_eq!(later.remove, [1], "control: 10 minutes after the scale-up");
        let failed = crate::cooldown::Cooldown {
            last_failure: Some(UNNEEDED),
            ..Default::default()
        };
        assert!(at(&mut fake, &failed, UNNEEDED + 179_000).remove.is_empty());
        assert_eq!(
            at(&mut fake, &failed, UNNEEDED + 180_000).remove,
            [1],
            "control: 3 minutes after the failure"
        );
    }

    /// `--scale-down-delay-type-local` (`ScaleDownCandidatesDelayProcessor`):
    /// a scale-up holds the removal of its own pool's nodes only. Control:
    /// with the delays global, another pool's scale-up holds it too.
    #[test]
    fn local_delays_hold_only_the_pool_that_acted() {
        let mut topology = topology(0, 3);
        let (mut fake, _) = cluster();
        fake.nodes[1].unneeded_since = Some(0);
        let own = fake.nodes[1].pool.clone();
        let scaled_up = |pool: &str| {
            let mut c = crate::cooldown::Cooldown::default();
            c.scaled_up(pool, UNNEEDED - 60_000);
            c
        };
        topology.autoscaler.scale_down_delay_type_local = true;
        fake.cooldown = scaled_up("elsewhere");
        assert_eq!(
            pass(&fake, &topology, UNNEEDED).remove,
            [1],
            "another pool acted"
        );
        fake.cooldown = scaled_up(&own);
        let held = pass(&fake, &topology, UNNEEDED);
        assert!(held.remove.is_empty(), "its own pool scaled up");
        assert_eq!(held.held, None, "no delay holds every pool");
        topology.autoscaler.scale_down_delay_type_local = false;
        fake.cooldown = scaled_up("elsewhere");
        assert!(
            pass(&fake, &topology, UNNEEDED).remove.is_empty(),
            "control: global delays"
        );
    }

    /// `--unremovable-node-recheck-timeout` (`planner.categorizeNodes`:
    /// a node `SimulateNodeRemoval` refuses is added with the timeout;
    /// `FilterOutUnremovable` skips it as `RecentlyUnremovable` until
    /// then). A pod with nowhere to go makes the node unremovable; while
    /// the timeout runs, the node is neither simulated nor unneeded, even
    /// with room back. Control: once it has passed, the node is removed.
    #[test]
    fn a_refused_node_is_left_out_until_its_recheck() {
        let topology = topology(0, 3);
        let (mut fake, p) = cluster();
        fake.nodes[1].unneeded_since = Some(0);
        fake.pods[p].controlled = false;
        let refused = pass(&fake, &topology, UNNEEDED);
        assert_eq!(refused.unremovable, [1], "a pod no controller recreates");
        assert!(refused.remove.is_empty());
        fake.pods[p].controlled = true;
        fake.nodes[1].unremovable_until = Some(UNNEEDED + 1);
        let skipped = pass(&fake, &topology, UNNEEDED);
        assert!(skipped.remove.is_empty() && skipped.unremovable.is_empty());
        assert!(skipped.unneeded.contains(&(1, None)), "not unneeded either");
        let rechecked = pass(&fake, &topology, UNNEEDED + 1);
        assert_eq!(rechecked.remove, [1], "control: rechecked once it ran out");
    }

    /// `skip-nodes-with-local-storage` and `skip-nodes-with-system-pods`
    /// (FAQ "What are the parameters to CA?", both true by default;
    /// `simulator/drainability/rules/localstorage` and `rules/system`
    /// check them first): turned off, the rule no longer keeps the pod.
    #[test]
    fn the_skip_flags_turned_off_let_local_storage_and_system_pods_move() {
        let (mut fake, p) = cluster();
        let mut off = Autoscaler::default();
        fake.pods[p].local_storage = true;
        assert_eq!(
            blocker(&fake, p, &Autoscaler::default()),
            Some(Blocker::LocalStorage)
        );
        off.skip_nodes_with_local_storage = false;
        assert_eq!(blocker(&fake, p, &off), None, "control");
        fake.pods[p].local_storage = false;
        fake.pods[p].namespace = "kube-system".to_owned();
        assert_eq!(
            blocker(&fake, p, &Autoscaler::default()),
            Some(Blocker::KubeSystemWithoutBudget)
        );
        off.skip_nodes_with_system_pods = false;
        assert_eq!(blocker(&fake, p, &off), None, "control");
    }

    /// `ignore-daemonsets-utilization` (FAQ "What are the parameters to
    /// CA?", false by default; `simulator/utilization` leaves DaemonSet
    /// pods out when it is set): a node whose 2 CPU DaemonSet pod and
    /// 0.5 CPU pod make it 62.5 % used is needed, and unneeded at 12.5 %
    /// once DaemonSet pods are left out.
    #[test]
    fn ignoring_daemon_set_pods_in_utilisation_makes_a_node_unneeded() {
        let (mut fake, _) = cluster();
        let mut daemon = pod(Some(1), 2000);
        daemon.daemon = true;
        fake.add(daemon);
        let mut topology = topology(0, 3);
        fake.nodes[1].unneeded_since = Some(0);
        assert_eq!(
            node_utilisation(&fake, 1, &topology.autoscaler),
            0.625,
            "2.5 of 4 CPUs"
        );
        assert!(pass(&fake, &topology, UNNEEDED).remove.is_empty());
        topology.autoscaler.ignore_daemon_sets_utilization = true;
        assert_eq!(node_utilisation(&fake, 1, &topology.autoscaler), 0.125);
        assert_eq!(pass(&fake, &topology, UNNEEDED).remove, [1], "control");
    }

    #[test]
    fn utilisation_is_the_larger_share_and_the_least_utilised_node_goes_first() {
        let half_cpu = utilisation(res(2000, 0), res(4000, 16 * GI));
        let quarter_memory = utilisation(res(0, 4 * GI), res(4000, 16 * GI));
        assert_eq!((half_cpu, quarter_memory), (0.5, 0.25));
        assert_eq!(
            utilisation(res(1, 1), res(0, 0)),
            1.0,
            "nothing allocatable is full"
        );
        let pick = least_utilised([(0.5, "b"), (0.25, "c"), (0.25, "a")]);
        assert_eq!(pick, Some("a"), "the least, then the first by name");
    }

    use crate::fake::{GI, res};
}
