//! Node selection: `nodeSelector`, required node affinity (the scheduler's
//! NodeAffinity filter) and preferred node affinity (its score).
//!
//! The rules, from the Kubernetes documentation ("Assigning Pods to Nodes")
//! and component-helpers `scheduling/corev1/nodeaffinity`:
//!
//! - `nodeSelectorTerms` are ORed; inside a term, `matchExpressions` and
//!   `matchFields` are all ANDed.
//! - An empty term list matches no node, and a term with neither expressions
//!   nor fields matches no node (upstream skips such terms).
//! - `NotIn` and `DoesNotExist` match a node that lacks the key — the reason a
//!   guard written as `DoesNotExist` fails open on every node missing a label.
//! - `Gt`/`Lt` parse the node's label value and the single operand as base-10
//!   64-bit integers (Go's `strconv.ParseInt`); a node whose value is not an
//!   integer, or that lacks the key, does not match.
//! - `matchFields` supports only `metadata.name`, with `In`/`NotIn` and exactly
//!   one value. Upstream ignores `matchFields` for a node without a name; so
//!   do we.
//! - A pod's `nodeSelector` map (every pair must match) and its required
//!   affinity must both match.
//!
//! Invalid requirements are errors at [`CompiledNodeSelector::compile`], not
//! silent non-matches. Admission validation (`ValidateNodeSelectorRequirement`)
//! refuses `In`/`NotIn` without values, `Exists`/`DoesNotExist` with values,
//! `Gt`/`Lt` without exactly one value, unknown operators, and `matchFields`
//! other than `metadata.name` with one value. The scheduler's parser
//! (`labels.NewRequirement`) additionally refuses a non-integer `Gt`/`Lt`
//! operand; admission lets that one through, and the scheduler then treats
//! the broken term as non-matching while still trying the others. We refuse
//! it too, because a pod that can never be placed by the term it was written
//! for is a bug a drill should surface, not route around. Label-key syntax
//! (length, DNS prefix) is not checked beyond "not empty".
//!
//! ```
//! use drillbench::k8s::node_selector::CompiledNodeSelector;
//! use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
//!
//! // The guard that fails open: every node lacking the label passes it.
//! let guard = CompiledNodeSelector::compile(&NodeSelector {
//!     node_selector_terms: vec![NodeSelectorTerm {
//!         match_expressions: Some(vec![NodeSelectorRequirement {
//!             key: "ksail.io/autoscaled".into(),
//!             operator: "DoesNotExist".into(),
//!             values: None,
//!         }]),
//!         match_fields: None,
//!     }],
//! })?;
//! let unstamped_autoscaler_node = Node::default();
//! assert!(guard.matches(&unstamped_autoscaler_node));
//! # Ok::<(), drillbench::k8s::node_selector::NodeSelectorError>(())
//! ```
//!
//! Matching borrows the node and does not allocate; [`explain`] builds the
//! evidence, and only walks the node again when asked.
//!
//! [`explain`]: CompiledNodeSelector::explain

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{
    Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, PreferredSchedulingTerm,
};
use kube::core::{Expression, SelectorExt};

/// The only field Kubernetes supports in `matchFields`.
pub const FIELD_METADATA_NAME: &str = "metadata.name";

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// A node-selector operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// The label is present and its value is one of the values.
    In,
    /// The label is absent, or its value is none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label is an integer greater than the operand.
    Gt,
    /// The label is an integer less than the operand.
    Lt,
}

