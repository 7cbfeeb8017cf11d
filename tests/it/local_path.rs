//! The local-path provisioner the Talos backend installs, applied to a
//! served simulator: every object is created with the run label, its
//! ServiceAccount and RBAC stored as written.

use crate::fake_support;

use drillbench_backend::docker::RunId;
use drillbench_backend::local_path::install;
use drillbench_backend::provision::block_on;
use drillbench_model::labels::RUN_LABEL;
use fake_support::{serve, serve_drill};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{ClusterRole, RoleBinding};
use kube::api::Api;

#[test]
fn the_provisioner_is_applied_with_its_rbac() {
    let drill = serve_drill();
    let server = serve(&drill);
    let client = || kube::Client::try_from(server.client_config()).unwrap();
    let run = RunId::new("lp1").unwrap();
    let not_served = block_on(async { install(&client(), &run).await })
        .unwrap()
        .expect("installed");
    assert_eq!(not_served, Vec::<String>::new());
    let role = block_on(async {
        Api::<ClusterRole>::all(client())
            .get("drillbench-local-path-provisioner")
            .await
    })
    .unwrap()
    .expect("the ClusterRole is stored");
    assert!(
        role.rules.unwrap_or_default().iter().any(|r| r
            .resources
            .iter()
            .flatten()
            .any(|res| res == "persistentvolumes")),
        "as written"
    );
    let binding = block_on(async {
        Api::<RoleBinding>::namespaced(client(), "local-path-storage")
            .get("local-path-provisioner")
            .await
    })
    .unwrap()
    .expect("the RoleBinding is stored");
    assert_eq!(
        binding
            .metadata
            .labels
            .unwrap_or_default()
            .get(RUN_LABEL)
            .map(String::as_str),
        Some("lp1")
    );
    let account = block_on(async {
        Api::<ServiceAccount>::namespaced(client(), "local-path-storage")
            .get("local-path-provisioner")
            .await
    });
    assert!(account.is_ok(), "{account:?}");
    let deployment = block_on(async {
        Api::<Deployment>::namespaced(client(), "local-path-storage")
            .get("local-path-provisioner")
            .await
    })
    .unwrap()
    .expect("the provisioner's Deployment exists");
    assert_eq!(
        deployment
            .metadata
            .labels
            .unwrap_or_default()
            .get(RUN_LABEL)
            .map(String::as_str),
        Some("lp1")
    );
}
