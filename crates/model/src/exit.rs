//! The bench's exit codes: one meaning each, the same for every command.
//!
//! Nightly CI must tell "the platform regressed" (1) from "the bench or the
//! runner broke" (3), neither from a typo in a drill file (2), and none of
//! them from a drill whose negative control proves nothing (4).

use std::process::ExitCode;

/// How a command ended, as the process exit code the CLI contract promises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    /// Every assertion held, the input was valid, or the preflight said ready.
    Success = 0,
    /// A drill assertion failed, or a preflight said not ready.
    AssertionFailed = 1,
    /// Bad input: a scenario, a flag or a file. Nothing ran.
    BadInput = 2,
    /// Infrastructure error: a cluster could not be provisioned, a CLI is missing.
    Infrastructure = 3,
    /// Every assertion held, but a negative control did not prove its guard:
    /// it has no teeth, or its weakened run took another path
    /// (inconclusive). The drill needs fixing; the platform did not regress.
    ControlUnproven = 4,
    /// Stopped by Ctrl-C or SIGTERM (the shell's code for an interrupt):
    /// what ran is reported and marked interrupted.
    Interrupted = 130,
}

impl Exit {
    /// The numeric process exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> Self {
        ExitCode::from(exit.code())
    }
}
