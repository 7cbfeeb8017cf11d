//! A Deployment's rolling-update bounds, as the Deployment controller
//! resolves them (`deploymentutil.ResolveFenceposts`) and as API validation
//! admits them.
//!
//! - `maxSurge` and `maxUnavailable` are each an integer or a percentage of
//!   `spec.replicas`, both 25 % when unset;
//! - a percentage of `maxSurge` is rounded *up*, a percentage of
//!   `maxUnavailable` *down* (`GetScaledValueFromIntOrPercent(…, roundUp)`
//!   with `true` and `false`): with 3 replicas and 25 %/25 %, the rollout
//!   may run 4 pods and must keep 3 available;
//! - validation refuses negative values, percentages over 100 % for
//!   `maxUnavailable`, and both fields zero (`may not be 0 when maxSurge is
//!   0`) — a rollout that could neither add nor remove a pod would never
//!   progress;
//! - percentages that both *round* to zero (`maxSurge: 0`, `maxUnavailable:
//!   10%` of 5 replicas) resolve `maxUnavailable` to 1, as the controller
//!   does, so the rollout still progresses;
//! - the `Recreate` strategy has no bounds: every old pod goes before any
//!   new one is created.

use k8s_openapi::api::apps::v1::{DeploymentStrategy, RollingUpdateDeployment};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Why a Deployment's strategy is not one the apiserver would admit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RolloutError {
    /// Both bounds are zero: the rollout could never progress.
    #[error("spec.strategy.rollingUpdate.maxUnavailable may not be 0 when maxSurge is 0")]
    BothZero,
    /// A negative integer.
    #[error("spec.strategy.rollingUpdate.{field} must be greater than or equal to 0, got {value}")]
    Negative {
        /// `maxSurge` or `maxUnavailable`.
        field: &'static str,
        value: i32,
    },
    /// A string that is not `<digits>%`, or `maxUnavailable` above 100 %.
    #[error(
        "spec.strategy.rollingUpdate.{field} must be an integer or a percentage, got `{value}`"
    )]
    InvalidPercent {
        /// `maxSurge` or `maxUnavailable`.
        field: &'static str,
        value: String,
    },
    /// A strategy type other than `RollingUpdate` and `Recreate`.
    #[error("spec.strategy.type must be RollingUpdate or Recreate, got `{0}`")]
    UnknownType(String),
    /// `rollingUpdate` set with the `Recreate` type.
    #[error("spec.strategy.rollingUpdate may not be specified when strategy type is Recreate")]
    RollingUpdateWithRecreate,
}

/// One bound as written: a number of pods or a percentage of the replicas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// A number of pods.
    Int(i32),
    /// A percentage of `spec.replicas`.
    Percent(u32),
}

impl Bound {
    fn parse(value: &IntOrString, field: &'static str) -> Result<Bound, RolloutError> {
        match value {
            IntOrString::Int(n) if *n < 0 => Err(RolloutError::Negative { field, value: *n }),
            IntOrString::Int(n) => Ok(Bound::Int(*n)),
            IntOrString::String(s) => s
                .strip_suffix('%')
                .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|digits| digits.parse::<u32>().ok())
                .filter(|p| field != "maxUnavailable" || *p <= 100)
                .map(Bound::Percent)
                .ok_or_else(|| RolloutError::InvalidPercent {
                    field,
                    value: s.clone(),
                }),
        }
    }

    fn is_zero(self) -> bool {
        matches!(self, Bound::Int(0) | Bound::Percent(0))
    }

    /// The bound for `replicas`, a percentage rounded up or down.
    pub fn scaled(self, replicas: u32, round_up: bool) -> u32 {
        match self {
            Bound::Int(n) => n.max(0) as u32,
            Bound::Percent(p) => {
                let product = u64::from(replicas) * u64::from(p);
                let scaled = if round_up {
                    product.div_ceil(100)
                } else {
                    product / 100
                };
                scaled as u32
            }
        }
    }
}

