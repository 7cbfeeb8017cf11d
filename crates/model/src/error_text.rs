//! An error and its causes as one line, for messages a person reads.

/// The error's message, then each cause's after `: `, leaving out a cause
/// whose message the line already holds (many errors repeat their
/// source's).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        let message = next.to_string();
        if !text.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        cause = next.source();
    }
    text
}
