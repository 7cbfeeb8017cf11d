//! Pods outside a guard still reach the autoscaled pools: the guard must
//! not take burst capacity from everything else.

use std::collections::BTreeMap;

use super::placement::pods_match;
use super::{Figures, result};
use drillbench_model::scenario::assertion::Assertion;
use drillbench_model::scenario::spec::BurstAssertion;
use drillbench_observe::{Observation, Placement};
use drillbench_report::{AssertionResult, Evidence, Figure};

pub(super) fn judge(
    assertion: &Assertion,
    b: &BurstAssertion,
    obs: &Observation,
    figures: &mut Figures,
) -> AssertionResult {
    let name = &assertion.name;
    let pools: Vec<&str> = b.pools.iter().map(|p| p.as_str()).collect();
    // A DaemonSet's pod runs on an autoscaler node because the node exists
    // ("a DaemonSet ensures that all (or some) Nodes run a copy of a Pod",
    // kubernetes.io/docs/concepts/workloads/controllers/daemonset/), not
    // because the scheduler sent load there: it is no evidence of burst.
    let burst: Vec<&Placement> = obs
        .placements
        .iter()
        .filter(|p| {
            pods_match(&b.pods, p) && pools.contains(&p.pool.as_str()) && !is_daemonset_pod(p)
        })
        .collect();
    let ok = !burst.is_empty();
    figures.insert(
        format!("burst-placements.{name}"),
        Figure {
            value: burst.len() as f64,
            unit: "count".to_owned(),
        },
    );
    result(
        assertion,
        ok,
        format!("pods burst onto {}", pools.join(", ")),
        format!("{} placement(s)", burst.len()),
        if ok {
            format!(
                "{} pod(s) outside the guard ran on autoscaler pools",
                burst.len()
            )
        } else {
            "no pod outside the guard reached an autoscaler pool: burst is broken".to_owned()
        },
        burst
            .iter()
            .take(5)
            .map(|p| Evidence {
                at_ms: p.at,
                pod: Some(p.pod.clone()),
                node: Some(p.node.clone()),
                rule: "burst onto autoscaler pools".to_owned(),
                detail: format!("pool {}", p.pool),
                labels: BTreeMap::new(),
            })
            .collect(),
    )
}

fn is_daemonset_pod(placement: &Placement) -> bool {
    placement
        .workload
        .as_deref()
        .and_then(|w| w.split('/').nth(1))
        == Some("DaemonSet")
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_model::scenario::assertion::AssertionKind;
    use drillbench_report::Verdict;
    use std::rc::Rc;

    fn placed(pod: &str, workload: &str) -> Placement {
        Placement {
            at: 60_000,
            pod: format!("load/{pod}"),
            namespace: "load".to_owned(),
            pod_labels: Rc::default(),
            workload: Some(workload.to_owned()),
            node: "prod-autoscale-cx43-1".to_owned(),
            pool: "autoscale-cx43".to_owned(),
            autoscaled: true,
            node_labels: Rc::default(),
            claims: Vec::new(),
        }
    }

    /// A DaemonSet's pod on an autoscaler node is there because the node
    /// is; only a scheduled workload's pod there is burst. Paired: the
    /// same observation with one Deployment pod on the pool passes.
    #[test]
    fn a_daemonset_pod_on_an_autoscaler_node_is_not_burst() {
        let spec: drillbench_model::scenario::spec::AssertionSpec = serde_saphyr::from_str(
            "name: burst-unchanged\nburstUnchanged: {pods: {}, pools: [autoscale-cx43]}\n",
        )
        .expect("spec");
        let assertion = Assertion::lower(&spec).expect("one kind");
        let AssertionKind::BurstUnchanged(b) = &assertion.kind else {
            panic!("a burst assertion");
        };
        let mut obs = Observation::default();
        obs.placements
            .push(placed("cilium-abcde", "kube-system/DaemonSet/cilium"));
        let only_daemons = judge(&assertion, b, &obs, &mut Figures::new());
        assert_eq!(only_daemons.verdict, Verdict::Fail, "{only_daemons:?}");
        assert_eq!(only_daemons.measured, "0 placement(s)");
        obs.placements
            .push(placed("burst-7d9f-x1", "load/Deployment/burst"));
        let burst = judge(&assertion, b, &obs, &mut Figures::new());
        assert_eq!(burst.verdict, Verdict::Pass, "{burst:?}");
        assert_eq!(burst.measured, "1 placement(s)");
    }
}
