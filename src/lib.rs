//! drillbench: a simulation and chaos-drill test bench for Kubernetes platforms.
//!
//! A drill is a YAML scenario. The flow of one drill is the layout of the
//! workspace, one crate per layer and arrows pointing one way:
//! `drillbench_model → drillbench_backend → drillbench_observe →
//! drillbench_assert → drillbench_report`, with the simulator and the shared
//! cluster rules below the backends. This crate is the top of that spine: the
//! commands ([`app`]), one drill's run ([`run`]) and the placement audit
//! ([`audit`]). The `bench` binary is a thin clap layer over [`app`].

pub mod app;
pub mod audit;
pub mod io;
pub mod progress;
pub mod run;
