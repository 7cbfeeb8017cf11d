//! PodDisruptionBudgets as the watches show them: which pods each selects,
//! how many disruptions it allows, and whether an eviction the bench made
//! left it short.

use std::collections::BTreeMap;

use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};

use super::object::{Change, Object};
use drillbench_observe::{BudgetBreach, Time};

#[derive(Debug)]
struct Budget {
    selector: Option<Selector>,
    healthy: i32,
    desired: i32,
    /// `disruptionsAllowed`.
    allowed: i32,
}

/// Budgets by `namespace/name`.
#[derive(Debug, Default)]
pub(super) struct Budgets {
    by_key: BTreeMap<String, Budget>,
}

impl Budgets {
    /// Takes in a change to a budget (any other change is ignored).
    pub(super) fn take(&mut self, change: &Change) {
        match change {
            Change::Applied(Object::Budget(b)) => {
                let key = format!("{}/{}", b.namespace().unwrap_or_default(), b.name_any());
                let selector = b
                    .spec
                    .as_ref()
                    .and_then(|s| s.selector.clone())
                    .and_then(|s| Selector::try_from(s).ok());
                let status = b.status.clone().unwrap_or_default();
                let budget = Budget {
                    selector,
                    // A status not yet computed says nothing about health.
                    healthy: status.current_healthy.unwrap_or(i32::MAX),
                    desired: status.desired_healthy.unwrap_or(0),
                    allowed: status.disruptions_allowed.unwrap_or(0).max(0),
                };
                self.by_key.insert(key, budget);
            }
            Change::Deleted(Object::Budget(b)) => {
                let key = format!("{}/{}", b.namespace().unwrap_or_default(), b.name_any());
                self.by_key.remove(&key);
            }
            _ => {}
        }
    }

    fn selecting<'a>(
        &'a self,
        namespace: &'a str,
        labels: &'a BTreeMap<String, String>,
    ) -> impl Iterator<Item = (&'a String, &'a Budget)> {
        self.by_key.iter().filter(move |(key, budget)| {
            key.split('/').next() == Some(namespace)
                && budget.selector.as_ref().is_some_and(|s| s.matches(labels))
        })
    }

    /// The budgets selecting a pod: `namespace/name` and their
    /// `disruptionsAllowed`.
    pub(super) fn covering(
        &self,
        namespace: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<(String, i32)> {
        self.selecting(namespace, labels)
            .map(|(key, budget)| (key.clone(), budget.allowed))
            .collect()
    }

    /// The breaches of an accepted eviction of `namespace/name`: every
    /// budget selecting the pod that has fewer healthy pods than it wants.
    pub(super) fn breaches(
        &self,
        at: Time,
        namespace: &str,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Vec<BudgetBreach> {
        self.selecting(namespace, labels)
            .filter(|(_, budget)| budget.healthy < budget.desired)
            .map(|(key, budget)| BudgetBreach {
                at,
                pdb: key.clone(),
                pod: format!("{namespace}/{name}"),
                healthy: budget.healthy,
                desired: budget.desired,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn budget(namespace: &str, status: serde_json::Value) -> Change {
        Change::Applied(Object::Budget(Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": "db", "namespace": namespace},
                "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "db"}}},
                "status": status,
            }))
            .expect("budget"),
        )))
    }

    fn labels(app: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("app".to_owned(), app.to_owned())])
    }

    #[test]
    fn a_budget_covers_the_pods_its_selector_matches_in_its_namespace() {
        let mut budgets = Budgets::default();
        budgets.take(&budget(
            "apps",
            json!({"currentHealthy": 3, "desiredHealthy": 2, "disruptionsAllowed": 1, "expectedPods": 3}),
        ));
        assert_eq!(
            budgets.covering("apps", &labels("db")),
            [("apps/db".to_owned(), 1)]
        );
        assert!(budgets.covering("apps", &labels("web")).is_empty());
        assert!(budgets.covering("other", &labels("db")).is_empty());
        budgets.take(&Change::Deleted(Object::Budget(Box::new(
            serde_json::from_value(json!({"metadata": {"name": "db", "namespace": "apps"}}))
                .expect("budget"),
        ))));
        assert!(budgets.covering("apps", &labels("db")).is_empty());
    }

    #[test]
    fn a_budget_without_a_status_allows_nothing_and_is_never_breached() {
        let mut budgets = Budgets::default();
        budgets.take(&budget("apps", json!(null)));
        assert_eq!(
            budgets.covering("apps", &labels("db")),
            [("apps/db".to_owned(), 0)]
        );
        assert!(
            budgets
                .breaches(5, "apps", "db-0", &labels("db"))
                .is_empty()
        );
        budgets.take(&budget(
            "apps",
            json!({"currentHealthy": 1, "desiredHealthy": 2, "disruptionsAllowed": -1, "expectedPods": 3}),
        ));
        assert_eq!(
            budgets.covering("apps", &labels("db")),
            [("apps/db".to_owned(), 0)],
            "a negative allowance reads as none"
        );
        assert_eq!(
            budgets.breaches(5, "apps", "db-0", &labels("db")),
            [BudgetBreach {
                at: 5,
                pdb: "apps/db".to_owned(),
                pod: "apps/db-0".to_owned(),
                healthy: 1,
                desired: 2,
            }]
        );
    }
}
