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
//! use drillbench_model::k8s::quantity::ParsedQuantity;
//!
//! let cpu: ParsedQuantity = "250m".parse()?;
//! assert_eq!(cpu.milli_value(), 250);
//! let memory: ParsedQuantity = "1.5Gi".parse()?;
//! assert_eq!(memory.value(), 1_610_612_736);
//! assert_eq!(memory.to_string(), "1536Mi");
//! # Ok::<(), drillbench_model::k8s::quantity::QuantityError>(())
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
    UnknownSuffix { suffix: String, input: String },
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

    pub const fn format(&self) -> QuantityFormat {
        self.format
    }

    const fn is_negative(&self) -> bool {
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
        resource: String,
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
mod tests;
