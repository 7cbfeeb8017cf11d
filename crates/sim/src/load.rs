//! Turning a drill's manifests into simulated objects: pod templates
//! (compiled once, with the guards applied), workloads, claims, budgets.
//! Kinds the simulator does not model are listed, never silently dropped.

use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::api::storage::v1::StorageClass;

use super::world::{Concurrency, CronRun, Resources, Template, WorkloadKind};
use drillbench_kyverno::{FailureAction, Policy, RuleStatus};
use drillbench_model::k8s::cron::Schedule;
use drillbench_model::k8s::disruption::{Budget, PdbSelector};
use drillbench_model::k8s::node_selector::{CompiledPreferences, RequiredNodeAffinity};
use drillbench_model::k8s::quantity::pod_requests;
use drillbench_model::k8s::rollout::Strategy;
use drillbench_model::k8s::taints::admitted_tolerations;
use drillbench_model::labels::WRITER_ANNOTATION;
use drillbench_model::manifest::Document;
use drillbench_model::scenario::spec::GuardSpec;
use drillbench_observe::ObjectRef;
use drillbench_policy::admission::{admit, claim_classes};
use drillbench_policy::admission_memo::{self, Digest};
use drillbench_policy::interpod::AffinityTerm;
use drillbench_policy::kyverno_admission::{ManifestCluster, controller_pod, reportable};
use drillbench_policy::priority::{Priority, PriorityClasses};
use drillbench_policy::scale_down;
use drillbench_policy::spread::SpreadConstraint;

/// Why the simulator could not take a manifest.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A document of a modelled kind does not decode as that kind.
    #[error("{at}: {kind} `{name}` does not decode: {message}")]
    Decode {
        /// `file:line:column`.
        at: String,
        /// Kind.
        kind: String,
        /// Name.
        name: String,
        /// The decoder's message.
        message: String,
    },
    /// A field the simulator needs is invalid (a quantity, a selector).
    #[error("{at}: {kind} `{name}`: {message}")]
    Invalid {
        /// `file:line:column`.
        at: String,
        /// Kind.
        kind: String,
        /// Name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

/// A workload as loaded, before the simulation owns it.
#[derive(Debug)]
pub struct LoadedWorkload {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Kind.
    pub kind: WorkloadKind,
    /// Desired replicas.
    pub replicas: u32,
    /// The compiled template.
    pub template: Rc<Template>,
    /// `Kind` as written.
    pub kind_name: &'static str,
    /// A Deployment's update strategy (the default for other kinds).
    pub strategy: Strategy,
    /// A CronJob's schedule and policies.
    pub cron: Option<CronRun>,
}

/// A standalone claim as loaded.
#[derive(Debug)]
pub struct LoadedClaim {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Its `storageClassName` (None: the default class).
    pub class: Option<String>,
    /// Its `resources.requests.storage`, as written.
    pub storage: Option<String>,
}

/// Everything loaded from the manifests.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Workloads, in manifest order.
    pub workloads: Vec<LoadedWorkload>,
    /// Standalone claims.
    pub claims: Vec<LoadedClaim>,
    /// Budgets.
    pub pdbs: Vec<(PodDisruptionBudget, Budget, PdbSelector)>,
    /// Storage classes declared in the manifests: name and whether default.
    pub storage_classes: Vec<(String, bool)>,
    /// The cluster's PriorityClasses once the manifests' are created.
    pub priority_classes: PriorityClasses,
    /// The Namespace objects: name and labels.
    pub namespaces: Vec<(String, BTreeMap<String, String>)>,
    /// Objects of kinds not modelled.
    pub not_simulated: Vec<ObjectRef>,
    /// Guard and policy decisions made while loading.
    pub admissions: Vec<LoadedAdmission>,
}

/// What admission said of one object, worth a line in the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedAdmission {
    /// The guard, or `policy/rule` of a Kyverno rule.
    pub guard: String,
    /// `namespace/Kind/name` of the object judged.
    pub object: String,
    pub outcome: AdmissionOutcome,
    pub reason: String,
}

