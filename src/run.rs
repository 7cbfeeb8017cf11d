//! Running a drill: steps in order against a [`Backend`], then every
//! assertion judged over what was observed, negative controls re-run with
//! their guard weakened, and the report assembled.

mod controls;
mod dry_run;
mod trace;
mod weaken;

use std::collections::BTreeMap;

use drillbench_assert as assert;
use drillbench_backend::{Backend, BackendError, BackendKind};
use drillbench_model::drill::Drill;
use drillbench_model::duration::Duration;
use drillbench_model::scenario::assertion::{AssertionKind, Control};
use drillbench_model::scenario::spec::{Condition, Fault, TaintEffect, Target};
use drillbench_model::scenario::step::{Action, NodeChange, Step};
use drillbench_model::topology::CONTROL_PLANE_POOL;
use drillbench_observe::{Event, EventKind, ObjectRef, Observation};
use drillbench_preflight::{self as preflight, Policy};
use drillbench_report::{
    DrillIdentity, DrillReport, Outcome, REPORT_FORMAT, Verdict, WorkloadAvailability,
};

/// Why a drill could not run (the platform's verdicts are in the report;
/// these are the bench's own failures, exit 3).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The backend cannot do what the drill asks.
    #[error("{0}")]
    Unsupported(String),
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// The cluster could not be built.
    #[error("cannot provision the cluster: {0}")]
    Provision(#[source] BackendError),
    /// The run used up a budget only a run can count (events, simulator
    /// actions): bad input, as a drill above a budget `validate` counts is.
    #[error("drill `{drill}` stopped: {why}")]
    OverBudget { drill: String, why: String },
}

/// Builds a fresh backend for a drill and seed (a negative control needs a
/// second one for its re-run).
pub type Provision<'a> = dyn Fn(&Drill, u64) -> Result<Box<dyn Backend>, BackendError> + 'a;

/// How a drill's steps ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum StepsOutcome {
    Completed,
    Aborted(String),
}

/// Runs a drill with a seed and returns its report, with the whole
/// timeline however long it is.
pub fn run_drill(
    drill: &Drill,
    seed: u64,
    provision: &Provision<'_>,
) -> Result<DrillReport, RunError> {
    run_drill_budgeted(drill, seed, provision, usize::MAX).map(|(report, _)| report)
}

