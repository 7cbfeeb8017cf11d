//! Kubernetes-style durations (`90s`, `10m`, `4h`, `1h30m`, `500ms`).
//!
//! The syntax is Go's `time.ParseDuration`, which is what `metav1.Duration`
//! fields and every Kubernetes flag accept, so a value copied from a manifest
//! or a runbook reads the same here. Negative durations are refused: nothing
//! in a drill happens before it starts.
//!
//! The drill language is stricter than Go in one way: each unit appears at
//! most once, largest first (`1h30m`, never `1h1h` or `30m1h`), so a value
//! reads as what it is (issue 19 found `1h1h` accepted as two hours). Go
//! sums the parts of any order; [`Duration::parse_go`] keeps that for the
//! files other tools write (a ksail Cluster's `metav1.Duration` fields).

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A non-negative span of virtual or wall-clock time, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(u64);

/// Why a duration string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// The string was empty.
    #[error("empty duration; expected a number with a unit, like `90s`, `10m` or `4h`")]
    Empty,
    /// The string did not follow the `<number><unit>...` shape.
    #[error("invalid duration `{0}`; expected a number with a unit, like `90s`, `10m`, `1h30m`")]
    Invalid(String),
    /// A number carried no unit.
    #[error("duration `{0}` lacks a unit; expected one of ms, s, m, h (like `90s`)")]
    MissingUnit(String),
    /// A unit that Go's duration syntax does not know (such as `d`).
    #[error("unknown unit `{unit}` in duration `{input}`; expected one of ms, s, m, h")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        input: String,
    },
    /// The value does not fit the bench's clock.
    #[error("duration `{0}` is too long")]
    Overflow(String),
    /// A sub-millisecond remainder the clock cannot represent.
    #[error("duration `{0}` is finer than a millisecond, the simulator's resolution")]
    TooFine(String),
    /// A unit repeated, or after a smaller one (`1h1h`, `30m1h`).
    #[error(
        "unit `{unit}` in duration `{input}` repeats or follows a smaller unit; expected each unit at most once, largest first (h, m, s, ms, us, ns), like `1h30m`"
    )]
    UnitOrder {
        /// The unit out of place, as written.
        unit: String,
        input: String,
    },
}

impl Duration {
    pub const ZERO: Duration = Duration(0);

    /// A duration of `ms` milliseconds.
    pub const fn from_millis(ms: u64) -> Self {
        Duration(ms)
    }

    /// A duration of `s` seconds.
    pub const fn from_secs(s: u64) -> Self {
        Duration(s * 1000)
    }

    /// A duration of `m` minutes.
    pub const fn from_mins(m: u64) -> Self {
        Duration(m * 60_000)
    }
    pub const fn as_millis(self) -> u64 {
        self.0
    }

    /// The duration in (fractional) seconds, as reports print times.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// Sum of two durations, saturating at the clock's end.
    pub fn saturating_add(self, other: Duration) -> Duration {
        Duration(self.0.saturating_add(other.0))
    }
}

impl FromStr for Duration {
    type Err = DurationError;

    /// The drill language's durations: Go's syntax with each unit at most
    /// once, largest first.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        parse(input, true)
    }
}

impl Duration {
    /// Go's `time.ParseDuration` as it is, units in any order and repeated
    /// (`1h1h` is two hours), for values another tool reads with it.
    pub fn parse_go(input: &str) -> Result<Duration, DurationError> {
        parse(input, false)
    }
}

