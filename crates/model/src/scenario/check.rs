//! Checks of a drill's meaning that need nothing but the drill file itself:
//! versions, names, bounds, the one-of choices, and the recovery graph.
//! References to the cluster (pools, nodes, storage classes) are checked
//! once the topology is resolved, in [`crate::drill`].

use std::collections::{BTreeMap, BTreeSet};

use super::assertion::Assertion;
use super::diagnostic::{Diagnostic, Diagnostics, SourceFile};
use super::located::{Located, Position};
use super::spec::*;
use super::step::Step;
use crate::name_pattern::{NamePattern, is_dns_label};
use crate::workload_ref::WorkloadRef;

/// Collects every problem of one file instead of stopping at the first, so a
/// person fixes a drill in one pass.
pub struct Checker<'a> {
    source: &'a SourceFile,
    pub diagnostics: Diagnostics,
}

impl<'a> Checker<'a> {
    pub fn new(source: &'a SourceFile) -> Self {
        Checker {
            source,
            diagnostics: Diagnostics::default(),
        }
    }

    pub fn error(&mut self, at: Position, message: impl Into<String>) {
        self.diagnostics
            .push(Diagnostic::at(self.source, at, message));
    }

    pub(crate) fn error_with_help(
        &mut self,
        at: Position,
        message: impl Into<String>,
        help: impl Into<String>,
    ) {
        self.diagnostics
            .push(Diagnostic::at(self.source, at, message).with_help(help));
    }

    /// Records a problem if `names` already holds `name`; remembers it otherwise.
    pub fn unique<'n>(
        &mut self,
        what: &str,
        name: &'n Located<String>,
        names: &mut BTreeMap<&'n str, Position>,
    ) {
        if let Some(first) = names.get(name.as_str()) {
            let message = format!(
                "duplicate {what} `{}`; the first is at line {}",
                name.value, first.line
            );
            self.error(name.at, message);
        } else {
            names.insert(name.as_str(), name.at);
        }
    }

    /// Records a problem unless a probability lies in `[0, 1]`.
    pub fn probability(&mut self, what: &str, value: &Located<f64>) {
        if !(0.0..=1.0).contains(&value.value) {
            self.error(
                value.at,
                format!(
                    "{what} is {}; expected a number between 0 and 1",
                    value.value
                ),
            );
        }
    }
}

/// Runs every file-local check.
pub fn check(spec: &DrillSpec, checker: &mut Checker<'_>) -> (Vec<Step>, Vec<Assertion>) {
    if spec.api_version.as_str() != API_VERSION {
        checker.error(
            spec.api_version.at,
            format!(
                "unsupported apiVersion `{}`; expected `{API_VERSION}`",
                spec.api_version.value
            ),
        );
    }
    if spec.kind.as_str() != KIND {
        checker.error(
            spec.kind.at,
            format!("unsupported kind `{}`; expected `{KIND}`", spec.kind.value),
        );
    }
    check_name(checker, "drill name", &spec.metadata.name);
    check_cluster(&spec.cluster, checker);
    check_guard_entries(&spec.guard_entries, checker);
    check_guards(&spec.guards, checker);
    let steps = check_steps(&spec.steps, checker);
    let assertions = check_assertions(&spec.assertions, checker);
    if spec.assertions.is_empty() {
        // Issue 19: a drill without a verdict "passed 0 of 0" on every seed,
        // which reads as a green drill while it proved nothing.
        checker.error_with_help(
            spec.metadata.name.at,
            format!(
                "drill `{}` has no assertions, so it would pass on nothing; expected at least one under `assertions`",
                spec.metadata.name.value
            ),
            "add a verdict, e.g. `assertions: [{name: quorum, quorum: {}}]`",
        );
    }
    if let Some(recovery) = &spec.recovery {
        check_recovery(recovery, checker);
    }
    (steps, assertions)
}

