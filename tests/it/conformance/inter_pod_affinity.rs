//! Required inter-pod affinity and anti-affinity: rows of upstream's
//! `TestRequiredAffinitySingleNode`, each named as upstream names it, and
//! the namespaces a term selects (its `namespaces` list and
//! `namespaceSelector`, as the assign-pod-node page and the
//! `PodAffinityTerm` API documentation describe them).

use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::core::v1::PodAffinityTerm;
use serde_json::{Value, json};

use super::{Behaviour, Pair, Source, from_json, labels, pair, row};
use drillbench_policy::domains::{Domains, KeyDomains};
use drillbench_policy::interpod::{AffinityTerm, InterPodMisfit, InterPodState, PodTerms};

/// A pod of the table: namespace (and its labels), labels and its
/// required terms.
#[derive(Clone)]
struct Pod {
    namespace: &'static str,
    namespace_labels: BTreeMap<String, String>,
    labels: BTreeMap<String, String>,
    affinity: Vec<AffinityTerm>,
    anti: Vec<AffinityTerm>,
}

impl Pod {
    fn terms(&self) -> PodTerms<'_> {
        PodTerms {
            namespace: self.namespace,
            namespace_labels: &self.namespace_labels,
            labels: &self.labels,
            affinity: &self.affinity,
            anti_affinity: &self.anti,
        }
    }

    fn in_namespace(mut self, namespace: &'static str, ns_labels: &[(&str, &str)]) -> Pod {
        self.namespace = namespace;
        self.namespace_labels = labels(ns_labels);
        self.namespace_labels.insert(
            "kubernetes.io/metadata.name".to_owned(),
            namespace.to_owned(),
        );
        self
    }

    fn repelling(mut self, terms: Vec<AffinityTerm>) -> Pod {
        self.anti = terms;
        self
    }

    fn attracted(mut self, terms: Vec<AffinityTerm>) -> Pod {
        self.affinity = terms;
        self
    }
}

fn pod(pod_labels: &[(&str, &str)]) -> Pod {
    Pod {
        namespace: "",
        namespace_labels: BTreeMap::new(),
        labels: labels(pod_labels),
        affinity: Vec::new(),
        anti: Vec::new(),
    }
    .in_namespace("default", &[])
}

/// A term from its JSON form, with `labelSelector: key op values` and
/// these extra fields.
fn term(key: &str, op: &str, values: &[&str], topology: &str, extra: Value) -> AffinityTerm {
    let mut expr = json!({"key": key, "operator": op});
    if !values.is_empty() {
        expr["values"] = json!(values);
    }
    let mut t = json!({
        "labelSelector": {"matchExpressions": [expr]},
        "topologyKey": topology,
    });
    if let (Some(into), Value::Object(extra)) = (t.as_object_mut(), extra) {
        into.extend(extra);
    }
    let t: PodAffinityTerm = from_json(t);
    AffinityTerm::compile(&t).expect("compiles")
}

/// A term exactly as written.
fn raw_term(t: Value) -> AffinityTerm {
    AffinityTerm::compile(&from_json::<PodAffinityTerm>(t)).expect("compiles")
}

fn within(key: &str, topology: &str, values: &[&str]) -> AffinityTerm {
    term(key, "In", values, topology, json!({}))
}

fn exists(key: &str, topology: &str) -> AffinityTerm {
    term(key, "Exists", &[], topology, json!({}))
}

/// upstream's `node1`.
fn node1() -> BTreeMap<String, String> {
    labels(&[("region", "r1"), ("zone", "z11"), ("hostname", "h1")])
}

/// The filter's verdict for `incoming` on `node1`, with `existing`
/// running on a node labelled `on`.
fn verdict(
    incoming: &Pod,
    existing: &Pod,
    on: &BTreeMap<String, String>,
) -> Result<(), InterPodMisfit> {
    verdict_on(incoming, &[(existing, on.clone())], &node1())
}

