//! The verdicts a drill asks for, judged over its timeline, and the negative
//! controls that prove a passing verdict could have failed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::workloads::{NodeRequirement, PodMatch};
use crate::duration::Duration;
use crate::scenario::located::Located;

/// A verdict judged over the drill's timeline. Exactly one kind is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AssertionSpec {
    /// Assertion name, as reports and negative controls refer to it.
    pub name: Located<String>,
    /// Recovery time: how long after the fault the subject was whole again.
    #[serde(default)]
    pub rto: Option<RtoAssertion>,
    /// Recovery point: the data-loss window after a restore.
    #[serde(default)]
    pub rpo: Option<RpoAssertion>,
    /// Share of probes that found the subject available.
    #[serde(default)]
    pub availability: Option<AvailabilityAssertion>,
    /// Selected pods only ever ran on nodes matching a requirement,
    /// judged at every event, not only at the end.
    #[serde(default)]
    pub placement: Option<PlacementAssertion>,
    /// etcd never lost quorum.
    #[serde(default)]
    pub quorum: Option<QuorumAssertion>,
    /// No eviction took a PodDisruptionBudget below its budget.
    #[serde(default)]
    pub pdb_respected: Option<Empty>,
    /// Pods outside a guard still burst onto autoscaler pools when the
    /// baseline is full.
    #[serde(default)]
    pub burst_unchanged: Option<BurstAssertion>,
    /// No single-attach volume stayed attached to a departed node.
    #[serde(default)]
    pub no_stranded_volumes: Option<Empty>,
    /// The stable endpoint's address never changed (no credential refresh).
    #[serde(default)]
    pub endpoint_unchanged: Option<Empty>,
    /// A recreated control plane joined as a learner and was promoted.
    #[serde(default)]
    pub member_promoted: Option<Empty>,
    /// Every node belongs to a pool the autoscaler manages or a static pool.
    #[serde(default)]
    pub no_stranded_nodes: Option<Empty>,
    /// A negative control: proof that a guard or an assertion bites.
    #[serde(default)]
    pub negative_control: Option<NegativeControl>,
}

/// A marker for assertions that take no parameters: write `{}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// What an RTO is measured on.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Subject {
    /// The API through the stable endpoint.
    Api,
    /// The control plane whole: quorum, every member voting, every control
    /// plane Ready, the API up through the endpoint.
    ControlPlane,
    /// Every workload with all replicas ready.
    AllWorkloads,
    /// One workload, as `namespace/Kind/name`.
    Workload(String),
    /// The pods a selection matches.
    Pods(PodMatch),
}

/// An RTO bound.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RtoAssertion {
    /// What must recover.
    pub of: Located<Subject>,
    /// The bound.
    pub within: Duration,
    /// A bound on the automated part of the recovery runbook alone.
    #[serde(default)]
    pub automated_within: Option<Duration>,
}

/// An RPO bound.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RpoAssertion {
    /// The backup schedule restored from.
    pub schedule: Located<String>,
    /// The bound on the data-loss window.
    pub within: Duration,
}

/// An availability bound.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AvailabilityAssertion {
    /// What is probed.
    pub of: Located<Subject>,
    /// Lowest acceptable share of successful probes, between 0 and 1.
    pub at_least: Located<f64>,
    /// For a workload: it counts as available while at least this many
    /// replicas are Ready (all of them when fewer are desired), the floor
    /// its clients need — a PodDisruptionBudget's `minAvailable`, a Raft
    /// quorum — instead of every desired replica.
    #[serde(default)]
    pub min_ready: Option<Located<u32>>,
}

/// A placement rule.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlacementAssertion {
    /// Which pods.
    pub pods: PodMatch,
    /// Every node they ever run on must satisfy all of these.
    pub nodes: Vec<Located<NodeRequirement>>,
}

/// A quorum rule.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct QuorumAssertion {
    /// Longest acceptable stretch without quorum (zero by default: never lost).
    #[serde(default)]
    pub max_loss: Option<Duration>,
}

