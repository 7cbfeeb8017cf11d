//! `bench sim serve`: the simulator behind a Kubernetes API.
//!
//! A drill's cluster runs in the simulator on its own thread ([`state`]);
//! a loopback HTTP server speaks enough of the Kubernetes REST protocol
//! (discovery, list, get, watch, create, update, patch, delete, the
//! eviction and scale subresources, server-side tables) that the real
//! `kubectl` and kube-rs work against it. Handlers pass requests to the
//! simulator thread over a channel and await its reply, so the model sees
//! requests one at a time, in arrival order.
//!
//! The façade is a view of the simulator's state ([`drillbench_sim::view`]) and
//! changes it only through the simulator's primitives
//! ([`drillbench_sim::api_ops`]); no Kubernetes rule is written here.

mod access;
mod admit;
mod api;
pub mod auth;
mod cache;
mod cluster;
mod cluster_ips;
mod commit;
mod control;
mod crd_schema;
mod crd_table;
mod crds;
mod defaults;
mod discovery;
mod endpoint_slices;
mod endpoints;
mod events;
mod events_v1;
mod frozen;
mod history;
mod jsonpath;
pub mod limits;
mod managed_fields;
mod media;
mod names;
mod namespaces;
mod objects;
mod openapi;
mod partial;
pub mod patch;
mod protobuf;
mod protobuf_reply;
mod read;
pub mod resources;
pub mod select;
pub mod state;
mod status;
pub mod table;
#[cfg(test)]
mod testing;
mod transitions;
mod versions;
mod watch;
mod write;
mod written;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::mpsc as std_mpsc;
use std::task::{Context, Poll};
use std::thread::JoinHandle;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, Incoming};
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::{mpsc, oneshot};

use self::api::{Command, Reply, Request};
pub use self::auth::Token;
pub use self::control::Clock;
pub use self::limits::Limits;
pub use self::state::DEFAULT_HISTORY_WINDOW;
use self::state::Facade;
use drillbench_model::drill::Drill;

#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Where to listen; must be a loopback address (port 0 picks one).
    pub listen: SocketAddr,
    pub kubeconfig_out: Option<PathBuf>,
    pub clock: Clock,
    pub seed: u64,
    /// How many changes a watch can resume from
    /// ([`state::DEFAULT_HISTORY_WINDOW`] unless a test wants a small one).
    pub history_window: usize,
    /// Serve the cluster as kind and Talos provision it: this many tainted
    /// standby nodes per autoscaled pool and no autoscaler of its own (the
    /// bench emulates it); `None`: the simulator's own autoscaler.
    pub standby_nodes: Option<u32>,
    pub limits: Limits,
}

