//! `--shard I/N`: one of N slices of a sweep's seeds, so a CI matrix or a
//! Kubernetes Indexed Job runs a sweep too big for one machine. Slices are
//! contiguous and cover the seeds exactly once; each shard writes its
//! tally, and `bench report merge` folds the tallies into the sweep report
//! a single run writes.

use std::fmt;

/// Shard `index` (1-based, as `--shard 1/4` is written) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    index: u64,
    count: u64,
}

/// A `--shard` value that is not `I/N` with `1 <= I <= N`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a shard; expected I/N with 1 <= I <= N, e.g. 2/4")]
pub struct ShardError(String);

/// Parses `I/N`.
pub fn parse_shard(text: &str) -> Result<Shard, ShardError> {
    let bad = || ShardError(text.to_owned());
    let (index, count) = text.split_once('/').ok_or_else(bad)?;
    let (index, count): (u64, u64) = (
        index.parse().map_err(|_| bad())?,
        count.parse().map_err(|_| bad())?,
    );
    if index == 0 || index > count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

impl Shard {
    /// This shard's seeds of the sweep `first..first + runs`, as (first
    /// seed, how many): shard I takes indexes `(I-1)·runs/N .. I·runs/N`.
    pub fn seeds(self, first: u64, runs: u64) -> (u64, u64) {
        let cut = |i: u64| (u128::from(i) * u128::from(runs) / u128::from(self.count)) as u64;
        let (from, to) = (cut(self.index - 1), cut(self.index));
        (first + from, to - from)
    }

    /// The tally file a shard writes beside its reports.
    pub fn file_name(self) -> String {
        format!("tally-{}-of-{}.json", self.index, self.count)
    }

    pub fn index(self) -> u64 {
        self.index
    }

    pub fn count(self) -> u64 {
        self.count
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_cover_every_seed_once_in_order() {
        for (runs, count) in [(10, 3), (7, 7), (1_000_000, 16), (5, 2)] {
            let mut next = 100;
            for index in 1..=count {
                let shard = parse_shard(&format!("{index}/{count}")).unwrap();
                let (first, n) = shard.seeds(100, runs);
                assert_eq!(first, next, "{index}/{count} of {runs}");
                assert!(n >= runs / count && n <= runs / count + 1);
                next += n;
            }
            assert_eq!(next, 100 + runs);
        }
        for bad in ["0/2", "3/2", "1", "a/b", "1/0", "-1/2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }
}
