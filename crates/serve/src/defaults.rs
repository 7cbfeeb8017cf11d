//! The defaults the API server gives a Service or a Secret it decodes, as
//! `SetDefaults_Service` and `SetDefaults_Secret` in
//! `pkg/apis/core/v1/defaults.go` set them, so an object written without
//! them reads (and `kubectl describe`s) as a real server would store it,
//! and what is derived from it (a Service's EndpointSlices' ports) starts
//! from the same fields. (Pods are defaulted where their status is made.)
//!
//! Not modelled: the ClusterIP and IP families the Service REST storage
//! allocates (the simulator has no Service network), and the status
//! `ipMode` of a load balancer's ingress.

use serde_json::{Value, json};

/// `v1.DefaultClientIPServiceAffinitySeconds`: three hours.
const CLIENT_IP_AFFINITY_SECONDS: u64 = 10_800;

/// Fills the defaulted fields of an object of `kind` that are unset.
pub(super) fn default_object(kind: &str, object: &mut Value) {
    match kind {
        "Service" => default_service(object),
        "Secret" => default_secret(object),
        _ => {}
    }
}

/// `SetDefaults_Secret`: a Secret without a type is `Opaque`.
fn default_secret(secret: &mut Value) {
    let Some(secret) = secret.as_object_mut() else {
        return;
    };
    if secret.get("type").is_none_or(|t| t.is_null() || t == "") {
        secret.insert("type".to_owned(), json!("Opaque"));
    }
}

