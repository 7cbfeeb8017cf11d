//! One pool's lanes: a node's states, its fault marks, its pods (one bar
//! each up to the fold threshold, a density bar beyond), and the dots for
//! facts of failing assertions that no pod bar shows.

use std::fmt::Write;

use super::geometry::{svg_open, width, x};
use super::model::{Lane, Model, NodeState, PodSpan, PoolGroup};
use super::{
    DENSITY_BUCKETS, LABEL_W, LANE_H, PLOT_W, POD_FOLD_THRESHOLD, POOL_OPEN_LANES, STATE_H, esc,
    plural, truncate,
};
use crate::{budget, format_ms};

pub(super) fn pool_lanes(h: &mut String, m: &Model, g: &PoolGroup) {
    let pods: usize = g.lanes.iter().map(|(_, l)| l.pods.len()).sum::<usize>() + g.hidden_pods;
    // A big pool starts folded unless it holds what the reader came for.
    let notable = g.lanes.iter().any(|(_, l)| l.is_notable());
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
        plural(g.lanes.len() + g.hidden_lanes, "node"),
        plural(pods, "pod placement")
    );
    if g.hidden_lanes > 0 {
        let _ = write!(
            h,
            "<p class=\"meta hidden-lanes\">{} drawn; {} (the report keeps a few hundred \
             lanes, those with faults or failing facts first).</p>",
            plural(g.lanes.len(), "node"),
            budget::more(g.hidden_lanes, "nodes"),
        );
    }
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
        for (at, message) in &lane.scaled {
            let fx = x(*at, m.end);
            let _ = write!(
                h,
                "<path class=\"scale-mark\" d=\"M{0:.1} {1:.1} L{2:.1} {3:.1} L{0:.1} {4:.1} L{5:.1} {3:.1} Z\"><title>{6} autoscaler scale-down: {7}</title></path>",
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
        lane_label(h, m, lane, y);
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
            let row = top + i as f64 * (band / POD_FOLD_THRESHOLD as f64);
            let height = if p.highlighted { 3.0 } else { 1.6 };
            // Scheduled but not yet Ready: an outline; Ready: solid. The
            // difference is a shape, not a colour.
            let ready = p.ready.unwrap_or(p.to);
            if ready > p.from || p.ready.is_none() {
                let _ = write!(
                    h,
                    "<rect class=\"{class} sched\" x=\"{:.1}\" y=\"{row:.1}\" width=\"{:.1}\" height=\"{height:.1}\"><title>{} scheduled here at {}, not Ready until {}</title></rect>",
                    x(p.from, m.end),
                    width(p.from, ready, m.end),
                    esc(&p.pod),
                    format_ms(p.from),
                    format_ms(ready)
                );
            }
            if p.ready.is_some() {
                let what = if ready == p.from {
                    "on this node"
                } else {
                    "Ready on this node"
                };
                let _ = write!(
                    h,
                    "<rect class=\"{class}\" x=\"{:.1}\" y=\"{row:.1}\" width=\"{:.1}\" height=\"{height:.1}\"><title>{} {what} {} to {}</title></rect>",
                    x(ready, m.end),
                    width(ready, p.to, m.end),
                    esc(&p.pod),
                    format_ms(ready),
                    format_ms(p.to)
                );
            }
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
}

/// Rough width of one character of a 10px bold label; generous, so a
/// label placed by it ends before the estimate says (the browser test
/// measures the real boxes).
const LABEL_CHAR_W: f64 = 6.5;

/// One label per lane, the first thing a failing assertion named on it (a
/// pod, else a fact), so labels never stack on each other: placed after
/// the mark it names if it fits there, before it otherwise, and never past
/// the plot into the count column.
fn lane_label(h: &mut String, m: &Model, lane: &Lane, y: f64) {
    let named = lane
        .pods
        .iter()
        .find(|p| p.highlighted)
        .map(|p| (p.from, p.to, truncate(&p.pod, 40)))
        .or_else(|| {
            lane.evidence
                .first()
                .map(|(at, what)| (*at, *at, truncate(what, 48)))
        });
    let Some((from, to, label)) = named else {
        return;
    };
    let w = label.chars().count() as f64 * LABEL_CHAR_W;
    let (after, before) = (x(to, m.end) + 7.0, x(from, m.end) - 7.0);
    let left = if after + w <= LABEL_W + PLOT_W {
        after
    } else if before - w >= LABEL_W {
        before - w
    } else {
        (LABEL_W + PLOT_W - w).max(LABEL_W)
    };
    let _ = write!(
        h,
        "<text class=\"hl-label\" x=\"{left:.1}\" y=\"{:.1}\">{}</text>",
        y + LANE_H / 2.0 + 4.0,
        esc(&label)
    );
}

/// Most highlighted pod bars on one folded lane.
const HIGHLIGHTED_BARS: usize = 10;

/// Most evidence dots on one lane; the rest are counted, not drawn.
const EVIDENCE_DOTS: usize = 10;

fn evidence_dots(h: &mut String, m: &Model, lane: &Lane, y: f64) {
    for (at, what) in lane.evidence.iter().take(EVIDENCE_DOTS) {
        let cx = x(*at, m.end);
        let _ = write!(
            h,
            "<circle class=\"evidence\" cx=\"{cx:.1}\" cy=\"{:.1}\" r=\"4\"><title>{} {}</title></circle>",
            y + LANE_H / 2.0,
            format_ms(*at),
            esc(what)
        );
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
                ready: None,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn span(from: u64, to: u64) -> PodSpan {
        PodSpan {
            pod: format!("p{from}"),
            from,
            to,
            ready: None,
            highlighted: false,
        }
    }

    #[test]
    fn a_replacement_at_the_same_instant_is_not_overlap() {
        assert_eq!(peak(&[]), 0);
        assert_eq!(peak(&[span(0, 10), span(10, 20)]), 1);
        assert_eq!(peak(&[span(0, 10), span(5, 20), span(6, 7)]), 3);
        assert_eq!(peak(&[span(0, 10), span(5, 20), span(10, 30)]), 2);
    }

    fn model(end: u64) -> Model {
        Model {
            end,
            pools: Vec::new(),
            api_down: Vec::new(),
            has_api_events: false,
            faults: Vec::new(),
            autoscaler: Vec::new(),
            steps: Vec::new(),
            rto: Vec::new(),
            failures: Vec::new(),
            highlighted: Default::default(),
        }
    }

    #[test]
    fn a_density_bar_merges_equal_buckets_and_stays_bounded() {
        let m = model(6_000);
        // 1 pod in the first half, 2 in the second: two rectangles.
        let pods = [span(0, 6_000), span(3_000, 6_000)];
        let refs: Vec<&PodSpan> = pods.iter().collect();
        let mut h = String::new();
        density(&mut h, &m, &refs, 0.0, 10.0);
        assert_eq!(h.matches("<rect").count(), 2, "{h}");
        assert!(h.contains("up to 1 pods at once, 0s to 3s"), "{h}");
        assert!(h.contains("up to 2 pods at once, 3s to 6s"), "{h}");

        // Pods that never overlap still never draw more than the buckets.
        let many: Vec<PodSpan> = (0..1_000).map(|i| span(i * 6, i * 6 + 3)).collect();
        let refs: Vec<&PodSpan> = many.iter().collect();
        let mut h = String::new();
        density(&mut h, &m, &refs, 0.0, 10.0);
        assert!(h.matches("<rect").count() <= DENSITY_BUCKETS);
    }

    #[test]
    fn evidence_beyond_the_cap_is_counted_not_drawn() {
        let m = model(1_000);
        let lane = Lane {
            evidence: (0..12).map(|i| (i * 10, format!("fact {i}"))).collect(),
            ..Lane::default()
        };
        let mut h = String::new();
        evidence_dots(&mut h, &m, &lane, 0.0);
        assert_eq!(h.matches("<circle").count(), EVIDENCE_DOTS);
        assert!(h.contains(">+2 facts</text>"), "{h}");
        // The dots carry no label: the lane's one label is separate.
        assert_eq!(h.matches("class=\"hl-label\"").count(), 0);
        let mut h = String::new();
        lane_label(&mut h, &m, &lane, 0.0);
        assert_eq!(h.matches("class=\"hl-label\"").count(), 1, "{h}");
        assert!(h.contains(">fact 0</text>"), "{h}");
    }

    #[test]
    fn a_lane_label_stays_inside_the_plot_whichever_side_it_goes() {
        let m = model(1_000);
        let long = "x".repeat(48);
        for at in [0, 500, 1_000] {
            let lane = Lane {
                evidence: vec![(at, long.clone())],
                ..Lane::default()
            };
            let mut h = String::new();
            lane_label(&mut h, &m, &lane, 0.0);
            let left: f64 = h
                .split("x=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .and_then(|v| v.parse().ok())
                .expect("an x");
            assert!(left >= LABEL_W, "{at}: {left}");
            assert!(
                left + 48.0 * LABEL_CHAR_W <= LABEL_W + PLOT_W + 0.1,
                "{at}: {left}"
            );
        }
    }
}
