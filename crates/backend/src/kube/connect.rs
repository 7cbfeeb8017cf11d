//! Connecting to a cluster: the stable endpoint in front of the machines'
//! API servers, the clock, the drill's workloads applied, the watches
//! started and the first look taken; and the machines torn down exactly
//! once however the backend ends.

use super::autoscaler::EmulatedAutoscaler;
use super::clock::Clock;
use super::kubeconfig::{client_for, server_and_token_of};
use super::observer::Observer;
use super::probe::EtcdProbe;
use super::watch::Watches;
use super::{FIELD_MANAGER, KubeBackend, KubeError, KubeOptions, admission, apply, requests};
use crate::bench_api::BenchApi;
use crate::machines::Machines;
use crate::{BackendError, Capabilities};
use drillbench_model::drill::Drill;
use drillbench_model::manifest::Document;
use drillbench_model::rng::SeededRng;
use drillbench_observe::ObjectRef;

/// Tears the machines down exactly once: in
/// [`Backend::finish`](crate::Backend::finish), or when
/// the backend is dropped after an error or a panic.
pub(super) struct TeardownGuard {
    machines: Option<Box<dyn Machines>>,
}

impl TeardownGuard {
    pub(super) fn machines(&mut self) -> &mut dyn Machines {
        self.machines
            .as_deref_mut()
            .expect("the machines are there until teardown")
    }

    pub(super) fn teardown(&mut self) -> Result<(), BackendError> {
        match self.machines.take() {
            Some(mut machines) => machines.teardown(),
            None => Ok(()),
        }
    }
}

