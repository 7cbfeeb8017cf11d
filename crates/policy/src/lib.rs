//! The decisions a cluster makes, written once for both worlds.
//!
//! The simulator and the emulated cluster autoscaler on kind and Talos must
//! reach the same verdicts, so the rules they follow (which pool the
//! autoscaler grows, which node it removes and what keeps it, how a drain
//! retries) live here as pure functions over a read-only `view` of a
//! cluster. The simulator implements the view over its compact arrays, the
//! kube layer over what its watches observed; each then carries out the
//! decision its own way (scheduled events, API calls). A fidelity fix is
//! made here once, and both worlds get it.
//!
//! Nothing here knows which world it runs in: no simulator types, no API
//! client, no clock.

pub mod admission;
pub mod admission_memo;
pub mod cooldown;
pub mod domains;
pub mod drain;
pub mod expander;
#[cfg(test)]
mod fake;
pub mod fit_error;
pub mod interpod;
pub mod kyverno_admission;
pub mod preemption;
pub mod priority;
pub mod replica_deletion;
pub mod scale_down;
pub mod scale_up;
pub mod spread;
pub mod view;
