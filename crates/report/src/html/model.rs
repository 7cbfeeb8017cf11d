//! What the timeline draws, derived from a report once: each node's lane
//! (its states, the pods it ran, the faults and the facts of failing
//! assertions on it), grouped by pool in display order, with the drill-wide
//! steps, faults, API outages and RTO spans.

use std::collections::{BTreeMap, BTreeSet};

use super::ms;
use super::style::{CONTROL_PLANE_COLOUR, POOL_COLOURS, UNKNOWN_COLOUR};
use crate::budget;
use crate::{DrillReport, Verdict};
use drillbench_model::topology::CONTROL_PLANE_POOL;
use drillbench_observe::EventKind;

/// The state of a node lane over one span of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeState {
    Booting,
    Ready,
    NotReady,
    Cordoned,
    Deleted,
}

impl NodeState {
    pub(super) fn class(self) -> &'static str {
        match self {
            NodeState::Booting => "st-booting",
            NodeState::Ready => "st-ready",
            NodeState::NotReady => "st-notready",
            NodeState::Cordoned => "st-cordoned",
            NodeState::Deleted => "st-deleted",
        }
    }

    pub(super) fn word(self) -> &'static str {
        match self {
            NodeState::Booting => "booting",
            NodeState::Ready => "Ready",
            NodeState::NotReady => "NotReady",
            NodeState::Cordoned => "cordoned",
            NodeState::Deleted => "deleted",
        }
    }
}

/// One pod's stay on one node.
#[derive(Debug, Clone)]
pub(super) struct PodSpan {
    pub(super) pod: String,
    pub(super) from: u64,
    pub(super) to: u64,
    /// When it became Ready on this node, if it did: before that it was
    /// only scheduled.
    pub(super) ready: Option<u64>,
    pub(super) highlighted: bool,
}

/// A node lane: what the timeline says about one node.
#[derive(Debug, Default)]
pub(super) struct Lane {
    pub(super) pool: Option<String>,
    pub(super) first_seen: u64,
    pub(super) static_index: Option<usize>,
    pub(super) states: Vec<(u64, u64, NodeState)>,
    pub(super) pods: Vec<PodSpan>,
    pub(super) faults: Vec<(u64, String)>,
    /// The autoscaler's own actions on this node (scale-down).
    pub(super) scaled: Vec<(u64, String)>,
    /// Facts of failing assertions about this node that no pod bar shows.
    pub(super) evidence: Vec<(u64, String)>,
}

/// A pool's lanes, in display order.
pub(super) struct PoolGroup {
    pub(super) name: String,
    pub(super) autoscaled: bool,
    pub(super) colour: &'static str,
    pub(super) lanes: Vec<(String, Lane)>,
    /// Lanes of the pool left out to stay within [`budget::HTML_LANES`].
    pub(super) hidden_lanes: usize,
    /// Pod placements on those lanes.
    pub(super) hidden_pods: usize,
}

/// Everything the SVG draws, derived from the report once.
pub(super) struct Model {
    pub(super) end: u64,
    pub(super) pools: Vec<PoolGroup>,
    pub(super) api_down: Vec<(u64, u64)>,
    pub(super) has_api_events: bool,
    /// Injected faults: what the drill did to the cluster.
    pub(super) faults: Vec<(u64, String)>,
    /// The cluster autoscaler's actions: what the platform did itself.
    pub(super) autoscaler: Vec<(u64, String)>,
    pub(super) steps: Vec<(u64, String)>,
    pub(super) rto: Vec<RtoSpan>,
    /// Facts of failing assertions, in time order: when, the index of the
    /// assertion in the report (its row in the verdict table), what.
    pub(super) failures: Vec<(u64, usize, String)>,
    pub(super) highlighted: BTreeSet<String>,
}

/// A recovery span on the RTO row: from the first disruption to recovery,
/// or, when the RTO assertion failed with nothing measured, to the end.
pub(super) struct RtoSpan {
    pub(super) name: String,
    pub(super) from: u64,
    pub(super) to: u64,
    /// The RTO assertion failed.
    pub(super) failed: bool,
    /// No recovery was measured: the bar runs to the end of the drill.
    pub(super) open: bool,
}

