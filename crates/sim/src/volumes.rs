//! Volumes: the persistent volume claims, how their volumes bind (at once,
//! in a domain the provisioner picks, or where the first consumer was
//! scheduled) and where single-attach volumes are attached.
//!
//! A single-attach volume is attached to one node at a time; a pod on
//! another node cannot start until it detaches. When its node departs,
//! the attachment is released as the storage class says: never, at once,
//! or after a delay (the stranding the drills rehearse).

use std::collections::{BTreeMap, BTreeSet};

use super::clock::{Time, after};
use super::world::{Claim, ClaimId, NodeId, SimNode};
use drillbench_model::rng::SeededRng;
use drillbench_model::scenario::spec::{AttachModel, BindingMode, Release};
use drillbench_model::topology::StorageClass;

/// What attaching a pod's volume to its node came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attach {
    /// The volume is replicated: any node uses it, nothing attaches.
    Replicated,
    /// It attached to the node now.
    Attached,
    /// It was attached to the node already.
    AlreadyThere,
    /// It is attached to another node: the pod cannot start.
    Elsewhere(NodeId),
}

/// The claims and their volumes.
#[derive(Debug, Clone)]
pub(crate) struct Volumes {
    claims: Vec<Claim>,
    index: BTreeMap<(String, String), ClaimId>,
    storage_classes: Vec<StorageClass>,
    default_class: Option<String>,
}

impl Volumes {
    /// No claim yet, with the drill's storage classes.
    pub(crate) fn new(storage_classes: Vec<StorageClass>) -> Self {
        let default_class = storage_classes
            .iter()
            .find(|c| c.default)
            .map(|c| c.name.clone());
        Volumes {
            claims: Vec::new(),
            index: BTreeMap::new(),
            storage_classes,
            default_class,
        }
    }

    /// The class claims without one get.
    pub(crate) fn default_class(&self) -> Option<&str> {
        self.default_class.as_deref()
    }

    /// Every claim, by index.
    pub(crate) fn claims(&self) -> &[Claim] {
        &self.claims
    }

    /// One claim.
    pub(crate) fn claim(&self, claim: ClaimId) -> &Claim {
        &self.claims[claim]
    }

    /// The claim of a namespace and name.
    pub(crate) fn claim_id(&self, namespace: &str, name: &str) -> Option<ClaimId> {
        self.index
            .get(&(namespace.to_owned(), name.to_owned()))
            .copied()
    }

    /// `namespace/name` of a claim.
    pub(crate) fn key(&self, claim: ClaimId) -> String {
        let c = &self.claims[claim];
        format!("{}/{}", c.namespace, c.name)
    }

    /// The claim of that name, created (with the default class if it names
    /// none) if it does not exist yet; true if it was created.
    pub(crate) fn get_or_create(
        &mut self,
        namespace: &str,
        name: &str,
        class: Option<String>,
    ) -> (ClaimId, bool) {
        let key = (namespace.to_owned(), name.to_owned());
        if let Some(&id) = self.index.get(&key) {
            return (id, false);
        }
        let class = class.or_else(|| self.default_class.clone());
        let storage = class
            .as_ref()
            .and_then(|c| self.storage_classes.iter().find(|s| &s.name == c));
        let (attach, release) = storage
            .map_or((AttachModel::Replicated, Release::Immediately), |s| {
                (s.attach, s.release_on_node_loss)
            });
        // A claim without a known class binds at once, as a pre-provisioned
        // volume would, and goes anywhere.
        let binding = storage.map_or(BindingMode::Immediate, |s| s.binding_mode);
        let topology_key = storage.and_then(|s| s.topology_key.clone());
        let id = self.claims.len();
        self.claims.push(Claim {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            class,
            storage: None,
            attach,
            release,
            binding,
            topology_key,
            bound: false,
            pv_topology: None,
            attached: None,
            attached_at: 0,
            selected_node: None,
            release_at: None,
        });
        self.index.insert(key, id);
        (id, true)
    }

    /// The size a standalone claim's manifest asks for.
    pub(crate) fn set_storage(&mut self, claim: ClaimId, storage: Option<String>) {
        self.claims[claim].storage = storage;
    }

