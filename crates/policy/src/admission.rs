//! The drill's guards as the platform's admission policies apply them.
//!
//! In production the guards are policies (Kyverno mutates every `hcloud`
//! consumer to require a baseline worker, then validates). The bench applies
//! the same rule in three places, and this is the one copy of it: the
//! simulator's loader admits every pod template it compiles, the kube layer
//! admits each workload before applying it to a cluster with no policy
//! engine, and a run judges an admission negative control by submitting the
//! planted object here, whichever backend ran.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, PodTemplateSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use drillbench_model::scenario::spec::{
    GuardAction, GuardSpec, NodeOperator, NodeRequirement, PodMatch,
};

/// One guard's verdict on a pod template it matched and found wanting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardDecision {
    pub guard: String,
    /// Whether it refused the template (`Enforce`) or only recorded it.
    pub refused: bool,
    /// Why the template breaks the rule.
    pub reason: String,
}

/// Runs the drill's guards over a pod template as the platform's
/// admission policies do: a mutating guard first adds its requirement,
/// then each matching guard checks it. `classes` are the storage classes
/// of the claims the pod mounts (the default class already filled in).
/// Returns the violations; `spec` is left as admitted.
pub fn admit(
    guards: &[GuardSpec],
    namespace: &str,
    labels: &BTreeMap<String, String>,
    classes: &[Option<String>],
    spec: &mut PodSpec,
) -> Vec<GuardDecision> {
    let mut decisions = Vec::new();
    for guard in guards {
        if !guard_matches(&guard.matches, namespace, labels, classes) {
            continue;
        }
        if guard.mutate {
            inject_requirement(spec, &guard.require.node_affinity);
        }
        if guard.unlabelled_term {
            // The weakened guard is this shape: it no longer checks.
            add_unlabelled_term(spec);
            continue;
        }
        if let Some(reason) = violation(spec, &guard.require.node_affinity) {
            decisions.push(GuardDecision {
                guard: guard.name.value.clone(),
                refused: guard.action == GuardAction::Enforce,
                reason,
            });
        }
    }
    decisions
}

/// Whether a guard's pod selection matches a template.
pub fn guard_matches(
    matches: &PodMatch,
    namespace: &str,
    labels: &BTreeMap<String, String>,
    classes: &[Option<String>],
) -> bool {
    if let Some(class) = &matches.mounts_claim_of_class
        && !classes.iter().any(|c| c.as_deref() == Some(class.as_str()))
    {
        return false;
    }
    if let Some(class) = &matches.mounts_no_claim_of_class
        && classes.iter().any(|c| c.as_deref() == Some(class.as_str()))
    {
        return false;
    }
    if let Some(namespaces) = &matches.namespaces
        && !namespaces.iter().any(|n| n == namespace)
    {
        return false;
    }
    if let Some(wanted) = &matches.labels
        && !wanted.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    true
}

/// Adds the requirement to every required node-selector term that does not
/// already constrain its key, creating a term when the pod has none, as the
/// platform's mutating policy does (`require-the-label-in-every-term` in
/// `harness/kyverno/policies/hcloud-consumers-on-baseline-workers.yaml`:
/// its `foreach` precondition skips a term with an expression on the key).
/// Terms are ORed, so adding it to only one would fail open. A term that
/// names the key its own way (`NotIn`, `DoesNotExist`, other values) is the
/// pod's own choice: the mutation leaves it, and the check judges it.
pub fn inject_requirement(spec: &mut PodSpec, requirement: &NodeRequirement) {
    let wanted = requirement.to_kubernetes();
    let affinity = spec.affinity.get_or_insert_with(Default::default);
    let node_affinity = affinity.node_affinity.get_or_insert_with(Default::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector {
            node_selector_terms: Vec::new(),
        });
    if required.node_selector_terms.is_empty() {
        required
            .node_selector_terms
            .push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        let expressions = term.match_expressions.get_or_insert_with(Vec::new);
        if !expressions.iter().any(|e| e.key == wanted.key) {
            expressions.push(wanted.clone());
        }
    }
}

/// Adds a required node-selector term that any Linux node satisfies: the
/// "extra unlabelled OR term" that silently defeats a guard.
pub fn add_unlabelled_term(spec: &mut PodSpec) {
    let affinity = spec.affinity.get_or_insert_with(Default::default);
    let node_affinity = affinity.node_affinity.get_or_insert_with(Default::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector {
            node_selector_terms: Vec::new(),
        });
    required.node_selector_terms.push(NodeSelectorTerm {
        match_expressions: Some(vec![NodeSelectorRequirement {
            key: "kubernetes.io/os".to_owned(),
            operator: "In".to_owned(),
            values: Some(vec!["linux".to_owned()]),
        }]),
        match_fields: None,
    });
}

