//! The budgets a run is held to while it runs: events on the timeline and
//! actions of the event loop. How many a drill produces depends on what the
//! cluster does (a crash loop, an autoscaler that keeps adding nodes), so
//! `bench validate` cannot count them; the simulator counts them and stops
//! at the budget, so a run ends with a clear error instead of filling the
//! machine's memory or never ending (issue 19). The runner turns the stop
//! into exit 2 (see `RunError::OverBudget`).

use drillbench_model::budget::{Budgets, exceeded};

/// The two limits and how much of them a run used.
#[derive(Debug, Clone)]
pub(crate) struct RunBudget {
    events: u64,
    actions: u64,
    actions_taken: u64,
    exceeded: Option<String>,
}

impl RunBudget {
    pub(crate) fn new(budgets: &Budgets) -> Self {
        RunBudget {
            events: budgets.events,
            actions: budgets.simulator_actions,
            actions_taken: 0,
            exceeded: None,
        }
    }

    /// Whether one more event may join a timeline of `recorded` events.
    /// The first refused one ends the run's budget.
    pub(crate) fn admit_event(&mut self, recorded: usize) -> bool {
        if self.exceeded.is_some() {
            return false;
        }
        if recorded as u64 >= self.events {
            self.exceeded = Some(exceeded(
                &format!("the run recorded {recorded} events and had more to record"),
                "events",
                self.events,
            ));
            return false;
        }
        true
    }

    /// Whether the event loop may take one more action.
    pub(crate) fn take_action(&mut self) -> bool {
        if self.exceeded.is_some() {
            return false;
        }
        if self.actions_taken >= self.actions {
            self.exceeded = Some(exceeded(
                &format!(
                    "the simulator took {} actions and had more to take",
                    self.actions_taken
                ),
                "simulatorActions",
                self.actions,
            ));
            return false;
        }
        self.actions_taken += 1;
        true
    }

    /// Why the run stopped short, once a budget ran out.
    pub(crate) fn exceeded(&self) -> Option<&str> {
        self.exceeded.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget(events: u64, actions: u64) -> RunBudget {
        RunBudget::new(&Budgets {
            events,
            simulator_actions: actions,
            ..Budgets::default()
        })
    }

    #[test]
    fn events_admitted_up_to_the_budget_then_none() {
        let mut run = budget(2, 10);
        assert!(run.admit_event(0));
        assert!(run.admit_event(1));
        assert_eq!(run.exceeded(), None);
        assert!(!run.admit_event(2));
        let why = run.exceeded().expect("exceeded").to_owned();
        assert!(why.contains("budgets.events"), "{why}");
        // Once out, nothing more: not events, not actions.
        assert!(!run.admit_event(0));
        assert!(!run.take_action());
    }

    #[test]
    fn actions_taken_up_to_the_budget_then_none() {
        let mut run = budget(10, 3);
        assert!((0..3).all(|_| run.take_action()));
        assert_eq!(run.exceeded(), None);
        assert!(!run.take_action());
        assert!(
            run.exceeded()
                .expect("exceeded")
                .contains("simulatorActions")
        );
    }
}
