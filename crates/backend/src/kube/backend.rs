//! The [`Backend`] trait over a cluster: faults carried out through the
//! machines or the API, time moved by [`KubeBackend::sync`]'s looks, and
//! the answers read from the observer.

use std::collections::BTreeSet;

use super::autoscaler::EmulatedAutoscaler;
use super::drain::{self, DrainOutcome};
use super::probe::etcd_ref;
use super::sync::Drainer;
use super::{FIELD_MANAGER, KubeBackend, KubeError, dry_run, requests};
use crate::{Backend, BackendError, Capabilities, DryRunAnswer, Eviction};
use drillbench_model::drill::Drill;
use drillbench_model::duration::Duration;
use drillbench_model::scenario::step::{ApplyManifest, NodeChange, ObjectKey, PdbChange};
use drillbench_model::workload_ref::WorkloadRef;
use drillbench_observe::{Event, EventKind, ObjectRef, Observation, Time};
use drillbench_policy::drain::EVICTION_RETRY;
use drillbench_preflight::{Facts, NodeFacts, Readiness};

impl KubeBackend {
    fn served_now(&self) -> Option<drillbench_model::bench_protocol::Now> {
        self.served.as_ref()?.now().ok()
    }
}

impl Backend for KubeBackend {
    fn name(&self) -> &'static str {
        self.options.name
    }

    fn capabilities(&self) -> Capabilities {
        self.capabilities
    }

    fn now(&self) -> Time {
        self.clock.now()
    }

    fn advance_to(&mut self, until: Time) {
        self.advance(until);
    }

    fn next_change(&self) -> Option<Time> {
        if self.observer.obs.aborted.is_some() {
            return None;
        }
        let scaler = self.autoscaler.as_ref().map(EmulatedAutoscaler::due);
        self.clock.next_change(scaler)
    }

    fn pool_nodes(&self, pool: &str) -> Vec<String> {
        self.observer.pool_nodes(pool)
    }

    fn random_node_of(&mut self, pool: &str) -> Option<String> {
        let names = self.observer.pool_nodes(pool);
        if names.is_empty() {
            return None;
        }
        let i = self.targets.index(names.len());
        Some(names[i].clone())
    }

    fn autoscaler_pick(&mut self, pool: &str) -> Option<String> {
        // A cluster with its own autoscaler is asked which node it would
        // remove; otherwise the bench picks as the autoscaler would.
        if self.autoscaler.is_none()
            && let Some(api) = &self.served
            && let Ok(answer) = api.autoscaler_pick(pool)
        {
            return answer.node;
        }
        self.observer.autoscaler_pick(pool)
    }

    fn endpoint_holder(&self) -> Option<String> {
        if let Some(proxy) = &self.proxy {
            let holder = proxy.holder();
            return self
                .api_servers
                .iter()
                .find(|(_, addr)| *addr == holder)
                .map(|(node, _)| node.clone());
        }
        self.served_now()?.endpoint_holder
    }

    fn other_control_plane(&self) -> Option<String> {
        if let Some(now) = self.served_now() {
            return now.other_control_plane;
        }
        self.observer
            .node_readiness()
            .into_iter()
            .find(|(_, cp, ready)| *cp && *ready)
            .map(|(name, _, _)| name)
    }

    fn note(&mut self, event: Event) {
        self.observer.obs.events.push(event);
    }

    fn mark_start(&mut self) {
        self.observer.obs.start = self.now();
    }

    fn mark_fault(&mut self, node: Option<&str>, description: &str) {
        let at = self.now();
        self.observer.obs.faults.push((at, description.to_owned()));
        let object = ObjectRef {
            kind: if node.is_some() { "Node" } else { "Drill" }.to_owned(),
            namespace: String::new(),
            name: node.unwrap_or("fault").to_owned(),
        };
        self.event(
            EventKind::FaultInjected,
            object,
            node,
            description.to_owned(),
        );
    }

    fn delete_node(
        &mut self,
        node: &str,
        drain: bool,
        drain_timeout: Duration,
    ) -> Result<(), BackendError> {
        if !self.observer.has_node(node) {
            return Err(BackendError::NotFound(format!("no node `{node}`")));
        }
        if drain {
            self.cordon(node)?;
            self.sync()?;
            let mut drainer = Drainer::new(self);
            let outcome = drain::drain(
                &mut drainer,
                node,
                drain_timeout.as_millis(),
                EVICTION_RETRY.as_millis(),
            )?;
            if let DrainOutcome::TimedOut {
                remaining,
                refusals,
                last_refusal,
            } = outcome
            {
                // As a drain that times out leaves the node standing.
                self.mark_fault(
                    Some(node),
                    &format!(
                        "drain of {node} timed out with {} pod(s) left ({refusals} eviction(s) refused{}); the node stays",
                        remaining.len(),
                        last_refusal.map(|m| format!(": {m}")).unwrap_or_default()
                    ),
                );
                return Ok(());
            }
        }
        self.delete_node_object(node)?;
        self.guard.machines().remove(node)?;
        self.sync()?;
        Ok(())
    }

    fn crash_node(&mut self, node: &str) -> Result<(), BackendError> {
        self.guard.machines().crash(node)?;
        self.sync()?;
        Ok(())
    }

    fn recreate_control_plane(
        &mut self,
        node: &str,
        boot: Option<(Duration, Duration)>,
    ) -> Result<(), BackendError> {
        if boot.is_some() {
            self.event(
                EventKind::StepStarted,
                etcd_ref(node),
                Some(node),
                "the drill's boot delay is not the bench's to choose on real machines; they boot as fast as they do".to_owned(),
            );
        }
        let standing: BTreeSet<String> = self
            .observer
            .pool_nodes(drillbench_model::topology::CONTROL_PLANE_POOL)
            .into_iter()
            .collect();
        self.etcd.recreating(standing);
        self.guard.machines().recreate_control_plane(node)?;
        self.sync()?;
        Ok(())
    }

    fn replace_node(&mut self, node: &str) -> Result<(), BackendError> {
        self.guard.machines().replace(node)?;
        self.sync()?;
        Ok(())
    }

    fn rollout(
        &mut self,
        workload: &str,
        image: &str,
        container: Option<&str>,
    ) -> Result<(), BackendError> {
        let Some(WorkloadRef {
            namespace,
            kind,
            name,
        }) = WorkloadRef::parse(workload).filter(|w| w.kind == "Deployment")
        else {
            return Err(BackendError::Unsupported {
                backend: self.options.name,
                what: format!("roll out `{workload}`: rollouts are of Deployments"),
            });
        };
        let result = self.runtime.block_on(requests::set_image(
            &self.client,
            &namespace,
            &name,
            image,
            container,
        ));
        match result {
            Ok(true) => {
                self.event(
                    EventKind::WorkloadRolledOut,
                    ObjectRef {
                        kind,
                        namespace,
                        name,
                    },
                    None,
                    format!("image set to {image}: rolling update started"),
                );
                self.sync().map_err(BackendError::from)
            }
            Ok(false) => Err(BackendError::NotFound(format!(
                "{workload}: no container `{}`",
                container.unwrap_or_default()
            ))),
            Err(source) => Err(BackendError::from(KubeError::Api {
                what: format!("roll out {workload}"),
                source,
            })),
        }
    }

    fn restore_namespace(&mut self, namespace: &str, schedule: &str) -> Result<(), BackendError> {
        if !self.capabilities.restore_namespaces {
            return Err(BackendError::Unsupported {
                backend: self.options.name,
                what: format!("lose namespace `{namespace}` and restore it from a backup"),
            });
        }
        Ok(self.restore_namespace_with_velero(namespace, schedule)?)
    }

    fn apply_manifest(
        &mut self,
        drill: &Drill,
        manifest: &ApplyManifest,
    ) -> Result<(), BackendError> {
        let documents: Vec<&_> = manifest.documents.iter().collect();
        self.apply_documents(drill, &documents)?;
        self.sync()?;
        Ok(())
    }

    fn delete_object(&mut self, object: &ObjectKey) -> Result<(), BackendError> {
        let deleted = self
            .runtime
            .block_on(requests::delete_object(&self.client, object))
            .map_err(|source| KubeError::Api {
                what: object.to_string(),
                source,
            })?;
        if !deleted {
            return Err(BackendError::NotFound(format!(
                "no {} `{}/{}`",
                object.kind, object.namespace, object.name
            )));
        }
        self.sync()?;
        Ok(())
    }

    fn change_pdb(&mut self, change: &PdbChange) -> Result<(), BackendError> {
        self.runtime
            .block_on(requests::change_pdb(&self.client, change))
            .map_err(|source| KubeError::Api {
                what: change.to_string(),
                source,
            })?;
        self.sync()?;
        Ok(())
    }

    fn change_node(&mut self, node: &str, change: &NodeChange) -> Result<(), BackendError> {
        if !self.observer.has_node(node) {
            return Err(BackendError::NotFound(format!("no node `{node}`")));
        }
        let api_name = self.observer.api_name(node);
        self.runtime
            .block_on(requests::change_node(&self.client, &api_name, change))
            .map_err(|source| KubeError::Api {
                what: format!("{change} on node {node}"),
                source,
            })?;
        if matches!(
            change,
            NodeChange::Label { .. } | NodeChange::Annotate { .. }
        ) {
            // The watch reports taints and cordons; metadata edits are said here.
            self.event(
                EventKind::NodeRelabelled,
                ObjectRef {
                    kind: "Node".to_owned(),
                    namespace: String::new(),
                    name: node.to_owned(),
                },
                Some(node),
                change.to_string(),
            );
        }
        self.sync()?;
        Ok(())
    }

    fn evict_one(&mut self, workload: &str) -> Result<Eviction, BackendError> {
        let running = self.observer.running_pods_of(workload);
        if running.is_empty() {
            return Err(BackendError::NotFound(format!(
                "workload `{workload}` has no running pod to evict"
            )));
        }
        let key = running[self.targets.index(running.len())].clone();
        let (namespace, name) = key.split_once('/').unwrap_or(("", &key));
        let outcome = self
            .runtime
            .block_on(requests::evict(&self.client, namespace, name, None))
            .map_err(|source| KubeError::Api {
                what: format!("evict pod {key}"),
                source,
            })?;
        let r = ObjectRef {
            kind: "Pod".to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        };
        let answer = match outcome {
            drain::Evicted::Accepted | drain::Evicted::Gone => {
                self.event(EventKind::PodEvicted, r, None, format!("evicted {key}"));
                Eviction::Evicted(key)
            }
            drain::Evicted::Refused(message) => {
                self.event(EventKind::EvictionRefused, r, None, message.clone());
                Eviction::Refused(key, message)
            }
        };
        self.sync()?;
        Ok(answer)
    }

    fn scale(&mut self, workload: &str, replicas: u32) -> Result<(), BackendError> {
        let Some(target) = WorkloadRef::parse(workload) else {
            return Err(BackendError::NotFound(format!("no workload `{workload}`")));
        };
        let result = self.runtime.block_on(requests::scale(
            &self.client,
            &target.namespace,
            &target.kind,
            &target.name,
            replicas,
        ));
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {
                return Err(BackendError::NotFound(format!("no workload `{workload}`")));
            }
            Err(source) => {
                return Err(KubeError::Api {
                    what: format!("scale {workload}"),
                    source,
                }
                .into());
            }
        }
        self.event(
            EventKind::WorkloadScaled,
            ObjectRef {
                kind: target.kind,
                namespace: target.namespace,
                name: target.name,
            },
            None,
            format!("desired replicas set to {replicas}"),
        );
        self.sync()?;
        Ok(())
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a real cluster runs on the wall clock"
    )]
    fn preflight_facts(&self) -> (Facts, i64) {
        let nodes = self
            .observer
            .node_readiness()
            .into_iter()
            .map(|(name, control_plane, ready)| NodeFacts {
                name,
                control_plane,
                ready: if ready {
                    Readiness::True
                } else {
                    Readiness::Unknown
                },
            })
            .collect();
        let (backups, now) = match (self.served.as_ref(), self.served_now()) {
            (Some(api), Some(clock)) => {
                let backups = api
                    .backups()
                    .ok()
                    .and_then(|list| {
                        drillbench_preflight::input::backups_from_list(
                            "the served simulator's backups",
                            &list,
                        )
                        .ok()
                    })
                    .unwrap_or_default();
                (backups, clock.epoch_seconds + (clock.now_ms / 1000) as i64)
            }
            _ => {
                let client = self.client.clone();
                let backups = self
                    .runtime
                    .block_on(drillbench_preflight::live::read_objects(client))
                    .map(|(_, b)| b)
                    .unwrap_or_default();
                (backups, jiff::Timestamp::now().as_second())
            }
        };
        let (voters, learners) = self.etcd.members().unwrap_or((0, 0));
        let facts = Facts {
            nodes,
            backups,
            etcd: drillbench_preflight::EtcdCounts {
                voters: u64::from(voters),
                learners: u64::from(learners),
            },
        };
        (facts, now)
    }

    fn all_workloads_ready(&self) -> bool {
        self.observer.all_workloads_ready()
    }

    fn workload_ready(&self, workload: &str) -> bool {
        self.observer.workload_ready(workload)
    }

    fn ready_nodes(&self, pool: &str) -> u32 {
        self.observer.ready_nodes(pool)
    }

    fn etcd_members(&self) -> (u32, u32) {
        self.etcd.members().unwrap_or((0, 0))
    }

    // Allowed on a read-only cluster too: a dry run persists nothing.
    fn dry_run_create(&mut self, object: &serde_json::Value) -> Result<DryRunAnswer, BackendError> {
        let client = self.client.clone();
        self.runtime
            .block_on(dry_run::create(&client, object, FIELD_MANAGER))
            .map_err(|source| {
                KubeError::Api {
                    what: "submit the planted object with dryRun=All".to_owned(),
                    source,
                }
                .into()
            })
    }

    fn observation(&self) -> &Observation {
        &self.observer.obs
    }

    fn finish(mut self: Box<Self>) -> Observation {
        let end = self.now();
        self.restore.teardown();
        if let Err(e) = self.guard.teardown() {
            self.event(
                EventKind::StepStarted,
                ObjectRef {
                    kind: "Drill".to_owned(),
                    namespace: String::new(),
                    name: "teardown".to_owned(),
                },
                None,
                format!(
                    "teardown failed: {}",
                    drillbench_model::error_text::error_chain(&e)
                ),
            );
        }
        let mut obs = std::mem::take(&mut self.observer.obs);
        obs.end = end;
        obs
    }
}
