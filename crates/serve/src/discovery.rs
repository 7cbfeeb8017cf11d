//! Discovery with the custom resources in it: the unaggregated documents
//! (`/apis`, `/apis/GROUP`, `/apis/GROUP/VERSION`) with the groups the
//! stored CustomResourceDefinitions serve beside the built-in ones, and
//! the aggregated discovery (`apidiscovery.k8s.io/v2`) that kubectl 1.30+
//! asks for first ("Aggregated Discovery" in the API Concepts page,
//! KEP-3352): every group, version and resource of `/api` or `/apis` in
//! one `APIGroupDiscoveryList`. A client that does not ask for it gets
//! the unaggregated documents, as before.

use serde_json::{Value, json};

use super::crds;
use super::resources::{self, GROUPS, Resource};
use super::written::Written;

/// The media type an aggregated answer is sent as; the client checks it
/// to tell it from an unaggregated list.
pub(super) const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which aggregated version the `Accept` header asks for, if any: the
/// first of its JSON choices that names one (client-go sends v2, then
/// v2beta1, then plain JSON).
pub(super) fn wants_aggregated(accept: &str) -> Option<&'static str> {
    for choice in accept.split(',') {
        let params: Vec<String> = choice
            .split(';')
            .map(|p| p.trim().replace(' ', ""))
            .collect();
        let Some(media) = params.first() else {
            continue;
        };
        let has = |p: &str| params.iter().any(|q| q == p);
        if media == "application/json"
            && has("g=apidiscovery.k8s.io")
            && has("as=APIGroupDiscoveryList")
        {
            if has("v=v2") {
                return Some("v2");
            }
            if has("v=v2beta1") {
                return Some("v2beta1");
            }
        }
        if media == "application/json" && params.len() == 1 {
            return None;
        }
    }
    None
}

/// The media type of an aggregated answer of `version`.
pub(super) fn aggregated_media_type(version: &str) -> &'static str {
    if version == "v2beta1" {
        AGGREGATED_V2BETA1
    } else {
        AGGREGATED_V2
    }
}

/// `/apis`: the built-in groups, then the custom resources' groups, each
/// with its versions in preference order.
pub(super) fn groups(written: &Written) -> Value {
    let mut list = resources::groups();
    if let Some(groups) = list["groups"].as_array_mut() {
        for (name, versions) in crds::groups(written) {
            groups.push(group_entry(name, &versions));
        }
    }
    list
}

fn group_entry(name: &str, versions: &[&str]) -> Value {
    let gvs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": gvs, "preferredVersion": gvs[0].clone()})
}

/// `/apis/GROUP`.
pub(super) fn group(written: &Written, name: &str) -> Option<Value> {
    if let Some(group) = resources::group(name) {
        return Some(group);
    }
    let (_, versions) = crds::groups(written)
        .into_iter()
        .find(|(g, _)| *g == name)?;
    let mut entry = group_entry(name, &versions);
    entry["kind"] = json!("APIGroup");
    entry["apiVersion"] = json!("v1");
    Some(entry)
}

/// `/apis/GROUP/VERSION` (or `/api/v1`): a built-in group's resources, or
/// the custom resources a group and version serve.
pub(super) fn resource_list(written: &Written, group: &str, version: &str) -> Option<Value> {
    if let Some(list) = resources::resource_list(group, version) {
        return Some(list);
    }
    let served: Vec<&'static Resource> = crds::all(written)
        .into_iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut entries = Vec::new();
    for r in served {
        entries.push(json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"],
            "shortNames": r.short, "categories": r.categories,
        }));
        for sub in r.subresources {
            let mut entry = json!({
                "name": format!("{}/{sub}", r.plural), "singularName": "", "namespaced": r.namespaced,
                "kind": r.kind, "verbs": ["get", "patch", "update"],
            });
            // A custom resource's Scale is autoscaling/v1's, as the CRD
            // handler's discovery says.
            if *sub == "scale" {
                entry["kind"] = json!("Scale");
                entry["group"] = json!("autoscaling");
                entry["version"] = json!("v1");
            }
            entries.push(entry);
        }
    }
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1",
                "groupVersion": format!("{group}/{version}"), "resources": entries}))
}