/// Runs a drill with a seed and returns its report, its timeline
/// summarised when it holds more than `timeline_budget` events (see
/// [`DrillReport::summarise_timeline`]); then also the complete timeline.
pub fn run_drill_budgeted(
    drill: &Drill,
    seed: u64,
    provision: &Provision<'_>,
    timeline_budget: usize,
) -> Result<(DrillReport, Option<Vec<Event>>), RunError> {
    let backend = provision(drill, seed).map_err(RunError::Provision)?;
    check_capabilities(drill, backend.as_ref())?;
    let backend_name = backend.name();
    // Asked before the cluster goes away: the real admission chain judges
    // the admission controls wherever there is one.
    let mut dry_runs = dry_run::DryRuns::new();
    // Kept for the controls that may start from the real run's converged
    // cluster instead of building and converging their own.
    let keep_converged = controls::any_starts_converged(drill);
    let mut converged = None;
    let (obs, outcome) = run_steps_from(
        drill,
        Start::Provisioned(backend),
        false,
        &mut |backend| {
            if keep_converged {
                converged = backend.fork();
            }
        },
        &mut |backend| {
            dry_runs = dry_run::submit(drill, backend);
        },
    )?;
    let mut assertions = Vec::new();
    let mut figures = BTreeMap::new();
    for assertion in &drill.assertions {
        let real_admission = match &assertion.kind {
            AssertionKind::NegativeControl(Control::Admission(admission)) => dry_runs
                .get(&assertion.name)
                .map(|answer| dry_run::judge(assertion, admission, answer, backend_name)),
            _ => None,
        };
        let judged = match (real_admission, &assertion.kind) {
            (Some(judged), _) => judged,
            (None, AssertionKind::NegativeControl(control)) => match &outcome {
                // Nothing to compare a weakened run with, and no reason to
                // touch a cluster again: the real run already stopped.
                StepsOutcome::Aborted(why) => controls::not_run(drill, assertion, control, why),
                StepsOutcome::Completed => {
                    let real = controls::RealRun {
                        seed,
                        backend: backend_name,
                        observation: &obs,
                        converged: converged.as_deref(),
                    };
                    controls::judge(drill, assertion, control, &real, provision)?
                }
            },
            (None, _) => assert::judge(assertion, &obs, &drill.topology),
        };
        figures.extend(judged.figures);
        assertions.push(judged.result);
    }
    let failed = |controls: bool| {
        assertions
            .iter()
            .any(|a| a.verdict == Verdict::Fail && a.is_control() == controls)
    };
    // A platform that regressed outranks a control that proved nothing:
    // the first is news about the cluster, the second about the drill.
    let outcome = match outcome {
        StepsOutcome::Aborted(_) => Outcome::Aborted,
        StepsOutcome::Completed if failed(false) => Outcome::Failed,
        StepsOutcome::Completed if failed(true) => Outcome::Unproven,
        StepsOutcome::Completed => Outcome::Passed,
    };
    let workloads = workload_availability(&obs);
    let mut report = DrillReport {
        format: REPORT_FORMAT.to_owned(),
        bench_version: env!("CARGO_PKG_VERSION").to_owned(),
        drill: DrillIdentity {
            name: drill.name().to_owned(),
            description: drill.spec.metadata.description.clone().unwrap_or_default(),
            file: (!drill.is_builtin()).then(|| display_path(&drill.source.path)),
            content_hash: drill.content_hash().to_owned(),
            snapshot: drill
                .snapshot
                .as_ref()
                .and_then(|c| c.given.as_deref())
                .map(display_path),
            from_cluster: drill.from_cluster.as_ref().map(|read| {
                format!(
                    "context `{}`, {} objects",
                    read.context,
                    read.documents.len()
                )
            }),
        },
        backend: backend_name.to_owned(),
        seed,
        topology: drill.topology.clone(),
        outcome,
        duration_ms: obs.end,
        assertions,
        figures,
        timeline: obs.events,
        timeline_summary: None,
        events_file: None,
        workloads,
        not_simulated: obs.not_simulated,
    };
    let full = (report.timeline.len() > timeline_budget)
        .then(|| {
            let owners = PodOwners::of(&obs.placements, &obs.workloads);
            report.summarise_timeline(timeline_budget, &owners)
        })
        .flatten();
    Ok((report, full))
}

/// Which workload each pod belongs to, for a summarised timeline: the one
/// its placement names, else, for a pod never bound, the workload of its
/// namespace whose name its own extends (`web-0001a` of `web`), the
/// longest such name. Asked once per pod event, so searched by the pod's
/// namespace and name as the event holds them, never a built string.
struct PodOwners<'a> {
    /// (name, namespace, workload) of each placed pod, sorted by pod name
    /// first (names differ where namespaces repeat, so a lookup's
    /// comparisons mostly end at the first string); a pod placed more than
    /// once is owned as its last placement says.
    placed: Vec<(&'a str, &'a str, &'a str)>,
    /// Each workload as (namespace, name, `namespace/Kind/name`), in the
    /// order of its full name.
    workloads: Vec<(&'a str, &'a str, &'a str)>,
}

impl<'a> PodOwners<'a> {
    fn of(
        placements: &'a [drillbench_observe::Placement],
        workloads: &'a BTreeMap<String, drillbench_observe::WorkloadSeries>,
    ) -> Self {
        let mut placed: Vec<(&str, &str, &str)> = placements
            .iter()
            .rev()
            .filter_map(|p| {
                let (namespace, name) = p.pod.split_once('/')?;
                Some((name, namespace, p.workload.as_deref()?))
            })
            .collect();
        // Stable, over the placements reversed: each pod's last one first.
        placed.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        placed.dedup_by(|a, b| (a.0, a.1) == (b.0, b.1));
        let workloads = workloads
            .keys()
            .filter_map(|w| {
                let mut parts = w.splitn(3, '/');
                let (Some(namespace), Some(_kind), Some(name)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    return None;
                };
                Some((namespace, name, w.as_str()))
            })
            .collect();
        PodOwners { placed, workloads }
    }
}

impl drillbench_report::timeline_summary::Owners for PodOwners<'_> {
    fn workload_of(&self, pod: &ObjectRef) -> Option<&str> {
        let wanted = (pod.name.as_str(), pod.namespace.as_str());
        if let Ok(at) = self
            .placed
            .binary_search_by(|(name, namespace, _)| (*name, *namespace).cmp(&wanted))
        {
            return Some(self.placed[at].2);
        }
        self.workloads
            .iter()
            .filter(|(namespace, name, _)| {
                *namespace == pod.namespace
                    && pod
                        .name
                        .strip_prefix(name)
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
            })
            .map(|(_, _, workload)| *workload)
            .max_by_key(|w| w.len())
    }
}

