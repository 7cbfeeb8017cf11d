//! The objects a drill deployed but the bench does not simulate, grouped by
//! kind. A rendered platform holds hundreds (HelmReleases, Flux sources,
//! policies, operator resources): one line per kind with a count and the
//! first names reads at a glance, where one line of 454 names does not.

use std::collections::BTreeMap;

use drillbench_observe::ObjectRef;

/// Most names shown for one kind; the rest are counted.
pub const NAMES_PER_KIND: usize = 8;

/// One kind's objects, in the order they were deployed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KindGroup<'a> {
    pub kind: &'a str,
    pub objects: Vec<&'a ObjectRef>,
}

impl KindGroup<'_> {
    /// The first [`NAMES_PER_KIND`] names (`namespace/name`, or `name` for
    /// cluster-scoped objects) and how many more there are.
    pub fn names(&self) -> (Vec<String>, usize) {
        let names = self
            .objects
            .iter()
            .take(NAMES_PER_KIND)
            .map(|o| {
                if o.namespace.is_empty() {
                    o.name.clone()
                } else {
                    format!("{}/{}", o.namespace, o.name)
                }
            })
            .collect();
        (names, self.objects.len().saturating_sub(NAMES_PER_KIND))
    }
}

/// The section's title: how many objects of how many kinds.
pub fn heading(objects: usize, kinds: usize) -> String {
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    format!(
        "Not simulated ({} of {})",
        plural(objects, "object"),
        plural(kinds, "kind")
    )
}

/// The objects grouped by kind, the largest group first (kinds of equal
/// size by name), so the report's order depends only on its content.
pub fn by_kind(objects: &[ObjectRef]) -> Vec<KindGroup<'_>> {
    let mut groups: BTreeMap<&str, Vec<&ObjectRef>> = BTreeMap::new();
    for object in objects {
        groups.entry(object.kind.as_str()).or_default().push(object);
    }
    let mut groups: Vec<KindGroup<'_>> = groups
        .into_iter()
        .map(|(kind, objects)| KindGroup { kind, objects })
        .collect();
    groups.sort_by(|a, b| {
        b.objects
            .len()
            .cmp(&a.objects.len())
            .then(a.kind.cmp(b.kind))
    });
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(kind: &str, namespace: &str, name: &str) -> ObjectRef {
        ObjectRef {
            kind: kind.to_owned(),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    #[test]
    fn groups_by_kind_largest_first_and_counts_what_is_not_named() {
        let mut objects = vec![object("ClusterPolicy", "", "p0")];
        for n in 0..10 {
            objects.push(object("HelmRelease", "apps", &format!("r{n}")));
        }
        objects.push(object("Coroot", "observability", "coroot"));
        let groups = by_kind(&objects);
        let kinds: Vec<_> = groups.iter().map(|g| (g.kind, g.objects.len())).collect();
        assert_eq!(
            kinds,
            [("HelmRelease", 10), ("ClusterPolicy", 1), ("Coroot", 1)]
        );
        let (names, more) = groups[0].names();
        assert_eq!(names.len(), NAMES_PER_KIND);
        assert_eq!(names[0], "apps/r0");
        assert_eq!(more, 2);
        assert_eq!(groups[1].names(), (vec!["p0".to_owned()], 0));
        assert_eq!(heading(12, 3), "Not simulated (12 objects of 3 kinds)");
        assert_eq!(heading(1, 1), "Not simulated (1 object of 1 kind)");
    }
}
