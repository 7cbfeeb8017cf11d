//! The EndpointSlices (`discovery.k8s.io/v1`) the EndpointSlice controller
//! keeps for each Service, derived from the Service and the pods it
//! selects, so `kubectl get endpointslices` and the `Endpoints:` line of
//! `kubectl describe service` show which pods would receive its traffic.
//!
//! The rules are the controller's (`staging/src/k8s.io/endpointslice`:
//! `reconciler.go`, `utils.go`, `util/controller_utils.go`), each cited
//! where it is written:
//! - a Service of type ExternalName, or without a selector, gets none;
//! - a pod is an endpoint while it is not terminal and has an IP
//!   (`ShouldPodBeInEndpoints` with terminating pods included), and its
//!   node is known (unless `publishNotReadyAddresses`);
//! - `serving` is the pod's Ready condition, `terminating` its deletion
//!   timestamp, `ready` is serving and not terminating, or
//!   `publishNotReadyAddresses` (`podToEndpoint`);
//! - ports are the Service's, each resolved against the pod: a number as
//!   it is, a name through the pod's container ports of that name and
//!   protocol (`FindPort`); endpoints with the same resolved ports share
//!   slices, at most 100 endpoints each (`--max-endpoints-per-slice`);
//! - a Service with no endpoint still has one slice, with no ports and no
//!   endpoints (the reconciler's placeholder);
//! - labels are the Service's, less the reserved ones, plus
//!   `kubernetes.io/service-name`, `endpointslice.kubernetes.io/managed-by`
//!   and, for a headless Service, `service.kubernetes.io/headless`
//!   (`setEndpointSliceLabels`); the Service is the slices' controller.
//!
//! Where the façade departs: the controller names a slice by the API
//! server's `generateName` (`SERVICE-` and five random characters); here
//! the five characters are drawn from the Service's identity, the address
//! type and the slice's place, so a slice keeps its name while its
//! endpoints change and a replay names it the same. A Service is stored as
//! written, without the ClusterIP and IP families the API server would
//! allocate (the simulator models no Service network): a Service that
//! does not say `clusterIP: None` counts as having a ClusterIP, and one
//! without `ipFamilies` as the single-stack IPv4 family the simulator's
//! pod addresses are in. Endpoints are in pod-name order.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::history::text;
use super::names;

pub(super) const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// The controller's name in `managed-by` (`ControllerName` in
/// `pkg/controller/endpointslice`).
const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// kube-controller-manager's `--max-endpoints-per-slice` default.
const MAX_ENDPOINTS_PER_SLICE: usize = 100;

/// What the controller knows of the nodes: each node's zone label, if
/// it has one; a node absent from the map does not exist.
pub(super) type Zones = BTreeMap<String, Option<String>>;

/// The nodes' zones, from Node objects.
pub(super) fn zones<'a>(nodes: impl IntoIterator<Item = &'a Value>) -> Zones {
    nodes
        .into_iter()
        .map(|n| {
            let zone = n
                .pointer("/metadata/labels")
                .and_then(|l| l.get(ZONE_LABEL))
                .and_then(Value::as_str)
                .map(str::to_owned);
            (text(n, "/metadata/name"), zone)
        })
        .collect()
}

