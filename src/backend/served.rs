//! The [`Machines`] of a served simulator (`bench sim serve`): what a real
//! backend does to node servers, done through the façade's bench endpoints
//! (`/bench/v1/crash`, `/remove`, `/replace`, `/recreate-control-plane`,
//! `/etcd`), so the one Kubernetes layer ([`crate::backend::kube`]) can be
//! tested end to end against the simulator.
//!
//! The bench endpoints are plain HTTP on loopback; they are spoken here with
//! a blocking request per call, because [`Machines`] is synchronous and a
//! served simulator answers in microseconds.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use super::machines::Machines;
use super::{BackendError, Capabilities};

/// What a served simulator can do: everything the simulator models.
pub const CAPABILITIES: Capabilities = Capabilities {
    recreate_control_planes: true,
    crash_nodes: true,
    delete_nodes: true,
    // The served simulator runs its own cluster autoscaler.
    autoscaler: true,
    replace_nodes: true,
    whole_cluster_faults: false,
    storage: true,
    restore_namespaces: true,
};

/// Why a bench endpoint could not be used.
#[derive(Debug, thiserror::Error)]
pub enum BenchApiError {
    /// The connection failed.
    #[error("cannot reach the served simulator at {addr}")]
    Io {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The answer was not HTTP with a JSON body.
    #[error("the served simulator at {addr} answered something that is not HTTP with JSON")]
    Malformed {
        /// The address.
        addr: SocketAddr,
    },
    /// The endpoint answered with an error status.
    #[error("{path} answered {status}: {message}")]
    Status {
        /// The request path.
        path: String,
        /// The HTTP status.
        status: u16,
        /// The `Status` message, if any.
        message: String,
    },
}

/// The bench endpoints of one served simulator.
#[derive(Debug, Clone)]
pub struct BenchApi {
    addr: SocketAddr,
}

impl BenchApi {
    /// The bench endpoints at `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        BenchApi { addr }
    }

    /// The address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `GET path`.
    pub fn get(&self, path: &str) -> Result<Value, BenchApiError> {
        self.call("GET", path, None)
    }

    /// `POST path` with an optional JSON body.
    pub fn post(&self, path: &str, body: Option<&Value>) -> Result<Value, BenchApiError> {
        self.call("POST", path, body)
    }

    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, BenchApiError> {
        let io = |source| BenchApiError::Io {
            addr: self.addr,
            source,
        };
        let mut stream =
            TcpStream::connect_timeout(&self.addr, Duration::from_secs(5)).map_err(io)?;
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .map_err(io)?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        stream.write_all(request.as_bytes()).map_err(io)?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).map_err(io)?;
        let malformed = || BenchApiError::Malformed { addr: self.addr };
        let text = String::from_utf8_lossy(&answer);
        let (head, body) = text.split_once("\r\n\r\n").ok_or_else(malformed)?;
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(malformed)?;
        let value: Value = serde_json::from_str(body).map_err(|_| malformed())?;
        if (200..300).contains(&status) {
            Ok(value)
        } else {
            Err(BenchApiError::Status {
                path: path.to_owned(),
                status,
                message: value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            })
        }
    }

    /// Whether a served simulator answers at `addr`: `GET /bench/v1/now`
    /// answers with its clock. Anything else (a real API server answers
    /// 404 or 403) is not one.
    pub fn detect(addr: SocketAddr) -> Option<(BenchApi, Value)> {
        let api = BenchApi::new(addr);
        let now = api.get("/bench/v1/now").ok()?;
        now.get("nowMs").and_then(Value::as_u64)?;
        Some((api, now))
    }
}

/// The loopback address of a kubeconfig server URL served over plain HTTP
/// (as `bench sim serve` writes it); `None` for anything else.
pub fn loopback_http_addr(server: &str) -> Option<SocketAddr> {
    let rest = server.strip_prefix("http://")?;
    let host = rest.split('/').next()?;
    let addr: SocketAddr = host.parse().ok()?;
    addr.ip().is_loopback().then_some(addr)
}

/// Whether a kubeconfig's cluster is a served simulator (its bench
/// endpoints answer): the stand-in for a cluster in tests, which models
/// what a real one needs installed (storage) itself.
pub async fn is_served_simulator(kubeconfig: &std::path::Path) -> bool {
    let Some(addr) = super::kube::server_of(kubeconfig, None)
        .await
        .as_deref()
        .and_then(loopback_http_addr)
    else {
        return false;
    };
    tokio::task::spawn_blocking(move || BenchApi::detect(addr).is_some())
        .await
        .unwrap_or(false)
}

fn to_backend(error: BenchApiError) -> BackendError {
    match error {
        BenchApiError::Status {
            status: 404,
            message,
            ..
        } => BackendError::NotFound(message),
        other => BackendError::Infrastructure(other.to_string()),
    }
}

