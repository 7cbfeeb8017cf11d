//! Judging a pod's placement rules against one required node label.
//!
//! The question is the fail-closed one from the stranded-volume incident:
//! must *every* node the scheduler could pick carry `key=value`? Only two
//! shapes guarantee that: a `nodeSelector` with `key: value`, or required
//! node affinity in which every term (terms are ORed) contains `key In
//! [value]` with no other value. Anything else admits some node without
//! the label, and the reason says which rule lets it in.

use std::collections::BTreeMap;
use std::fmt;

pub use drillbench_model::k8s::node_selector::Operator;

use super::RequiredLabel;

/// One `matchExpressions` (or `matchFields`) requirement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The label key (or field path).
    pub key: String,
    /// The operator: In, NotIn, Exists, DoesNotExist, Gt or Lt.
    pub operator: Operator,
    pub values: Vec<String>,
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{} {}", self.key, self.operator.as_str())?;
        if matches!(self.operator, Operator::Exists | Operator::DoesNotExist) {
            f.write_str("`")
        } else {
            write!(f, " [{}]`", self.values.join(", "))
        }
    }
}

/// One node-selector term: its requirements are ANDed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Term {
    /// `matchExpressions`, on node labels.
    pub expressions: Vec<Requirement>,
    /// `matchFields`, on node fields such as `metadata.name`.
    pub fields: Vec<Requirement>,
}

/// The placement rules of a pod template, as far as node labels go.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlacementRules {
    /// `spec.nodeName`: the scheduler is bypassed.
    pub node_name: Option<String>,
    /// `spec.nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// The required node affinity's terms; `None` when there is none.
    pub required_terms: Option<Vec<Term>>,
    /// Whether a preferred (soft) node affinity exists.
    pub has_preferred: bool,
}

/// The verdict on one pod template's placement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// Every node the pod could run on must carry the label.
    Pass,
    /// Some node without the label is admitted; each reason says how.
    Fail(Vec<String>),
    /// It cannot be told from the manifests.
    Unknown(Vec<String>),
}

/// Judges `rules` against `label`.
pub fn judge(rules: &PlacementRules, label: &RequiredLabel) -> Judgement {
    if let Some(node) = &rules.node_name {
        return Judgement::Unknown(vec![format!(
            "spec.nodeName pins the pod to node {node}, bypassing the scheduler; \
             whether that node carries {label} cannot be known from manifests"
        )]);
    }
    match rules.node_selector.get(&label.key) {
        // nodeSelector is ANDed with affinity, so it alone guarantees the label.
        Some(value) if *value == label.value => return Judgement::Pass,
        Some(other) => {
            return Judgement::Fail(vec![format!(
                "nodeSelector requires {}={other}, not {label}",
                label.key
            )]);
        }
        None => {}
    }
    let Some(terms) = &rules.required_terms else {
        let mut reason = format!(
            "no required placement rule: neither a nodeSelector {label} nor required node affinity"
        );
        if !rules.node_selector.is_empty() {
            let others: Vec<String> = rules
                .node_selector
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            reason.push_str(&format!(" (nodeSelector has only {})", others.join(", ")));
        }
        if rules.has_preferred {
            reason.push_str(
                "; a preferred node affinity is only a soft bias and yields under request pressure",
            );
        }
        return Judgement::Fail(vec![reason]);
    };
    if terms.is_empty() {
        return Judgement::Fail(vec![
            "required node affinity has no terms; the pod can never schedule".to_owned(),
        ]);
    }
    let count = terms.len();
    let mut reasons = Vec::new();
    let mut admitting_terms = 0;
    for (index, term) in terms.iter().enumerate() {
        // An empty term matches no node, so it cannot admit an unlabelled one.
        if term.expressions.is_empty() && term.fields.is_empty() {
            continue;
        }
        admitting_terms += 1;
        if let Some(reason) = judge_term(term, label) {
            reasons.push(format!("term {} of {count} {reason}", index + 1));
        }
    }
    if admitting_terms == 0 {
        return Judgement::Fail(vec![
            "every required node-selector term is empty; the pod can never schedule".to_owned(),
        ]);
    }
    if reasons.is_empty() {
        Judgement::Pass
    } else {
        Judgement::Fail(reasons)
    }
}

