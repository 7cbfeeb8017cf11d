//! The HTML report in a real browser: headless Chromium lays the page out
//! with every pool unfolded, and a script measures every SVG text box, so
//! labels that collide are found as a reader would see them, not as the
//! renderer's character-width estimate predicts. At 10 pods (the story of
//! a failing drill) and at 1 000 pods on 100 nodes.
//!
//! Skips without Chromium, except under `CI=true` (`.ci/run` installs it).

use crate::common;
use crate::report_html::{at_scale, story};

use drillbench_report::{DrillReport, html};

const CHROMIUM: &str = "chromium";

/// Opens every `<details>`, measures every SVG `<text>` and writes the
/// pairs whose boxes overlap (by more than a pixel each way, the slack
/// between rows of 11px labels) into `<pre id="overlaps">`.
const MEASURE: &str = r#"<script>
for (const d of document.querySelectorAll('details')) d.open = true;
const found = [];
let texts = 0;
for (const svg of document.querySelectorAll('svg')) {
  const boxes = [];
  for (const t of svg.querySelectorAll('text')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    boxes.push({r, s: t.textContent});
  }
  texts += boxes.length;
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i].r, b = boxes[j].r;
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 1 && h > 2) found.push(boxes[i].s + ' / ' + boxes[j].s);
    }
  }
}
const out = document.createElement('pre');
out.id = 'overlaps';
out.textContent = JSON.stringify({texts, overlaps: found});
document.body.appendChild(out);
</script></body>"#;

/// What the browser measured in a report's page: how many text boxes,
/// and the overlapping pairs.
fn measure(report: &DrillReport, name: &str) -> Option<(u64, Vec<String>)> {
    measure_page(&html::render(report), name)
}

fn measure_page(page: &str, name: &str) -> Option<(u64, Vec<String>)> {
    let seen = browse(page, name, MEASURE)?;
    let overlaps = seen["overlaps"]
        .as_array()
        .expect("overlaps")
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_owned())
        .collect();
    Some((seen["texts"].as_u64().unwrap_or(0), overlaps))
}

/// Lays the page out in headless Chromium with `script` (ending the body)
/// run in it, and returns the JSON the script wrote into
/// `<pre id="overlaps">`; `None` when Chromium is absent (skipped).
fn browse(page: &str, name: &str, script: &str) -> Option<serde_json::Value> {
    if !common::tool_or_skip(
        CHROMIUM,
        &["--headless", "--no-sandbox", "--version"],
        "apt-get install chromium (.ci/run does it)",
    ) {
        return None;
    }
    let page = page.replace("</body>", script);
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(format!("{name}.html"));
    std::fs::write(&path, page).expect("write the page");
    let out = std::process::Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1500,1000",
            "--dump-dom",
        ])
        .arg(format!("file://{}", path.display()))
        .output()
        .expect("chromium runs");
    let dom = String::from_utf8_lossy(&out.stdout);
    let start = dom
        .find("<pre id=\"overlaps\">")
        .unwrap_or_else(|| panic!("no measurement: {}", String::from_utf8_lossy(&out.stderr)))
        + "<pre id=\"overlaps\">".len();
    let end = start + dom[start..].find("</pre>").expect("</pre>");
    let json = dom[start..end]
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">");
    Some(serde_json::from_str(&json).expect("the measurement"))
}

/// Moves the timeline's zoom slider to `zoom` as a reader would (an
/// `input` event), then reports the overview drawing's width before and
/// after, and the section's scrollable and visible widths.
fn zoom_script(zoom: f64) -> String {
    format!(
        r#"<script>
const svg = document.querySelector('#timeline svg:not(.defs)');
const before = svg.getBoundingClientRect().width;
const slider = document.querySelector('#timeline p.zoom input');
slider.value = '{zoom}';
slider.dispatchEvent(new Event('input'));
const section = document.getElementById('timeline');
const out = document.createElement('pre');
out.id = 'overlaps';
out.textContent = JSON.stringify({{before, after: svg.getBoundingClientRect().width,
  scroll: section.scrollWidth, client: section.clientWidth}});
document.body.appendChild(out);
</script></body>"#
    )
}

/// The zoom slider enlarges the timeline and lets it scroll sideways; its
/// control, the slider left at 1, changes nothing.
#[test]
fn the_timeline_zooms_and_scrolls_sideways() {
    let page = html::render(&story(true));
    let Some(zoomed) = browse(&page, "zoom", &zoom_script(3.0)) else {
        return;
    };
    let width = |v: &serde_json::Value, key: &str| v[key].as_f64().expect(key);
    let (before, after) = (width(&zoomed, "before"), width(&zoomed, "after"));
    assert!(before > 500.0, "the drawing fills the page: {zoomed}");
    assert!(
        (after / before - 3.0).abs() < 0.05,
        "three times as wide: {zoomed}"
    );
    assert!(
        width(&zoomed, "scroll") > width(&zoomed, "client") * 2.0,
        "the section scrolls sideways: {zoomed}"
    );
    let same = browse(&page, "zoom-1", &zoom_script(1.0)).expect("chromium ran above");
    assert_eq!(width(&same, "before"), width(&same, "after"), "{same}");
    assert!(
        width(&same, "scroll") <= width(&same, "client") + 1.0,
        "{same}"
    );
}

#[test]
fn no_timeline_labels_overlap_at_10_pods() {
    let Some((texts, overlaps)) = measure(&story(true), "story") else {
        return;
    };
    assert!(texts > 20, "the page was laid out: {texts} text boxes");
    assert!(
        overlaps.is_empty(),
        "{} overlaps: {overlaps:#?}",
        overlaps.len()
    );
}

#[test]
fn no_timeline_labels_overlap_at_1000_pods() {
    let Some((texts, overlaps)) = measure(&at_scale(1_000), "at-scale") else {
        return;
    };
    assert!(texts > 200, "every lane was laid out: {texts} text boxes");
    assert!(
        overlaps.is_empty(),
        "{} overlaps: {overlaps:#?}",
        overlaps.len()
    );
}

/// The committed example, a real simulator run of a failing drill (kept
/// current by `report_examples`): its labels do not overlap either.
#[test]
fn no_labels_overlap_in_the_failing_example() {
    let path =
        crate::common::root().join("reports/examples/autoscaler-scale-down-failing/report.html");
    let page = std::fs::read_to_string(&path).expect("the example");
    let Some((texts, overlaps)) = measure_page(&page, "example") else {
        return;
    };
    assert!(texts > 40, "the page was laid out: {texts} text boxes");
    assert!(
        overlaps.is_empty(),
        "{} overlaps: {overlaps:#?}",
        overlaps.len()
    );
}

/// Steps at one instant get rows of their own; and, the negative control,
/// labels drawn over each other are found, so a clean result above means
/// the measuring works.
#[test]
fn steps_at_one_instant_stack_and_a_forged_collision_is_found() {
    let mut report = story(true);
    for _ in 0..3 {
        let mut step = report.timeline[0].clone();
        step.message = "a step label long enough to collide".to_owned();
        report.timeline.insert(0, step);
    }
    let Some((_, clean)) = measure(&report, "steps") else {
        return;
    };
    assert!(clean.is_empty(), "{clean:#?}");
    let forged = html::render(&report).replacen(
        "</svg>",
        "<text x=\"300\" y=\"40\">collision one</text><text x=\"305\" y=\"41\">collision two</text></svg>",
        1,
    );
    let (_, found) = measure_page(&forged, "forged").expect("chromium ran above");
    assert_eq!(found, ["collision one / collision two"]);
}
