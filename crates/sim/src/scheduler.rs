//! The scheduler: kube-scheduler's filters and scores, over the simulator's
//! nodes.
//!
//! Filters, in upstream's plugin order: cordon (unless tolerated); taints
//! with NoSchedule/NoExecute; the node is Ready and its server up (a
//! Booting node stands for the node controller's `not-ready` taint; a node
//! whose server went down is refused before the node controller marks it,
//! where kube-scheduler would still bind to it); `nodeSelector` and required
//! node affinity; requests against allocatable (CPU, memory, pod count);
//! the node affinity of the pod's bound volumes (VolumeBinding); required
//! pod affinity and anti-affinity by topology key, the running pods'
//! anti-affinity included (`drillbench_policy::interpod`). Scores, with the
//! default plugin weights: NodeResourcesFit least-allocated (1), NodeAffinity
//! preferred terms normalised to 0–100 (2), TaintToleration
//! PreferNoSchedule (3), NodeResourcesBalancedAllocation (1). Ties are
//! broken by the seeded generator.
//!
//! A pod that fits no node says why as kube-scheduler's FailedScheduling
//! event does (`drillbench_policy::fit_error`): each node's first failing
//! filter, its reasons counted, then what preemption made of it.
//!
//! Like kube-scheduler, it stops filtering once it has found enough
//! feasible nodes (`percentageOfNodesToScore`, adaptive: 50 % minus one
//! per 125 nodes, at least 5 %, at least 100 nodes), starting where the
//! previous pod stopped. Node affinity, taints and the preferred-affinity
//! and PreferNoSchedule standing are judged once per (pod template, node
//! class) and cached on the template; the scan itself reads a compact
//! per-node array (`HotNode`: free CPU and memory, pod room, class, one
//! flag) instead of the full node structs, and only the capacity part of
//! the score is computed per node (and kept until that node's requests
//! change). Every shortcut decides exactly what the full filters decide:
//! a node the flag does not vouch for goes through them.
//!
//! PodTopologySpread's `DoNotSchedule` constraints filter
//! (`drillbench_policy::spread`), before the inter-pod filter as upstream
//! orders them; both read other pods, so a pod with neither skips them and
//! the per-class verdicts stay what they were.
//!
//! PodTopologySpread's `ScheduleAnyway` constraints score (weight 2), as
//! `drillbench_policy::spread::SpreadScore` transcribes `scoring.go`.
//! Both read their counts per domain from the pod groups where they can
//! (`spread_counts`), so a spread pod costs its domains, not every node.
//!
//! A pending pod nominated to a node by its preemption counts there, as
//! if it ran, for every pod of equal or lower priority, and such a pod
//! must fit both with and without it (upstream's
//! `RunFilterPluginsWithNominatedPods`); nodes with nominations always go
//! through the full filters.
//!
//! Not modelled: the system default spread constraints (which would score
//! every Deployment, ReplicaSet and StatefulSet pod that declares no
//! constraint), preferred inter-pod affinity, image locality, volume limits per node,
//! preferred node-affinity terms on per-node fields (the hostname).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;

use super::classes::{ClassView, Classes};
use super::clock::Time;
use super::pod_groups::PodGroup;
use super::spread_counts::{SpreadCensus, pod_by_pod, spread_pod};
use super::state::World;
use super::volumes::Volumes;
use super::world::{NodeId, NodePhase, PodId, PodPhase, Resources, SimNode, Template};
use drillbench_model::k8s::taints::{
    TAINT_NODE_NOT_READY, cordon_blocks, intolerable_prefer_no_schedule, scheduling_blocker,
};
use drillbench_model::rng::SeededRng;
use drillbench_policy::fit_error::{
    FitError, NO_PREEMPTION_VICTIMS, PREEMPTION_NOT_HELPFUL, Shortfall, untolerated_taint,
};
use drillbench_policy::interpod::{InterPodMisfit, InterPodState, PodTerms};
use drillbench_policy::priority::queue_key;
use drillbench_policy::spread::{SpreadMisfit, SpreadState};

/// kube-scheduler's `minFeasibleNodesToFind`.
const MIN_FEASIBLE: usize = 100;

/// How many feasible nodes to look for among `all` nodes.
pub fn feasible_nodes_to_find(all: usize) -> usize {
    if all < MIN_FEASIBLE {
        return all;
    }
    let percentage = (50 - (all as i64) / 125).max(5) as usize;
    (all * percentage / 100).max(MIN_FEASIBLE)
}

/// Why a pod did not fit a node: the first filter that refused it, in
/// upstream's plugin order (NodeUnschedulable, TaintToleration,
/// NodeAffinity, NodeResourcesFit, VolumeBinding, PodTopologySpread,
/// InterPodAffinity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Misfit {
    /// The node cannot run pods yet or any more, and no taint says so: it
    /// is Booting (upstream: the node lifecycle controller's `not-ready`
    /// taint), or its server is down before the node controller marks it
    /// (kube-scheduler has no such filter; the simulator keeps pods off a
    /// node whose kubelet cannot start them).
    NotReady,
    Unschedulable,
    /// The first of the node's taints the pod does not tolerate, by index.
    Taint(usize),
    Affinity,
    Resources(Shortfall),
    VolumeAffinity,
    /// The pod's own required affinity finds no matching pod there.
    PodAffinity,
    /// The pod's own required anti-affinity finds a matching pod there.
    PodAntiAffinity,
    /// A running pod's required anti-affinity selects the pod.
    ExistingAntiAffinity,
    /// The node lacks a topology spread constraint's key.
    SpreadLabel,
    /// The pod would break a `DoNotSchedule` spread constraint's skew.
    Spread,
}

impl Misfit {
    /// Adds the reasons kube-scheduler's filter gives for this misfit on
    /// `n` to `fit` (NodeResourcesFit may give several).
    fn count_in(self, n: &SimNode, fit: &mut FitError) {
        match self {
            Misfit::NotReady if n.phase == NodePhase::Booting => {
                fit.add(&untolerated_taint(TAINT_NODE_NOT_READY, ""));
            }
            Misfit::NotReady => fit.add("node(s) were not ready"),
            Misfit::Unschedulable => fit.add("node(s) were unschedulable"),
            Misfit::Taint(i) => {
                let taint = &n.taints()[i];
                fit.add(&untolerated_taint(
                    &taint.key,
                    taint.value.as_deref().unwrap_or(""),
                ));
            }
            Misfit::Affinity => fit.add("node(s) didn't match Pod's node affinity/selector"),
            Misfit::Resources(short) => short.reasons().for_each(|r| fit.add(r)),
            Misfit::VolumeAffinity => fit.add("node(s) had volume node affinity conflict"),
            Misfit::PodAffinity => fit.add(InterPodMisfit::Affinity.describe()),
            Misfit::PodAntiAffinity => fit.add(InterPodMisfit::AntiAffinity.describe()),
            Misfit::ExistingAntiAffinity => {
                fit.add(InterPodMisfit::ExistingAntiAffinity.describe())
            }
            Misfit::SpreadLabel => fit.add(SpreadMisfit::MissingLabel.describe()),
            Misfit::Spread => fit.add(SpreadMisfit::Skew.describe()),
        }
    }
}

/// Each node's first failing filter for one pod, in the world's order
/// (`None` where it fits), as the cluster stood when it was taken
/// ([`Scheduler::diagnose`]).
#[derive(Debug)]
pub(crate) struct Diagnosis {
    misfits: Vec<Option<Misfit>>,
}

