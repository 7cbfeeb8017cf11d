//! A step as the runner sees it: a label and exactly one action. The file
//! keeps one optional field per action (`- name: x` beside `fault: {…}`);
//! validation proves exactly one is set, and [`Step::lower`] turns it into
//! an enum, so the runner matches instead of probing options and a new
//! action is a compile error wherever it is not handled.

use std::collections::BTreeMap;
use std::fmt;

use super::located::Located;
use super::spec::{
    Condition, EvictStep, Fault, IntOrPercent, MetadataStep, PreflightStep, RolloutStep, ScaleStep,
    StepSpec, TaintEffect, Target,
};
use crate::duration::Duration;
use crate::manifest::Document;

/// A validated step.
#[derive(Debug, Clone)]
pub struct Step {
    /// As the report names it: the step's `name`, else `step N`.
    pub label: String,
    pub action: Action,
}

#[derive(Debug, Clone)]
pub enum Action {
    /// Go/no-go guards before a destructive fault; a no-go stops the drill.
    Preflight(PreflightStep),
    /// Inject a fault (kept with its place in the file).
    Fault(Located<Fault>),
    /// Change a workload's replica count.
    Scale(ScaleStep),
    /// Change a Deployment's pod template.
    Rollout(RolloutStep),
    /// Let drill time pass.
    Sleep(Duration),
    /// Wait for a condition, and stop the drill if it does not hold in time.
    WaitUntil {
        condition: Condition,
        timeout: Duration,
    },
    /// Change one node through the API (taints, cordon, labels, the Node
    /// object itself); the target is resolved when the step runs.
    Node {
        target: Located<Target>,
        change: NodeChange,
    },
    /// Evict one pod of a workload through the Eviction API.
    Evict(EvictStep),
    /// Replace a disruption budget's bound.
    Pdb(PdbChange),
    /// Apply a manifest file's objects, in the file's order.
    Apply(ApplyManifest),
    /// Delete one object of the drill.
    Delete(ObjectKey),
}

/// A manifest file an `apply` step applies: the file as the drill names
/// it, and its objects, read and checked when the drill is validated (so
/// a run never meets a file that is missing or an object the API server
/// would refuse).
#[derive(Debug, Clone)]
pub struct ApplyManifest {
    /// As written in the drill, relative to its folder.
    pub path: std::path::PathBuf,
    /// Its objects, in the file's order; filled in by [`Drill`] loading.
    ///
    /// [`Drill`]: crate::drill::Drill
    pub documents: Vec<Document>,
}

impl fmt::Display for ApplyManifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "apply {}", self.path.display())
    }
}

/// The kinds a `delete` step may delete: those whose deletion the
/// simulator models (a controller and its pods, a bare pod, a budget).
pub const DELETABLE_KINDS: [&str; 8] = [
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "Job",
    "CronJob",
    "Pod",
    "PodDisruptionBudget",
];

/// One namespaced object, as a `delete` step names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectKey {
    /// One of [`DELETABLE_KINDS`].
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    /// The `apiVersion` its kind is served at, for a request that must name
    /// its resource; `None` for a kind a `delete` step cannot name.
    pub fn api_version(&self) -> Option<&'static str> {
        Some(match self.kind.as_str() {
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet" => "apps/v1",
            "Job" | "CronJob" => "batch/v1",
            "Pod" => "v1",
            "PodDisruptionBudget" => "policy/v1",
            _ => return None,
        })
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "delete {} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// A disruption budget's new bound, as a merge patch of its spec writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct PdbChange {
    pub namespace: String,
    pub name: String,
    pub bound: PdbBound,
}

/// Exactly one of the two fields a budget may set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PdbBound {
    MinAvailable(IntOrPercent),
    MaxUnavailable(IntOrPercent),
}

impl PdbBound {
    /// The JSON merge patch of the budget's spec: the other field is set to
    /// null so the patched budget has exactly one, as validation requires.
    pub fn merge_patch(&self) -> serde_json::Value {
        let (min, max) = match self {
            PdbBound::MinAvailable(v) => (
                serde_json::json!(v.to_int_or_string()),
                serde_json::Value::Null,
            ),
            PdbBound::MaxUnavailable(v) => (
                serde_json::Value::Null,
                serde_json::json!(v.to_int_or_string()),
            ),
        };
        serde_json::json!({"spec": {"minAvailable": min, "maxUnavailable": max}})
    }
}

