//! `bench snapshot`: a read-only capture of a live cluster into a
//! [`ClusterSnapshot`].
//!
//! Every kind is looked up in the API server's discovery first: a kind it
//! does not serve (Velero's or Kyverno's CRDs not installed, or a kind a
//! served simulator leaves out) is recorded in the file's `notServed`, so
//! an empty kind always means "none there", never "not looked at".
//!
//! Secrets and ConfigMaps are listed through the metadata-only API
//! (`Accept: ...;as=PartialObjectMetadataList`, kube-rs `list_metadata`):
//! the API server never sends their data, so it can neither be stored nor
//! leak through a log. The file keeps their namespace and name.
//!
//! Only `get` and `list` requests are made, in pages, and the capture stops
//! with an error at the object cap before a large cluster can exhaust the
//! machine.

use std::collections::BTreeSet;
use std::path::Path;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::{Value, json};

use super::KubeError;
use super::kubeconfig::client_for;
use drillbench_model::snapshot::{ClusterSnapshot, SnapshotSource};

/// How much of one kind is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// The object as the API server returns it, without `managedFields`.
    Whole,
    /// `apiVersion`, `kind`, `metadata.name` and `metadata.namespace`,
    /// read through the metadata-only API.
    NameOnly,
}

/// One kind the capture reads.
#[derive(Debug, Clone, Copy)]
struct Kind {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    keep: Keep,
}

const fn kind(
    group: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
) -> Kind {
    Kind {
        group,
        version: "v1",
        plural,
        kind,
        namespaced,
        keep: Keep::Whole,
    }
}

const fn name_only(plural: &'static str, kind: &'static str) -> Kind {
    Kind {
        group: "",
        version: "v1",
        plural,
        kind,
        namespaced: true,
        keep: Keep::NameOnly,
    }
}

/// What issue 16 lists: the cluster's shape (nodes, namespaces, priority
/// classes), its workloads where they run, their storage and disruption
/// budgets, leader leases, and the Velero and Kyverno objects a drill's
/// backups and guards come from.
const KINDS: &[Kind] = &[
    kind("", "nodes", "Node", false),
    kind("", "namespaces", "Namespace", false),
    kind("", "pods", "Pod", true),
    kind("", "persistentvolumeclaims", "PersistentVolumeClaim", true),
    kind("", "persistentvolumes", "PersistentVolume", false),
    name_only("secrets", "Secret"),
    name_only("configmaps", "ConfigMap"),
    kind("apps", "deployments", "Deployment", true),
    kind("apps", "replicasets", "ReplicaSet", true),
    kind("apps", "statefulsets", "StatefulSet", true),
    kind("apps", "daemonsets", "DaemonSet", true),
    kind("batch", "jobs", "Job", true),
    kind("batch", "cronjobs", "CronJob", true),
    kind("storage.k8s.io", "storageclasses", "StorageClass", false),
    kind(
        "storage.k8s.io",
        "volumeattachments",
        "VolumeAttachment",
        false,
    ),
    kind("storage.k8s.io", "csinodes", "CSINode", false),
    kind(
        "policy",
        "poddisruptionbudgets",
        "PodDisruptionBudget",
        true,
    ),
    kind(
        "scheduling.k8s.io",
        "priorityclasses",
        "PriorityClass",
        false,
    ),
    kind("coordination.k8s.io", "leases", "Lease", true),
    kind("velero.io", "backups", "Backup", true),
    kind("velero.io", "schedules", "Schedule", true),
    kind("kyverno.io", "clusterpolicies", "ClusterPolicy", false),
    kind("kyverno.io", "policies", "Policy", true),
];

/// Objects a list page asks for: small enough that a page of large pods
/// stays a few megabytes.
const PAGE: u32 = 500;

impl Kind {
    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.to_owned(),
            version: self.version.to_owned(),
            api_version: self.api_version(),
            kind: self.kind.to_owned(),
            plural: self.plural.to_owned(),
        }
    }
}

/// What to capture.
#[derive(Debug, Clone)]
pub struct CaptureOptions {
    /// The namespaces whose namespaced objects are read; empty: all.
    /// Cluster-scoped kinds are always read whole.
    pub namespaces: Vec<String>,
    /// The most objects the file may hold; one more is an error.
    pub max_objects: u64,
}