impl Operator {
    /// The operator as written in a manifest, or `None` for an unknown one.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            _ => return None,
        })
    }

    /// The operator as written in a manifest.
    pub const fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
        }
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An invalid node-selector requirement; `path` locates it the way the
/// apiserver's field errors do (`nodeSelectorTerms[0].matchExpressions[1]`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeSelectorError {
    /// An operator Kubernetes does not know.
    #[error(
        "{path}: unknown operator `{operator}`; expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt"
    )]
    UnknownOperator {
        /// Where the requirement is.
        path: String,
        /// The operator as written.
        operator: String,
    },
    /// A requirement without a key.
    #[error("{path}: the key is empty")]
    EmptyKey {
        /// Where the requirement is.
        path: String,
    },
    /// `In` or `NotIn` without values.
    #[error("{path}: `{operator}` needs at least one value")]
    MissingValues {
        /// Where the requirement is.
        path: String,
        /// The operator.
        operator: Operator,
    },
    /// `Exists` or `DoesNotExist` with values.
    #[error("{path}: `{operator}` takes no values, got {count}")]
    UnexpectedValues {
        /// Where the requirement is.
        path: String,
        /// The operator.
        operator: Operator,
        /// How many values were given.
        count: usize,
    },
    /// `Gt`/`Lt` (or a field requirement) without exactly one value.
    #[error("{path}: `{operator}` takes exactly one value, got {count}")]
    NotSingleValue {
        /// Where the requirement is.
        path: String,
        /// The operator.
        operator: Operator,
        /// How many values were given.
        count: usize,
    },
    /// A `Gt`/`Lt` operand that is not a 64-bit integer.
    #[error("{path}: `{operator}` compares integers, but `{value}` is not one")]
    NotAnInteger {
        /// Where the requirement is.
        path: String,
        /// The operator.
        operator: Operator,
        /// The operand as written.
        value: String,
    },
    /// A `matchFields` key other than `metadata.name`.
    #[error("{path}: matchFields supports only `metadata.name`, not `{key}`")]
    UnsupportedField {
        /// Where the requirement is.
        path: String,
        /// The key as written.
        key: String,
    },
    /// A `matchFields` operator other than `In`/`NotIn`.
    #[error("{path}: matchFields supports only In and NotIn, not `{operator}`")]
    UnsupportedFieldOperator {
        /// Where the requirement is.
        path: String,
        /// The operator as written.
        operator: String,
    },
    /// A preferred term's weight outside 1..=100.
    #[error("{path}: weight {weight} is outside 1..=100")]
    InvalidWeight {
        /// Where the term is.
        path: String,
        /// The weight as written.
        weight: i32,
    },
}

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
struct CompiledTerm {
    expressions: Vec<LabelRequirement>,
    fields: Vec<FieldRequirement>,
}

impl CompiledTerm {
    fn compile(term: &NodeSelectorTerm, path: &str) -> Result<Self, NodeSelectorError> {
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

    fn matches(&self, labels: &BTreeMap<String, String>, name: &str) -> bool {
        !self.is_empty()
            && self.expressions.iter().all(|r| r.matches(labels))
            && (name.is_empty() || self.fields.iter().all(|r| r.matches(name)))
    }

    /// The first requirement that fails, or `None` if the term matches.
    fn failure(
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

fn node_labels(node: &Node) -> &BTreeMap<String, String> {
    node.metadata.labels.as_ref().unwrap_or(&NO_LABELS)
}

fn node_name(node: &Node) -> &str {
    node.metadata.name.as_deref().unwrap_or_default()
}

/// Why one term did not match a node: evidence an assertion can print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TermFailure {
    /// The term has neither `matchExpressions` nor `matchFields`.
    Empty {
        /// The term's index in `nodeSelectorTerms`.
        term: usize,
    },
    /// A `matchExpressions` requirement failed.
    Expression {
        /// The term's index.
        term: usize,
        /// The requirement's index in `matchExpressions`.
        index: usize,
        /// The requirement, as `key Operator (values)`.
        requirement: String,
        /// The label key it tests.
        key: String,
        /// The node's value of that label; `None` if the node lacks it.
        seen: Option<String>,
    },
    /// A `matchFields` requirement failed.
    Field {
        /// The term's index.
        term: usize,
        /// The requirement's index in `matchFields`.
        index: usize,
        /// The requirement, as `metadata.name In (name)`.
        requirement: String,
        /// The node's name.
        seen: String,
    },
}

impl fmt::Display for TermFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TermFailure::Empty { term } => {
                write!(
                    f,
                    "term {term} has no expressions and no fields, so it matches no node"
                )
            }
            TermFailure::Expression {
                term,
                index,
                requirement,
                key,
                seen,
            } => {
                write!(
                    f,
                    "term {term}: matchExpressions[{index}] `{requirement}` failed: "
                )?;
                match seen {
                    Some(value) => write!(f, "node has `{key}={value}`"),
                    None => write!(f, "node has no label `{key}`"),
                }
            }
            TermFailure::Field {
                term,
                index,
                requirement,
                seen,
            } => write!(
                f,
                "term {term}: matchFields[{index}] `{requirement}` failed: node is `{seen}`"
            ),
        }
    }
}

