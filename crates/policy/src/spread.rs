//! Pod topology spread: kube-scheduler's `PodTopologySpread` filter
//! (`whenUnsatisfiable: DoNotSchedule`), for the scheduler and the
//! cluster autoscaler's rescheduling simulation alike.
//!
//! As upstream (`pkg/scheduler/framework/plugins/podtopologyspread/
//! common.go` and `filtering.go`):
//!
//! - a constraint's defaults: `minDomains` 1, `nodeAffinityPolicy: Honor`
//!   (only nodes the pod's nodeSelector and required node affinity admit
//!   are domains), `nodeTaintsPolicy: Ignore` (a tainted node still counts
//!   as a domain); `matchLabelKeys` adds `key = <the pod's value>` to the
//!   selector for each listed key the pod carries; a constraint without
//!   `labelSelector` selects no pod;
//! - the domains are the values of the topology key on the nodes that
//!   carry every constraint's key and pass the constraint's inclusion
//!   policies; a domain counts the pods of the incoming pod's namespace
//!   that the selector matches and that are not terminating;
//! - a node passes when (pods in its domain) + (1 if the pod matches its
//!   own selector) − (the global minimum) ≤ `maxSkew`, where the global
//!   minimum is 0 while there are fewer domains than `minDomains`; a node
//!   without the key never passes.
//!
//! The system default constraints (`plugin.go`'s
//! `systemDefaultConstraints`: hostname with maxSkew 3, zone with
//! maxSkew 5, both `ScheduleAnyway`) only score, and only pods that
//! declare no constraint get them; [`system_defaults`] spells them, with
//! the selector `helper.DefaultSelector` derives from the pod's Services
//! and its ReplicaSet or StatefulSet owner.
//!
//! Scoring (`scoring.go`, [`SpreadScore`]): the constraints scored are the
//! pod's `ScheduleAnyway` ones (or the system defaults for a pod that
//! declares none). Each constraint counts matching pods per domain over
//! every node that passes its inclusion policies, but only for domains some
//! feasible node is in; a feasible node missing a key is ignored (with the
//! pod's own constraints). A node's raw score sums, per constraint,
//! `count × ln(domains + 2) + (maxSkew − 1)` (for the hostname key the
//! count is the node's own, and the domains are the feasible nodes not
//! ignored), rounded; [`normalize`] then maps the raw scores so that the
//! fewest matching pods score 100, and an ignored node 0.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, PodSpec, Taint, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_core::{Selector, SelectorExt};

use crate::view::Placement;
use drillbench_model::k8s::taints::scheduling_blocker;

/// `whenUnsatisfiable`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsatisfiable {
    /// A filter: nodes that would break the skew are refused.
    DoNotSchedule,
    /// A score: such nodes are only less preferred.
    ScheduleAnyway,
}

/// `nodeAffinityPolicy` / `nodeTaintsPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inclusion {
    /// Nodes the pod could not go to are no domain.
    Honor,
    /// Every node is a domain.
    Ignore,
}

/// One topology spread constraint, compiled.
#[derive(Debug, Clone)]
pub struct SpreadConstraint {
    pub max_skew: u32,
    pub topology_key: String,
    /// `None`: no `labelSelector`, which selects nothing.
    selector: Option<Selector>,
    pub min_domains: u32,
    pub when: Unsatisfiable,
    pub node_affinity: Inclusion,
    pub node_taints: Inclusion,
}

fn inclusion(value: Option<&str>, default: Inclusion) -> Result<Inclusion, String> {
    match value {
        None => Ok(default),
        Some("Honor") => Ok(Inclusion::Honor),
        Some("Ignore") => Ok(Inclusion::Ignore),
        Some(other) => Err(format!(
            "topologySpreadConstraints: unsupported node inclusion policy `{other}`, expected Honor or Ignore"
        )),
    }
}

