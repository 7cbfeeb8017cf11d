//! Resource quantities (`100m`, `0.5`, `512Mi`, `1e3`) as exact integers, and
//! a pod's effective requests.
//!
//! The grammar is apimachinery's `resource.Quantity`:
//!
//! ```text
//! <quantity>        ::= <signedNumber><suffix>
//! <suffix>          ::= <binarySI> | <decimalExponent> | <decimalSI>
//! <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
//! <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
//! <decimalExponent> ::= "e" <signedNumber> | "E" <signedNumber>
//! <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//! ```
//!
//! Upstream keeps the value as an arbitrary-precision decimal, rounds it *up*
//! (away from zero) to a whole nano-unit, and caps it at ±(2⁶³−1) units. We do
//! the same in an `i128` of nano-units, which holds that range exactly, so no
//! floating point ever touches a request: `0.1` CPU is 100 milli-CPU, not
//! 99.999….
//!
//! ```
//! use drillbench::k8s::quantity::ParsedQuantity;
//!
//! let cpu: ParsedQuantity = "250m".parse()?;
//! assert_eq!(cpu.milli_value(), 250);
//! let memory: ParsedQuantity = "1.5Gi".parse()?;
//! assert_eq!(memory.value(), 1_610_612_736);
//! assert_eq!(memory.to_string(), "1536Mi");
//! # Ok::<(), drillbench::k8s::quantity::QuantityError>(())
//! ```
//!
//! Deliberate differences from upstream, in corners no manifest relies on: a
//! quantity must contain at least one digit (upstream reads a bare `.` or
//! `-.` as zero); and the cap applies to every quantity, where upstream
//! applies it only on its slow path, so that `9Ei` is capped there but `12E`
//! (1.2 × 10¹⁹) is not.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const NANOS_PER_UNIT: i128 = 1_000_000_000;
/// Upstream caps a parsed quantity at 2⁶³−1 whole units (`maxAllowed`).
const MAX_NANOS: i128 = (i64::MAX as i128) * NANOS_PER_UNIT;
/// A magnitude of more than this many decimal digits of nano-units is past the
/// cap whatever follows, so parsing can stop counting.
const MAX_NANO_DIGITS: i128 = 28;

/// The resource name of CPU, measured in cores (and milli-cores).
pub const RESOURCE_CPU: &str = "cpu";
/// The resource name of memory, measured in bytes.
pub const RESOURCE_MEMORY: &str = "memory";

/// How a quantity was written, which decides how it prints canonically.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuantityFormat {
    /// Decimal SI suffixes (`m`, `k`, `M`, …) or none.
    DecimalSi,
    /// Binary SI suffixes (`Ki`, `Mi`, `Gi`, …).
    BinarySi,
    /// A decimal exponent (`1e3`, `5E-3`).
    DecimalExponent,
}

/// A parsed quantity: an exact number of nano-units and the format it was
/// written in.
///
/// Equality compares both, as upstream's canonical form depends on both; use
/// [`ParsedQuantity::nanos`] to compare amounts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ParsedQuantity {
    nanos: i128,
    format: QuantityFormat,
}

/// Why a quantity string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The string was empty.
    #[error(
        "empty quantity; expected a number with an optional suffix, like `100m`, `2` or `512Mi`"
    )]
    Empty,
    /// The number part was missing or not a decimal number.
    #[error(
        "quantity `{0}` is not a number with an optional suffix (like `100m`, `0.5`, `512Mi`, `1e3`)"
    )]
    Malformed(String),
    /// The number was followed by something that is not a known suffix.
    #[error(
        "unknown suffix `{suffix}` in quantity `{input}`; expected one of n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3"
    )]
    UnknownSuffix {
        /// The suffix as written.
        suffix: String,
        /// The whole input.
        input: String,
    },
}

impl ParsedQuantity {
    /// Parses a quantity string, rounding up to a whole nano-unit and capping
    /// at ±(2⁶³−1) units as upstream does.
    pub fn parse(input: &str) -> Result<Self, QuantityError> {
        if input.is_empty() {
            return Err(QuantityError::Empty);
        }
        let bytes = input.as_bytes();
        let mut pos = 0;
        let negative = match bytes[0] {
            b'-' => {
                pos = 1;
                true
            }
            b'+' => {
                pos = 1;
                false
            }
            _ => false,
        };
        let int_start = pos;
        while pos < bytes.len() && bytes[pos].is_ascii_digit() {
            pos += 1;
        }
        let int_digits = &bytes[int_start..pos];
        let mut frac_digits: &[u8] = &[];
        if pos < bytes.len() && bytes[pos] == b'.' {
            pos += 1;
            let frac_start = pos;
            while pos < bytes.len() && bytes[pos].is_ascii_digit() {
                pos += 1;
            }
            frac_digits = &bytes[frac_start..pos];
        }
        if int_digits.is_empty() && frac_digits.is_empty() {
            return Err(QuantityError::Malformed(input.to_owned()));
        }
        let suffix = &input[pos..];
        let (exp10, exp2, mut format) = interpret_suffix(suffix).ok_or_else(|| {
            if suffix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'-')
            {
                QuantityError::UnknownSuffix {
                    suffix: suffix.to_owned(),
                    input: input.to_owned(),
                }
            } else {
                QuantityError::Malformed(input.to_owned())
            }
        })?;

        // The significant digits, without leading zeros; trailing zeros move
        // into the exponent so that the last digit is never zero.
        let all = || {
            int_digits
                .iter()
                .chain(frac_digits.iter())
                .map(|b| b - b'0')
        };
        let leading = all().take_while(|&d| d == 0).count();
        let digits: Vec<u8> = all().skip(leading).collect();
        let trailing = digits.iter().rev().take_while(|&&d| d == 0).count();
        let significant = &digits[..digits.len() - trailing];

