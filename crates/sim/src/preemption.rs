//! Preemption as kube-scheduler's `DefaultPreemption` PostFilter carries it
//! out: for a pod no node takes, the victims and the node are chosen by
//! `drillbench_policy::preemption` over the scheduler's own filters; the
//! victims are deleted with their grace period, and the pod is nominated
//! to the node, where it binds once they are gone.

use std::collections::BTreeSet;

use super::Simulation;
use super::scheduler::Diagnosis;
use super::state::World;
use super::world::{NodeId, PodId, PodPhase};
use drillbench_observe::EventKind;
use drillbench_policy::fit_error::PreemptionFailure;
use drillbench_policy::preemption::{
    Resident, Victims, candidates_to_find, pick_candidate, select_victims,
};
use drillbench_policy::priority::PreemptionPolicy;

impl Simulation {
    /// Nominates a pending pod to a node, or clears its nomination: the
    /// filters count it there for the pods of lower or equal priority.
    pub(super) fn nominate(&mut self, pod: PodId, node: Option<NodeId>) {
        let from = std::mem::replace(&mut self.world.pod_mut(pod).nominated, node);
        self.scheduler.renominate(pod, from, node);
    }

    /// Preempts for a pod that fits nowhere (victims deleted, the pod
    /// nominated), or says why it did not. Call after a failed pick in a
    /// pass, with the pod's [`Diagnosis`] if one was taken since.
    pub(super) fn preempt(
        &mut self,
        pod: PodId,
        diagnosis: Option<&Diagnosis>,
    ) -> Result<(), Declined> {
        let priority = self.world.pod(pod).template.priority;
        // `PodEligibleToPreemptOthers`: never for a `Never` pod, and not
        // while the victims of its last preemption are still leaving its
        // nominated node.
        if priority.policy == PreemptionPolicy::Never {
            return Err(Declined::PolicyNever);
        }
        let lower =
            |world: &World, p: PodId| priority.may_preempt(world.pod(p).template.priority.value);
        if let Some(node) = self.world.pod(pod).nominated
            && self
                .world
                .node(node)
                .pods
                .iter()
                .any(|&p| self.world.pod(p).phase == PodPhase::Terminating && lower(&self.world, p))
        {
            return Err(Declined::TerminatingOnNominatedNode);
        }
        // Most clusters give every pod one priority: then no node has a
        // victim, and nothing else need be looked at.
        if !self.world.holds_priority_below(priority.value) {
            return Err(Declined::NoCandidate);
        }
        self.refresh_pdb_status();
        let allowed: Vec<i32> = self
            .world
            .pdbs()
            .iter()
            .map(|pdb| {
                pdb.object
                    .status
                    .as_ref()
                    .and_then(|s| s.disruptions_allowed)
                    .unwrap_or(0)
            })
            .collect();
        // `DryRunPreemption`: from a random offset among the nodes where
        // preemption might help, until enough candidates are found, one
        // of them breaking no budget. Those breaking none come first.
        let taken;
        let diagnosis = match diagnosis {
            Some(d) => d,
            None => {
                taken = self.scheduler.diagnose(&self.world, &self.volumes, pod);
                &taken
            }
        };
        let potential = diagnosis.preemption_candidates(&self.world, pod);
        if potential.is_empty() {
            return Err(Declined::NoCandidate);
        }
        let wanted = candidates_to_find(potential.len());
        let offset = self.engine.rng().index(potential.len());
        let mut found: Vec<(NodeId, Victims<PodId>)> = Vec::new();
        let mut violating: Vec<(NodeId, Victims<PodId>)> = Vec::new();
        for i in 0..potential.len() {
            let node = potential[(offset + i) % potential.len()];
            let residents: Vec<Resident<PodId>> = self
                .world
                .node(node)
                .pods
                .iter()
                .map(|&p| Resident {
                    pod: p,
                    priority: self.world.pod(p).template.priority.value,
                    started_at: self.world.pod(p).created_at,
                    // A pod a budget already counts as disrupted is no
                    // further violation.
                    budgets: self
                        .covering_budgets(p)
                        .into_iter()
                        .filter(|&b| !self.world.pdbs()[b].disrupted.contains_key(&p))
                        .collect(),
                })
                .collect();
            let victims = select_victims(priority, &residents, &allowed, |removed| {
                let removed: BTreeSet<PodId> = residents
                    .iter()
                    .zip(removed)
                    .filter(|(_, r)| **r)
                    .map(|(r, _)| r.pod)
                    .collect();
                self.scheduler
                    .fits_without(&self.world, &self.volumes, pod, node, &removed)
            });
            if let Some(victims) = victims {
                // Each list holds at most the number wanted (upstream's
                // `candidateList` drops what comes after).
                if victims.pdb_violations == 0 {
                    found.push((node, victims));
                } else if violating.len() < wanted {
                    violating.push((node, victims));
                }
                if !found.is_empty() && found.len() + violating.len() >= wanted {
                    break;
                }
            }
        }
        found.append(&mut violating);
        let summaries: Vec<Victims<PodId>> = found.iter().map(|(_, v)| v.clone()).collect();
        let Some(chosen) = pick_candidate(&summaries) else {
            return Err(Declined::NoCandidate);
        };
        let (node, victims) = found.swap_remove(chosen);
        self.nominate(pod, Some(node));
        // Lower-priority pods nominated to the node may no longer fit
        // there: their nomination is cleared.
        for other in self.scheduler.pending() {
            if other != pod
                && self.world.pod(other).nominated == Some(node)
                && lower(&self.world, other)
            {
                self.nominate(other, None);
            }
        }
        let preemptor = self.world.pod(pod).key();
        let node_name = self.world.node(node).name.clone();
        for victim in victims.pods {
            // A victim already leaving is left to finish (upstream skips
            // its API call).
            if self.world.pod(victim).phase == PodPhase::Terminating {
                continue;
            }
            let r = self.world.pod_ref(victim);
            self.record(
                EventKind::PodPreempted,
                r,
                Some(node),
                &format!("preempted by {preemptor} on node {node_name}"),
            );
            // Deleted with its own grace period (`DeleteOptions{}`).
            self.delete_pod(victim);
        }
        Ok(())
    }

    /// `DefaultPreemption.PostFilter`'s message for a pod it `declined`
    /// to preempt for, with the cluster as `diagnosis` saw it (declining
    /// changes nothing).
    pub(super) fn preemption_failure(
        &self,
        pod: PodId,
        declined: Declined,
        diagnosis: &Diagnosis,
    ) -> PreemptionFailure {
        match declined {
            Declined::PolicyNever => PreemptionFailure::PolicyNever,
            Declined::TerminatingOnNominatedNode => PreemptionFailure::TerminatingOnNominatedNode,
            Declined::NoCandidate => {
                let priority = self.world.pod(pod).template.priority;
                let world = &self.world;
                PreemptionFailure::NoCandidate(self.scheduler.preemption_fit_error(
                    world,
                    &self.volumes,
                    pod,
                    diagnosis,
                    |p| priority.may_preempt(world.pod(p).template.priority.value),
                ))
            }
        }
    }
}

/// Why [`Simulation::preempt`] preempted nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Declined {
    /// The pod's `preemptionPolicy` is `Never`.
    PolicyNever,
    /// Victims of its last preemption are still leaving its nominated node.
    TerminatingOnNominatedNode,
    /// No node where removing lower-priority pods would let it in.
    NoCandidate,
}
