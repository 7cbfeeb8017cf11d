//! A container as `docker create` takes it: recorded from `docker
//! inspect`, kept across a crash, and turned back into arguments.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

use drillbench_model::labels::RUN_LABEL;

/// One network the container is attached to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkAttachment {
    pub network: String,
    /// A static IPv4 address (`--ip`), if one was configured.
    pub ipv4: Option<Ipv4Addr>,
    /// A static IPv6 address (`--ip6`), if one was configured.
    pub ipv6: Option<Ipv6Addr>,
    /// Extra DNS names on that network, without the ones Docker adds
    /// itself (the short id).
    pub aliases: Vec<String>,
}

/// A mount, as `--mount` takes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountSpec {
    /// `bind` or `volume`.
    pub kind: String,
    /// The host path or the volume name.
    pub source: String,
    /// The path inside the container.
    pub target: String,
    /// Mounted read-only.
    pub read_only: bool,
}

/// A host port published for a container port.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortBinding {
    /// The container port with its protocol, e.g. `6443/tcp`.
    pub container_port: String,
    /// The host address; empty for every address.
    pub host_ip: String,
    /// The host port; empty for one chosen by Docker.
    pub host_port: String,
}

/// A restart policy (`--restart`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartPolicy {
    /// `no`, `always`, `unless-stopped` or `on-failure`.
    pub name: String,
    /// For `on-failure`: how many retries; 0 for unlimited.
    pub maximum_retry_count: u32,
}

/// What `docker create` needs to make the same container again, read from
/// `docker inspect`. Serializable so a drill can keep it in its report or
/// on disk across a crash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerSpec {
    /// The name, without Docker's leading slash.
    pub name: String,
    /// The image as it was asked for (a tag or a digest).
    pub image: String,
    /// The image id it resolved to when recorded, to notice a moved tag.
    pub image_id: String,
    pub hostname: String,
    pub domainname: String,
    /// The user, empty for the image's.
    pub user: String,
    /// The working directory, empty for the image's.
    pub working_dir: String,
    /// Labels, including the image's (re-applying them is harmless).
    pub labels: BTreeMap<String, String>,
    /// The environment, including the image's, sorted: the engine merges
    /// the image's variables with the container's in an order that differs
    /// between a container and one recreated from its spec, and holds each
    /// name once, so the order carries no meaning.
    pub env: Vec<String>,
    /// The command; `None` for the image's.
    pub cmd: Option<Vec<String>>,
    /// The entrypoint; `None` for the image's.
    pub entrypoint: Option<Vec<String>>,
    /// The network mode: `bridge`, `host`, `none`, `container:…` or the
    /// name of the primary user-defined network.
    pub network_mode: String,
    /// The networks, primary first, then the others by name.
    pub networks: Vec<NetworkAttachment>,
    pub mounts: Vec<MountSpec>,
    /// tmpfs mounts: path → options.
    pub tmpfs: BTreeMap<String, String>,
    /// Runs privileged (kind and Talos nodes do).
    pub privileged: bool,
    /// The root filesystem is read-only (Talos nodes have it so).
    pub read_only: bool,
    /// `--security-opt` values.
    pub security_opt: Vec<String>,
    pub cap_add: Vec<String>,
    pub cap_drop: Vec<String>,
    /// The cgroup namespace mode (`private`, `host`), empty for the default.
    pub cgroupns_mode: String,
    pub ports: Vec<PortBinding>,
    pub restart: RestartPolicy,
    /// The stop signal, empty for the image's.
    pub stop_signal: String,
    /// Runs an init process (`--init`); `None` for the engine's default.
    pub init: Option<bool>,
}

impl ContainerSpec {
    /// The run label's value, if the spec carries one.
    pub fn run(&self) -> Option<&str> {
        self.labels.get(RUN_LABEL).map(String::as_str)
    }

