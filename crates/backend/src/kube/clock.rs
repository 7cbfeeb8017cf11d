//! The cluster's clock, read as drill time: a served simulator in `--step`
//! mode moves only when the bench advances it, any other cluster runs on
//! the wall clock.

use std::collections::BTreeMap;
use std::time::Instant;

use super::POLL;
use crate::bench_api::{BenchApi, BenchApiError};
use drillbench_model::bench_protocol::Now;
use drillbench_observe::Time;

pub(super) enum Clock {
    /// A served simulator in `--step` mode: time moves when the bench says.
    Stepped {
        api: BenchApi,
        /// Cluster ms at the drill's time zero.
        origin: u64,
        /// Cluster ms now.
        now: u64,
        /// Cluster ms of its next scheduled change.
        next: Option<u64>,
        /// The newest change's resourceVersion of each kind.
        latest: BTreeMap<String, u64>,
    },
    Wall {
        started: Instant,
        /// The wall time of the drill's time zero.
        origin: jiff::Timestamp,
    },
}

impl Clock {
    /// The clock of a cluster: stepped when it is a served simulator in
    /// `--step` mode, its drill time zero the simulator's now.
    #[expect(
        clippy::disallowed_methods,
        reason = "a real cluster runs on the wall clock"
    )]
    pub(super) fn start(served: Option<&BenchApi>) -> Result<Clock, BenchApiError> {
        let wall = || Clock::Wall {
            started: Instant::now(),
            origin: jiff::Timestamp::now(),
        };
        let Some(api) = served else {
            return Ok(wall());
        };
        let answer = api.now()?;
        if !answer.step {
            return Ok(wall());
        }
        let mut clock = Clock::Stepped {
            api: api.clone(),
            origin: answer.now_ms,
            now: 0,
            next: None,
            latest: BTreeMap::new(),
        };
        clock.read(&answer);
        Ok(clock)
    }

    /// Reads a served simulator's `/bench/v1/now` answer; a wall clock has
    /// nothing to read.
    pub(super) fn read(&mut self, answer: &Now) {
        if let Clock::Stepped {
            now, next, latest, ..
        } = self
        {
            *now = answer.now_ms;
            *next = answer.next_ms;
            *latest = answer
                .latest
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.parse().ok()?)))
                .collect();
        }
    }

    /// Asks a stepped clock's simulator what time it is.
    pub(super) fn refresh(&mut self) -> Result<(), BenchApiError> {
        if let Some(api) = self.stepped_api() {
            let answer = api.now()?;
            self.read(&answer);
        }
        Ok(())
    }

    pub(super) fn stepped_api(&self) -> Option<BenchApi> {
        match self {
            Clock::Stepped { api, .. } => Some(api.clone()),
            Clock::Wall { .. } => None,
        }
    }

    /// Drill time now.
    pub(super) fn now(&self) -> Time {
        match self {
            Clock::Stepped { origin, now, .. } => now.saturating_sub(*origin),
            Clock::Wall { started, .. } => started.elapsed().as_millis() as Time,
        }
    }

    /// When the drill next has something to look at: the cluster's next
    /// change or the bench's own next act (`also`, drill time), whichever
    /// comes first; on the wall clock, the next poll.
    pub(super) fn next_change(&self, also: Option<Time>) -> Option<Time> {
        match self {
            Clock::Stepped { origin, next, .. } => {
                let cluster = next.map(|n| n.saturating_sub(*origin));
                [cluster, also].into_iter().flatten().min()
            }
            Clock::Wall { .. } => Some(self.now() + POLL.as_millis() as Time),
        }
    }

    /// The cluster instant (cluster ms) a stepped clock must stop at next
    /// on its way to drill time `until`: the cluster's next change or the
    /// bench's own next act (`also`, drill time), not past `until` and not
    /// before now. `None` when nothing is due by then, or on the wall
    /// clock.
    pub(super) fn next_stop(&self, until: Time, also: Option<Time>) -> Option<u64> {
        let Clock::Stepped {
            origin, now, next, ..
        } = self
        else {
            return None;
        };
        let target = origin + until;
        [*next, also.map(|a| origin + a)]
            .into_iter()
            .flatten()
            .filter(|n| *n <= target && *n >= *now)
            .min()
    }

    /// Drill time as the cluster's ms (the same on the wall clock).
    pub(super) fn cluster_ms(&self, at: Time) -> u64 {
        match self {
            Clock::Stepped { origin, .. } => origin + at,
            Clock::Wall { .. } => at,
        }
    }

    /// The newest resourceVersion of each kind a stepped cluster holds,
    /// which the watches must reach to have caught up; `None` on the wall
    /// clock.
    pub(super) fn latest(&self) -> Option<&BTreeMap<String, u64>> {
        match self {
            Clock::Stepped { latest, .. } => Some(latest),
            Clock::Wall { .. } => None,
        }
    }

    /// The wall time of the drill's time zero, on the wall clock.
    pub(super) fn wall_origin(&self) -> Option<jiff::Timestamp> {
        match self {
            Clock::Wall { origin, .. } => Some(*origin),
            Clock::Stepped { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(now_ms: u64, next_ms: Option<u64>, latest: &[(&str, &str)]) -> Now {
        Now {
            now_ms,
            resource_version: "1".to_owned(),
            next_ms,
            epoch_seconds: 0,
            drill: "d".to_owned(),
            step: true,
            latest: latest
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            endpoint_holder: None,
            other_control_plane: None,
        }
    }

    fn stepped(origin: u64) -> Clock {
        Clock::Stepped {
            api: BenchApi::new(([127, 0, 0, 1], 9).into()),
            origin,
            now: origin,
            next: None,
            latest: BTreeMap::new(),
        }
    }

    #[test]
    fn a_stepped_clock_reads_drill_time_from_its_origin_and_keeps_numeric_versions() {
        let mut clock = stepped(5_000);
        assert_eq!(clock.now(), 0);
        clock.read(&answer(
            7_500,
            Some(9_000),
            &[("Pod", "41"), ("Node", "opaque")],
        ));
        assert_eq!(clock.now(), 2_500);
        assert_eq!(
            clock.latest(),
            Some(&BTreeMap::from([("Pod".to_owned(), 41)]))
        );
        assert_eq!(clock.cluster_ms(1_000), 6_000);
        assert_eq!(clock.next_change(None), Some(4_000));
        assert_eq!(clock.next_change(Some(3_000)), Some(3_000));
        assert!(clock.wall_origin().is_none());
        assert!(clock.stepped_api().is_some());
    }

    #[test]
    fn a_stepped_clock_stops_at_each_change_up_to_its_target_and_never_behind() {
        let mut clock = stepped(1_000);
        clock.read(&answer(3_000, Some(4_000), &[]));
        // The cluster's change at drill 3 s comes before the bench's at 5 s.
        assert_eq!(clock.next_stop(10_000, Some(5_000)), Some(4_000));
        assert_eq!(clock.next_stop(10_000, Some(2_500)), Some(3_500));
        // Past the target: nothing due.
        assert_eq!(clock.next_stop(2_000, Some(5_000)), None);
        // Already behind the clock: not a stop.
        assert_eq!(clock.next_stop(10_000, Some(1_000)), Some(4_000));
        clock.read(&answer(4_000, None, &[]));
        assert_eq!(clock.next_stop(10_000, None), None);
        assert_eq!(clock.next_change(None), None, "nothing scheduled");
    }

    #[test]
    fn a_wall_clock_polls_and_never_steps() {
        let mut clock = Clock::start(None).expect("no simulator to ask");
        assert!(clock.stepped_api().is_none());
        assert!(clock.latest().is_none());
        assert!(clock.wall_origin().is_some());
        assert_eq!(clock.next_stop(10_000, Some(1)), None);
        assert_eq!(clock.cluster_ms(1_234), 1_234);
        clock.read(&answer(99_000, None, &[]));
        assert!(clock.now() < 99_000, "an answer does not move the wall");
        let next = clock.next_change(Some(0)).expect("a poll");
        assert!(next >= POLL.as_millis() as Time);
        clock.refresh().expect("nothing to ask");
    }
}
