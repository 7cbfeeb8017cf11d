//! `bench preflight cp-recreate` through the real binary.
//!
//! Every test starts from the recorded healthy cluster (asserted ready in
//! its own test, so a command that always refuses cannot pass) and breaks
//! exactly one thing, then checks the exact output and exit code.

use crate::preflight_support;

use preflight_support::{Case, Outcome, set_ready, without_ready};
use serde_json::{Value, json};

const NOT_READY: i32 = 1;
const INPUT_ERROR: i32 = 2;

fn reasons(outcome: &Outcome) -> Vec<&str> {
    outcome
        .stdout
        .lines()
        .filter(|line| line.starts_with("reason="))
        .collect()
}

/// Not ready, with exactly these reasons, and the standard header lines.
fn assert_not_ready(outcome: &Outcome, expected: &[&str]) {
    assert_eq!(outcome.code, NOT_READY, "{outcome:#?}");
    assert!(outcome.stdout.contains("\nready=false\n"), "{outcome:#?}");
    assert!(!outcome.stdout.contains("ready=true"), "{outcome:#?}");
    let expected: Vec<String> = expected.iter().map(|r| format!("reason={r}")).collect();
    assert_eq!(reasons(outcome), expected, "{outcome:#?}");
}

/// An input error: `ready=false` alone on stdout, a message on stderr.
fn assert_input_error(outcome: &Outcome, stderr_mentions: &str) {
    assert_eq!(outcome.code, INPUT_ERROR, "{outcome:#?}");
    assert_eq!(outcome.stdout, "ready=false\n", "{outcome:#?}");
    assert!(
        outcome.stderr.contains(stderr_mentions),
        "stderr should mention {stderr_mentions:?}: {outcome:#?}"
    );
}

fn node_mut<'a>(nodes: &'a mut Value, name: &str) -> &'a mut Value {
    nodes["items"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|n| n["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no node {name} in the fixture"))
}

fn newest_daily(backups: &mut Value) -> &mut Value {
    backups["items"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|b| b["metadata"]["name"] == "velero-daily-full-20261129033000")
        .unwrap()
}

// ---------------------------------------------------------------- baseline

#[test]
fn the_healthy_baseline_is_ready() {
    let outcome = Case::healthy().run();
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert_eq!(
        outcome.stdout,
        "target=prod-control-plane-4\ntarget_is_vip_holder=false\nready=true\n"
    );
    assert_eq!(outcome.stderr, "");
}

#[test]
fn every_failing_guard_is_reported_in_one_run() {
    let outcome = Case::healthy()
        .nodes(|nodes| {
            set_ready(node_mut(nodes, "prod-control-plane-4"), "False");
            node_mut(nodes, "prod-control-plane-5")["metadata"]["labels"]
                .as_object_mut()
                .unwrap()
                .remove("node-role.kubernetes.io/control-plane");
        })
        .backups(|backups| newest_daily(backups)["status"]["phase"] = "PartiallyFailed".into())
        .arg("--etcd-members", "2")
        .arg("--etcd-learners", "1")
        .arg("--vip-holder", "prod-control-plane-4")
        .run();
    assert_eq!(outcome.code, NOT_READY);
    insta::assert_snapshot!(outcome.stdout);
}

// ------------------------------------------------------------------ target

#[test]
fn target_that_is_not_a_node() {
    let outcome = Case::healthy()
        .arg("--target", "prod-control-plane-1")
        .run();
    assert_not_ready(
        &outcome,
        &["target: prod-control-plane-1 is not a node in the cluster"],
    );
    assert!(outcome.stdout.starts_with("target=prod-control-plane-1\n"));
}

#[test]
fn target_that_is_not_a_control_plane_node() {
    let outcome = Case::healthy().arg("--target", "prod-worker-1").run();
    assert_not_ready(
        &outcome,
        &["target: prod-worker-1 is not a control-plane node"],
    );
}

