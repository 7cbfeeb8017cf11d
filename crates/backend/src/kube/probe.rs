//! What the watches cannot show, probed at every look: the API through the
//! stable endpoint (`/readyz`), and etcd's quorum and members through the
//! machines, recorded as the simulator records them.

use std::collections::BTreeSet;

use drillbench_observe::{Event, EventKind, ObjectRef, Observation, Time};

pub(super) fn etcd_ref(name: &str) -> ObjectRef {
    ObjectRef {
        kind: "EtcdMember".to_owned(),
        namespace: String::new(),
        name: name.to_owned(),
    }
}

/// Asks `/readyz` through the client's endpoint, giving up after five
/// seconds.
pub(super) async fn readyz(client: kube::Client) -> bool {
    let request = http::Request::get("/readyz").body(Vec::new());
    match request {
        Ok(request) => tokio::time::timeout(
            std::time::Duration::from_secs(5),
            client.request_text(request),
        )
        .await
        .is_ok_and(|r| r.is_ok()),
        Err(_) => false,
    }
}

/// Records a `/readyz` answer where it changes the API's availability; the
/// first answer is the starting state, not an event.
pub(super) fn record_api(obs: &mut Observation, at: Time, ready: bool) {
    if obs.api.last().map(|(_, a)| *a) == Some(ready) {
        return;
    }
    obs.api.push((at, ready));
    if obs.api.len() > 1 {
        let kind = if ready {
            EventKind::ApiAvailable
        } else {
            EventKind::ApiUnavailable
        };
        obs.events.push(Event {
            at_ms: at,
            kind,
            object: ObjectRef {
                kind: "Endpoint".to_owned(),
                namespace: String::new(),
                name: obs
                    .endpoint_addresses
                    .first()
                    .map(|e| e.1.clone())
                    .unwrap_or_default(),
            },
            node: None,
            pool: None,
            message: "probe of /readyz through the stable endpoint".to_owned(),
        });
    }
}

/// etcd as the machines report it, between looks.
#[derive(Debug, Default)]
pub(super) struct EtcdProbe {
    /// Voters and learners at the last answer.
    members: Option<(u32, u32)>,
    /// Whether the machines ever answered.
    answered: bool,
    /// The control planes when a recreate began: a member that joins is
    /// one that was not among them.
    control_planes_before: Option<BTreeSet<String>>,
}

impl EtcdProbe {
    /// Voters and learners at the last answer.
    pub(super) fn members(&self) -> Option<(u32, u32)> {
        self.members
    }

    /// Notes the control planes standing as a recreate begins.
    pub(super) fn recreating(&mut self, control_planes: BTreeSet<String>) {
        self.control_planes_before = Some(control_planes);
    }