/// Each workload's lowest point and time whole while the steps ran.
fn workload_availability(obs: &Observation) -> Vec<WorkloadAvailability> {
    obs.workloads
        .iter()
        .filter_map(|(name, series)| {
            let (at, ready, desired) = series.lowest(obs.start, obs.end)?;
            Some(WorkloadAvailability {
                workload: name.clone(),
                lowest_ready: ready,
                desired,
                lowest_at_ms: at,
                whole_ratio: (series.whole_fraction(obs.start, obs.end) * 1e4).round() / 1e4,
            })
        })
        .collect()
}

/// A drill file's path as reports show it: relative to the repository for
/// built-ins, so the same drill gives the same report on every machine.
pub fn display_path(path: &std::path::Path) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// What in a drill only a working cluster autoscaler can make true: an
/// assertion that burst load lands on autoscaled pools, or a wait for an
/// autoscaled pool to reach a size. (Picking the node the autoscaler would
/// remove needs only its rule, which every backend applies.)
fn needs_autoscaler(drill: &Drill) -> Option<String> {
    if let Some(a) = drill
        .assertions
        .iter()
        .find(|a| matches!(a.kind, AssertionKind::BurstUnchanged(_)))
    {
        return Some(format!("assertion `{}` needs burst capacity", a.name));
    }
    drill.steps.iter().find_map(|step| {
        let Action::WaitUntil {
            condition: Condition::PoolSize(size),
            ..
        } = &step.action
        else {
            return None;
        };
        drill
            .topology
            .pool(&size.pool)
            .is_some_and(|p| p.is_autoscaled())
            .then(|| {
                format!(
                    "a step waits for pool `{}` to reach {} nodes",
                    size.pool, size.nodes
                )
            })
    })
}

/// The first of the drill's workloads that claims a persistent volume: a
/// StatefulSet's claim templates, a claim of its own, or a pod template's
/// ephemeral or claimed volume.
fn claims_volumes(drill: &Drill) -> Option<String> {
    drill.workloads.iter().find_map(|doc| {
        let value = &doc.value;
        let template = match doc.kind()? {
            "PersistentVolumeClaim" => {
                return Some(
                    drillbench_model::workload_ref::WorkloadRef::of_object(value).to_string(),
                );
            }
            "Pod" => value.pointer("/spec"),
            "CronJob" => value.pointer("/spec/jobTemplate/spec/template/spec"),
            _ => value.pointer("/spec/template/spec"),
        };
        let templates = value
            .pointer("/spec/volumeClaimTemplates")
            .and_then(serde_json::Value::as_array)
            .is_some_and(|t| !t.is_empty());
        let volumes = template
            .and_then(|s| s.get("volumes"))
            .and_then(serde_json::Value::as_array)
            .is_some_and(|v| {
                v.iter().any(|v| {
                    v.get("persistentVolumeClaim").is_some() || v.get("ephemeral").is_some()
                })
            });
        (templates || volumes)
            .then(|| drillbench_model::workload_ref::WorkloadRef::of_object(value).to_string())
    })
}

/// Refuses, before anything runs, a drill that asks the backend for more
/// than it can do.
fn check_capabilities(drill: &Drill, backend: &dyn Backend) -> Result<(), RunError> {
    refuse_unsupported(drill, backend.name(), backend.capabilities())
}