/// The slices of `service`, given the pods of its namespace (in name
/// order) and the nodes.
pub(super) fn slices_for<'a>(
    service: &Value,
    pods: impl IntoIterator<Item = &'a Value>,
    zones: &Zones,
) -> Vec<Value> {
    // The controller's `syncService`: ExternalName Services and Services
    // without a selector (a nil one; `{}` selects every pod) are left to
    // whoever writes their endpoints.
    if text(service, "/spec/type") == "ExternalName" {
        return Vec::new();
    }
    let Some(selector) = service.pointer("/spec/selector").and_then(Value::as_object) else {
        return Vec::new();
    };
    let publish_not_ready = service
        .pointer("/spec/publishNotReadyAddresses")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let selected: Vec<&Value> = pods
        .into_iter()
        .filter(|pod| selects(selector, pod) && should_be_in_endpoints(pod))
        // `reconcileByAddressType`: a pod on a node the controller cannot
        // find is skipped, unless the Service publishes unready addresses.
        .filter(|pod| {
            publish_not_ready
                || pod
                    .pointer("/spec/nodeName")
                    .and_then(Value::as_str)
                    .is_none_or(|node| zones.contains_key(node))
        })
        .collect();
    let mut slices = Vec::new();
    for address_type in address_types(service) {
        // Endpoints grouped by the ports they resolve to (the reconciler's
        // port map), groups in the order their first pod comes.
        let mut groups: Vec<(Vec<Value>, Vec<Value>)> = Vec::new();
        for pod in &selected {
            let endpoint = endpoint(pod, service, address_type, zones, publish_not_ready);
            // An endpoint with no address of this type is left out.
            if endpoint["addresses"].as_array().is_none_or(Vec::is_empty) {
                continue;
            }
            let ports = endpoint_ports(service, pod);
            match groups.iter_mut().find(|(p, _)| *p == ports) {
                Some((_, endpoints)) => endpoints.push(endpoint),
                None => groups.push((ports, vec![endpoint])),
            }
        }
        if groups.is_empty() {
            slices.push(slice(service, address_type, &[], Vec::new(), 0));
            continue;
        }
        let mut place = 0;
        for (ports, endpoints) in groups {
            for chunk in endpoints.chunks(MAX_ENDPOINTS_PER_SLICE) {
                slices.push(slice(service, address_type, &ports, chunk.to_vec(), place));
                place += 1;
            }
        }
    }
    slices
}

/// Whether a Service's selector (`labels.Set(selector).AsSelector()`)
/// matches a pod's labels: every pair present and equal.
pub(super) fn selects(selector: &Map<String, Value>, pod: &Value) -> bool {
    let labels = pod.pointer("/metadata/labels").and_then(Value::as_object);
    selector
        .iter()
        .all(|(key, value)| labels.and_then(|l| l.get(key)).is_some_and(|v| v == value))
}

/// `ShouldPodBeInEndpoints(pod, includeTerminating: true)`: not Succeeded
/// or Failed, and with an IP.
fn should_be_in_endpoints(pod: &Value) -> bool {
    let phase = text(pod, "/status/phase");
    if phase == "Succeeded" || phase == "Failed" {
        return false;
    }
    pod_ips(pod).next().is_some()
}

pub(super) fn pod_ips(pod: &Value) -> impl Iterator<Item = &str> {
    let listed: Vec<&str> = pod
        .pointer("/status/podIPs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|ip| ip["ip"].as_str())
        .collect();
    let single = pod.pointer("/status/podIP").and_then(Value::as_str);
    let ips = if listed.is_empty() {
        single.into_iter().collect()
    } else {
        listed
    };
    ips.into_iter()
}

/// The address types of a Service's slices (`getAddressTypesForService`):
/// its `ipFamilies`, else the family of its ClusterIP; see the module's
/// documentation for a Service with neither.
pub(super) fn address_types(service: &Value) -> Vec<&'static str> {
    let families: Vec<&'static str> = service
        .pointer("/spec/ipFamilies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| match f.as_str() {
            Some("IPv4") => Some("IPv4"),
            Some("IPv6") => Some("IPv6"),
            _ => None,
        })
        .collect();
    if !families.is_empty() {
        return families;
    }
    match service.pointer("/spec/clusterIP").and_then(Value::as_str) {
        Some(ip) if ip != "None" && ip.contains(':') => vec!["IPv6"],
        _ => vec!["IPv4"],
    }
}

