//! Virtual time and the event queue: time jumps to the next event, and
//! events at the same instant run in the order they were scheduled, so the
//! run is the same on every machine.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use drillbench_model::duration::Duration;

/// A fixed start for drill time as wall-clock time (2026-01-01T00:00:00Z),
/// so reports that print timestamps stay deterministic.
pub const EPOCH_SECONDS: i64 = 1_767_225_600;

/// Milliseconds since the drill started.
pub type Time = u64;

/// The offset of a duration from `now`.
pub fn after(now: Time, delay: Duration) -> Time {
    now.saturating_add(delay.as_millis())
}

/// A queue of actions ordered by time, then by insertion.
#[derive(Debug, Clone)]
pub struct Queue<A> {
    heap: BinaryHeap<Reverse<(Time, u64, Slot)>>,
    actions: Vec<Option<A>>,
    seq: u64,
}

/// Index into the action store; ordering never looks at the action itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Slot(usize);

impl<A> Default for Queue<A> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            actions: Vec::new(),
            seq: 0,
        }
    }
}

impl<A> Queue<A> {
    /// Schedules an action at `at`.
    pub fn push(&mut self, at: Time, action: A) {
        let slot = Slot(self.actions.len());
        self.actions.push(Some(action));
        self.heap.push(Reverse((at, self.seq, slot)));
        self.seq += 1;
    }

    /// The time of the next action, if any.
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    /// Takes the next action if it is due at or before `limit`.
    pub fn pop_until(&mut self, limit: Time) -> Option<(Time, A)> {
        let &Reverse((at, _, _)) = self.heap.peek()?;
        if at > limit {
            return None;
        }
        let Reverse((at, _, slot)) = self.heap.pop()?;
        let action = self.actions[slot.0].take()?;
        if self.heap.is_empty() {
            // Every slot has been taken: reuse the store's memory.
            self.actions.clear();
        }
        Some((at, action))
    }

    /// How many actions are waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no action is waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn actions_run_in_time_order_then_in_insertion_order() {
        let mut q = Queue::default();
        q.push(20, "c");
        q.push(10, "a");
        q.push(20, "d");
        q.push(10, "b");
        assert_eq!(q.peek_time(), Some(10));
        let mut seen = Vec::new();
        while let Some((at, a)) = q.pop_until(u64::MAX) {
            seen.push((at, a));
        }
        assert_eq!(seen, [(10, "a"), (10, "b"), (20, "c"), (20, "d")]);
    }

    #[test]
    fn nothing_after_the_limit_is_taken() {
        let mut q = Queue::default();
        q.push(5, 1);
        q.push(15, 2);
        assert_eq!(q.pop_until(10), Some((5, 1)));
        assert_eq!(q.pop_until(10), None);
        assert_eq!(q.len(), 1);
    }
}
