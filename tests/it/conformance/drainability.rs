//! What keeps the cluster autoscaler from moving a pod: its drainability
//! rules in the order `simulator/drainability/rules/rules.go` runs them
//! (safe-to-evict "true" first, then replicated, system, not safe to
//! evict, local storage, budgets), and how `utils/drain` reads local
//! volumes and the annotations.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use serde_json::{Value, json};

use super::scale_down::{Cluster, Pod, blocks};
use super::{Behaviour, Pair, Source, from_json, labels, pair, row};
use drillbench_model::topology::Autoscaler;
use drillbench_policy::scale_down::{
    Blocker, SAFE_TO_EVICT, SAFE_TO_EVICT_LOCAL_VOLUMES, blocking_local_storage, safe_to_evict,
};
use drillbench_policy::view::Budget;

/// The blocker of a node-0 pod edited by `edit`, with `settings`.
fn blocker_of(edit: impl FnOnce(&mut Pod), settings: &Autoscaler) -> Option<Blocker> {
    blocks(&Cluster::new(2).with(0, "web", 100, edit), settings)
}

fn budget(allowed: i32) -> Budget {
    Budget {
        name: "default/web".to_owned(),
        disruptions_allowed: allowed,
    }
}

/// Whether a pod with these volumes and annotations has blocking local
/// storage.
fn local(volumes: Value, annotations: &[(&str, &str)]) -> bool {
    let spec: PodSpec = from_json(json!({"containers": [], "volumes": volumes}));
    blocking_local_storage(&spec, &labels(annotations))
}

fn annotated(value: &str) -> Option<bool> {
    safe_to_evict(&BTreeMap::from([(
        SAFE_TO_EVICT.to_owned(),
        value.to_owned(),
    )]))
}

