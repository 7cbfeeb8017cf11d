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

use std::cell::OnceCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::core::v1::{Node, PodSpec, Taint, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube_core::{Selector, SelectorExt};

use crate::domains::KeyDomains;
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

/// One constraint's domains for one incoming pod, and the pods counted in
/// each, by domain number ([`KeyDomains`]).
#[derive(Debug, Clone, Default)]
struct DomainCounts {
    /// The key's values numbered, and the caller's nodes too when it
    /// numbered them ([`SpreadState::numbered`], [`SpreadScore::numbered`]).
    index: Rc<KeyDomains>,
    /// By domain number: the pods counted there, `None` for a number no
    /// counted node is in (no domain for this pod).
    counts: Vec<Option<u32>>,
    /// How many domains there are and their smallest count, once asked.
    minimum: OnceCell<(usize, u32)>,
    /// Whether the incoming pod counts itself, once asked.
    own: OnceCell<u32>,
}

impl DomainCounts {
    fn numbered(index: Rc<KeyDomains>) -> DomainCounts {
        DomainCounts {
            index,
            ..DomainCounts::default()
        }
    }

    /// Where a node is: `None` when it lacks the key, else its domain
    /// number if the value is numbered. A node the index numbered (`at`,
    /// the caller's node index) is found by its number, others by `value`,
    /// their label.
    fn locate<'v>(
        &self,
        at: Option<usize>,
        value: impl FnOnce() -> Option<&'v String>,
    ) -> Option<Option<u32>> {
        match at {
            Some(n) if n < self.index.nodes() => self.index.of_node(n).map(Some),
            _ => value().map(|v| self.index.of_value(v)),
        }
    }

    /// The domain of the value, numbered now if it was not.
    fn number(&mut self, value: &str) -> u32 {
        match self.index.of_value(value) {
            Some(id) => id,
            None => Rc::make_mut(&mut self.index).number(value),
        }
    }

    /// `n` more pods in a domain, which becomes one.
    fn add(&mut self, domain: u32, n: u32) {
        let d = domain as usize;
        if self.counts.len() <= d {
            self.counts.resize(d + 1, None);
        }
        *self.counts[d].get_or_insert(0) += n;
        self.minimum.take();
    }

    /// The pods counted in a domain, `None` when it is none.
    fn count(&self, domain: Option<u32>) -> Option<u32> {
        self.counts.get(domain? as usize).copied().flatten()
    }

    /// The numbers of its domains.
    fn domains(&self) -> impl Iterator<Item = u32> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_some())
            .map(|(d, _)| d as u32)
    }

    /// How many domains, and the smallest count among them (0 for none).
    fn minimum(&self) -> (usize, u32) {
        *self.minimum.get_or_init(|| {
            let mut found = 0;
            let mut minimum = u32::MAX;
            for &c in self.counts.iter().flatten() {
                found += 1;
                minimum = minimum.min(c);
            }
            (found, if found == 0 { 0 } else { minimum })
        })
    }
}

/// What the filter counted over the cluster for one incoming pod:
/// per hard constraint (by its index among the pod's constraints), the
/// matching pods of each domain.
#[derive(Debug, Clone, Default)]
pub struct SpreadState {
    /// By constraint index; `None` while no node was counted for it.
    domains: Vec<Option<DomainCounts>>,
}

impl SpreadState {
    /// A state whose domains for each hard constraint are numbered by
    /// `index(key)`, over the caller's node indices: nodes are then
    /// counted with [`SpreadState::add_node_at`] or, domain by domain,
    /// [`SpreadState::add_domain`], and filtered with
    /// [`SpreadState::filter_at`].
    pub fn numbered(
        incoming: &SpreadPod<'_>,
        mut index: impl FnMut(&str) -> Rc<KeyDomains>,
    ) -> SpreadState {
        let mut domains = vec![None; incoming.constraints.len()];
        for (i, c) in incoming.hard() {
            domains[i] = Some(DomainCounts::numbered(index(&c.topology_key)));
        }
        SpreadState { domains }
    }

