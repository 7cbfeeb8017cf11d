//! The failover proxy: one listening address, one upstream holding it.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::{Instant, MissedTickBehavior};

use super::failover::Failover;

/// How the proxy listens, checks and fails over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProxyConfig {
    /// Where to listen; port 0 lets the system choose (see [`Proxy::local_addr`]).
    pub listen: SocketAddr,
    /// The upstreams, in the order that decides who takes the address on
    /// failover. The first one holds it at start.
    pub upstreams: Vec<SocketAddr>,
    /// Time between two rounds of health checks.
    pub health_interval: Duration,
    /// How long one health check (a TCP connect) may take before the
    /// upstream counts as dead.
    pub health_timeout: Duration,
    /// How long a dead holder keeps the address before it moves.
    pub failover_delay: Duration,
    /// How long forwarding a client may wait for the holder to accept.
    pub connect_timeout: Duration,
}

impl ProxyConfig {
    /// Loopback on a free port, checks every second, failover after five
    /// seconds; drills that model a particular VIP set their own delay.
    pub fn new(upstreams: impl IntoIterator<Item = SocketAddr>) -> Self {
        Self {
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            upstreams: upstreams.into_iter().collect(),
            health_interval: Duration::from_secs(1),
            health_timeout: Duration::from_secs(1),
            failover_delay: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
        }
    }

    fn validate(&self) -> Result<(), EndpointError> {
        if self.upstreams.is_empty() {
            return Err(EndpointError::Config("no upstreams".into()));
        }
        for (i, upstream) in self.upstreams.iter().enumerate() {
            if self.upstreams[..i].contains(upstream) {
                return Err(EndpointError::Config(format!(
                    "upstream {upstream} is listed twice"
                )));
            }
        }
        // A zero interval would turn the health loop into a busy loop.
        if self.health_interval.is_zero() {
            return Err(EndpointError::Config("health_interval is zero".into()));
        }
        if self.health_timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err(EndpointError::Config("a timeout is zero".into()));
        }
        Ok(())
    }
}

/// Why the address moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeCause {
    /// The holder failed its health checks for the whole failover delay.
    Failover,
    /// [`Proxy::move_to`] was called, e.g. by a drill that moves the VIP.
    Manual,
}

/// One move of the address, as the observer's timeline records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderChange {
    /// When, measured from [`Proxy::started_at`] on tokio's clock, so paused
    /// test time and real time read the same way.
    pub after_start: Duration,
    pub from: SocketAddr,
    pub to: SocketAddr,
    pub cause: ChangeCause,
}

/// Why the proxy could not start or could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The configuration cannot work.
    #[error("invalid endpoint configuration: {0}")]
    Config(String),
    /// The listening socket could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    /// [`Proxy::move_to`] named an address that is not an upstream.
    #[error("{0} is not one of the endpoint's upstreams")]
    UnknownUpstream(SocketAddr),
}

/// A running failover proxy. Dropping it stops every task it started;
/// [`Proxy::shutdown`] does the same and waits until they are gone.
#[derive(Debug)]
pub struct Proxy {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

#[derive(Debug)]
struct Shared {
    config: ProxyConfig,
    started_at: Instant,
    state: Mutex<State>,
    holder: watch::Sender<SocketAddr>,
}

#[derive(Debug)]
struct State {
    failover: Failover,
    healthy: Vec<bool>,
    history: Vec<HolderChange>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Nothing panics while holding the lock, and the state stays
        // consistent between statements, so a poisoned lock is still usable.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Where a new client goes: the holder, or nowhere when the holder is
    /// known dead. Refusing at once is what makes clients fail fast instead
    /// of waiting on a connect that cannot succeed.
    fn route(&self) -> Option<SocketAddr> {
        let state = self.lock();
        let holder = state.failover.holder();
        state
            .healthy
            .get(holder)
            .copied()
            .unwrap_or(false)
            .then(|| self.config.upstreams[holder])
    }

    fn observe(&self, healthy: Vec<bool>) {
        let after_start = self.started_at.elapsed();
        let mut state = self.lock();
        state.healthy = healthy;
        let from = state.failover.holder();
        let healthy = state.healthy.clone();
        if let Some(to) = state.failover.observe(after_start, &healthy) {
            self.record(&mut state, after_start, from, to, ChangeCause::Failover);
        }
    }

