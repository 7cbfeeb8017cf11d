//! The resource kinds the façade serves and the discovery documents that
//! describe them, so `kubectl` resolves `po`, `no`, `sts`, `pdb`, `cm` and
//! finds the eviction subresource.

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resource {
    /// API group (`""` for the core group).
    pub group: &'static str,
    pub version: &'static str,
    /// Plural name, as in URLs.
    pub plural: &'static str,
    pub singular: &'static str,
    pub kind: &'static str,
    pub namespaced: bool,
    pub short: &'static [&'static str],
    /// Subresources (`status`, `scale`, `eviction`).
    pub subresources: &'static [&'static str],
    /// Whether the object can be created, updated and patched here.
    pub writable: bool,
    /// The kind as the change log and the stores key its objects: the
    /// kind itself for the built-in kinds (unique across their groups),
    /// `Kind.group` for a custom resource, whose kind may repeat a
    /// built-in one or another group's (Velero's and CloudNativePG's
    /// `Backup`).
    pub key: &'static str,
    /// `kubectl get CATEGORY` names (`all`), from a CRD's `categories`.
    pub categories: &'static [&'static str],
}

impl Resource {
    /// `apiVersion` of its objects.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether a CustomResourceDefinition serves it.
    pub fn is_custom(&self) -> bool {
        self.key != self.kind
    }

    /// `plural` or `plural.group`, as errors name a resource.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_owned()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

#[expect(
    clippy::too_many_arguments,
    reason = "the table of resources reads best as one row per resource"
)]
const fn res(
    group: &'static str,
    plural: &'static str,
    singular: &'static str,
    kind: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    subresources: &'static [&'static str],
    writable: bool,
) -> Resource {
    Resource {
        group,
        version: "v1",
        plural,
        singular,
        kind,
        namespaced,
        short,
        subresources,
        writable,
        key: kind,
        categories: &[],
    }
}

/// A resource in the `all` category, as the API server's storage for it
/// says (`Categories()` returning `"all"` in `pkg/registry/.../storage`:
/// pods, services, replication controllers, replica sets, deployments,
/// stateful sets, daemon sets, jobs, cron jobs and horizontal pod
/// autoscalers), so `kubectl get all` lists it.
const fn in_all(resource: Resource) -> Resource {
    Resource {
        categories: &["all"],
        ..resource
    }
}