/// How a guard or rule treated an object it applied to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AdmissionOutcome {
    /// Refused: the owning controller's pods are not created.
    Refused,
    /// Admitted, and the failure recorded (`Audit`), or a rule error.
    Audited,
    /// A Kyverno rule the engine cannot evaluate: listed, never passed.
    NotEvaluated,
}

/// The Kyverno side of admission: the drill's policies and the objects their
/// context entries read.
pub struct Policies<'a> {
    pub policies: &'a [Policy],
    /// The policies' [`Digest`], which keys the admission memo.
    pub digest: Digest,
    pub cluster: &'a ManifestCluster,
}

/// Kinds that are read but need no model of their own.
const PASSIVE_KINDS: [&str; 1] = ["StorageClass"];

fn decode<T: serde::de::DeserializeOwned>(doc: &Document) -> Result<T, LoadError> {
    serde_json::from_value(doc.value.clone()).map_err(|e| LoadError::Decode {
        at: doc.location().to_string(),
        kind: doc.kind().unwrap_or_default().to_owned(),
        name: doc.name().unwrap_or_default().to_owned(),
        message: e.to_string(),
    })
}

/// What compiling a template needs besides the template.
struct Context<'a> {
    guards: &'a [GuardSpec],
    policies: Option<&'a Policies<'a>>,
    class_of: &'a dyn Fn(&str, &str) -> Option<Option<String>>,
    default_class: Option<&'a str>,
    priority_classes: &'a PriorityClasses,
    admissions: Vec<LoadedAdmission>,
}

/// Loads every document; guards are applied to every pod template.
/// `default_class` is the class a claim without one gets; `priorities`
/// are the PriorityClasses the cluster has besides the documents'.
pub fn load(
    documents: &[Document],
    guards: &[GuardSpec],
    default_class: Option<&str>,
    priorities: &PriorityClasses,
) -> Result<Loaded, LoadError> {
    load_admitted(documents, guards, None, default_class, priorities)
}

