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

use std::fmt;

use drillbench_model::topology::Autoscaler;

/// When the autoscaler last acted, in milliseconds of the world's clock:
/// what upstream's `lastScaleUpTime`, `lastScaleDownDeleteTime` and
/// `lastScaleDownFailTime` hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cooldown {
    pub last_scale_up: Option<u64>,
    /// The scan that started deleting nodes (not when they were gone).
    pub last_delete: Option<u64>,
    /// When a scale-down failed: a drain refused or given up.
    pub last_failure: Option<u64>,
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
    /// What holds the scale-down back at `now`, if anything: a delay whose
    /// end is still ahead (upstream's `isScaleDownInCooldown` compares with
    /// `After`, so at the very end of a delay the scale-down may go on).
    pub fn holds(&self, settings: &Autoscaler, now: u64) -> Option<Hold> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_model::duration::Duration;

    const MIN: u64 = 60_000;

    /// cluster-autoscaler FAQ "What are the parameters to CA?"
    /// (`scale-down-delay-after-add` 10m, `-after-delete` 0s,
    /// `-after-failure` 3m) and "I have a couple of nodes with low
    /// utilization, but they are not scaled down. Why?" ("there was a
    /// scale-up in the last 10 min", "a failed scale-down … in the last 3
    /// minutes"); `core/static_autoscaler.go` `isScaleDownInCooldown`
    /// (`last.Add(delay).After(now)`). Each row has its control one
    /// instant later, where the scale-down may go on.
    #[test]
    fn each_delay_holds_the_scale_down_until_it_ends_and_its_control_lets_it_go() {
        let defaults = Autoscaler::default();
        let at = |last_scale_up, last_delete, last_failure| Cooldown {
            last_scale_up,
            last_delete,
            last_failure,
        };
        let rows: &[(&str, Cooldown, u64, Option<Hold>)] = &[
            ("nothing happened", at(None, None, None), 0, None),
            (
                "9 minutes after a scale-up",
                at(Some(0), None, None),
                9 * MIN,
                Some(Hold::AfterAdd),
            ),
            (
                "control: 10 minutes after it",
                at(Some(0), None, None),
                10 * MIN,
                None,
            ),
            (
                "a scale-up in this very scan",
                at(Some(5 * MIN), None, None),
                5 * MIN,
                Some(Hold::AfterAdd),
            ),
            (
                "2m59s after a failed scale-down",
                at(None, None, Some(0)),
                3 * MIN - 1_000,
                Some(Hold::AfterFailure),
            ),
            (
                "control: 3 minutes after it",
                at(None, None, Some(0)),
                3 * MIN,
                None,
            ),
            (
                "a scale-down started in this scan (delay 0s)",
                at(None, Some(0), None),
                0,
                None,
            ),
        ];
        for (why, cooldown, now, want) in rows {
            assert_eq!(cooldown.holds(&defaults, *now), *want, "{why}");
        }
        // The delay after delete, when set, holds like the others.
        let mut set = defaults.clone();
        set.scale_down_delay_after_delete = Duration::from_mins(2);
        let deleted = at(None, Some(0), None);
        assert_eq!(deleted.holds(&set, MIN), Some(Hold::AfterDelete));
        assert_eq!(deleted.holds(&set, 2 * MIN), None, "control");
    }
}