/// The outcome of matching a [`CompiledNodeSelector`] against a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeSelectorVerdict {
    /// The first term that matched.
    Matched {
        /// The term's index in `nodeSelectorTerms`.
        term: usize,
    },
    /// No term matched; one failure per term, in term order (empty when the
    /// selector has no terms at all).
    NotMatched {
        /// Why each term failed.
        failures: Vec<TermFailure>,
    },
}

impl NodeSelectorVerdict {
    /// Whether the node matched.
    pub fn is_match(&self) -> bool {
        matches!(self, NodeSelectorVerdict::Matched { .. })
    }
}

impl fmt::Display for NodeSelectorVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeSelectorVerdict::Matched { term } => write!(f, "term {term} matched"),
            NodeSelectorVerdict::NotMatched { failures } if failures.is_empty() => {
                f.write_str("the selector has no terms, so it matches no node")
            }
            NodeSelectorVerdict::NotMatched { failures } => {
                for (i, failure) in failures.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{failure}")?;
                }
                Ok(())
            }
        }
    }
}

/// A validated [`NodeSelector`], ready to match many nodes without parsing.
#[derive(Debug, Clone)]
pub struct CompiledNodeSelector {
    terms: Vec<CompiledTerm>,
}

impl CompiledNodeSelector {
    /// Validates and compiles a node selector; see the module documentation
    /// for what is refused.
    pub fn compile(selector: &NodeSelector) -> Result<Self, NodeSelectorError> {
        let terms = selector
            .node_selector_terms
            .iter()
            .enumerate()
            .map(|(i, term)| CompiledTerm::compile(term, &format!("nodeSelectorTerms[{i}]")))
            .collect::<Result<_, _>>()?;
        Ok(CompiledNodeSelector { terms })
    }

    /// Whether any term matches the node.
    pub fn matches(&self, node: &Node) -> bool {
        let (labels, name) = (node_labels(node), node_name(node));
        self.terms.iter().any(|t| t.matches(labels, name))
    }

    /// Which term matched, or why each failed.
    pub fn explain(&self, node: &Node) -> NodeSelectorVerdict {
        let (labels, name) = (node_labels(node), node_name(node));
        let mut failures = Vec::new();
        for (term, t) in self.terms.iter().enumerate() {
            match t.failure(term, labels, name) {
                None => return NodeSelectorVerdict::Matched { term },
                Some(failure) => failures.push(failure),
            }
        }
        NodeSelectorVerdict::NotMatched { failures }
    }
}

/// Whether `selector` matches `node`, compiling it first. For one-off checks;
/// the scheduler compiles once per pod and calls
/// [`CompiledNodeSelector::matches`] per node.
pub fn node_selector_matches(
    selector: &NodeSelector,
    node: &Node,
) -> Result<bool, NodeSelectorError> {
    Ok(CompiledNodeSelector::compile(selector)?.matches(node))
}

/// A pod's hard placement constraints: `nodeSelector` and required node
/// affinity, combined as the scheduler's NodeAffinity filter does
/// (`GetRequiredNodeAffinity`): both must match, and an absent one imposes
/// nothing.
#[derive(Debug, Clone)]
pub struct RequiredNodeAffinity {
    node_selector: Vec<(String, String)>,
    affinity: Option<CompiledNodeSelector>,
}

/// The outcome of [`RequiredNodeAffinity::explain`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeAffinityVerdict {
    /// Both `nodeSelector` and required affinity match (or are absent).
    Matched,
    /// A `nodeSelector` pair did not match; the first one, in key order.
    NodeSelector {
        /// The label key.
        key: String,
        /// The value the pod asks for.
        wanted: String,
        /// The node's value; `None` if the node lacks the label.
        seen: Option<String>,
    },
    /// The required node affinity did not match.
    Affinity(NodeSelectorVerdict),
}

impl NodeAffinityVerdict {
    /// Whether the node passes the filter.
    pub fn is_match(&self) -> bool {
        matches!(self, NodeAffinityVerdict::Matched)
    }
}

