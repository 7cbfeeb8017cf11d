//! Where each claim's volume is attached, from the three sources the
//! observer's module documentation orders, and the strandings a node's
//! deletion leaves behind.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use k8s_openapi::api::storage::v1::VolumeAttachment;
use kube::ResourceExt;

use super::names::{HOSTNAME_LABEL, NodeNames};
use super::object::{Change, Object};
use drillbench_model::scenario::spec::AttachModel;
use drillbench_model::topology::Topology;
use drillbench_observe::{Stranding, Time};

/// The claim annotation read as its attachment where neither a
/// VolumeAttachment nor a node-pinned PersistentVolume says (the third
/// source in the module documentation).
pub const ATTACHED_NODE_ANNOTATION: &str = "volume.kubernetes.io/selected-node";

/// A PersistentVolume as the attachment rules read it.
#[derive(Debug, Clone, Default)]
struct VolumeState {
    /// `namespace/name` of the claim its `claimRef` names.
    claim: Option<String>,
    /// A CSI volume: attached only through VolumeAttachments.
    csi: bool,
    /// The hostname its required node affinity pins it to, if it does.
    pinned: Option<String>,
}

/// A VolumeAttachment: the PV it attaches, the node's drill name, and
/// whether it is attached.
#[derive(Debug, Clone)]
struct AttachmentState {
    volume: String,
    node: String,
    attached: bool,
}

/// The one hostname a PV's required node affinity pins it to: every term
/// requires `kubernetes.io/hostname In [h]`, with the same `h`.
fn pinned_host(volume: &PersistentVolume) -> Option<String> {
    let terms = &volume
        .spec
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required
        .as_ref()?
        .node_selector_terms;
    let mut hosts = terms.iter().map(|term| {
        term.match_expressions
            .iter()
            .flatten()
            .find(|r| r.key == HOSTNAME_LABEL && r.operator == "In")
            .and_then(|r| match r.values.as_deref() {
                Some([host]) => Some(host.clone()),
                _ => None,
            })
    });
    let first = hosts.next()??;
    hosts.all(|h| h.as_ref() == Some(&first)).then_some(first)
}

fn claim_key(claim: &PersistentVolumeClaim) -> String {
    format!(
        "{}/{}",
        claim.namespace().unwrap_or_default(),
        claim.name_any()
    )
}

/// Claims, PersistentVolumes and VolumeAttachments as the watches show
/// them.
#[derive(Debug, Default)]
pub(super) struct Volumes {
    /// Every claim's storage class ever seen: a placement names its claims'
    /// classes even when the claim is gone by the time it is judged.
    claim_classes: BTreeMap<String, Option<String>>,
    /// Claims' `volume.kubernetes.io/selected-node`, as drill names (the
    /// fallback source of attachments).
    claim_annotated: BTreeMap<String, String>,
    /// Claims' `spec.volumeName`.
    claim_volumes: BTreeMap<String, String>,
    volumes: BTreeMap<String, VolumeState>,
    attachments: BTreeMap<String, AttachmentState>,
    /// Attachments that ended in the current batch: (time, claim, node).
    /// A node deleted in the same instant strands them all the same (and
    /// releases them at once), whatever order the watches delivered in.
    ended: Vec<(Time, String, String)>,
}

impl Volumes {
    /// Takes in a change to a claim, a volume or an attachment (any other
    /// change is ignored), then releases every stranding whose attachment
    /// it ended.
    pub(super) fn take(
        &mut self,
        at: Time,
        change: &Change,
        names: &NodeNames,
        strandings: &mut [Stranding],
    ) {
        let before = self.attached(names);
        match change {
            Change::Applied(Object::Claim(claim)) => self.claim_applied(claim, names),
            Change::Deleted(Object::Claim(claim)) => {
                // Its volume outlives it until the PV goes (whose claimRef
                // still names it); its annotation is kept, as it always was.
                self.claim_volumes.remove(&claim_key(claim));
            }
            Change::Applied(Object::Volume(volume)) => self.volume_applied(volume),
            Change::Deleted(Object::Volume(volume)) => {
                self.volumes.remove(&volume.name_any());
            }
            Change::Applied(Object::Attachment(attachment)) => {
                self.attachment_applied(attachment, names);
            }
            Change::Deleted(Object::Attachment(attachment)) => {
                self.attachments.remove(&attachment.name_any());
            }
            _ => return,
        }
        let after = self.attached(names);
        for (claim, node) in before.difference(&after) {
            for s in strandings
                .iter_mut()
                .filter(|s| &s.claim == claim && &s.node == node && s.released.is_none())
            {
                s.released = Some(at);
            }
            self.ended.push((at, claim.clone(), node.clone()));
        }
    }

