//! The floating address's decision, apart from sockets and clocks: given
//! the health of every upstream at a moment, does the holder keep the
//! address or does it move, and to whom?
//!
//! Kept pure so the timing rules (keep the address for the whole delay,
//! then the first healthy upstream in configured order) are tested with
//! exact durations instead of sleeps.

use std::time::Duration;

/// Who holds the address and since when the holder has looked dead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failover {
    holder: usize,
    delay: Duration,
    /// When the holder's first failed check in the current run of failures
    /// happened; `None` while it is healthy.
    down_since: Option<Duration>,
}

impl Failover {
    /// The address starts on `holder`; a dead holder keeps it for `delay`.
    pub(crate) fn new(holder: usize, delay: Duration) -> Self {
        Self {
            holder,
            delay,
            down_since: None,
        }
    }

    /// The index of the upstream holding the address.
    pub(crate) fn holder(&self) -> usize {
        self.holder
    }

    /// Takes one round of health checks made at `now` (time since the
    /// proxy started) and returns the new holder if the address moves.
    ///
    /// A holder that recovers before the delay is over keeps the address,
    /// as a VIP does when its node comes back in time. When the delay is
    /// over but nothing is healthy, the address stays where it is: moving
    /// it to another dead upstream would only add a spurious event.
    pub(crate) fn observe(&mut self, now: Duration, healthy: &[bool]) -> Option<usize> {
        if healthy.get(self.holder).copied().unwrap_or(false) {
            self.down_since = None;
            return None;
        }
        let since = *self.down_since.get_or_insert(now);
        if now.saturating_sub(since) < self.delay {
            return None;
        }
        let next = healthy.iter().position(|healthy| *healthy)?;
        self.move_to(next);
        Some(next)
    }

    /// Moves the address on purpose; the new holder starts with a clean
    /// record, so a dead target still gets the whole delay.
    pub(crate) fn move_to(&mut self, holder: usize) {
        self.holder = holder;
        self.down_since = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DELAY: Duration = Duration::from_secs(10);

    fn at(seconds: u64) -> Duration {
        Duration::from_secs(seconds)
    }

    #[test]
    fn a_healthy_holder_keeps_the_address() {
        let mut failover = Failover::new(0, DELAY);
        for second in 0..100 {
            assert_eq!(failover.observe(at(second), &[true, true, true]), None);
        }
        assert_eq!(failover.holder(), 0);
    }

    #[test]
    fn a_dead_holder_keeps_the_address_for_the_whole_delay_then_moves() {
        let mut failover = Failover::new(0, DELAY);
        assert_eq!(failover.observe(at(0), &[true, true, true]), None);
        // Dead from second 5: the delay counts from the first failed check.
        for second in 5..15 {
            assert_eq!(
                failover.observe(at(second), &[false, true, true]),
                None,
                "{second}"
            );
            assert_eq!(failover.holder(), 0);
        }
        assert_eq!(failover.observe(at(15), &[false, true, true]), Some(1));
        assert_eq!(failover.holder(), 1);
    }

    #[test]
    fn the_new_holder_is_the_first_healthy_in_configured_order() {
        let mut failover = Failover::new(1, DELAY);
        failover.observe(at(0), &[false, false, true, true]);
        assert_eq!(
            failover.observe(at(10), &[false, false, true, true]),
            Some(2)
        );

        // Earlier entries win even when they come before the old holder.
        let mut failover = Failover::new(2, DELAY);
        failover.observe(at(0), &[true, false, false]);
        assert_eq!(failover.observe(at(10), &[true, false, false]), Some(0));
    }

    #[test]
    fn a_holder_that_recovers_in_time_keeps_the_address_and_the_clock_restarts() {
        let mut failover = Failover::new(0, DELAY);
        failover.observe(at(0), &[false, true]);
        assert_eq!(failover.observe(at(9), &[true, true]), None);
        // A new failure gets a full delay of its own, not the rest of the old one.
        assert_eq!(failover.observe(at(12), &[false, true]), None);
        assert_eq!(failover.observe(at(21), &[false, true]), None);
        assert_eq!(failover.observe(at(22), &[false, true]), Some(1));
    }

    #[test]
    fn with_nothing_healthy_the_address_stays_until_something_is() {
        let mut failover = Failover::new(0, DELAY);
        failover.observe(at(0), &[false, false]);
        assert_eq!(failover.observe(at(30), &[false, false]), None);
        assert_eq!(failover.holder(), 0);
        // The delay is long over, so the first healthy one takes it at once.
        assert_eq!(failover.observe(at(31), &[false, true]), Some(1));
    }

    #[test]
    fn a_manual_move_gives_a_dead_target_the_whole_delay() {
        let mut failover = Failover::new(0, DELAY);
        failover.observe(at(0), &[false, false, true]);
        failover.move_to(1);
        assert_eq!(failover.observe(at(20), &[false, false, true]), None);
        assert_eq!(failover.observe(at(29), &[false, false, true]), None);
        assert_eq!(failover.observe(at(30), &[false, false, true]), Some(2));
    }

    #[test]
    fn zero_delay_moves_on_the_first_failed_check() {
        let mut failover = Failover::new(0, Duration::ZERO);
        assert_eq!(failover.observe(at(3), &[false, true]), Some(1));
    }

    #[test]
    fn a_health_slice_shorter_than_the_holder_index_counts_as_dead() {
        let mut failover = Failover::new(3, Duration::ZERO);
        assert_eq!(failover.observe(at(0), &[true]), Some(0));
    }
}