pub(super) fn pairs() -> Vec<Pair> {
    let defaults = Autoscaler::default();
    let mut keep_nothing = defaults.clone();
    keep_nothing.skip_nodes_with_local_storage = false;
    keep_nothing.skip_nodes_with_system_pods = false;
    let rules = |case, control| pair(Source::Drainability, Behaviour::SafeToEvict, case, control);
    let storage =
        |case, control| pair(Source::Drainability, Behaviour::LocalStorage, case, control);
    let faq = |case, control| {
        pair(
            Source::AutoscalerFaq,
            Behaviour::DisruptionBudget,
            case,
            control,
        )
    };
    let scratch = json!([{"name": "scratch", "emptyDir": {}}]);
    let two_local = json!([
        {"name": "scratch", "emptyDir": {}},
        {"name": "logs", "hostPath": {"path": "/var/log"}},
    ]);
    vec![
        rules(
            row(
                "rules/notsafetoevict: safe-to-evict \"false\" keeps the pod",
                blocker_of(|p| p.safe_to_evict = Some(false), &defaults),
                Some(Blocker::NotSafeToEvict),
            ),
            row(
                "control: no annotation",
                blocker_of(|p| p.safe_to_evict = None, &defaults),
                None::<Blocker>,
            ),
        ),
        rules(
            row(
                "rules/replicated: a pod without a controller keeps its node",
                blocker_of(|p| p.controlled = false, &defaults),
                Some(Blocker::NoController),
            ),
            row(
                "control: a bare pod annotated safe-to-evict \"true\" moves",
                blocker_of(
                    |p| {
                        p.controlled = false;
                        p.safe_to_evict = Some(true);
                    },
                    &defaults,
                ),
                None::<Blocker>,
            ),
        ),
        rules(
            row(
                "rules/system: a kube-system pod without a budget keeps its node",
                blocker_of(|p| p.namespace = "kube-system".to_owned(), &defaults),
                Some(Blocker::KubeSystemWithoutBudget),
            ),
            row(
                "control: a kube-system pod with a budget that allows one",
                blocker_of(
                    |p| {
                        p.namespace = "kube-system".to_owned();
                        p.budgets = vec![budget(1)];
                    },
                    &defaults,
                ),
                None::<Blocker>,
            ),
        ),
        rules(
            row(
                "skipNodesWithSystemPods on (the default)",
                blocker_of(|p| p.namespace = "kube-system".to_owned(), &defaults).is_some(),
                true,
            ),
            row(
                "skipNodesWithSystemPods off: the kube-system pod moves",
                blocker_of(|p| p.namespace = "kube-system".to_owned(), &keep_nothing).is_some(),
                false,
            ),
        ),
        rules(
            row(
                "a kube-system pod without a budget, annotated safe-to-evict \"true\", moves",
                blocker_of(
                    |p| {
                        p.namespace = "kube-system".to_owned();
                        p.safe_to_evict = Some(true);
                    },
                    &defaults,
                ),
                None::<Blocker>,
            ),
            row(
                "control: without the annotation it stays",
                blocker_of(|p| p.namespace = "kube-system".to_owned(), &defaults).map(|_| "kept"),
                Some("kept"),
            ),
        ),
        rules(
            row(
                "rules.go's order: a bare pod with safe-to-evict \"false\" and local storage is kept for having no controller",
                blocker_of(
                    |p| {
                        p.controlled = false;
                        p.safe_to_evict = Some(false);
                        p.local_storage = true;
                    },
                    &defaults,
                ),
                Some(Blocker::NoController),
            ),
            row(
                "control: the same with a controller: not-safe-to-evict comes next",
                blocker_of(
                    |p| {
                        p.safe_to_evict = Some(false);
                        p.local_storage = true;
                    },
                    &defaults,
                ),
                Some(Blocker::NotSafeToEvict),
            ),
        ),
        rules(
            row(
                "HasSafeToEvictAnnotation: only the exact value \"true\"",
                annotated("true"),
                Some(true),
            ),
            row(
                "control: \"True\" means nothing",
                annotated("True"),
                None::<bool>,
            ),
        ),
        rules(
            row(
                "HasNotSafeToEvictAnnotation: only the exact value \"false\"",
                annotated("false"),
                Some(false),
            ),
            row(
                "control: \"yes\" means nothing",
                annotated("yes"),
                None::<bool>,
            ),
        ),
        storage(
            row(
                "rules/localstorage: an emptyDir or hostPath keeps the pod",
                blocker_of(|p| p.local_storage = true, &defaults),
                Some(Blocker::LocalStorage),
            ),
            row(
                "control: local storage annotated safe-to-evict \"true\" moves",
                blocker_of(
                    |p| {
                        p.local_storage = true;
                        p.safe_to_evict = Some(true);
                    },
                    &defaults,
                ),
                None::<Blocker>,
            ),
        ),
        storage(
            row(
                "skipNodesWithLocalStorage on (the default) keeps a pod with local storage",
                blocker_of(|p| p.local_storage = true, &defaults).is_some(),
                true,
            ),
            row(
                "skipNodesWithLocalStorage off: it moves",
                blocker_of(|p| p.local_storage = true, &keep_nothing).is_some(),
                false,
            ),
        ),
        storage(
            row(
                "isLocalVolume: an emptyDir on disk",
                local(scratch.clone(), &[]),
                true,
            ),
            row(
                "an emptyDir with medium: Memory is not local storage",
                local(
                    json!([{"name": "scratch", "emptyDir": {"medium": "Memory"}}]),
                    &[],
                ),
                false,
            ),
        ),
        storage(
            row(
                "isLocalVolume: a hostPath",
                local(
                    json!([{"name": "logs", "hostPath": {"path": "/var/log"}}]),
                    &[],
                ),
                true,
            ),
            row(
                "control: a configMap volume",
                local(json!([{"name": "cfg", "configMap": {"name": "c"}}]), &[]),
                false,
            ),
        ),
        storage(
            row(
                "safe-to-evict-local-volumes naming another volume leaves the blocker",
                local(
                    scratch.clone(),
                    &[(SAFE_TO_EVICT_LOCAL_VOLUMES, "cache,tmp")],
                ),
                true,
            ),
            row(
                "safe-to-evict-local-volumes naming it among others lifts it",
                local(
                    scratch.clone(),
                    &[(SAFE_TO_EVICT_LOCAL_VOLUMES, "cache,scratch")],
                ),
                false,
            ),
        ),
        storage(
            row(
                "two local volumes, one named: still blocking",
                local(
                    two_local.clone(),
                    &[(SAFE_TO_EVICT_LOCAL_VOLUMES, "scratch")],
                ),
                true,
            ),
            row(
                "two local volumes, both named",
                local(
                    two_local.clone(),
                    &[(SAFE_TO_EVICT_LOCAL_VOLUMES, "scratch,logs")],
                ),
                false,
            ),
        ),
        faq(
            row(
                "rules/pdb: a budget with no disruption left keeps the pod",
                blocker_of(|p| p.budgets = vec![budget(0)], &defaults),
                Some(Blocker::BudgetExhausted("default/web".to_owned())),
            ),
            row(
                "control: a budget with one left",
                blocker_of(|p| p.budgets = vec![budget(1)], &defaults),
                None::<Blocker>,
            ),
        ),
        faq(
            row(
                "an exhausted budget, annotated safe-to-evict \"true\": the annotation ends the checks",
                blocker_of(
                    |p| {
                        p.budgets = vec![budget(0)];
                        p.safe_to_evict = Some(true);
                    },
                    &defaults,
                ),
                None::<Blocker>,
            ),
            row(
                "control: an exhausted budget and safe-to-evict \"false\"",
                blocker_of(
                    |p| {
                        p.budgets = vec![budget(0)];
                        p.safe_to_evict = Some(false);
                    },
                    &defaults,
                ),
                Some(Blocker::NotSafeToEvict),
            ),
        ),
    ]
}
