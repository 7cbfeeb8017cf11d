//! Every well-known label, annotation and taint key the bench writes or
//! reads, in one place.
//!
//! These names are a contract with something outside one module: the
//! containers and clusters the bench creates (found again by
//! `bench clean`), the nodes it boots on kind and Talos (read back by the
//! observer), Velero and KSail's own labels, and the annotations a drill's
//! manifests may carry. A name spelled twice drifts; so every module,
//! simulator and real backends alike, takes it from here. This module
//! imports nothing, so anything may depend on it.
//!
//! The cluster-autoscaler's taints are the autoscaler policy's, not here.

/// Carried by everything the bench creates (containers, networks, a
/// cluster's `kube-system`); its value is the run id, so one run's
/// leftovers are found and removed without touching another's. A served
/// simulator carries it too, so it counts as a cluster the bench created.
pub const RUN_LABEL: &str = "drillbench.dev/run";

/// A node's drill name (`prod-worker-1`), since kind and Talos name their
/// nodes after the cluster (`drillbench-r1-worker2`).
pub const NODE_LABEL: &str = "drillbench.dev/node";

/// A node's pool (`control-plane` for control planes).
pub const POOL_LABEL: &str = "drillbench.dev/pool";

/// The label and taint key of an autoscaler standby node: booted but not
/// yet "scaled up"; the emulated autoscaler scales up by removing the taint.
pub const STANDBY_KEY: &str = "drillbench.dev/standby";

/// What a helper container the bench runs is for (`s3`).
pub const ROLE_LABEL: &str = "drillbench.dev/role";

/// On the backups the bench itself takes: the drill's schedule they stand
/// for. Velero's own [`VELERO_SCHEDULE_LABEL`] is for backups its
/// schedules made, which the bench does not pretend to be.
pub const BENCH_SCHEDULE_LABEL: &str = "drillbench.dev/schedule";

/// On every marker the bench writes to measure a restore's data loss; its
/// value is the schedule being measured.
pub const MARKER_LABEL: &str = "drillbench.dev/marker";

/// The annotation that makes a workload a writer: acknowledged writes at
/// this interval (`10s`), whose loss a restore is measured by.
pub const WRITER_ANNOTATION: &str = "drillbench.dev/writes-every";

/// The annotation on a served StorageClass saying how its volumes attach
/// (`SingleNode` or `Replicated`), which the Kubernetes object cannot say.
pub const ATTACH_ANNOTATION: &str = "drillbench.dev/attach";

/// What Velero puts on every backup one of its schedules creates: the
/// schedule's name. Preflight reads it to find a schedule's newest backup.
pub const VELERO_SCHEDULE_LABEL: &str = "velero.io/schedule-name";

/// The API server puts it on every namespace, valued with the namespace's
/// name, so that a `namespaceSelector` can pick namespaces by name
/// (kubernetes.io/docs/reference/labels-annotations-taints/#kubernetes-io-metadata-name).
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Carried by every control-plane node (any value).
pub const CONTROL_PLANE_LABEL: &str = "node-role.kubernetes.io/control-plane";

/// The worker role, so `kubectl get nodes` shows one.
pub const WORKER_ROLE_LABEL: &str = "node-role.kubernetes.io/worker";

/// The prefix of every node-role label; what follows it is the role.
pub const NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";

/// What production puts on its static workers (by a name-based policy).
pub const BASELINE_LABEL: &str = "platform.devantler.tech/baseline-worker";

/// What KSail stamps on autoscaler nodes (when it does).
pub const AUTOSCALED_LABEL: &str = "ksail.io/autoscaled";
