//! `bench snapshot` (capture a live cluster into a file) and
//! `bench sim serve --snapshot` (serve that file, frozen, for kubectl).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::error::{CommandError, Ending, finish};
use super::{Io, Signals};
use crate::io::printable;
use drillbench_backend::kube::capture::{self, CaptureOptions};
use drillbench_model::budget::Budgets;
use drillbench_model::exit::Exit;
use drillbench_model::snapshot::ClusterSnapshot;

/// The options of `bench snapshot`.
#[derive(Debug, Clone)]
pub struct SnapshotOptions {
    pub kubeconfig: PathBuf,
    pub context: Option<String>,
    /// Namespaces whose namespaced objects are read; empty: all.
    pub namespaces: Vec<String>,
    pub out: PathBuf,
    /// Overwrite an `out` file that is not a snapshot.
    pub force: bool,
    /// `--max-objects`, or the drill budget's object default.
    pub max_objects: Option<u64>,
}

/// `bench snapshot`: exit 0 with the file written; 2 for a bad
/// kubeconfig, context or `-o`, or a cluster over the object cap; 3 when
/// the cluster cannot be read. Nothing is written unless the capture is
/// whole.
pub fn snapshot(options: &SnapshotOptions, io: &mut Io<'_>) -> Exit {
    let result = take_snapshot(options, io);
    finish(result, io)
}

fn take_snapshot(options: &SnapshotOptions, io: &mut Io<'_>) -> Result<Ending, CommandError> {
    may_write(&options.out, options.force)?;
    let capture_options = CaptureOptions {
        namespaces: options.namespaces.clone(),
        max_objects: options
            .max_objects
            .unwrap_or_else(|| Budgets::default().objects),
    };
    let snapshot = capture::capture_kubeconfig(
        &options.kubeconfig,
        options.context.as_deref(),
        &capture_options,
    )
    .map_err(CommandError::Capture)?;
    write_atomically(&options.out, &snapshot.to_json()).map_err(|source| {
        CommandError::WriteSnapshot {
            path: options.out.clone(),
            source,
        }
    })?;
    let _ = writeln!(
        io.out,
        "{}: {} objects from {}",
        printable(&options.out.display().to_string()),
        snapshot.items.len(),
        printable(&snapshot.source.server)
    );
    if !snapshot.not_served.is_empty() {
        let _ = writeln!(
            io.out,
            "not served by the cluster: {}",
            printable(&snapshot.not_served.join(", "))
        );
    }
    Ok(Ending::Held)
}

/// Refuses to replace a file that is not a snapshot unless forced, as
/// `--kubeconfig-out` refuses a kubeconfig the bench did not write: `-o`
/// pointed at the wrong file must not destroy it. A folder is refused
/// always.
fn may_write(out: &Path, force: bool) -> Result<(), CommandError> {
    if out.is_dir() {
        return Err(CommandError::SnapshotOutIsDir(out.to_path_buf()));
    }
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(CommandError::SnapshotOutNoFolder(out.to_path_buf()));
    }
    if force || !out.exists() || ClusterSnapshot::is_snapshot_file(out) {
        return Ok(());
    }
    Err(CommandError::SnapshotNotOurs(out.to_path_buf()))
}

/// Writes `text` to a temporary file beside `path`, then renames it into
/// place: a reader, or a capture interrupted half-way, sees the previous
/// file or the new one whole, never half of one.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "snapshot.json".to_owned());
    let temporary = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let written = std::fs::write(&temporary, text)
        .and_then(|()| std::fs::File::open(&temporary)?.sync_all())
        .and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// The options of `bench sim serve --snapshot FILE`.
#[derive(Debug, Clone)]
pub struct ServeSnapshotOptions {
    pub snapshot: PathBuf,
    pub listen: SocketAddr,
    pub kubeconfig_out: Option<PathBuf>,
    pub force: bool,
    pub max_request_bytes: usize,
}

/// `bench sim serve --snapshot FILE`: reads the file (a bad one is exit 2
/// with its line and column, before anything listens), serves it frozen
/// and prints the address, then waits for Ctrl-C.
pub fn sim_serve_snapshot(options: &ServeSnapshotOptions, io: &mut Io<'_>) -> Exit {
    let result = serve_snapshot(options, io);
    finish(result, io)
}

fn serve_snapshot(options: &ServeSnapshotOptions, io: &mut Io<'_>) -> Result<Ending, CommandError> {
    let snapshot = ClusterSnapshot::read(&options.snapshot).map_err(CommandError::SnapshotFile)?;
    if let Some(kubeconfig) = &options.kubeconfig_out {
        drillbench_serve::may_write_kubeconfig(kubeconfig, options.force)?;
    }
    let serve_options = drillbench_serve::FrozenOptions {
        listen: options.listen,
        kubeconfig_out: options.kubeconfig_out.clone(),
        limits: drillbench_serve::Limits {
            max_body_bytes: options.max_request_bytes,
            ..drillbench_serve::Limits::default()
        },
    };
    let (server, unserved) = drillbench_serve::Server::start_frozen(&snapshot, &serve_options)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(CommandError::CtrlC)?;
    let signals = runtime
        .block_on(async { Signals::new() })
        .map_err(CommandError::CtrlC)?;
    for (kind, count) in &unserved {
        let _ = writeln!(
            io.err,
            "warning: {count} {} left out: the frozen server does not serve the kind",
            printable(kind)
        );
    }
    let _ = writeln!(
        io.out,
        "serving snapshot {} of {} (frozen: {} objects, nothing reconciles or changes them; writes are refused) at {}",
        printable(&options.snapshot.display().to_string()),
        printable(&snapshot.source.server),
        snapshot.items.len() - unserved.iter().map(|(_, n)| n).sum::<usize>(),
        server.url()
    );
    if let Some(path) = &options.kubeconfig_out {
        let _ = writeln!(io.out, "kubeconfig: {}", path.display());
    }
    let _ = io.out.flush();
    let waited = runtime.block_on(signals.wait());
    server.stop();
    waited.map_err(CommandError::CtrlC)?;
    Ok(Ending::Held)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_arrives_whole_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("prod.snapshot.json");
        std::fs::write(&path, "old\n").expect("write");
        write_atomically(&path, "new\n").expect("written");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "new\n");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    #[test]
    fn a_file_that_is_not_a_snapshot_is_kept_unless_forced() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("out.json");
        assert!(may_write(&path, false).is_ok(), "no file yet");
        std::fs::write(&path, "apiVersion: v1\nkind: Config\n").expect("write");
        assert!(matches!(
            may_write(&path, false),
            Err(CommandError::SnapshotNotOurs(_))
        ));
        assert!(may_write(&path, true).is_ok(), "forced");
        let source = drillbench_model::snapshot::SnapshotSource {
            context: None,
            server: "https://x".into(),
            namespaces: vec![],
        };
        std::fs::write(&path, ClusterSnapshot::new(source, vec![]).to_json()).expect("write");
        assert!(may_write(&path, false).is_ok(), "an earlier snapshot");
        assert!(matches!(
            may_write(dir.path(), true),
            Err(CommandError::SnapshotOutIsDir(_))
        ));
        assert!(matches!(
            may_write(&dir.path().join("missing/out.json"), true),
            Err(CommandError::SnapshotOutNoFolder(_))
        ));
    }
}
