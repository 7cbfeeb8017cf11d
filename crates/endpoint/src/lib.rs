//! The stable endpoint: Docker has no floating IP, so the bench runs a
//! small TCP failover proxy on loopback in front of the control planes' API
//! servers and points the probes' kubeconfig at it.
//!
//! Like a VIP it has one holder at a time. A dead holder keeps the address
//! for a configurable delay (clients see failed connections, as they would
//! while a floating IP still points at a dead node), then the address moves
//! to the first healthy upstream in configured order. The listening address
//! itself never changes, so "no credential refresh" and API availability
//! are measured through it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), drillbench_endpoint::EndpointError> {
//! use drillbench_endpoint::{Proxy, ProxyConfig};
//! let upstreams = ["172.18.0.2:6443".parse().unwrap(), "172.18.0.3:6443".parse().unwrap()];
//! let proxy = Proxy::start(ProxyConfig::new(upstreams)).await?;
//! println!("server: https://{}", proxy.local_addr());
//! proxy.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod failover;
mod proxy;

pub use proxy::{ChangeCause, EndpointError, HolderChange, Proxy, ProxyConfig};
