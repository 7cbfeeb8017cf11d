//! A live background check: one named policy's validate rules run over the
//! running Pods and the Nodes read from a cluster, as Kyverno's background
//! scan evaluates existing resources (kyverno.io/docs/policy-reports/
//! background: "background scans … evaluate existing resources", only for
//! policies with `background: true`, the default). Reads only; the
//! objects read (claims and storage classes included) answer the policy's
//! `apiCall` and `configMap` context entries, so a rule that resolves a
//! Pod's claims sees the live ones.
//!
//! A rule that fails, errs or cannot be evaluated is reported, never passed.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use serde_json::Value;

use crate::context::InMemoryCluster;
use crate::engine::{Engine, RuleResult, RuleStatus, background_scan};
use crate::policy::{self, Policy};
use drillbench_model::manifest;

/// Why the check could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LiveError {
    /// A policy file could not be read, said where.
    #[error("{0}")]
    Input(String),
    #[error("no policy named `{name}` in the files given (found: {})", .found.join(", "))]
    NoSuchPolicy { name: String, found: Vec<String> },
    #[error(
        "policy `{0}` sets `background: false`: Kyverno's background scan does not evaluate existing resources with it"
    )]
    NotBackground(String),
}

/// One live object's result for one rule that did not pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// `Kind/namespace/name`, or `Kind/name` for a Node.
    pub resource: String,
    pub result: RuleResult,
}

/// What the check found.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveScan {
    pub policy: String,
    pub pods: usize,
    pub nodes: usize,
    /// Rule results that passed.
    pub passed: usize,
    /// Rule results that failed, erred or were not evaluated, by resource.
    pub findings: Vec<Finding>,
}

impl LiveScan {
    /// Whether every evaluated rule passed (or skipped) on every object.
    pub fn clean(&self) -> bool {
        self.findings.is_empty()
    }

    /// The check's report: a heading, then one line per finding.
    pub fn render(&self) -> String {
        let mut out = format!(
            "policy {} over {} running pods and {} nodes: {} rule results passed, {} did not\n",
            self.policy,
            self.pods,
            self.nodes,
            self.passed,
            self.findings.len()
        );
        for f in &self.findings {
            let _ = writeln!(
                out,
                "  {:<13} {}  {}: {}",
                f.result.status.to_string(),
                f.resource,
                f.result.rule,
                f.result.message
            );
        }
        out
    }
}

/// Every Kyverno policy in the YAML files given.
pub fn load_policies(paths: &[PathBuf]) -> Result<Vec<Policy>, LiveError> {
    let mut policies = Vec::new();
    for path in paths {
        let docs = manifest::load_documents(path).map_err(|e| LiveError::Input(e.to_string()))?;
        for doc in &docs {
            if policy::is_policy(&doc.value) {
                policies
                    .push(policy::from_document(doc).map_err(|e| LiveError::Input(e.to_string()))?);
            }
        }
    }
    Ok(policies)
}

/// Runs the background scan of policy `name` (its name, or `ns/name` for
/// a namespaced Policy) over the running Pods and the Nodes among
/// `objects`, in a stable order (kind, namespace, name).
pub fn scan(policies: &[Policy], name: &str, objects: Vec<Value>) -> Result<LiveScan, LiveError> {
    let Some(policy) = policies
        .iter()
        .find(|p| p.name == name || p.display_name() == name)
    else {
        return Err(LiveError::NoSuchPolicy {
            name: name.to_owned(),
            found: policies
                .iter()
                .map(Policy::display_name)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
        });
    };
    if !policy.background {
        return Err(LiveError::NotBackground(policy.display_name()));
    }
    let text = |o: &Value, pointer: &str| {
        o.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let mut scanned: Vec<(String, String, String, &Value)> = objects
        .iter()
        .filter_map(|o| {
            let kind = text(o, "/kind");
            let running = text(o, "/status/phase") == "Running";
            ((kind == "Pod" && running) || kind == "Node").then(|| {
                (
                    kind,
                    text(o, "/metadata/namespace"),
                    text(o, "/metadata/name"),
                    o,
                )
            })
        })
        .collect();
    scanned.sort_by(|a, b| (&a.0, &a.1, &a.2).cmp(&(&b.0, &b.1, &b.2)));
    let cluster = InMemoryCluster::new(objects.clone());
    let engine = Engine::new(&cluster);
    let mut result = LiveScan {
        policy: policy.display_name(),
        pods: scanned.iter().filter(|s| s.0 == "Pod").count(),
        nodes: scanned.iter().filter(|s| s.0 == "Node").count(),
        passed: 0,
        findings: Vec::new(),
    };
    for (kind, namespace, name, object) in scanned {
        let resource = if namespace.is_empty() {
            format!("{kind}/{name}")
        } else {
            format!("{kind}/{namespace}/{name}")
        };
        for r in background_scan(&engine, std::slice::from_ref(policy), object) {
            match r.status {
                RuleStatus::Pass => result.passed += 1,
                RuleStatus::Skip => {}
                RuleStatus::Fail | RuleStatus::Error | RuleStatus::NotEvaluated => {
                    result.findings.push(Finding {
                        resource: resource.clone(),
                        result: r,
                    })
                }
            }
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The docs' require-labels shape (kyverno.io/policies/best-practices/
    /// require-labels): a Pod must carry a `team` label.
    fn policy(background: bool) -> Policy {
        policy::from_value(&json!({
            "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
            "metadata": {"name": "require-team"},
            "spec": {"background": background, "rules": [{
                "name": "team-label",
                "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
                "validate": {"message": "label team is required",
                             "pattern": {"metadata": {"labels": {"team": "?*"}}}}}]}
        }))
        .expect("a policy")
    }

    fn pod(name: &str, phase: &str, labels: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": "apps", "labels": labels},
               "status": {"phase": phase}})
    }

    #[test]
    fn the_running_pods_that_break_the_policy_are_named_and_the_others_pass() {
        let objects = vec![
            pod("b-unlabelled", "Running", json!({})),
            pod("a-labelled", "Running", json!({"team": "core"})),
            // Not running: Kyverno's scan would see it, a check of what
            // runs does not.
            pod("c-pending", "Pending", json!({})),
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
        ];
        let scan = scan(&[policy(true)], "require-team", objects).expect("scanned");
        assert_eq!((scan.pods, scan.nodes, scan.passed), (2, 1, 1));
        assert_eq!(scan.findings.len(), 1);
        assert_eq!(scan.findings[0].resource, "Pod/apps/b-unlabelled");
        assert_eq!(scan.findings[0].result.status, RuleStatus::Fail);
        assert!(!scan.clean());
        assert!(
            scan.render()
                .contains("fail          Pod/apps/b-unlabelled  team-label:"),
            "{}",
            scan.render()
        );
        // Control: with the label, nothing breaks it.
        let clean = scan_of(vec![pod("b", "Running", json!({"team": "x"}))]);
        assert!(clean.clean());
    }

    fn scan_of(objects: Vec<Value>) -> LiveScan {
        scan(&[policy(true)], "require-team", objects).expect("scanned")
    }

    #[test]
    fn a_policy_without_background_or_absent_is_refused() {
        assert_eq!(
            scan(&[policy(false)], "require-team", Vec::new()),
            Err(LiveError::NotBackground("require-team".to_owned()))
        );
        assert!(matches!(
            scan(&[policy(true)], "other", Vec::new()),
            Err(LiveError::NoSuchPolicy { .. })
        ));
    }
}
