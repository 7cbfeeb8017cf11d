use std::net::Ipv4Addr;

use super::inspect::{Inspected, own_aliases};
use super::*;

fn fixture() -> ContainerSpec {
    let text = include_str!("../testdata/inspect-node.json");
    let mut inspected: Vec<Inspected> = serde_json::from_str(text).unwrap();
    inspected.pop().unwrap().into_spec()
}

#[test]
fn a_recorded_node_spec_holds_what_docker_run_needs() {
    let spec = fixture();
    assert_eq!(spec.name, "drill-cp-1");
    assert_eq!(spec.image, "drillbench-test/sleeper:local");
    assert_eq!(spec.hostname, "cp-1");
    assert_eq!(spec.run(), Some("run-42"));
    assert_eq!(spec.cmd, Some(vec!["x".into(), "y".into()]));
    assert_eq!(spec.entrypoint, Some(vec!["/sleeper".into()]));
    assert_eq!(spec.network_mode, "drill-net");
    assert_eq!(spec.networks.len(), 2);
    assert_eq!(spec.networks[0].network, "drill-net");
    assert_eq!(spec.networks[0].ipv4, Some(Ipv4Addr::new(172, 29, 50, 10)));
    // The short id alias is Docker's own and would be stale on recreate.
    assert_eq!(spec.networks[0].aliases, vec!["cp-1".to_owned()]);
    assert_eq!(spec.networks[1].network, "drill-side");
    assert_eq!(spec.tmpfs.get("/run").map(String::as_str), Some("size=1m"));
    assert_eq!(spec.restart.name, "on-failure");
    assert_eq!(spec.restart.maximum_retry_count, 3);
    assert_eq!(spec.security_opt, vec!["no-new-privileges".to_owned()]);
    assert!(spec.privileged);
    assert_eq!(spec.mounts.len(), 2);
}

#[test]
fn the_create_arguments_reproduce_the_recorded_settings() {
    let args: Vec<String> = fixture()
        .create_args()
        .into_iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    insta::assert_snapshot!(args.join("\n"));
}

#[test]
fn a_multi_word_entrypoint_keeps_its_tail_before_the_command() {
    let mut spec = fixture();
    spec.entrypoint = Some(vec!["/bin/sh".into(), "-c".into()]);
    spec.cmd = Some(vec!["sleep 1".into()]);
    let args: Vec<String> = spec
        .create_args()
        .into_iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        args[args.len() - 5..],
        [
            "--entrypoint",
            "/bin/sh",
            "drillbench-test/sleeper:local",
            "-c",
            "sleep 1"
        ]
    );
}

#[test]
fn a_recorded_spec_survives_a_trip_through_json() {
    // A drill writes the spec down before removing the container, so a
    // crash in between still leaves a way back.
    let spec = fixture();
    let text = serde_json::to_string(&spec).unwrap();
    assert_eq!(serde_json::from_str::<ContainerSpec>(&text).unwrap(), spec);
}

#[test]
fn own_aliases_drop_the_short_id_and_repeats() {
    let aliases = ["0123456789ab", "cp-1", "api", "cp-1"]
        .map(String::from)
        .to_vec();
    assert_eq!(own_aliases(aliases, "0123456789ab"), ["cp-1", "api"]);
}

#[test]
fn run_ids_follow_label_value_rules() {
    for ok in ["a", "run-42", "2026.11.30_1", &"x".repeat(63)] {
        assert!(RunId::new(ok).is_ok(), "{ok}");
    }
    for bad in ["", "-a", "a-", "a b", "a=b", "ä", &"x".repeat(64)] {
        assert!(
            matches!(RunId::new(bad), Err(DockerError::InvalidRunId(_))),
            "{bad}"
        );
    }
}

#[test]
fn engine_messages_are_told_apart_from_failures() {
    assert!(engine_unreachable(
        "Cannot connect to the Docker daemon at unix:///nope.sock. Is the docker daemon running?"
    ));
    assert!(engine_unreachable(
        "error during connect: Get \"http://x/v1.41/version\": dial tcp: lookup x: no such host"
    ));
    assert!(!engine_unreachable(
        "Error response from daemon: No such container: x"
    ));
}

#[test]
fn unavailable_docker_is_an_infrastructure_error_and_a_refusal_is_bad_input() {
    let missing = DockerError::Missing {
        program: "docker".into(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    };
    assert!(missing.is_unavailable());
    assert_eq!(missing.exit(), Exit::Infrastructure);
    assert!(missing.to_string().contains("apt-get install docker.io"));
    let refused = DockerError::NotBenchOwned { name: "db".into() };
    assert!(!refused.is_unavailable());
    assert_eq!(refused.exit(), Exit::BadInput);
}
