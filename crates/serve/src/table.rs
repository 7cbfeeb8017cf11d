//! The server-side table format (`Accept: application/json;as=Table;...`),
//! computed from the same objects a plain read returns, so `kubectl get`
//! prints the columns people expect (pods' READY and STATUS, nodes' ROLES,
//! `-o wide`'s NODE and INTERNAL-IP). Rows carry the whole object, so
//! `-L`, `--show-labels` and `-A` work.

use serde_json::{Value, json};

use drillbench_model::labels::NODE_ROLE_PREFIX;
use drillbench_sim::EPOCH_SECONDS;

pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

fn column(name: &str, kind: &str, priority: u8, format: &str) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": "", "priority": priority})
}

pub(crate) fn columns(kind: &str) -> Vec<Value> {
    let name = column("Name", "string", 0, "name");
    let age = column("Age", "string", 0, "");
    match kind {
        "Node" => vec![
            name,
            column("Status", "string", 0, ""),
            column("Roles", "string", 0, ""),
            age,
            column("Version", "string", 0, ""),
            column("Internal-IP", "string", 1, ""),
            column("External-IP", "string", 1, ""),
            column("OS-Image", "string", 1, ""),
            column("Kernel-Version", "string", 1, ""),
            column("Container-Runtime", "string", 1, ""),
        ],
        "Pod" => vec![
            name,
            column("Ready", "string", 0, ""),
            column("Status", "string", 0, ""),
            column("Restarts", "string", 0, ""),
            age,
            column("IP", "string", 1, ""),
            column("Node", "string", 1, ""),
        ],
        "Deployment" | "StatefulSet" => vec![name, column("Ready", "string", 0, ""), age],
        // kubectl's ReplicaSet printer (`printReplicaSet`).
        "ReplicaSet" => vec![
            name,
            column("Desired", "integer", 0, ""),
            column("Current", "integer", 0, ""),
            column("Ready", "integer", 0, ""),
            age,
        ],
        "DaemonSet" => vec![
            name,
            column("Desired", "integer", 0, ""),
            column("Current", "integer", 0, ""),
            column("Ready", "integer", 0, ""),
            age,
        ],
        "PodDisruptionBudget" => vec![
            name,
            column("Min Available", "string", 0, ""),
            column("Max Unavailable", "string", 0, ""),
            column("Allowed Disruptions", "integer", 0, ""),
            age,
        ],
        "PersistentVolumeClaim" => vec![
            name,
            column("Status", "string", 0, ""),
            column("StorageClass", "string", 0, ""),
            age,
        ],
        "PersistentVolume" => vec![
            name,
            column("Capacity", "string", 0, ""),
            column("Access Modes", "string", 0, ""),
            column("Reclaim Policy", "string", 0, ""),
            column("Status", "string", 0, ""),
            column("Claim", "string", 0, ""),
            column("StorageClass", "string", 0, ""),
            age,
        ],
        "VolumeAttachment" => vec![
            name,
            column("Attacher", "string", 0, ""),
            column("PV", "string", 0, ""),
            column("Node", "string", 0, ""),
            column("Attached", "boolean", 0, ""),
            age,
        ],
        "Namespace" => vec![name, column("Status", "string", 0, ""), age],
        // kubectl's Service printer (`printService`).
        "Service" => vec![
            name,
            column("Type", "string", 0, ""),
            column("Cluster-IP", "string", 0, ""),
            column("External-IP", "string", 0, ""),
            column("Port(s)", "string", 0, ""),
            age,
            column("Selector", "string", 1, ""),
        ],
        // kubectl's Endpoints printer (`printEndpoints`).
        "Endpoints" => vec![name, column("Endpoints", "string", 0, ""), age],
        // kubectl's EndpointSlice printer (`printEndpointSlice`).
        "EndpointSlice" => vec![
            name,
            column("AddressType", "string", 0, ""),
            column("Ports", "string", 0, ""),
            column("Endpoints", "string", 0, ""),
            age,
        ],
        // kubectl's event printer (`printEvent`): the wide columns at
        // priority 1.
        "Event" => vec![
            column("Last Seen", "string", 0, ""),
            column("Type", "string", 0, ""),
            column("Reason", "string", 0, ""),
            column("Object", "string", 0, ""),
            column("Source", "string", 1, ""),
            column("Message", "string", 0, ""),
            column("First Seen", "string", 1, ""),
            column("Count", "integer", 1, ""),
            column("Name", "string", 1, "name"),
        ],
        // The API server's default table (`rest.NewDefaultTableConvertor`),
        // which kubectl shows for kinds without a printer of their own.
        "Role" | "ClusterRole" => vec![name, column("Created At", "date", 0, "")],
        // kubectl's RoleBinding printers (`printRoleBinding`,
        // `printClusterRoleBinding`).
        "RoleBinding" | "ClusterRoleBinding" => vec![
            name,
            column("Role", "string", 0, ""),
            age,
            column("Users", "string", 1, ""),
            column("Groups", "string", 1, ""),
            column("ServiceAccounts", "string", 1, ""),
        ],
        // kubectl's NetworkPolicy printer (`printNetworkPolicy`).
        "NetworkPolicy" => vec![name, column("Pod-Selector", "string", 0, ""), age],
        // kubectl's Ingress printer (`printIngress`).
        "Ingress" => vec![
            name,
            column("Class", "string", 0, ""),
            column("Hosts", "string", 0, ""),
            column("Address", "string", 0, ""),
            column("Ports", "string", 0, ""),
            age,
        ],
        // kubectl's HorizontalPodAutoscaler printer
        // (`printHorizontalPodAutoscaler`).
        "HorizontalPodAutoscaler" => vec![
            name,
            column("Reference", "string", 0, ""),
            column("Targets", "string", 0, ""),
            column("MinPods", "string", 0, ""),
            column("MaxPods", "integer", 0, ""),
            column("Replicas", "integer", 0, ""),
            age,
        ],
        // kubectl's IngressClass printer (`printIngressClass`).
        "IngressClass" => vec![
            name,
            column("Controller", "string", 0, ""),
            column("Parameters", "string", 0, ""),
            age,
        ],
        _ => vec![name, age],
    }
}

