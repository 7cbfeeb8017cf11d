//! Topology domains by number: a key's values numbered once over the
//! nodes, and counts of pods per domain kept as vectors by that number.
//!
//! kube-scheduler keys its counts by topology pair (key, value). With a
//! domain per node (the hostname) a filter that looks a node's pair up in
//! a map costs string searches among thousands of values for every node it
//! scans; numbered, the node's domain is one array read and its count
//! another. Inter-pod affinity (`interpod`) and topology spread (`spread`)
//! both read domains this way.

use std::collections::BTreeMap;

/// One topology key's domains, numbered: each value gets a number, and
/// each node (by the index's own order, the caller's node indices) the
/// number of its domain. Counts per domain ([`Domains`]) are then vectors,
/// and a node's domain one lookup instead of two string searches, which is
/// what the filter costs per node scanned (kube-scheduler's counts are
/// keyed by topology pair; the numbering only makes the same key cheap).
#[derive(Debug, Clone, Default)]
pub struct KeyDomains {
    ids: BTreeMap<String, u32>,
    of_node: Vec<Option<u32>>,
}

impl KeyDomains {
    /// Numbers the next node: its value of the key, if it has one.
    pub fn push_node(&mut self, value: Option<&String>) -> Option<u32> {
        let id = value.map(|v| self.number(v));
        self.of_node.push(id);
        id
    }

    /// A value's domain number, numbering it if no node had it yet.
    pub fn number(&mut self, value: &str) -> u32 {
        match self.ids.get(value) {
            Some(&id) => id,
            None => {
                let id = self.ids.len() as u32;
                self.ids.insert(value.to_owned(), id);
                id
            }
        }
    }

    /// How many domains are numbered (numbers run from 0 to this).
    pub fn domains(&self) -> usize {
        self.ids.len()
    }

    /// How many nodes are numbered.
    pub fn nodes(&self) -> usize {
        self.of_node.len()
    }

    /// A numbered node's domain (none: it lacks the key, or is not
    /// numbered).
    pub fn of_node(&self, node: usize) -> Option<u32> {
        self.of_node.get(node).copied().flatten()
    }

    /// The number of a value's domain, if a numbered node has it.
    pub fn of_value(&self, value: &str) -> Option<u32> {
        self.ids.get(value).copied()
    }
}

/// How many pods of a group run in each domain of one topology key, by
/// the key's domain numbers ([`KeyDomains`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Domains {
    counts: Vec<u32>,
    total: u32,
}

impl Domains {
    /// `n` more pods in a domain.
    pub fn add(&mut self, domain: u32, n: u32) {
        let d = domain as usize;
        if self.counts.len() <= d {
            self.counts.resize(d + 1, 0);
        }
        self.counts[d] += n;
        self.total += n;
    }

    /// One pod fewer in a domain (that counts one).
    pub fn remove(&mut self, domain: u32) {
        if let Some(n) = self.counts.get_mut(domain as usize)
            && *n > 0
        {
            *n -= 1;
            self.total -= 1;
        }
    }

    /// The counts by domain number; the domains past its end count 0.
    pub fn by_domain(&self) -> &[u32] {
        &self.counts
    }

    /// How many pods run in a domain.
    pub fn count(&self, domain: u32) -> u32 {
        self.counts.get(domain as usize).copied().unwrap_or(0)
    }

    /// Whether no pod runs in any domain.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }
}
