//! Reads a drill's `cluster.fromSnapshot` file at validation time: the
//! file decoded as a [`ClusterSnapshot`], its topology inferred and its
//! workloads and placements taken, every problem a diagnostic with the
//! snapshot's file, line and column (or the drill's `fromSnapshot:` line
//! when the file cannot be read at all).

use std::path::{Path, PathBuf};

use crate::manifest::{self, Document};
use crate::scenario::parse::read_source;
use crate::scenario::spec::ClusterSpec;
use crate::scenario::{Diagnostic, Diagnostics, Located, Position, SourceFile};
use crate::snapshot::{self, ClusterSnapshot};
use crate::snapshot_workloads::{self, Placements, UnsimulatedPod};
use crate::topology::snapshot::{SnapshotCluster, infer};

/// What a drill keeps of its snapshot after validation: where its pods run
/// and which of them are not simulated.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    /// The snapshot file, resolved against the drill's folder.
    pub path: PathBuf,
    /// The snapshot as `--snapshot` named it, when the run put it under the
    /// drill (rather than the drill's own `fromSnapshot`).
    pub given: Option<PathBuf>,
    /// Whether the drill `--snapshot` was given to is a built-in.
    pub given_to_builtin: bool,
    pub placements: Placements,
    pub unsimulated: Vec<UnsimulatedPod>,
}

/// A read snapshot: its topology, its objects as documents, and what the
/// drill keeps.
pub(crate) struct LoadedSnapshot {
    pub cluster: SnapshotCluster,
    pub documents: Vec<Document>,
    pub captured: Captured,
}

fn at(line: usize, column: usize) -> Position {
    Position {
        line: u32::try_from(line).unwrap_or(u32::MAX),
        column: u32::try_from(column).unwrap_or(u32::MAX),
        offset: 0,
        len: 0,
    }
}

/// Reads `path` (the drill's `fromSnapshot`, `named` where it is written).
pub(crate) fn load(
    named: &Located<PathBuf>,
    path: &Path,
    cluster: &ClusterSpec,
    drill: &SourceFile,
) -> Result<LoadedSnapshot, Diagnostics> {
    let source = read_source(path, manifest::MAX_INPUT_BYTES).map_err(|d| {
        let message = format!(
            "cannot read snapshot `{}`: {}",
            named.value.display(),
            d.message
        );
        Diagnostics(vec![Diagnostic::at(drill, named.at, message)])
    })?;
    let snapshot: ClusterSnapshot = serde_json::from_str(&source.text).map_err(|e| {
        let message =
            format!("not a ClusterSnapshot ({e}); expected the JSON file `bench snapshot` writes");
        Diagnostics(vec![Diagnostic::at(
            &source,
            at(e.line(), e.column()),
            message,
        )])
    })?;
    let map = crate::field_locate::FieldMap::parse(&source.text);
    let locate = |pointer: &str| {
        map.locate(0, pointer)
            .map_or(Position::UNKNOWN, |(l, c)| at(l as usize, c as usize))
    };
    let mut problems = Diagnostics::default();
    if snapshot.api_version != snapshot::API_VERSION || snapshot.kind != snapshot::KIND {
        problems.push(Diagnostic::at(
            &source,
            locate("/apiVersion"),
            format!(
                "`{} {}` is not a snapshot; expected apiVersion `{}` and kind `{}`",
                snapshot.api_version,
                snapshot.kind,
                snapshot::API_VERSION,
                snapshot::KIND
            ),
        ));
        return Err(problems);
    }
    if cluster.control_planes.is_some() {
        problems.push(Diagnostic::at(
            drill,
            named.at,
            "`controlPlanes:` beside `fromSnapshot:`: the snapshot's nodes are the control \
             planes; expected one of the two",
        ));
    }
    let inferred = match infer(&snapshot) {
        Ok(inferred) => inferred,
        Err(found) => {
            for problem in found {
                let pointer = format!("/items/{}{}", problem.item, problem.pointer);
                problems.push(Diagnostic::at(&source, locate(&pointer), problem.message));
            }
            return Err(problems);
        }
    };
    for class in &inferred.unknown_classes {
        if cluster
            .storage_classes
            .iter()
            .any(|c| *c.name == class.name)
        {
            continue;
        }
        problems.push(Diagnostic::at(
            &source,
            locate(&format!("/items/{}/provisioner", class.item)),
            format!(
                "storage class `{}` has provisioner `{}`, whose volumes' attach model the bench \
                 does not know; expected a `storageClasses:` entry named `{}` in the drill \
                 (`attach: SingleNode` or `Replicated`)",
                class.name, class.provisioner, class.name
            ),
        ));
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    let taken = snapshot_workloads::workloads(&snapshot);
    let name = path.display().to_string();
    let documents = taken
        .objects
        .into_iter()
        .map(|(item, value)| {
            let (line, column) = map.locate(0, &format!("/items/{item}")).unwrap_or((1, 1));
            Document {
                source: name.clone(),
                index: item,
                line,
                column,
                value,
            }
        })
        .collect();
    Ok(LoadedSnapshot {
        cluster: inferred,
        documents,
        captured: Captured {
            path: path.to_path_buf(),
            given: None,
            given_to_builtin: false,
            placements: taken.placements,
            unsimulated: taken.unsimulated,
        },
    })
}
