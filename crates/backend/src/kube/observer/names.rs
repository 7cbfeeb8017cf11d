//! A node's three names: the drill's (`prod-worker-1`, what reports and
//! drills say), the API's (`drillbench-r1-worker2` on kind, what requests
//! address) and its `kubernetes.io/hostname` (what a node-pinned volume's
//! affinity names), and the pool a name belongs to.

use std::collections::BTreeMap;

use drillbench_model::labels::{CONTROL_PLANE_LABEL, NODE_LABEL, POOL_LABEL};
use drillbench_model::topology::{CONTROL_PLANE_POOL, Topology};

/// The node label a node-pinned PersistentVolume's affinity requires.
pub const HOSTNAME_LABEL: &str = "kubernetes.io/hostname";

/// Every node's drill name by its API name and by its hostname, kept after
/// the node goes so a volume pinned to it, or a late event about it, still
/// names it.
#[derive(Debug, Default)]
pub(super) struct NodeNames {
    by_api: BTreeMap<String, String>,
    by_hostname: BTreeMap<String, String>,
}

impl NodeNames {
    /// Learns a node's names from its labels and returns its drill name:
    /// its [`NODE_LABEL`], which kind and Talos nodes carry, else the API
    /// name itself.
    pub(super) fn learn(&mut self, api_name: &str, labels: &BTreeMap<String, String>) -> String {
        let name = labels
            .get(NODE_LABEL)
            .cloned()
            .unwrap_or_else(|| api_name.to_owned());
        self.by_api.insert(api_name.to_owned(), name.clone());
        self.by_hostname.insert(
            labels
                .get(HOSTNAME_LABEL)
                .cloned()
                .unwrap_or_else(|| api_name.to_owned()),
            name.clone(),
        );
        name
    }

    /// A node's drill name from its API name; a name never learnt is taken
    /// as it is.
    pub(super) fn drill_name(&self, api_name: &str) -> String {
        self.by_api
            .get(api_name)
            .cloned()
            .unwrap_or_else(|| api_name.to_owned())
    }

    /// The drill name of the node a hostname belongs to; a hostname never
    /// learnt is read as an API name.
    pub(super) fn of_host(&self, host: &str) -> String {
        self.by_hostname
            .get(host)
            .cloned()
            .unwrap_or_else(|| self.drill_name(host))
    }
}

/// The pool a node belongs to: control planes by their role label, other
/// nodes by their pool's name pattern (`{n}` an ordinal, `{hex12}` twelve
/// hex digits), then by the pool's labels; `""` when none matches.
pub fn pool_of(topology: &Topology, name: &str, labels: &BTreeMap<String, String>) -> String {
    if labels.contains_key(CONTROL_PLANE_LABEL) {
        return CONTROL_PLANE_POOL.to_owned();
    }
    // The pool the kind and Talos drivers wrote on the node.
    if let Some(pool) = labels.get(POOL_LABEL)
        && topology.pool(pool).is_some()
    {
        return pool.clone();
    }
    if let Some(pool) = topology.pools.iter().find(|p| p.name_pattern.matches(name)) {
        return pool.name.clone();
    }
    topology
        .pools
        .iter()
        .find(|p| !p.labels.is_empty() && p.labels.iter().all(|(k, v)| labels.get(k) == Some(v)))
        .map(|p| p.name.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn node_names_map_to_pools_by_pattern_then_labels() {
        let drill = super::super::tests::drill();
        let topology = &drill.topology;
        let none = BTreeMap::new();
        assert_eq!(pool_of(topology, "prod-worker-1", &none), "baseline");
        let cp = BTreeMap::from([(CONTROL_PLANE_LABEL.to_owned(), String::new())]);
        assert_eq!(pool_of(topology, "anything", &cp), CONTROL_PLANE_POOL);
    }

    #[test]
    fn a_pool_label_the_topology_knows_wins_over_the_name_and_an_unknown_one_does_not() {
        let drill = super::super::tests::drill();
        let topology = &drill.topology;
        assert_eq!(
            pool_of(
                topology,
                "prod-worker-1",
                &labels(&[(POOL_LABEL, "autoscale-cx43")])
            ),
            "autoscale-cx43"
        );
        assert_eq!(
            pool_of(
                topology,
                "prod-worker-1",
                &labels(&[(POOL_LABEL, "no-such-pool")])
            ),
            "baseline"
        );
        assert_eq!(pool_of(topology, "stranger", &BTreeMap::new()), "");
    }

    #[test]
    fn a_node_is_named_by_its_label_and_found_again_by_api_name_and_hostname() {
        let mut names = NodeNames::default();
        let name = names.learn(
            "r1-worker2",
            &labels(&[(NODE_LABEL, "prod-worker-2"), (HOSTNAME_LABEL, "host-2")]),
        );
        assert_eq!(name, "prod-worker-2");
        assert_eq!(names.drill_name("r1-worker2"), "prod-worker-2");
        assert_eq!(names.of_host("host-2"), "prod-worker-2");
        // Without a hostname label the API name is the hostname.
        names.learn("r1-worker3", &labels(&[(NODE_LABEL, "prod-worker-3")]));
        assert_eq!(names.of_host("r1-worker3"), "prod-worker-3");
        // Without the drill's label a node is called by its API name.
        assert_eq!(names.learn("bare", &BTreeMap::new()), "bare");
        // Unknown names pass through, a hostname read as an API name.
        assert_eq!(names.drill_name("nobody"), "nobody");
        assert_eq!(names.of_host("r1-worker2"), "prod-worker-2");
    }
}
