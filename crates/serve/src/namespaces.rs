//! Deleting a namespace through the API: what lives in it goes with it,
//! each removal announced, and the namespace reads Terminating until its
//! pods have terminated.

use super::cluster::Cluster;
use super::resources;
use drillbench_sim::api_ops::Propagation;
use drillbench_sim::world::WorkloadKind;

/// Deletes a namespace and what lives in it: its ConfigMaps, budgets
/// and workloads (their pods with them) and bare pods. Claims stay:
/// the simulator does not model deleting them.
pub(super) fn delete_namespace(cluster: &mut Cluster, namespace: &str) {
    for key in cluster.written.declared_in(namespace) {
        let before = cluster.written.undeclare(&key);
        cluster.written.forget_metadata(&key);
        cluster.api_change(key, before.as_ref());
    }
    for name in cluster.written.config_maps_in(namespace) {
        let before = cluster.written.remove_config_map(namespace, &name);
        let key = ("ConfigMap", namespace.to_owned(), name);
        cluster.written.forget_metadata(&key);
        cluster.api_change(key, before.as_ref());
    }
    let workloads: Vec<usize> = cluster
        .sim
        .live_workloads()
        .into_iter()
        .filter(|&w| cluster.sim.workloads()[w].namespace == namespace)
        .collect();
    for w in workloads {
        let kind = match cluster.sim.workloads()[w].kind {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet { .. } => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Job { .. } => "Job",
            _ => "",
        };
        let name = cluster.sim.workloads()[w].name.clone();
        let before = cluster.objects().view_known(kind, namespace, &name);
        cluster.sim.delete_workload(w, Propagation::Cascade);
        if let Some(kind) = resources::by_kind(kind).map(|r| r.kind) {
            let key = (kind, namespace.to_owned(), name);
            cluster.written.forget_metadata(&key);
            cluster.sync();
            cluster.api_change(key, before.as_ref());
        }
    }
    let pods: Vec<usize> = (0..cluster.sim.pods().len())
        .filter(|&p| {
            cluster.sim.pods()[p].namespace == namespace && cluster.sim.pods()[p].is_active()
        })
        .collect();
    for pod in pods {
        cluster.sim.delete_pod_api(pod, None);
    }
    while let Some(index) = (0..cluster.sim.pdbs().len())
        .find(|&i| cluster.sim.pdbs()[i].object.metadata.namespace.as_deref() == Some(namespace))
    {
        let name = cluster.sim.pdbs()[index]
            .object
            .metadata
            .name
            .clone()
            .unwrap_or_default();
        let before = cluster
            .objects()
            .view_known("PodDisruptionBudget", namespace, &name);
        cluster.sim.delete_pdb(index);
        let key = ("PodDisruptionBudget", namespace.to_owned(), name);
        cluster.written.forget_metadata(&key);
        cluster.api_change(key, before.as_ref());
    }
    cluster.written.delete_namespace(namespace);
    cluster.sync();
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::testing::{cluster, lines, names, watch_kind};

    fn watch_all(cluster: &mut Cluster) -> Vec<tokio::sync::mpsc::UnboundedReceiver<bytes::Bytes>> {
        ["ConfigMap", "Deployment", "PodDisruptionBudget"]
            .into_iter()
            .map(|kind| watch_kind(cluster, kind))
            .collect()
    }

    #[test]
    fn what_lives_in_a_deleted_namespace_goes_with_it_and_watchers_are_told() {
        let mut cluster = cluster();
        cluster.written.put_config_map(
            "apps",
            "settings",
            json!({"kind": "ConfigMap", "metadata": {"name": "settings", "namespace": "apps"}}),
        );
        cluster.api_change(
            ("ConfigMap", "apps".to_owned(), "settings".to_owned()),
            None,
        );
        let mut watches = watch_all(&mut cluster);
        delete_namespace(&mut cluster, "apps");
        let deleted: Vec<String> = watches
            .iter_mut()
            .flat_map(lines)
            .filter(|l| l["type"] == "DELETED")
            .map(|l| {
                format!(
                    "{}/{}",
                    l["object"]["kind"].as_str().unwrap_or_default(),
                    l["object"]["metadata"]["name"].as_str().unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(
            deleted,
            [
                "ConfigMap/settings",
                "Deployment/api",
                "Deployment/cache",
                "PodDisruptionBudget/api"
            ]
        );
        assert!(cluster.written.config_maps_in("apps").is_empty());
        let objects = cluster.objects();
        let deployments = objects.list(resources::by_kind("Deployment").expect("deployments"));
        assert!(names(&deployments).is_empty(), "{deployments:?}");
        assert!(
            objects
                .view("DaemonSet", "kube-system", "node-agent", false)
                .is_some(),
            "other namespaces keep theirs"
        );
    }

    #[test]
    fn a_deleted_namespace_terminates_then_is_gone() {
        let mut cluster = cluster();
        delete_namespace(&mut cluster, "apps");
        let apps = cluster.view("Namespace", "", "apps", false);
        assert_eq!(
            apps.map(|a| a["status"]["phase"].clone()),
            Some(json!("Terminating"))
        );
        let until = cluster.sim.now() + 600_000;
        cluster.advance_to(until);
        assert!(cluster.view("Namespace", "", "apps", false).is_none());
        assert!(cluster.written.was_deleted("apps"));
    }
}