    /// `Immediate` binding: the volume is provisioned when the claim is
    /// created, before any consumer is known, in a topology domain the
    /// provisioner picks (seeded: any domain a Ready node is in). Pods using
    /// the claim are then confined to that domain, whether or not a node
    /// there can take them.
    pub(crate) fn bind_now(&mut self, claim: ClaimId, nodes: &[SimNode], rng: &mut SeededRng) {
        self.claims[claim].bound = true;
        let Some(key) = self.claims[claim].topology_key.clone() else {
            return;
        };
        let domains: BTreeSet<&String> = nodes
            .iter()
            .filter(|n| n.is_ready())
            .filter_map(|n| n.labels().get(&key))
            .collect();
        if domains.is_empty() {
            return;
        }
        let domains: Vec<String> = domains.into_iter().cloned().collect();
        let pick = domains[rng.index(domains.len())].clone();
        self.claims[claim].pv_topology = Some(pick);
    }

    /// `WaitForFirstConsumer` binding: the volume is provisioned where its
    /// first consumer was scheduled (`node`, labelled `labels`), so it
    /// carries that node's domain. A bound claim stays as it is.
    pub(crate) fn bind_for_consumer(
        &mut self,
        claim: ClaimId,
        node: NodeId,
        labels: &BTreeMap<String, String>,
    ) {
        let c = &mut self.claims[claim];
        if c.bound {
            return;
        }
        c.bound = true;
        c.selected_node = Some(node);
        if let Some(key) = &c.topology_key {
            c.pv_topology = labels.get(key).cloned();
        }
    }

    /// Attaches a claim's volume to the node of a pod starting there.
    pub(crate) fn attach(&mut self, claim: ClaimId, node: NodeId, now: Time) -> Attach {
        let c = &mut self.claims[claim];
        if c.attach != AttachModel::SingleNode {
            return Attach::Replicated;
        }
        match c.attached {
            None => {
                c.attached = Some(node);
                c.attached_at = now;
                c.release_at = None;
                Attach::Attached
            }
            Some(n) if n == node => Attach::AlreadyThere,
            Some(other) => Attach::Elsewhere(other),
        }
    }

    /// The node a claim's volume is attached to.
    pub(crate) fn attached(&self, claim: ClaimId) -> Option<NodeId> {
        self.claims[claim].attached
    }

    /// The claims whose volumes are attached to a node.
    pub(crate) fn attached_to(&self, node: NodeId) -> Vec<ClaimId> {
        (0..self.claims.len())
            .filter(|&c| self.claims[c].attached == Some(node))
            .collect()
    }

    /// The volume detaches from its node.
    pub(crate) fn detach(&mut self, claim: ClaimId) {
        self.claims[claim].attached = None;
        self.claims[claim].release_at = None;
    }