/// Names that become node names, file names and report keys: lowercase
/// letters, digits and `-`, as a Kubernetes DNS-1123 label.
fn check_name(checker: &mut Checker<'_>, what: &str, name: &Located<String>) {
    if !is_dns_label(name) {
        checker.error(
            name.at,
            format!(
                "{what} `{}` is not a valid name; expected lowercase letters, digits and `-`, \
                 starting and ending with a letter or digit, at most 63 characters",
                name.value
            ),
        );
    }
}

fn check_cluster(cluster: &ClusterSpec, checker: &mut Checker<'_>) {
    if let Some(cp) = &cluster.control_planes {
        if let Some(count) = &cp.count
            && count.value == 0
        {
            checker.error(count.at, "a cluster needs at least one control plane");
        }
        if let Some(pattern) = &cp.name_pattern {
            check_pattern(checker, pattern);
        }
        if let Some(ordinals) = &cp.ordinals {
            // Issue 19: `ordinals: []` built a cluster of no control planes,
            // on which a quorum assertion held vacuously.
            if ordinals.is_empty() {
                checker.error(
                    ordinals.at,
                    "control-plane ordinals are empty; expected at least one, since a cluster needs at least one control plane",
                );
            }
            let unique: BTreeSet<u32> = ordinals.iter().copied().collect();
            if unique.len() != ordinals.len() {
                checker.error(ordinals.at, "control-plane ordinals must be distinct");
            }
            if let Some(count) = &cp.count
                && ordinals.len() != count.value as usize
            {
                checker.error(
                    ordinals.at,
                    format!(
                        "{} ordinals for {} control planes; expected one ordinal per control plane",
                        ordinals.len(),
                        count.value
                    ),
                );
            }
        }
    }
    let mut pool_names = BTreeMap::new();
    for pool in &cluster.pools {
        checker.unique("pool", &pool.name, &mut pool_names);
        check_name(checker, "pool name", &pool.name);
        if pool.count.is_some() && pool.autoscaled.is_some() {
            checker.error(
                pool.at,
                format!(
                    "pool `{}` sets both `count` and `autoscaled`; expected one: a static pool \
                     has a count, an autoscaled pool a min and a max",
                    pool.name.value
                ),
            );
        }
        if let Some(range) = &pool.autoscaled
            && range.min.value > range.max.value
        {
            checker.error(
                range.min.at,
                format!(
                    "pool `{}` has min {} above max {}; expected min <= max",
                    pool.name.value, range.min.value, range.max.value
                ),
            );
        }
        if let Some(pattern) = &pool.name_pattern {
            check_pattern(checker, pattern);
        }
    }
    if let Some(autoscaler) = &cluster.autoscaler {
        if let Some(threshold) = &autoscaler.scale_down_utilization_threshold
            && !(threshold.value > 0.0 && threshold.value <= 1.0)
        {
            checker.error(
                threshold.at,
                format!(
                    "utilisation threshold {} is out of range; expected a number above 0 and at most 1",
                    threshold.value
                ),
            );
        }
        if let Some(max) = &autoscaler.max_nodes_total
            && max.value == 0
        {
            checker.error(max.at, "maxNodesTotal is 0; expected at least 1");
        }
        if let Some(range) = &autoscaler.boot_delay {
            check_range(checker, range);
        }
        // A parallelism of 0 would remove no node ever, silently: a drill
        // that means it says so with a pool's min or the scale-down-disabled
        // annotation. A drain parallelism above the total is capped by it,
        // as upstream's budgets do (`core/scaledown/budgets`).
        for (flag, value) in [
            ("maxDrainParallelism", &autoscaler.max_drain_parallelism),
            (
                "maxScaleDownParallelism",
                &autoscaler.max_scale_down_parallelism,
            ),
        ] {
            if let Some(n) = value
                && n.value == 0
            {
                checker.error(n.at, format!("{flag} is 0; expected at least 1"));
            }
        }
    }
    let mut class_names = BTreeMap::new();
    let mut default_class: Option<&Located<String>> = None;
    for class in &cluster.storage_classes {
        checker.unique("storage class", &class.name, &mut class_names);
        if class.default {
            if let Some(first) = default_class {
                checker.error(
                    class.name.at,
                    format!(
                        "storage classes `{}` and `{}` are both the default; expected at most one",
                        first.value, class.name.value
                    ),
                );
            } else {
                default_class = Some(&class.name);
            }
        }
    }
    let mut schedules = BTreeMap::new();
    for backup in &cluster.backups {
        checker.unique("backup schedule", &backup.schedule, &mut schedules);
        if backup.every.as_millis() == 0 {
            checker.error(
                backup.schedule.at,
                "a backup schedule runs `every` 0s; expected a positive interval",
            );
        }
        if let Some(p) = &backup.failure_probability {
            checker.probability("failureProbability", p);
        }
    }
}

