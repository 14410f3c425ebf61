//! Typo tolerance: optimal-string-alignment distance (Levenshtein plus adjacent
//! transposition, each edit costing 1) between a query token and indexed terms.

use super::vocabulary::{signature, Vocabulary};

/// Largest distance at which `token` (already folded) matches a term: 0 for tokens of
/// at most 3 characters (short words are mostly function words, and one edit turns
/// them into unrelated words: "did" → "kid"), 1 up to 7 characters, 2 from 8.
pub fn max_distance(token: &str) -> usize {
    match token.chars().count() {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// Every term of `vocab` within distance `max` of `token`, as `(distance, term)` in
/// no particular order: the terms [`distance_within`] accepts, found without
/// computing the distance to terms whose length or characters rule them out.
pub fn near<'v>(vocab: &'v Vocabulary, token: &str, max: usize) -> Vec<(usize, &'v str)> {
    let a: Vec<char> = token.chars().collect();
    let sig = signature(&a);
    let mut rows = Rows::default();
    let mut out = Vec::new();
    for len in a.len().saturating_sub(max)..=a.len() + max {
        for (term, b, term_sig) in vocab.of_length(len) {
            let missing = (sig & !term_sig)
                .count_ones()
                .max((term_sig & !sig).count_ones());
            if missing as usize > max {
                continue;
            }
            if let Some(d) = osa_within(&a, b, max, &mut rows) {
                out.push((d, term));
            }
        }
    }
    out
}

/// Optimal-string-alignment distance between `a` and `b` (in characters), or `None`
/// when it exceeds `max` (computed with early exit, O(len·max) when lengths differ
/// little).
pub fn distance_within(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    osa_within(&a, &b, max, &mut Rows::default())
}

/// The three dynamic-programming rows of [`osa_within`], reused between calls.
#[derive(Default)]
struct Rows {
    prev2: Vec<usize>,
    prev: Vec<usize>,
    cur: Vec<usize>,
}

fn osa_within(a: &[char], b: &[char], max: usize, rows: &mut Rows) -> Option<usize> {
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let (n, m) = (a.len(), b.len());
    let Rows { prev2, prev, cur } = rows;
    prev2.clear();
    prev2.resize(m + 1, 0);
    prev.clear();
    prev.extend(0..=m);
    cur.clear();
    cur.resize(m + 1, 0);
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
        std::mem::swap(prev2, prev);
        std::mem::swap(prev, cur);
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
    fn near_finds_what_a_full_scan_finds() {
        let words = [
            "sqlite",
            "sqlit",
            "sqltie",
            "sqlitee",
            "postgres",
            "slqite",
            "qslite",
            "lite",
            "configuration",
            "confgiuration",
            "configurations",
            "café",
            "cafe",
            "caf",
            "東京",
            "東京都",
            "a",
            "ab",
            "ba",
        ];
        let vocab = Vocabulary::new(words.iter().map(|w| (*w).to_owned()).collect());
        for token in ["sqlite", "configuration", "cafe", "東京", "ab", "zz"] {
            for max in 0..=3 {
                let mut fast = near(&vocab, token, max);
                let mut full: Vec<(usize, &str)> = words
                    .iter()
                    .filter_map(|w| distance_within(token, w, max).map(|d| (d, *w)))
                    .collect();
                fast.sort_unstable();
                full.sort_unstable();
                assert_eq!(fast, full, "{token} {max}");
            }
        }
    }

    #[test]
    fn thresholds() {
        assert_eq!(max_distance("go"), 0);
        assert_eq!(max_distance("did"), 0);
        assert_eq!(max_distance("rust"), 1);
        assert_eq!(max_distance("sqlite"), 1);
        assert_eq!(max_distance("configuration"), 2);
    }
}
