//! The local-path provisioner the Talos backend installs, applied to a
//! served simulator: what the cluster serves is created with the run
//! label (a ServiceAccount stored as written), and what it does not (RBAC)
//! is reported, never an error.

use crate::fake_support;

use drillbench_backend::docker::RunId;
use drillbench_backend::local_path::install;
use drillbench_backend::provision::block_on;
use drillbench_model::labels::RUN_LABEL;
use fake_support::{serve, serve_drill};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::Api;

#[test]
fn the_provisioner_is_applied_and_what_the_cluster_does_not_serve_is_named() {
    let drill = serve_drill();
    let server = serve(&drill);
    let client = || kube::Client::try_from(server.client_config()).unwrap();
    let run = RunId::new("lp1").unwrap();
    let not_served = block_on(async { install(&client(), &run).await })
        .unwrap()
        .expect("installed");
    for kind in ["ClusterRole", "RoleBinding"] {
        assert!(
            not_served.iter().any(|k| k.contains(&format!("/{kind}/"))),
            "{kind} is not served: {not_served:?}"
        );
    }
    // ServiceAccounts are stored as written (`DECLARED_KINDS` in the
    // façade's `written.rs`), like the Deployment the simulator runs.
    for kind in ["Deployment", "ServiceAccount"] {
        assert!(
            !not_served.iter().any(|k| k.contains(&format!("/{kind}/"))),
            "{kind}: {not_served:?}"
        );
    }
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
