//! Looking at the cluster and moving its time: every look takes in what
//! the watches delivered and probes what they cannot show; a wait steps a
//! served simulator from change to change, or polls a wall-clock cluster
//! until the time has passed.
//!
//! The bench's own changes that wait on both live here too, as they and
//! time's passing call each other: a drain's evictions (the [`DrainOps`]
//! a drain runs on) and the emulated autoscaler's decisions, carried out
//! as the real one would carry them out, whenever time passes.

use std::collections::BTreeSet;

use super::autoscaler::{Decision, EmulatedAutoscaler};
use super::drain::{DrainOps, Evicted};
use super::observer::PodOnNode;
use super::watch::stamp;
use super::{CATCH_UP, KubeBackend, KubeError, POLL, probe, requests};
use crate::{BackendError, provision};
use drillbench_model::duration::Duration;
use drillbench_model::k8s::taints::TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER as TO_BE_DELETED;
use drillbench_model::labels::STANDBY_KEY;
use drillbench_observe::{EventKind, ObjectRef, Time};

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
    #[expect(
        clippy::disallowed_methods,
        reason = "a real cluster runs on the wall clock"
    )]
    pub(super) fn sync(&mut self) -> Result<(), KubeError> {
        self.refresh_clock()?;
        let at = self.clock.now();
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
                                self.clock.now(),
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
        self.synced_at = self.clock.now();
        Ok(())
    }

    /// `/readyz` through the endpoint and etcd through the machines.
    fn probe(&mut self, at: Time) {
        let ready = self.runtime.block_on(probe::readyz(self.client.clone()));
        probe::record_api(&mut self.observer.obs, at, ready);
        let members = self.guard.machines().etcd_members();
        let control_planes = self
            .observer
            .pool_nodes(drillbench_model::topology::CONTROL_PLANE_POOL);
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

    /// Lets drill time pass until `until`, taking in what changed; a lost
    /// cluster or a stop asked for aborts the drill instead.
    pub(super) fn advance(&mut self, until: Time) {
        // Once the cluster is lost, time no longer passes for the drill:
        // the runner's waits end at once and the drill is aborted.
        if self.observer.obs.aborted.is_some() {
            return;
        }
        if drillbench_model::interrupt::requested() {
            self.observer.obs.aborted = Some("interrupted (Ctrl-C or SIGTERM)".to_owned());
            return;
        }
        if let Err(e) = self.try_advance_to(until) {
            self.observer.obs.aborted = Some(format!(
                "the {} backend lost the cluster: {}",
                self.options.name,
                drillbench_model::error_text::error_chain(&BackendError::from(e))
            ));
        }
    }

    fn try_advance_to(&mut self, until: Time) -> Result<(), KubeError> {
        if self.clock.stepped_api().is_none() {
            // A wait may be an hour long; a stop asked for ends it.
            while self.clock.now() < until && !drillbench_model::interrupt::requested() {
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

pub(super) fn node_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "Node".to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    }
}

/// A drain's view of the backend: the pods it evicted are terminating
/// from then on, whatever the watches show yet.
pub(super) struct Drainer<'a> {
    backend: &'a mut KubeBackend,
    evicted: BTreeSet<(String, String)>,
    /// The autoscaler's `--max-graceful-termination-sec`, when it is the
    /// autoscaler draining: each eviction asks for the pod's grace capped
    /// at it. An operator's drain leaves each pod its own.
    grace_cap: Option<u32>,
}

impl<'a> Drainer<'a> {
    pub(super) fn new(backend: &'a mut KubeBackend) -> Self {
        Drainer {
            backend,
            evicted: BTreeSet::new(),
            grace_cap: None,
        }
    }

    /// The cluster autoscaler's scale-down drain.
    pub(super) fn for_autoscaler(
        backend: &'a mut KubeBackend,
        max_graceful_termination_sec: u32,
    ) -> Self {
        Drainer {
            grace_cap: Some(max_graceful_termination_sec),
            ..Drainer::new(backend)
        }
    }
}

impl DrainOps for Drainer<'_> {
    type Error = KubeError;

    fn now(&self) -> Time {
        self.backend.clock.now()
    }

    fn pods_on(&mut self, node: &str) -> Vec<PodOnNode> {
        self.backend.observer.pods_to_evict(node)
    }

    fn terminating(&self, pod: &PodOnNode) -> bool {
        self.evicted
            .contains(&(pod.namespace.clone(), pod.name.clone()))
            || self
                .backend
                .observer
                .pod_deleting(&pod.namespace, &pod.name)
    }

    fn evict(&mut self, pod: &PodOnNode) -> Result<Evicted, KubeError> {
        let outcome = self
            .backend
            .runtime
            .block_on(requests::evict(
                &self.backend.client,
                &pod.namespace,
                &pod.name,
                self.grace_cap.map(|cap| {
                    drillbench_policy::drain::autoscaler_grace(pod.termination_grace_seconds, cap)
                }),
            ))
            .map_err(|source| KubeError::Api {
                what: format!("evict pod {}/{}", pod.namespace, pod.name),
                source,
            })?;
        match &outcome {
            Evicted::Accepted => {
                self.evicted
                    .insert((pod.namespace.clone(), pod.name.clone()));
            }
            Evicted::Refused(message) => {
                let r = ObjectRef {
                    kind: "Pod".to_owned(),
                    namespace: pod.namespace.clone(),
                    name: pod.name.clone(),
                };
                self.backend
                    .event(EventKind::EvictionRefused, r, None, message.clone());
            }
            Evicted::Gone => {}
        }
        let labels = self.backend.observer.pod_labels(&pod.namespace, &pod.name);
        // What the eviction changed, seen before the next decision.
        self.backend.sync()?;
        if outcome == Evicted::Accepted {
            let at = self.backend.clock.now();
            self.backend.observer.check_budgets_after_eviction(
                at,
                &pod.namespace,
                &pod.name,
                &labels.unwrap_or_default(),
            );
        }
        Ok(outcome)
    }

    fn wait(&mut self, ms: Time) {
        let until = self.backend.clock.now() + ms;
        self.backend.advance(until);
    }
}