/// The filter's verdict for `incoming` on `node`, with `existing` pods
/// counted one by one, each running on a node labelled as given.
fn verdict_on(
    incoming: &Pod,
    existing: &[(&Pod, BTreeMap<String, String>)],
    node: &BTreeMap<String, String>,
) -> Result<(), InterPodMisfit> {
    let mut state = InterPodState::default();
    for (pod, on) in existing {
        state.add(&incoming.terms(), &pod.terms(), on);
    }
    state.filter(&incoming.terms(), node)
}

/// The filter's verdict when the existing pods are counted as groups of
/// alike pods (`add_group`), each group's domains counted as an index
/// keeps them; by the node's number and by its labels alike.
fn verdict_grouped(
    incoming: &Pod,
    existing: &[(&Pod, BTreeMap<String, String>)],
    node: &BTreeMap<String, String>,
) -> Result<(), InterPodMisfit> {
    let mut state = InterPodState::default();
    // Alike pods: the same `Pod` of the table, wherever they run.
    let mut groups: Vec<(&Pod, Vec<&BTreeMap<String, String>>)> = Vec::new();
    for (pod, on) in existing {
        match groups.iter_mut().find(|(p, _)| std::ptr::eq(*p, *pod)) {
            Some((_, nodes)) => nodes.push(on),
            None => groups.push((pod, vec![on])),
        }
    }
    for (pod, nodes) in &groups {
        state.add_group(&incoming.terms(), &pod.terms(), |key| {
            // The node judged is numbered first (index 0), then the
            // group's nodes.
            let mut index = KeyDomains::default();
            index.push_node(node.get(key));
            let mut domains = Domains::default();
            for on in nodes {
                if let Some(id) = index.push_node(on.get(key)) {
                    domains.add(id, 1);
                }
            }
            (Rc::new(index), Rc::new(domains))
        });
    }
    let by_labels = state.filter(&incoming.terms(), node);
    let by_number = state.filter_at(&incoming.terms(), node, Some(0));
    assert_eq!(
        by_number, by_labels,
        "by the node's number as by its labels"
    );
    by_labels
}

/// Counting alike pods at once (the simulator's index of pod groups)
/// decides exactly what counting them one by one decides, for every kind
/// of term (existing anti-affinity, affinity, the first pod of a
/// self-affine group, anti-affinity), on nodes inside, outside and without
/// the topology domain. Each case's verdicts differ across the nodes, so a
/// grouped count that ignored a group or a domain would disagree.
#[test]
fn a_group_counted_at_once_decides_as_its_pods_one_by_one() {
    let h1 = node1();
    let h2 = labels(&[("region", "r1"), ("zone", "z11"), ("hostname", "h2")]);
    let far = labels(&[("region", "r2"), ("zone", "z21"), ("hostname", "h3")]);
    let bare = labels(&[("hostname", "h4")]);
    let web = pod(&[("app", "web")]);
    let db = pod(&[("app", "db")]);
    let repels_web = pod(&[("app", "db")]).repelling(vec![within("app", "zone", &["web"])]);
    let wants_db = pod(&[("app", "web")]).attracted(vec![within("app", "zone", &["db"])]);
    let self_affine = pod(&[("app", "web")]).attracted(vec![within("app", "zone", &["web"])]);
    let avoids_web = pod(&[("app", "cache")]).repelling(vec![within("app", "hostname", &["web"])]);
    /// Running pods, each with its node's labels.
    type Running<'p> = Vec<(&'p Pod, BTreeMap<String, String>)>;
    let cases: Vec<(&str, &Pod, Running)> = vec![
        (
            "existing anti-affinity, two alike repellers",
            &web,
            vec![(&repels_web, h1.clone()), (&repels_web, h2.clone())],
        ),
        (
            "affinity to a group running in one zone",
            &wants_db,
            vec![(&db, far.clone()), (&db, far.clone()), (&web, h1.clone())],
        ),
        ("the first pod of a self-affine group", &self_affine, vec![]),
        (
            "a self-affine group already placed",
            &self_affine,
            vec![(&web, far.clone()), (&web, far.clone())],
        ),
        (
            "anti-affinity by hostname",
            &avoids_web,
            vec![
                (&web, h1.clone()),
                (&web, far.clone()),
                (&web, bare.clone()),
            ],
        ),
    ];
    for (name, incoming, existing) in &cases {
        let nodes = [&h1, &h2, &far, &bare];
        let one_by_one: Vec<_> = nodes
            .iter()
            .map(|n| verdict_on(incoming, existing, n))
            .collect();
        let grouped: Vec<_> = nodes
            .iter()
            .map(|n| verdict_grouped(incoming, existing, n))
            .collect();
        assert_eq!(grouped, one_by_one, "{name}");
        if !existing.is_empty() {
            assert!(
                one_by_one.iter().any(Result::is_ok) && one_by_one.iter().any(Result::is_err),
                "{name}: the case tells nodes apart: {one_by_one:?}"
            );
        }
    }
}

