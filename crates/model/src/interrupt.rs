//! Ctrl-C and SIGTERM during a run on a real cluster: the first asks the
//! run to stop, so the drill ends as aborted and its cluster is torn down
//! on the normal path; a second one exits at once for a user who would
//! rather clean up with `bench clean` than wait.
//!
//! A sweep looks between chunks of seeds and reports the seeds that ran,
//! marked interrupted. A simulated drill itself never looks: it is over in
//! milliseconds and its result must not depend on when a signal came.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Installs the handlers (once; later calls do nothing). Exits with 130,
/// the shell's code for an interrupt, on the second signal.
pub fn install() -> std::io::Result<()> {
    if REQUESTED.get().is_some() {
        return Ok(());
    }
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // Registered first, so it sees the flag before this signal sets it:
        // only a signal arriving after the first one exits.
        signal_hook::flag::register_conditional_shutdown(signal, 130, Arc::clone(&flag))?;
        signal_hook::flag::register(signal, Arc::clone(&flag))?;
    }
    let _ = REQUESTED.set(flag);
    Ok(())
}

/// Whether a stop was asked for since [`install`].
pub fn requested() -> bool {
    REQUESTED.get().is_some_and(|f| f.load(Ordering::Relaxed))
}
