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

/// `manifests` with a Namespace object for every namespace its objects name
/// that it does not declare, as a platform's render carries them (a drill
/// refuses an object in an undeclared namespace, as `NamespaceLifecycle`
/// admission does). For the tests whose manifests are about something else.
pub fn with_namespaces(manifests: &str) -> String {
    const SYSTEM: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];
    let mut named = std::collections::BTreeSet::new();
    for (at, key) in manifests.match_indices("namespace: ") {
        let rest = &manifests[at + key.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        if !name.is_empty() && !SYSTEM.contains(&name) {
            named.insert(name.to_owned());
        }
    }
    let mut out = manifests
        .trim_end()
        .trim_end_matches("---")
        .trim_end()
        .to_owned();
    for name in named {
        let declared = format!("kind: Namespace\nmetadata: {{name: {name}}}");
        if !manifests.contains(&declared) {
            out.push_str(&format!("\n---\napiVersion: v1\n{declared}\n"));
        }
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// A taint, its value optional.
pub fn taint(key: &str, value: Option<&str>, effect: &str) -> k8s_openapi::api::core::v1::Taint {
    k8s_openapi::api::core::v1::Taint {
        key: key.to_owned(),
        value: value.map(str::to_owned),
        effect: effect.to_owned(),
        time_added: None,
    }
}

/// A toleration; an empty key, operator, value or effect is left unset.
pub fn toleration(
    key: &str,
    op: &str,
    value: &str,
    effect: &str,
    seconds: Option<i64>,
) -> k8s_openapi::api::core::v1::Toleration {
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    k8s_openapi::api::core::v1::Toleration {
        key: opt(key),
        operator: opt(op),
        value: opt(value),
        effect: opt(effect),
        toleration_seconds: seconds,
    }
}
