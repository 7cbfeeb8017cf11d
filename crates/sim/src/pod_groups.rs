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
//!
//! A topology key's domains are numbered once for every node
//! ([`KeyDomains`]), so a group's counts are a vector by domain number and
//! the filter finds a node's domain by its index: with a domain per node
//! (the hostname), a node scanned costs a few array reads, not string
//! searches among thousands of hostnames.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use drillbench_policy::domains::{Domains, KeyDomains};

use super::world::{NodeId, SimNode, Template};

/// One group: alike pods, where they run.
#[derive(Debug, Clone)]
pub(crate) struct PodGroup {
    /// Their template (kept alive, so its address names no other group).
    pub(crate) template: Rc<Template>,
    pub(crate) namespace: String,
    /// Pods per node, only nodes running some.
    per_node: BTreeMap<NodeId, u32>,
    /// Per topology key asked about so far: pods per domain, by the key's
    /// domain numbers. Built on the first question from `per_node`, then
    /// kept as pods bind and leave; forgotten when a node's labels change.
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
    /// Per topology key asked about so far: its domains numbered over
    /// every node, extended as nodes are added, forgotten when a node's
    /// labels change.
    keys: RefCell<BTreeMap<String, Rc<KeyDomains>>>,
}

fn label<'a>(node: &'a SimNode, key: &str) -> Option<&'a String> {
    node.labels().get(key)
}

