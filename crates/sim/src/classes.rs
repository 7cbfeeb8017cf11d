//! Scheduling classes: nodes that differ only in name are interchangeable
//! to every filter but the per-node ones, so what a pod template makes of
//! a node's labels and taints is judged once per class.
//!
//! A class is its pool, its labels but the hostname, its taints and its
//! allocatable resources. A class never changes: a node whose labels or
//! taints change moves to another class (created when it is the first of
//! its kind), so a verdict kept per class never goes stale.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// What one pod template makes of one node class.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClassView {
    /// The class's labels pass nodeSelector and required node affinity.
    pub(super) fits: bool,
    /// The class's own taints are tolerated (NoSchedule, NoExecute).
    pub(super) tolerated: bool,
    /// Sum of the weights of the preferred terms the class matches.
    pub(super) preferred: i64,
    /// Untolerated PreferNoSchedule taints of the class.
    pub(super) intolerable: usize,
}

/// Scheduling equivalence class: nodes that differ only in name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct ClassKey {
    pool: String,
    labels: Vec<(String, String)>,
    taints: Vec<(String, String, String)>,
    allocatable: (i64, i64),
}

/// The classes met so far, numbered in the order they appeared.
#[derive(Debug, Clone, Default)]
pub(crate) struct Classes {
    keys: Vec<ClassKey>,
    index: BTreeMap<ClassKey, usize>,
    /// Each class as a Node object (its labels and taints, no name): what
    /// the scheduler judges a class by.
    objects: Vec<Node>,
}

impl Classes {
    /// The class of a node of `pool` shaped as `object` (its labels and
    /// taints), with (CPU, memory) allocatable; created when it is the
    /// first of its kind.
    pub(crate) fn class_for(
        &mut self,
        pool: &str,
        object: &Node,
        allocatable: (i64, i64),
    ) -> usize {
        let labels: BTreeMap<String, String> = object
            .metadata
            .labels
            .iter()
            .flatten()
            .filter(|(k, _)| k.as_str() != "kubernetes.io/hostname")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let taints = object
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[]);
        let key = ClassKey {
            pool: pool.to_owned(),
            labels: labels.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            taints: taints
                .iter()
                .map(|t| {
                    (
                        t.key.clone(),
                        t.value.clone().unwrap_or_default(),
                        t.effect.clone(),
                    )
                })
                .collect(),
            allocatable,
        };
        if let Some(&class) = self.index.get(&key) {
            return class;
        }
        let class = self.keys.len();
        self.keys.push(key.clone());
        self.index.insert(key, class);
        self.objects.push(Node {
            metadata: ObjectMeta {
                labels: Some(labels),
                ..Default::default()
            },
            spec: object.spec.clone(),
            status: None,
        });
        class
    }

    /// Every class as a Node object, by class number.
    pub(crate) fn objects(&self) -> &[Node] {
        &self.objects
    }

    /// The taints of a class.
    pub(crate) fn taints(&self, class: usize) -> &[k8s_openapi::api::core::v1::Taint] {
        self.objects[class]
            .spec
            .as_ref()
            .and_then(|s| s.taints.as_deref())
            .unwrap_or(&[])
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{NodeSpec, Taint};

    use super::*;

    fn node(name: &str, labels: &[(&str, &str)], taints: &[(&str, &str)]) -> Node {
        let mut labels: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        labels.insert("kubernetes.io/hostname".to_owned(), name.to_owned());
        Node {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: Some(labels),
                ..Default::default()
            },
            spec: Some(NodeSpec {
                taints: Some(
                    taints
                        .iter()
                        .map(|(key, effect)| Taint {
                            key: (*key).to_owned(),
                            effect: (*effect).to_owned(),
                            ..Default::default()
                        })
                        .collect(),
                ),
                ..Default::default()
            }),
            status: None,
        }
    }

    #[test]
    fn nodes_that_differ_only_in_name_share_a_class() {
        let mut classes = Classes::default();
        let a = classes.class_for("p", &node("a", &[("tier", "x")], &[]), (1000, 1));
        let b = classes.class_for("p", &node("b", &[("tier", "x")], &[]), (1000, 1));
        assert_eq!(a, b);
        assert_eq!(classes.objects().len(), 1);
        let labels = classes.objects()[a]
            .metadata
            .labels
            .clone()
            .unwrap_or_default();
        assert!(
            !labels.contains_key("kubernetes.io/hostname"),
            "a class has no hostname"
        );
        assert_eq!(labels.get("tier").map(String::as_str), Some("x"));
    }

    #[test]
    fn pool_labels_taints_and_capacity_each_make_another_class() {
        let mut classes = Classes::default();
        let base = classes.class_for("p", &node("a", &[("tier", "x")], &[]), (1000, 1));
        let others = [
            classes.class_for("q", &node("a", &[("tier", "x")], &[]), (1000, 1)),
            classes.class_for("p", &node("a", &[("tier", "y")], &[]), (1000, 1)),
            classes.class_for(
                "p",
                &node("a", &[("tier", "x")], &[("k", "NoSchedule")]),
                (1000, 1),
            ),
            classes.class_for("p", &node("a", &[("tier", "x")], &[]), (2000, 1)),
        ];
        let mut all = vec![base];
        all.extend(others);
        all.sort_unstable();
        all.dedup();
        assert_eq!(
            all,
            [0, 1, 2, 3, 4],
            "five distinct classes, numbered in order"
        );
        assert_eq!(classes.taints(others[2])[0].key, "k");
        assert!(classes.taints(base).is_empty());
    }

    #[test]
    fn a_relabelled_node_moves_to_another_class_and_back() {
        let mut classes = Classes::default();
        let before = classes.class_for("p", &node("a", &[("tier", "x")], &[]), (1000, 1));
        let after = classes.class_for("p", &node("a", &[("tier", "y")], &[]), (1000, 1));
        assert_ne!(before, after);
        let again = classes.class_for("p", &node("a", &[("tier", "x")], &[]), (1000, 1));
        assert_eq!(again, before, "the old class is still there, unchanged");
    }
}