/// `podToEndpoint`.
fn endpoint(
    pod: &Value,
    service: &Value,
    address_type: &str,
    zones: &Zones,
    publish_not_ready: bool,
) -> Value {
    let serving = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    let terminating = pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null());
    let ready = publish_not_ready || (serving && !terminating);
    let addresses: Vec<&str> = pod_ips(pod)
        .filter(|ip| (address_type == "IPv6") == ip.contains(':'))
        .collect();
    let mut endpoint = json!({
        "addresses": addresses,
        "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
        "targetRef": {
            "kind": "Pod",
            "namespace": text(pod, "/metadata/namespace"),
            "name": text(pod, "/metadata/name"),
            "uid": text(pod, "/metadata/uid"),
        },
    });
    if let Some(node) = pod.pointer("/spec/nodeName").and_then(Value::as_str) {
        endpoint["nodeName"] = json!(node);
        if let Some(Some(zone)) = zones.get(node) {
            endpoint["zone"] = json!(zone);
        }
    }
    // `ShouldSetHostname`: a pod naming the Service as its subdomain.
    let hostname = text(pod, "/spec/hostname");
    if !hostname.is_empty()
        && text(pod, "/spec/subdomain") == text(service, "/metadata/name")
        && text(pod, "/metadata/namespace") == text(service, "/metadata/namespace")
    {
        endpoint["hostname"] = json!(hostname);
    }
    endpoint
}

/// `getEndpointPorts`: the Service's ports resolved against the pod, a
/// port the pod cannot resolve left out. Ports are defaulted as the API
/// server defaults a Service's (`SetDefaults_Service`: protocol TCP,
/// target port the port) and a container's (`SetDefaults_ContainerPort`:
/// protocol TCP).
pub(super) fn endpoint_ports(service: &Value, pod: &Value) -> Vec<Value> {
    let ports = service
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut resolved = Vec::new();
    for port in &ports {
        let protocol = port["protocol"].as_str().unwrap_or("TCP");
        let number = match &port["targetPort"] {
            Value::Number(n) if n.as_i64() != Some(0) => n.as_i64(),
            Value::String(name) if !name.is_empty() => named_port(pod, name, protocol),
            _ => port["port"].as_i64(),
        };
        let Some(number) = number else {
            continue;
        };
        let mut entry = json!({
            "name": port["name"].as_str().unwrap_or_default(),
            "port": number,
            "protocol": protocol,
        });
        if let Some(app) = port.get("appProtocol").filter(|a| a.is_string()) {
            entry["appProtocol"] = app.clone();
        }
        resolved.push(entry);
    }
    resolved
}

/// `FindPort` for a named target port: the first container port of that
/// name and protocol, in the containers, then in the sidecars (init
/// containers that restart `Always`).
fn named_port(pod: &Value, name: &str, protocol: &str) -> Option<i64> {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten();
    let sidecars = pod
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| c["restartPolicy"] == "Always");
    containers
        .chain(sidecars)
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .find(|p| p["name"] == name && p["protocol"].as_str().unwrap_or("TCP") == protocol)
        .and_then(|p| p["containerPort"].as_i64())
}

/// One slice of the Service: `newEndpointSlice` with its endpoints.
fn slice(
    service: &Value,
    address_type: &str,
    ports: &[Value],
    endpoints: Vec<Value>,
    place: usize,
) -> Value {
    let name = text(service, "/metadata/name");
    let namespace = text(service, "/metadata/namespace");
    let prefix = format!("{name}-");
    let seed = fnv1a(&format!("{namespace}/{name}/{address_type}/{place}"));
    let mut labels = Map::new();
    if let Some(own) = service
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
    {
        for (key, value) in own {
            if ![SERVICE_NAME_LABEL, MANAGED_BY_LABEL, HEADLESS_LABEL].contains(&key.as_str()) {
                labels.insert(key.clone(), value.clone());
            }
        }
    }
    // `isServiceIPSet`, with an unset ClusterIP taken as allocated (the
    // module's documentation says why).
    if service.pointer("/spec/clusterIP").and_then(Value::as_str) == Some("None") {
        labels.insert(HEADLESS_LABEL.to_owned(), json!(""));
    }
    labels.insert(SERVICE_NAME_LABEL.to_owned(), json!(name));
    labels.insert(MANAGED_BY_LABEL.to_owned(), json!(CONTROLLER_NAME));
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": names::generate(&prefix, seed),
            "generateName": prefix,
            "namespace": namespace,
            "uid": uid(seed),
            "creationTimestamp": service.pointer("/metadata/creationTimestamp").cloned().unwrap_or(Value::Null),
            "labels": labels,
            "ownerReferences": [{
                "apiVersion": "v1", "kind": "Service", "name": name,
                "uid": text(service, "/metadata/uid"),
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "addressType": address_type,
        "endpoints": endpoints,
        "ports": ports,
    })
}

