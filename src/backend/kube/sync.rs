//! Looking at the cluster and moving its time: every look takes in what
//! the watches delivered and probes what they cannot show; a wait steps a
//! served simulator from change to change, or polls a wall-clock cluster
//! until the time has passed.

use super::watch::stamp;
use super::{CATCH_UP, KubeBackend, KubeError, POLL, probe};
use crate::backend::Backend;
use crate::observe::Time;

impl KubeBackend {
    pub(super) fn refresh_clock(&mut self) -> Result<(), KubeError> {
        self.clock.refresh().map_err(|source| KubeError::Bench {
            what: "read the served simulator's clock".to_owned(),
            source,
        })
    }

    /// Takes in what the watches delivered and probes the cluster: on a
    /// stepped clock until every watch has caught up with the cluster's
    /// newest change of its kind; on the wall clock for one poll interval.
    pub(super) fn sync(&mut self) -> Result<(), KubeError> {
        self.refresh_clock()?;
        let at = self.now();
        match self.clock.latest() {
            Some(latest) => {
                let latest = latest.clone();
                // One bound for the whole catch-up: failing watches deliver
                // their errors, so a bound per delivery would never end.
                let deadline = tokio::time::Instant::now() + CATCH_UP;
                while !self.watches.caught_up(&latest) {
                    let watches = &mut self.watches;
                    let next = self.runtime.block_on(async {
                        tokio::time::timeout_at(deadline, watches.next()).await
                    });
                    match next {
                        Ok(Some((kind, event))) => {
                            self.watches
                                .take(at, kind, event, &latest, &mut self.observer);
                        }
                        Ok(None) => return Err(KubeError::Watch("the watches ended".to_owned())),
                        Err(_) => {
                            return Err(KubeError::Watch(format!(
                                "not caught up after {}s; {}, newest {latest:?}",
                                CATCH_UP.as_secs(),
                                self.watches.progress(),
                            )));
                        }
                    }
                }
            }
            None => {
                let origin = self.clock.wall_origin().unwrap_or_default();
                let floor = self.synced_at;
                let latest = Default::default();
                // What arrived so far, then whatever comes within the poll.
                let deadline = tokio::time::Instant::now() + POLL;
                loop {
                    let watches = &mut self.watches;
                    let next = self.runtime.block_on(async {
                        tokio::time::timeout_at(deadline, watches.next()).await
                    });
                    match next {
                        Ok(Some((kind, event))) => {
                            let at = super::observer::drill_time(
                                stamp(&event),
                                origin,
                                floor,
                                self.now(),
                            );
                            self.watches
                                .take(at, kind, event, &latest, &mut self.observer);
                        }
                        Ok(None) => return Err(KubeError::Watch("the watches ended".to_owned())),
                        Err(_) => break,
                    }
                }
            }
        }
        self.observer.settle(at);
        self.probe(at);
        self.synced_at = self.now();
        Ok(())
    }

    /// `/readyz` through the endpoint and etcd through the machines.
    fn probe(&mut self, at: Time) {
        let ready = self.runtime.block_on(probe::readyz(self.client.clone()));
        probe::record_api(&mut self.observer.obs, at, ready);
        let members = self.guard.machines().etcd_members();
        let control_planes = self
            .observer
            .pool_nodes(crate::topology::CONTROL_PLANE_POOL);
        self.etcd
            .record(&mut self.observer.obs, at, members, control_planes);
    }

    /// Moves the cluster's clock to `cluster_ms` (stepped) and takes in
    /// what changed.
    fn step_to(&mut self, cluster_ms: u64) -> Result<(), KubeError> {
        if let Some(api) = self.clock.stepped_api() {
            api.advance_to(cluster_ms)
                .map_err(|source| KubeError::Bench {
                    what: "advance the served simulator's clock".to_owned(),
                    source,
                })?;
        }
        self.sync()
    }

    pub(super) fn try_advance_to(&mut self, until: Time) -> Result<(), KubeError> {
        if self.clock.stepped_api().is_none() {
            // A wait may be an hour long; a stop asked for ends it.
            while self.now() < until && !crate::interrupt::requested() {
                self.sync()?;
                self.run_autoscaler()?;
            }
            return Ok(());
        }
        // Every instant the cluster or the bench's autoscaler changes at,
        // in order, so the probes and watches see each.
        loop {
            let scaler = self.autoscaler.as_ref().map(|a| a.due());
            match self.clock.next_stop(until, scaler) {
                Some(next) => {
                    self.step_to(next)?;
                    self.run_autoscaler()?;
                }
                None => break,
            }
        }
        self.step_to(self.clock.cluster_ms(until))?;
        self.run_autoscaler()
    }
}
