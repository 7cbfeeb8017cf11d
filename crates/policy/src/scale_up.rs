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

use std::cell::OnceCell;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;

use super::expander::Growth;
use super::interpod::InterPodState;
use super::scale_down::simulate;
use super::spread::SpreadState;
use super::view::{AutoscalerView, ClusterView, PodFacts, Resources, Room, Template};
use drillbench_model::topology::{PoolSize, Topology};

/// Whether a pod could run on a fresh node of the template's pool.
pub fn fits_template(pod: &PodFacts<'_>, template: &Template<'_>) -> bool {
    pod.placement.admits(&template.node) && template.room.takes(pod.requests)
}

/// The requests of the DaemonSet pods a node would run: each DaemonSet's
/// pod whose placement admits the node (one entry per DaemonSet).
pub fn daemon_overhead<'a>(
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
pub fn waste(bins: &[Room], capacity: Resources) -> f64 {
    let (cpu_free, mem_free) = bins
        .iter()
        .fold((0i64, 0i64), |(c, m), b| (c + b.cpu, m + b.memory));
    let n = bins.len() as f64;
    cpu_free as f64 / (capacity.cpu.max(1) as f64 * n)
        + mem_free as f64 / (capacity.memory.max(1) as f64 * n)
}

/// Packs pods first fit onto at most `room` new nodes of a template:
/// the bins' free room and how many of the pods they take.
///
/// As upstream's binpacking estimator (`estimator/binpacking_estimator.go`),
/// which runs the scheduler's filters on the cluster snapshot with each new
/// node added under a hostname of its own: a pod goes to the first new
/// node whose room, topology spread (`DoNotSchedule`, over the existing
/// nodes' domains and the new ones) and inter-pod (anti-)affinity (with
/// the pods running and those already packed, both ways) admit it, else
/// to a fresh node if that one admits it, else it is not helped.
pub fn pack<V: ClusterView>(
    view: &V,
    pods: &[V::Pod],
    template: &Template<'_>,
    room: u32,
) -> (Vec<Room>, usize) {
    let standing: Vec<(V::Pod, V::Node)> = view
        .nodes()
        .flat_map(|n| view.pods_on(n).into_iter().map(move |p| (p, n)))
        .collect();
    let repelling = standing
        .iter()
        .any(|&(p, _)| !view.pod(p).anti_affinity.is_empty());
    // New nodes: their object (a unique hostname), free room, packed pods.
    let mut bins: Vec<(Node, Room, Vec<V::Pod>)> = Vec::new();
    let mut helped = 0;
    for &pod in pods {
        let facts = view.pod(pod);
        if !fits_template(&facts, template) {
            continue;
        }
        let incoming = facts.terms();
        let spread_pod = facts.spread_pod();
        let constrained = spread_pod.is_constrained();
        let interpod_needed = repelling
            || !incoming.affinity.is_empty()
            || !incoming.anti_affinity.is_empty()
            || bins
                .iter()
                .any(|(_, _, on)| on.iter().any(|&p| !view.pod(p).anti_affinity.is_empty()));
        let fresh = (bins.len() as u32) < room;
        let candidates = bins.len() + usize::from(fresh);
        let mut chosen = None;
        for i in 0..candidates {
            let new_node;
            let (node, free) = match bins.get(i) {
                Some((node, free, _)) => (node, *free),
                None => {
                    new_node = new_node_of(template, i);
                    (&new_node, template.room)
                }
            };
            if !free.takes(facts.requests) {
                continue;
            }
            if constrained {
                let mut state = SpreadState::default();
                for n in view.nodes().filter(|&n| view.node(n).counted) {
                    state.add_node(&spread_pod, view.node(n).object, |c| {
                        let c = &facts.spread[c];
                        standing
                            .iter()
                            .filter(|&&(p, on)| {
                                let p = view.pod(p);
                                on == n
                                    && !p.terminating
                                    && c.counts(facts.namespace, p.namespace, p.labels)
                            })
                            .count() as u32
                    });
                }
                for (bin, _, on) in &bins {
                    state.add_node(&spread_pod, bin, |c| {
                        let c = &facts.spread[c];
                        on.iter()
                            .filter(|&&p| {
                                let p = view.pod(p);
                                c.counts(facts.namespace, p.namespace, p.labels)
                            })
                            .count() as u32
                    });
                }
                if i == bins.len() {
                    state.add_node(&spread_pod, node, |_| 0);
                }
                if state.filter(&spread_pod, node).is_err() {
                    continue;
                }
            }
            if interpod_needed {
                let mut state = InterPodState::default();
                for &(other, on) in &standing {
                    state.add(
                        &incoming,
                        &view.pod(other).terms(),
                        labels(view.node(on).object),
                    );
                }
                for (bin, _, on) in &bins {
                    for &other in on {
                        state.add(&incoming, &view.pod(other).terms(), labels(bin));
                    }
                }
                if state.filter(&incoming, labels(node)).is_err() {
                    continue;
                }
            }
            chosen = Some(i);
            break;
        }
        let Some(i) = chosen else {
            continue;
        };
        if i == bins.len() {
            bins.push((new_node_of(template, i), template.room, Vec::new()));
        }
        bins[i].1.take(facts.requests);
        bins[i].2.push(pod);
        helped += 1;
    }
    (bins.into_iter().map(|(_, free, _)| free).collect(), helped)
}

