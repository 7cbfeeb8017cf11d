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
        if ok {
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
                .collect()
        } else {
            left_pending(b, obs)
        },
    )
}

/// With no burst, the evidence is what was kept from it: the pods of the
/// assertion's kind that were created and never bound to a node (every
/// backend records creations and bindings; the scheduler's reason is added
/// where the backend recorded one). A pod that never bound has no
/// placement of its own, so it is known by its workload's bound pods (one
/// template, so the same claims and labels) and judged by the assertion's
/// match through them; a workload none of whose pods ever bound is left
/// out, since nothing says whether the assertion selects it.
fn left_pending(b: &BurstAssertion, obs: &Observation) -> Vec<Evidence> {
    use drillbench_observe::EventKind;
    let selected = |workload: &str| {
        obs.placements
            .iter()
            .filter(|p| p.workload.as_deref() == Some(workload))
            .any(|p| pods_match(&b.pods, p) && !is_daemonset_pod(p))
    };
    // The owner is the workload of the pod's namespace whose name, with
    // its `-` suffix, begins the pod's: the longest, so `shard-1` is not
    // `shard`'s sibling `shard-keeper`'s.
    let owner = |namespace: &str, pod: &str| {
        obs.workloads
            .keys()
            .filter(|w| {
                let mut parts = w.splitn(3, '/');
                let (ns, _, name) = (parts.next(), parts.next(), parts.next());
                ns == Some(namespace)
                    && name.is_some_and(|n| pod.strip_prefix(n).is_some_and(|r| r.starts_with('-')))
            })
            .max_by_key(|w| w.len())
            .cloned()
    };
    let key = |e: &drillbench_observe::Event| format!("{}/{}", e.object.namespace, e.object.name);
    let bound: std::collections::BTreeSet<String> = obs
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PodScheduled)
        .map(key)
        .collect();
    let why: BTreeMap<String, &str> = obs
        .events
        .iter()
        .filter(|e| e.kind == EventKind::PodUnschedulable)
        .map(|e| (key(e), e.message.as_str()))
        .collect();
    obs.events
        .iter()
        .filter(|e| e.kind == EventKind::PodCreated && !bound.contains(&key(e)))
        .filter(|e| owner(&e.object.namespace, &e.object.name).is_some_and(|w| selected(&w)))
        .take(5)
        .map(|e| Evidence {
            at_ms: e.at_ms,
            pod: Some(key(e)),
            node: None,
            rule: "burst onto autoscaler pools".to_owned(),
            detail: match why.get(&key(e)) {
                Some(reason) => format!("created and never bound to a node: {reason}"),
                None => "created and never bound to a node".to_owned(),
            },
            labels: BTreeMap::new(),
        })
        .collect()
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

    /// Burst that never reached the pools is shown by what was kept from
    /// them: the pods the assertion selects that were created and never
    /// bound, known by their workload's bound pods. Paired: a Pending
    /// pod of an hcloud consumer, which the assertion does not select, is
    /// no such evidence.
    #[test]
    fn failing_burst_names_the_selected_pods_left_pending() {
        let spec: drillbench_model::scenario::spec::AssertionSpec = serde_saphyr::from_str(
            "name: burst-unchanged\nburstUnchanged: {pods: {mountsNoClaimOfClass: hcloud}, pools: [autoscale-cx43]}\n",
        )
        .expect("spec");
        let assertion = Assertion::lower(&spec).expect("one kind");
        let AssertionKind::BurstUnchanged(b) = &assertion.kind else {
            panic!("a burst assertion");
        };
        let on_baseline = |pod: &str, workload: &str, claims: Vec<(String, Option<String>)>| {
            let mut p = placed(pod, workload);
            p.node = "prod-worker-1".to_owned();
            p.pool = "worker".to_owned();
            p.autoscaled = false;
            p.claims = claims;
            p
        };
        let event = |kind, namespace: &str, name: &str| drillbench_observe::Event {
            at_ms: 90_000,
            kind,
            object: drillbench_observe::ObjectRef {
                kind: "Pod".to_owned(),
                namespace: namespace.to_owned(),
                name: name.to_owned(),
            },
            node: None,
            pool: None,
            message: "0/6 nodes are available: 3 node(s) didn't match Pod's node affinity/selector"
                .to_owned(),
        };
        let mut obs = Observation::default();
        for w in ["load/Deployment/burst", "load/StatefulSet/burst-db"] {
            obs.workloads.insert(w.to_owned(), Default::default());
        }
        obs.placements.push(on_baseline(
            "burst-00000",
            "load/Deployment/burst",
            Vec::new(),
        ));
        let hcloud = vec![("data-burst-db-0".to_owned(), Some("hcloud".to_owned()))];
        obs.placements.push(on_baseline(
            "burst-db-0",
            "load/StatefulSet/burst-db",
            hcloud,
        ));
        use drillbench_observe::EventKind::{PodCreated, PodScheduled, PodUnschedulable};
        for (kind, pod) in [
            (PodCreated, "burst-00000"),
            (PodScheduled, "burst-00000"),
            (PodCreated, "burst-00009"),
            (PodUnschedulable, "burst-00009"),
            (PodCreated, "burst-0000a"),
            (PodCreated, "burst-db-1"),
            (PodUnschedulable, "burst-db-1"),
        ] {
            obs.events.push(event(kind, "load", pod));
        }
        let kept = judge(&assertion, b, &obs, &mut Figures::new());
        assert_eq!(kept.verdict, Verdict::Fail, "{kept:?}");
        let pods: Vec<_> = kept.evidence.iter().map(|e| e.pod.clone()).collect();
        // The bound pod is not evidence, nor the hcloud consumer's; a pod
        // with no recorded reason (as a real cluster's watch may give) is.
        assert_eq!(
            pods,
            [
                Some("load/burst-00009".to_owned()),
                Some("load/burst-0000a".to_owned())
            ]
        );
        assert!(
            kept.evidence[0]
                .detail
                .starts_with("created and never bound to a node: 0/6 nodes"),
            "{:?}",
            kept.evidence[0]
        );
        assert_eq!(kept.evidence[1].detail, "created and never bound to a node");
    }
}
