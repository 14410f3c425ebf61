//! Words of folded text, as the keyword (BM25) postings of the conversations index and
//! the queries over them see it: maximal runs of alphanumeric characters
//! (`char::is_alphanumeric`, so `user_id` is `user` and `id`, `café` one word), with
//! English function words ([`STOP_WORDS`]) left out of postings and queries, and each
//! remaining word posted and searched as its English stem ([`stem`]).
//!
//! Text is expected folded already ([`crate::search::scan::fold`], DuckDB's `lower`),
//! so the same word in any case is one term.

/// Words shorter than this many characters are neither indexed nor searched.
pub const MIN_CHARS: usize = 2;
/// Words longer than this many bytes (hashes, base64, minified code) are counted in a
/// row's length but not indexed: they would bloat the term dictionary with terms no
/// one types.
pub const MAX_BYTES: usize = 40;

/// Every word of `text`, in order (what a row's BM25 length counts).
pub fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
}

/// Whether `word` (from [`words`]) goes into postings and queries: at least
/// [`MIN_CHARS`] characters, at most [`MAX_BYTES`] bytes, not a stop word.
pub fn is_term(word: &str) -> bool {
    word.len() <= MAX_BYTES && word.chars().nth(MIN_CHARS - 1).is_some() && !is_stop_word(word)
}

/// The term a word ([`is_term`]) is posted and searched as: its Snowball English
/// (Porter2) stem, so `running`, `runs` and `run` are one term (`rust-stemmers`, the
/// stemmer tantivy uses). Words without a Latin-script suffix the algorithm knows (names,
/// numbers, other scripts) come back unchanged. Deterministic, so a segment written
/// today and a query tomorrow agree; a change of stemmer is a change of the segment
/// format (`stores::conversations::index::segment::VERSION`).
///
/// Measured on LoCoMo (docs/performance.md, "Stemmed keyword leg and temporal
/// questions"): semantic-search's default turn R@5 71.5 → 74.4 %, session R@5 92.4 →
/// 93.6 % with stemmed postings against the words as written.
pub fn stem(word: &str) -> std::borrow::Cow<'_, str> {
    static STEM: std::sync::LazyLock<rust_stemmers::Stemmer> =
        std::sync::LazyLock::new(|| rust_stemmers::Stemmer::create(STEMMER.1));
    STEM.stem(word)
}

/// The algorithm of [`stem`] and the name the "Defaults" table of docs/performance.md
/// gives it (`tests/defaults.rs` compares them).
pub const STEMMER: (&str, rust_stemmers::Algorithm) =
    ("snowball english", rust_stemmers::Algorithm::English);

/// The terms the conversations index's keyword leg scores for `query`: its [`words`]
/// folded as the index folds text ([`crate::search::scan::fold`]), those [`is_term`]
/// keeps, as their [`stem`]s, each stem once, at most `max` of them, in query order.
pub fn query_terms(query: &str, max: usize) -> Vec<String> {
    let mut folded = Vec::with_capacity(query.len());
    crate::search::scan::fold(query, &mut folded);
    let folded = String::from_utf8_lossy(&folded);
    let mut terms: Vec<String> = Vec::new();
    for w in words(&folded).filter(|w| is_term(w)) {
        if terms.len() == max {
            break;
        }
        let s = stem(w);
        if !terms.iter().any(|t| *t == s) {
            terms.push(s.into_owned());
        }
    }
    terms
}

