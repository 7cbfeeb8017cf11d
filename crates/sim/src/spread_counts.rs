//! Topology spread's counts, read from the pod groups.
//!
//! PodTopologySpread counts, for each incoming pod and each of its
//! constraints, the matching pods in every domain of the constraint's key
//! (`pkg/scheduler/framework/plugins/podtopologyspread/filtering.go`,
//! `calPreFilterState`; `scoring.go`, `PreScore`): a walk over every node.
//! Walked node by node with label lookups, that made each spread pod cost
//! the whole cluster, and 5 000 of them on 5 000 nodes several seconds.
//!
//! The groups of alike pods (`pod_groups`) already keep how many of their
//! pods run in each domain of a key, numbered, as pods bind and leave. When
//! every node with one of the constraints' keys has them all and passes
//! their inclusion policies (checked once per template and scheduling
//! pass, since within a pass only bindings change the nodes), a domain
//! counts the matching pods of all its nodes: the sum of the matching
//! groups' counts there, less the pods that hold a node but count nowhere
//! (terminating, or on a node that is gone). A pod's counts then cost its
//! matching groups times the domains, and each node's verdict two array
//! reads. Otherwise, or for a pod counted apart from its own group, the
//! nodes are walked as upstream walks them. Debug builds check every
//! shortcut against the walk.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use drillbench_policy::domains::KeyDomains;
use drillbench_policy::spread::{
    SpreadConstraint, SpreadPod, SpreadScore, SpreadState, Unsatisfiable, normalize,
};
use drillbench_policy::view::Placement;

use super::pod_groups::PodGroup;
use super::state::World;
use super::world::{NodeId, NodePhase, PodId, PodPhase, Template};

/// A template by address, and a constraint kind (`true`: the hard ones).
type TemplateKind = (usize, bool);

/// What one scheduling pass learnt about the nodes for topology spread:
/// kept until the next pass ([`SpreadCensus::clear`]), since within a
/// pass only bindings change the nodes and none of this reads them.
#[derive(Debug, Clone, Default)]
pub(crate) struct SpreadCensus {
    /// Per template (by address; the template is kept so that no other
    /// takes its address) and constraint kind (`true`: the hard ones):
    /// whether the domains may be counted from the groups.
    uniform: RefCell<BTreeMap<TemplateKind, (Rc<Template>, bool)>>,
    /// Per key: by domain number, whether a node that is not gone is in
    /// the domain.
    live: RefCell<BTreeMap<String, Rc<Vec<bool>>>>,
    /// The pods holding resources on nodes that are gone.
    stranded: RefCell<Option<Rc<Vec<PodId>>>>,
}

impl SpreadCensus {
    /// Forgets what the last pass learnt.
    pub(crate) fn clear(&mut self) {
        self.uniform.get_mut().clear();
        self.live.get_mut().clear();
        *self.stranded.get_mut() = None;
    }

    /// Whether every node that is not gone and carries one of the keys of
    /// `template`'s `hard` (or soft) constraints carries them all and
    /// passes their inclusion policies (the hostname ones excepted for
    /// the soft constraints, whose counts are the node's own).
    fn uniform(&self, world: &World, template: &Rc<Template>, hard: bool) -> bool {
        let key = (Rc::as_ptr(template) as usize, hard);
        if let Some((_, uniform)) = self.uniform.borrow().get(&key) {
            return *uniform;
        }
        let constraints: Vec<&SpreadConstraint> = template
            .spread
            .iter()
            .filter(|c| (c.when == Unsatisfiable::DoNotSchedule) == hard)
            .collect();
        let placement = placement(template);
        let uniform = world
            .nodes()
            .iter()
            .filter(|n| n.phase != NodePhase::Gone)
            .all(|n| {
                let labels = n.labels();
                let keys = constraints
                    .iter()
                    .filter(|c| labels.contains_key(&c.topology_key))
                    .count();
                keys == 0
                    || (keys == constraints.len()
                        && constraints.iter().all(|c| {
                            (!hard && c.topology_key == HOSTNAME)
                                || c.includes(&placement, &n.object)
                        }))
            });
        self.uniform
            .borrow_mut()
            .insert(key, (template.clone(), uniform));
        uniform
    }

