//! What each workload's pods are doing, counted as they change.
//!
//! Every instant something happens, the controllers ask how many of the
//! changed workload's pods are active, whether any made from an older
//! template is left, and the recorder asks how many are Ready. Answering
//! by walking the workload's pods made an instant cost as many pods as the
//! workload has: with 150 000 pods Ready at distinct instants, the run was
//! quadratic. Here the answers are counts, kept by
//! [`super::state::World`] as it adds pods and changes their phases, and
//! the workloads whose answers may have moved since the recorder last
//! asked are remembered, so an instant costs what changed in it.
//!
//! A pod counts for the workload whose pods it joined when it was created
//! ([`super::world::Workload::pods`]); orphaning changes its owner, never
//! that list, so it keeps counting where it was.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::world::{PodId, PodPhase, Template, WorkloadId};

/// The counts of every workload, and which may have changed.
#[derive(Debug, Clone, Default)]
pub(crate) struct PodTallies {
    /// Per pod: the workload whose pods it joined, if any.
    member_of: Vec<Option<WorkloadId>>,
    /// Per workload.
    tallies: Vec<Tally>,
    /// Workloads whose pods, spec or state were handed out for change
    /// since [`PodTallies::take_changed`] last ran.
    changed: BTreeSet<WorkloadId>,
    /// Whether a node was handed out for change since then: what a
    /// DaemonSet wants follows the nodes.
    nodes_changed: bool,
}

/// One workload's pods, counted.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    /// Ready.
    pub(crate) ready: u32,
    /// Live replicas to their controller ([`super::world::SimPod::is_active`]).
    pub(crate) active: u32,
    /// Pods not gone, per template they were made from: one entry per
    /// revision with pods left, none with a zero count.
    live: Vec<(Rc<Template>, u32)>,
}

impl Tally {
    /// The counts of `pods` (a workload's, as `(template, phase)`), from
    /// scratch: what the kept counts must always equal.
    pub(crate) fn recount<'a>(pods: impl Iterator<Item = (&'a Rc<Template>, PodPhase)>) -> Tally {
        let mut tally = Tally::default();
        for (template, phase) in pods {
            tally.count(template, phase, 1);
        }
        tally
    }

    /// Whether a pod not gone was made from another template than
    /// `current`: a rollout is under way.
    pub(crate) fn has_live_other_than(&self, current: &Rc<Template>) -> bool {
        self.live.iter().any(|(t, _)| !Rc::ptr_eq(t, current))
    }

    /// Adds (`by` 1) or takes away (`by` -1) one pod of that template in
    /// that phase.
    fn count(&mut self, template: &Rc<Template>, phase: PodPhase, by: i32) {
        let add = |n: &mut u32| *n = n.wrapping_add_signed(by);
        if phase == PodPhase::Ready {
            add(&mut self.ready);
        }
        if is_active(phase) {
            add(&mut self.active);
        }
        if phase != PodPhase::Gone {
            match self.live.iter().position(|(t, _)| Rc::ptr_eq(t, template)) {
                Some(i) => {
                    add(&mut self.live[i].1);
                    if self.live[i].1 == 0 {
                        self.live.remove(i);
                    }
                }
                None => self.live.push((template.clone(), 1)),
            }
        }
    }

    /// The same counts, with the templates in one order, to compare.
    fn normalised(&self) -> Tally {
        let mut tally = self.clone();
        tally.live.sort_by_key(|(t, _)| Rc::as_ptr(t) as usize);
        tally
    }
}

/// Equal counts, the templates told apart by identity, in any order.
impl PartialEq for Tally {
    fn eq(&self, other: &Tally) -> bool {
        let (a, b) = (self.normalised(), other.normalised());
        a.ready == b.ready
            && a.active == b.active
            && a.live.len() == b.live.len()
            && a.live
                .iter()
                .zip(&b.live)
                .all(|((t, n), (u, m))| Rc::ptr_eq(t, u) && n == m)
    }
}

/// [`super::world::SimPod::is_active`], by phase.
fn is_active(phase: PodPhase) -> bool {
    matches!(
        phase,
        PodPhase::Pending | PodPhase::Starting | PodPhase::Blocked | PodPhase::Ready
    )
}

impl PodTallies {
    /// A workload was added (with no pods yet).
    pub(crate) fn add_workload(&mut self, w: WorkloadId) {
        if self.tallies.len() <= w {
            self.tallies.resize(w + 1, Tally::default());
        }
        self.changed.insert(w);
    }

    /// A pod was added, a member of `member`'s pods if any.
    pub(crate) fn add_pod(
        &mut self,
        pod: PodId,
        member: Option<WorkloadId>,
        template: &Rc<Template>,
        phase: PodPhase,
    ) {
        if self.member_of.len() <= pod {
            self.member_of.resize(pod + 1, None);
        }
        self.member_of[pod] = member;
        if let Some(w) = member {
            self.tallies[w].count(template, phase, 1);
            self.changed.insert(w);
        }
    }

