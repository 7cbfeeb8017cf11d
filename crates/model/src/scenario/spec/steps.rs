//! What happens during a drill: the steps, the faults they inject, and the
//! conditions a wait holds out for.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cluster::{DurationRange, TaintEffect};
use crate::duration::Duration;
use crate::scenario::located::Located;

/// One step of a drill. Exactly one of the action fields is set.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StepSpec {
    /// What this step is for, as the report names it.
    #[serde(default)]
    pub name: Option<String>,
    /// Go/no-go guards before a destructive fault; a no-go stops the drill.
    #[serde(default)]
    pub preflight: Option<PreflightStep>,
    /// Inject a fault.
    #[serde(default)]
    pub fault: Option<Located<Fault>>,
    /// Change a workload's replica count (load arriving or leaving).
    #[serde(default)]
    pub scale: Option<ScaleStep>,
    /// Change a Deployment's pod template (a new image): its pods are
    /// replaced as its strategy (`maxSurge`, `maxUnavailable`) allows.
    #[serde(default)]
    pub rollout: Option<RolloutStep>,
    /// Let time pass, or wait for a condition.
    #[serde(default)]
    pub wait: Option<WaitStep>,
    /// Add a taint to a node (`kubectl taint node N key=value:Effect`). A
    /// `NoExecute` taint evicts the pods that do not tolerate it at once and
    /// those that tolerate it with `tolerationSeconds` that much later.
    #[serde(default)]
    pub taint: Option<TaintStep>,
    /// Remove a node's taints of a key (`kubectl taint node N key:Effect-`);
    /// evictions the taint had scheduled are cancelled.
    #[serde(default)]
    pub untaint: Option<UntaintStep>,
    /// Mark a node unschedulable (`spec.unschedulable`); its pods stay.
    #[serde(default)]
    pub cordon: Option<NodeStep>,
    /// Make a cordoned node schedulable again.
    #[serde(default)]
    pub uncordon: Option<NodeStep>,
    /// Set or remove node labels. Later scheduling sees them; pods already
    /// running stay (`IgnoredDuringExecution`).
    #[serde(default)]
    pub label: Option<MetadataStep>,
    /// Set or remove node annotations.
    #[serde(default)]
    pub annotate: Option<MetadataStep>,
    /// Evict one pod of a workload through the Eviction API: refused (a
    /// 429) when a disruption budget allows no disruption, and the drill
    /// goes on.
    #[serde(default)]
    pub evict: Option<EvictStep>,
    /// Delete the Node object only (`kubectl delete node`): the server and
    /// its kubelet keep running, but a registered kubelet does not register
    /// again, so the node stays gone and the pod garbage collector deletes
    /// its pods.
    #[serde(default)]
    pub delete_node_object: Option<NodeStep>,
    /// Change a PodDisruptionBudget of the drill (`namespace/name`): its
    /// `minAvailable` or `maxUnavailable` is replaced from this instant, and
    /// the disruption controller judges later evictions by the new budget.
    #[serde(default)]
    pub pdb: Option<PdbStep>,
    /// Apply a manifest file at this instant (`kubectl apply --server-side
    /// -f FILE`): its objects are created, or a workload of the drill
    /// changes its replicas, and controllers and the scheduler react.
    #[serde(default)]
    pub apply: Option<ApplyStep>,
    /// Delete one object of the drill (`kubectl delete KIND NAME -n NS`):
    /// a workload's pods go with it (background propagation), each with its
    /// termination grace period.
    #[serde(default)]
    pub delete: Option<DeleteStep>,
}

/// A manifest file applied mid-drill.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApplyStep {
    /// A file of Kubernetes YAML (multi-document, as `kustomize build`
    /// prints it), relative to the drill file, as under `workloads:`.
    pub path: Located<std::path::PathBuf>,
    /// Values for the file's Flux post-build variables (`${var}`,
    /// `${var:=default}`, …), as under `workloads:`: what a Flux
    /// Kustomization applying it would substitute.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub substitute: BTreeMap<String, String>,
    /// ConfigMap and Secret files with more values, as
    /// `spec.postBuild.substituteFrom` names them; `substitute:` wins over
    /// them, and a later file over an earlier one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub substitute_from: Vec<super::SubstituteFrom>,
}