fn check_pattern(checker: &mut Checker<'_>, pattern: &Located<String>) {
    if let Err(error) = NamePattern::parse(pattern.as_str()) {
        checker.error(pattern.at, error.to_string());
    }
}

fn check_range(checker: &mut Checker<'_>, range: &Located<DurationRange>) {
    if range.min > range.max {
        checker.error(
            range.at,
            format!(
                "range min {} is above max {}; expected min <= max",
                range.min, range.max
            ),
        );
    }
}

/// Checks a node-selector requirement the way the API server validates one.
pub(crate) fn check_requirement(
    checker: &mut Checker<'_>,
    at: Position,
    requirement: &NodeRequirement,
) {
    let values = requirement.values.as_deref().unwrap_or(&[]);
    let problem = match requirement.operator {
        NodeOperator::In | NodeOperator::NotIn if values.is_empty() => Some(format!(
            "operator {:?} needs at least one value",
            requirement.operator
        )),
        NodeOperator::Exists | NodeOperator::DoesNotExist if !values.is_empty() => Some(format!(
            "operator {:?} takes no values",
            requirement.operator
        )),
        NodeOperator::Gt | NodeOperator::Lt
            if values.len() != 1 || values[0].parse::<i64>().is_err() =>
        {
            Some(format!(
                "operator {:?} needs exactly one integer value",
                requirement.operator
            ))
        }
        _ => None,
    };
    if requirement.key.is_empty() {
        checker.error(
            at,
            "node requirement has an empty key; expected a label key",
        );
    }
    if let Some(problem) = problem {
        checker.error(
            at,
            format!(
                "invalid node requirement on `{}`: {problem}",
                requirement.key
            ),
        );
    }
}

/// Each `guards:` entry is one form: `policy:` alone, or the shorthand
/// with all of `name`, `action`, `match` and `require`.
fn check_guard_entries(entries: &[Located<GuardEntry>], checker: &mut Checker<'_>) {
    for entry in entries {
        let shorthand = [
            ("name", entry.name.is_some()),
            ("action", entry.action.is_some()),
            ("match", entry.matches.is_some()),
            ("require", entry.require.is_some()),
            ("mutate", entry.mutate),
        ];
        if entry.policy.is_some() {
            let set: Vec<&str> = shorthand
                .iter()
                .filter(|(_, s)| *s)
                .map(|(n, _)| *n)
                .collect();
            if !set.is_empty() {
                checker.error(
                    entry.at,
                    format!(
                        "a `policy:` guard is named and judged by its Kyverno policy; remove `{}`",
                        set.join("`, `")
                    ),
                );
            }
            continue;
        }
        let missing: Vec<&str> = shorthand[..4]
            .iter()
            .filter(|(_, s)| !*s)
            .map(|(n, _)| *n)
            .collect();
        if !missing.is_empty() {
            checker.error(
                entry.at,
                format!(
                    "a guard is `policy:` (a Kyverno policy) or the shorthand with name, action, match and require; missing `{}`",
                    missing.join("`, `")
                ),
            );
        }
    }
}

