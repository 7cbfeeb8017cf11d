//! The drill language as written: the serde types of a drill file.
//!
//! Every struct refuses unknown fields, so a typo is an error with a line and
//! a column rather than a setting silently ignored. Choices between forms are
//! either externally tagged enums (`target: {node: prod-worker-2}`) or a set
//! of optional fields of which validation demands exactly one, never
//! `untagged` or `flatten`, whose error messages name nothing useful.
//! Fields whose meaning is checked after parsing (names that refer to other
//! parts of the drill, bounds) are [`Located`], so those checks can point at
//! the text too.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::located::Located;

mod assertions;
mod cluster;
mod recovery;
mod steps;
mod workloads;

pub use assertions::{
    AblationControl, AdmissionControl, AssertionSpec, AvailabilityAssertion, BurstAssertion,
    DrillChange, Empty, GuardChange, NegativeControl, PinWorkload, PlacementAssertion,
    PreflightGuard, QuorumAssertion, RpoAssertion, RtoAssertion, Subject, WeakenControl,
};
pub use cluster::{
    AttachModel, AutoscaledRange, AutoscalerSpec, BackupPhase, BackupSpec, BindingMode,
    CapacitySpec, ClusterSpec, ControlPlaneSpec, DurationRange, EndpointSpec, Expander,
    LatenciesSpec, PoolSpec, Release, StorageClassSpec, TaintEffect, TaintSpec,
};
pub use recovery::{DurationDistribution, RecoverySpec, RecoveryStep, Triangular};
pub use steps::{
    ApplyStep, Condition, DeleteStep, EvictStep, Fault, IntOrPercent, MetadataStep, NodeFault,
    NodeStep, PdbStep, PoolFault, PoolSize, PreflightStep, RebuildFault, RestoreNamespaceFault,
    RolloutStep, ScaleStep, StepSpec, TaintStep, Target, UntaintStep, UpgradeFault, WaitStep,
};
pub use workloads::{
    FromCluster, GuardAction, GuardEntry, GuardSpec, NodeOperator, NodeRequirement, PodMatch,
    PolicyRef, Requirement, SubstituteFrom, WorkloadSource,
};

/// The `apiVersion` every drill file declares.
pub const API_VERSION: &str = "drillbench.dev/v1alpha1";
/// The `kind` every drill file declares.
pub const KIND: &str = "Drill";

/// A drill file: a cluster, what runs on it, the faults, and the verdicts.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "drillbench Drill")]
pub struct DrillSpec {
    /// Always `drillbench.dev/v1alpha1`.
    #[schemars(extend("const" = API_VERSION))]
    pub api_version: Located<String>,
    /// Always `Drill`.
    #[schemars(extend("const" = KIND))]
    pub kind: Located<String>,
    /// The drill's name and what it rehearses.
    pub metadata: Metadata,
    /// The cluster the drill builds.
    pub cluster: ClusterSpec,
    /// Kubernetes manifests deployed before the steps run.
    #[serde(default)]
    pub workloads: Vec<Located<WorkloadSource>>,
    /// Admission rules the cluster enforces on every pod: the bench's
    /// shorthand guards, or Kyverno policies named by `policy:`.
    #[serde(default, rename = "guards")]
    pub guard_entries: Vec<Located<GuardEntry>>,
    /// The shorthand guards of `guards:`, complete ones only, filled in
    /// when the file is parsed (validation reports the others).
    #[serde(skip)]
    #[schemars(skip)]
    pub guards: Vec<Located<GuardSpec>>,
    /// What happens, in order: preflight checks, faults, load changes, waits.
    #[serde(default)]
    pub steps: Vec<Located<StepSpec>>,
    /// The verdicts: each is judged over the whole timeline of the drill.
    #[serde(default)]
    pub assertions: Vec<Located<AssertionSpec>>,
    /// A recovery runbook, as a graph of steps with duration distributions.
    #[serde(default)]
    pub recovery: Option<RecoverySpec>,
    /// Limits on the drill's size (nodes, pods, objects, drill time, steps,
    /// recovery attempts), each raising or lowering its default.
    #[serde(default)]
    pub budgets: Option<crate::budget::BudgetSpec>,
}

/// Identity of a drill.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metadata {
    /// Short name, used for `bench run NAME` and the report folder.
    pub name: Located<String>,
    /// One paragraph: what the drill rehearses and why.
    #[serde(default)]
    pub description: Option<String>,
}

/// Reads one value of the drill language from YAML as a drill file is read,
/// for the tests of each part.
#[cfg(test)]
fn from_yaml<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_saphyr::from_str_with_options(text, super::parse::yaml_options())
        .map_err(|e| super::parse::yaml_message(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_header_is_camel_case_and_closed() {
        let drill: DrillSpec = from_yaml(
            "apiVersion: drillbench.dev/v1alpha1\nkind: Drill\nmetadata: {name: d}\ncluster: {}\n",
        )
        .unwrap();
        assert_eq!(*drill.api_version, API_VERSION);
        assert_eq!(*drill.kind, KIND);
        assert_eq!(drill.api_version.at.line, 1);
        assert_eq!(drill.metadata.name.at.line, 3);
        assert!(drill.steps.is_empty() && drill.recovery.is_none());
        let err = from_yaml::<DrillSpec>(
            "apiVersion: x\nkind: Drill\nmetadata: {name: d}\ncluster: {}\nstep: []\n",
        )
        .unwrap_err();
        assert!(err.contains("step"), "{err}");
    }
}
