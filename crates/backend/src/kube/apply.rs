//! Server-side apply of one object of any kind, as `kubectl apply
//! --server-side` does it: the kind's resource is found through discovery,
//! and a kind the cluster does not serve is reported, not an error (a
//! served simulator serves no RBAC, a cluster without a CRD no custom
//! resource).

use kube::api::{Api, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::discovery::Scope;
use serde_json::Value;

/// What an apply did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The object is as given.
    Applied,
    /// The cluster does not serve the object's kind.
    NotServed,
}

/// Server-side applies `object` (its `apiVersion`, `kind`, `metadata.name`
/// and, for namespaced kinds, `metadata.namespace` or `default`) with the
/// field manager, forcing conflicts, as the one owner of what it applies.
pub async fn server_side_apply(
    client: &kube::Client,
    object: &Value,
    field_manager: &str,
) -> Result<Applied, kube::Error> {
    let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str);
    let (Some(api_version), Some(kind), Some(name)) =
        (text("/apiVersion"), text("/kind"), text("/metadata/name"))
    else {
        return Err(kube::Error::Discovery(
            kube::error::DiscoveryError::MissingResource(
                "an object without apiVersion, kind or metadata.name".to_owned(),
            ),
        ));
    };
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let Ok((resource, capabilities)) = kube::discovery::pinned_kind(client, &gvk).await else {
        return Ok(Applied::NotServed);
    };
    let dynamic: DynamicObject =
        serde_json::from_value(object.clone()).map_err(kube::Error::SerdeError)?;
    let api: Api<DynamicObject> = match capabilities.scope {
        Scope::Namespaced => Api::namespaced_with(
            client.clone(),
            text("/metadata/namespace").unwrap_or("default"),
            &resource,
        ),
        Scope::Cluster => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        name,
        &PatchParams::apply(field_manager).force(),
        &Patch::Apply(&dynamic),
    )
    .await?;
    Ok(Applied::Applied)
}