fn check_guards(guards: &[Located<GuardSpec>], checker: &mut Checker<'_>) {
    let mut names = BTreeMap::new();
    for guard in guards {
        checker.unique("guard", &guard.name, &mut names);
        let requirement = &guard.require.node_affinity;
        check_requirement(checker, requirement.at, requirement);
    }
}

/// Checks every step and lowers each that passes into its typed form; one
/// that cannot be lowered has an error recorded against it here.
fn check_steps(steps: &[Located<StepSpec>], checker: &mut Checker<'_>) -> Vec<Step> {
    let mut lowered = Vec::new();
    for (index, step) in steps.iter().enumerate() {
        lowered.extend(Step::lower(step, index));
        let set = step.actions_set();
        if set != 1 {
            checker.error(
                step.at,
                format!(
                    "a step sets {set} actions; expected exactly one of preflight, fault, scale, \
                     rollout, wait, taint, untaint, cordon, uncordon, label, annotate, evict, \
                     deleteNodeObject, pdb, apply, delete"
                ),
            );
        }
        check_node_step(step, checker);
        if let Some(delete) = &step.delete {
            check_delete_step(delete, checker);
        }
        if let Some(pdb) = &step.pdb {
            check_pdb_step(pdb, step.at, checker);
        }
        if let Some(rollout) = &step.rollout
            && WorkloadRef::parse(&rollout.workload).is_some_and(|w| w.kind != "Deployment")
        {
            checker.error(
                rollout.workload.at,
                format!(
                    "workload `{}` is not a Deployment; rollouts are modelled for Deployments only",
                    rollout.workload.value
                ),
            );
        }
        if let Some(wait) = &step.wait {
            match (&wait.duration, &wait.until) {
                (Some(_), Some(until)) => {
                    checker.error(until.at, "a wait sets both `for` and `until`; expected one")
                }
                (None, None) => checker.error(
                    step.at,
                    "a wait sets neither `for` nor `until`; expected one",
                ),
                (None, Some(until)) if wait.timeout.is_none() => checker.error_with_help(
                    until.at,
                    "a wait `until` a condition has no `timeout`",
                    "add `timeout: 10m` (or the longest the drill may wait)",
                ),
                _ => {}
            }
        }
        if let Some(fault) = &step.fault {
            match &fault.value {
                Fault::RecreateControlPlane(f) => {
                    if let Some(range) = &f.boot_delay {
                        check_range(checker, range);
                    }
                }
                // Only a recreate boots a node of the step's own: taken
                // anywhere else, the range would be read and then ignored.
                Fault::DeleteNode(f) | Fault::CrashNode(f) | Fault::ReplaceNode(f) => {
                    if let Some(range) = &f.boot_delay {
                        checker.error_with_help(
                            range.at,
                            "`bootDelay` is the boot time of a recreated control plane; this \
                             fault boots no node of its own",
                            "a `replaceNode`'s server boots in the `nodeBoot` latency \
                             (`cluster.latencies.nodeBoot`); an autoscaled node in \
                             `autoscaler.bootDelay`",
                        );
                    }
                }
                _ => {}
            }
        }
    }
    lowered
}

