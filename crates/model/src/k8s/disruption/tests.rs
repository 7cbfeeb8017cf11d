use super::*;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta, Time};
use proptest::prelude::*;

fn ready(n: usize) -> Vec<SelectedPod> {
    vec![
        SelectedPod {
            ready: true,
            has_controller: true,
            ..Default::default()
        };
        n
    ]
}

fn unready(n: usize) -> Vec<SelectedPod> {
    vec![
        SelectedPod {
            has_controller: true,
            ..Default::default()
        };
        n
    ]
}

fn pods(healthy: usize, unhealthy: usize) -> Vec<SelectedPod> {
    let mut v = ready(healthy);
    v.extend(unready(unhealthy));
    v
}

fn counts(budget: Budget, pods: &[SelectedPod], replicas: i32) -> (i32, i32, i32, i32) {
    let c = pdb_counts(budget, pods, Some(replicas)).unwrap();
    (
        c.expected_pods,
        c.desired_healthy,
        c.current_healthy,
        c.disruptions_allowed,
    )
}

use Budget::{MaxUnavailable, MinAvailable};
use IntOrPercent::{Int, Percent};

#[test]
fn every_budget_form() {
    // (budget, healthy, unhealthy, replicas) → (expected, desired, current, allowed)
    let table = [
        // Integer minAvailable counts selected pods, not replicas.
        ((MinAvailable(Int(2)), 3, 0, 5), (3, 2, 3, 1)),
        ((MinAvailable(Int(2)), 2, 1, 3), (3, 2, 2, 0)),
        ((MinAvailable(Int(5)), 3, 0, 3), (3, 5, 3, 0)),
        ((MinAvailable(Int(0)), 3, 0, 3), (3, 0, 3, 3)),
        // Percentages round up: 50% of 3 is 2 (of 5, 3).
        ((MinAvailable(Percent(50)), 3, 0, 3), (3, 2, 3, 1)),
        ((MinAvailable(Percent(50)), 5, 0, 5), (5, 3, 5, 2)),
        ((MinAvailable(Percent(100)), 3, 0, 3), (3, 3, 3, 0)),
        ((MinAvailable(Percent(0)), 3, 0, 3), (3, 0, 3, 3)),
        ((MinAvailable(Percent(1)), 3, 0, 3), (3, 1, 3, 2)),
        // Percentages are of the controller's scale, not of the pods seen.
        ((MinAvailable(Percent(50)), 2, 0, 4), (4, 2, 2, 0)),
        // maxUnavailable: desired = expected − ceil(share).
        ((MaxUnavailable(Int(1)), 3, 0, 3), (3, 2, 3, 1)),
        ((MaxUnavailable(Int(1)), 2, 1, 3), (3, 2, 2, 0)),
        ((MaxUnavailable(Int(0)), 3, 0, 3), (3, 3, 3, 0)),
        ((MaxUnavailable(Int(5)), 3, 0, 3), (3, 0, 3, 3)),
        ((MaxUnavailable(Percent(50)), 3, 0, 3), (3, 1, 3, 2)),
        ((MaxUnavailable(Percent(34)), 3, 0, 3), (3, 1, 3, 2)),
        ((MaxUnavailable(Percent(33)), 3, 0, 3), (3, 2, 3, 1)),
        ((MaxUnavailable(Percent(100)), 3, 0, 3), (3, 0, 3, 3)),
        ((MaxUnavailable(Percent(25)), 5, 2, 7), (7, 5, 5, 0)),
        // Zero replicas: nothing expected, nothing allowed.
        ((MaxUnavailable(Int(1)), 0, 0, 0), (0, 0, 0, 0)),
        ((MinAvailable(Percent(50)), 0, 0, 0), (0, 0, 0, 0)),
        // Healthy leftovers of a scaled-to-zero controller: still nothing.
        ((MaxUnavailable(Int(1)), 2, 0, 0), (0, 0, 2, 0)),
        // No pods at all with an integer minAvailable.
        ((MinAvailable(Int(0)), 0, 0, 3), (0, 0, 0, 0)),
        ((Budget::Unset, 3, 0, 3), (0, 0, 3, 0)),
    ];
    for ((budget, healthy, unhealthy, replicas), expected) in table {
        assert_eq!(
            counts(budget, &pods(healthy, unhealthy), replicas),
            expected,
            "{budget:?} healthy={healthy} unhealthy={unhealthy} replicas={replicas}"
        );
    }
}

