//! What GitHub Actions reads from a step: `::error` workflow commands,
//! which become annotations on the run, and the job summary, a Markdown
//! file the step appends to. Both have limits GitHub enforces by dropping
//! what is over, so the bench stays within them and says what it left out.
//!
//! Escaping follows the runner's rules for workflow commands (actions/toolkit
//! `packages/core/src/command.ts`): in the message `%`, CR and LF are
//! percent-encoded; in a property value `:` and `,` are too.

use std::io::Write as _;
use std::path::Path;

use super::sweep::SweepReport;
use super::{DrillReport, Outcome, Verdict};

/// Error annotations GitHub shows per step; later ones are dropped, so the
/// last one shown says how many more there were.
pub const MAX_ANNOTATIONS: usize = 10;

/// Longest annotation title and message, in characters: the annotation
/// shows one line of each, and the job summary has the rest.
const ANNOTATION_TITLE: usize = 200;
const ANNOTATION_MESSAGE: usize = 1_000;

/// The most a step's summary file may hold; GitHub refuses a larger one
/// ("Job summary exceeded the maximum size of 1024k").
pub const STEP_SUMMARY_LIMIT: u64 = 1024 * 1024;

/// Said where the summary was cut to fit.
const CUT_NOTE: &str = "\n\n_Cut here: GitHub takes at most 1 MiB of summary per step. \
The complete report is in report.md and report.json._\n";

/// One annotation before escaping: a `DRILL/ASSERTION` title and a message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Annotation {
    title: String,
    message: String,
}

impl Annotation {
    fn command(&self) -> String {
        format!(
            "::error title={}::{}",
            escape_property(&super::budget::clip(&self.title, ANNOTATION_TITLE)),
            escape_data(&super::budget::clip(&self.message, ANNOTATION_MESSAGE))
        )
    }
}

fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

fn escape_property(text: &str) -> String {
    escape_data(text).replace(':', "%3A").replace(',', "%2C")
}

/// The failures of one drill or sweep, to print as `::error` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Annotations {
    drill: String,
    found: Vec<Annotation>,
}

impl Annotations {
    /// How many failures there are to annotate.
    pub fn len(&self) -> usize {
        self.found.len()
    }

    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The `::error` lines, at most `limit`: all if they fit, else the
    /// first ones and a last that names the rest, so nothing is dropped
    /// without a word.
    pub fn lines(&self, limit: usize) -> Vec<String> {
        capped(&self.drill, self.found.clone(), limit)
    }
}

/// The failing assertions of a drill; an aborted drill with no failing
/// assertion gets one annotation of its own.
pub fn annotations(report: &DrillReport) -> Annotations {
    let drill = &report.drill.name;
    let replay = report.drill.replay(&report.backend, report.seed);
    let mut found: Vec<Annotation> = report
        .assertions
        .iter()
        .filter(|a| a.verdict == Verdict::Fail)
        .map(|a| Annotation {
            title: format!("{drill}/{}", a.name),
            message: format!(
                "{} (measured {}, bound {}); replay: {replay}",
                a.summary, a.measured, a.bound
            ),
        })
        .collect();
    if found.is_empty() && report.outcome == Outcome::Aborted {
        found.push(Annotation {
            title: drill.clone(),
            message: format!("the drill stopped before its last step; replay: {replay}"),
        });
    }
    Annotations {
        drill: drill.clone(),
        found,
    }
}

/// The assertions that failed in any seed of a sweep, each with its count
/// and the first failing seed's replay.
pub fn sweep_annotations(sweep: &SweepReport) -> Annotations {
    let drill = &sweep.drill.name;
    let found = sweep
        .assertions
        .iter()
        .filter(|a| a.failed > 0)
        .map(|a| {
            let first = sweep
                .failing_seeds
                .iter()
                .find(|f| f.assertions.contains(&a.name))
                .map(|f| format!("; first failing seed: {}", sweep.replay(f.seed)))
                .unwrap_or_default();
            Annotation {
                title: format!("{drill}/{}", a.name),
                message: format!("failed in {} of {} runs{first}", a.failed, sweep.runs),
            }
        })
        .collect();
    Annotations {
        drill: drill.clone(),
        found,
    }
}

fn capped(drill: &str, mut found: Vec<Annotation>, limit: usize) -> Vec<String> {
    if limit == 0 {
        return Vec::new();
    }
    if found.len() > limit {
        let rest = found.split_off(limit - 1);
        let names: Vec<&str> = rest
            .iter()
            .map(|a| a.title.rsplit('/').next().unwrap_or(&a.title))
            .collect();
        found.push(Annotation {
            title: format!("{drill}/+{} more", rest.len()),
            message: format!(
                "{} more failing assertions (see the job summary): {}",
                rest.len(),
                names.join(", ")
            ),
        });
    }
    found.iter().map(Annotation::command).collect()
}

