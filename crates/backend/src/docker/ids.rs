//! Who a container belongs to: the run id its label carries, and the
//! [`Container`] handle only a check of that label (or an explicit
//! allowance) hands out.

use serde::{Deserialize, Serialize};

use super::DockerError;
use drillbench_model::labels::RUN_LABEL;

/// One bench run's id, the value of [`RUN_LABEL`]; checked against
/// Docker's and Kubernetes' label-value rules so the same id can label
/// containers and cluster objects.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

impl RunId {
    pub fn new(id: impl Into<String>) -> Result<Self, DockerError> {
        let id = id.into();
        let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        let valid = !id.is_empty()
            && id.len() <= 63
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && edge_ok(id.chars().next())
            && edge_ok(id.chars().last());
        if valid {
            Ok(Self(id))
        } else {
            Err(DockerError::InvalidRunId(id))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The `docker --filter` argument that selects this run's objects.
    pub(super) fn filter(&self) -> String {
        format!("label={RUN_LABEL}={}", self.0)
    }
}

impl TryFrom<String> for RunId {
    type Error = DockerError;
    fn try_from(id: String) -> Result<Self, Self::Error> {
        Self::new(id)
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> Self {
        id.0
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The caller's explicit permission to act on a container that does not
/// carry [`RUN_LABEL`]; the reason is there to be logged and reviewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForeignAllowance {
    reason: &'static str,
}

impl ForeignAllowance {
    /// Grants the allowance, saying why (e.g. "the user passed
    /// --allow-foreign-container").
    pub fn new(reason: &'static str) -> Self {
        Self { reason }
    }

    /// Why it was granted.
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

/// A container the bench may act on: either it carries [`RUN_LABEL`] or
/// the caller granted a [`ForeignAllowance`]. The fields are private so the
/// only ways to get one are the checks in [`Docker::claim`],
/// [`Docker::claim_foreign`] and [`Docker::create`].
///
/// [`Docker::claim`]: super::Docker::claim
/// [`Docker::claim_foreign`]: super::Docker::claim_foreign
/// [`Docker::create`]: super::Docker::create
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) run: Option<RunId>,
    pub(super) allowance: Option<ForeignAllowance>,
}

impl Container {
    /// The full container id every operation addresses.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The name, without Docker's leading slash.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The run that owns it; `None` for a foreign container.
    pub fn run(&self) -> Option<&RunId> {
        self.run.as_ref()
    }

    /// The allowance it was claimed under, if it was claimed as foreign;
    /// kept so a log or report can say why the bench touched it.
    pub fn allowance(&self) -> Option<ForeignAllowance> {
        self.allowance
    }
}

/// A container's lifecycle state as `docker inspect` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerState {
    /// Created, never started.
    Created,
    Running,
    /// Frozen by `docker pause`.
    Paused,
    /// Restarting after an exit, per its restart policy.
    Restarting,
    /// Being removed.
    Removing,
    /// Stopped or killed.
    Exited,
    /// Failed to stop or be removed.
    Dead,
}

/// One container of a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSummary {
    pub id: String,
    pub name: String,
    /// The state, as text (`docker ps` prints it so).
    pub state: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_id_reads_back_as_it_was_given_and_filters_on_the_run_label() {
        let id = RunId::new("run-42").expect("valid");
        assert_eq!(id.as_str(), "run-42");
        assert_eq!(id.to_string(), "run-42");
        assert_eq!(id.filter(), format!("label={RUN_LABEL}=run-42"));
        assert_eq!(String::from(id.clone()), "run-42");
        // Deserializing checks the id as `new` does.
        assert_eq!(
            serde_json::from_str::<RunId>("\"run-42\"").expect("valid"),
            id
        );
        assert!(serde_json::from_str::<RunId>("\"-bad\"").is_err());
    }

    #[test]
    fn a_container_says_which_run_owns_it_or_why_it_was_touched_anyway() {
        let owned = Container {
            id: "abc".to_owned(),
            name: "drill-cp-1".to_owned(),
            run: Some(RunId::new("run-1").expect("valid")),
            allowance: None,
        };
        assert_eq!(owned.run().map(RunId::as_str), Some("run-1"));
        assert_eq!(owned.allowance(), None);
        let foreign = Container {
            id: "def".to_owned(),
            name: "db".to_owned(),
            run: None,
            allowance: Some(ForeignAllowance::new("the user passed --allow-foreign")),
        };
        assert_eq!(
            foreign.allowance().map(|a| a.reason()),
            Some("the user passed --allow-foreign")
        );
        assert_eq!((foreign.id(), foreign.name()), ("def", "db"));
    }
}
