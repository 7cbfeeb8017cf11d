//! Eviction-based drains, as `kubectl drain` does them: every pod but
//! DaemonSet pods is evicted through the Eviction API, a refusal (429: a
//! disruption budget says no) is retried after a pause, and the drain ends
//! when the node is empty or its timeout passes.
//!
//! What follows each pass is the rule the simulator's drain follows too
//! ([`drillbench_policy::drain::after_pass`]). Written against [`DrainOps`] so
//! the retry logic is tested without a cluster; the backend implements it
//! with kube-rs and its clock.

use drillbench_observe::Time;
pub use drillbench_policy::drain::Evicted;
use drillbench_policy::drain::{Next, after_pass};

use super::observer::PodOnNode;

/// What a drain needs from a cluster.
pub trait DrainOps {
    /// The error of an eviction that is neither accepted nor refused.
    type Error;
    /// Drill time now.
    fn now(&self) -> Time;
    /// The pods still on the node that a drain evicts.
    fn pods_on(&mut self, node: &str) -> Vec<PodOnNode>;
    /// Whether the pod's termination is already under way (evicted earlier).
    fn terminating(&self, pod: &PodOnNode) -> bool;
    /// Evicts one pod.
    fn evict(&mut self, pod: &PodOnNode) -> Result<Evicted, Self::Error>;
    /// Lets `ms` of cluster time pass.
    fn wait(&mut self, ms: Time);
}

/// How a drain ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DrainOutcome {
    /// No pod is left: the node may be deleted.
    Drained {
        /// Evictions refused along the way.
        refusals: u32,
    },
    /// The timeout passed with pods left.
    TimedOut {
        /// `namespace/name` of the pods left.
        remaining: Vec<String>,
        /// Evictions refused along the way.
        refusals: u32,
        /// The last refusal's message.
        last_refusal: Option<String>,
    },
}

