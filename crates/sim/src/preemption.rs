//! Preemption as kube-scheduler's `DefaultPreemption` PostFilter carries it
//! out: for a pod no node takes, the victims and the node are chosen by
//! `drillbench_policy::preemption` over the scheduler's own filters; the
//! victims are deleted with their grace period, and the pod is nominated
//! to the node, where it binds once they are gone.

use std::collections::BTreeSet;

use super::Simulation;
use super::state::World;
use super::world::{NodeId, PodId, PodPhase};
use drillbench_observe::EventKind;
use drillbench_policy::preemption::{
    Resident, Victims, candidates_to_find, pick_candidate, select_victims,
};

impl Simulation {
    /// Nominates a pending pod to a node, or clears its nomination: the
    /// filters count it there for the pods of lower or equal priority.
    pub(super) fn nominate(&mut self, pod: PodId, node: Option<NodeId>) {
        let from = std::mem::replace(&mut self.world.pod_mut(pod).nominated, node);
        self.scheduler.renominate(pod, from, node);
    }

    /// Preempts for a pod that fits nowhere; true when it did (victims
    /// deleted, the pod nominated). Call after a failed pick in a pass.
    pub(super) fn preempt(&mut self, pod: PodId) -> bool {
        let priority = self.world.pod(pod).template.priority;
        let lower =
            |world: &World, p: PodId| priority.may_preempt(world.pod(p).template.priority.value);
        // `PodEligibleToPreemptOthers`: not while the victims of its last
        // preemption are still leaving its nominated node.
        if let Some(node) = self.world.pod(pod).nominated
            && self
                .world
                .node(node)
                .pods
                .iter()
                .any(|&p| self.world.pod(p).phase == PodPhase::Terminating && lower(&self.world, p))
        {
            return false;
        }
        // Most clusters give every pod one priority: then no node has a
        // victim, and nothing else need be looked at.
        if !self.world.holds_priority_below(priority.value) {
            return false;
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
        let potential = self
            .scheduler
            .preemption_candidates(&self.world, &self.volumes, pod);
        if potential.is_empty() {
            return false;
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
            return false;
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
        true
    }
}
