//! Workloads' readiness series, from their controllers' status (a Job's
//! from its pods until it completes), and which workload a pod belongs to.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use super::object::{Change, Object};
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_observe::{Time, WorkloadSeries};

#[derive(Debug, Default)]
pub(super) struct Workloads {
    /// The newest (ready, desired) of each workload, so a status that
    /// changes neither adds no point.
    counts: BTreeMap<String, (u32, u32)>,
    /// (completions, succeeded) of each Job.
    jobs: BTreeMap<String, (u32, u32)>,
    /// Claim template names of each StatefulSet: its pods mount
    /// `TEMPLATE-POD` claims whether or not their spec lists the volumes.
    claim_templates: BTreeMap<String, Vec<String>>,
}

impl Workloads {
    /// Takes in a change to a workload (any other change is ignored);
    /// a workload's deletion leaves its series as it stands.
    pub(super) fn take(
        &mut self,
        at: Time,
        change: &Change,
        series: &mut BTreeMap<String, WorkloadSeries>,
    ) {
        let Change::Applied(object) = change else {
            return;
        };
        match object {
            Object::Deployment(d) => {
                let key = key_of("Deployment", &**d);
                let desired = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                let ready = d
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0);
                self.point(at, key, ready, desired, series);
            }
            Object::StatefulSet(s) => {
                let key = key_of("StatefulSet", &**s);
                let desired = s.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                let ready = s
                    .status
                    .as_ref()
                    .and_then(|s| s.ready_replicas)
                    .unwrap_or(0);
                let templates = s
                    .spec
                    .as_ref()
                    .and_then(|s| s.volume_claim_templates.as_ref())
                    .map(|t| t.iter().map(|c| c.name_any()).collect())
                    .unwrap_or_default();
                self.claim_templates.insert(key.clone(), templates);
                self.point(at, key, ready, desired, series);
            }
            Object::DaemonSet(d) => {
                let key = key_of("DaemonSet", &**d);
                let status = d.status.clone().unwrap_or_default();
                self.point(
                    at,
                    key,
                    status.number_ready,
                    status.desired_number_scheduled,
                    series,
                );
            }
            Object::Job(j) => {
                // A Job is whole once it completed; until then its ready
                // pods count (settled from the pods, as the simulator does).
                let key = key_of("Job", &**j);
                let completions = j
                    .spec
                    .as_ref()
                    .and_then(|s| s.completions)
                    .unwrap_or(1)
                    .max(0) as u32;
                let succeeded = j
                    .status
                    .as_ref()
                    .and_then(|s| s.succeeded)
                    .unwrap_or(0)
                    .max(0) as u32;
                self.jobs.insert(key, (completions, succeeded));
            }
            _ => {}
        }
    }

    fn point(
        &mut self,
        at: Time,
        key: String,
        ready: i32,
        desired: i32,
        series: &mut BTreeMap<String, WorkloadSeries>,
    ) {
        let value = (ready.max(0) as u32, desired.max(0) as u32);
        if self.counts.get(&key) == Some(&value) {
            return;
        }
        self.counts.insert(key.clone(), value);
        series
            .entry(key)
            .or_default()
            .points
            .push((at, value.0, value.1));
    }

    /// Closes an instant for the Jobs: one still running counts the pods
    /// `ready_pods` says are ready, up to its completions.
    pub(super) fn settle(
        &mut self,
        at: Time,
        ready_pods: impl Fn(&str) -> u32,
        series: &mut BTreeMap<String, WorkloadSeries>,
    ) {
        let jobs: Vec<(String, (u32, u32))> =
            self.jobs.iter().map(|(k, v)| (k.clone(), *v)).collect();
        for (key, (completions, succeeded)) in jobs {
            let ready = if succeeded >= completions {
                completions
            } else {
                ready_pods(&key).min(completions)
            };
            self.point(at, key, ready as i32, completions as i32, series);
        }
    }

    /// The workload a pod belongs to: its controller's, a ReplicaSet's
    /// pods counted as its Deployment's.
    pub(super) fn owner(&self, pod: &Pod) -> Option<String> {
        let namespace = pod.namespace().unwrap_or_default();
        let owner = pod
            .owner_references()
            .iter()
            .find(|o| o.controller == Some(true))?;
        let kind = match owner.kind.as_str() {
            // A Deployment's pods belong to its ReplicaSet, named after it
            // with a template hash (the simulator folds the two into one
            // and keeps the Deployment's name).
            "ReplicaSet" => {
                let exact = WorkloadRef::new(&namespace, "Deployment", &owner.name).to_string();
                if self.counts.contains_key(&exact) {
                    return Some(exact);
                }
                if let Some((trimmed, _)) = owner.name.rsplit_once('-') {
                    let trimmed = WorkloadRef::new(&namespace, "Deployment", trimmed).to_string();
                    if self.counts.contains_key(&trimmed) {
                        return Some(trimmed);
                    }
                }
                return Some(exact);
            }
            other => other,
        };
        Some(WorkloadRef::new(&namespace, kind, &owner.name).to_string())
    }

    /// The claim templates of a StatefulSet, by its key.
    pub(super) fn claim_templates(&self, workload: &str) -> Option<&[String]> {
        self.claim_templates.get(workload).map(Vec::as_slice)
    }
}