/// Why a capture failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot start the capture's runtime")]
    Runtime(#[source] std::io::Error),
    /// The kubeconfig or its context could not be used.
    #[error(transparent)]
    Connect(KubeError),
    #[error("failed to {what}")]
    Api {
        what: String,
        #[source]
        source: kube::Error,
    },
    #[error(
        "the cluster holds more than {max} objects of the captured kinds (reached while reading {kind}); pass --max-objects to raise the cap, or --namespace to narrow the capture"
    )]
    TooManyObjects { max: u64, kind: String },
}

/// Captures the cluster a kubeconfig context reaches.
pub fn capture_kubeconfig(
    path: &Path,
    context: Option<&str>,
    options: &CaptureOptions,
) -> Result<ClusterSnapshot, CaptureError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CaptureError::Runtime)?;
    runtime.block_on(async {
        let client = client_for(path, context, None)
            .await
            .map_err(CaptureError::Connect)?;
        let server = super::server_of(path, context).await.unwrap_or_default();
        let source = SnapshotSource {
            context: super::context_name(path, context),
            server: address_of(&server),
            namespaces: Vec::new(),
        };
        capture(client, source, options).await
    })
}

/// The scheme, host and port of an API server URL, without the user
/// information, path or query a URL may carry: `bench sim serve` puts its
/// token in the path, and a snapshot is a file people attach to tickets.
fn address_of(url: &str) -> String {
    match url.parse::<http::Uri>() {
        Ok(uri) => {
            let scheme = uri.scheme_str().unwrap_or("https");
            let host = uri.host().unwrap_or_default();
            match uri.port_u16() {
                Some(port) => format!("{scheme}://{host}:{port}"),
                None => format!("{scheme}://{host}"),
            }
        }
        Err(_) => String::new(),
    }
}

/// Captures what `client` reaches; `source` says where that is (its
/// namespaces are set from `options`).
pub async fn capture(
    client: kube::Client,
    mut source: SnapshotSource,
    options: &CaptureOptions,
) -> Result<ClusterSnapshot, CaptureError> {
    let mut namespaces = options.namespaces.clone();
    namespaces.sort();
    namespaces.dedup();
    source.namespaces = namespaces.clone();
    let served = served_kinds(&client).await?;
    let mut items = Vec::new();
    let mut not_served = Vec::new();
    for kind in KINDS {
        if !served.contains(&(kind.api_version(), kind.plural)) {
            not_served.push(format!("{} {}", kind.api_version(), kind.kind));
            continue;
        }
        let resource = kind.resource();
        let apis: Vec<Api<DynamicObject>> = if kind.namespaced && !namespaces.is_empty() {
            namespaces
                .iter()
                .map(|ns| Api::namespaced_with(client.clone(), ns, &resource))
                .collect()
        } else {
            vec![Api::all_with(client.clone(), &resource)]
        };
        for api in apis {
            read_kind(&api, kind, options.max_objects, &mut items).await?;
        }
    }
    Ok(ClusterSnapshot::new(source, items).with_not_served(not_served))
}

/// The (apiVersion, plural) pairs the API server serves, among the
/// group-versions of [`KINDS`]. A group-version it answers 404 for is not
/// installed; any other failure is the cluster's and stops the capture.
async fn served_kinds(
    client: &kube::Client,
) -> Result<BTreeSet<(String, &'static str)>, CaptureError> {
    let group_versions: BTreeSet<String> = KINDS.iter().map(Kind::api_version).collect();
    let mut served = BTreeSet::new();
    for gv in group_versions {
        let listed = if gv.contains('/') {
            client.list_api_group_resources(&gv).await
        } else {
            client.list_core_api_resources(&gv).await
        };
        let resources = match listed {
            Ok(list) => list.resources,
            Err(kube::Error::Api(status)) if status.code == 404 => continue,
            Err(source) => {
                return Err(CaptureError::Api {
                    what: format!("discover the resources of {gv}"),
                    source,
                });
            }
        };
        for kind in KINDS.iter().filter(|k| k.api_version() == gv) {
            if resources.iter().any(|r| r.name == kind.plural) {
                served.insert((gv.clone(), kind.plural));
            }
        }
    }
    Ok(served)
}

