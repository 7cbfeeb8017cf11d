//! Backends: what provisions and breaks a cluster. For now only the
//! container operations the kind and Talos-in-Docker backends are built on.

pub mod docker;
