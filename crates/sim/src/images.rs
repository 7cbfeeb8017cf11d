//! Which container images each node has, and when a pull in progress ends.
//!
//! The kubelet pulls an image once per node and keeps it; by default it
//! pulls one image at a time (`serializeImagePulls: true`), so a pull waits
//! for the node's pulls before it. A pod started on a node whose images are
//! there, or being pulled for another pod, waits only as long as they take.
//! The nodes a drill starts with are a running cluster's: their pods'
//! images are already there.

use std::collections::BTreeMap;

use super::clock::Time;
use super::world::NodeId;

#[derive(Debug, Clone, Default)]
struct NodeImages {
    /// Each image and when it is (or will be) on the node.
    present_at: BTreeMap<String, Time>,
    /// When the node's last queued pull ends.
    puller_free_at: Time,
}

/// Each node's images.
#[derive(Debug, Clone, Default)]
pub(crate) struct Images {
    nodes: BTreeMap<NodeId, NodeImages>,
    /// While the starting cluster is built, images count as already pulled.
    warm: bool,
}

impl Images {
    /// A cache in which the images of the pods started until
    /// [`Images::end_warm_start`] are already on their nodes.
    pub(crate) fn warm() -> Self {
        Images {
            nodes: BTreeMap::new(),
            warm: true,
        }
    }

    /// From now on a missing image is pulled.
    pub(crate) fn end_warm_start(&mut self) {
        self.warm = false;
    }

    /// When all of `images` are on `node`, pulling those it lacks one after
    /// the other behind its queued pulls; `pull` draws how long one takes,
    /// in milliseconds, and is called once per image pulled, in order.
    pub(crate) fn ready_at(
        &mut self,
        node: NodeId,
        images: &[String],
        now: Time,
        mut pull: impl FnMut() -> u64,
    ) -> Time {
        let warm = self.warm;
        let cache = self.nodes.entry(node).or_default();
        let mut ready = now;
        for image in images {
            let at = match cache.present_at.get(image) {
                Some(&at) => at,
                None if warm => {
                    cache.present_at.insert(image.clone(), now);
                    now
                }
                None => {
                    let done = cache.puller_free_at.max(now) + pull();
                    cache.puller_free_at = done;
                    cache.present_at.insert(image.clone(), done);
                    done
                }
            };
            ready = ready.max(at);
        }
        ready
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn imgs(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn an_image_is_pulled_once_per_node_and_pulls_queue() {
        let mut images = Images::warm();
        images.end_warm_start();
        let mut pulls = 0;
        let mut pull = || {
            pulls += 1;
            1_000
        };
        // Two images on a fresh node: one after the other.
        assert_eq!(images.ready_at(0, &imgs(&["a", "b"]), 10, &mut pull), 2_010);
        // Another pod wanting `a` waits for nothing more than its pull.
        assert_eq!(images.ready_at(0, &imgs(&["a"]), 20, &mut pull), 1_010);
        // A new image queues behind `b`.
        assert_eq!(images.ready_at(0, &imgs(&["c"]), 20, &mut pull), 3_010);
        // Control: another node has none of them.
        assert_eq!(images.ready_at(1, &imgs(&["a"]), 20, &mut pull), 1_020);
        assert_eq!(pulls, 4);
    }

    #[test]
    fn the_starting_cluster_has_its_images_and_later_nodes_do_not() {
        let mut images = Images::warm();
        let mut pull = || 5_000;
        assert_eq!(images.ready_at(0, &imgs(&["a"]), 0, &mut pull), 0);
        images.end_warm_start();
        assert_eq!(images.ready_at(0, &imgs(&["a"]), 7, &mut pull), 7);
        assert_eq!(images.ready_at(2, &imgs(&["a"]), 7, &mut pull), 5_007);
    }
}
