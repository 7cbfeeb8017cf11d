//! Drains through the Eviction API, and what follows a pass of evictions.
//!
//! Two drainers evict pods, with different answers to a refusal (429: a
//! PodDisruptionBudget says no):
//!
//! - an operator's drain (`kubectl drain`): every pod but DaemonSet pods is
//!   evicted; refused ones are tried again after [`EVICTION_RETRY`] until
//!   the node is empty or the drain's timeout passes ([`after_pass`]);
//! - the cluster autoscaler's scale-down: the first refusal aborts the
//!   scale-down and the node schedules again ([`evict_until_refused`]);
//!   once every pod is evicted it waits, looking again every
//!   [`EVICTION_RETRY`], until they have terminated.
//!
//! Each world runs the waiting its own way (the simulator schedules the
//! next pass in virtual time, the kube layer sleeps or steps its clock);
//! the decisions are these.

use drillbench_model::duration::Duration;

/// The pause after a refused eviction: `kubectl drain` waits 5 s before it
/// tries a refused pod again.
pub const EVICTION_RETRY: Duration = Duration::from_secs(5);
/// core/v1 `PodSpec.terminationGracePeriodSeconds` when the pod sets none:
/// "Defaults to 30 seconds" (`DefaultTerminationGracePeriodSeconds`).
pub const DEFAULT_TERMINATION_GRACE: Duration = Duration::from_secs(30);

/// The grace period a pod terminates in when it is deleted or evicted
/// without an override (the taint-eviction controller, preemption, a drain,
/// a controller scaling down, `kubectl delete`): its own
/// `terminationGracePeriodSeconds`, else [`DEFAULT_TERMINATION_GRACE`]. Zero
/// removes it at once. A negative value, which the API server admits, is
/// taken as one second, as the API server takes it (on the delete path
/// since 1.22, kubernetes/kubernetes#98866; set to 1 when the pod is
/// created since 1.27, #115606).
pub fn pod_grace(written: Option<i64>) -> Duration {
    written.map_or(DEFAULT_TERMINATION_GRACE, |s| {
        Duration::from_secs(u64::try_from(s).unwrap_or(1))
    })
}

/// The grace period the cluster autoscaler's scale-down asks for in each
/// eviction (`evictPod` in `core/scaledown/actuation/drain.go`,
/// `DeleteOptions.GracePeriodSeconds`): the pod's own
/// `terminationGracePeriodSeconds` capped at `--max-graceful-termination-sec`
/// (default 600), and 30 s for a pod that sets none, whatever the flag.
pub fn autoscaler_grace(written: Option<i64>, max_graceful_termination_sec: u32) -> Duration {
    match written {
        None => DEFAULT_TERMINATION_GRACE,
        Some(_) => {
            pod_grace(written).min(Duration::from_secs(u64::from(max_graceful_termination_sec)))
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evicted {
    /// Accepted: the pod terminates.
    Accepted,
    /// Refused with 429, with the API's message: retry later.
    Refused(String),
    /// The pod is already gone (404).
    Gone,
}

/// What a drain does after one pass of evictions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// No pod is left: the node may be deleted.
    Drained,
    /// Pods are left and the deadline has passed: the drain gives up.
    TimedOut,
    /// Pods are left: the next pass is at this time.
    RetryAt(u64),
}

/// The decision after a pass at `now` that left `remaining` pods (those
/// still terminating included): done, given up at the `deadline` (`None`:
/// the drain waits as long as it takes), or another pass `retry` later,
/// never past the deadline.
pub fn after_pass(remaining: usize, now: u64, deadline: Option<u64>, retry: u64) -> Next {
    if remaining == 0 {
        return Next::Drained;
    }
    match deadline {
        Some(deadline) if now >= deadline => Next::TimedOut,
        Some(deadline) => Next::RetryAt(now.saturating_add(retry).min(deadline)),
        None => Next::RetryAt(now.saturating_add(retry)),
    }
}

/// The autoscaler's evictions: each pod in order until the first refusal,
/// whose message is returned (the scale-down is aborted and later pods are
/// not tried).
pub fn evict_until_refused<P, E>(
    pods: impl IntoIterator<Item = P>,
    mut evict: impl FnMut(P) -> Result<Evicted, E>,
) -> Result<Option<String>, E> {
    for pod in pods {
        if let Evicted::Refused(why) = evict(pod)? {
            return Ok(Some(why));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETRY: u64 = 5_000;

    /// `kubectl drain` (`k8s.io/kubectl/pkg/drain`, `evictPods`): a 429
    /// is retried after 5 s until the drain's timeout; the node is done
    /// when no pod is left. Each row has its control with one number
    /// changed and the other outcome.
    #[test]
    fn after_a_pass_the_drain_is_done_gives_up_or_retries() {
        let rows: &[(&str, usize, u64, Option<u64>, Next)] = &[
            ("no pod left", 0, 1_000, Some(60_000), Next::Drained),
            (
                "control: one left",
                1,
                1_000,
                Some(60_000),
                Next::RetryAt(6_000),
            ),
            (
                "at the deadline with pods left",
                1,
                60_000,
                Some(60_000),
                Next::TimedOut,
            ),
            (
                "control: just before it",
                1,
                59_999,
                Some(60_000),
                Next::RetryAt(60_000),
            ),
            (
                "emptied at the deadline",
                0,
                60_000,
                Some(60_000),
                Next::Drained,
            ),
            (
                "the last pause is cut at the deadline",
                2,
                57_000,
                Some(60_000),
                Next::RetryAt(60_000),
            ),
            (
                "control: a later deadline",
                2,
                57_000,
                Some(70_000),
                Next::RetryAt(62_000),
            ),
            (
                "no deadline waits as long as it takes",
                3,
                1 << 40,
                None,
                Next::RetryAt((1 << 40) + RETRY),
            ),
        ];
        for (why, remaining, now, deadline, want) in rows {
            assert_eq!(
                after_pass(*remaining, *now, *deadline, RETRY),
                *want,
                "{why}"
            );
        }
    }

    /// The autoscaler's scale-down (cluster-autoscaler FAQ "How does
    /// scale-down work?": a node whose pods cannot be evicted is not
    /// deleted): the first refusal aborts, later pods are not tried; the
    /// control, with every eviction accepted, tries them all.
    #[test]
    fn the_first_refusal_aborts_the_autoscalers_evictions_and_its_control_evicts_all() {
        let answers = |refused: Option<usize>| {
            let mut tried = Vec::new();
            let outcome = evict_until_refused(0..3, |pod| {
                tried.push(pod);
                Ok::<_, ()>(if Some(pod) == refused {
                    Evicted::Refused("429".to_owned())
                } else {
                    Evicted::Accepted
                })
            });
            (outcome, tried)
        };
        assert_eq!(answers(Some(1)), (Ok(Some("429".to_owned())), vec![0, 1]));
        assert_eq!(answers(None), (Ok(None), vec![0, 1, 2]));
        let failed = evict_until_refused(0..3, |_| Err::<Evicted, _>("500"));
        assert_eq!(failed, Err("500"), "an API error ends it");
    }
}
