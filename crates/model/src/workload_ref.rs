//! `namespace/Kind/name`: how a drill names a workload
//! (`apps/Deployment/api`), and the key under which every backend files a
//! workload's readiness. One type builds and reads the key, so the drill's
//! checks, the simulator, the façade and the kube layer agree on it.

use std::fmt;

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct WorkloadRef {
    pub namespace: String,
    pub kind: String,
    pub name: String,
}

impl WorkloadRef {
    pub fn new(namespace: &str, kind: &str, name: &str) -> WorkloadRef {
        WorkloadRef {
            namespace: namespace.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The reference of a manifest object; one that names no namespace is
    /// in `default`, as the API server places it.
    pub fn of_object(object: &serde_json::Value) -> WorkloadRef {
        let field = |pointer: &str| {
            object
                .pointer(pointer)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
        };
        let namespace = match field("/metadata/namespace") {
            "" => "default",
            ns => ns,
        };
        WorkloadRef::new(namespace, field("/kind"), field("/metadata/name"))
    }

    /// Reads a key. Anything after the second `/` is the name, slashes and
    /// all; fewer than three parts is no reference.
    pub fn parse(key: &str) -> Option<WorkloadRef> {
        let mut parts = key.splitn(3, '/');
        Some(WorkloadRef::new(
            parts.next()?,
            parts.next()?,
            parts.next()?,
        ))
    }
}

impl fmt::Display for WorkloadRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.namespace, self.kind, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_splits_in_three_and_the_name_keeps_its_slashes() {
        let api = WorkloadRef::parse("apps/Deployment/api").unwrap();
        assert_eq!(api, WorkloadRef::new("apps", "Deployment", "api"));
        assert_eq!(api.to_string(), "apps/Deployment/api");
        assert_eq!(WorkloadRef::parse("a/B/c/d").unwrap().name, "c/d");
        assert_eq!(WorkloadRef::parse("apps/Deployment"), None);
    }

    #[test]
    fn an_object_without_a_namespace_is_in_default() {
        let object = serde_json::json!({"kind": "Job", "metadata": {"name": "backup"}});
        assert_eq!(
            WorkloadRef::of_object(&object).to_string(),
            "default/Job/backup"
        );
        let object =
            serde_json::json!({"kind": "Job", "metadata": {"name": "b", "namespace": "ops"}});
        assert_eq!(WorkloadRef::of_object(&object).to_string(), "ops/Job/b");
    }
}
