//! `workloads: [{fromCluster: …}]`: a drill whose workloads are the ones
//! already running on the cluster of `--backend kubeconfig`, as the
//! platform's own tooling (Flux, Helm, operators) put them there.
//!
//! Until a run reads the cluster, a reference into the namespaces the drill
//! takes from it (a workload to scale or wait for, a namespace to restore)
//! cannot be checked, so `bench validate` takes it on trust. When the run
//! starts, the objects are read (get and list only, as `bench snapshot`
//! reads them) and the drill is built again with them, so every reference
//! is then checked before anything runs: a workload the cluster does not
//! have is bad input, never a drill that waits for nothing.
//!
//! The objects are the drill's workloads in every way but one: the bench
//! never applies them, since they are the platform's and already there.
//! A negative control that would change one (a workload pinned, a guard
//! written into it) cannot run on such a cluster; see
//! [`Drill::changed_cluster_object`].

use crate::drill::Drill;
use crate::manifest::Document;
use crate::scenario::Diagnostics;
use crate::scenario::spec::{DrillSpec, FromCluster, WorkloadSource};
use crate::snapshot::ClusterSnapshot;
use crate::snapshot_workloads::{self, UnsimulatedPod};
use crate::workload_ref::WorkloadRef;

/// The objects a `fromCluster` drill read from its cluster.
#[derive(Debug, Clone, Default)]
pub struct ClusterWorkloads {
    /// The kubeconfig context they were read through (the server's URL
    /// when the kubeconfig names no context).
    pub context: String,
    /// The objects as read, without what the server and the controllers
    /// wrote; they lead the drill's `workloads`, which a negative control
    /// may weaken, and stay as read here.
    pub documents: Vec<Document>,
    /// Pods whose owner the bench does not simulate (an operator's custom
    /// resource, a static pod's Node).
    pub unsimulated: Vec<UnsimulatedPod>,
}

/// The drill's `fromCluster:` entry, if it has one.
pub(crate) fn entry(spec: &DrillSpec) -> Option<&FromCluster> {
    spec.workloads.iter().find_map(|w| match &w.value {
        WorkloadSource::FromCluster(from) => Some(from),
        _ => None,
    })
}

impl Drill {
    /// What the drill takes from its cluster's live objects, if it does.
    pub fn takes_workloads_from_cluster(&self) -> Option<&FromCluster> {
        entry(&self.spec)
    }

    /// The drill again, its workloads led by `read`'s objects: every
    /// reference into them checked, as a drill's manifests are.
    ///
    /// `read` holds what the cluster's capture returned for the entry's
    /// namespaces (and the cluster-scoped kinds); the objects are taken as
    /// a snapshot's are (see [`crate::snapshot_workloads`]), so a
    /// Deployment's ReplicaSets and a CronJob's Jobs come from their owner.
    pub fn with_cluster_workloads(&self, read: &ClusterSnapshot) -> Result<Drill, Diagnostics> {
        let taken = snapshot_workloads::workloads(read);
        let context = read
            .source
            .context
            .clone()
            .unwrap_or_else(|| read.source.server.clone());
        let origin = format!("cluster context `{context}`");
        let documents = taken
            .objects
            .into_iter()
            .enumerate()
            .map(|(index, (_, value))| Document {
                source: origin.clone(),
                index,
                line: 0,
                column: 0,
                value,
            })
            .collect();
        let cluster = ClusterWorkloads {
            context,
            documents,
            unsimulated: taken.unsimulated,
        };
        Drill::build(self.source.clone(), None, Some(cluster))
    }

    /// The first object read from the cluster, other than a Kyverno
    /// policy, that this drill's workloads no longer hold as read
    /// (`namespace/Kind/name`): a negative control weakened or removed it.
    /// The bench applies none of them, so such a control would run against
    /// the unchanged platform and prove nothing. (A policy ablation goes to
    /// the cluster's admission as the drill's policies, not by applying.)
    pub fn changed_cluster_object(&self) -> Option<String> {
        let read = self.from_cluster.as_ref()?;
        read.documents
            .iter()
            .filter(|doc| !crate::policy_guard::is_policy(&doc.value))
            .find(|doc| {
                let id = WorkloadRef::of_object(&doc.value);
                !self
                    .workloads
                    .iter()
                    .any(|now| WorkloadRef::of_object(&now.value) == id && now.value == doc.value)
            })
            .map(|doc| WorkloadRef::of_object(&doc.value).to_string())
    }