impl SpreadConstraint {
    /// Compiles a constraint of a pod labelled `labels`, merging its
    /// `matchLabelKeys`; refuses what the apiserver refuses.
    pub fn compile(
        c: &TopologySpreadConstraint,
        labels: &BTreeMap<String, String>,
    ) -> Result<SpreadConstraint, String> {
        if c.max_skew < 1 {
            return Err(format!(
                "topologySpreadConstraints: maxSkew {} must be greater than zero",
                c.max_skew
            ));
        }
        if c.min_domains.is_some_and(|m| m < 1) {
            return Err("topologySpreadConstraints: minDomains must be greater than zero".into());
        }
        let when = match c.when_unsatisfiable.as_str() {
            "DoNotSchedule" => Unsatisfiable::DoNotSchedule,
            "ScheduleAnyway" => Unsatisfiable::ScheduleAnyway,
            other => {
                return Err(format!(
                    "topologySpreadConstraints: unsupported whenUnsatisfiable `{other}`, expected DoNotSchedule or ScheduleAnyway"
                ));
            }
        };
        if when == Unsatisfiable::ScheduleAnyway && c.min_domains.is_some() {
            return Err(
                "topologySpreadConstraints: minDomains can only be set with whenUnsatisfiable: DoNotSchedule"
                    .into(),
            );
        }
        let selector = match &c.label_selector {
            None => None,
            Some(s) => {
                let mut s: LabelSelector = s.clone();
                // matchLabelKeys: the pod's own values of the listed keys.
                for key in c.match_label_keys.iter().flatten() {
                    if let Some(value) = labels.get(key) {
                        s.match_labels
                            .get_or_insert_default()
                            .insert(key.clone(), value.clone());
                    }
                }
                Some(
                    Selector::try_from(s)
                        .map_err(|e| format!("topologySpreadConstraints: labelSelector: {e}"))?,
                )
            }
        };
        Ok(SpreadConstraint {
            max_skew: c.max_skew as u32,
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: c.min_domains.map_or(1, |m| m as u32),
            when,
            node_affinity: inclusion(c.node_affinity_policy.as_deref(), Inclusion::Honor)?,
            node_taints: inclusion(c.node_taints_policy.as_deref(), Inclusion::Ignore)?,
        })
    }

    /// The constraints a pod spec declares.
    pub fn from_pod_spec(
        spec: &PodSpec,
        labels: &BTreeMap<String, String>,
    ) -> Result<Vec<SpreadConstraint>, String> {
        spec.topology_spread_constraints
            .iter()
            .flatten()
            .map(|c| SpreadConstraint::compile(c, labels))
            .collect()
    }

    /// Whether a pod of `namespace` labelled `labels` counts in a domain,
    /// for an incoming pod of `incoming_namespace`. An empty selector
    /// (`labelSelector: {}`) counts no existing pod, as upstream's
    /// `countPodsMatchSelector` returns 0 for `selector.Empty()`.
    pub fn counts(
        &self,
        incoming_namespace: &str,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> bool {
        namespace == incoming_namespace
            && self
                .selector
                .as_ref()
                .is_some_and(|s| !s.selects_all() && s.matches(labels))
    }

    /// Whether the incoming pod counts itself (upstream's `selfMatchNum`:
    /// a plain `Matches`, so an empty selector matches it).
    fn selects_itself(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }

    /// Whether the node is a domain for a pod placed as `placement`
    /// (upstream's `matchNodeInclusionPolicies`).
    pub fn includes(&self, placement: &Placement<'_>, node: &Node) -> bool {
        if self.node_affinity == Inclusion::Honor
            && !placement.required.is_some_and(|r| r.matches(node))
        {
            return false;
        }
        self.node_taints == Inclusion::Ignore
            || scheduling_blocker(taints(node), placement.tolerations).is_none()
    }
}

fn taints(node: &Node) -> &[Taint] {
    node.spec
        .as_ref()
        .and_then(|s| s.taints.as_deref())
        .unwrap_or(&[])
}

fn labels(node: &Node) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// The scheduler's system default constraints for a pod that declares
/// none, with the selector [`default_selector`] derived (none when it
/// derived nothing: then the pod is not spread).
pub fn system_defaults(selector: Option<Selector>) -> Vec<SpreadConstraint> {
    let Some(selector) = selector else {
        return Vec::new();
    };
    [
        ("kubernetes.io/hostname", 3),
        ("topology.kubernetes.io/zone", 5),
    ]
    .into_iter()
    .map(|(key, max_skew)| SpreadConstraint {
        max_skew,
        topology_key: key.to_owned(),
        selector: Some(selector.clone()),
        min_domains: 1,
        when: Unsatisfiable::ScheduleAnyway,
        node_affinity: Inclusion::Honor,
        node_taints: Inclusion::Ignore,
    })
    .collect()
}

/// `helper.DefaultSelector`: the union of the selectors of the Services
/// selecting the pod and of its ReplicaSet or StatefulSet owner; `None`
/// when that is empty.
pub fn default_selector<'a>(
    services: impl IntoIterator<Item = &'a BTreeMap<String, String>>,
    owner: Option<&LabelSelector>,
) -> Result<Option<Selector>, String> {
    let mut merged = LabelSelector::default();
    for service in services {
        merged
            .match_labels
            .get_or_insert_default()
            .extend(service.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(owner) = owner {
        merged.match_labels.get_or_insert_default().extend(
            owner
                .match_labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        merged
            .match_expressions
            .get_or_insert_default()
            .extend(owner.match_expressions.iter().flatten().cloned());
    }
    let empty = merged.match_labels.as_ref().is_none_or(|m| m.is_empty())
        && merged
            .match_expressions
            .as_ref()
            .is_none_or(|e| e.is_empty());
    if empty {
        return Ok(None);
    }
    Selector::try_from(merged)
        .map(Some)
        .map_err(|e| format!("default spread selector: {e}"))
}

/// A pod as the filter reads it.
#[derive(Debug, Clone, Copy)]
pub struct SpreadPod<'a> {
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub placement: Placement<'a>,
    /// Its declared constraints (both kinds; the filter reads the
    /// `DoNotSchedule` ones).
    pub constraints: &'a [SpreadConstraint],
}

impl SpreadPod<'_> {
    fn hard(&self) -> impl Iterator<Item = (usize, &SpreadConstraint)> {
        self.constraints
            .iter()
            .enumerate()
            .filter(|(_, c)| c.when == Unsatisfiable::DoNotSchedule)
    }

    /// Whether the pod has a constraint the filter enforces.
    pub fn is_constrained(&self) -> bool {
        self.hard().next().is_some()
    }
}

/// Why a node fails the filter, in upstream's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpreadMisfit {
    /// The node lacks a constraint's topology key.
    MissingLabel,
    /// Placing the pod there would exceed a `maxSkew`.
    Skew,
}

