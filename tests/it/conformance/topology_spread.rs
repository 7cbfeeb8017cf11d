//! Pod topology spread: the filter (`whenUnsatisfiable: DoNotSchedule`)
//! in the manner of upstream's `filtering_test.go` (`TestSingleConstraint`,
//! `TestMultipleConstraints`, the minDomains and node inclusion policy
//! cases) and the score (`scoring_test.go` `TestPodTopologySpreadScore`),
//! each row named after the upstream case it transcribes; the system
//! default constraints (`plugin.go`, `helper.DefaultSelector`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSpec, PodSpec, Taint, TopologySpreadConstraint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

use super::{Behaviour, Pair, Source, from_json, labels, pair, row};
use drillbench_model::k8s::node_selector::RequiredNodeAffinity;
use drillbench_policy::spread::{
    Inclusion, SpreadConstraint, SpreadPod, SpreadScore, SpreadState, Unsatisfiable,
    default_selector, normalize, system_defaults,
};
use drillbench_policy::view::Placement;

/// `<name>` in `zone`, or without a zone label; optionally tainted.
fn node(name: &str, zone: Option<&str>, tainted: bool) -> Node {
    let mut node_labels = labels(&[("node", name), ("kubernetes.io/hostname", name)]);
    if let Some(zone) = zone {
        node_labels.insert("zone".to_owned(), zone.to_owned());
    }
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(node_labels),
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
#[derive(Clone)]
struct Cluster {
    nodes: Vec<Node>,
    pods: Vec<Vec<(&'static str, BTreeMap<String, String>)>>,
}

impl Cluster {
    fn without_zone(mut self, i: usize) -> Cluster {
        let name = self.nodes[i].metadata.name.clone().unwrap_or_default();
        self.nodes[i] = node(&name, None, false);
        self
    }

    fn tainted(mut self, i: usize) -> Cluster {
        let name = self.nodes[i].metadata.name.clone().unwrap_or_default();
        let zone = self.nodes[i]
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("zone").cloned());
        self.nodes[i] = node(&name, zone.as_deref(), true);
        self
    }

    fn first(mut self, n: usize) -> Cluster {
        self.nodes.truncate(n);
        self.pods.truncate(n);
        self
    }

    fn with_pods(
        mut self,
        i: usize,
        pods: Vec<(&'static str, BTreeMap<String, String>)>,
    ) -> Cluster {
        self.pods[i] = pods;
        self
    }
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
        .map(|&n| vec![("default", foo()); n])
        .collect();
    Cluster { nodes, pods }
}

fn foo() -> BTreeMap<String, String> {
    labels(&[("foo", "")])
}

/// A constraint from its JSON form: `maxSkew: 1` on `zone`,
/// `DoNotSchedule`, `labelSelector: foo Exists`, unless `extra` says
/// otherwise.
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
    from_json(c)
}

fn by_node(mut extra: Value) -> TopologySpreadConstraint {
    extra["topologyKey"] = json!("node");
    constraint(extra)
}

/// The nodes (by name) the filter lets the incoming pod onto.
fn fitting(
    cluster: &Cluster,
    pod_labels: &BTreeMap<String, String>,
    constraints: &[TopologySpreadConstraint],
    spec: &PodSpec,
) -> Vec<String> {
    let compiled: Vec<SpreadConstraint> = constraints
        .iter()
        .map(|c| SpreadConstraint::compile(c, pod_labels).expect("compiles"))
        .collect();
    let required = RequiredNodeAffinity::from_pod_spec(spec).expect("compiles");
    let incoming = SpreadPod {
        namespace: "default",
        labels: pod_labels,
        placement: Placement {
            required: Some(&required),
            tolerations: &[],
        },
        constraints: &compiled,
    };
    let mut state = SpreadState::default();
    for (node, pods) in cluster.nodes.iter().zip(&cluster.pods) {
        state.add_node(&incoming, node, |i| {
            pods.iter()
                .filter(|(ns, l)| compiled[i].counts("default", ns, l))
                .count() as u32
        });
    }
    cluster
        .nodes
        .iter()
        .filter(|n| state.filter(&incoming, n).is_ok())
        .map(|n| n.metadata.name.clone().unwrap_or_default())
        .collect()
}

/// [`fitting`] for a `foo` pod without node affinity.
fn fit(cluster: &Cluster, constraints: &[TopologySpreadConstraint]) -> Vec<String> {
    fitting(cluster, &foo(), constraints, &PodSpec::default())
}

/// The normalized scores of the `feasible` nodes (by index into the
/// cluster) for an incoming `foo` pod with these `ScheduleAnyway`
/// constraints.
fn scores(cluster: &Cluster, constraints: &[Value], feasible: &[usize]) -> Vec<i64> {
    let compiled: Vec<SpreadConstraint> = constraints
        .iter()
        .map(|c| {
            let mut c = c.clone();
            c["whenUnsatisfiable"] = json!("ScheduleAnyway");
            SpreadConstraint::compile(&constraint(c), &foo()).expect("compiles")
        })
        .collect();
    scored(cluster, &compiled, true, feasible)
}

/// The normalized scores of `constraints` (`require_all`: the pod's own,
/// else the system defaults) over the `feasible` nodes.
fn scored(
    cluster: &Cluster,
    compiled: &[SpreadConstraint],
    require_all: bool,
    feasible: &[usize],
) -> Vec<i64> {
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
        require_all,
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
    normalize(&raw)
}

/// Whether the API server refuses the constraint.
fn refused(extra: Value) -> bool {
    SpreadConstraint::compile(&constraint(extra), &foo()).is_err()
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

pub(super) fn pairs() -> Vec<Pair> {
    let skew = |case, control| {
        pair(
            Source::PodTopologySpread,
            Behaviour::SpreadMaxSkew,
            case,
            control,
        )
    };
    let inclusion = |case, control| {
        pair(
            Source::PodTopologySpread,
            Behaviour::SpreadInclusionPolicies,
            case,
            control,
        )
    };
    let score = |case, control| {
        pair(
            Source::PodTopologySpreadScoring,
            Behaviour::SpreadScheduleAnyway,
            case,
            control,
        )
    };
    let validation = |case, control| {
        pair(
            Source::PodTopologySpreadDocs,
            Behaviour::ApiValidation,
            case,
            control,
        )
    };
    let zone = constraint(json!({}));
    let per_node = by_node(json!({}));
    let to_a_or_y: PodSpec = from_json(json!({"containers": [], "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "node", "operator": "In", "values": ["a", "y"]}]}]}}}}));
    let rev = |r: &str| labels(&[("foo", ""), ("rev", r)]);
    let revisions = four([0; 4])
        .with_pods(0, vec![("default", rev("1")), ("default", rev("1"))])
        .with_pods(1, vec![("default", rev("2"))]);
    let on_node = |skew: u32| [json!({"topologyKey": "kubernetes.io/hostname", "maxSkew": skew})];
    let zone_score = [json!({"topologyKey": "zone"})];
    let web = labels(&[("app", "web")]);
    let defaults = system_defaults(default_selector([&web], None).expect("valid"));
    let hosts = |counts: [usize; 4]| {
        let mut c = four([0; 4]);
        for (i, n) in counts.iter().enumerate() {
            c.pods[i] = vec![("default", web.clone()); *n];
        }
        c
    };
    vec![
        skew(
            row(
                "no existing pods",
                fit(&four([0; 4]), std::slice::from_ref(&zone)),
                names(&["a", "b", "x", "y"]),
            ),
            row(
                "pods spread across zones as 3/2, only zone2 fits",
                fit(&four([2, 1, 1, 1]), std::slice::from_ref(&zone)),
                names(&["x", "y"]),
            ),
        ),
        skew(
            row(
                "pods spread across zones as 3/3, all nodes fit",
                fit(&four([2, 1, 1, 2]), std::slice::from_ref(&zone)),
                names(&["a", "b", "x", "y"]),
            ),
            row(
                "pods spread across zones as 3/4, only zone1 fits",
                fit(&four([2, 1, 2, 2]), std::slice::from_ref(&zone)),
                names(&["a", "b"]),
            ),
        ),
        skew(
            row(
                "pods spread across nodes as 2/1/0/3, only node-x fits",
                fit(&four([2, 1, 0, 3]), std::slice::from_ref(&per_node)),
                names(&["x"]),
            ),
            row(
                "pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit",
                fit(&four([2, 1, 0, 3]), &[by_node(json!({"maxSkew": 2}))]),
                names(&["b", "x"]),
            ),
        ),
        skew(
            row(
                "pods spread across nodes as 2/1/0/3, maxSkew is 3, node-a, node-b and node-x fit",
                fit(&four([2, 1, 0, 3]), &[by_node(json!({"maxSkew": 3}))]),
                names(&["a", "b", "x"]),
            ),
            row(
                "control: maxSkew 4 lets node-y in too",
                fit(&four([2, 1, 0, 3]), &[by_node(json!({"maxSkew": 4}))]),
                names(&["a", "b", "x", "y"]),
            ),
        ),
        skew(
            row(
                "pods spread across zones as 1/2 due to absence of label 'zone' on node-b",
                fit(
                    &four([1, 3, 1, 1]).without_zone(1),
                    std::slice::from_ref(&zone),
                ),
                names(&["a"]),
            ),
            row(
                "control: node-b labelled, its three pods make zone1 the fuller",
                fit(&four([1, 3, 1, 1]), std::slice::from_ref(&zone)),
                names(&["x", "y"]),
            ),
        ),
        skew(
            row(
                "existing pods in a different namespace do not count",
                fit(
                    &four([0; 4]).with_pods(0, vec![("other", foo()), ("other", foo())]),
                    std::slice::from_ref(&per_node),
                ),
                names(&["a", "b", "x", "y"]),
            ),
            row(
                "control: one existing pod in the same namespace does",
                fit(&four([1, 0, 0, 0]), std::slice::from_ref(&per_node)),
                names(&["b", "x", "y"]),
            ),
        ),
        skew(
            row(
                "incoming pod doesn't match itself (selfMatchNum 0): node-a and node-b fit",
                fitting(
                    &four([1, 0, 0, 0]).first(2),
                    &labels(&[("bar", "")]),
                    std::slice::from_ref(&per_node),
                    &PodSpec::default(),
                ),
                names(&["a", "b"]),
            ),
            row(
                "control: a pod its selector matches adds itself",
                fit(
                    &four([1, 0, 0, 0]).first(2),
                    std::slice::from_ref(&per_node),
                ),
                names(&["b"]),
            ),
        ),
        skew(
            row(
                "a constraint without labelSelector counts nothing",
                fit(
                    &four([3, 0, 0, 0]),
                    &[{
                        let mut c = per_node.clone();
                        c.label_selector = None;
                        c
                    }],
                ),
                names(&["a", "b", "x", "y"]),
            ),
            row(
                "control: a selector naming the pods counts the three on node-a",
                fit(&four([3, 0, 0, 0]), std::slice::from_ref(&per_node)),
                names(&["b", "x", "y"]),
            ),
        ),
        skew(
            row(
                "an empty labelSelector ({}) counts no existing pod (countPodsMatchSelector of an Empty selector)",
                fit(
                    &four([3, 0, 0, 0]),
                    &[{
                        let mut c = per_node.clone();
                        c.label_selector = Some(Default::default());
                        c
                    }],
                ),
                names(&["a", "b", "x", "y"]),
            ),
            row(
                "control: labelSelector foo Exists counts node-a's three",
                fit(&four([3, 0, 0, 0]), std::slice::from_ref(&per_node)),
                names(&["b", "x", "y"]),
            ),
        ),
        skew(
            row(
                "two constraints on zone and node, 2/2/1/2: only node-x fits both",
                fit(&four([2, 2, 1, 2]), &[zone.clone(), per_node.clone()]),
                names(&["x"]),
            ),
            row(
                "control: the zone constraint alone lets node-y in too",
                fit(&four([2, 2, 1, 2]), std::slice::from_ref(&zone)),
                names(&["x", "y"]),
            ),
        ),
        pair(
            Source::PodTopologySpread,
            Behaviour::SpreadMinDomains,
            row(
                "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, then the third node fits",
                fit(
                    &four([2, 2, 1, 0]).first(3),
                    &[by_node(json!({"maxSkew": 2, "minDomains": 4}))],
                ),
                names(&["x"]),
            ),
            row(
                "pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains = minDomains, then all nodes fit",
                fit(
                    &four([2, 2, 1, 0]).first(3),
                    &[by_node(json!({"maxSkew": 2, "minDomains": 3}))],
                ),
                names(&["a", "b", "x"]),
            ),
        ),
        pair(
            Source::PodTopologySpread,
            Behaviour::SpreadMinDomains,
            row(
                "minDomains 3 over two zones holds the global minimum at zero: 2/1 lets no node in",
                fit(&four([1, 1, 1, 0]), &[constraint(json!({"minDomains": 3}))]),
                names(&[]),
            ),
            row(
                "control: minDomains 2, as many as the zones: the minimum is zone2's 1",
                fit(&four([1, 1, 1, 0]), &[constraint(json!({"minDomains": 2}))]),
                names(&["x", "y"]),
            ),
        ),
        inclusion(
            row(
                "incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits (nodeAffinityPolicy: Honor)",
                fitting(
                    &four([2, 1, 0, 3]),
                    &foo(),
                    std::slice::from_ref(&per_node),
                    &to_a_or_y,
                )
                .contains(&"a".to_owned()),
                true,
            ),
            row(
                "nodeAffinityPolicy Ignore: node-x (0) is a domain and node-a is 2 over it",
                fitting(
                    &four([2, 1, 0, 3]),
                    &foo(),
                    &[by_node(json!({"nodeAffinityPolicy": "Ignore"}))],
                    &to_a_or_y,
                )
                .contains(&"a".to_owned()),
                false,
            ),
        ),
        inclusion(
            row(
                "nodeTaintsPolicy Ignore (the default): a tainted node still counts as a domain, its 0 is the minimum",
                fit(
                    &four([1, 1, 0, 1]).tainted(2),
                    std::slice::from_ref(&per_node),
                ),
                names(&["x"]),
            ),
            row(
                "nodeTaintsPolicy Honor: the untolerated node is no domain, the minimum is 1",
                fit(
                    &four([1, 1, 0, 1]).tainted(2),
                    &[by_node(json!({"nodeTaintsPolicy": "Honor"}))],
                ),
                names(&["a", "b", "x", "y"]),
            ),
        ),
        pair(
            Source::PodTopologySpread,
            Behaviour::SpreadMatchLabelKeys,
            row(
                "matchLabelKeys: only the pods of the incoming pod's revision count (node-b has the one)",
                fitting(
                    &revisions,
                    &rev("2"),
                    &[by_node(json!({"matchLabelKeys": ["rev"]}))],
                    &PodSpec::default(),
                ),
                names(&["a", "x", "y"]),
            ),
            row(
                "control: without matchLabelKeys every foo pod counts",
                fitting(
                    &revisions,
                    &rev("2"),
                    std::slice::from_ref(&per_node),
                    &PodSpec::default(),
                ),
                names(&["x", "y"]),
            ),
        ),
        score(
            row(
                "one constraint on node, no existing pods",
                scores(&four([0; 4]), &on_node(1), &[0, 1, 2, 3]),
                [100; 4],
            ),
            row(
                "control: two matching pods on node-a make it the worst",
                scores(&four([2, 0, 0, 0]), &on_node(1), &[0, 1, 2, 3]),
                [0, 100, 100, 100],
            ),
        ),
        score(
            row(
                "one constraint on node, all 4 nodes are candidates",
                scores(&four([2, 1, 0, 0]), &on_node(1), &[0, 1, 2, 3]),
                [0, 50, 100, 100],
            ),
            row(
                "control: maxSkew 3 adds maxSkew-1 to every node and shifts the scale",
                scores(&four([2, 1, 0, 0]), &on_node(3), &[0, 1, 2, 3]),
                [33, 66, 100, 100],
            ),
        ),
        score(
            row(
                "one constraint on zone, 4 candidate nodes",
                scores(&four([2, 1, 1, 0]), &zone_score, &[0, 1, 2, 3]),
                [25, 25, 100, 100],
            ),
            row(
                "control: the counts swapped swap the zones",
                scores(&four([1, 0, 2, 1]), &zone_score, &[0, 1, 2, 3]),
                [100, 100, 25, 25],
            ),
        ),
        score(
            row(
                "nodes without the topology key are ignored (scored 0)",
                scores(
                    &{
                        let mut c = four([0; 4]);
                        c.nodes.push(node("z", None, false));
                        c.pods.push(Vec::new());
                        c
                    },
                    &zone_score,
                    &[0, 4],
                ),
                [100, 0],
            ),
            row(
                "control: the same node with a zone is scored",
                scores(
                    &{
                        let mut c = four([0; 4]);
                        c.nodes.push(node("z", Some("zone3"), false));
                        c.pods.push(Vec::new());
                        c
                    },
                    &zone_score,
                    &[0, 4],
                ),
                [100, 100],
            ),
        ),
        score(
            row(
                "domains only count where a feasible node is: with only zone1 feasible its nodes score alike",
                scores(&four([3, 0, 0, 0]), &zone_score, &[0, 1]),
                [100, 100],
            ),
            row(
                "control: both zones feasible, zone1's pods count against it",
                scores(&four([3, 0, 0, 0]), &zone_score, &[0, 2]),
                [0, 100],
            ),
        ),
        score(
            row(
                "existing pods in a different namespace do not count (score)",
                scores(
                    &four([0; 4]).with_pods(0, vec![("elsewhere", foo()); 3]),
                    &on_node(1),
                    &[0, 1],
                ),
                [100, 100],
            ),
            row(
                "control: the same pods in the incoming pod's namespace do",
                scores(&four([3, 0, 0, 0]), &on_node(1), &[0, 1]),
                [0, 100],
            ),
        ),
        pair(
            Source::PodTopologySpreadDocs,
            Behaviour::SpreadSystemDefaults,
            row(
                "system defaults: hostname maxSkew 3 and zone maxSkew 5, both ScheduleAnyway",
                defaults
                    .iter()
                    .map(|c| {
                        (
                            c.topology_key.clone(),
                            c.max_skew,
                            c.when,
                            c.node_affinity,
                            c.node_taints,
                        )
                    })
                    .collect::<Vec<_>>(),
                vec![
                    (
                        "kubernetes.io/hostname".to_owned(),
                        3,
                        Unsatisfiable::ScheduleAnyway,
                        Inclusion::Honor,
                        Inclusion::Ignore,
                    ),
                    (
                        "topology.kubernetes.io/zone".to_owned(),
                        5,
                        Unsatisfiable::ScheduleAnyway,
                        Inclusion::Honor,
                        Inclusion::Ignore,
                    ),
                ],
            ),
            row(
                "system defaults: a pod no Service, ReplicaSet or StatefulSet selects gets none",
                system_defaults(default_selector([], None).expect("valid")).len(),
                0,
            ),
        ),
        pair(
            Source::PodTopologySpreadDocs,
            Behaviour::SpreadSystemDefaults,
            row(
                "system defaults count the pods the derived selector (the Service's app=web) selects",
                defaults[0].counts(
                    "default",
                    "default",
                    &labels(&[("app", "web"), ("pod-template-hash", "1")]),
                ),
                true,
            ),
            row(
                "control: a pod of app=db is not counted",
                defaults[0].counts("default", "default", &labels(&[("app", "db")])),
                false,
            ),
        ),
        pair(
            Source::PodTopologySpreadDocs,
            Behaviour::SpreadSystemDefaults,
            row(
                "system defaults score a node with fewer of the owner's pods higher; nodes without topology.kubernetes.io/zone are not ignored, only unscored on it (raw: 2 ln 4 + 2 = 5 and 2)",
                scored(&hosts([2, 0, 0, 0]), &defaults, false, &[0, 1]),
                [40, 100],
            ),
            row(
                "control: pods of another app leave the nodes even",
                scored(
                    &{
                        let mut c = four([0; 4]);
                        c.pods[0] = vec![("default", labels(&[("app", "db")])); 2];
                        c
                    },
                    &defaults,
                    false,
                    &[0, 1],
                ),
                [100, 100],
            ),
        ),
        validation(
            row("maxSkew 0 is refused", refused(json!({"maxSkew": 0})), true),
            row("control: maxSkew 1", refused(json!({"maxSkew": 1})), false),
        ),
        validation(
            row(
                "minDomains 0 is refused",
                refused(json!({"minDomains": 0})),
                true,
            ),
            row(
                "control: minDomains 1",
                refused(json!({"minDomains": 1})),
                false,
            ),
        ),
        validation(
            row(
                "minDomains with ScheduleAnyway is refused",
                refused(json!({"minDomains": 2, "whenUnsatisfiable": "ScheduleAnyway"})),
                true,
            ),
            row(
                "control: minDomains with DoNotSchedule",
                refused(json!({"minDomains": 2})),
                false,
            ),
        ),
        validation(
            row(
                "an unknown whenUnsatisfiable is refused",
                refused(json!({"whenUnsatisfiable": "Maybe"})),
                true,
            ),
            row(
                "control: ScheduleAnyway",
                refused(json!({"whenUnsatisfiable": "ScheduleAnyway"})),
                false,
            ),
        ),
        validation(
            row(
                "an unknown nodeTaintsPolicy is refused",
                refused(json!({"nodeTaintsPolicy": "Sometimes"})),
                true,
            ),
            row(
                "control: nodeTaintsPolicy Honor",
                refused(json!({"nodeTaintsPolicy": "Honor"})),
                false,
            ),
        ),
    ]
}
