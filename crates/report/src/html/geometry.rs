//! The geometry every SVG of the page shares: where a drill time falls on
//! the plot, and the `<svg>` element each drawing opens with.

use std::fmt::Write;

use super::{LABEL_W, PLOT_W, RIGHT_W, esc};

pub(super) fn x(t: u64, end: u64) -> f64 {
    LABEL_W + (t.min(end) as f64 / end as f64) * PLOT_W
}

pub(super) fn width(from: u64, to: u64, end: u64) -> f64 {
    (x(to, end) - x(from, end)).max(1.0)
}

pub(super) fn svg_open(h: &mut String, height: f64, class: &str, label: &str) {
    let w = LABEL_W + PLOT_W + RIGHT_W;
    let _ = write!(
        h,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"{class}\" width=\"{w:.0}\" height=\"{height:.0}\" \
         viewBox=\"0 0 {w:.0} {height:.0}\" role=\"img\" aria-label=\"{}\">",
        esc(label)
    );
}
