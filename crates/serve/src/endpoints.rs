//! The legacy v1 Endpoints the endpoints controller keeps for each
//! Service (`pkg/controller/endpoint/endpoints_controller.go`,
//! `syncService`), derived from the Service and the pods it selects like
//! its EndpointSlices (`super::endpoint_slices`, whose pod selection and
//! port resolution it shares):
//! - a Service of type ExternalName, or without a selector, gets none;
//! - a pod is in it while it is not terminal, has an IP and is not being
//!   deleted (`ShouldPodBeInEndpoints` with terminating pods included only
//!   when the Service publishes unready addresses);
//! - a Ready pod (or any, with `publishNotReadyAddresses`) is an address,
//!   the others not-ready addresses (`addEndpointSubset`), for each of the
//!   Service's ports the pod resolves (`FindPort`); a headless Service
//!   without ports lists its pods with no ports;
//! - the subsets are repacked: addresses offering the same ports share a
//!   subset, sorted by IP then uid (`RepackSubsets`, `LessEndpointAddress`
//!   in `pkg/api/v1/endpoints/util.go`); an address ready for one port and
//!   not for another is not ready;
//! - named as the Service, with its labels, `service.kubernetes.io/headless`
//!   for a headless one and the controller's
//!   `endpoints.kubernetes.io/managed-by: endpoint-controller`; at most
//!   1000 addresses (`maxCapacity`), ready ones kept first, marked
//!   `endpoints.kubernetes.io/over-capacity: truncated`.
//!
//! Where the façade departs: upstream orders subsets and the ports of a
//! subset by an MD5 of their Go dump; here they are in the order of the
//! Service's ports. The `last-change-trigger-time` annotation is not set.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::endpoint_slices::{address_types, endpoint_ports, fnv1a, pod_ips, selects, uid};
use super::history::text;

const MANAGED_BY_LABEL: &str = "endpoints.kubernetes.io/managed-by";
const CONTROLLER_NAME: &str = "endpoint-controller";
const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
const OVER_CAPACITY: &str = "endpoints.kubernetes.io/over-capacity";
/// The controller's `maxCapacity`.
const MAX_CAPACITY: usize = 1000;

/// An address as the repacking keys it: IP, then the pod's uid.
type AddressKey = (String, String);

/// The addresses offering a port, each with whether it is ready there.
type Offering = BTreeMap<AddressKey, (Value, bool)>;

/// The Endpoints of `service`, given the pods of its namespace; `None`
/// for a Service the controller leaves alone.
pub(super) fn endpoints_for<'a>(
    service: &Value,
    pods: impl IntoIterator<Item = &'a Value>,
) -> Option<Value> {
    if text(service, "/spec/type") == "ExternalName" {
        return None;
    }
    let selector = service
        .pointer("/spec/selector")
        .and_then(Value::as_object)?;
    let publish_not_ready = service
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let headless = text(service, "/spec/clusterIP") == "None";
    let family = address_types(service)[0];
    let has_ports = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .is_some_and(|p| !p.is_empty());
    // Per port (in the Service's order; `None` for a headless Service's
    // port-less subset), each address and whether it is ready there.
    let mut by_port: Vec<(Option<Value>, Offering)> = Vec::new();
    for pod in pods {
        if !selects(selector, pod) || !should_be_in_endpoints(pod, publish_not_ready) {
            continue;
        }
        // `podToEndpointAddressForService`: the pod's IP of the
        // Service's family; none, and the pod is skipped.
        let Some(ip) = pod_ips(pod).find(|ip| (family == "IPv6") == ip.contains(':')) else {
            continue;
        };
        let mut address = json!({
            "ip": ip,
            "targetRef": {"kind": "Pod", "namespace": text(pod, "/metadata/namespace"),
                          "name": text(pod, "/metadata/name"), "uid": text(pod, "/metadata/uid")},
        });
        if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
            address["nodeName"] = json!(node);
        }
        let hostname = text(pod, "/spec/hostname");
        if !hostname.is_empty() && text(pod, "/spec/subdomain") == text(service, "/metadata/name") {
            address["hostname"] = json!(hostname);
        }
        let ready = publish_not_ready || is_ready(pod);
        let key = (ip.to_owned(), text(pod, "/metadata/uid"));
        let ports: Vec<Option<Value>> = if has_ports {
            endpoint_ports(service, pod).into_iter().map(Some).collect()
        } else if headless {
            vec![None]
        } else {
            Vec::new()
        };
        for port in ports {
            let entry = match by_port.iter_mut().find(|(p, _)| *p == port) {
                Some(entry) => entry,
                None => {
                    by_port.push((port, BTreeMap::new()));
                    by_port.last_mut().expect("just pushed")
                }
            };
            // An address not ready on a port stays not ready there.
            let was = entry.1.get(&key).map(|(_, r)| *r);
            entry
                .1
                .insert(key.clone(), (address.clone(), was.unwrap_or(true) && ready));
        }
    }
    let mut subsets = repack(by_port);
    let truncated = truncate(&mut subsets);
    let name = text(service, "/metadata/name");
    let mut labels = service
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.remove(HEADLESS_LABEL);
    if headless {
        labels.insert(HEADLESS_LABEL.to_owned(), json!(""));
    }
    labels.insert(MANAGED_BY_LABEL.to_owned(), json!(CONTROLLER_NAME));
    let mut metadata = json!({
        "name": name,
        "namespace": text(service, "/metadata/namespace"),
        "uid": uid(fnv1a(&format!("{}/{name}/endpoints", text(service, "/metadata/namespace")))),
        "creationTimestamp": service.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null),
        "labels": labels,
    });
    if truncated {
        metadata["annotations"] = json!({OVER_CAPACITY: "truncated"});
    }
    let mut endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": metadata});
    if !subsets.is_empty() {
        endpoints["subsets"] = json!(subsets);
    }
    Some(endpoints)
}

