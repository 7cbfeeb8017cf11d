//! The rules a cluster applies, written once for every backend.

pub mod admission;
