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
