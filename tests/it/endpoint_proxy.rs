//! The stable endpoint end to end on real loopback sockets: upstreams are
//! tiny TCP servers that answer with their own id, clients are real
//! connections to the proxy's address.
//!
//! Nothing here asserts how fast anything happens. Waits are on the
//! proxy's own signals (its holder watch, its health view), each bounded
//! by a generous guard that only turns a hang into a failure.

use std::net::SocketAddr;
use std::time::Duration;

use drillbench_endpoint::{ChangeCause, EndpointError, Proxy, ProxyConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::task::JoinHandle;

/// Turns a hang into a failure; never a statement about speed.
const GUARD: Duration = Duration::from_secs(20);

async fn guarded<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, future)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within the {GUARD:?} guard"))
}

/// A loopback server that writes its id to every client and closes.
struct Upstream {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl Upstream {
    async fn start(id: &'static str) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            loop {
                let Ok((mut stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.write_all(id.as_bytes()).await;
                let _ = stream.shutdown().await;
            }
        });
        Self { addr, task }
    }

    /// Stops the server and closes its port, so connects are refused.
    async fn kill(self) {
        self.task.abort();
        let _ = self.task.await;
    }
}

/// A loopback server that never answers and keeps every connection open;
/// reports each client that sent something (the health checks' connects
/// send nothing and close at once).
async fn silent_upstream() -> (
    SocketAddr,
    JoinHandle<()>,
    tokio::sync::mpsc::UnboundedReceiver<()>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (accepted, on_accept) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut first = [0; 1];
            if matches!(stream.read(&mut first).await, Ok(1)) {
                held.push(stream);
                let _ = accepted.send(());
            }
        }
    });
    (addr, task, on_accept)
}

/// A loopback port whose accept queue is full and never drained: the
/// kernel drops further SYNs, so a connect to it hangs, like a node that
/// vanished from the network. Returns the port and the connections that
/// fill it (they must stay open).
async fn blackhole() -> (SocketAddr, TcpListener, Vec<TcpStream>) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(0).unwrap();
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    for _ in 0..16 {
        match tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => fillers.push(stream),
            Ok(Err(e)) => panic!("filling the blackhole's queue: {e}"),
            Err(_) => return (addr, listener, fillers),
        }
    }
    panic!("the accept queue of {addr} never filled");
}

/// What a client gets through the proxy: the upstream's id, or `None` when
/// the connection failed or ended without an answer.
async fn ask(addr: SocketAddr) -> Option<String> {
    guarded("a client", async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        let mut answer = String::new();
        match stream.read_to_string(&mut answer).await {
            Ok(_) if !answer.is_empty() => Some(answer),
            _ => None,
        }
    })
    .await
}