    /// By domain number of `key`: whether a node that is not gone is in
    /// it.
    fn live(&self, world: &World, key: &str, index: &KeyDomains) -> Rc<Vec<bool>> {
        if let Some(live) = self.live.borrow().get(key) {
            return live.clone();
        }
        let mut live = vec![false; index.domains()];
        for (id, n) in world.nodes().iter().enumerate() {
            if n.phase != NodePhase::Gone
                && let Some(d) = index.of_node(id)
            {
                live[d as usize] = true;
            }
        }
        let live = Rc::new(live);
        self.live.borrow_mut().insert(key.to_owned(), live.clone());
        live
    }

    /// The pods that hold a node but count in no domain: terminating ones,
    /// and those on nodes that are gone.
    fn uncounted(&self, world: &World) -> Vec<PodId> {
        let stranded = self
            .stranded
            .borrow_mut()
            .get_or_insert_with(|| {
                Rc::new(
                    world
                        .nodes()
                        .iter()
                        .filter(|n| n.phase == NodePhase::Gone)
                        .flat_map(|n| n.pods.iter().copied())
                        .collect(),
                )
            })
            .clone();
        let pods = world.pods();
        let mut uncounted: BTreeSet<PodId> = stranded.iter().copied().collect();
        uncounted.extend(
            world
                .terminating_pods()
                .iter()
                .copied()
                .filter(|&p| pods[p].phase == PodPhase::Terminating && pods[p].holds_resources),
        );
        uncounted.into_iter().collect()
    }

    /// What the spread filter counted for a pending pod over the nodes
    /// that exist (Booting and NotReady ones included: upstream counts
    /// every Node), or `None` when the pod has no `DoNotSchedule`
    /// constraint. Pods count while they hold resources and are not
    /// terminating. Filter it with the world's node indices
    /// (`SpreadState::filter_at`).
    pub(crate) fn filter_state(&self, world: &World, pod: PodId) -> Option<SpreadState> {
        let p = world.pod(pod);
        let template = &p.template;
        let incoming = spread_pod(&p.namespace, template);
        if !incoming.is_constrained() {
            return None;
        }
        if p.holds_resources {
            // Counted in its own group: only the pod-by-pod count can leave
            // it out (never met by a pending pod; kept for exactness).
            return Some(pod_by_pod(world, pod, &BTreeSet::new()));
        }
        let groups = world.pod_groups();
        let nodes = world.nodes();
        let mut state = SpreadState::numbered(&incoming, |key| groups.index(key, nodes));
        if !self.uniform(world, template, true) {
            let counts = SpreadCounts::new(world, &p.namespace, template.spread.iter().collect());
            for (id, n) in nodes.iter().enumerate() {
                if n.phase != NodePhase::Gone {
                    state.add_node_at(&incoming, &n.object, Some(id), |i| counts.on(i, id));
                }
            }
            return Some(state);
        }
        let uncounted = self.uncounted(world);
        for (i, c) in template.spread.iter().enumerate() {
            if c.when != Unsatisfiable::DoNotSchedule {
                continue;
            }
            let index = groups.index(&c.topology_key, nodes);
            let counts = domain_counts(world, &p.namespace, c, &index, &uncounted);
            let live = self.live(world, &c.topology_key, &index);
            for (d, n) in counts.into_iter().enumerate() {
                if live[d] {
                    state.add_domain(i, d as u32, n);
                }
            }
        }
        debug_assert!(
            {
                let walked = walk(world, pod);
                nodes.iter().enumerate().all(|(id, n)| {
                    n.phase == NodePhase::Gone
                        || state.filter_at(&incoming, &n.object, Some(id))
                            == walked.filter_at(&incoming, &n.object, Some(id))
                })
            },
            "the spread counts read from the groups differ from a walk of the nodes"
        );
        Some(state)
    }