/// [`load`], with the drill's Kyverno policies applied at admission too.
pub fn load_admitted(
    documents: &[Document],
    guards: &[GuardSpec],
    policies: Option<&Policies<'_>>,
    default_class: Option<&str>,
    priorities: &PriorityClasses,
) -> Result<Loaded, LoadError> {
    let mut loaded = Loaded::default();
    // PriorityClasses first, so pods resolve theirs whatever the
    // document order (the API server needs the class to exist first).
    let mut classes = Vec::new();
    for doc in documents {
        if doc.kind() == Some("PriorityClass") {
            classes.push((doc, decode::<PriorityClass>(doc)?));
        }
    }
    loaded.priority_classes = match classes.first() {
        None => priorities.clone(),
        Some((first, _)) => priorities
            .with(classes.iter().map(|(_, c)| c))
            .map_err(|message| LoadError::Invalid {
                at: first.location().to_string(),
                kind: "PriorityClass".to_owned(),
                name: first.name().unwrap_or_default().to_owned(),
                message,
            })?,
    };
    // Standalone claims first, so templates can resolve their classes
    // whatever the document order.
    let mut standalone: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
    for doc in documents {
        if doc.kind() == Some("PersistentVolumeClaim") {
            let pvc: PersistentVolumeClaim = decode(doc)?;
            let namespace = namespace_of(&pvc.metadata.namespace);
            let name = pvc.metadata.name.clone().unwrap_or_default();
            let class = pvc.spec.as_ref().and_then(|s| s.storage_class_name.clone());
            let storage = pvc
                .spec
                .as_ref()
                .and_then(|s| s.resources.as_ref())
                .and_then(|r| r.requests.as_ref())
                .and_then(|r| r.get("storage"))
                .map(|q| q.0.clone());
            standalone.insert((namespace.clone(), name.clone()), class.clone());
            loaded.claims.push(LoadedClaim {
                namespace,
                name,
                class,
                storage,
            });
        }
    }
    let class_of = |namespace: &str, claim: &str| -> Option<Option<String>> {
        standalone
            .get(&(namespace.to_owned(), claim.to_owned()))
            .cloned()
    };
    let resolved = loaded.priority_classes.clone();
    let mut ctx = Context {
        guards,
        policies,
        class_of: &class_of,
        default_class,
        priority_classes: &resolved,
        admissions: Vec::new(),
    };
    for doc in documents {
        let kind = doc.kind().unwrap_or_default();
        let at = doc.location().to_string();
        let invalid = |message: String| LoadError::Invalid {
            at: at.clone(),
            kind: kind.to_owned(),
            name: doc.name().unwrap_or_default().to_owned(),
            message,
        };
        let api_version = doc
            .value
            .get("apiVersion")
            .and_then(|v| v.as_str())
            .unwrap_or_default();
        let core_or = |group: &str| api_version == group;
        match kind {
            "Deployment" if core_or("apps/v1") => {
                let d: Deployment = decode(doc)?;
                let spec = d.spec.unwrap_or_default();
                let strategy = Strategy::from_spec(spec.strategy.as_ref())
                    .map_err(|e| invalid(e.to_string()))?;
                let mut w = workload(
                    &d.metadata,
                    "Deployment",
                    WorkloadKind::Deployment,
                    spec.replicas.unwrap_or(1),
                    &spec.template,
                    &[],
                    &mut ctx,
                )
                .map_err(invalid)?;
                w.strategy = strategy;
                loaded.workloads.push(w);
            }
            "ReplicaSet" if core_or("apps/v1") => {
                let r: ReplicaSet = decode(doc)?;
                let spec = r.spec.unwrap_or_default();
                let template = spec.template.unwrap_or_default();
                let w = workload(
                    &r.metadata,
                    "ReplicaSet",
                    WorkloadKind::ReplicaSet,
                    spec.replicas.unwrap_or(1),
                    &template,
                    &[],
                    &mut ctx,
                )
                .map_err(invalid)?;
                loaded.workloads.push(w);
            }
            "StatefulSet" if core_or("apps/v1") => {
                let s: StatefulSet = decode(doc)?;
                let spec = s.spec.unwrap_or_default();
                let claim_templates: Vec<(String, Option<String>)> = spec
                    .volume_claim_templates
                    .iter()
                    .flatten()
                    .map(|t| {
                        (
                            t.metadata.name.clone().unwrap_or_default(),
                            t.spec.as_ref().and_then(|s| s.storage_class_name.clone()),
                        )
                    })
                    .collect();
                let w = workload(
                    &s.metadata,
                    "StatefulSet",
                    WorkloadKind::StatefulSet {
                        claim_templates: claim_templates.clone(),
                        parallel: match spec.pod_management_policy.as_deref() {
                            None | Some("OrderedReady") => false,
                            Some("Parallel") => true,
                            Some(other) => {
                                return Err(invalid(format!(
                                    "spec.podManagementPolicy: Unsupported value: \"{other}\": supported values: \"OrderedReady\", \"Parallel\""
                                )));
                            }
                        },
                    },
                    spec.replicas.unwrap_or(1),
                    &spec.template,
                    &claim_templates,
                    &mut ctx,
                )
                .map_err(invalid)?;
                loaded.workloads.push(w);
            }
            "DaemonSet" if core_or("apps/v1") => {
                let d: DaemonSet = decode(doc)?;
                let spec = d.spec.unwrap_or_default();
                let w = workload(
                    &d.metadata,
                    "DaemonSet",
                    WorkloadKind::DaemonSet,
                    0,
                    &spec.template,
                    &[],
                    &mut ctx,
                )
                .map_err(invalid)?;
                loaded.workloads.push(w);
            }
            "Job" if core_or("batch/v1") => {
                let j: Job = decode(doc)?;
                let spec = j.spec.unwrap_or_default();
                // A Job is complete once `status.succeeded` reaches
                // `completions` ("Jobs" in the workloads docs): one read
                // from a live cluster's snapshot runs only what it has
                // left, and a finished one not again.
                let succeeded = j.status.and_then(|s| s.succeeded).unwrap_or(0).max(0) as u32;
                let completions =
                    (spec.completions.unwrap_or(1).max(0) as u32).saturating_sub(succeeded);
                let parallelism = spec.parallelism.unwrap_or(1).max(0) as u32;
                let kind = WorkloadKind::Job {
                    completions,
                    run_for: JOB_RUN_MS,
                };
                let w = workload(
                    &j.metadata,
                    "Job",
                    kind,
                    parallelism.min(completions) as i32,
                    &spec.template,
                    &[],
                    &mut ctx,
                )
                .map_err(invalid)?;
                loaded.workloads.push(w);
            }
            "CronJob" if core_or("batch/v1") => {
                // A CronJob runs its job template on its schedule, in UTC
                // drill time; the first run is the first scheduled time after
                // the drill starts, as for a CronJob created then.
                let c: CronJob = decode(doc)?;
                if let Some(zone) = c.spec.time_zone.as_deref()
                    && !matches!(zone, "UTC" | "Etc/UTC")
                {
                    return Err(invalid(format!(
                        "spec.timeZone `{zone}` is not modelled; the simulator runs schedules in UTC"
                    )));
                }
                let schedule =
                    Schedule::parse(&c.spec.schedule).map_err(|e| invalid(e.to_string()))?;
                let concurrency = match c.spec.concurrency_policy.as_deref() {
                    None | Some("Allow") => Concurrency::Allow,
                    Some("Forbid") => Concurrency::Forbid,
                    Some("Replace") => Concurrency::Replace,
                    Some(other) => {
                        return Err(invalid(format!(
                            "spec.concurrencyPolicy must be Allow, Forbid or Replace, got `{other}`"
                        )));
                    }
                };
                let cron = CronRun {
                    schedule,
                    concurrency,
                    suspend: c.spec.suspend.unwrap_or(false),
                };
                let job_spec = c.spec.job_template.spec.unwrap_or_default();
                let completions = job_spec.completions.unwrap_or(1).max(0) as u32;
                let kind = WorkloadKind::Job {
                    completions,
                    run_for: JOB_RUN_MS,
                };
                let mut w = workload(
                    &c.metadata,
                    "CronJob",
                    kind,
                    1.min(completions) as i32,
                    &job_spec.template,
                    &[],
                    &mut ctx,
                )
                .map_err(invalid)?;
                w.cron = Some(cron);
                loaded.workloads.push(w);
            }
            "Pod" if core_or("v1") => {
                let p: Pod = decode(doc)?;
                let template = PodTemplateSpec {
                    metadata: Some(p.metadata.clone()),
                    spec: p.spec.clone(),
                };
                let w = workload(
                    &p.metadata,
                    "Pod",
                    WorkloadKind::Pod,
                    1,
                    &template,
                    &[],
                    &mut ctx,
                )
                .map_err(invalid)?;
                loaded.workloads.push(w);
            }
            "PodDisruptionBudget" if core_or("policy/v1") => {
                let pdb: PodDisruptionBudget = decode(doc)?;
                let spec = pdb.spec.clone().unwrap_or_default();
                let budget = Budget::from_spec(&spec).map_err(|e| invalid(e.to_string()))?;
                let selector = PdbSelector::from_spec(&spec).map_err(|e| invalid(e.to_string()))?;
                loaded.pdbs.push((pdb, budget, selector));
            }
            "StorageClass" if core_or("storage.k8s.io/v1") => {
                let sc: StorageClass = decode(doc)?;
                let default = sc
                    .metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("storageclass.kubernetes.io/is-default-class"))
                    .is_some_and(|v| v == "true");
                loaded
                    .storage_classes
                    .push((sc.metadata.name.clone().unwrap_or_default(), default));
            }
            "Namespace" => loaded.namespaces.push((
                doc.name().unwrap_or_default().to_owned(),
                doc.value
                    .pointer("/metadata/labels")
                    .and_then(|l| serde_json::from_value(l.clone()).ok())
                    .unwrap_or_default(),
            )),
            "PersistentVolumeClaim" | "PriorityClass" => {}
            k if PASSIVE_KINDS.contains(&k) => {}
            // Applied at admission (`Policies`), not objects of their own.
            _ if drillbench_model::policy_guard::is_policy(&doc.value) => {}
            _ => loaded.not_simulated.push(ObjectRef {
                kind: kind.to_owned(),
                namespace: doc.namespace().unwrap_or_default().to_owned(),
                name: doc.name().unwrap_or_default().to_owned(),
            }),
        }
    }
    loaded.admissions = ctx.admissions;
    Ok(loaded)
}

