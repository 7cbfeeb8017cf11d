//! The page's look: the inline style sheet shared by the drill and sweep
//! pages, and the colours that tell pools apart on the timeline.

/// The inline style sheet shared by the drill and sweep pages.
pub(crate) const CSS: &str = "\
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#111827;margin:24px;max-width:1500px}\
h1{font-size:22px;margin:0 0 4px}h1.pass{color:#047857}h1.fail{color:#b91c1c}\
h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #e5e7eb;padding-bottom:4px}\
.meta{color:#4b5563;margin:2px 0}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px}\
pre{background:#f3f4f6;padding:8px 10px;border-radius:4px;overflow-x:auto}\
table{border-collapse:collapse;width:100%}th,td{border:1px solid #e5e7eb;padding:5px 8px;text-align:left;vertical-align:top}\
th{background:#f9fafb}td p{margin:0 0 4px}\
tr.fail td.verdict{background:#fee2e2;color:#991b1b;font-weight:700}tr.pass td.verdict{background:#d1fae5;color:#065f46}tr.skip td.verdict{background:#e5e7eb;color:#374151}\
.kind{color:#6b7280;font-size:12px}ul.evidence{margin:0;padding-left:18px;font-size:13px}\
.at{font-variant-numeric:tabular-nums;color:#374151}.rule,.labels{color:#6b7280}\
table.figures{width:auto}td.num{text-align:right;font-variant-numeric:tabular-nums}\
.legend .key{display:inline-block;margin-right:14px;font-size:12.5px}\
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:4px;vertical-align:-2px}\
.st-ready-sw{background:#2563eb;opacity:.55}.st-notready-sw{background:repeating-linear-gradient(45deg,#dc2626 0 2px,#fff 2px 4px);border:1px solid #dc2626}\
.st-cordoned-sw{background:#f59e0b;border:1.5px dotted #78350f}.st-booting-sw{background:#fff;border:1px dashed #4b5563}\
.sched-sw{height:6px;background:#fff;border:1px solid #374151}.ready-sw{height:6px;background:#374151}\
.hl-sw{background:#e11d48}.fault-sw{background:#111827;clip-path:polygon(0 0,100% 0,50% 100%)}\
.scale-sw{width:9px;height:9px;background:#fff;border:1.5px solid #0369a1;transform:rotate(45deg)}\
.failure-sw{background:#e11d48;clip-path:polygon(50% 0,100% 100%,0 100%)}\
svg.defs{position:absolute}p.more,li.more{color:#6b7280;font-style:italic}\
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
svg .st-ready{opacity:.55}svg .st-notready{fill:url(#hatch-notready);stroke:#dc2626;stroke-width:.8}\
svg .st-cordoned{fill:#f59e0b;stroke:#78350f;stroke-width:1;stroke-dasharray:1 2}\
svg .st-booting{fill:#fff;stroke:#4b5563;stroke-width:.8;stroke-dasharray:2 2}svg line.st-deleted{stroke:#9ca3af;stroke-dasharray:2 3}\
svg .pod{fill:#374151}svg .pod.hl{fill:#e11d48}\
svg .pod.sched{fill:#fff;stroke:#374151;stroke-width:.6}svg .pod.hl.sched{fill:#fff;stroke:#e11d48;stroke-width:.8}\
svg .scale path,svg .scale-mark{fill:#fff;stroke:#0369a1;stroke-width:1.4}svg .scale text{fill:#0369a1;font-weight:600}\
svg .failure{fill:#e11d48;stroke:#7f1d1d;stroke-width:.8}\
svg .span.failed rect{fill:url(#hatch-failed);stroke:#b91c1c}svg .span.failed text{fill:#991b1b}svg .density rect{fill:#64748b}\
svg .hl-label{fill:#be123c;font-weight:600;font-size:10px}svg .evidence{fill:#e11d48;stroke:#fff;stroke-width:1}\
.hists{display:flex;flex-wrap:wrap;gap:12px}figure.hist{margin:8px 0}figcaption{font-size:13px;margin-bottom:2px}\
svg .bars rect{fill:#3b82f6}svg .haxis line{stroke:#6b7280}svg .haxis text{fill:#374151}\
svg .pct line{stroke:#dc2626;stroke-dasharray:3 2}svg .pct text{fill:#991b1b;font-size:10.5px}\
svg .bound line{stroke:#111827;stroke-width:2}svg .bound text{fill:#111827;font-weight:600;font-size:10.5px}\
table.seeds,table.tally{width:auto}\
#timeline{overflow-x:auto}#timeline svg:not(.defs){width:calc(100% * var(--zoom,1));max-width:none}\
p.zoom{margin:4px 0;font-size:12.5px;color:#4b5563}p.zoom input{vertical-align:middle;width:160px}\
";

/// Pool colours: blues and greens, kept clear of the red, amber and grey
/// that mean NotReady, cordoned and booting.
pub(super) const POOL_COLOURS: [&str; 6] = [
    "#2563eb", "#0d9488", "#65a30d", "#0891b2", "#4f46e5", "#a16207",
];
pub(super) const CONTROL_PLANE_COLOUR: &str = "#6d28d9";
pub(super) const UNKNOWN_COLOUR: &str = "#6b7280";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::html::model::NodeState;

    #[test]
    fn the_style_sheet_is_well_formed_inside_an_xml_element() {
        // The page is read with an XML parser; a raw `<` or `&` in the
        // inline sheet would break it.
        assert!(!CSS.contains('<') && !CSS.contains('&'));
        assert_eq!(CSS.matches('{').count(), CSS.matches('}').count());
    }

    #[test]
    fn every_node_state_has_a_style() {
        for state in [
            NodeState::Booting,
            NodeState::NotReady,
            NodeState::Cordoned,
            NodeState::Deleted,
            NodeState::Ready,
        ] {
            assert!(
                CSS.contains(&format!(".{}{{", state.class())),
                "{} is not styled",
                state.class()
            );
        }
    }

    #[test]
    fn pool_colours_never_read_as_a_node_state() {
        let states = ["#dc2626", "#f59e0b", "#d1d5db", "#e11d48"];
        let mut all: Vec<&str> = POOL_COLOURS.to_vec();
        all.extend([CONTROL_PLANE_COLOUR, UNKNOWN_COLOUR]);
        for (i, c) in all.iter().enumerate() {
            assert!(!states.contains(c), "{c} is a state colour");
            assert!(!all[i + 1..].contains(c), "{c} is used twice");
        }
        // NotReady is a red hatch, told apart from the failing-pod
        // crimson by its pattern, not by its hue alone.
        assert!(
            CSS.contains(".st-notready{fill:url(#hatch-notready);stroke:#dc2626"),
            "the NotReady hatch moved"
        );
    }
}
