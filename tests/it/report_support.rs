//! Helpers shared by the HTML, sweep and compare tests: the stored sample
//! reports, an outline of an HTML document's structure for snapshots, and
//! the self-containment check.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use drillbench_observe::{Event, EventKind, ObjectRef};
use drillbench_report::DrillReport;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A stored sample report (`passing.json` or `failing.json`).
pub fn fixture(name: &str) -> DrillReport {
    let path = root().join("tests/fixtures/reports").join(name);
    DrillReport::read(&path).expect("fixture parses")
}

/// An event in the timeline.
pub fn event(
    at_ms: u64,
    kind: EventKind,
    object: (&str, &str, &str),
    node: Option<&str>,
    pool: Option<&str>,
    message: &str,
) -> Event {
    Event {
        at_ms,
        kind,
        object: ObjectRef {
            kind: object.0.to_owned(),
            namespace: object.1.to_owned(),
            name: object.2.to_owned(),
        },
        node: node.map(str::to_owned),
        pool: pool.map(str::to_owned),
        message: message.to_owned(),
    }
}

/// Parses HTML this bench emits, which is well-formed XML by design.
pub fn parse(html: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    };
    roxmltree::Document::parse_with_options(html, opts).expect("the HTML is well-formed XML")
}

/// The element tree without coordinates: tag, class, id and data
/// attributes, and the short text of headings, cells and SVG labels.
/// Consecutive identical siblings collapse into one line with a count, so
/// the outline shows structure, not volume.
pub fn outline(html: &str) -> String {
    let doc = parse(html);
    let mut lines = Vec::new();
    walk(doc.root_element(), 0, &mut lines);
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        let mut n = 1;
        while i + n < lines.len() && lines[i + n] == lines[i] {
            n += 1;
        }
        if n > 1 {
            out.push_str(&format!("{} ×{n}\n", lines[i]));
        } else {
            out.push_str(&lines[i]);
            out.push('\n');
        }
        i += n;
    }
    out
}

fn walk(node: roxmltree::Node<'_, '_>, depth: usize, lines: &mut Vec<String>) {
    let tag = node.tag_name().name();
    let mut line = format!("{}{tag}", "  ".repeat(depth));
    if let Some(id) = node.attribute("id") {
        line.push_str(&format!("#{id}"));
    }
    if let Some(class) = node.attribute("class") {
        line.push_str(&format!(".{}", class.replace(' ', ".")));
    }
    for a in node.attributes() {
        if a.name().starts_with("data-") || (a.name() == "open") {
            line.push_str(&format!("[{}={}]", a.name(), a.value()));
        }
    }
    let textual = matches!(
        tag,
        "h1" | "h2"
            | "p"
            | "span"
            | "th"
            | "td"
            | "summary"
            | "text"
            | "b"
            | "code"
            | "pre"
            | "figcaption"
            | "li"
    );
    if textual {
        // A cell shows its own text and its children's structure; other
        // text-bearing elements show all their text and stop there.
        let texts: Vec<&str> = if tag == "td" {
            node.children()
                .filter(|n| n.is_text())
                .filter_map(|n| n.text())
                .collect()
        } else {
            node.descendants()
                .filter(|n| n.is_text())
                .filter_map(|n| n.text())
                .collect()
        };
        let text = texts.join(" ");
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !text.is_empty() {
            let short: String = text.chars().take(90).collect();
            line.push_str(&format!(" \"{short}\""));
        }
    }
    lines.push(line);
    if tag == "style" || tag == "title" || (textual && tag != "td") {
        return;
    }
    for child in node.children().filter(|c| c.is_element()) {
        walk(child, depth + 1, lines);
    }
}

/// Everything in an HTML document that reaches outside it: attributes that
/// load or link anything but a `#fragment` or a `data:` URI, `<script
/// src>`, `<link>`, external `url(...)` and `@import` in styles, and
/// `http(s)://` anywhere but the SVG namespace declaration.
pub fn external_references(html: &str) -> Vec<String> {
    let doc = parse(html);
    let mut found = Vec::new();
    for node in doc.descendants().filter(|n| n.is_element()) {
        let tag = node.tag_name().name();
        if matches!(tag, "link" | "iframe" | "object" | "embed" | "base") {
            found.push(format!("<{tag}>"));
        }
        if tag == "script" && node.attribute("src").is_some() {
            found.push("<script src>".to_owned());
        }
        for a in node.attributes() {
            let name = a.name();
            let linking = matches!(
                name,
                "src" | "href" | "srcset" | "action" | "poster" | "data" | "background"
            );
            let value = a.value().trim();
            if linking && !(value.starts_with('#') || value.starts_with("data:")) {
                found.push(format!("{tag} {name}={value}"));
            }
            if name == "style" {
                found.extend(css_references(value));
            }
        }
        if tag == "style" {
            found.extend(css_references(node.text().unwrap_or_default()));
        }
    }
    let stripped = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for scheme in ["http://", "https://", "//cdn", "file:"] {
        if stripped.contains(scheme) {
            found.push(format!("text mentions {scheme}"));
        }
    }
    found
}

fn css_references(css: &str) -> Vec<String> {
    let mut found = Vec::new();
    if css.contains("@import") {
        found.push("@import".to_owned());
    }
    let mut rest = css;
    while let Some(i) = rest.find("url(") {
        let after = rest[i + 4..].trim_start_matches(['\'', '"', ' ']);
        if !(after.starts_with('#') || after.starts_with("data:")) {
            let target: String = after
                .chars()
                .take_while(|c| !matches!(c, ')' | '\'' | '"'))
                .collect();
            found.push(format!("url({target})"));
        }
        rest = &rest[i + 4..];
    }
    found
}

/// Writes `text` to `$DRILLBENCH_LOOK_DIR/name` when that variable is set,
/// so a person can open (or screenshot) what the tests render.
pub fn look(name: &str, text: &str) {
    if let Some(dir) = std::env::var_os("DRILLBENCH_LOOK_DIR") {
        let dir = Path::new(&dir);
        std::fs::create_dir_all(dir).expect("look dir");
        std::fs::write(dir.join(name), text).expect("write look file");
    }
}

/// Runs the `bench` binary from the repository root: (exit code, stdout, stderr).
pub fn bench(args: &[&str]) -> (i32, String, String) {
    let run = crate::common::bench(args);
    (run.code, run.stdout, run.stderr)
}