/// The aggregated document of `/api` (`core`) or `/apis`, built from the
/// unaggregated lists so both always say the same.
pub(super) fn aggregated(written: &Written, core: bool, version: &str) -> Value {
    let mut items = Vec::new();
    if core {
        if let Some(list) = resources::resource_list("", "v1") {
            items.push(json!({"metadata": {"creationTimestamp": null},
                              "versions": [version_entry("", "v1", &list)]}));
        }
    } else {
        let mut groups: Vec<(String, Vec<String>)> = GROUPS
            .iter()
            .map(|g| ((*g).to_owned(), vec![resources::version_of(g).to_owned()]))
            .collect();
        for (name, versions) in crds::groups(written) {
            groups.push((
                name.to_owned(),
                versions.iter().map(|v| (*v).to_owned()).collect(),
            ));
        }
        for (name, versions) in groups {
            let entries: Vec<Value> = versions
                .iter()
                .filter_map(|v| {
                    resource_list(written, &name, v).map(|list| version_entry(&name, v, &list))
                })
                .collect();
            items.push(
                json!({"metadata": {"name": name, "creationTimestamp": null},
                              "versions": entries}),
            );
        }
    }
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": format!("apidiscovery.k8s.io/{version}"),
           "metadata": {}, "items": items})
}

/// One version of an aggregated group: its resources, each with its
/// subresources folded in.
fn version_entry(group: &str, version: &str, list: &Value) -> Value {
    let entries = list["resources"].as_array().cloned().unwrap_or_default();
    let mut resources: Vec<Value> = Vec::new();
    for entry in &entries {
        let name = entry["name"].as_str().unwrap_or_default();
        let kind = entry["kind"].clone();
        let scope = if entry["namespaced"] == true {
            "Namespaced"
        } else {
            "Cluster"
        };
        if let Some((parent, sub)) = name.split_once('/') {
            let kind_group = entry.get("group").and_then(Value::as_str).unwrap_or(group);
            let kind_version = entry
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or(version);
            if let Some(parent) = resources.iter_mut().find(|r| r["resource"] == parent) {
                let subs = parent["subresources"].as_array_mut();
                let item = json!({"subresource": sub,
                                  "responseKind": {"group": kind_group, "version": kind_version, "kind": kind},
                                  "verbs": entry["verbs"].clone()});
                match subs {
                    Some(subs) => subs.push(item),
                    None => parent["subresources"] = json!([item]),
                }
            }
            continue;
        }
        let mut resource = json!({
            "resource": name,
            "responseKind": {"group": group, "version": version, "kind": kind},
            "scope": scope,
            "singularResource": entry["singularName"].clone(),
            "verbs": entry["verbs"].clone(),
        });
        for optional in ["shortNames", "categories"] {
            if entry[optional].as_array().is_some_and(|a| !a.is_empty()) {
                resource[optional] = entry[optional].clone();
            }
        }
        resources.push(resource);
    }
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// client-go's discovery client sends v2, then v2beta1, then plain
    /// JSON; a client that asks only for JSON (the control) gets none.
    #[test]
    fn the_aggregated_version_is_read_from_the_accept_header() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wants_aggregated(kubectl), Some("v2"));
        assert_eq!(
            wants_aggregated(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            ),
            Some("v2beta1")
        );
        assert_eq!(wants_aggregated("application/json, */*"), None);
        assert_eq!(wants_aggregated(""), None);
    }

    /// Every resource of the unaggregated lists is in the aggregated one,
    /// with its scope and subresources (`pods/eviction` answered as a
    /// `policy/v1` Eviction); the core document has the core group only.
    #[test]
    fn the_aggregated_document_says_what_the_lists_say() {
        let written = Written::default();
        let core = aggregated(&written, true, "v2");
        assert_eq!(core["kind"], "APIGroupDiscoveryList");
        let resources = core["items"][0]["versions"][0]["resources"]
            .as_array()
            .expect("resources");
        let pods = resources
            .iter()
            .find(|r| r["resource"] == "pods")
            .expect("pods");
        assert_eq!(pods["scope"], "Namespaced");
        assert_eq!(pods["shortNames"], json!(["po"]));
        let eviction = pods["subresources"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["subresource"] == "eviction"))
            .expect("eviction");
        assert_eq!(eviction["responseKind"]["group"], "policy");
        let nodes = resources
            .iter()
            .find(|r| r["resource"] == "nodes")
            .expect("nodes");
        assert_eq!(nodes["scope"], "Cluster");
        let groups = aggregated(&written, false, "v2");
        let names: Vec<&str> = groups["items"]
            .as_array()
            .expect("items")
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, GROUPS);
        for item in groups["items"].as_array().expect("items") {
            let name = item["metadata"]["name"].as_str().expect("a name");
            let plain =
                resources::resource_list(name, resources::version_of(name)).expect("served");
            let top: Vec<&Value> = plain["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .filter(|r| !r["name"].as_str().unwrap_or_default().contains('/'))
                .map(|r| &r["name"])
                .collect();
            let folded: Vec<&Value> = item["versions"][0]["resources"]
                .as_array()
                .expect("resources")
                .iter()
                .map(|r| &r["resource"])
                .collect();
            assert_eq!(folded, top, "{name}");
        }
    }
}