impl Diagnosis {
    /// Why the pod fits no node, as kube-scheduler's FailedScheduling
    /// event says it before its PostFilter runs: every Node's first
    /// failing filter, its reasons counted.
    pub(crate) fn fit_error(&self, world: &World) -> FitError {
        let mut fit = FitError::new(world.live_nodes());
        for (node, misfit) in self.misfits.iter().enumerate() {
            let n = world.node(node);
            if let Some(misfit) = misfit
                && n.phase != NodePhase::Gone
            {
                misfit.count_in(n, &mut fit);
            }
        }
        fit
    }

    /// The nodes preemption may make room on for a pod that fits nowhere:
    /// those whose only failing filter is one a victim's removal can
    /// resolve (resources, topology spread skew, inter-pod
    /// anti-affinity), in the world's order. Upstream leaves out a node
    /// whose status is `UnschedulableAndUnresolvable` (not ready,
    /// cordoned, tainted, node affinity, volume topology, a missing
    /// spread label, the pod's own required pod affinity unmet), and
    /// NodeResourcesFit says so of a node whose
    /// allocatable CPU or memory is below the pod's request
    /// (`fitsRequest`'s `Unresolvable`): no victim frees more than the
    /// node has.
    pub(crate) fn preemption_candidates(&self, world: &World, pod: PodId) -> Vec<NodeId> {
        let requests = world.pod(pod).template.requests;
        self.misfits
            .iter()
            .copied()
            .enumerate()
            .filter(|&(node, misfit)| match misfit {
                Some(Misfit::Resources(_)) => {
                    let allocatable = world.node(node).allocatable;
                    requests.cpu <= allocatable.cpu && requests.memory <= allocatable.memory
                }
                Some(Misfit::PodAntiAffinity | Misfit::ExistingAntiAffinity | Misfit::Spread) => {
                    true
                }
                _ => false,
            })
            .map(|(node, _)| node)
            .collect()
    }
}

/// No node fits a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NoFit;

/// The scheduler's state: the node classes, the queue of pods waiting to
/// be bound, where the last scan stopped, and the caches a scan reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scheduler {
    classes: Classes,
    /// Pods not bound yet, in the order `PrioritySort` pops them:
    /// higher priority first, then by creation time.
    pending: BTreeSet<(Reverse<i32>, Time, PodId)>,
    /// Where the next scan starts.
    cursor: usize,
    /// The compact per-node state (see [`HotNode`]).
    hot: Vec<HotNode>,
    /// Per node: the index after its run of consecutive same-class nodes.
    run_end: Vec<u32>,
    /// Per node: the pod requests its capacity score was computed for, and
    /// that score; valid until the node's requests change.
    capacity_scores: Vec<(Resources, i64)>,
    /// Buffers reused from pod to pod.
    feasible_buf: Vec<NodeId>,
    best_buf: Vec<NodeId>,
    class_score_buf: Vec<i64>,
    /// What topology spread learnt about the nodes in this pass.
    census: SpreadCensus,
    /// The pending pods nominated to each node by their preemption
    /// (`status.nominatedNodeName`), which the filters count there.
    nominated: BTreeMap<NodeId, Vec<PodId>>,
}

impl Scheduler {
    /// The scheduling class of a node shaped as `node` is (created when it
    /// is the first of its kind): nodes with the same pool, labels but the
    /// hostname, taints and capacity are interchangeable to every filter
    /// but the per-node ones.
    pub(crate) fn class_for(&mut self, node: &SimNode) -> usize {
        let allocatable = (node.allocatable.cpu, node.allocatable.memory);
        self.classes
            .class_for(&node.pool, &node.object, allocatable)
    }

    /// A pod of this priority, created then, waits to be bound.
    pub(crate) fn enqueue(&mut self, priority: i32, created_at: Time, pod: PodId) {
        let (priority, created_at) = queue_key(priority, created_at);
        self.pending.insert((priority, created_at, pod));
    }

    /// A pod no longer waits (bound, or gone).
    pub(crate) fn dequeue(&mut self, priority: i32, created_at: Time, pod: PodId) {
        let (priority, created_at) = queue_key(priority, created_at);
        self.pending.remove(&(priority, created_at, pod));
    }

    /// The pods waiting, in the order the scheduler takes them.
    pub(crate) fn pending(&self) -> Vec<PodId> {
        self.pending.iter().map(|&(_, _, p)| p).collect()
    }

    /// Whether a pod waits.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// A pod's nomination moved from `from` to `to` (either `None`).
    pub(crate) fn renominate(&mut self, pod: PodId, from: Option<NodeId>, to: Option<NodeId>) {
        if let Some(node) = from
            && let Some(pods) = self.nominated.get_mut(&node)
        {
            pods.retain(|&p| p != pod);
            if pods.is_empty() {
                self.nominated.remove(&node);
            }
        }
        if let Some(node) = to {
            self.nominated.entry(node).or_default().push(pod);
        }
    }

    /// The compact state of every node, rebuilt from the nodes: nodes may
    /// have changed in any way since the last pass; within a pass only
    /// bindings change them, and [`Scheduler::after_bind`] follows those.
    pub(crate) fn refresh(&mut self, world: &World) {
        // The buffers are reused: small drills settle thousands of times.
        let mut hot = std::mem::take(&mut self.hot);
        hot.clear();
        hot.extend((0..world.nodes().len()).map(|n| self.hot_node(world.node(n))));
        // Where each node's run of same-class neighbours ends.
        let mut run_end = std::mem::take(&mut self.run_end);
        run_end.clear();
        run_end.resize(hot.len(), 0);
        for n in (0..hot.len()).rev() {
            run_end[n] = if n + 1 < hot.len() && hot[n + 1].class == hot[n].class {
                run_end[n + 1]
            } else {
                (n + 1) as u32
            };
        }
        self.hot = hot;
        self.run_end = run_end;
        self.capacity_scores.clear();
        self.capacity_scores
            .resize(world.nodes().len(), (NOT_SCORED, 0));
        self.census.clear();
    }

    /// A node's compact state after a pod was bound to it: only its
    /// requests and pod count changed.
    pub(crate) fn after_bind(&mut self, world: &World, node: NodeId) {
        let n = world.node(node);
        let h = &mut self.hot[node];
        h.free = n.allocatable.minus(n.requested);
        h.room = n.max_pods.saturating_sub(n.pods.len() as u32);
        self.capacity_scores[node].0 = NOT_SCORED;
    }

    /// One node's compact state.
    fn hot_node(&self, n: &SimNode) -> HotNode {
        HotNode {
            free: n.allocatable.minus(n.requested),
            room: n.max_pods.saturating_sub(n.pods.len() as u32),
            class: n.class as u32,
            plain: n.is_ready()
                && n.server_up
                && !n.draining
                && !n.unschedulable()
                && n.taints() == self.classes.taints(n.class),
        }
    }