/// A delete step names a kind whose deletion is modelled, and a name and
/// namespace the API server could hold (`ValidateObjectMeta`: a DNS-1123
/// subdomain for these kinds' names, a label for a namespace).
fn check_delete_step(delete: &crate::scenario::spec::DeleteStep, checker: &mut Checker<'_>) {
    use crate::scenario::step::DELETABLE_KINDS;
    if !DELETABLE_KINDS.contains(&delete.kind.as_str()) {
        checker.error(
            delete.kind.at,
            format!(
                "a delete step cannot delete a `{}`{}; expected one of {}",
                delete.kind.value,
                crate::suggest::closest(&delete.kind.value, DELETABLE_KINDS)
                    .map(|k| format!(" (did you mean `{k}`?)"))
                    .unwrap_or_default(),
                DELETABLE_KINDS.join(", ")
            ),
        );
    }
    use crate::manifest_rules::{
        DNS1123_LABEL, DNS1123_SUBDOMAIN, is_dns1123_label, is_dns1123_subdomain,
    };
    if !is_dns1123_subdomain(&delete.name) {
        checker.error(
            delete.name.at,
            format!(
                "`{}` is not a valid object name; expected {DNS1123_SUBDOMAIN}",
                delete.name.value
            ),
        );
    }
    if let Some(namespace) = &delete.namespace
        && !is_dns1123_label(namespace)
    {
        checker.error(
            namespace.at,
            format!(
                "`{}` is not a valid namespace name; expected {DNS1123_LABEL}",
                namespace.value
            ),
        );
    }
}

/// A budget step names `namespace/name` and sets exactly one bound, as
/// policy/v1 validation of a PodDisruptionBudget requires
/// (`ValidatePodDisruptionBudgetSpec`: "minAvailable and maxUnavailable
/// cannot be both set"); an unset pair would leave the budget without one.
fn check_pdb_step(pdb: &crate::scenario::spec::PdbStep, at: Position, checker: &mut Checker<'_>) {
    let parts: Vec<&str> = pdb.name.split('/').collect();
    if parts.len() != 2 || parts.iter().any(|p| p.is_empty()) {
        checker.error(
            pdb.name.at,
            format!(
                "budget `{}` is not `namespace/name`; expected e.g. `apps/web`",
                pdb.name.value
            ),
        );
    }
    match (&pdb.min_available, &pdb.max_unavailable) {
        (Some(_), Some(max)) => checker.error(
            max.at,
            "a pdb step sets both `minAvailable` and `maxUnavailable`; the API server \
             refuses a budget with both; expected one",
        ),
        (None, None) => checker.error(
            at,
            "a pdb step sets neither `minAvailable` nor `maxUnavailable`; expected one",
        ),
        _ => {}
    }
}

/// What the API server would refuse in a node step: a taint key that is
/// not a qualified name or a value that is not a label value
/// (`ValidateTaints`), label keys and values (`ValidateLabels`), annotation
/// keys (`ValidateAnnotations`).
fn check_node_step(step: &StepSpec, checker: &mut Checker<'_>) {
    use crate::manifest_rules::is_qualified_name;
    use crate::object_rules::is_label_value;
    const QUALIFIED: &str = "expected an optional DNS subdomain and `/`, then at most 63 \
                             letters, digits, `-`, `_`, `.`, starting and ending with a letter or digit";
    const VALUE: &str = "expected at most 63 characters, empty or starting and ending with a \
                         letter or digit, with `-`, `_`, `.` between";
    let key = |what: &str, key: &Located<String>, checker: &mut Checker<'_>| {
        if !is_qualified_name(key) {
            checker.error(
                key.at,
                format!(
                    "{what} key `{}` is not a qualified name; {QUALIFIED}",
                    key.value
                ),
            );
        }
    };
    if let Some(t) = &step.taint {
        key("taint", &t.key, checker);
        if let Some(value) = &t.value
            && !is_label_value(value)
        {
            checker.error(
                value.at,
                format!(
                    "taint value `{}` is not a valid label value; {VALUE}",
                    value.value
                ),
            );
        }
    }
    if let Some(t) = &step.untaint {
        key("taint", &t.key, checker);
    }
    for (what, edit) in [("label", &step.label), ("annotation", &step.annotate)] {
        let Some(edit) = edit else { continue };
        if edit.set.is_empty() && edit.remove.is_empty() {
            checker.error(
                edit.target.at,
                format!(
                    "the {what} step sets and removes nothing; expected `set`, `remove` or both"
                ),
            );
        }
        for k in edit.set.keys().chain(edit.remove.iter()) {
            key(what, &Located::at(k.clone(), edit.set.at), checker);
        }
        if let Some(both) = edit.remove.iter().find(|k| edit.set.contains_key(*k)) {
            checker.error(
                edit.remove.at,
                format!("{what} `{both}` is both set and removed; expected one"),
            );
        }
        if what == "label" {
            for (k, v) in edit.set.iter() {
                if !is_label_value(v) {
                    checker.error(
                        edit.set.at,
                        format!("label `{k}` has value `{v}`, not a valid label value; {VALUE}"),
                    );
                }
            }
        }
    }
}