#[test]
fn terminating_and_recently_evicted_pods_are_not_healthy() {
    let mut p = ready(4);
    p[0].terminating = true;
    p[1].recently_evicted = true;
    assert_eq!(counts(MinAvailable(Int(1)), &p, 4), (4, 1, 2, 1));
}

#[test]
fn unmanaged_pods_count_for_integer_min_available_only() {
    let unmanaged = vec![
        SelectedPod {
            ready: true,
            ..Default::default()
        };
        3
    ];
    // No controllers: integer minAvailable works on the pods themselves.
    let c = pdb_counts(MinAvailable(Int(2)), &unmanaged, None).unwrap();
    assert_eq!(
        (c.expected_pods, c.disruptions_allowed, c.unmanaged_pods),
        (3, 1, 0)
    );
    // A percentage sees no controller scale: expected 0, nothing allowed.
    let c = pdb_counts(MinAvailable(Percent(50)), &unmanaged, Some(0)).unwrap();
    assert_eq!(
        (c.expected_pods, c.disruptions_allowed, c.unmanaged_pods),
        (0, 0, 3)
    );
    // A controller without a scale (a Job) is an error: fail safe.
    assert_eq!(
        pdb_counts(MaxUnavailable(Int(1)), &ready(2), None),
        Err(DisruptionError::UnknownScale)
    );
}

fn spec(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudgetSpec {
    PodDisruptionBudgetSpec {
        min_available: min,
        max_unavailable: max,
        ..Default::default()
    }
}

#[test]
fn budgets_are_read_and_validated_from_the_spec() {
    let s = |v: &str| Some(IntOrString::String(v.to_owned()));
    let i = |v: i32| Some(IntOrString::Int(v));
    assert_eq!(
        Budget::from_spec(&spec(i(2), None)),
        Ok(MinAvailable(Int(2)))
    );
    assert_eq!(
        Budget::from_spec(&spec(None, s("25%"))),
        Ok(MaxUnavailable(Percent(25)))
    );
    assert_eq!(
        Budget::from_spec(&spec(s("100%"), None)),
        Ok(MinAvailable(Percent(100)))
    );
    assert_eq!(Budget::from_spec(&spec(None, None)), Ok(Budget::Unset));
    assert_eq!(
        Budget::from_spec(&spec(i(1), i(1))),
        Err(DisruptionError::BothSet)
    );
    assert!(matches!(
        Budget::from_spec(&spec(i(-1), None)),
        Err(DisruptionError::Negative {
            field: "minAvailable",
            value: -1
        })
    ));
    for bad in ["101%", "50", "-5%", "%", "5.5%", "fifty%", " 5%", "5 %"] {
        assert!(
            matches!(
                Budget::from_spec(&spec(None, s(bad))),
                Err(DisruptionError::InvalidPercent {
                    field: "maxUnavailable",
                    ..
                })
            ),
            "{bad}"
        );
    }
    let policy = |p: Option<&str>| {
        UnhealthyPodEvictionPolicy::from_spec(&PodDisruptionBudgetSpec {
            unhealthy_pod_eviction_policy: p.map(str::to_owned),
            ..Default::default()
        })
    };
    assert_eq!(
        policy(None),
        Ok(UnhealthyPodEvictionPolicy::IfHealthyBudget)
    );
    assert_eq!(
        policy(Some("IfHealthyBudget")),
        Ok(UnhealthyPodEvictionPolicy::IfHealthyBudget)
    );
    assert_eq!(
        policy(Some("AlwaysAllow")),
        Ok(UnhealthyPodEvictionPolicy::AlwaysAllow)
    );
    assert!(matches!(
        policy(Some("Sometimes")),
        Err(DisruptionError::UnknownPolicy(_))
    ));
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn selectors_follow_policy_v1() {
    let with = |selector: Option<LabelSelector>| {
        PdbSelector::from_spec(&PodDisruptionBudgetSpec {
            selector,
            ..Default::default()
        })
    };
    let app = labels(&[("app", "openbao")]);
    assert!(!with(None).unwrap().selects(&app), "null selects nothing");
    assert!(
        with(Some(LabelSelector::default())).unwrap().selects(&app),
        "empty selects all"
    );
    let by_app = with(Some(LabelSelector {
        match_labels: Some(labels(&[("app", "openbao")])),
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "tier".to_owned(),
            operator: "NotIn".to_owned(),
            values: Some(vec!["canary".to_owned()]),
        }]),
    }))
    .unwrap();
    assert!(by_app.selects(&app));
    assert!(!by_app.selects(&labels(&[("app", "openbao"), ("tier", "canary")])));
    assert!(!by_app.selects(&labels(&[("app", "coroot")])));
    for (op, values) in [
        ("In", Some(vec![])),
        ("In", None),
        ("Exists", Some(vec!["x".to_owned()])),
        ("Near", None),
    ] {
        let err = with(Some(LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "k".to_owned(),
                operator: op.to_owned(),
                values,
            }]),
            ..Default::default()
        }));
        assert!(
            matches!(err, Err(DisruptionError::InvalidSelector(_))),
            "{op}"
        );
    }
}

