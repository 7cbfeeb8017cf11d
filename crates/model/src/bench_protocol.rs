//! The `/bench/v1` control protocol of a served simulator: its paths, the
//! bodies it takes and the answers it gives, as JSON on the wire.
//!
//! `bench sim serve` answers it (`drillbench-serve`) and the bench's backends
//! speak it (`drillbench_backend::bench_api`); the stand-in CLIs of the test
//! harness call it with curl. One set of types keeps the three in step:
//! renaming a field here renames it on both ends, and a shape the server
//! does not send cannot be read by the client.
//!
//! Resource versions are strings on the wire, as Kubernetes gives them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Where every bench endpoint lives.
pub const PREFIX: &str = "/bench/v1";

/// The path of a bench endpoint, with its query (already encoded).
pub fn path(endpoint: &str, query: &str) -> String {
    if query.is_empty() {
        format!("{PREFIX}/{endpoint}")
    } else {
        format!("{PREFIX}/{endpoint}?{query}")
    }
}

/// `GET /bench/v1/now`: the served simulator's clock and what a client
/// needs to step it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Now {
    /// Simulated time, in milliseconds since the drill's cluster began.
    pub now_ms: u64,
    /// The newest change's resourceVersion.
    pub resource_version: String,
    /// When the simulation next changes on its own, if it ever does.
    pub next_ms: Option<u64>,
    /// The epoch second simulated time zero stands for.
    pub epoch_seconds: i64,
    /// The drill being served.
    pub drill: String,
    /// Whether time moves only through `POST /bench/v1/advance`.
    pub step: bool,
    /// The newest resourceVersion of each kind, so a client knows when its
    /// watches have caught up.
    pub latest: BTreeMap<String, String>,
    /// The control plane holding the stable endpoint.
    pub endpoint_holder: Option<String>,
    /// A healthy control plane other than the holder.
    pub other_control_plane: Option<String>,
}

/// `POST /bench/v1/advance?by=D` or `?to=D`: the clock after the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Advanced {
    /// Simulated time after the step.
    pub now_ms: u64,
    /// The newest change's resourceVersion.
    pub resource_version: String,
}

/// What a bench endpoint does to one node's server (`?node=NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeOperation {
    /// `POST /bench/v1/crash`: the server stops, its Node stays.
    Crash,
    /// `POST /bench/v1/remove`: the server goes for good; the Node object
    /// is the caller's to delete.
    Remove,
    /// `POST /bench/v1/replace`: a lost static node is provisioned again.
    Replace,
    /// `POST /bench/v1/recreate-control-plane`: removed from etcd, deleted,
    /// booted again.
    RecreateControlPlane,
}

impl NodeOperation {
    /// Every operation, for the server's routing.
    pub const ALL: [NodeOperation; 4] = [
        NodeOperation::Crash,
        NodeOperation::Remove,
        NodeOperation::Replace,
        NodeOperation::RecreateControlPlane,
    ];

    /// The operation of an endpoint's name.
    pub fn named(endpoint: &str) -> Option<NodeOperation> {
        Self::ALL.into_iter().find(|o| o.endpoint() == endpoint)
    }

    /// The endpoint's name under [`PREFIX`].
    pub fn endpoint(self) -> &'static str {
        match self {
            NodeOperation::Crash => "crash",
            NodeOperation::Remove => "remove",
            NodeOperation::Replace => "replace",
            NodeOperation::RecreateControlPlane => "recreate-control-plane",
        }
    }

    /// The key naming the node in the answer.
    fn done(self) -> &'static str {
        match self {
            NodeOperation::Crash => "crashed",
            NodeOperation::Remove => "removed",
            NodeOperation::Replace => "replaced",
            NodeOperation::RecreateControlPlane => "recreated",
        }
    }
}

/// The answer of a [`NodeOperation`]: `{"<done>": NAME, "nowMs": T}`, the
/// key saying what was done (`crashed`, `removed`, `replaced`,
/// `recreated`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeDone {
    /// What was done.
    pub operation: NodeOperation,
    pub node: String,
    /// Simulated time after it.
    pub now_ms: u64,
}

impl Serialize for NodeDone {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry(self.operation.done(), &self.node)?;
        map.serialize_entry("nowMs", &self.now_ms)?;
        map.end()
    }
}

/// `POST /bench/v1/fail-backup?schedule=S`: the backup that failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BackupFailed {
    /// The backup's name.
    pub failed: String,
}

/// `GET /bench/v1/etcd` (503 without quorum, as etcd's member list needs
/// quorum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EtcdMembers {
    /// Voting members.
    pub voters: u32,
    pub learners: u32,
}

/// `GET /bench/v1/autoscaler-pick?pool=P`: the node the simulator's
/// cluster autoscaler would remove next from the pool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoscalerPick {
    /// The node, if any would go.
    pub node: Option<String>,
}

/// The body of `POST /bench/v1/reset?seed=N`: the served drill provisioned
/// again from nothing with these guards and seed. An empty body keeps the
/// drill's own guards and workloads.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reset {
    /// The guards as text: their positions make them YAML-shaped (JSON is
    /// YAML).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<String>,
    /// The guards given an extra unlabelled OR term: the one ablation the
    /// guards' serialised form leaves out.
    #[serde(default)]
    pub unlabelled_terms: Vec<String>,
    /// `false`: the drill's nodes only, an empty cluster as kind and Talos
    /// create one, for the bench to apply the workloads to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workloads: Option<bool>,
    /// The drill's Kyverno policies as admission is to run them (a policy
    /// guard's ablation removes or patches one); absent: the drill's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policies: Option<Vec<serde_json::Value>>,
}

/// The answer of `POST /bench/v1/reset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResetDone {
    /// The drill provisioned again.
    pub reset: String,
    pub seed: u64,
    /// The newest change's resourceVersion (they continue across a reset).
    pub resource_version: String,
}

/// What an error answer says: the `message` of its Kubernetes `Status`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Refusal {
    /// Why, for a person.
    #[serde(default)]
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_answer_names_what_was_done() {
        let done = NodeDone {
            operation: NodeOperation::RecreateControlPlane,
            node: "cp-1".to_owned(),
            now_ms: 5,
        };
        assert_eq!(
            serde_json::to_string(&done).expect("json"),
            r#"{"recreated":"cp-1","nowMs":5}"#
        );
    }

    #[test]
    fn a_reset_reads_what_the_stand_in_clis_post() {
        let reset = Reset {
            guards: Some("[]".to_owned()),
            ..Reset::default()
        };
        assert_eq!(
            serde_json::to_string(&reset).expect("json"),
            r#"{"guards":"[]","unlabelledTerms":[]}"#
        );
        // What the harness's stand-in CLIs post.
        let posted: Reset =
            serde_json::from_str(r#"{"guards": "[]", "workloads": false}"#).expect("a reset");
        assert_eq!(posted.workloads, Some(false));
    }
}