    /// The node kube-scheduler would pick for a pending pod, or [`NoFit`]
    /// when none fits ([`Scheduler::diagnose`] says why). Call
    /// [`Scheduler::refresh`] first.
    pub(crate) fn pick(
        &mut self,
        world: &World,
        volumes: &Volumes,
        rng: &mut SeededRng,
        pod: PodId,
    ) -> Result<NodeId, NoFit> {
        let s = Scan {
            world,
            volumes,
            hot: &self.hot,
            run_end: &self.run_end,
            nominated: &self.nominated,
        };
        let template = world.pod(pod).template.clone();
        fill_class_views(self.classes.objects(), &template);
        let views = template.class_views.borrow();
        let all = world.nodes().len();
        let wanted = feasible_nodes_to_find(all);
        let mut feasible = std::mem::take(&mut self.feasible_buf);
        feasible.clear();
        let start = self.cursor % all.max(1);
        let node_level = s.node_level(&template, pod);
        let interpod = s.interpod(&template, pod);
        let spread = self.census.filter_state(world, pod);
        let others = Others {
            interpod: interpod.as_ref(),
            spread: spread.as_ref(),
        };
        let mut examined = 0;
        let mut remaining = all;
        let mut node = start;
        // The maxima the score normalises by, over the feasible nodes.
        let mut max_preferred = 0;
        let mut max_intolerable = 0;
        while remaining > 0 {
            let h = s.hot[node];
            let view = views[h.class as usize].unwrap_or_default();
            // A node of a class the pod's affinity refuses fails whatever
            // else holds, and so does every node of its run (the nodes after
            // it of the same class): they are examined, infeasible, at once.
            // Counting why exactly only matters when nothing fits, and then
            // the pass below recounts in filter order.
            if !view.fits {
                let run = (s.run_end[node] as usize - node).min(remaining);
                examined += run;
                remaining -= run;
                node += run;
                if node == all {
                    node = 0;
                }
                continue;
            }
            examined += 1;
            remaining -= 1;
            if s.fits(&template, &views, pod, node, node_level, others) {
                feasible.push(node);
                max_preferred = max_preferred.max(view.preferred);
                max_intolerable = max_intolerable.max(view.intolerable);
                if feasible.len() >= wanted {
                    break;
                }
            }
            node += 1;
            if node == all {
                node = 0;
            }
        }
        self.cursor = (start + examined) % all.max(1);
        if feasible.is_empty() {
            self.feasible_buf = feasible;
            return Err(NoFit);
        }
        let spread_scores = self.census.scores(world, pod, &feasible);
        let best = self.best(
            world,
            rng,
            &template,
            &views,
            (&feasible, &spread_scores),
            (max_preferred, max_intolerable),
        );
        self.feasible_buf = feasible;
        Ok(best)
    }

    /// Each node's first failing filter for a pod that fits nowhere,
    /// through the full filters: what its FailedScheduling message and
    /// preemption's dry run both start from. A pass over every node, so
    /// taken once per failed pick that needs it, not at each retry of a
    /// pod that still waits. Call [`Scheduler::refresh`] first.
    pub(crate) fn diagnose(&self, world: &World, volumes: &Volumes, pod: PodId) -> Diagnosis {
        Diagnosis {
            misfits: self.misfits(world, volumes, pod),
        }
    }

    /// Why preemption found no node for a pod that fits nowhere, as
    /// `Evaluator.Preempt` words its dry run: a node no victim can help
    /// is "not helpful", one with no pod `lower` than the pod has "no
    /// victims", and one the pod does not fit even with all of those gone
    /// gives that filter's reasons. Call [`Scheduler::refresh`] first.
    pub(crate) fn preemption_fit_error(
        &self,
        world: &World,
        volumes: &Volumes,
        pod: PodId,
        diagnosis: &Diagnosis,
        lower: impl Fn(PodId) -> bool,
    ) -> FitError {
        let mut fit = FitError::new(world.live_nodes());
        let potential = diagnosis.preemption_candidates(world, pod);
        for (node, n) in world.nodes().iter().enumerate() {
            if n.phase == NodePhase::Gone {
                continue;
            }
            if potential.binary_search(&node).is_err() {
                fit.add(PREEMPTION_NOT_HELPFUL);
                continue;
            }
            let victims: BTreeSet<PodId> = n.pods.iter().copied().filter(|&p| lower(p)).collect();
            if victims.is_empty() {
                fit.add(NO_PREEMPTION_VICTIMS);
            } else if let Some(misfit) = self.misfit_without(world, volumes, pod, node, &victims) {
                misfit.count_in(n, &mut fit);
            }
        }
        fit
    }

    /// The highest-scoring feasible node; ties broken by the seeded generator.
    fn best(
        &mut self,
        world: &World,
        rng: &mut SeededRng,
        template: &Template,
        classes: &[Option<ClassView>],
        (feasible, spread_scores): (&[NodeId], &[i64]),
        (max_preferred, max_intolerable): (i64, usize),
    ) -> NodeId {
        // The node-affinity and taint parts depend only on the class once
        // the maxima are known.
        let mut class_part = std::mem::take(&mut self.class_score_buf);
        class_part.clear();
        class_part.extend(classes.iter().map(|c| {
            let c = c.unwrap_or_default();
            let affinity = if max_preferred > 0 {
                c.preferred * 100 / max_preferred
            } else {
                0
            };
            let taint = if max_intolerable > 0 {
                100 - (c.intolerable as i64) * 100 / (max_intolerable as i64)
            } else {
                100
            };
            2 * affinity + 3 * taint
        }));
        let requests = template.requests;
        let mut best_score = i64::MIN;
        let mut best = std::mem::take(&mut self.best_buf);
        best.clear();
        for (i, &node) in feasible.iter().enumerate() {
            // PodTopologySpread's score, at its default weight (2).
            let spread = spread_scores.get(i).map_or(0, |s| 2 * s);
            let (scored_for, cached) = self.capacity_scores[node];
            let capacity = if scored_for == requests {
                cached
            } else {
                let n = world.node(node);
                let score = capacity_score(n.allocatable, n.requested.plus(requests));
                self.capacity_scores[node] = (requests, score);
                score
            };
            let score = capacity + class_part[self.hot[node].class as usize] + spread;
            if score > best_score {
                best_score = score;
                best.clear();
                best.push(node);
            } else if score == best_score {
                best.push(node);
            }
        }
        let picked = best[rng.index(best.len())];
        self.best_buf = best;
        self.class_score_buf = class_part;
        picked
    }

    /// Each node's first failing filter for the pod, through the full
    /// filters (`None` where it fits), in the world's order.
    fn misfits(&self, world: &World, volumes: &Volumes, pod: PodId) -> Vec<Option<Misfit>> {
        let s = Scan {
            world,
            volumes,
            hot: &self.hot,
            run_end: &self.run_end,
            nominated: &self.nominated,
        };
        let template = world.pod(pod).template.clone();
        fill_class_views(self.classes.objects(), &template);
        let views = template.class_views.borrow();
        let interpod = s.interpod(&template, pod);
        let spread = self.census.filter_state(world, pod);
        let others = Others {
            interpod: interpod.as_ref(),
            spread: spread.as_ref(),
        };
        (0..world.nodes().len())
            .map(|node| s.misfit(&template, &views, pod, node, others))
            .collect()
    }

    /// Whether the pod passes every filter on `node` once the `removed`
    /// pods (on that node) are gone: preemption's dry run, and with none
    /// removed, the check of a nominated node. Call
    /// [`Scheduler::refresh`] first.
    pub(crate) fn fits_without(
        &self,
        world: &World,
        volumes: &Volumes,
        pod: PodId,
        node: NodeId,
        removed: &BTreeSet<PodId>,
    ) -> bool {
        self.misfit_without(world, volumes, pod, node, removed)
            .is_none()
    }