    /// A node departed: each volume still attached to it whose release is
    /// not under way yet is stranded there, and its release is due as its
    /// class says. Returns those claims, in order, with when their
    /// attachment is to be released (never: `None`).
    pub(crate) fn strand(&mut self, node: NodeId, now: Time) -> Vec<(ClaimId, Option<Time>)> {
        let mut stranded = Vec::new();
        for (id, c) in self.claims.iter_mut().enumerate() {
            if c.attached != Some(node) || c.release_at.is_some() {
                continue;
            }
            let at = match c.release {
                Release::Never => None,
                Release::Immediately => Some(now),
                Release::After(delay) => Some(after(now, delay)),
            };
            c.release_at = at;
            stranded.push((id, at));
        }
        stranded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_model::duration::Duration;

    fn class(
        name: &str,
        binding: BindingMode,
        release: Release,
        key: Option<&str>,
    ) -> StorageClass {
        StorageClass {
            name: name.to_owned(),
            binding_mode: binding,
            attach: AttachModel::SingleNode,
            release_on_node_loss: release,
            default: false,
            topology_key: key.map(str::to_owned),
        }
    }

    fn volumes() -> Volumes {
        let mut hcloud = class(
            "hcloud",
            BindingMode::WaitForFirstConsumer,
            Release::Never,
            None,
        );
        hcloud.default = true;
        let mut longhorn = class(
            "longhorn",
            BindingMode::Immediate,
            Release::Immediately,
            None,
        );
        longhorn.attach = AttachModel::Replicated;
        let zonal = class(
            "zonal",
            BindingMode::Immediate,
            Release::After(Duration::from_mins(6)),
            Some("zone"),
        );
        let local = class(
            "local",
            BindingMode::WaitForFirstConsumer,
            Release::Immediately,
            Some("kubernetes.io/hostname"),
        );
        Volumes::new(vec![hcloud, longhorn, zonal, local])
    }

    fn ready_node(name: &str, zone: &str) -> SimNode {
        let labels = BTreeMap::from([("zone".to_owned(), zone.to_owned())]);
        let capacity = (super::super::world::Resources::default(), 110);
        let mut n = SimNode::new(name, "p", false, labels, Vec::new(), capacity);
        n.phase = super::super::world::NodePhase::Ready;
        n
    }

    #[test]
    fn a_claim_is_created_once_with_the_default_class() {
        let mut v = volumes();
        assert_eq!(v.default_class(), Some("hcloud"));
        let (a, created) = v.get_or_create("db", "data", None);
        assert!(created);
        assert_eq!(
            v.get_or_create("db", "data", Some("longhorn".to_owned())),
            (a, false)
        );
        assert_eq!(v.claim(a).class.as_deref(), Some("hcloud"));
        assert_eq!(v.claim_id("db", "data"), Some(a));
        assert_eq!(v.claim_id("other", "data"), None);
        assert_eq!(v.key(a), "db/data");
        let (b, _) = v.get_or_create("db", "cache", Some("unknown".to_owned()));
        let c = v.claim(b);
        assert_eq!(
            (c.attach, c.binding),
            (AttachModel::Replicated, BindingMode::Immediate),
            "an unknown class binds at once and goes anywhere"
        );
    }

    #[test]
    fn immediate_binding_picks_a_ready_domain_by_seed() {
        let nodes = [
            ready_node("a", "z1"),
            ready_node("b", "z2"),
            ready_node("c", "z2"),
        ];
        let pick = |seed| {
            let mut v = volumes();
            let (id, _) = v.get_or_create("db", "data", Some("zonal".to_owned()));
            v.bind_now(id, &nodes, &mut SeededRng::new(seed));
            v.claim(id).pv_topology.clone()
        };
        let picks: BTreeSet<Option<String>> = (0..32).map(pick).collect();
        assert_eq!(
            picks,
            BTreeSet::from([Some("z1".to_owned()), Some("z2".to_owned())]),
            "each domain once, whatever its node count"
        );
        assert_eq!(pick(7), pick(7));
        let mut v = volumes();
        let (id, _) = v.get_or_create("db", "data", Some("zonal".to_owned()));
        v.bind_now(id, &[], &mut SeededRng::new(1));
        assert!(
            v.claim(id).bound && v.claim(id).pv_topology.is_none(),
            "no Ready node: bound, unconfined"
        );
    }

    #[test]
    fn the_first_consumer_decides_and_the_claim_keeps_it() {
        let mut v = volumes();
        let (id, _) = v.get_or_create("db", "data", Some("local".to_owned()));
        let first = ready_node("worker-1", "z1");
        v.bind_for_consumer(id, 3, first.labels());
        let second = ready_node("worker-2", "z1");
        v.bind_for_consumer(id, 4, second.labels());
        let c = v.claim(id);
        assert_eq!(c.selected_node, Some(3));
        assert_eq!(c.pv_topology.as_deref(), Some("worker-1"));
    }

    #[test]
    fn a_single_attach_volume_is_on_one_node_at_a_time() {
        let mut v = volumes();
        let (id, _) = v.get_or_create("db", "data", None);
        assert_eq!(v.attach(id, 1, 100), Attach::Attached);
        assert_eq!(v.attach(id, 1, 200), Attach::AlreadyThere);
        assert_eq!(v.claim(id).attached_at, 100);
        assert_eq!(v.attach(id, 2, 300), Attach::Elsewhere(1));
        assert_eq!(v.attached_to(1), [id]);
        v.detach(id);
        assert_eq!(v.attached(id), None);
        assert_eq!(v.attach(id, 2, 400), Attach::Attached);
        let (shared, _) = v.get_or_create("db", "shared", Some("longhorn".to_owned()));
        assert_eq!(v.attach(shared, 2, 0), Attach::Replicated);
        assert_eq!(v.attached(shared), None);
    }

    #[test]
    fn a_departed_node_strands_its_volumes_as_their_classes_say() {
        let mut v = volumes();
        let (never, _) = v.get_or_create("db", "a", None);
        let (later, _) = v.get_or_create("db", "b", Some("zonal".to_owned()));
        let (now, _) = v.get_or_create("db", "c", Some("local".to_owned()));
        let (elsewhere, _) = v.get_or_create("db", "d", None);
        for c in [never, later, now] {
            v.attach(c, 5, 0);
        }
        v.attach(elsewhere, 6, 0);
        let stranded = v.strand(5, 1_000);
        assert_eq!(
            stranded,
            [
                (never, None),
                (later, Some(1_000 + 360_000)),
                (now, Some(1_000))
            ]
        );
        assert_eq!(
            v.strand(5, 2_000),
            [(never, None)],
            "a release under way is not started twice"
        );
        v.detach(later);
        assert_eq!(v.claim(later).release_at, None);
    }
}