impl fmt::Display for PdbChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (field, value) = match self.bound {
            PdbBound::MinAvailable(v) => ("minAvailable", v),
            PdbBound::MaxUnavailable(v) => ("maxUnavailable", v),
        };
        write!(
            f,
            "set {field} {value} on PodDisruptionBudget {}/{}",
            self.namespace, self.name
        )
    }
}

impl Action {
    /// Whether the step changes the cluster (a read-only cluster refuses it).
    pub fn changes_the_cluster(&self) -> bool {
        matches!(
            self,
            Action::Fault(_)
                | Action::Scale(_)
                | Action::Rollout(_)
                | Action::Node { .. }
                | Action::Evict(_)
                | Action::Pdb(_)
                | Action::Apply(_)
                | Action::Delete(_)
        )
    }
}

/// What a node step changes, as the API would: each is one write to the
/// Node object (or its deletion).
#[derive(Debug, Clone, PartialEq)]
pub enum NodeChange {
    /// Add a taint; one of the same key and effect is replaced (`kubectl
    /// taint --overwrite`).
    Taint {
        key: String,
        /// Empty when unset.
        value: String,
        effect: TaintEffect,
    },
    /// Remove the taints of a key, of one effect or of every effect.
    Untaint {
        key: String,
        effect: Option<TaintEffect>,
    },
    /// `spec.unschedulable: true`.
    Cordon,
    /// `spec.unschedulable` cleared.
    Uncordon,
    /// Labels set and removed.
    Label {
        set: BTreeMap<String, String>,
        remove: Vec<String>,
    },
    /// Annotations set and removed.
    Annotate {
        set: BTreeMap<String, String>,
        remove: Vec<String>,
    },
    /// The Node object deleted; the server keeps running.
    DeleteObject,
}

impl NodeChange {
    /// Applies a label or annotation edit to a map: removals after sets,
    /// as `kubectl label k=v k-` would refuse and a drill cannot mean both.
    pub fn edit_map(
        map: &mut BTreeMap<String, String>,
        set: &BTreeMap<String, String>,
        remove: &[String],
    ) {
        map.extend(set.iter().map(|(k, v)| (k.clone(), v.clone())));
        for key in remove {
            map.remove(key);
        }
    }

    /// Whether a node's taint of this key and effect is one the change
    /// removes (an untaint) or replaces (a taint of the same key and effect).
    pub fn drops_taint(&self, key: &str, effect: &str) -> bool {
        match self {
            NodeChange::Taint {
                key: k, effect: e, ..
            } => k == key && e.as_str() == effect,
            NodeChange::Untaint { key: k, effect: e } => {
                k == key && e.is_none_or(|e| e.as_str() == effect)
            }
            _ => false,
        }
    }
}

impl fmt::Display for NodeChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = |set: &BTreeMap<String, String>, remove: &[String]| {
            set.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .chain(remove.iter().map(|k| format!("{k}-")))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            NodeChange::Taint { key, value, effect } if value.is_empty() => {
                write!(f, "taint {key}:{}", effect.as_str())
            }
            NodeChange::Taint { key, value, effect } => {
                write!(f, "taint {key}={value}:{}", effect.as_str())
            }
            NodeChange::Untaint {
                key,
                effect: Some(effect),
            } => write!(f, "untaint {key}:{}", effect.as_str()),
            NodeChange::Untaint { key, effect: None } => write!(f, "untaint {key}"),
            NodeChange::Cordon => f.write_str("cordon"),
            NodeChange::Uncordon => f.write_str("uncordon"),
            NodeChange::Label { set, remove } => write!(f, "label {}", keys(set, remove)),
            NodeChange::Annotate { set, remove } => write!(f, "annotate {}", keys(set, remove)),
            NodeChange::DeleteObject => f.write_str("delete the Node object"),
        }
    }
}

