//! Counting etcd voters and learners from `talosctl etcd members` output.
//!
//! The runbook counts rows by their last column (`LEARNER`): `false` is a
//! voter, `true` a learner. This parser counts the same way, but refuses
//! what the runbook's `awk` would silently skip — a missing header, a row
//! ending in anything else — because a miscount here could read as quorum.

use super::EtcdCounts;

/// The output of `talosctl etcd members` was not the expected table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MembersError {
    /// No header line, or its last column is not `LEARNER`.
    #[error("expected a table whose last column is LEARNER, found {0:?}")]
    Header(String),
    /// A member row whose last column is neither `true` nor `false`.
    #[error("line {line}: expected LEARNER to be true or false, found {row:?}")]
    Row {
        /// 1-based line number in the output.
        line: usize,
        row: String,
    },
}

/// Counts voters and learners in a `talosctl etcd members` table.
///
/// ```
/// use drillbench_preflight::etcd::parse_members;
///
/// let table = "NODE       ID   HOSTNAME  PEER URLS  CLIENT URLS  LEARNER\n\
///              10.0.0.2   a1   cp-2      https://a  https://b    false\n\
///              10.0.0.2   b2   cp-6      https://c  https://d    true\n";
/// let counts = parse_members(table).unwrap();
/// assert_eq!((counts.voters, counts.learners), (1, 1));
/// ```
pub fn parse_members(text: &str) -> Result<EtcdCounts, MembersError> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty());
    let header = lines.next().map(|(_, line)| line).unwrap_or_default();
    if header.split_whitespace().last() != Some("LEARNER") {
        return Err(MembersError::Header(header.to_owned()));
    }
    let mut counts = EtcdCounts::default();
    for (index, row) in lines {
        match row.split_whitespace().last() {
            Some("false") => counts.voters += 1,
            Some("true") => counts.learners += 1,
            _ => {
                return Err(MembersError::Row {
                    line: index + 1,
                    row: row.to_owned(),
                });
            }
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEALTHY: &str =
        include_str!("../../../harness/fixtures/preflight/etcd-members-healthy.txt");
    const JOINING: &str =
        include_str!("../../../harness/fixtures/preflight/etcd-members-learner.txt");

    #[test]
    fn counts_a_recorded_healthy_table() {
        assert_eq!(
            parse_members(HEALTHY),
            Ok(EtcdCounts {
                voters: 3,
                learners: 0
            })
        );
    }

    #[test]
    fn counts_a_recorded_table_with_a_joining_learner() {
        assert_eq!(
            parse_members(JOINING),
            Ok(EtcdCounts {
                voters: 2,
                learners: 1
            })
        );
    }

    #[test]
    fn refuses_what_is_not_the_table() {
        assert!(matches!(parse_members(""), Err(MembersError::Header(_))));
        assert!(matches!(
            parse_members("error: rpc error: code = Unavailable\n"),
            Err(MembersError::Header(_))
        ));
        let truncated = format!("{}10.0.0.9 abc cp-9 https://x https://y\n", HEALTHY);
        assert!(matches!(
            parse_members(&truncated),
            Err(MembersError::Row { line: 5, .. })
        ));
    }
}