/// Checks every assertion and lowers each that passes into its typed form;
/// one that cannot be lowered has an error recorded against it here.
fn check_assertions(
    assertions: &[Located<AssertionSpec>],
    checker: &mut Checker<'_>,
) -> Vec<Assertion> {
    let mut names = BTreeMap::new();
    let mut lowered = Vec::new();
    for assertion in assertions {
        lowered.extend(Assertion::lower(assertion));
        checker.unique("assertion", &assertion.name, &mut names);
        let kinds = assertion.kind_names();
        if kinds.len() != 1 {
            checker.error(
                assertion.name.at,
                format!(
                    "assertion `{}` sets {} kinds{}; expected exactly one of {}",
                    assertion.name.value,
                    kinds.len(),
                    if kinds.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", kinds.join(", "))
                    },
                    ASSERTION_KINDS.join(", ")
                ),
            );
        }
        if let Some(a) = &assertion.availability {
            checker.probability("atLeast", &a.at_least);
            if let Some(min) = &a.min_ready {
                if !matches!(a.of.value, Subject::Workload(_)) {
                    checker.error(
                        min.at,
                        "minReady counts one workload's Ready replicas; expected `of: {workload: namespace/Kind/name}`",
                    );
                } else if min.value == 0 {
                    checker.error(
                        min.at,
                        "minReady is 0, which every moment satisfies; expected at least 1",
                    );
                }
            }
        }
        if let Some(p) = &assertion.placement {
            if p.nodes.is_empty() {
                checker.error(
                    assertion.name.at,
                    format!(
                        "placement assertion `{}` has no node requirement; expected at least one under `nodes`",
                        assertion.name.value
                    ),
                );
            }
            for requirement in &p.nodes {
                check_requirement(checker, requirement.at, requirement);
            }
        }
        if let Some(control) = &assertion.negative_control {
            let forms = [
                control.admission.is_some(),
                control.ablation.is_some(),
                control.weaken.is_some(),
            ];
            if forms.iter().filter(|set| **set).count() != 1 {
                checker.error(
                    assertion.name.at,
                    format!(
                        "negative control `{}` must set exactly one of admission, ablation, weaken",
                        assertion.name.value
                    ),
                );
            }
            if let Some(weaken) = &control.weaken {
                match (weaken.must_fail.is_empty(), &weaken.preflight_refuses) {
                    (true, None) => checker.error(
                        weaken.change.at,
                        "a weakening names no assertion in `mustFail` and no `preflightRefuses`, \
                         so it cannot fail; expected one of them",
                    ),
                    (false, Some(guard)) => checker.error(
                        guard.at,
                        "a weakening sets both `mustFail` and `preflightRefuses`; a refused \
                         drill runs no fault, so expected only one of them",
                    ),
                    _ => {}
                }
                if weaken.change.value.parts().into_iter().any(|c| {
                    matches!(
                        c,
                        crate::scenario::spec::DrillChange::StartWithControlPlanes(0)
                    )
                }) {
                    checker.error(
                        weaken.change.at,
                        "`startWithControlPlanes` must keep at least one control plane",
                    );
                }
            }
            match (&control.admission, &control.ablation) {
                (Some(_), Some(_)) | (None, None) => {}
                (None, Some(ablation)) => {
                    if ablation.must_fail.is_empty() {
                        checker.error(
                            ablation.guard.at,
                            "an ablation names no assertion in `mustFail`, so it cannot fail; \
                             expected at least one",
                        );
                    }
                    if let GuardChange::ReplaceRequirement(requirement) = &ablation.change.value {
                        check_requirement(checker, ablation.change.at, requirement);
                    }
                }
                (Some(_), None) => {}
            }
        }
    }
    lowered
}