/// One object deleted mid-drill, named as `kubectl delete` names it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DeleteStep {
    /// The object's kind: `Deployment`, `StatefulSet`, `DaemonSet`,
    /// `ReplicaSet`, `Job`, `CronJob`, `Pod` or `PodDisruptionBudget`.
    pub kind: Located<String>,
    /// Its namespace; `default` when unset, as `kubectl` takes it.
    #[serde(default)]
    pub namespace: Option<Located<String>>,
    /// Its name: an object the drill deploys, or one an earlier `apply`
    /// step created.
    pub name: Located<String>,
}

/// A disruption budget's new bound. Exactly one of `minAvailable` and
/// `maxUnavailable` is set, as the API server requires of a
/// PodDisruptionBudget (policy/v1 validation).
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PdbStep {
    /// The budget, as `namespace/name`: one of the drill's workloads.
    pub name: Located<String>,
    /// Pods of the selection that must stay available: a count or `"N%"`.
    #[serde(default)]
    pub min_available: Option<Located<IntOrPercent>>,
    /// Pods of the selection that may be unavailable: a count or `"N%"`.
    #[serde(default)]
    pub max_unavailable: Option<Located<IntOrPercent>>,
}

/// A count (an integer >= 0) or a percentage (`"0%"` to `"100%"`), as a
/// budget's `minAvailable` and `maxUnavailable` take. Its own
/// deserializer, not `untagged`: an untagged enum's failure says only
/// "did not match any variant", where this says what was wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOrPercent {
    Int(u32),
    Percent(u8),
}

impl IntOrPercent {
    /// As the API takes it (`IntOrString`).
    pub fn to_int_or_string(self) -> k8s_openapi::apimachinery::pkg::util::intstr::IntOrString {
        use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
        match self {
            // A count beyond i32 is refused when read, so this is exact.
            IntOrPercent::Int(n) => IntOrString::Int(i32::try_from(n).unwrap_or(i32::MAX)),
            IntOrPercent::Percent(p) => IntOrString::String(format!("{p}%")),
        }
    }
}

impl std::fmt::Display for IntOrPercent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IntOrPercent::Int(n) => write!(f, "{n}"),
            IntOrPercent::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl Serialize for IntOrPercent {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrPercent::Int(n) => serializer.serialize_u32(*n),
            IntOrPercent::Percent(_) => serializer.collect_str(self),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrPercent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        const EXPECTED: &str = "an integer >= 0 or a percentage from \"0%\" to \"100%\"";
        impl serde::de::Visitor<'_> for Visitor {
            type Value = IntOrPercent;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(EXPECTED)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<IntOrPercent, E> {
                // The API field is an int32.
                match u32::try_from(v) {
                    Ok(n) if i32::try_from(n).is_ok() => Ok(IntOrPercent::Int(n)),
                    _ => Err(E::custom(format!(
                        "{v} is beyond an int32; expected {EXPECTED}"
                    ))),
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<IntOrPercent, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::custom(format!(
                        "{v} is negative; the API server refuses a negative budget; expected {EXPECTED}"
                    ))),
                }
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IntOrPercent, E> {
                let percent = v
                    .strip_suffix('%')
                    .and_then(|n| n.parse::<u8>().ok())
                    .filter(|p| *p <= 100);
                match percent {
                    Some(p) => Ok(IntOrPercent::Percent(p)),
                    None => Err(E::custom(format!("`{v}` is not {EXPECTED}"))),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl JsonSchema for IntOrPercent {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "IntOrPercent".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A count (an integer >= 0) or a percentage from \"0%\" to \"100%\".",
            "oneOf": [
                {"type": "integer", "minimum": 0, "maximum": 2147483647},
                {"type": "string", "pattern": "^(100|[1-9]?[0-9])%$"}
            ]
        })
    }
}

/// A step aimed at one node.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeStep {
    /// Which node, as a fault names it.
    pub target: Located<Target>,
}

/// A taint added to a node.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaintStep {
    /// Which node, as a fault names it.
    pub target: Located<Target>,
    /// The taint's key (a qualified name).
    pub key: Located<String>,
    /// The taint's value (empty when unset).
    #[serde(default)]
    pub value: Option<Located<String>>,
    /// What the taint does to pods that do not tolerate it.
    pub effect: TaintEffect,
}

