//! Helpers the unit tests and the integration tests share.
//!
//! Compiled into the library (hidden from its docs) because `tests/it`
//! cannot see `#[cfg(test)]` items.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Writes `body` to `path` and makes it executable.
///
/// A child `sh` writes the file, not this process. The test harness runs
/// tests on many threads: a file this process had open for writing while
/// another thread forked stays open in that child until it execs, and
/// running the script in that window fails with ETXTBSY ("Text file busy").
///
/// # Panics
///
/// When `sh` cannot be run or the file cannot be written: a test set-up
/// failure.
pub fn write_script(path: &Path, body: impl AsRef<[u8]>) {
    let mut sh = Command::new("sh")
        .args(["-c", "cat > \"$1\" && chmod 755 \"$1\"", "sh"])
        .arg(path)
        .stdin(Stdio::piped())
        .spawn()
        .expect("sh runs");
    sh.stdin
        .take()
        .expect("stdin is piped")
        .write_all(body.as_ref())
        .expect("sh reads the script");
    let status = sh.wait().expect("sh finishes");
    assert!(
        status.success(),
        "writing {} failed: {status}",
        path.display()
    );
}

/// A file of the repository (a built-in drill, a harness fixture), found
/// from whichever crate of the workspace a test runs in.
pub fn repo_file(relative: &str) -> std::path::PathBuf {
    let model = Path::new(env!("CARGO_MANIFEST_DIR"));
    let root = model
        .ancestors()
        .nth(2)
        .expect("the model crate sits in crates/");
    root.join(relative)
}
