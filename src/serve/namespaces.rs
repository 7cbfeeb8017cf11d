//! Deleting a namespace through the API: what lives in it goes with it,
//! each removal announced, and the namespace reads Terminating until its
//! pods have terminated.

use super::cluster::Cluster;
use super::resources;
use crate::sim::api_ops::Propagation;
use crate::sim::world::WorkloadKind;

/// Deletes a namespace and what lives in it: its ConfigMaps, budgets
/// and workloads (their pods with them) and bare pods. Claims stay:
/// the simulator does not model deleting them.
pub(super) fn delete_namespace(cluster: &mut Cluster, namespace: &str) {
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
        .filter(|&w| cluster.sim.workloads[w].namespace == namespace)
        .collect();
    for w in workloads {
        let kind = match cluster.sim.workloads[w].kind {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet { .. } => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Job { .. } => "Job",
            _ => "",
        };
        let name = cluster.sim.workloads[w].name.clone();
        let before = cluster.objects().view_known(kind, namespace, &name);
        cluster.sim.delete_workload(w, Propagation::Cascade);
        if let Some(kind) = resources::by_kind(kind).map(|r| r.kind) {
            let key = (kind, namespace.to_owned(), name);
            cluster.written.forget_metadata(&key);
            cluster.sync();
            cluster.api_change(key, before.as_ref());
        }
    }
    let pods: Vec<usize> = (0..cluster.sim.pods.len())
        .filter(|&p| cluster.sim.pods[p].namespace == namespace && cluster.sim.pods[p].is_active())
        .collect();
    for pod in pods {
        cluster.sim.delete_pod_api(pod, None);
    }
    while let Some(index) = (0..cluster.sim.pdbs.len())
        .find(|&i| cluster.sim.pdbs[i].object.metadata.namespace.as_deref() == Some(namespace))
    {
        let name = cluster.sim.pdbs[index]
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
