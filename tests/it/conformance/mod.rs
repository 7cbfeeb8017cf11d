//! The conformance suite: the simulator's rules against Kubernetes' own
//! documentation and upstream test tables, in one place.
//!
//! Every case is a row transcribed from a named source (an upstream
//! `_test.go` table, a documentation page, the cluster-autoscaler FAQ, the
//! etcd learner design), run through the shared rule layer
//! (`drillbench-policy`, and the `drillbench-model` Kubernetes semantics it
//! builds on) that the simulator and the real-cluster layer both call. Each
//! case comes with a control: the same row with one fact flipped, whose
//! expected outcome differs. A rule that ignored the flipped fact would
//! fail one of the two, so no row passes by accident.
//!
//! [`census`] holds the suite to that shape: enough cases, every one citing
//! a source, every control flipping its outcome, and every behaviour of the
//! fidelity issue covered.

mod disruption;
mod drainability;
mod inter_pod_affinity;
mod node_affinity;
mod priority;
mod scale_down;
mod taint_toleration;
mod topology_spread;

use std::collections::BTreeMap;
use std::fmt::Debug;

/// Where a case comes from: the page or upstream file it transcribes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Source {
    NodeAffinity,
    NodeAffinityDocs,
    TaintToleration,
    TaintEviction,
    InterPodAffinity,
    InterPodAffinityDocs,
    PodTopologySpread,
    PodTopologySpreadDocs,
    PodTopologySpreadScoring,
    Disruption,
    Eviction,
    Drainability,
    AutoscalerFaq,
    AutoscalerSimulator,
    AutoscalerActuation,
    PriorityAdmission,
    Preemption,
    DaemonSetTolerations,
    PodTermination,
}

impl Source {
    /// The citation: a Kubernetes documentation page or an upstream file.
    pub(crate) fn cites(self) -> &'static str {
        match self {
            Source::NodeAffinity => {
                "kubernetes/component-helpers scheduling/corev1/nodeaffinity/nodeaffinity_test.go"
            }
            Source::NodeAffinityDocs => {
                "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#node-affinity"
            }
            Source::TaintToleration => {
                "kubernetes/component-helpers scheduling/corev1/helpers_test.go (TestFindMatchingUntoleratedTaint) and k8s.io/api core/v1/toleration_test.go"
            }
            Source::TaintEviction => {
                "kubernetes/kubernetes pkg/controller/tainteviction/taint_eviction_test.go; https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-based-evictions"
            }
            Source::InterPodAffinity => {
                "kubernetes/kubernetes pkg/scheduler/framework/plugins/interpodaffinity/filtering_test.go"
            }
            Source::InterPodAffinityDocs => {
                "https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#namespace-selector"
            }
            Source::PodTopologySpread => {
                "kubernetes/kubernetes pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go"
            }
            Source::PodTopologySpreadDocs => {
                "https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/"
            }
            Source::PodTopologySpreadScoring => {
                "kubernetes/kubernetes pkg/scheduler/framework/plugins/podtopologyspread/scoring_test.go"
            }
            Source::Disruption => {
                "kubernetes/kubernetes pkg/controller/disruption/disruption_test.go; https://kubernetes.io/docs/tasks/run-application/configure-pdb/"
            }
            Source::Eviction => {
                "kubernetes/kubernetes pkg/registry/core/pod/storage/eviction_test.go; https://kubernetes.io/docs/concepts/scheduling-eviction/api-eviction/"
            }
            Source::Drainability => {
                "kubernetes/autoscaler cluster-autoscaler/simulator/drainability/rules and utils/drain/drain_test.go"
            }
            Source::AutoscalerFaq => {
                "kubernetes/autoscaler cluster-autoscaler/FAQ.md (What types of pods can prevent CA from removing a node?; What are the parameters to CA?)"
            }
            Source::AutoscalerSimulator => {
                "kubernetes/autoscaler cluster-autoscaler/simulator/cluster.go (the scheduler framework's filters on a snapshot without the drained node)"
            }
            Source::AutoscalerActuation => {
                "kubernetes/autoscaler cluster-autoscaler/core/scaledown/actuation/drain.go"
            }
            Source::PriorityAdmission => {
                "kubernetes/kubernetes plugin/pkg/admission/priority/admission_test.go; https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/"
            }
            Source::Preemption => {
                "kubernetes/kubernetes pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go"
            }
            Source::DaemonSetTolerations => {
                "https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/#taints-and-tolerations; plugin/pkg/admission/defaulttolerationseconds"
            }
            Source::PodTermination => {
                "https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-termination"
            }
        }
    }
}

/// The behaviours the fidelity issue (issue 14) lists, each to be covered
/// by at least one pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Behaviour {
    NodeAffinity,
    TaintToleration,
    ExistingAntiAffinity,
    InterPodAffinity,
    NamespaceSelector,
    SpreadMaxSkew,
    SpreadScheduleAnyway,
    SpreadMinDomains,
    SpreadInclusionPolicies,
    SpreadMatchLabelKeys,
    SpreadSystemDefaults,
    PriorityClass,
    Preemption,
    NoExecuteTaints,
    DaemonSetTolerations,
    DisruptionBudget,
    ScaleDownFilters,
    ScaleDownDelays,
    LocalStorage,
    SafeToEvict,
    TerminationGrace,
    ApiValidation,
}

