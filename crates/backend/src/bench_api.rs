//! The client of a served simulator's bench endpoints
//! ([`drillbench_model::bench_protocol`]): the clock the kube layer steps, and the
//! node servers the served simulator's machines act on.
//!
//! Each call is one blocking HTTP/1.1 exchange over hyper's client on a
//! current-thread runtime of its own: the callers ([`super::machines`], the
//! [`super::Backend`] trait) are synchronous, and a served simulator on
//! loopback answers in microseconds.

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, StatusCode};
use hyper_util::rt::TokioIo;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::Value;

use drillbench_model::bench_protocol::{self as protocol, NodeOperation};

/// How long a connection may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// How long an answer may take once the request is sent.
const ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

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
        source: Box<dyn std::error::Error + Send + Sync>,
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
    /// The bearer token the server requires (from its kubeconfig).
    token: Option<String>,
}

impl BenchApi {
    /// The bench endpoints at `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        BenchApi { addr, token: None }
    }

    /// The same endpoints, called with this bearer token.
    pub fn with_token(self, token: Option<String>) -> Self {
        BenchApi { token, ..self }
    }

    /// The address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `GET path`, the answer as JSON.
    pub fn get(&self, path: &str) -> Result<Value, BenchApiError> {
        self.call(Method::GET, path, Vec::new())
    }

    /// `POST path` with an optional JSON body, the answer as JSON.
    pub fn post(&self, path: &str, body: Option<&Value>) -> Result<Value, BenchApiError> {
        let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        self.call(Method::POST, path, body)
    }

    /// `GET /bench/v1/now`.
    pub fn now(&self) -> Result<protocol::Now, BenchApiError> {
        self.call(Method::GET, &protocol::path("now", ""), Vec::new())
    }

    /// `POST /bench/v1/advance?to=MSms`.
    pub fn advance_to(&self, ms: u64) -> Result<protocol::Advanced, BenchApiError> {
        let path = protocol::path("advance", &format!("to={ms}ms"));
        self.call(Method::POST, &path, Vec::new())
    }

    /// One of the node endpoints (`crash`, `remove`, …) for `node`.
    pub fn node(&self, operation: NodeOperation, node: &str) -> Result<(), BenchApiError> {
        let path = protocol::path(operation.endpoint(), &format!("node={}", encode(node)));
        self.call::<IgnoredAny>(Method::POST, &path, Vec::new())
            .map(drop)
    }

    /// `GET /bench/v1/etcd`.
    pub fn etcd(&self) -> Result<protocol::EtcdMembers, BenchApiError> {
        self.call(Method::GET, &protocol::path("etcd", ""), Vec::new())
    }

    /// `GET /bench/v1/autoscaler-pick?pool=POOL`.
    pub fn autoscaler_pick(&self, pool: &str) -> Result<protocol::AutoscalerPick, BenchApiError> {
        let path = protocol::path("autoscaler-pick", &format!("pool={}", encode(pool)));
        self.call(Method::GET, &path, Vec::new())
    }

    /// `GET /bench/v1/backups`: a Velero `BackupList`.
    pub fn backups(&self) -> Result<Value, BenchApiError> {
        self.call(Method::GET, &protocol::path("backups", ""), Vec::new())
    }

    /// `POST /bench/v1/reset?seed=SEED`.
    pub fn reset(
        &self,
        seed: u64,
        reset: &protocol::Reset,
    ) -> Result<protocol::ResetDone, BenchApiError> {
        let path = protocol::path("reset", &format!("seed={seed}"));
        let body = serde_json::to_vec(reset).unwrap_or_default();
        self.call(Method::POST, &path, body)
    }

    fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<T, BenchApiError> {
        let (status, answer) = self.exchange(method, path, body)?;
        let malformed = || BenchApiError::Malformed { addr: self.addr };
        if status.is_success() {
            return serde_json::from_slice(&answer).map_err(|_| malformed());
        }
        let value: Value = serde_json::from_slice(&answer).map_err(|_| malformed())?;
        let refusal: protocol::Refusal = serde_json::from_value(value).unwrap_or_default();
        Err(BenchApiError::Status {
            path: path.to_owned(),
            status: status.as_u16(),
            message: refusal.message,
        })
    }

    /// One request and its whole answer.
    fn exchange(
        &self,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<(StatusCode, Bytes), BenchApiError> {
        let addr = self.addr;
        let io = move |source: Box<dyn std::error::Error + Send + Sync>| BenchApiError::Io {
            addr,
            source,
        };
        let mut request = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header(hyper::header::HOST, addr.to_string())
            .header(hyper::header::CONTENT_TYPE, "application/json");
        if let Some(token) = &self.token {
            request = request.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| io(e.into()))?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| io(e.into()))?;
        let exchange = async move {
            let timed_out = || io(std::io::Error::from(std::io::ErrorKind::TimedOut).into());
            let stream =
                tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(addr))
                    .await
                    .map_err(|_| timed_out())?
                    .map_err(|e| io(e.into()))?;
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(TokioIo::new(stream))
                    .await
                    .map_err(|e| io(e.into()))?;
            tokio::spawn(connection);
            let answer = async {
                let response = sender.send_request(request).await?;
                let status = response.status();
                let body = response.into_body().collect().await?.to_bytes();
                Ok::<_, hyper::Error>((status, body))
            };
            tokio::time::timeout(ANSWER_TIMEOUT, answer)
                .await
                .map_err(|_| timed_out())?
                .map_err(|e| io(e.into()))
        };
        // A caller inside another runtime (an async test, a blocking task)
        // cannot block its thread on this one: the exchange gets a thread.
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|scope| {
                scope
                    .spawn(|| runtime.block_on(exchange))
                    .join()
                    .unwrap_or_else(|_| Err(io("the request's thread panicked".into())))
            })
        } else {
            runtime.block_on(exchange)
        }
    }

    /// Whether a served simulator answers at `addr` to a client with
    /// `token`: `GET /bench/v1/now` answers with its clock. Anything else
    /// (a real API server answers 404 or 403) is not one.
    pub fn detect(addr: SocketAddr, token: Option<String>) -> Option<(BenchApi, protocol::Now)> {
        let api = BenchApi::new(addr).with_token(token);
        let now = api.now().ok()?;
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

/// What a query value keeps unescaped: the characters of a DNS label, so
/// a node name reads as itself and a typo cannot become another query.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

fn encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, QUERY_VALUE).to_string()
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