/// A key's domains numbered over every node of `nodes`: the nodes added
/// since it was last asked are numbered now.
fn numbered<'a>(
    keys: &'a mut BTreeMap<String, Rc<KeyDomains>>,
    key: &str,
    nodes: &[SimNode],
) -> &'a mut Rc<KeyDomains> {
    if !keys.contains_key(key) {
        keys.insert(key.to_owned(), Rc::default());
    }
    let index = keys.get_mut(key).expect("just inserted");
    if index.nodes() < nodes.len() {
        let grown = Rc::make_mut(index);
        for node in &nodes[grown.nodes()..] {
            grown.push_node(label(node, key));
        }
    }
    index
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

    /// A pod of `template` in `namespace` now holds resources on `node`
    /// (of `nodes`).
    pub(crate) fn bind(
        &mut self,
        template: &Rc<Template>,
        namespace: &str,
        node: NodeId,
        nodes: &[SimNode],
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
        let keys = self.keys.get_mut();
        for (key, domains) in group.domains.get_mut().iter_mut() {
            if let Some(id) = numbered(keys, key, nodes).of_node(node) {
                Rc::make_mut(domains).add(id, 1);
            }
        }
    }

    /// A pod of `template` in `namespace` no longer holds resources on
    /// `node` (of `nodes`).
    pub(crate) fn release(
        &mut self,
        template: &Rc<Template>,
        namespace: &str,
        node: NodeId,
        nodes: &[SimNode],
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
        let keys = self.keys.get_mut();
        for (key, domains) in group.domains.get_mut().iter_mut() {
            if let Some(id) = numbered(keys, key, nodes).of_node(node) {
                Rc::make_mut(domains).remove(id);
            }
        }
    }

    /// A node's labels changed: every domain and its count may have moved.
    pub(crate) fn relabelled(&mut self) {
        self.keys.get_mut().clear();
        for group in &mut self.groups {
            group.domains.get_mut().clear();
        }
    }

    /// The domains of `key` numbered over `nodes`.
    pub(crate) fn index(&self, key: &str, nodes: &[SimNode]) -> Rc<KeyDomains> {
        numbered(&mut self.keys.borrow_mut(), key, nodes).clone()
    }

    /// The domains of `key` numbered over `nodes`, and how many of the
    /// group's pods run in each.
    pub(crate) fn domains(
        &self,
        group: &PodGroup,
        key: &str,
        nodes: &[SimNode],
    ) -> (Rc<KeyDomains>, Rc<Domains>) {
        let index = numbered(&mut self.keys.borrow_mut(), key, nodes).clone();
        if let Some(domains) = group.domains.borrow().get(key) {
            return (index, domains.clone());
        }
        let mut domains = Domains::default();
        for (&node, &n) in &group.per_node {
            if let Some(id) = index.of_node(node) {
                domains.add(id, n);
            }
        }
        let domains = Rc::new(domains);
        group
            .domains
            .borrow_mut()
            .insert(key.to_owned(), domains.clone());
        (index, domains)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, template};
    use drillbench_model::rng::SeededRng;

    const KEYS: [&str; 3] = ["kubernetes.io/hostname", "zone", "rack"];

    /// A node named `n-<i>` in zone `z<i % 3>`, in a rack only every
    /// other one (a node without the key is in no domain).
    fn zoned(i: usize) -> SimNode {
        let mut n = node(&format!("n-{i}"));
        let mut labels = n.labels().clone();
        labels.insert("zone".to_owned(), format!("z{}", i % 3));
        if i.is_multiple_of(2) {
            labels.insert("rack".to_owned(), format!("r{}", i % 4));
        }
        n.object.metadata.labels = Some(labels);
        n
    }

    /// Random binds and releases of two templates' pods, nodes added
    /// midway and relabelled now and then: after every step, each group's
    /// kept counts per domain, read through the numbering of every node
    /// and of every value, equal a recount of the pods each node holds.
    #[test]
    fn kept_domain_counts_equal_a_recount_after_random_binds_and_releases() {
        let templates = [template("web"), template("db")];
        for seed in 0..16 {
            let mut rng = SeededRng::new(seed);
            let mut nodes: Vec<SimNode> = (0..6).map(zoned).collect();
            let mut groups = PodGroups::default();
            // (template, node) of every pod holding resources.
            let mut held: Vec<(usize, NodeId)> = Vec::new();
            for step in 0..400_u32 {
                match rng.index(10) {
                    0 if nodes.len() < 12 => nodes.push(zoned(nodes.len())),
                    1 if step.is_multiple_of(7) => {
                        // A relabel moves a node to another zone.
                        let n = rng.index(nodes.len());
                        let mut labels = nodes[n].labels().clone();
                        labels.insert("zone".to_owned(), "z9".to_owned());
                        // The pods on it stay: they now count in z9.
                        nodes[n].object.metadata.labels = Some(labels);
                        groups.relabelled();
                    }
                    2..=5 if !held.is_empty() => {
                        let (t, on) = held.swap_remove(rng.index(held.len()));
                        groups.release(&templates[t], "ns", on, &nodes);
                    }
                    _ => {
                        let (t, on) = (rng.index(2), rng.index(nodes.len()));
                        groups.bind(&templates[t], "ns", on, &nodes);
                        held.push((t, on));
                    }
                }
                for group in groups.all() {
                    let t = templates
                        .iter()
                        .position(|t| Rc::ptr_eq(t, &group.template))
                        .expect("a known template");
                    // Ask a random key first, so some stay unasked and are
                    // built later from the pods per node.
                    for key in [KEYS[rng.index(3)]].into_iter().chain(KEYS) {
                        let (index, domains) = groups.domains(group, key, &nodes);
                        let recount = |value: &String| {
                            held.iter()
                                .filter(|&&(u, on)| u == t && label(&nodes[on], key) == Some(value))
                                .count() as u32
                        };
                        for (n, on) in nodes.iter().enumerate() {
                            let Some(value) = label(on, key) else {
                                assert_eq!(index.of_node(n), None, "{key}: no domain");
                                continue;
                            };
                            let id = index.of_node(n).expect("a numbered node");
                            assert_eq!(index.of_value(value), Some(id), "{key}={value}");
                            assert_eq!(
                                domains.count(id),
                                recount(value),
                                "seed {seed} step {step} {key}={value}"
                            );
                        }
                        let total: u32 = held
                            .iter()
                            .filter(|&&(u, on)| u == t && label(&nodes[on], key).is_some())
                            .count() as u32;
                        assert_eq!(domains.is_empty(), total == 0, "seed {seed} step {step}");
                    }
                }
            }
        }
    }

    /// Control: a count kept without the release disagrees with the
    /// recount, so the comparison above can fail.
    #[test]
    fn a_missed_release_is_told_apart() {
        let t = template("web");
        let nodes: Vec<SimNode> = (0..3).map(zoned).collect();
        let mut groups = PodGroups::default();
        groups.bind(&t, "ns", 1, &nodes);
        groups.bind(&t, "ns", 1, &nodes);
        let (index, domains) = groups.domains(&groups.all()[0], "zone", &nodes);
        let z1 = index.of_node(1).expect("zoned");
        assert_eq!(domains.count(z1), 2);
        drop(domains);
        groups.release(&t, "ns", 1, &nodes);
        let (_, domains) = groups.domains(&groups.all()[0], "zone", &nodes);
        assert_eq!(domains.count(z1), 1, "one release, one pod fewer");
        assert_eq!(index.of_node(0).map(|z| domains.count(z)), Some(0));
    }
}