/// Fills a Service's defaulted fields that are unset.
fn default_service(service: &mut Value) {
    let Some(spec) = service.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let unset = |v: Option<&Value>| v.is_none_or(|v| v.is_null() || v == "");
    if unset(spec.get("sessionAffinity")) {
        spec.insert("sessionAffinity".to_owned(), json!("None"));
    }
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP")
            if spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.pointer("/clientIP/timeoutSeconds"))
                .is_none_or(Value::is_null) =>
        {
            spec.insert(
                "sessionAffinityConfig".to_owned(),
                json!({"clientIP": {"timeoutSeconds": CLIENT_IP_AFFINITY_SECONDS}}),
            );
        }
        _ => {}
    }
    if unset(spec.get("type")) {
        spec.insert("type".to_owned(), json!("ClusterIP"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            if unset(port.get("protocol")) {
                port.insert("protocol".to_owned(), json!("TCP"));
            }
            let target = port.get("targetPort");
            if unset(target) || target.and_then(Value::as_i64) == Some(0) {
                let number = port.get("port").cloned().unwrap_or(json!(0));
                port.insert("targetPort".to_owned(), number);
            }
        }
    }
    let kind = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    // `service.ExternallyAccessible`: a load balancer, a node port, or a
    // ClusterIP Service with external IPs.
    let external_ips = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|ips| !ips.is_empty());
    let externally_accessible =
        kind == "LoadBalancer" || kind == "NodePort" || (kind == "ClusterIP" && external_ips);
    if externally_accessible && unset(spec.get("externalTrafficPolicy")) {
        spec.insert("externalTrafficPolicy".to_owned(), json!("Cluster"));
    }
    if unset(spec.get("internalTrafficPolicy"))
        && matches!(kind.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP")
    {
        spec.insert("internalTrafficPolicy".to_owned(), json!("Cluster"));
    }
    if kind == "LoadBalancer" && unset(spec.get("allocateLoadBalancerNodePorts")) {
        spec.insert("allocateLoadBalancerNodePorts".to_owned(), json!(true));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(spec: Value) -> Value {
        let mut service = json!({"metadata": {"name": "web"}, "spec": spec});
        default_object("Service", &mut service);
        service["spec"].take()
    }

    /// `SetDefaults_Secret`: no type is `Opaque`; the controls keep a
    /// type given, and leave other kinds alone.
    #[test]
    fn a_secret_without_a_type_is_opaque() {
        let typed = |kind: &str, secret: Value| {
            let mut object = secret;
            default_object(kind, &mut object);
            object.get("type").cloned()
        };
        assert_eq!(typed("Secret", json!({"data": {}})), Some(json!("Opaque")));
        assert_eq!(typed("Secret", json!({"type": ""})), Some(json!("Opaque")));
        assert_eq!(
            typed("Secret", json!({"type": "kubernetes.io/tls"})),
            Some(json!("kubernetes.io/tls")),
            "control: a type given"
        );
        assert_eq!(
            typed("ConfigMap", json!({"data": {}})),
            None,
            "control: not a Secret"
        );
    }

    /// `SetDefaults_Service`, each default beside the control that keeps
    /// what the Service said.
    #[test]
    fn a_service_is_defaulted_as_set_defaults_service_does() {
        let rows: Vec<(&str, Value, &str, Value)> = vec![
            ("type", json!({}), "/type", json!("ClusterIP")),
            (
                "type given",
                json!({"type": "NodePort"}),
                "/type",
                json!("NodePort"),
            ),
            ("affinity", json!({}), "/sessionAffinity", json!("None")),
            (
                "affinity given",
                json!({"sessionAffinity": "ClientIP"}),
                "/sessionAffinity",
                json!("ClientIP"),
            ),
            (
                "client ip timeout",
                json!({"sessionAffinity": "ClientIP"}),
                "/sessionAffinityConfig/clientIP/timeoutSeconds",
                json!(10_800),
            ),
            (
                "client ip timeout given",
                json!({"sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}}}),
                "/sessionAffinityConfig/clientIP/timeoutSeconds",
                json!(60),
            ),
            (
                "no config without affinity",
                json!({"sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}}}),
                "/sessionAffinityConfig",
                Value::Null,
            ),
            (
                "config kept with affinity",
                json!({"sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}}}),
                "/sessionAffinityConfig/clientIP/timeoutSeconds",
                json!(60),
            ),
            (
                "protocol",
                json!({"ports": [{"port": 80}]}),
                "/ports/0/protocol",
                json!("TCP"),
            ),
            (
                "protocol given",
                json!({"ports": [{"port": 53, "protocol": "UDP"}]}),
                "/ports/0/protocol",
                json!("UDP"),
            ),
            (
                "target port",
                json!({"ports": [{"port": 80}]}),
                "/ports/0/targetPort",
                json!(80),
            ),
            (
                "target port given",
                json!({"ports": [{"port": 80, "targetPort": "http"}]}),
                "/ports/0/targetPort",
                json!("http"),
            ),
            (
                "external policy",
                json!({"type": "NodePort"}),
                "/externalTrafficPolicy",
                json!("Cluster"),
            ),
            (
                "no external policy inside",
                json!({"type": "ClusterIP"}),
                "/externalTrafficPolicy",
                Value::Null,
            ),
            (
                "internal policy",
                json!({"type": "LoadBalancer"}),
                "/internalTrafficPolicy",
                json!("Cluster"),
            ),
            (
                "no internal policy for a name",
                json!({"type": "ExternalName"}),
                "/internalTrafficPolicy",
                Value::Null,
            ),
            (
                "node ports",
                json!({"type": "LoadBalancer"}),
                "/allocateLoadBalancerNodePorts",
                json!(true),
            ),
            (
                "no node ports without a balancer",
                json!({"type": "NodePort"}),
                "/allocateLoadBalancerNodePorts",
                Value::Null,
            ),
        ];
        for pair in rows.chunks(2) {
            for (what, spec, pointer, expected) in pair {
                let got = defaulted(spec.clone());
                assert_eq!(
                    got.pointer(pointer).unwrap_or(&Value::Null),
                    expected,
                    "{what}: {got}"
                );
            }
            assert_ne!(pair[0].3, pair[1].3, "{} and its control", pair[0].0);
        }
    }
}