pub(super) fn build_model(report: &DrillReport) -> Model {
    let topology = &report.topology;
    let end = report
        .timeline
        .iter()
        .map(|e| e.at_ms)
        .max()
        .unwrap_or(0)
        .max(report.duration_ms)
        .max(1);
    // Pods a failing assertion is about: drawn on their own, highlighted.
    let highlighted: BTreeSet<String> = report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Fail)
        .flat_map(|a| a.evidence.iter().filter_map(|e| e.pod.clone()))
        .collect();

    let mut lanes: BTreeMap<String, Lane> = BTreeMap::new();
    let static_names = topology.static_node_names();
    let static_pools = static_pools(report);
    for (i, name) in static_names.iter().enumerate() {
        let lane = lanes.entry(name.clone()).or_default();
        lane.static_index = Some(i);
        lane.pool = Some(static_pools.get(name).cloned().unwrap_or_default());
    }
    // Node lifecycle: (condition, cordoned, deleted) folded into one state.
    #[derive(Clone, Copy)]
    struct Cond {
        booting: bool,
        ready: bool,
        cordoned: bool,
        deleted: bool,
        since: u64,
    }
    let initial = Cond {
        booting: false,
        ready: true,
        cordoned: false,
        deleted: false,
        since: 0,
    };
    let mut conds: BTreeMap<String, Cond> =
        static_names.iter().map(|n| (n.clone(), initial)).collect();
    let mut open_pods: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut api_down = Vec::new();
    let mut api_down_since: Option<u64> = None;
    let mut has_api_events = false;
    let mut faults = Vec::new();
    let mut autoscaler = Vec::new();
    let mut pod_ready: BTreeMap<String, u64> = BTreeMap::new();
    let mut steps = Vec::new();

    let state_of = |c: &Cond| {
        if c.deleted {
            NodeState::Deleted
        } else if !c.ready && !c.booting {
            NodeState::NotReady
        } else if c.cordoned {
            NodeState::Cordoned
        } else if c.booting {
            NodeState::Booting
        } else {
            NodeState::Ready
        }
    };

    for event in &report.timeline {
        let at = event.at_ms;
        let node = event
            .node
            .clone()
            .or_else(|| (event.object.kind == "Node").then(|| event.object.name.clone()));
        if let Some(node) = &node {
            let lane = lanes.entry(node.clone()).or_insert_with(|| Lane {
                first_seen: at,
                ..Lane::default()
            });
            if lane.pool.is_none() {
                lane.pool = event.pool.clone();
            }
        }
        let is_node_event = matches!(
            event.kind,
            EventKind::NodeAdded
                | EventKind::NodeReady
                | EventKind::NodeNotReady
                | EventKind::NodeCordoned
                | EventKind::NodeUncordoned
                | EventKind::NodeDeleted
        );
        if is_node_event && let Some(node) = &node {
            let before = conds.get(node).copied();
            let mut c = before.unwrap_or(Cond {
                booting: true,
                ready: false,
                cordoned: false,
                deleted: false,
                since: at,
            });
            match event.kind {
                EventKind::NodeAdded => {
                    c.booting = true;
                    c.ready = false;
                    c.deleted = false;
                }
                EventKind::NodeReady => {
                    c.booting = false;
                    c.ready = true;
                }
                EventKind::NodeNotReady => {
                    c.booting = false;
                    c.ready = false;
                }
                EventKind::NodeCordoned => c.cordoned = true,
                EventKind::NodeUncordoned => c.cordoned = false,
                _ => c.deleted = true,
            }
            if let Some(b) = before {
                let (old, new) = (state_of(&b), state_of(&c));
                if old != new {
                    push_state(&mut lanes, node, b.since, at, old);
                    c.since = at;
                }
            }
            conds.insert(node.clone(), c);
        }
        let pod_key = || {
            if event.object.namespace.is_empty() {
                event.object.name.clone()
            } else {
                format!("{}/{}", event.object.namespace, event.object.name)
            }
        };
        match event.kind {
            EventKind::PodScheduled => {
                if let Some(node) = &node {
                    let pod = pod_key();
                    if let Some((old_node, from)) = open_pods.remove(&pod) {
                        close_pod(
                            &mut lanes,
                            &old_node,
                            &pod,
                            (from, at),
                            pod_ready.remove(&pod),
                            &highlighted,
                        );
                    }
                    open_pods.insert(pod, (node.clone(), at));
                }
            }
            EventKind::PodReady => {
                let pod = pod_key();
                if open_pods.contains_key(&pod) {
                    pod_ready.entry(pod).or_insert(at);
                }
            }
            EventKind::PodDeleted | EventKind::PodEvicted => {
                let pod = pod_key();
                if let Some((old_node, from)) = open_pods.remove(&pod) {
                    close_pod(
                        &mut lanes,
                        &old_node,
                        &pod,
                        (from, at),
                        pod_ready.remove(&pod),
                        &highlighted,
                    );
                }
            }
            // Pods cannot outlive their Node object (the pod garbage
            // collector removes them), even when a backend records no
            // PodDeleted; a bar past the deletion would mislead.
            EventKind::NodeDeleted => {
                if let Some(node) = &node {
                    let gone: Vec<String> = open_pods
                        .iter()
                        .filter(|(_, (n, _))| n == node)
                        .map(|(pod, _)| pod.clone())
                        .collect();
                    for pod in gone {
                        if let Some((_, from)) = open_pods.remove(&pod) {
                            close_pod(
                                &mut lanes,
                                node,
                                &pod,
                                (from, at),
                                pod_ready.remove(&pod),
                                &highlighted,
                            );
                        }
                    }
                }
            }
            EventKind::ApiUnavailable => {
                has_api_events = true;
                api_down_since.get_or_insert(at);
            }
            EventKind::ApiAvailable => {
                has_api_events = true;
                if let Some(from) = api_down_since.take() {
                    api_down.push((from, at));
                }
            }
            EventKind::FaultInjected => {
                faults.push((at, event.message.clone()));
                if let Some(node) = &node
                    && let Some(lane) = lanes.get_mut(node)
                {
                    lane.faults.push((at, event.message.clone()));
                }
            }
            // The autoscaler's actions are the platform's own, drawn apart
            // from what the drill injected.
            EventKind::ScaleUp | EventKind::ScaleDown => {
                let verb = if event.kind == EventKind::ScaleUp {
                    "scale-up"
                } else {
                    "scale-down"
                };
                let what = if event.message.starts_with(verb) {
                    event.message.clone()
                } else {
                    format!("{verb}: {}", event.message)
                };
                autoscaler.push((at, what));
                if event.kind == EventKind::ScaleDown
                    && let Some(node) = &node
                    && let Some(lane) = lanes.get_mut(node)
                {
                    lane.scaled.push((at, event.message.clone()));
                }
            }
            EventKind::StepStarted => steps.push((at, event.message.clone())),
            _ => {}
        }
    }
    if let Some(from) = api_down_since {
        api_down.push((from, end));
    }
    for (pod, (node, from)) in std::mem::take(&mut open_pods) {
        close_pod(
            &mut lanes,
            &node,
            &pod,
            (from, end),
            pod_ready.remove(&pod),
            &highlighted,
        );
    }
    for (node, c) in &conds {
        push_state(&mut lanes, node, c.since, end, state_of(c));
    }
    // A failing fact whose pod has no bar (the timeline never placed it)
    // still shows, as a dot on its node's lane at its time.
    let drawn: BTreeSet<String> = lanes
        .values()
        .flat_map(|l| l.pods.iter().map(|p| p.pod.clone()))
        .collect();
    for a in report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Fail)
    {
        for e in &a.evidence {
            let Some(node) = &e.node else { continue };
            if e.pod.as_ref().is_some_and(|p| drawn.contains(p)) {
                continue;
            }
            let lane = lanes.entry(node.clone()).or_insert_with(|| Lane {
                first_seen: e.at_ms,
                ..Lane::default()
            });
            let what = match &e.pod {
                Some(pod) => format!("{}: {pod}: {}", a.name, e.detail),
                None => format!("{}: {}", a.name, e.detail),
            };
            lane.evidence.push((e.at_ms, what));
        }
    }
    // A backend that records no readiness at all: every pod is drawn as
    // it always was, solid, rather than as never Ready.
    if !report
        .timeline
        .iter()
        .any(|e| e.kind == EventKind::PodReady)
    {
        for p in lanes.values_mut().flat_map(|l| l.pods.iter_mut()) {
            p.ready = Some(p.from);
        }
    }
    for (node, lane) in &mut lanes {
        if lane.pool.is_none() {
            lane.pool = pool_by_pattern(report, node);
        }
    }

    // RTO spans start at the first disruption, an injected fault or an
    // autoscaler scale-down: that is what an RTO measures from (see
    // `assert`).
    let scale_down_at = report
        .timeline
        .iter()
        .find(|e| e.kind == EventKind::ScaleDown)
        .map(|e| e.at_ms);
    let fault_at = faults
        .first()
        .map(|(at, _)| *at)
        .into_iter()
        .chain(scale_down_at)
        .min()
        .unwrap_or(0);
    let failed_rto: BTreeSet<&str> = report
        .assertions
        .iter()
        .filter(|a| a.kind == "rto" && a.verdict == Verdict::Fail)
        .map(|a| a.name.as_str())
        .collect();
    let mut rto: Vec<RtoSpan> = report
        .figures
        .iter()
        .filter(|(name, f)| name.starts_with("rto") && f.unit == "ms")
        .map(|(name, f)| RtoSpan {
            failed: failed_rto.contains(name.trim_start_matches("rto.")),
            name: name.clone(),
            from: fault_at,
            to: fault_at.saturating_add(ms(f.value)),
            open: false,
        })
        .collect();
    // A failed RTO with no figure never recovered: its bar runs to the end.
    for name in &failed_rto {
        if !report.figures.contains_key(&format!("rto.{name}")) {
            rto.push(RtoSpan {
                name: format!("rto.{name}"),
                from: fault_at,
                to: end,
                failed: true,
                open: true,
            });
        }
    }
    let mut failures: Vec<(u64, usize, String)> = report
        .assertions
        .iter()
        .enumerate()
        .filter(|(_, a)| a.verdict == Verdict::Fail)
        .flat_map(|(i, a)| {
            let facts = a.evidence.iter().map(move |e| {
                let what = match (&e.pod, &e.node) {
                    (Some(pod), Some(node)) => format!("{}: {pod} on {node}: {}", a.name, e.detail),
                    (Some(pod), None) => format!("{}: {pod}: {}", a.name, e.detail),
                    (None, Some(node)) => format!("{}: {node}: {}", a.name, e.detail),
                    (None, None) => format!("{}: {}", a.name, e.detail),
                };
                (e.at_ms, i, what)
            });
            // An assertion that failed without facts still gets a marker,
            // at the end, where it was judged.
            let judged = a
                .evidence
                .is_empty()
                .then(|| (end, i, format!("{}: {}", a.name, a.summary)));
            facts.chain(judged)
        })
        .collect();
    failures.sort_by_key(|(at, i, _)| (*at, *i));

    let mut groups: Vec<PoolGroup> = Vec::new();
    let mut order: Vec<(String, bool, &'static str)> =
        vec![(CONTROL_PLANE_POOL.to_owned(), false, CONTROL_PLANE_COLOUR)];
    for (i, pool) in topology.pools.iter().enumerate() {
        order.push((
            pool.name.clone(),
            pool.is_autoscaled(),
            POOL_COLOURS[i % POOL_COLOURS.len()],
        ));
    }
    let mut extra: BTreeSet<String> = BTreeSet::new();
    for lane in lanes.values() {
        match &lane.pool {
            Some(p) if order.iter().any(|(n, ..)| n == p) => {}
            Some(p) => {
                extra.insert(p.clone());
            }
            None => {}
        }
    }
    for p in extra {
        let i = order.len() - 1;
        order.push((p, false, POOL_COLOURS[i % POOL_COLOURS.len()]));
    }
    order.push(("(unknown pool)".to_owned(), false, UNKNOWN_COLOUR));
    for (name, autoscaled, colour) in order {
        groups.push(PoolGroup {
            name,
            autoscaled,
            colour,
            lanes: Vec::new(),
            hidden_lanes: 0,
            hidden_pods: 0,
        });
    }
    let last = groups.len() - 1;
    for (node, lane) in lanes {
        let idx = lane
            .pool
            .as_ref()
            .and_then(|p| groups.iter().position(|g| &g.name == p))
            .unwrap_or(last);
        groups[idx].lanes.push((node, lane));
    }
    for g in &mut groups {
        g.lanes.sort_by(|(an, a), (bn, b)| {
            (a.static_index.is_none(), a.static_index, a.first_seen, an).cmp(&(
                b.static_index.is_none(),
                b.static_index,
                b.first_seen,
                bn,
            ))
        });
    }
    groups.retain(|g| !g.lanes.is_empty());
    keep_within_lane_budget(&mut groups, budget::HTML_LANES);
    Model {
        end,
        pools: groups,
        api_down,
        has_api_events,
        faults,
        autoscaler,
        steps,
        rto,
        failures,
        highlighted,
    }
}