    /// PodTopologySpread's normalised score of each feasible node for the
    /// pod's `ScheduleAnyway` constraints (`SpreadScore`), or nothing when
    /// it has none.
    pub(crate) fn scores(&self, world: &World, pod: PodId, feasible: &[NodeId]) -> Vec<i64> {
        let p = world.pod(pod);
        let template = &p.template;
        let incoming = spread_pod(&p.namespace, template);
        let groups = world.pod_groups();
        let nodes = world.nodes();
        let Some(mut state) = SpreadScore::numbered(
            incoming.soft(),
            true,
            feasible.iter().map(|&n| (Some(n), &*nodes[n].object)),
            |key| groups.index(key, nodes),
        ) else {
            return Vec::new();
        };
        let counts = SpreadCounts::new(world, &p.namespace, state.constraints().to_vec());
        let uniform = !p.holds_resources && self.uniform(world, template, false);
        if uniform {
            let uncounted = self.uncounted(world);
            let per_domain: Vec<Vec<u32>> = state
                .constraints()
                .iter()
                .map(|c| {
                    let index = groups.index(&c.topology_key, nodes);
                    domain_counts(world, &p.namespace, c, &index, &uncounted)
                })
                .collect();
            state.add_domains(|i, d| per_domain[i].get(d as usize).copied().unwrap_or(0));
        } else {
            for (id, n) in nodes.iter().enumerate() {
                if n.phase != NodePhase::Gone {
                    state.add_node_at(&incoming.placement, &n.object, Some(id), |i| {
                        counts.on(i, id)
                    });
                }
            }
        }
        let raw: Vec<Option<i64>> = feasible
            .iter()
            .map(|&id| state.raw_at(&nodes[id].object, Some(id), |i| counts.on(i, id)))
            .collect();
        debug_assert!(
            !uniform || raw == walked_raw(world, pod, feasible),
            "the spread scores read from the groups differ from a walk of the nodes"
        );
        normalize(&raw)
    }
}

/// The hostname label, whose domains are the nodes themselves.
const HOSTNAME: &str = "kubernetes.io/hostname";

/// How many pods constraint `c` of an incoming pod of `namespace` counts
/// in each domain of its key (by `index`'s numbers), over every node:
/// the matching groups' pods, less the `uncounted` ones.
fn domain_counts(
    world: &World,
    namespace: &str,
    c: &SpreadConstraint,
    index: &KeyDomains,
    uncounted: &[PodId],
) -> Vec<u32> {
    let groups = world.pod_groups();
    let nodes = world.nodes();
    let mut counts = vec![0u32; index.domains()];
    for g in groups.all() {
        if g.is_empty() || !c.counts(namespace, &g.namespace, &g.template.labels) {
            continue;
        }
        let (_, domains) = groups.domains(g, &c.topology_key, nodes);
        for (d, n) in domains.by_domain().iter().enumerate() {
            counts[d] += n;
        }
    }
    let pods = world.pods();
    for &u in uncounted {
        let p = &pods[u];
        if let Some(node) = p.node
            && let Some(d) = index.of_node(node)
            && c.counts(namespace, &p.namespace, &p.template.labels)
        {
            counts[d as usize] -= 1;
        }
    }
    counts
}

/// The spread filter's counts for a pending pod, walking every node.
fn walk(world: &World, pod: PodId) -> SpreadState {
    let p = world.pod(pod);
    let incoming = spread_pod(&p.namespace, &p.template);
    let counts = SpreadCounts::new(world, &p.namespace, p.template.spread.iter().collect());
    let groups = world.pod_groups();
    let nodes = world.nodes();
    let mut state = SpreadState::numbered(&incoming, |key| groups.index(key, nodes));
    for (id, n) in nodes.iter().enumerate() {
        if n.phase != NodePhase::Gone {
            state.add_node_at(&incoming, &n.object, Some(id), |i| counts.on(i, id));
        }
    }
    state
}

