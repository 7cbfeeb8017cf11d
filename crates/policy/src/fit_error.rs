//! Why a pod fits no node, in the words of kube-scheduler's
//! `FailedScheduling` event, so a drill's timeline reads as `kubectl
//! describe pod` would on a real cluster.
//!
//! Upstream (`FitError.Error` in `pkg/scheduler/framework/types.go`, 1.30
//! and later) counts every reason of every node's first failing filter,
//! writes each as "`<count> <reason>`", sorts those strings as Go's
//! `sort.Strings` does (bytewise, so "10 …" comes before "2 …"), and
//! appends the PostFilter plugins' message. The default PostFilter is
//! `DefaultPreemption`, whose message is "preemption: " and either why the
//! pod may not preempt or a second `FitError` over the preemption dry run
//! (`Evaluator.Preempt` in `framework/preemption/preemption.go`).

use std::collections::BTreeMap;
use std::fmt;

/// `Evaluator.Preempt`'s status for the nodes it did not try: those where
/// a filter said removing pods cannot help (`UnschedulableAndUnresolvable`).
pub const PREEMPTION_NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// `SelectVictimsOnNode`'s status for a node with no pod of lower priority.
pub const NO_PREEMPTION_VICTIMS: &str = "No preemption victims found for incoming pod";

/// NodeResourcesFit's reason when the node holds its most pods.
pub const TOO_MANY_PODS: &str = "Too many pods";

/// The reasons counted over a scheduling cycle's nodes, with the message
/// its PostFilter plugins left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FitError {
    all_nodes: usize,
    reasons: BTreeMap<String, usize>,
    post_filter: Option<String>,
}

impl FitError {
    /// A cycle over `all_nodes` nodes (the scheduler's snapshot: every
    /// Node object, whatever its condition).
    pub fn new(all_nodes: usize) -> Self {
        FitError {
            all_nodes,
            reasons: BTreeMap::new(),
            post_filter: None,
        }
    }

    /// One node refused the pod for `reason` (a node whose filter gave
    /// several reasons adds each).
    pub fn add(&mut self, reason: &str) {
        match self.reasons.get_mut(reason) {
            Some(count) => *count += 1,
            None => {
                self.reasons.insert(reason.to_owned(), 1);
            }
        }
    }

    /// The message the PostFilter plugins returned, appended after the
    /// filters' reasons.
    pub fn with_post_filter(mut self, message: String) -> Self {
        self.post_filter = Some(message);
        self
    }
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} nodes are available:", self.all_nodes)?;
        let mut histogram: Vec<String> = self
            .reasons
            .iter()
            .map(|(reason, count)| format!("{count} {reason}"))
            .collect();
        histogram.sort_unstable();
        if !histogram.is_empty() {
            write!(f, " {}.", histogram.join(", "))?;
        }
        if let Some(post_filter) = &self.post_filter {
            write!(f, " {post_filter}")?;
        }
        Ok(())
    }
}

/// `DefaultPreemption.PostFilter`'s message when it preempts nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreemptionFailure {
    /// The pod's `preemptionPolicy` is `Never`.
    PolicyNever,
    /// Victims of its last preemption are still leaving its nominated node.
    TerminatingOnNominatedNode,
    /// The dry run found no node where removing lower-priority pods lets
    /// the pod in: each node's reason, over every node.
    NoCandidate(FitError),
}

impl fmt::Display for PreemptionFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `PodEligibleToPreemptOthers`' messages end with their own period.
        match self {
            PreemptionFailure::PolicyNever => {
                f.write_str("preemption: not eligible due to preemptionPolicy=Never.")
            }
            PreemptionFailure::TerminatingOnNominatedNode => f.write_str(
                "preemption: not eligible due to a terminating pod on the nominated node.",
            ),
            PreemptionFailure::NoCandidate(dry_run) => write!(f, "preemption: {dry_run}"),
        }
    }
}

/// TaintToleration's reason, naming the first taint the pod does not
/// tolerate (`node(s) had untolerated taint {key: value}`, since 1.26).
pub fn untolerated_taint(key: &str, value: &str) -> String {
    format!("node(s) had untolerated taint {{{key}: {value}}}")
}

/// Which of NodeResourcesFit's checks a node fails (`fitsRequest`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Shortfall {
    /// The node already runs its allocatable number of pods.
    pub pods: bool,
    /// The pod's CPU request exceeds what the node has left.
    pub cpu: bool,
    /// The pod's memory request exceeds what the node has left.
    pub memory: bool,
}

impl Shortfall {
    /// Whether any check failed.
    pub fn any(self) -> bool {
        self.pods || self.cpu || self.memory
    }

