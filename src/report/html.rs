//! One self-contained HTML file per drill: the verdicts with their evidence,
//! then an SVG timeline with one lane per node, grouped by pool.
//!
//! Self-contained means the file is an artifact people open from a CI job
//! weeks later, offline: no scripts, fonts, styles or images are fetched,
//! the CSS is inline, and nothing needs JavaScript. The markup is also
//! well-formed XML (XHTML-compatible), so tests read it with an XML parser.
//!
//! Readability at scale is a design rule, not a hope: a pool's lanes fold
//! into a `<details>` element, and the pods of a node are drawn one by one
//! only up to [`POD_FOLD_THRESHOLD`]; beyond it they collapse into a density
//! bar of at most [`DENSITY_BUCKETS`] rectangles with a count. The pods a
//! failing assertion names are always drawn on their own, highlighted.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use super::{DrillReport, Outcome, Verdict, format_ms};
use crate::observe::EventKind;
use crate::topology::CONTROL_PLANE_POOL;

/// Most pods drawn as individual bars on one node lane; a node that ran
/// more is drawn as a density bar. Six 2-pixel rows fill the pod band of a
/// lane; more would be thinner than a pixel and unreadable anyway.
pub const POD_FOLD_THRESHOLD: usize = 6;

/// Time buckets of a folded node's density bar: about one per 20 pixels of
/// the plot, fine enough to see a drain, coarse enough to stay bounded.
pub const DENSITY_BUCKETS: usize = 60;

/// A pool with more lanes than this starts folded.
pub const POOL_OPEN_LANES: usize = 30;

const LABEL_W: f64 = 230.0;
const PLOT_W: f64 = 1100.0;
const RIGHT_W: f64 = 130.0;
const LANE_H: f64 = 22.0;
const STATE_H: f64 = 7.0;
const EVIDENCE_OPEN: usize = 5;

/// Renders a report as one self-contained HTML document.
pub fn render(report: &DrillReport) -> String {
    let mut h = String::new();
    let failed = report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Fail)
        .count();
    let total = report.assertions.len();
    let (mark, headline) = match report.outcome {
        Outcome::Passed => (
            "pass",
            format!("passed: {total} of {total} assertions held"),
        ),
        Outcome::Failed => (
            "fail",
            format!("failed: {failed} of {total} assertions failed"),
        ),
        Outcome::Aborted => (
            "fail",
            format!("aborted: {failed} of {total} assertions failed"),
        ),
    };
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>\
         <meta name=\"viewport\" content=\"width=device-width\"/>\
         <title>{} {}</title><style>{CSS}</style></head>\n<body>\n",
        esc(&report.drill.name),
        esc(&headline)
    );
    let _ = writeln!(
        h,
        "<header><h1 class=\"{mark}\"><code>{}</code> {}</h1><p class=\"meta\">{}</p>\
         <p class=\"meta\">backend <code>{}</code> · seed <code>{}</code> · {} of drill time · \
         bench {} · drill <code>{}</code></p></header>",
        esc(&report.drill.name),
        esc(&headline),
        esc(&report.drill.description),
        esc(&report.backend),
        report.seed,
        format_ms(report.duration_ms),
        esc(&report.bench_version),
        esc(&report.drill.content_hash),
    );
    verdicts(&mut h, report);
    timeline(&mut h, report);
    figures(&mut h, report);
    workloads(&mut h, report);
    if !report.not_simulated.is_empty() {
        let _ = write!(
            h,
            "<section id=\"not-simulated\"><h2>Not simulated ({})</h2><p>",
            report.not_simulated.len()
        );
        let names: Vec<String> = report
            .not_simulated
            .iter()
            .map(|o| format!("<code>{}</code>", esc(&o.to_string())))
            .collect();
        let _ = writeln!(h, "{}</p></section>", names.join(", "));
    }
    let _ = writeln!(
        h,
        "<section id=\"replay\"><h2>Replay</h2><pre>bench run {} --backend {} --seed {}</pre></section>",
        esc(&report.drill.file),
        esc(&report.backend),
        report.seed
    );
    h.push_str("</body></html>\n");
    h
}