/// The terms every text holding `pattern` must hold: `pattern` is folded text (as
/// [`query_terms`] folds) read as a `LIKE` pattern (`%` any run, `_` any one
/// character, no escape), and a word of it counts only when a literal character that is
/// neither alphanumeric nor a wildcard stands on each side — then it is a whole word of
/// any text the pattern matches, so that text's postings hold its [`stem`] when it
/// [`is_term`]. The first and last words of a pattern may be parts of longer words and
/// do not count. Each term once, sorted.
///
/// A search can answer "no row" without scanning when no row holds all of them (the
/// team archive's `ILIKE` leg, [`crate::archive::search`]).
pub fn whole_words_of_pattern(pattern: &str) -> Vec<String> {
    let separator = |c: char| !c.is_alphanumeric() && c != '%' && c != '_';
    let mut terms = Vec::new();
    let mut before: Option<char> = None;
    let mut rest = pattern;
    while let Some(start) = rest.find(char::is_alphanumeric) {
        if let Some(c) = rest[..start].chars().next_back() {
            before = Some(c);
        }
        let word_and_after = &rest[start..];
        let end = word_and_after
            .find(|c: char| !c.is_alphanumeric())
            .unwrap_or(word_and_after.len());
        let word = &word_and_after[..end];
        let after = word_and_after[end..].chars().next();
        if before.is_some_and(separator) && after.is_some_and(separator) && is_term(word) {
            terms.push(stem(word).into_owned());
        }
        before = word.chars().next_back();
        rest = &word_and_after[end..];
    }
    terms.sort_unstable();
    terms.dedup();
    terms
}

/// English function words, sorted: left out of memo-search's `bm25` and `fuzzy` legs'
/// queries (and never expanded by `fuzzy`) while the query has at least one other
/// word, and out of the conversations index's postings ([`is_term`]). Words that are
/// also names or content words (`may`, `will`, `us`, `it`, `can`) are not in the
/// list, so proper-noun and exact-phrase questions keep them.
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "after",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "both",
    "but",
    "by",
    "could",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "during",
    "each",
    "for",
    "from",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "its",
    "itself",
    "ll",
    "m",
    "me",
    "my",
    "myself",
    "of",
    "on",
    "or",
    "our",
    "ours",
    "ourselves",
    "re",
    "s",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "to",
    "too",
    "ve",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
];

/// Whether a folded token is one of [`STOP_WORDS`].
pub fn is_stop_word(token: &str) -> bool {
    STOP_WORDS.binary_search(&token).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patterns_whole_words_are_those_with_a_literal_separator_on_each_side() {
        // `how` and `runtime` may be parts of longer words; `the` is a stop word.
        assert_eq!(
            whole_words_of_pattern("how do we handle serde errors in the tokio runtime"),
            ["error", "handl", "serd", "tokio"]
        );
        // Beside a wildcard a word may continue in the text: `_` is any character.
        assert_eq!(whole_words_of_pattern("a flaky_test deploy."), ["deploy"]);
        assert_eq!(
            whole_words_of_pattern("x cache%deploy y"),
            Vec::<String>::new()
        );
        assert_eq!(whole_words_of_pattern(" cache "), ["cach"]);
        // One word, or none, bounded by the pattern's ends: nothing is required.
        assert!(whole_words_of_pattern("serde").is_empty());
        assert!(whole_words_of_pattern("").is_empty());
        assert!(whole_words_of_pattern(" % _ ").is_empty());
        // Words too short or too long to be terms are not required.
        let long = "x".repeat(MAX_BYTES + 1);
        assert!(whole_words_of_pattern(&format!(" a {long} ")).is_empty());
        // Non-Latin words are whole words too (`char::is_alphanumeric`).
        assert_eq!(whole_words_of_pattern("- 東京 -"), ["東京"]);
    }

    #[test]
    fn every_text_holding_a_pattern_holds_its_whole_words_terms() {
        let texts = [
            "we need to fix the flaky deploy test, then cache it",
            "(serde) errors: in the tokio runtime, again",
            "naïve straße — 東京 🎉 c:\\dir\\file",
        ];
        let mut rows = crate::search::postings::RowTerms::default();
        for text in texts {
            let (_, terms) = rows.of(text);
            let chars: Vec<(usize, char)> = text.char_indices().collect();
            for (i, &(start, _)) in chars.iter().enumerate() {
                for &(end, _) in &chars[i..] {
                    let pattern = &text[start..end];
                    // The same span with every third character a wildcard matches too.
                    let wild: String = pattern
                        .chars()
                        .enumerate()
                        .map(|(k, c)| if k % 3 == 2 { '_' } else { c })
                        .collect();
                    for p in [pattern, wild.as_str()] {
                        for term in whole_words_of_pattern(p) {
                            assert!(
                                terms.iter().any(|(t, _)| *t == term),
                                "{p:?} in {text:?}: {term} is not among its terms"
                            );
                        }
                    }
                }
            }
        }
    }
}