#[test]
fn target_that_is_not_ready() {
    let outcome = Case::healthy()
        .nodes(|nodes| set_ready(node_mut(nodes, "prod-control-plane-4"), "False"))
        .run();
    // The target is also one of the three control planes quorum needs.
    assert_not_ready(
        &outcome,
        &[
            "target: prod-control-plane-4 is not Ready (False)",
            "quorum: control-plane nodes not Ready: prod-control-plane-4",
        ],
    );
}

#[test]
fn target_without_a_ready_condition_reads_unknown() {
    let outcome = Case::healthy()
        .nodes(|nodes| without_ready(node_mut(nodes, "prod-control-plane-4")))
        .run();
    assert_not_ready(
        &outcome,
        &[
            "target: prod-control-plane-4 is not Ready (Unknown)",
            "quorum: control-plane nodes not Ready: prod-control-plane-4",
        ],
    );
}

#[test]
fn target_with_an_unknown_ready_condition() {
    let outcome = Case::healthy()
        .nodes(|nodes| set_ready(node_mut(nodes, "prod-control-plane-4"), "Unknown"))
        .run();
    assert_not_ready(
        &outcome,
        &[
            "target: prod-control-plane-4 is not Ready (Unknown)",
            "quorum: control-plane nodes not Ready: prod-control-plane-4",
        ],
    );
}

// ------------------------------------------------------------------ quorum

#[test]
fn two_control_plane_nodes() {
    let outcome = Case::healthy()
        .nodes(|nodes| {
            let items = nodes["items"].as_array_mut().unwrap();
            items.retain(|n| n["metadata"]["name"] != "prod-control-plane-5");
        })
        .run();
    assert_not_ready(&outcome, &["quorum: 2 control-plane nodes, expected 3"]);
}

#[test]
fn four_control_plane_nodes() {
    let outcome = Case::healthy()
        .nodes(|nodes| {
            node_mut(nodes, "prod-worker-3")["metadata"]["labels"]
                ["node-role.kubernetes.io/control-plane"] = "".into();
        })
        .run();
    assert_not_ready(&outcome, &["quorum: 4 control-plane nodes, expected 3"]);
}

#[test]
fn a_control_plane_node_that_is_not_ready() {
    let outcome = Case::healthy()
        .nodes(|nodes| set_ready(node_mut(nodes, "prod-control-plane-5"), "False"))
        .run();
    assert_not_ready(
        &outcome,
        &["quorum: control-plane nodes not Ready: prod-control-plane-5"],
    );
}

#[test]
fn control_plane_nodes_not_ready_are_listed_by_name() {
    let outcome = Case::healthy()
        .nodes(|nodes| {
            without_ready(node_mut(nodes, "prod-control-plane-5"));
            set_ready(node_mut(nodes, "prod-control-plane-2"), "Unknown");
        })
        .run();
    assert_not_ready(
        &outcome,
        &["quorum: control-plane nodes not Ready: prod-control-plane-2 prod-control-plane-5"],
    );
}

#[test]
fn an_unready_worker_does_not_touch_quorum() {
    let outcome = Case::healthy()
        .nodes(|nodes| set_ready(node_mut(nodes, "prod-worker-2"), "False"))
        .run();
    assert_eq!(outcome.code, 0, "{outcome:#?}");
}

#[test]
fn two_voting_etcd_members() {
    let outcome = Case::healthy().arg("--etcd-members", "2").run();
    assert_not_ready(&outcome, &["quorum: 2 voting etcd members, expected 3"]);
}

#[test]
fn leading_zeros_are_decimal() {
    let eight = Case::healthy().arg("--etcd-members", "08").run();
    assert_not_ready(&eight, &["quorum: 8 voting etcd members, expected 3"]);
    let three = Case::healthy().arg("--etcd-members", "003").run();
    assert_eq!(three.code, 0, "{three:#?}");
}

#[test]
fn a_learner_present() {
    let outcome = Case::healthy().arg("--etcd-learners", "1").run();
    assert_not_ready(
        &outcome,
        &["quorum: 1 etcd learners present; a membership change is still in progress"],
    );
}

// ------------------------------------------------------------------ backup

