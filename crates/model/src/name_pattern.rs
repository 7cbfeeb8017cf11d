//! Node-name patterns: how a pool names its nodes.
//!
//! A pattern is literal text with placeholders: `{n}` is the node's ordinal
//! (`worker-{n}` → `worker-3`), `{hex12}` twelve hex digits drawn from the
//! backend's seeded generator (`autoscale-cx43-{hex12}` →
//! `autoscale-cx43-0f3a9c21b7d4`), as the Hetzner cluster autoscaler names
//! the servers it creates. The drill's checks, the simulator that names its
//! nodes, the kube layer that finds a node's pool and the report that draws
//! a node's lane all read a pattern through this one type, so they cannot
//! disagree on what a pattern matches.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Ordinal,
    Hex12,
}

/// A parsed node-name pattern; serialised as the text it was written as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamePattern {
    text: String,
    parts: Vec<Part>,
}

/// Why a pattern's text is not a usable pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NamePatternError {
    #[error("name pattern `{0}` has an unclosed `{{`")]
    Unclosed(String),
    #[error(
        "unknown placeholder `{placeholder}` in name pattern `{pattern}`; expected `{{n}}` or `{{hex12}}`"
    )]
    UnknownPlaceholder {
        placeholder: String,
        pattern: String,
    },
    #[error(
        "name pattern `{0}` has no placeholder, so every node would get the same name; \
         expected `{{n}}` or `{{hex12}}`"
    )]
    NoPlaceholder(String),
    #[error(
        "name pattern `{0}` does not make valid node names; expected lowercase letters, digits, `-` and `.`"
    )]
    InvalidNames(String),
}