/// Lists one kind (in one namespace, or all) page by page into `items`.
async fn read_kind(
    api: &Api<DynamicObject>,
    kind: &Kind,
    max: u64,
    items: &mut Vec<Value>,
) -> Result<(), CaptureError> {
    let failed = |source| CaptureError::Api {
        what: format!("list {}", kind.plural),
        source,
    };
    let mut params = ListParams::default().limit(PAGE);
    loop {
        let next = match kind.keep {
            Keep::Whole => {
                let page = api.list(&params).await.map_err(failed)?;
                for object in page.items {
                    push(items, whole(object, kind), kind, max)?;
                }
                page.metadata.continue_
            }
            Keep::NameOnly => {
                let page = api.list_metadata(&params).await.map_err(failed)?;
                for object in page.items {
                    let name = object.metadata.name.unwrap_or_default();
                    let mut metadata = json!({"name": name});
                    if let Some(ns) = object.metadata.namespace {
                        metadata["namespace"] = json!(ns);
                    }
                    let item = json!({"apiVersion": kind.api_version(), "kind": kind.kind,
                                      "metadata": metadata});
                    push(items, item, kind, max)?;
                }
                page.metadata.continue_
            }
        };
        match next.filter(|c| !c.is_empty()) {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(()),
        }
    }
}

fn push(items: &mut Vec<Value>, item: Value, kind: &Kind, max: u64) -> Result<(), CaptureError> {
    if items.len() as u64 >= max {
        return Err(CaptureError::TooManyObjects {
            max,
            kind: kind.plural.to_owned(),
        });
    }
    items.push(item);
    Ok(())
}

/// An object as the file keeps it: its `apiVersion` and `kind` set (a
/// list's items may come without them) and no `managedFields`.
fn whole(mut object: DynamicObject, kind: &Kind) -> Value {
    object.metadata.managed_fields = None;
    object.types = Some(kube::api::TypeMeta {
        api_version: kind.api_version(),
        kind: kind.kind.to_owned(),
    });
    serde_json::to_value(&object).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_secrets_and_configmaps_are_read_by_name_and_every_kind_is_read_once() {
        let by_name: Vec<&str> = KINDS
            .iter()
            .filter(|k| k.keep == Keep::NameOnly)
            .map(|k| k.kind)
            .collect();
        assert_eq!(by_name, ["Secret", "ConfigMap"]);
        let distinct: BTreeSet<(String, &str)> =
            KINDS.iter().map(|k| (k.api_version(), k.kind)).collect();
        assert_eq!(distinct.len(), KINDS.len());
    }

    #[test]
    fn a_kept_object_has_its_type_and_no_managed_fields() {
        let pods = KINDS.iter().find(|k| k.kind == "Pod").expect("pods");
        let object: DynamicObject = serde_json::from_value(json!({
            "metadata": {"name": "web-0", "namespace": "apps",
                         "managedFields": [{"manager": "kubectl"}]},
            "spec": {"nodeName": "n1"}
        }))
        .expect("an object");
        let kept = whole(object, pods);
        assert_eq!(kept["apiVersion"], "v1");
        assert_eq!(kept["kind"], "Pod");
        assert_eq!(kept["spec"]["nodeName"], "n1");
        assert!(kept["metadata"].get("managedFields").is_none(), "{kept}");
    }

    #[test]
    fn the_server_is_recorded_without_a_token_in_its_path_or_a_user() {
        assert_eq!(
            address_of("http://127.0.0.1:43171/df98179426717f1db98f"),
            "http://127.0.0.1:43171"
        );
        assert_eq!(
            address_of("https://admin:secret@prod.example:6443/k8s/clusters/c-1?x=1"),
            "https://prod.example:6443"
        );
        assert_eq!(address_of("https://prod.example"), "https://prod.example");
        assert_eq!(address_of("not a url"), "");
    }

    #[test]
    fn the_cap_stops_at_one_past_the_limit() {
        let pods = KINDS.iter().find(|k| k.kind == "Pod").expect("pods");
        let mut items = Vec::new();
        push(&mut items, json!(1), pods, 2).expect("first");
        push(&mut items, json!(2), pods, 2).expect("second");
        let over = push(&mut items, json!(3), pods, 2).expect_err("third");
        assert!(matches!(over, CaptureError::TooManyObjects { max: 2, .. }));
        assert_eq!(items.len(), 2);
    }
}
