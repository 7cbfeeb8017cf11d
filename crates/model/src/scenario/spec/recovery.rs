//! A recovery runbook: a graph of steps whose durations are drawn from
//! distributions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::cluster::DurationRange;
use crate::duration::Duration;
use crate::scenario::located::Located;

/// A recovery runbook as a graph of steps.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RecoverySpec {
    /// The steps; a step starts when every step it comes `after` has finished.
    pub steps: Vec<Located<RecoveryStep>>,
}

/// One step of a recovery runbook.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RecoveryStep {
    /// Step name, as `after` refers to it.
    pub name: Located<String>,
    /// How long one attempt takes.
    pub duration: Located<DurationDistribution>,
    /// Steps that must finish first.
    #[serde(default)]
    pub after: Vec<Located<String>>,
    /// Whether a machine does it (counts toward the automated RTO) or a person.
    #[serde(default)]
    pub automated: bool,
    /// Chance that an attempt fails and is retried.
    #[serde(default)]
    pub failure_probability: Option<Located<f64>>,
    /// Most attempts before the recovery fails (1 by default: no retry).
    #[serde(default)]
    pub max_attempts: Option<Located<u32>>,
}

/// A distribution of durations.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum DurationDistribution {
    /// Always this long.
    Fixed(Duration),
    /// Uniform between the bounds.
    Uniform(DurationRange),
    /// Triangular: between the bounds, most often near `mode`.
    Triangular(Triangular),
}

/// A triangular distribution.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Triangular {
    /// Lower bound.
    pub min: Duration,
    /// Most likely value.
    pub mode: Duration,
    /// Upper bound.
    pub max: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::from_yaml;

    #[test]
    fn a_step_duration_is_fixed_uniform_or_triangular() {
        let spec: RecoverySpec = from_yaml(
            "steps:\n\
             - {name: restore, duration: {fixed: 10m}, automated: true}\n\
             - {name: verify, duration: {uniform: {min: 1m, max: 3m}}, after: [restore]}\n\
             - {name: sign-off, duration: {triangular: {min: 1m, mode: 2m, max: 9m}}, after: [verify], maxAttempts: 2}\n",
        )
        .unwrap();
        let steps: Vec<&RecoveryStep> = spec.steps.iter().map(|s| &s.value).collect();
        assert_eq!(
            *steps[0].duration,
            DurationDistribution::Fixed(Duration::from_mins(10))
        );
        assert!(steps[0].automated && !steps[1].automated);
        assert_eq!(
            *steps[1].duration,
            DurationDistribution::Uniform(DurationRange {
                min: Duration::from_mins(1),
                max: Duration::from_mins(3)
            })
        );
        assert_eq!(*steps[1].after[0], "restore");
        assert_eq!(
            *steps[2].duration,
            DurationDistribution::Triangular(Triangular {
                min: Duration::from_mins(1),
                mode: Duration::from_mins(2),
                max: Duration::from_mins(9)
            })
        );
        assert_eq!(steps[2].max_attempts.as_deref(), Some(&2));
        assert_eq!(spec.steps[2].at.line, 4);
    }

    #[test]
    fn a_triangle_needs_all_three_points() {
        assert!(from_yaml::<Triangular>("{min: 1m, max: 9m}").is_err());
    }
}