/// How long a Job's pod runs before it succeeds, when nothing says.
pub const JOB_RUN_MS: u64 = 60_000;

fn namespace_of(namespace: &Option<String>) -> String {
    namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".to_owned())
}

fn workload(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    kind_name: &'static str,
    kind: WorkloadKind,
    replicas: i32,
    template: &PodTemplateSpec,
    claim_templates: &[(String, Option<String>)],
    ctx: &mut Context<'_>,
) -> Result<LoadedWorkload, String> {
    let namespace = namespace_of(&meta.namespace);
    let name = meta.name.clone().unwrap_or_default();
    let key = format!("{namespace}/{kind_name}/{name}");
    let tmeta = template.metadata.clone().unwrap_or_default();
    let labels = tmeta.labels.unwrap_or_default();
    let annotations = tmeta.annotations.unwrap_or_default();
    let mut spec = template.spec.clone().unwrap_or_default();

    // The classes of the claims the pod mounts: claim templates by the
    // template's class, `persistentVolumeClaim` volumes by the standalone claim.
    let mut claim_volumes = Vec::new();
    for volume in spec.volumes.iter().flatten() {
        if let Some(pvc) = &volume.persistent_volume_claim {
            claim_volumes.push(pvc.claim_name.clone());
        }
    }
    let classes = claim_classes(
        claim_templates.iter().map(|(_, c)| c.clone()).collect(),
        &spec,
        |claim| (ctx.class_of)(&namespace, claim).flatten(),
        ctx.default_class,
    );
    let mut refused_by = None;
    for decision in admit(ctx.guards, &namespace, &labels, &classes, &mut spec) {
        if decision.refused && refused_by.is_none() {
            refused_by = Some(decision.guard.clone());
        }
        ctx.admissions.push(LoadedAdmission {
            guard: decision.guard,
            object: key.clone(),
            outcome: if decision.refused {
                AdmissionOutcome::Refused
            } else {
                AdmissionOutcome::Audited
            },
            reason: decision.reason,
        });
    }
    let (mut labels, mut annotations) = (labels, annotations);
    if let Some(policies) = ctx.policies
        && !policies.policies.is_empty()
    {
        // Admitted once per template, as the guards are: every pod of the
        // template (replacements after a node loss included, which reuse
        // the admitted template) is the same object but for its name and
        // its claims' names, and each ordinal's claims come from the same
        // claim templates with the same class. So the result equals
        // per-pod admission unless a policy reads a pod's name or ordinal,
        // or a cluster object that changes during the drill (nodes): those
        // are judged as they are at load time.
        let templates: Vec<String> = claim_templates.iter().map(|(n, _)| n.clone()).collect();
        let mut template_meta = template.metadata.clone().unwrap_or_default();
        template_meta.labels = Some(labels.clone());
        template_meta.annotations = Some(annotations.clone());
        let submitted = PodTemplateSpec {
            metadata: Some(template_meta),
            spec: Some(spec.clone()),
        };
        let pod = controller_pod(&namespace, kind_name, &name, &submitted, &templates);
        let judged = admission_memo::admit_pod(
            policies.policies,
            policies.digest,
            policies.cluster,
            kind_name,
            pod,
        );
        for result in judged.results.iter().filter(|r| reportable(r)) {
            let outcome = match result.status {
                RuleStatus::NotEvaluated => AdmissionOutcome::NotEvaluated,
                RuleStatus::Fail if result.failure_action == Some(FailureAction::Enforce) => {
                    AdmissionOutcome::Refused
                }
                _ => AdmissionOutcome::Audited,
            };
            let reason = match result.status {
                RuleStatus::Error => format!("rule error: {}", result.message),
                RuleStatus::NotEvaluated => format!("not evaluated: {}", result.message),
                _ => result.message.trim().to_owned(),
            };
            ctx.admissions.push(LoadedAdmission {
                guard: format!("{}/{}", result.policy, result.rule),
                object: key.clone(),
                outcome,
                reason,
            });
        }
        if refused_by.is_none() {
            refused_by = judged.refused_by();
        }
        let mut patched = judged
            .spec()
            .ok_or("the pod spec no longer decodes after the policies' mutations")?;
        // The claim volumes the controller adds are the simulator's
        // `claim_templates`, not volumes of the template.
        let original: Vec<String> = spec
            .volumes
            .iter()
            .flatten()
            .map(|v| v.name.clone())
            .collect();
        if let Some(volumes) = &mut patched.volumes {
            volumes.retain(|v| original.contains(&v.name) || !templates.contains(&v.name));
            if volumes.is_empty() && spec.volumes.is_none() {
                patched.volumes = None;
            }
        }
        spec = patched;
        labels = judged.metadata_map("labels");
        annotations = judged.metadata_map("annotations");
    }

    let requests = pod_requests(&spec).map_err(|e| e.to_string())?;
    let required = RequiredNodeAffinity::from_pod_spec(&spec).map_err(|e| e.to_string())?;
    let preferences = CompiledPreferences::from_pod_spec(&spec).map_err(|e| e.to_string())?;
    let per_node = mentions_per_node_field(&spec);
    let tolerations = admitted_tolerations(
        spec.tolerations.as_deref().unwrap_or_default(),
        matches!(kind, WorkloadKind::DaemonSet),
    );
    let (affinity, anti_affinity) = AffinityTerm::from_pod_spec(&spec)?;
    let spread = SpreadConstraint::from_pod_spec(&spec, &labels)?;
    // A controller's pods are refused one by one while their class is
    // missing, not the controller: it is created, and waits.
    let missing_class = spec
        .priority_class_name
        .clone()
        .filter(|c| !c.is_empty() && !ctx.priority_classes.knows(c));
    let (priority, waits_for_class) = match missing_class {
        Some(class) if kind != WorkloadKind::Pod => (Priority::default(), Some(class)),
        _ => (ctx.priority_classes.resolve(&spec)?, None),
    };
    let start_delay = readiness_delay(&spec);
    let safe_to_evict = scale_down::safe_to_evict(&annotations);
    let local_storage = scale_down::blocking_local_storage(&spec, &annotations);
    let writes_every = match annotations.get(WRITER_ANNOTATION) {
        None => None,
        Some(v) => match v.parse::<drillbench_model::duration::Duration>() {
            Ok(d) if d.as_millis() > 0 => Some(d.as_millis()),
            _ => {
                return Err(format!(
                    "annotation {WRITER_ANNOTATION}: `{v}` is not a positive duration such as `10s`"
                ));
            }
        },
    };
    Ok(LoadedWorkload {
        namespace,
        name,
        kind,
        replicas: replicas.max(0) as u32,
        kind_name,
        strategy: Strategy::default(),
        cron: None,
        template: Rc::new(Template {
            labels,
            annotations,
            spec,
            requests: Resources {
                cpu: requests.cpu_millis(),
                memory: requests.memory_bytes(),
            },
            required,
            per_node,
            preferences,
            tolerations,
            anti_affinity,
            affinity,
            spread,
            claim_volumes,
            local_storage,
            start_delay,
            safe_to_evict,
            refused_by,
            writes_every,
            priority,
            waits_for_class,
            class_views: Default::default(),
            shared_labels: Default::default(),
        }),
    })
}