    /// Appends the change and publishes the holder under the same lock, so
    /// the history and the watch never disagree about the order of moves.
    fn record(
        &self,
        state: &mut State,
        after_start: Duration,
        from: usize,
        to: usize,
        cause: ChangeCause,
    ) {
        let (from, to) = (self.config.upstreams[from], self.config.upstreams[to]);
        state.history.push(HolderChange {
            after_start,
            from,
            to,
            cause,
        });
        self.holder.send_replace(to);
    }
}

impl Proxy {
    /// Binds the listening address, runs one round of health checks so the
    /// first client is routed on facts, and starts serving.
    ///
    /// Must be called inside a tokio runtime; the proxy's tasks live there.
    #[expect(
        clippy::disallowed_methods,
        reason = "the failover proxy fronts real API servers"
    )]
    pub async fn start(config: ProxyConfig) -> Result<Self, EndpointError> {
        config.validate()?;
        let listener =
            TcpListener::bind(config.listen)
                .await
                .map_err(|source| EndpointError::Bind {
                    addr: config.listen,
                    source,
                })?;
        let local_addr = listener
            .local_addr()
            .map_err(|source| EndpointError::Bind {
                addr: config.listen,
                source,
            })?;
        let (holder, _) = watch::channel(config.upstreams[0]);
        let shared = Arc::new(Shared {
            started_at: Instant::now(),
            state: Mutex::new(State {
                failover: Failover::new(0, config.failover_delay),
                healthy: vec![false; config.upstreams.len()],
                history: Vec::new(),
            }),
            holder,
            config,
        });
        let mut probes = JoinSet::new();
        shared.observe(
            probe_all(
                &mut probes,
                &shared.config.upstreams,
                shared.config.health_timeout,
            )
            .await,
        );

        let (shutdown, _) = watch::channel(false);
        let tasks = vec![
            tokio::spawn(accept_loop(
                listener,
                Arc::clone(&shared),
                shutdown.subscribe(),
            )),
            tokio::spawn(health_loop(Arc::clone(&shared), shutdown.subscribe())),
        ];
        Ok(Self {
            local_addr,
            shared,
            shutdown,
            tasks,
        })
    }

    /// The address clients connect to. It never changes while the proxy
    /// runs: that is what spares a kubeconfig a refresh when a control
    /// plane goes.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The upstream holding the address now.
    pub fn holder(&self) -> SocketAddr {
        self.shared.config.upstreams[self.shared.lock().failover.holder()]
    }

    /// The holder now and every later change, for waiting on a move.
    pub fn watch_holder(&self) -> watch::Receiver<SocketAddr> {
        self.shared.holder.subscribe()
    }

    /// Every move of the address so far, oldest first.
    pub fn history(&self) -> Vec<HolderChange> {
        self.shared.lock().history.clone()
    }

    /// Each upstream with the outcome of its latest health check.
    pub fn health(&self) -> Vec<(SocketAddr, bool)> {
        let state = self.shared.lock();
        self.shared
            .config
            .upstreams
            .iter()
            .copied()
            .zip(state.healthy.iter().copied())
            .collect()
    }

    /// The moment the proxy started, on tokio's clock; the origin of
    /// [`HolderChange::after_start`].
    pub fn started_at(&self) -> Instant {
        self.shared.started_at
    }

    /// Moves the address to `upstream` now, healthy or not, as an operator
    /// reassigning a floating IP would. Moving it to its holder changes
    /// nothing and records nothing.
    pub fn move_to(&self, upstream: SocketAddr) -> Result<(), EndpointError> {
        let to = self
            .shared
            .config
            .upstreams
            .iter()
            .position(|candidate| *candidate == upstream)
            .ok_or(EndpointError::UnknownUpstream(upstream))?;
        let mut state = self.shared.lock();
        let from = state.failover.holder();
        if from != to {
            state.failover.move_to(to);
            let after_start = self.shared.started_at.elapsed();
            self.shared
                .record(&mut state, after_start, from, to, ChangeCause::Manual);
        }
        Ok(())
    }

    /// Stops listening, closes every forwarded connection and waits until
    /// all of the proxy's tasks have ended.
    pub async fn shutdown(mut self) {
        self.shutdown.send_replace(true);
        for task in std::mem::take(&mut self.tasks) {
            // A task that panicked has ended too; there is nothing to undo.
            let _ = task.await;
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Aborting the accept loop drops its JoinSet, which aborts every
        // connection task with it.
        for task in &self.tasks {
            task.abort();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    let target = shared.route();
                    connections.spawn(forward(client, target, shared.config.connect_timeout));
                }
                // Accept errors are transient (a client reset before we got
                // to it, or out of descriptors); pause so the loop cannot spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    connections.shutdown().await;
}

async fn forward(mut client: TcpStream, target: Option<SocketAddr>, connect_timeout: Duration) {
    let Some(target) = target else {
        refuse(client);
        return;
    };
    match tokio::time::timeout(connect_timeout, TcpStream::connect(target)).await {
        Ok(Ok(mut upstream)) => {
            // The API server's watches are latency-sensitive; small writes
            // should not wait for Nagle.
            let _ = client.set_nodelay(true);
            let _ = upstream.set_nodelay(true);
            // Either side closing or failing ends the connection; there is
            // no one to report a reset to.
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
        _ => refuse(client),
    }
}

/// Closes with a reset rather than a clean end, so a client sees a failed
/// connection, not an empty answer.
fn refuse(client: TcpStream) {
    let _ = client.set_zero_linger();
    drop(client);
}

async fn health_loop(shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let mut ticker = tokio::time::interval(shared.config.health_interval);
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // The first tick is immediate, and `start` has just checked.
    ticker.tick().await;
    // Owned here rather than inside a round, so a shutdown in the middle of
    // a round still waits for the probes to end instead of leaving aborted
    // tasks behind.
    let mut probes = JoinSet::new();
    loop {
        tokio::select! {
            _ = shutdown.changed() => break,
            _ = ticker.tick() => {}
        }
        let healthy = tokio::select! {
            _ = shutdown.changed() => break,
            healthy = probe_all(&mut probes, &shared.config.upstreams, shared.config.health_timeout) => healthy,
        };
        shared.observe(healthy);
    }
    probes.shutdown().await;
}

/// Checks every upstream at once, so one blackholed upstream does not
/// delay the verdict on the others.
async fn probe_all(
    probes: &mut JoinSet<(usize, bool)>,
    upstreams: &[SocketAddr],
    timeout: Duration,
) -> Vec<bool> {
    for (i, upstream) in upstreams.iter().copied().enumerate() {
        probes.spawn(async move {
            let healthy = matches!(
                tokio::time::timeout(timeout, TcpStream::connect(upstream)).await,
                Ok(Ok(_))
            );
            (i, healthy)
        });
    }
    let mut healthy = vec![false; upstreams.len()];
    while let Some(probe) = probes.join_next().await {
        // A probe task that failed to run proves nothing about health.
        if let Ok((i, up)) = probe {
            healthy[i] = up;
        }
    }
    healthy
}