/// Waits until the proxy's health view says `addr` is `healthy`.
async fn until_health(proxy: &Proxy, addr: SocketAddr, healthy: bool) {
    guarded("the health view", async {
        while !proxy
            .health()
            .iter()
            .any(|(upstream, up)| *upstream == addr && *up == healthy)
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
}

fn fast_config(upstreams: &[SocketAddr], failover_delay: Duration) -> ProxyConfig {
    ProxyConfig {
        health_interval: Duration::from_millis(20),
        health_timeout: Duration::from_millis(500),
        failover_delay,
        ..ProxyConfig::new(upstreams.iter().copied())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_holder_fails_over_to_the_next_after_the_delay_on_the_same_address() {
    let a = Upstream::start("a").await;
    let b = Upstream::start("b").await;
    let (a_addr, b_addr) = (a.addr, b.addr);
    let delay = Duration::from_millis(300);
    let proxy = Proxy::start(fast_config(&[a_addr, b_addr], delay))
        .await
        .unwrap();
    let listen = proxy.local_addr();
    assert!(listen.ip().is_loopback(), "{listen}");
    assert_eq!(proxy.holder(), a_addr);
    assert_eq!(ask(listen).await.as_deref(), Some("a"));

    let mut holder = proxy.watch_holder();
    holder.borrow_and_update();
    let killed_after = proxy.started_at().elapsed();
    a.kill().await;
    guarded("the failover", holder.changed()).await.unwrap();

    assert_eq!(*holder.borrow(), b_addr);
    assert_eq!(proxy.holder(), b_addr);
    let history = proxy.history();
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!((history[0].from, history[0].to), (a_addr, b_addr));
    assert_eq!(history[0].cause, ChangeCause::Failover);
    // The dead holder kept the address for at least the whole delay.
    assert!(
        history[0].after_start >= killed_after + delay,
        "moved at {:?}, killed at {killed_after:?}, delay {delay:?}",
        history[0].after_start
    );
    assert_eq!(proxy.local_addr(), listen);
    assert_eq!(ask(listen).await.as_deref(), Some("b"));

    proxy.shutdown().await;
    b.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn during_the_delay_clients_fail_and_a_manual_move_takes_the_address_at_once() {
    let a = Upstream::start("a").await;
    let b = Upstream::start("b").await;
    let (a_addr, b_addr) = (a.addr, b.addr);
    // Longer than any test run: only a manual move can end the outage.
    let proxy = Proxy::start(fast_config(&[a_addr, b_addr], Duration::from_secs(3600)))
        .await
        .unwrap();
    let listen = proxy.local_addr();
    assert_eq!(ask(listen).await.as_deref(), Some("a"));

    a.kill().await;
    until_health(&proxy, a_addr, false).await;
    assert_eq!(
        ask(listen).await,
        None,
        "the dead holder still has the address"
    );
    assert_eq!(proxy.holder(), a_addr);
    assert!(proxy.history().is_empty());

    proxy.move_to(b_addr).unwrap();
    assert_eq!(proxy.holder(), b_addr);
    assert_eq!(ask(listen).await.as_deref(), Some("b"));
    let history = proxy.history();
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!(
        (history[0].from, history[0].to, history[0].cause),
        (a_addr, b_addr, ChangeCause::Manual)
    );

    // Moving to the holder is not a move.
    proxy.move_to(b_addr).unwrap();
    assert_eq!(proxy.history().len(), 1);

    proxy.shutdown().await;
    b.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_healthy_upstream_clients_fail_fast_instead_of_hanging() {
    // The holder is a blackhole: a proxy that tried to reach it would wait
    // for the hour-long connect timeout and trip the guard.
    let (hole, _listener, _fillers) = blackhole().await;
    let dead = Upstream::start("dead").await;
    let dead_addr = dead.addr;
    dead.kill().await;
    let config = ProxyConfig {
        connect_timeout: Duration::from_secs(3600),
        ..fast_config(&[hole, dead_addr], Duration::from_millis(50))
    };
    let proxy = Proxy::start(config).await.unwrap();
    until_health(&proxy, hole, false).await;
    until_health(&proxy, dead_addr, false).await;

    for _ in 0..3 {
        assert_eq!(ask(proxy.local_addr()).await, None);
    }
    // Nothing healthy to move to, so the address stays put.
    assert_eq!(proxy.holder(), hole);
    assert!(proxy.history().is_empty(), "{:?}", proxy.history());
    proxy.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_the_listener_and_open_connections_and_leaves_no_tasks() {
    let (upstream, upstream_task, mut accepted) = silent_upstream().await;
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks_before = metrics.num_alive_tasks();

    let proxy = Proxy::start(fast_config(&[upstream], Duration::from_secs(1)))
        .await
        .unwrap();
    let listen = proxy.local_addr();
    let mut open = TcpStream::connect(listen).await.unwrap();
    open.write_all(b"hello").await.unwrap();
    guarded("the client to reach the upstream", accepted.recv())
        .await
        .expect("the upstream is running");

    proxy.shutdown().await;

    let mut rest = Vec::new();
    let closed = guarded("the forwarded connection", open.read_to_end(&mut rest)).await;
    assert!(closed.is_err() || rest.is_empty(), "{closed:?} {rest:?}");
    assert!(
        TcpStream::connect(listen).await.is_err(),
        "{listen} still accepts after shutdown"
    );
    // A finished task leaves the runtime's count just after its JoinHandle
    // resolves, on another worker; wait for the count rather than read it
    // once. A leaked task never leaves, and trips the guard.
    guarded("the proxy's tasks to end", async {
        while metrics.num_alive_tasks() != tasks_before {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;

    upstream_task.abort();
}

#[tokio::test]
async fn a_move_to_an_unknown_address_is_refused() {
    let a = Upstream::start("a").await;
    let proxy = Proxy::start(ProxyConfig::new([a.addr])).await.unwrap();
    let stranger: SocketAddr = "127.0.0.1:1".parse().unwrap();
    assert!(matches!(
        proxy.move_to(stranger),
        Err(EndpointError::UnknownUpstream(addr)) if addr == stranger
    ));
    assert_eq!(proxy.holder(), a.addr);
    proxy.shutdown().await;
    a.kill().await;
}

#[tokio::test]
async fn unusable_configurations_are_refused_before_binding() {
    let a: SocketAddr = "127.0.0.1:6443".parse().unwrap();
    for (config, expected) in [
        (ProxyConfig::new([]), "no upstreams"),
        (ProxyConfig::new([a, a]), "listed twice"),
        (
            ProxyConfig {
                health_interval: Duration::ZERO,
                ..ProxyConfig::new([a])
            },
            "health_interval",
        ),
    ] {
        let error = Proxy::start(config).await.unwrap_err();
        assert!(
            matches!(&error, EndpointError::Config(message) if message.contains(expected)),
            "{error}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn on_paused_time_the_address_moves_only_after_the_delay() {
    // The health loop runs on tokio's clock; paused time makes the delay
    // exact. The upstreams are closed ports, refused by the kernel without
    // a timer involved.
    let a = Upstream::start("a").await;
    let b = Upstream::start("b").await;
    let (a_addr, b_addr) = (a.addr, b.addr);
    let config = ProxyConfig {
        health_interval: Duration::from_secs(1),
        health_timeout: Duration::from_secs(1),
        failover_delay: Duration::from_secs(30),
        ..ProxyConfig::new([a_addr, b_addr])
    };
    let proxy = Proxy::start(config).await.unwrap();
    a.kill().await;
    let mut holder = proxy.watch_holder();
    holder.borrow_and_update();
    holder.changed().await.unwrap();
    assert_eq!(*holder.borrow(), b_addr);
    let change = &proxy.history()[0];
    // First failed check at 1 s, then 30 s of keeping the address.
    assert!(change.after_start >= Duration::from_secs(31), "{change:?}");
    proxy.shutdown().await;
    b.kill().await;
}