/// How a Deployment replaces its pods when its template changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Replace pods gradually within the two bounds.
    RollingUpdate {
        /// How many pods above `replicas` may exist.
        max_surge: Bound,
        /// How many of `replicas` may be unavailable.
        max_unavailable: Bound,
    },
    /// Delete every old pod, then create the new ones.
    Recreate,
}

impl Default for Strategy {
    fn default() -> Self {
        Strategy::RollingUpdate {
            max_surge: Bound::Percent(25),
            max_unavailable: Bound::Percent(25),
        }
    }
}

impl Strategy {
    /// The strategy of a Deployment's spec, validated as the apiserver does.
    pub fn from_spec(strategy: Option<&DeploymentStrategy>) -> Result<Strategy, RolloutError> {
        let Some(strategy) = strategy else {
            return Ok(Strategy::default());
        };
        match strategy.type_.as_deref().unwrap_or("RollingUpdate") {
            "Recreate" if strategy.rolling_update.is_some() => {
                Err(RolloutError::RollingUpdateWithRecreate)
            }
            "Recreate" => Ok(Strategy::Recreate),
            "RollingUpdate" => {
                let rolling = strategy.rolling_update.clone().unwrap_or_default();
                let max_surge = match &rolling.max_surge {
                    Some(v) => Bound::parse(v, "maxSurge")?,
                    None => Bound::Percent(25),
                };
                let max_unavailable = match &rolling.max_unavailable {
                    Some(v) => Bound::parse(v, "maxUnavailable")?,
                    None => Bound::Percent(25),
                };
                if max_surge.is_zero() && max_unavailable.is_zero() {
                    return Err(RolloutError::BothZero);
                }
                Ok(Strategy::RollingUpdate {
                    max_surge,
                    max_unavailable,
                })
            }
            other => Err(RolloutError::UnknownType(other.to_owned())),
        }
    }

    /// The spec that reads back as this strategy, as a served Deployment
    /// shows it (so a client that captures it, a snapshot, keeps it).
    pub fn to_spec(self) -> DeploymentStrategy {
        let value = |bound: Bound| match bound {
            Bound::Int(n) => IntOrString::Int(n),
            Bound::Percent(p) => IntOrString::String(format!("{p}%")),
        };
        match self {
            Strategy::Recreate => DeploymentStrategy {
                type_: Some("Recreate".to_owned()),
                rolling_update: None,
            },
            Strategy::RollingUpdate {
                max_surge,
                max_unavailable,
            } => DeploymentStrategy {
                type_: Some("RollingUpdate".to_owned()),
                rolling_update: Some(RollingUpdateDeployment {
                    max_surge: Some(value(max_surge)),
                    max_unavailable: Some(value(max_unavailable)),
                }),
            },
        }
    }