impl NamePattern {
    /// Parses a pattern a drill wrote. Besides well-formed placeholders, the
    /// names it makes must be valid Node names (a DNS label or subdomain).
    pub fn parse(text: &str) -> Result<NamePattern, NamePatternError> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            push_literal(&mut parts, &rest[..open]);
            let Some(close) = rest[open..].find('}') else {
                return Err(NamePatternError::Unclosed(text.to_owned()));
            };
            parts.push(match &rest[open..=open + close] {
                "{n}" => Part::Ordinal,
                "{hex12}" => Part::Hex12,
                other => {
                    return Err(NamePatternError::UnknownPlaceholder {
                        placeholder: other.to_owned(),
                        pattern: text.to_owned(),
                    });
                }
            });
            rest = &rest[open + close + 1..];
        }
        push_literal(&mut parts, rest);
        let pattern = NamePattern {
            text: text.to_owned(),
            parts,
        };
        if !pattern.has_ordinal() && !pattern.has_random() {
            return Err(NamePatternError::NoPlaceholder(text.to_owned()));
        }
        let example = pattern.name(0, || "0".to_owned());
        if !is_dns_label(&example) && !is_dns_subdomain(&example) {
            return Err(NamePatternError::InvalidNames(text.to_owned()));
        }
        Ok(pattern)
    }

    /// `prefix-{n}`, the default of a static pool; the prefix is a pool or
    /// cluster name, taken as it is.
    pub fn ordinal(prefix: &str) -> NamePattern {
        Self::with_suffix(prefix, Part::Ordinal, "{n}")
    }

    /// `prefix-{hex12}`, the default of an autoscaled pool.
    pub fn random(prefix: &str) -> NamePattern {
        Self::with_suffix(prefix, Part::Hex12, "{hex12}")
    }

    fn with_suffix(prefix: &str, placeholder: Part, spelled: &str) -> NamePattern {
        NamePattern {
            text: format!("{prefix}-{spelled}"),
            parts: vec![Part::Literal(format!("{prefix}-")), placeholder],
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn has_ordinal(&self) -> bool {
        self.parts.contains(&Part::Ordinal)
    }

    /// Whether names need the seeded generator: such nodes have no name
    /// before a backend creates them.
    pub fn has_random(&self) -> bool {
        self.parts.contains(&Part::Hex12)
    }

    /// The name of node `ordinal`, drawing each `{hex12}` from `hex12` left
    /// to right.
    pub fn name(&self, ordinal: u32, mut hex12: impl FnMut() -> String) -> String {
        let mut name = String::with_capacity(self.text.len() + 8);
        for part in &self.parts {
            match part {
                Part::Literal(text) => name.push_str(text),
                Part::Ordinal => name.push_str(&ordinal.to_string()),
                Part::Hex12 => name.push_str(&hex12()),
            }
        }
        name
    }

    /// Whether this pattern could have made `name`: `{n}` matches one or more
    /// decimal digits, `{hex12}` exactly twelve hex digits.
    pub fn matches(&self, name: &str) -> bool {
        let mut rest = name;
        for part in &self.parts {
            let taken = match part {
                Part::Literal(text) => match rest.strip_prefix(text.as_str()) {
                    Some(after) => {
                        rest = after;
                        continue;
                    }
                    None => return false,
                },
                Part::Ordinal => rest.bytes().take_while(u8::is_ascii_digit).count(),
                Part::Hex12 => {
                    if rest.bytes().take_while(u8::is_ascii_hexdigit).count() < 12 {
                        return false;
                    }
                    12
                }
            };
            if taken == 0 {
                return false;
            }
            rest = &rest[taken..];
        }
        rest.is_empty()
    }

    /// Whether some name could come from both patterns: `{n}` as an ordinal
    /// prints (decimal, no leading zero), `{hex12}` as twelve hex digits.
    /// Two pools that can make the same name would create two Nodes of one
    /// name, which the API server refuses and a fault would hit at random.
    pub fn can_collide(&self, other: &NamePattern) -> bool {
        let (a, b) = (Automaton::of(&self.parts), Automaton::of(&other.parts));
        let mut alphabet: Vec<char> = ('0'..='9').chain('a'..='f').collect();
        for part in self.parts.iter().chain(&other.parts) {
            if let Part::Literal(text) = part {
                alphabet.extend(text.chars());
            }
        }
        alphabet.sort_unstable();
        alphabet.dedup();
        let mut seen = std::collections::BTreeSet::from([(0, 0)]);
        let mut queue = vec![(0, 0)];
        while let Some((x, y)) = queue.pop() {
            if a.accepting.contains(&x) && b.accepting.contains(&y) {
                return true;
            }
            for &symbol in &alphabet {
                for &(class_x, to_x) in &a.edges[x] {
                    if !class_x.accepts(symbol) {
                        continue;
                    }
                    for &(class_y, to_y) in &b.edges[y] {
                        if class_y.accepts(symbol) && seen.insert((to_x, to_y)) {
                            queue.push((to_x, to_y));
                        }
                    }
                }
            }
        }
        false
    }
}

/// What one step of a name can be.
#[derive(Debug, Clone, Copy)]
enum Class {
    Char(char),
    Zero,
    NonZero,
    Digit,
    Hex,
}

impl Class {
    fn accepts(self, c: char) -> bool {
        match self {
            Class::Char(want) => c == want,
            Class::Zero => c == '0',
            Class::NonZero => ('1'..='9').contains(&c),
            Class::Digit => c.is_ascii_digit(),
            Class::Hex => c.is_ascii_digit() || ('a'..='f').contains(&c),
        }
    }
}

/// The names a pattern makes, as a nondeterministic automaton: state 0
/// starts, `edges[s]` leave state `s`.
struct Automaton {
    edges: Vec<Vec<(Class, usize)>>,
    accepting: Vec<usize>,
}

impl Automaton {
    fn of(parts: &[Part]) -> Automaton {
        let mut edges: Vec<Vec<(Class, usize)>> = vec![Vec::new()];
        let mut frontier = vec![0];
        let step = |edges: &mut Vec<Vec<(Class, usize)>>, from: &[usize], class| {
            edges.push(Vec::new());
            let to = edges.len() - 1;
            for &f in from {
                edges[f].push((class, to));
            }
            to
        };
        for part in parts {
            match part {
                Part::Literal(text) => {
                    for c in text.chars() {
                        frontier = vec![step(&mut edges, &frontier, Class::Char(c))];
                    }
                }
                Part::Ordinal => {
                    let zero = step(&mut edges, &frontier, Class::Zero);
                    let digits = step(&mut edges, &frontier, Class::NonZero);
                    edges[digits].push((Class::Digit, digits));
                    frontier = vec![zero, digits];
                }
                Part::Hex12 => {
                    for _ in 0..12 {
                        frontier = vec![step(&mut edges, &frontier, Class::Hex)];
                    }
                }
            }
        }
        Automaton {
            edges,
            accepting: frontier,
        }
    }
}

fn push_literal(parts: &mut Vec<Part>, text: &str) {
    if !text.is_empty() {
        parts.push(Part::Literal(text.to_owned()));
    }
}

/// An RFC 1123 label, as the API server requires of most names.
pub(crate) fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// An RFC 1123 subdomain, as the API server requires of Node names.
fn is_dns_subdomain(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_dns_label)
}