/// The raw spread scores of the feasible nodes, walking every node.
fn walked_raw(world: &World, pod: PodId, feasible: &[NodeId]) -> Vec<Option<i64>> {
    let p = world.pod(pod);
    let incoming = spread_pod(&p.namespace, &p.template);
    let nodes = world.nodes();
    let Some(mut state) = SpreadScore::new(
        incoming.soft(),
        true,
        feasible.iter().map(|&n| &*nodes[n].object),
    ) else {
        return Vec::new();
    };
    let counts = SpreadCounts::new(world, &p.namespace, state.constraints().to_vec());
    for (id, n) in nodes.iter().enumerate() {
        if n.phase != NodePhase::Gone {
            state.add_node(&incoming.placement, &n.object, |i| counts.on(i, id));
        }
    }
    feasible
        .iter()
        .map(|&id| state.raw(&nodes[id].object, |i| counts.on(i, id)))
        .collect()
}

/// The spread filter's counts, counting every pod but `pod` and the
/// `removed` ones one by one.
pub(crate) fn pod_by_pod(world: &World, pod: PodId, removed: &BTreeSet<PodId>) -> SpreadState {
    let pods = world.pods();
    let namespace = &pods[pod].namespace;
    let template = &pods[pod].template;
    let incoming = spread_pod(namespace, template);
    let mut state = SpreadState::default();
    for n in world.nodes() {
        if n.phase == NodePhase::Gone {
            continue;
        }
        state.add_node(&incoming, &n.object, |i| {
            let c = &template.spread[i];
            n.pods
                .iter()
                .filter(|&&p| {
                    p != pod
                        && !removed.contains(&p)
                        && !matches!(pods[p].phase, PodPhase::Gone | PodPhase::Terminating)
                        && c.counts(namespace, &pods[p].namespace, &pods[p].template.labels)
                })
                .count() as u32
        });
    }
    state
}

fn placement(template: &Template) -> Placement<'_> {
    Placement {
        required: Some(&template.required),
        tolerations: &template.tolerations,
    }
}

/// A pod of `namespace` made from `template`, as the spread filter reads
/// it.
pub(crate) fn spread_pod<'a>(namespace: &'a str, template: &'a Template) -> SpreadPod<'a> {
    SpreadPod {
        namespace,
        labels: &template.labels,
        placement: placement(template),
        constraints: &template.spread,
    }
}

/// How many pods each spread constraint counts on a node, read from the
/// world's groups of alike pods (decided once per group rather than once
/// per pod): those holding resources there, less the terminating ones,
/// which still hold their node but count nowhere. The filter and the
/// score count alike.
struct SpreadCounts<'a> {
    world: &'a World,
    namespace: &'a str,
    constraints: Vec<&'a SpreadConstraint>,
    matching: Vec<Vec<&'a PodGroup>>,
    terminating: BTreeMap<NodeId, Vec<PodId>>,
}

impl<'a> SpreadCounts<'a> {
    fn new(world: &'a World, namespace: &'a str, constraints: Vec<&'a SpreadConstraint>) -> Self {
        let groups = world.pod_groups().all();
        let matching = constraints
            .iter()
            .map(|c| {
                groups
                    .iter()
                    .filter(|g| {
                        !g.is_empty() && c.counts(namespace, &g.namespace, &g.template.labels)
                    })
                    .collect()
            })
            .collect();
        let pods = world.pods();
        let mut terminating: BTreeMap<NodeId, Vec<PodId>> = BTreeMap::new();
        for &p in world.terminating_pods() {
            let t = &pods[p];
            if t.phase == PodPhase::Terminating
                && t.holds_resources
                && let Some(node) = t.node
            {
                terminating.entry(node).or_default().push(p);
            }
        }
        SpreadCounts {
            world,
            namespace,
            constraints,
            matching,
            terminating,
        }
    }

