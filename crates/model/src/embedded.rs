//! The built-in drills and the files they read (ksail import, manifests,
//! the drill schema), compiled into the binary so a copied `bench` runs
//! them from any folder. `build.rs` lists the files.
//!
//! An embedded file has a path under the pseudo-folder [`ROOT`], so the
//! drill loader resolves a built-in's `../harness/...` references exactly
//! as it resolves a file on disk, and its diagnostics name the file.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

include!(concat!(env!("OUT_DIR"), "/embedded_files.rs"));

/// The pseudo-folder embedded files live under. Angle brackets make it a
/// name no one gives a real folder, and say in a diagnostic that the file
/// came from the binary.
pub const ROOT: &str = "<built-in>";

/// Every embedded file, as a path relative to the repository and its text,
/// sorted by path.
pub fn files() -> &'static [(&'static str, &'static str)] {
    FILES
}

/// The path an embedded file is read by, e.g. `<built-in>/scenarios/x.yaml`.
pub fn path_of(relative: &str) -> PathBuf {
    Path::new(ROOT).join(relative)
}

/// Whether `path` names something under [`ROOT`] (whether or not it exists).
pub fn is_embedded(path: &Path) -> bool {
    path.components().next() == Some(Component::Normal(ROOT.as_ref()))
}

/// `path` relative to [`ROOT`] with `.` and `..` resolved, `/`-separated,
/// or `None` if it is not embedded or climbs out of the root.
fn relative(path: &Path) -> Option<String> {
    if !is_embedded(path) {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for component in path.components().skip(1) {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}

/// The text of the embedded file at `path`, if there is one.
pub fn read(path: &Path) -> Option<&'static str> {
    let wanted = relative(path)?;
    FILES
        .binary_search_by(|(name, _)| (*name).cmp(wanted.as_str()))
        .ok()
        .map(|i| FILES[i].1)
}

/// `dir.join(reference)`, with `..` resolved when `dir` is embedded, so a
/// built-in's references read `<built-in>/harness/...` in diagnostics.
pub fn join(dir: &Path, reference: &Path) -> PathBuf {
    let joined = dir.join(reference);
    match relative(&joined) {
        Some(relative) => path_of(&relative),
        None => joined,
    }
}

/// Whether `path` is a regular file: an embedded one, or one on disk.
pub fn is_file(path: &Path) -> bool {
    if is_embedded(path) {
        read(path).is_some()
    } else {
        path.is_file()
    }
}

/// Whether `path` exists at all (embedded or on disk).
pub fn exists(path: &Path) -> bool {
    if is_embedded(path) {
        read(path).is_some()
    } else {
        path.exists()
    }
}

/// The bytes of `path`, embedded or on disk.
pub fn read_bytes(path: &Path) -> std::io::Result<Cow<'static, [u8]>> {
    if is_embedded(path) {
        read(path)
            .map(|text| Cow::Borrowed(text.as_bytes()))
            .ok_or_else(|| not_embedded(path))
    } else {
        std::fs::read(path).map(Cow::Owned)
    }
}

/// The error for an embedded path that names no embedded file.
pub fn not_embedded(path: &Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("{} is not a file built into bench", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_in_reference_resolves_through_parent_folders() {
        let drill = path_of("scenarios/cp-recreate.yaml");
        let import = join(
            drill.parent().unwrap(),
            Path::new("../harness/ksail/ksail.prod.yaml"),
        );
        assert_eq!(import, path_of("harness/ksail/ksail.prod.yaml"));
        assert!(read(&import).is_some_and(|t| t.contains("ksail.io/v1alpha1")));
        assert!(is_file(&drill));
    }

    #[test]
    fn a_path_outside_the_root_or_not_embedded_reads_nothing() {
        assert_eq!(read(&path_of("../Cargo.toml")), None);
        assert_eq!(read(&path_of("scenarios/no-such-drill.yaml")), None);
        assert!(!is_file(&path_of("scenarios")));
        // The same relative path on disk is not the embedded file.
        assert_eq!(read(Path::new("scenarios/cp-recreate.yaml")), None);
    }

    #[test]
    fn the_files_are_sorted_so_lookup_can_bisect() {
        assert!(files().windows(2).all(|w| w[0].0 < w[1].0));
        assert!(
            files()
                .iter()
                .any(|(p, _)| *p == "scenarios/cp-recreate.yaml")
        );
    }
}
