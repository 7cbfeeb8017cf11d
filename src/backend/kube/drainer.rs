//! The bench's evictions on a cluster: the [`DrainOps`] a drain runs on,
//! and the emulated autoscaler's decisions carried out as the real one
//! would carry them out.

use std::collections::BTreeSet;

use super::autoscaler::{Decision, EmulatedAutoscaler};
use super::drain::{DrainOps, Evicted};
use super::observer::PodOnNode;
use super::{KubeBackend, KubeError, requests};
use crate::backend::{Backend, provision};
use crate::duration::Duration;
use crate::k8s::taints::TAINT_TO_BE_DELETED_BY_CLUSTER_AUTOSCALER as TO_BE_DELETED;
use crate::labels::STANDBY_KEY;
use crate::observe::{EventKind, ObjectRef, Time};

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
}

impl<'a> Drainer<'a> {
    pub(super) fn new(backend: &'a mut KubeBackend) -> Self {
        Drainer {
            backend,
            evicted: BTreeSet::new(),
        }
    }
}

impl DrainOps for Drainer<'_> {
    type Error = KubeError;

    fn now(&self) -> Time {
        self.backend.now()
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
            let at = self.backend.now();
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
        let until = self.backend.now() + ms;
        self.backend.advance_to(until);
    }
}

impl KubeBackend {
    /// Lets the emulated autoscaler act when it is due, and takes in what
    /// it changed.
    pub(super) fn run_autoscaler(&mut self) -> Result<(), KubeError> {
        let Some(mut scaler) = self.autoscaler.take() else {
            return Ok(());
        };
        let now = self.now();
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
                    let at = self.now();
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
                    let mut drainer = Drainer::new(self);
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
                        scaler.aborted(&node);
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