pub const RESOURCES: &[Resource] = &[
    res(
        "",
        "namespaces",
        "namespace",
        "Namespace",
        false,
        &["ns"],
        &["status"],
        true,
    ),
    res(
        "",
        "nodes",
        "node",
        "Node",
        false,
        &["no"],
        &["status"],
        true,
    ),
    in_all(res(
        "",
        "pods",
        "pod",
        "Pod",
        true,
        &["po"],
        &["eviction", "status"],
        true,
    )),
    // The timeline as the Events its components record (`super::events`),
    // and the Events clients write (`super::events_v1`).
    res("", "events", "event", "Event", true, &["ev"], &[], true),
    // The same Events through the newer API, converted
    // (`super::events_v1`); their key is the core kind's, so both read and
    // watch one store.
    res(
        "events.k8s.io",
        "events",
        "event",
        "Event",
        true,
        &["ev"],
        &[],
        true,
    ),
    // Plain stored objects: what a restore drill's marker writer writes
    // and a backup carries; the simulator gives them no behaviour.
    res(
        "",
        "configmaps",
        "configmap",
        "ConfigMap",
        true,
        &["cm"],
        &[],
        true,
    ),
    res(
        "",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
        true,
        &["pvc"],
        &["status"],
        true,
    ),
    // Read-only: the simulator provisions volumes for bound claims and
    // attaches them for their pods; neither is written through the API.
    res(
        "",
        "persistentvolumes",
        "persistentvolume",
        "PersistentVolume",
        false,
        &["pv"],
        &[],
        false,
    ),
    in_all(res(
        "apps",
        "deployments",
        "deployment",
        "Deployment",
        true,
        &["deploy"],
        &["scale", "status"],
        true,
    )),
    in_all(res(
        "apps",
        "statefulsets",
        "statefulset",
        "StatefulSet",
        true,
        &["sts"],
        &["scale", "status"],
        true,
    )),
    in_all(res(
        "apps",
        "daemonsets",
        "daemonset",
        "DaemonSet",
        true,
        &["ds"],
        &["status"],
        true,
    )),
    // Read-only: the simulator's Deployments keep one per revision
    // (`drillbench_sim::view::Simulation::replicaset_views`).
    in_all(res(
        "apps",
        "replicasets",
        "replicaset",
        "ReplicaSet",
        true,
        &["rs"],
        &[],
        false,
    )),
    in_all(res(
        "batch",
        "jobs",
        "job",
        "Job",
        true,
        &[],
        &["status"],
        true,
    )),
    res(
        "policy",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        true,
        &["pdb"],
        &["status"],
        true,
    ),
    res(
        "storage.k8s.io",
        "storageclasses",
        "storageclass",
        "StorageClass",
        false,
        &["sc"],
        &[],
        false,
    ),
    res(
        "storage.k8s.io",
        "volumeattachments",
        "volumeattachment",
        "VolumeAttachment",
        false,
        &[],
        &[],
        false,
    ),
    res(
        "coordination.k8s.io",
        "leases",
        "lease",
        "Lease",
        true,
        &[],
        &[],
        false,
    ),
    // Stored as written, from the drill's manifests and through the API
    // (`DECLARED_KINDS` in `super::written`); no behaviour.
    res("", "secrets", "secret", "Secret", true, &[], &[], true),
    in_all(res(
        "",
        "services",
        "service",
        "Service",
        true,
        &["svc"],
        &[],
        true,
    )),
    res(
        "",
        "serviceaccounts",
        "serviceaccount",
        "ServiceAccount",
        true,
        &["sa"],
        &[],
        true,
    ),
    // The autoscaling group at its preferred version (`autoscaling/v2`):
    // an HPA is stored as written; nothing scales on metrics here.
    Resource {
        version: "v2",
        ..in_all(res(
            "autoscaling",
            "horizontalpodautoscalers",
            "horizontalpodautoscaler",
            "HorizontalPodAutoscaler",
            true,
            &["hpa"],
            &["status"],
            true,
        ))
    },
    // What a platform's rendered manifests carry beside its workloads:
    // RBAC for its controllers and users, and its network objects.
    res(
        "rbac.authorization.k8s.io",
        "roles",
        "role",
        "Role",
        true,
        &[],
        &[],
        true,
    ),
    res(
        "rbac.authorization.k8s.io",
        "rolebindings",
        "rolebinding",
        "RoleBinding",
        true,
        &[],
        &[],
        true,
    ),
    res(
        "rbac.authorization.k8s.io",
        "clusterroles",
        "clusterrole",
        "ClusterRole",
        false,
        &[],
        &[],
        true,
    ),
    res(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        "clusterrolebinding",
        "ClusterRoleBinding",
        false,
        &[],
        &[],
        true,
    ),
    res(
        "networking.k8s.io",
        "networkpolicies",
        "networkpolicy",
        "NetworkPolicy",
        true,
        &["netpol"],
        &[],
        true,
    ),
    res(
        "networking.k8s.io",
        "ingresses",
        "ingress",
        "Ingress",
        true,
        &["ing"],
        &["status"],
        true,
    ),
    res(
        "networking.k8s.io",
        "ingressclasses",
        "ingressclass",
        "IngressClass",
        false,
        &[],
        &[],
        true,
    ),
    in_all(res(
        "batch",
        "cronjobs",
        "cronjob",
        "CronJob",
        true,
        &["cj"],
        &[],
        true,
    )),
    // Stored with the status the apiextensions controllers write; each
    // serves its custom resources (`super::crds`).
    res(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        &["status"],
        true,
    ),
    // Read-only: the endpoints controller's, derived from the Services and
    // the pods they select (`super::endpoints`).
    res(
        "",
        "endpoints",
        "endpoints",
        "Endpoints",
        true,
        &["ep"],
        &[],
        false,
    ),
    // Read-only: the EndpointSlice controller's, derived from the Services
    // and the pods they select (`super::endpoint_slices`).
    res(
        "discovery.k8s.io",
        "endpointslices",
        "endpointslice",
        "EndpointSlice",
        true,
        &[],
        &[],
        false,
    ),
    res(
        "scheduling.k8s.io",
        "priorityclasses",
        "priorityclass",
        "PriorityClass",
        false,
        &["pc"],
        &[],
        true,
    ),
];