/// `None` when the term guarantees the label, else why it does not.
fn judge_term(term: &Term, label: &RequiredLabel) -> Option<String> {
    let on_key: Vec<&Requirement> = term
        .expressions
        .iter()
        .filter(|req| req.key == label.key)
        .collect();
    let guarantees = |req: &&Requirement| {
        req.operator == Operator::In
            && !req.values.is_empty()
            && req.values.iter().all(|v| *v == label.value)
    };
    if on_key.iter().any(guarantees) {
        return None;
    }
    if on_key.is_empty() {
        let rules: Vec<String> = term
            .expressions
            .iter()
            .chain(&term.fields)
            .map(ToString::to_string)
            .collect();
        let only_exclusions = !term.expressions.is_empty()
            && term.fields.is_empty()
            && term
                .expressions
                .iter()
                .all(|req| req.operator == Operator::DoesNotExist);
        return Some(if only_exclusions {
            format!(
                "does not require {label}: its only guard is a DoesNotExist exclusion ({}), \
                 which fails open on any node missing that label",
                rules.join(", ")
            )
        } else {
            format!(
                "does not require {label} and admits nodes without it (its rules: {})",
                rules.join(", ")
            )
        });
    }
    let why: Vec<String> = on_key
        .iter()
        .map(|req| match req.operator {
            Operator::In if req.values.contains(&label.value) => format!(
                "{req} admits values of {} other than {}",
                label.key, label.value
            ),
            Operator::In => format!("{req} requires a different value than {}", label.value),
            Operator::NotIn => format!("{req} admits nodes without {}", label.key),
            Operator::Exists => format!(
                "{req} admits any value of {}, not only {}",
                label.key, label.value
            ),
            Operator::DoesNotExist => format!("{req} admits only nodes without {}", label.key),
            Operator::Gt | Operator::Lt => format!(
                "{req} admits values of {} other than {}",
                label.key, label.value
            ),
        })
        .collect();
    Some(format!("does not require {label}: {}", why.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label() -> RequiredLabel {
        RequiredLabel {
            key: "platform.devantler.tech/baseline-worker".into(),
            value: "true".into(),
        }
    }

    fn req(key: &str, op: Operator, values: &[&str]) -> Requirement {
        Requirement {
            key: key.into(),
            operator: op,
            values: values.iter().map(|v| v.to_string()).collect(),
        }
    }

    fn affinity(terms: Vec<Vec<Requirement>>) -> PlacementRules {
        PlacementRules {
            required_terms: Some(
                terms
                    .into_iter()
                    .map(|expressions| Term {
                        expressions,
                        fields: vec![],
                    })
                    .collect(),
            ),
            ..PlacementRules::default()
        }
    }

    const KEY: &str = "platform.devantler.tech/baseline-worker";

    #[test]
    fn a_required_in_on_the_label_passes_and_duplicates_do_not_matter() {
        let good = affinity(vec![vec![req(KEY, Operator::In, &["true", "true"])]]);
        assert_eq!(judge(&good, &label()), Judgement::Pass);
    }

    #[test]
    fn every_term_must_require_the_label() {
        let rules = affinity(vec![
            vec![req(KEY, Operator::In, &["true"])],
            vec![req("kubernetes.io/os", Operator::In, &["linux"])],
        ]);
        let Judgement::Fail(reasons) = judge(&rules, &label()) else {
            panic!("an unlabelled OR term must fail");
        };
        assert_eq!(reasons.len(), 1);
        assert!(
            reasons[0].starts_with("term 2 of 2 does not require"),
            "{reasons:?}"
        );
    }

    #[test]
    fn weaker_operators_fail_with_their_own_reason() {
        let cases = [
            (req(KEY, Operator::Exists, &[]), "admits any value"),
            (
                req(KEY, Operator::In, &["true", "false"]),
                "other than true",
            ),
            (
                req(KEY, Operator::In, &["false"]),
                "requires a different value",
            ),
            (
                req(KEY, Operator::NotIn, &["false"]),
                "admits nodes without",
            ),
            (req(KEY, Operator::DoesNotExist, &[]), "only nodes without"),
            (req(KEY, Operator::Gt, &["0"]), "other than true"),
            (
                req("ksail.io/autoscaled", Operator::DoesNotExist, &[]),
                "fails open on any node missing that label",
            ),
        ];
        for (requirement, expected) in cases {
            let rules = affinity(vec![vec![requirement.clone()]]);
            match judge(&rules, &label()) {
                Judgement::Fail(reasons) => {
                    assert!(reasons[0].contains(expected), "{requirement}: {reasons:?}")
                }
                other => panic!("{requirement}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_node_selector_alone_suffices_even_beside_weak_affinity() {
        let mut rules = affinity(vec![vec![req(
            "ksail.io/autoscaled",
            Operator::DoesNotExist,
            &[],
        )]]);
        rules.node_selector.insert(KEY.into(), "true".into());
        assert_eq!(judge(&rules, &label()), Judgement::Pass);
        rules.node_selector.insert(KEY.into(), "false".into());
        assert!(matches!(judge(&rules, &label()), Judgement::Fail(_)));
    }

    #[test]
    fn no_rule_empty_terms_and_node_name_are_not_passes() {
        let none = PlacementRules {
            has_preferred: true,
            ..PlacementRules::default()
        };
        let Judgement::Fail(reasons) = judge(&none, &label()) else {
            panic!()
        };
        assert!(reasons[0].contains("soft bias"), "{reasons:?}");
        assert_eq!(
            judge(&affinity(vec![]), &label()),
            Judgement::Fail(vec![
                "required node affinity has no terms; the pod can never schedule".into()
            ])
        );
        assert!(matches!(
            judge(&affinity(vec![vec![]]), &label()),
            Judgement::Fail(_)
        ));
        let pinned = PlacementRules {
            node_name: Some("prod-worker-1".into()),
            ..affinity(vec![vec![req(KEY, Operator::In, &["true"])]])
        };
        assert!(matches!(judge(&pinned, &label()), Judgement::Unknown(_)));
    }

    #[test]
    fn an_empty_term_beside_a_guarded_term_admits_nothing_extra() {
        let rules = affinity(vec![vec![], vec![req(KEY, Operator::In, &["true"])]]);
        assert_eq!(judge(&rules, &label()), Judgement::Pass);
    }
}