impl Lane {
    /// Whether the lane shows what a reader of a failure came for.
    pub(super) fn is_notable(&self) -> bool {
        !self.faults.is_empty()
            || !self.scaled.is_empty()
            || !self.evidence.is_empty()
            || self.pods.iter().any(|p| p.highlighted)
    }
}

/// Leaves at most `budget` lanes over all pools: turn by turn, each pool
/// keeps one more, its notable lanes first, so every pool shows some and
/// none crowds the others out; the lanes kept stay in display order and
/// the rest are counted on their pool.
fn keep_within_lane_budget(groups: &mut [PoolGroup], budget: usize) {
    let total: usize = groups.iter().map(|g| g.lanes.len()).sum();
    if total <= budget {
        return;
    }
    let queues: Vec<Vec<usize>> = groups
        .iter()
        .map(|g| {
            let (notable, plain): (Vec<usize>, Vec<usize>) =
                (0..g.lanes.len()).partition(|&i| g.lanes[i].1.is_notable());
            notable.into_iter().chain(plain).collect()
        })
        .collect();
    let mut taken = vec![0usize; groups.len()];
    let mut left = budget;
    while left > 0 {
        let mut progressed = false;
        for (g, queue) in queues.iter().enumerate() {
            if left > 0 && taken[g] < queue.len() {
                taken[g] += 1;
                left -= 1;
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    for ((g, queue), taken) in groups.iter_mut().zip(&queues).zip(taken) {
        let keep: BTreeSet<usize> = queue[..taken].iter().copied().collect();
        let lanes = std::mem::take(&mut g.lanes);
        for (i, lane) in lanes.into_iter().enumerate() {
            if keep.contains(&i) {
                g.lanes.push(lane);
            } else {
                g.hidden_lanes += 1;
                g.hidden_pods += lane.1.pods.len();
            }
        }
    }
}

/// The pool whose name pattern (`autoscale-cx43-{hex12}`) fits a node no
/// event assigned to a pool.
fn pool_by_pattern(report: &DrillReport, node: &str) -> Option<String> {
    report
        .topology
        .pools
        .iter()
        .find(|p| p.name_pattern.matches(node))
        .map(|p| p.name.clone())
}

/// The pool of every node known before the drill runs: the control planes,
/// then each pool's static names (the first pool to name a node has it).
fn static_pools(report: &DrillReport) -> BTreeMap<String, String> {
    let mut pools: BTreeMap<String, String> = BTreeMap::new();
    for name in report.topology.control_planes.names() {
        pools.insert(name, CONTROL_PLANE_POOL.to_owned());
    }
    for pool in &report.topology.pools {
        for name in pool.static_names() {
            pools.entry(name).or_insert_with(|| pool.name.clone());
        }
    }
    pools
}

fn push_state(
    lanes: &mut BTreeMap<String, Lane>,
    node: &str,
    from: u64,
    to: u64,
    state: NodeState,
) {
    // A state that lasted no time (a node added and Ready at the same
    // instant) is not worth a pixel.
    if from == to && state != NodeState::Deleted {
        return;
    }
    if let Some(lane) = lanes.get_mut(node) {
        // Merge a state that repeats, so a flapping report stays small.
        if let Some(last) = lane.states.last_mut()
            && last.2 == state
            && last.1 == from
        {
            last.1 = to;
            return;
        }
        lane.states.push((from, to, state));
    }
}

fn close_pod(
    lanes: &mut BTreeMap<String, Lane>,
    node: &str,
    pod: &str,
    (from, to): (u64, u64),
    ready: Option<u64>,
    highlighted: &BTreeSet<String>,
) {
    if let Some(lane) = lanes.get_mut(node) {
        lane.pods.push(PodSpan {
            pod: pod.to_owned(),
            from,
            to,
            ready: ready.filter(|&r| r <= to),
            highlighted: highlighted.contains(pod),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_observe::{Event, ObjectRef};

    /// The passing fixture's topology (control planes, a static pool of
    /// three, two autoscaled pools) with a timeline of the test's own.
    fn report(timeline: Vec<Event>) -> DrillReport {
        let mut r: DrillReport = serde_json::from_str(include_str!(
            "../../../../tests/fixtures/reports/passing.json"
        ))
        .expect("fixture parses");
        r.duration_ms = 1_000;
        r.timeline = timeline;
        r
    }

    fn event(at_ms: u64, kind: EventKind, object: (&str, &str), node: Option<&str>) -> Event {
        Event {
            at_ms,
            kind,
            object: ObjectRef {
                kind: object.0.to_owned(),
                namespace: if object.0 == "Pod" { "ns" } else { "" }.to_owned(),
                name: object.1.to_owned(),
            },
            node: node.map(str::to_owned),
            pool: None,
            message: format!("{kind:?}"),
        }
    }

    fn lane<'m>(m: &'m Model, node: &str) -> &'m Lane {
        m.pools
            .iter()
            .flat_map(|g| g.lanes.iter())
            .find(|(n, _)| n == node)
            .map(|(_, l)| l)
            .unwrap_or_else(|| panic!("no lane for {node}"))
    }

    #[test]
    fn a_rescheduled_pod_leaves_one_bar_per_node() {
        let m = build_model(&report(vec![
            event(
                10,
                EventKind::PodScheduled,
                ("Pod", "web"),
                Some("prod-worker-1"),
            ),
            event(
                50,
                EventKind::PodScheduled,
                ("Pod", "web"),
                Some("prod-worker-2"),
            ),
            event(80, EventKind::PodDeleted, ("Pod", "web"), None),
            event(
                90,
                EventKind::PodScheduled,
                ("Pod", "db"),
                Some("prod-worker-3"),
            ),
        ]));
        let spans = |node| {
            lane(&m, node)
                .pods
                .iter()
                .map(|p| (p.pod.clone(), p.from, p.to))
                .collect::<Vec<_>>()
        };
        assert_eq!(spans("prod-worker-1"), [("ns/web".to_owned(), 10, 50)]);
        assert_eq!(spans("prod-worker-2"), [("ns/web".to_owned(), 50, 80)]);
        // Still running at the end: the bar runs to the end of the drill.
        assert_eq!(spans("prod-worker-3"), [("ns/db".to_owned(), 90, 1_000)]);
    }

    #[test]
    fn a_new_node_boots_then_serves_then_is_deleted_with_its_pods() {
        let node = "autoscale-cx43-0123456789ab";
        let m = build_model(&report(vec![
            event(100, EventKind::NodeAdded, ("Node", node), None),
            event(200, EventKind::NodeReady, ("Node", node), None),
            event(250, EventKind::PodScheduled, ("Pod", "web"), Some(node)),
            event(300, EventKind::NodeDeleted, ("Node", node), None),
        ]));
        let l = lane(&m, node);
        assert_eq!(
            l.states,
            [
                (100, 200, NodeState::Booting),
                (200, 300, NodeState::Ready),
                (300, 1_000, NodeState::Deleted),
            ]
        );
        assert_eq!(l.pods.len(), 1);
        assert_eq!((l.pods[0].from, l.pods[0].to), (250, 300));
        // No event named its pool: the name pattern finds it.
        assert_eq!(l.pool.as_deref(), Some("autoscale-cx43"));
    }

    #[test]
    fn pools_come_in_topology_order_after_the_control_planes() {
        let m = build_model(&report(vec![event(
            5,
            EventKind::NodeReady,
            ("Node", "stray"),
            None,
        )]));
        let names: Vec<&str> = m.pools.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, [CONTROL_PLANE_POOL, "baseline", "(unknown pool)"]);
        assert_eq!(m.pools[0].colour, CONTROL_PLANE_COLOUR);
        assert_eq!(m.pools[1].colour, POOL_COLOURS[0]);
        let baseline: Vec<&str> = m.pools[1].lanes.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            baseline,
            ["prod-worker-1", "prod-worker-2", "prod-worker-3"]
        );
    }

    #[test]
    fn an_outage_still_open_at_the_end_runs_to_the_end() {
        let api = ("Endpoint", "api");
        let m = build_model(&report(vec![
            event(100, EventKind::ApiUnavailable, api, None),
            event(150, EventKind::ApiUnavailable, api, None),
            event(200, EventKind::ApiAvailable, api, None),
            event(700, EventKind::ApiUnavailable, api, None),
        ]));
        assert!(m.has_api_events);
        assert_eq!(m.api_down, [(100, 200), (700, 1_000)]);
    }

    #[test]
    fn a_repeated_state_extends_the_last_span() {
        let mut lanes = BTreeMap::from([("n".to_owned(), Lane::default())]);
        push_state(&mut lanes, "n", 0, 10, NodeState::Ready);
        push_state(&mut lanes, "n", 10, 20, NodeState::Ready);
        push_state(&mut lanes, "n", 20, 20, NodeState::Cordoned);
        push_state(&mut lanes, "n", 20, 30, NodeState::NotReady);
        assert_eq!(
            lanes["n"].states,
            [(0, 20, NodeState::Ready), (20, 30, NodeState::NotReady)]
        );
    }
}