    /// Records the machines' answer (`None`: no answer) at `at`, the
    /// control planes standing being `control_planes`.
    pub(super) fn record(
        &mut self,
        obs: &mut Observation,
        at: Time,
        answer: Option<(u32, u32)>,
        control_planes: Vec<String>,
    ) {
        // etcd's member list needs quorum: an answer is quorum; no answer
        // from machines that answered before is its loss. Machines that
        // never answer (an existing cluster) leave quorum unobserved.
        let quorum = match answer {
            Some(_) => {
                self.answered = true;
                Some(true)
            }
            None if self.answered => Some(false),
            None => None,
        };
        // The member that may join: a control plane that was not there
        // when the recreate began.
        let known = self.control_planes_before.clone().unwrap_or_default();
        let joined = control_planes
            .into_iter()
            .find(|n| !known.contains(n))
            .unwrap_or_else(|| "a new member".to_owned());
        if let Some(quorum) = quorum
            && obs.quorum.last().map(|(_, q)| *q) != Some(quorum)
        {
            obs.quorum.push((at, quorum));
            if obs.quorum.len() > 1 {
                obs.events.push(Event {
                    at_ms: at,
                    kind: if quorum {
                        EventKind::QuorumRestored
                    } else {
                        EventKind::QuorumLost
                    },
                    object: etcd_ref("etcd"),
                    node: None,
                    pool: None,
                    message: "etcd member list through the machines".to_owned(),
                });
            }
        }
        let Some((voters, learners)) = answer else {
            return;
        };
        let before = self.members;
        self.members = Some((voters, learners));
        if before == self.members {
            return;
        }
        obs.etcd.push((at, voters, learners));
        let (v0, l0) = before.unwrap_or((voters, learners));
        if learners > l0 {
            for _ in l0..learners {
                obs.learners.push((at, joined.clone(), None));
                obs.events.push(Event {
                    at_ms: at,
                    kind: EventKind::EtcdLearnerAdded,
                    object: etcd_ref(&joined),
                    node: Some(joined.clone()),
                    pool: None,
                    message: "joined etcd as a learner".to_owned(),
                });
            }
        }
        if voters > v0 && learners < l0 {
            for _ in 0..(l0 - learners).min(voters - v0) {
                if let Some(entry) = obs.learners.iter_mut().find(|(_, _, p)| p.is_none()) {
                    entry.2 = Some(at);
                    let name = entry.1.clone();
                    obs.events.push(Event {
                        at_ms: at,
                        kind: EventKind::EtcdMemberPromoted,
                        object: etcd_ref(&name),
                        node: Some(name),
                        pool: None,
                        message: "learner promoted to voter".to_owned(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(obs: &Observation) -> Vec<(Time, EventKind)> {
        obs.events.iter().map(|e| (e.at_ms, e.kind)).collect()
    }

    #[test]
    fn the_api_series_changes_only_when_readyz_does_and_the_first_answer_is_no_event() {
        let mut obs = Observation::default();
        obs.endpoint_addresses
            .push((0, "stable endpoint 127.0.0.1:1".to_owned()));
        record_api(&mut obs, 0, true);
        record_api(&mut obs, 1, true);
        record_api(&mut obs, 2, false);
        record_api(&mut obs, 3, true);
        assert_eq!(obs.api, [(0, true), (2, false), (3, true)]);
        assert_eq!(
            kinds(&obs),
            [(2, EventKind::ApiUnavailable), (3, EventKind::ApiAvailable)]
        );
        assert_eq!(obs.events[0].object.name, "stable endpoint 127.0.0.1:1");
    }

    #[test]
    fn machines_that_never_answer_leave_quorum_unobserved_and_silence_after_an_answer_is_its_loss()
    {
        let mut obs = Observation::default();
        let mut etcd = EtcdProbe::default();
        etcd.record(&mut obs, 0, None, Vec::new());
        assert!(obs.quorum.is_empty() && obs.etcd.is_empty());
        etcd.record(&mut obs, 1, Some((3, 0)), Vec::new());
        etcd.record(&mut obs, 2, None, Vec::new());
        etcd.record(&mut obs, 3, Some((3, 0)), Vec::new());
        assert_eq!(obs.quorum, [(1, true), (2, false), (3, true)]);
        assert_eq!(
            kinds(&obs),
            [(2, EventKind::QuorumLost), (3, EventKind::QuorumRestored)]
        );
        assert_eq!(obs.etcd, [(1, 3, 0)], "the members only when they change");
        assert_eq!(etcd.members(), Some((3, 0)));
    }

    #[test]
    fn a_recreated_control_plane_joins_as_the_learner_and_its_promotion_is_recorded() {
        let mut obs = Observation::default();
        let mut etcd = EtcdProbe::default();
        let cps = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        etcd.record(&mut obs, 0, Some((3, 0)), cps(&["cp-1", "cp-2", "cp-3"]));
        etcd.recreating(cps(&["cp-1", "cp-2"]).into_iter().collect());
        etcd.record(&mut obs, 10, Some((2, 1)), cps(&["cp-1", "cp-2", "cp-4"]));
        assert_eq!(obs.learners, [(10, "cp-4".to_owned(), None)]);
        etcd.record(&mut obs, 20, Some((3, 0)), cps(&["cp-1", "cp-2", "cp-4"]));
        assert_eq!(obs.learners, [(10, "cp-4".to_owned(), Some(20))]);
        assert_eq!(
            kinds(&obs),
            [
                (10, EventKind::EtcdLearnerAdded),
                (20, EventKind::EtcdMemberPromoted)
            ]
        );
        assert_eq!(obs.events[1].node.as_deref(), Some("cp-4"));
        // Without a recreate under way the joiner is not named.
        let mut obs = Observation::default();
        let mut etcd = EtcdProbe::default();
        etcd.record(&mut obs, 0, Some((1, 0)), Vec::new());
        etcd.record(&mut obs, 5, Some((1, 1)), Vec::new());
        assert_eq!(obs.learners, [(5, "a new member".to_owned(), None)]);
    }
}