/// Refuses a drill that asks a backend of these capabilities for more than
/// it can do; usable before the backend is provisioned.
pub fn refuse_unsupported(
    drill: &Drill,
    backend: &str,
    caps: drillbench_backend::Capabilities,
) -> Result<(), RunError> {
    type Can = fn(&drillbench_backend::Capabilities) -> bool;
    if !caps.storage
        && let Some(workload) = claims_volumes(drill)
    {
        return Err(RunError::Unsupported(format!(
            "the {backend} backend has no storage provisioner for the volumes {workload} claims; use --backend kind or sim"
        )));
    }
    if !caps.autoscaler
        && let Some(why) = needs_autoscaler(drill)
    {
        return Err(RunError::Unsupported(format!(
            "the {backend} backend has no cluster autoscaler to scale its pools ({why}); use --backend sim, or kubeconfig on a served simulator"
        )));
    }
    for step in &drill.steps {
        let Action::Fault(fault) = &step.action else {
            continue;
        };
        let (what, can): (&str, Can) = match &fault.value {
            Fault::RecreateControlPlane(_) => ("recreate control-plane nodes", |c| {
                c.recreate_control_planes
            }),
            Fault::CrashNode(_) => ("crash nodes", |c| c.crash_nodes),
            Fault::DeleteNode(_) => ("delete nodes", |c| c.delete_nodes),
            Fault::ReplaceNode(_) => ("replace lost nodes", |c| c.replace_nodes),
            Fault::RollingUpgrade(_) => ("run a rolling upgrade", |c| c.whole_cluster_faults),
            Fault::FullRebuild(_) => ("rebuild the cluster from nothing", |c| {
                c.whole_cluster_faults
            }),
            Fault::RemovePool(_) => ("remove a pool from the autoscaler's configuration", |c| {
                c.whole_cluster_faults
            }),
            Fault::RestoreNamespace(_) => ("lose a namespace and restore it from a backup", |c| {
                c.restore_namespaces
            }),
        };
        if !can(&caps) {
            let able: Vec<&str> = BackendKind::ALTERNATIVES
                .into_iter()
                .filter(|k| can(&k.capabilities()))
                .map(BackendKind::name)
                .collect();
            return Err(RunError::Unsupported(format!(
                "the {backend} backend cannot {what}; use --backend {}",
                able.join(" or ")
            )));
        }
    }
    Ok(())
}

fn drill_ref(drill: &Drill) -> ObjectRef {
    ObjectRef {
        kind: "Drill".to_owned(),
        namespace: String::new(),
        name: drill.name().to_owned(),
    }
}

fn push_event(backend: &mut dyn Backend, drill: &Drill, kind: EventKind, message: String) {
    let event = Event {
        at_ms: backend.now(),
        kind,
        object: drill_ref(drill),
        node: None,
        pool: None,
        message,
    };
    backend.note(event);
}

/// How long a freshly provisioned cluster may take to bring every workload
/// up before the drill starts.
pub const CONVERGE_TIMEOUT: Duration = Duration::from_mins(30);

/// Where a run's steps begin.
enum Start {
    /// A cluster just provisioned: it converges first.
    Provisioned(Box<dyn Backend>),
    /// A copy of a cluster that converged for a drill of the same cluster,
    /// workloads and seed (the real run's, for a control that changes only
    /// the steps): converging again would give the same cluster, so the
    /// steps begin at once.
    Converged(Box<dyn Backend>),
}

/// Runs the steps; a no-go preflight or a timed-out wait stops the drill.
/// In a negative control's weakened run (`weakened`), a fault that finds
/// no target stops the drill too, so the control can say it diverged; in
/// the real run that is the bench's own failure.
#[cfg(test)]
fn run_steps(
    drill: &Drill,
    backend: Box<dyn Backend>,
    weakened: bool,
) -> Result<(Observation, StepsOutcome), RunError> {
    run_steps_from(
        drill,
        Start::Provisioned(backend),
        weakened,
        &mut |_| {},
        &mut |_| {},
    )
}