        let magnitude = if significant.is_empty() {
            0
        } else {
            // Power of ten that turns the significant digits into nano-units.
            let k = i128::from(exp10) - frac_digits.len() as i128 + 9 + trailing as i128;
            nanos_ceil(significant, k, exp2)
        };
        if format == QuantityFormat::BinarySi && magnitude > 0 && magnitude < NANOS_PER_UNIT {
            // Upstream: a binary quantity below one unit is shown in decimal
            // "to avoid rounding and hopefully confusion, too".
            format = QuantityFormat::DecimalSi;
        }
        Ok(ParsedQuantity {
            nanos: if negative { -magnitude } else { magnitude },
            format,
        })
    }

    /// Parses a k8s-openapi [`Quantity`].
    pub fn from_quantity(quantity: &Quantity) -> Result<Self, QuantityError> {
        Self::parse(&quantity.0)
    }

    /// A quantity of exactly `nanos` nano-units in `format`.
    pub const fn from_nanos(nanos: i128, format: QuantityFormat) -> Self {
        ParsedQuantity { nanos, format }
    }

    /// The exact amount in nano-units (10⁻⁹).
    pub const fn nanos(&self) -> i128 {
        self.nanos
    }

    /// The format the quantity was written in.
    pub const fn format(&self) -> QuantityFormat {
        self.format
    }

    /// Whether the quantity is below zero.
    pub const fn is_negative(&self) -> bool {
        self.nanos < 0
    }

    /// The amount in thousandths, rounded away from zero and saturating, as
    /// upstream's `MilliValue()` (how CPU is compared: `100m` is 100).
    pub fn milli_value(&self) -> i64 {
        saturate(div_away_from_zero(self.nanos, 1_000_000))
    }

    /// The amount in whole units, rounded away from zero and saturating, as
    /// upstream's `Value()` (how memory is compared: `1Ki` is 1024).
    pub fn value(&self) -> i64 {
        saturate(div_away_from_zero(self.nanos, NANOS_PER_UNIT))
    }
}

impl FromStr for ParsedQuantity {
    type Err = QuantityError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

/// The canonical form, as upstream's `Quantity.String()` prints it: decimal
/// values with the exponent rounded down to a multiple of three and the
/// matching SI suffix (`0.5` → `500m`); binary values as the largest exact
/// power of 1024 (`1.5Gi` → `1536Mi`), falling back to decimal when a binary
/// value is below 1024 or not a whole number. Past the largest suffix (`E`,
/// `Ei`), which only sums can reach, exponent notation (`1e21`).
impl fmt::Display for ParsedQuantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DECIMAL: [&str; 10] = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"];
        const BINARY: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
        if self.nanos == 0 {
            return f.write_str("0");
        }
        let mut format = self.format;
        if format == QuantityFormat::BinarySi
            && (self.nanos.unsigned_abs() < (1024 * NANOS_PER_UNIT) as u128
                || self.nanos % NANOS_PER_UNIT != 0)
        {
            format = QuantityFormat::DecimalSi;
        }
        if format == QuantityFormat::BinarySi {
            let mut units = self.nanos / NANOS_PER_UNIT;
            let mut power = 0;
            while units % 1024 == 0 {
                units /= 1024;
                power += 1;
            }
            if let Some(suffix) = BINARY.get(power) {
                return write!(f, "{units}{suffix}");
            }
            format = QuantityFormat::DecimalExponent;
        }
        let mut mantissa = self.nanos;
        let mut exponent: i32 = -9;
        while mantissa % 10 == 0 {
            mantissa /= 10;
            exponent += 1;
        }
        match exponent.rem_euclid(3) {
            1 => {
                mantissa *= 10;
                exponent -= 1;
            }
            2 => {
                mantissa *= 100;
                exponent -= 2;
            }
            _ => {}
        }
        let si = usize::try_from((exponent + 9) / 3)
            .ok()
            .and_then(|i| DECIMAL.get(i));
        match (format, si) {
            (QuantityFormat::DecimalSi, Some(suffix)) => write!(f, "{mantissa}{suffix}"),
            _ if exponent == 0 => write!(f, "{mantissa}"),
            _ => write!(f, "{mantissa}e{exponent}"),
        }
    }
}

/// The decimal exponent, binary exponent and format a suffix stands for.
fn interpret_suffix(suffix: &str) -> Option<(i64, u32, QuantityFormat)> {
    use QuantityFormat::{BinarySi, DecimalExponent, DecimalSi};
    Some(match suffix {
        "" => (0, 0, DecimalSi),
        "n" => (-9, 0, DecimalSi),
        "u" => (-6, 0, DecimalSi),
        "m" => (-3, 0, DecimalSi),
        "k" => (3, 0, DecimalSi),
        "M" => (6, 0, DecimalSi),
        "G" => (9, 0, DecimalSi),
        "T" => (12, 0, DecimalSi),
        "P" => (15, 0, DecimalSi),
        "E" => (18, 0, DecimalSi),
        "Ki" => (0, 10, BinarySi),
        "Mi" => (0, 20, BinarySi),
        "Gi" => (0, 30, BinarySi),
        "Ti" => (0, 40, BinarySi),
        "Pi" => (0, 50, BinarySi),
        "Ei" => (0, 60, BinarySi),
        _ => {
            // `E` alone is exa; `E3` and `e3` are exponents. Go's ParseInt and
            // Rust's i64 parser accept the same optional sign and digits.
            let rest = suffix
                .strip_prefix('e')
                .or_else(|| suffix.strip_prefix('E'))?;
            // Upstream keeps the exponent in an int32 that it negates, so it
            // refuses anything outside ±(2³¹−1) rather than truncating it.
            let exponent = rest.parse::<i64>().ok()?;
            if exponent.unsigned_abs() > i32::MAX as u64 {
                return None;
            }
            (exponent, 0, DecimalExponent)
        }
    })
}