/// Taints removed from a node.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UntaintStep {
    /// Which node, as a fault names it.
    pub target: Located<Target>,
    /// The key of the taints to remove.
    pub key: Located<String>,
    /// Only the taint of this effect (every effect of the key when unset).
    #[serde(default)]
    pub effect: Option<TaintEffect>,
}

/// Labels or annotations set on and removed from a node.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MetadataStep {
    /// Which node, as a fault names it.
    pub target: Located<Target>,
    /// Keys set to these values (added or overwritten).
    #[serde(default)]
    pub set: Located<BTreeMap<String, String>>,
    /// Keys removed (a key that is not there is no error, as with kubectl).
    #[serde(default)]
    pub remove: Located<Vec<String>>,
}

/// One pod evicted through the Eviction API.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EvictStep {
    /// The workload, as `namespace/Kind/name`; one of its running pods,
    /// drawn from the drill's seed, is evicted.
    pub workload: Located<String>,
}

/// The control-plane recreate preflight, judged on the simulated cluster.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PreflightStep {
    /// The control plane about to be recreated (the endpoint holder by default).
    #[serde(default)]
    pub target: Option<Located<Target>>,
    /// The backup schedule whose newest backup must be recent and complete.
    #[serde(default)]
    pub schedule: Option<Located<String>>,
    /// The newest backup must have finished less than this long ago (26h).
    #[serde(default)]
    pub max_backup_age: Option<Duration>,
}

/// A fault to inject.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Fault {
    /// The server is deleted at the cloud; the Node object goes with it.
    DeleteNode(NodeFault),
    /// The node stops heartbeating; its server and Node object stay.
    CrashNode(NodeFault),
    /// A lost static node is provisioned again under its name (`ksail
    /// cluster update` re-running provisioning for missing members): the
    /// node is Ready again and the pods stuck on it terminate.
    ReplaceNode(NodeFault),
    /// A control plane is removed from etcd, deleted and replaced by a fresh
    /// node that joins as a learner and is promoted.
    RecreateControlPlane(NodeFault),
    /// A pool disappears from the autoscaler's configuration while its
    /// nodes keep running.
    RemovePool(PoolFault),
    /// A rolling upgrade: static workers one at a time, then control planes,
    /// autoscaler nodes cordoned, drained and deleted.
    RollingUpgrade(UpgradeFault),
    /// Every node and every volume is lost; recovery follows `recovery`.
    FullRebuild(RebuildFault),
    /// One namespace's objects are lost and restored from a backup of it
    /// taken at the fault: what writers in it acknowledged after the
    /// backup captured them is lost, the window the `rpo:` assertion of
    /// the schedule judges.
    RestoreNamespace(RestoreNamespaceFault),
}

/// A fault aimed at one node.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NodeFault {
    /// Which node.
    pub target: Located<Target>,
    /// Drain the node through the eviction API first.
    #[serde(default)]
    pub drain: bool,
    /// For a recreate: how long the replacement takes to boot.
    #[serde(default)]
    pub boot_delay: Option<Located<DurationRange>>,
}

/// How a fault picks its node.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Target {
    /// A node by name.
    Node(String),
    /// A random node of the pool (`control-plane` for the control planes),
    /// chosen by the drill's seed.
    RandomNodeOf(String),
    /// The node the cluster autoscaler would remove next from the pool.
    AutoscalerPick(String),
    /// The control plane holding the stable endpoint.
    EndpointHolder,
    /// A control plane other than the endpoint holder.
    OtherControlPlane,
}

/// A fault aimed at a pool.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PoolFault {
    /// The pool's name.
    pub pool: Located<String>,
}

/// A rolling upgrade.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpgradeFault {
    /// How long a node takes to reboot into the new version (90s).
    #[serde(default)]
    pub reboot: Option<Duration>,
    /// A drain that has not finished after this long fails the upgrade (10m).
    #[serde(default)]
    pub drain_timeout: Option<Duration>,
}

/// A full rebuild.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RebuildFault {
    /// The backup schedule restored from.
    #[serde(default)]
    pub restore_from: Option<Located<String>>,
}

/// A namespace lost and restored from a backup of it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreNamespaceFault {
    /// The namespace: one the drill's manifests put objects into.
    pub namespace: Located<String>,
    /// The backup schedule the backup is taken under (one of
    /// `cluster.backups`; its `duration` is how long the backup runs while
    /// the writers keep writing).
    pub schedule: Located<String>,
}

