//! The Service network: each Service's ClusterIP allocated from the
//! service CIDR, as the API server's Service REST storage allocates it
//! (`pkg/registry/core/service/storage/alloc.go`), and the `kubernetes`
//! Service of the `default` namespace the API server keeps for itself
//! (`pkg/controlplane/controller/kubernetesservice`).
//!
//! The rules, from the page "Service ClusterIP allocation"
//! (kubernetes.io/docs/concepts/services-networking/cluster-ip-allocation)
//! and the allocator:
//! - the range is kubeadm's default `--service-cluster-ip-range`,
//!   10.96.0.0/12; its network and broadcast addresses are never given;
//! - the `kubernetes` Service has the range's first address, 10.96.0.1;
//! - a Service that asks for an address gets it if it is in the range and
//!   free, else a 422 as `allocIPs` words it; a headless Service
//!   (`clusterIP: None`) and an ExternalName Service get none;
//! - a Service that asks for none gets one from the upper band first: the
//!   lower `min(max(16, size/16), 256)` addresses are kept for those asked
//!   for by address (KEP-3070).
//!
//! Where the façade departs: the allocator picks a random free address of
//! the upper band; here it is the lowest free one, so a replay allocates
//! the same addresses.

use std::collections::BTreeSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::api::ApiError;
use super::history::text;

/// kubeadm's `--service-cluster-ip-range` default.
const SERVICE_CIDR: (Ipv4Addr, u32) = (Ipv4Addr::new(10, 96, 0, 0), 12);

pub(super) const KUBERNETES_SERVICE_IP: Ipv4Addr = Ipv4Addr::new(10, 96, 0, 1);

fn range() -> (u32, u32) {
    let (base, prefix) = SERVICE_CIDR;
    (u32::from(base), 1u32 << (32 - prefix))
}

fn in_range(ip: Ipv4Addr) -> bool {
    let (base, size) = range();
    let n = u32::from(ip);
    n > base && n < base + size - 1
}

/// The size of the lower band kept for addresses asked for by number.
fn static_band() -> u32 {
    let (_, size) = range();
    (size / 16).clamp(16, 256)
}

/// Gives a Service about to be created its ClusterIP, or refuses the
/// address it asked for; `taken` are the addresses of the Services that
/// exist. Fills `clusterIPs`, `ipFamilies` and `ipFamilyPolicy` as the
/// REST storage does for a single-stack IPv4 Service.
pub(super) fn allocate(service: &mut Value, taken: &BTreeSet<Ipv4Addr>) -> Result<(), ApiError> {
    let name = text(service, "/metadata/name");
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return Ok(());
    }
    let asked = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .filter(|ip| !ip.is_empty())
        .map(str::to_owned);
    let ip = match asked.as_deref() {
        Some("None") => "None".to_owned(),
        Some(asked) => {
            let refuse = |why: String| {
                ApiError::invalid(format!(
                    "Service \"{name}\" is invalid: spec.clusterIPs: Invalid value: []string{{{asked:?}}}: failed to allocate IP {asked}: {why}"
                ))
            };
            let ip: Ipv4Addr = asked.parse().map_err(|_| {
                ApiError::invalid(format!(
                    "Service \"{name}\" is invalid: spec.clusterIPs[0]: Invalid value: {asked:?}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
                ))
            })?;
            if !in_range(ip) {
                let (base, prefix) = SERVICE_CIDR;
                return Err(refuse(format!(
                    "the provided IP ({ip}) is not in the valid range. The range of valid IPs is {base}/{prefix}"
                )));
            }
            if taken.contains(&ip) {
                return Err(refuse("provided IP is already allocated".to_owned()));
            }
            ip.to_string()
        }
        None => next_free(taken)
            .ok_or_else(|| {
                ApiError::new(
                    500,
                    "InternalError",
                    "Internal error occurred: failed to allocate a serviceIP: range is full",
                )
            })?
            .to_string(),
    };
    spec.insert("clusterIP".to_owned(), json!(ip));
    spec.insert("clusterIPs".to_owned(), json!([ip]));
    spec.entry("ipFamilies").or_insert_with(|| json!(["IPv4"]));
    spec.entry("ipFamilyPolicy")
        .or_insert_with(|| json!("SingleStack"));
    Ok(())
}