impl fmt::Display for NamePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for NamePattern {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for NamePattern {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        NamePattern::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex() -> impl FnMut() -> String {
        let mut drawn = 0;
        move || {
            drawn += 1;
            format!("{drawn:012x}")
        }
    }

    #[test]
    fn names_fill_the_ordinal_and_draw_each_hex12_left_to_right() {
        let p = NamePattern::parse("w-{n}").unwrap();
        assert_eq!(p.name(3, hex()), "w-3");
        assert!(p.has_ordinal() && !p.has_random());
        let p = NamePattern::parse("{hex12}.z-{n}.{hex12}").unwrap();
        assert_eq!(p.name(7, hex()), "000000000001.z-7.000000000002");
        assert!(p.has_ordinal() && p.has_random());
    }

    #[test]
    fn a_pattern_matches_exactly_the_names_it_makes() {
        let p = NamePattern::parse("auto-{hex12}").unwrap();
        assert!(p.matches("auto-0123456789ab"));
        assert!(!p.matches("auto-0123"), "too few hex digits");
        assert!(!p.matches("auto-0123456789abc"), "a thirteenth digit");
        assert!(!p.matches("other-0123456789ab"));
        let p = NamePattern::parse("w-{n}").unwrap();
        assert!(p.matches("w-12"));
        assert!(!p.matches("w-"), "an ordinal has a digit");
        assert!(!p.matches("w-standby-1"), "a literal is not a prefix");
        assert!(!p.matches("w-1x"));
        let p = NamePattern::parse("w-{n}-a").unwrap();
        assert!(p.matches("w-3-a"), "a literal after a placeholder");
        assert!(!p.matches("w-3-b"));
    }

    #[test]
    fn malformed_patterns_say_what_is_wrong() {
        let err = |text| NamePattern::parse(text).unwrap_err().to_string();
        assert_eq!(err("w-{n"), "name pattern `w-{n` has an unclosed `{`");
        assert_eq!(
            err("worker-{i}"),
            "unknown placeholder `{i}` in name pattern `worker-{i}`; expected `{n}` or `{hex12}`"
        );
        assert!(err("worker").contains("has no placeholder"));
        assert!(err("Worker-{n}").contains("does not make valid node names"));
        assert!(err("-{n}").contains("does not make valid node names"));
        // Controls: the same shapes, well formed.
        for good in ["w-{n}", "worker-{hex12}", "a.b-{n}"] {
            assert!(NamePattern::parse(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn defaults_are_the_pool_name_and_a_placeholder() {
        assert_eq!(NamePattern::ordinal("base").as_str(), "base-{n}");
        assert_eq!(
            NamePattern::ordinal("base"),
            NamePattern::parse("base-{n}").unwrap()
        );
        assert_eq!(
            NamePattern::random("auto"),
            NamePattern::parse("auto-{hex12}").unwrap()
        );
    }

    #[test]
    fn serialised_as_the_text_and_parsed_back() {
        let p = NamePattern::parse("cp-{n}").unwrap();
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, "\"cp-{n}\"");
        assert_eq!(serde_json::from_str::<NamePattern>(&json).unwrap(), p);
        assert!(serde_json::from_str::<NamePattern>("\"cp-{x}\"").is_err());
    }

    #[test]
    fn patterns_collide_when_one_name_can_come_from_both() {
        let p = |text| NamePattern::parse(text).unwrap();
        let cases = [
            // (a, b, collide): each colliding pair next to a control.
            ("prod-control-plane-{n}", "prod-control-plane-{n}", true),
            ("prod-control-plane-{n}", "prod-worker-{n}", false),
            ("prod-{n}", "prod-1{n}", true),  // prod-12 from both
            ("prod-{n}", "prod-0{n}", false), // an ordinal never starts with 0
            ("w-{n}-a", "w-1{n}-a", true),
            ("w-{n}-a", "w-{n}-b", false),
            ("as-{hex12}", "as-{n}", true), // twelve digits are an ordinal too
            ("as-{hex12}", "as-{n}x", false),
            ("as-{hex12}", "as-1234567890a{n}", true),
            ("as-{hex12}", "as-1234567890ab{n}", false), // thirteen characters at least
        ];
        for (a, b, collide) in cases {
            let (a, b) = (p(a), p(b));
            assert_eq!(a.can_collide(&b), collide, "{a:?} / {b:?}");
            assert_eq!(b.can_collide(&a), collide, "symmetric");
        }
    }
}