/// [`run_steps`] from `start`, calling `converged` with the backend once
/// its cluster converged (before the steps; never for a [`Start::Converged`]
/// one), and `then` after the last step and before it is torn down.
fn run_steps_from(
    drill: &Drill,
    start: Start,
    weakened: bool,
    converged: &mut dyn FnMut(&dyn Backend),
    then: &mut dyn FnMut(&mut dyn Backend),
) -> Result<(Observation, StepsOutcome), RunError> {
    let mut outcome = StepsOutcome::Completed;
    let over_budget = |backend: &dyn Backend| {
        backend.over_budget().map(|why| RunError::OverBudget {
            drill: drill.name().to_owned(),
            why,
        })
    };
    let mut backend = match start {
        Start::Converged(backend) => backend,
        Start::Provisioned(mut backend) => {
            // A drill starts from a converged cluster: every workload up.
            let converge = Step {
                label: "converge".to_owned(),
                action: Action::WaitUntil {
                    condition: Condition::AllWorkloadsReady,
                    timeout: CONVERGE_TIMEOUT,
                },
            };
            if let Some(reason) = run_step(drill, &converge, backend.as_mut())? {
                outcome = StepsOutcome::Aborted(format!("the cluster never converged: {reason}"));
            }
            if let Some(error) = over_budget(backend.as_ref()) {
                return Err(error);
            }
            if outcome == StepsOutcome::Completed {
                converged(backend.as_ref());
            }
            backend
        }
    };
    backend.mark_start();
    if outcome == StepsOutcome::Completed {
        for step in &drill.steps {
            push_event(
                backend.as_mut(),
                drill,
                EventKind::StepStarted,
                step.label.clone(),
            );
            let stop = match run_step(drill, step, backend.as_mut()) {
                Err(RunError::Backend(BackendError::NotFound(what))) if weakened => {
                    let reason = format!("{}: {}: {what}", step.label, trace::NO_TARGET);
                    push_event(
                        backend.as_mut(),
                        drill,
                        EventKind::WaitTimedOut,
                        reason.clone(),
                    );
                    Some(reason)
                }
                other => other?,
            };
            if let Some(error) = over_budget(backend.as_ref()) {
                return Err(error);
            }
            if let Some(reason) = stop {
                outcome = StepsOutcome::Aborted(reason);
                break;
            }
        }
    }
    then(backend.as_mut());
    let mut obs = backend.finish();
    // A backend that lost its cluster mid-drill (a real one: watches that
    // stopped, an API gone) says so in the observation; what it saw after
    // that is not evidence, so the drill is aborted, never green.
    if outcome == StepsOutcome::Completed
        && let Some(reason) = &obs.aborted
    {
        outcome = StepsOutcome::Aborted(reason.clone());
    }
    if let StepsOutcome::Aborted(reason) = &outcome {
        obs.aborted = Some(reason.clone());
    }
    Ok((obs, outcome))
}

