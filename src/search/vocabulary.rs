//! An FTS5 vocabulary (in the memories store, `memories_vocab` terms) prepared for
//! edit-distance lookups: each term's characters, its character count and a character-set signature, and
//! the terms grouped by character count. Lets a typo search skip, without computing
//! a distance, every term too long, too short or made of too many other characters.
//!
//! Size: 4 bytes per character plus ~20 per term (~3 MB for 60k terms).

/// The indexed terms with what edit-distance lookups need; see the module docs.
#[derive(Debug)]
pub struct Vocabulary {
    /// Terms in the order given (the store's vocabulary order).
    terms: Vec<String>,
    /// Every term's characters, concatenated; term `t`'s are
    /// `chars[starts[t]..starts[t + 1]]`.
    chars: Vec<char>,
    starts: Vec<u32>,
    /// Per term: [`signature`] of its characters.
    signatures: Vec<u64>,
    /// `by_length[n]`: the terms of `n` characters, in vocabulary order.
    by_length: Vec<Vec<u32>>,
}

/// A set of characters folded to 64 bits (bit `c mod 64` for each character `c`).
/// For two words, `popcount(a & !b)` is at most the number of characters of the first
/// that an edit script (insertions, deletions, substitutions, transpositions) must
/// remove or replace, so it bounds any such edit distance from below, as does
/// `popcount(b & !a)`; folding only merges bits, which keeps the bound.
pub fn signature(chars: &[char]) -> u64 {
    chars.iter().fold(0, |s, &c| s | 1 << (u32::from(c) % 64))
}

impl Vocabulary {
    /// Prepares `terms` (in vocabulary order).
    pub fn new(terms: Vec<String>) -> Self {
        let mut chars = Vec::new();
        let mut starts = vec![0u32];
        let mut signatures = Vec::with_capacity(terms.len());
        let mut by_length: Vec<Vec<u32>> = Vec::new();
        for (t, term) in terms.iter().enumerate() {
            let begin = chars.len();
            chars.extend(term.chars());
            let n = chars.len() - begin;
            signatures.push(signature(&chars[begin..]));
            starts.push(u32::try_from(chars.len()).unwrap_or(u32::MAX));
            if by_length.len() <= n {
                by_length.resize_with(n + 1, Vec::new);
            }
            by_length[n].push(u32::try_from(t).unwrap_or(u32::MAX));
        }
        Self {
            terms,
            chars,
            starts,
            signatures,
            by_length,
        }
    }

    /// Number of terms.
    pub fn len(&self) -> usize {
        self.terms.len()
    }

    /// True when there are no terms.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The terms, in vocabulary order.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Terms of `n` characters: `(term, its characters, its signature)`.
    pub fn of_length(&self, n: usize) -> impl Iterator<Item = (&str, &[char], u64)> {
        self.by_length.get(n).into_iter().flatten().map(|&t| {
            let t = t as usize;
            let chars = &self.chars[self.starts[t] as usize..self.starts[t + 1] as usize];
            (self.terms[t].as_str(), chars, self.signatures[t])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_by_character_count() {
        let v = Vocabulary::new(vec![
            "café".into(),
            "cafe".into(),
            "東京".into(),
            "a".into(),
        ]);
        let four: Vec<&str> = v.of_length(4).map(|t| t.0).collect();
        assert_eq!(four, ["café", "cafe"]);
        assert_eq!(v.of_length(2).next().map(|t| t.1.len()), Some(2));
        assert_eq!(v.of_length(9).count(), 0);
        assert_eq!(v.len(), 4);
        let s = signature(&['a', 'b']);
        assert_eq!((s & !signature(&['a'])).count_ones(), 1);
    }
}