fn mentions_per_node_field(spec: &PodSpec) -> bool {
    const HOSTNAME: &str = "kubernetes.io/hostname";
    if spec.node_name.is_some()
        || spec
            .node_selector
            .as_ref()
            .is_some_and(|s| s.contains_key(HOSTNAME))
    {
        return true;
    }
    spec.affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .is_some_and(|s| {
            s.node_selector_terms.iter().any(|t| {
                t.match_fields.as_ref().is_some_and(|f| !f.is_empty())
                    || t.match_expressions
                        .iter()
                        .flatten()
                        .any(|e| e.key == HOSTNAME)
            })
        })
}

/// Containers started to Ready: the readiness probe's initial delay.
fn readiness_delay(spec: &PodSpec) -> u64 {
    let probe = spec
        .containers
        .iter()
        .filter_map(|c| c.readiness_probe.as_ref())
        .filter_map(|p| p.initial_delay_seconds)
        .max()
        .unwrap_or(0);
    (probe.max(0) as u64) * 1000
}

#[cfg(test)]
mod tests {
    use super::*;
    use drillbench_model::drill::Drill;
    use drillbench_policy::admission::Candidate;

    /// A run judges an admission negative control by reading the planted
    /// object with the policy, not this loader; on every object of every
    /// built-in drill, loaded alone, the two must reach the same verdicts.
    #[test]
    fn the_policy_reads_each_object_as_the_loader_admits_it() {
        let mut judged = 0;
        for entry in drillbench_model::scenario::catalog::list().expect("the built-in drills") {
            let drill = Drill::load(&entry.path).unwrap_or_else(|d| panic!("{}", d.render(false)));
            let guards: Vec<GuardSpec> =
                drill.spec.guards.iter().map(|g| g.value.clone()).collect();
            let default_class = drill
                .topology
                .storage_classes
                .iter()
                .find(|c| c.default)
                .map(|c| c.name.as_str());
            let planted = drill.spec.assertions.iter().filter_map(|a| {
                let control = a.negative_control.as_ref()?.admission.as_ref()?;
                Some(control.object.value.clone())
            });
            let objects: Vec<serde_json::Value> = drill
                .workloads
                .iter()
                .map(|d| d.value.clone())
                .chain(planted)
                .collect();
            for object in objects {
                let doc = Document {
                    source: entry.name.clone(),
                    index: 0,
                    line: 1,
                    column: 1,
                    value: object.clone(),
                };
                let loaded: Vec<(String, String, bool, String)> =
                    load(&[doc], &guards, default_class, &Default::default())
                        .unwrap_or_else(|e| panic!("{}: {e}", entry.name))
                        .admissions
                        .into_iter()
                        .map(|a| {
                            let refused = a.outcome == AdmissionOutcome::Refused;
                            (a.guard, a.object, refused, a.reason)
                        })
                        .collect();
                let read: Vec<(String, String, bool, String)> = Candidate::read(&object)
                    .map(|mut c| {
                        let classes =
                            claim_classes(c.claim_templates, &c.spec, |_| None, default_class);
                        admit(&guards, &c.namespace, &c.labels, &classes, &mut c.spec)
                            .into_iter()
                            .map(|d| (d.guard, c.key.clone(), d.refused, d.reason))
                            .collect()
                    })
                    .unwrap_or_default();
                assert_eq!(loaded, read, "{}: {object}", entry.name);
                judged += usize::from(!read.is_empty());
            }
        }
        assert!(judged > 0, "some object breaks a guard");
    }
}