/// Burst must stay possible for pods outside a guard.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BurstAssertion {
    /// The pods that must still burst.
    pub pods: PodMatch,
    /// The pools they must reach.
    pub pools: Vec<Located<String>>,
}

/// A negative control. Exactly one form is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NegativeControl {
    /// Admission: a planted object that breaks a guard must be refused.
    #[serde(default)]
    pub admission: Option<AdmissionControl>,
    /// Ablation: the same drill and seed with a guard removed or weakened
    /// must fail the named assertions.
    #[serde(default)]
    pub ablation: Option<AblationControl>,
    /// Weakening: the same drill and seed with one of the procedure's own
    /// safeguards taken away (a wait, the endpoint's failover, the stable
    /// address, a healthy start) must fail the named assertions, or be
    /// refused by the preflight.
    #[serde(default)]
    pub weaken: Option<WeakenControl>,
}

/// A weakening negative control. Exactly one of `mustFail` and
/// `preflightRefuses` is set.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WeakenControl {
    /// What is taken away.
    pub change: Located<DrillChange>,
    /// Assertions that must fail in the weakened run.
    #[serde(default)]
    pub must_fail: Vec<Located<String>>,
    /// The preflight guard that must say no-go, so the weakened drill
    /// refuses to start and injects no fault.
    #[serde(default)]
    pub preflight_refuses: Option<Located<PreflightGuard>>,
}

/// A safeguard of a control-plane procedure, taken away.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum DrillChange {
    /// Do not wait for the recreated member's promotion: another control
    /// plane goes down (crashes) right after the recreate.
    SecondFaultBeforePromotion,
    /// The floating endpoint stays on its holder: no failover.
    EndpointWithoutFailover,
    /// Clients' kubeconfig names the holder node's own address instead of
    /// the stable endpoint.
    KubeconfigOnNode,
    /// The cluster starts with this many control planes (and voters).
    StartWithControlPlanes(u32),
    /// The cluster starts with a learner: a membership change in progress.
    StartWithLearner,
    /// A lost node is never replaced: every `replaceNode` step is dropped.
    NoNodeReplacement,
    /// The named steps of the procedure are left out (a remedy the
    /// runbook prescribes, never carried out). At least one fault must
    /// remain: a control that takes every fault away proves nothing.
    SkipSteps(Vec<String>),
    /// The newest backup of every schedule did not complete
    /// (`PartiallyFailed`): a restore falls back to the one before.
    NewestBackupFailed,
    /// Every backup takes this long while the writers keep writing (a
    /// namespace backed up with the full backup instead of alone).
    BackupTakes(Duration),
    /// Drains delete pods directly instead of through the eviction API
    /// (`kubectl drain --disable-eviction`): no PodDisruptionBudget is
    /// asked.
    DrainWithoutEviction,
    /// A rolling upgrade takes the next node as soon as the last one is
    /// back and uncordoned, without waiting for every workload to be
    /// Ready again.
    UpgradeWithoutSettling,
    /// Every replica of one workload pinned to one node by a `nodeSelector`
    /// on `kubernetes.io/hostname`: the replicas no longer spread, so a
    /// fault on that node takes the whole workload, and its replacements
    /// cannot run anywhere else until the node is back.
    PinWorkload(PinWorkload),
    /// These workloads (`namespace/Kind/name`) carry Velero's
    /// `velero.io/exclude-from-backup: "true"` label: every backup leaves
    /// them out, so a restore brings their namespace back without them.
    ExcludedFromBackup(Vec<String>),
    /// Several safeguards taken away at once, in order: for a floor that
    /// two safeguards hold each on its own (a PodDisruptionBudget and the
    /// replicas' spread), so that no single weakening can break it.
    All(Vec<DrillChange>),
}

impl DrillChange {
    /// The single changes it makes, in order.
    pub fn parts(&self) -> Vec<&DrillChange> {
        match self {
            DrillChange::All(changes) => changes.iter().flat_map(DrillChange::parts).collect(),
            change => vec![change],
        }
    }
}