    fn claim_applied(&mut self, claim: &PersistentVolumeClaim, names: &NodeNames) {
        let key = claim_key(claim);
        let spec = claim.spec.as_ref();
        let class = spec.and_then(|s| s.storage_class_name.clone());
        self.claim_classes.insert(key.clone(), class);
        match spec.and_then(|s| s.volume_name.clone()) {
            Some(volume) => self.claim_volumes.insert(key.clone(), volume),
            None => self.claim_volumes.remove(&key),
        };
        let annotated = claim
            .annotations()
            .get(ATTACHED_NODE_ANNOTATION)
            .map(|n| names.drill_name(n));
        match annotated {
            Some(node) => self.claim_annotated.insert(key, node),
            None => self.claim_annotated.remove(&key),
        };
    }

    fn volume_applied(&mut self, volume: &PersistentVolume) {
        let spec = volume.spec.as_ref();
        let claim = spec.and_then(|s| s.claim_ref.as_ref()).and_then(|r| {
            Some(format!(
                "{}/{}",
                r.namespace.as_deref()?,
                r.name.as_deref()?
            ))
        });
        // A claim known only through its volume (deleted, or not listed
        // yet) is judged by the volume's class.
        if let Some(claim) = &claim {
            self.claim_classes
                .entry(claim.clone())
                .or_insert_with(|| spec.and_then(|s| s.storage_class_name.clone()));
        }
        self.volumes.insert(
            volume.name_any(),
            VolumeState {
                claim,
                csi: spec.is_some_and(|s| s.csi.is_some()),
                pinned: pinned_host(volume),
            },
        );
    }

    fn attachment_applied(&mut self, attachment: &VolumeAttachment, names: &NodeNames) {
        let Some(volume) = attachment.spec.source.persistent_volume_name.clone() else {
            // An inline volume belongs to a pod, not to a claim.
            return;
        };
        self.attachments.insert(
            attachment.name_any(),
            AttachmentState {
                volume,
                node: names.drill_name(&attachment.spec.node_name),
                attached: attachment.status.as_ref().is_some_and(|s| s.attached),
            },
        );
    }

