//! Typo tolerance: optimal-string-alignment distance (Levenshtein plus adjacent
//! transposition, each edit costing 1) between a query token and indexed terms.

/// Largest distance at which `token` (already folded) matches a term: 0 for tokens of
/// at most 2 characters, 1 up to 7 characters, 2 from 8 characters.
pub fn max_distance(token: &str) -> usize {
    match token.chars().count() {
        0..=2 => 0,
        3..=7 => 1,
        _ => 2,
    }
}

/// Optimal-string-alignment distance between `a` and `b` (in characters), or `None`
/// when it exceeds `max` (computed with early exit, O(len·max) when lengths differ
/// little).
pub fn distance_within(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let (n, m) = (a.len(), b.len());
    let mut prev2 = vec![0usize; m + 1];
    let mut prev: Vec<usize> = (0..=m).collect();
    let mut cur = vec![0usize; m + 1];
    for i in 1..=n {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        if row_min > max {
            return None;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    let d = prev[m];
    (d <= max).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance_within("sqlite", "sqlite", 1), Some(0));
        assert_eq!(distance_within("sqlite", "sqlit", 1), Some(1));
        assert_eq!(
            distance_within("sqlite", "sqltie", 1),
            Some(1),
            "transposition counts 1"
        );
        assert_eq!(distance_within("sqlite", "sqlitee", 1), Some(1));
        assert_eq!(distance_within("sqlite", "postgres", 2), None);
        assert_eq!(
            distance_within("configuration", "confgiuration", 2),
            Some(1)
        );
        assert_eq!(distance_within("ab", "ba", 0), None);
        assert_eq!(distance_within("", "", 0), Some(0));
    }

    #[test]
    fn thresholds() {
        assert_eq!(max_distance("go"), 0);
        assert_eq!(max_distance("sqlite"), 1);
        assert_eq!(max_distance("configuration"), 2);
    }
}
