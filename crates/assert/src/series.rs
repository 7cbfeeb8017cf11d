//! A subject's availability as a boolean series over drill time, and the
//! two readings of it the judges share: its outages and when it recovered.

use super::placement::pods_match;
use drillbench_model::scenario::spec::Subject;
use drillbench_model::topology::Topology;
use drillbench_observe::{Observation, Time, value_at};

/// A boolean series for a subject, and how to name it.
pub(super) fn subject_series(
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
pub(super) fn outages(series: &[(Time, bool)], end: Time) -> Vec<(Time, Time)> {
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
pub(super) fn recovery(series: &[(Time, bool)], fault: Time, end: Time) -> Option<Time> {
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
    fn outages_are_closed_at_the_end() {
        let series = [(0, true), (10, false), (20, true), (30, false)];
        assert_eq!(outages(&series, 50), [(10, 20), (30, 50)]);
    }
}
