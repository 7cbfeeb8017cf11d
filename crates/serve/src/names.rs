//! Object names as the API server checks and generates them: DNS-1123
//! subdomains for most kinds, labels for Namespaces (apimachinery's
//! `util/validation`: `IsDNS1123Subdomain`, `IsDNS1123Label`), with its
//! messages; and `generateName`, a prefix and five characters of the
//! apiserver's `SimpleNameGenerator` alphabet.

/// apimachinery's `dns1123SubdomainErrorMsg` with its example and regex.
const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

/// apimachinery's `dns1123LabelErrMsg` with its examples and regex.
const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// The characters a generated suffix draws from (no vowels, no look-alikes).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
const SUFFIX_LEN: usize = 5;

fn is_label(s: &str) -> bool {
    let bytes = s.as_bytes();
    !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes[0] != b'-'
        && bytes[bytes.len() - 1] != b'-'
}

/// What is wrong with `name` for a kind (`label`: a Namespace's), as
/// the details of `metadata.name: Invalid value: "NAME": …`; `None` when
/// it is valid.
pub(super) fn invalid(name: &str, label: bool) -> Vec<String> {
    let (max, ok, message) = if label {
        (63, is_label(name), LABEL)
    } else {
        (253, name.split('.').all(is_label), SUBDOMAIN)
    };
    let mut problems = Vec::new();
    if name.len() > max {
        problems.push(format!("must be no more than {max} characters"));
    }
    if !ok {
        problems.push(message.to_owned());
    }
    problems
}

/// `prefix` and a five-character suffix chosen by `seed` (the façade
/// passes its next resourceVersion, so generated names are reproducible
/// for a seed and a sequence of requests). The prefix is cut so the name
/// stays within a label's 63 characters, as the apiserver's generator does.
pub(super) fn generate(prefix: &str, seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut name: String = prefix.chars().take(63 - SUFFIX_LEN).collect();
    for _ in 0..SUFFIX_LEN {
        x ^= x >> 31;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        name.push(ALPHABET[(x % ALPHABET.len() as u64) as usize] as char);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Cases from apimachinery's `validation_test.go` for
    /// `IsDNS1123Subdomain` and `IsDNS1123Label`, each with its flip.
    #[test]
    fn subdomains_and_labels_as_apimachinery_checks_them() {
        for good in [
            "a",
            "ab",
            "a-b",
            "a.b",
            "1.2.3",
            "a--b",
            "0",
            "web-0",
            &"a".repeat(253),
        ] {
            assert!(invalid(good, false).is_empty(), "{good}");
        }
        for bad in [
            "a b", "Foo_Bar", "A", "-a", "a-", "a..b", ".a", "a.", "a_b", "",
        ] {
            assert_eq!(invalid(bad, false), [SUBDOMAIN], "{bad}");
        }
        assert_eq!(
            invalid(&"a".repeat(300), false),
            ["must be no more than 253 characters"]
        );
        assert!(invalid("apps", true).is_empty());
        assert_eq!(
            invalid("a.b", true),
            [LABEL],
            "a dot is a subdomain's, not a label's"
        );
        assert_eq!(
            invalid(&"a".repeat(64), true),
            ["must be no more than 63 characters"]
        );
    }

    #[test]
    fn generated_names_are_the_prefix_and_five_characters() {
        let name = generate("web-", 41);
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(name[4..].bytes().all(|b| ALPHABET.contains(&b)), "{name}");
        assert!(invalid(&name, false).is_empty());
        assert_eq!(generate("web-", 41), name, "the same seed, the same name");
        assert_ne!(generate("web-", 42), name);
        assert_eq!(generate(&"p".repeat(80), 1).len(), 63);
    }
}
