//! One `nodeSelectorTerms` entry, compiled: its `matchExpressions` (label
//! requirements, with the integer `Gt`/`Lt` kube-core's selectors lack) and
//! its `matchFields` (`metadata.name` only), and the first requirement that
//! fails when a node does not match.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm};
use kube_core::{Expression, SelectorExt};

use super::{FIELD_METADATA_NAME, NodeSelectorError, Operator, TermFailure};

/// One compiled `matchExpressions` requirement. The set operators reuse
/// kube-core's label-selector [`Expression`]; only `Gt`/`Lt` are ours.
#[derive(Debug, Clone)]
enum LabelRequirement {
    Set(Expression),
    Gt { key: String, bound: i64 },
    Lt { key: String, bound: i64 },
}

impl LabelRequirement {
    fn compile(req: &NodeSelectorRequirement, path: &str) -> Result<Self, NodeSelectorError> {
        let operator =
            Operator::parse(&req.operator).ok_or_else(|| NodeSelectorError::UnknownOperator {
                path: path.to_owned(),
                operator: req.operator.clone(),
            })?;
        if req.key.is_empty() {
            return Err(NodeSelectorError::EmptyKey {
                path: path.to_owned(),
            });
        }
        let values = req.values.as_deref().unwrap_or_default();
        let key = req.key.clone();
        let set = || values.iter().cloned().collect();
        Ok(match operator {
            Operator::In | Operator::NotIn if values.is_empty() => {
                return Err(NodeSelectorError::MissingValues {
                    path: path.to_owned(),
                    operator,
                });
            }
            Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
                return Err(NodeSelectorError::UnexpectedValues {
                    path: path.to_owned(),
                    operator,
                    count: values.len(),
                });
            }
            Operator::In => LabelRequirement::Set(Expression::In(key, set())),
            Operator::NotIn => LabelRequirement::Set(Expression::NotIn(key, set())),
            Operator::Exists => LabelRequirement::Set(Expression::Exists(key)),
            Operator::DoesNotExist => LabelRequirement::Set(Expression::DoesNotExist(key)),
            Operator::Gt | Operator::Lt => {
                let [operand] = values else {
                    return Err(NodeSelectorError::NotSingleValue {
                        path: path.to_owned(),
                        operator,
                        count: values.len(),
                    });
                };
                let bound =
                    parse_go_int(operand).ok_or_else(|| NodeSelectorError::NotAnInteger {
                        path: path.to_owned(),
                        operator,
                        value: operand.clone(),
                    })?;
                if operator == Operator::Gt {
                    LabelRequirement::Gt { key, bound }
                } else {
                    LabelRequirement::Lt { key, bound }
                }
            }
        })
    }

    fn key(&self) -> &str {
        match self {
            LabelRequirement::Set(
                Expression::In(key, _)
                | Expression::NotIn(key, _)
                | Expression::Equal(key, _)
                | Expression::NotEqual(key, _)
                | Expression::Exists(key)
                | Expression::DoesNotExist(key),
            ) => key,
            LabelRequirement::Gt { key, .. } | LabelRequirement::Lt { key, .. } => key,
        }
    }

    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            LabelRequirement::Set(expression) => expression.matches(labels),
            LabelRequirement::Gt { key, bound } => {
                label_int(labels, key).is_some_and(|value| value > *bound)
            }
            LabelRequirement::Lt { key, bound } => {
                label_int(labels, key).is_some_and(|value| value < *bound)
            }
        }
    }
}

/// Written the way a manifest reads: `zone In (a, b)`, `gpu DoesNotExist`,
/// `cores Gt 4`.
impl fmt::Display for LabelRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, values: &std::collections::BTreeSet<String>| {
            f.write_str("(")?;
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                f.write_str(v)?;
            }
            f.write_str(")")
        };
        match self {
            LabelRequirement::Set(Expression::In(key, values)) => {
                write!(f, "{key} In ")?;
                list(f, values)
            }
            LabelRequirement::Set(Expression::NotIn(key, values)) => {
                write!(f, "{key} NotIn ")?;
                list(f, values)
            }
            LabelRequirement::Set(Expression::Exists(key)) => write!(f, "{key} Exists"),
            LabelRequirement::Set(Expression::DoesNotExist(key)) => {
                write!(f, "{key} DoesNotExist")
            }
            LabelRequirement::Set(other) => write!(f, "{other}"),
            LabelRequirement::Gt { key, bound } => write!(f, "{key} Gt {bound}"),
            LabelRequirement::Lt { key, bound } => write!(f, "{key} Lt {bound}"),
        }
    }
}