fn parse(input: &str, units_in_order: bool) -> Result<Duration, DurationError> {
    if input.is_empty() {
        return Err(DurationError::Empty);
    }
    // Go accepts a bare "0" and nothing else without a unit.
    if input == "0" {
        return Ok(Duration::ZERO);
    }
    let invalid = || DurationError::Invalid(input.to_owned());
    let bytes = input.as_bytes();
    let mut i = 0;
    // Accumulate in nanoseconds so `1.5s` and `1500ms` are exact.
    let mut total_ns: u128 = 0;
    // The last unit's size: each next one must be smaller.
    let mut previous_unit_ns = u128::MAX;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        let whole = &input[start..i];
        let mut frac = "";
        if i < bytes.len() && bytes[i] == b'.' {
            i += 1;
            let fstart = i;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            frac = &input[fstart..i];
        }
        if whole.is_empty() && frac.is_empty() {
            return Err(invalid());
        }
        let ustart = i;
        while i < bytes.len() && !bytes[i].is_ascii_digit() && bytes[i] != b'.' {
            i += 1;
        }
        let unit = &input[ustart..i];
        let unit_ns: u128 = match unit {
            "" => return Err(DurationError::MissingUnit(input.to_owned())),
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            other => {
                return Err(DurationError::UnknownUnit {
                    unit: other.to_owned(),
                    input: input.to_owned(),
                });
            }
        };
        if units_in_order && unit_ns >= previous_unit_ns {
            return Err(DurationError::UnitOrder {
                unit: unit.to_owned(),
                input: input.to_owned(),
            });
        }
        previous_unit_ns = unit_ns;
        let overflow = || DurationError::Overflow(input.to_owned());
        let whole: u128 = if whole.is_empty() {
            0
        } else {
            whole.parse().map_err(|_| overflow())?
        };
        let mut part = whole.checked_mul(unit_ns).ok_or_else(overflow)?;
        let mut scale = unit_ns;
        for digit in frac.bytes().take(30) {
            scale /= 10;
            part += u128::from(digit - b'0') * scale;
        }
        total_ns = total_ns.checked_add(part).ok_or_else(overflow)?;
    }
    // Go's Duration is an int64 of nanoseconds (about 292 years), and
    // ParseDuration refuses anything longer; so does the bench, which
    // also keeps every sum of drill times far from u64's end.
    if total_ns > i64::MAX as u128 {
        return Err(DurationError::Overflow(input.to_owned()));
    }
    if !total_ns.is_multiple_of(1_000_000) {
        return Err(DurationError::TooFine(input.to_owned()));
    }
    let ms = u64::try_from(total_ns / 1_000_000)
        .map_err(|_| DurationError::Overflow(input.to_owned()))?;
    Ok(Duration(ms))
}

impl fmt::Display for Duration {
    /// Prints the shortest Kubernetes-style form: `1h30m`, `90s` prints `1m30s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0;
        if ms == 0 {
            return f.write_str("0s");
        }
        let h = ms / 3_600_000;
        let m = (ms / 60_000) % 60;
        let s = (ms / 1000) % 60;
        let rest = ms % 1000;
        if h > 0 {
            write!(f, "{h}h")?;
        }
        if m > 0 {
            write!(f, "{m}m")?;
        }
        if rest > 0 {
            if s > 0 || h > 0 || m > 0 {
                write!(f, "{s}.{rest:03}s")?;
            } else {
                write!(f, "{rest}ms")?;
            }
        } else if s > 0 {
            write!(f, "{s}s")?;
        }
        Ok(())
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A Kubernetes-style duration such as `90s`, `10m`, `4h` or `1h30m`: each unit at most once, largest first.",
            "minLength": 1,
            "pattern": SCHEMA_PATTERN
        })
    }
}

/// The syntax [`Duration`]'s parser accepts, for editors: `0`, or parts in
/// the order h, m, s, ms, us/µs, ns, each at most once (the minimum length
/// keeps out the empty string every part being optional would let in).
const SCHEMA_PATTERN: &str = "^(0|([0-9]+(\\.[0-9]*)?h)?([0-9]+(\\.[0-9]*)?m)?([0-9]+(\\.[0-9]*)?s)?([0-9]+(\\.[0-9]*)?ms)?([0-9]+(\\.[0-9]*)?(us|µs))?([0-9]+(\\.[0-9]*)?ns)?)$";

#[cfg(test)]
mod tests {
    use super::*;

    /// An editor checking the schema and `bench validate` agree on the
    /// syntax: the pattern (with the schema's minimum length) accepts what
    /// the parser accepts and refuses what it refuses for its shape.
    #[test]
    fn the_schema_pattern_accepts_what_the_parser_accepts() {
        let pattern = regex::Regex::new(SCHEMA_PATTERN).expect("a regex");
        for text in [
            "0", "90s", "10m", "4h", "1h30m", "1h30m15s", "1m30.5s", "500ms", "2s500ms", "1.5h",
            "", "1h1h", "30m1h", "1s1m", "1ms1s", "10", "1d", "h", "-1s", "1h 30m",
        ] {
            let parsed = text.parse::<Duration>();
            let shaped = !matches!(
                parsed,
                Err(DurationError::TooFine(_) | DurationError::Overflow(_))
            );
            assert!(shaped, "{text}: pick values the clock can hold");
            assert_eq!(
                !text.is_empty() && pattern.is_match(text),
                parsed.is_ok(),
                "{text}: schema and parser disagree ({parsed:?})"
            );
        }
    }