impl fmt::Display for NodeAffinityVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeAffinityVerdict::Matched => f.write_str("node affinity and nodeSelector match"),
            NodeAffinityVerdict::NodeSelector {
                key,
                wanted,
                seen: Some(value),
            } => write!(
                f,
                "nodeSelector wants `{key}={wanted}`, node has `{key}={value}`"
            ),
            NodeAffinityVerdict::NodeSelector {
                key,
                wanted,
                seen: None,
            } => write!(
                f,
                "nodeSelector wants `{key}={wanted}`, node has no label `{key}`"
            ),
            NodeAffinityVerdict::Affinity(verdict) => {
                write!(f, "required node affinity did not match: {verdict}")
            }
        }
    }
}

impl RequiredNodeAffinity {
    /// The constraints of a pod spec.
    pub fn from_pod_spec(spec: &PodSpec) -> Result<Self, NodeSelectorError> {
        let node_selector = spec
            .node_selector
            .iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let affinity = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(CompiledNodeSelector::compile)
            .transpose()?;
        Ok(RequiredNodeAffinity {
            node_selector,
            affinity,
        })
    }

    /// Whether the pod may be placed on the node as far as node labels go.
    pub fn matches(&self, node: &Node) -> bool {
        let labels = node_labels(node);
        self.node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.affinity.as_ref().is_none_or(|a| a.matches(node))
    }

    /// Why the pod may or may not be placed on the node.
    pub fn explain(&self, node: &Node) -> NodeAffinityVerdict {
        let labels = node_labels(node);
        if let Some((key, wanted)) = self
            .node_selector
            .iter()
            .find(|(k, v)| labels.get(k) != Some(v))
        {
            return NodeAffinityVerdict::NodeSelector {
                key: key.clone(),
                wanted: wanted.clone(),
                seen: labels.get(key).cloned(),
            };
        }
        match self.affinity.as_ref().map(|a| a.explain(node)) {
            Some(verdict) if !verdict.is_match() => NodeAffinityVerdict::Affinity(verdict),
            _ => NodeAffinityVerdict::Matched,
        }
    }
}

/// A pod's preferred node affinity, compiled for scoring.
#[derive(Debug, Clone, Default)]
pub struct CompiledPreferences {
    /// (index in the pod spec, weight, term)
    terms: Vec<(usize, i32, CompiledTerm)>,
}

