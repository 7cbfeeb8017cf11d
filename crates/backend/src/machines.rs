//! The machines under a real cluster: what a real backend does to node
//! servers, as opposed to what it does through the Kubernetes API.
//!
//! A real backend is one Kubernetes layer (watchers, eviction-based drains,
//! server-side apply) over one [`Machines`]: kind's node containers,
//! Talos-in-Docker's, a served simulator's bench endpoints, or nothing at
//! all for an existing cluster the bench may only read. Splitting here
//! keeps the Kubernetes layer identical for every real backend, so the
//! observation (and with it every verdict) does not depend on which
//! machines sit underneath.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::{BackendError, Capabilities};

/// The node servers of one real cluster.
///
/// Node names are Kubernetes Node names; each implementation maps them to
/// its own handles (container ids, Talos node addresses). Every method that
/// changes a machine is refused with [`BackendError::Unsupported`] when
/// [`Machines::capabilities`] says it cannot be done, so callers may check
/// up front and still get a clear error if they do not.
pub trait Machines: Send {
    /// `kind`, `talos`, `served-sim` or `kubeconfig`: the backend name
    /// reports and refusals use.
    fn name(&self) -> &'static str;

    /// What these machines can do.
    fn capabilities(&self) -> Capabilities;

    /// The kubeconfig the Kubernetes layer talks through, and the context
    /// in it (`None`: its current context).
    fn kubeconfig(&self) -> (PathBuf, Option<String>);

    /// The API servers of the control planes, one per control-plane node,
    /// for the stable-endpoint proxy; empty when the endpoint is not the
    /// bench's to hold (an existing cluster).
    fn api_servers(&self) -> Vec<(String, SocketAddr)>;

    /// Stops a node's machine without deleting it: a crash, no drain, no
    /// goodbye to the API server.
    fn crash(&mut self, node: &str) -> Result<(), BackendError>;

    /// Deletes a node's machine. The caller has already drained and deleted
    /// the Node object if the fault asked for that.
    fn remove(&mut self, node: &str) -> Result<(), BackendError>;

    /// Boots a machine again under a lost node's name, from its recorded
    /// spec, so it rejoins as the same Node.
    fn replace(&mut self, node: &str) -> Result<(), BackendError>;

    /// Removes a control plane's etcd member through a healthy peer,
    /// deletes its machine and boots a fresh one from the same spec and
    /// machine configuration; returns once the new machine runs (the
    /// caller watches the learner being promoted).
    fn recreate_control_plane(&mut self, node: &str) -> Result<(), BackendError>;

    /// Voting etcd members and learners as a healthy control plane reports
    /// them, or `None` when these machines cannot tell.
    fn etcd_members(&mut self) -> Option<(u32, u32)>;

    /// Removes everything these machines created. Called exactly once, also
    /// after an error or a panic; must not touch what the bench did not
    /// create.
    fn teardown(&mut self) -> Result<(), BackendError>;
}

/// An existing cluster the bench did not create: it may be read and have
/// workloads applied, but no machine is touched.
#[derive(Debug, Clone)]
pub struct NoMachines {
    /// The kubeconfig file.
    pub kubeconfig: PathBuf,
    /// The context in it.
    pub context: Option<String>,
}

impl NoMachines {
    fn refuse(&self, what: String) -> Result<(), BackendError> {
        Err(BackendError::Unsupported {
            backend: "kubeconfig",
            what,
        })
    }
}

impl Machines for NoMachines {
    fn name(&self) -> &'static str {
        "kubeconfig"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::NONE
    }

    fn kubeconfig(&self) -> (PathBuf, Option<String>) {
        (self.kubeconfig.clone(), self.context.clone())
    }

    fn api_servers(&self) -> Vec<(String, SocketAddr)> {
        Vec::new()
    }

    fn crash(&mut self, node: &str) -> Result<(), BackendError> {
        self.refuse(format!("crash node {node} (it does not own the machines)"))
    }

    fn remove(&mut self, node: &str) -> Result<(), BackendError> {
        self.refuse(format!(
            "delete node {node}'s machine (it does not own the machines)"
        ))
    }

    fn replace(&mut self, node: &str) -> Result<(), BackendError> {
        self.refuse(format!(
            "replace node {node} (it does not own the machines)"
        ))
    }

    fn recreate_control_plane(&mut self, node: &str) -> Result<(), BackendError> {
        self.refuse(format!(
            "recreate control plane {node} (it does not own the machines)"
        ))
    }

    fn etcd_members(&mut self) -> Option<(u32, u32)> {
        None
    }

    fn teardown(&mut self) -> Result<(), BackendError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_cluster_refuses_every_machine_operation() {
        let mut machines = NoMachines {
            kubeconfig: PathBuf::from("/nonexistent"),
            context: Some("prod".into()),
        };
        assert_eq!(machines.capabilities(), Capabilities::NONE);
        for result in [
            machines.crash("prod-worker-1"),
            machines.remove("prod-worker-1"),
            machines.replace("prod-worker-1"),
            machines.recreate_control_plane("prod-control-plane-1"),
        ] {
            assert!(
                matches!(
                    result,
                    Err(BackendError::Unsupported {
                        backend: "kubeconfig",
                        ..
                    })
                ),
                "{result:?}"
            );
        }
        assert!(machines.teardown().is_ok());
    }
}
