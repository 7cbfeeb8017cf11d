//! The verdicts: each assertion kind judged over an [`Observation`], with
//! the evidence that decided it. Nothing here knows which backend ran.
//! Negative controls re-run the drill and are judged by the runner.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::duration::Duration;
use crate::k8s::node_selector::CompiledNodeSelector;
use crate::observe::{Observation, Placement, Time, time_false, value_at};
use crate::report::{AssertionResult, Evidence, Figure, Verdict, format_ms};
use crate::scenario::check::assertion_kinds;
use crate::scenario::spec::{AssertionSpec, NodeRequirement, PodMatch, Subject};
use crate::topology::Topology;

/// A verdict and the figures it measured.
pub struct Judged {
    /// The verdict.
    pub result: AssertionResult,
    /// Figures, by name.
    pub figures: BTreeMap<String, Figure>,
}

fn result(
    spec: &AssertionSpec,
    verdict: bool,
    bound: String,
    measured: String,
    summary: String,
    evidence: Vec<Evidence>,
) -> AssertionResult {
    AssertionResult {
        name: spec.name.value.clone(),
        kind: assertion_kinds(spec)
            .first()
            .copied()
            .unwrap_or("unknown")
            .to_owned(),
        verdict: if verdict {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        bound,
        measured,
        summary,
        evidence,
    }
}

fn fact(at: Time, rule: &str, detail: String) -> Evidence {
    Evidence {
        at_ms: at,
        pod: None,
        node: None,
        rule: rule.to_owned(),
        detail,
        labels: BTreeMap::new(),
    }
}

/// Judges every assertion kind except negative controls.
pub fn judge(spec: &AssertionSpec, obs: &Observation, topology: &Topology) -> Judged {
    let mut figures = BTreeMap::new();
    let name = spec.name.value.clone();
    let result = if spec.quorum.is_some() && obs.quorum.is_empty() {
        // A backend that cannot read etcd membership (an existing cluster
        // without its machines) must not report quorum kept on no evidence.
        result(
            spec,
            false,
            "never lost".to_owned(),
            "not observed".to_owned(),
            "etcd quorum was never observed on this backend, so it cannot be said to have held"
                .to_owned(),
            Vec::new(),
        )
    } else if let Some(q) = &spec.quorum {
        let lost = time_false(&obs.quorum, obs.start, obs.end);
        let allowed = q.max_loss.unwrap_or(Duration::ZERO).as_millis();
        figures.insert(format!("quorum-lost.{name}"), ms(lost));
        let evidence = obs
            .quorum
            .iter()
            .filter(|(_, q)| !q)
            .map(|&(at, _)| {
                fact(
                    at,
                    "quorum = a majority of voting members healthy",
                    "etcd lost quorum".to_owned(),
                )
            })
            .collect();
        result(
            spec,
            lost <= allowed,
            if allowed == 0 {
                "never lost".to_owned()
            } else {
                format!("lost <= {}", format_ms(allowed))
            },
            if lost == 0 {
                "never lost".to_owned()
            } else {
                format!("lost for {}", format_ms(lost))
            },
            if lost <= allowed {
                "etcd kept quorum".to_owned()
            } else {
                format!("etcd was without quorum for {}", format_ms(lost))
            },
            evidence,
        )
    } else if let Some(a) = &spec.availability {
        let (series, label) = subject_series(&a.of, obs, topology);
        let window = obs.end.saturating_sub(obs.start);
        let down = time_false(&series, obs.start, obs.end);
        let ratio = if window == 0 {
            1.0
        } else {
            1.0 - down as f64 / window as f64
        };
        figures.insert(
            format!("availability.{name}"),
            Figure {
                value: round4(ratio),
                unit: "ratio".to_owned(),
            },
        );
        let evidence = outages(&series, obs.end)
            .into_iter()
            .filter(|(_, to)| *to > obs.start)
            .map(|(from, to)| {
                fact(
                    from,
                    &format!("{label} available"),
                    format!("unavailable for {}", format_ms(to - from)),
                )
            })
            .collect();
        result(
            spec,
            ratio + 1e-12 >= a.at_least.value,
            format!(">= {}", a.at_least.value),
            format!("{:.4}", ratio),
            format!(
                "{label} was available {:.2} % of the {} the drill ran",
                ratio * 100.0,
                format_ms(window)
            ),
            evidence,
        )
    } else if let Some(r) = &spec.rto {
        let (series, label) = subject_series(&r.of, obs, topology);
        let fault = obs.faults.first().map(|(t, _)| *t);
        let within = r.within.as_millis();
        match (fault, recovery(&series, fault.unwrap_or(0), obs.end)) {
            (None, _) => result(
                spec,
                false,
                format!("<= {}", format_ms(within)),
                "no fault".to_owned(),
                "no fault was injected, so there was nothing to recover from".to_owned(),
                Vec::new(),
            ),
            (Some(t0), Some(recovered)) => {
                let rto = recovered.saturating_sub(t0);
                figures.insert(format!("rto.{name}"), ms(rto));
                let mut evidence = vec![fact(
                    recovered,
                    &format!("{label} whole"),
                    format!(
                        "recovered at {} (fault at {})",
                        format_ms(recovered),
                        format_ms(t0)
                    ),
                )];
                // The automated part of a runbook has its own promise
                // (< 15 min in CI); it is judged only when a runbook ran.
                let automated = r.automated_within.map(|bound| {
                    let took = obs.automated_recovery;
                    if let Some(took) = took {
                        figures.insert(format!("rto-automated.{name}"), ms(took));
                    }
                    (bound.as_millis(), took)
                });
                let mut bound = format!("<= {}", format_ms(within));
                let mut measured = format_ms(rto);
                let mut ok = rto <= within;
                let mut summary = format!("{label} whole again {} after the fault", format_ms(rto));
                if !ok {
                    summary.push_str(&format!(", over the {} bound", format_ms(within)));
                }
                if let Some((limit, took)) = automated {
                    bound.push_str(&format!(", automated <= {}", format_ms(limit)));
                    match took {
                        Some(took) => {
                            measured.push_str(&format!(", automated {}", format_ms(took)));
                            if took > limit {
                                ok = false;
                                summary.push_str(&format!(
                                    "; the automated steps alone took {}, over their {} bound",
                                    format_ms(took),
                                    format_ms(limit)
                                ));
                                evidence.push(fact(
                                    t0 + took,
                                    "automated recovery within its bound",
                                    format!("the automated steps alone took {}", format_ms(took)),
                                ));
                            }
                        }
                        None => {
                            ok = false;
                            measured.push_str(", no runbook ran");
                            summary.push_str("; no runbook ran, so the automated part is unknown");
                        }
                    }
                }
                result(spec, ok, bound, measured, summary, evidence)
            }
            (Some(t0), None) => result(
                spec,
                false,
                format!("<= {}", format_ms(within)),
                "not recovered".to_owned(),
                format!(
                    "{label} was not whole again when the drill ended, {} after the fault",
                    format_ms(obs.end - t0)
                ),
                vec![fact(
                    obs.end,
                    &format!("{label} whole"),
                    "still broken at the end of the drill".to_owned(),
                )],
            ),
        }
    } else if let Some(p) = &spec.placement {
        placement(
            spec,
            &p.pods,
            &p.nodes.iter().map(|r| r.value.clone()).collect::<Vec<_>>(),
            obs,
        )
    } else if spec.pdb_respected.is_some() {
        let evidence: Vec<Evidence> = obs
            .budget_breaches
            .iter()
            .map(|b| Evidence {
                at_ms: b.at,
                pod: Some(b.pod.clone()),
                node: None,
                rule: format!("PodDisruptionBudget {}", b.pdb),
                detail: format!(
                    "{} healthy after the eviction, {} desired",
                    b.healthy, b.desired
                ),
                labels: BTreeMap::new(),
            })
            .collect();
        let ok = evidence.is_empty();
        result(
            spec,
            ok,
            "no eviction below budget".to_owned(),
            format!("{} breach(es)", evidence.len()),
            if ok {
                "every eviction respected its budget".to_owned()
            } else {
                "an eviction took a budget below what it protects".to_owned()
            },
            evidence,
        )
    } else if spec.no_stranded_volumes.is_some() {
        let stranded: Vec<Evidence> = obs
            .strandings
            .iter()
            .filter(|s| s.released.is_none())
            .map(|s| Evidence {
                at_ms: s.since,
                pod: None,
                node: Some(s.node.clone()),
                rule: "a single-attach volume must not stay attached to a departed node".to_owned(),
                detail: format!(
                    "{} still attached to {} at the end, {} after the node departed",
                    s.claim,
                    s.node,
                    format_ms(obs.end - s.since)
                ),
                labels: BTreeMap::new(),
            })
            .collect();
        let ok = stranded.is_empty();
        result(
            spec,
            ok,
            "none stranded".to_owned(),
            format!("{} stranded", stranded.len()),
            if ok {
                "no volume stayed attached to a departed node".to_owned()
            } else {
                "volumes stayed attached to departed nodes".to_owned()
            },
            stranded,
        )
    } else if spec.endpoint_unchanged.is_some() {
        let mut addresses: Vec<&str> = obs
            .endpoint_addresses
            .iter()
            .map(|(_, a)| a.as_str())
            .collect();
        addresses.dedup();
        let reachable = obs.api.last().is_some_and(|(_, up)| *up);
        let ok = addresses.len() == 1 && reachable;
        result(
            spec,
            ok,
            "one address, reachable at the end".to_owned(),
            format!("{} address(es): {}", addresses.len(), addresses.join(", ")),
            if ok {
                format!(
                    "clients kept using {} without a credential refresh",
                    addresses[0]
                )
            } else if !reachable {
                "the API was not reachable through the endpoint at the end".to_owned()
            } else {
                "the endpoint's address changed: clients need new credentials".to_owned()
            },
            obs.endpoint_addresses
                .iter()
                .map(|(at, a)| fact(*at, "the stable endpoint's address", a.clone()))
                .collect(),
        )
    } else if spec.member_promoted.is_some() {
        let joined = obs.learners.len();
        let unpromoted: Vec<Evidence> = obs
            .learners
            .iter()
            .filter(|(_, _, p)| p.is_none())
            .map(|(at, m, _)| {
                fact(
                    *at,
                    "a learner is promoted to voter",
                    format!("{m} joined as a learner and was never promoted"),
                )
            })
            .collect();
        let promoted: Vec<Evidence> = obs
            .learners
            .iter()
            .filter_map(|(at, m, p)| {
                p.map(|p| {
                    fact(
                        p,
                        "a learner is promoted to voter",
                        format!(
                            "{m} joined at {} and was promoted after {}",
                            format_ms(*at),
                            format_ms(p - at)
                        ),
                    )
                })
            })
            .collect();
        let ok = joined > 0 && unpromoted.is_empty();
        result(
            spec,
            ok,
            "every new member promoted".to_owned(),
            format!("{} of {joined} promoted", joined - unpromoted.len()),
            if joined == 0 {
                "no member joined etcd during the drill".to_owned()
            } else if ok {
                "every member that joined was promoted".to_owned()
            } else {
                "a member that joined was never promoted".to_owned()
            },
            if ok { promoted } else { unpromoted },
        )
    } else if let Some(b) = &spec.burst_unchanged {
        let pools: Vec<&str> = b.pools.iter().map(|p| p.as_str()).collect();
        let burst: Vec<&Placement> = obs
            .placements
            .iter()
            .filter(|p| pods_match(&b.pods, p) && pools.contains(&p.pool.as_str()))
            .collect();
        let ok = !burst.is_empty();
        figures.insert(
            format!("burst-placements.{name}"),
            Figure {
                value: burst.len() as f64,
                unit: "count".to_owned(),
            },
        );
        result(
            spec,
            ok,
            format!("pods burst onto {}", pools.join(", ")),
            format!("{} placement(s)", burst.len()),
            if ok {
                format!(
                    "{} pod(s) outside the guard ran on autoscaler pools",
                    burst.len()
                )
            } else {
                "no pod outside the guard reached an autoscaler pool: burst is broken".to_owned()
            },
            burst
                .iter()
                .take(5)
                .map(|p| Evidence {
                    at_ms: p.at,
                    pod: Some(p.pod.clone()),
                    node: Some(p.node.clone()),
                    rule: "burst onto autoscaler pools".to_owned(),
                    detail: format!("pool {}", p.pool),
                    labels: BTreeMap::new(),
                })
                .collect(),
        )
    } else if spec.no_stranded_nodes.is_some() {
        let ok = obs.stranded_nodes.is_empty();
        result(
            spec,
            ok,
            "none".to_owned(),
            format!("{} stranded node(s)", obs.stranded_nodes.len()),
            if ok {
                "every node belongs to a pool something manages".to_owned()
            } else {
                "nodes of a removed pool still run, counted against maxNodesTotal and never scaled down".to_owned()
            },
            obs.stranded_nodes
                .iter()
                .map(|(at, n)| Evidence {
                    at_ms: *at,
                    pod: None,
                    node: Some(n.clone()),
                    rule: "a node belongs to a managed pool".to_owned(),
                    detail: "no autoscaler pool or static pool accounts for it".to_owned(),
                    labels: BTreeMap::new(),
                })
                .collect(),
        )
    } else if let Some(r) = &spec.rpo {
        let within = r.within.as_millis();
        match obs
            .restores
            .iter()
            .find(|(_, _, s)| s == r.schedule.as_str())
        {
            Some(&(lost_at, _, _))
                if obs
                    .data_loss
                    .iter()
                    .any(|d| d.schedule == r.schedule.as_str() && d.lost_at == lost_at) =>
            {
                // Writers measured what was lost: the window ends at the
                // last acknowledged write the restore lost, not at the loss.
                let losses: Vec<_> = obs
                    .data_loss
                    .iter()
                    .filter(|d| d.schedule == r.schedule.as_str() && d.lost_at == lost_at)
                    .collect();
                let window = losses.iter().map(|d| d.window()).max().unwrap_or(0);
                figures.insert(format!("rpo.{name}"), ms(window));
                let lost: u64 = losses.iter().map(|d| d.lost_writes).sum();
                result(
                    spec,
                    window <= within,
                    format!("<= {}", format_ms(within)),
                    format_ms(window),
                    format!(
                        "{lost} acknowledged write(s) lost; the newest was written {} after the capture point",
                        format_ms(window)
                    ),
                    losses
                        .iter()
                        .map(|d| {
                            fact(
                                lost_at,
                                "acknowledged writes lost in the restore",
                                format!(
                                    "{}: {} write(s) after the capture point, the last {} after it",
                                    d.writer,
                                    d.lost_writes,
                                    format_ms(d.window())
                                ),
                            )
                        })
                        .collect(),
                )
            }
            Some(&(lost_at, captured, _)) => {
                let window = (lost_at as i64).saturating_sub(captured).max(0) as u64;
                figures.insert(format!("rpo.{name}"), ms(window));
                result(
                    spec,
                    window <= within,
                    format!("<= {}", format_ms(within)),
                    format_ms(window),
                    format!(
                        "data written in the last {} before the loss was lost",
                        format_ms(window)
                    ),
                    vec![fact(
                        lost_at,
                        "restore from the newest usable backup",
                        format!(
                            "restored to its capture point {} before the loss",
                            format_ms(window)
                        ),
                    )],
                )
            }
            None => result(
                spec,
                false,
                format!("<= {}", format_ms(within)),
                "no restore".to_owned(),
                format!("no restore from {} happened", r.schedule.value),
                Vec::new(),
            ),
        }
    } else {
        result(
            spec,
            false,
            String::new(),
            String::new(),
            "this assertion kind is judged by the runner".to_owned(),
            Vec::new(),
        )
    };
    Judged { result, figures }
}

fn ms(value: Time) -> Figure {
    Figure {
        value: value as f64,
        unit: "ms".to_owned(),
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// A boolean series for a subject, and how to name it.
fn subject_series(
    subject: &Subject,
    obs: &Observation,
    topology: &Topology,
) -> (Vec<(Time, bool)>, String) {
    match subject {
        Subject::Api => (
            obs.api.clone(),
            "the API through the stable endpoint".to_owned(),
        ),
        Subject::ControlPlane => {
            let voters = topology.control_planes.ordinals.len() as u32;
            let mut times: Vec<Time> = obs
                .api
                .iter()
                .map(|p| p.0)
                .chain(obs.quorum.iter().map(|p| p.0))
                .chain(obs.etcd.iter().map(|p| p.0))
                .chain(obs.control_planes_ready.iter().map(|p| p.0))
                .collect();
            times.sort_unstable();
            times.dedup();
            let series = times
                .into_iter()
                .map(|t| {
                    let (v, l) = obs
                        .etcd
                        .iter()
                        .rev()
                        .find(|(at, _, _)| *at <= t)
                        .map_or((0, 0), |(_, v, l)| (*v, *l));
                    let whole = value_at(&obs.quorum, t, true)
                        && (obs.api.is_empty() || value_at(&obs.api, t, true))
                        && v == voters
                        && l == 0
                        && value_at(&obs.control_planes_ready, t, voters) == voters;
                    (t, whole)
                })
                .collect();
            (series, "the control plane (quorum, every member voting, every control plane Ready, the API up)".to_owned())
        }
        Subject::AllWorkloads => {
            let mut times: Vec<Time> = obs
                .workloads
                .values()
                .flat_map(|s| s.points.iter().map(|p| p.0))
                .collect();
            times.sort_unstable();
            times.dedup();
            let series = times
                .into_iter()
                .map(|t| (t, obs.workloads.values().all(|s| s.whole_at(t))))
                .collect();
            (series, "every workload".to_owned())
        }
        Subject::Workload(key) => {
            let series = obs
                .workloads
                .get(key)
                .map(|s| s.points.iter().map(|&(t, r, d)| (t, r >= d)).collect())
                .unwrap_or_default();
            (series, format!("workload {key}"))
        }
        Subject::Pods(pods) => {
            let keys: Vec<&String> = obs
                .workloads
                .keys()
                .filter(|k| {
                    obs.placements
                        .iter()
                        .any(|p| p.workload.as_ref() == Some(*k) && pods_match(pods, p))
                })
                .collect();
            let mut times: Vec<Time> = keys
                .iter()
                .flat_map(|k| obs.workloads[*k].points.iter().map(|p| p.0))
                .collect();
            times.sort_unstable();
            times.dedup();
            let series = times
                .into_iter()
                .map(|t| (t, keys.iter().all(|k| obs.workloads[*k].whole_at(t))))
                .collect();
            (series, "the selected pods' workloads".to_owned())
        }
    }
}

/// The intervals during which a series was false.
fn outages(series: &[(Time, bool)], end: Time) -> Vec<(Time, Time)> {
    let mut out = Vec::new();
    let mut down_since = None;
    for &(at, up) in series {
        match (up, down_since) {
            (false, None) => down_since = Some(at),
            (true, Some(since)) => {
                out.push((since, at));
                down_since = None;
            }
            _ => {}
        }
    }
    if let Some(since) = down_since {
        out.push((since, end));
    }
    out
}

/// When the subject became whole for good after `fault`: the start of the
/// last stretch of wholeness that lasts to the end. `fault` itself when it
/// never broke; `None` when it is broken at the end.
fn recovery(series: &[(Time, bool)], fault: Time, end: Time) -> Option<Time> {
    if !value_at(series, end, true) {
        return None;
    }
    let broke = series.iter().any(|&(at, up)| at >= fault && !up) || !value_at(series, fault, true);
    if !broke {
        return Some(fault);
    }
    series
        .iter()
        .rev()
        .take_while(|(_, up)| *up)
        .last()
        .map(|(at, _)| *at)
        .filter(|at| *at >= fault)
}

/// Whether a placement's pod is one a selection names.
pub fn pods_match(pods: &PodMatch, p: &Placement) -> bool {
    let classes = || p.claims.iter().filter_map(|(_, c)| c.as_deref());
    if let Some(class) = &pods.mounts_claim_of_class
        && !classes().any(|c| c == class.as_str())
    {
        return false;
    }
    if let Some(class) = &pods.mounts_no_claim_of_class
        && classes().any(|c| c == class.as_str())
    {
        return false;
    }
    if let Some(namespaces) = &pods.namespaces
        && !namespaces.contains(&p.namespace)
    {
        return false;
    }
    if let Some(labels) = &pods.labels
        && !labels.iter().all(|(k, v)| p.pod_labels.get(k) == Some(v))
    {
        return false;
    }
    true
}

/// Describes a node requirement the way people write it.
pub fn describe(r: &NodeRequirement) -> String {
    match &r.values {
        Some(values) => format!("{} {:?} [{}]", r.key, r.operator, values.join(",")),
        None => format!("{} {:?}", r.key, r.operator),
    }
}

/// Every binding of a selected pod, at every moment, must be to a node that
/// satisfies every requirement.
fn placement(
    spec: &AssertionSpec,
    pods: &PodMatch,
    nodes: &[NodeRequirement],
    obs: &Observation,
) -> AssertionResult {
    let rule = nodes.iter().map(describe).collect::<Vec<_>>().join(" AND ");
    let selector = CompiledNodeSelector::compile(&NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Some(nodes.iter().map(NodeRequirement::to_kubernetes).collect()),
            match_fields: None,
        }],
    });
    let Ok(selector) = selector else {
        return result(
            spec,
            false,
            rule,
            "invalid rule".to_owned(),
            "the placement rule does not compile".to_owned(),
            Vec::new(),
        );
    };
    let selected: Vec<&Placement> = obs
        .placements
        .iter()
        .filter(|p| pods_match(pods, p))
        .collect();
    let violations: Vec<Evidence> = selected
        .iter()
        .filter_map(|p| {
            let node = Node {
                metadata: ObjectMeta {
                    name: Some(p.node.clone()),
                    labels: Some((*p.node_labels).clone()),
                    ..Default::default()
                },
                ..Default::default()
            };
            let verdict = selector.explain(&node);
            (!verdict.is_match()).then(|| Evidence {
                at_ms: p.at,
                pod: Some(p.pod.clone()),
                node: Some(p.node.clone()),
                rule: rule.clone(),
                detail: format!(
                    "{verdict}; pool {}{}; claims {}",
                    p.pool,
                    if p.autoscaled { " (autoscaled)" } else { "" },
                    p.claims
                        .iter()
                        .map(|(c, class)| format!(
                            "{c} ({})",
                            class.as_deref().unwrap_or("no class")
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                labels: (*p.node_labels).clone(),
            })
        })
        .collect();
    let ok = violations.is_empty();
    let mut pods_out: Vec<&str> = violations.iter().filter_map(|e| e.pod.as_deref()).collect();
    pods_out.sort_unstable();
    pods_out.dedup();
    result(
        spec,
        ok,
        rule,
        format!(
            "{} of {} placement(s) outside the rule",
            violations.len(),
            selected.len()
        ),
        if ok {
            format!(
                "all {} placement(s) of the selected pods satisfied the rule",
                selected.len()
            )
        } else {
            format!("{} ran on nodes outside the rule", pods_out.join(", "))
        },
        violations,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_is_the_start_of_the_final_whole_stretch() {
        let series = [
            (0, true),
            (100, false),
            (200, true),
            (300, false),
            (400, true),
        ];
        assert_eq!(recovery(&series, 100, 1000), Some(400));
        assert_eq!(recovery(&series, 50, 350), None, "broken at the end");
        assert_eq!(recovery(&[(0, true)], 100, 1000), Some(100), "never broke");
    }

    #[test]
    fn quorum_never_observed_is_not_quorum_kept() {
        let spec: AssertionSpec =
            serde_saphyr::from_str("name: quorum-kept\nquorum: {}\n").expect("spec");
        let drill = crate::drill::Drill::load(std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scenarios/cp-recreate.yaml"
        )))
        .expect("a built-in drill");
        let topology = drill.topology;
        let mut obs = Observation {
            end: 60_000,
            ..Observation::default()
        };
        let unseen = judge(&spec, &obs, &topology).result;
        assert_eq!(unseen.verdict, Verdict::Fail, "{unseen:?}");
        assert_eq!(unseen.measured, "not observed");
        obs.quorum.push((0, true));
        assert_eq!(judge(&spec, &obs, &topology).result.verdict, Verdict::Pass);
    }

    #[test]
    fn outages_are_closed_at_the_end() {
        let series = [(0, true), (10, false), (20, true), (30, false)];
        assert_eq!(outages(&series, 50), [(10, 20), (30, 50)]);
    }
}