    /// `(maxSurge, maxUnavailable)` in pods for `replicas`, as
    /// `ResolveFenceposts` resolves them; `None` for `Recreate`.
    pub fn fenceposts(self, replicas: u32) -> Option<(u32, u32)> {
        let Strategy::RollingUpdate {
            max_surge,
            max_unavailable,
        } = self
        else {
            return None;
        };
        let surge = max_surge.scaled(replicas, true);
        let unavailable = max_unavailable.scaled(replicas, false);
        if surge == 0 && unavailable == 0 {
            return Some((0, 1));
        }
        Some((surge, unavailable))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::RollingUpdateDeployment;

    fn rolling(surge: Option<IntOrString>, unavailable: Option<IntOrString>) -> DeploymentStrategy {
        DeploymentStrategy {
            type_: Some("RollingUpdate".to_owned()),
            rolling_update: Some(RollingUpdateDeployment {
                max_surge: surge,
                max_unavailable: unavailable,
            }),
        }
    }

    fn int(n: i32) -> Option<IntOrString> {
        Some(IntOrString::Int(n))
    }

    fn pct(s: &str) -> Option<IntOrString> {
        Some(IntOrString::String(s.to_owned()))
    }

    #[test]
    fn fenceposts_follow_the_controllers_rounding() {
        // (maxSurge, maxUnavailable, replicas) => (surge, unavailable)
        let table = [
            (None, None, 3, (1, 0)),     // 25 % of 3: surge 0.75 -> 1, unavailable -> 0
            (None, None, 4, (1, 1)),     // exactly 1 each
            (None, None, 10, (3, 2)),    // 2.5 -> 3 up, -> 2 down
            (int(1), int(0), 3, (1, 0)), // the zero-downtime shape
            (int(0), int(1), 3, (0, 1)), // replace in place, one at a time
            (pct("50%"), pct("50%"), 5, (3, 2)),
            (pct("100%"), pct("0%"), 3, (3, 0)),
            (int(5), int(2), 3, (5, 2)), // integers are not capped by replicas
            (int(0), pct("10%"), 5, (0, 1)), // both round to zero: unavailable becomes 1
            (pct("1%"), int(0), 5, (1, 0)), // 0.05 rounds up to 1
            (None, None, 0, (0, 1)),     // scaled to zero: both zero, resolved to 1
        ];
        for (surge, unavailable, replicas, want) in table {
            let strategy = Strategy::from_spec(Some(&rolling(surge.clone(), unavailable.clone())))
                .expect("valid");
            assert_eq!(
                strategy.fenceposts(replicas),
                Some(want),
                "maxSurge {surge:?} maxUnavailable {unavailable:?} replicas {replicas}"
            );
        }
    }

    #[test]
    fn a_strategy_shown_as_a_spec_reads_back_as_itself() {
        for strategy in [
            Strategy::Recreate,
            Strategy::default(),
            Strategy::RollingUpdate {
                max_surge: Bound::Int(1),
                max_unavailable: Bound::Int(0),
            },
        ] {
            assert_eq!(Strategy::from_spec(Some(&strategy.to_spec())), Ok(strategy));
        }
    }

    #[test]
    fn defaults_are_a_quarter_each() {
        assert_eq!(Strategy::from_spec(None), Ok(Strategy::default()));
        let only_type = DeploymentStrategy {
            type_: None,
            rolling_update: None,
        };
        assert_eq!(
            Strategy::from_spec(Some(&only_type)).unwrap().fenceposts(8),
            Some((2, 2))
        );
    }

    #[test]
    fn validation_refuses_what_the_apiserver_refuses() {
        let table = [
            (int(0), int(0), RolloutError::BothZero),
            (pct("0%"), int(0), RolloutError::BothZero),
            (pct("0%"), pct("0%"), RolloutError::BothZero),
            (
                int(-1),
                int(1),
                RolloutError::Negative {
                    field: "maxSurge",
                    value: -1,
                },
            ),
            (
                int(1),
                pct("101%"),
                RolloutError::InvalidPercent {
                    field: "maxUnavailable",
                    value: "101%".to_owned(),
                },
            ),
            (
                pct("half"),
                int(1),
                RolloutError::InvalidPercent {
                    field: "maxSurge",
                    value: "half".to_owned(),
                },
            ),
        ];
        for (surge, unavailable, want) in table {
            assert_eq!(
                Strategy::from_spec(Some(&rolling(surge, unavailable))),
                Err(want)
            );
        }
        // maxSurge may exceed 100 %: it is not a share of what exists.
        assert!(Strategy::from_spec(Some(&rolling(pct("200%"), int(0)))).is_ok());
    }

    #[test]
    fn recreate_has_no_bounds_and_no_rolling_update() {
        let recreate = DeploymentStrategy {
            type_: Some("Recreate".to_owned()),
            rolling_update: None,
        };
        assert_eq!(Strategy::from_spec(Some(&recreate)), Ok(Strategy::Recreate));
        assert_eq!(Strategy::Recreate.fenceposts(3), None);
        let both = DeploymentStrategy {
            type_: Some("Recreate".to_owned()),
            rolling_update: Some(RollingUpdateDeployment::default()),
        };
        assert_eq!(
            Strategy::from_spec(Some(&both)),
            Err(RolloutError::RollingUpdateWithRecreate)
        );
        let other = DeploymentStrategy {
            type_: Some("BlueGreen".to_owned()),
            rolling_update: None,
        };
        assert_eq!(
            Strategy::from_spec(Some(&other)),
            Err(RolloutError::UnknownType("BlueGreen".to_owned()))
        );
    }
}