/// Kinds a captured snapshot holds that the simulator does not serve:
/// `bench sim serve --snapshot` serves them beside [`RESOURCES`], read-only
/// like everything a frozen snapshot serves.
pub const SNAPSHOT_ONLY: &[Resource] = &[
    res(
        "storage.k8s.io",
        "csinodes",
        "csinode",
        "CSINode",
        false,
        &[],
        &[],
        false,
    ),
    res(
        "velero.io",
        "backups",
        "backup",
        "Backup",
        true,
        &[],
        &[],
        false,
    ),
    res(
        "velero.io",
        "schedules",
        "schedule",
        "Schedule",
        true,
        &[],
        &[],
        false,
    ),
    res(
        "kyverno.io",
        "clusterpolicies",
        "clusterpolicy",
        "ClusterPolicy",
        false,
        &["cpol"],
        &[],
        false,
    ),
    res(
        "kyverno.io",
        "policies",
        "policy",
        "Policy",
        true,
        &["pol"],
        &[],
        false,
    ),
];

/// The served groups other than the core group, in discovery order.
pub const GROUPS: &[&str] = &[
    "apps",
    "batch",
    "policy",
    "storage.k8s.io",
    "coordination.k8s.io",
    "scheduling.k8s.io",
    "authorization.k8s.io",
    "apiextensions.k8s.io",
    "discovery.k8s.io",
    "events.k8s.io",
    "rbac.authorization.k8s.io",
    "networking.k8s.io",
    "autoscaling",
];

pub fn find(group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
}

pub fn by_kind(kind: &str) -> Option<&'static Resource> {
    RESOURCES.iter().find(|r| r.kind == kind)
}

/// The one version a built-in group is served at: `v1`, but for
/// `autoscaling`, whose HorizontalPodAutoscaler is served as `v2`, the
/// API server's preferred version since 1.23.
pub fn version_of(group: &str) -> &'static str {
    RESOURCES
        .iter()
        .find(|r| r.group == group)
        .map_or("v1", |r| r.version)
}

fn verbs(r: &Resource) -> Vec<&'static str> {
    if r.writable {
        vec![
            "create", "delete", "get", "list", "patch", "update", "watch",
        ]
    } else {
        vec!["get", "list", "watch"]
    }
}

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1", "minor": "36", "gitVersion": "v1.36.3-drillbench",
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25", "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `/api`.
pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
    })
}

/// `/apis`.
pub fn groups() -> Value {
    groups_of(GROUPS)
}