/// `rbac.SubjectsStrings`: a binding's users, groups and service accounts
/// (`namespace/name`), each joined with `, `.
fn subjects(binding: &Value) -> [String; 3] {
    let mut lists: [Vec<String>; 3] = Default::default();
    for subject in binding["subjects"].as_array().into_iter().flatten() {
        let name = subject["name"].as_str().unwrap_or_default();
        match subject["kind"].as_str() {
            Some("User") => lists[0].push(name.to_owned()),
            Some("Group") => lists[1].push(name.to_owned()),
            Some("ServiceAccount") => lists[2].push(format!(
                "{}/{name}",
                subject["namespace"].as_str().unwrap_or_default()
            )),
            _ => {}
        }
    }
    lists.map(|l| l.join(", "))
}

/// `metav1.FormatLabelSelector`: the selector's requirements by key
/// (`key=value`, `key in (a,b)`, `key notin (a,b)`, `key`, `!key`),
/// `<none>` when it selects everything.
fn label_selector(selector: &Value) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    for (key, value) in selector["matchLabels"].as_object().into_iter().flatten() {
        requirements.push((
            key.clone(),
            format!("{key}={}", value.as_str().unwrap_or_default()),
        ));
    }
    for expression in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = expression["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let values = values.join(",");
        let shown = match expression["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({values})"),
        };
        requirements.push((key.to_owned(), shown));
    }
    requirements.sort();
    if requirements.is_empty() {
        return "<none>".to_owned();
    }
    requirements
        .into_iter()
        .map(|(_, shown)| shown)
        .collect::<Vec<_>>()
        .join(",")
}