fn verdicts(h: &mut String, report: &DrillReport) {
    h.push_str(
        "<section id=\"verdicts\"><h2>Verdicts</h2><table class=\"verdicts\"><thead><tr>\
         <th>Verdict</th><th>Assertion</th><th>Bound</th><th>Measured</th><th>Evidence</th>\
         </tr></thead><tbody>\n",
    );
    for a in &report.assertions {
        let (class, word) = match a.verdict {
            Verdict::Pass => ("pass", "pass"),
            Verdict::Fail => ("fail", "FAIL"),
        };
        let _ = write!(
            h,
            "<tr class=\"{class}\"><td class=\"verdict\">{word}</td><td><b>{}</b><br/><span class=\"kind\">{}</span></td>\
             <td><code>{}</code></td><td>{}</td><td><p>{}</p>",
            esc(&a.name),
            esc(&a.kind),
            esc(&a.bound),
            esc(&a.measured),
            esc(&a.summary)
        );
        if !a.evidence.is_empty() {
            let (shown, rest) = a.evidence.split_at(a.evidence.len().min(EVIDENCE_OPEN));
            evidence_list(h, shown);
            if !rest.is_empty() {
                let _ = write!(h, "<details><summary>{} more facts</summary>", rest.len());
                evidence_list(h, rest);
                h.push_str("</details>");
            }
        }
        h.push_str("</td></tr>\n");
    }
    h.push_str("</tbody></table></section>\n");
}

fn evidence_list(h: &mut String, evidence: &[super::Evidence]) {
    h.push_str("<ul class=\"evidence\">");
    for e in evidence {
        let _ = write!(h, "<li><span class=\"at\">{}</span>", format_ms(e.at_ms));
        if let Some(pod) = &e.pod {
            let _ = write!(h, " pod <code>{}</code>", esc(pod));
        }
        if let Some(node) = &e.node {
            let _ = write!(h, " node <code>{}</code>", esc(node));
        }
        let _ = write!(
            h,
            ": {} <span class=\"rule\">[rule: {}]</span>",
            esc(&e.detail),
            esc(&e.rule)
        );
        if !e.labels.is_empty() {
            let labels: Vec<String> = e
                .labels
                .iter()
                .map(|(k, v)| format!("{}={}", esc(k), esc(v)))
                .collect();
            let _ = write!(
                h,
                " <span class=\"labels\">labels: {}</span>",
                labels.join(", ")
            );
        }
        h.push_str("</li>");
    }
    h.push_str("</ul>");
}

fn figures(h: &mut String, report: &DrillReport) {
    if report.figures.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"figures\"><h2>Figures</h2><table class=\"figures\"><thead><tr><th>Figure</th><th>Value</th></tr></thead><tbody>\n",
    );
    for (name, figure) in &report.figures {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}</td></tr>",
            esc(name),
            esc(&figure_value(figure.value, &figure.unit))
        );
    }
    h.push_str("</tbody></table></section>\n");
}

fn workloads(h: &mut String, report: &DrillReport) {
    if report.workloads.is_empty() {
        return;
    }
    h.push_str(
        "<section id=\"workloads\"><h2>Workloads</h2><table class=\"figures\"><thead><tr>\
         <th>Workload</th><th>Lowest ready</th><th>At</th><th>Time whole</th></tr></thead><tbody>\n",
    );
    for w in &report.workloads {
        let _ = writeln!(
            h,
            "<tr><td><code>{}</code></td><td>{}/{}</td><td>{}</td><td>{:.4}</td></tr>",
            esc(&w.workload),
            w.lowest_ready,
            w.desired,
            format_ms(w.lowest_at_ms),
            w.whole_ratio
        );
    }
    h.push_str("</tbody></table></section>\n");
}

/// A figure as people read it: durations as `4m12s`, ratios to four places.
pub(crate) fn figure_value(value: f64, unit: &str) -> String {
    match unit {
        "ms" => format_ms(ms(value)),
        "ratio" => format!("{value:.4}"),
        _ => format!("{value} {unit}"),
    }
}

/// A figure's milliseconds as an integer; negative and non-finite values
/// (which no backend should record) become zero rather than a panic.
fn ms(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        value as u64
    } else {
        0
    }
}

/// The state of a node lane over one span of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NodeState {
    Booting,
    Ready,
    NotReady,
    Cordoned,
    Deleted,
}

impl NodeState {
    fn class(self) -> &'static str {
        match self {
            NodeState::Booting => "st-booting",
            NodeState::Ready => "st-ready",
            NodeState::NotReady => "st-notready",
            NodeState::Cordoned => "st-cordoned",
            NodeState::Deleted => "st-deleted",
        }
    }

    fn word(self) -> &'static str {
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
struct PodSpan {
    pod: String,
    from: u64,
    to: u64,
    highlighted: bool,
}

/// A node lane: what the timeline says about one node.
#[derive(Debug, Default)]
struct Lane {
    pool: Option<String>,
    first_seen: u64,
    static_index: Option<usize>,
    states: Vec<(u64, u64, NodeState)>,
    pods: Vec<PodSpan>,
    faults: Vec<(u64, String)>,
    /// Facts of failing assertions about this node that no pod bar shows.
    evidence: Vec<(u64, String)>,
}

/// A pool's lanes, in display order.
struct PoolGroup {
    name: String,
    autoscaled: bool,
    colour: &'static str,
    lanes: Vec<(String, Lane)>,
}