impl StepSpec {
    /// How many actions the written step sets. The destructuring is
    /// exhaustive, so a new action cannot be left out of the count.
    pub(crate) fn actions_set(&self) -> usize {
        let StepSpec {
            name: _,
            preflight,
            fault,
            scale,
            rollout,
            wait,
            taint,
            untaint,
            cordon,
            uncordon,
            label,
            annotate,
            evict,
            delete_node_object,
            pdb,
            apply,
            delete,
        } = self;
        [
            preflight.is_some(),
            fault.is_some(),
            scale.is_some(),
            rollout.is_some(),
            wait.is_some(),
            taint.is_some(),
            untaint.is_some(),
            cordon.is_some(),
            uncordon.is_some(),
            label.is_some(),
            annotate.is_some(),
            evict.is_some(),
            delete_node_object.is_some(),
            pdb.is_some(),
            apply.is_some(),
            delete.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }
}

impl StepSpec {
    /// The node step's target and change, if the step is one.
    fn node_change(&self) -> Option<(Located<Target>, NodeChange)> {
        let edit = |m: &MetadataStep| (m.set.value.clone(), m.remove.value.clone());
        if let Some(t) = &self.taint {
            let change = NodeChange::Taint {
                key: t.key.value.clone(),
                value: t
                    .value
                    .as_ref()
                    .map(|v| v.value.clone())
                    .unwrap_or_default(),
                effect: t.effect,
            };
            return Some((t.target.clone(), change));
        }
        if let Some(t) = &self.untaint {
            let change = NodeChange::Untaint {
                key: t.key.value.clone(),
                effect: t.effect,
            };
            return Some((t.target.clone(), change));
        }
        if let Some(m) = &self.label {
            let (set, remove) = edit(m);
            return Some((m.target.clone(), NodeChange::Label { set, remove }));
        }
        if let Some(m) = &self.annotate {
            let (set, remove) = edit(m);
            return Some((m.target.clone(), NodeChange::Annotate { set, remove }));
        }
        let (step, change) = if let Some(n) = &self.cordon {
            (n, NodeChange::Cordon)
        } else if let Some(n) = &self.uncordon {
            (n, NodeChange::Uncordon)
        } else {
            (self.delete_node_object.as_ref()?, NodeChange::DeleteObject)
        };
        Some((step.target.clone(), change))
    }