/// How `bench sim serve --snapshot` serves a snapshot: no clock, seed or
/// pools, since nothing runs behind it.
#[derive(Debug, Clone)]
pub struct FrozenOptions {
    /// Where to listen; must be a loopback address (port 0 picks one).
    pub listen: SocketAddr,
    pub kubeconfig_out: Option<PathBuf>,
    pub limits: Limits,
}

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("refusing to listen on {0}: the façade serves loopback only")]
    NotLoopback(SocketAddr),
    #[error("--speed must be a positive number, not {0}")]
    Speed(f64),
    #[error("cannot start the simulation")]
    Simulation(#[source] drillbench_sim::SimError),
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{} exists and is not a kubeconfig `bench sim serve` wrote; pass --force to overwrite it",
        path.display()
    )]
    KubeconfigNotOurs { path: PathBuf },
    #[error("cannot write the kubeconfig {path}")]
    Kubeconfig {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the server's threads")]
    Thread(#[source] std::io::Error),
    #[error("cannot draw the server's token from the system's random generator")]
    Token(#[source] std::io::Error),
}

/// A running server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    token: Token,
    /// The kubeconfig written, removed when the server stops: its token
    /// is worthless from then on.
    kubeconfig: Option<PathBuf>,
    commands: std_mpsc::Sender<Command>,
    shutdown: Option<oneshot::Sender<()>>,
    sim_thread: Option<JoinHandle<()>>,
    http_thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Provisions the drill's cluster and starts serving it.
    pub fn start(drill: &Drill, options: &ServeOptions) -> Result<Server, ServeError> {
        if let Clock::Speed(speed) = options.clock
            && !(speed.is_finite() && speed > 0.0)
        {
            return Err(ServeError::Speed(speed));
        }
        let door = Door::open(options.listen, options.kubeconfig_out.as_deref())?;
        // The built-in kinds' OpenAPI documents are built beside the
        // simulation's start rather than on its thread at the first
        // `kubectl explain`; a server that cannot spare the thread builds
        // them when first asked.
        let _ = std::thread::Builder::new()
            .name("bench-openapi".to_owned())
            .spawn(openapi::warm);
        let (commands, inbox) = std_mpsc::channel();
        // The simulation is not `Send` (it shares templates through `Rc`),
        // so it is built on the thread that owns it; the drill is sent.
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let (drill_copy, seed, clock) = (drill.clone(), options.seed, options.clock);
        let window = options.history_window.max(1);
        let standby = options.standby_nodes;
        let max_pods = options.limits.max_pods;
        let sim_thread = std::thread::Builder::new()
            .name("bench-sim".to_owned())
            .spawn(move || match state::provision(&drill_copy, seed, standby) {
                Ok(sim) => {
                    let mut facade = Facade::new(&drill_copy, sim, clock, window, standby);
                    facade.set_max_pods(max_pods);
                    let _ = ready_tx.send(Ok(()));
                    simulator_loop(facade, inbox);
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                }
            })
            .map_err(ServeError::Thread)?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = sim_thread.join();
                return Err(ServeError::Simulation(e));
            }
            Err(_) => {
                let _ = sim_thread.join();
                return Err(ServeError::Thread(std::io::Error::other(
                    "the simulator thread ended before it was ready",
                )));
            }
        }
        door.serve_with(
            options.kubeconfig_out.clone(),
            commands,
            sim_thread,
            options.limits,
        )
    }

    /// Serves a captured cluster frozen (nothing reconciles it, and every
    /// write is refused); also returns the kinds of the snapshot it does not
    /// serve (`apiVersion Kind`) and how many objects of each it left out.
    pub fn start_frozen(
        snapshot: &drillbench_model::snapshot::ClusterSnapshot,
        options: &FrozenOptions,
    ) -> Result<(Server, Vec<(String, usize)>), ServeError> {
        let door = Door::open(options.listen, options.kubeconfig_out.as_deref())?;
        let (store, unserved) = frozen::Frozen::new(snapshot);
        let (commands, inbox) = std_mpsc::channel();
        let store_thread = std::thread::Builder::new()
            .name("bench-frozen".to_owned())
            .spawn(move || frozen_loop(store, inbox))
            .map_err(ServeError::Thread)?;
        let server = door.serve_with(
            options.kubeconfig_out.clone(),
            commands,
            store_thread,
            options.limits,
        )?;
        Ok((server, unserved))
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The bearer token every request must carry.
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// A kube-rs configuration for this server: its URL and token.
    pub fn client_config(&self) -> kube::Config {
        let mut config = kube::Config::new(
            self.url()
                .parse()
                .unwrap_or_else(|_| http_uri_of_loopback()),
        );
        config.auth_info.token = Some(self.token.as_str().to_owned().into());
        config
    }

    /// Stops serving and waits for both threads.
    pub fn stop(mut self) {
        self.shutdown_now();
    }

    fn shutdown_now(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        let _ = self.commands.send(Command::Stop);
        if let Some(t) = self.http_thread.take() {
            let _ = t.join();
        }
        if let Some(t) = self.sim_thread.take() {
            let _ = t.join();
        }
        if let Some(path) = self.kubeconfig.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A bound listener, its token and the kubeconfig written for them: what
/// every server opens before the cluster behind it starts.
struct Door {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    token: Token,
}

impl Door {
    fn open(listen: SocketAddr, kubeconfig_out: Option<&Path>) -> Result<Door, ServeError> {
        if !listen.ip().is_loopback() {
            return Err(ServeError::NotLoopback(listen));
        }
        let listener = std::net::TcpListener::bind(listen).map_err(|source| ServeError::Bind {
            addr: listen,
            source,
        })?;
        let addr = listener.local_addr().map_err(|source| ServeError::Bind {
            addr: listen,
            source,
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| ServeError::Bind { addr, source })?;
        let token = Token::random().map_err(ServeError::Token)?;
        if let Some(path) = kubeconfig_out {
            write_kubeconfig(path, addr, &token)?;
        }
        Ok(Door {
            listener,
            addr,
            token,
        })
    }

    /// Starts the HTTP side in front of `worker`, the thread that answers
    /// the `commands`.
    fn serve_with(
        self,
        kubeconfig: Option<PathBuf>,
        commands: std_mpsc::Sender<Command>,
        worker: JoinHandle<()>,
        limits: Limits,
    ) -> Result<Server, ServeError> {
        let (shutdown, stopped) = oneshot::channel();
        let gate = Arc::new(Gate {
            to_sim: commands.clone(),
            token: self.token.clone(),
            limits,
        });
        let listener = self.listener;
        let http_thread = std::thread::Builder::new()
            .name("bench-http".to_owned())
            .spawn(move || http_loop(listener, gate, stopped))
            .map_err(ServeError::Thread)?;
        Ok(Server {
            addr: self.addr,
            token: self.token,
            kubeconfig,
            commands,
            shutdown: Some(shutdown),
            sim_thread: Some(worker),
            http_thread: Some(http_thread),
        })
    }
}

/// The frozen store's thread: answers requests in order; between them,
/// sends watch bookmarks and forgets watchers that have gone.
fn frozen_loop(mut store: frozen::Frozen, inbox: std_mpsc::Receiver<Command>) {
    loop {
        match inbox.recv_timeout(std::time::Duration::from_secs(1)) {
            Ok(Command::Api(request, reply)) => {
                let _ = reply.send(store.handle(request));
            }
            Ok(Command::Stop) | Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
            Err(std_mpsc::RecvTimeoutError::Timeout) => store.bookmarks(),
        }
    }
}

/// `http://127.0.0.1`: never used, a server's own URL always parses.
fn http_uri_of_loopback() -> hyper::Uri {
    hyper::Uri::from_static("http://127.0.0.1")
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown_now();
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "served at wall-clock speed, virtual time is paced by the real one"
)]
fn simulator_loop(mut facade: Facade, inbox: std_mpsc::Receiver<Command>) {
    let started = Instant::now();
    let virtual_start = facade.simulation().now();
    let tick = std::time::Duration::from_millis(100);
    let mut last_bookmark = Instant::now();
    loop {
        let command = match inbox.recv_timeout(tick) {
            Ok(command) => Some(command),
            Err(std_mpsc::RecvTimeoutError::Timeout) => None,
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
        };
        if let Clock::Speed(speed) = facade.clock() {
            let elapsed = started.elapsed().as_secs_f64() * 1000.0 * speed;
            facade.advance_to(virtual_start + elapsed as u64);
        }
        match command {
            Some(Command::Api(request, reply)) => {
                let _ = reply.send(facade.handle(request));
            }
            Some(Command::Stop) => return,
            None => {}
        }
        if last_bookmark.elapsed() >= std::time::Duration::from_secs(1) {
            facade.bookmarks();
            last_bookmark = Instant::now();
        }
    }
}

/// What every connection shares: the way to the simulator, the token it
/// checks and the budgets it keeps.
struct Gate {
    to_sim: std_mpsc::Sender<Command>,
    token: Token,
    limits: Limits,
}

/// How long the accept loop pauses after a failed accept: at the
/// open-file limit (`EMFILE`) the listener stays readable, and retrying at
/// once would spin a core until a descriptor frees up.
const ACCEPT_BACKOFF: std::time::Duration = std::time::Duration::from_millis(100);

fn http_loop(listener: std::net::TcpListener, gate: Arc<Gate>, stopped: oneshot::Receiver<()>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async move {
        let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
            return;
        };
        let mut stopped = stopped;
        loop {
            tokio::select! {
                _ = &mut stopped => return,
                accepted = listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => {
                            tokio::time::sleep(ACCEPT_BACKOFF).await;
                            continue;
                        }
                    };
                    let gate = gate.clone();
                    tokio::spawn(async move {
                        let timeout = gate.limits.header_read_timeout;
                        let service = service_fn(move |request| answer(request, gate.clone()));
                        let _ = hyper::server::conn::http1::Builder::new()
                            .timer(TokioTimer::new())
                            .header_read_timeout(timeout)
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
            }
        }
    });
}

/// A response body: one JSON document, or a watch's lines as they come.
pub enum ApiBody {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

impl Body for ApiBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            ApiBody::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            ApiBody::Stream(rx) => rx.poll_recv(cx).map(|b| b.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, ApiBody::Full(None))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        // A whole body has a known length, so it goes out with
        // Content-Length; a watch stays chunked.
        match self {
            ApiBody::Full(bytes) => {
                hyper::body::SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            ApiBody::Stream(_) => hyper::body::SizeHint::default(),
        }
    }
}

/// A body already serialised, with its media type.
fn bytes_response(status: u16, media_type: &'static str, bytes: Bytes) -> hyper::Response<ApiBody> {
    let mut response = hyper::Response::new(ApiBody::Full(Some(bytes)));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(media_type),
    );
    response
}

