//! Import of a `ksail.io/v1alpha1 Cluster` file, the platform's own
//! description of its cluster, so a drill rehearses the topology production
//! really has rather than a copy that drifts.
//!
//! KSail's format has many fields a drill does not need; unknown fields are
//! ignored here (it is not our language), but the fields that are read are
//! checked and errors point into the imported file.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::{
    Autoscaler, Capacity, ControlPlanes, DEFAULT_FAILOVER_DELAY, Endpoint, Imported, Pool,
    PoolSize, server_types,
};
use crate::labels::{AUTOSCALED_LABEL, BASELINE_LABEL};
use crate::name_pattern::NamePattern;
use crate::scenario::parse::{
    MAX_DRILL_BYTES, read_source, yaml_message, yaml_options, yaml_position,
};
use crate::scenario::spec::Expander;
use crate::scenario::{Diagnostic, Diagnostics, Located, Position, SourceFile};

/// The name of the imported pool of static workers.
pub const BASELINE_POOL: &str = "baseline";
/// The label that makes Longhorn create a default disk on a node.
pub const LONGHORN_DISK_LABEL: &str = "node.longhorn.io/create-default-disk";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KsailFile {
    api_version: Located<String>,
    kind: Located<String>,
    metadata: KsailMetadata,
    spec: KsailSpec,
}