/// A uid drawn from the slice's identity, in the shape of the
/// simulator's uids.
pub(super) fn uid(seed: u64) -> String {
    format!("00000000-0000-4000-8e5a-{:012x}", seed & 0xffff_ffff_ffff)
}

/// FNV-1a, 64 bits: stable across runs and Rust releases.
pub(super) fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn service(spec: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "apps", "uid": "svc-uid",
                            "labels": {"team": "a", "kubernetes.io/service-name": "other"}},
               "spec": spec})
    }

    fn web() -> Value {
        service(
            json!({"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}),
        )
    }

    /// A Running pod on `node-1`, Ready or not, labelled `app: web`.
    fn pod(name: &str, ready: bool) -> Value {
        json!({"metadata": {"name": name, "namespace": "apps", "uid": format!("{name}-uid"),
                            "labels": {"app": "web"}},
               "spec": {"nodeName": "node-1", "containers": [{"name": "c", "ports": [
                   {"name": "http", "containerPort": 8080}, {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]},
               "status": {"phase": "Running", "podIP": "10.244.0.2", "podIPs": [{"ip": "10.244.0.2"}],
                          "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    /// `object` with `value` set at `pointer`, whose parent exists.
    pub(crate) fn with(mut object: Value, pointer: &str, value: Value) -> Value {
        let (parent, field) = pointer.rsplit_once('/').expect("a pointer");
        object
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .expect("the parent exists")
            .insert(field.to_owned(), value);
        object
    }

    fn zones() -> Zones {
        [("node-1".to_owned(), Some("fsn1".to_owned()))].into()
    }

    /// Each slice as `TYPE ports=PORT/PROTO,... NAME:rst,...` (ready,
    /// serving, terminating as letters when true, `-` when false).
    fn summary(slices: &[Value]) -> String {
        let flag = |e: &Value, c: &str, letter: char| {
            if e["conditions"][c] == true {
                letter
            } else {
                '-'
            }
        };
        slices
            .iter()
            .map(|s| {
                let ports: Vec<String> = s["ports"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|p| {
                        format!(
                            "{}/{}",
                            p["port"],
                            p["protocol"].as_str().unwrap_or_default()
                        )
                    })
                    .collect();
                let endpoints: Vec<String> = s["endpoints"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|e| {
                        format!(
                            "{}:{}{}{}",
                            e["targetRef"]["name"].as_str().unwrap_or_default(),
                            flag(e, "ready", 'r'),
                            flag(e, "serving", 's'),
                            flag(e, "terminating", 't')
                        )
                    })
                    .collect();
                format!(
                    "{} ports={} {}",
                    s["addressType"].as_str().unwrap_or_default(),
                    ports.join(","),
                    endpoints.join(",")
                )
            })
            .collect::<Vec<_>>()
            .join(" | ")
    }

    /// The EndpointSlice controller's rules, each row pair a case and the
    /// control one field away that flips it, with the upstream source the
    /// row transcribes (`staging/src/k8s.io/endpointslice` unless said).
    #[test]
    fn slices_follow_the_endpointslice_controllers_rules() {
        let terminating = with(
            pod("b", true),
            "/metadata/deletionTimestamp",
            json!("2026-01-01T00:01:00Z"),
        );
        let rows: Vec<(&str, Value, Vec<Value>, Zones, &str)> = vec![
            // reconciler.go via `labels.Set(selector).AsSelector()`: a pod
            // missing a selected label is not an endpoint.
            (
                "selector matches",
                web(),
                vec![pod("a", true)],
                zones(),
                "IPv4 ports=8080/TCP a:rs-",
            ),
            (
                "selector misses",
                web(),
                vec![with(
                    pod("a", true),
                    "/metadata/labels",
                    json!({"app": "db"}),
                )],
                zones(),
                "IPv4 ports= ",
            ),
            // endpointslice_controller.go `syncService`: no selector, no
            // slices; `{}` selects every pod.
            (
                "nil selector",
                service(json!({"ports": [{"port": 80}]})),
                vec![pod("a", true)],
                zones(),
                "",
            ),
            (
                "empty selector",
                service(json!({"selector": {}, "ports": [{"port": 80}]})),
                vec![pod("a", true)],
                zones(),
                "IPv4 ports=80/TCP a:rs-",
            ),
            // `syncService`: ExternalName Services get no endpoints.
            (
                "external name",
                with(web(), "/spec/type", json!("ExternalName")),
                vec![pod("a", true)],
                zones(),
                "",
            ),
            (
                "cluster ip",
                with(web(), "/spec/type", json!("ClusterIP")),
                vec![pod("a", true)],
                zones(),
                "IPv4 ports=8080/TCP a:rs-",
            ),
            // util/controller_utils.go `ShouldPodBeInEndpoints`: a terminal
            // pod and a pod without an IP are left out.
            (
                "succeeded",
                web(),
                vec![with(pod("a", false), "/status/phase", json!("Succeeded"))],
                zones(),
                "IPv4 ports= ",
            ),
            (
                "running",
                web(),
                vec![with(pod("a", false), "/status/phase", json!("Running"))],
                zones(),
                "IPv4 ports=8080/TCP a:---",
            ),
            (
                "no ip",
                web(),
                vec![with(
                    with(pod("a", true), "/status/podIP", Value::Null),
                    "/status/podIPs",
                    json!([]),
                )],
                zones(),
                "IPv4 ports= ",
            ),
            (
                "an ip",
                web(),
                vec![with(pod("a", true), "/status/podIPs", json!([]))],
                zones(),
                "IPv4 ports=8080/TCP a:rs-",
            ),
            // utils.go `podToEndpoint`: a terminating Ready pod serves but
            // is not ready; `publishNotReadyAddresses` makes it ready.
            (
                "terminating",
                web(),
                vec![terminating.clone()],
                zones(),
                "IPv4 ports=8080/TCP b:-st",
            ),
            (
                "terminating, published",
                with(web(), "/spec/publishNotReadyAddresses", json!(true)),
                vec![terminating],
                zones(),
                "IPv4 ports=8080/TCP b:rst",
            ),
            // utils.go `FindPort`: a named target port is the container
            // port of that name and protocol; none, and the port is left
            // out of the endpoint's ports.
            (
                "named port",
                service(
                    json!({"selector": {"app": "web"}, "ports": [{"port": 53, "targetPort": "dns", "protocol": "UDP"}]}),
                ),
                vec![pod("a", true)],
                zones(),
                "IPv4 ports=53/UDP a:rs-",
            ),
            (
                "named port, other protocol",
                service(
                    json!({"selector": {"app": "web"}, "ports": [{"port": 53, "targetPort": "dns"}]}),
                ),
                vec![pod("a", true)],
                zones(),
                "IPv4 ports= a:rs-",
            ),
            // pkg/apis/core/v1/defaults.go `SetDefaults_Service`: no target
            // port is the port.
            (
                "no target port",
                service(json!({"selector": {"app": "web"}, "ports": [{"port": 80}]})),
                vec![pod("a", true)],
                zones(),
                "IPv4 ports=80/TCP a:rs-",
            ),
            (
                "a target port",
                service(
                    json!({"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}),
                ),
                vec![pod("a", true)],
                zones(),
                "IPv4 ports=8080/TCP a:rs-",
            ),
            // reconciler.go: a pod whose node the controller cannot find
            // is skipped unless the Service publishes unready addresses.
            (
                "node unknown",
                web(),
                vec![pod("a", true)],
                Zones::new(),
                "IPv4 ports= ",
            ),
            (
                "node unknown, published",
                with(web(), "/spec/publishNotReadyAddresses", json!(true)),
                vec![pod("a", true)],
                Zones::new(),
                "IPv4 ports=8080/TCP a:rs-",
            ),
            // utils.go `getAddressTypesForService`: the Service's families;
            // an IPv4 pod has no IPv6 address, so an IPv6 slice is the
            // placeholder.
            (
                "ipv6 family",
                with(web(), "/spec/ipFamilies", json!(["IPv6"])),
                vec![pod("a", true)],
                zones(),
                "IPv6 ports= ",
            ),
            (
                "ipv4 family",
                with(web(), "/spec/ipFamilies", json!(["IPv4"])),
                vec![pod("a", true)],
                zones(),
                "IPv4 ports=8080/TCP a:rs-",
            ),
        ];
        for pair in rows.chunks(2) {
            let mut seen = Vec::new();
            for (what, service, pods, zones, expected) in pair {
                let slices = slices_for(service, pods, zones);
                assert_eq!(summary(&slices), *expected, "{what}");
                seen.push(summary(&slices));
            }
            assert_ne!(seen[0], seen[1], "{} and its control", pair[0].0);
        }
    }

    /// reconciler.go: at most `--max-endpoints-per-slice` (100) endpoints
    /// a slice; the 101st opens a second slice (control: 100 fit one).
    /// Each slice keeps its name as endpoints come and go.
    #[test]
    fn a_hundred_endpoints_fit_one_slice_and_the_next_opens_another() {
        let pods =
            |n: usize| -> Vec<Value> { (0..n).map(|i| pod(&format!("p{i:03}"), true)).collect() };
        let hundred = slices_for(&web(), &pods(100), &zones());
        assert_eq!(hundred.len(), 1);
        let more = slices_for(&web(), &pods(101), &zones());
        let sizes: Vec<usize> = more
            .iter()
            .map(|s| s["endpoints"].as_array().map_or(0, Vec::len))
            .collect();
        assert_eq!(sizes, [100, 1]);
        assert_eq!(more[0]["metadata"]["name"], hundred[0]["metadata"]["name"]);
        assert_ne!(more[0]["metadata"]["name"], more[1]["metadata"]["name"]);
    }

    /// utils.go `newEndpointSlice` and `setEndpointSliceLabels`: named
    /// `SERVICE-` and five characters, owned by the Service, with its
    /// labels less the reserved ones and the controller's own; a headless
    /// Service's slices say so (control: one with a ClusterIP does not).
    /// `podToEndpoint`: the node, its zone, and the hostname of a pod whose
    /// subdomain is the Service.
    #[test]
    fn a_slice_carries_the_controllers_metadata_and_the_pods_place() {
        let hosted = with(
            with(pod("a", true), "/spec/hostname", json!("a")),
            "/spec/subdomain",
            json!("web"),
        );
        let slices = slices_for(&web(), &[hosted], &zones());
        let slice = &slices[0];
        let name = slice["metadata"]["name"].as_str().expect("a name");
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        assert_eq!(slice["metadata"]["generateName"], "web-");
        assert_eq!(
            slice["metadata"]["labels"],
            json!({"team": "a", "kubernetes.io/service-name": "web",
                   "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"})
        );
        assert_eq!(
            slice["metadata"]["ownerReferences"][0],
            json!({"apiVersion": "v1", "kind": "Service", "name": "web", "uid": "svc-uid",
                   "controller": true, "blockOwnerDeletion": true})
        );
        let endpoint = &slice["endpoints"][0];
        assert_eq!(endpoint["addresses"], json!(["10.244.0.2"]));
        assert_eq!(endpoint["nodeName"], "node-1");
        assert_eq!(endpoint["zone"], "fsn1");
        assert_eq!(endpoint["hostname"], "a");
        assert_eq!(endpoint["targetRef"]["uid"], "a-uid");
        assert_eq!(slice["ports"][0]["name"], "http");
        let headless = slices_for(
            &with(web(), "/spec/clusterIP", json!("None")),
            &[pod("a", true)],
            &zones(),
        );
        assert_eq!(headless[0]["metadata"]["labels"][HEADLESS_LABEL], "");
        assert!(slice["metadata"]["labels"].get(HEADLESS_LABEL).is_none());
        let elsewhere: Zones = [("node-1".to_owned(), None)].into();
        let unzoned = slices_for(&web(), &[pod("a", true)], &elsewhere);
        assert!(unzoned[0]["endpoints"][0].get("zone").is_none());
        assert!(unzoned[0]["endpoints"][0].get("hostname").is_none());
    }
}