fn json_response(status: u16, body: &serde_json::Value) -> hyper::Response<ApiBody> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    // An aggregated discovery document says so in its media type, which
    // is how the client tells it from an unaggregated list.
    let media_type = match body.get("kind").and_then(serde_json::Value::as_str) {
        Some("APIGroupDiscoveryList") => discovery::aggregated_media_type(
            body["apiVersion"]
                .as_str()
                .and_then(|v| v.rsplit('/').next())
                .unwrap_or("v2"),
        ),
        _ => "application/json",
    };
    let mut response = bytes_response(status, media_type, Bytes::from(bytes));
    // A Status that says when to retry says it in the header too, as the
    // API server's response writer does (`Retry-After`).
    if let Some(seconds) = body
        .pointer("/details/retryAfterSeconds")
        .and_then(serde_json::Value::as_u64)
    {
        response.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from(seconds),
        );
    }
    response
}

/// The query's pairs, decoded as a form (`+` is a space, `%XX` a byte); a
/// key given twice keeps its last value.
fn decode_query(query: Option<&str>) -> BTreeMap<String, String> {
    form_urlencoded::parse(query.unwrap_or_default().as_bytes())
        .into_owned()
        .collect()
}

fn error_response(error: api::ApiError) -> hyper::Response<ApiBody> {
    match error.reply() {
        Reply::Json(status, body) => json_response(status, &body),
        Reply::Raw {
            status,
            media_type,
            body,
        } => bytes_response(status, media_type, body),
        Reply::Watch { .. } => json_response(500, &serde_json::Value::Null),
    }
}

