//! Anchors on pattern keys (`pkg/engine/anchor`): `(k)` condition, `<(k)`
//! global, `^(k)` existence, `=(k)` equality, `X(k)` negation and `+(k)`
//! add-if-absent.

/// What an anchored key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Condition,
    Global,
    Existence,
    Equality,
    Negation,
    AddIfAbsent,
}

/// Splits a pattern key into its anchor (if any) and the bare field name.
pub fn parse(key: &str) -> (Option<Anchor>, &str) {
    let (anchor, rest) = match key.as_bytes().first() {
        Some(b'(') => (Anchor::Condition, key),
        Some(b'<') => (Anchor::Global, &key[1..]),
        Some(b'^') => (Anchor::Existence, &key[1..]),
        Some(b'=') => (Anchor::Equality, &key[1..]),
        Some(b'X') => (Anchor::Negation, &key[1..]),
        Some(b'+') => (Anchor::AddIfAbsent, &key[1..]),
        _ => return (None, key),
    };
    match rest.strip_prefix('(').and_then(|r| r.strip_suffix(')')) {
        Some(inner) if !inner.is_empty() => (Some(anchor), inner),
        _ => (None, key),
    }
}

/// The field name without any anchor.
pub fn bare(key: &str) -> &str {
    parse(key).1
}

/// Whether a pattern holds an anchor anywhere below it.
pub fn contains_anchor(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Object(map) => map
            .iter()
            .any(|(k, v)| parse(k).0.is_some() || contains_anchor(v)),
        serde_json::Value::Array(items) => items.iter().any(contains_anchor),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors_parse_and_plain_keys_stay_plain() {
        assert_eq!(parse("(name)"), (Some(Anchor::Condition), "name"));
        assert_eq!(parse("<(image)"), (Some(Anchor::Global), "image"));
        assert_eq!(parse("X(hostPath)"), (Some(Anchor::Negation), "hostPath"));
        assert_eq!(
            parse("+(nodeAffinity)"),
            (Some(Anchor::AddIfAbsent), "nodeAffinity")
        );
        assert_eq!(parse("Xname"), (None, "Xname"));
        assert_eq!(parse("()"), (None, "()"));
    }
}