/// kubectl's `formatHPAMetrics`: each metric's current value (from the
/// status's metric of the same index, `<unknown>` without one) over its
/// target, the first two and `+ N more...`; `<none>` without metrics.
fn hpa_metrics(hpa: &Value) -> String {
    let specs = hpa
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if specs.is_empty() {
        return "<none>".to_owned();
    }
    let statuses = hpa
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let quantity = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let listed: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let current = |source: &str, field: &str| {
                statuses
                    .get(i)
                    .and_then(|s| s[source]["current"].get(field))
                    .filter(|v| !v.is_null())
            };
            let unknown = || "<unknown>".to_owned();
            match spec["type"].as_str().unwrap_or_default() {
                source @ ("External" | "Object") => {
                    let key = if source == "External" {
                        "external"
                    } else {
                        "object"
                    };
                    let target = &spec[key]["target"];
                    match target.get("averageValue").filter(|v| !v.is_null()) {
                        Some(average) => format!(
                            "{}/{} (avg)",
                            current(key, "averageValue").map_or_else(unknown, quantity),
                            quantity(average)
                        ),
                        None => format!(
                            "{}/{}",
                            current(key, "value").map_or_else(unknown, quantity),
                            quantity(&target["value"])
                        ),
                    }
                }
                "Pods" => format!(
                    "{}/{}",
                    current("pods", "averageValue").map_or_else(unknown, quantity),
                    quantity(&spec["pods"]["target"]["averageValue"])
                ),
                source @ ("Resource" | "ContainerResource") => {
                    let key = if source == "Resource" {
                        "resource"
                    } else {
                        "containerResource"
                    };
                    let resource = spec[key]["name"].as_str().unwrap_or_default();
                    let target = &spec[key]["target"];
                    match target.get("averageValue").filter(|v| !v.is_null()) {
                        Some(average) => format!(
                            "{resource}: {}/{}",
                            current(key, "averageValue").map_or_else(unknown, quantity),
                            quantity(average)
                        ),
                        None => format!(
                            "{resource}: {}/{}",
                            current(key, "averageUtilization")
                                .map_or_else(unknown, |u| format!("{}%", quantity(u))),
                            target["averageUtilization"]
                                .as_i64()
                                .map_or_else(|| "<auto>".to_owned(), |u| format!("{u}%"))
                        ),
                    }
                }
                _ => "<unknown type>".to_owned(),
            }
        })
        .collect();
    with_more(listed[..listed.len().min(2)].join(", "), listed.len(), 2)
}

/// kubectl's `formatHosts`: the first three rules' hosts (a rule without
/// one adds none), `+ N more...` for the rules after them, `*` when no
/// host is named.
fn ingress_hosts(ingress: &Value) -> String {
    let rules: &[Value] = ingress
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let hosts: Vec<&str> = rules
        .iter()
        .take(3)
        .filter_map(|rule| rule["host"].as_str().filter(|h| !h.is_empty()))
        .collect();
    if hosts.is_empty() {
        return "*".to_owned();
    }
    with_more(hosts.join(","), rules.len(), 3)
}

/// kubectl's `ingressLoadBalancerStatusStringer`, as a server prints it
/// (not wide): each ingress point's IP, else its hostname, sorted and
/// once each, clipped to 16 bytes.
fn ingress_address(ingress: &Value) -> String {
    let points: std::collections::BTreeSet<&str> = ingress
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|i| {
            i["ip"]
                .as_str()
                .filter(|ip| !ip.is_empty())
                .or_else(|| i["hostname"].as_str().filter(|h| !h.is_empty()))
        })
        .collect();
    let joined = points.into_iter().collect::<Vec<_>>().join(",");
    match joined.get(..13) {
        Some(head) if joined.len() > 16 => format!("{head}..."),
        _ => joined,
    }
}

fn text(object: &Value, pointer: &str) -> String {
    match object.pointer(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "<none>".to_owned(),
        Some(other) => other.to_string(),
    }
}

/// kubectl's `formatEndpoints` (for every port): each ready address with
/// each port as `IP:PORT`, a port-less subset's as `IP`, the first three
/// and `+ N more...`; `<none>` without subsets.
fn endpoints_text(object: &Value) -> String {
    let Some(subsets) = object["subsets"].as_array().filter(|s| !s.is_empty()) else {
        return "<none>".to_owned();
    };
    let mut listed = Vec::new();
    for subset in subsets {
        let addresses = subset["addresses"].as_array().into_iter().flatten();
        let ip = |a: &Value| a["ip"].as_str().unwrap_or_default().to_owned();
        match subset["ports"].as_array().filter(|p| !p.is_empty()) {
            None => listed.extend(addresses.map(ip)),
            Some(ports) => {
                for port in ports {
                    for address in subset["addresses"].as_array().into_iter().flatten() {
                        listed.push(format!("{}:{}", ip(address), port["port"]));
                    }
                }
            }
        }
    }
    with_more(listed[..listed.len().min(3)].join(","), listed.len(), 3)
}