/// The workload a [`DrillChange::PinWorkload`] pins, and where.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PinWorkload {
    /// `namespace/Kind/name`, a workload the drill deploys.
    pub workload: String,
    /// A static node of the cluster.
    pub node: String,
}

/// A guard of the control-plane preflight, as its `reason=` lines name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum PreflightGuard {
    Target,
    Quorum,
    Backup,
}

/// An admission negative control.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AdmissionControl {
    /// The guard that must refuse the object (a policy guard is named by
    /// its policy's `metadata.name`).
    pub guard: Located<String>,
    /// For a policy guard: the rule that must be among the refusers. The
    /// object always goes through every policy (every guard) of the drill,
    /// mutations first, as a cluster's admission chain takes it, so the
    /// simulator judges what a real cluster's dry run judges.
    #[serde(default)]
    pub rule: Option<Located<String>>,
    /// The object submitted (a Pod or a pod-template workload).
    pub object: Located<serde_json::Value>,
}

/// An ablation negative control.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AblationControl {
    /// The guard that is weakened.
    pub guard: Located<String>,
    /// How it is weakened.
    pub change: Located<GuardChange>,
    /// Assertions that must fail once the guard is weakened.
    pub must_fail: Vec<Located<String>>,
}

/// A way to weaken a guard.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum GuardChange {
    /// Remove the guard.
    Remove,
    /// Replace its requirement (e.g. with `ksail.io/autoscaled DoesNotExist`).
    ReplaceRequirement(NodeRequirement),
    /// Require the same key with other values (e.g. `["false"]`).
    SetValues(Vec<String>),
    /// Add a second, unlabelled node-selector term next to the guarded one,
    /// which ORs the requirement away.
    AddUnlabelledTerm,
    /// For a policy guard: remove the policy.
    RemovePolicy,
    /// For a policy guard: remove the named rule from the policy.
    RemoveRule(String),
    /// For a policy guard: apply a JSON patch (RFC 6902) to the policy
    /// document, e.g. to swap `In ["true"]` for `DoesNotExist`.
    Patch(Vec<serde_json::Value>),
}

impl GuardChange {
    /// Whether the change is written for a Kyverno policy guard rather than
    /// the shorthand.
    pub fn is_policy_change(&self) -> bool {
        matches!(
            self,
            GuardChange::RemovePolicy | GuardChange::RemoveRule(_) | GuardChange::Patch(_)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::from_yaml;

    #[test]
    fn an_rto_reads_its_subject_and_bounds() {
        let a: AssertionSpec =
            from_yaml("name: api back\nrto: {of: api, within: 15m, automatedWithin: 5m}\n")
                .unwrap();
        let rto = a.rto.unwrap();
        assert_eq!(*rto.of, Subject::Api);
        assert_eq!(rto.within, Duration::from_mins(15));
        assert_eq!(rto.automated_within, Some(Duration::from_mins(5)));
        assert!(a.rpo.is_none() && a.placement.is_none());
    }

    #[test]
    fn a_parameterless_assertion_is_written_as_an_empty_map() {
        let a: AssertionSpec = from_yaml("name: budgets\npdbRespected: {}\n").unwrap();
        assert_eq!(a.pdb_respected, Some(Empty {}));
        assert!(
            from_yaml::<AssertionSpec>("name: budgets\npdbRespected: {strict: true}\n").is_err()
        );
    }

    #[test]
    fn an_ablation_names_the_change_and_what_must_fail() {
        let control: NegativeControl = from_yaml(
            "ablation:\n  guard: hcloud-off-autoscalers\n  change: {setValues: [\"false\"]}\n  mustFail: [placement]\n",
        )
        .unwrap();
        let ablation = control.ablation.unwrap();
        assert_eq!(
            *ablation.change,
            GuardChange::SetValues(vec!["false".to_owned()])
        );
        assert_eq!(ablation.must_fail.len(), 1);
        assert_eq!(*ablation.must_fail[0], "placement");
        assert!(control.admission.is_none());
    }
}