/// A served simulator's node servers.
#[derive(Debug, Clone)]
pub struct ServedSimMachines {
    api: BenchApi,
    kubeconfig: PathBuf,
    context: Option<String>,
}

impl ServedSimMachines {
    /// The machines of the served simulator behind `api`, reached through
    /// `kubeconfig` (and `context`).
    pub fn new(api: BenchApi, kubeconfig: PathBuf, context: Option<String>) -> Self {
        ServedSimMachines {
            api,
            kubeconfig,
            context,
        }
    }

    /// The bench endpoints.
    pub fn api(&self) -> &BenchApi {
        &self.api
    }

    /// Provisions the served drill again from nothing with `drill`'s guards
    /// and `seed`: a fresh cluster for a run, and the re-provisioning a
    /// negative control's weakened re-run needs. Refused when the server
    /// serves another drill.
    pub fn reset(&self, drill: &crate::drill::Drill, seed: u64) -> Result<(), BackendError> {
        let now = self.api.get("/bench/v1/now").map_err(to_backend)?;
        let served = now.get("drill").and_then(Value::as_str).unwrap_or_default();
        if served != drill.name() {
            return Err(BackendError::Infrastructure(format!(
                "the served simulator serves drill `{served}`, not `{}`; start `bench sim serve {}`",
                drill.name(),
                drill.name()
            )));
        }
        let guards: Vec<_> = drill.spec.guards.iter().map(|g| &g.value).collect();
        let unlabelled: Vec<&str> = drill
            .spec
            .guards
            .iter()
            .filter(|g| g.value.unlabelled_term)
            .map(|g| g.value.name.as_str())
            .collect();
        let body = serde_json::json!({
            "guards": serde_json::to_string(&guards).unwrap_or_else(|_| "[]".to_owned()),
            "unlabelledTerms": unlabelled,
        });
        self.api
            .post(&format!("/bench/v1/reset?seed={seed}"), Some(&body))
            .map_err(to_backend)?;
        Ok(())
    }

    fn node_call(&self, verb: &str, node: &str) -> Result<(), BackendError> {
        self.api
            .post(&format!("/bench/v1/{verb}?node={}", encode(node)), None)
            .map(|_| ())
            .map_err(to_backend)
    }
}

/// What a query value keeps unescaped: the characters of a DNS label, so
/// a node name reads as itself and a typo cannot become another query.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

fn encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, QUERY_VALUE).to_string()
}

impl Machines for ServedSimMachines {
    fn name(&self) -> &'static str {
        "served-sim"
    }

    fn capabilities(&self) -> Capabilities {
        CAPABILITIES
    }

    fn kubeconfig(&self) -> (PathBuf, Option<String>) {
        (self.kubeconfig.clone(), self.context.clone())
    }

    fn api_servers(&self) -> Vec<(String, SocketAddr)> {
        // The simulator models its own stable endpoint (holder, failover)
        // behind its one address; a proxy in front would measure nothing.
        Vec::new()
    }

    fn crash(&mut self, node: &str) -> Result<(), BackendError> {
        self.node_call("crash", node)
    }

    fn remove(&mut self, node: &str) -> Result<(), BackendError> {
        self.node_call("remove", node)
    }

    fn replace(&mut self, node: &str) -> Result<(), BackendError> {
        self.node_call("replace", node)
    }

    fn recreate_control_plane(&mut self, node: &str) -> Result<(), BackendError> {
        self.node_call("recreate-control-plane", node)
    }

    fn etcd_members(&mut self) -> Option<(u32, u32)> {
        // 503 without quorum, as etcd's member list needs quorum.
        let answer = self.api.get("/bench/v1/etcd").ok()?;
        let count = |k: &str| {
            answer
                .get(k)
                .and_then(Value::as_u64)
                .and_then(|v| u32::try_from(v).ok())
        };
        Some((count("voters")?, count("learners")?))
    }

    fn teardown(&mut self) -> Result<(), BackendError> {
        // The served simulator belongs to whoever started it; the bench
        // created no machine of its own.
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_on_loopback_can_be_a_served_simulator() {
        assert_eq!(
            loopback_http_addr("http://127.0.0.1:6443"),
            Some("127.0.0.1:6443".parse().expect("addr"))
        );
        assert_eq!(loopback_http_addr("https://127.0.0.1:6443"), None);
        assert_eq!(loopback_http_addr("http://10.0.0.1:6443"), None);
        assert_eq!(loopback_http_addr("http://kube.example:80"), None);
    }

    #[test]
    fn query_values_are_encoded() {
        assert_eq!(encode("prod-worker-1"), "prod-worker-1");
        assert_eq!(encode("a&b=c"), "a%26b%3Dc");
    }
}
