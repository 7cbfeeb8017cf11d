//! The timeline section: its summary line, the legend, and the overview
//! strip (time axis, steps, faults, API availability, RTO spans) above the
//! pools' lanes.

use std::fmt::Write;

use super::geometry::{svg_open, width, x};
use super::lanes::pool_lanes;
use super::model::{Model, build_model};
use super::{LABEL_W, PLOT_W, POD_FOLD_THRESHOLD, esc, plural, truncate};
use crate::{DrillReport, format_ms};
use drillbench_model::topology::CONTROL_PLANE_POOL;

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

pub(super) fn timeline(h: &mut String, report: &DrillReport) {
    let m = build_model(report);
    let lanes: usize = m.pools.iter().map(|g| g.lanes.len() + g.hidden_lanes).sum();
    let pods: usize = m
        .pools
        .iter()
        .flat_map(|g| g.lanes.iter())
        .map(|(_, l)| l.pods.len())
        .sum::<usize>()
        + m.pools.iter().map(|g| g.hidden_pods).sum::<usize>();
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
    // Zoom enlarges every drawing of the section alike and lets it scroll
    // sideways, so dense stretches can be read without a second layout.
    h.push_str(
        "<p class=\"zoom\"><label>Zoom <input type=\"range\" min=\"1\" max=\"6\" step=\"0.5\" \
         value=\"1\" oninput=\"document.getElementById('timeline').style.setProperty('--zoom',this.value)\"/>\
         </label></p>\n",
    );
    legend(h, &m);
    // The patterns the lanes fill with, defined once for the page.
    h.push_str(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"defs\" width=\"0\" height=\"0\" aria-hidden=\"true\"><defs>\
         <pattern id=\"hatch-notready\" width=\"4\" height=\"4\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\">\
         <rect width=\"4\" height=\"4\" fill=\"#fff\"/><rect width=\"2\" height=\"4\" fill=\"#dc2626\"/></pattern>\
         <pattern id=\"hatch-failed\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(-45)\">\
         <rect width=\"6\" height=\"6\" fill=\"#fee2e2\"/><rect width=\"2\" height=\"6\" fill=\"#b91c1c\"/></pattern>\
         </defs></svg>\n",
    );
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
    // Every mark has an entry, and each differs from the others by its
    // shape or pattern as well as its colour.
    h.push_str(
        "<span class=\"key\"><span class=\"sw st-ready-sw\"></span>node Ready (solid, its pool's colour)</span>\
         <span class=\"key\"><span class=\"sw st-notready-sw\"></span>NotReady (hatched)</span>\
         <span class=\"key\"><span class=\"sw st-cordoned-sw\"></span>cordoned (dotted edge)</span>\
         <span class=\"key\"><span class=\"sw st-booting-sw\"></span>booting (dashed outline)</span>\
         <span class=\"key\"><span class=\"sw sched-sw\"></span>pod scheduled, not Ready (outline)</span>\
         <span class=\"key\"><span class=\"sw ready-sw\"></span>pod Ready (solid)</span>\
         <span class=\"key\"><span class=\"sw hl-sw\"></span>named by a failing assertion (thick bar: its pod; dot: a fact the timeline has no pod for)</span>\
         <span class=\"key\"><span class=\"sw fault-sw\"></span>injected fault (filled triangle)</span>\
         <span class=\"key\"><span class=\"sw scale-sw\"></span>autoscaler action (hollow diamond)</span>\
         <span class=\"key\"><span class=\"sw failure-sw\"></span>failing fact (links to its verdict)</span></p>\n",
    );
}

/// Most failure markers on the failures row; the rest are counted.
const FAILURE_MARKERS: usize = 200;

/// Labels of one row of instants, each in the first sub-row where it
/// does not overlap another: `(x, label)` and each label's sub-row, with
/// the number of sub-rows.
fn stacked(
    events: &[(u64, String)],
    end: u64,
    chars: usize,
) -> (Vec<(f64, String)>, Vec<usize>, usize) {
    let labels: Vec<(f64, String)> = events
        .iter()
        .map(|(at, message)| (x(*at, end), truncate(message, chars)))
        .collect();
    let (rows, count) = label_rows(labels.iter().map(|(x, l)| (*x, l.chars().count())));
    (labels, rows, count)
}