    /// The node a node step aims at, if the step is one.
    pub fn node_target(&self) -> Option<&Located<Target>> {
        fn metadata(m: &MetadataStep) -> &Located<Target> {
            &m.target
        }
        self.taint
            .as_ref()
            .map(|t| &t.target)
            .or(self.untaint.as_ref().map(|t| &t.target))
            .or(self.cordon.as_ref().map(|n| &n.target))
            .or(self.uncordon.as_ref().map(|n| &n.target))
            .or(self.label.as_ref().map(metadata))
            .or(self.annotate.as_ref().map(metadata))
            .or(self.delete_node_object.as_ref().map(|n| &n.target))
    }
}

impl Step {
    /// The typed step of a written one (the `index`th, from 0) that sets
    /// exactly one action, and for a wait exactly one of `for` and `until`
    /// with a timeout, as validation requires; `None` otherwise.
    pub fn lower(spec: &StepSpec, index: usize) -> Option<Step> {
        if spec.actions_set() != 1 {
            return None;
        }
        let action = if let Some(preflight) = &spec.preflight {
            Action::Preflight(preflight.clone())
        } else if let Some(fault) = &spec.fault {
            Action::Fault(fault.clone())
        } else if let Some(scale) = &spec.scale {
            Action::Scale(scale.clone())
        } else if let Some(rollout) = &spec.rollout {
            Action::Rollout(rollout.clone())
        } else if let Some((target, change)) = spec.node_change() {
            Action::Node { target, change }
        } else if let Some(evict) = &spec.evict {
            Action::Evict(evict.clone())
        } else if let Some(pdb) = &spec.pdb {
            let (namespace, name) = pdb.name.split_once('/')?;
            let bound = match (&pdb.min_available, &pdb.max_unavailable) {
                (Some(v), None) => PdbBound::MinAvailable(v.value),
                (None, Some(v)) => PdbBound::MaxUnavailable(v.value),
                _ => return None,
            };
            Action::Pdb(PdbChange {
                namespace: namespace.to_owned(),
                name: name.to_owned(),
                bound,
            })
        } else if let Some(apply) = &spec.apply {
            Action::Apply(ApplyManifest {
                path: apply.path.value.clone(),
                documents: Vec::new(),
            })
        } else if let Some(delete) = &spec.delete {
            if !DELETABLE_KINDS.contains(&delete.kind.as_str()) {
                return None;
            }
            Action::Delete(ObjectKey {
                kind: delete.kind.value.clone(),
                namespace: delete
                    .namespace
                    .as_ref()
                    .map_or_else(|| "default".to_owned(), |n| n.value.clone()),
                name: delete.name.value.clone(),
            })
        } else {
            let wait = spec.wait.as_ref()?;
            match (wait.duration, &wait.until, wait.timeout) {
                (Some(duration), None, _) => Action::Sleep(duration),
                (None, Some(until), Some(timeout)) => Action::WaitUntil {
                    condition: until.value.clone(),
                    timeout,
                },
                _ => return None,
            }
        };
        Some(Step {
            label: spec
                .name
                .clone()
                .unwrap_or_else(|| format!("step {}", index + 1)),
            action,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> StepSpec {
        serde_saphyr::from_str(yaml).expect("a step")
    }

    #[test]
    fn one_action_lowers_and_is_labelled_by_name_or_position() {
        let named = Step::lower(&spec("name: settle\nwait: {for: 1m}\n"), 0).expect("one action");
        assert_eq!(named.label, "settle");
        assert!(matches!(named.action, Action::Sleep(d) if d == Duration::from_mins(1)));
        let unnamed = Step::lower(&spec("wait: {for: 1m}\n"), 2).expect("one action");
        assert_eq!(unnamed.label, "step 3");
        let two = spec("wait: {for: 1m}\nscale: {workload: a/Deployment/b, replicas: 1}\n");
        assert_eq!(two.actions_set(), 2);
        assert!(Step::lower(&two, 0).is_none());
    }

    #[test]
    fn a_wait_lowers_only_as_a_sleep_or_a_bounded_condition() {
        let bounded = spec("wait: {until: allWorkloadsReady, timeout: 5m}\n");
        assert!(matches!(
            Step::lower(&bounded, 0).expect("bounded").action,
            Action::WaitUntil { timeout, .. } if timeout == Duration::from_mins(5)
        ));
        assert!(Step::lower(&spec("wait: {until: allWorkloadsReady}\n"), 0).is_none());
        assert!(Step::lower(&spec("wait: {for: 1m, until: allWorkloadsReady}\n"), 0).is_none());
        assert!(Step::lower(&spec("wait: {}\n"), 0).is_none());
    }

    #[test]
    fn node_steps_lower_to_one_change_each_and_change_the_cluster() {
        let cases = [
            (
                "taint: {target: {node: w-1}, key: k, value: v, effect: NoExecute}\n",
                NodeChange::Taint {
                    key: "k".to_owned(),
                    value: "v".to_owned(),
                    effect: TaintEffect::NoExecute,
                },
            ),
            (
                "untaint: {target: {node: w-1}, key: k}\n",
                NodeChange::Untaint {
                    key: "k".to_owned(),
                    effect: None,
                },
            ),
            ("cordon: {target: {node: w-1}}\n", NodeChange::Cordon),
            ("uncordon: {target: {node: w-1}}\n", NodeChange::Uncordon),
            (
                "label: {target: {node: w-1}, set: {a: b}, remove: [c]}\n",
                NodeChange::Label {
                    set: BTreeMap::from([("a".to_owned(), "b".to_owned())]),
                    remove: vec!["c".to_owned()],
                },
            ),
            (
                "annotate: {target: {node: w-1}, remove: [c]}\n",
                NodeChange::Annotate {
                    set: BTreeMap::new(),
                    remove: vec!["c".to_owned()],
                },
            ),
            (
                "deleteNodeObject: {target: {node: w-1}}\n",
                NodeChange::DeleteObject,
            ),
        ];
        for (yaml, expected) in cases {
            let written = spec(yaml);
            assert_eq!(written.actions_set(), 1, "{yaml}");
            assert_eq!(
                written.node_target().map(|t| t.value.clone()),
                Some(Target::Node("w-1".to_owned()))
            );
            let step = Step::lower(&written, 0).expect(yaml);
            assert!(step.action.changes_the_cluster(), "{yaml}");
            let Action::Node { change, .. } = step.action else {
                panic!("{yaml}: {:?}", step.action)
            };
            assert_eq!(change, expected, "{yaml}");
        }
        let evict = Step::lower(&spec("evict: {workload: a/Deployment/b}\n"), 0).expect("evict");
        assert!(matches!(evict.action, Action::Evict(_)));
        assert!(evict.action.changes_the_cluster());
        let two = spec("cordon: {target: {node: a}}\nuncordon: {target: {node: a}}\n");
        assert_eq!(two.actions_set(), 2);
    }

    #[test]
    fn a_pdb_step_lowers_with_exactly_one_bound_and_changes_the_cluster() {
        let step = Step::lower(&spec("pdb: {name: apps/web, minAvailable: 2}\n"), 0).expect("pdb");
        assert!(step.action.changes_the_cluster());
        let Action::Pdb(change) = &step.action else {
            panic!("{:?}", step.action)
        };
        assert_eq!(change.bound, PdbBound::MinAvailable(IntOrPercent::Int(2)));
        assert_eq!(
            change.bound.merge_patch(),
            serde_json::json!({"spec": {"minAvailable": 2, "maxUnavailable": null}})
        );
        let max =
            Step::lower(&spec("pdb: {name: apps/web, maxUnavailable: 50%}\n"), 0).expect("pdb");
        let Action::Pdb(change) = &max.action else {
            panic!("{:?}", max.action)
        };
        assert_eq!(
            change.bound.merge_patch(),
            serde_json::json!({"spec": {"minAvailable": null, "maxUnavailable": "50%"}})
        );
        let both = spec("pdb: {name: apps/web, minAvailable: 1, maxUnavailable: 1}\n");
        assert!(Step::lower(&both, 0).is_none());
        assert!(Step::lower(&spec("pdb: {name: apps/web}\n"), 0).is_none());
        assert!(Step::lower(&spec("pdb: {name: web, minAvailable: 1}\n"), 0).is_none());
    }

    #[test]
    fn apply_and_delete_steps_lower_and_change_the_cluster() {
        let apply = Step::lower(&spec("apply: {path: manifests/x.yaml}\n"), 0).expect("apply");
        assert!(apply.action.changes_the_cluster());
        let Action::Apply(manifest) = &apply.action else {
            panic!("{:?}", apply.action)
        };
        assert_eq!(manifest.to_string(), "apply manifests/x.yaml");
        // kubectl's default namespace when the step names none.
        let delete =
            Step::lower(&spec("delete: {kind: Deployment, name: web}\n"), 0).expect("delete");
        assert!(delete.action.changes_the_cluster());
        let Action::Delete(object) = &delete.action else {
            panic!("{:?}", delete.action)
        };
        assert_eq!(object.to_string(), "delete Deployment default/web");
        assert_eq!(object.api_version(), Some("apps/v1"));
        let pdb = spec("delete: {kind: PodDisruptionBudget, namespace: apps, name: web}\n");
        let Action::Delete(object) = Step::lower(&pdb, 0).expect("delete").action else {
            panic!("not a delete")
        };
        assert_eq!(object.namespace, "apps");
        assert_eq!(object.api_version(), Some("policy/v1"));
        // Control: a kind whose deletion is not modelled does not lower.
        assert!(Step::lower(&spec("delete: {kind: Service, name: web}\n"), 0).is_none());
    }

    #[test]
    fn a_taint_replaces_its_key_and_effect_and_an_untaint_without_effect_drops_every_effect() {
        let taint = NodeChange::Taint {
            key: "k".to_owned(),
            value: String::new(),
            effect: TaintEffect::NoExecute,
        };
        assert!(taint.drops_taint("k", "NoExecute"));
        assert!(!taint.drops_taint("k", "NoSchedule"));
        let every = NodeChange::Untaint {
            key: "k".to_owned(),
            effect: None,
        };
        assert!(every.drops_taint("k", "NoSchedule") && every.drops_taint("k", "NoExecute"));
        assert!(!every.drops_taint("other", "NoExecute"));
        let one = NodeChange::Untaint {
            key: "k".to_owned(),
            effect: Some(TaintEffect::NoSchedule),
        };
        assert!(one.drops_taint("k", "NoSchedule") && !one.drops_taint("k", "NoExecute"));
        assert_eq!(taint.to_string(), "taint k:NoExecute");
    }

    #[test]
    fn faults_scaling_and_rollouts_change_the_cluster_waits_do_not() {
        let scale = spec("scale: {workload: a/Deployment/b, replicas: 1}\n");
        assert!(
            Step::lower(&scale, 0)
                .expect("scale")
                .action
                .changes_the_cluster()
        );
        let rollout = spec("rollout: {workload: a/Deployment/b, image: x:2}\n");
        assert!(
            Step::lower(&rollout, 0)
                .expect("rollout")
                .action
                .changes_the_cluster()
        );
        let wait = spec("wait: {for: 1m}\n");
        assert!(
            !Step::lower(&wait, 0)
                .expect("wait")
                .action
                .changes_the_cluster()
        );
    }
}