#[test]
fn no_backup_from_the_schedule() {
    let outcome = Case::healthy()
        .backups(|backups| {
            for backup in backups["items"].as_array_mut().unwrap() {
                backup["metadata"]["labels"]
                    .as_object_mut()
                    .unwrap()
                    .remove("velero.io/schedule-name");
            }
        })
        .run();
    assert_not_ready(
        &outcome,
        &["backup: no backup from schedule velero-daily-full"],
    );
}

#[test]
fn another_schedule_is_judged_by_its_own_newest_backup() {
    let outcome = Case::healthy()
        .arg("--schedule", "velero-hourly-config")
        .run();
    assert_not_ready(
        &outcome,
        &[
            "backup: newest velero-hourly-config backup velero-hourly-config-20261129110000 is InProgress, not Completed",
            "backup: newest velero-hourly-config backup velero-hourly-config-20261129110000 has not finished",
        ],
    );
}

#[test]
fn newest_backup_partially_failed() {
    let outcome = Case::healthy()
        .backups(|backups| newest_daily(backups)["status"]["phase"] = "PartiallyFailed".into())
        .run();
    assert_not_ready(
        &outcome,
        &[
            "backup: newest velero-daily-full backup velero-daily-full-20261129033000 is PartiallyFailed, not Completed",
        ],
    );
}

#[test]
fn newest_by_creation_time_even_if_unfinished() {
    // An older Completed backup must not vouch for a newer one still running.
    let outcome = Case::healthy()
        .backups(|backups| {
            let mut running = newest_daily(backups).clone();
            running["metadata"]["name"] = "velero-daily-full-20261129113000".into();
            running["metadata"]["creationTimestamp"] = "2026-11-29T11:30:00Z".into();
            running["status"]["phase"] = "InProgress".into();
            running["status"]
                .as_object_mut()
                .unwrap()
                .remove("completionTimestamp");
            // Listed first, so listing order cannot be what picks it.
            backups["items"].as_array_mut().unwrap().insert(0, running);
        })
        .run();
    assert_not_ready(
        &outcome,
        &[
            "backup: newest velero-daily-full backup velero-daily-full-20261129113000 is InProgress, not Completed",
            // The script reports both: not Completed, and not finished.
            "backup: newest velero-daily-full backup velero-daily-full-20261129113000 has not finished",
        ],
    );
}

#[test]
fn newest_backup_without_a_phase_reads_unknown() {
    let outcome = Case::healthy()
        .backups(|backups| {
            newest_daily(backups)["status"]
                .as_object_mut()
                .unwrap()
                .remove("phase");
        })
        .run();
    assert_not_ready(
        &outcome,
        &[
            "backup: newest velero-daily-full backup velero-daily-full-20261129033000 is Unknown, not Completed",
        ],
    );
}

#[test]
fn newest_backup_with_a_null_status_reads_unknown() {
    let outcome = Case::healthy()
        .backups(|backups| newest_daily(backups)["status"] = Value::Null)
        .run();
    assert_not_ready(
        &outcome,
        &[
            "backup: newest velero-daily-full backup velero-daily-full-20261129033000 is Unknown, not Completed",
            "backup: newest velero-daily-full backup velero-daily-full-20261129033000 has not finished",
        ],
    );
}

#[test]
fn newest_backup_completed_without_a_completion_time() {
    let outcome = Case::healthy()
        .backups(|backups| {
            newest_daily(backups)["status"]
                .as_object_mut()
                .unwrap()
                .remove("completionTimestamp");
        })
        .run();
    assert_not_ready(
        &outcome,
        &[
            "backup: newest velero-daily-full backup velero-daily-full-20261129033000 has not finished",
        ],
    );
}

#[test]
fn newest_backup_too_old() {
    // Finished 2026-11-29T03:42:17Z; 2026-11-30T09:42:17Z is 30 h later.
    let outcome = Case::healthy().arg("--now", "1796031737").run();
    assert_not_ready(
        &outcome,
        &[
            "backup: newest velero-daily-full backup velero-daily-full-20261129033000 finished 30h ago, limit 26h",
        ],
    );
}

