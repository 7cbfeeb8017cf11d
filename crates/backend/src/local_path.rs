//! Storage for clusters that come without: Talos in Docker ships no storage
//! provisioner, so its backend installs the local-path provisioner
//! (`harness/storage/local-path-talos.yaml`) that kind ships with. Its
//! volumes are directories on one node's disk: a claim strands with its
//! node, as an `hcloud` volume does, which is what the drills judge.

use serde_json::{Value, json};

use super::docker::RunId;
use super::kube::FIELD_MANAGER;
use super::kube::apply::{Applied, server_side_apply};
use super::provision::DriverError;
use drillbench_model::labels::RUN_LABEL;

/// The provisioner's manifest.
pub const MANIFEST: &str = include_str!("../../../harness/storage/local-path-talos.yaml");

/// Where the volumes live on a node: under `/var`, since Talos keeps
/// `/opt` (local-path's default) read-only.
pub const VOLUME_ROOT: &str = "/var/local-path-provisioner";

/// The machine configuration patch that bind-mounts [`VOLUME_ROOT`] into
/// the kubelet, so the volumes the helper pods make on the host are the
/// ones the kubelet mounts into pods.
pub fn kubelet_mount_patch() -> String {
    format!(
        "machine:\n  kubelet:\n    extraMounts:\n      - destination: {VOLUME_ROOT}\n        type: bind\n        source: {VOLUME_ROOT}\n        options: [bind, rshared, rw]\n"
    )
}

/// The manifest's objects, each labelled with the run.
pub fn objects(run: &RunId) -> Vec<Value> {
    let documents = drillbench_model::manifest::parse_documents("local-path-talos.yaml", MANIFEST)
        .expect("the embedded manifest parses (tested)");
    documents
        .into_iter()
        .map(|doc| {
            let mut value = doc.value;
            value["metadata"]["labels"][RUN_LABEL] = json!(run.as_str());
            value
        })
        .collect()
}

/// Applies the provisioner; returns the objects of kinds the cluster did
/// not serve (none on a real cluster, nor on a served simulator, which
/// stores the RBAC as written and models storage itself).
pub async fn install(client: &kube::Client, run: &RunId) -> Result<Vec<String>, DriverError> {
    let mut not_served = Vec::new();
    for object in objects(run) {
        let key = drillbench_model::workload_ref::WorkloadRef::of_object(&object).to_string();
        match server_side_apply(client, &object, FIELD_MANAGER).await {
            Ok(Applied::Applied) => {}
            Ok(Applied::NotServed) => not_served.push(key),
            Err(source) => {
                return Err(DriverError::Kube {
                    what: format!("install the local-path provisioner: apply {key}"),
                    source,
                });
            }
        }
    }
    Ok(not_served)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_installs_a_provisioner_that_writes_where_the_kubelet_mounts() {
        let run = RunId::new("r1").unwrap();
        let objects = objects(&run);
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Role",
                "RoleBinding",
                "ConfigMap",
                "Deployment"
            ]
        );
        assert!(
            objects
                .iter()
                .all(|o| o["metadata"]["labels"][RUN_LABEL] == "r1")
        );
        let config = objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap")
            .and_then(|o| o["data"]["config.json"].as_str())
            .expect("config.json");
        let config: Value = serde_json::from_str(config).expect("config.json is JSON");
        assert_eq!(config["nodePathMap"][0]["paths"][0], VOLUME_ROOT);
        let patch: Value = serde_saphyr::from_str(&kubelet_mount_patch()).expect("YAML");
        let mount = &patch["machine"]["kubelet"]["extraMounts"][0];
        assert_eq!(mount["source"], VOLUME_ROOT);
        assert_eq!(mount["destination"], VOLUME_ROOT);
        // Helper pods run privileged: the namespace must admit them.
        assert_eq!(
            objects[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
            "privileged"
        );
    }
}