impl Behaviour {
    const ALL: [Behaviour; 22] = [
        Behaviour::NodeAffinity,
        Behaviour::TaintToleration,
        Behaviour::ExistingAntiAffinity,
        Behaviour::InterPodAffinity,
        Behaviour::NamespaceSelector,
        Behaviour::SpreadMaxSkew,
        Behaviour::SpreadScheduleAnyway,
        Behaviour::SpreadMinDomains,
        Behaviour::SpreadInclusionPolicies,
        Behaviour::SpreadMatchLabelKeys,
        Behaviour::SpreadSystemDefaults,
        Behaviour::PriorityClass,
        Behaviour::Preemption,
        Behaviour::NoExecuteTaints,
        Behaviour::DaemonSetTolerations,
        Behaviour::DisruptionBudget,
        Behaviour::ScaleDownFilters,
        Behaviour::ScaleDownDelays,
        Behaviour::LocalStorage,
        Behaviour::SafeToEvict,
        Behaviour::TerminationGrace,
        Behaviour::ApiValidation,
    ];
}

/// One row: what the rule decided and what the source says it decides,
/// both in their `Debug` form so that rows of every rule share one shape.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) got: String,
    pub(crate) want: String,
}

/// A row and its control.
#[derive(Debug, Clone)]
pub(crate) struct Pair {
    pub(crate) source: Source,
    pub(crate) behaviour: Behaviour,
    pub(crate) case: Case,
    pub(crate) control: Case,
}

/// A row: its name (as its source names it), what the rule decided, and
/// what the source says.
pub(crate) fn row(name: &str, got: impl Debug, want: impl Debug) -> Case {
    Case {
        name: name.to_owned(),
        got: format!("{got:?}"),
        want: format!("{want:?}"),
    }
}

/// A row and the control that flips its outcome.
pub(crate) fn pair(source: Source, behaviour: Behaviour, case: Case, control: Case) -> Pair {
    Pair {
        source,
        behaviour,
        case,
        control,
    }
}

/// Every pair of the suite.
fn all() -> Vec<Pair> {
    [
        node_affinity::pairs(),
        taint_toleration::pairs(),
        inter_pod_affinity::pairs(),
        topology_spread::pairs(),
        disruption::pairs(),
        drainability::pairs(),
        scale_down::pairs(),
        priority::pairs(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Runs one area's pairs: every row and every control decides as its
/// source says.
pub(crate) fn check(pairs: Vec<Pair>) {
    let mut wrong = Vec::new();
    for p in &pairs {
        for c in [&p.case, &p.control] {
            if c.got != c.want {
                wrong.push(format!(
                    "{} [{}]: got {}, want {}",
                    c.name,
                    p.source.cites(),
                    c.got,
                    c.want
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Labels from pairs.
pub(crate) fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// A Kubernetes object from its JSON form.
pub(crate) fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("a valid object")
}

#[test]
fn node_affinity() {
    check(node_affinity::pairs());
}

#[test]
fn taint_toleration() {
    check(taint_toleration::pairs());
}

#[test]
fn inter_pod_affinity() {
    check(inter_pod_affinity::pairs());
}

#[test]
fn topology_spread() {
    check(topology_spread::pairs());
}

#[test]
fn disruption() {
    check(disruption::pairs());
}

#[test]
fn drainability() {
    check(drainability::pairs());
}

#[test]
fn scale_down() {
    check(scale_down::pairs());
}

#[test]
fn priority() {
    check(priority::pairs());
}

/// The suite's shape: at least 150 cases, each naming its source, each row
/// with a control whose expected outcome differs, and every behaviour of
/// the fidelity issue covered.
#[test]
fn census() {
    let pairs = all();
    let cases = pairs.len() * 2;
    assert!(cases >= 150, "{cases} cases, the issue asks for 150");
    for p in &pairs {
        let cites = p.source.cites();
        assert!(
            cites.starts_with("https://kubernetes.io/docs/")
                || cites.starts_with("kubernetes/")
                || cites.starts_with("https://etcd.io/"),
            "{}: cites {cites}",
            p.case.name
        );
        for c in [&p.case, &p.control] {
            assert!(!c.name.trim().is_empty(), "a case without a name: {c:?}");
        }
        assert_ne!(
            p.case.want, p.control.want,
            "{}: its control `{}` must flip the outcome",
            p.case.name, p.control.name
        );
        assert_ne!(p.case.name, p.control.name, "a control is its own row");
    }
    let mut names: Vec<&str> = pairs
        .iter()
        .flat_map(|p| [p.case.name.as_str(), p.control.name.as_str()])
        .collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before, "every case is named apart");
    for b in Behaviour::ALL {
        assert!(
            pairs.iter().any(|p| p.behaviour == b),
            "no pair covers {b:?}"
        );
    }
}