/// How much of a summary [`append_summary`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// All of it.
    Whole,
    /// Its first lines and a note where it was cut.
    Cut,
    /// Nothing: the file was already too full for even the note.
    Nothing,
}

/// Appends `markdown` to the step summary file at `path`, keeping the file
/// within [`STEP_SUMMARY_LIMIT`]: what does not fit is cut at a line end
/// and a note says so. Earlier steps' or drills' text is kept.
pub fn append_summary(path: &Path, markdown: &str) -> std::io::Result<Appended> {
    let used = match std::fs::metadata(path) {
        Ok(metadata) => metadata.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
        Err(e) => return Err(e),
    };
    let room = usize::try_from(STEP_SUMMARY_LIMIT.saturating_sub(used)).unwrap_or(usize::MAX);
    let (text, appended) = if markdown.len() <= room {
        (markdown.to_owned(), Appended::Whole)
    } else if room > CUT_NOTE.len() {
        let mut end = room - CUT_NOTE.len();
        while !markdown.is_char_boundary(end) {
            end -= 1;
        }
        let end = markdown[..end].rfind('\n').unwrap_or(0);
        (format!("{}{CUT_NOTE}", &markdown[..end]), Appended::Cut)
    } else {
        return Ok(Appended::Nothing);
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    Ok(appended)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(n: usize) -> Vec<Annotation> {
        (1..=n)
            .map(|i| Annotation {
                title: format!("d/a{i}"),
                message: format!("m{i}"),
            })
            .collect()
    }

    #[test]
    fn messages_and_titles_are_escaped_as_the_runner_reads_them() {
        let a = Annotation {
            title: "drill/rto: api, 50%".to_owned(),
            message: "took 5m: 20%\nover\r".to_owned(),
        };
        assert_eq!(
            a.command(),
            "::error title=drill/rto%3A api%2C 50%25::took 5m: 20%25%0Aover%0D"
        );
    }

    #[test]
    fn ten_annotations_fit_and_the_eleventh_folds_the_rest_into_the_last() {
        assert_eq!(capped("d", found(10), MAX_ANNOTATIONS).len(), 10);
        assert!(capped("d", found(10), MAX_ANNOTATIONS)[9].contains("::m10"));
        let folded = capped("d", found(13), MAX_ANNOTATIONS);
        assert_eq!(folded.len(), MAX_ANNOTATIONS);
        assert!(folded[8].ends_with("::m9"), "{}", folded[8]);
        assert_eq!(
            folded[9],
            "::error title=d/+4 more::4 more failing assertions (see the job summary): a10, a11, a12, a13"
        );
    }

    #[test]
    fn what_is_left_of_the_step_s_limit_bounds_a_later_drill() {
        assert_eq!(capped("d", found(3), 0), Vec::<String>::new());
        assert_eq!(capped("d", found(1), 1), ["::error title=d/a1::m1"]);
        assert_eq!(
            capped("d", found(3), 1),
            [
                "::error title=d/+3 more::3 more failing assertions (see the job summary): a1, a2, a3"
            ]
        );
    }

    #[test]
    fn a_summary_that_fits_is_appended_whole_after_what_was_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        std::fs::write(&path, "earlier\n").unwrap();
        assert_eq!(append_summary(&path, "## mine\n").unwrap(), Appended::Whole);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "earlier\n## mine\n"
        );
    }

    #[test]
    fn a_summary_too_big_for_the_room_left_is_cut_at_a_line_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.md");
        let used = STEP_SUMMARY_LIMIT as usize - 10_000;
        std::fs::write(&path, "x".repeat(used)).unwrap();
        let markdown: String = (0..2_000).map(|i| format!("| row {i} | ✅ |\n")).collect();
        assert_eq!(append_summary(&path, &markdown).unwrap(), Appended::Cut);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.len() as u64 <= STEP_SUMMARY_LIMIT, "{}", text.len());
        assert!(text.ends_with(CUT_NOTE));
        let kept = &text[used..text.len() - CUT_NOTE.len()];
        assert!(
            kept.starts_with("| row 0 |") && kept.ends_with("✅ |"),
            "{kept:.40}"
        );
        // Full: nothing more is written, not even the note.
        std::fs::write(&path, "x".repeat(STEP_SUMMARY_LIMIT as usize - 5)).unwrap();
        assert_eq!(append_summary(&path, &markdown).unwrap(), Appended::Nothing);
        assert_eq!(
            std::fs::metadata(&path).unwrap().len(),
            STEP_SUMMARY_LIMIT - 5
        );
    }
}