/// Drains `node`: evicts until it is empty or `timeout_ms` passed, pausing
/// `retry_ms` between rounds (kubectl pauses 5 s after a 429).
pub fn drain<O: DrainOps>(
    ops: &mut O,
    node: &str,
    timeout_ms: Time,
    retry_ms: Time,
) -> Result<DrainOutcome, O::Error> {
    let deadline = ops.now() + timeout_ms;
    let mut refusals = 0;
    let mut last_refusal = None;
    loop {
        for pod in &ops.pods_on(node) {
            if ops.terminating(pod) {
                continue;
            }
            match ops.evict(pod)? {
                Evicted::Accepted | Evicted::Gone => {}
                Evicted::Refused(message) => {
                    refusals += 1;
                    last_refusal = Some(message);
                }
            }
        }
        let now = ops.now();
        let remaining = ops.pods_on(node);
        match after_pass(remaining.len(), now, Some(deadline), retry_ms) {
            Next::Drained => return Ok(DrainOutcome::Drained { refusals }),
            Next::TimedOut => {
                return Ok(DrainOutcome::TimedOut {
                    remaining: remaining
                        .iter()
                        .map(|p| format!("{}/{}", p.namespace, p.name))
                        .collect(),
                    refusals,
                    last_refusal,
                });
            }
            Next::RetryAt(at) => ops.wait(at.saturating_sub(now).max(1)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A node's pods and scripted eviction answers per pod; an accepted
    /// eviction removes the pod after `termination` ms.
    struct Script {
        now: Time,
        pods: BTreeMap<String, Option<Time>>,
        answers: BTreeMap<String, Vec<Evicted>>,
        termination: Time,
        evictions: Vec<(Time, String)>,
        waits: Vec<Time>,
    }

    impl Script {
        fn new(pods: &[&str], termination: Time) -> Self {
            Script {
                now: 0,
                pods: pods.iter().map(|p| (p.to_string(), None)).collect(),
                answers: BTreeMap::new(),
                termination,
                evictions: Vec::new(),
                waits: Vec::new(),
            }
        }
    }

    impl DrainOps for Script {
        type Error = String;

        fn now(&self) -> Time {
            self.now
        }

        fn pods_on(&mut self, _node: &str) -> Vec<PodOnNode> {
            let now = self.now;
            self.pods
                .retain(|_, gone_at| gone_at.is_none_or(|t| t > now));
            self.pods
                .keys()
                .map(|name| PodOnNode {
                    namespace: "apps".to_owned(),
                    name: name.clone(),
                    termination_grace_seconds: None,
                })
                .collect()
        }

        fn terminating(&self, pod: &PodOnNode) -> bool {
            self.pods.get(&pod.name).is_some_and(Option::is_some)
        }

        fn evict(&mut self, pod: &PodOnNode) -> Result<Evicted, String> {
            self.evictions.push((self.now, pod.name.clone()));
            let answer = self
                .answers
                .get_mut(&pod.name)
                .and_then(|a| (!a.is_empty()).then(|| a.remove(0)))
                .unwrap_or(Evicted::Accepted);
            if answer == Evicted::Accepted {
                self.pods
                    .insert(pod.name.clone(), Some(self.now + self.termination));
            }
            Ok(answer)
        }

        fn wait(&mut self, ms: Time) {
            self.waits.push(ms);
            self.now += ms;
        }
    }

    fn refused() -> Evicted {
        Evicted::Refused(
            "Cannot evict pod as it would violate the pod's disruption budget.".to_owned(),
        )
    }

    #[test]
    fn a_refused_eviction_is_retried_until_it_is_accepted() {
        let mut script = Script::new(&["api-0", "db-0"], 1_000);
        script
            .answers
            .insert("db-0".to_owned(), vec![refused(), refused()]);
        let outcome = drain(&mut script, "w1", 60_000, 5_000).expect("drain");
        assert_eq!(outcome, DrainOutcome::Drained { refusals: 2 });
        // api-0 once; db-0 at 0 and 5 s refused, accepted at 10 s; a pod
        // already terminating is not evicted again.
        assert_eq!(
            script.evictions,
            [
                (0, "api-0".to_owned()),
                (0, "db-0".to_owned()),
                (5_000, "db-0".to_owned()),
                (10_000, "db-0".to_owned()),
            ]
        );
        assert_eq!(script.now, 15_000, "the node was empty at the next round");
    }

    #[test]
    fn a_drain_that_stays_refused_times_out_at_its_deadline_with_the_pods_left() {
        let mut script = Script::new(&["db-0"], 1_000);
        script
            .answers
            .insert("db-0".to_owned(), vec![refused(); 100]);
        let outcome = drain(&mut script, "w1", 12_000, 5_000).expect("drain");
        let DrainOutcome::TimedOut {
            remaining,
            refusals,
            last_refusal,
        } = outcome
        else {
            panic!("must time out: {outcome:?}");
        };
        assert_eq!(remaining, ["apps/db-0"]);
        // At 0, 5 s, 10 s and the deadline 12 s (the last pause is cut short).
        assert_eq!(refusals, 4);
        assert_eq!(script.waits, [5_000, 5_000, 2_000]);
        assert!(last_refusal.is_some_and(|m| m.contains("disruption budget")));
    }

    #[test]
    fn an_eviction_error_ends_the_drain() {
        struct Failing;
        impl DrainOps for Failing {
            type Error = String;
            fn now(&self) -> Time {
                0
            }
            fn pods_on(&mut self, _: &str) -> Vec<PodOnNode> {
                vec![PodOnNode {
                    namespace: "a".to_owned(),
                    name: "p".to_owned(),
                    termination_grace_seconds: None,
                }]
            }
            fn terminating(&self, _: &PodOnNode) -> bool {
                false
            }
            fn evict(&mut self, _: &PodOnNode) -> Result<Evicted, String> {
                Err("500".to_owned())
            }
            fn wait(&mut self, _: Time) {
                panic!("no wait after an error");
            }
        }
        assert_eq!(drain(&mut Failing, "n", 1_000, 100), Err("500".to_owned()));
    }
}
