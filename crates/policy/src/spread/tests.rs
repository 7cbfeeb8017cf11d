//! Table rows in the manner of upstream's
//! `pkg/scheduler/framework/plugins/podtopologyspread/filtering_test.go`
//! (`TestSingleConstraint`, `TestMultipleConstraints`, the minDomains and
//! node inclusion policy cases), each named after the upstream case it
//! transcribes and paired with a control that flips its outcome.

use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::core::v1::{Node, NodeSpec, PodSpec, Taint, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::*;

use drillbench_model::k8s::node_selector::RequiredNodeAffinity;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// `node-<name>` in `zone`, or without a zone label; optionally tainted.
fn node(name: &str, zone: Option<&str>, tainted: bool) -> Node {
    let mut labels = map(&[("node", name), ("kubernetes.io/hostname", name)]);
    if let Some(zone) = zone {
        labels.insert("zone".to_owned(), zone.to_owned());
    }
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            taints: tainted.then(|| {
                vec![Taint {
                    key: "dedicated".to_owned(),
                    effect: "NoSchedule".to_owned(),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        }),
        status: None,
    }
}

/// A cluster: nodes and, per node, its pods (namespace, labels).
struct Cluster {
    nodes: Vec<Node>,
    pods: Vec<Vec<(&'static str, BTreeMap<String, String>)>>,
}

/// Nodes `a`, `b` in zone1 and `x`, `y` in zone2, with this many `foo`
/// pods of namespace `default` each.
fn four(counts: [usize; 4]) -> Cluster {
    let nodes = vec![
        node("a", Some("zone1"), false),
        node("b", Some("zone1"), false),
        node("x", Some("zone2"), false),
        node("y", Some("zone2"), false),
    ];
    let pods = counts
        .iter()
        .map(|&n| vec![("default", map(&[("foo", "")])); n])
        .collect();
    Cluster { nodes, pods }
}

/// A constraint from its JSON form, `labelSelector: foo Exists` unless
/// given.
fn constraint(extra: Value) -> TopologySpreadConstraint {
    let mut c = json!({
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
    });
    if let (Some(into), Value::Object(extra)) = (c.as_object_mut(), extra) {
        into.extend(extra);
    }
    serde_json::from_value(c).expect("a constraint")
}

/// The nodes (by name) the filter lets the incoming pod onto.
fn fitting(
    cluster: &Cluster,
    labels: &BTreeMap<String, String>,
    constraints: &[TopologySpreadConstraint],
    spec: PodSpec,
) -> Vec<String> {
    let compiled: Vec<SpreadConstraint> = constraints
        .iter()
        .map(|c| SpreadConstraint::compile(c, labels).expect("compiles"))
        .collect();
    let required = RequiredNodeAffinity::from_pod_spec(&spec).expect("compiles");
    let incoming = SpreadPod {
        namespace: "default",
        labels,
        placement: Placement {
            required: Some(&required),
            tolerations: &[],
        },
        constraints: &compiled,
    };
    let count = |pods: &[(&str, BTreeMap<String, String>)], i: usize| {
        pods.iter()
            .filter(|(ns, l)| compiled[i].counts("default", ns, l))
            .count() as u32
    };
    let mut state = SpreadState::default();
    for (node, pods) in cluster.nodes.iter().zip(&cluster.pods) {
        state.add_node(&incoming, node, |i| count(pods, i));
    }
    // The same, with the domains numbered over the nodes' indices.
    let mut numbered = SpreadState::numbered(&incoming, |key| numbering(cluster, key));
    for (at, (node, pods)) in cluster.nodes.iter().zip(&cluster.pods).enumerate() {
        numbered.add_node_at(&incoming, node, Some(at), |i| count(pods, i));
    }
    let fitting: Vec<String> = cluster
        .nodes
        .iter()
        .filter(|n| state.filter(&incoming, n).is_ok())
        .map(|n| n.metadata.name.clone().unwrap_or_default())
        .collect();
    let by_number: Vec<String> = cluster
        .nodes
        .iter()
        .enumerate()
        .filter(|(at, n)| numbered.filter_at(&incoming, n, Some(*at)).is_ok())
        .map(|(_, n)| n.metadata.name.clone().unwrap_or_default())
        .collect();
    assert_eq!(by_number, fitting, "by number as by label");
    fitting
}

/// The cluster's values of `key` numbered over its nodes, in order.
fn numbering(cluster: &Cluster, key: &str) -> Rc<KeyDomains> {
    let mut index = KeyDomains::default();
    for node in &cluster.nodes {
        index.push_node(labels(node).get(key));
    }
    Rc::new(index)
}

fn foo() -> BTreeMap<String, String> {
    map(&[("foo", "")])
}

fn by_node(extra: Value) -> TopologySpreadConstraint {
    let mut extra = extra;
    extra["topologyKey"] = json!("node");
    constraint(extra)
}

#[test]
fn max_skew_over_zones_and_nodes() {
    let rows: Vec<(&str, Cluster, TopologySpreadConstraint, &[&str])> = vec![
        (
            "no existing pods",
            four([0, 0, 0, 0]),
            constraint(json!({})),
            &["a", "b", "x", "y"],
        ),
        (
            "pods spread across zones as 3/3, all nodes fit",
            four([2, 1, 1, 2]),
            constraint(json!({})),
            &["a", "b", "x", "y"],
        ),
        (
            "control: 3/2, only zone2 fits",
            four([2, 1, 1, 1]),
            constraint(json!({})),
            &["x", "y"],
        ),
        (
            "pods spread across nodes as 2/1/0/3, only node-x fits",
            four([2, 1, 0, 3]),
            by_node(json!({})),
            &["x"],
        ),
        (
            "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
            four([2, 1, 0, 3]),
            by_node(json!({"maxSkew": 2})),
            &["b", "x"],
        ),
        (
            "control: maxSkew 3 lets node-a in too",
            four([2, 1, 0, 3]),
            by_node(json!({"maxSkew": 3})),
            &["a", "b", "x"],
        ),
    ];
    for (name, cluster, c, want) in rows {
        assert_eq!(
            fitting(&cluster, &foo(), &[c], PodSpec::default()),
            *want,
            "{name}"
        );
    }
}

#[test]
fn what_counts_in_a_domain() {
    // Existing pods in another namespace do not count.
    let mut cluster = four([0, 0, 0, 0]);
    cluster.pods[0] = vec![("other", foo()), ("other", foo())];
    let c = by_node(json!({}));
    assert_eq!(
        fitting(
            &cluster,
            &foo(),
            std::slice::from_ref(&c),
            PodSpec::default()
        ),
        ["a", "b", "x", "y"],
        "existing pods in a different namespace do not count"
    );
    cluster.pods[0] = vec![("default", foo())];
    assert_eq!(
        fitting(
            &cluster,
            &foo(),
            std::slice::from_ref(&c),
            PodSpec::default()
        ),
        ["b", "x", "y"],
        "control: one in the same namespace does"
    );

    // The incoming pod adds itself only when its selector matches it.
    let mut cluster = four([1, 0, 0, 0]);
    cluster.nodes.truncate(2);
    cluster.pods.truncate(2);
    let bar = map(&[("bar", "")]);
    assert_eq!(
        fitting(&cluster, &bar, std::slice::from_ref(&c), PodSpec::default()),
        ["a", "b"],
        "a pod its own selector does not match adds nothing"
    );
    assert_eq!(
        fitting(
            &cluster,
            &foo(),
            std::slice::from_ref(&c),
            PodSpec::default()
        ),
        ["b"],
        "control: a matching pod adds itself"
    );

    // No labelSelector: the constraint selects no pod, itself included.
    let mut none = c.clone();
    none.label_selector = None;
    let cluster = four([3, 0, 0, 0]);
    assert_eq!(
        fitting(&cluster, &foo(), &[none], PodSpec::default()),
        ["a", "b", "x", "y"],
        "a constraint without labelSelector counts nothing"
    );

    // `labelSelector: {}` (common.go's `countPodsMatchSelector`: an
    // `Empty()` selector counts 0) counts no existing pod, while the
    // incoming pod still adds itself (`selfMatchNum` is a plain
    // `Matches`): 0 + 1 - 0 never exceeds maxSkew, so every node fits.
    let mut everything = c.clone();
    everything.label_selector = Some(Default::default());
    assert_eq!(
        fitting(&cluster, &foo(), &[everything], PodSpec::default()),
        ["a", "b", "x", "y"],
        "an empty selector counts no existing pod"
    );
    assert_eq!(
        fitting(
            &cluster,
            &foo(),
            std::slice::from_ref(&c),
            PodSpec::default()
        ),
        ["b", "x", "y"],
        "control: a selector naming the pods counts the three on a"
    );
}

#[test]
fn a_node_without_the_key_is_no_domain_and_never_fits() {
    // "pods spread across zones as 1/2 due to absence of label 'zone' on
    // node-b": node-b's pods do not count, and node-b is refused.
    let mut cluster = four([1, 3, 1, 1]);
    cluster.nodes[1] = node("b", None, false);
    let c = constraint(json!({}));
    assert_eq!(
        fitting(
            &cluster,
            &foo(),
            std::slice::from_ref(&c),
            PodSpec::default()
        ),
        ["a"],
        "zone1 has 1, zone2 has 2"
    );
    // Control: labelled, node-b's three pods make zone1 the fuller one.
    let cluster = four([1, 3, 1, 1]);
    assert_eq!(
        fitting(&cluster, &foo(), &[c], PodSpec::default()),
        ["x", "y"]
    );
}

#[test]
fn node_inclusion_policies_default_to_honor_affinity_and_ignore_taints() {
    let to_a_or_y: PodSpec = serde_json::from_value(json!({"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "node", "operator": "In", "values": ["a", "y"]}]}]}}}}))
    .expect("a spec");
    // "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence
    // node-a fits": only a and y are domains (Honor), minimum 2.
    let cluster = four([2, 1, 0, 3]);
    let honored = fitting(&cluster, &foo(), &[by_node(json!({}))], to_a_or_y.clone());
    // The filter judges spread alone: b and x are domains nobody counts,
    // so they pass it (node affinity refuses them elsewhere).
    assert!(honored.contains(&"a".to_owned()) && !honored.contains(&"y".to_owned()));
    let ignored = fitting(
        &cluster,
        &foo(),
        &[by_node(json!({"nodeAffinityPolicy": "Ignore"}))],
        to_a_or_y,
    );
    assert!(
        !ignored.contains(&"a".to_owned()),
        "control: with Ignore, node-x (0) is a domain and node-a is 2 over it"
    );

    // nodeTaintsPolicy: a tainted node still counts by default, so its 0
    // holds the minimum down.
    let mut cluster = four([1, 1, 0, 1]);
    cluster.nodes[2] = node("x", Some("zone2"), true);
    let ignore = fitting(&cluster, &foo(), &[by_node(json!({}))], PodSpec::default());
    assert_eq!(ignore, ["x"], "the tainted node's 0 is the minimum");
    let honor = fitting(
        &cluster,
        &foo(),
        &[by_node(json!({"nodeTaintsPolicy": "Honor"}))],
        PodSpec::default(),
    );
    assert_eq!(
        honor,
        ["a", "b", "x", "y"],
        "control: with Honor the untolerated node is no domain, minimum 1"
    );
}

#[test]
fn min_domains_holds_the_minimum_at_zero() {
    // "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of
    // domains < minDomains, then the third node fits".
    let mut cluster = four([2, 2, 1, 0]);
    cluster.nodes.truncate(3);
    cluster.pods.truncate(3);
    let few = by_node(json!({"maxSkew": 2, "minDomains": 4}));
    assert_eq!(fitting(&cluster, &foo(), &[few], PodSpec::default()), ["x"]);
    let enough = by_node(json!({"maxSkew": 2, "minDomains": 3}));
    assert_eq!(
        fitting(&cluster, &foo(), &[enough], PodSpec::default()),
        ["a", "b", "x"],
        "control: as many domains as minDomains, the minimum is 1"
    );
}

#[test]
fn match_label_keys_narrow_the_selector_to_the_pods_revision() {
    let mut cluster = four([0, 0, 0, 0]);
    let rev = |r: &str| map(&[("foo", ""), ("rev", r)]);
    cluster.pods[0] = vec![("default", rev("1")), ("default", rev("1"))];
    cluster.pods[1] = vec![("default", rev("2"))];
    let keyed = by_node(json!({"matchLabelKeys": ["rev"]}));
    assert_eq!(
        fitting(&cluster, &rev("2"), &[keyed], PodSpec::default()),
        ["a", "x", "y"],
        "only rev 2 counts: node-b has the one"
    );
    let plain = by_node(json!({}));
    assert_eq!(
        fitting(&cluster, &rev("2"), &[plain], PodSpec::default()),
        ["x", "y"],
        "control: without matchLabelKeys every foo pod counts"
    );
}

#[test]
fn the_apiserver_refuses_what_it_refuses() {
    let labels = foo();
    for (why, c) in [
        ("maxSkew 0", constraint(json!({"maxSkew": 0}))),
        ("minDomains 0", constraint(json!({"minDomains": 0}))),
        (
            "minDomains with ScheduleAnyway",
            constraint(json!({"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"})),
        ),
        (
            "unknown action",
            constraint(json!({"whenUnsatisfiable": "Maybe"})),
        ),
        (
            "unknown policy",
            constraint(json!({"nodeTaintsPolicy": "Sometimes"})),
        ),
    ] {
        assert!(SpreadConstraint::compile(&c, &labels).is_err(), "{why}");
    }
    let fine = SpreadConstraint::compile(&constraint(json!({})), &labels).expect("control");
    assert_eq!(
        (fine.min_domains, fine.node_affinity, fine.node_taints),
        (1, Inclusion::Honor, Inclusion::Ignore),
        "upstream's defaults (common.go)"
    );
}

#[test]
fn system_defaults_need_a_selector_and_only_score() {
    // plugin.go's systemDefaultConstraints; helper.DefaultSelector.
    assert!(
        system_defaults(None).is_empty(),
        "nothing derived, no spreading"
    );
    let service = map(&[("app", "web")]);
    let selector = default_selector([&service], None).expect("valid");
    let defaults = system_defaults(selector);
    let shape: Vec<(&str, u32, Unsatisfiable)> = defaults
        .iter()
        .map(|c| (c.topology_key.as_str(), c.max_skew, c.when))
        .collect();
    assert_eq!(
        shape,
        [
            ("kubernetes.io/hostname", 3, Unsatisfiable::ScheduleAnyway),
            (
                "topology.kubernetes.io/zone",
                5,
                Unsatisfiable::ScheduleAnyway
            ),
        ]
    );
    assert!(defaults[0].counts("ns", "ns", &map(&[("app", "web"), ("x", "y")])));
    assert!(
        !defaults[0].counts("ns", "ns", &map(&[("app", "db")])),
        "control"
    );
    assert_eq!(default_selector([], None), Ok(None));
}

/// The normalized PodTopologySpread scores of the `feasible` nodes (by
/// index into the cluster), for an incoming `foo` pod with these
/// `ScheduleAnyway` constraints.
fn scores(cluster: &Cluster, constraints: &[Value], feasible: &[usize]) -> Vec<i64> {
    let labels = map(&[("foo", "")]);
    let compiled: Vec<SpreadConstraint> = constraints
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c["whenUnsatisfiable"] = json!("ScheduleAnyway");
            SpreadConstraint::compile(&constraint(c), &labels).expect("compiles")
        })
        .collect();
    let required = RequiredNodeAffinity::from_pod_spec(&PodSpec::default()).expect("compiles");
    let placement = Placement {
        required: Some(&required),
        tolerations: &[],
    };
    let count = |pods: &[(&str, BTreeMap<String, String>)], c: &SpreadConstraint| {
        pods.iter()
            .filter(|(ns, l)| c.counts("default", ns, l))
            .count() as u32
    };
    let mut state = SpreadScore::new(
        compiled.iter(),
        true,
        feasible.iter().map(|&i| &cluster.nodes[i]),
    )
    .expect("constraints to score");
    for (node, pods) in cluster.nodes.iter().zip(&cluster.pods) {
        state.add_node(&placement, node, |i| count(pods, &compiled[i]));
    }
    let raw: Vec<Option<i64>> = feasible
        .iter()
        .map(|&i| state.raw(&cluster.nodes[i], |c| count(&cluster.pods[i], &compiled[c])))
        .collect();
    // The same, with the domains numbered over the nodes' indices.
    let mut numbered = SpreadScore::numbered(
        compiled.iter(),
        true,
        feasible.iter().map(|&i| (Some(i), &cluster.nodes[i])),
        |key| numbering(cluster, key),
    )
    .expect("constraints to score");
    for (at, (node, pods)) in cluster.nodes.iter().zip(&cluster.pods).enumerate() {
        numbered.add_node_at(&placement, node, Some(at), |i| count(pods, &compiled[i]));
    }
    let by_number: Vec<Option<i64>> = feasible
        .iter()
        .map(|&i| {
            numbered.raw_at(&cluster.nodes[i], Some(i), |c| {
                count(&cluster.pods[i], &compiled[c])
            })
        })
        .collect();
    assert_eq!(by_number, raw, "by number as by label");
    normalize(&raw)
}

/// `scoring_test.go` `TestPodTopologySpreadScore`, "one constraint on
/// node, no existing pods": every node scores 100. Control: two pods on
/// `a` make it the worst.
#[test]
fn score_with_no_matching_pods_is_even() {
    let on_node = [json!({"topologyKey": "kubernetes.io/hostname"})];
    assert_eq!(scores(&four([0; 4]), &on_node, &[0, 1, 2, 3]), [100; 4]);
    // ln(6) ≈ 1.79: a = round(3.58) = 4, b = 0: 100 × (4 − 4) / 4 = 0.
    assert_eq!(
        scores(&four([2, 0, 0, 0]), &on_node, &[0, 1, 2, 3]),
        [0, 100, 100, 100]
    );
}

/// "one constraint on node, all 4 nodes are candidates": the score falls
/// with the matching pods on the node (a: 2, b: 1, x: 0, y: 0; raw 4, 2,
/// 0, 0). Control: a larger maxSkew adds the same `maxSkew − 1` to every
/// node, which shifts the scale (raw 6, 4, 2, 2: 100 × (8 − s) / 6).
#[test]
fn score_per_node_falls_with_the_matching_pods() {
    let cluster = four([2, 1, 0, 0]);
    let on_node = |skew: u32| [json!({"topologyKey": "kubernetes.io/hostname", "maxSkew": skew})];
    assert_eq!(
        scores(&cluster, &on_node(1), &[0, 1, 2, 3]),
        [0, 50, 100, 100]
    );
    assert_eq!(
        scores(&cluster, &on_node(3), &[0, 1, 2, 3]),
        [33, 66, 100, 100]
    );
}

/// "one constraint on zone, 4 candidate nodes": every node of a zone
/// scores its zone's count (zone1: 3, zone2: 1; ln(4) ≈ 1.39: raw 4 and
/// 1, so 100 × (5 − 4) / 4 = 25 and 100). Control: the counts swapped
/// swap the zones.
#[test]
fn score_per_zone_counts_the_whole_domain() {
    let zone = [json!({"topologyKey": "zone"})];
    assert_eq!(
        scores(&four([2, 1, 1, 0]), &zone, &[0, 1, 2, 3]),
        [25, 25, 100, 100]
    );
    assert_eq!(
        scores(&four([1, 0, 2, 1]), &zone, &[0, 1, 2, 3]),
        [100, 100, 25, 25]
    );
}

/// "existing pods in a different namespace do not count" and
/// "nodes without the topology key are ignored" (`IgnoredNodes`: scored
/// 0). Control: the same node with the key is scored.
#[test]
fn score_ignores_nodes_without_the_key() {
    let mut cluster = four([0, 0, 0, 0]);
    cluster.nodes.push(node("z", None, false));
    cluster.pods.push(Vec::new());
    let zone = [json!({"topologyKey": "zone"})];
    assert_eq!(scores(&cluster, &zone, &[0, 4]), [100, 0], "z has no zone");
    cluster.nodes[4] = node("z", Some("zone3"), false);
    assert_eq!(scores(&cluster, &zone, &[0, 4]), [100, 100], "control");
    // Pods of another namespace count nowhere.
    let mut other = four([0, 0, 0, 0]);
    other.pods[0] = vec![("elsewhere", map(&[("foo", "")])); 3];
    let on_node = [json!({"topologyKey": "kubernetes.io/hostname"})];
    assert_eq!(scores(&other, &on_node, &[0, 1]), [100, 100]);
    other.pods[0] = vec![("default", map(&[("foo", "")])); 3];
    assert_ne!(scores(&other, &on_node, &[0, 1]), [100, 100], "control");
}

/// "domains only count where a feasible node is": a zone no feasible node
/// is in is not counted, and the weight is ln(feasible domains + 2).
/// With only zone1 feasible every feasible node scores alike (100).
/// Control: both zones feasible, and zone1's pods count against it.
#[test]
fn score_counts_only_the_domains_of_feasible_nodes() {
    let zone = [json!({"topologyKey": "zone"})];
    let cluster = four([3, 0, 0, 0]);
    assert_eq!(scores(&cluster, &zone, &[0, 1]), [100, 100]);
    assert_eq!(scores(&cluster, &zone, &[0, 2]), [0, 100], "control");
}

/// Counted domain by domain (`add_domain`, as a caller that keeps counts
/// per domain does) the filter decides what it decides counted node by
/// node: one `foo` pod in zone1, none in zone2, maxSkew 1, so only zone2
/// admits another (`filtering_test.go`, "to-find-min spreads over two
/// zones" in spirit). Control: zone2 not declared a domain leaves zone1
/// the only one, its own minimum, and every node admits the pod.
#[test]
fn counted_by_domain_as_by_node() {
    let cluster = four([1, 0, 0, 0]);
    let labels = foo();
    let compiled = [SpreadConstraint::compile(&constraint(json!({})), &labels).expect("compiles")];
    let required = RequiredNodeAffinity::from_pod_spec(&PodSpec::default()).expect("compiles");
    let incoming = SpreadPod {
        namespace: "default",
        labels: &labels,
        placement: Placement {
            required: Some(&required),
            tolerations: &[],
        },
        constraints: &compiled,
    };
    let zones = numbering(&cluster, "zone");
    let (zone1, zone2) = (
        zones.of_value("zone1").expect("numbered"),
        zones.of_value("zone2").expect("numbered"),
    );
    let admitted = |domains: &[(u32, u32)]| -> Vec<usize> {
        let mut state = SpreadState::numbered(&incoming, |_| zones.clone());
        for &(domain, n) in domains {
            state.add_domain(0, domain, n);
        }
        (0..cluster.nodes.len())
            .filter(|&at| {
                state
                    .filter_at(&incoming, &cluster.nodes[at], Some(at))
                    .is_ok()
            })
            .collect()
    };
    assert_eq!(
        fitting(
            &cluster,
            &labels,
            &[constraint(json!({}))],
            PodSpec::default()
        ),
        ["x", "y"]
    );
    assert_eq!(admitted(&[(zone1, 1), (zone2, 0)]), [2, 3], "as by node");
    assert_eq!(admitted(&[(zone1, 1)]), [0, 1, 2, 3], "control: one domain");
}

/// The score counted domain by domain (`add_domains`) equals the score
/// counted node by node: zone1 holds 3 `foo` pods, zone2 one (the row
/// "one constraint on zone, 4 candidate nodes"). Control: counts taken
/// from the wrong zone swap the zones' scores.
#[test]
fn score_counted_by_domain_as_by_node() {
    let cluster = four([2, 1, 1, 0]);
    let labels = foo();
    let zone = json!({"topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"});
    let compiled =
        [SpreadConstraint::compile(&constraint(zone.clone()), &labels).expect("compiles")];
    let zones = numbering(&cluster, "zone");
    let zone1 = zones.of_value("zone1").expect("numbered");
    let by_domain = |zone1_count: u32, zone2_count: u32| {
        let mut state = SpreadScore::numbered(
            compiled.iter(),
            true,
            (0..4).map(|at| (Some(at), &cluster.nodes[at])),
            |_| zones.clone(),
        )
        .expect("constraints to score");
        state.add_domains(|_, d| if d == zone1 { zone1_count } else { zone2_count });
        let raw: Vec<Option<i64>> = (0..4)
            .map(|at| state.raw_at(&cluster.nodes[at], Some(at), |_| 0))
            .collect();
        normalize(&raw)
    };
    assert_eq!(scores(&cluster, &[zone], &[0, 1, 2, 3]), [25, 25, 100, 100]);
    assert_eq!(by_domain(3, 1), [25, 25, 100, 100], "as by node");
    assert_eq!(by_domain(1, 3), [100, 100, 25, 25], "control");
}
