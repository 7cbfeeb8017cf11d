//! Scale-up: which pools could take the pods the scheduler could not place,
//! and how many new nodes each would need.
//!
//! As upstream's scale-up: pods that will land on nodes already booting
//! are not counted again; the rest are packed first fit onto template
//! nodes of every autoscaled pool whose labels, taints and size admit them
//! (the binpacking estimator, `estimator/binpacking_estimator.go`), within
//! the pool's max and `maxNodesTotal`, which counts every node, static
//! ones and those still booting. A pod with a required anti-affinity term
//! gets a node of its own. The expander chain ([`super::expander`]) then
//! picks one option.

use super::expander::Growth;
use super::view::{AutoscalerView, PodFacts, Resources, Room, Template};
use crate::topology::{PoolSize, Topology};

/// Whether a pod could run on a fresh node of the template's pool.
pub(crate) fn fits_template(pod: &PodFacts<'_>, template: &Template<'_>) -> bool {
    pod.placement.admits(&template.node) && template.room.takes(pod.requests)
}

/// The requests of the DaemonSet pods a node would run: each DaemonSet's
/// pod whose placement admits the node (one entry per DaemonSet).
pub(crate) fn daemon_overhead<'a>(
    node: &k8s_openapi::api::core::v1::Node,
    daemons: impl IntoIterator<Item = PodFacts<'a>>,
) -> Room {
    let mut overhead = Room::default();
    for daemon in daemons {
        if daemon.placement.admits(node) {
            overhead.add(daemon.requests);
        }
    }
    overhead
}

/// The share of a growth's CPU and memory left idle once its pods run:
/// the free CPU over the template's CPU times the nodes, plus the same for
/// memory, as the least-waste expander scores it.
pub(crate) fn waste(bins: &[Room], capacity: Resources) -> f64 {
    let (cpu_free, mem_free) = bins
        .iter()
        .fold((0i64, 0i64), |(c, m), b| (c + b.cpu, m + b.memory));
    let n = bins.len() as f64;
    cpu_free as f64 / (capacity.cpu.max(1) as f64 * n)
        + mem_free as f64 / (capacity.memory.max(1) as f64 * n)
}

/// Packs pods first fit onto at most `room` new nodes of a template:
/// the bins' free room and how many of the pods they take.
pub(crate) fn pack<'a>(
    pods: impl IntoIterator<Item = PodFacts<'a>>,
    template: &Template<'_>,
    room: u32,
) -> (Vec<Room>, usize) {
    let mut bins: Vec<Room> = Vec::new();
    let mut helped = 0;
    for pod in pods {
        if !fits_template(&pod, template) {
            continue;
        }
        match bins
            .iter_mut()
            .find(|bin| !pod.anti_affinity && bin.takes(pod.requests))
        {
            Some(bin) => bin.take(pod.requests),
            None => {
                if bins.len() as u32 >= room {
                    continue;
                }
                let mut bin = template.room;
                bin.take(pod.requests);
                bins.push(bin);
            }
        }
        helped += 1;
    }
    (bins, helped)
}

/// How many nodes count towards `maxNodesTotal`, and towards one pool.
fn counted<V: AutoscalerView>(view: &V, pool: Option<&str>) -> u32 {
    view.nodes()
        .map(|n| view.node(n))
        .filter(|n| n.counted && pool.is_none_or(|p| n.pool == p))
        .count() as u32
}

/// Nodes of the pool that count towards its size.
pub(crate) fn pool_size<V: AutoscalerView>(view: &V, pool: &str) -> u32 {
    counted(view, Some(pool))
}

/// The growth options for the pods the scheduler could not place, one per
/// autoscaled pool that could take some of them, in topology order; empty
/// when nothing waits.
pub(crate) fn options<V: AutoscalerView>(view: &V, topology: &Topology) -> Vec<Growth> {
    let pending = view.unschedulable_pods();
    if pending.is_empty() {
        return Vec::new();
    }
    let pools: Vec<(&str, u32)> = topology
        .pools
        .iter()
        .filter_map(|p| match p.size {
            PoolSize::Autoscaled { max, .. } => Some((p.name.as_str(), max)),
            _ => None,
        })
        .collect();
    let templates: Vec<(&str, Option<Template<'_>>)> =
        pools.iter().map(|&(p, _)| (p, view.template(p))).collect();
    let template_of = |pool: &str| -> Option<Template<'_>> {
        match templates.iter().find(|(p, _)| *p == pool) {
            Some((_, t)) => t.clone(),
            None => view.template(pool),
        }
    };
    // Pods that will land on nodes still booting are taken care of.
    let mut upcoming: Vec<(Option<Template<'_>>, Room)> = view
        .booting()
        .into_iter()
        .map(|(pool, room)| (template_of(&pool), room))
        .collect();
    let mut waiting = Vec::new();
    'pods: for pod in pending {
        let facts = view.pod(pod);
        for (template, room) in &mut upcoming {
            if template.as_ref().is_some_and(|t| fits_template(&facts, t))
                && room.takes(facts.requests)
            {
                room.take(facts.requests);
                continue 'pods;
            }
        }
        waiting.push(pod);
    }
    if waiting.is_empty() {
        return Vec::new();
    }
    let room_total = topology
        .autoscaler
        .max_nodes_total
        .map_or(u32::MAX, |m| m.saturating_sub(counted(view, None)));
    let mut options = Vec::new();
    for ((pool, max), (_, template)) in pools.iter().zip(&templates) {
        let room = max
            .saturating_sub(pool_size(view, pool))
            .min(room_total)
            .min(view.provisionable(pool));
        let Some(template) = template else {
            continue;
        };
        if room == 0 {
            continue;
        }
        let (bins, helped) = pack(waiting.iter().map(|&p| view.pod(p)), template, room);
        if bins.is_empty() {
            continue;
        }
        options.push(Growth {
            pool: (*pool).to_owned(),
            nodes: bins.len() as u32,
            pods: helped,
            waste: waste(&bins, template.capacity),
        });
    }
    options
}