/// Runs one step; `Some(reason)` stops the drill.
fn run_step(
    drill: &Drill,
    step: &Step,
    backend: &mut dyn Backend,
) -> Result<Option<String>, RunError> {
    let label = &step.label;
    match &step.action {
        Action::Preflight(preflight) => {
            let target = match &preflight.target {
                Some(target) => resolve(&target.value, backend)?,
                None => backend.endpoint_holder().unwrap_or_default(),
            };
            let schedule = preflight
                .schedule
                .as_ref()
                .map(|s| s.value.clone())
                .or_else(|| drill.topology.backups.first().map(|b| b.schedule.clone()))
                .unwrap_or_else(|| preflight::DEFAULT_SCHEDULE.to_owned());
            let (facts, now) = backend.preflight_facts();
            let policy = Policy {
                target: target.clone(),
                vip_holder: backend.endpoint_holder(),
                schedule,
                max_backup_age_hours: preflight
                    .max_backup_age
                    .map_or(preflight::DEFAULT_MAX_BACKUP_AGE_HOURS, |d| {
                        d.as_millis() / 3_600_000
                    }),
                now: jiff::Timestamp::from_second(now).unwrap_or(jiff::Timestamp::UNIX_EPOCH),
            };
            let decision = preflight::decide(&facts, &policy);
            let rendered = decision.render().trim_end().replace('\n', "; ");
            if decision.ready() {
                push_event(backend, drill, EventKind::PreflightPassed, rendered);
                return Ok(None);
            }
            push_event(backend, drill, EventKind::PreflightFailed, rendered.clone());
            Ok(Some(format!("{label}: preflight said no-go: {rendered}")))
        }
        Action::Fault(fault) => match inject(drill, &fault.value, backend)? {
            Some(why) => {
                let reason = format!("{label}: {why}");
                push_event(backend, drill, EventKind::WaitTimedOut, reason.clone());
                Ok(Some(reason))
            }
            None => Ok(None),
        },
        Action::Scale(scale) => {
            backend.scale(&scale.workload, scale.replicas)?;
            Ok(None)
        }
        Action::Rollout(rollout) => {
            backend.rollout(
                &rollout.workload,
                &rollout.image,
                rollout.container.as_deref(),
            )?;
            Ok(None)
        }
        Action::Node { target, change } => {
            let node = resolve(target, backend)?;
            // A change that can take running pods away is a fault: the
            // timeline marks it and `rto:` measures from it.
            let disrupts = matches!(
                change,
                NodeChange::Taint {
                    effect: TaintEffect::NoExecute,
                    ..
                } | NodeChange::DeleteObject
            );
            if disrupts {
                backend.mark_fault(Some(&node), &format!("{change} on node {node}"));
            }
            backend.change_node(&node, change)?;
            Ok(None)
        }
        Action::Evict(evict) => {
            backend.mark_fault(None, &format!("evict one pod of {}", evict.workload.value));
            // A refusal (429) is the drill's evidence, not its end: the
            // backend records it on the timeline.
            backend.evict_one(&evict.workload)?;
            Ok(None)
        }
        Action::Pdb(change) => {
            backend.change_pdb(change)?;
            Ok(None)
        }
        Action::Apply(manifest) => {
            backend.apply_manifest(drill, manifest)?;
            Ok(None)
        }
        Action::Delete(object) => {
            backend.delete_object(object)?;
            Ok(None)
        }
        Action::Sleep(duration) => {
            let until = backend.now() + duration.as_millis();
            backend.advance_to(until);
            Ok(None)
        }
        Action::WaitUntil { condition, timeout } => {
            let timeout = timeout.as_millis();
            let deadline = backend.now() + timeout;
            loop {
                if holds(condition, backend) {
                    push_event(
                        backend,
                        drill,
                        EventKind::WaitSatisfied,
                        format!("{label}: condition held"),
                    );
                    return Ok(None);
                }
                match backend.next_change() {
                    Some(next) if next <= deadline => backend.advance_to(next),
                    _ => {
                        backend.advance_to(deadline);
                        if holds(condition, backend) {
                            continue;
                        }
                        let reason = format!(
                            "{label}: the condition did not hold within {}",
                            Duration::from_millis(timeout)
                        );
                        push_event(backend, drill, EventKind::WaitTimedOut, reason.clone());
                        return Ok(Some(reason));
                    }
                }
            }
        }
    }
}

fn holds(condition: &Condition, backend: &dyn Backend) -> bool {
    match condition {
        Condition::AllWorkloadsReady => backend.all_workloads_ready(),
        Condition::WorkloadReady(w) => backend.workload_ready(w),
        Condition::PoolSize(size) => backend.ready_nodes(&size.pool) == size.nodes,
        Condition::EtcdVoters(n) => backend.etcd_members() == (*n, 0),
    }
}

/// Resolves a fault's target to a node name.
fn resolve(target: &Target, backend: &mut dyn Backend) -> Result<String, RunError> {
    let none = |what: String| RunError::Backend(BackendError::NotFound(what));
    match target {
        Target::Node(name) => Ok(name.clone()),
        Target::RandomNodeOf(pool) => backend
            .random_node_of(pool)
            .ok_or_else(|| none(format!("pool `{pool}` has no live node to target"))),
        Target::AutoscalerPick(pool) => backend.autoscaler_pick(pool).ok_or_else(|| {
            none(format!(
                "the autoscaler would pick no node of pool `{pool}`"
            ))
        }),
        Target::EndpointHolder => backend
            .endpoint_holder()
            .ok_or_else(|| none("no control plane holds the endpoint".to_owned())),
        Target::OtherControlPlane => backend
            .other_control_plane()
            .ok_or_else(|| none(format!("no other live node in `{CONTROL_PLANE_POOL}`"))),
    }
}

/// Default reboot time of a node during a rolling upgrade.
pub const UPGRADE_REBOOT: Duration = Duration::from_secs(90);
/// Default drain timeout of a rolling upgrade.
pub const UPGRADE_DRAIN_TIMEOUT: Duration = Duration::from_mins(10);

