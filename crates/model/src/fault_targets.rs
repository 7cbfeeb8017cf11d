//! Fault targets that exist in the cluster but cannot resolve when the
//! fault fires: a static pool of zero nodes, or a pool an earlier step
//! already removed. Issue 19: both passed `validate` and ended the run with exit 3
//! ("pool `spare` has no live node to target", "no pool `batch`") and no
//! location in the drill.

use std::collections::BTreeMap;

use crate::scenario::Position;
use crate::scenario::check::Checker;
use crate::scenario::spec::{DrillSpec, Fault, Target};
use crate::topology::{PoolSize, Topology};

/// Walks the steps in order, remembering which pools are gone, and records
/// every fault that aims at a pool with no node to hit. Names that are not
/// pools at all are reported by the reference checks, not here.
pub(crate) fn check_fault_targets(
    spec: &DrillSpec,
    topology: &Topology,
    checker: &mut Checker<'_>,
) {
    // Removing a pool takes it out of the autoscaler's configuration for the
    // rest of the drill (nothing adds it back), so a second removal finds no
    // pool. Its nodes stay, stranded, and remain targets (`stranded-pool`).
    let mut removed: BTreeMap<&str, Position> = BTreeMap::new();
    for step in &spec.steps {
        // A node step picks its node as a fault does.
        if let Some(target) = step.node_target()
            && let Target::RandomNodeOf(pool) | Target::AutoscalerPick(pool) = &target.value
        {
            pool_holds_nodes("step", pool, target.at, topology, checker);
        }
        let Some(fault) = &step.fault else { continue };
        match &fault.value {
            Fault::DeleteNode(f)
            | Fault::CrashNode(f)
            | Fault::ReplaceNode(f)
            | Fault::RecreateControlPlane(f) => {
                if let Target::RandomNodeOf(pool) | Target::AutoscalerPick(pool) = &f.target.value {
                    pool_holds_nodes("fault", pool, f.target.at, topology, checker);
                }
            }
            Fault::RemovePool(f) => {
                if let Some(first) = removed.get(f.pool.as_str()) {
                    checker.error(
                        f.pool.at,
                        format!(
                            "pool `{}` was already removed by the step at line {}; expected a pool \
                             that still exists",
                            f.pool.value, first.line
                        ),
                    );
                } else if topology.pool(&f.pool).is_some() {
                    removed.insert(f.pool.as_str(), f.pool.at);
                }
            }
            Fault::RollingUpgrade(_) | Fault::FullRebuild(_) | Fault::RestoreNamespace(_) => {}
        }
    }
}

fn pool_holds_nodes(
    what: &str,
    pool: &str,
    at: Position,
    topology: &Topology,
    checker: &mut Checker<'_>,
) {
    // An autoscaled pool at min 0 may have grown by the time the fault fires;
    // a static pool of 0 never holds a node.
    if let Some(p) = topology.pool(pool)
        && p.size == PoolSize::Static(0)
    {
        checker.error(
            at,
            format!(
                "pool `{pool}` is a static pool of 0 nodes, so the {what} has no node to target; \
                 expected a pool with at least one node"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::drill::Drill;
    use crate::scenario::SourceFile;

    /// A drill with a `workers` pool of 2, a `spare` pool of `spare` nodes and
    /// the given steps; the problems `validate` reports, one line each.
    fn problems(spare: &str, steps: &str) -> Vec<String> {
        let text = format!(
            "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {{name: x}}
cluster:
  pools:
    - {{name: workers, count: 2, serverType: cx43}}
    - {{name: spare, {spare}, serverType: cx43}}
steps:
{steps}assertions:
  - {{name: quorum, quorum: {{}}}}
"
        );
        match Drill::from_source(SourceFile::new("d.yaml", text)) {
            Ok(_) => Vec::new(),
            Err(d) => d.0.iter().map(|d| d.message.clone()).collect(),
        }
    }

    #[test]
    fn a_random_node_of_a_static_pool_of_zero_is_refused_and_of_one_accepted() {
        let steps = "  - fault: {deleteNode: {target: {randomNodeOf: spare}}}\n";
        let refused = problems("count: 0", steps);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("static pool of 0 nodes"), "{refused:?}");
        assert_eq!(problems("count: 1", steps), Vec::<String>::new());
        // An autoscaled pool at min 0 may have grown when the fault fires.
        assert_eq!(
            problems("autoscaled: {min: 0, max: 3}", steps),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_pool_removed_twice_is_refused_and_two_pools_removed_once_each_accepted() {
        let twice =
            "  - fault: {removePool: {pool: spare}}\n  - fault: {removePool: {pool: spare}}\n";
        let refused = problems("count: 1", twice);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].contains("already removed by the step at line 9"),
            "{refused:?}"
        );
        let each_once =
            "  - fault: {removePool: {pool: spare}}\n  - fault: {removePool: {pool: workers}}\n";
        assert_eq!(problems("count: 1", each_once), Vec::<String>::new());
    }

    #[test]
    fn a_node_of_a_removed_pool_stays_a_target_as_in_stranded_pool() {
        // The pool leaves the autoscaler's configuration; its nodes stay.
        let removed_first = "  - fault: {removePool: {pool: spare}}\n  - fault: {crashNode: {target: {randomNodeOf: spare}}}\n";
        assert_eq!(problems("count: 1", removed_first), Vec::<String>::new());
        // A static pool of zero nodes is refused whatever comes before.
        assert_eq!(problems("count: 0", removed_first).len(), 1);
    }
}