/// ceil(digits × 10^k × 2^exp2), capped at [`MAX_NANOS`]; `digits` is
/// non-empty, without leading zeros, and ends in a non-zero digit.
fn nanos_ceil(digits: &[u8], k: i128, exp2: u32) -> i128 {
    let n = digits.len() as i128;
    let multiplier: u128 = 1 << exp2;
    let fold = |ds: &[u8]| ds.iter().fold(0u128, |acc, &d| acc * 10 + u128::from(d));
    if k >= 0 {
        if n + k > MAX_NANO_DIGITS + 1 {
            return MAX_NANOS;
        }
        // At most 29 digits: fits in a u128 (about 3.4 × 10³⁸).
        let mut value = fold(digits);
        for _ in 0..k {
            value *= 10;
        }
        return cap(value.checked_mul(multiplier));
    }
    // A fractional amount of nano-units: split into the whole part (head) and
    // the `m` digits after the point, of which `tail` is the non-zero end.
    let m = -k;
    let split = n - m;
    if split > MAX_NANO_DIGITS + 1 {
        return MAX_NANOS;
    }
    let (head, tail) = if split > 0 {
        digits.split_at(split as usize)
    } else {
        (&digits[..0], digits)
    };
    let Some(whole) = fold(head).checked_mul(multiplier) else {
        return MAX_NANOS;
    };
    // Multiply the fraction by 2^exp2 digit by digit from the right; what
    // carries past the point is whole, any non-zero digit left behind rounds
    // up. The zero padding between the point and `tail` only passes the
    // carry on, which dies out within a few digits.
    let mut carry: u128 = 0;
    let mut fraction_nonzero = false;
    for &d in tail.iter().rev() {
        let t = u128::from(d) * multiplier + carry;
        fraction_nonzero |= !t.is_multiple_of(10);
        carry = t / 10;
    }
    let mut padding = m - tail.len() as i128;
    while carry > 0 && padding > 0 {
        fraction_nonzero |= !carry.is_multiple_of(10);
        carry /= 10;
        padding -= 1;
    }
    cap(whole
        .checked_add(carry)
        .and_then(|v| v.checked_add(u128::from(fraction_nonzero))))
}

fn cap(value: Option<u128>) -> i128 {
    match value {
        Some(v) if v <= MAX_NANOS as u128 => v as i128,
        _ => MAX_NANOS,
    }
}

fn div_away_from_zero(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d == 0 {
        q
    } else if n > 0 {
        q + 1
    } else {
        q - 1
    }
}

fn saturate(v: i128) -> i64 {
    i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
}

/// A pod's effective resource requests, per resource name, exact.
///
/// Computed once per pod (it allocates); the scheduler then compares
/// [`PodRequests::cpu_millis`] and [`PodRequests::memory_bytes`] against each
/// node without further parsing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodRequests {
    nanos: BTreeMap<String, i128>,
}

impl PodRequests {
    /// The CPU request in milli-cores (`MilliValue`, rounded up).
    pub fn cpu_millis(&self) -> i64 {
        self.get(RESOURCE_CPU).map_or(0, |q| q.milli_value())
    }

    /// The memory request in bytes (`Value`, rounded up).
    pub fn memory_bytes(&self) -> i64 {
        self.get(RESOURCE_MEMORY).map_or(0, |q| q.value())
    }

    /// The request for one resource, if any container or the pod asks for it.
    pub fn get(&self, resource: &str) -> Option<ParsedQuantity> {
        self.nanos
            .get(resource)
            .map(|&n| ParsedQuantity::from_nanos(n, display_format(resource)))
    }

    /// Every requested resource in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, ParsedQuantity)> {
        self.nanos.iter().map(|(name, &n)| {
            (
                name.as_str(),
                ParsedQuantity::from_nanos(n, display_format(name)),
            )
        })
    }
}

/// Byte-sized resources print in binary units (`1536Mi`) so that evidence
/// reads like the manifests; the rest in decimal (`1500m`).
fn display_format(resource: &str) -> QuantityFormat {
    if resource == RESOURCE_MEMORY
        || resource == "ephemeral-storage"
        || resource == "storage"
        || resource.starts_with("hugepages-")
    {
        QuantityFormat::BinarySi
    } else {
        QuantityFormat::DecimalSi
    }
}

/// Why a pod's requests could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestsError {
    /// A quantity did not parse.
    #[error("invalid {field} `{resource}` in {location}")]
    Invalid {
        /// Where: `container "app"`, `init container "setup"`, `pod overhead`, `pod resources`.
        location: String,
        /// `requests`, `limits` or `overhead`.
        field: &'static str,
        /// The resource name.
        resource: String,
        /// What was wrong with the quantity.
        #[source]
        source: QuantityError,
    },
    /// A negative amount, which Kubernetes validation refuses.
    #[error(
        "negative {field} `{resource}` = `{value}` in {location}; resource amounts must not be negative"
    )]
    Negative {
        /// Where, as in [`RequestsError::Invalid`].
        location: String,
        /// `requests`, `limits` or `overhead`.
        field: &'static str,
        /// The resource name.
        resource: String,
        /// The quantity as written.
        value: String,
    },
}

type Amounts = BTreeMap<String, i128>;

fn parse_list(
    list: Option<&BTreeMap<String, Quantity>>,
    location: &dyn Fn() -> String,
    field: &'static str,
) -> Result<Amounts, RequestsError> {
    let mut out = Amounts::new();
    for (resource, quantity) in list.into_iter().flatten() {
        let parsed =
            ParsedQuantity::from_quantity(quantity).map_err(|source| RequestsError::Invalid {
                location: location(),
                field,
                resource: resource.clone(),
                source,
            })?;
        if parsed.is_negative() {
            return Err(RequestsError::Negative {
                location: location(),
                field,
                resource: resource.clone(),
                value: quantity.0.clone(),
            });
        }
        out.insert(resource.clone(), parsed.nanos());
    }
    Ok(out)
}