/// The `i`-th new node of a template, with a hostname of its own (as
/// upstream names its template node copies apart).
fn new_node_of(template: &Template<'_>, i: usize) -> Node {
    let mut node = template.node.clone().into_owned();
    node.metadata
        .labels
        .get_or_insert_default()
        .insert(HOSTNAME.to_owned(), format!("new-node-{i}"));
    node
}

const HOSTNAME: &str = "kubernetes.io/hostname";

fn labels(node: &Node) -> &BTreeMap<String, String> {
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    node.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

/// How many nodes count towards `maxNodesTotal`, and towards one pool.
fn counted<V: AutoscalerView>(view: &V, pool: Option<&str>) -> u32 {
    view.nodes()
        .map(|n| view.node(n))
        .filter(|n| n.counted && pool.is_none_or(|p| n.pool == p))
        .count() as u32
}

/// Nodes of the pool that count towards its size.
pub fn pool_size<V: AutoscalerView>(view: &V, pool: &str) -> u32 {
    counted(view, Some(pool))
}

/// The growth options for the pods the scheduler could not place, one per
/// autoscaled pool that could take some of them, in topology order; empty
/// when nothing waits.
///
/// Before packing, as upstream's pod list processors do: pods younger than
/// `newPodScaleUpDelay` wait (`filterOutYoungPods`; this rule set lets a
/// pod exactly that old through), and pods the existing nodes can take
/// now, by the same filters the scale-down simulation runs, ask for
/// nothing (`core/podlistprocessor/filter_out_schedulable.go`): a node
/// that became Ready at this very instant, before the scheduler placed
/// the pod, is not grown again.
pub fn options<V: AutoscalerView>(view: &V, topology: &Topology, now: u64) -> Vec<Growth> {
    let delay = topology.autoscaler.new_pod_scale_up_delay.as_millis();
    let mut pending: Vec<V::Pod> = view
        .unschedulable_pods()
        .into_iter()
        .filter(|&p| {
            view.created_at(p)
                .is_none_or(|at| now.saturating_sub(at) >= delay)
        })
        .collect();
    if pending.is_empty() {
        return Vec::new();
    }
    let fits = simulate(view, &OnceCell::new(), None, &pending, &[], false);
    let mut fit = fits.into_iter();
    pending.retain(|_| !fit.next().unwrap_or(false));
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
        let (bins, helped) = pack(view, &waiting, template, room);
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

#[cfg(test)]
mod tests {
    use std::borrow::Cow;

    use std::collections::BTreeMap;

    use super::*;
    use crate::fake::{Fake, GI, pod, res, toleration, topology};
    use crate::view::ClusterView;

    fn template(fake: &mut Fake, taint: Option<&str>) -> Template<'static> {
        fake.add_template("auto", taint);
        fake.templates[0].1.clone()
    }

    /// The binpacking estimator (`cluster-autoscaler/estimator/
    /// binpacking_estimator.go`): pods go first fit onto new template
    /// nodes, a new node only when none so far takes the pod, within the
    /// room the pool has. Each row has its control with one fact flipped.
    #[test]
    fn pods_pack_first_fit_onto_template_nodes_and_each_control_flips_the_count() {
        type Edit = fn(&mut Fake, &mut Template<'static>);
        /// Why, the pods' CPUs, the edit, the pool's room, and the nodes
        /// and pods placed.
        type Row<'a> = (&'a str, &'a [i64], Edit, u32, (usize, usize));
        let rows: &[Row] = &[
            (
                "two small pods share a node",
                &[1500, 1500],
                |_, _| {},
                5,
                (1, 2),
            ),
            (
                "control: each over half a node",
                &[2500, 2500],
                |_, _| {},
                5,
                (2, 2),
            ),
            (
                "pods repelling each other per node take a node each",
                &[500, 500],
                |f, _| {
                    f.pods.iter_mut().for_each(|p| {
                        p.labels = BTreeMap::from([("app".to_owned(), "x".to_owned())]);
                        p.anti_affinity = vec![crate::fake::repels("x")];
                    })
                },
                5,
                (2, 2),
            ),
            ("control: without it", &[500, 500], |_, _| {}, 5, (1, 2)),
            (
                "control: they repel another app",
                &[500, 500],
                |f, _| {
                    f.pods
                        .iter_mut()
                        .for_each(|p| p.anti_affinity = vec![crate::fake::repels("x")])
                },
                5,
                (1, 2),
            ),
            (
                "the pool's room caps the nodes",
                &[2500, 2500],
                |_, _| {},
                1,
                (1, 1),
            ),
            ("control: room for two", &[2500, 2500], |_, _| {}, 2, (2, 2)),
            (
                "one pod slot a node",
                &[500, 500],
                |_, t| t.room.pods = 1,
                5,
                (2, 2),
            ),
            (
                "control: two slots",
                &[500, 500],
                |_, t| t.room.pods = 2,
                5,
                (1, 2),
            ),
            (
                "a taint of the template the pods do not tolerate",
                &[500],
                |_, t| {
                    *t = Template {
                        node: Cow::Owned(crate::fake::object("auto", Some("dedicated"))),
                        ..t.clone()
                    }
                },
                5,
                (0, 0),
            ),
            (
                "control: tolerated",
                &[500],
                |f, t| {
                    *t = Template {
                        node: Cow::Owned(crate::fake::object("auto", Some("dedicated"))),
                        ..t.clone()
                    };
                    f.pods[0].tolerations = vec![toleration("dedicated")];
                },
                5,
                (1, 1),
            ),
            ("a pod bigger than a node", &[5000], |_, _| {}, 5, (0, 0)),
            ("control: the size of a node", &[4000], |_, _| {}, 5, (1, 1)),
        ];
        for (why, cpus, edit, room, want) in rows {
            let mut fake = Fake::default();
            for &cpu in *cpus {
                fake.add(pod(None, cpu));
            }
            let mut t = template(&mut fake, None);
            edit(&mut fake, &mut t);
            let pods: Vec<usize> = (0..fake.pods.len()).collect();
            let (bins, helped) = pack(&fake, &pods, &t, *room);
            assert_eq!((bins.len(), helped), *want, "{why}");
        }
    }

    /// The least-waste expander's score (cluster-autoscaler FAQ "What are
    /// Expanders?": "the node group that will have the least idle CPU (if
    /// tied, unused memory) after scale-up"). This rule set adds the idle
    /// CPU and memory shares instead of tie-breaking on memory.
    #[test]
    fn waste_is_the_idle_share_of_cpu_plus_that_of_memory_over_the_new_nodes() {
        let capacity = res(4000, 16 * GI);
        let half_idle = Room {
            cpu: 2000,
            memory: 4 * GI,
            pods: 100,
        };
        assert_eq!(waste(&[half_idle], capacity), 0.75);
        // Control: the same idle room over two nodes is half the share.
        let full = Room {
            cpu: 0,
            memory: 0,
            pods: 0,
        };
        assert_eq!(waste(&[half_idle, full], capacity), 0.375);
        assert_eq!(waste(&[full], capacity), 0.0);
    }

    #[test]
    fn daemon_overhead_counts_the_daemons_a_node_admits_and_its_control_does_not() {
        let node = crate::fake::object("auto", Some("dedicated"));
        let mut fake = Fake::default();
        fake.add(pod(None, 100));
        let shy = daemon_overhead(&node, [fake.pod(0)]);
        assert_eq!(shy, Room::default(), "it does not tolerate the taint");
        fake.pods[0].tolerations = vec![toleration("dedicated")];
        let counted = daemon_overhead(&node, [fake.pod(0)]);
        assert_eq!(
            counted,
            Room {
                cpu: 100,
                memory: GI,
                pods: 1
            }
        );
    }

    /// Upstream's scale-up: pods that fit on nodes still booting ask for
    /// nothing more, and `maxNodesTotal` and the pool's max bound the
    /// growth (FAQ "How does scale-up work?").
    #[test]
    fn growth_options_leave_out_what_booting_nodes_take_and_respect_the_limits() {
        let cluster = || {
            let mut fake = Fake::default();
            fake.nodes.push(crate::fake::node("base"));
            // Full: the pod is unschedulable on it.
            fake.nodes[0].requested.cpu = 4000;
            let p = fake.add(pod(None, 1000));
            fake.unschedulable.push(p);
            fake.add_template("auto", None);
            fake
        };
        let topology = topology(0, 3);
        let grown = options(&cluster(), &topology, 0);
        assert_eq!(grown.len(), 1);
        assert_eq!(
            (grown[0].pool.as_str(), grown[0].nodes, grown[0].pods),
            ("auto", 1, 1)
        );

        let mut booting = cluster();
        booting
            .booting
            .push(("auto".to_owned(), booting.templates[0].1.room));
        assert!(
            options(&booting, &topology, 0).is_empty(),
            "a booting node takes it"
        );

        let mut full = topology.clone();
        full.autoscaler.max_nodes_total = Some(1);
        assert!(
            options(&cluster(), &full, 0).is_empty(),
            "maxNodesTotal reached"
        );
        full.autoscaler.max_nodes_total = Some(2);
        assert_eq!(
            options(&cluster(), &full, 0).len(),
            1,
            "control: room for one"
        );

        let mut at_max = cluster();
        for _ in 0..3 {
            at_max.nodes.push(crate::fake::node("auto"));
        }
        assert!(
            options(&at_max, &topology, 0).is_empty(),
            "the pool is at its max"
        );
        let mut none_left = cluster();
        none_left.provisionable = Some(0);
        assert!(
            options(&none_left, &topology, 0).is_empty(),
            "no standby node left"
        );
    }

    /// Upstream's pod list processors before a scale-up
    /// (`core/podlistprocessor/filter_out_schedulable.go`: pods the
    /// existing nodes can take are not helped by new ones, as checked by
    /// the scheduler's filters; `core/static_autoscaler.go`
    /// `filterOutYoungPods` and FAQ flag `new-pod-scale-up-delay`). Each
    /// row has its control, with the scale-up back.
    #[test]
    fn pods_an_existing_node_takes_or_too_young_ask_for_no_growth() {
        type Edit = fn(&mut Fake);
        let rows: &[(&str, Edit, u64, u64, bool)] = &[
            ("nothing takes the pod", |_| {}, 0, 0, true),
            (
                "a Ready node with room takes it (it just became Ready)",
                |f| f.nodes[0].requested.cpu = 0,
                0,
                0,
                false,
            ),
            (
                "control: that node is cordoned",
                |f| {
                    f.nodes[0].requested.cpu = 0;
                    f.nodes[0].schedulable = false;
                },
                0,
                0,
                true,
            ),
            (
                "a node with room whose pod repels it",
                |f| {
                    f.nodes[0].requested.cpu = 0;
                    let mut db = pod(Some(0), 0);
                    db.labels = BTreeMap::from([("app".to_owned(), "db".to_owned())]);
                    db.anti_affinity = vec![crate::fake::repels("web")];
                    f.add(db);
                    f.pods[0].labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
                    crate::fake::hostname(&mut f.nodes[0], "base");
                },
                0,
                0,
                true,
            ),
            (
                "a pod 30 s old under a 1m newPodScaleUpDelay",
                |_| {},
                60_000,
                30_000,
                false,
            ),
            ("control: 1 minute old", |_| {}, 60_000, 60_000, true),
        ];
        for (why, edit, delay, age, grows) in rows {
            let mut fake = Fake::default();
            fake.nodes.push(crate::fake::node("base"));
            fake.nodes[0].requested.cpu = 4000;
            let p = fake.add(pod(None, 1000));
            fake.unschedulable.push(p);
            fake.created_at = Some(1_000_000 - age);
            fake.add_template("auto", None);
            edit(&mut fake);
            let mut topology = topology(0, 3);
            topology.autoscaler.new_pod_scale_up_delay =
                drillbench_model::duration::Duration::from_millis(*delay);
            let grown = options(&fake, &topology, 1_000_000);
            assert_eq!(!grown.is_empty(), *grows, "{why}: {grown:?}");
        }
    }

    /// The estimator runs the `PodTopologySpread` and `InterPodAffinity`
    /// filters with the existing pods (`estimator/binpacking_estimator.go`
    /// on the cluster snapshot): the pool's nodes are in zone `a`, where
    /// `web` already runs twice and zone `b` (a static node, full) once.
    /// A `maxSkew: 1` zone constraint refuses zone `a`, so growing the pool
    /// helps nothing; a running pod repelling `web` per zone does too.
    /// Each control lets the growth help.
    #[test]
    fn spread_and_anti_affinity_with_running_pods_decide_whether_a_new_node_helps() {
        type Edit = fn(&mut Fake, usize);
        fn zone_spread(skew: i32) -> crate::spread::SpreadConstraint {
            let constraint = serde_json::from_value(serde_json::json!({
                "maxSkew": skew, "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }))
            .expect("a constraint");
            let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
            crate::spread::SpreadConstraint::compile(&constraint, &labels).expect("compiles")
        }
        fn by_zone(app: &str) -> crate::interpod::AffinityTerm {
            let term = serde_json::from_value(serde_json::json!({
                "labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "zone",
            }))
            .expect("a term");
            crate::interpod::AffinityTerm::compile(&term).expect("compiles")
        }
        let rows: &[(&str, Edit, bool)] = &[
            ("nothing constrains web", |_, _| {}, true),
            (
                "maxSkew 1 by zone: zone a already has one more",
                |f, p| f.pods[p].spread = vec![zone_spread(1)],
                false,
            ),
            (
                "control: maxSkew 2",
                |f, p| f.pods[p].spread = vec![zone_spread(2)],
                true,
            ),
            (
                "a running pod in zone a repels web per zone",
                |f, _| f.pods[0].anti_affinity = vec![by_zone("web")],
                false,
            ),
            (
                "control: it repels another app",
                |f, _| f.pods[0].anti_affinity = vec![by_zone("db")],
                true,
            ),
        ];
        for (why, edit, helps) in rows {
            let mut fake = Fake::default();
            let web = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
            for (zone, pods) in [("a", 2), ("b", 1)] {
                let mut n = crate::fake::node("base");
                n.object
                    .metadata
                    .labels
                    .get_or_insert_default()
                    .insert("zone".to_owned(), zone.to_owned());
                crate::fake::hostname(&mut n, &format!("base-{zone}"));
                n.requested.cpu = 4000 - 100 * pods;
                fake.nodes.push(n);
                let node = fake.nodes.len() - 1;
                for _ in 0..pods {
                    let mut running = pod(Some(node), 100);
                    running.labels = web.clone();
                    fake.add(running);
                }
            }
            let mut pending = pod(None, 1000);
            pending.labels = web.clone();
            let p = fake.add(pending);
            fake.unschedulable.push(p);
            fake.add_template("auto", None);
            if let Cow::Owned(node) = &mut fake.templates[0].1.node {
                node.metadata
                    .labels
                    .get_or_insert_default()
                    .insert("zone".to_owned(), "a".to_owned());
            }
            edit(&mut fake, p);
            let grown = options(&fake, &topology(0, 3), 0);
            assert_eq!(!grown.is_empty(), *helps, "{why}: {grown:?}");
        }
    }
}
