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
        "", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "e0",
        "e3", "e-3", "E6", "e-9", "e12",
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