/// `ShouldPodBeInEndpoints(pod, includeTerminating)`.
fn should_be_in_endpoints(pod: &Value, include_terminating: bool) -> bool {
    let phase = text(pod, "/status/phase");
    let terminating = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    phase != "Succeeded"
        && phase != "Failed"
        && pod_ips(pod).next().is_some()
        && (include_terminating || !terminating)
}

fn is_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// `RepackSubsets`: ports offered by the same addresses (with the same
/// readiness) share one subset.
fn repack(by_port: Vec<(Option<Value>, Offering)>) -> Vec<Value> {
    let mut groups: Vec<(Offering, Vec<Value>)> = Vec::new();
    for (port, addresses) in by_port {
        match groups.iter_mut().find(|(a, _)| *a == addresses) {
            Some((_, ports)) => ports.extend(port),
            None => groups.push((addresses, port.into_iter().collect())),
        }
    }
    groups
        .into_iter()
        .filter(|(addresses, _)| !addresses.is_empty())
        .map(|(addresses, ports)| {
            // BTreeMap order: by IP (byte order), then uid.
            let pick = |ready: bool| -> Vec<Value> {
                addresses
                    .values()
                    .filter(|(_, r)| *r == ready)
                    .map(|(a, _)| a.clone())
                    .collect()
            };
            let mut subset = Map::new();
            for (field, list) in [
                ("addresses", pick(true)),
                ("notReadyAddresses", pick(false)),
            ] {
                if !list.is_empty() {
                    subset.insert(field.to_owned(), json!(list));
                }
            }
            if !ports.is_empty() {
                subset.insert("ports".to_owned(), json!(ports));
            }
            Value::Object(subset)
        })
        .collect()
}