fn pod(phase: &str, ready: bool, terminating: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("openbao-0".to_owned()),
            deletion_timestamp: terminating.then(|| Time(Default::default())),
            ..Default::default()
        },
        status: Some(PodStatus {
            phase: Some(phase.to_owned()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".to_owned(),
                status: if ready { "True" } else { "False" }.to_owned(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn pdb(policy: Option<&str>, c: PdbCounts) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some("openbao".to_owned()),
            generation: Some(3),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            unhealthy_pod_eviction_policy: policy.map(str::to_owned),
            ..Default::default()
        }),
        status: Some(PodDisruptionBudgetStatus {
            current_healthy: Some(c.current_healthy),
            desired_healthy: Some(c.desired_healthy),
            expected_pods: Some(c.expected_pods),
            disruptions_allowed: Some(c.disruptions_allowed),
            observed_generation: Some(3),
            ..Default::default()
        }),
    }
}

fn status(expected: i32, desired: i32, current: i32) -> PdbCounts {
    PdbCounts {
        expected_pods: expected,
        desired_healthy: desired,
        current_healthy: current,
        disruptions_allowed: (current - desired).max(0),
        unmanaged_pods: 0,
    }
}

#[test]
fn ready_pods_need_a_disruption_left() {
    let running = pod("Running", true, false);
    let room = pdb(None, status(3, 2, 3));
    assert_eq!(
        check_eviction(&running, &[&room]),
        Ok(EvictionAllowed::WithinBudget {
            pdb: "openbao".to_owned(),
            disruptions_allowed_after: 0
        })
    );
    let full = pdb(Some("AlwaysAllow"), status(3, 2, 2));
    let refusal = check_eviction(&running, &[&full]).unwrap_err();
    assert_eq!(
        refusal,
        EvictionRefusal::BudgetExhausted {
            pdb: "openbao".to_owned(),
            desired_healthy: 2,
            current_healthy: 2
        }
    );
    assert_eq!(refusal.http_status(), 429);
    assert_eq!(
        refusal.status_message(),
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        refusal.cause_message().as_deref(),
        Some("The disruption budget openbao needs 2 healthy pods and has 2 currently")
    );
    assert_eq!(refusal.retry_after_seconds(), Some(0));
    assert_eq!(check_eviction(&running, &[]), Ok(EvictionAllowed::NoBudget));
}

#[test]
fn unready_pods_under_both_policies() {
    let unready_pod = pod("Running", false, false);
    let healthy_app = status(3, 2, 2);
    let disrupted_app = status(3, 2, 1);
    let name = || "openbao".to_owned();

    // AlwaysAllow: always, even when the application is disrupted.
    for s in [healthy_app, disrupted_app, status(3, 0, 0)] {
        assert_eq!(
            check_eviction(&unready_pod, &[&pdb(Some("AlwaysAllow"), s)]),
            Ok(EvictionAllowed::UnhealthyPod {
                pdb: name(),
                policy: UnhealthyPodEvictionPolicy::AlwaysAllow
            })
        );
    }
    // IfHealthyBudget (explicit or default): only while currentHealthy ≥ desiredHealthy.
    for policy in [None, Some("IfHealthyBudget")] {
        assert_eq!(
            check_eviction(&unready_pod, &[&pdb(policy, healthy_app)]),
            Ok(EvictionAllowed::UnhealthyPod {
                pdb: name(),
                policy: UnhealthyPodEvictionPolicy::IfHealthyBudget
            })
        );
        assert_eq!(
            check_eviction(&unready_pod, &[&pdb(policy, disrupted_app)]),
            Err(EvictionRefusal::BudgetExhausted {
                pdb: name(),
                desired_healthy: 2,
                current_healthy: 1
            })
        );
    }
    // desiredHealthy 0 skips the shortcut and falls back to disruptionsAllowed.
    assert_eq!(
        check_eviction(&unready_pod, &[&pdb(None, status(2, 0, 1))]),
        Ok(EvictionAllowed::WithinBudget {
            pdb: name(),
            disruptions_allowed_after: 0
        })
    );
    assert!(check_eviction(&unready_pod, &[&pdb(None, status(0, 0, 0))]).is_err());
}