impl Drop for TeardownGuard {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

impl KubeBackend {
    /// Connects to the machines' cluster, applies the drill's workloads
    /// (unless read-only), starts the watches and takes the first look.
    pub fn connect(
        drill: &Drill,
        seed: u64,
        machines: Box<dyn Machines>,
        options: KubeOptions,
    ) -> Result<KubeBackend, KubeError> {
        let mut guard = TeardownGuard {
            machines: Some(machines),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(KubeError::Runtime)?;
        let (path, context) = guard.machines().kubeconfig();
        let (kubeconfig_server, token) = runtime
            .block_on(server_and_token_of(&path, context.as_deref()))
            .unwrap_or_default();
        // Whether the cluster is a served simulator is a property of the
        // cluster, not of the way to it.
        let served = crate::bench_api::loopback_http_addr(&kubeconfig_server)
            .and_then(|addr| BenchApi::detect(addr, token))
            .map(|(api, _)| api);
        // The bench holds the stable endpoint when the machines are its
        // own: every request and probe goes through the failover proxy, so
        // availability and "no credential refresh" are measured there.
        let api_servers = guard.machines().api_servers();
        let proxy = if api_servers.is_empty() {
            None
        } else {
            let config =
                drillbench_endpoint::ProxyConfig::new(api_servers.iter().map(|(_, addr)| *addr));
            Some(
                runtime
                    .block_on(drillbench_endpoint::Proxy::start(config))
                    .map_err(KubeError::Endpoint)?,
            )
        };
        let through = proxy.as_ref().map(drillbench_endpoint::Proxy::local_addr);
        let client = runtime.block_on(client_for(&path, context.as_deref(), through))?;
        let server = match through {
            Some(addr) => format!("stable endpoint {addr}"),
            None => kubeconfig_server.clone(),
        };
        let mut capabilities = guard.machines().capabilities();
        if options.read_only {
            capabilities = Capabilities::NONE;
        }
        let clock = Clock::start(served.as_ref()).map_err(|source| KubeError::Bench {
            what: "read the served simulator's clock".to_owned(),
            source,
        })?;
        // Watches do nothing until polled: the first look, after the
        // applies, is their first list.
        let watches = Watches::start(&client);
        let mut backend = KubeBackend {
            options,
            runtime,
            client,
            restore: super::restore::RestoreState::default(),
            guard,
            capabilities,
            clock,
            watches,
            observer: Observer::new(drill.topology.clone()),
            targets: SeededRng::for_targets(seed),
            etcd: EtcdProbe::default(),
            served,
            api_servers,
            proxy,
            synced_at: 0,
            autoscaler: None,
        };
        backend
            .observer
            .obs
            .endpoint_addresses
            .push((0, server.clone()));
        if !backend.options.read_only {
            backend.apply_workloads(drill)?;
            // What the applies changed is part of the first look.
            backend.refresh_clock()?;
        }
        backend.sync()?;
        if backend.options.emulate_autoscaler && !backend.options.read_only {
            let now = backend.clock.now();
            backend.autoscaler = EmulatedAutoscaler::new(&drill.topology, seed, now);
        }
        Ok(backend)
    }

    /// Server-side applies every workload of the drill, labelled with the
    /// run; a kind the cluster does not serve is recorded as not simulated.
    /// The objects a `fromCluster` drill read from the cluster are the
    /// platform's, already there: they are never applied.
    fn apply_workloads(&mut self, drill: &Drill) -> Result<(), KubeError> {
        let documents: Vec<&Document> = drill
            .workloads
            .iter()
            .filter(|d| !drill.is_cluster_object(d))
            .collect();
        self.apply_documents(drill, &documents)
    }

    /// Server-side applies objects in order, labelled with the run and,
    /// where the bench admits for the cluster, through the drill's guards
    /// first (a refused one never reaches the cluster); a kind the cluster
    /// does not serve is recorded as not simulated.
    pub(super) fn apply_documents(
        &mut self,
        drill: &Drill,
        documents: &[&Document],
    ) -> Result<(), KubeError> {
        let client = self.client.clone();
        let run = self.options.run_id.clone();
        let admit_guards = self.options.admit_guards;
        let mut not_served = Vec::new();
        let mut decisions = Vec::new();
        self.runtime.block_on(async {
            for doc in documents {
                let mut value = doc.value.clone();
                if admit_guards {
                    let verdicts = admission::admit_object(drill, &mut value);
                    let refused = verdicts.iter().any(|d| d.refused);
                    let key =
                        drillbench_model::workload_ref::WorkloadRef::of_object(&value).to_string();
                    decisions.extend(verdicts.into_iter().map(|d| (key.clone(), d)));
                    if refused {
                        // Refused at admission: it never reaches the cluster.
                        continue;
                    }
                }
                let (Some(kind), Some(name)) = (doc.kind(), doc.name()) else {
                    continue;
                };
                requests::label_with_run(&mut value, &run);
                let applied = apply::server_side_apply(&client, &value, FIELD_MANAGER)
                    .await
                    .map_err(|source| KubeError::Api {
                        what: format!("apply {kind} {name}"),
                        source,
                    })?;
                if applied == apply::Applied::NotServed {
                    not_served.push(ObjectRef {
                        kind: kind.to_owned(),
                        namespace: doc.namespace().unwrap_or_default().to_owned(),
                        name: name.to_owned(),
                    });
                }
            }
            Ok::<(), KubeError>(())
        })?;
        self.observer.obs.not_simulated.extend(not_served);
        let at = self.clock.now();
        self.observer
            .obs
            .admissions
            .extend(decisions.into_iter().map(|(object, d)| {
                drillbench_observe::AdmissionDecision {
                    at,
                    guard: d.guard,
                    object,
                    refused: d.refused,
                    reason: d.reason,
                }
            }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    /// Machines that count their teardowns.
    struct Counted(Arc<AtomicU32>);

    impl Machines for Counted {
        fn name(&self) -> &'static str {
            "counted"
        }
        fn capabilities(&self) -> Capabilities {
            Capabilities::NONE
        }
        fn kubeconfig(&self) -> (PathBuf, Option<String>) {
            (PathBuf::new(), None)
        }
        fn api_servers(&self) -> Vec<(String, SocketAddr)> {
            Vec::new()
        }
        fn crash(&mut self, _: &str) -> Result<(), BackendError> {
            Ok(())
        }
        fn remove(&mut self, _: &str) -> Result<(), BackendError> {
            Ok(())
        }
        fn replace(&mut self, _: &str) -> Result<(), BackendError> {
            Ok(())
        }
        fn recreate_control_plane(&mut self, _: &str) -> Result<(), BackendError> {
            Ok(())
        }
        fn etcd_members(&mut self) -> Option<(u32, u32)> {
            None
        }
        fn teardown(&mut self) -> Result<(), BackendError> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    fn guard() -> (TeardownGuard, Arc<AtomicU32>) {
        let count = Arc::new(AtomicU32::new(0));
        let guard = TeardownGuard {
            machines: Some(Box::new(Counted(count.clone()))),
        };
        (guard, count)
    }

    #[test]
    fn the_machines_are_torn_down_once_whether_finished_or_dropped() {
        let (mut finished, count) = guard();
        assert_eq!(finished.machines().name(), "counted");
        finished.teardown().expect("torn down");
        finished.teardown().expect("nothing left to tear down");
        drop(finished);
        assert_eq!(count.load(Ordering::SeqCst), 1);
        // An error or a panic drops the backend without a teardown call.
        let (dropped, count) = guard();
        drop(dropped);
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }
}
