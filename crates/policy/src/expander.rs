//! The cluster autoscaler's expanders: which of the pools that could take
//! the unschedulable pods is grown.
//!
//! As upstream's `--expander` chain (cluster-autoscaler FAQ "What are
//! Expanders?", `expander/` in the autoscaler's source): each expander in
//! order keeps the options it likes best, the next one breaks its ties, and
//! a seeded random pick breaks what is left.

use drillbench_model::scenario::spec::Expander;

/// One pool the autoscaler could grow, as the expanders compare them.
#[derive(Debug, Clone, PartialEq)]
pub struct Growth {
    pub pool: String,
    /// New nodes it needs.
    pub nodes: u32,
    /// Unschedulable pods they would take.
    pub pods: usize,
    /// The share of their CPU and memory left idle (see
    /// [`super::scale_up::options`]).
    pub waste: f64,
}

/// The expander chain over the growth options, then a pick among what is
/// left; `index(n)` draws a seeded index below `n`. `None` when there is
/// no option.
pub fn expand(
    mut options: Vec<Growth>,
    expanders: &[Expander],
    mut index: impl FnMut(usize) -> usize,
) -> Option<Growth> {
    if options.is_empty() {
        return None;
    }
    for expander in expanders {
        if options.len() <= 1 {
            break;
        }
        match expander {
            Expander::LeastNodes => {
                let min = options.iter().map(|o| o.nodes).min().unwrap_or(0);
                options.retain(|o| o.nodes == min);
            }
            Expander::LeastWaste => {
                let min = options
                    .iter()
                    .map(|o| o.waste)
                    .fold(f64::INFINITY, f64::min);
                options.retain(|o| (o.waste - min).abs() < 1e-9);
            }
            Expander::MostPods => {
                let max = options.iter().map(|o| o.pods).max().unwrap_or(0);
                options.retain(|o| o.pods == max);
            }
            Expander::Random => {
                let i = index(options.len());
                options = vec![options.swap_remove(i)];
            }
        }
    }
    if options.len() == 1 {
        return options.pop();
    }
    let i = index(options.len());
    Some(options.swap_remove(i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn growth(pool: &str, nodes: u32, pods: usize, waste: f64) -> Growth {
        Growth {
            pool: pool.to_owned(),
            nodes,
            pods,
            waste,
        }
    }

    /// Draws nothing: a test that reaches the random pick says so.
    fn no_draw(_: usize) -> usize {
        panic!("the chain should have decided without a draw")
    }

    /// Each row transcribes one expander of the cluster-autoscaler FAQ
    /// "What are Expanders?" (`least-waste`, `most-pods`, and the
    /// `least-nodes` our drills name), with its control: the same two
    /// options with the deciding number swapped pick the other pool.
    #[test]
    fn each_expander_keeps_the_option_it_prefers() {
        let rows: &[(&str, Expander, [Growth; 2], &str)] = &[
            (
                "least-nodes: the growth needing fewer nodes",
                Expander::LeastNodes,
                [growth("a", 1, 3, 0.5), growth("b", 2, 3, 0.1)],
                "a",
            ),
            (
                "least-nodes control",
                Expander::LeastNodes,
                [growth("a", 2, 3, 0.5), growth("b", 1, 3, 0.1)],
                "b",
            ),
            (
                "least-waste: the growth leaving the least idle",
                Expander::LeastWaste,
                [growth("a", 1, 3, 0.2), growth("b", 1, 3, 0.7)],
                "a",
            ),
            (
                "least-waste control",
                Expander::LeastWaste,
                [growth("a", 1, 3, 0.7), growth("b", 1, 3, 0.2)],
                "b",
            ),
            (
                "most-pods: the growth scheduling the most pods",
                Expander::MostPods,
                [growth("a", 1, 5, 0.5), growth("b", 1, 2, 0.5)],
                "a",
            ),
            (
                "most-pods control",
                Expander::MostPods,
                [growth("a", 1, 2, 0.5), growth("b", 1, 5, 0.5)],
                "b",
            ),
        ];
        for (why, expander, options, want) in rows {
            let chosen = expand(options.to_vec(), std::slice::from_ref(expander), no_draw);
            assert_eq!(chosen.map(|g| g.pool).as_deref(), Some(*want), "{why}");
        }
    }

    /// A tie the first expander leaves is broken by the next one (upstream
    /// chains expanders with commas), and what the whole chain leaves tied
    /// by the seeded pick.
    #[test]
    fn the_chain_breaks_ties_in_order_then_draws() {
        let tied = vec![growth("a", 1, 2, 0.4), growth("b", 1, 2, 0.1)];
        let chain = [Expander::LeastNodes, Expander::LeastWaste];
        assert_eq!(expand(tied.clone(), &chain, no_draw).unwrap().pool, "b");
        // Control: without the second expander the tie reaches the draw.
        let mut draws = Vec::new();
        let chosen = expand(tied, &chain[..1], |n| {
            draws.push(n);
            0
        });
        assert_eq!(draws, [2]);
        assert_eq!(chosen.unwrap().pool, "a");
    }

    #[test]
    fn no_option_draws_nothing_and_one_option_needs_no_draw() {
        assert_eq!(expand(Vec::new(), &[Expander::Random], no_draw), None);
        let one = vec![growth("a", 1, 1, 0.0)];
        assert_eq!(expand(one, &[Expander::Random], no_draw).unwrap().pool, "a");
    }
}
