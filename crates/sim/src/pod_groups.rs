//! The pods holding resources, grouped so that inter-pod affinity and
//! topology spread read groups rather than pods.
//!
//! Pods made from the same template in the same namespace carry the same
//! labels and the same required (anti-)affinity terms, so every decision
//! of the `InterPodAffinity` filter about one of them holds for all
//! (`drillbench_policy::interpod`). A group keeps, per node, how many of
//! its pods run there and, per topology key a term has asked about, how
//! many run in each domain, maintained as pods bind and leave
//! ([`super::state::World::bind`], [`super::state::World::release`]). The
//! filter's state for an incoming pod then costs the number of groups, and
//! each node's verdict a few lookups: kube-scheduler keeps the same
//! per-domain counts (`preFilterState.existingAntiAffinityCounts`,
//! `affinityCounts`, `antiAffinityCounts` in
//! `pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`),
//! rebuilt per pod from its snapshot's `HavePodsWithAffinityList`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use drillbench_policy::interpod::Domains;

use super::world::{NodeId, SimNode, Template};

/// One group: alike pods, where they run.
#[derive(Debug, Clone)]
pub(crate) struct PodGroup {
    /// Their template (kept alive, so its address names no other group).
    pub(crate) template: Rc<Template>,
    pub(crate) namespace: String,
    /// Pods per node, only nodes running some.
    per_node: BTreeMap<NodeId, u32>,
    /// Per topology key asked about so far: pods per domain. Built on the
    /// first question from `per_node`, then kept as pods bind and leave;
    /// forgotten when a node's labels change.
    domains: RefCell<BTreeMap<String, Rc<Domains>>>,
}

impl PodGroup {
    /// Whether some pod of the group holds resources on a node.
    pub(crate) fn is_empty(&self) -> bool {
        self.per_node.is_empty()
    }

    /// How many of its pods hold resources on a node.
    pub(crate) fn pods_on(&self, node: NodeId) -> u32 {
        self.per_node.get(&node).copied().unwrap_or(0)
    }
}

/// The groups, in the order they first appeared.
#[derive(Debug, Clone, Default)]
pub(crate) struct PodGroups {
    /// (template address, namespace) → group. Only looked up, never
    /// iterated: the address orders nothing anyone reads.
    index: BTreeMap<(usize, String), usize>,
    groups: Vec<PodGroup>,
    /// The groups whose pods carry required anti-affinity terms: the only
    /// ones a pod without terms of its own must be checked against.
    repelling: Vec<usize>,
}

fn label<'a>(node: &'a SimNode, key: &str) -> Option<&'a String> {
    node.labels().get(key)
}

impl PodGroups {
    /// Every group, in the order they first appeared.
    pub(crate) fn all(&self) -> &[PodGroup] {
        &self.groups
    }

    /// The groups whose pods carry required anti-affinity terms.
    pub(crate) fn repelling(&self) -> impl Iterator<Item = &PodGroup> {
        self.repelling.iter().map(|&g| &self.groups[g])
    }

    /// A pod of `template` in `namespace` now holds resources on `node`.
    pub(crate) fn bind(
        &mut self,
        template: &Rc<Template>,
        namespace: &str,
        node: NodeId,
        on: &SimNode,
    ) {
        let key = (Rc::as_ptr(template) as usize, namespace.to_owned());
        let g = match self.index.get(&key) {
            Some(&g) => g,
            None => {
                let g = self.groups.len();
                self.groups.push(PodGroup {
                    template: template.clone(),
                    namespace: namespace.to_owned(),
                    per_node: BTreeMap::new(),
                    domains: RefCell::default(),
                });
                if !template.anti_affinity.is_empty() {
                    self.repelling.push(g);
                }
                self.index.insert(key, g);
                g
            }
        };
        let group = &mut self.groups[g];
        *group.per_node.entry(node).or_default() += 1;
        for (key, domains) in group.domains.get_mut().iter_mut() {
            if let Some(value) = label(on, key) {
                *Rc::make_mut(domains).entry(value.clone()).or_default() += 1;
            }
        }
    }

    /// A pod of `template` in `namespace` no longer holds resources on
    /// `node`.
    pub(crate) fn release(
        &mut self,
        template: &Rc<Template>,
        namespace: &str,
        node: NodeId,
        on: &SimNode,
    ) {
        let key = (Rc::as_ptr(template) as usize, namespace.to_owned());
        let Some(&g) = self.index.get(&key) else {
            return;
        };
        let group = &mut self.groups[g];
        if let Some(n) = group.per_node.get_mut(&node) {
            *n -= 1;
            if *n == 0 {
                group.per_node.remove(&node);
            }
        }
        for (key, domains) in group.domains.get_mut().iter_mut() {
            if let Some(value) = label(on, key) {
                let domains = Rc::make_mut(domains);
                if let Some(n) = domains.get_mut(value) {
                    *n -= 1;
                    if *n == 0 {
                        domains.remove(value);
                    }
                }
            }
        }
    }

    /// A node's labels changed: every domain count may have moved.
    pub(crate) fn relabelled(&mut self) {
        for group in &mut self.groups {
            group.domains.get_mut().clear();
        }
    }

    /// How many of the group's pods run in each domain of `key`.
    pub(crate) fn domains(group: &PodGroup, key: &str, nodes: &[SimNode]) -> Rc<Domains> {
        if let Some(domains) = group.domains.borrow().get(key) {
            return domains.clone();
        }
        let mut domains = Domains::new();
        for (&node, &n) in &group.per_node {
            if let Some(value) = label(&nodes[node], key) {
                *domains.entry(value.clone()).or_default() += n;
            }
        }
        let domains = Rc::new(domains);
        group
            .domains
            .borrow_mut()
            .insert(key.to_owned(), domains.clone());
        domains
    }
}
