//! Retrieval machinery: in-memory indexes and the scoring over them, with no knowledge
//! of skills, engines or any store's SQL schema.
//!
//! Owns:
//! - [`bm25`]: FTS5's `bm25()` over postings held in memory (bit-identical scores);
//!   built from postings a store reads out of its own FTS5 tables.
//! - [`vectors`]: a matrix of unit vectors, exact dot products and the top n of them;
//!   [`quantized`]: its 8-bit copy with proven error bounds, for pruning; [`bits`]:
//!   1-bit codes scored against a 4-bit query, an approximate first pass.
//! - [`filter_columns`]: per-row metadata laid out for type, time and path filters.
//! - [`vocabulary`] and [`fuzzy`]: indexed terms prepared for typo-tolerant lookups.
//! - [`scan`]: DuckDB's `ILIKE` as a newest-first substring scan over folded text, with
//!   a 4-gram block filter (search-conversations' index path).
//! - [`words`] and [`postings`]: the words of folded text and BM25 postings over them,
//!   encoded to be read in place (the keyword postings of the conversations index).
//!
//! Must not touch: `host`, `engines`, `stores` or `ingest` (a test in
//! `tests/architecture.rs` checks it). Stores feed these structures from their data
//! (e.g. `stores::memories::SearchIndex`); engines decide what a skill's query means
//! and call them. Nothing here opens a file or a database connection.

pub mod bits;
pub mod bm25;
pub mod filter_columns;
pub mod fuzzy;
pub mod postings;
pub mod quantized;
pub mod scan;
pub mod vectors;
pub mod vocabulary;
pub mod words;