/// An update of a Service, as the Service REST storage's `beginUpdate`
/// and `ValidateServiceUpdate` take it (`pkg/registry/core/service/storage`
/// and `pkg/apis/core/validation`): an address the update omits is the
/// one allocated before (`patchAllocatedValues`, so resubmitting the
/// manifest a Service was created from succeeds), `clusterIP` and
/// `clusterIPs` are brought into line (`normalizeClusterIPs`), and an
/// allocated address that would change is the API server's 422
/// (`validateUpgradeDowngradeClusterIPs`: `may not change once set`).
/// `wanted` is defaulted already, as the API server decodes it.
pub(super) fn update(current: &Value, wanted: &mut Value) -> Result<(), ApiError> {
    let name = text(wanted, "/metadata/name");
    let before = Addresses::of(current);
    let Some(spec) = wanted.get_mut("spec").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let mut after = Addresses::of_spec(spec);
    // `patchAllocatedValues`.
    if before.needs_ip() && after.needs_ip() {
        if after.ip.is_empty() {
            after.ip = before.ip.clone();
        }
        if after.ips.is_empty() && !before.ips.is_empty() {
            after.ips = before.ips.clone();
        }
        for family in ["ipFamilies", "ipFamilyPolicy"] {
            if let Some(kept) = current.pointer(&format!("/spec/{family}"))
                && spec.get(family).is_none_or(Value::is_null)
            {
                spec.insert(family.to_owned(), kept.clone());
            }
        }
    }
    // `normalizeClusterIPs`, for an update.
    if !before.ips.is_empty() && after.ips.is_empty() && before.ip == after.ip {
        after.ips = before.ips.clone();
    }
    if before.ip != after.ip {
        if !before.ip.is_empty() && after.ip.is_empty() {
            if before.ips == after.ips {
                after.ips.clear();
            }
        } else if before.ips == after.ips {
            after.ips = vec![after.ip.clone()];
        }
    }
    let errors = changed_ips(&before, &after);
    if !errors.is_empty() {
        return Err(super::crds::invalid("Service", "", &name, &errors));
    }
    if after.needs_ip() {
        if after.ip.is_empty() {
            spec.remove("clusterIP");
        } else {
            spec.insert("clusterIP".to_owned(), json!(after.ip));
        }
        if after.ips.is_empty() {
            spec.remove("clusterIPs");
        } else {
            spec.insert("clusterIPs".to_owned(), json!(after.ips));
        }
    }
    Ok(())
}

/// A Service's type and addresses, as the update rules read them.
struct Addresses {
    kind: String,
    ip: String,
    ips: Vec<String>,
}

impl Addresses {
    fn of(service: &Value) -> Addresses {
        service
            .get("spec")
            .and_then(Value::as_object)
            .map(Addresses::of_spec)
            .unwrap_or(Addresses {
                kind: String::new(),
                ip: String::new(),
                ips: Vec::new(),
            })
    }