/// `/apis` for these groups.
pub fn groups_of(names: &[&str]) -> Value {
    let groups: Vec<Value> = names
        .iter()
        .map(|g| {
            let version = version_of(g);
            let gv = json!({"groupVersion": format!("{g}/{version}"), "version": version});
            json!({"name": g, "versions": [gv.clone()], "preferredVersion": gv})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/GROUP`.
pub fn group(name: &str) -> Option<Value> {
    group_of(GROUPS, name)
}

/// `/apis/GROUP` when `names` holds it.
pub fn group_of(names: &[&str], name: &str) -> Option<Value> {
    names.contains(&name).then(|| {
        let version = version_of(name);
        let gv = json!({"groupVersion": format!("{name}/{version}"), "version": version});
        json!({"kind": "APIGroup", "apiVersion": "v1", "name": name,
               "versions": [gv.clone()], "preferredVersion": gv})
    })
}

/// `/api/v1` or `/apis/GROUP/VERSION`: the resources with their
/// subresources.
pub fn resource_list(group: &str, version: &str) -> Option<Value> {
    if group == "authorization.k8s.io" && version == "v1" {
        // Reviews are created and answered, never stored (`super::access`).
        let review = |plural: &str, kind: &str| {
            json!({"name": plural, "singularName": "", "namespaced": false,
                   "kind": kind, "verbs": ["create"]})
        };
        return Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
        "groupVersion": "authorization.k8s.io/v1", "resources": [
            review("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
            review("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
        ]}));
    }
    resource_list_of(RESOURCES.iter(), GROUPS, group, version, false)
}

/// `/api/v1` or `/apis/GROUP/v1` of `table` (whose groups are `names`);
/// `read_only`: every resource's verbs are get, list and watch, and no
/// subresource is listed.
pub fn resource_list_of<'a>(
    table: impl Iterator<Item = &'a Resource>,
    names: &[&str],
    group: &str,
    version: &str,
    read_only: bool,
) -> Option<Value> {
    if version != version_of(group) || !(group.is_empty() || names.contains(&group)) {
        return None;
    }
    let mut resources = Vec::new();
    for r in table.filter(|r| r.group == group) {
        let verbs = if read_only {
            vec!["get", "list", "watch"]
        } else {
            verbs(r)
        };
        let mut entry = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": verbs, "shortNames": r.short,
        });
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        resources.push(entry);
        if read_only {
            continue;
        }
        for sub in r.subresources {
            let (kind, group, verbs): (&str, &str, Vec<&str>) = match *sub {
                "eviction" => ("Eviction", "policy", vec!["create"]),
                "scale" => ("Scale", "autoscaling", vec!["get", "patch", "update"]),
                _ => (r.kind, r.group, vec!["get", "patch", "update"]),
            };
            resources.push(json!({
                "name": format!("{}/{sub}", r.plural), "singularName": "", "namespaced": r.namespaced,
                "group": group, "version": "v1", "kind": kind, "verbs": verbs,
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": group_version, "resources": resources}))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in kinds the API server's storage puts in the `all`
    /// category (`Categories()` in `pkg/registry/core/pod/storage`,
    /// `core/service/storage`, `apps/{deployment,statefulset,daemonset,
    /// replicaset}/storage`, `batch/{job,cronjob}/storage`), as discovery
    /// lists them; the controls are kinds whose storage names no category
    /// (`core/endpoint/storage` has short names only; ConfigMaps, Nodes,
    /// Events, EndpointSlices none).
    #[test]
    fn discovery_puts_the_workload_kinds_and_services_in_the_all_category() {
        let in_all = |group: &str| -> Vec<String> {
            resource_list(group, "v1").expect("served")["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .filter(|r| r["categories"] == json!(["all"]))
                .map(|r| r["name"].as_str().unwrap_or_default().to_owned())
                .collect()
        };
        assert_eq!(in_all(""), ["pods", "services"]);
        assert_eq!(
            in_all("apps"),
            ["deployments", "statefulsets", "daemonsets", "replicasets"]
        );
        assert_eq!(in_all("batch"), ["jobs", "cronjobs"]);
        for (group, plural) in [
            ("", "configmaps"),
            ("", "nodes"),
            ("", "events"),
            ("discovery.k8s.io", "endpointslices"),
        ] {
            let list = resource_list(group, "v1").expect("served");
            let entry = list["resources"]
                .as_array()
                .and_then(|r| r.iter().find(|r| r["name"] == plural))
                .expect("listed");
            assert!(entry.get("categories").is_none(), "{plural}");
        }
    }
}