#[test]
fn a_backup_exactly_at_the_limit_is_too_old() {
    // 2026-11-30T05:42:17Z is exactly 26 h after the newest backup finished.
    let at_limit = Case::healthy().arg("--now", "1796017337").run();
    assert_not_ready(
        &at_limit,
        &[
            "backup: newest velero-daily-full backup velero-daily-full-20261129033000 finished 26h ago, limit 26h",
        ],
    );
    let just_inside = Case::healthy().arg("--now", "1796017336").run();
    assert_eq!(just_inside.code, 0, "{just_inside:#?}");
}

#[test]
fn the_age_limit_is_decimal_and_hours_round_down() {
    // At the baseline's now the backup finished 8 h 17 min 43 s ago.
    let eight = Case::healthy().arg("--max-backup-age-hours", "08").run();
    assert_not_ready(
        &eight,
        &[
            "backup: newest velero-daily-full backup velero-daily-full-20261129033000 finished 8h ago, limit 8h",
        ],
    );
    let nine = Case::healthy().arg("--max-backup-age-hours", "09").run();
    assert_eq!(nine.code, 0, "{nine:#?}");
}

// -------------------------------------------------------------------- vip

#[test]
fn the_vip_holder_is_reported_never_a_gate() {
    let holder = Case::healthy()
        .arg("--vip-holder", "prod-control-plane-4")
        .run();
    assert_eq!(holder.code, 0);
    assert!(holder.stdout.contains("\ntarget_is_vip_holder=true\n"));

    let empty = Case::healthy().arg("--vip-holder", "").run();
    assert_eq!(empty.code, 0);
    assert!(empty.stdout.contains("\ntarget_is_vip_holder=unknown\n"));

    let absent = Case::healthy().without("--vip-holder").run();
    assert_eq!(absent.code, 0);
    assert!(absent.stdout.contains("\ntarget_is_vip_holder=unknown\n"));
}

// ----------------------------------------------------------- input errors

#[test]
fn a_missing_required_argument_is_an_input_error() {
    for flag in [
        "--target",
        "--nodes",
        "--backups",
        "--etcd-members",
        "--etcd-learners",
    ] {
        let outcome = Case::healthy().without(flag).run();
        assert_input_error(&outcome, flag);
    }
}

#[test]
fn an_unknown_argument_is_an_input_error() {
    let outcome = Case::healthy().arg("--force", "yes").run();
    assert_input_error(&outcome, "--force");
}

#[test]
fn a_non_numeric_count_is_an_input_error() {
    for (flag, value) in [
        ("--etcd-members", "three"),
        ("--etcd-members", "-1"),
        ("--etcd-members", "+3"),
        ("--etcd-members", ""),
        ("--etcd-learners", "0x0"),
        ("--etcd-learners", "1.0"),
        ("--max-backup-age-hours", "26h"),
        ("--now", "2026-11-29T12:00:00Z"),
    ] {
        let outcome = Case::healthy().arg(flag, value).run();
        assert_input_error(&outcome, flag);
    }
}

#[test]
fn an_empty_target_is_an_input_error() {
    let outcome = Case::healthy().arg("--target", "").run();
    assert_input_error(&outcome, "--target");
}

#[test]
fn an_unreadable_file_is_an_input_error() {
    let outcome = Case::healthy()
        .arg("--nodes", "/nonexistent/nodes.json")
        .run();
    assert_input_error(&outcome, "cannot read /nonexistent/nodes.json");
    let outcome = Case::healthy()
        .arg("--backups", "/nonexistent/backups.json")
        .run();
    assert_input_error(&outcome, "cannot read /nonexistent/backups.json");
}

#[test]
fn a_file_that_is_not_json_is_an_input_error() {
    let outcome = Case::healthy().nodes_text("items: []\n").run();
    assert_input_error(&outcome, "is not JSON");
}

#[test]
fn nodes_that_are_not_a_list_are_an_input_error() {
    let outcome = Case::healthy()
        .nodes(|nodes| *nodes = nodes["items"][0].clone())
        .run();
    assert_input_error(&outcome, "expected kind List or NodeList, found kind Node");
    let outcome = Case::healthy()
        .nodes(|nodes| {
            nodes.as_object_mut().unwrap().remove("kind");
        })
        .run();
    assert_input_error(&outcome, "found no kind");
}