/// A container's requests after the apiserver's defaulting: a resource with a
/// limit but no request is requested at its limit (`SetDefaults_Pod`). The
/// simulator loads manifests without an apiserver, so it has to do this
/// itself or it would under-count every limits-only container.
fn container_requests(
    container: &Container,
    kind: &str,
    defaults: Option<&Amounts>,
) -> Result<Amounts, RequestsError> {
    let location = || format!("{kind} \"{}\"", container.name);
    let resources = container.resources.as_ref();
    let mut requests = parse_list(
        resources.and_then(|r| r.requests.as_ref()),
        &location,
        "requests",
    )?;
    let limits = parse_list(
        resources.and_then(|r| r.limits.as_ref()),
        &location,
        "limits",
    )?;
    for (resource, limit) in limits {
        requests.entry(resource).or_insert(limit);
    }
    for (resource, &n) in defaults.into_iter().flatten() {
        requests.entry(resource.clone()).or_insert(n);
    }
    Ok(requests)
}

fn add_into(into: &mut Amounts, from: &Amounts) {
    for (resource, &n) in from {
        let slot = into.entry(resource.clone()).or_insert(0);
        *slot = slot.saturating_add(n);
    }
}

fn max_into(into: &mut Amounts, from: &Amounts) {
    for (resource, &n) in from {
        let slot = into.entry(resource.clone()).or_insert(0);
        *slot = (*slot).max(n);
    }
}

/// Whether pod-level `resources` may set this resource (`PodLevelResources`:
/// cpu, memory and hugepages).
fn is_pod_level_resource(resource: &str) -> bool {
    resource == RESOURCE_CPU || resource == RESOURCE_MEMORY || resource.starts_with("hugepages-")
}

/// The effective requests of a pod, as the scheduler and kubelet admission
/// compute them (component-helpers `resource.PodRequests`):
///
/// 1. the sum over regular containers;
/// 2. sidecars (init containers with `restartPolicy: Always`) add to that sum
///    and keep running, so each later init container runs beside all sidecars
///    before it: an init container's footprint is its own requests plus the
///    sidecars started so far, and the pod needs the maximum of those
///    footprints and the sum of step 1;
/// 3. pod-level `spec.resources.requests` (cpu, memory, hugepages) replace the
///    aggregate for those resources;
/// 4. `spec.overhead` (the RuntimeClass's cost) is added on top.
///
/// Limits-only containers are defaulted to request their limits. Not modelled:
/// in-place resize status, DRA claims, and the defaulting of pod-level
/// requests from pod-level limits.
pub fn pod_requests(spec: &PodSpec) -> Result<PodRequests, RequestsError> {
    aggregate_requests(spec, None)
}

/// The CPU, in milli-cores, the scheduler's scoring assumes for a container
/// that requests none (`DefaultMilliCPURequest`).
pub const SCORING_DEFAULT_MILLI_CPU: i64 = 100;
/// The memory, in bytes, the scheduler's scoring assumes for a container that
/// requests none (`DefaultMemoryRequest`, 200 MiB).
pub const SCORING_DEFAULT_MEMORY_BYTES: i64 = 200 * 1024 * 1024;

/// The requests the scheduler's NodeResourcesFit *scoring* (least-allocated,
/// balanced allocation) uses: as [`pod_requests`], but a container (or init
/// container) that does not request CPU or memory counts as requesting
/// [`SCORING_DEFAULT_MILLI_CPU`] and [`SCORING_DEFAULT_MEMORY_BYTES`]
/// (`NonMissingContainerRequests`), so that request-less pods still spread.
/// An explicit request, even zero, is kept. The fit *filter* uses
/// [`pod_requests`].
pub fn pod_requests_for_scoring(spec: &PodSpec) -> Result<PodRequests, RequestsError> {
    let defaults: Amounts = [
        (
            RESOURCE_CPU.to_owned(),
            i128::from(SCORING_DEFAULT_MILLI_CPU) * 1_000_000,
        ),
        (
            RESOURCE_MEMORY.to_owned(),
            i128::from(SCORING_DEFAULT_MEMORY_BYTES) * NANOS_PER_UNIT,
        ),
    ]
    .into_iter()
    .collect();
    aggregate_requests(spec, Some(&defaults))
}