    /// The first filter the pod fails on `node` once the `removed` pods
    /// (on that node) are gone.
    fn misfit_without(
        &self,
        world: &World,
        volumes: &Volumes,
        pod: PodId,
        node: NodeId,
        removed: &BTreeSet<PodId>,
    ) -> Option<Misfit> {
        let s = Scan {
            world,
            volumes,
            hot: &self.hot,
            run_end: &self.run_end,
            nominated: &self.nominated,
        };
        let p = world.pod(pod);
        let template = p.template.clone();
        fill_class_views(self.classes.objects(), &template);
        let views = template.class_views.borrow();
        let interpod = s.interpod_pod_by_pod(&template, pod, removed);
        let spread = spread_pod(&p.namespace, &template)
            .is_constrained()
            .then(|| pod_by_pod(world, pod, removed));
        let others = Others {
            interpod: interpod.as_ref(),
            spread: spread.as_ref(),
        };
        let mut freed = NodeChange::default();
        for &r in removed {
            let victim = world.pod(r);
            if victim.node == Some(node) && victim.holds_resources {
                freed.freed_requests = freed.freed_requests.plus(victim.template.requests);
                freed.freed_pods += 1;
            }
        }
        s.misfit_freed(&template, &views, pod, node, others, freed)
    }

    /// Whether, for every pod template in `templates` (with one of its
    /// pods) and every node, the compact path decides what the full
    /// filters decide; returns (compared, fitting, vouched for by the
    /// compact flag), or the first disagreement.
    #[cfg(test)]
    pub(crate) fn compact_path_agrees(
        &mut self,
        world: &World,
        volumes: &Volumes,
        templates: &[(std::rc::Rc<Template>, PodId)],
    ) -> Result<(usize, usize, usize), String> {
        self.refresh(world);
        let s = Scan {
            world,
            volumes,
            hot: &self.hot,
            run_end: &self.run_end,
            nominated: &self.nominated,
        };
        let (mut compared, mut fitting, mut vouched) = (0, 0, 0);
        for (template, pod) in templates {
            fill_class_views(self.classes.objects(), template);
            let views = template.class_views.borrow();
            let node_level = s.node_level(template, *pod);
            let interpod = s.interpod(template, *pod);
            let spread = self.census.filter_state(world, *pod);
            let others = Others {
                interpod: interpod.as_ref(),
                spread: spread.as_ref(),
            };
            for node in 0..world.nodes().len() {
                let full = s.misfit(template, &views, *pod, node, others).is_none();
                let fast = s.fits(template, &views, *pod, node, node_level, others);
                if fast != full {
                    return Err(format!(
                        "{} on {}",
                        world.pod(*pod).key(),
                        world.node(node).name
                    ));
                }
                compared += 1;
                fitting += usize::from(full);
                vouched += usize::from(s.hot[node].plain);
            }
        }
        Ok((compared, fitting, vouched))
    }
}

/// What one template makes of each node class: whether the class's labels
/// admit it and its taints are tolerated, and the class's
/// preferred-affinity and PreferNoSchedule standing. Judged once per
/// (template, class) and kept on the template, since a class's nodes
/// differ only by name and a class never changes (a relabelled node
/// moves to another class).
fn fill_class_views(class_objects: &[Node], template: &Template) {
    let mut cache = template.class_views.borrow_mut();
    if cache.len() >= class_objects.len() && cache.iter().all(Option::is_some) {
        return;
    }
    if cache.len() < class_objects.len() {
        cache.resize(class_objects.len(), None);
    }
    for (class, object) in class_objects.iter().enumerate() {
        if cache[class].is_some() {
            continue;
        }
        let taints = object
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[]);
        cache[class] = Some(ClassView {
            fits: template.per_node || template.required.matches(object),
            tolerated: scheduling_blocker(taints, &template.tolerations).is_none(),
            preferred: template.preferences.score(object),
            intolerable: intolerable_prefer_no_schedule(taints, &template.tolerations),
        });
    }
}

/// What the filters read during one pass: the world and the compact state.
struct Scan<'a> {
    world: &'a World,
    volumes: &'a Volumes,
    hot: &'a [HotNode],
    run_end: &'a [u32],
    nominated: &'a BTreeMap<NodeId, Vec<PodId>>,
}

