//! The streams a command writes to. Below both `app` and `serve`, so a
//! command of either can be driven by tests with buffers for streams.

use std::io::Write;

/// Output streams of a command, and whether to colour diagnostics.
pub struct Io<'a> {
    /// Standard output: the command's result.
    pub out: &'a mut dyn Write,
    /// Standard error: diagnostics and progress.
    pub err: &'a mut dyn Write,
    /// Colour diagnostics (stderr is a terminal).
    pub color: bool,
    /// A person watches stderr: sweeps draw a progress bar rather than
    /// printing a line per tenth.
    pub terminal: bool,
}

/// `text` as it may reach a terminal. Names and messages come from drill
/// files and clusters; a control character in one (ESC starting a colour or
/// cursor sequence, a carriage return overwriting the line) is shown
/// escaped, as `\u{1b}`, instead of acting on the terminal. Newlines stay.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let acts = |c: char| c.is_control() && c != '\n';
    if !text.chars().any(acts) {
        return text.into();
    }
    text.chars()
        .map(|c| {
            if acts(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect::<String>()
        .into()
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn controls_are_shown_not_obeyed() {
        assert_eq!(printable("a\u{1b}[31mred\rb\n"), "a\\u{1b}[31mred\\u{d}b\n");
        assert_eq!(printable("tab\there"), "tab\\u{9}here");
        assert!(matches!(
            printable("plain é\n"),
            std::borrow::Cow::Borrowed(_)
        ));
    }
}
