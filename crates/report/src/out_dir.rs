//! The folder a run writes its reports into.
//!
//! It is checked before a drill runs, so a `--out` that names a file or an
//! unwritable place is bad input and not a verdict lost after an hour of
//! drill. Files are written whole into a staging folder inside it and then
//! renamed into place one by one: a reader, or a run interrupted half-way,
//! sees each file complete, the previous run's or this one's, never a
//! truncated `report.json` beside the previous run's Markdown.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// What writes one staged file's contents. It gets a buffered file, so a
/// report is serialised straight to disk rather than built as one string
/// first.
pub type Contents<'a> = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + 'a>;

/// One file to stage: its name and its contents.
pub type Staged<'a> = (&'a str, Contents<'a>);

/// The contents of text already rendered.
pub fn text(text: &str) -> Contents<'_> {
    Box::new(move |out| out.write_all(text.as_bytes()))
}

/// A folder that exists and that this process can create files in.
#[derive(Debug)]
pub struct OutDir {
    path: PathBuf,
}

/// Proves, without creating anything that stays, that [`OutDir::prepare`]
/// will succeed for `path`: the nearest part of it that exists is a
/// folder this process can create entries in.
pub fn check(path: &Path) -> io::Result<()> {
    let existing = path
        .ancestors()
        .find(|p| p.as_os_str().is_empty() || p.exists())
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !existing.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotADirectory,
            format!("{} is not a folder", existing.display()),
        ));
    }
    let probe = existing.join(format!(".bench-probe-{}", std::process::id()));
    std::fs::create_dir(&probe)?;
    std::fs::remove_dir(&probe)
}

impl OutDir {
    /// Creates `path` (and its parents) if missing, and proves it writable
    /// by creating and removing the staging folder reports will use.
    pub fn prepare(path: &Path) -> io::Result<OutDir> {
        std::fs::create_dir_all(path)?;
        let out = OutDir {
            path: path.to_path_buf(),
        };
        let staging = out.staging();
        std::fs::create_dir(&staging)?;
        std::fs::remove_dir(&staging)?;
        Ok(out)
    }

    /// Writes each `(file name, contents)` and returns the paths, in order.
    pub fn write(&self, files: &[(&str, String)]) -> io::Result<Vec<PathBuf>> {
        self.write_streamed(files.iter().map(|(name, t)| (*name, text(t))).collect())
    }

    /// Stages each file through its writer, then renames them into place
    /// in order; returns the paths, in order.
    pub fn write_streamed(&self, files: Vec<Staged<'_>>) -> io::Result<Vec<PathBuf>> {
        let staging = self.staging();
        // A staging folder of this name is one an earlier, interrupted
        // process with the same id left: nothing anyone else reads.
        match std::fs::remove_dir_all(&staging) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::create_dir(&staging)?;
        let mut names = Vec::with_capacity(files.len());
        let staged = files.into_iter().try_for_each(|(name, write)| {
            names.push(name);
            let mut out = io::BufWriter::new(std::fs::File::create(staging.join(name))?);
            write(&mut out)?;
            out.into_inner()
                .map_err(io::IntoInnerError::into_error)?
                .sync_all()
        });
        if let Err(e) = staged {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
        let mut written = Vec::with_capacity(names.len());
        for name in names {
            let path = self.path.join(name);
            std::fs::rename(staging.join(name), &path)?;
            written.push(path);
        }
        std::fs::remove_dir(&staging)?;
        Ok(written)
    }

    fn staging(&self) -> PathBuf {
        self.path
            .join(format!(".bench-partial-{}", std::process::id()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_arrive_whole_and_nothing_is_left_beside_them() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::prepare(&dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/keep.txt"), "mine").unwrap();
        let written = out
            .write(&[("one.json", "1".into()), ("two.md", "2".into())])
            .unwrap();
        assert_eq!(
            written,
            [
                dir.path().join("a/b/one.json"),
                dir.path().join("a/b/two.md")
            ]
        );
        assert_eq!(std::fs::read_to_string(&written[1]).unwrap(), "2");
        let mut names: Vec<_> = std::fs::read_dir(dir.path().join("a/b"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["keep.txt", "one.json", "two.md"],
            "no staging folder left"
        );
        // A second run replaces the files it writes, and only those.
        out.write(&[("one.json", "1b".into())]).unwrap();
        assert_eq!(std::fs::read_to_string(&written[0]).unwrap(), "1b");
        assert_eq!(std::fs::read_to_string(&written[1]).unwrap(), "2");
    }

    #[test]
    fn a_file_or_an_unwritable_place_is_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        for refused in [file.clone(), file.join("below"), PathBuf::from("/dev/full")] {
            assert!(check(&refused).is_err(), "{}", refused.display());
            assert!(OutDir::prepare(&refused).is_err(), "{}", refused.display());
        }
        // Controls: a fresh folder beside it, checked without being made,
        // then made.
        let fresh = dir.path().join("fresh/er");
        check(&fresh).unwrap();
        assert!(
            !dir.path().join("fresh").exists(),
            "checking creates nothing"
        );
        assert!(OutDir::prepare(&fresh).is_ok());
        check(Path::new("relative-and-missing")).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_previous_files_whole() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::prepare(dir.path()).unwrap();
        out.write(&[("report.json", "old".into())]).unwrap();
        // A name that cannot be a file fails while staging.
        let failed = out.write(&[("report.json", "new".into()), ("no/such/dir", "x".into())]);
        assert!(failed.is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("report.json")).unwrap(),
            "old",
            "nothing was renamed into place"
        );
        assert!(!out.staging().exists());
    }

    #[test]
    fn a_streamed_file_arrives_whole_and_a_writer_that_fails_moves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = OutDir::prepare(dir.path()).unwrap();
        out.write(&[("report.json", "old".into())]).unwrap();
        // Written in many small pieces, as a serialiser does.
        let big: Staged<'_> = (
            "report.json",
            Box::new(|w| (0..10_000).try_for_each(|i| writeln!(w, "{i}"))),
        );
        out.write_streamed(vec![big]).unwrap();
        let text = std::fs::read_to_string(dir.path().join("report.json")).unwrap();
        assert_eq!(text.lines().count(), 10_000);
        assert!(text.ends_with("9999\n"));
        // A writer failing half-way leaves the previous file as it was.
        let failing: Staged<'_> = (
            "report.json",
            Box::new(|w| {
                w.write_all(b"half")?;
                Err(io::Error::other("serialiser failed"))
            }),
        );
        assert!(out.write_streamed(vec![failing]).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("report.json")).unwrap(),
            text
        );
        assert!(!out.staging().exists());
    }
}