/// Why a pod spec breaks a guard's requirement, if it does: every required
/// node-selector term must contain the requirement exactly (a `nodeSelector`
/// pair `key: value` also satisfies an `In [value]` requirement).
pub fn violation(spec: &PodSpec, requirement: &NodeRequirement) -> Option<String> {
    let wanted = requirement.to_kubernetes();
    if requirement.operator == NodeOperator::In
        && let Some(values) = &requirement.values
        && values.len() == 1
        && spec
            .node_selector
            .as_ref()
            .and_then(|s| s.get(&requirement.key))
            == Some(&values[0])
    {
        return None;
    }
    let terms = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|s| s.node_selector_terms.as_slice())
        .unwrap_or_default();
    let shown = format!(
        "{} {:?} {}",
        wanted.key,
        requirement.operator,
        wanted
            .values
            .as_deref()
            .map(|v| format!("[{}]", v.join(",")))
            .unwrap_or_default()
    );
    if terms.is_empty() {
        return Some(format!(
            "the pod has no required node affinity; it must require `{}`",
            shown.trim()
        ));
    }
    for (i, term) in terms.iter().enumerate() {
        let has = term
            .match_expressions
            .iter()
            .flatten()
            .any(|e| *e == wanted);
        if !has {
            return Some(format!(
                "node-selector term {i} does not require `{}`; terms are ORed, so it admits nodes without it",
                shown.trim()
            ));
        }
    }
    None
}

/// The storage classes of the claims a pod mounts, as the guards match
/// them: `claim_templates` (a StatefulSet's), then each volume in order, a
/// `persistentVolumeClaim` by `class_of` its claim and an ephemeral one by
/// its template; a claim without a class gets `default_class`.
pub fn claim_classes(
    claim_templates: Vec<Option<String>>,
    spec: &PodSpec,
    class_of: impl Fn(&str) -> Option<String>,
    default_class: Option<&str>,
) -> Vec<Option<String>> {
    let mut classes = claim_templates;
    for volume in spec.volumes.iter().flatten() {
        if let Some(pvc) = &volume.persistent_volume_claim {
            classes.push(class_of(&pvc.claim_name));
        }
        if let Some(template) = volume
            .ephemeral
            .as_ref()
            .and_then(|e| e.volume_claim_template.as_ref())
        {
            classes.push(template.spec.storage_class_name.clone());
        }
    }
    for class in &mut classes {
        if class.is_none() {
            *class = default_class.map(str::to_owned);
        }
    }
    classes
}

/// A pod template submitted for admission, read from a workload manifest.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// `namespace/Kind/name` of the object.
    pub key: String,
    /// Its namespace (`default` when it names none).
    pub namespace: String,
    /// The pod template's labels.
    pub labels: BTreeMap<String, String>,
    /// The classes of a StatefulSet's claim templates, as written.
    pub claim_templates: Vec<Option<String>>,
    /// The pod spec the guards check and mutate.
    pub spec: PodSpec,
}