    #[test]
    fn parses_kubernetes_style_durations() {
        let cases = [
            ("0", 0),
            ("90s", 90_000),
            ("10m", 600_000),
            ("4h", 14_400_000),
            ("1h30m", 5_400_000),
            ("1.5s", 1_500),
            ("500ms", 500),
            ("2m30s", 150_000),
            (".5s", 500),
        ];
        for (text, ms) in cases {
            assert_eq!(text.parse::<Duration>(), Ok(Duration(ms)), "{text}");
        }
    }

    #[test]
    fn refuses_what_go_refuses() {
        assert_eq!("".parse::<Duration>(), Err(DurationError::Empty));
        assert!(matches!(
            "10".parse::<Duration>(),
            Err(DurationError::MissingUnit(_))
        ));
        assert!(matches!(
            "1d".parse::<Duration>(),
            Err(DurationError::UnknownUnit { .. })
        ));
        assert!(matches!(
            "-5s".parse::<Duration>(),
            Err(DurationError::Invalid(_))
        ));
        assert!(matches!(
            "s".parse::<Duration>(),
            Err(DurationError::Invalid(_))
        ));
        assert!(matches!(
            "1500us".parse::<Duration>(),
            Err(DurationError::TooFine(_))
        ));
        assert!(matches!(
            "99999999999999999999999h".parse::<Duration>(),
            Err(DurationError::Overflow(_))
        ));
    }

    /// Go's `time.ParseDuration` (src/time/format.go, `leadingInt` and the
    /// `v > 1<<63-1` checks; time_test.go's `parseDurationErrorTests`):
    /// 9223372036854775807ns is the longest duration, one more overflows.
    /// u64 milliseconds would hold far more and wrap sums of drill times.
    #[test]
    fn nothing_longer_than_gos_int64_nanoseconds() {
        let longest = "9223372036854ms".parse::<Duration>().unwrap();
        assert_eq!(longest.as_millis(), 9_223_372_036_854);
        assert!("2562047h".parse::<Duration>().is_ok());
        for too_long in ["9223372036855ms", "2562048h", "18446744073709551615ms"] {
            assert!(
                matches!(
                    too_long.parse::<Duration>(),
                    Err(DurationError::Overflow(_))
                ),
                "{too_long}"
            );
        }
    }

    /// Each pair: a refused duration with a unit repeated or out of order,
    /// and its control, the same span written largest unit first. Go's
    /// `time.ParseDuration` accepts both (`parse_go`, the ksail import's
    /// reader, still does).
    #[test]
    fn units_appear_once_largest_first_and_go_order_stays_for_go_inputs() {
        let pairs = [
            ("1h1h", "2h", 7_200_000),
            ("30m1h", "1h30m", 5_400_000),
            ("1s1m", "1m1s", 61_000),
            ("10s10s", "20s", 20_000),
            ("500ms1s", "1s500ms", 1_500),
            ("1m1h1s", "1h1m1s", 3_661_000),
            ("1000us1ms", "2ms", 2),
            ("1s1.5s", "2.5s", 2_500),
        ];
        for (refused, control, ms) in pairs {
            assert!(
                matches!(
                    refused.parse::<Duration>(),
                    Err(DurationError::UnitOrder { .. })
                ),
                "{refused}"
            );
            assert_eq!(control.parse::<Duration>(), Ok(Duration(ms)), "{control}");
            assert_eq!(Duration::parse_go(refused), Ok(Duration(ms)), "{refused}");
        }
        // `us`, `µs` and `μs` are one unit: any two of them repeat it.
        assert!(matches!(
            "1000us1000µs".parse::<Duration>(),
            Err(DurationError::UnitOrder { .. })
        ));
        let message = "1h1h".parse::<Duration>().unwrap_err().to_string();
        assert!(message.contains("largest first"), "{message}");
    }

    #[test]
    fn displays_the_shortest_form_and_round_trips() {
        for (ms, text) in [
            (0, "0s"),
            (90_000, "1m30s"),
            (5_400_000, "1h30m"),
            (500, "500ms"),
            (1_500, "1.500s"),
        ] {
            let d = Duration(ms);
            assert_eq!(d.to_string(), text);
            assert_eq!(text.parse::<Duration>(), Ok(d));
        }
    }
}
