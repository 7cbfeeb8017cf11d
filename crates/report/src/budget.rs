//! How much of a report each format may carry. A failing drill at scale
//! names every pod it caught (150 000 on a 5 000-node cluster), and a
//! rendering that prints them all is one nobody can read: a 3 MB terminal
//! line, a job summary GitHub refuses, a JUnit file CI pages choke on.
//! Every format but JSON shows the first facts and says how many more
//! there are; the JSON report keeps every fact, and each cut says so.

use std::borrow::Cow;

/// Longest terminal line, in characters.
pub const TERMINAL_LINE: usize = 240;

/// Most assertions the terminal summary lists; failing ones come first.
pub const TERMINAL_ASSERTIONS: usize = 40;

/// Most bytes of `report.md`: what GitHub takes of one step's summary
/// (see [`crate::github::STEP_SUMMARY_LIMIT`]), so the file can be
/// appended whole.
pub const MARKDOWN_BYTES: usize = 1024 * 1024;

/// Most evidence rows of one failure in Markdown.
pub const MARKDOWN_FACTS: usize = 50;

/// Longest Markdown table cell, in characters.
pub const MARKDOWN_CELL: usize = 300;

/// Longest JUnit failure `message` attribute, in characters: CI pages show
/// it on one line.
pub const JUNIT_MESSAGE: usize = 1_000;

/// Most evidence lines in a JUnit failure's text (and most lines of each
/// of a control's traces).
pub const JUNIT_FACTS: usize = 100;

/// Longest line of a JUnit failure's text, and longest property value.
pub const JUNIT_LINE: usize = 500;

/// Most facts of one assertion in the HTML verdict table.
pub const HTML_FACTS: usize = 200;

/// Longest free text (summary, measured value, fact) in the HTML report.
pub const HTML_TEXT: usize = 2_000;

/// Most node lanes the HTML timeline draws over all pools. Lanes with
/// faults or failing facts are drawn first; the others are counted.
pub const HTML_LANES: usize = 400;

/// Most rows of the HTML workloads and not-simulated lists.
pub const HTML_ROWS: usize = 500;

/// Most bytes of `report.html`; the budgets above keep it well under this,
/// and tests check it.
pub const HTML_BYTES: usize = 8 * 1024 * 1024;

/// Where the rest of a cut list is: said after every `+N more`.
pub const ELSEWHERE: &str = "in report.json";

/// `text` shortened to `max` characters, the cut marked with how many
/// characters were left out. Never splits a character.
pub fn clip(text: &str, max: usize) -> Cow<'_, str> {
    let total = text.chars().count();
    if total <= max {
        return Cow::Borrowed(text);
    }
    // Room for the marker; it is at most 20 characters.
    let keep = max.saturating_sub(20);
    let mut out: String = text.chars().take(keep).collect();
    out.push_str(&format!("… (+{} chars)", total - keep));
    Cow::Owned(out)
}

/// `+N more WHAT in report.json`.
pub fn more(n: usize, what: &str) -> String {
    format!("+{n} more {what} {ELSEWHERE}")
}

/// `text` cut at the last line end that leaves room for `note` within
/// `limit` bytes, followed by the note; `text` itself when it fits.
pub fn cut_at_line(text: &str, limit: usize, note: &str) -> Option<String> {
    if text.len() <= limit {
        return Some(text.to_owned());
    }
    if limit <= note.len() {
        return None;
    }
    let mut end = limit - note.len();
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let end = text[..end].rfind('\n').map_or(0, |i| i + 1);
    Some(format!("{}{note}", &text[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_counts_characters_and_says_how_many_were_cut() {
        assert_eq!(clip("short", 10), "short");
        let long = "é".repeat(100);
        let clipped = clip(&long, 40);
        assert!(clipped.chars().count() <= 40, "{clipped}");
        assert!(clipped.ends_with("… (+80 chars)"), "{clipped}");
        assert!(clipped.starts_with(&"é".repeat(20)));
    }

    #[test]
    fn a_cut_ends_at_a_line_and_carries_the_note() {
        let text = "one\ntwo\nthree\n";
        assert_eq!(cut_at_line(text, 100, "N").as_deref(), Some(text));
        assert_eq!(
            cut_at_line(text, 10, "N\n").as_deref(),
            Some("one\ntwo\nN\n")
        );
        assert_eq!(cut_at_line(text, 9, "N\n").as_deref(), Some("one\nN\n"));
        assert_eq!(cut_at_line(text, 2, "N\n"), None);
        let cut = cut_at_line(&"ab\n".repeat(1000), 500, "[cut]\n").unwrap();
        assert!(cut.len() <= 500 && cut.ends_with("ab\n[cut]\n"), "{cut}");
    }
}