fn aggregate_requests(
    spec: &PodSpec,
    defaults: Option<&Amounts>,
) -> Result<PodRequests, RequestsError> {
    let mut sum = Amounts::new();
    for container in &spec.containers {
        add_into(
            &mut sum,
            &container_requests(container, "container", defaults)?,
        );
    }
    let mut sidecars = Amounts::new();
    let mut init_peak = Amounts::new();
    for container in spec.init_containers.iter().flatten() {
        let own = container_requests(container, "init container", defaults)?;
        let footprint = if container.restart_policy.as_deref() == Some("Always") {
            add_into(&mut sum, &own);
            add_into(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut combined = own;
            add_into(&mut combined, &sidecars);
            combined
        };
        max_into(&mut init_peak, &footprint);
    }
    max_into(&mut sum, &init_peak);

    let pod_level = parse_list(
        spec.resources.as_ref().and_then(|r| r.requests.as_ref()),
        &|| "pod resources".to_owned(),
        "requests",
    )?;
    for (resource, n) in pod_level {
        if is_pod_level_resource(&resource) {
            sum.insert(resource, n);
        }
    }
    let overhead = parse_list(
        spec.overhead.as_ref(),
        &|| "pod overhead".to_owned(),
        "overhead",
    )?;
    add_into(&mut sum, &overhead);
    Ok(PodRequests { nanos: sum })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ResourceRequirements;
    use proptest::prelude::*;

    fn q(s: &str) -> ParsedQuantity {
        ParsedQuantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_exact_amounts() {
        // (input, nano-units)
        let table: &[(&str, i128)] = &[
            ("0", 0),
            ("-0", 0),
            ("2", 2_000_000_000),
            ("+2", 2_000_000_000),
            ("100m", 100_000_000),
            ("0.5", 500_000_000),
            ("0.1", 100_000_000),
            (".5", 500_000_000),
            ("1.", 1_000_000_000),
            ("1500m", 1_500_000_000),
            ("1n", 1),
            ("1u", 1_000),
            ("1k", 1_000_000_000_000),
            ("1M", 1_000_000_000_000_000),
            ("1G", 1_000_000_000_000_000_000),
            ("1E", 1_000_000_000_000_000_000_000_000_000),
            ("1Ki", 1024 * 1_000_000_000),
            ("512Mi", 512 * (1 << 20) * 1_000_000_000),
            ("1Gi", (1 << 30) * 1_000_000_000),
            ("1.5Gi", 1_610_612_736 * 1_000_000_000),
            ("1e3", 1_000 * 1_000_000_000),
            ("1E3", 1_000 * 1_000_000_000),
            ("1e+3", 1_000 * 1_000_000_000),
            ("5e-3", 5_000_000),
            ("1.5e3", 1_500 * 1_000_000_000),
            ("-100m", -100_000_000),
            ("007", 7_000_000_000),
            ("0.000", 0),
        ];
        for &(input, nanos) in table {
            assert_eq!(q(input).nanos(), nanos, "{input}");
        }
    }

    #[test]
    fn the_resource_units_page_examples() {
        // "Resource units in Kubernetes": these memory quantities are all
        // about the same value; the first, the milli form and 123Mi are equal.
        assert_eq!(q("128974848").value(), 128_974_848);
        assert_eq!(q("128974848000m").value(), 128_974_848);
        assert_eq!(q("123Mi").value(), 128_974_848);
        assert_eq!(q("129e6").value(), 129_000_000);
        assert_eq!(q("129M").value(), 129_000_000);
        // The page's warning: `400m` of memory is 0.4 bytes, which rounds up.
        assert_eq!(q("400m").value(), 1);
        // CPU: `0.1` is `100m`, and a whole `1` is `1000m`.
        assert_eq!(q("0.1").milli_value(), q("100m").milli_value());
        assert_eq!(q("1").milli_value(), 1000);
    }

    #[test]
    fn extreme_nanos_print_without_overflow() {
        for nanos in [i128::MIN, i128::MAX, -(10i128.pow(38)), 10i128.pow(38)] {
            for format in [
                QuantityFormat::DecimalSi,
                QuantityFormat::BinarySi,
                QuantityFormat::DecimalExponent,
            ] {
                assert!(
                    !ParsedQuantity::from_nanos(nanos, format)
                        .to_string()
                        .is_empty()
                );
            }
        }
    }

    #[test]
    fn rounds_up_to_a_nano_away_from_zero() {
        assert_eq!(q("0.0000000001").nanos(), 1);
        assert_eq!(q("1.0000000001").nanos(), 1_000_000_001);
        assert_eq!(q("-0.0000000001").nanos(), -1);
        assert_eq!(q("1e-100").nanos(), 1);
        // 10⁻¹² Ki = 1.024 nano-units → 2.
        assert_eq!(q("0.000000000001Ki").nanos(), 2);
        // 1.1 Ki = 1126.4 units, exact in nanos.
        assert_eq!(q("1.1Ki").nanos(), 1_126_400_000_000);
    }

    #[test]
    fn caps_at_the_int64_maximum_of_units() {
        assert_eq!(q("1e100").nanos(), MAX_NANOS);
        assert_eq!(q("9223372036854775808").nanos(), MAX_NANOS);
        assert_eq!(q("9223372036854775807").nanos(), MAX_NANOS);
        assert_eq!(q("9223372036854775806").nanos(), MAX_NANOS - NANOS_PER_UNIT);
        assert_eq!(q("16Ei").nanos(), MAX_NANOS);
        assert_eq!(q("-1e100").nanos(), -MAX_NANOS);
        assert_eq!(q("1e100").value(), i64::MAX);
        assert_eq!(q("1e100").milli_value(), i64::MAX);
    }

    /// Upstream's `TestQuantityParse` table (apimachinery
    /// `api/resource/quantity_test.go`): value in nano-units and format.
    #[test]
    fn upstream_parse_table() {
        use QuantityFormat::{BinarySi as B, DecimalExponent as X, DecimalSi as D};
        const G: i128 = 1_000_000_000;
        const KI: i128 = 1024;
        let table: &[(&str, i128, QuantityFormat)] = &[
            ("0", 0, D),
            ("0n", 0, D),
            ("0u", 0, D),
            ("0m", 0, D),
            ("0Ki", 0, B),
            ("0k", 0, D),
            ("0Mi", 0, B),
            ("0M", 0, D),
            ("0Gi", 0, B),
            ("0G", 0, D),
            ("0Ti", 0, B),
            ("0T", 0, D),
            ("1", G, D),
            ("1Ki", KI * G, B),
            ("8Ki", 8 * KI * G, B),
            ("7Mi", 7 * KI.pow(2) * G, B),
            ("6Gi", 6 * KI.pow(3) * G, B),
            ("5Ti", 5 * KI.pow(4) * G, B),
            ("4Pi", 4 * KI.pow(5) * G, B),
            ("3Ei", 3 * KI.pow(6) * G, B),
            ("10Ti", 10 * KI.pow(4) * G, B),
            ("100Ti", 100 * KI.pow(4) * G, B),
            ("5n", 5, D),
            ("4u", 4_000, D),
            ("3m", 3_000_000, D),
            ("9", 9 * G, D),
            ("8k", 8_000 * G, D),
            ("50k", 50_000 * G, D),
            ("7M", 7 * 10i128.pow(6) * G, D),
            ("6G", 6 * 10i128.pow(9) * G, D),
            ("5T", 5 * 10i128.pow(12) * G, D),
            ("40T", 40 * 10i128.pow(12) * G, D),
            ("300T", 300 * 10i128.pow(12) * G, D),
            ("2P", 2 * 10i128.pow(15) * G, D),
            ("1E", 10i128.pow(18) * G, D),
            ("1E-3", 1_000_000, X),
            ("1e3", 1_000 * G, X),
            ("1E6", 10i128.pow(6) * G, X),
            ("1e9", 10i128.pow(9) * G, X),
            ("1E12", 10i128.pow(12) * G, X),
            ("1e15", 10i128.pow(15) * G, X),
            ("1E18", 10i128.pow(18) * G, X),
            ("1e14", 10i128.pow(14) * G, X),
            ("1e13", 10i128.pow(13) * G, X),
            ("100.035k", 100_035 * G, D),
            ("0.001", 1_000_000, D),
            ("0.0005k", 500_000_000, D),
            ("0.005", 5_000_000, D),
            ("0.05", 50_000_000, D),
            ("0.5", 500_000_000, D),
            ("0.00050k", 500_000_000, D),
            ("0.00500", 5_000_000, D),
            ("0.05000", 50_000_000, D),
            ("0.50000", 500_000_000, D),
            ("0.5e0", 500_000_000, X),
            ("0.5e-1", 50_000_000, X),
            ("0.5e-2", 5_000_000, X),
            ("10.035M", 10_035_000 * G, D),
            ("1.2e3", 1_200 * G, X),
            ("1.3E+6", 1_300_000 * G, X),
            ("1.40e9", 1_400_000_000 * G, X),
            ("1.53E12", 1_530_000_000_000 * G, X),
            ("1.6e15", 16 * 10i128.pow(14) * G, X),
            ("1.7E18", 17 * 10i128.pow(17) * G, X),
            ("9.01", 9_010_000_000, D),
            ("8.1k", 8_100 * G, D),
            ("7.123456M", 7_123_456 * G, D),
            ("6.987654321G", 6_987_654_321 * G, D),
            ("5.444T", 5_444 * 10i128.pow(9) * G, D),
            ("40.1T", 401 * 10i128.pow(11) * G, D),
            ("300.2T", 3_002 * 10i128.pow(11) * G, D),
            ("2.5P", 25 * 10i128.pow(14) * G, D),
            ("1.01E", 101 * 10i128.pow(16) * G, D),
            ("3.001n", 4, D),
            ("1.1E-9", 2, X),
            ("0.0000000001", 1, D),
            ("0.0000000005", 1, D),
            ("0.00000000050", 1, D),
            ("0.5e-9", 1, X),
            ("0.9n", 1, D),
            ("0.00000012345", 124, D),
            ("0.00000012354", 124, D),
            ("9Ei", MAX_NANOS, B),
            ("9223372036854775807Ki", MAX_NANOS, B),
            ("100.035Ki", 10_243_584 * G / 100, B),
            ("0.5Mi", 524_288 * G, B),
            ("0.05Gi", 536_870_912 * G / 10, B),
            ("0.025Ti", 274_877_906_944 * G / 10, B),
            ("0.000000000001Ki", 2, D),
            (".001", 1_000_000, D),
            (".0001k", 100_000_000, D),
            ("1.", G, D),
            ("1.G", 10i128.pow(9) * G, D),
        ];
        for &(input, nanos, format) in table {
            let got = q(input);
            assert_eq!((got.nanos(), got.format()), (nanos, format), "{input}");
            let negative = q(&format!("-{input}"));
            assert_eq!(
                (negative.nanos(), negative.format()),
                (-nanos, format),
                "-{input}"
            );
            let plus = q(&format!("+{input}"));
            assert_eq!((plus.nanos(), plus.format()), (nanos, format), "+{input}");
        }
        // Documented deviation: upstream's fast path leaves `12E` uncapped.
        assert_eq!(q("12E").nanos(), MAX_NANOS);
    }

    /// Upstream's invalid inputs, plus the int32 exponent bound.
    #[test]
    fn upstream_invalid_table() {
        for input in [
            "1.1.M",
            "1+1.0M",
            "0.1mi",
            "0.1am",
            "aoeu",
            ".5i",
            "1i",
            "-3.01i",
            "-3.01e-",
            "1e4294967297",
            "1e2147483648",
            "1e-2147483648",
            " 1",
            "1 ",
        ] {
            assert!(ParsedQuantity::parse(input).is_err(), "{input:?}");
        }
        assert_eq!(q("1e2147483647").nanos(), MAX_NANOS);
        assert_eq!(q("1e-2147483647").nanos(), 1);
    }

    /// Upstream's `TestQuantityString` and `TestQuantityParseEmit` cases that
    /// a parse can reach: (input, canonical form).
    #[test]
    fn upstream_canonical_table() {
        let table: &[(&str, &str)] = &[
            ("1024Mi", "1Gi"),
            ("307200Ki", "300Mi"),
            ("6Ki", "6Ki"),
            ("1025024Mi", "1001Gi"),
            ("1024Gi", "1Ti"),
            ("1000M", "1G"),
            ("0.001T", "1G"),
            ("1000u", "1m"),
            ("1.08", "1080m"),
            ("1080000000n", "1080m"),
            ("300M", "300M"),
            ("1T", "1T"),
            ("1E", "1E"),
            ("1234567M", "1234567M"),
            ("3k", "3k"),
            (".001e12", "1e9"),
            ("0.001e0", "1e-3"),
            ("1000e-12", "1e-9"),
            ("80e-3", "80e-3"),
            ("300e6", "300e6"),
            ("3e3", "3e3"),
            ("00", "0"),
            ("1n", "1n"),
            ("1080n", "1080n"),
            ("1080u", "1080u"),
            ("1Ki", "1Ki"),
            ("1Mi", "1Mi"),
            (".001Ki", "1024m"),
            (".000001Ki", "1024u"),
            (".000000001Ki", "1024n"),
            (".000000000001Ki", "2n"),
        ];
        for &(input, canonical) in table {
            assert_eq!(q(input).to_string(), canonical, "{input}");
            if canonical != "0" {
                assert_eq!(q(&format!("-{input}")).to_string(), format!("-{canonical}"));
            }
        }
    }

    #[test]
    fn past_the_largest_suffix_prints_exponents() {
        const G: i128 = 1_000_000_000;
        let d = |nanos| ParsedQuantity::from_nanos(nanos, QuantityFormat::DecimalSi);
        let b = |nanos| ParsedQuantity::from_nanos(nanos, QuantityFormat::BinarySi);
        assert_eq!(d(10i128.pow(21) * G).to_string(), "1e21");
        assert_eq!(d(5 * 10i128.pow(21) * G).to_string(), "5e21");
        assert_eq!(d(10i128.pow(24) * G).to_string(), "1e24");
        assert_eq!(b((1i128 << 70) * G).to_string(), "1180591620717411303424");
        assert_eq!(b(3 * (1i128 << 60) * G).to_string(), "3Ei");
        assert_eq!(d(-(10i128.pow(21)) * G).to_string(), "-1e21");
    }

    #[test]
    fn milli_value_and_value_round_up() {
        let table: &[(&str, i64, i64)] = &[
            // (input, MilliValue, Value)
            ("100m", 100, 1),
            ("1", 1000, 1),
            ("0.5", 500, 1),
            ("1.5m", 2, 1),
            ("1n", 1, 1),
            ("512Mi", 536_870_912_000, 536_870_912),
            ("1G", 1_000_000_000_000, 1_000_000_000),
            ("-1.5m", -2, -1),
            ("0", 0, 0),
        ];
        for &(input, milli, value) in table {
            assert_eq!(q(input).milli_value(), milli, "{input} milli");
            assert_eq!(q(input).value(), value, "{input} value");
        }
    }

    #[test]
    fn refuses_malformed_quantities() {
        assert_eq!(ParsedQuantity::parse(""), Err(QuantityError::Empty));
        for input in [
            "-", "+", ".", "m", "Ki", "abc", "1 ", " 1", "1.1.1", "1..", "--1", "1,5",
        ] {
            assert!(
                matches!(
                    ParsedQuantity::parse(input),
                    Err(QuantityError::Malformed(_) | QuantityError::UnknownSuffix { .. })
                ),
                "{input:?} should be refused"
            );
        }
        for (input, suffix) in [
            ("1K", "K"),
            ("1mi", "mi"),
            ("1KiB", "KiB"),
            ("1e", "e"),
            ("1i", "i"),
            ("1e99999999999999999999", "e99999999999999999999"),
        ] {
            match ParsedQuantity::parse(input) {
                Err(QuantityError::UnknownSuffix { suffix: s, .. }) => assert_eq!(s, suffix),
                other => panic!("{input}: expected an unknown suffix, got {other:?}"),
            }
        }
        assert!(matches!(
            ParsedQuantity::parse("1e3.5"),
            Err(QuantityError::Malformed(_))
        ));
    }

    #[test]
    fn prints_the_canonical_form() {
        let table: &[(&str, &str)] = &[
            ("0", "0"),
            ("0.5", "500m"),
            ("0.1", "100m"),
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("100m", "100m"),
            ("2", "2"),
            ("1024", "1024"),
            ("1k", "1k"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("1G", "1G"),
            ("1Ki", "1Ki"),
            ("1024Ki", "1Mi"),
            ("1.5Gi", "1536Mi"),
            ("0.5Gi", "512Mi"),
            ("0.5Ki", "512"),
            ("1.1Ki", "1126400m"),
            ("1e3", "1e3"),
            ("1E3", "1e3"),
            ("1.5e3", "1500"),
            ("12e6", "12e6"),
            ("5e-3", "5e-3"),
            ("0.0000000001", "1n"),
            ("-100m", "-100m"),
            ("-1Gi", "-1Gi"),
            ("16Ei", "9223372036854775807"),
        ];
        for &(input, canonical) in table {
            assert_eq!(q(input).to_string(), canonical, "{input}");
        }
    }

    fn requirements(requests: &[(&str, &str)], limits: &[(&str, &str)]) -> ResourceRequirements {
        let list = |pairs: &[(&str, &str)]| {
            (!pairs.is_empty()).then(|| {
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                    .collect()
            })
        };
        ResourceRequirements {
            requests: list(requests),
            limits: list(limits),
            ..Default::default()
        }
    }

    fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            name: name.to_owned(),
            resources: Some(requirements(requests, limits)),
            ..Default::default()
        }
    }

    fn sidecar(name: &str, requests: &[(&str, &str)]) -> Container {
        Container {
            restart_policy: Some("Always".to_owned()),
            ..container(name, requests, &[])
        }
    }

    #[test]
    fn pod_requests_sum_containers_and_take_the_init_maximum() {
        let spec = PodSpec {
            containers: vec![
                container("a", &[("cpu", "100m"), ("memory", "128Mi")], &[]),
                container("b", &[("cpu", "0.25"), ("memory", "1Gi")], &[]),
            ],
            init_containers: Some(vec![
                container("migrate", &[("cpu", "2"), ("memory", "64Mi")], &[]),
                container("small", &[("cpu", "10m")], &[]),
            ]),
            ..Default::default()
        };
        let r = pod_requests(&spec).unwrap();
        // cpu: max(100m + 250m, 2) = 2; memory: max(1152Mi, 64Mi).
        assert_eq!(r.cpu_millis(), 2000);
        assert_eq!(r.memory_bytes(), 1152 * 1024 * 1024);
    }

    #[test]
    fn sidecars_add_to_the_sum_and_to_later_init_containers() {
        let spec = PodSpec {
            containers: vec![container("app", &[("cpu", "1")], &[])],
            init_containers: Some(vec![
                container("before", &[("cpu", "1200m")], &[]),
                sidecar("proxy", &[("cpu", "500m")]),
                container("after", &[("cpu", "1")], &[]),
            ]),
            ..Default::default()
        };
        // Sum: app 1 + proxy 0.5 = 1.5. Footprints: before 1.2, proxy 0.5,
        // after 1 + 0.5 = 1.5. Max = 1.5.
        assert_eq!(pod_requests(&spec).unwrap().cpu_millis(), 1500);

        let spec = PodSpec {
            init_containers: Some(vec![
                sidecar("proxy", &[("cpu", "500m")]),
                container("heavy", &[("cpu", "2")], &[]),
            ]),
            ..spec
        };
        // heavy runs beside the proxy: 2.5 beats the steady 1.5.
        assert_eq!(pod_requests(&spec).unwrap().cpu_millis(), 2500);
    }

    #[test]
    fn limits_only_containers_request_their_limits_and_overhead_adds() {
        let spec = PodSpec {
            containers: vec![
                container("limits-only", &[], &[("memory", "512Mi"), ("cpu", "1")]),
                container("both", &[("cpu", "100m")], &[("cpu", "4")]),
            ],
            overhead: Some(
                [("cpu".to_owned(), Quantity("250m".to_owned()))]
                    .into_iter()
                    .collect(),
            ),
            ..Default::default()
        };
        let r = pod_requests(&spec).unwrap();
        assert_eq!(r.cpu_millis(), 1000 + 100 + 250);
        assert_eq!(r.memory_bytes(), 512 * 1024 * 1024);
        assert_eq!(
            r.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>(),
            ["cpu=1350m", "memory=512Mi"]
        );
    }

    #[test]
    fn pod_level_requests_replace_the_aggregate_for_cpu_and_memory_only() {
        let spec = PodSpec {
            containers: vec![container(
                "a",
                &[
                    ("cpu", "100m"),
                    ("memory", "1Gi"),
                    ("ephemeral-storage", "1Gi"),
                ],
                &[],
            )],
            resources: Some(requirements(
                &[("cpu", "2"), ("ephemeral-storage", "5Gi")],
                &[],
            )),
            ..Default::default()
        };
        let r = pod_requests(&spec).unwrap();
        assert_eq!(r.cpu_millis(), 2000);
        assert_eq!(r.memory_bytes(), 1 << 30);
        assert_eq!(r.get("ephemeral-storage").unwrap().value(), 1 << 30);
    }

    #[test]
    fn pod_requests_name_the_bad_quantity() {
        let spec = PodSpec {
            containers: vec![container("app", &[("memory", "1GB")], &[])],
            ..Default::default()
        };
        let err = pod_requests(&spec).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid requests `memory` in container \"app\""
        );
        assert!(matches!(err, RequestsError::Invalid { ref resource, .. } if resource == "memory"));

        let spec = PodSpec {
            containers: vec![container("app", &[], &[("cpu", "-1")])],
            ..Default::default()
        };
        assert!(matches!(
            pod_requests(&spec),
            Err(RequestsError::Negative {
                field: "limits",
                ..
            })
        ));
    }

    #[test]
    fn scoring_assumes_defaults_for_missing_requests_only() {
        let spec = PodSpec {
            containers: vec![
                container("bare", &[], &[]),
                container("zero-cpu", &[("cpu", "0")], &[]),
                container("limits", &[], &[("memory", "1Gi")]),
            ],
            ..Default::default()
        };
        let r = pod_requests_for_scoring(&spec).unwrap();
        // cpu: 100m (bare) + 0 (explicit zero) + 100m (limits-only has no cpu).
        assert_eq!(r.cpu_millis(), 200);
        // memory: 200Mi + 200Mi + 1Gi (defaulted from its limit).
        assert_eq!(r.memory_bytes(), 400 * 1024 * 1024 + (1 << 30));
        let plain = pod_requests(&spec).unwrap();
        assert_eq!((plain.cpu_millis(), plain.memory_bytes()), (0, 1 << 30));
    }

    #[test]
    fn an_empty_pod_requests_nothing() {
        let r = pod_requests(&PodSpec::default()).unwrap();
        assert_eq!((r.cpu_millis(), r.memory_bytes()), (0, 0));
        assert_eq!(r.iter().count(), 0);
    }

    fn quantity_string() -> impl Strategy<Value = String> {
        let suffix = prop::sample::select(vec![
            "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
            "e0", "e3", "e-3", "E6", "e-9", "e12",
        ]);
        (
            prop::bool::ANY,
            "[0-9]{0,12}",
            prop::option::of("[0-9]{0,12}"),
            suffix,
        )
            .prop_filter_map("needs a digit", |(neg, int, frac, suffix)| {
                let frac = frac.map(|f| format!(".{f}")).unwrap_or_default();
                if !int.bytes().chain(frac.bytes()).any(|b| b.is_ascii_digit()) {
                    return None;
                }
                Some(format!("{}{int}{frac}{suffix}", if neg { "-" } else { "" }))
            })
    }

    proptest! {
        #[test]
        fn canonical_form_round_trips(input in quantity_string()) {
            let parsed = q(&input);
            let printed = parsed.to_string();
            let reparsed = q(&printed);
            prop_assert_eq!(reparsed.nanos(), parsed.nanos(), "{} -> {}", input, printed);
            prop_assert_eq!(reparsed.to_string(), printed);
        }

        #[test]
        fn integer_quantities_match_plain_arithmetic(n in 0i64..1_000_000_000, suffix in 0usize..4) {
            let (text, factor): (&str, i128) = [("", 1_000_000_000), ("m", 1_000_000), ("Ki", 1024 * 1_000_000_000), ("k", 1_000_000_000_000)][suffix];
            prop_assert_eq!(q(&format!("{n}{text}")).nanos(), i128::from(n) * factor);
        }

        #[test]
        fn parsing_never_panics(input in "\\PC{0,24}") {
            let _ = ParsedQuantity::parse(&input);
        }
    }
}