/// Injects one fault, expressed once against the backend's primitives;
/// `Some(why)` when the fault itself failed in a way that stops the drill
/// (a rolling upgrade's blocked drain, a runbook step out of attempts).
fn inject(
    drill: &Drill,
    fault: &Fault,
    backend: &mut dyn Backend,
) -> Result<Option<String>, RunError> {
    match fault {
        Fault::DeleteNode(f) => {
            let node = resolve(&f.target, backend)?;
            backend.mark_fault(
                Some(&node),
                &format!(
                    "delete node {node}{}",
                    if f.drain { " (drained first)" } else { "" }
                ),
            );
            backend.delete_node(&node, f.drain, Duration::from_mins(10))?;
        }
        Fault::CrashNode(f) => {
            let node = resolve(&f.target, backend)?;
            backend.mark_fault(Some(&node), &format!("crash node {node}"));
            backend.crash_node(&node)?;
        }
        Fault::ReplaceNode(f) => {
            let node = resolve(&f.target, backend)?;
            backend.mark_fault(Some(&node), &format!("replace node {node}"));
            backend.replace_node(&node)?;
        }
        Fault::RecreateControlPlane(f) => {
            let node = resolve(&f.target, backend)?;
            backend.mark_fault(Some(&node), &format!("recreate control plane {node}"));
            let boot = f.boot_delay.as_ref().map(|b| (b.min, b.max));
            backend.recreate_control_plane(&node, boot)?;
        }
        Fault::RemovePool(f) => {
            backend.mark_fault(
                None,
                &format!(
                    "pool {} removed from the autoscaler's configuration",
                    f.pool.value
                ),
            );
            backend.remove_pool(&f.pool.value)?;
        }
        Fault::RollingUpgrade(f) => {
            // The runbook's pre-checks come first: a workload without a
            // budget or rolling with maxUnavailable above 0 can lose
            // availability to a drain, so the upgrade does not start.
            let findings = preflight::upgrade::check(&drill.workloads);
            if !findings.is_empty() {
                let listed = findings
                    .iter()
                    .map(|f| format!("{} ({}): {}", f.object, f.at, f.problem))
                    .collect::<Vec<_>>()
                    .join("; ");
                let reason = format!("upgrade pre-check failed, nothing was upgraded: {listed}");
                backend.mark_fault(None, &reason);
                return Ok(Some(reason));
            }
            let reboot = f.reboot.unwrap_or(UPGRADE_REBOOT);
            let drain_timeout = f.drain_timeout.unwrap_or(UPGRADE_DRAIN_TIMEOUT);
            backend.mark_fault(
                None,
                &format!(
                    "rolling upgrade: workers, then control planes, one at a time (reboot {reboot}, drain timeout {drain_timeout}); autoscaler nodes recycled"
                ),
            );
            return Ok(backend.rolling_upgrade(reboot, drain_timeout)?);
        }
        Fault::FullRebuild(f) => {
            backend.mark_fault(None, "full rebuild: every node and volume lost");
            let from = f.restore_from.as_ref().map(|s| s.value.as_str());
            return Ok(backend.full_rebuild(from, drill.spec.recovery.as_ref())?);
        }
        Fault::RestoreNamespace(f) => {
            backend.mark_fault(
                None,
                &format!(
                    "namespace {} backed up under {}, lost and restored",
                    f.namespace.value, f.schedule.value
                ),
            );
            backend.restore_namespace(&f.namespace.value, &f.schedule.value)?;
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drill(name: &str) -> Drill {
        let path = drillbench_model::scenario::catalog::resolve(name).expect("a built-in drill");
        Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)))
    }

    #[test]
    fn burst_capacity_needs_an_autoscaler_real_or_emulated() {
        let burst = drill("autoscaler-scale-down");
        let without = drillbench_backend::Capabilities {
            autoscaler: false,
            ..BackendKind::Sim.capabilities()
        };
        let refused = refuse_unsupported(&burst, "kubeconfig", without).unwrap_err();
        assert!(
            refused.to_string().contains(
                "the kubeconfig backend has no cluster autoscaler to scale its pools (assertion `burst-unchanged` needs burst capacity)"
            ),
            "{refused}"
        );
        // kind emulates one over standby nodes.
        assert!(refuse_unsupported(&burst, "kind", BackendKind::Kind.capabilities()).is_ok());
        // A drill that needs none runs without.
        assert!(refuse_unsupported(&drill("cp-recreate"), "kubeconfig", without).is_ok());
    }
}