#[derive(Debug, Deserialize)]
struct KsailMetadata {
    name: Located<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KsailSpec {
    #[serde(default)]
    cluster: KsailCluster,
    #[serde(default)]
    provider: KsailProvider,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KsailCluster {
    control_planes: Option<Located<u32>>,
    workers: Option<Located<u32>>,
    autoscaler: Option<KsailAutoscaler>,
}

#[derive(Debug, Default, Deserialize)]
struct KsailAutoscaler {
    node: Option<KsailNodeAutoscaler>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KsailNodeAutoscaler {
    #[serde(default)]
    enabled: bool,
    #[serde(default)]
    expander: Vec<Located<String>>,
    max_nodes_total: Option<u32>,
    scale_down_unneeded_time: Option<Located<String>>,
    #[serde(default)]
    pools: Vec<KsailPool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KsailPool {
    name: Located<String>,
    server_type: Located<String>,
    #[serde(default)]
    min: u32,
    max: Located<u32>,
}

#[derive(Debug, Default, Deserialize)]
struct KsailProvider {
    hetzner: Option<KsailHetzner>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct KsailHetzner {
    control_plane_server_type: Option<Located<String>>,
    worker_server_type: Option<Located<String>>,
    #[serde(default, rename = "floatingIPEnabled")]
    floating_ip_enabled: bool,
}

/// Reads a ksail Cluster file into the topology it describes.
///
/// `at` is where the drill names the file and `drill` the drill's source,
/// so an unreadable import points at the `import:` line.
pub fn import(path: &Path, at: Position, drill: &SourceFile) -> Result<Imported, Diagnostics> {
    let source = read_source(path, MAX_DRILL_BYTES).map_err(|d| {
        let message = format!("cannot import `{}`: {}", path.display(), d.message);
        Diagnostics(vec![Diagnostic::at(drill, at, message)])
    })?;
    import_source(&source)
}

/// Reads the text of a ksail Cluster file, already in memory.
pub fn import_source(source: &SourceFile) -> Result<Imported, Diagnostics> {
    let file: KsailFile = serde_saphyr::from_str_with_options(&source.text, yaml_options())
        .map_err(|e| {
            Diagnostics(vec![Diagnostic::at(
                source,
                yaml_position(&e),
                yaml_message(&e),
            )])
        })?;
    from_file(&file, source)
}

fn from_file(file: &KsailFile, source: &SourceFile) -> Result<Imported, Diagnostics> {
    let mut problems = Diagnostics::default();
    let mut error =
        |at: Position, message: String| problems.push(Diagnostic::at(source, at, message));
    if file.api_version.as_str() != "ksail.io/v1alpha1" {
        error(
            file.api_version.at,
            format!(
                "unsupported apiVersion `{}`; expected `ksail.io/v1alpha1`",
                file.api_version.value
            ),
        );
    }
    if file.kind.as_str() != "Cluster" {
        error(
            file.kind.at,
            format!("unsupported kind `{}`; expected `Cluster`", file.kind.value),
        );
    }
    let name = file.metadata.name.value.clone();
    let hetzner = file.spec.provider.hetzner.as_ref();
    let mut server = |field: Option<&Located<String>>, default: &str| -> (String, Capacity) {
        let server_type = field.map_or(default, |s| s.value.as_str()).to_owned();
        match server_types::capacity(&server_type) {
            Some(capacity) => (server_type, capacity),
            None => {
                let at = field.map_or(Position::UNKNOWN, |f| f.at);
                error(
                    at,
                    format!(
                        "unknown server type `{server_type}`; expected one of: {}",
                        server_types::NAMES.join(", ")
                    ),
                );
                (server_type, server_types::fallback())
            }
        }
    };
    let (cp_type, cp_capacity) = server(
        hetzner.and_then(|h| h.control_plane_server_type.as_ref()),
        "cx33",
    );
    let (worker_type, worker_capacity) =
        server(hetzner.and_then(|h| h.worker_server_type.as_ref()), "cx43");

    let cluster = &file.spec.cluster;
    let cp_count = cluster.control_planes.as_ref().map_or(3, |c| c.value);
    let control_planes = ControlPlanes {
        name_pattern: NamePattern::ordinal(&format!("{name}-control-plane")),
        ordinals: (1..=cp_count).collect(),
        server_type: Some(cp_type),
        capacity: cp_capacity,
        learners_at_start: 0,
        nodes: Vec::new(),
    };
    let workers = cluster.workers.as_ref().map_or(0, |w| w.value);
    let mut pools = Vec::new();
    if workers > 0 {
        pools.push(Pool {
            name: BASELINE_POOL.to_owned(),
            name_pattern: NamePattern::ordinal(&format!("{name}-worker")),
            size: PoolSize::Static(workers),
            server_type: Some(worker_type),
            capacity: worker_capacity,
            labels: BTreeMap::from([
                (BASELINE_LABEL.to_owned(), "true".to_owned()),
                (LONGHORN_DISK_LABEL.to_owned(), "true".to_owned()),
            ]),
            taints: Vec::new(),
            nodes: Vec::new(),
        });
    }

    let mut autoscaler = Autoscaler::default();
    if let Some(node) = cluster.autoscaler.as_ref().and_then(|a| a.node.as_ref())
        && node.enabled
    {
        autoscaler.max_nodes_total = node.max_nodes_total;
        if let Some(time) = &node.scale_down_unneeded_time {
            // A ksail file is read by ksail with Go's ParseDuration.
            match crate::duration::Duration::parse_go(time) {
                Ok(duration) => autoscaler.scale_down_unneeded_time = duration,
                Err(e) => error(time.at, format!("invalid scaleDownUnneededTime: {e}")),
            }
        }
        if !node.expander.is_empty() {
            let mut chain = Vec::new();
            for expander in &node.expander {
                match parse_expander(expander) {
                    Some(e) => chain.push(e),
                    None => error(
                        expander.at,
                        format!(
                            "unknown expander `{}`; expected LeastNodes, LeastWaste, MostPods or Random",
                            expander.value
                        ),
                    ),
                }
            }
            autoscaler.expanders = chain;
        }
        for pool in &node.pools {
            let capacity = match server_types::capacity(&pool.server_type) {
                Some(capacity) => capacity,
                None => {
                    error(
                        pool.server_type.at,
                        format!(
                            "unknown server type `{}`; expected one of: {}",
                            pool.server_type.value,
                            server_types::NAMES.join(", ")
                        ),
                    );
                    continue;
                }
            };
            if pool.min > pool.max.value {
                error(
                    pool.max.at,
                    format!(
                        "pool `{}` has min {} above max {}",
                        pool.name.value, pool.min, pool.max.value
                    ),
                );
            }
            pools.push(Pool {
                name: pool.name.value.clone(),
                name_pattern: NamePattern::random(&pool.name.value),
                size: PoolSize::Autoscaled {
                    min: pool.min,
                    max: pool.max.value,
                },
                server_type: Some(pool.server_type.value.clone()),
                capacity,
                labels: BTreeMap::from([(AUTOSCALED_LABEL.to_owned(), "true".to_owned())]),
                taints: Vec::new(),
                nodes: Vec::new(),
            });
        }
    }

    let endpoint = hetzner.filter(|h| h.floating_ip_enabled).map(|_| Endpoint {
        name: format!("{name}-floating-ip"),
        failover_delay: DEFAULT_FAILOVER_DELAY,
        holder: String::new(),
        mode: super::EndpointMode::Floating,
    });

    if problems.is_empty() {
        Ok(Imported {
            control_planes: Some(control_planes),
            pools,
            autoscaler,
            endpoint,
        })
    } else {
        Err(problems)
    }
}

/// KSail writes expanders in Go's PascalCase; the autoscaler's flag in kebab-case.
fn parse_expander(name: &str) -> Option<Expander> {
    match name {
        "LeastNodes" | "least-nodes" => Some(Expander::LeastNodes),
        "LeastWaste" | "least-waste" => Some(Expander::LeastWaste),
        "MostPods" | "most-pods" => Some(Expander::MostPods),
        "Random" | "random" => Some(Expander::Random),
        _ => None,
    }
}