/// Everything the SVG draws, derived from the report once.
struct Model {
    end: u64,
    pools: Vec<PoolGroup>,
    api_down: Vec<(u64, u64)>,
    has_api_events: bool,
    faults: Vec<(u64, String)>,
    steps: Vec<(u64, String)>,
    rto: Vec<(String, u64, u64)>,
    highlighted: BTreeSet<String>,
}

/// Pool colours: blues and greens, kept clear of the red, amber and grey
/// that mean NotReady, cordoned and booting.
const POOL_COLOURS: [&str; 6] = [
    "#2563eb", "#0d9488", "#65a30d", "#0891b2", "#4f46e5", "#a16207",
];
const CONTROL_PLANE_COLOUR: &str = "#6d28d9";
const UNKNOWN_COLOUR: &str = "#6b7280";

fn build_model(report: &DrillReport) -> Model {
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
    for (i, name) in static_names.iter().enumerate() {
        let lane = lanes.entry(name.clone()).or_default();
        lane.static_index = Some(i);
        lane.pool = Some(pool_of_static(report, name));
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
                        close_pod(&mut lanes, &old_node, &pod, from, at, &highlighted);
                    }
                    open_pods.insert(pod, (node.clone(), at));
                }
            }
            EventKind::PodDeleted | EventKind::PodEvicted => {
                let pod = pod_key();
                if let Some((old_node, from)) = open_pods.remove(&pod) {
                    close_pod(&mut lanes, &old_node, &pod, from, at, &highlighted);
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
                            close_pod(&mut lanes, node, &pod, from, at, &highlighted);
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
            // An autoscaler scale-down disrupts like an injected fault, and
            // recovery is measured from it (see `assert`).
            EventKind::FaultInjected | EventKind::ScaleDown => {
                faults.push((at, event.message.clone()));
                if let Some(node) = &node
                    && let Some(lane) = lanes.get_mut(node)
                {
                    lane.faults.push((at, event.message.clone()));
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
        close_pod(&mut lanes, &node, &pod, from, end, &highlighted);
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
    for (node, lane) in &mut lanes {
        if lane.pool.is_none() {
            lane.pool = pool_by_pattern(report, node);
        }
    }

    // RTO spans start at the first fault: that is what an RTO measures from.
    let fault_at = faults.first().map(|(at, _)| *at).unwrap_or(0);
    let rto = report
        .figures
        .iter()
        .filter(|(name, f)| name.starts_with("rto") && f.unit == "ms")
        .map(|(name, f)| (name.clone(), fault_at, fault_at.saturating_add(ms(f.value))))
        .collect();

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
    Model {
        end,
        pools: groups,
        api_down,
        has_api_events,
        faults,
        steps,
        rto,
        highlighted,
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

fn pool_of_static(report: &DrillReport, node: &str) -> String {
    if report
        .topology
        .control_planes
        .names()
        .iter()
        .any(|n| n == node)
    {
        return CONTROL_PLANE_POOL.to_owned();
    }
    report
        .topology
        .pools
        .iter()
        .find(|p| p.static_names().iter().any(|n| n == node))
        .map(|p| p.name.clone())
        .unwrap_or_default()
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
    from: u64,
    to: u64,
    highlighted: &BTreeSet<String>,
) {
    if let Some(lane) = lanes.get_mut(node) {
        lane.pods.push(PodSpan {
            pod: pod.to_owned(),
            from,
            to,
            highlighted: highlighted.contains(pod),
        });
    }
}

fn x(t: u64, end: u64) -> f64 {
    LABEL_W + (t.min(end) as f64 / end as f64) * PLOT_W
}

fn width(from: u64, to: u64, end: u64) -> f64 {
    (x(to, end) - x(from, end)).max(1.0)
}

fn svg_open(h: &mut String, height: f64, class: &str, label: &str) {
    let w = LABEL_W + PLOT_W + RIGHT_W;
    let _ = write!(
        h,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{class}\" width=\"{w:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {w:.0} {height:.0}\" role=\"img\" aria-label=\"{}\">",
        esc(label)
    );
}

/// Rough width of one character of an 11px label, for laying labels out
/// without measuring text.
const CHAR_W: f64 = 6.5;

/// Rows for labels that start at `x` and run `chars` characters to the
/// right: each goes into the first row whose previous label has ended, so
/// no two labels of a row overlap. Returns each label's row and the number
/// of rows (at least one, so an empty strip keeps its height).
fn label_rows(labels: impl IntoIterator<Item = (f64, usize)>) -> (Vec<usize>, usize) {
    let mut row_ends: Vec<f64> = Vec::new();
    let rows = labels
        .into_iter()
        .map(|(x, chars)| {
            let end = x + 3.0 + chars as f64 * CHAR_W;
            match row_ends.iter().position(|&e| e <= x) {
                Some(row) => {
                    row_ends[row] = end;
                    row
                }
                None => {
                    row_ends.push(end);
                    row_ends.len() - 1
                }
            }
        })
        .collect();
    (rows, row_ends.len().max(1))
}

/// A tick step that gives at most about ten ticks.
fn tick_step(end: u64) -> u64 {
    const STEPS: [u64; 14] = [
        1_000, 5_000, 10_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000,
        3_600_000, 7_200_000, 21_600_000, 43_200_000,
    ];
    STEPS
        .iter()
        .copied()
        .find(|s| end / s <= 10)
        .unwrap_or(end.div_ceil(10).max(1))
}

fn timeline(h: &mut String, report: &DrillReport) {
    let m = build_model(report);
    let lanes: usize = m.pools.iter().map(|g| g.lanes.len()).sum();
    let pods: usize = m
        .pools
        .iter()
        .flat_map(|g| g.lanes.iter())
        .map(|(_, l)| l.pods.len())
        .sum();
    let _ = writeln!(
        h,
        "<section id=\"timeline\"><h2>Timeline</h2><p class=\"meta\">{} in {} · \
         {} · {} · {} of drill time · {} named by failing assertions. Nodes running more than \
         {POD_FOLD_THRESHOLD} pods show a density bar with the most pods at once; pods named \
         by a failing assertion are drawn on their own in red.</p>",
        plural(lanes, "node"),
        plural(m.pools.len(), "pool"),
        plural(pods, "pod placement"),
        plural(m.faults.len(), "fault"),
        format_ms(m.end),
        plural(m.highlighted.len(), "pod")
    );
    legend(h, &m);
    overview(h, &m);
    for g in &m.pools {
        pool_lanes(h, &m, g);
    }
    h.push_str("</section>\n");
}

fn legend(h: &mut String, m: &Model) {
    h.push_str("<p class=\"legend\">");
    for g in &m.pools {
        let kind = if g.name == CONTROL_PLANE_POOL {
            "control planes"
        } else if g.autoscaled {
            "autoscaler pool"
        } else {
            "static pool"
        };
        let _ = write!(
            h,
            "<span class=\"key\"><span class=\"sw\" style=\"background:{}\"></span>{} ({kind})</span>",
            g.colour,
            esc(&g.name)
        );
    }
    h.push_str(
        "<span class=\"key\"><span class=\"sw st-notready-sw\"></span>NotReady</span>\
         <span class=\"key\"><span class=\"sw st-cordoned-sw\"></span>cordoned</span>\
         <span class=\"key\"><span class=\"sw st-booting-sw\"></span>booting</span>\
         <span class=\"key\"><span class=\"sw hl-sw\"></span>named by a failing assertion (bar: its pod; dot: a fact the timeline has no pod for)</span>\
         <span class=\"key\"><span class=\"sw fault-sw\"></span>fault</span></p>\n",
    );
}

/// The strip above the lanes: time axis, steps, faults, API availability
/// and the RTO spans.
fn overview(h: &mut String, m: &Model) {
    let step_labels: Vec<String> = m.steps.iter().map(|(_, s)| truncate(s, 40)).collect();
    let (step_row, step_rows) = label_rows(
        m.steps
            .iter()
            .zip(&step_labels)
            .map(|((at, _), label)| (x(*at, m.end), label.chars().count())),
    );
    let axis_y = 14.0;
    let steps_y = 24.0;
    let faults_y = steps_y + step_rows as f64 * 13.0 + 4.0;
    let api_y = faults_y + 20.0;
    let rto_y = api_y + 22.0;
    let height = rto_y + m.rto.len().max(1) as f64 * 18.0 + 6.0;
    svg_open(
        h,
        height,
        "overview",
        "time axis, steps, faults, API availability, RTO",
    );
    // Axis.
    h.push_str("<g class=\"axis\">");
    let step = tick_step(m.end);
    let mut t = 0;
    while t <= m.end {
        let _ = write!(
            h,
            "<line x1=\"{0:.1}\" y1=\"{1:.1}\" x2=\"{0:.1}\" y2=\"{2:.1}\"/><text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">{4}</text>",
            x(t, m.end),
            axis_y + 2.0,
            height,
            axis_y - 2.0,
            format_ms(t)
        );
        let Some(next) = t.checked_add(step) else {
            break;
        };
        t = next;
    }
    h.push_str("</g>\n");
    // Steps.
    h.push_str("<g class=\"steps\">");
    let _ = write!(
        h,
        "<text class=\"lbl\" x=\"4\" y=\"{:.1}\">steps</text>",
        steps_y + 10.0
    );
    for (i, (at, message)) in m.steps.iter().enumerate() {
        let y = steps_y + step_row[i] as f64 * 13.0 + 10.0;
        let _ = write!(
            h,
            "<g class=\"step\"><title>{} step: {}</title><line x1=\"{2:.1}\" y1=\"{3:.1}\" x2=\"{2:.1}\" y2=\"{4:.1}\"/><text x=\"{5:.1}\" y=\"{3:.1}\">{6}</text></g>",
            format_ms(*at),
            esc(message),
            x(*at, m.end),
            y,
            height,
            x(*at, m.end) + 3.0,
            esc(&step_labels[i])
        );
    }
    h.push_str("</g>\n");
    // Faults.
    h.push_str("<g class=\"faults\">");
    let _ = write!(
        h,
        "<text class=\"lbl\" x=\"4\" y=\"{:.1}\">faults</text>",
        faults_y + 11.0
    );
    for (at, message) in &m.faults {
        let fx = x(*at, m.end);
        let _ = write!(
            h,
            "<g class=\"fault\"><title>{} fault: {}</title><line x1=\"{2:.1}\" y1=\"{3:.1}\" x2=\"{2:.1}\" y2=\"{4:.1}\"/>\
             <path d=\"M{5:.1} {3:.1} L{6:.1} {3:.1} L{2:.1} {7:.1} Z\"/><text x=\"{8:.1}\" y=\"{9:.1}\">{10}</text></g>",
            format_ms(*at),
            esc(message),
            fx,
            faults_y,
            height,
            fx - 5.0,
            fx + 5.0,
            faults_y + 8.0,
            fx + 7.0,
            faults_y + 11.0,
            esc(&truncate(message, 50))
        );
    }
    h.push_str("</g>\n");
    // API availability.
    let _ = write!(
        h,
        "<g class=\"api\"><text class=\"lbl\" x=\"4\" y=\"{:.1}\">API (stable endpoint)</text>",
        api_y + 11.0
    );
    if m.has_api_events {
        let _ = write!(
            h,
            "<rect class=\"api-up\" x=\"{:.1}\" y=\"{api_y:.1}\" width=\"{PLOT_W:.1}\" height=\"14\"/>",
            LABEL_W
        );
        for (from, to) in &m.api_down {
            let _ = write!(
                h,
                "<rect class=\"api-down\" x=\"{:.1}\" y=\"{api_y:.1}\" width=\"{:.1}\" height=\"14\"><title>API unavailable {} to {} ({})</title></rect>",
                x(*from, m.end),
                width(*from, *to, m.end),
                format_ms(*from),
                format_ms(*to),
                format_ms(to.saturating_sub(*from))
            );
        }
        let down: u64 = m
            .api_down
            .iter()
            .fold(0u64, |sum, (a, b)| sum.saturating_add(b.saturating_sub(*a)));
        let _ = write!(
            h,
            "<text class=\"side\" x=\"{:.1}\" y=\"{:.1}\">down {}</text>",
            LABEL_W + PLOT_W + 6.0,
            api_y + 11.0,
            format_ms(down)
        );
    } else {
        let _ = write!(
            h,
            "<text class=\"none\" x=\"{:.1}\" y=\"{:.1}\">no API probe events recorded</text>",
            LABEL_W,
            api_y + 11.0
        );
    }
    h.push_str("</g>\n");
    // RTO spans.
    let _ = write!(
        h,
        "<g class=\"rto\"><text class=\"lbl\" x=\"4\" y=\"{:.1}\">RTO (from the first fault)</text>",
        rto_y + 11.0
    );
    if m.rto.is_empty() {
        let _ = write!(
            h,
            "<text class=\"none\" x=\"{:.1}\" y=\"{:.1}\">no rto.* figures</text>",
            LABEL_W,
            rto_y + 11.0
        );
    }
    for (i, (name, from, to)) in m.rto.iter().enumerate() {
        let y = rto_y + i as f64 * 18.0;
        let _ = write!(
            h,
            "<g class=\"span\"><title>{0} = {1}</title><rect x=\"{2:.1}\" y=\"{3:.1}\" width=\"{4:.1}\" height=\"12\"/>\
             <text x=\"{5:.1}\" y=\"{6:.1}\">{0} {1}</text></g>",
            esc(name),
            format_ms(to.saturating_sub(*from)),
            x(*from, m.end),
            y,
            width(*from, *to, m.end),
            (x(*to, m.end) + 4.0).min(LABEL_W + PLOT_W - 150.0),
            y + 10.0
        );
    }
    h.push_str("</g></svg>\n");
}

fn pool_lanes(h: &mut String, m: &Model, g: &PoolGroup) {
    let pods: usize = g.lanes.iter().map(|(_, l)| l.pods.len()).sum();
    // A big pool starts folded unless it holds what the reader came for.
    let notable = g.lanes.iter().any(|(_, l)| {
        !l.faults.is_empty() || !l.evidence.is_empty() || l.pods.iter().any(|p| p.highlighted)
    });
    let open = if g.lanes.len() <= POOL_OPEN_LANES || notable {
        " open=\"open\""
    } else {
        ""
    };
    let _ = write!(
        h,
        "<details class=\"pool\" data-pool=\"{0}\"{open}><summary><span class=\"sw\" style=\"background:{1}\"></span>\
         <b>{0}</b> · {2} · {3}</summary>",
        esc(&g.name),
        g.colour,
        plural(g.lanes.len(), "node"),
        plural(pods, "pod placement")
    );
    let height = g.lanes.len() as f64 * LANE_H + 4.0;
    svg_open(h, height, "lanes", &format!("nodes of pool {}", g.name));
    let _ = write!(h, "<g class=\"faultlines\">");
    for (at, _) in &m.faults {
        let _ = write!(
            h,
            "<line x1=\"{0:.1}\" y1=\"0\" x2=\"{0:.1}\" y2=\"{1:.1}\"/>",
            x(*at, m.end),
            height
        );
    }
    h.push_str("</g>\n");
    for (i, (node, lane)) in g.lanes.iter().enumerate() {
        let y = 2.0 + i as f64 * LANE_H;
        let _ = write!(
            h,
            "<g class=\"lane\" data-node=\"{0}\"><text class=\"node\" x=\"{1:.1}\" y=\"{2:.1}\" text-anchor=\"end\">{3}</text>",
            esc(node),
            LABEL_W - 6.0,
            y + 13.0,
            esc(&truncate(node, 34))
        );
        for (from, to, state) in &lane.states {
            if *state == NodeState::Deleted {
                let _ = write!(
                    h,
                    "<line class=\"st-deleted\" x1=\"{:.1}\" y1=\"{2:.1}\" x2=\"{:.1}\" y2=\"{2:.1}\"><title>{3} deleted at {4}</title></line>",
                    x(*from, m.end),
                    x(*to, m.end),
                    y + STATE_H / 2.0,
                    esc(node),
                    format_ms(*from)
                );
                continue;
            }
            let fill = if *state == NodeState::Ready {
                format!(" style=\"fill:{}\"", g.colour)
            } else {
                String::new()
            };
            let _ = write!(
                h,
                "<rect class=\"{}\"{fill} x=\"{:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{STATE_H:.1}\"><title>{} {} from {} to {}</title></rect>",
                state.class(),
                x(*from, m.end),
                width(*from, *to, m.end),
                esc(node),
                state.word(),
                format_ms(*from),
                format_ms(*to)
            );
        }
        for (at, message) in &lane.faults {
            let fx = x(*at, m.end);
            let _ = write!(
                h,
                "<path class=\"fault-mark\" d=\"M{0:.1} {1:.1} L{2:.1} {3:.1} L{0:.1} {4:.1} L{5:.1} {3:.1} Z\"><title>{6} fault: {7}</title></path>",
                fx,
                y - 1.0,
                fx + 5.0,
                y + 4.0,
                y + 9.0,
                fx - 5.0,
                format_ms(*at),
                esc(message)
            );
        }
        pods_of_lane(h, m, lane, y + STATE_H + 2.0);
        evidence_dots(h, m, lane, y);
        h.push_str("</g>\n");
    }
    h.push_str("</svg></details>\n");
}

fn pods_of_lane(h: &mut String, m: &Model, lane: &Lane, top: f64) {
    let band = LANE_H - STATE_H - 4.0;
    let (marked, plain): (Vec<&PodSpan>, Vec<&PodSpan>) =
        lane.pods.iter().partition(|p| p.highlighted);
    let side_x = LABEL_W + PLOT_W + 6.0;
    if lane.pods.len() <= POD_FOLD_THRESHOLD {
        for (i, p) in lane.pods.iter().enumerate() {
            let class = if p.highlighted { "pod hl" } else { "pod" };
            let _ = write!(
                h,
                "<rect class=\"{class}\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>{} on this node {} to {}</title></rect>",
                x(p.from, m.end),
                top + i as f64 * (band / POD_FOLD_THRESHOLD as f64),
                width(p.from, p.to, m.end),
                if p.highlighted { 3.0 } else { 1.6 },
                esc(&p.pod),
                format_ms(p.from),
                format_ms(p.to)
            );
        }
        if !lane.pods.is_empty() {
            let _ = write!(
                h,
                "<text class=\"side\" x=\"{side_x:.1}\" y=\"{:.1}\">{}</text>",
                top + 9.0,
                plural(lane.pods.len(), "pod")
            );
        }
    } else {
        density(h, m, &plain, top, band);
        // Highlighted pods are few in any real failure; a cap still keeps
        // a pathological report bounded.
        for p in marked.iter().take(HIGHLIGHTED_BARS) {
            let _ = write!(
                h,
                "<rect class=\"pod hl\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"3\"><title>{} on this node {} to {}</title></rect>",
                x(p.from, m.end),
                top + band - 3.0,
                width(p.from, p.to, m.end),
                esc(&p.pod),
                format_ms(p.from),
                format_ms(p.to)
            );
        }
        let peak = peak(&lane.pods);
        let _ = write!(
            h,
            "<text class=\"side\" x=\"{side_x:.1}\" y=\"{:.1}\">{} pods, ≤{peak} at once</text>",
            top + 9.0,
            lane.pods.len()
        );
    }
    // Name the highlighted pods after their bar ends, in the pod band, so
    // a reader need not hover and no node state is covered.
    for (i, p) in marked.iter().take(2).enumerate() {
        let _ = write!(
            h,
            "<text class=\"hl-label\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            (x(p.to, m.end) + 3.0).min(LABEL_W + PLOT_W - 120.0),
            top + 7.0 + i as f64 * 8.0,
            esc(&truncate(&p.pod, 40))
        );
    }
}

/// Most highlighted pod bars on one folded lane.
const HIGHLIGHTED_BARS: usize = 10;

/// Most evidence dots on one lane; the rest are counted, not drawn.
const EVIDENCE_DOTS: usize = 10;

fn evidence_dots(h: &mut String, m: &Model, lane: &Lane, y: f64) {
    for (i, (at, what)) in lane.evidence.iter().take(EVIDENCE_DOTS).enumerate() {
        let cx = x(*at, m.end);
        let _ = write!(
            h,
            "<circle class=\"evidence\" cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"4\"><title>{} {}</title></circle>",
            y + LANE_H / 2.0,
            format_ms(*at),
            esc(what)
        );
        if i == 0 {
            let _ = write!(
                h,
                "<text class=\"hl-label\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                (cx + 7.0).min(LABEL_W + PLOT_W - 200.0),
                y + LANE_H / 2.0 + 4.0,
                esc(&truncate(what, 60))
            );
        }
    }
    if lane.evidence.len() > EVIDENCE_DOTS {
        let _ = write!(
            h,
            "<text class=\"side\" x=\"{:.1}\" y=\"{:.1}\">+{} facts</text>",
            LABEL_W + PLOT_W + 6.0,
            y + LANE_H - 2.0,
            lane.evidence.len() - EVIDENCE_DOTS
        );
    }
}

/// The most pods running at once among `pods`.
fn peak(pods: &[PodSpan]) -> usize {
    let mut edges: Vec<(u64, i64)> = pods
        .iter()
        .flat_map(|p| [(p.from, 1), (p.to, -1)])
        .collect();
    // Ends before starts at the same instant: a replacement is not overlap.
    edges.sort();
    let (mut now, mut best) = (0i64, 0i64);
    for (_, d) in edges {
        now += d;
        best = best.max(now);
    }
    best.max(0) as usize
}

/// A folded node: per time bucket, the most pods running at once, as bar
/// height; adjacent equal buckets merge into one rectangle.
fn density(h: &mut String, m: &Model, pods: &[&PodSpan], top: f64, band: f64) {
    let bucket_ms = m.end.div_ceil(DENSITY_BUCKETS as u64).max(1);
    let mut counts = vec![0usize; DENSITY_BUCKETS];
    for (b, count) in counts.iter_mut().enumerate() {
        let start = (b as u64).saturating_mul(bucket_ms);
        let stop = start.saturating_add(bucket_ms);
        let inside: Vec<PodSpan> = pods
            .iter()
            .filter(|p| {
                p.from < stop && p.to > start
                    || (p.from == p.to && p.from >= start && p.from < stop)
            })
            .map(|p| PodSpan {
                pod: String::new(),
                from: p.from.max(start),
                to: p.to.min(stop),
                highlighted: false,
            })
            .collect();
        *count = peak(&inside).max(usize::from(!inside.is_empty()));
    }
    let max = counts.iter().copied().max().unwrap_or(0).max(1);
    let _ = write!(h, "<g class=\"density\">");
    let mut b = 0;
    while b < DENSITY_BUCKETS {
        let c = counts[b];
        let mut e = b + 1;
        while e < DENSITY_BUCKETS && counts[e] == c {
            e += 1;
        }
        if c > 0 {
            let from = (b as u64).saturating_mul(bucket_ms);
            let to = (e as u64).saturating_mul(bucket_ms).min(m.end);
            let bar = band * c as f64 / max as f64;
            let _ = write!(
                h,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bar:.1}\"><title>up to {c} pods at once, {} to {}</title></rect>",
                x(from, m.end),
                top + band - bar,
                width(from, to, m.end),
                format_ms(from),
                format_ms(to)
            );
        }
        b = e;
    }
    h.push_str("</g>");
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut t: String = text.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// Escapes text for HTML and XML alike (both content and attributes).
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters are not allowed in XML; drop them.
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// The inline style sheet shared by the drill and sweep pages.
pub(crate) const CSS: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#111827;margin:24px;max-width:1500px}\
h1{font-size:22px;margin:0 0 4px}h1.pass{color:#047857}h1.fail{color:#b91c1c}\
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}\
.meta{color:#4b5563;margin:2px 0}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}\
pre{background:#f3f4f6;padding:8px 10px;border-radius:4px;overflow-x:auto}\
table{border-collapse:collapse;width:100%}th,td{border:1px solid #e5e7eb;padding:5px 8px;text-align:left;vertical-align:top}\
th{background:#f9fafb}td p{margin:0 0 4px}\
tr.fail td.verdict{background:#fee2e2;color:#991b1b;font-weight:700}tr.pass td.verdict{background:#d1fae5;color:#065f46}\
.kind{color:#6b7280;font-size:12px}ul.evidence{margin:0;padding-left:18px;font-size:13px}\
.at{font-variant-numeric:tabular-nums;color:#374151}.rule,.labels{color:#6b7280}\
table.figures{width:auto}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.legend .key{display:inline-block;margin-right:14px;font-size:12.5px}\
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}\
.st-notready-sw{background:#dc2626}.st-cordoned-sw{background:#f59e0b}.st-booting-sw{background:#d1d5db}\
.hl-sw{background:#e11d48}.fault-sw{background:#111827}\
details.pool{margin:6px 0}details.pool summary{cursor:pointer;font-size:13.5px;padding:2px 0}\
svg{display:block;font:11px system-ui,sans-serif;max-width:100%;height:auto}\
svg .axis line{stroke:#e5e7eb}svg .axis text{fill:#6b7280}\
svg .lbl{fill:#374151;font-weight:600}svg .none,svg .side{fill:#6b7280}\
svg .step line{stroke:#9ca3af;stroke-dasharray:3 3}svg .step text{fill:#4b5563}\
svg .fault line,svg .faultlines line{stroke:#111827;stroke-width:1.2}svg .fault path,svg .fault-mark{fill:#111827}\
svg .fault text{fill:#111827;font-weight:600}\
svg .api-up{fill:#a7f3d0}svg .api-down{fill:#dc2626}\
svg .span rect{fill:#fde68a;stroke:#b45309}svg .span text{fill:#92400e;font-weight:600}\
svg .node{fill:#1f2937;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:10.5px}\
svg .st-ready{opacity:.55}svg .st-notready{fill:#dc2626}svg .st-cordoned{fill:#f59e0b}\
svg .st-booting{fill:#d1d5db}svg line.st-deleted{stroke:#9ca3af;stroke-dasharray:2 3}\
svg .pod{fill:#374151}svg .pod.hl{fill:#e11d48}svg .density rect{fill:#64748b}\
svg .hl-label{fill:#be123c;font-weight:600;font-size:10px}svg .evidence{fill:#e11d48;stroke:#fff;stroke-width:1}\
.hists{display:flex;flex-wrap:wrap;gap:12px}figure.hist{margin:8px 0}figcaption{font-size:13px;margin-bottom:2px}\
svg .bars rect{fill:#3b82f6}svg .haxis line{stroke:#6b7280}svg .haxis text{fill:#374151}\
svg .pct line{stroke:#dc2626;stroke-dasharray:3 2}svg .pct text{fill:#991b1b;font-size:10.5px}\
table.seeds,table.tally{width:auto}\
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_labels_share_a_row_only_when_they_do_not_overlap() {
        // Four steps within a few pixels (the old layout cycled three rows,
        // so the fourth landed on the first), then one far to the right.
        let labels = [(0.0, 20), (5.0, 20), (10.0, 20), (15.0, 20), (600.0, 20)];
        let (rows, count) = label_rows(labels);
        assert_eq!(rows, [0, 1, 2, 3, 0]);
        assert_eq!(count, 4);
        for (i, (xa, ca)) in labels.iter().enumerate() {
            for (j, (xb, _)) in labels.iter().enumerate().skip(i + 1) {
                if rows[i] == rows[j] {
                    assert!(xa + 3.0 + *ca as f64 * CHAR_W <= *xb, "{i} and {j} overlap");
                }
            }
        }
        assert_eq!(label_rows([]), (vec![], 1));
    }
}
