//! The runbook's pre-checks before a rolling upgrade, read from the
//! manifests: every multi-replica workload has a PodDisruptionBudget, and
//! every Deployment rolls with `maxUnavailable: 0`. Either missing means a
//! node drain may take a workload below what it serves with.

use serde_json::Value;

use drillbench_model::manifest::Document;
use drillbench_model::workload_ref::WorkloadRef;

/// One reason the upgrade must not start, naming the object and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// `namespace/Kind/name`.
    pub object: String,
    /// `file:line:column` of its document.
    pub at: String,
    pub problem: String,
}

/// The pre-check findings for a set of manifests; empty means go.
pub fn check(documents: &[Document]) -> Vec<Finding> {
    let budgets: Vec<(String, &serde_json::Map<String, Value>)> = documents
        .iter()
        .filter(|d| d.value["kind"] == "PodDisruptionBudget")
        .filter_map(|d| {
            let labels = d.value["spec"]["selector"]["matchLabels"].as_object()?;
            Some((namespace(&d.value), labels))
        })
        .collect();
    let mut findings = Vec::new();
    for doc in documents {
        let kind = doc.value["kind"].as_str().unwrap_or_default();
        if !matches!(kind, "Deployment" | "StatefulSet") {
            continue;
        }
        let ns = namespace(&doc.value);
        let object = WorkloadRef::of_object(&doc.value).to_string();
        let at = format!("{}:{}:{}", doc.source, doc.line, doc.column);
        let replicas = doc.value["spec"]["replicas"].as_i64().unwrap_or(1);
        let labels = doc.value["spec"]["template"]["metadata"]["labels"].as_object();
        // A workload scaled to zero now may still run many replicas later
        // (the burst Deployment): it needs its budget all the same.
        let multi = replicas != 1;
        let covered = labels.is_some_and(|labels| {
            budgets.iter().any(|(bns, selector)| {
                *bns == ns
                    && !selector.is_empty()
                    && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
            })
        });
        if multi && !covered {
            findings.push(Finding {
                object: object.clone(),
                at: at.clone(),
                problem: format!("{replicas} replicas and no PodDisruptionBudget selects them"),
            });
        }
        if kind == "Deployment" {
            let strategy = &doc.value["spec"]["strategy"];
            let recreate = strategy["type"] == "Recreate";
            let max_unavailable = &strategy["rollingUpdate"]["maxUnavailable"];
            let zero = max_unavailable == 0 || max_unavailable == "0" || max_unavailable == "0%";
            if recreate || !zero {
                findings.push(Finding {
                    object,
                    at,
                    problem: format!(
                        "rolls with maxUnavailable {} (the runbook wants 0)",
                        if recreate {
                            "of everything (Recreate)".to_owned()
                        } else if max_unavailable.is_null() {
                            "25% (the default)".to_owned()
                        } else {
                            max_unavailable.to_string()
                        }
                    ),
                });
            }
        }
    }
    findings
}

fn namespace(value: &Value) -> String {
    value["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(value: Value) -> Document {
        Document {
            source: "m.yaml".to_owned(),
            index: 0,
            line: 1,
            column: 1,
            value,
        }
    }

    fn deployment(max_unavailable: Value, replicas: i64) -> Document {
        doc(serde_json::json!({
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {
                "replicas": replicas,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}},
                "template": {"metadata": {"labels": {"app": "web"}}}
            }
        }))
    }

    fn pdb(labels: Value) -> Document {
        doc(serde_json::json!({
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "web", "namespace": "apps"},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": labels}}
        }))
    }

    #[test]
    fn a_covered_deployment_with_max_unavailable_zero_passes() {
        let docs = [
            deployment(0.into(), 3),
            pdb(serde_json::json!({"app": "web"})),
        ];
        assert_eq!(check(&docs), Vec::new());
    }

    #[test]
    fn a_missing_budget_and_a_nonzero_max_unavailable_are_both_found() {
        let docs = [
            deployment("25%".into(), 3),
            pdb(serde_json::json!({"app": "other"})),
        ];
        let found = check(&docs);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].problem.contains("no PodDisruptionBudget"));
        assert!(found[1].problem.contains("\"25%\""));
        assert_eq!(found[0].object, "apps/Deployment/web");
        assert_eq!(found[0].at, "m.yaml:1:1");
    }

    #[test]
    fn a_single_replica_needs_no_budget_but_still_its_strategy() {
        let found = check(&[deployment(Value::Null, 1)]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].problem.contains("default"));
    }
}
