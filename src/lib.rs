//! drillbench: a simulation and chaos-drill test bench for Kubernetes platforms.
//!
//! A drill is a YAML scenario. The flow of one drill is the layout of this crate,
//! one module per concept and arrows pointing one way:
//! `scenario → topology → backend → fault → observe → assert → report`.
//! The `bench` binary is a thin clap layer over [`app`].

pub mod app;
pub mod assert;
pub mod audit;
pub mod backend;
pub mod bench_protocol;
pub mod drill;
pub mod duration;
pub mod embedded;
pub mod endpoint;
pub mod error_text;
pub mod exit;
pub mod interrupt;
pub mod io;
pub mod k8s;
pub mod labels;
pub mod manifest;
pub mod name_pattern;
pub mod observe;
pub mod out_dir;
pub mod policy;
pub mod preflight;
pub mod progress;
pub mod report;
pub mod rng;
pub mod run;
pub mod scenario;
pub mod serve;
pub mod sim;
pub mod suggest;
#[doc(hidden)]
pub mod test_support;
pub mod topology;
pub mod workload_ref;
