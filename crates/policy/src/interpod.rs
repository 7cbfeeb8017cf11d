//! Required inter-pod affinity and anti-affinity: kube-scheduler's
//! `InterPodAffinity` filter, for the scheduler and for the cluster
//! autoscaler's rescheduling simulation alike.
//!
//! As upstream (`pkg/scheduler/framework/plugins/interpodaffinity/
//! filtering.go`), the filter works in two steps. Once per pod, a
//! [`InterPodState`] counts, per topology pair (key, value), the existing
//! pods that matter: those whose own required anti-affinity term selects
//! the incoming pod (the rule is symmetric: a running pod keeps pods it
//! repels off its domain, whatever the incoming pod says), those matching
//! all of the incoming pod's affinity terms, and those matching one of its
//! anti-affinity terms. Then, per node, [`InterPodState::filter`] reads the
//! node's labels against those counts.
//!
//! A term selects pods in the union of the namespaces it lists and those
//! its `namespaceSelector` selects by their labels; with neither (no list,
//! a null selector) it selects its own pod's namespace, and an empty
//! selector (`{}`) selects every namespace (`PodAffinityTerm`'s API
//! documentation; upstream's `AffinityTerm.Matches`, which reads the
//! namespace's labels). So every pod the filter reads carries its
//! namespace's labels.
//!
//! A term whose `labelSelector` is absent selects no pod
//! (`metav1.LabelSelectorAsSelector(nil)` is `labels.Nothing()`); an empty
//! one selects every pod.

use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::core::v1::{PodAffinityTerm, PodSpec};
use kube_core::{Selector, SelectorExt};

use crate::domains::{Domains, KeyDomains};

/// One required pod (anti-)affinity term, compiled.
#[derive(Debug, Clone)]
pub struct AffinityTerm {
    /// `None`: no `labelSelector`, which selects nothing.
    selector: Option<Selector>,
    topology_key: String,
    /// The namespaces listed.
    namespaces: Vec<String>,
    /// `namespaceSelector`: `None` when null (it selects no namespace by
    /// labels); an empty one selects every namespace.
    namespace_selector: Option<Selector>,
}

impl AffinityTerm {
    /// Compiles a term; an invalid selector is an error, as the apiserver
    /// would refuse the pod.
    pub fn compile(term: &PodAffinityTerm) -> Result<AffinityTerm, String> {
        let selector = term
            .label_selector
            .clone()
            .map(Selector::try_from)
            .transpose()
            .map_err(|e| format!("labelSelector of a pod affinity term: {e}"))?;
        let namespace_selector = term
            .namespace_selector
            .clone()
            .map(Selector::try_from)
            .transpose()
            .map_err(|e| format!("namespaceSelector of a pod affinity term: {e}"))?;
        Ok(AffinityTerm {
            selector,
            topology_key: term.topology_key.clone(),
            namespaces: term.namespaces.clone().unwrap_or_default(),
            namespace_selector,
        })
    }

    /// The required affinity and anti-affinity terms of a pod spec.
    pub fn from_pod_spec(spec: &PodSpec) -> Result<(Vec<AffinityTerm>, Vec<AffinityTerm>), String> {
        let affinity = spec.affinity.as_ref();
        let compile = |terms: Option<&Vec<PodAffinityTerm>>| {
            terms
                .into_iter()
                .flatten()
                .map(AffinityTerm::compile)
                .collect::<Result<Vec<_>, _>>()
        };
        let required = compile(
            affinity
                .and_then(|a| a.pod_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
        )?;
        let repelled = compile(
            affinity
                .and_then(|a| a.pod_anti_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                }),
        )?;
        Ok((required, repelled))
    }

    /// The node label whose values are this term's domains.
    pub fn topology_key(&self) -> &str {
        &self.topology_key
    }

    /// Whether the term, written in a pod of `owner_namespace`, selects
    /// the pod `target` (upstream's `AffinityTerm.Matches`: its namespace
    /// is listed or selected by its labels, then its labels match).
    pub fn selects(&self, owner_namespace: &str, target: &PodTerms<'_>) -> bool {
        let namespace = target.namespace;
        let listed = if self.namespaces.is_empty() && self.namespace_selector.is_none() {
            namespace == owner_namespace
        } else {
            self.namespaces.iter().any(|n| n == namespace)
        };
        let in_namespace = listed
            || self
                .namespace_selector
                .as_ref()
                .is_some_and(|s| s.matches(target.namespace_labels));
        in_namespace
            && self
                .selector
                .as_ref()
                .is_some_and(|s| s.matches(target.labels))
    }
}

/// A pod as the filter reads it: where it lives, its labels and its
/// required terms.
#[derive(Debug, Clone, Copy)]
pub struct PodTerms<'a> {
    pub namespace: &'a str,
    /// The labels of its namespace (what a `namespaceSelector` reads).
    pub namespace_labels: &'a BTreeMap<String, String>,
    pub labels: &'a BTreeMap<String, String>,
    pub affinity: &'a [AffinityTerm],
    pub anti_affinity: &'a [AffinityTerm],
}