/// The API server's answer to a body over the limit (apiserver's
/// `limitedReadBody`: `Request entity too large: limit is N`).
fn too_large(limit: usize) -> api::ApiError {
    api::ApiError::new(
        413,
        "RequestEntityTooLarge",
        format!("Request entity too large: limit is {limit}"),
    )
}

/// Checks a request at the door (its token, its body's type and size)
/// before anything of it reaches the simulator.
async fn answer(
    request: hyper::Request<Incoming>,
    gate: Arc<Gate>,
) -> Result<hyper::Response<ApiBody>, Infallible> {
    let Some(path) = gate.token.admit(
        request.headers().get(hyper::header::AUTHORIZATION),
        request.uri().path(),
    ) else {
        return Ok(error_response(api::ApiError::new(
            401,
            "Unauthorized",
            "Unauthorized",
        )));
    };
    // The path as the API server routes it: percent-escapes decoded
    // (`/api/v1/namespaces/apps/configmaps/a%2Eb` names `a.b`).
    let path = percent_encoding::percent_decode_str(path)
        .decode_utf8_lossy()
        .into_owned();
    let header = |name: hyper::header::HeaderName| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let content_type = header(hyper::header::CONTENT_TYPE);
    let accept = header(hyper::header::ACCEPT);
    let user_agent = header(hyper::header::USER_AGENT);
    let method = request.method().as_str().to_owned();
    if let Err(e) = media::check(&method, &content_type) {
        return Ok(error_response(e));
    }
    let limit = gate.limits.max_body_bytes;
    // A declared length over the limit is refused before a byte of the
    // body is read.
    if request
        .body()
        .size_hint()
        .exact()
        .is_some_and(|n| n > limit as u64)
    {
        return Ok(error_response(too_large(limit)));
    }
    let query = decode_query(request.uri().query());
    let body = match http_body_util::Limited::new(request.into_body(), limit)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return Ok(error_response(too_large(limit)));
        }
        Err(e) => {
            let status = api::status_body(400, "BadRequest", &format!("cannot read the body: {e}"));
            return Ok(json_response(400, &status));
        }
    };
    // An object sent as protobuf (kubectl's typed clients: `kubectl
    // create configmap`, `kubectl auth can-i`) is read here, on the HTTP
    // side, into the JSON a JSON client sends (`protobuf`), so the
    // simulator sees one form.
    let (content_type, body) = if media::media_type(&content_type) == protobuf::PROTOBUF {
        match protobuf::to_json(&body) {
            Ok(object) => (
                "application/json".to_owned(),
                Bytes::from(serde_json::to_vec(&object).unwrap_or_default()),
            ),
            Err(e) => return Ok(error_response(e)),
        }
    } else {
        (content_type, body)
    };
    let wants_protobuf = protobuf_reply::preferred(&accept);
    let (reply_tx, reply_rx) = oneshot::channel();
    let request = Request {
        method,
        path,
        query,
        content_type,
        accept,
        user_agent,
        body,
    };
    let unavailable = || {
        json_response(
            503,
            &api::status_body(503, "ServiceUnavailable", "the simulator stopped"),
        )
    };
    if gate.to_sim.send(Command::Api(request, reply_tx)).is_err() {
        return Ok(unavailable());
    }
    let Ok(reply) = reply_rx.await else {
        return Ok(unavailable());
    };
    // A client that asks for protobuf first gets it for every object,
    // list and Status that has a message; the rest stays JSON, which it
    // accepts too (`protobuf_reply`).
    let reply = if wants_protobuf {
        as_protobuf(reply)
    } else {
        reply
    };
    Ok(match reply {
        Reply::Json(status, body) => json_response(status, &body),
        Reply::Raw {
            status,
            media_type,
            body,
        } => bytes_response(status, media_type, body),
        Reply::Watch {
            events,
            timeout,
            protobuf,
        } => {
            let (tx, rx) = mpsc::channel(gate.limits.watch_queue.max(1));
            let watch = Forwarded {
                timeout,
                grace: gate.limits.slow_watcher_grace,
                protobuf,
            };
            tokio::spawn(forward(events, tx, watch));
            let mut response = hyper::Response::new(ApiBody::Stream(rx));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(if protobuf {
                    protobuf_reply::WATCH_MEDIA_TYPE
                } else {
                    "application/json"
                }),
            );
            response
        }
    })
}

