//! Kyverno policies (`kyverno.io/v1` ClusterPolicy and Policy) evaluated the
//! way Kyverno's admission webhook evaluates them, for the simulator's
//! admission and for `bench policy test`.
//!
//! Semantics are transcribed from Kyverno's documentation and engine source
//! (each module names its page or file); the corpus under `tests/corpus/`
//! pins them case by case.
//!
//! ```
//! use drillbench_kyverno::{AdmissionRequest, Engine, NoCluster, RuleStatus, policy};
//! use serde_json::json;
//!
//! let p = policy::from_value(&json!({
//!     "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
//!     "metadata": {"name": "require-team"},
//!     "spec": {"validationFailureAction": "Enforce", "rules": [{
//!         "name": "team-label",
//!         "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
//!         "validate": {"message": "label team is required",
//!                      "pattern": {"metadata": {"labels": {"team": "?*"}}}}}]}
//! })).unwrap();
//! let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x", "namespace": "a"}});
//! let outcome = Engine::new(&NoCluster).admit(&[p], &AdmissionRequest::create(pod));
//! assert_eq!(outcome.results[0].status, RuleStatus::Fail);
//! assert!(outcome.refusal().unwrap().contains("label team is required"));
//! ```

pub mod anchor;
pub mod autogen;
pub mod conditions;
pub mod context;
pub mod engine;
pub mod exception;
pub mod jmes;
pub mod live;
pub mod matching;
pub mod merge;
pub mod operator;
pub mod pattern;
pub mod policy;
pub mod request;
pub mod scalar;
pub mod test_runner;
pub mod value_pattern;
pub mod variables;
pub mod wildcard;

pub use context::{ClusterData, InMemoryCluster, NoCluster};
pub use engine::{Admission, Engine, RuleKind, RuleResult, RuleStatus};
pub use policy::{FailureAction, Policy};
pub use request::{AdmissionRequest, Operation, UserInfo};
