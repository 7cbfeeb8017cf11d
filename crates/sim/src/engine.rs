//! The engine: virtual time, the queue of what happens later, the seeded
//! generator every random choice draws from, and the timings in force.
//!
//! Time only moves forward, to the next instant something is due; an
//! action is never scheduled in the past; actions due at the same instant
//! run in the order they were scheduled ([`Queue`]). With one generator
//! drawn from in a fixed order, the same seed gives the same run.

use super::clock::{Queue, Time};
use drillbench_model::duration::Duration;
use drillbench_model::rng::SeededRng;

/// Upstream defaults of the behaviour the simulator models.
#[derive(Debug, Clone)]
pub struct Timings {
    /// kube-controller-manager `--node-monitor-grace-period` (50s since 1.32).
    pub node_monitor_grace: Duration,
    /// How long after a server is gone the cloud controller deletes its Node.
    pub cloud_node_deletion: Duration,
    /// Pod GC deletes pods bound to a deleted node after this quarantine.
    pub pod_gc_quarantine: Duration,
    /// How long a drain waits between refused evictions.
    pub eviction_retry: Duration,
    /// How long a replacement control plane takes to boot and join.
    pub control_plane_boot: (Duration, Duration),
    /// How long an etcd learner takes to catch up before promotion.
    pub learner_catch_up: (Duration, Duration),
}

impl Default for Timings {
    fn default() -> Self {
        Timings {
            node_monitor_grace: Duration::from_secs(50),
            cloud_node_deletion: Duration::from_secs(5),
            pod_gc_quarantine: Duration::from_secs(40),
            eviction_retry: drillbench_policy::drain::EVICTION_RETRY,
            control_plane_boot: (Duration::from_mins(3), Duration::from_mins(5)),
            learner_catch_up: (Duration::from_secs(20), Duration::from_secs(60)),
        }
    }
}

/// The clock, the queue of actions `A`, the generator and the timings.
#[derive(Debug, Clone)]
pub(crate) struct Engine<A> {
    now: Time,
    queue: Queue<A>,
    rng: SeededRng,
    timings: Timings,
}

impl<A> Engine<A> {
    /// Time zero, nothing scheduled, the generator seeded.
    pub(crate) fn new(seed: u64) -> Self {
        Engine {
            now: 0,
            queue: Queue::default(),
            rng: SeededRng::new(seed),
            timings: Timings::default(),
        }
    }

    /// The current time.
    pub(crate) fn now(&self) -> Time {
        self.now
    }

    /// The timings in force.
    pub(crate) fn timings(&self) -> &Timings {
        &self.timings
    }

    /// The generator: every random choice of the run draws from it.
    pub(crate) fn rng(&mut self) -> &mut SeededRng {
        &mut self.rng
    }

    /// Schedules an action at `at`, or now if `at` has passed.
    pub(crate) fn schedule(&mut self, at: Time, action: A) {
        self.queue.push(at.max(self.now), action);
    }

    /// The time of the next scheduled action, if any.
    pub(crate) fn next_time(&self) -> Option<Time> {
        self.queue.peek_time()
    }

    /// Moves the clock to the next instant something is due, if that is
    /// at or before `until`; the actions due then are taken with
    /// [`Engine::pop_due`].
    pub(crate) fn next_instant(&mut self, until: Time) -> Option<Time> {
        let at = self.queue.peek_time().filter(|&at| at <= until)?;
        self.now = at;
        Some(at)
    }

    /// The next action due now, in the order they were scheduled (one
    /// scheduled now while others run is taken in the same instant).
    pub(crate) fn pop_due(&mut self) -> Option<A> {
        self.queue.pop_until(self.now).map(|(_, action)| action)
    }

    /// Moves the clock to `until` unless it is already later.
    pub(crate) fn wait_until(&mut self, until: Time) {
        self.now = self.now.max(until);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_come_in_time_order_and_actions_in_scheduling_order() {
        let mut engine = Engine::new(1);
        engine.schedule(20, "c");
        engine.schedule(10, "a");
        engine.schedule(20, "d");
        engine.schedule(10, "b");
        let mut seen = Vec::new();
        while let Some(at) = engine.next_instant(u64::MAX) {
            while let Some(action) = engine.pop_due() {
                seen.push((at, engine.now(), action));
            }
        }
        assert_eq!(
            seen,
            [(10, 10, "a"), (10, 10, "b"), (20, 20, "c"), (20, 20, "d")]
        );
    }

    #[test]
    fn the_past_is_never_scheduled_and_nothing_later_than_asked_runs() {
        let mut engine = Engine::new(1);
        engine.schedule(100, "later");
        assert_eq!(engine.next_instant(50), None, "nothing due by 50");
        assert_eq!(engine.now(), 0, "the clock did not move");
        engine.wait_until(50);
        assert_eq!(engine.now(), 50);
        engine.schedule(10, "late");
        assert_eq!(engine.next_time(), Some(50), "scheduled now, not at 10");
        assert_eq!(engine.next_instant(50), Some(50));
        assert_eq!(engine.pop_due(), Some("late"));
        assert_eq!(engine.pop_due(), None, "the next action is at 100");
        engine.wait_until(20);
        assert_eq!(engine.now(), 50, "the clock never goes back");
    }

    #[test]
    fn an_action_scheduled_now_runs_in_the_same_instant() {
        let mut engine = Engine::new(1);
        engine.schedule(5, 1);
        assert_eq!(engine.next_instant(10), Some(5));
        assert_eq!(engine.pop_due(), Some(1));
        engine.schedule(5, 2);
        assert_eq!(engine.pop_due(), Some(2));
    }

    #[test]
    fn the_same_seed_draws_the_same_numbers() {
        let mut a: Engine<()> = Engine::new(42);
        let mut b: Engine<()> = Engine::new(42);
        let draws = |e: &mut Engine<()>| (0..8).map(|_| e.rng().index(1000)).collect::<Vec<_>>();
        assert_eq!(draws(&mut a), draws(&mut b));
        let mut c: Engine<()> = Engine::new(43);
        assert_ne!(draws(&mut a), draws(&mut c));
    }
}