/// Go's `strconv.ParseInt(s, 10, 64)`: optional sign, ASCII digits, no
/// spaces or underscores, within i64. Rust's parser accepts exactly that.
fn parse_go_int(s: &str) -> Option<i64> {
    s.parse().ok()
}

fn label_int(labels: &BTreeMap<String, String>, key: &str) -> Option<i64> {
    labels.get(key).and_then(|v| parse_go_int(v))
}

/// One compiled `matchFields` requirement on `metadata.name`.
#[derive(Debug, Clone)]
enum FieldRequirement {
    NameIn(String),
    NameNotIn(String),
}

impl FieldRequirement {
    fn compile(req: &NodeSelectorRequirement, path: &str) -> Result<Self, NodeSelectorError> {
        let values = req.values.as_deref().unwrap_or_default();
        let operator = match Operator::parse(&req.operator) {
            Some(op @ (Operator::In | Operator::NotIn)) => op,
            _ => {
                return Err(NodeSelectorError::UnsupportedFieldOperator {
                    path: path.to_owned(),
                    operator: req.operator.clone(),
                });
            }
        };
        if req.key != FIELD_METADATA_NAME {
            return Err(NodeSelectorError::UnsupportedField {
                path: path.to_owned(),
                key: req.key.clone(),
            });
        }
        let [name] = values else {
            return Err(NodeSelectorError::NotSingleValue {
                path: path.to_owned(),
                operator,
                count: values.len(),
            });
        };
        Ok(if operator == Operator::In {
            FieldRequirement::NameIn(name.clone())
        } else {
            FieldRequirement::NameNotIn(name.clone())
        })
    }

    fn matches(&self, node_name: &str) -> bool {
        match self {
            FieldRequirement::NameIn(name) => node_name == name,
            FieldRequirement::NameNotIn(name) => node_name != name,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldRequirement::NameIn(name) => write!(f, "{FIELD_METADATA_NAME} In ({name})"),
            FieldRequirement::NameNotIn(name) => {
                write!(f, "{FIELD_METADATA_NAME} NotIn ({name})")
            }
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct CompiledTerm {
    expressions: Vec<LabelRequirement>,
    fields: Vec<FieldRequirement>,
}

impl CompiledTerm {
    pub(super) fn compile(term: &NodeSelectorTerm, path: &str) -> Result<Self, NodeSelectorError> {
        let expressions = term
            .match_expressions
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, req)| {
                LabelRequirement::compile(req, &format!("{path}.matchExpressions[{i}]"))
            })
            .collect::<Result<_, _>>()?;
        let fields = term
            .match_fields
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, req)| FieldRequirement::compile(req, &format!("{path}.matchFields[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(CompiledTerm {
            expressions,
            fields,
        })
    }

    fn is_empty(&self) -> bool {
        self.expressions.is_empty() && self.fields.is_empty()
    }

    pub(super) fn matches(&self, labels: &BTreeMap<String, String>, name: &str) -> bool {
        !self.is_empty()
            && self.expressions.iter().all(|r| r.matches(labels))
            && (name.is_empty() || self.fields.iter().all(|r| r.matches(name)))
    }

