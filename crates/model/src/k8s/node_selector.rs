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
//! use drillbench_model::k8s::node_selector::CompiledNodeSelector;
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
//! # Ok::<(), drillbench_model::k8s::node_selector::NodeSelectorError>(())
//! ```
//!
//! Matching borrows the node and does not allocate; [`explain`] builds the
//! evidence, and only walks the node again when asked.
//!
//! [`explain`]: CompiledNodeSelector::explain

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::api::core::v1::{Node, NodeSelector, PodSpec, PreferredSchedulingTerm};

/// The only field Kubernetes supports in `matchFields`.
pub const FIELD_METADATA_NAME: &str = "metadata.name";

static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

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
    UnknownOperator { path: String, operator: String },
    #[error("{path}: the key is empty")]
    EmptyKey { path: String },
    /// `In` or `NotIn` without values.
    #[error("{path}: `{operator}` needs at least one value")]
    MissingValues { path: String, operator: Operator },
    /// `Exists` or `DoesNotExist` with values.
    #[error("{path}: `{operator}` takes no values, got {count}")]
    UnexpectedValues {
        path: String,
        operator: Operator,
        count: usize,
    },
    /// `Gt`/`Lt` (or a field requirement) without exactly one value.
    #[error("{path}: `{operator}` takes exactly one value, got {count}")]
    NotSingleValue {
        path: String,
        operator: Operator,
        count: usize,
    },
    /// A `Gt`/`Lt` operand that is not a 64-bit integer.
    #[error("{path}: `{operator}` compares integers, but `{value}` is not one")]
    NotAnInteger {
        path: String,
        operator: Operator,
        value: String,
    },
    /// A `matchFields` key other than `metadata.name`.
    #[error("{path}: matchFields supports only `metadata.name`, not `{key}`")]
    UnsupportedField { path: String, key: String },
    /// A `matchFields` operator other than `In`/`NotIn`.
    #[error("{path}: matchFields supports only In and NotIn, not `{operator}`")]
    UnsupportedFieldOperator { path: String, operator: String },
    /// A preferred term's weight outside 1..=100.
    #[error("{path}: weight {weight} is outside 1..=100")]
    InvalidWeight { path: String, weight: i32 },
}

mod term;

use term::CompiledTerm;

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
        term: usize,
        /// The requirement's index in `matchFields`.
        index: usize,
        /// The requirement, as `metadata.name In (name)`.
        requirement: String,
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
    NotMatched { failures: Vec<TermFailure> },
}

impl NodeSelectorVerdict {
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
mod tests;