impl SpreadMisfit {
    /// kube-scheduler's reason (`plugin.go`).
    pub fn describe(self) -> &'static str {
        match self {
            SpreadMisfit::MissingLabel => {
                "node(s) didn't match pod topology spread constraints (missing required label)"
            }
            SpreadMisfit::Skew => "node(s) didn't match pod topology spread constraints",
        }
    }
}

/// What the filter counted over the cluster for one incoming pod:
/// per hard constraint (by its index among the pod's constraints), the
/// matching pods of each domain.
#[derive(Debug, Clone, Default)]
pub struct SpreadState {
    domains: BTreeMap<usize, BTreeMap<String, u32>>,
}

impl SpreadState {
    /// Counts one node of the cluster: `count(i)` is how many of its pods
    /// constraint `i` counts (see [`SpreadConstraint::counts`]).
    pub fn add_node(
        &mut self,
        incoming: &SpreadPod<'_>,
        node: &Node,
        mut count: impl FnMut(usize) -> u32,
    ) {
        let node_labels = labels(node);
        // Upstream skips a node missing any hard constraint's key.
        if incoming
            .hard()
            .any(|(_, c)| !node_labels.contains_key(&c.topology_key))
        {
            return;
        }
        for (i, c) in incoming.hard() {
            if !c.includes(&incoming.placement, node) {
                continue;
            }
            let value = &node_labels[&c.topology_key];
            let n = count(i);
            let domains = self.domains.entry(i).or_default();
            // Most domains are met again: count them without a new key.
            match domains.get_mut(value) {
                Some(here) => *here += n,
                None => {
                    domains.insert(value.clone(), n);
                }
            }
        }
    }

    /// Whether the incoming pod may go to the node.
    pub fn filter(&self, incoming: &SpreadPod<'_>, node: &Node) -> Result<(), SpreadMisfit> {
        let node_labels = labels(node);
        for (i, c) in incoming.hard() {
            let Some(value) = node_labels.get(&c.topology_key) else {
                return Err(SpreadMisfit::MissingLabel);
            };
            let domains = self.domains.get(&i);
            let found = domains.map_or(0, |d| d.len());
            let minimum = if found < c.min_domains as usize {
                0
            } else {
                domains.and_then(|d| d.values().min().copied()).unwrap_or(0)
            };
            let here = domains.and_then(|d| d.get(value)).copied().unwrap_or(0);
            let own = u32::from(c.selects_itself(incoming.labels));
            if (here + own).saturating_sub(minimum) > c.max_skew {
                return Err(SpreadMisfit::Skew);
            }
        }
        Ok(())
    }
}

/// The hostname label, whose domains are the nodes themselves.
const HOSTNAME: &str = "kubernetes.io/hostname";

/// PodTopologySpread's PreScore state for one incoming pod: per scored
/// constraint, the matching pods of each domain a feasible node is in.
#[derive(Debug, Clone)]
pub struct SpreadScore<'a> {
    constraints: Vec<&'a SpreadConstraint>,
    /// Whether a node must carry every constraint's key to be scored
    /// (false only for the system defaults).
    require_all: bool,
    /// Per constraint (not hostname): domain → matching pods.
    counts: Vec<BTreeMap<String, u32>>,
    /// Per constraint: `ln(domains + 2)`.
    weights: Vec<f64>,
}