impl Scan<'_> {
    /// Whether a pod needs more than the compact state at the node level:
    /// required rules that name single nodes, or bound volumes confined to
    /// a domain.
    fn node_level(&self, template: &Template, pod: PodId) -> bool {
        template.per_node
            || self
                .world
                .pod(pod)
                .claims
                .iter()
                .any(|&c| self.volumes.claim(c).pv_topology.is_some())
    }

    /// What the inter-pod affinity filter counted for the pod over the
    /// pods placed now, or `None` when it cannot refuse any node (the pod
    /// has no terms and no running pod repels it): then the scan never
    /// looks at other pods. Only the pods holding resources count, read as
    /// the world's groups of alike pods with their counts per domain
    /// (`pod_groups`); a pod without terms of its own is checked against
    /// the groups that repel alone.
    fn interpod(&self, template: &Template, pod: PodId) -> Option<InterPodState> {
        let pods = self.world.pods();
        if pods[pod].holds_resources {
            // Counted in its own group: only the pod-by-pod count can leave
            // it out (never met by a pending pod; kept for exactness).
            return self.interpod_pod_by_pod(template, pod, &BTreeSet::new());
        }
        let incoming = terms(self.world, &pods[pod].namespace, template);
        let mut state = InterPodState::default();
        let groups = self.world.pod_groups();
        let nodes = self.world.nodes();
        let mut count = |group: &PodGroup| {
            if group.is_empty() {
                return;
            }
            let existing = terms(self.world, &group.namespace, &group.template);
            state.add_group(&incoming, &existing, |key| {
                groups.domains(group, key, nodes)
            });
        };
        if template.affinity.is_empty() && template.anti_affinity.is_empty() {
            groups.repelling().for_each(&mut count);
        } else {
            groups.all().iter().for_each(&mut count);
        }
        (!state.is_trivial(&incoming)).then_some(state)
    }

    /// [`Scan::interpod`], counting every placed pod but `pod` and the
    /// `removed` ones one by one.
    fn interpod_pod_by_pod(
        &self,
        template: &Template,
        pod: PodId,
        removed: &BTreeSet<PodId>,
    ) -> Option<InterPodState> {
        let pods = self.world.pods();
        let incoming = terms(self.world, &pods[pod].namespace, template);
        // A pod with no (anti-)affinity of its own is kept off a node only
        // by the running pods that repel it, as in [`Scan::interpod`].
        let only_repelling = template.affinity.is_empty() && template.anti_affinity.is_empty();
        if only_repelling && self.world.pod_groups().repelling().next().is_none() {
            // Nothing repels it: preemption's dry runs on a cluster without
            // anti-affinity cost no walk over every pod.
            return None;
        }
        let mut state = InterPodState::default();
        for n in self.world.nodes() {
            for &other in &n.pods {
                let p = &pods[other];
                if other == pod
                    || removed.contains(&other)
                    || p.phase == PodPhase::Gone
                    || (only_repelling && p.template.anti_affinity.is_empty())
                {
                    continue;
                }
                let existing = terms(self.world, &p.namespace, &p.template);
                state.add(&incoming, &existing, n.labels());
            }
        }
        (!state.is_trivial(&incoming)).then_some(state)
    }

    /// Whether the pod fits the node: from the compact state when the
    /// node's flag and the class's verdicts vouch for everything but
    /// capacity (and no pod is nominated there), through the full filters
    /// otherwise. Decides exactly what `misfit(…).is_none()` decides (a
    /// test holds it to that).
    #[inline]
    fn fits(
        &self,
        template: &Template,
        views: &[Option<ClassView>],
        pod: PodId,
        node: NodeId,
        node_level: bool,
        others: Others<'_>,
    ) -> bool {
        let h = self.hot[node];
        let view = views[h.class as usize].unwrap_or_default();
        let nominated = !self.nominated.is_empty() && self.nominated.contains_key(&node);
        if h.plain && view.fits && view.tolerated && !node_level && !nominated {
            let requests = template.requests;
            requests.cpu <= h.free.cpu
                && requests.memory <= h.free.memory
                && h.room > 0
                && (others.is_empty()
                    || self
                        .other_pods_misfit(others, template, pod, node, &[])
                        .is_none())
        } else {
            self.misfit(template, views, pod, node, others).is_none()
        }
    }

    fn misfit(
        &self,
        template: &Template,
        classes: &[Option<ClassView>],
        pod: PodId,
        node: NodeId,
        others: Others<'_>,
    ) -> Option<Misfit> {
        self.misfit_freed(template, classes, pod, node, others, NodeChange::default())
    }

    /// The pods nominated to `node` that the filters count for `pod` as if
    /// they ran there (`addGENominatedPods`): those of equal or higher
    /// priority, but the pod itself.
    fn nominated_for(&self, pod: PodId, node: NodeId) -> Vec<PodId> {
        let Some(nominated) = self.nominated.get(&node) else {
            return Vec::new();
        };
        let priority = self.world.pod(pod).template.priority.value;
        nominated
            .iter()
            .copied()
            .filter(|&p| p != pod && self.world.pod(p).template.priority.value >= priority)
            .collect()
    }

    /// [`Scan::misfit`], with `freed` taken off the node's requests and
    /// pods (preemption's dry run without its victims). As upstream's
    /// `RunFilterPluginsWithNominatedPods`, the filters run with the pods
    /// nominated to the node added, and then, if any were and the pod
    /// passed, once more without them: a nominated pod may never come,
    /// so the pod must fit either way.
    fn misfit_freed(
        &self,
        template: &Template,
        classes: &[Option<ClassView>],
        pod: PodId,
        node: NodeId,
        others: Others<'_>,
        freed: NodeChange,
    ) -> Option<Misfit> {
        let nominated = self.nominated_for(pod, node);
        if !nominated.is_empty() {
            let with = NodeChange {
                added: &nominated,
                ..freed
            };
            if let Some(misfit) = self.misfit_changed(template, classes, pod, node, others, with) {
                return Some(misfit);
            }
        }
        self.misfit_changed(template, classes, pod, node, others, freed)
    }

    /// The first filter the pod fails on the node as `change` leaves it.
    fn misfit_changed(
        &self,
        template: &Template,
        classes: &[Option<ClassView>],
        pod: PodId,
        node: NodeId,
        others: Others<'_>,
        change: NodeChange,
    ) -> Option<Misfit> {
        let n = self.world.node(node);
        if n.unschedulable() && cordon_blocks(true, &template.tolerations) {
            return Some(Misfit::Unschedulable);
        }
        // Taints can differ within a class (a node tainted unreachable or
        // for deletion), so they are read from the node itself.
        let taints = n.taints();
        if let Some(blocker) = scheduling_blocker(taints, &template.tolerations) {
            let index = taints
                .iter()
                .position(|t| std::ptr::eq(t, blocker))
                .unwrap_or_default();
            return Some(Misfit::Taint(index));
        }
        if !n.is_ready() || !n.server_up || n.draining {
            return Some(Misfit::NotReady);
        }
        let fits = classes[n.class].is_some_and(|c| c.fits);
        if !fits || (template.per_node && !template.required.matches(&n.object)) {
            return Some(Misfit::Affinity);
        }
        let mut requested = n.requested.minus(change.freed_requests);
        for &p in change.added {
            requested = requested.plus(self.world.pod(p).template.requests);
        }
        let pods =
            (n.pods.len() as u32).saturating_sub(change.freed_pods) + change.added.len() as u32;
        let total = requested.plus(template.requests);
        let short = Shortfall {
            pods: pods >= n.max_pods,
            cpu: total.cpu > n.allocatable.cpu,
            memory: total.memory > n.allocatable.memory,
        };
        if short.any() {
            return Some(Misfit::Resources(short));
        }
        if !self.volume_topology_ok(pod, n) {
            return Some(Misfit::VolumeAffinity);
        }
        self.other_pods_misfit(others, template, pod, node, change.added)
    }

    /// VolumeBinding for bound volumes: the node is in the topology domain
    /// each of the pod's volumes was provisioned in (its PV node affinity).
    fn volume_topology_ok(&self, pod: PodId, n: &SimNode) -> bool {
        self.world.pod(pod).claims.iter().all(|&c| {
            let claim = self.volumes.claim(c);
            match (&claim.topology_key, &claim.pv_topology) {
                (Some(key), Some(value)) => n.labels().get(key) == Some(value),
                _ => true,
            }
        })
    }

    /// What the filters that read other pods make of the node, with the
    /// `added` pods counted there: topology spread, then inter-pod
    /// affinity (upstream's filter order).
    fn other_pods_misfit(
        &self,
        others: Others<'_>,
        template: &Template,
        pod: PodId,
        node: NodeId,
        added: &[PodId],
    ) -> Option<Misfit> {
        let n = self.world.node(node);
        let namespace = &self.world.pod(pod).namespace;
        let incoming_spread = spread_pod(namespace, template);
        // Pods added to the node enter its domains' counts, as upstream's
        // `PreFilterExtensions.AddPod` updates the filters' state.
        let mut spread_added = None;
        if let Some(state) = others.spread
            && !added.is_empty()
        {
            let mut state = state.clone();
            state.add_node_at(&incoming_spread, &n.object, Some(node), |i| {
                let c = &template.spread[i];
                added
                    .iter()
                    .filter(|&&p| {
                        let p = self.world.pod(p);
                        c.counts(namespace, &p.namespace, &p.template.labels)
                    })
                    .count() as u32
            });
            spread_added = Some(state);
        }
        if let Some(state) = spread_added.as_ref().or(others.spread) {
            match state.filter_at(&incoming_spread, &n.object, Some(node)) {
                Ok(()) => {}
                Err(SpreadMisfit::MissingLabel) => return Some(Misfit::SpreadLabel),
                Err(SpreadMisfit::Skew) => return Some(Misfit::Spread),
            }
        }
        let incoming = terms(self.world, namespace, template);
        let mut interpod_added = None;
        if !added.is_empty() {
            let mut state = others.interpod.cloned().unwrap_or_default();
            for &p in added {
                let p = self.world.pod(p);
                state.add(
                    &incoming,
                    &terms(self.world, &p.namespace, &p.template),
                    n.labels(),
                );
            }
            interpod_added = (!state.is_trivial(&incoming)).then_some(state);
        }
        let state = if added.is_empty() {
            others.interpod?
        } else {
            interpod_added.as_ref()?
        };
        // The groups' counts were numbered over the world's nodes.
        match state.filter_at(&incoming, n.labels(), Some(node)) {
            Ok(()) => None,
            Err(InterPodMisfit::ExistingAntiAffinity) => Some(Misfit::ExistingAntiAffinity),
            Err(InterPodMisfit::Affinity) => Some(Misfit::PodAffinity),
            Err(InterPodMisfit::AntiAffinity) => Some(Misfit::PodAntiAffinity),
        }
    }
}