/// The key a watched workload's readiness is filed under.
fn key_of(kind: &str, object: &impl ResourceExt) -> String {
    WorkloadRef::new(
        &object.namespace().unwrap_or_default(),
        kind,
        &object.name_any(),
    )
    .to_string()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn applied(object: Object) -> Change {
        Change::Applied(object)
    }

    fn owned_by(kind: &str, name: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "apps", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": "u", "controller": true}
            ]},
        }))
        .expect("pod")
    }

    #[test]
    fn a_replica_sets_pods_belong_to_the_deployment_it_is_named_after() {
        let mut workloads = Workloads::default();
        let mut series = BTreeMap::new();
        let deployment = serde_json::from_value(json!({
            "metadata": {"name": "api", "namespace": "apps"},
            "spec": {"selector": {}, "template": {}},
        }))
        .expect("deployment");
        workloads.take(
            0,
            &applied(Object::Deployment(Box::new(deployment))),
            &mut series,
        );
        assert_eq!(
            workloads
                .owner(&owned_by("ReplicaSet", "api-5d8f7"))
                .as_deref(),
            Some("apps/Deployment/api")
        );
        // A ReplicaSet of no known Deployment keeps its own name.
        assert_eq!(
            workloads
                .owner(&owned_by("ReplicaSet", "web-5d8f7"))
                .as_deref(),
            Some("apps/Deployment/web-5d8f7")
        );
        assert_eq!(
            workloads.owner(&owned_by("StatefulSet", "db")).as_deref(),
            Some("apps/StatefulSet/db")
        );
        assert_eq!(workloads.owner(&Pod::default()), None, "no controller");
        // Unset replicas are one, as the API defaults them.
        assert_eq!(series["apps/Deployment/api"].points, [(0, 0, 1)]);
    }

    #[test]
    fn a_job_counts_its_ready_pods_until_it_completes() {
        let mut workloads = Workloads::default();
        let mut series = BTreeMap::new();
        let job = |succeeded: i32| {
            applied(Object::Job(Box::new(
                serde_json::from_value(json!({
                    "metadata": {"name": "backup", "namespace": "ops"},
                    "spec": {"completions": 2, "template": {}},
                    "status": {"succeeded": succeeded},
                }))
                .expect("job"),
            )))
        };
        workloads.take(0, &job(0), &mut series);
        assert!(series.is_empty(), "a Job's points come at settling");
        workloads.settle(0, |_| 5, &mut series);
        workloads.settle(1, |_| 5, &mut series);
        workloads.take(2, &job(2), &mut series);
        workloads.settle(2, |_| 0, &mut series);
        assert_eq!(series["ops/Job/backup"].points, [(0, 2, 2)]);
        workloads.take(3, &job(0), &mut series);
        workloads.settle(3, |key| u32::from(key == "ops/Job/backup"), &mut series);
        assert_eq!(series["ops/Job/backup"].points, [(0, 2, 2), (3, 1, 2)]);
    }

    #[test]
    fn a_stateful_sets_claim_templates_are_kept_by_its_key() {
        let mut workloads = Workloads::default();
        let mut series = BTreeMap::new();
        let set = serde_json::from_value(json!({
            "metadata": {"name": "db", "namespace": "apps"},
            "spec": {"replicas": 2, "selector": {}, "serviceName": "db", "template": {},
                     "volumeClaimTemplates": [{"metadata": {"name": "data"}}]},
            "status": {"replicas": 2, "readyReplicas": 1},
        }))
        .expect("statefulset");
        workloads.take(7, &applied(Object::StatefulSet(Box::new(set))), &mut series);
        assert_eq!(
            workloads.claim_templates("apps/StatefulSet/db"),
            Some(&["data".to_owned()][..])
        );
        assert_eq!(series["apps/StatefulSet/db"].points, [(7, 1, 2)]);
        assert_eq!(workloads.claim_templates("apps/StatefulSet/other"), None);
    }
}