/// A JSON reply in protobuf, where its kind has a message.
fn as_protobuf(reply: Reply) -> Reply {
    let encoded = |status: u16, object: &serde_json::Value| {
        protobuf_reply::encode(object).map(|body| Reply::Raw {
            status,
            media_type: protobuf::PROTOBUF,
            body,
        })
    };
    match reply {
        Reply::Json(status, body) => encoded(status, &body).unwrap_or(Reply::Json(status, body)),
        Reply::Raw {
            status,
            media_type: "application/json",
            body,
        } => serde_json::from_slice(&body)
            .ok()
            .and_then(|object| encoded(status, &object))
            .unwrap_or(Reply::Raw {
                status,
                media_type: "application/json",
                body,
            }),
        other => other,
    }
}

/// Forwards watch lines until the client goes, the simulator stops, the
/// watch's timeout ends it (a zero timeout: what is queued, then end), or
/// the client falls behind: its queue stays full for `grace`
/// ([`Limits::slow_watcher_grace`]). Ending drops the simulator's side too, so the
/// watcher is forgotten there; the client sees its watch end and
/// re-lists, as after the API server closes a watcher that fell behind.
#[expect(
    clippy::disallowed_methods,
    reason = "served at wall-clock speed, virtual time is paced by the real one"
)]
async fn forward(
    mut events: mpsc::UnboundedReceiver<Bytes>,
    tx: mpsc::Sender<Bytes>,
    watch: Forwarded,
) {
    let Forwarded {
        timeout,
        grace,
        protobuf,
    } = watch;
    // Framed here, off the simulator's thread.
    let framed = |line: Bytes| {
        if protobuf {
            protobuf_reply::watch_frame(&line)
        } else {
            line
        }
    };
    if timeout == Some(std::time::Duration::ZERO) {
        while let Ok(line) = events.try_recv() {
            match tokio::time::timeout(grace, tx.send(framed(line))).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return,
            }
        }
        return;
    }
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    loop {
        let next = async {
            match deadline {
                Some(d) => tokio::time::timeout_at(d, events.recv())
                    .await
                    .ok()
                    .flatten(),
                None => events.recv().await,
            }
        };
        tokio::select! {
            line = next => match line {
                Some(line) => {
                    match tokio::time::timeout(grace, tx.send(framed(line))).await {
                        Ok(Ok(())) => {}
                        // Gone, or too slow: either way the watch ends.
                        Ok(Err(_)) | Err(_) => return,
                    }
                }
                None => return,
            },
            _ = tx.closed() => return,
        }
    }
}