/// kubectl's `listWithMoreString`: the first three, `+ N more...` for
/// the rest, `<unset>` for none.
fn first_three(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    if items.is_empty() {
        return "<unset>".to_owned();
    }
    with_more(items[..items.len().min(3)].join(","), items.len(), 3)
}

/// `shown` (the first `limit` of `total` items) with `+ N more...` for
/// the rest, as kubectl's printers cut their long cells.
fn with_more(shown: String, total: usize, limit: usize) -> String {
    match total.checked_sub(limit) {
        Some(more) if more > 0 => format!("{shown} + {more} more..."),
        _ => shown,
    }
}

fn int(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

/// `kubectl`'s short age (`5m`, `2h3m`, `4d`).
pub fn age(created: &Value, now_ms: u64) -> String {
    let Some(created) = created
        .as_str()
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
    else {
        return "<unknown>".to_owned();
    };
    let now = EPOCH_SECONDS + (now_ms / 1000) as i64;
    let seconds = (now - created.as_second()).max(0);
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => format!("{}m{}s", s / 60, s % 60),
        s if s < 3 * 3600 => format!("{}m", s / 60),
        s if s < 8 * 3600 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        s if s < 48 * 3600 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

fn pod_status(pod: &Value) -> String {
    if pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
    {
        return "Terminating".to_owned();
    }
    let phase = text(pod, "/status/phase");
    if phase == "Succeeded" {
        return "Completed".to_owned();
    }
    if let Some(reason) = pod.pointer("/status/reason").and_then(Value::as_str) {
        return reason.to_owned();
    }
    let ready = pod_ready(pod);
    match (phase.as_str(), ready) {
        ("Running", true) => "Running".to_owned(),
        ("Running", false) => "ContainerCreating".to_owned(),
        _ => phase,
    }
}

fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

pub(crate) fn cells(kind: &str, object: &Value, now_ms: u64) -> Vec<Value> {
    let name = json!(text(object, "/metadata/name"));
    let age = json!(age(
        object
            .pointer("/metadata/creationTimestamp")
            .unwrap_or(&Value::Null),
        now_ms
    ));
    match kind {
        "Node" => {
            let ready = object
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
                .map(|c| c["status"] == "True")
                .unwrap_or(false);
            let mut status = if ready { "Ready" } else { "NotReady" }.to_owned();
            if object.pointer("/spec/unschedulable") == Some(&Value::Bool(true)) {
                status.push_str(",SchedulingDisabled");
            }
            let roles: Vec<String> = object
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|l| {
                    l.keys()
                        .filter_map(|k| k.strip_prefix(NODE_ROLE_PREFIX))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let roles = if roles.is_empty() {
                "<none>".to_owned()
            } else {
                roles.join(",")
            };
            let ip = object
                .pointer("/status/addresses")
                .and_then(Value::as_array)
                .and_then(|a| a.iter().find(|a| a["type"] == "InternalIP"))
                .and_then(|a| a["address"].as_str())
                .unwrap_or("<none>")
                .to_owned();
            vec![
                name,
                json!(status),
                json!(roles),
                age,
                json!(text(object, "/status/nodeInfo/kubeletVersion")),
                json!(ip),
                json!("<none>"),
                json!(text(object, "/status/nodeInfo/osImage")),
                json!(text(object, "/status/nodeInfo/kernelVersion")),
                json!(text(object, "/status/nodeInfo/containerRuntimeVersion")),
            ]
        }
        "Pod" => {
            let containers = object
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = if pod_ready(object) { containers } else { 0 };
            vec![
                name,
                json!(format!("{ready}/{containers}")),
                json!(pod_status(object)),
                json!("0"),
                age,
                json!(text(object, "/status/podIP")),
                json!(text(object, "/spec/nodeName")),
            ]
        }
        "Deployment" | "StatefulSet" => vec![
            name,
            json!(format!(
                "{}/{}",
                int(object, "/status/readyReplicas"),
                int(object, "/spec/replicas")
            )),
            age,
        ],
        "ReplicaSet" => vec![
            name,
            json!(int(object, "/spec/replicas")),
            json!(int(object, "/status/replicas")),
            json!(int(object, "/status/readyReplicas")),
            age,
        ],
        "DaemonSet" => vec![
            name,
            json!(int(object, "/status/desiredNumberScheduled")),
            json!(int(object, "/status/currentNumberScheduled")),
            json!(int(object, "/status/numberReady")),
            age,
        ],
        "Endpoints" => vec![name, json!(endpoints_text(object)), age],
        "Service" => {
            let or_none = |t: String| if t.is_empty() { "<none>".to_owned() } else { t };
            let kind = text(object, "/spec/type");
            let external = match kind.as_str() {
                "ExternalName" => text(object, "/spec/externalName"),
                _ => object
                    .pointer("/spec/externalIPs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(","),
            };
            let ports: Vec<String> = object
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| {
                    let protocol = p["protocol"].as_str().unwrap_or("TCP");
                    match p["nodePort"].as_i64() {
                        Some(node) => format!("{}:{node}/{protocol}", p["port"]),
                        None => format!("{}/{protocol}", p["port"]),
                    }
                })
                .collect();
            let mut selector: Vec<String> = object
                .pointer("/spec/selector")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect();
            // `labels.FormatLabels`: by key.
            selector.sort();
            vec![
                name,
                json!(kind),
                json!(or_none(text(object, "/spec/clusterIP"))),
                json!(or_none(external)),
                json!(or_none(ports.join(","))),
                age,
                json!(or_none(selector.join(","))),
            ]
        }
        "EndpointSlice" => {
            let ports = object
                .pointer("/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|p| match (p["port"].as_i64(), p["name"].as_str()) {
                    (Some(port), _) => port.to_string(),
                    (None, Some(name)) => name.to_owned(),
                    (None, None) => "*".to_owned(),
                });
            let addresses = object
                .pointer("/endpoints")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|e| e["addresses"].as_array().into_iter().flatten())
                .map(|a| a.as_str().unwrap_or_default().to_owned());
            vec![
                name,
                json!(text(object, "/addressType")),
                json!(first_three(ports)),
                json!(first_three(addresses)),
                age,
            ]
        }
        "PodDisruptionBudget" => vec![
            name,
            json!(text(object, "/spec/minAvailable").replace("<none>", "N/A")),
            json!(text(object, "/spec/maxUnavailable").replace("<none>", "N/A")),
            json!(int(object, "/status/disruptionsAllowed")),
            age,
        ],
        "PersistentVolumeClaim" => vec![
            name,
            json!(text(object, "/status/phase")),
            json!(text(object, "/spec/storageClassName")),
            age,
        ],
        "PersistentVolume" => {
            let modes: Vec<&str> = object
                .pointer("/spec/accessModes")
                .and_then(Value::as_array)
                .map(|m| {
                    m.iter()
                        .filter_map(Value::as_str)
                        .map(|m| match m {
                            "ReadWriteOnce" => "RWO",
                            "ReadOnlyMany" => "ROX",
                            "ReadWriteMany" => "RWX",
                            "ReadWriteOncePod" => "RWOP",
                            other => other,
                        })
                        .collect()
                })
                .unwrap_or_default();
            let claim = match (
                object
                    .pointer("/spec/claimRef/namespace")
                    .and_then(Value::as_str),
                object
                    .pointer("/spec/claimRef/name")
                    .and_then(Value::as_str),
            ) {
                (Some(namespace), Some(claim)) => format!("{namespace}/{claim}"),
                _ => String::new(),
            };
            vec![
                name,
                json!(text(object, "/spec/capacity/storage")),
                json!(modes.join(",")),
                json!(text(object, "/spec/persistentVolumeReclaimPolicy")),
                json!(text(object, "/status/phase")),
                json!(claim),
                json!(text(object, "/spec/storageClassName")),
                age,
            ]
        }
        "VolumeAttachment" => vec![
            name,
            json!(text(object, "/spec/attacher")),
            json!(text(object, "/spec/source/persistentVolumeName")),
            json!(text(object, "/spec/nodeName")),
            json!(
                object
                    .pointer("/status/attached")
                    .and_then(Value::as_bool)
                    .unwrap_or(false)
            ),
            age,
        ],
        "Namespace" => vec![name, json!(text(object, "/status/phase")), age],
        "Event" => vec![
            json!(self::age(&object["lastTimestamp"], now_ms)),
            json!(text(object, "/type")),
            json!(text(object, "/reason")),
            json!(format!(
                "{}/{}",
                text(object, "/involvedObject/kind").to_lowercase(),
                text(object, "/involvedObject/name")
            )),
            json!(text(object, "/source/component")),
            json!(text(object, "/message")),
            json!(self::age(&object["firstTimestamp"], now_ms)),
            json!(int(object, "/count")),
            json!(text(object, "/metadata/name")),
        ],
        "Role" | "ClusterRole" => vec![name, json!(text(object, "/metadata/creationTimestamp"))],
        "RoleBinding" | "ClusterRoleBinding" => {
            let [users, groups, service_accounts] = subjects(object);
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    text(object, "/roleRef/kind"),
                    text(object, "/roleRef/name")
                )),
                age,
                json!(users),
                json!(groups),
                json!(service_accounts),
            ]
        }
        "NetworkPolicy" => vec![
            name,
            json!(label_selector(&object["spec"]["podSelector"])),
            age,
        ],
        "Ingress" => {
            let tls = object
                .pointer("/spec/tls")
                .and_then(Value::as_array)
                .is_some_and(|t| !t.is_empty());
            vec![
                name,
                json!(text(object, "/spec/ingressClassName")),
                json!(ingress_hosts(object)),
                json!(ingress_address(object)),
                json!(if tls { "80, 443" } else { "80" }),
                age,
            ]
        }
        "HorizontalPodAutoscaler" => vec![
            name,
            json!(format!(
                "{}/{}",
                text(object, "/spec/scaleTargetRef/kind"),
                text(object, "/spec/scaleTargetRef/name")
            )),
            json!(hpa_metrics(object)),
            json!(
                match object.pointer("/spec/minReplicas").and_then(Value::as_i64) {
                    Some(min) => min.to_string(),
                    None => "<unset>".to_owned(),
                }
            ),
            json!(int(object, "/spec/maxReplicas")),
            json!(int(object, "/status/currentReplicas")),
            age,
        ],
        "IngressClass" => {
            let parameters = match object.pointer("/spec/parameters") {
                Some(p) if p.is_object() => {
                    let group = p["apiGroup"]
                        .as_str()
                        .map(|g| format!(".{g}"))
                        .unwrap_or_default();
                    format!(
                        "{}{group}/{}",
                        p["kind"].as_str().unwrap_or_default(),
                        p["name"].as_str().unwrap_or_default()
                    )
                }
                _ => "<none>".to_owned(),
            };
            vec![
                name,
                json!(text(object, "/spec/controller")),
                json!(parameters),
                age,
            ]
        }
        _ => vec![name, age],
    }
}

pub fn table(kind: &str, objects: &[Value], resource_version: &str, now_ms: u64) -> Value {
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| json!({"cells": cells(kind, o, now_ms), "object": o}))
        .collect();
    json!({
        "kind": "Table", "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": columns(kind),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        let created = json!("2026-01-01T00:00:00Z");
        assert_eq!(age(&created, 30_000), "30s");
        assert_eq!(age(&created, 300_000), "5m0s");
        assert_eq!(age(&created, 3_600_000), "60m");
        assert_eq!(age(&created, 5 * 86_400_000), "5d");
        assert_eq!(age(&json!(null), 0), "<unknown>");
    }

    #[test]
    fn a_cordoned_ready_node_says_so() {
        let node = json!({"metadata": {"name": "w1", "labels": {"node-role.kubernetes.io/control-plane": ""}},
                          "spec": {"unschedulable": true},
                          "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        let t = table("Node", &[node], "7", 0);
        assert_eq!(t["rows"][0]["cells"][1], "Ready,SchedulingDisabled");
        assert_eq!(t["rows"][0]["cells"][2], "control-plane");
    }
}
