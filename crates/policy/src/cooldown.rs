//! The scale-down cooldown: after a scale-up, a scale-down that started
//! deleting, or a failed scale-down, the autoscaler removes no node for a
//! while (`--scale-down-delay-after-add`, `-after-delete`,
//! `-after-failure`).
//!
//! Why it matters to a drill: without it, the nodes a burst just added are
//! reclaimed as soon as they are unneeded for `scaleDownUnneededTime`,
//! counted from their boot, while upstream waits 10 minutes from the
//! scale-up itself. Unneeded times go on counting during the cooldown
//! (upstream updates its unneeded nodes before it checks the cooldown,
//! `core/static_autoscaler.go` `scaleDown`), so a node unneeded long
//! enough goes at the first scan after the cooldown ends.
//!
//! With `scaleDownDelayTypeLocal` (`--scale-down-delay-type-local`) the
//! delays hold only the pool that acted: upstream's
//! `isScaleDownInCooldown` then skips them, and its
//! `ScaleDownCandidatesDelayProcessor` leaves out the scale-down candidates
//! of a node group that scaled up, deleted or failed within them.

use std::collections::BTreeMap;
use std::fmt;

use drillbench_model::topology::Autoscaler;

/// When the autoscaler last acted, in milliseconds of the world's clock:
/// what upstream's `lastScaleUpTime`, `lastScaleDownDeleteTime` and
/// `lastScaleDownFailTime` hold, for the whole cluster and per pool.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cooldown {
    pub last_scale_up: Option<u64>,
    /// The scan that started deleting nodes (not when they were gone).
    pub last_delete: Option<u64>,
    /// When a scale-down failed: a drain refused or given up.
    pub last_failure: Option<u64>,
    /// The same three times per pool, as the delay processor registers
    /// them per node group.
    pub pools: BTreeMap<String, Cooldown>,
}

/// Which delay holds the scale-down back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    AfterAdd,
    AfterDelete,
    AfterFailure,
}

impl fmt::Display for Hold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Hold::AfterAdd => "scale-down-delay-after-add",
            Hold::AfterDelete => "scale-down-delay-after-delete",
            Hold::AfterFailure => "scale-down-delay-after-failure",
        })
    }
}

impl Cooldown {
    /// A scale-up of `pool` at `now`.
    pub fn scaled_up(&mut self, pool: &str, now: u64) {
        self.last_scale_up = Some(now);
        self.pools.entry(pool.to_owned()).or_default().last_scale_up = Some(now);
    }

    /// A scale-down that started deleting a node of `pool` at `now`.
    pub fn deleted(&mut self, pool: &str, now: u64) {
        self.last_delete = Some(now);
        self.pools.entry(pool.to_owned()).or_default().last_delete = Some(now);
    }

    /// A scale-down of a node of `pool` that failed at `now`.
    pub fn failed(&mut self, pool: &str, now: u64) {
        self.last_failure = Some(now);
        self.pools.entry(pool.to_owned()).or_default().last_failure = Some(now);
    }

    /// What holds the whole scale-down back at `now`: nothing when the
    /// delays are local to each pool ([`Cooldown::holds_pool`] then).
    pub fn holds_all(&self, settings: &Autoscaler, now: u64) -> Option<Hold> {
        if settings.scale_down_delay_type_local {
            return None;
        }
        self.holds(settings, now)
    }

    /// What holds back the scale-down of `pool`'s nodes at `now` when the
    /// delays are local to each pool; nothing otherwise.
    pub fn holds_pool(&self, settings: &Autoscaler, pool: &str, now: u64) -> Option<Hold> {
        if !settings.scale_down_delay_type_local {
            return None;
        }
        self.pools.get(pool)?.holds(settings, now)
    }

    /// What holds the scale-down back at `now`, if anything: a delay whose
    /// end is still ahead (upstream's `isScaleDownInCooldown` compares with
    /// `After`, so at the very end of a delay the scale-down may go on).
    fn holds(&self, settings: &Autoscaler, now: u64) -> Option<Hold> {
        let within = |last: Option<u64>, delay: u64| last.is_some_and(|at| at + delay > now);
        if within(
            self.last_scale_up,
            settings.scale_down_delay_after_add.as_millis(),
        ) {
            return Some(Hold::AfterAdd);
        }
        if within(
            self.last_failure,
            settings.scale_down_delay_after_failure.as_millis(),
        ) {
            return Some(Hold::AfterFailure);
        }
        if within(
            self.last_delete,
            settings.scale_down_delay_after_delete.as_millis(),
        ) {
            return Some(Hold::AfterDelete);
        }
        None
    }
}

// The delays' table tests are cases of the conformance suite
// (`tests/it/conformance/scale_down.rs`).