    /// A pod of that template went from phase `from` to `to`.
    pub(crate) fn phase_changed(
        &mut self,
        pod: PodId,
        template: &Rc<Template>,
        from: PodPhase,
        to: PodPhase,
    ) {
        if let Some(w) = self.member_of[pod] {
            let tally = &mut self.tallies[w];
            tally.count(template, from, -1);
            tally.count(template, to, 1);
            self.changed.insert(w);
        }
    }

    /// A pod was handed out for change (not of its phase): its workload
    /// may read differently.
    pub(crate) fn touch_pod(&mut self, pod: PodId) {
        if let Some(w) = self.member_of[pod] {
            self.changed.insert(w);
        }
    }

    /// A workload was handed out for change.
    pub(crate) fn touch_workload(&mut self, w: WorkloadId) {
        self.changed.insert(w);
    }

    /// A node was handed out for change.
    pub(crate) fn touch_nodes(&mut self) {
        self.nodes_changed = true;
    }

    /// One workload's counts.
    pub(crate) fn of(&self, w: WorkloadId) -> &Tally {
        &self.tallies[w]
    }

    /// The workloads that may read differently since the last call, in
    /// index order, `daemonsets` among them if a node changed; none is
    /// left marked.
    pub(crate) fn take_changed(
        &mut self,
        daemonsets: impl FnOnce() -> Vec<WorkloadId>,
    ) -> Vec<WorkloadId> {
        if std::mem::take(&mut self.nodes_changed) {
            self.changed.extend(daemonsets());
        }
        std::mem::take(&mut self.changed).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::template;
    use drillbench_model::rng::SeededRng;

    const PHASES: [PodPhase; 7] = [
        PodPhase::Pending,
        PodPhase::Starting,
        PodPhase::Blocked,
        PodPhase::Ready,
        PodPhase::Terminating,
        PodPhase::Succeeded,
        PodPhase::Gone,
    ];

    /// Random adds and phase changes over two workloads, two templates and
    /// a bare pod now and then: the kept counts equal a recount after
    /// every step; a control recount that leaves one pod out differs.
    #[test]
    fn kept_counts_equal_a_recount_after_random_changes() {
        let templates = [template("old"), template("new")];
        for seed in 0..32 {
            let mut rng = SeededRng::new(seed);
            let mut tallies = PodTallies::default();
            tallies.add_workload(0);
            tallies.add_workload(1);
            let mut pods: Vec<(Option<WorkloadId>, Rc<Template>, PodPhase)> = Vec::new();
            for _ in 0..300 {
                if pods.is_empty() || rng.index(3) == 0 {
                    let member = [Some(0), Some(1), None][rng.index(3)];
                    let t = templates[rng.index(2)].clone();
                    let phase = PHASES[rng.index(PHASES.len())];
                    tallies.add_pod(pods.len(), member, &t, phase);
                    pods.push((member, t, phase));
                } else {
                    let pod = rng.index(pods.len());
                    let to = PHASES[rng.index(PHASES.len())];
                    let (_, t, from) = &mut pods[pod];
                    tallies.phase_changed(pod, t, *from, to);
                    *from = to;
                }
                for w in [0, 1] {
                    let of_w = || pods.iter().filter(|(m, _, _)| *m == Some(w));
                    let recount = Tally::recount(of_w().map(|(_, t, p)| (t, *p)));
                    assert_eq!(*tallies.of(w), recount, "seed {seed}");
                    let current = &templates[1];
                    assert_eq!(
                        tallies.of(w).has_live_other_than(current),
                        of_w().any(|(_, t, p)| *p != PodPhase::Gone && !Rc::ptr_eq(t, current))
                    );
                }
            }
            // Control: a recount that misses one change tells it apart.
            let of_0 = || pods.iter().filter(|(m, _, _)| *m == Some(0));
            let missed = of_0()
                .map(|(_, t, p)| (t, *p))
                .chain([(&templates[0], PodPhase::Ready)]);
            assert_ne!(*tallies.of(0), Tally::recount(missed), "seed {seed}");
        }
    }

    #[test]
    fn changed_workloads_are_taken_once_in_order_with_daemonsets_after_a_node_change() {
        let t = template("web");
        let mut tallies = PodTallies::default();
        for w in 0..4 {
            tallies.add_workload(w);
        }
        assert_eq!(tallies.take_changed(Vec::new), [0, 1, 2, 3], "new ones");
        assert!(
            tallies.take_changed(|| vec![2]).is_empty(),
            "control: no node changed"
        );
        tallies.add_pod(0, Some(3), &t, PodPhase::Pending);
        tallies.add_pod(1, None, &t, PodPhase::Pending);
        tallies.touch_pod(1);
        tallies.touch_workload(1);
        assert_eq!(tallies.take_changed(Vec::new), [1, 3]);
        tallies.phase_changed(0, &t, PodPhase::Pending, PodPhase::Ready);
        tallies.touch_nodes();
        assert_eq!(tallies.take_changed(|| vec![2]), [2, 3]);
        assert_eq!(tallies.of(3).ready, 1);
        assert!(tallies.take_changed(|| vec![2]).is_empty());
    }
}
