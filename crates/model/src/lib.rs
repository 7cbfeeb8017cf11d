//! The drill as data, and the vocabulary every layer above shares.
//!
//! A drill file is parsed and checked in [`scenario`] (with file, line and
//! column for every mistake), resolved against its cluster in [`topology`]
//! and lowered once into the typed [`drill::Drill`] the rest of the bench
//! runs. Beside it: the Kubernetes rules that are pure functions of an object
//! ([`k8s`]), the manifests a drill deploys, seeded randomness, durations,
//! well-known labels, the `/bench/v1` control protocol and the exit codes.
//! Nothing here runs a cluster.

pub mod bench_protocol;
pub mod budget;
pub mod cluster_workloads;
pub mod drill;
pub use snapshot_drill::Captured;
pub mod duration;
pub mod embedded;
pub mod error_text;
pub mod exit;
mod fault_targets;
mod field_locate;
pub mod flux_substitute;
pub mod flux_values;
pub mod interrupt;
pub mod k8s;
pub mod labels;
pub mod latency;
pub mod manifest;
pub mod manifest_rules;
pub mod name_pattern;
pub mod object_rules;
pub mod pod_spec_rules;
pub mod policy_guard;
pub mod priority_class_rules;
pub mod rng;
pub mod scenario;
pub mod snapshot;
mod snapshot_drill;
pub mod snapshot_workloads;
pub mod suggest;
#[doc(hidden)]
pub mod test_support;
pub mod topology;
pub mod workload_ref;
