//! "Did you mean": the known name closest to a misspelt one, if any is
//! close. Jaro similarity above 0.7 is the measure and threshold clap uses
//! for misspelt flags, so drill names and flags are suggested alike.

/// How similar (0 to 1) a name must be to be suggested.
const THRESHOLD: f64 = 0.7;

/// The known name most similar to `wanted`, if it is similar enough; the
/// first of equals in `known`'s order.
pub fn closest<'k>(wanted: &str, known: impl IntoIterator<Item = &'k str>) -> Option<&'k str> {
    let mut best: Option<(f64, &str)> = None;
    for candidate in known {
        let score = strsim::jaro(wanted, candidate);
        if score > THRESHOLD && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, candidate));
        }
    }
    best.map(|(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::closest;

    const DRILLS: [&str; 3] = ["cp-recreate", "node-loss", "full-rebuild"];

    #[test]
    fn a_typo_gets_the_name_it_is_closest_to() {
        assert_eq!(closest("cp-recreat", DRILLS), Some("cp-recreate"));
        assert_eq!(closest("nodeloss", DRILLS), Some("node-loss"));
        assert_eq!(closest("full-rebuilt", DRILLS), Some("full-rebuild"));
    }

    #[test]
    fn nothing_alike_gets_no_suggestion() {
        assert_eq!(closest("upgrade-everything", DRILLS), None);
        assert_eq!(closest("x", DRILLS), None);
        assert_eq!(closest("cp-recreate", []), None);
    }
}