    /// The `docker create` arguments that recreate this container on its
    /// primary network (the others are connected before it starts).
    pub fn create_args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec!["create".into(), "--name".into(), (&self.name).into()];
        let mut flag = |name: &str, value: &str| {
            args.push(name.into());
            args.push(value.into());
        };
        for (option, value) in [
            ("--hostname", &self.hostname),
            ("--domainname", &self.domainname),
            ("--user", &self.user),
            ("--workdir", &self.working_dir),
            ("--cgroupns", &self.cgroupns_mode),
            ("--stop-signal", &self.stop_signal),
        ] {
            if !value.is_empty() {
                flag(option, value);
            }
        }
        for (key, value) in &self.labels {
            flag("--label", &format!("{key}={value}"));
        }
        for variable in &self.env {
            flag("--env", variable);
        }
        flag("--network", &self.network_mode);
        if let Some(primary) = self.primary_network() {
            if let Some(ip) = primary.ipv4 {
                flag("--ip", &ip.to_string());
            }
            if let Some(ip) = primary.ipv6 {
                flag("--ip6", &ip.to_string());
            }
            for alias in &primary.aliases {
                flag("--network-alias", alias);
            }
        }
        for mount in &self.mounts {
            let mut value = format!(
                "type={},source={},target={}",
                mount.kind, mount.source, mount.target
            );
            if mount.read_only {
                value.push_str(",readonly");
            }
            flag("--mount", &value);
        }
        for (path, options) in &self.tmpfs {
            if options.is_empty() {
                flag("--tmpfs", path);
            } else {
                flag("--tmpfs", &format!("{path}:{options}"));
            }
        }
        for option in &self.security_opt {
            flag("--security-opt", option);
        }
        for capability in &self.cap_add {
            flag("--cap-add", capability);
        }
        for capability in &self.cap_drop {
            flag("--cap-drop", capability);
        }
        for port in &self.ports {
            let host = match (port.host_ip.as_str(), port.host_port.as_str()) {
                ("", "") => String::new(),
                ("", host_port) => format!("{host_port}:"),
                (ip, host_port) => format!("{}:{host_port}:", bracket_v6(ip)),
            };
            flag("--publish", &format!("{host}{}", port.container_port));
        }
        let restart = match (self.restart.name.as_str(), self.restart.maximum_retry_count) {
            ("", _) => "no".to_owned(),
            ("on-failure", n) if n > 0 => format!("on-failure:{n}"),
            (name, _) => name.to_owned(),
        };
        flag("--restart", &restart);
        if self.privileged {
            args.push("--privileged".into());
        }
        if self.read_only {
            args.push("--read-only".into());
        }
        match self.init {
            Some(true) => args.push("--init".into()),
            Some(false) => args.push("--init=false".into()),
            None => {}
        }
        if let Some(entrypoint) = &self.entrypoint {
            // `--entrypoint` takes one word; the rest goes before the command.
            match entrypoint.split_first() {
                Some((first, rest)) => {
                    args.push("--entrypoint".into());
                    args.push(first.into());
                    args.push((&self.image).into());
                    args.extend(rest.iter().map(OsString::from));
                }
                None => {
                    args.push("--entrypoint=".into());
                    args.push((&self.image).into());
                }
            }
        } else {
            args.push((&self.image).into());
        }
        args.extend(self.cmd.iter().flatten().map(OsString::from));
        args
    }

    /// The network `--network` names, if it is a network (not `host`,
    /// `none`, `container:…` or the default bridge without a static IP).
    fn primary_network(&self) -> Option<&NetworkAttachment> {
        self.networks
            .iter()
            .find(|network| network.network == self.network_mode)
    }

    /// The networks to connect after creation, before the start.
    pub(super) fn secondary_networks(&self) -> impl Iterator<Item = &NetworkAttachment> {
        self.networks
            .iter()
            .filter(|network| network.network != self.network_mode)
    }
}

fn bracket_v6(ip: &str) -> String {
    if ip.contains(':') {
        format!("[{ip}]")
    } else {
        ip.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ContainerSpec {
        ContainerSpec {
            name: "n".to_owned(),
            image: "img".to_owned(),
            image_id: String::new(),
            hostname: String::new(),
            domainname: String::new(),
            user: String::new(),
            working_dir: String::new(),
            labels: BTreeMap::new(),
            env: Vec::new(),
            cmd: None,
            entrypoint: None,
            network_mode: "bridge".to_owned(),
            networks: Vec::new(),
            mounts: Vec::new(),
            tmpfs: BTreeMap::new(),
            privileged: false,
            read_only: false,
            security_opt: Vec::new(),
            cap_add: Vec::new(),
            cap_drop: Vec::new(),
            cgroupns_mode: String::new(),
            ports: Vec::new(),
            restart: RestartPolicy {
                name: String::new(),
                maximum_retry_count: 0,
            },
            stop_signal: String::new(),
            init: None,
        }
    }

    fn args(spec: &ContainerSpec) -> Vec<String> {
        spec.create_args()
            .into_iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_bare_spec_creates_with_no_restart_and_the_image_last() {
        assert_eq!(
            args(&spec()),
            [
                "create",
                "--name",
                "n",
                "--network",
                "bridge",
                "--restart",
                "no",
                "img"
            ]
        );
        assert_eq!(spec().run(), None);
    }

    #[test]
    fn ports_restart_init_and_an_empty_entrypoint_are_spelled_as_docker_takes_them() {
        let mut spec = spec();
        spec.ports = vec![
            PortBinding {
                container_port: "6443/tcp".to_owned(),
                host_ip: "::1".to_owned(),
                host_port: "7443".to_owned(),
            },
            PortBinding {
                container_port: "80/tcp".to_owned(),
                host_ip: String::new(),
                host_port: "8080".to_owned(),
            },
            PortBinding {
                container_port: "53/udp".to_owned(),
                host_ip: String::new(),
                host_port: String::new(),
            },
        ];
        spec.restart = RestartPolicy {
            name: "on-failure".to_owned(),
            maximum_retry_count: 0,
        };
        spec.init = Some(false);
        spec.entrypoint = Some(Vec::new());
        let args = args(&spec);
        let publish: Vec<&str> = args
            .windows(2)
            .filter(|w| w[0] == "--publish")
            .map(|w| w[1].as_str())
            .collect();
        assert_eq!(publish, ["[::1]:7443:6443/tcp", "8080:80/tcp", "53/udp"]);
        assert!(args.windows(2).any(|w| w == ["--restart", "on-failure"]));
        assert_eq!(
            args[args.len() - 3..],
            ["--init=false", "--entrypoint=", "img"]
        );
    }

    #[test]
    fn the_networks_besides_the_mode_are_connected_after_creation() {
        let mut spec = spec();
        spec.network_mode = "drill-net".to_owned();
        spec.networks = ["drill-net", "side"]
            .map(|network| NetworkAttachment {
                network: network.to_owned(),
                ipv4: None,
                ipv6: None,
                aliases: Vec::new(),
            })
            .to_vec();
        let secondary: Vec<&str> = spec
            .secondary_networks()
            .map(|n| n.network.as_str())
            .collect();
        assert_eq!(secondary, ["side"]);
        assert_eq!(
            spec.primary_network().map(|n| n.network.as_str()),
            Some("drill-net")
        );
    }
}