#[test]
fn backups_passed_as_nodes_are_an_input_error() {
    let outcome = Case::healthy()
        .nodes(|nodes| *nodes = serde_json::from_str(preflight_support::BACKUPS).unwrap())
        .run();
    assert_input_error(&outcome, "expected kind Node, found kind Backup");
}

#[test]
fn a_list_without_an_items_array_is_an_input_error() {
    let outcome = Case::healthy()
        .nodes(|nodes| {
            nodes.as_object_mut().unwrap().remove("items");
        })
        .run();
    assert_input_error(&outcome, "expected an `items` array");
    let outcome = Case::healthy()
        .backups(|backups| backups["items"] = json!({}))
        .run();
    assert_input_error(&outcome, "expected an `items` array");
}

#[test]
fn a_node_without_a_name_is_an_input_error() {
    let outcome = Case::healthy()
        .nodes(|nodes| {
            node_mut(nodes, "prod-worker-2")["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("name");
        })
        .run();
    assert_input_error(&outcome, "expected `metadata.name`");
}

#[test]
fn a_backup_without_a_name_is_an_input_error() {
    let outcome = Case::healthy()
        .backups(|backups| {
            backups["items"][0]["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("name");
        })
        .run();
    assert_input_error(&outcome, "expected `metadata.name`");
}

#[test]
fn a_backup_without_a_creation_time_is_an_input_error() {
    // Even one from another schedule: the dump as a whole is not trustworthy.
    let outcome = Case::healthy()
        .backups(|backups| {
            backups["items"][3]["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("creationTimestamp");
        })
        .run();
    assert_input_error(&outcome, "expected `metadata.creationTimestamp`");
}

#[test]
fn a_status_that_is_neither_null_nor_an_object_is_an_input_error() {
    let outcome = Case::healthy()
        .nodes(|nodes| node_mut(nodes, "prod-control-plane-2")["status"] = "Ready".into())
        .run();
    assert_input_error(
        &outcome,
        "expected `status` to be null or an object, found a string",
    );
    let outcome = Case::healthy()
        .backups(|backups| newest_daily(backups)["status"] = json!(["Completed"]))
        .run();
    assert_input_error(
        &outcome,
        "expected `status` to be null or an object, found a list",
    );
}

#[test]
fn a_malformed_timestamp_is_an_input_error() {
    let outcome = Case::healthy()
        .backups(|backups| {
            newest_daily(backups)["metadata"]["creationTimestamp"] = "2026-11-29 03:30".into()
        })
        .run();
    assert_input_error(
        &outcome,
        "`metadata.creationTimestamp` is `2026-11-29 03:30`",
    );
    let outcome = Case::healthy()
        .backups(|backups| {
            newest_daily(backups)["status"]["completionTimestamp"] = "yesterday".into()
        })
        .run();
    assert_input_error(&outcome, "`status.completionTimestamp` is `yesterday`");
}

#[test]
fn live_mode_flags_cannot_be_mixed_with_dump_files() {
    let outcome = Case::healthy().arg("--context", "admin@prod").run();
    assert_input_error(&outcome, "--context");
}

#[test]
fn an_unreachable_live_cluster_is_never_ready() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
    )
    .unwrap();
    let outcome = preflight_support::run_raw(
        &[
            "preflight",
            "cp-recreate",
            "--target",
            "prod-control-plane-4",
            "--context",
            "admin@prod",
        ],
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
    );
    assert_eq!(outcome.code, 3, "{outcome:#?}");
    assert_eq!(outcome.stdout, "ready=false\n");
    assert!(outcome.stderr.contains("admin@prod"), "{outcome:#?}");
}

#[test]
fn help_is_not_an_error() {
    let outcome = preflight_support::run_raw(&["preflight", "cp-recreate", "--help"], &[]);
    assert_eq!(outcome.code, 0, "{outcome:#?}");
    assert!(outcome.stdout.contains("--etcd-learners"));
    assert!(
        !outcome
            .stdout
            .lines()
            .any(|line| line.starts_with("ready=")),
        "{outcome:#?}"
    );
}