    fn of_spec(spec: &serde_json::Map<String, Value>) -> Addresses {
        let field = |name: &str| {
            spec.get(name)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Addresses {
            kind: field("type"),
            ip: field("clusterIP"),
            ips: spec
                .get("clusterIPs")
                .and_then(Value::as_array)
                .map(|ips| {
                    ips.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// `needsClusterIP`: every type but ExternalName.
    fn needs_ip(&self) -> bool {
        self.kind != "ExternalName"
    }

    /// `isHeadlessService`.
    fn headless(&self) -> bool {
        self.kind == "ClusterIP" && self.ips.len() == 1 && self.ips[0] == "None"
    }
}

/// `validateUpgradeDowngradeClusterIPs`, for single-stack Services: the
/// addresses held may not change, nor the primary be released.
fn changed_ips(before: &Addresses, after: &Addresses) -> Vec<super::crds::FieldError> {
    if !before.needs_ip() || !after.needs_ip() || (before.headless() && after.headless()) {
        return Vec::new();
    }
    // The value printed is the new `clusterIPs` as Go's `%#v` prints a
    // `[]string`.
    let quoted: Vec<String> = after.ips.iter().map(|ip| format!("{ip:?}")).collect();
    let shown = if after.ips.is_empty() {
        "[]string(nil)".to_owned()
    } else {
        format!("[]string{{{}}}", quoted.join(", "))
    };
    let error = |index: usize, detail: &str| super::crds::FieldError {
        field: format!("spec.clusterIPs[{index}]"),
        reason: "FieldValueInvalid",
        body: format!("Invalid value: {shown}: {detail}"),
    };
    let mut errors = Vec::new();
    match before.ips.len().cmp(&after.ips.len()) {
        std::cmp::Ordering::Equal => {
            for (i, (old, new)) in before.ips.iter().zip(&after.ips).enumerate() {
                if old != new {
                    errors.push(error(i, "may not change once set"));
                }
            }
        }
        std::cmp::Ordering::Greater => {
            if after.ips.is_empty() {
                errors.push(error(0, "primary clusterIP can not be unset"));
            } else if before.ips[0] != after.ips[0] {
                errors.push(error(0, "may not change once set"));
            }
        }
        std::cmp::Ordering::Less => {
            if !before.ips.is_empty() && before.ips[0] != after.ips[0] {
                errors.push(error(0, "may not change once set"));
            }
        }
    }
    errors
}

/// The lowest free address of the upper band, else of the lower one.
fn next_free(taken: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    let (base, size) = range();
    let first = base + 1;
    let last = base + size - 2;
    let upper = base + static_band() + 1;
    (upper..=last)
        .chain(first..upper)
        .map(Ipv4Addr::from)
        .find(|ip| !taken.contains(ip))
}

/// The addresses the given Services hold.
pub(super) fn taken<'a>(services: impl IntoIterator<Item = &'a Value>) -> BTreeSet<Ipv4Addr> {
    services
        .into_iter()
        .filter_map(|s| s.pointer("/spec/clusterIP").and_then(Value::as_str))
        .filter_map(|ip| ip.parse().ok())
        .collect()
}

/// The `kubernetes` Service as the API server's controller keeps it:
/// HTTPS on 443 to the API servers' 6443, no selector (its endpoints are
/// the API servers, [`kubernetes_endpoint_slice`]).
pub(super) fn kubernetes_service() -> Value {
    let ip = KUBERNETES_SERVICE_IP.to_string();
    json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"component": "apiserver", "provider": "kubernetes"},
        },
        "spec": {
            "clusterIP": ip,
            "clusterIPs": [ip],
            "internalTrafficPolicy": "Cluster",
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
            "sessionAffinity": "None",
            "type": "ClusterIP",
        },
    })
}

/// The API servers' addresses, as the endpoint reconciler publishes
/// them (`pkg/controlplane/reconcilers`): the InternalIP of each
/// control-plane node that is Ready (whose API server still renews its
/// lease), in address order.
pub(super) fn api_server_ips<'a>(nodes: impl IntoIterator<Item = &'a Value>) -> Vec<String> {
    let mut ips: Vec<String> = nodes
        .into_iter()
        .filter(|n| {
            n.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .is_some_and(|l| l.contains_key(CONTROL_PLANE_LABEL))
        })
        .filter(|n| {
            n.pointer("/status/conditions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
        .filter(|n| n.pointer("/metadata/deletionTimestamp").is_none())
        .filter_map(|n| {
            n.pointer("/status/addresses")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find(|a| a["type"] == "InternalIP")
                .and_then(|a| a["address"].as_str())
                .map(str::to_owned)
        })
        .collect();
    ips.sort_by_key(|ip| ip.parse::<Ipv4Addr>().ok());
    ips
}

const CONTROL_PLANE_LABEL: &str = "node-role.kubernetes.io/control-plane";

/// The port the API servers listen on, the `kubernetes` Service's
/// target.
const API_SERVER_PORT: u16 = 6443;

fn https_port() -> Value {
    json!({"name": "https", "port": API_SERVER_PORT, "protocol": "TCP"})
}

/// The `kubernetes` EndpointSlice the reconciler writes beside its
/// Endpoints (`endpointSliceFromEndpoints`): named as the Service,
/// labelled with it, one ready endpoint per API server.
pub(super) fn kubernetes_endpoint_slice(ips: &[String], created: &Value) -> Value {
    let endpoints: Vec<Value> = ips
        .iter()
        .map(|ip| json!({"addresses": [ip], "conditions": {"ready": true}}))
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "uid": super::endpoint_slices::uid(super::endpoint_slices::fnv1a("default/kubernetes/slice")),
            "creationTimestamp": created,
            "labels": {super::endpoint_slices::SERVICE_NAME_LABEL: "kubernetes"},
        },
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [https_port()],
    })
}

