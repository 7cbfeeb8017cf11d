//! The integration tests, in one binary so the crate is linked once.
//! Each module is one area, named as the file it lives in; the support
//! modules are shared helpers.

#![allow(
    clippy::disallowed_methods,
    reason = "the tests wait for real processes and servers by wall-clock deadlines"
)]

mod audit_support;
mod common;
#[cfg(unix)]
mod fake_support;
mod fuzz_seeds;
mod interrupt_real_backend;
mod kubectl_support;
mod preflight_support;
mod report_support;

mod audit_cli;
mod audit_consumer_map;
mod catalogue;
#[cfg(unix)]
mod clean_cli;
mod cli_commands;
mod conformance;
mod controls;
mod diagnostics;
mod docker_containers;
mod e2e_real;
#[cfg(unix)]
mod emulated_autoscaler;
mod endpoint_proxy;
#[cfg(unix)]
mod fake_cli;
mod flux_substitution;
mod github_actions;
mod golden_replay;
#[cfg(unix)]
mod kind_driver;
mod kube_backend;
mod layering;
mod loader_props;
#[cfg(unix)]
mod local_path;
#[cfg(unix)]
mod nightly_verdict;
mod policy_cli;
mod policy_scan_live;
mod portable_binary;
mod preflight_cli;
#[cfg(unix)]
mod preflight_live_cli;
mod readme_example;
mod real_backends_cli;
mod rendered_inputs;
mod report_browser;
mod report_budgets;
mod report_compare;
mod report_examples;
mod report_formats;
mod report_html;
mod report_scale;
mod report_sweep;
mod run_inputs;
mod run_memory;
mod serve_bounds;
mod serve_cli;
mod serve_dry_run_control;
mod serve_kube_rs;
mod serve_kubectl;
mod serve_kubectl_apply;
mod serve_kubectl_auth_leases;
mod serve_kubectl_cluster;
mod serve_kubectl_crd_columns;
mod serve_kubectl_crds;
mod serve_kubectl_declared;
mod serve_kubectl_dry_run;
mod serve_kubectl_endpoints;
mod serve_kubectl_events;
mod serve_kubectl_events_v1;
mod serve_kubectl_platform_kinds;
mod serve_kubectl_protobuf;
mod serve_kubectl_replicasets;
mod serve_kubectl_services;
mod serve_kubectl_status;
mod serve_kubectl_storage;
mod serve_kubectl_strict;
mod serve_resource_versions;
mod sim_apply_delete;
mod sim_cron;
mod sim_drills;
mod sim_grace;
mod sim_incident;
mod sim_latencies;
mod sim_node_steps;
mod sim_preemption;
mod sim_props;
mod sim_restore_namespace;
mod sim_rollout;
mod sim_rules;
mod sim_volumes;
mod sim_writer;
mod snapshot_capture;
mod snapshot_drill;
#[cfg(unix)]
mod standby_nodes;
mod sweep_shards;
#[cfg(unix)]
mod talos_driver;
mod topology_import;
mod validate_cli;
mod velero_restore;