impl<'a> SpreadScore<'a> {
    /// The state for scoring `constraints` (the pod's `ScheduleAnyway`
    /// ones, or the system defaults with `require_all` false) over the
    /// `feasible` nodes; `None` when there is nothing to score.
    pub fn new<'n>(
        constraints: impl IntoIterator<Item = &'a SpreadConstraint>,
        require_all: bool,
        feasible: impl IntoIterator<Item = &'n Node>,
    ) -> Option<SpreadScore<'a>> {
        let constraints: Vec<&SpreadConstraint> = constraints.into_iter().collect();
        if constraints.is_empty() {
            return None;
        }
        let mut counts = vec![BTreeMap::new(); constraints.len()];
        let mut scored = 0usize;
        for node in feasible {
            let node_labels = labels(node);
            if require_all
                && constraints
                    .iter()
                    .any(|c| !node_labels.contains_key(&c.topology_key))
            {
                continue;
            }
            scored += 1;
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == HOSTNAME {
                    continue;
                }
                // A node without the key (only with the defaults) is in
                // the domain of the empty value, as upstream reads it.
                let value = node_labels
                    .get(&c.topology_key)
                    .cloned()
                    .unwrap_or_default();
                counts[i].entry(value).or_insert(0);
            }
        }
        let weights = constraints
            .iter()
            .zip(&counts)
            .map(|(c, domains)| {
                let size = if c.topology_key == HOSTNAME {
                    scored
                } else {
                    domains.len()
                };
                ((size + 2) as f64).ln()
            })
            .collect();
        Some(SpreadScore {
            constraints,
            require_all,
            counts,
            weights,
        })
    }

    /// The scored constraints, in order (what `count(i)` is asked about).
    pub fn constraints(&self) -> &[&'a SpreadConstraint] {
        &self.constraints
    }

    /// Counts one node of the cluster (every node, feasible or not):
    /// `count(i)` is how many of its pods constraint `i` counts.
    pub fn add_node(
        &mut self,
        placement: &Placement<'_>,
        node: &Node,
        mut count: impl FnMut(usize) -> u32,
    ) {
        let node_labels = labels(node);
        if self.require_all
            && self
                .constraints
                .iter()
                .any(|c| !node_labels.contains_key(&c.topology_key))
        {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if c.topology_key == HOSTNAME || !c.includes(placement, node) {
                continue;
            }
            let value = node_labels.get(&c.topology_key).map_or("", String::as_str);
            // Only domains a feasible node is in are counted.
            if self.counts[i].contains_key(value) {
                let n = count(i);
                if let Some(here) = self.counts[i].get_mut(value) {
                    *here += n;
                }
            }
        }
    }

    /// A feasible node's raw score, `None` when it is ignored;
    /// `count_here(i)` is how many of the node's own pods constraint `i`
    /// counts (read for the hostname key).
    pub fn raw(&self, node: &Node, mut count_here: impl FnMut(usize) -> u32) -> Option<i64> {
        let node_labels = labels(node);
        if self.require_all
            && self
                .constraints
                .iter()
                .any(|c| !node_labels.contains_key(&c.topology_key))
        {
            return None;
        }
        let mut score = 0.0;
        for (i, c) in self.constraints.iter().enumerate() {
            let Some(value) = node_labels.get(&c.topology_key) else {
                continue;
            };
            let count = if c.topology_key == HOSTNAME {
                count_here(i)
            } else {
                self.counts[i].get(value).copied().unwrap_or(0)
            };
            score += f64::from(count) * self.weights[i] + f64::from(c.max_skew) - 1.0;
        }
        Some(score.round() as i64)
    }
}

/// `NormalizeScore`: raw scores (`None`: ignored) to 0–100, the fewest
/// matching pods best; an ignored node scores 0, and when every raw score
/// is 0 every scored node gets 100.
pub fn normalize(raw: &[Option<i64>]) -> Vec<i64> {
    let scored = raw.iter().flatten();
    let min = scored.clone().copied().min().unwrap_or(0);
    let max = scored.copied().max().unwrap_or(0).max(0);
    raw.iter()
        .map(|r| match r {
            None => 0,
            Some(_) if max == 0 => 100,
            Some(s) => 100 * (max + min - s) / max,
        })
        .collect()
}

impl SpreadPod<'_> {
    /// The constraints the score reads: the pod's `ScheduleAnyway` ones.
    pub fn soft(&self) -> impl Iterator<Item = &SpreadConstraint> {
        self.constraints
            .iter()
            .filter(|c| c.when == Unsatisfiable::ScheduleAnyway)
    }
}

// The rules' table tests are cases of the conformance suite
// (`tests/it/conformance/topology_spread.rs`).