    /// The first requirement that fails, or `None` if the term matches.
    pub(super) fn failure(
        &self,
        term: usize,
        labels: &BTreeMap<String, String>,
        name: &str,
    ) -> Option<TermFailure> {
        if self.is_empty() {
            return Some(TermFailure::Empty { term });
        }
        if let Some((index, r)) = self
            .expressions
            .iter()
            .enumerate()
            .find(|(_, r)| !r.matches(labels))
        {
            return Some(TermFailure::Expression {
                term,
                index,
                requirement: r.to_string(),
                key: r.key().to_owned(),
                seen: labels.get(r.key()).cloned(),
            });
        }
        if name.is_empty() {
            return None;
        }
        self.fields
            .iter()
            .enumerate()
            .find(|(_, r)| !r.matches(name))
            .map(|(index, r)| TermFailure::Field {
                term,
                index,
                requirement: r.to_string(),
                seen: name.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.to_owned(),
            operator: operator.to_owned(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn term(
        exprs: Vec<NodeSelectorRequirement>,
        fields: Vec<NodeSelectorRequirement>,
    ) -> CompiledTerm {
        CompiledTerm::compile(
            &NodeSelectorTerm {
                match_expressions: Some(exprs),
                match_fields: Some(fields),
            },
            "t",
        )
        .unwrap()
    }

    #[test]
    fn requirements_print_as_a_manifest_reads_them() {
        let cases = [
            (req("zone", "In", &["b", "a"]), "zone In (a, b)"),
            (req("zone", "NotIn", &["a"]), "zone NotIn (a)"),
            (req("gpu", "Exists", &[]), "gpu Exists"),
            (req("gpu", "DoesNotExist", &[]), "gpu DoesNotExist"),
            (req("cores", "Gt", &["4"]), "cores Gt 4"),
            (req("cores", "Lt", &["-2"]), "cores Lt -2"),
        ];
        for (r, want) in cases {
            let compiled = LabelRequirement::compile(&r, "p").unwrap();
            assert_eq!(compiled.to_string(), want);
            assert_eq!(compiled.key(), r.key);
        }
    }

    #[test]
    fn integer_bounds_need_an_integer_label() {
        let gt = LabelRequirement::compile(&req("cores", "Gt", &["4"]), "p").unwrap();
        assert!(gt.matches(&labels(&[("cores", "5")])));
        assert!(!gt.matches(&labels(&[("cores", "4")])));
        assert!(!gt.matches(&labels(&[("cores", "5.0")])));
        assert!(!gt.matches(&labels(&[])));
        assert_eq!(parse_go_int("+7"), Some(7));
        assert_eq!(parse_go_int(" 7"), None);
        assert_eq!(parse_go_int("9223372036854775808"), None);
    }

    #[test]
    fn a_field_requirement_takes_one_name_and_only_in_or_not_in() {
        let not_in =
            FieldRequirement::compile(&req("metadata.name", "NotIn", &["n1"]), "p").unwrap();
        assert!(not_in.matches("n2"));
        assert!(!not_in.matches("n1"));
        assert_eq!(not_in.to_string(), "metadata.name NotIn (n1)");
        assert!(matches!(
            FieldRequirement::compile(&req("metadata.name", "Exists", &[]), "p"),
            Err(NodeSelectorError::UnsupportedFieldOperator { .. })
        ));
        assert!(matches!(
            FieldRequirement::compile(&req("metadata.name", "In", &["a", "b"]), "p"),
            Err(NodeSelectorError::NotSingleValue { count: 2, .. })
        ));
    }

    #[test]
    fn errors_carry_the_path_of_the_broken_requirement() {
        let err = CompiledTerm::compile(
            &NodeSelectorTerm {
                match_expressions: Some(vec![req("a", "Exists", &[]), req("b", "Near", &[])]),
                match_fields: None,
            },
            "nodeSelectorTerms[3]",
        )
        .unwrap_err();
        assert_eq!(
            err,
            NodeSelectorError::UnknownOperator {
                path: "nodeSelectorTerms[3].matchExpressions[1]".to_owned(),
                operator: "Near".to_owned(),
            }
        );
    }

    #[test]
    fn failure_names_the_first_failing_requirement() {
        let t = term(
            vec![req("zone", "In", &["a"]), req("gpu", "Exists", &[])],
            vec![req("metadata.name", "In", &["n1"])],
        );
        let node = labels(&[("zone", "b")]);
        assert!(!t.matches(&node, "n1"));
        assert_eq!(
            t.failure(2, &node, "n1"),
            Some(TermFailure::Expression {
                term: 2,
                index: 0,
                requirement: "zone In (a)".to_owned(),
                key: "zone".to_owned(),
                seen: Some("b".to_owned()),
            })
        );
        let node = labels(&[("zone", "a"), ("gpu", "x")]);
        assert!(t.matches(&node, "n1"));
        assert_eq!(t.failure(0, &node, "n1"), None);
        assert_eq!(
            t.failure(0, &node, "n2"),
            Some(TermFailure::Field {
                term: 0,
                index: 0,
                requirement: "metadata.name In (n1)".to_owned(),
                seen: "n2".to_owned(),
            })
        );
        // A node without a name skips the fields, as upstream does.
        assert!(t.matches(&node, ""));
    }

    #[test]
    fn an_empty_term_matches_no_node() {
        let t = term(vec![], vec![]);
        assert!(!t.matches(&labels(&[("a", "b")]), "n"));
        assert_eq!(
            t.failure(4, &labels(&[]), "n"),
            Some(TermFailure::Empty { term: 4 })
        );
    }
}
