//! The subset of `docker container inspect` the bench reads, and the
//! [`ContainerSpec`] it records from it.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::ids::ContainerState;
use super::spec::{ContainerSpec, MountSpec, NetworkAttachment, PortBinding, RestartPolicy};

/// The subset of `docker container inspect` this module reads.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct Inspected {
    pub(super) id: String,
    pub(super) name: String,
    image: String,
    pub(super) state: InspectedState,
    pub(super) config: InspectedConfig,
    host_config: InspectedHostConfig,
    network_settings: InspectedNetworkSettings,
    #[serde(default)]
    mounts: Vec<InspectedMount>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct InspectedState {
    pub(super) status: ContainerState,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(super) struct InspectedConfig {
    #[serde(default)]
    hostname: String,
    #[serde(default)]
    domainname: String,
    #[serde(default)]
    user: String,
    #[serde(default)]
    working_dir: String,
    #[serde(default, deserialize_with = "null_default")]
    pub(super) labels: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_default")]
    env: Vec<String>,
    #[serde(default)]
    cmd: Option<Vec<String>>,
    #[serde(default)]
    entrypoint: Option<Vec<String>>,
    image: String,
    #[serde(default)]
    stop_signal: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedHostConfig {
    #[serde(default)]
    network_mode: String,
    #[serde(default)]
    privileged: bool,
    #[serde(default)]
    readonly_rootfs: bool,
    #[serde(default, deserialize_with = "null_default")]
    security_opt: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    cap_add: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    cap_drop: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    tmpfs: BTreeMap<String, String>,
    #[serde(default)]
    cgroupns_mode: String,
    #[serde(default, deserialize_with = "null_default")]
    port_bindings: BTreeMap<String, Option<Vec<InspectedPortBinding>>>,
    #[serde(default)]
    restart_policy: Option<InspectedRestartPolicy>,
    #[serde(default)]
    init: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedPortBinding {
    #[serde(default)]
    host_ip: String,
    #[serde(default)]
    host_port: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedRestartPolicy {
    #[serde(default)]
    name: String,
    #[serde(default)]
    maximum_retry_count: u32,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedNetworkSettings {
    #[serde(default, deserialize_with = "null_default")]
    networks: BTreeMap<String, InspectedNetwork>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedNetwork {
    #[serde(default, rename = "IPAMConfig")]
    ipam_config: Option<InspectedIpam>,
    #[serde(default, deserialize_with = "null_default")]
    aliases: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct InspectedIpam {
    #[serde(default, rename = "IPv4Address")]
    ipv4: Option<String>,
    #[serde(default, rename = "IPv6Address")]
    ipv6: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct InspectedMount {
    #[serde(rename = "Type")]
    kind: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    source: String,
    destination: String,
    #[serde(default, rename = "RW")]
    rw: bool,
}

/// The aliases worth recreating: without the short id Docker adds itself
/// (a recreated container has another) and without repeats, in order.
pub(super) fn own_aliases(aliases: Vec<String>, short_id: &str) -> Vec<String> {
    let mut own: Vec<String> = Vec::new();
    for alias in aliases {
        if alias != short_id && !own.contains(&alias) {
            own.push(alias);
        }
    }
    own
}

/// Docker prints `null` for empty lists and maps.
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

impl Inspected {
    pub(super) fn into_spec(self) -> ContainerSpec {
        let short_id: String = self.id.chars().take(12).collect();
        let mut networks: Vec<NetworkAttachment> = self
            .network_settings
            .networks
            .into_iter()
            .map(|(network, settings)| {
                let ipam = settings.ipam_config;
                let (ipv4, ipv6) = match ipam {
                    Some(ipam) => (
                        ipam.ipv4.and_then(|ip| ip.parse().ok()),
                        ipam.ipv6.and_then(|ip| ip.parse().ok()),
                    ),
                    None => (None, None),
                };
                NetworkAttachment {
                    network,
                    ipv4,
                    ipv6,
                    aliases: own_aliases(settings.aliases, &short_id),
                }
            })
            .collect();
        // Primary first; the map already sorted the rest by name.
        let mode = self.host_config.network_mode.clone();
        networks.sort_by_key(|network| network.network != mode);

        let mounts = self
            .mounts
            .into_iter()
            .filter_map(|mount| {
                let source = match mount.kind.as_str() {
                    "volume" => mount.name?,
                    "bind" => mount.source,
                    // tmpfs comes from HostConfig.Tmpfs; anything else
                    // (npipe, cluster) does not occur on a Linux node.
                    _ => return None,
                };
                Some(MountSpec {
                    kind: mount.kind,
                    source,
                    target: mount.destination,
                    read_only: !mount.rw,
                })
            })
            .collect();

        let ports = self
            .host_config
            .port_bindings
            .into_iter()
            .flat_map(|(container_port, bindings)| {
                let bindings = bindings.unwrap_or_default();
                let container_port = container_port.clone();
                bindings.into_iter().map(move |binding| PortBinding {
                    container_port: container_port.clone(),
                    host_ip: binding.host_ip,
                    host_port: binding.host_port,
                })
            })
            .collect();

        let restart = self
            .host_config
            .restart_policy
            .map(|policy| RestartPolicy {
                name: policy.name,
                maximum_retry_count: policy.maximum_retry_count,
            })
            .unwrap_or(RestartPolicy {
                name: "no".into(),
                maximum_retry_count: 0,
            });

        ContainerSpec {
            name: self.name.trim_start_matches('/').to_owned(),
            image: self.config.image,
            image_id: self.image,
            hostname: self.config.hostname,
            domainname: self.config.domainname,
            user: self.config.user,
            working_dir: self.config.working_dir,
            labels: self.config.labels,
            env: {
                let mut env = self.config.env;
                env.sort();
                env
            },
            cmd: self.config.cmd,
            entrypoint: self.config.entrypoint,
            network_mode: self.host_config.network_mode,
            networks,
            mounts,
            tmpfs: self.host_config.tmpfs,
            privileged: self.host_config.privileged,
            read_only: self.host_config.readonly_rootfs,
            security_opt: self.host_config.security_opt,
            cap_add: self.host_config.cap_add,
            cap_drop: self.host_config.cap_drop,
            cgroupns_mode: self.host_config.cgroupns_mode,
            ports,
            restart,
            stop_signal: self.config.stop_signal.unwrap_or_default(),
            init: self.host_config.init,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn inspected(host_config: serde_json::Value, mounts: serde_json::Value) -> ContainerSpec {
        let value = json!({
            "Id": "0123456789abcdef",
            "Name": "/node",
            "Image": "sha256:1",
            "State": {"Status": "running"},
            "Config": {"Image": "img:1", "Labels": null, "Env": ["B=2", "A=1"]},
            "HostConfig": host_config,
            "NetworkSettings": {"Networks": null},
            "Mounts": mounts,
        });
        serde_json::from_value::<Inspected>(value)
            .expect("inspect output")
            .into_spec()
    }

    #[test]
    fn nulls_read_as_empty_and_a_missing_restart_policy_is_no_restart() {
        let spec = inspected(
            json!({"NetworkMode": "bridge", "PortBindings": null}),
            json!([]),
        );
        assert_eq!(spec.name, "node");
        assert_eq!(
            (spec.image.as_str(), spec.image_id.as_str()),
            ("img:1", "sha256:1")
        );
        assert!(spec.labels.is_empty() && spec.networks.is_empty() && spec.ports.is_empty());
        assert_eq!(spec.env, ["A=1", "B=2"], "sorted");
        assert_eq!(
            spec.restart,
            RestartPolicy {
                name: "no".to_owned(),
                maximum_retry_count: 0
            }
        );
    }

    #[test]
    fn volumes_go_by_name_binds_by_path_and_other_mounts_are_dropped() {
        let spec = inspected(
            json!({"NetworkMode": "bridge", "PortBindings": {"80/tcp": [{"HostIp": "", "HostPort": "8080"}], "81/tcp": null}}),
            json!([
                {"Type": "volume", "Name": "data", "Source": "/var/lib/docker/volumes/data", "Destination": "/data", "RW": true},
                {"Type": "bind", "Source": "/lib/modules", "Destination": "/lib/modules", "RW": false},
                {"Type": "npipe", "Source": "x", "Destination": "y", "RW": true},
            ]),
        );
        let mounts: Vec<(&str, &str, bool)> = spec
            .mounts
            .iter()
            .map(|m| (m.kind.as_str(), m.source.as_str(), m.read_only))
            .collect();
        assert_eq!(
            mounts,
            [("volume", "data", false), ("bind", "/lib/modules", true)]
        );
        assert_eq!(
            spec.ports.len(),
            1,
            "a port without bindings publishes nothing"
        );
        assert_eq!(spec.ports[0].host_port, "8080");
    }
}