const SECURITYSCAN: &[&str] = &["securityscan", "value2"];

pub(super) fn pairs() -> Vec<Pair> {
    let symmetric = |case, control| {
        pair(
            Source::InterPodAffinity,
            Behaviour::ExistingAntiAffinity,
            case,
            control,
        )
    };
    let filter = |case, control| {
        pair(
            Source::InterPodAffinity,
            Behaviour::InterPodAffinity,
            case,
            control,
        )
    };
    let namespaces = |case, control| {
        pair(
            Source::InterPodAffinityDocs,
            Behaviour::NamespaceSelector,
            case,
            control,
        )
    };
    let service = [("service", "securityscan")];
    let scan = || pod(&service);
    let elsewhere = labels(&[("region", "r2"), ("zone", "z21"), ("hostname", "h2")]);
    let by_team = |team: &str| json!({"namespaceSelector": {"matchLabels": {"team": team}}});
    vec![
        symmetric(
            row(
                "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod",
                verdict(&scan(), &scan().repelling(vec![within("service", "zone", SECURITYSCAN)]), &node1()),
                Err::<(), _>(InterPodMisfit::ExistingAntiAffinity),
            ),
            row(
                "verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity constraints. satisfy PodAntiAffinity symmetry with the existing pod",
                verdict(&scan(), &scan().repelling(vec![term("service", "NotIn", SECURITYSCAN, "zone", json!({}))]), &node1()),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        symmetric(
            row(
                "PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match each other on AffinityTerms",
                verdict(
                    &pod(&[("security", "securityscan")]).repelling(vec![exists("security", "zone")]),
                    &scan().repelling(vec![exists("service", "zone"), exists("security", "zone")]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::ExistingAntiAffinity),
            ),
            row(
                "control a2: the incoming pod carries neither label the existing terms look for",
                verdict(
                    &pod(&[("other", "x")]).repelling(vec![exists("security", "zone")]),
                    &scan().repelling(vec![exists("service", "zone"), exists("security", "zone")]),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        symmetric(
            row(
                "satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with the existing pod",
                verdict(
                    &scan()
                        .attracted(vec![within("service", "region", SECURITYSCAN)])
                        .repelling(vec![within("service", "hostname", &["antivirusscan", "value2"])]),
                    &scan().repelling(vec![within("service", "zone", SECURITYSCAN)]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::ExistingAntiAffinity),
            ),
            row(
                "satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod",
                verdict(
                    &pod(&[("security", "S1")])
                        .attracted(vec![within("service", "region", SECURITYSCAN)])
                        .repelling(vec![within("service", "hostname", &["antivirusscan", "value2"])]),
                    &scan().repelling(vec![within("service", "hostname", &["antivirusscan", "value2"])]),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        symmetric(
            row(
                "an existing pod's anti-affinity keeps the incoming pod off its whole zone",
                verdict(
                    &scan(),
                    &scan().repelling(vec![within("service", "zone", SECURITYSCAN)]),
                    &labels(&[("region", "r1"), ("zone", "z11"), ("hostname", "h9")]),
                ),
                Err::<(), _>(InterPodMisfit::ExistingAntiAffinity),
            ),
            row(
                "control: the repelling pod runs in another zone",
                verdict(
                    &scan(),
                    &scan().repelling(vec![within("service", "zone", SECURITYSCAN)]),
                    &elsewhere,
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        filter(
            row(
                "PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on AffinityTerms",
                verdict(
                    &pod(&[("abc", ""), ("xyz", "")]).repelling(vec![exists("abc", "zone"), exists("def", "zone")]),
                    &pod(&[("def", ""), ("xyz", "")]).repelling(vec![exists("abc", "zone"), exists("def", "zone")]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::AntiAffinity),
            ),
            row(
                "control b1: the existing pod elsewhere",
                verdict(
                    &pod(&[("abc", ""), ("xyz", "")]).repelling(vec![exists("abc", "zone"), exists("def", "zone")]),
                    &pod(&[("def", ""), ("xyz", "")]).repelling(vec![exists("abc", "zone"), exists("def", "zone")]),
                    &elsewhere,
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        filter(
            row(
                "satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator that matches the existing pod",
                verdict(&pod(&[]).attracted(vec![within("service", "region", SECURITYSCAN)]), &scan(), &node1()),
                Ok::<(), InterPodMisfit>(()),
            ),
            row(
                "Does not satisfy the PodAffinity with labelSelector because of diff Namespace",
                verdict(
                    &pod(&[]).attracted(vec![term("service", "In", SECURITYSCAN, "region", json!({"namespaces": ["DiffNameSpace"]}))]),
                    &scan(),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::Affinity),
            ),
        ),
        filter(
            row(
                "Doesn't satisfy the PodAffinity because of unmatching labelSelector with the existing pod",
                verdict(&pod(&[]).attracted(vec![within("service", "region", &["antivirusscan", "value2"])]), &scan(), &node1()),
                Err::<(), _>(InterPodMisfit::Affinity),
            ),
            row(
                "control: the same term's selector naming securityscan",
                verdict(&pod(&[]).attracted(vec![within("service", "region", &["securityscan", "value2"])]), &scan(), &node1()),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        filter(
            row(
                "satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod",
                verdict(
                    &pod(&[])
                        .attracted(vec![within("service", "region", SECURITYSCAN)])
                        .repelling(vec![within("service", "zone", SECURITYSCAN)]),
                    &scan(),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::AntiAffinity),
            ),
            row(
                "satisfies the PodAffinity and PodAntiAffinity with the existing pod",
                verdict(
                    &pod(&[])
                        .attracted(vec![within("service", "region", SECURITYSCAN)])
                        .repelling(vec![within("service", "zone", &["antivirusscan", "value2"])]),
                    &scan(),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        filter(
            row(
                "A pod that matches its own affinity terms may be the first of its group anywhere",
                verdict(
                    &scan().attracted(vec![within("service", "zone", SECURITYSCAN)]),
                    &pod(&[("other", "x")]),
                    &elsewhere,
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
            row(
                "control: a pod whose affinity terms do not match itself finds no partner",
                verdict(
                    &pod(&[("other", "x")]).attracted(vec![within("service", "zone", SECURITYSCAN)]),
                    &pod(&[("other", "x")]),
                    &elsewhere,
                ),
                Err::<(), _>(InterPodMisfit::Affinity),
            ),
        ),
        filter(
            row(
                "a term without labelSelector selects no pod (the existing pod does not repel)",
                verdict(
                    &scan(),
                    &scan().repelling(vec![raw_term(json!({"topologyKey": "zone"}))]),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
            row(
                "control: an empty labelSelector selects every pod",
                verdict(
                    &scan(),
                    &scan().repelling(vec![raw_term(json!({"topologyKey": "zone", "labelSelector": {}}))]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::ExistingAntiAffinity),
            ),
        ),
        namespaces(
            row(
                "null namespaces and null namespaceSelector mean this pod's namespace: a pod of another namespace is not repelled",
                verdict(
                    &scan().in_namespace("team-b", &[]),
                    &scan().repelling(vec![within("service", "zone", SECURITYSCAN)]),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
            row(
                "an empty namespaceSelector ({}) matches all namespaces",
                verdict(
                    &scan().in_namespace("team-b", &[]),
                    &scan().repelling(vec![term("service", "In", SECURITYSCAN, "zone", json!({"namespaceSelector": {}}))]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::ExistingAntiAffinity),
            ),
        ),
        namespaces(
            row(
                "namespaceSelector: an existing pod's term selecting team=b by namespace labels repels a pod of a namespace labelled team=b",
                verdict(
                    &scan().in_namespace("payments", &[("team", "b")]),
                    &scan().repelling(vec![term("service", "In", SECURITYSCAN, "zone", by_team("b"))]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::ExistingAntiAffinity),
            ),
            row(
                "control: the incoming pod's namespace is labelled team=c",
                verdict(
                    &scan().in_namespace("payments", &[("team", "c")]),
                    &scan().repelling(vec![term("service", "In", SECURITYSCAN, "zone", by_team("b"))]),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        namespaces(
            row(
                "namespaceSelector on the incoming pod's affinity finds a partner in a namespace whose labels it selects",
                verdict(
                    &pod(&[]).attracted(vec![term("service", "In", SECURITYSCAN, "region", by_team("b"))]),
                    &scan().in_namespace("payments", &[("team", "b")]),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
            row(
                "control: the partner's namespace is not labelled team=b",
                verdict(
                    &pod(&[]).attracted(vec![term("service", "In", SECURITYSCAN, "region", by_team("b"))]),
                    &scan().in_namespace("payments", &[("team", "a")]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::Affinity),
            ),
        ),
        namespaces(
            row(
                "a non-empty namespaceSelector without namespaces does not mean this pod's namespace",
                verdict(
                    &pod(&[]).repelling(vec![term("service", "In", SECURITYSCAN, "zone", by_team("b"))]),
                    &scan(),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
            row(
                "control: namespaces and namespaceSelector are a union: default listed beside the selector",
                verdict(
                    &pod(&[]).repelling(vec![term("service", "In", SECURITYSCAN, "zone", json!({
                        "namespaceSelector": {"matchLabels": {"team": "b"}},
                        "namespaces": ["default"],
                    }))]),
                    &scan(),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::AntiAffinity),
            ),
        ),
        namespaces(
            row(
                "namespaceSelector by kubernetes.io/metadata.name, the label the API server sets on every namespace",
                verdict(
                    &pod(&[]).repelling(vec![term("service", "In", SECURITYSCAN, "zone", json!({
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                    }))]),
                    &scan().in_namespace("monitoring", &[]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::AntiAffinity),
            ),
            row(
                "control: a pod of namespace logging is not selected by that name",
                verdict(
                    &pod(&[]).repelling(vec![term("service", "In", SECURITYSCAN, "zone", json!({
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}},
                    }))]),
                    &scan().in_namespace("logging", &[]),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
        namespaces(
            row(
                "namespaceSelector with matchExpressions NotIn: namespaces without the label are selected",
                verdict(
                    &pod(&[]).repelling(vec![term("service", "In", SECURITYSCAN, "zone", json!({
                        "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
                    }))]),
                    &scan().in_namespace("scratch", &[]),
                    &node1(),
                ),
                Err::<(), _>(InterPodMisfit::AntiAffinity),
            ),
            row(
                "control: a namespace labelled env=prod is not",
                verdict(
                    &pod(&[]).repelling(vec![term("service", "In", SECURITYSCAN, "zone", json!({
                        "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["prod"]}]},
                    }))]),
                    &scan().in_namespace("shop", &[("env", "prod")]),
                    &node1(),
                ),
                Ok::<(), InterPodMisfit>(()),
            ),
        ),
    ]
}
