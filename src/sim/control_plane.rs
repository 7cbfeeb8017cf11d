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

/// The control plane's state.
#[derive(Debug, Clone, Default)]
pub struct ControlPlane {
    /// Current members (removed members are dropped).
    pub members: Vec<Member>,
    /// The endpoint's holder, when the cluster has an endpoint.
    pub holder: Option<NodeId>,
    /// Whether a failover is scheduled.
    pub failover_pending: bool,
}

impl ControlPlane {
    /// Voting members.
    pub fn voters(&self) -> u32 {
        self.members.iter().filter(|m| m.voter).count() as u32
    }

    /// Learners.
    pub fn learners(&self) -> u32 {
        self.members.iter().filter(|m| !m.voter).count() as u32
    }

    /// Whether a majority of voters is healthy.
    pub fn has_quorum(&self) -> bool {
        let voters = self.voters();
        let healthy = self.members.iter().filter(|m| m.voter && m.healthy).count() as u32;
        voters > 0 && healthy * 2 > voters
    }

    /// The member on a node.
    pub fn member_on(&mut self, node: NodeId) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.node == node)
    }

    /// Removes the member on a node; returns its name.
    pub fn remove_member_on(&mut self, node: NodeId) -> Option<String> {
        let index = self.members.iter().position(|m| m.node == node)?;
        Some(self.members.remove(index).name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(node: NodeId, voter: bool, healthy: bool) -> Member {
        Member {
            name: format!("cp-{node}"),
            node,
            voter,
            healthy,
        }
    }

    #[test]
    fn quorum_is_a_majority_of_voters() {
        let mut cp = ControlPlane {
            members: vec![
                member(0, true, true),
                member(1, true, true),
                member(2, true, true),
            ],
            ..Default::default()
        };
        assert!(cp.has_quorum());
        cp.members[0].healthy = false;
        assert!(cp.has_quorum(), "two of three");
        cp.members[1].healthy = false;
        assert!(!cp.has_quorum(), "two of three control planes gone");
    }

    #[test]
    fn learners_do_not_vote() {
        let cp = ControlPlane {
            members: vec![
                member(0, true, true),
                member(1, true, false),
                member(2, false, true),
            ],
            ..Default::default()
        };
        assert_eq!((cp.voters(), cp.learners()), (2, 1));
        assert!(!cp.has_quorum(), "one of two voters is not a majority");
    }

    #[test]
    fn removing_a_member_shrinks_the_quorum() {
        let mut cp = ControlPlane {
            members: vec![
                member(0, true, true),
                member(1, true, true),
                member(2, true, false),
            ],
            ..Default::default()
        };
        assert_eq!(cp.remove_member_on(2), Some("cp-2".to_owned()));
        assert!(cp.has_quorum(), "two healthy of two");
        cp.members[0].healthy = false;
        assert!(!cp.has_quorum());
    }
}
