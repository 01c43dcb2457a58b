//! Small text forms that messages and pages in several layers write the same way.
//!
//! Depends on nothing in probe.

/// The name among `known` closest to `name` by edit distance, ignoring case, if one is
/// reasonably close (a third of the name's length, at least 3): what a "did you mean"
/// hint offers. On a tie the first of `known` wins.
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_ascii_lowercase();
    known
        .into_iter()
        .map(|k| (strsim::levenshtein(&lower, &k.to_ascii_lowercase()), k))
        .filter(|(distance, _)| *distance <= (lower.len() / 3).max(3))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, k)| k)
}

/// `n` with its digits in groups of three: `921600` as `921,600`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn digits_go_in_groups_of_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(921_600), "921,600");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }
}