/// What the filters that read other pods counted for one pod (`None`:
/// that filter cannot refuse any node for it).
#[derive(Debug, Clone, Copy)]
struct Others<'a> {
    interpod: Option<&'a InterPodState>,
    spread: Option<&'a SpreadState>,
}

impl Others<'_> {
    fn is_empty(&self) -> bool {
        self.interpod.is_none() && self.spread.is_none()
    }
}

/// How the filters see a node changed: preemption's dry run takes its
/// victims' requests and number off, and the pods nominated there are
/// added.
#[derive(Debug, Clone, Copy, Default)]
struct NodeChange<'a> {
    freed_requests: Resources,
    freed_pods: u32,
    added: &'a [PodId],
}

/// A pod of `namespace` made from `template`, as the inter-pod filter
/// reads it.
fn terms<'a>(world: &'a World, namespace: &'a str, template: &'a Template) -> PodTerms<'a> {
    PodTerms {
        namespace,
        namespace_labels: world.namespace_labels(namespace),
        labels: &template.labels,
        affinity: &template.affinity,
        anti_affinity: &template.anti_affinity,
    }
}

/// A capacity score that was never computed (no pod requests -1 CPU).
pub(super) const NOT_SCORED: Resources = Resources {
    cpu: -1,
    memory: -1,
};

/// What the scheduler's scan reads of a node: kept compact so that the
/// scan over thousands of nodes stays in cache. Rebuilt at the start of
/// every scheduling pass and refreshed for each node a pod is bound to.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct HotNode {
    /// Allocatable minus requested.
    free: Resources,
    /// Pods it can still take.
    room: u32,
    /// Its scheduling class.
    class: u32,
    /// Ready, running, not draining, not cordoned, and tainted exactly as
    /// its class: the class's verdict on taints holds for it.
    plain: bool,
}

/// NodeResourcesFit least-allocated plus BalancedAllocation, for a node
/// with `after` requested.
fn capacity_score(allocatable: Resources, after: Resources) -> i64 {
    let least =
        (free_share(allocatable.cpu, after.cpu) + free_share(allocatable.memory, after.memory)) / 2;
    least + balanced_allocation(allocatable, after)
}

/// LeastAllocated for one resource: the share left free, 0–100.
fn free_share(allocatable: i64, requested: i64) -> i64 {
    if allocatable <= 0 || requested > allocatable {
        return 0;
    }
    (allocatable - requested) * 100 / allocatable
}

