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
