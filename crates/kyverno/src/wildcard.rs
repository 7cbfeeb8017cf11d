//! Kyverno's wildcard matching (`ext/wildcard`): `*` is any run of characters,
//! `?` exactly one, every other character itself. Used by names, namespaces,
//! kinds, label values, string patterns and the `In`-family operators.

/// Whether `text` matches the wildcard `pattern`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Greedy matching with one back-track point for the last `*` seen: linear
    // in practice and never recursive, so a hostile pattern cannot blow the stack.
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || (p[pi] != '*' && p[pi] == t[ti])) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Whether a string holds a wildcard character.
pub fn has_wildcard(text: &str) -> bool {
    text.contains('*') || text.contains('?')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn star_question_and_literals() {
        assert!(matches("*", ""));
        assert!(matches("prod-worker-*", "prod-worker-1"));
        assert!(!matches("prod-worker-*", "autoscale-cx43-abc"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("*-cx43-*", "autoscale-cx43-59ee3c84"));
        assert!(!matches("abc", "abcd"));
    }
}