    /// Whether `document` is one of the cluster's own objects, which the
    /// bench never applies. No object of the drill's files shares one's
    /// namespace, kind and name: validation refuses the duplicate.
    pub fn is_cluster_object(&self, document: &Document) -> bool {
        let Some(read) = &self.from_cluster else {
            return false;
        };
        let id = WorkloadRef::of_object(&document.value);
        read.documents
            .iter()
            .any(|doc| WorkloadRef::of_object(&doc.value) == id)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::drill::Drill;
    use crate::scenario::SourceFile;
    use crate::snapshot::{ClusterSnapshot, SnapshotSource};

    /// A drill taking namespace `shop` from its cluster, scaling and
    /// waiting for `shop/Deployment/web`, with `extra` YAML appended to its
    /// `workloads:` list.
    fn drill_text(from_cluster: &str, workload: &str, extra: &str) -> String {
        format!(
            "apiVersion: drillbench.dev/v1alpha1
kind: Drill
metadata: {{name: live}}
cluster:
  pools:
    - {{name: baseline, count: 2, serverType: cx43}}
workloads:
  - fromCluster: {from_cluster}
{extra}steps:
  - scale: {{workload: {workload}, replicas: 3}}
  - wait: {{until: {{workloadReady: {workload}}}, timeout: 5m}}
assertions:
  - {{name: quorum, quorum: {{}}}}
"
        )
    }

    fn load(text: String) -> Result<Drill, String> {
        Drill::from_source(SourceFile::new("/drills/live.yaml", text)).map_err(|d| d.render(false))
    }

    fn deployment(namespace: &str, name: &str) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": namespace, "uid": "u-1",
                         "resourceVersion": "42"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {"containers": [{"name": "c", "image": "nginx"}]}
                }
            },
            "status": {"readyReplicas": 2}
        })
    }

    fn read(items: Vec<Value>) -> ClusterSnapshot {
        let mut namespaces: Vec<Value> = items
            .iter()
            .filter_map(|i| i.pointer("/metadata/namespace").and_then(Value::as_str))
            .map(|ns| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .collect();
        namespaces.dedup();
        namespaces.extend(items);
        ClusterSnapshot::new(
            SnapshotSource {
                context: Some("prod".to_owned()),
                server: "https://prod.example:6443".to_owned(),
                namespaces: vec!["shop".to_owned()],
            },
            namespaces,
        )
    }

    #[test]
    fn a_workload_in_a_namespace_taken_from_the_cluster_is_checked_when_read() {
        let drill = load(drill_text(
            "{namespaces: [shop]}",
            "shop/Deployment/web",
            "",
        ))
        .expect("validates before the cluster is read");
        assert!(drill.workloads.is_empty());
        // Control: a namespace the drill does not take from the cluster is
        // checked at once, as any drill's.
        let error = load(drill_text(
            "{namespaces: [shop]}",
            "other/Deployment/web",
            "",
        ))
        .expect_err("nothing will deploy other/Deployment/web");
        assert!(
            error.contains("the drill deploys no workload `other/Deployment/web`"),
            "{error}"
        );
        // All namespaces: any workload is taken on trust until read.
        load(drill_text("{}", "other/Deployment/web", "")).expect("every namespace is read");

        let live = drill
            .with_cluster_workloads(&read(vec![deployment("shop", "web")]))
            .expect("the cluster has the workload");
        let read_count = live.from_cluster.as_ref().map(|c| c.documents.len());
        assert_eq!(read_count, Some(2), "the namespace and the Deployment");
        let web = live
            .workloads
            .iter()
            .find(|d| d.kind() == Some("Deployment"))
            .expect("the Deployment");
        assert!(live.is_cluster_object(web));
        assert_eq!(web.value.pointer("/metadata/uid"), None, "server fields go");
        assert_eq!(web.value.get("status"), None);
        assert_eq!(web.source, "cluster context `prod`");

        // Control: a cluster without it is bad input once read.
        let error = drill
            .with_cluster_workloads(&read(vec![deployment("shop", "api")]))
            .map_err(|d| d.render(false))
            .expect_err("the cluster has no shop/Deployment/web");
        assert!(
            error.contains("the drill deploys no workload `shop/Deployment/web`")
                && error.contains("did you mean `shop/Deployment/api`"),
            "{error}"
        );
    }

    #[test]
    fn the_drills_own_objects_are_applied_and_the_clusters_are_not() {
        let probe = "  - inline:
      apiVersion: v1
      kind: Pod
      metadata: {name: probe, namespace: shop}
      spec: {containers: [{name: c, image: busybox}]}
";
        let drill = load(drill_text(
            "{namespaces: [shop]}",
            "shop/Deployment/web",
            probe,
        ))
        .expect("validates");
        let live = drill
            .with_cluster_workloads(&read(vec![deployment("shop", "web")]))
            .expect("read");
        let own: Vec<&str> = live
            .workloads
            .iter()
            .filter(|d| !live.is_cluster_object(d))
            .filter_map(|d| d.name())
            .collect();
        assert_eq!(own, ["probe"]);
        // A drill without `fromCluster` owns every object it has.
        assert!(drill.workloads.iter().all(|d| !drill.is_cluster_object(d)));
    }

    #[test]
    fn a_weakened_cluster_object_is_named() {
        let drill = load(drill_text(
            "{namespaces: [shop]}",
            "shop/Deployment/web",
            "",
        ))
        .expect("validates");
        let mut live = drill
            .with_cluster_workloads(&read(vec![deployment("shop", "web")]))
            .expect("read");
        assert_eq!(live.changed_cluster_object(), None);
        let web = std::sync::Arc::make_mut(&mut live.workloads)
            .iter_mut()
            .find(|d| d.kind() == Some("Deployment"))
            .expect("the Deployment");
        web.value["spec"]["template"]["spec"]["nodeSelector"] =
            json!({"kubernetes.io/hostname": "prod-worker-1"});
        assert_eq!(
            live.changed_cluster_object().as_deref(),
            Some("shop/Deployment/web")
        );
    }

    #[test]
    fn a_from_cluster_entry_is_written_once_and_alone() {
        for (extra_entry, expected) in [
            ("  - fromCluster: {}\n", "a second `fromCluster:` entry"),
            (
                "  - {fromCluster: {}, path: x.yaml}\n",
                "one of `path:`, `inline:` or `fromCluster:`, not several",
            ),
            (
                "  - {fromCluster: {}, substitute: {a: b}}\n",
                "the cluster's objects are read as they run",
            ),
            (
                "  - fromCluster: {namespaces: [Shop]}\n",
                "`Shop` is not a namespace name",
            ),
        ] {
            let error = load(drill_text(
                "{namespaces: [shop]}",
                "shop/Deployment/web",
                extra_entry,
            ))
            .expect_err(extra_entry);
            assert!(error.contains(expected), "{extra_entry}: {error}");
        }
    }
}
