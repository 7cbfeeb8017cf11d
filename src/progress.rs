//! How far a sweep got: a bar when a person watches a terminal, plain lines
//! at every tenth when the output goes to a CI log, which renders neither
//! carriage returns nor escape codes.

use std::io::Write;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The progress of a fixed number of runs.
pub struct Progress {
    total: u64,
    shown: Shown,
}

enum Shown {
    Bar(ProgressBar),
    /// The next tenth (1..=10) to print a line for, and the count last
    /// printed (small sweeps reach several tenths with one run).
    Lines {
        next_tenth: u64,
        printed: u64,
    },
}

impl Progress {
    /// Progress over `total` runs; a bar on stderr when `terminal`, lines
    /// otherwise.
    pub fn new(total: u64, terminal: bool) -> Self {
        let shown = if terminal {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            if let Ok(style) =
                ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {elapsed} (eta {eta})")
            {
                bar.set_style(style);
            }
            Shown::Bar(bar)
        } else {
            Shown::Lines {
                next_tenth: 1,
                printed: 0,
            }
        };
        Progress { total, shown }
    }

    /// Records that `done` runs have finished; a line is written to `err`
    /// for every tenth crossed since the last call, so the lines are the
    /// same whatever the timing of the workers.
    pub fn update(&mut self, done: u64, err: &mut dyn Write) {
        match &mut self.shown {
            Shown::Bar(bar) => bar.set_position(done),
            Shown::Lines {
                next_tenth,
                printed,
            } => {
                while *next_tenth <= 10 && done * 10 >= *next_tenth * self.total {
                    let reached = (*next_tenth * self.total).div_ceil(10);
                    if reached > *printed {
                        let _ = writeln!(err, "progress: {reached}/{} runs", self.total);
                        *printed = reached;
                    }
                    *next_tenth += 1;
                }
            }
        }
    }

    /// Ends the display (the bar is cleared; the summary follows it).
    pub fn finish(self) {
        if let Shown::Bar(bar) = self.shown {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(total: u64, updates: &[u64]) -> String {
        let mut progress = Progress::new(total, false);
        let mut err = Vec::new();
        for &done in updates {
            progress.update(done, &mut err);
        }
        String::from_utf8(err).unwrap()
    }

    #[test]
    fn ci_logs_get_one_line_per_tenth_however_the_updates_fall() {
        let steady: Vec<u64> = (1..=100).collect();
        let bursty = [3, 37, 38, 99, 100];
        assert_eq!(lines(100, &steady), lines(100, &bursty));
        assert_eq!(
            lines(100, &bursty).lines().collect::<Vec<_>>(),
            (1..=10)
                .map(|t| format!("progress: {}/100 runs", t * 10))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn small_sweeps_print_each_run_once() {
        assert_eq!(
            lines(3, &[1, 3]),
            "progress: 1/3 runs\nprogress: 2/3 runs\nprogress: 3/3 runs\n"
        );
    }
}