    /// The reasons, each counted on its own, in `fitsRequest`'s order.
    pub fn reasons(self) -> impl Iterator<Item = &'static str> {
        [
            (self.pods, TOO_MANY_PODS),
            (self.cpu, "Insufficient cpu"),
            (self.memory, "Insufficient memory"),
        ]
        .into_iter()
        .filter(|(short, _)| *short)
        .map(|(_, reason)| reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit_error(all: usize, reasons: &[(&str, usize)]) -> FitError {
        let mut e = FitError::new(all);
        for (reason, count) in reasons {
            for _ in 0..*count {
                e.add(reason);
            }
        }
        e
    }

    /// `TestFitError` (types_test.go) and the message real clusters print:
    /// "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes
    /// are available: 3 No preemption victims found for incoming pod."
    #[test]
    fn the_message_reads_as_kube_scheduler_writes_it() {
        let dry_run = fit_error(3, &[(NO_PREEMPTION_VICTIMS, 3)]);
        let e = fit_error(3, &[("Insufficient cpu", 3)])
            .with_post_filter(PreemptionFailure::NoCandidate(dry_run).to_string());
        assert_eq!(
            e.to_string(),
            "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are \
             available: 3 No preemption victims found for incoming pod."
        );
        // Control: without the PostFilter message, the filters' part ends
        // at its period.
        assert_eq!(
            fit_error(3, &[("Insufficient cpu", 3)]).to_string(),
            "0/3 nodes are available: 3 Insufficient cpu."
        );
    }

    /// `sortReasonsHistogram` sorts the "<count> <reason>" strings, count
    /// included, bytewise: "10 …" before "2 …", and equal counts by reason.
    #[test]
    fn the_histogram_is_sorted_as_strings_count_first() {
        let e = fit_error(
            13,
            &[
                ("node(s) were unschedulable", 2),
                ("Insufficient memory", 10),
                ("Insufficient cpu", 1),
            ],
        );
        assert_eq!(
            e.to_string(),
            "0/13 nodes are available: 1 Insufficient cpu, 10 Insufficient memory, \
             2 node(s) were unschedulable."
        );
        // Control: with the counts swapped the order follows them.
        let swapped = fit_error(
            13,
            &[
                ("node(s) were unschedulable", 10),
                ("Insufficient memory", 2),
                ("Insufficient cpu", 1),
            ],
        );
        assert_eq!(
            swapped.to_string(),
            "0/13 nodes are available: 1 Insufficient cpu, 10 node(s) were unschedulable, \
             2 Insufficient memory."
        );
    }

    /// `PodEligibleToPreemptOthers` (default_preemption.go): its own
    /// messages, after "preemption: ".
    #[test]
    fn an_ineligible_pod_says_why_after_the_filters() {
        let e = fit_error(1, &[("Insufficient cpu", 1)])
            .with_post_filter(PreemptionFailure::PolicyNever.to_string());
        assert_eq!(
            e.to_string(),
            "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due \
             to preemptionPolicy=Never."
        );
        let e = fit_error(1, &[("Insufficient cpu", 1)])
            .with_post_filter(PreemptionFailure::TerminatingOnNominatedNode.to_string());
        assert!(
            e.to_string().ends_with(
                "preemption: not eligible due to a terminating pod on the nominated node."
            )
        );
    }

    /// `fitsRequest` (noderesources/fit.go) keeps every failure reason, so
    /// a node short of CPU and memory counts under both.
    #[test]
    fn each_resource_short_is_its_own_reason() {
        let all = Shortfall {
            pods: true,
            cpu: true,
            memory: true,
        };
        assert_eq!(
            all.reasons().collect::<Vec<_>>(),
            ["Too many pods", "Insufficient cpu", "Insufficient memory"]
        );
        // Control: a node short of memory only says so.
        let memory = Shortfall {
            memory: true,
            ..Shortfall::default()
        };
        assert_eq!(
            memory.reasons().collect::<Vec<_>>(),
            ["Insufficient memory"]
        );
        assert!(memory.any() && !Shortfall::default().any());
    }

    /// TaintToleration's `Filter`: "{key: value}", an empty value left empty.
    #[test]
    fn the_taint_is_named_with_its_value() {
        assert_eq!(
            untolerated_taint("node.kubernetes.io/unreachable", ""),
            "node(s) had untolerated taint {node.kubernetes.io/unreachable: }"
        );
        assert_eq!(
            untolerated_taint("dedicated", "gpu"),
            "node(s) had untolerated taint {dedicated: gpu}"
        );
    }
}
