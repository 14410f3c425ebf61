//! Words of folded text, as the keyword (BM25) postings of the conversations index and
//! the queries over them see it: maximal runs of alphanumeric characters
//! (`char::is_alphanumeric`, so `user_id` is `user` and `id`, `café` one word), with
//! English function words ([`STOP_WORDS`]) left out of postings and queries.
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