/// `truncateEndpoints`: past `maxCapacity` addresses, not-ready ones go
/// first, then ready ones, each subset keeping its share (rounded up).
fn truncate(subsets: &mut [Value]) -> bool {
    let count = |s: &Value, field: &str| s[field].as_array().map_or(0, Vec::len);
    let ready: usize = subsets.iter().map(|s| count(s, "addresses")).sum();
    let not_ready: usize = subsets.iter().map(|s| count(s, "notReadyAddresses")).sum();
    if ready + not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = ready > MAX_CAPACITY;
    let (max, total, field) = if truncate_ready {
        (MAX_CAPACITY, ready, "addresses")
    } else {
        (MAX_CAPACITY - ready, not_ready, "notReadyAddresses")
    };
    let mut room = max;
    for subset in subsets.iter_mut() {
        let here = count(subset, field);
        let share = (here * max).div_ceil(total.max(1)).min(room);
        if let Some(list) = subset.get_mut(field).and_then(Value::as_array_mut) {
            list.truncate(share);
        }
        if truncate_ready && let Some(fields) = subset.as_object_mut() {
            fields.remove("notReadyAddresses");
        }
        room -= count(subset, field);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint_slices::tests::with;

    fn service(spec: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "apps", "uid": "s", "labels": {"team": "a"}},
               "spec": spec})
    }

    fn web() -> Value {
        service(json!({"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]}))
    }

    fn pod(name: &str, ip: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "apps", "uid": format!("{name}-uid"),
                            "labels": {"app": "web"}},
               "spec": {"nodeName": "node-1", "containers": [{"name": "c"}]},
               "status": {"phase": "Running", "podIP": ip,
                          "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    /// Each subset as `ready IPs | not-ready IPs | ports`.
    fn summary(endpoints: Option<Value>) -> String {
        let Some(endpoints) = endpoints else {
            return "none".to_owned();
        };
        let list = |s: &Value, field: &str, key: &str| -> String {
            s[field]
                .as_array()
                .into_iter()
                .flatten()
                .map(|a| a[key].to_string().trim_matches('"').to_owned())
                .collect::<Vec<_>>()
                .join(",")
        };
        endpoints["subsets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                format!(
                    "{} | {} | {}",
                    list(s, "addresses", "ip"),
                    list(s, "notReadyAddresses", "ip"),
                    list(s, "ports", "port")
                )
            })
            .collect::<Vec<_>>()
            .join(" ; ")
    }

    /// The endpoints controller's rules, in case/control pairs, each row
    /// naming the function of `endpoints_controller.go` (or
    /// `pkg/api/v1/endpoints/util.go`) it transcribes.
    #[test]
    fn endpoints_follow_the_endpoints_controllers_rules() {
        let terminating = with(
            pod("b", "10.244.0.3", true),
            "/metadata/deletionTimestamp",
            json!("2026-01-01T00:01:00Z"),
        );
        let rows: Vec<(&str, Value, Vec<Value>, &str)> = vec![
            // `syncService`: no selector, no Endpoints.
            (
                "no selector",
                service(json!({"ports": [{"port": 80}]})),
                vec![pod("a", "10.244.0.2", true)],
                "none",
            ),
            (
                "a selector",
                web(),
                vec![pod("a", "10.244.0.2", true)],
                "10.244.0.2 |  | 80",
            ),
            // `addEndpointSubset`: a pod not Ready is a not-ready address.
            (
                "not ready",
                web(),
                vec![pod("a", "10.244.0.2", false)],
                " | 10.244.0.2 | 80",
            ),
            (
                "not ready, published",
                with(web(), "/spec/publishNotReadyAddresses", json!(true)),
                vec![pod("a", "10.244.0.2", false)],
                "10.244.0.2 |  | 80",
            ),
            // `ShouldPodBeInEndpoints(pod, publishNotReadyAddresses)`: a
            // terminating pod is left out unless unready ones are published.
            ("terminating", web(), vec![terminating.clone()], ""),
            (
                "terminating, published",
                with(web(), "/spec/publishNotReadyAddresses", json!(true)),
                vec![terminating],
                "10.244.0.3 |  | 80",
            ),
            // `RepackSubsets` with `LessEndpointAddress`: addresses by IP
            // byte order, ready and not ready apart, in one subset.
            (
                "sorted",
                web(),
                vec![
                    pod("z", "10.244.0.9", true),
                    pod("a", "10.244.0.10", true),
                    pod("m", "10.244.0.5", false),
                ],
                "10.244.0.10,10.244.0.9 | 10.244.0.5 | 80",
            ),
            (
                "one address",
                web(),
                vec![pod("z", "10.244.0.9", true)],
                "10.244.0.9 |  | 80",
            ),
            // A headless Service without ports lists its pods port-less;
            // one with a ClusterIP and no ports lists nothing.
            (
                "headless, no ports",
                service(json!({"selector": {"app": "web"}, "clusterIP": "None"})),
                vec![pod("a", "10.244.0.2", true)],
                "10.244.0.2 |  | ",
            ),
            (
                "no ports",
                service(json!({"selector": {"app": "web"}})),
                vec![pod("a", "10.244.0.2", true)],
                "",
            ),
        ];
        for pair in rows.chunks(2) {
            let mut seen = Vec::new();
            for (what, service, pods, expected) in pair {
                let got = summary(endpoints_for(service, pods));
                assert_eq!(got, *expected, "{what}");
                seen.push(got);
            }
            assert_ne!(seen[0], seen[1], "{} and its control", pair[0].0);
        }
    }

    /// `syncService`'s labels and `truncateEndpoints`: the Service's labels
    /// with the controller's own, headless marked; over 1000 addresses the
    /// not-ready ones go first and the object says it was truncated
    /// (control: 1000 fit).
    #[test]
    fn labels_and_capacity_are_the_controllers() {
        let pods = |ready: usize, not_ready: usize| -> Vec<Value> {
            (0..ready + not_ready)
                .map(|i| {
                    pod(
                        &format!("p{i:04}"),
                        &format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256),
                        i < ready,
                    )
                })
                .collect()
        };
        let full = endpoints_for(&web(), &pods(990, 10)).expect("endpoints");
        assert!(full["metadata"].get("annotations").is_none());
        assert_eq!(
            full["metadata"]["labels"],
            json!({"team": "a", "endpoints.kubernetes.io/managed-by": "endpoint-controller"})
        );
        let over = endpoints_for(&web(), &pods(995, 10)).expect("endpoints");
        assert_eq!(over["metadata"]["annotations"][OVER_CAPACITY], "truncated");
        let subset = &over["subsets"][0];
        assert_eq!(subset["addresses"].as_array().map(Vec::len), Some(995));
        assert_eq!(
            subset["notReadyAddresses"].as_array().map(Vec::len),
            Some(5)
        );
        let headless = endpoints_for(&with(web(), "/spec/clusterIP", json!("None")), &pods(1, 0))
            .expect("endpoints");
        assert_eq!(headless["metadata"]["labels"][HEADLESS_LABEL], "");
        assert_eq!(headless["metadata"]["name"], "web");
    }
}