    /// The pods constraint `i` counts on `node`.
    fn on(&self, i: usize, node: NodeId) -> u32 {
        let pods = self.world.pods();
        let held: u32 = self.matching[i].iter().map(|g| g.pods_on(node)).sum();
        let leaving = self.terminating.get(&node).map_or(0, |ps| {
            ps.iter()
                .filter(|&&p| {
                    self.constraints[i].counts(
                        self.namespace,
                        &pods[p].namespace,
                        &pods[p].template.labels,
                    )
                })
                .count() as u32
        });
        held - leaving
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::fixtures::{node, pod, template_with};
    use crate::world::{Owner, SimNode};
    use drillbench_model::rng::SeededRng;

    /// Node `n-<i>` in zone `z<i % 3>`, Ready; `unzoned` the one without
    /// a zone (a node without the key is in no domain).
    fn zoned(i: usize, unzoned: Option<usize>) -> SimNode {
        let mut n = node(&format!("n-{i}"));
        let mut labels = n.labels().clone();
        if unzoned != Some(i) {
            labels.insert("zone".to_owned(), format!("z{}", i % 3));
        }
        n.object.metadata.labels = Some(labels);
        n.phase = NodePhase::Ready;
        n
    }

    /// `web` pods spread over zones (maxSkew 1, DoNotSchedule) and scored
    /// over zones and hostnames (ScheduleAnyway), with `extra` in the
    /// pod spec.
    fn web(extra: serde_json::Value) -> Rc<Template> {
        let selector = json!({"matchLabels": {"app": "web"}});
        let mut spec = json!({"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": selector},
            {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": selector},
            {"maxSkew": 1, "topologyKey": HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": selector}]});
        if let (Some(into), serde_json::Value::Object(extra)) = (spec.as_object_mut(), extra) {
            into.extend(extra);
        }
        template_with("web", spec)
    }

    /// The filter's verdict on every node and the scores of every ready
    /// node, for the pending pod, as the census reads them.
    fn read(census: &SpreadCensus, world: &World, pending: PodId) -> (Vec<bool>, Vec<i64>) {
        let p = world.pod(pending);
        let incoming = spread_pod(&p.namespace, &p.template);
        let state = census.filter_state(world, pending).expect("constrained");
        let verdicts = world
            .nodes()
            .iter()
            .enumerate()
            .map(|(id, n)| state.filter_at(&incoming, &n.object, Some(id)).is_ok())
            .collect();
        let ready: Vec<NodeId> = (0..world.nodes().len())
            .filter(|&n| world.node(n).phase == NodePhase::Ready)
            .collect();
        (verdicts, census.scores(world, pending, &ready))
    }

    /// The same, walking the nodes.
    fn walked(world: &World, pending: PodId) -> (Vec<bool>, Vec<i64>) {
        let p = world.pod(pending);
        let incoming = spread_pod(&p.namespace, &p.template);
        let state = walk(world, pending);
        let verdicts = world
            .nodes()
            .iter()
            .map(|n| state.filter(&incoming, &n.object).is_ok())
            .collect();
        let ready: Vec<NodeId> = (0..world.nodes().len())
            .filter(|&n| world.node(n).phase == NodePhase::Ready)
            .collect();
        (verdicts, normalize(&walked_raw(world, pending, &ready)))
    }

    /// Random binds, releases, terminations and departed nodes: after
    /// every step the filter's verdicts and the scores read from the
    /// groups' counts per domain equal those of a walk of every node
    /// (`filtering.go` `calPreFilterState`, `scoring.go` `PreScore`, which
    /// walk the nodes), and the shortcut was the one taken.
    #[test]
    fn counts_read_from_the_groups_equal_a_walk_of_the_nodes() {
        for seed in 0..12 {
            let mut rng = SeededRng::new(seed);
            let count = 9;
            // With a node without a zone, the soft constraints (zone and
            // hostname) are walked; without, they are read too.
            let unzoned = seed.is_multiple_of(2).then_some(count - 1);
            let mut world = World::default();
            for i in 0..count {
                world.add_node(zoned(i, unzoned));
            }
            let web = web(json!({}));
            let other = template_with("db", json!({}));
            let pending = world.add_pod(pod("web-new", Owner::None, web.clone(), Vec::new()));
            let mut held: Vec<PodId> = Vec::new();
            let (mut hard, mut soft) = (0, 0);
            for step in 0..120 {
                match rng.index(10) {
                    0 if step % 11 == 0 => {
                        let n = rng.index(count);
                        world.node_mut(n).phase = NodePhase::Gone;
                    }
                    1 | 2 if !held.is_empty() => {
                        let p = held.swap_remove(rng.index(held.len()));
                        world.release(p);
                    }
                    3 if !held.is_empty() => {
                        let p = held[rng.index(held.len())];
                        world.start_terminating(p);
                    }
                    _ => {
                        let t = if rng.index(3) == 0 { &other } else { &web };
                        let p = world.add_pod(pod(
                            &format!("p-{step}"),
                            Owner::None,
                            t.clone(),
                            Vec::new(),
                        ));
                        world.bind(p, rng.index(count));
                        held.push(p);
                    }
                }
                // A new pass: the nodes may have changed.
                let census = SpreadCensus::default();
                assert_eq!(
                    read(&census, &world, pending),
                    walked(&world, pending),
                    "seed {seed} step {step}"
                );
                hard += usize::from(census.uniform(&world, &web, true));
                soft += usize::from(census.uniform(&world, &web, false));
            }
            assert!(hard > 0, "seed {seed}: the groups were read");
            assert!(
                soft > 0 || unzoned.is_some(),
                "seed {seed}: the scores read them too"
            );
        }
    }

    /// The shortcut is taken only where it counts what the walk counts: a
    /// node selector that refuses some zoned nodes (`nodeAffinityPolicy:
    /// Honor`, the default: those nodes are no domains) leaves the walk;
    /// the control (`nodeAffinityPolicy: Ignore`) keeps the shortcut.
    #[test]
    fn nodes_refused_by_the_inclusion_policy_leave_the_walk() {
        let mut world = World::default();
        for i in 0..4 {
            let mut n = zoned(i, None);
            if i == 0 {
                let mut labels = n.labels().clone();
                labels.insert("disk".to_owned(), "ssd".to_owned());
                n.object.metadata.labels = Some(labels);
            }
            world.add_node(n);
        }
        let selective = web(json!({"nodeSelector": {"disk": "ssd"}}));
        let census = SpreadCensus::default();
        assert!(
            !census.uniform(&world, &selective, true),
            "n-1..n-3 are no domains"
        );
        let mut ignoring = selective.spec.clone();
        for c in ignoring.topology_spread_constraints.iter_mut().flatten() {
            c.node_affinity_policy = Some("Ignore".to_owned());
        }
        let ignoring = template_with(
            "web",
            json!({"nodeSelector": {"disk": "ssd"},
                   "topologySpreadConstraints": ignoring.topology_spread_constraints}),
        );
        assert!(
            census.uniform(&world, &ignoring, true),
            "control: every node a domain"
        );
        // Either way, the verdicts are the walk's.
        for t in [selective, ignoring] {
            let mut world = world.clone();
            let p = world.add_pod(pod("old", Owner::None, t.clone(), Vec::new()));
            world.bind(p, 1);
            let pending = world.add_pod(pod("new", Owner::None, t, Vec::new()));
            assert_eq!(
                read(&SpreadCensus::default(), &world, pending),
                walked(&world, pending)
            );
        }
    }

    /// Control for the comparison: counted from the groups without
    /// leaving out a terminating pod, a zone holds one pod too many.
    #[test]
    fn a_terminating_pod_left_in_is_told_apart() {
        let mut world = World::default();
        for i in 0..3 {
            world.add_node(zoned(i, None));
        }
        let web = web(json!({}));
        let c = &web.spread[0];
        let p = world.add_pod(pod("old", Owner::None, web.clone(), Vec::new()));
        world.bind(p, 0);
        world.start_terminating(p);
        let index = world.pod_groups().index("zone", world.nodes());
        let z0 = index.of_node(0).expect("zoned") as usize;
        let census = SpreadCensus::default();
        assert_eq!(
            domain_counts(&world, "ns", c, &index, &census.uncounted(&world))[z0],
            0
        );
        assert_eq!(
            domain_counts(&world, "ns", c, &index, &[])[z0],
            1,
            "control"
        );
    }
}