/// The assertion kinds, as the language spells them.
pub(crate) const ASSERTION_KINDS: [&str; 12] = [
    "rto",
    "rpo",
    "availability",
    "placement",
    "quorum",
    "pdbRespected",
    "burstUnchanged",
    "noStrandedVolumes",
    "endpointUnchanged",
    "memberPromoted",
    "noStrandedNodes",
    "negativeControl",
];

fn check_recovery(recovery: &RecoverySpec, checker: &mut Checker<'_>) {
    let mut names = BTreeMap::new();
    for step in &recovery.steps {
        checker.unique("recovery step", &step.name, &mut names);
        if let DurationDistribution::Uniform(range) = &step.duration.value
            && range.min > range.max
        {
            checker.error(
                step.duration.at,
                format!(
                    "range min {} is above max {}; expected min <= max",
                    range.min, range.max
                ),
            );
        }
        if let DurationDistribution::Triangular(t) = &step.duration.value
            && !(t.min <= t.mode && t.mode <= t.max)
        {
            checker.error(
                step.duration.at,
                format!(
                    "triangular distribution {} / {} / {} is out of order; expected min <= mode <= max",
                    t.min, t.mode, t.max
                ),
            );
        }
        if let Some(p) = &step.failure_probability {
            checker.probability("failureProbability", p);
        }
        if let Some(attempts) = &step.max_attempts
            && attempts.value == 0
        {
            checker.error(attempts.at, "maxAttempts is 0; expected at least 1");
        }
    }
    for step in &recovery.steps {
        for dependency in &step.after {
            if !names.contains_key(dependency.as_str()) {
                checker.error(
                    dependency.at,
                    format!(
                        "recovery step `{}` comes after `{}`, which is not a recovery step; expected one of: {}",
                        step.name.value,
                        dependency.value,
                        names.keys().copied().collect::<Vec<_>>().join(", ")
                    ),
                );
            }
        }
    }
    if let Some(cycle) = find_cycle(&recovery.steps) {
        let first = &recovery.steps[cycle[0]];
        let path: Vec<&str> = cycle
            .iter()
            .chain(std::iter::once(&cycle[0]))
            .map(|&i| recovery.steps[i].name.as_str())
            .collect();
        checker.error(
            first.name.at,
            format!(
                "the recovery graph has a cycle: {} (each must finish before the next starts); expected a graph without cycles",
                path.join(" -> ")
            ),
        );
    }
}

/// A cycle of `after` edges, as indices into `steps`, if there is one.
fn find_cycle(steps: &[Located<RecoveryStep>]) -> Option<Vec<usize>> {
    let index: BTreeMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.as_str(), i))
        .collect();
    // Iterative depth-first search with colours, so a long chain cannot
    // overflow the stack.
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    let mut colour = vec![Colour::White; steps.len()];
    for start in 0..steps.len() {
        if colour[start] != Colour::White {
            continue;
        }
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        colour[start] = Colour::Grey;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            let edges = &steps[node].after;
            if *next < edges.len() {
                let target = index.get(edges[*next].as_str()).copied();
                *next += 1;
                let Some(target) = target else { continue };
                match colour[target] {
                    Colour::Grey => {
                        let from = stack.iter().position(|(n, _)| *n == target).unwrap_or(0);
                        return Some(stack[from..].iter().map(|(n, _)| *n).rev().collect());
                    }
                    Colour::White => {
                        colour[target] = Colour::Grey;
                        stack.push((target, 0));
                    }
                    Colour::Black => {}
                }
            } else {
                colour[node] = Colour::Black;
                stack.pop();
            }
        }
    }
    None
}