#[test]
fn pending_finished_and_terminating_pods_skip_budgets() {
    let full = pdb(None, status(3, 3, 3));
    for p in [
        pod("Pending", false, false),
        pod("Succeeded", false, false),
        pod("Failed", false, false),
        pod("Running", true, true),
    ] {
        assert_eq!(
            check_eviction(&p, &[&full, &full]),
            Ok(EvictionAllowed::BudgetIgnored)
        );
    }
    assert!(check_eviction(&pod("Unknown", true, false), &[&full]).is_err());
}

#[test]
fn other_refusals() {
    let running = pod("Running", true, false);
    let room = pdb(None, status(3, 1, 3));
    let two = check_eviction(&running, &[&room, &room]).unwrap_err();
    assert_eq!(two.http_status(), 500);
    assert!(matches!(two, EvictionRefusal::MultipleBudgets { ref pdbs } if pdbs.len() == 2));

    let mut stale = room.clone();
    stale.metadata.generation = Some(4);
    let refusal = check_eviction(&running, &[&stale]).unwrap_err();
    assert_eq!(
        refusal,
        EvictionRefusal::StatusStale {
            pdb: "openbao".to_owned()
        }
    );
    assert_eq!(
        (refusal.http_status(), refusal.retry_after_seconds()),
        (429, Some(10))
    );

    let mut negative = room.clone();
    negative.status.as_mut().unwrap().disruptions_allowed = Some(-1);
    assert_eq!(
        check_eviction(&running, &[&negative])
            .unwrap_err()
            .http_status(),
        403
    );

    let mut flooded = room.clone();
    flooded.status.as_mut().unwrap().disrupted_pods = Some(
        (0..=MAX_DISRUPTED_PODS)
            .map(|i| (format!("p{i}"), Time(Default::default())))
            .collect(),
    );
    assert!(matches!(
        check_eviction(&running, &[&flooded]),
        Err(EvictionRefusal::TooManyDisruptedPods { .. })
    ));

    let mut no_status = room;
    no_status.status = None;
    no_status.metadata.generation = None;
    assert!(matches!(
        check_eviction(&running, &[&no_status]),
        Err(EvictionRefusal::BudgetExhausted { .. })
    ));
}

#[test]
fn selected_pod_reads_the_pod_object() {
    let p = pod("Running", true, true);
    assert_eq!(
        SelectedPod::from_pod(&p),
        SelectedPod {
            ready: true,
            terminating: true,
            recently_evicted: false,
            has_controller: false
        }
    );
    assert!(!is_pod_ready(&Pod::default()));
}

fn budget_strategy() -> impl Strategy<Value = Budget> {
    prop_oneof![
        (0i32..8).prop_map(|n| MinAvailable(Int(n))),
        (0u8..=100).prop_map(|p| MinAvailable(Percent(p))),
        (0i32..8).prop_map(|n| MaxUnavailable(Int(n))),
        (0u8..=100).prop_map(|p| MaxUnavailable(Percent(p))),
    ]
}

proptest! {
    /// Evicting, one at a time through the API, every pod the budget
    /// allows never takes currentHealthy below desiredHealthy.
    #[test]
    fn evictions_never_breach_the_budget(
        budget in budget_strategy(),
        healthy in 0usize..8,
        unhealthy in 0usize..4,
        extra_replicas in 0i32..3,
    ) {
        let replicas = (healthy + unhealthy) as i32 + extra_replicas;
        let mut selected = pods(healthy, unhealthy);
        let running = pod("Running", true, false);
        loop {
            let c = pdb_counts(budget, &selected, Some(replicas)).unwrap();
            let object = pdb(None, c);
            match check_eviction(&running, &[&object]) {
                Ok(EvictionAllowed::WithinBudget { .. }) => {
                    let healthy_after = c.current_healthy - 1;
                    prop_assert!(healthy_after >= c.desired_healthy, "{c:?}");
                    let victim = selected.iter_mut().find(|p| p.counts_as_healthy()).unwrap();
                    victim.recently_evicted = true;
                }
                Ok(other) => prop_assert!(false, "unexpected {other:?}"),
                Err(_) => {
                    prop_assert!(c.disruptions_allowed == 0);
                    break;
                }
            }
        }
    }

    #[test]
    fn percentages_round_up(p in 0u8..=100, total in 0i32..1000) {
        let scaled = IntOrPercent::Percent(p).scaled(total);
        let exact = f64::from(p) * f64::from(total) / 100.0;
        prop_assert_eq!(f64::from(scaled), exact.ceil());
    }
}