/// A change of a workload's replica count.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScaleStep {
    /// The workload, as `namespace/Kind/name` (e.g. `load/Deployment/burst`).
    pub workload: Located<String>,
    /// The new replica count.
    pub replicas: u32,
}

/// A change of a Deployment's pod template, as `kubectl set image` makes it.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RolloutStep {
    /// The Deployment, as `namespace/Deployment/name` (e.g. `apps/Deployment/web`).
    pub workload: Located<String>,
    /// The new image.
    pub image: String,
    /// The container whose image changes (every container when unset).
    #[serde(default)]
    pub container: Option<String>,
}

/// Time passing, or a wait for a condition.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WaitStep {
    /// Let exactly this much time pass.
    #[serde(default, rename = "for")]
    pub duration: Option<Duration>,
    /// Wait until this holds.
    #[serde(default)]
    pub until: Option<Located<Condition>>,
    /// Give up waiting after this long; the drill fails (required with `until`).
    #[serde(default)]
    pub timeout: Option<Duration>,
}

/// A condition on the cluster's state.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Condition {
    /// Every workload has all its replicas ready.
    AllWorkloadsReady,
    /// One workload (`namespace/Kind/name`) has all its replicas ready.
    WorkloadReady(String),
    /// The pool has exactly this many Ready nodes.
    PoolSize(PoolSize),
    /// etcd has this many voting members and no learners.
    EtcdVoters(u32),
}

/// A pool's size.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PoolSize {
    /// The pool's name.
    pub pool: String,
    /// Ready nodes.
    pub nodes: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::from_yaml;

    #[test]
    fn a_fault_names_its_kind_and_its_target() {
        let step: StepSpec = from_yaml(
            "name: lose a worker\nfault:\n  deleteNode: {target: {randomNodeOf: baseline}, drain: true}\n",
        )
        .unwrap();
        let fault = step.fault.unwrap();
        assert_eq!(fault.at.line, 3);
        let Fault::DeleteNode(node) = &*fault else {
            panic!("{fault:?}")
        };
        assert_eq!(*node.target, Target::RandomNodeOf("baseline".to_owned()));
        assert!(node.drain);
        let holder: Target = from_yaml("endpointHolder").unwrap();
        assert_eq!(holder, Target::EndpointHolder);
    }

    #[test]
    fn a_wait_is_for_a_time_or_until_a_condition() {
        let wait: WaitStep = from_yaml("for: 90s").unwrap();
        assert_eq!(wait.duration, Some(Duration::from_secs(90)));
        let wait: WaitStep =
            from_yaml("until: {poolSize: {pool: burst, nodes: 2}}\ntimeout: 10m\n").unwrap();
        assert_eq!(
            *wait.until.unwrap(),
            Condition::PoolSize(PoolSize {
                pool: "burst".to_owned(),
                nodes: 2
            })
        );
        assert_eq!(wait.timeout, Some(Duration::from_mins(10)));
        assert!(from_yaml::<WaitStep>("duration: 90s").is_err());
    }

    #[test]
    fn a_budget_bound_is_a_count_or_a_percentage_and_nothing_else() {
        let min: PdbStep = from_yaml("name: a/b\nminAvailable: 3\n").unwrap();
        assert_eq!(
            min.min_available.map(|v| v.value),
            Some(IntOrPercent::Int(3))
        );
        let max: PdbStep = from_yaml("name: a/b\nmaxUnavailable: \"25%\"\n").unwrap();
        assert_eq!(
            max.max_unavailable.map(|v| v.value),
            Some(IntOrPercent::Percent(25))
        );
        for bad in [
            "-1",
            "\"101%\"",
            "\"3\"",
            "\"%\"",
            "\"-5%\"",
            "2.5",
            "3000000000",
        ] {
            assert!(
                from_yaml::<PdbStep>(&format!("name: a/b\nminAvailable: {bad}\n")).is_err(),
                "{bad}"
            );
        }
        assert!(from_yaml::<PdbStep>("name: a/b\nminAvailble: 1\n").is_err());
    }

    #[test]
    fn an_unknown_fault_is_refused() {
        assert!(from_yaml::<Fault>("unplugNode: {target: {node: a}}").is_err());
        assert!(from_yaml::<NodeFault>("target: {node: a}\ndrian: true\n").is_err());
    }
}