impl Candidate {
    /// Reads the pod template of a manifest the way the simulator's loader
    /// does: only the kinds that carry one, at their `apiVersion`, decoded
    /// whole. `None` for any other object, or one that does not decode.
    pub fn read(object: &Value) -> Option<Candidate> {
        fn decode<T: serde::de::DeserializeOwned>(object: &Value) -> Option<T> {
            serde_json::from_value(object.clone()).ok()
        }
        let kind = object.get("kind").and_then(Value::as_str)?;
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let (kind_name, meta, template, claim_templates): (_, ObjectMeta, PodTemplateSpec, _) =
            match (kind, api_version) {
                ("Deployment", "apps/v1") => {
                    let d: Deployment = decode(object)?;
                    let spec = d.spec.unwrap_or_default();
                    ("Deployment", d.metadata, spec.template, Vec::new())
                }
                ("ReplicaSet", "apps/v1") => {
                    let r: ReplicaSet = decode(object)?;
                    let template = r.spec.unwrap_or_default().template.unwrap_or_default();
                    ("ReplicaSet", r.metadata, template, Vec::new())
                }
                ("StatefulSet", "apps/v1") => {
                    let s: StatefulSet = decode(object)?;
                    let spec = s.spec.unwrap_or_default();
                    let claim_templates = spec
                        .volume_claim_templates
                        .iter()
                        .flatten()
                        .map(|t| t.spec.as_ref().and_then(|s| s.storage_class_name.clone()))
                        .collect();
                    ("StatefulSet", s.metadata, spec.template, claim_templates)
                }
                ("DaemonSet", "apps/v1") => {
                    let d: DaemonSet = decode(object)?;
                    let spec = d.spec.unwrap_or_default();
                    ("DaemonSet", d.metadata, spec.template, Vec::new())
                }
                ("Job", "batch/v1") => {
                    let j: Job = decode(object)?;
                    let spec = j.spec.unwrap_or_default();
                    ("Job", j.metadata, spec.template, Vec::new())
                }
                ("CronJob", "batch/v1") => {
                    let c: CronJob = decode(object)?;
                    let job = c.spec.job_template.spec.unwrap_or_default();
                    ("CronJob", c.metadata, job.template, Vec::new())
                }
                ("Pod", "v1") => {
                    let p: Pod = decode(object)?;
                    let template = PodTemplateSpec {
                        metadata: Some(p.metadata.clone()),
                        spec: p.spec,
                    };
                    ("Pod", p.metadata, template, Vec::new())
                }
                _ => return None,
            };
        let namespace = meta
            .namespace
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let name = meta.name.unwrap_or_default();
        Some(Candidate {
            key: format!("{namespace}/{kind_name}/{name}"),
            namespace,
            labels: template.metadata.and_then(|m| m.labels).unwrap_or_default(),
            claim_templates,
            spec: template.spec.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const BASELINE: &str = "platform.devantler.tech/baseline-worker";

    /// The shorthand guards the incident drills used before they named
    /// the platform's Kyverno policy: a mutating cluster-wide one, and
    /// OpenBao's check.
    fn guards() -> Vec<GuardSpec> {
        use drillbench_model::scenario::Located;
        use drillbench_model::scenario::spec::Requirement;
        let requirement = NodeRequirement {
            key: BASELINE.to_owned(),
            operator: NodeOperator::In,
            values: Some(vec!["true".to_owned()]),
        };
        let guard = |name: &str, namespaces: Option<Vec<String>>, mutate: bool| GuardSpec {
            name: Located::new(name.to_owned()),
            action: GuardAction::Enforce,
            matches: PodMatch {
                mounts_claim_of_class: Some(Located::new("hcloud".to_owned())),
                namespaces,
                ..PodMatch::default()
            },
            require: Requirement {
                node_affinity: Located::new(requirement.clone()),
            },
            mutate,
            unlabelled_term: false,
        };
        vec![
            guard("hcloud-on-baseline", None, true),
            guard(
                "openbao-requires-baseline",
                Some(vec!["openbao".to_owned()]),
                false,
            ),
        ]
    }

    fn hcloud_consumer(namespace: &str) -> Value {
        json!({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": namespace},
            "spec": {
                "selector": {"matchLabels": {"app": "db"}},
                "serviceName": "db",
                "template": {"metadata": {"labels": {"app": "db"}},
                             "spec": {"containers": [{"name": "c", "image": "i"}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "data"},
                                          "spec": {"storageClassName": "hcloud"}}]
            }
        })
    }

    fn judge(guards: &[GuardSpec], object: &Value) -> (Candidate, Vec<GuardDecision>) {
        let mut candidate = Candidate::read(object).expect("a pod template");
        let classes = claim_classes(
            candidate.claim_templates.clone(),
            &candidate.spec,
            |_| None,
            None,
        );
        let decisions = admit(
            guards,
            &candidate.namespace,
            &candidate.labels,
            &classes,
            &mut candidate.spec,
        );
        (candidate, decisions)
    }

    #[test]
    fn a_mutating_guard_pins_the_consumer_and_a_checking_one_then_passes_it() {
        let (candidate, decisions) = judge(&guards(), &hcloud_consumer("openbao"));
        assert_eq!(candidate.key, "openbao/StatefulSet/db");
        assert!(decisions.is_empty(), "{decisions:?}");
        let requirement = &guards()[0].require.node_affinity;
        assert_eq!(violation(&candidate.spec, requirement), None);
    }

    #[test]
    fn without_the_mutation_the_enforcing_guard_refuses_and_says_why() {
        let mut guards = guards();
        guards[0].mutate = false;
        let (_, decisions) = judge(&guards, &hcloud_consumer("openbao"));
        let names: Vec<&str> = decisions.iter().map(|d| d.guard.as_str()).collect();
        assert_eq!(names, ["hcloud-on-baseline", "openbao-requires-baseline"]);
        assert!(decisions.iter().all(|d| d.refused));
        assert!(
            decisions[0]
                .reason
                .starts_with("the pod has no required node affinity"),
            "{decisions:?}"
        );
    }

    /// An hcloud consumer whose chart keeps it off the baseline in its own
    /// required term.
    fn consumer_kept_off_the_baseline(namespace: &str, operator: &str) -> Value {
        let mut object = hcloud_consumer(namespace);
        object["spec"]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": BASELINE, "operator": operator, "values": ["true"]}]}
            ]}
        }});
        object
    }

    /// The platform's mutation adds the label only to a term that does not
    /// name it (`hcloud-consumers-on-baseline-workers.yaml`, the foreach
    /// precondition of `require-the-label-in-every-term`): a term that keeps
    /// the pod off the baseline is left, and every enforcing guard refuses
    /// it. Paired with the term that asks for the baseline, which passes.
    #[test]
    fn a_term_that_names_the_key_its_own_way_escapes_the_mutation_and_is_refused() {
        let (candidate, decisions) = judge(
            &guards(),
            &consumer_kept_off_the_baseline("openbao", "NotIn"),
        );
        let names: Vec<&str> = decisions.iter().map(|d| d.guard.as_str()).collect();
        assert_eq!(names, ["hcloud-on-baseline", "openbao-requires-baseline"]);
        assert!(decisions.iter().all(|d| d.refused), "{decisions:?}");
        let terms = candidate.spec.affinity.unwrap().node_affinity.unwrap();
        let expressions = terms
            .required_during_scheduling_ignored_during_execution
            .unwrap()
            .node_selector_terms[0]
            .match_expressions
            .clone()
            .unwrap();
        assert_eq!(
            expressions.len(),
            1,
            "the mutation left the term as written"
        );

        let (_, decisions) = judge(&guards(), &consumer_kept_off_the_baseline("openbao", "In"));
        assert!(decisions.is_empty(), "{decisions:?}");
    }

    #[test]
    fn an_unlabelled_or_term_defeats_the_guard_silently() {
        let mut guards = guards();
        guards[0].unlabelled_term = true;
        guards.truncate(1);
        let (candidate, decisions) = judge(&guards, &hcloud_consumer("apps"));
        assert!(decisions.is_empty());
        // Mutated, then given the second term that ORs the requirement away.
        assert!(violation(&candidate.spec, &guards[0].require.node_affinity).is_some());
    }

    #[test]
    fn a_node_selector_pair_satisfies_an_in_requirement_of_one_value() {
        let requirement = &guards()[0].require.node_affinity;
        let spec = PodSpec {
            node_selector: Some(BTreeMap::from([(BASELINE.to_owned(), "true".to_owned())])),
            ..PodSpec::default()
        };
        assert_eq!(violation(&spec, requirement), None);
    }

    #[test]
    fn claim_classes_follow_the_volumes_and_fill_in_the_default() {
        let spec: PodSpec = serde_json::from_value(json!({
            "containers": [],
            "volumes": [
                {"name": "a", "persistentVolumeClaim": {"claimName": "known"}},
                {"name": "b", "persistentVolumeClaim": {"claimName": "unknown"}},
                {"name": "c", "ephemeral": {"volumeClaimTemplate": {"spec": {"storageClassName": "fast"}}}}
            ]
        }))
        .expect("a pod spec");
        let classes = claim_classes(
            vec![Some("hcloud".to_owned())],
            &spec,
            |claim| (claim == "known").then(|| "longhorn".to_owned()),
            Some("local-path"),
        );
        let classes: Vec<Option<&str>> = classes.iter().map(Option::as_deref).collect();
        assert_eq!(
            classes,
            [
                Some("hcloud"),
                Some("longhorn"),
                Some("local-path"),
                Some("fast")
            ]
        );
    }

    #[test]
    fn only_pod_template_kinds_at_their_api_version_are_read() {
        let mut object = hcloud_consumer("");
        assert_eq!(
            Candidate::read(&object).map(|c| c.key),
            Some("default/StatefulSet/db".to_owned())
        );
        object["apiVersion"] = json!("apps/v1beta1");
        assert!(Candidate::read(&object).is_none());
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "p", "labels": {"app": "x"}},
                         "spec": {"containers": []}});
        let read = Candidate::read(&pod).expect("a bare pod");
        assert_eq!(read.labels.get("app").map(String::as_str), Some("x"));
        let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": "c"}});
        assert!(Candidate::read(&claim).is_none());
    }
}