/// How [`forward`] ends and writes one watch.
struct Forwarded {
    /// When the server ends the watch (`timeoutSeconds`).
    timeout: Option<std::time::Duration>,
    /// How long the client may leave its queue full.
    grace: std::time::Duration,
    /// Whether its events go out as protobuf frames.
    protobuf: bool,
}

/// Writes a kubeconfig whose only context points at the server (plain
/// HTTP on loopback) with its token, both as the user's bearer token and
/// as the server URL's path (see [`auth`] for why both); readable by its
/// owner only, since the token is the key to the server.
pub fn write_kubeconfig(path: &Path, addr: SocketAddr, token: &Token) -> Result<(), ServeError> {
    let failed = |source| ServeError::Kubeconfig {
        path: path.to_path_buf(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        // A file that existed keeps its mode through `open`: narrow it
        // before the token is written into it.
        if path.exists() {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
                .map_err(failed)?;
        }
    }
    let mut file = options.open(path).map_err(failed)?;
    std::io::Write::write_all(&mut file, kubeconfig(addr, token).as_bytes()).map_err(failed)
}

/// Refuses to write over a file at `path` unless it is a kubeconfig a
/// server wrote (one left by a server that was killed) or `force` is set:
/// `--kubeconfig-out ~/.kube/config` must not replace a user's clusters.
pub fn may_write_kubeconfig(path: &Path, force: bool) -> Result<(), ServeError> {
    if force {
        return Ok(());
    }
    match std::fs::read_to_string(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Ok(text) if is_ours(&text) => Ok(()),
        _ => Err(ServeError::KubeconfigNotOurs {
            path: path.to_path_buf(),
        }),
    }
}

/// Whether a kubeconfig is one [`kubeconfig`] wrote: its one cluster,
/// context and user are all `drillbench-sim`.
fn is_ours(text: &str) -> bool {
    text.starts_with("apiVersion: v1\nkind: Config\nclusters:\n- name: drillbench-sim\n")
        && text.contains("\ncurrent-context: drillbench-sim\n")
        && text.matches("- name: ").count() == 3
}

pub fn kubeconfig(addr: SocketAddr, token: &Token) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: drillbench-sim\n  cluster:\n    server: http://{addr}/{token}\ncontexts:\n- name: drillbench-sim\n  context:\n    cluster: drillbench-sim\n    user: drillbench-sim\n    namespace: default\ncurrent-context: drillbench-sim\nusers:\n- name: drillbench-sim\n  user:\n    token: {token}\n",
        token = token.as_str()
    )
}

/// The options of `bench sim serve` as the command line gives them.
#[derive(Debug, Clone)]
pub struct CliOptions {
    /// A built-in drill name or a drill file.
    pub drill: String,
    pub listen: SocketAddr,
    pub kubeconfig_out: Option<PathBuf>,
    /// `--speed`, or `None` for `--step`.
    pub speed: Option<f64>,
    pub seed: u64,
    /// `--standby-nodes`: see [`ServeOptions::standby_nodes`].
    pub standby_nodes: Option<u32>,
    /// `--max-request-bytes`: see [`Limits::max_body_bytes`].
    pub max_request_bytes: usize,
    /// `--force`: overwrite a `--kubeconfig-out` file the bench did not write.
    pub force: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kubeconfig_the_bench_did_not_write_is_kept_unless_forced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config");
        assert!(may_write_kubeconfig(&path, false).is_ok(), "no file yet");
        let addr: SocketAddr = "127.0.0.1:8001".parse().unwrap();
        std::fs::write(&path, kubeconfig(addr, &Token::random().unwrap())).unwrap();
        assert!(
            may_write_kubeconfig(&path, false).is_ok(),
            "a dead server's"
        );
        let users = "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster: {server: https://prod}\n";
        std::fs::write(&path, users).unwrap();
        let refused = may_write_kubeconfig(&path, false).unwrap_err();
        assert!(matches!(refused, ServeError::KubeconfigNotOurs { .. }));
        assert!(may_write_kubeconfig(&path, true).is_ok(), "forced");
    }

    #[test]
    fn queries_decode_percent_escapes() {
        let q = decode_query(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&watch=true&x"));
        assert_eq!(q["labelSelector"], "app=web,tier in (a)");
        assert_eq!(q["watch"], "true");
        assert_eq!(q["x"], "");
        assert_eq!(decode_query(Some("v=%zz%4"))["v"], "%zz%4");
    }
}