/// The strip above the lanes: time axis, steps, injected faults, the
/// autoscaler's actions, failing facts, API availability and the RTO
/// spans. Every row of labels stacks them so none overlap.
fn overview(h: &mut String, m: &Model) {
    let (step_labels, step_row, step_rows) = stacked(&m.steps, m.end, 40);
    let (fault_labels, fault_row, fault_rows) = stacked(&m.faults, m.end, 50);
    let (scale_labels, scale_row, scale_rows) = stacked(&m.autoscaler, m.end, 50);
    let axis_y = 14.0;
    let steps_y = 24.0;
    let faults_y = steps_y + step_rows as f64 * 13.0 + 4.0;
    let scale_y = faults_y + fault_rows as f64 * 13.0 + 8.0;
    let failures_y = scale_y + scale_rows as f64 * 13.0 + 8.0;
    let api_y = failures_y + 22.0;
    let rto_y = api_y + 22.0;
    let height = rto_y + m.rto.len().max(1) as f64 * 18.0 + 6.0;
    svg_open(
        h,
        height,
        "overview",
        "time axis, steps, faults, autoscaler, failures, API availability, RTO",
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
    row_title(h, "steps", steps_y + 10.0);
    for (i, (at, message)) in m.steps.iter().enumerate() {
        let y = steps_y + step_row[i] as f64 * 13.0 + 10.0;
        let _ = write!(
            h,
            "<g class=\"step\"><title>{} step: {}</title><line x1=\"{2:.1}\" y1=\"{3:.1}\" x2=\"{2:.1}\" y2=\"{4:.1}\"/><text x=\"{5:.1}\" y=\"{3:.1}\">{6}</text></g>",
            format_ms(*at),
            esc(message),
            step_labels[i].0,
            y,
            height,
            step_labels[i].0 + 3.0,
            esc(&step_labels[i].1)
        );
    }
    h.push_str("</g>\n");
    // Injected faults: filled triangles.
    h.push_str("<g class=\"faults\">");
    row_title(h, "faults (injected)", faults_y + 11.0);
    for (i, (at, message)) in m.faults.iter().enumerate() {
        let (fx, label) = &fault_labels[i];
        let y = faults_y + fault_row[i] as f64 * 13.0;
        let _ = write!(
            h,
            "<g class=\"fault\"><title>{} fault: {}</title><line x1=\"{2:.1}\" y1=\"{3:.1}\" x2=\"{2:.1}\" y2=\"{4:.1}\"/>\
             <path d=\"M{5:.1} {3:.1} L{6:.1} {3:.1} L{2:.1} {7:.1} Z\"/><text x=\"{8:.1}\" y=\"{9:.1}\">{10}</text></g>",
            format_ms(*at),
            esc(message),
            fx,
            y,
            height,
            fx - 5.0,
            fx + 5.0,
            y + 8.0,
            fx + 7.0,
            y + 11.0,
            esc(label)
        );
    }
    h.push_str("</g>\n");
    // The autoscaler's own actions: hollow diamonds, apart from faults.
    h.push_str("<g class=\"autoscaler\">");
    row_title(h, "autoscaler", scale_y + 11.0);
    if m.autoscaler.is_empty() {
        let _ = write!(
            h,
            "<text class=\"none\" x=\"{LABEL_W:.1}\" y=\"{:.1}\">no autoscaler actions</text>",
            scale_y + 11.0
        );
    }
    for (i, (at, message)) in m.autoscaler.iter().enumerate() {
        let (ax, label) = &scale_labels[i];
        let y = scale_y + scale_row[i] as f64 * 13.0;
        let _ = write!(
            h,
            "<g class=\"scale\"><title>{} {}</title><path d=\"M{2:.1} {3:.1} L{4:.1} {5:.1} L{2:.1} {6:.1} L{7:.1} {5:.1} Z\"/>\
             <text x=\"{8:.1}\" y=\"{9:.1}\">{10}</text></g>",
            format_ms(*at),
            esc(message),
            ax,
            y + 1.0,
            ax + 5.0,
            y + 6.0,
            y + 11.0,
            ax - 5.0,
            ax + 7.0,
            y + 10.0,
            esc(label)
        );
    }
    h.push_str("</g>\n");
    failures_row(h, m, failures_y);
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
    // RTO spans; a failed one is hatched, and one that never recovered
    // runs to the end.
    let _ = write!(
        h,
        "<g class=\"rto\"><text class=\"lbl\" x=\"4\" y=\"{:.1}\">RTO (from the first disruption)</text>",
        rto_y + 11.0
    );
    if m.rto.is_empty() {
        let _ = write!(
            h,
            "<text class=\"none\" x=\"{:.1}\" y=\"{:.1}\">no RTO assertion or rto.* figure</text>",
            LABEL_W,
            rto_y + 11.0
        );
    }
    for (i, span) in m.rto.iter().enumerate() {
        let y = rto_y + i as f64 * 18.0;
        let class = if span.failed { "span failed" } else { "span" };
        let took = format_ms(span.to.saturating_sub(span.from));
        let (what, title) = if span.open {
            let what = format!("{} not recovered by the end (failed)", span.name);
            (what.clone(), what)
        } else if span.failed {
            (
                format!("{} {took} (failed)", span.name),
                format!("{} = {took}, failed", span.name),
            )
        } else {
            (
                format!("{} {took}", span.name),
                format!("{} = {took}", span.name),
            )
        };
        let label = truncate(&what, 60);
        let w = label.chars().count() as f64 * CHAR_W;
        // After the bar when it fits, else inside the plot's right end.
        let after = x(span.to, m.end) + 4.0;
        let lx = if after + w <= LABEL_W + PLOT_W + 120.0 {
            after
        } else {
            (LABEL_W + PLOT_W - w).max(LABEL_W)
        };
        let _ = write!(
            h,
            "<g class=\"{class}\"><title>{0}</title><rect x=\"{1:.1}\" y=\"{2:.1}\" width=\"{3:.1}\" height=\"12\"/>\
             <text x=\"{4:.1}\" y=\"{5:.1}\">{6}</text></g>",
            esc(&title),
            x(span.from, m.end),
            y,
            width(span.from, span.to, m.end),
            lx,
            y + 10.0,
            esc(&label)
        );
    }
    h.push_str("</g></svg>\n");
}

fn row_title(h: &mut String, title: &str, y: f64) {
    let _ = write!(h, "<text class=\"lbl\" x=\"4\" y=\"{y:.1}\">{title}</text>");
}

/// A marker per failing fact at its time, each a link to its assertion's
/// row in the verdict table; no labels, so nothing to overlap.
fn failures_row(h: &mut String, m: &Model, y: f64) {
    h.push_str("<g class=\"failures\">");
    row_title(h, "failures", y + 11.0);
    if m.failures.is_empty() {
        let _ = write!(
            h,
            "<text class=\"none\" x=\"{LABEL_W:.1}\" y=\"{:.1}\">no failing assertion</text>",
            y + 11.0
        );
    }
    for (at, index, what) in m.failures.iter().take(FAILURE_MARKERS) {
        let fx = x(*at, m.end);
        let _ = write!(
            h,
            "<a href=\"#{}\"><path class=\"failure\" d=\"M{fx:.1} {:.1} L{:.1} {:.1} L{:.1} {:.1} Z\"><title>{} {}</title></path></a>",
            super::assertion_anchor(*index),
            y + 2.0,
            fx + 5.0,
            y + 12.0,
            fx - 5.0,
            y + 12.0,
            format_ms(*at),
            esc(what)
        );
    }
    if m.failures.len() > FAILURE_MARKERS {
        let _ = write!(
            h,
            "<text class=\"side\" x=\"{:.1}\" y=\"{:.1}\">+{} facts</text>",
            LABEL_W + PLOT_W + 6.0,
            y + 11.0,
            m.failures.len() - FAILURE_MARKERS
        );
    }
    h.push_str("</g>\n");
}

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
    #[test]
    fn ticks_stay_about_ten_and_round() {
        assert_eq!(tick_step(1), 1_000);
        assert_eq!(tick_step(10_000), 1_000);
        assert_eq!(tick_step(11_000), 5_000);
        assert_eq!(tick_step(3_600_000), 600_000);
        // Past the table: a tenth of the span, rounded up.
        let end = 43_200_000 * 20;
        assert_eq!(tick_step(end), end.div_ceil(10));
        for end in [1, 59_999, 3_600_001, 86_400_000] {
            assert!(end / tick_step(end) <= 10, "{end}");
        }
    }

    #[test]
    fn time_maps_onto_the_plot_and_never_past_its_end() {
        assert_eq!(x(0, 100), LABEL_W);
        assert_eq!(x(50, 100), LABEL_W + PLOT_W / 2.0);
        assert_eq!(x(500, 100), LABEL_W + PLOT_W);
        // An instant still gets a pixel.
        assert_eq!(width(40, 40, 100), 1.0);
        assert_eq!(width(0, 100, 100), PLOT_W);
    }

    #[test]
    fn an_svg_opens_at_the_page_width_with_an_escaped_label() {
        let mut h = String::new();
        svg_open(&mut h, 40.4, "lanes", "nodes of pool <a & b>");
        assert_eq!(
            h,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"lanes\" width=\"1460\" height=\"40\" \
             viewBox=\"0 0 1460 40\" role=\"img\" aria-label=\"nodes of pool &lt;a &amp; b&gt;\">"
        );
    }
}