impl PodTerms<'_> {
    /// Whether the pod matches every one of `terms` written in `owner`
    /// (false for no terms, as upstream's `podMatchesAllAffinityTerms`).
    fn matches_all(&self, owner_namespace: &str, terms: &[AffinityTerm]) -> bool {
        !terms.is_empty() && terms.iter().all(|t| t.selects(owner_namespace, self))
    }
}

/// Why a node fails the filter, in upstream's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InterPodMisfit {
    /// A pod in the node's domain has an anti-affinity term selecting the
    /// incoming pod.
    ExistingAntiAffinity,
    /// The incoming pod's affinity finds no matching pod in the node's
    /// domain.
    Affinity,
    /// The incoming pod's anti-affinity finds a matching pod there.
    AntiAffinity,
}

impl InterPodMisfit {
    /// kube-scheduler's reason (`ErrReason…` in `filtering.go`).
    pub fn describe(self) -> &'static str {
        match self {
            InterPodMisfit::ExistingAntiAffinity => {
                "node(s) didn't satisfy existing pods anti-affinity rules"
            }
            InterPodMisfit::Affinity => "node(s) didn't match pod affinity rules",
            InterPodMisfit::AntiAffinity => "node(s) didn't match pod anti-affinity rules",
        }
    }
}

/// Matching pods per topology pair: key, then value.
type Pairs = BTreeMap<String, BTreeMap<String, u32>>;

/// Domain counts an index keeps for a group of alike pods, read where they
/// are rather than copied.
#[derive(Debug, Clone)]
struct SharedCount {
    key: String,
    index: Rc<KeyDomains>,
    domains: Rc<Domains>,
}

impl SharedCount {
    /// Whether a pod it counts runs in the node's domain: found by the
    /// node's number when the index numbered it, by its label otherwise.
    fn in_domain(&self, node: Option<usize>, labels: &BTreeMap<String, String>) -> bool {
        let id = match node {
            Some(n) if n < self.index.nodes() => self.index.of_node(n),
            _ => labels
                .get(&self.key)
                .and_then(|value| self.index.of_value(value)),
        };
        id.is_some_and(|d| self.domains.count(d) > 0)
    }
}

type Shared = Vec<SharedCount>;

/// What the filter counted for one incoming pod over the pods already
/// placed: upstream's `preFilterState`.
#[derive(Debug, Clone, Default)]
pub struct InterPodState {
    /// Pairs where an existing pod's anti-affinity term selects the
    /// incoming pod.
    existing_anti: Pairs,
    /// Pairs where a pod matching all of the incoming pod's affinity terms
    /// runs.
    affinity: Pairs,
    /// Pairs where a pod matching one of its anti-affinity terms runs.
    anti: Pairs,
    /// The same three, for groups of pods counted at once
    /// ([`InterPodState::add_group`]).
    shared_existing_anti: Shared,
    shared_affinity: Shared,
    shared_anti: Shared,
}

fn bump(pairs: &mut Pairs, key: &str, labels: &BTreeMap<String, String>) {
    let Some(value) = labels.get(key) else {
        return;
    };
    // Most pairs are met again: count them without building a key.
    if let Some(n) = pairs.get_mut(key).and_then(|values| values.get_mut(value)) {
        *n += 1;
        return;
    }
    pairs
        .entry(key.to_owned())
        .or_default()
        .insert(value.clone(), 1);
}

fn has(pairs: &Pairs, key: &str, labels: &BTreeMap<String, String>) -> bool {
    !pairs.is_empty()
        && labels
            .get(key)
            .and_then(|value| pairs.get(key)?.get(value))
            .is_some_and(|&n| n > 0)
}

/// Keeps a group's domains unless they are empty: empty counts hold no
/// pod, as a pod on a node without the key is counted nowhere.
fn share(shared: &mut Shared, key: &str, (index, domains): (Rc<KeyDomains>, Rc<Domains>)) {
    if !domains.is_empty() {
        shared.push(SharedCount {
            key: key.to_owned(),
            index,
            domains,
        });
    }
}

impl InterPodState {
    /// Counts one existing pod, on a node labelled `node_labels`, for the
    /// incoming pod.
    pub fn add(
        &mut self,
        incoming: &PodTerms<'_>,
        existing: &PodTerms<'_>,
        node_labels: &BTreeMap<String, String>,
    ) {
        for term in existing.anti_affinity {
            if term.selects(existing.namespace, incoming) {
                bump(&mut self.existing_anti, &term.topology_key, node_labels);
            }
        }
        if existing.matches_all(incoming.namespace, incoming.affinity) {
            for term in incoming.affinity {
                bump(&mut self.affinity, &term.topology_key, node_labels);
            }
        }
        for term in incoming.anti_affinity {
            if term.selects(incoming.namespace, existing) {
                bump(&mut self.anti, &term.topology_key, node_labels);
            }
        }
    }

