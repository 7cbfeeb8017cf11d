//! Admission answers remembered within a process.
//!
//! A sweep runs one drill for thousands of seeds, and every run (and every
//! negative control's re-run) submits the same pod templates to the same
//! Kyverno policies over the same manifests. Kyverno's evaluation is a pure
//! function of those inputs, so each answer is computed once and looked up
//! after. The key is the inputs' content, never an address: a weakened
//! drill whose policy is patched has another digest and is judged afresh.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use drillbench_kyverno::Policy;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::kyverno_admission::{self, ManifestCluster, PodAdmission};

/// SHA-256 over content admission reads: two equal digests stand for the
/// same policies, or the same cluster objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The digest of JSON values, in order.
    pub fn of_values<'a>(values: impl IntoIterator<Item = &'a Value>) -> Digest {
        Digest::default().then(values, "")
    }

    /// This digest extended by more values and a note (what else the
    /// content depends on, such as the default storage class).
    pub fn then<'a>(&self, values: impl IntoIterator<Item = &'a Value>, note: &str) -> Digest {
        let mut hasher = Sha256::new();
        hasher.update(self.0);
        hasher.update(note.len().to_le_bytes());
        hasher.update(note);
        for value in values {
            // Length-prefixed, so no two sequences serialise alike.
            let bytes = serde_json::to_vec(value).unwrap_or_default();
            hasher.update(bytes.len().to_le_bytes());
            hasher.update(bytes);
        }
        Digest(hasher.finalize().into())
    }
}

/// Enough for every template of a large drill and its weakened variants;
/// past it the memo starts over rather than grow.
const CAPACITY: usize = 4096;

type Key = (Digest, Digest, String, String);

static MEMO: Mutex<BTreeMap<Key, PodAdmission>> = Mutex::new(BTreeMap::new());

/// [`kyverno_admission::admit_pod`], answered from the memo when the same
/// pod was submitted by the same kind of controller to the same policies
/// (`policies_digest` is theirs) over the same cluster objects.
pub fn admit_pod(
    policies: &[Policy],
    policies_digest: Digest,
    cluster: &ManifestCluster,
    kind: &str,
    pod: Value,
) -> PodAdmission {
    let key = (
        policies_digest,
        cluster.digest(),
        kind.to_owned(),
        pod.to_string(),
    );
    // A panic elsewhere cannot leave an entry half-written: an insert is
    // one call, so a poisoned memo is still a sound one.
    if let Some(known) = MEMO
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&key)
    {
        return known.clone();
    }
    let judged = kyverno_admission::admit_pod(policies, cluster, kind, pod);
    let mut memo = MEMO.lock().unwrap_or_else(PoisonError::into_inner);
    if memo.len() >= CAPACITY {
        memo.clear();
    }
    memo.insert(key, judged.clone());
    judged
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_model::manifest::Document;
    use serde_json::json;

    fn document(value: Value) -> Document {
        Document {
            source: "test.yaml".to_owned(),
            index: 0,
            line: 1,
            column: 1,
            value,
        }
    }

    fn policy(label: &str) -> Value {
        json!({
            "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "label"},
            "spec": {"rules": [{
                "name": "add", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "mutate": {"patchStrategicMerge": {"metadata": {"labels": {"tier": label}}}}
            }]}
        })
    }

    fn admitted(policy_value: Value) -> Value {
        let docs = [document(policy_value)];
        let policies = kyverno_admission::read_policies(&docs).expect("reads");
        let digest = Digest::of_values(docs.iter().map(|d| &d.value));
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web-00000", "namespace": "apps"},
            "spec": {"containers": [{"name": "c", "image": "pause"}]}});
        let cluster = ManifestCluster::new(&[], None);
        admit_pod(&policies, digest, &cluster, "Deployment", pod).pod
    }

    #[test]
    fn a_changed_policy_is_judged_afresh_not_answered_from_the_memo() {
        assert_eq!(
            admitted(policy("front"))["metadata"]["labels"]["tier"],
            "front"
        );
        assert_eq!(
            admitted(policy("back"))["metadata"]["labels"]["tier"],
            "back"
        );
        assert_eq!(
            admitted(policy("front"))["metadata"]["labels"]["tier"],
            "front"
        );
    }

    #[test]
    fn digests_tell_apart_what_concatenation_would_not() {
        let (a, b, ab) = (json!("a"), json!("b"), json!("ab"));
        assert_ne!(Digest::of_values([&a, &b]), Digest::of_values([&ab]),);
        assert_ne!(
            Digest::default().then([&a], "x"),
            Digest::default().then([&a], "y")
        );
        assert_eq!(Digest::of_values([&a, &b]), Digest::of_values([&a, &b]));
    }
}