impl CompiledPreferences {
    /// Validates and compiles preferred scheduling terms. Weights must be in
    /// 1..=100 (admission validation); empty terms are kept and never match,
    /// as upstream skips them.
    pub fn compile(terms: &[PreferredSchedulingTerm]) -> Result<Self, NodeSelectorError> {
        let terms = terms
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let path = format!("preferredDuringSchedulingIgnoredDuringExecution[{i}]");
                if !(1..=100).contains(&t.weight) {
                    return Err(NodeSelectorError::InvalidWeight {
                        path,
                        weight: t.weight,
                    });
                }
                let term = CompiledTerm::compile(&t.preference, &format!("{path}.preference"))?;
                Ok((i, t.weight, term))
            })
            .collect::<Result<_, _>>()?;
        Ok(CompiledPreferences { terms })
    }

    /// The preferences of a pod spec (none if it has no node affinity).
    pub fn from_pod_spec(spec: &PodSpec) -> Result<Self, NodeSelectorError> {
        spec.affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| {
                na.preferred_during_scheduling_ignored_during_execution
                    .as_deref()
            })
            .map_or_else(|| Ok(Self::default()), Self::compile)
    }

    /// The sum of the weights of the matching terms: the NodeAffinity
    /// plugin's raw score, before the framework normalises it to 0..=100
    /// across the candidate nodes.
    pub fn score(&self, node: &Node) -> i64 {
        let (labels, name) = (node_labels(node), node_name(node));
        self.terms
            .iter()
            .filter(|(_, _, t)| t.matches(labels, name))
            .map(|(_, w, _)| i64::from(*w))
            .sum()
    }

    /// The (index, weight) of each matching term, in spec order.
    pub fn matching_terms(&self, node: &Node) -> Vec<(usize, i32)> {
        let (labels, name) = (node_labels(node), node_name(node));
        self.terms
            .iter()
            .filter(|(_, _, t)| t.matches(labels, name))
            .map(|(i, w, _)| (*i, *w))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Affinity, NodeAffinity};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    use proptest::prelude::*;

    fn node(name: &str, labels: &[(&str, &str)]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: (!name.is_empty()).then(|| name.to_owned()),
                labels: Some(
                    labels
                        .iter()
                        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                        .collect(),
                ),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.to_owned(),
            operator: op.to_owned(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| (*v).to_owned()).collect()),
        }
    }

    fn term(exprs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: Some(exprs),
            match_fields: None,
        }
    }

    fn fields(reqs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: None,
            match_fields: Some(reqs),
        }
    }

    fn selector(terms: Vec<NodeSelectorTerm>) -> NodeSelector {
        NodeSelector {
            node_selector_terms: terms,
        }
    }

    fn matches(terms: Vec<NodeSelectorTerm>, n: &Node) -> bool {
        node_selector_matches(&selector(terms), n).unwrap()
    }

    #[test]
    fn operators_on_present_and_missing_keys() {
        let labelled = node("n", &[("zone", "a"), ("cores", "8"), ("odd", "x8")]);
        let bare = node("n", &[]);
        // (requirement, matches the labelled node, matches the bare node)
        let table = [
            (req("zone", "In", &["a", "b"]), true, false),
            (req("zone", "In", &["b"]), false, false),
            (req("zone", "NotIn", &["b"]), true, true),
            (req("zone", "NotIn", &["a"]), false, true),
            (req("zone", "Exists", &[]), true, false),
            (req("zone", "DoesNotExist", &[]), false, true),
            (req("cores", "Gt", &["4"]), true, false),
            (req("cores", "Gt", &["8"]), false, false),
            (req("cores", "Lt", &["9"]), true, false),
            (req("cores", "Lt", &["8"]), false, false),
            (req("cores", "Gt", &["-1"]), true, false),
            (req("cores", "Lt", &["-1"]), false, false),
            // A non-integer label value matches neither Gt nor Lt.
            (req("odd", "Gt", &["0"]), false, false),
            (req("odd", "Lt", &["100"]), false, false),
            (req("zone", "Gt", &["0"]), false, false),
        ];
        for (r, on_labelled, on_bare) in table {
            let desc = format!("{} {} {:?}", r.key, r.operator, r.values);
            assert_eq!(
                matches(vec![term(vec![r.clone()])], &labelled),
                on_labelled,
                "{desc}"
            );
            assert_eq!(
                matches(vec![term(vec![r])], &bare),
                on_bare,
                "{desc} on bare"
            );
        }
    }

    #[test]
    fn gt_and_lt_parse_like_go() {
        let cases = [
            ("-5", "Lt", "-4", true),
            ("-5", "Gt", "-6", true),
            ("+7", "Gt", "6", true),
            ("007", "Gt", "6", true),
            ("7", "Gt", "+6", true),
            (" 7", "Gt", "6", false),
            ("1_000", "Gt", "6", false),
            ("9223372036854775808", "Gt", "0", false),
            ("-9223372036854775808", "Lt", "0", true),
            ("", "Lt", "1", false),
        ];
        for (value, op, operand, expected) in cases {
            let n = node("n", &[("k", value)]);
            assert_eq!(
                matches(vec![term(vec![req("k", op, &[operand])])], &n),
                expected,
                "{value:?} {op} {operand}"
            );
        }
    }

    #[test]
    fn terms_are_ored_and_expressions_anded() {
        let n = node("n", &[("a", "1"), ("b", "2")]);
        let a1 = || req("a", "In", &["1"]);
        let b3 = || req("b", "In", &["3"]);
        assert!(!matches(vec![term(vec![a1(), b3()])], &n));
        assert!(matches(vec![term(vec![b3()]), term(vec![a1()])], &n));
        assert!(matches(vec![term(vec![a1(), req("b", "Exists", &[])])], &n));
    }

    #[test]
    fn empty_term_list_and_empty_terms_match_nothing() {
        let n = node("n", &[("a", "1")]);
        assert!(!matches(vec![], &n));
        assert!(!matches(vec![NodeSelectorTerm::default()], &n));
        assert!(!matches(vec![term(vec![])], &n));
        // An empty term does not poison the others.
        assert!(matches(
            vec![
                NodeSelectorTerm::default(),
                term(vec![req("a", "Exists", &[])])
            ],
            &n
        ));
        let compiled = CompiledNodeSelector::compile(&selector(vec![])).unwrap();
        assert_eq!(
            compiled.explain(&n).to_string(),
            "the selector has no terms, so it matches no node"
        );
        let compiled =
            CompiledNodeSelector::compile(&selector(vec![NodeSelectorTerm::default()])).unwrap();
        assert_eq!(
            compiled.explain(&n),
            NodeSelectorVerdict::NotMatched {
                failures: vec![TermFailure::Empty { term: 0 }]
            }
        );
    }

    #[test]
    fn match_fields_select_by_node_name() {
        let n = node("prod-worker-1", &[]);
        let name_in = |v: &str| fields(vec![req("metadata.name", "In", &[v])]);
        let name_not_in = |v: &str| fields(vec![req("metadata.name", "NotIn", &[v])]);
        assert!(matches(vec![name_in("prod-worker-1")], &n));
        assert!(!matches(vec![name_in("prod-worker-2")], &n));
        assert!(matches(vec![name_not_in("prod-worker-2")], &n));
        assert!(!matches(vec![name_not_in("prod-worker-1")], &n));
        // Fields and expressions in one term are ANDed.
        let both = NodeSelectorTerm {
            match_expressions: Some(vec![req("zone", "Exists", &[])]),
            match_fields: Some(vec![req("metadata.name", "In", &["prod-worker-1"])]),
        };
        assert!(!matches(vec![both.clone()], &n));
        assert!(matches(
            vec![both],
            &node("prod-worker-1", &[("zone", "a")])
        ));
        // Upstream skips field requirements for a node without a name.
        assert!(matches(vec![name_in("prod-worker-1")], &node("", &[])));
    }

    #[test]
    fn invalid_requirements_are_errors() {
        let compile = |r: NodeSelectorRequirement| {
            CompiledNodeSelector::compile(&selector(vec![
                term(vec![req("ok", "Exists", &[])]),
                term(vec![req("ok", "Exists", &[]), r]),
            ]))
            .unwrap_err()
        };
        let path = "nodeSelectorTerms[1].matchExpressions[1]".to_owned();
        assert_eq!(
            compile(req("k", "In", &[])),
            NodeSelectorError::MissingValues {
                path: path.clone(),
                operator: Operator::In
            }
        );
        assert_eq!(
            compile(req("k", "NotIn", &[])),
            NodeSelectorError::MissingValues {
                path: path.clone(),
                operator: Operator::NotIn
            }
        );
        assert_eq!(
            compile(req("k", "Exists", &["x"])),
            NodeSelectorError::UnexpectedValues {
                path: path.clone(),
                operator: Operator::Exists,
                count: 1
            }
        );
        assert_eq!(
            compile(req("k", "Gt", &["1", "2"])),
            NodeSelectorError::NotSingleValue {
                path: path.clone(),
                operator: Operator::Gt,
                count: 2
            }
        );
        assert_eq!(
            compile(req("k", "Lt", &[])),
            NodeSelectorError::NotSingleValue {
                path: path.clone(),
                operator: Operator::Lt,
                count: 0
            }
        );
        assert_eq!(
            compile(req("k", "Gt", &["1.5"])),
            NodeSelectorError::NotAnInteger {
                path: path.clone(),
                operator: Operator::Gt,
                value: "1.5".to_owned()
            }
        );
        assert!(matches!(
            compile(req("k", "in", &["a"])),
            NodeSelectorError::UnknownOperator { .. }
        ));
        assert!(matches!(
            compile(req("", "Exists", &[])),
            NodeSelectorError::EmptyKey { .. }
        ));
        let err = compile(req("k", "Gt", &["two"]));
        assert_eq!(
            err.to_string(),
            "nodeSelectorTerms[1].matchExpressions[1]: `Gt` compares integers, but `two` is not one"
        );

        let compile_field = |r: NodeSelectorRequirement| {
            CompiledNodeSelector::compile(&selector(vec![fields(vec![r])])).unwrap_err()
        };
        assert!(matches!(
            compile_field(req("metadata.uid", "In", &["x"])),
            NodeSelectorError::UnsupportedField { .. }
        ));
        assert!(matches!(
            compile_field(req("metadata.name", "Exists", &[])),
            NodeSelectorError::UnsupportedFieldOperator { .. }
        ));
        assert!(matches!(
            compile_field(req("metadata.name", "In", &["a", "b"])),
            NodeSelectorError::NotSingleValue { count: 2, .. }
        ));
    }

    #[test]
    fn explanations_name_the_failing_expression_and_the_label_seen() {
        // The incident's fail-open guard and its fail-closed replacement.
        let autoscaler_unstamped = node("autoscale-cx43-0123456789ab", &[]);
        let autoscaler = node(
            "autoscale-cx43-0123456789ab",
            &[("ksail.io/autoscaled", "true")],
        );
        let guard = CompiledNodeSelector::compile(&selector(vec![term(vec![req(
            "ksail.io/autoscaled",
            "DoesNotExist",
            &[],
        )])]))
        .unwrap();
        assert!(guard.matches(&autoscaler_unstamped), "fails open");
        assert_eq!(
            guard.explain(&autoscaler).to_string(),
            "term 0: matchExpressions[0] `ksail.io/autoscaled DoesNotExist` failed: node has `ksail.io/autoscaled=true`"
        );
        let positive = CompiledNodeSelector::compile(&selector(vec![
            term(vec![req(
                "platform.devantler.tech/baseline-worker",
                "In",
                &["true"],
            )]),
            fields(vec![req("metadata.name", "In", &["prod-worker-9"])]),
        ]))
        .unwrap();
        let verdict = positive.explain(&autoscaler_unstamped);
        assert_eq!(
            verdict,
            NodeSelectorVerdict::NotMatched {
                failures: vec![
                    TermFailure::Expression {
                        term: 0,
                        index: 0,
                        requirement: "platform.devantler.tech/baseline-worker In (true)".to_owned(),
                        key: "platform.devantler.tech/baseline-worker".to_owned(),
                        seen: None,
                    },
                    TermFailure::Field {
                        term: 1,
                        index: 0,
                        requirement: "metadata.name In (prod-worker-9)".to_owned(),
                        seen: "autoscale-cx43-0123456789ab".to_owned(),
                    },
                ]
            }
        );
        assert_eq!(
            verdict.to_string(),
            "term 0: matchExpressions[0] `platform.devantler.tech/baseline-worker In (true)` failed: node has no label `platform.devantler.tech/baseline-worker`; term 1: matchFields[0] `metadata.name In (prod-worker-9)` failed: node is `autoscale-cx43-0123456789ab`"
        );
        let worker = node(
            "prod-worker-9",
            &[("platform.devantler.tech/baseline-worker", "false")],
        );
        assert_eq!(
            positive.explain(&worker),
            NodeSelectorVerdict::Matched { term: 1 }
        );
    }

    fn pod_spec(
        node_selector: &[(&str, &str)],
        required: Option<NodeSelector>,
        preferred: Vec<PreferredSchedulingTerm>,
    ) -> PodSpec {
        PodSpec {
            node_selector: (!node_selector.is_empty()).then(|| {
                node_selector
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect()
            }),
            affinity: Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required_during_scheduling_ignored_during_execution: required,
                    preferred_during_scheduling_ignored_during_execution: Some(preferred),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn node_selector_and_required_affinity_must_both_match() {
        let n = node("n", &[("disk", "ssd"), ("zone", "a")]);
        let zone_a = || Some(selector(vec![term(vec![req("zone", "In", &["a"])])]));
        let zone_b = || Some(selector(vec![term(vec![req("zone", "In", &["b"])])]));
        let check = |ns: &[(&str, &str)], aff| {
            RequiredNodeAffinity::from_pod_spec(&pod_spec(ns, aff, vec![])).unwrap()
        };
        assert!(check(&[], None).matches(&n), "no constraints match all");
        assert!(check(&[("disk", "ssd")], zone_a()).matches(&n));
        assert!(!check(&[("disk", "hdd")], zone_a()).matches(&n));
        assert!(!check(&[("disk", "ssd")], zone_b()).matches(&n));
        assert!(!check(&[], Some(selector(vec![]))).matches(&n));
        assert_eq!(
            check(&[("disk", "ssd"), ("gpu", "yes")], zone_a())
                .explain(&n)
                .to_string(),
            "nodeSelector wants `gpu=yes`, node has no label `gpu`"
        );
        assert_eq!(
            check(&[("disk", "hdd")], zone_a()).explain(&n),
            NodeAffinityVerdict::NodeSelector {
                key: "disk".to_owned(),
                wanted: "hdd".to_owned(),
                seen: Some("ssd".to_owned())
            }
        );
        let verdict = check(&[("disk", "ssd")], zone_b()).explain(&n);
        assert!(matches!(verdict, NodeAffinityVerdict::Affinity(_)));
        assert!(
            verdict
                .to_string()
                .starts_with("required node affinity did not match: term 0:")
        );
        assert!(check(&[("disk", "ssd")], zone_a()).explain(&n).is_match());
    }

    #[test]
    fn preferred_terms_sum_matching_weights() {
        let pref = |weight, t| PreferredSchedulingTerm {
            weight,
            preference: t,
        };
        let spec = pod_spec(
            &[],
            None,
            vec![
                pref(10, term(vec![req("zone", "In", &["a"])])),
                pref(5, term(vec![req("disk", "Exists", &[])])),
                pref(80, term(vec![req("zone", "In", &["b"])])),
                pref(100, NodeSelectorTerm::default()),
                pref(1, fields(vec![req("metadata.name", "In", &["n"])])),
            ],
        );
        let prefs = CompiledPreferences::from_pod_spec(&spec).unwrap();
        let n = node("n", &[("zone", "a"), ("disk", "ssd")]);
        assert_eq!(prefs.score(&n), 16);
        assert_eq!(prefs.matching_terms(&n), vec![(0, 10), (1, 5), (4, 1)]);
        assert_eq!(prefs.score(&node("m", &[("zone", "b")])), 80);
        assert_eq!(
            CompiledPreferences::from_pod_spec(&PodSpec::default())
                .unwrap()
                .score(&n),
            0
        );
        for weight in [0, 101, -1] {
            assert!(matches!(
                CompiledPreferences::compile(&[pref(weight, term(vec![]))]),
                Err(NodeSelectorError::InvalidWeight { .. })
            ));
        }
    }

    fn labels_strategy() -> impl Strategy<Value = BTreeMap<String, String>> {
        prop::collection::btree_map("[a-c]", "[x-z0-9]{0,2}", 0..4)
    }

    proptest! {
        #[test]
        fn not_in_negates_in_when_the_key_is_present(
            labels in labels_strategy(),
            key in "[a-c]",
            values in prop::collection::vec("[x-z0-9]{0,2}", 1..4),
        ) {
            let values: Vec<&str> = values.iter().map(String::as_str).collect();
            let label_pairs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let n = node("n", &label_pairs);
            let is_in = matches(vec![term(vec![req(&key, "In", &values)])], &n);
            let not_in = matches(vec![term(vec![req(&key, "NotIn", &values)])], &n);
            if labels.contains_key(&key) {
                prop_assert_ne!(is_in, not_in);
            } else {
                prop_assert!(!is_in && not_in);
            }
            let exists = matches(vec![term(vec![req(&key, "Exists", &[])])], &n);
            let absent = matches(vec![term(vec![req(&key, "DoesNotExist", &[])])], &n);
            prop_assert_ne!(exists, absent);
            prop_assert_eq!(exists, labels.contains_key(&key));
        }

        #[test]
        fn gt_and_lt_agree_with_integer_order(value in any::<i64>(), bound in any::<i64>()) {
            let n = node("n", &[("k", &value.to_string())]);
            let gt = matches(vec![term(vec![req("k", "Gt", &[&bound.to_string()])])], &n);
            let lt = matches(vec![term(vec![req("k", "Lt", &[&bound.to_string()])])], &n);
            prop_assert_eq!(gt, value > bound);
            prop_assert_eq!(lt, value < bound);
        }

        #[test]
        fn explain_agrees_with_matches(
            labels in labels_strategy(),
            reqs in prop::collection::vec(
                ("[a-c]", prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"]), "[x-z0-9]{0,2}"),
                0..6,
            ),
            split in 0usize..6,
        ) {
            let to_req = |(k, op, v): &(String, &str, String)| {
                let values: &[&str] = if matches!(*op, "In" | "NotIn") { &[v.as_str()] } else { &[] };
                req(k, op, values)
            };
            let split = split.min(reqs.len());
            let terms = vec![
                term(reqs[..split].iter().map(to_req).collect()),
                term(reqs[split..].iter().map(to_req).collect()),
            ];
            let label_pairs: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let n = node("n", &label_pairs);
            let compiled = CompiledNodeSelector::compile(&selector(terms)).unwrap();
            prop_assert_eq!(compiled.matches(&n), compiled.explain(&n).is_match());
        }
    }
}