    fn counted(&mut self, i: usize) -> &mut DomainCounts {
        if self.domains.len() <= i {
            self.domains.resize(i + 1, None);
        }
        self.domains[i].get_or_insert_with(DomainCounts::default)
    }

    /// Counts one node of the cluster: `count(i)` is how many of its pods
    /// constraint `i` counts (see [`SpreadConstraint::counts`]).
    pub fn add_node(
        &mut self,
        incoming: &SpreadPod<'_>,
        node: &Node,
        count: impl FnMut(usize) -> u32,
    ) {
        self.add_node_at(incoming, node, None, count);
    }

    /// [`SpreadState::add_node`] for the node of index `at` in the
    /// numbering the state was made with.
    pub fn add_node_at(
        &mut self,
        incoming: &SpreadPod<'_>,
        node: &Node,
        at: Option<usize>,
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
            let counted = self.counted(i);
            let domain = match counted.locate(at, || Some(value)).flatten() {
                Some(d) => d,
                None => counted.number(value),
            };
            counted.add(domain, n);
        }
    }

    /// `n` more pods in a domain of hard constraint `i`, by the numbering
    /// the state was made with ([`SpreadState::numbered`]); the domain
    /// becomes one (with 0 pods, when `n` is 0). What
    /// [`SpreadState::add_node_at`] would count, when the caller knows
    /// that every node with a key of the pod's hard constraints has them
    /// all and passes every constraint's inclusion policies: then each
    /// domain counts the matching pods of all its nodes.
    pub fn add_domain(&mut self, i: usize, domain: u32, n: u32) {
        self.counted(i).add(domain, n);
    }

    /// Whether the incoming pod may go to the node.
    pub fn filter(&self, incoming: &SpreadPod<'_>, node: &Node) -> Result<(), SpreadMisfit> {
        self.filter_at(incoming, node, None)
    }

    /// [`SpreadState::filter`] for the node of index `at` in the numbering
    /// the state was made with: its domains are found by number rather
    /// than by label.
    pub fn filter_at(
        &self,
        incoming: &SpreadPod<'_>,
        node: &Node,
        at: Option<usize>,
    ) -> Result<(), SpreadMisfit> {
        for (i, c) in incoming.hard() {
            let counted = self.domains.get(i).and_then(Option::as_ref);
            let domain = match counted {
                Some(counted) => counted.locate(at, || labels(node).get(&c.topology_key)),
                None => labels(node).get(&c.topology_key).map(|_| None),
            };
            let Some(domain) = domain else {
                return Err(SpreadMisfit::MissingLabel);
            };
            let (found, smallest) = counted.map_or((0, 0), DomainCounts::minimum);
            let minimum = if found < c.min_domains as usize {
                0
            } else {
                smallest
            };
            let here = counted.and_then(|d| d.count(domain)).unwrap_or(0);
            let own = match counted {
                Some(d) => *d
                    .own
                    .get_or_init(|| u32::from(c.selects_itself(incoming.labels))),
                None => u32::from(c.selects_itself(incoming.labels)),
            };
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
    /// Per constraint: its domains (counted for all but hostname).
    counts: Vec<DomainCounts>,
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
        SpreadScore::numbered(
            constraints,
            require_all,
            feasible.into_iter().map(|n| (None, n)),
            |_| Rc::default(),
        )
    }

    /// [`SpreadScore::new`] with each constraint's domains numbered by
    /// `index(key)` over the caller's node indices, the feasible nodes
    /// given with theirs (`None`: not numbered, found by label).
    pub fn numbered<'n>(
        constraints: impl IntoIterator<Item = &'a SpreadConstraint>,
        require_all: bool,
        feasible: impl IntoIterator<Item = (Option<usize>, &'n Node)>,
        mut index: impl FnMut(&str) -> Rc<KeyDomains>,
    ) -> Option<SpreadScore<'a>> {
        let constraints: Vec<&SpreadConstraint> = constraints.into_iter().collect();
        if constraints.is_empty() {
            return None;
        }
        let mut counts: Vec<DomainCounts> = constraints
            .iter()
            .map(|c| DomainCounts::numbered(index(&c.topology_key)))
            .collect();
        let mut scored = 0usize;
        for (at, node) in feasible {
            let node_labels = labels(node);
            if require_all
                && constraints
                    .iter()
                    .zip(&counts)
                    .any(|(c, d)| d.locate(at, || node_labels.get(&c.topology_key)).is_none())
            {
                continue;
            }
            scored += 1;
            for (c, counted) in constraints.iter().zip(&mut counts) {
                if c.topology_key == HOSTNAME {
                    continue;
                }
                // A node without the key (only with the defaults) is in
                // the domain of the empty value, as upstream reads it.
                let domain = match counted.locate(at, || node_labels.get(&c.topology_key)) {
                    Some(Some(d)) => d,
                    Some(None) => counted.number(&node_labels[&c.topology_key]),
                    None => counted.number(""),
                };
                counted.add(domain, 0);
            }
        }
        let weights = constraints
            .iter()
            .zip(&counts)
            .map(|(c, counted)| {
                let size = if c.topology_key == HOSTNAME {
                    scored
                } else {
                    counted.minimum().0
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
        count: impl FnMut(usize) -> u32,
    ) {
        self.add_node_at(placement, node, None, count);
    }

    /// [`SpreadScore::add_node`] for the node of index `at` in the
    /// numbering the state was made with.
    pub fn add_node_at(
        &mut self,
        placement: &Placement<'_>,
        node: &Node,
        at: Option<usize>,
        mut count: impl FnMut(usize) -> u32,
    ) {
        let node_labels = labels(node);
        if self.require_all
            && self
                .constraints
                .iter()
                .zip(&self.counts)
                .any(|(c, d)| d.locate(at, || node_labels.get(&c.topology_key)).is_none())
        {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if c.topology_key == HOSTNAME || !c.includes(placement, node) {
                continue;
            }
            let counted = &mut self.counts[i];
            let domain = match counted.locate(at, || node_labels.get(&c.topology_key)) {
                Some(domain) => domain,
                None => counted.index.of_value(""),
            };
            // Only domains a feasible node is in are counted.
            if let Some(d) = domain
                && counted.count(Some(d)).is_some()
            {
                let n = count(i);
                counted.add(d, n);
            }
        }
    }

    /// Counts every domain at once: `count(i, domain)` is how many pods
    /// constraint `i` counts in a domain a feasible node is in (by the
    /// numbering the state was made with). What [`SpreadScore::add_node`]
    /// over every node would count, when the caller knows that every node
    /// with a key of the scored constraints has them all and passes the
    /// inclusion policies of every constraint but the hostname ones.
    pub fn add_domains(&mut self, mut count: impl FnMut(usize, u32) -> u32) {
        for (i, c) in self.constraints.iter().enumerate() {
            if c.topology_key == HOSTNAME {
                continue;
            }
            let counted = &mut self.counts[i];
            let domains: Vec<u32> = counted.domains().collect();
            for d in domains {
                let n = count(i, d);
                counted.add(d, n);
            }
        }
    }

    /// A feasible node's raw score, `None` when it is ignored;
    /// `count_here(i)` is how many of the node's own pods constraint `i`
    /// counts (read for the hostname key).
    pub fn raw(&self, node: &Node, count_here: impl FnMut(usize) -> u32) -> Option<i64> {
        self.raw_at(node, None, count_here)
    }

    /// [`SpreadScore::raw`] for the node of index `at` in the numbering
    /// the state was made with.
    pub fn raw_at(
        &self,
        node: &Node,
        at: Option<usize>,
        mut count_here: impl FnMut(usize) -> u32,
    ) -> Option<i64> {
        let mut score = 0.0;
        let mut ignored = false;
        for (i, (c, counted)) in self.constraints.iter().zip(&self.counts).enumerate() {
            let Some(domain) = counted.locate(at, || labels(node).get(&c.topology_key)) else {
                ignored = true;
                continue;
            };
            let count = if c.topology_key == HOSTNAME {
                count_here(i)
            } else {
                counted.count(domain).unwrap_or(0)
            };
            score += f64::from(count) * self.weights[i] + f64::from(c.max_skew) - 1.0;
        }
        if ignored && self.require_all {
            return None;
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