impl KubeBackend {
    /// Lets the emulated autoscaler act when it is due, and takes in what
    /// it changed.
    pub(super) fn run_autoscaler(&mut self) -> Result<(), KubeError> {
        let Some(mut scaler) = self.autoscaler.take() else {
            return Ok(());
        };
        let now = self.clock.now();
        let result = if scaler.due() <= now {
            let decisions = scaler.step(now, &self.observer);
            self.carry_out(&mut scaler, decisions)
        } else {
            Ok(())
        };
        self.autoscaler = Some(scaler);
        result
    }

    /// Does what the emulated autoscaler decided, as the real one would:
    /// a released standby node stands for a booted server; a scale-down
    /// taints, evicts through the eviction API (a refusal aborts it) and
    /// deletes the server, then its Node.
    fn carry_out(
        &mut self,
        scaler: &mut EmulatedAutoscaler,
        decisions: Vec<Decision>,
    ) -> Result<(), KubeError> {
        if decisions.is_empty() {
            return Ok(());
        }
        for decision in decisions {
            match decision {
                Decision::ScaleUp {
                    pool,
                    node,
                    pods,
                    boot_ms,
                } => {
                    let message = format!(
                        "scale-up of {pool} for {pods} unschedulable pod(s); boots in {}",
                        Duration::from_millis(boot_ms)
                    );
                    self.event(EventKind::ScaleUp, node_ref(&node), Some(&node), message);
                }
                Decision::Release { node } => {
                    self.retaint(&node, STANDBY_KEY, None, true)?;
                }
                Decision::ScaleDown { node, utilisation } => {
                    self.retaint(&node, TO_BE_DELETED, Some("NoSchedule"), false)?;
                    let at = self.clock.now();
                    // A scale-down is a disruption like any fault: recovery
                    // is measured from it.
                    self.observer
                        .obs
                        .faults
                        .push((at, format!("autoscaler scale-down of {node}")));
                    self.event(
                        EventKind::ScaleDown,
                        node_ref(&node),
                        Some(&node),
                        format!(
                            "scale-down: unneeded (utilisation {:.0} %) for the unneeded time; draining",
                            utilisation * 100.0
                        ),
                    );
                    self.sync()?;
                    let pods = self.observer.pods_to_evict(&node);
                    let cap = scaler.max_graceful_termination_sec();
                    let mut drainer = Drainer::for_autoscaler(self, cap);
                    let mut refused = None;
                    for pod in &pods {
                        if let Evicted::Refused(why) = drainer.evict(pod)? {
                            refused = Some(why);
                            break;
                        }
                    }
                    if let Some(why) = refused {
                        // Upstream gives up on the node and lets it
                        // schedule again.
                        self.retaint(&node, TO_BE_DELETED, None, false)?;
                        scaler.aborted(&node, at);
                        self.event(
                            EventKind::ScaleDownAborted,
                            node_ref(&node),
                            Some(&node),
                            format!("scale-down aborted: {why}"),
                        );
                    }
                }
                Decision::Delete { node } => {
                    // The cloud deletes the server; the cloud controller
                    // then deletes its Node.
                    self.guard
                        .machines()
                        .remove(&node)
                        .map_err(|source| KubeError::Machines {
                            what: format!("delete the server of {node}"),
                            source: Box::new(source),
                        })?;
                    self.delete_node_object(&node)?;
                }
            }
        }
        self.sync()
    }

    /// [`provision::retaint`] on a node named as the drill names it.
    fn retaint(
        &mut self,
        node: &str,
        key: &str,
        effect: Option<&str>,
        drop_label: bool,
    ) -> Result<(), KubeError> {
        let api_name = self.observer.api_name(node);
        self.runtime
            .block_on(provision::retaint(
                &self.client,
                &api_name,
                key,
                effect,
                drop_label,
            ))
            .map_err(|source| KubeError::Api {
                what: format!("taint node {node}"),
                source,
            })
    }

    pub(super) fn cordon(&mut self, node: &str) -> Result<(), KubeError> {
        self.runtime
            .block_on(requests::cordon(
                &self.client,
                &self.observer.api_name(node),
            ))
            .map_err(|source| KubeError::Api {
                what: format!("cordon node {node}"),
                source,
            })
    }

    pub(super) fn delete_node_object(&mut self, node: &str) -> Result<(), KubeError> {
        self.runtime
            .block_on(requests::delete_node(
                &self.client,
                &self.observer.api_name(node),
            ))
            .map_err(|source| KubeError::Api {
                what: format!("delete node {node}"),
                source,
            })
    }
}