    /// Every (claim, node) attachment, read from the three sources in the
    /// module documentation's order.
    fn attached(&self, names: &NodeNames) -> BTreeSet<(String, String)> {
        // PV name -> attached nodes; a PV with only unattached
        // VolumeAttachments maps to none, which still rules out the rest.
        let mut by_volume: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for a in self.attachments.values() {
            let nodes = by_volume.entry(a.volume.as_str()).or_default();
            if a.attached {
                nodes.insert(a.node.as_str());
            }
        }
        let mut volume_of: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, v) in &self.volumes {
            if let Some(claim) = &v.claim {
                volume_of.insert(claim.as_str(), name.as_str());
            }
        }
        for (claim, volume) in &self.claim_volumes {
            volume_of.insert(claim.as_str(), volume.as_str());
        }
        let claims: BTreeSet<&str> = volume_of
            .keys()
            .copied()
            .chain(self.claim_annotated.keys().map(String::as_str))
            .collect();
        let mut out = BTreeSet::new();
        for claim in claims {
            let volume = volume_of.get(claim).copied();
            if let Some(nodes) = volume.and_then(|v| by_volume.get(v)) {
                out.extend(nodes.iter().map(|n| (claim.to_owned(), (*n).to_owned())));
                continue;
            }
            if let Some(state) = volume.and_then(|v| self.volumes.get(v)) {
                if let Some(host) = &state.pinned {
                    out.insert((claim.to_owned(), names.of_host(host)));
                    continue;
                }
                if state.csi {
                    continue;
                }
            }
            if let Some(node) = self.claim_annotated.get(claim) {
                out.insert((claim.to_owned(), node.clone()));
            }
        }
        out
    }

    /// The nodes a claim's volume is attached to.
    #[cfg(test)]
    pub(super) fn attached_to(&self, claim: &str, names: &NodeNames) -> Vec<String> {
        self.attached(names)
            .into_iter()
            .filter(|(c, _)| c == claim)
            .map(|(_, n)| n)
            .collect()
    }

    /// The storage class a claim was last seen with.
    pub(super) fn class(&self, claim: &str) -> Option<String> {
        self.claim_classes.get(claim).cloned().flatten()
    }

    /// Whether the drill calls a claim's class single-attach; a claim of no
    /// known class is of the default class.
    fn single_attach(&self, claim: &str, topology: &Topology) -> bool {
        let class = self.class(claim).or_else(|| {
            topology
                .storage_classes
                .iter()
                .find(|c| c.default)
                .map(|c| c.name.clone())
        });
        class.is_some_and(|class| {
            topology
                .storage_classes
                .iter()
                .any(|c| c.name == class && c.attach == AttachModel::SingleNode)
        })
    }

    /// Strands on a node deleted at `at` every claim of a single-attach
    /// class still attached to it until its attachment is released; one
    /// whose attachment ended in this very instant is stranded and released
    /// at once. A claim already stranded there is not stranded twice.
    pub(super) fn strand(
        &self,
        at: Time,
        node: &str,
        names: &NodeNames,
        topology: &Topology,
        strandings: &mut Vec<Stranding>,
    ) {
        let mut stranded: BTreeMap<String, Option<Time>> = self
            .attached(names)
            .into_iter()
            .filter(|(_, n)| n == node)
            .map(|(c, _)| (c, None))
            .collect();
        for (when, claim, ended_on) in &self.ended {
            if *when == at && ended_on == node {
                stranded.entry(claim.clone()).or_insert(Some(at));
            }
        }
        for (claim, released) in stranded {
            let open = strandings
                .iter()
                .any(|s| s.claim == claim && s.node == node && s.released.is_none());
            if self.single_attach(&claim, topology) && !open {
                strandings.push(Stranding {
                    claim,
                    node: node.to_owned(),
                    since: at,
                    released,
                });
            }
        }
    }

    /// Closes an instant: attachments that ended in it no longer count as
    /// ending with a node deleted later.
    pub(super) fn settle(&mut self) {
        self.ended.clear();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn claim(name: &str, class: &str, volume: Option<&str>, selected: Option<&str>) -> Change {
        let annotations = selected.map(|n| json!({ATTACHED_NODE_ANNOTATION: n}));
        Change::Applied(Object::Claim(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "apps", "annotations": annotations},
                "spec": {"storageClassName": class, "volumeName": volume},
            }))
            .expect("claim"),
        )))
    }

    fn pinned(terms: serde_json::Value) -> PersistentVolume {
        serde_json::from_value(json!({
            "metadata": {"name": "pv"},
            "spec": {"nodeAffinity": {"required": {"nodeSelectorTerms": terms}}},
        }))
        .expect("volume")
    }

    fn host_in(hosts: &[&str]) -> serde_json::Value {
        json!({"matchExpressions": [{"key": HOSTNAME_LABEL, "operator": "In", "values": hosts}]})
    }

    #[test]
    fn a_volume_is_pinned_only_when_every_term_names_the_same_single_host() {
        assert_eq!(
            pinned_host(&pinned(json!([host_in(&["a"]), host_in(&["a"])]))),
            Some("a".to_owned())
        );
        assert_eq!(
            pinned_host(&pinned(json!([host_in(&["a"]), host_in(&["b"])]))),
            None
        );
        assert_eq!(pinned_host(&pinned(json!([host_in(&["a", "b"])]))), None);
        assert_eq!(
            pinned_host(&pinned(json!([{"matchExpressions": [
                {"key": HOSTNAME_LABEL, "operator": "NotIn", "values": ["a"]}
            ]}]))),
            None
        );
        assert_eq!(pinned_host(&pinned(json!([]))), None);
    }

    #[test]
    fn the_annotation_is_read_as_a_drill_name_and_only_where_nothing_else_says() {
        let mut names = NodeNames::default();
        names.learn(
            "r1-worker",
            &BTreeMap::from([(
                drillbench_model::labels::NODE_LABEL.to_owned(),
                "prod-worker-1".to_owned(),
            )]),
        );
        let mut volumes = Volumes::default();
        volumes.take(
            0,
            &claim("data", "hcloud", None, Some("r1-worker")),
            &names,
            &mut [],
        );
        assert_eq!(volumes.attached_to("apps/data", &names), ["prod-worker-1"]);
        assert_eq!(volumes.class("apps/data").as_deref(), Some("hcloud"));
        // A CSI volume with no VolumeAttachment is attached nowhere.
        volumes.take(
            1,
            &claim("data", "hcloud", Some("pv-1"), Some("r1-worker")),
            &names,
            &mut [],
        );
        let csi: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": "pv-1"},
            "spec": {"csi": {"driver": "d", "volumeHandle": "h"}},
        }))
        .expect("volume");
        volumes.take(
            1,
            &Change::Applied(Object::Volume(Box::new(csi))),
            &names,
            &mut [],
        );
        assert!(volumes.attached_to("apps/data", &names).is_empty());
    }

    #[test]
    fn a_released_attachment_releases_its_open_stranding_and_only_that() {
        let names = NodeNames::default();
        let mut volumes = Volumes::default();
        volumes.take(0, &claim("a", "hcloud", None, Some("n1")), &names, &mut []);
        let mut strandings = vec![
            Stranding {
                claim: "apps/a".to_owned(),
                node: "n1".to_owned(),
                since: 0,
                released: None,
            },
            Stranding {
                claim: "apps/a".to_owned(),
                node: "n2".to_owned(),
                since: 0,
                released: None,
            },
        ];
        volumes.take(
            5,
            &claim("a", "hcloud", None, Some("n2")),
            &names,
            &mut strandings,
        );
        assert_eq!(strandings[0].released, Some(5));
        assert_eq!(strandings[1].released, None, "still attached to n2");
        // Ended in this instant: a deletion of n1 now strands and releases.
        let topology = super::super::tests::drill().topology;
        let mut fresh = Vec::new();
        volumes.strand(5, "n1", &names, &topology, &mut fresh);
        assert_eq!(fresh.len(), 1);
        assert_eq!(fresh[0].released, Some(5));
        // Once the instant is settled the ended attachment is forgotten.
        volumes.settle();
        let mut later = Vec::new();
        volumes.strand(5, "n1", &names, &topology, &mut later);
        assert!(later.is_empty());
    }

    #[test]
    fn a_claim_is_judged_by_its_class_else_its_volumes_else_the_default() {
        // node-loss: `hcloud` is single-attach, the default `longhorn` is not.
        let topology = super::super::tests::drill().topology;
        let names = NodeNames::default();
        let mut volumes = Volumes::default();
        let classless: Change = Change::Applied(Object::Claim(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "c", "namespace": "apps",
                             "annotations": {ATTACHED_NODE_ANNOTATION: "n1"}},
                "spec": {},
            }))
            .expect("claim"),
        )));
        volumes.take(0, &classless, &names, &mut []);
        // A claim never seen, known through its volume's claimRef.
        let volume: PersistentVolume = serde_json::from_value(json!({
            "metadata": {"name": "pv-2"},
            "spec": {"claimRef": {"namespace": "apps", "name": "v"},
                     "storageClassName": "hcloud"},
        }))
        .expect("volume");
        volumes.take(
            0,
            &Change::Applied(Object::Volume(Box::new(volume))),
            &names,
            &mut [],
        );
        let attachment: VolumeAttachment = serde_json::from_value(json!({
            "metadata": {"name": "va"},
            "spec": {"attacher": "d", "nodeName": "n1",
                     "source": {"persistentVolumeName": "pv-2"}},
            "status": {"attached": true},
        }))
        .expect("attachment");
        volumes.take(
            0,
            &Change::Applied(Object::Attachment(Box::new(attachment))),
            &names,
            &mut [],
        );
        assert_eq!(volumes.attached_to("apps/c", &names), ["n1"]);
        assert_eq!(volumes.attached_to("apps/v", &names), ["n1"]);
        let mut strandings = Vec::new();
        volumes.strand(9, "n1", &names, &topology, &mut strandings);
        let stranded: Vec<&str> = strandings.iter().map(|s| s.claim.as_str()).collect();
        assert_eq!(stranded, ["apps/v"]);
        // Stranding again on the same node while it is open adds nothing.
        volumes.strand(10, "n1", &names, &topology, &mut strandings);
        assert_eq!(strandings.len(), 1);
    }
}