    /// Counts a group of existing pods that are alike to the filter (same
    /// namespace, labels and terms) at once, as [`InterPodState::add`]
    /// would count each of them: `domains(key)` gives the key's domains
    /// numbered and how many of them run in each. An index that keeps
    /// those counts as pods bind and leave makes a pod's state cost the
    /// number of groups, not of pods.
    pub fn add_group(
        &mut self,
        incoming: &PodTerms<'_>,
        existing: &PodTerms<'_>,
        mut domains: impl FnMut(&str) -> (Rc<KeyDomains>, Rc<Domains>),
    ) {
        for term in existing.anti_affinity {
            if term.selects(existing.namespace, incoming) {
                let d = domains(&term.topology_key);
                share(&mut self.shared_existing_anti, &term.topology_key, d);
            }
        }
        if existing.matches_all(incoming.namespace, incoming.affinity) {
            for term in incoming.affinity {
                let d = domains(&term.topology_key);
                share(&mut self.shared_affinity, &term.topology_key, d);
            }
        }
        for term in incoming.anti_affinity {
            if term.selects(incoming.namespace, existing) {
                let d = domains(&term.topology_key);
                share(&mut self.shared_anti, &term.topology_key, d);
            }
        }
    }

    /// Whether no node can fail the filter: the incoming pod has no terms
    /// and no existing pod repels it.
    pub fn is_trivial(&self, incoming: &PodTerms<'_>) -> bool {
        self.existing_anti.is_empty()
            && self.shared_existing_anti.is_empty()
            && incoming.affinity.is_empty()
            && incoming.anti_affinity.is_empty()
    }

    /// Whether the incoming pod may go to a node labelled `node_labels`.
    pub fn filter(
        &self,
        incoming: &PodTerms<'_>,
        node_labels: &BTreeMap<String, String>,
    ) -> Result<(), InterPodMisfit> {
        self.filter_at(incoming, node_labels, None)
    }

    /// [`InterPodState::filter`] for the node of index `node` in the
    /// [`KeyDomains`] the groups were counted with: their counts are read
    /// by the node's domain numbers rather than by its labels.
    pub fn filter_at(
        &self,
        incoming: &PodTerms<'_>,
        node_labels: &BTreeMap<String, String>,
        node: Option<usize>,
    ) -> Result<(), InterPodMisfit> {
        if !incoming.affinity.is_empty() {
            let mut all_met = true;
            for t in incoming.affinity {
                let key = &t.topology_key;
                // A group's index says whether the node has the key by its
                // number, without searching its labels: this is the check
                // every node scanned pays.
                let mut shared = self.shared_affinity.iter().filter(|s| s.key == *key);
                let first = shared.next();
                let has_key = match (first, node) {
                    (Some(s), Some(n)) if n < s.index.nodes() => s.index.of_node(n).is_some(),
                    _ => node_labels.contains_key(key),
                };
                // A node without one of the keys is in no domain of that term.
                if !has_key {
                    return Err(InterPodMisfit::Affinity);
                }
                all_met = all_met
                    && (has(&self.affinity, key, node_labels)
                        || first.is_some_and(|s| s.in_domain(node, node_labels))
                        || shared.any(|s| s.in_domain(node, node_labels)));
            }
            // The first pod of a group affine to itself may go anywhere,
            // provided no pod anywhere matches its terms yet.
            if !all_met
                && (!self.affinity.is_empty()
                    || !self.shared_affinity.is_empty()
                    || !incoming.matches_all(incoming.namespace, incoming.affinity))
            {
                return Err(InterPodMisfit::Affinity);
            }
        }
        // Every shared count of `shared_anti` was taken for one of the
        // incoming pod's terms, under that term's key: any of them in the
        // node's domain is that term met.
        if incoming
            .anti_affinity
            .iter()
            .any(|t| has(&self.anti, &t.topology_key, node_labels))
            || self
                .shared_anti
                .iter()
                .any(|s| s.in_domain(node, node_labels))
        {
            return Err(InterPodMisfit::AntiAffinity);
        }
        // Then, as upstream, the existing pods' terms.
        if self
            .existing_anti
            .keys()
            .any(|key| has(&self.existing_anti, key, node_labels))
            || self
                .shared_existing_anti
                .iter()
                .any(|s| s.in_domain(node, node_labels))
        {
            return Err(InterPodMisfit::ExistingAntiAffinity);
        }
        Ok(())
    }
}

// The filter's table tests, and the check that groups counted at once
// decide as their pods one by one, are in the conformance suite
// (`tests/it/conformance/inter_pod_affinity.rs`).
