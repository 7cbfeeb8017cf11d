//! etcd membership, quorum, and the stable endpoint in front of the API
//! servers.
//!
//! Quorum is a majority of voting members that are healthy; learners do not
//! vote. An API server answers only on a control plane whose server runs and
//! only while etcd has quorum. The endpoint (a floating address) is held by
//! one control plane; when its holder goes down it moves to a healthy one
//! after the failover delay, and the API is reachable through it only when
//! its holder's API server answers.

use super::world::NodeId;

/// One etcd member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Member name (its node's name).
    pub name: String,
    /// The node it runs on.
    pub node: NodeId,
    /// Whether it votes (learners do not).
    pub voter: bool,
    /// Whether its node's server is up.
    pub healthy: bool,
}

/// The control plane's state: etcd's members, who holds the endpoint,
/// and the ordinal the next replacement control plane is named with.
#[derive(Debug, Clone, Default)]
pub struct ControlPlane {
    /// Current members (removed members are dropped).
    members: Vec<Member>,
    /// The endpoint's holder, when the cluster has an endpoint.
    holder: Option<NodeId>,
    /// Whether a failover is scheduled.
    failover_pending: bool,
    /// The ordinal of the next control plane created to replace one.
    next_ordinal: u32,
}

impl ControlPlane {
    /// The control plane at the start: no member yet; replacements are
    /// numbered from `next_ordinal`.
    pub(crate) fn new(next_ordinal: u32) -> Self {
        ControlPlane {
            next_ordinal,
            ..Default::default()
        }
    }

    /// The members, in the order they joined.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// Voting members.
    pub fn voters(&self) -> u32 {
        self.members.iter().filter(|m| m.voter).count() as u32
    }

    /// Learners.
    pub fn learners(&self) -> u32 {
        self.members.iter().filter(|m| !m.voter).count() as u32
    }

    /// Voting members that are healthy.
    pub fn healthy_voters(&self) -> u32 {
        self.members.iter().filter(|m| m.voter && m.healthy).count() as u32
    }

    /// Whether a majority of voters is healthy.
    pub fn has_quorum(&self) -> bool {
        let voters = self.voters();
        voters > 0 && self.healthy_voters() * 2 > voters
    }

    /// Whether every member votes and is healthy: nothing is catching up
    /// or away, so one more member may go down without risk.
    pub fn all_settled(&self) -> bool {
        self.members.iter().all(|m| m.healthy && m.voter)
    }

    /// A member joins, healthy: a voter, or a learner that votes once
    /// promoted.
    pub(crate) fn join(&mut self, name: &str, node: NodeId, voter: bool) {
        self.members.push(Member {
            name: name.to_owned(),
            node,
            voter,
            healthy: true,
        });
    }

    /// The member on a node (if any) is healthy or not, as its server runs.
    pub(crate) fn set_health_on(&mut self, node: NodeId, healthy: bool) {
        if let Some(m) = self.members.iter_mut().find(|m| m.node == node) {
            m.healthy = healthy;
        }
    }

    /// Promotes the learner on a node to a voter; returns its name, or
    /// nothing if there is no learner there.
    pub(crate) fn promote_on(&mut self, node: NodeId) -> Option<String> {
        let m = self.members.iter_mut().find(|m| m.node == node)?;
        if m.voter {
            return None;
        }
        m.voter = true;
        Some(m.name.clone())
    }

    /// Removes the member on a node; returns its name.
    pub(crate) fn remove_member_on(&mut self, node: NodeId) -> Option<String> {
        let index = self.members.iter().position(|m| m.node == node)?;
        Some(self.members.remove(index).name)
    }

    /// The node holding the endpoint.
    pub fn holder(&self) -> Option<NodeId> {
        self.holder
    }

    /// The endpoint moves to a node (or to none).
    pub(crate) fn move_endpoint(&mut self, to: Option<NodeId>) {
        self.holder = to;
    }

    /// A failover is to be scheduled: true unless one already is, in
    /// which case the caller schedules nothing.
    pub(crate) fn begin_failover(&mut self) -> bool {
        !std::mem::replace(&mut self.failover_pending, true)
    }

    /// The scheduled failover runs: another may be scheduled after it.
    pub(crate) fn end_failover(&mut self) {
        self.failover_pending = false;
    }

    /// The ordinal a new control plane is named with; the next gets the
    /// one after.
    pub(crate) fn take_ordinal(&mut self) -> u32 {
        let ordinal = self.next_ordinal;
        self.next_ordinal += 1;
        ordinal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three_voters() -> ControlPlane {
        let mut cp = ControlPlane::new(4);
        for node in 0..3 {
            cp.join(&format!("cp-{node}"), node, true);
        }
        cp
    }

    #[test]
    fn quorum_is_a_majority_of_voters() {
        let mut cp = three_voters();
        assert!(cp.has_quorum());
        cp.set_health_on(0, false);
        assert!(cp.has_quorum(), "two of three");
        cp.set_health_on(1, false);
        assert!(!cp.has_quorum(), "two of three control planes gone");
        cp.set_health_on(1, true);
        assert!(cp.has_quorum(), "back to two of three");
        assert_eq!(cp.healthy_voters(), 2);
    }

    #[test]
    fn no_voter_is_no_quorum() {
        let mut cp = ControlPlane::new(1);
        assert!(!cp.has_quorum());
        cp.join("cp-1", 0, false);
        assert!(!cp.has_quorum(), "a learner alone does not vote");
    }

    #[test]
    fn learners_do_not_vote_until_promoted() {
        let mut cp = ControlPlane::new(3);
        cp.join("cp-0", 0, true);
        cp.join("cp-1", 1, true);
        cp.set_health_on(1, false);
        cp.join("cp-2", 2, false);
        assert_eq!((cp.voters(), cp.learners()), (2, 1));
        assert!(!cp.has_quorum(), "one of two voters is not a majority");
        assert!(!cp.all_settled());
        assert_eq!(cp.promote_on(2), Some("cp-2".to_owned()));
        assert_eq!((cp.voters(), cp.learners()), (3, 0));
        assert!(cp.has_quorum(), "two healthy of three voters");
        assert_eq!(cp.promote_on(2), None, "a voter is not promoted twice");
        assert_eq!(cp.promote_on(7), None, "no member there");
        cp.set_health_on(1, true);
        assert!(cp.all_settled());
    }

    #[test]
    fn removing_a_member_shrinks_the_quorum() {
        let mut cp = three_voters();
        cp.set_health_on(2, false);
        assert_eq!(cp.remove_member_on(2), Some("cp-2".to_owned()));
        assert_eq!(cp.remove_member_on(2), None);
        assert!(cp.has_quorum(), "two healthy of two");
        cp.set_health_on(0, false);
        assert!(!cp.has_quorum());
        assert_eq!(cp.members().len(), 2);
    }

    #[test]
    fn one_failover_is_pending_at_a_time() {
        let mut cp = three_voters();
        cp.move_endpoint(Some(0));
        assert!(cp.begin_failover());
        assert!(!cp.begin_failover(), "already scheduled");
        cp.end_failover();
        cp.move_endpoint(Some(1));
        assert_eq!(cp.holder(), Some(1));
        assert!(cp.begin_failover(), "the next one may be scheduled");
    }

    #[test]
    fn replacements_take_consecutive_ordinals() {
        let mut cp = ControlPlane::new(4);
        assert_eq!(cp.take_ordinal(), 4);
        assert_eq!(cp.take_ordinal(), 5);
    }
}
