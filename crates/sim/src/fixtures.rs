//! Objects for the parts' unit tests: templates compiled by the loader
//! from small manifests, and nodes, workloads and pods built around them.

use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Value, json};

use super::load::{self, Loaded};
use super::world::{
    ClaimId, Owner, PodPhase, Resources, SimNode, SimPod, Template, Workload, WorkloadKind,
};
use drillbench_model::manifest::Document;

/// What the loader makes of these manifests.
pub(super) fn loaded(values: Vec<Value>) -> Loaded {
    let documents: Vec<Document> = values
        .into_iter()
        .enumerate()
        .map(|(index, value)| Document {
            source: "<test>".to_owned(),
            index,
            line: 1,
            column: 1,
            value,
        })
        .collect();
    load::load(&documents, &[], None, &Default::default()).expect("loads")
}

/// The template of a bare pod labelled `app`, requesting 100m and 1Gi,
/// with `spec` merged into its pod spec.
pub(super) fn template_with(app: &str, spec: Value) -> Rc<Template> {
    loaded(vec![bare_pod(app, spec)])
        .workloads
        .remove(0)
        .template
}

/// [`template_with`], in a PriorityClass of value `priority`.
pub(super) fn template_of_priority(app: &str, priority: i32, mut spec: Value) -> Rc<Template> {
    let class = format!("priority-{priority}");
    if let Value::Object(spec) = &mut spec {
        spec.insert("priorityClassName".to_owned(), json!(class));
    }
    let class = json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": class}, "value": priority
    });
    loaded(vec![class, bare_pod(app, spec)])
        .workloads
        .remove(0)
        .template
}

fn bare_pod(app: &str, spec: Value) -> Value {
    let mut pod_spec = json!({"containers": [{"name": "c", "image": "i",
        "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}]});
    if let (Some(into), Value::Object(extra)) = (pod_spec.as_object_mut(), spec) {
        into.extend(extra);
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": app, "namespace": "ns", "labels": {"app": app}},
        "spec": pod_spec
    })
}

/// The template of a bare pod labelled `app`, requesting 100m and 1Gi.
pub(super) fn template(app: &str) -> Rc<Template> {
    template_with(app, json!({}))
}

/// A node of pool `p` with 1 CPU, 4 GiB and 10 pods, Booting.
pub(super) fn node(name: &str) -> SimNode {
    let capacity = (
        Resources {
            cpu: 1000,
            memory: 4 << 30,
        },
        10,
    );
    SimNode::new(name, "p", false, BTreeMap::new(), Vec::new(), capacity)
}

/// A workload `ns/Kind/name` of one replica.
pub(super) fn workload(name: &str, kind: WorkloadKind, template: Rc<Template>) -> Workload {
    Workload {
        key: format!("ns/Kind/{name}"),
        namespace: "ns".to_owned(),
        name: name.to_owned(),
        kind,
        replicas: 1,
        template,
        pods: Vec::new(),
        next_suffix: 0,
        succeeded: 0,
        strategy: Default::default(),
        cron: None,
        revisions: Vec::new(),
    }
}

/// A pending pod in namespace `ns`, created at time zero.
pub(super) fn pod(
    name: &str,
    owner: Owner,
    template: Rc<Template>,
    claims: Vec<ClaimId>,
) -> SimPod {
    SimPod {
        namespace: "ns".to_owned(),
        name: name.to_owned(),
        owner,
        template,
        claims,
        node: None,
        phase: PodPhase::Pending,
        created_at: 0,
        ready_at: 0,
        unschedulable_reported: false,
        deleted_at: None,
        holds_resources: false,
        nominated: None,
    }
}