/// The `kubernetes` Endpoints: one subset of the API servers' addresses
/// on the HTTPS port; the EndpointSlice mirroring controller skips it
/// (the reconciler writes the slice itself).
pub(super) fn kubernetes_endpoints(ips: &[String], created: &Value) -> Value {
    let subsets = if ips.is_empty() {
        json!([])
    } else {
        let addresses: Vec<Value> = ips.iter().map(|ip| json!({"ip": ip})).collect();
        json!([{"addresses": addresses, "ports": [https_port()]}])
    };
    json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "uid": super::endpoint_slices::uid(super::endpoint_slices::fnv1a("default/kubernetes/endpoints")),
            "creationTimestamp": created,
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": subsets,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(name: &str, spec: Value) -> Value {
        json!({"metadata": {"name": name, "namespace": "apps"}, "spec": spec})
    }

    fn allocated(spec: Value, taken: &[&str]) -> Result<Value, String> {
        let taken: BTreeSet<Ipv4Addr> = taken.iter().map(|t| t.parse().expect("an IP")).collect();
        let mut object = service("web", spec);
        allocate(&mut object, &taken)
            .map(|()| object["spec"].take())
            .map_err(|e| {
                e.status()["message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
    }

    /// The page "Service ClusterIP allocation": a Service asking for no
    /// address gets one of the upper band (`min(max(16, 2^20/16), 256)`
    /// = 256 addresses kept below it), the lowest free one here; the
    /// control: with the upper band full it falls back to the lower.
    fn allocated_service(ip: &str) -> Value {
        json!({"metadata": {"name": "web"}, "spec": {"type": "ClusterIP", "clusterIP": ip,
               "clusterIPs": [ip], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack"}})
    }

    /// `patchAllocatedValues`: an update that omits the addresses (a
    /// `kubectl replace` of the created manifest) keeps them; one that
    /// changes `clusterIP` is refused with `validateUpgradeDowngradeClusterIPs`'s
    /// words, whether or not `clusterIPs` came with it; one that sends the
    /// same address (the control) passes.
    #[test]
    fn an_allocated_cluster_ip_is_kept_and_may_not_change() {
        let current = allocated_service("10.96.0.10");
        let mut omitted = json!({"metadata": {"name": "web"}, "spec": {"type": "ClusterIP"}});
        update(&current, &mut omitted).expect("kept");
        assert_eq!(omitted["spec"]["clusterIP"], "10.96.0.10");
        assert_eq!(omitted["spec"]["clusterIPs"], json!(["10.96.0.10"]));
        assert_eq!(omitted["spec"]["ipFamilyPolicy"], "SingleStack");
        let mut singular = allocated_service("10.96.0.10");
        singular["spec"]["clusterIP"] = json!("10.96.0.50");
        let refused = update(&current, &mut singular).expect_err("changed");
        assert_eq!(
            refused.status()["message"],
            "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.50\"}: may not change once set"
        );
        assert_eq!(refused.status()["code"], 422);
        let mut both = allocated_service("10.96.0.50");
        assert!(update(&current, &mut both).is_err());
        let mut same = allocated_service("10.96.0.10");
        update(&current, &mut same).expect("unchanged");
        let mut released = allocated_service("10.96.0.10");
        released["spec"]["clusterIP"] = json!("");
        released["spec"]["clusterIPs"] = json!([]);
        update(&current, &mut released).expect("an empty address is the allocated one");
        assert_eq!(released["spec"]["clusterIP"], "10.96.0.10");
        // ExternalName has no address to keep.
        let mut external = json!({"metadata": {"name": "web"}, "spec": {"type": "ExternalName"}});
        update(&current, &mut external).expect("no address");
        assert!(external["spec"].get("clusterIP").is_none());
    }

    #[test]
    fn a_service_gets_an_address_of_the_upper_band_first() {
        let spec = allocated(json!({"type": "ClusterIP"}), &[]).expect("allocated");
        assert_eq!(spec["clusterIP"], "10.96.1.1");
        assert_eq!(spec["clusterIPs"], json!(["10.96.1.1"]));
        assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
        assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
        let next = allocated(json!({}), &["10.96.1.1"]).expect("allocated");
        assert_eq!(next["clusterIP"], "10.96.1.2");
        assert_eq!(static_band(), 256);
        let mut full = BTreeSet::new();
        let (base, size) = range();
        for n in (base + 257)..(base + size - 1) {
            full.insert(Ipv4Addr::from(n));
        }
        assert_eq!(next_free(&full), Some(Ipv4Addr::new(10, 96, 0, 1)));
    }

    /// Service REST storage's `allocIPs`: an address already held is a
    /// 422 in its words, one outside the range too; the controls: a free
    /// address in the range is kept, a headless Service and an
    /// ExternalName Service get none.
    #[test]
    fn an_address_asked_for_is_refused_when_taken_or_out_of_range() {
        assert_eq!(
            allocated(json!({"clusterIP": "10.96.0.10"}), &["10.96.0.10"]).expect_err("taken"),
            "Service \"web\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.96.0.10\"}: failed to allocate IP 10.96.0.10: provided IP is already allocated"
        );
        assert_eq!(
            allocated(json!({"clusterIP": "10.95.0.10"}), &[]).expect_err("outside"),
            "Service \"web\" is invalid: spec.clusterIPs: Invalid value: []string{\"10.95.0.10\"}: failed to allocate IP 10.95.0.10: the provided IP (10.95.0.10) is not in the valid range. The range of valid IPs is 10.96.0.0/12"
        );
        let kept = allocated(json!({"clusterIP": "10.96.0.10"}), &["10.96.0.1"]).expect("free");
        assert_eq!(kept["clusterIPs"], json!(["10.96.0.10"]));
        let headless = allocated(json!({"clusterIP": "None"}), &[]).expect("headless");
        assert_eq!(headless["clusterIPs"], json!(["None"]));
        let external = allocated(json!({"type": "ExternalName"}), &[]).expect("external");
        assert!(external.get("clusterIP").is_none());
        // The network and broadcast addresses are never given.
        assert!(!in_range(Ipv4Addr::new(10, 96, 0, 0)));
        assert!(!in_range(Ipv4Addr::new(10, 111, 255, 255)));
        assert!(in_range(Ipv4Addr::new(10, 111, 255, 254)));
    }

    /// `pkg/controlplane/reconcilers`: the `kubernetes` endpoints are the
    /// ready control-plane nodes' addresses; the controls: a NotReady
    /// control plane and a worker are not endpoints.
    #[test]
    fn the_api_servers_are_the_ready_control_planes() {
        let node = |name: &str, ip: &str, control_plane: bool, ready: &str| {
            let labels = if control_plane {
                json!({CONTROL_PLANE_LABEL: ""})
            } else {
                json!({})
            };
            json!({"metadata": {"name": name, "labels": labels},
                   "status": {"conditions": [{"type": "Ready", "status": ready}],
                              "addresses": [{"type": "InternalIP", "address": ip}]}})
        };
        let nodes = [
            node("cp-2", "10.0.0.12", true, "True"),
            node("cp-1", "10.0.0.3", true, "True"),
            node("cp-3", "10.0.0.4", true, "Unknown"),
            node("worker", "10.0.0.5", false, "True"),
        ];
        let ips = api_server_ips(&nodes);
        assert_eq!(ips, ["10.0.0.3", "10.0.0.12"]);
        let slice = kubernetes_endpoint_slice(&ips, &json!(null));
        assert_eq!(slice["endpoints"][1]["addresses"], json!(["10.0.0.12"]));
        assert_eq!(slice["ports"][0]["port"], 6443);
        let endpoints = kubernetes_endpoints(&[], &json!(null));
        assert_eq!(endpoints["subsets"], json!([]));
    }
}