/// BalancedAllocation: 100 when CPU and memory are used in equal shares.
fn balanced_allocation(
    allocatable: super::world::Resources,
    requested: super::world::Resources,
) -> i64 {
    if allocatable.cpu <= 0 || allocatable.memory <= 0 {
        return 0;
    }
    let cpu = requested.cpu as f64 / allocatable.cpu as f64;
    let memory = requested.memory as f64 / allocatable.memory as f64;
    // Two resources: the standard deviation is half the difference.
    let std = ((cpu - memory).abs() / 2.0).min(1.0);
    ((1.0 - std) * 100.0) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{node, pod, template, template_with};
    use crate::world::{NodePhase, Owner};
    use drillbench_model::k8s::taints::{TAINT_NODE_UNREACHABLE, TAINT_NODE_UNSCHEDULABLE};

    #[test]
    fn the_sample_size_follows_kube_scheduler() {
        assert_eq!(feasible_nodes_to_find(9), 9);
        assert_eq!(feasible_nodes_to_find(99), 99);
        assert_eq!(feasible_nodes_to_find(100), 100);
        // 5000 nodes: 50 - 40 = 10 % = 500.
        assert_eq!(feasible_nodes_to_find(5000), 500);
        // 10000 nodes: 50 - 80 < 5, so 5 % = 500.
        assert_eq!(feasible_nodes_to_find(10_000), 500);
        // 1000 nodes: 42 % = 420.
        assert_eq!(feasible_nodes_to_find(1000), 420);
    }

    fn cluster(nodes: usize) -> (World, Scheduler) {
        let mut world = World::default();
        let mut scheduler = Scheduler::default();
        for i in 0..nodes {
            let mut n = node(&format!("n-{i}"));
            n.phase = NodePhase::Ready;
            n.class = scheduler.class_for(&n);
            world.add_node(n);
        }
        (world, scheduler)
    }

    fn pick(
        world: &World,
        scheduler: &mut Scheduler,
        pod: PodId,
        seed: u64,
    ) -> Result<NodeId, String> {
        scheduler.refresh(world);
        let volumes = Volumes::new(Vec::new());
        scheduler
            .pick(world, &volumes, &mut SeededRng::new(seed), pod)
            .map_err(|NoFit| {
                scheduler
                    .diagnose(world, &volumes, pod)
                    .fit_error(world)
                    .to_string()
            })
    }

    #[test]
    fn pending_pods_wait_in_creation_order() {
        let mut s = Scheduler::default();
        assert!(!s.has_pending());
        s.enqueue(0, 20, 1);
        s.enqueue(0, 10, 2);
        s.enqueue(0, 20, 0);
        assert_eq!(s.pending(), [2, 0, 1]);
        s.dequeue(0, 10, 2);
        s.dequeue(0, 10, 1);
        assert_eq!(s.pending(), [0, 1], "a pod leaves by its own creation time");
    }

    /// `queuesort/priority_sort.go`: the higher-priority pod is taken
    /// first even when it was created later; equal priorities keep
    /// creation order (the control).
    #[test]
    fn pending_pods_wait_in_priority_order() {
        let mut s = Scheduler::default();
        s.enqueue(0, 10, 0);
        s.enqueue(1000, 30, 1);
        s.enqueue(0, 20, 2);
        assert_eq!(s.pending(), [1, 0, 2]);
        s.dequeue(1000, 30, 1);
        s.enqueue(0, 30, 1);
        assert_eq!(s.pending(), [0, 2, 1], "control: all equal, oldest first");
    }

    #[test]
    fn the_least_allocated_node_wins_and_ties_go_by_seed() {
        let (mut world, mut scheduler) = cluster(3);
        let t = template("web");
        for (i, on) in [0, 0, 1].into_iter().enumerate() {
            let p = world.add_pod(pod(&format!("old-{i}"), Owner::None, t.clone(), Vec::new()));
            world.bind(p, on);
        }
        let p = world.add_pod(pod("new", Owner::None, t.clone(), Vec::new()));
        assert_eq!(pick(&world, &mut scheduler, p, 1), Ok(2));
        let tie = |seed| {
            let (mut world, mut scheduler) = cluster(3);
            let busy = world.add_pod(pod("busy", Owner::None, t.clone(), Vec::new()));
            world.bind(busy, 0);
            let p = world.add_pod(pod("new", Owner::None, t.clone(), Vec::new()));
            pick(&world, &mut scheduler, p, seed).expect("fits")
        };
        let picks: BTreeSet<NodeId> = (0..16).map(tie).collect();
        assert_eq!(
            picks,
            BTreeSet::from([1, 2]),
            "either empty node, never the busy one"
        );
        assert_eq!(tie(5), tie(5));
    }

    /// `FitError.Error` (framework/types.go) over each node's first
    /// failing filter in upstream's plugin order: NodeUnschedulable,
    /// TaintToleration (a NotReady node carries the node controller's
    /// unreachable taint, a Booting one its not-ready taint), then
    /// NodeAffinity.
    #[test]
    fn a_pod_that_fits_nowhere_says_why_per_node() {
        let (mut world, mut scheduler) = cluster(5);
        world.node_mut(1).phase = NodePhase::NotReady;
        assert!(world.add_taint(1, TAINT_NODE_UNREACHABLE, "NoSchedule"));
        world.node_mut(2).phase = NodePhase::Booting;
        assert!(world.cordon(3));
        let t = template_with("fast", serde_json::json!({"nodeSelector": {"disk": "ssd"}}));
        let p = world.add_pod(pod("fast", Owner::None, t, Vec::new()));
        assert_eq!(
            pick(&world, &mut scheduler, p, 1),
            Err("0/5 nodes are available: 1 node(s) had untolerated taint \
                 {node.kubernetes.io/not-ready: }, 1 node(s) had untolerated taint \
                 {node.kubernetes.io/unreachable: }, 1 node(s) were unschedulable, \
                 2 node(s) didn't match Pod's node affinity/selector."
                .to_owned())
        );
        // Control: a pod with no selector that tolerates the cordon and the
        // unreachable taint fits the Ready nodes; the Booting node still
        // refuses it, and so does the NotReady one, past its taint.
        let t = template_with(
            "tolerant",
            serde_json::json!({"tolerations": [
                {"key": TAINT_NODE_UNREACHABLE, "operator": "Exists"},
                {"key": TAINT_NODE_UNSCHEDULABLE, "operator": "Exists"},
            ]}),
        );
        let tolerant = world.add_pod(pod("tolerant", Owner::None, t, Vec::new()));
        scheduler.refresh(&world);
        let fit = scheduler
            .diagnose(&world, &Volumes::new(Vec::new()), tolerant)
            .fit_error(&world);
        assert_eq!(
            fit.to_string(),
            "0/5 nodes are available: 1 node(s) had untolerated taint \
             {node.kubernetes.io/not-ready: }, 1 node(s) were not ready."
        );
    }

    #[test]
    fn a_relabelled_node_is_judged_in_its_new_class() {
        let (mut world, mut scheduler) = cluster(3);
        let t = template_with("fast", serde_json::json!({"nodeSelector": {"disk": "ssd"}}));
        let p = world.add_pod(pod("fast", Owner::None, t.clone(), Vec::new()));
        assert!(pick(&world, &mut scheduler, p, 1).is_err());
        assert_eq!(
            t.class_views.borrow().len(),
            1,
            "one class judged: it does not fit"
        );
        let mut labels = world.node(1).labels().clone();
        labels.insert("disk".to_owned(), "ssd".to_owned());
        assert!(world.set_node_labels(1, labels));
        let class = scheduler.class_for(world.node(1));
        world.node_mut(1).class = class;
        assert_eq!(class, 1, "a new class");
        assert_eq!(pick(&world, &mut scheduler, p, 1), Ok(1));
        assert_eq!(
            t.class_views.borrow().len(),
            2,
            "the new class was judged too"
        );
    }

    /// `interpodaffinity/filtering_test.go`, "verify that PodAntiAffinity
    /// from existing pod is respected when pod has no AntiAffinity
    /// constraints": a running pod's required anti-affinity keeps the pod
    /// it selects off its node, however many seeds pick; the control (the
    /// term selects another app) lets the pod go to either node.
    #[test]
    fn a_running_pods_anti_affinity_keeps_the_pod_it_repels_off_its_node() {
        let picks = |repelled: &str| -> BTreeSet<NodeId> {
            (0..16)
                .map(|seed| {
                    let (mut world, mut scheduler) = cluster(2);
                    let db = template_with(
                        "db",
                        serde_json::json!({"affinity": {"podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [{
                                "labelSelector": {"matchLabels": {"app": repelled}},
                                "topologyKey": "kubernetes.io/hostname"}]}}}),
                    );
                    let d = world.add_pod(pod("db", Owner::None, db, Vec::new()));
                    world.bind(d, 0);
                    // As busy as node 0, so the scores tie.
                    let busy =
                        world.add_pod(pod("busy", Owner::None, template("busy"), Vec::new()));
                    world.bind(busy, 1);
                    let p = world.add_pod(pod("web", Owner::None, template("web"), Vec::new()));
                    pick(&world, &mut scheduler, p, seed).expect("fits")
                })
                .collect()
        };
        assert_eq!(picks("web"), BTreeSet::from([1]), "never next to db");
        assert_eq!(picks("cache"), BTreeSet::from([0, 1]), "control");
    }

    /// With the only free node in the repelling pod's domain, the pod is
    /// unschedulable and says why in upstream's words.
    #[test]
    fn the_repelled_pod_that_fits_nowhere_says_so() {
        let (mut world, mut scheduler) = cluster(1);
        let db = template_with(
            "db",
            serde_json::json!({"affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname"}]}}}),
        );
        let d = world.add_pod(pod("db", Owner::None, db, Vec::new()));
        world.bind(d, 0);
        let p = world.add_pod(pod("web", Owner::None, template("web"), Vec::new()));
        assert_eq!(
            pick(&world, &mut scheduler, p, 1),
            Err("0/1 nodes are available: 1 node(s) didn't satisfy existing pods anti-affinity rules.".to_owned())
        );
        // Control: once db no longer holds the node, web goes there.
        world.release(d);
        assert_eq!(pick(&world, &mut scheduler, p, 1), Ok(0));
    }

    /// A bare pod `app` of a PriorityClass of `priority`, requesting
    /// `memory`, with `spec` merged into its pod spec, added to the world.
    fn add_sized(
        world: &mut World,
        app: &str,
        priority: i32,
        memory: &str,
        mut spec: serde_json::Value,
    ) -> PodId {
        spec["containers"] = serde_json::json!([{"name": "c", "image": "i",
            "resources": {"requests": {"cpu": "100m", "memory": memory}}}]);
        let t = crate::fixtures::template_of_priority(app, priority, spec);
        world.add_pod(pod(app, Owner::None, t, Vec::new()))
    }

    /// A pending pod nominated to `node` by its preemption.
    fn nominate(world: &mut World, scheduler: &mut Scheduler, pod: PodId, node: NodeId) {
        world.pod_mut(pod).nominated = Some(node);
        scheduler.renominate(pod, None, Some(node));
    }

    /// NodeResourcesFit marks a node whose allocatable is below the pod's
    /// request `UnschedulableAndUnresolvable` (`fitsRequest`'s
    /// `Unresolvable`), and preemption looks only where it might help
    /// (`nodesWherePreemptionMightHelp`): no victim frees more than the
    /// node has. Control: a request the node could hold once its
    /// lower-priority pod left keeps it a candidate.
    #[test]
    fn preemption_skips_a_node_too_small_for_the_pod_even_empty() {
        let candidates = |memory: &str| {
            let (mut world, mut scheduler) = cluster(1);
            let filler = add_sized(&mut world, "filler", 0, "3Gi", serde_json::json!({}));
            world.bind(filler, 0);
            let vip = add_sized(&mut world, "vip", 1000, memory, serde_json::json!({}));
            scheduler.refresh(&world);
            scheduler
                .diagnose(&world, &Volumes::new(Vec::new()), vip)
                .preemption_candidates(&world, vip)
        };
        assert_eq!(candidates("5Gi"), Vec::<NodeId>::new(), "4Gi node");
        assert_eq!(candidates("2Gi"), [0], "control: fits once emptied");
    }

    /// `runtime/framework.go`, `RunFilterPluginsWithNominatedPods` and
    /// `addGENominatedPods` (kubernetes PR #55933, "take nominated pods
    /// into account during scheduling to avoid starvation of higher
    /// priority pods"): a pending pod nominated to a node is counted there
    /// for every pod of equal or lower priority, which must fit beside it.
    /// Controls: a pod of higher priority does not count it (the API's
    /// `nominatedNodeName`: the scheduler "may also decide to give the
    /// resources on this node to a higher priority pod"), and once the
    /// nomination is gone the room is free again.
    #[test]
    fn a_nominated_pod_holds_its_room_against_pods_of_its_priority_or_lower() {
        let verdict = |incoming: i32, nominated: bool| {
            let (mut world, mut scheduler) = cluster(1);
            let vip = add_sized(&mut world, "vip", 100, "3Gi", serde_json::json!({}));
            if nominated {
                nominate(&mut world, &mut scheduler, vip, 0);
            }
            let web = add_sized(&mut world, "web", incoming, "2Gi", serde_json::json!({}));
            pick(&world, &mut scheduler, web, 1)
        };
        let refused = Err("0/1 nodes are available: 1 Insufficient memory.".to_owned());
        assert_eq!(verdict(0, true), refused, "lower priority");
        assert_eq!(verdict(100, true), refused, "equal priority");
        assert_eq!(verdict(1000, true), Ok(0), "control: higher priority");
        assert_eq!(verdict(0, false), Ok(0), "control: no nomination");
    }

    /// `RunFilterPluginsWithNominatedPods` runs the filters twice, with
    /// the nominated pods and then without them, "since the nominated pods
    /// may end up getting scheduled to a different node": a pod whose
    /// required affinity only a nominated pod would satisfy does not fit
    /// (control: the same pod bound there satisfies it). And what a
    /// nominated pod's own anti-affinity repels is kept off its node, as
    /// `PreFilterExtensions.AddPod` counts it (control: a pod it does not
    /// select).
    #[test]
    fn a_nominated_pod_counts_for_inter_pod_affinity_only_against_the_pod() {
        let affine = serde_json::json!({"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "vip"}},
                "topologyKey": "kubernetes.io/hostname"}]}}});
        let with_affinity = |bound: bool| {
            let (mut world, mut scheduler) = cluster(1);
            let vip = add_sized(&mut world, "vip", 100, "1Gi", serde_json::json!({}));
            if bound {
                world.bind(vip, 0);
            } else {
                nominate(&mut world, &mut scheduler, vip, 0);
            }
            let web = add_sized(&mut world, "web", 0, "1Gi", affine.clone());
            pick(&world, &mut scheduler, web, 1)
        };
        assert_eq!(
            with_affinity(false),
            Err("0/1 nodes are available: 1 node(s) didn't match pod affinity rules.".to_owned())
        );
        assert_eq!(with_affinity(true), Ok(0), "control: bound there");

        let with_anti_affinity = |app: &str| {
            let (mut world, mut scheduler) = cluster(1);
            let repel = serde_json::json!({"affinity": {"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname"}]}}});
            let vip = add_sized(&mut world, "vip", 100, "1Gi", repel);
            nominate(&mut world, &mut scheduler, vip, 0);
            let p = add_sized(&mut world, app, 0, "1Gi", serde_json::json!({}));
            pick(&world, &mut scheduler, p, 1)
        };
        assert_eq!(
            with_anti_affinity("web"),
            Err(format!(
                "0/1 nodes are available: 1 {}.",
                InterPodMisfit::ExistingAntiAffinity.describe()
            ))
        );
        assert_eq!(with_anti_affinity("cache"), Ok(0), "control");
    }

    /// PodTopologySpread's `PreFilterExtensions.AddPod`: a nominated pod
    /// the constraint selects counts in its node's domain, so the skew
    /// keeps the next pod of its kind off that node (control: without the
    /// nomination either node will do).
    #[test]
    fn a_nominated_pod_counts_in_its_domain_for_topology_spread() {
        let spread = serde_json::json!({"topologySpreadConstraints": [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchExpressions": [
                {"key": "app", "operator": "In", "values": ["vip", "web"]}]}}]});
        let picks = |nominated: bool| -> BTreeSet<NodeId> {
            (0..8)
                .map(|seed| {
                    let (mut world, mut scheduler) = cluster(2);
                    let vip = add_sized(&mut world, "vip", 100, "1Gi", spread.clone());
                    if nominated {
                        nominate(&mut world, &mut scheduler, vip, 0);
                    }
                    let web = add_sized(&mut world, "web", 0, "1Gi", spread.clone());
                    pick(&world, &mut scheduler, web, seed).expect("fits")
                })
                .collect()
        };
        assert_eq!(picks(true), BTreeSet::from([1]));
        assert_eq!(picks(false), BTreeSet::from([0, 1]), "control");
    }

    /// The nodes a new `web` pod goes to over eight seeds, with
    /// `constraints` on web's template: node 0 already runs two web pods,
    /// node 1 three others, so the capacity scores prefer node 0.
    fn web_picks(constraints: serde_json::Value) -> BTreeSet<NodeId> {
        (0..8)
            .map(|seed| {
                let (mut world, mut scheduler) = cluster(2);
                let web = template_with(
                    "web",
                    serde_json::json!({ "topologySpreadConstraints": constraints }),
                );
                for i in 0..2 {
                    let p = world.add_pod(pod(
                        &format!("web-{i}"),
                        Owner::None,
                        web.clone(),
                        Vec::new(),
                    ));
                    world.bind(p, 0);
                }
                for i in 0..3 {
                    let p = world.add_pod(pod(
                        &format!("busy-{i}"),
                        Owner::None,
                        template("busy"),
                        Vec::new(),
                    ));
                    world.bind(p, 1);
                }
                let p = world.add_pod(pod("web-new", Owner::None, web, Vec::new()));
                pick(&world, &mut scheduler, p, seed).expect("fits")
            })
            .collect()
    }

    fn by_hostname(max_skew: u32, when: &str) -> serde_json::Value {
        serde_json::json!([{
            "maxSkew": max_skew, "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}}}])
    }

    /// `podtopologyspread/filtering.go`: with `DoNotSchedule`, a node whose
    /// domain would exceed `maxSkew` is refused even when the scores
    /// prefer it; the control (a larger `maxSkew`) lets the scores win.
    #[test]
    fn a_do_not_schedule_spread_constraint_refuses_the_fuller_node() {
        assert_eq!(
            web_picks(by_hostname(1, "DoNotSchedule")),
            BTreeSet::from([1]),
            "2 + 1 - 0 > 1 on node 0"
        );
        assert_eq!(
            web_picks(by_hostname(3, "DoNotSchedule")),
            BTreeSet::from([0]),
            "control: 3 <= 3"
        );
    }

    /// `podtopologyspread/scoring.go`: a `ScheduleAnyway` constraint
    /// steers the pod to the node with fewer matching pods (normalised
    /// 100 against 0, at weight 2), though the capacity scores prefer the
    /// other; the control (no constraint) lets the capacity scores win.
    #[test]
    fn a_schedule_anyway_constraint_prefers_the_emptier_domain() {
        assert_eq!(
            web_picks(by_hostname(1, "ScheduleAnyway")),
            BTreeSet::from([1]),
            "spread wins"
        );
        assert_eq!(
            web_picks(serde_json::json!([])),
            BTreeSet::from([0]),
            "control: capacity wins"
        );
    }

    #[test]
    fn least_allocated_prefers_free_nodes() {
        assert_eq!(free_share(8000, 2000), 75);
        assert_eq!(free_share(8000, 8000), 0);
        assert_eq!(free_share(8000, 9000), 0);
    }
}
