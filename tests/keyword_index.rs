//! The BM25 keyword postings of the conversations index score exactly as BM25 computed
//! straight from DuckDB's rows: a reference here folds and tokenizes every row of
//! `all_conversations` (each word as its stem), counts the statistics over all of them
//! and ranks with the formula written out again, and [`Index::keyword`] must return the
//! same rows in the same order with the same scores — on a generated store across several segments, and
//! on the whole real corpus. After a rewrite (tombstones), no masked row comes back.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use skills::bench::gen::{self, Spec};
use skills::cancel::Cancel;
use skills::search::scan::fold;
use skills::search::words::{is_term, stem, words};
use skills::stores::conversations::index::{Hit, Index, KeywordQuery};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

/// One row of the table, as the reference needs it.
struct Row {
    key: (i64, String, String, String),
    role: String,
    injected: bool,
    tf: HashMap<String, u32>,
    len: u64,
}

fn table(db: &Path) -> Vec<Row> {
    let conn = duckdb::Connection::open_with_flags(
        db,
        duckdb::Config::default()
            .access_mode(duckdb::AccessMode::ReadOnly)
            .unwrap(),
    )
    .unwrap();
    let mut stmt = conn
        .prepare(
            "SELECT epoch_us(created), source, conversation_id, message_id, role, \
             is_injected IS TRUE, content FROM all_conversations",
        )
        .unwrap();
    let mut rows = stmt.query([]).unwrap();
    let mut out = Vec::new();
    while let Some(r) = rows.next().unwrap() {
        let content: String = r.get(6).unwrap();
        let mut folded = Vec::new();
        fold(&content, &mut folded);
        let text = String::from_utf8(folded).unwrap();
        let mut tf: HashMap<String, u32> = HashMap::new();
        let mut len = 0u64;
        for w in words(&text) {
            len += 1;
            if is_term(w) {
                *tf.entry(stem(w).into_owned()).or_default() += 1;
            }
        }
        out.push(Row {
            key: (
                r.get(0).unwrap(),
                r.get(1).unwrap(),
                r.get(2).unwrap(),
                r.get(3).unwrap(),
            ),
            role: r.get(4).unwrap(),
            injected: r.get(5).unwrap(),
            tf,
            len,
        });
    }
    out
}

/// BM25 (k1 1.2, b 0.4, Lucene's idf, length saturated at `u16::MAX`) over `rows`,
/// the best `limit` rows passing `role`, best first, ties in search order.
fn reference(
    rows: &[Row],
    terms: &[String],
    role: Option<&str>,
    limit: usize,
) -> Vec<(f64, (i64, String, String, String))> {
    let n = rows.len() as f64;
    let total: u64 = rows.iter().map(|r| r.len).sum();
    let avg = if rows.is_empty() || total == 0 {
        1.0
    } else {
        total as f64 / n
    };
    let idfs: Vec<(String, f64)> = terms
        .iter()
        .filter_map(|t| {
            let df = rows.iter().filter(|r| r.tf.contains_key(t)).count() as f64;
            (df > 0.0).then(|| (t.clone(), (1.0 + (n - df + 0.5) / (df + 0.5)).ln()))
        })
        .collect();
    let mut scored: Vec<(f64, (i64, String, String, String))> = rows
        .iter()
        .filter(|r| role.is_none_or(|x| r.role == x && !(x == "user" && r.injected)))
        .filter_map(|r| {
            let len = f64::from(u16::try_from(r.len).unwrap_or(u16::MAX));
            let mut score = 0.0;
            let mut any = false;
            for (t, idf) in &idfs {
                if let Some(&tf) = r.tf.get(t) {
                    any = true;
                    let tf = f64::from(tf);
                    score += idf * tf * 2.2 / (tf + 1.2 * (1.0 - 0.4 + 0.4 * len / avg));
                }
            }
            any.then(|| (score, r.key.clone()))
        })
        .collect();
    scored.sort_by(|a, b| {
        b.0.total_cmp(&a.0)
            .then(b.1 .0.cmp(&a.1 .0))
            .then_with(|| (&a.1 .1, &a.1 .2, &a.1 .3).cmp(&(&b.1 .1, &b.1 .2, &b.1 .3)))
    });
    scored.truncate(limit);
    scored
}

fn key_of(h: &Hit) -> (i64, String, String, String) {
    (
        h.created_us,
        h.source.clone(),
        h.conversation_id.clone(),
        h.message_id.clone(),
    )
}

fn terms_of(query: &str) -> Vec<String> {
    let mut folded = Vec::new();
    fold(query, &mut folded);
    let text = String::from_utf8(folded).unwrap();
    let mut out: Vec<String> = Vec::new();
    for w in words(&text).filter(|w| is_term(w)) {
        let s = stem(w);
        if !out.iter().any(|t| *t == s) {
            out.push(s.into_owned());
        }
    }
    out
}

/// Compares the index with the reference for every query × role × limit; returns
/// how many comparisons had at least one row.
fn assert_same(db: &Path, what: &str, queries: &[&str]) -> usize {
    let index = Index::open(db).unwrap_or_else(|e| panic!("{what}: index not usable: {e}"));
    assert!(index.has_postings(), "{what}: segments without postings");
    let rows = table(db);
    let stop = Cancel::new();
    let mut nonempty = 0;
    for query in queries {
        let terms = terms_of(query);
        for role in [None, Some("user"), Some("assistant")] {
            for limit in [1, 10, 200] {
                let q = KeywordQuery {
                    role,
                    ..KeywordQuery::new(&terms, limit, &stop)
                };
                let got = index.keyword(&q).unwrap().unwrap();
                let want = reference(&rows, &terms, role, limit);
                let got_keys: Vec<_> = got.iter().map(|(_, h)| key_of(h)).collect();
                let want_keys: Vec<_> = want.iter().map(|(_, k)| k.clone()).collect();
                assert_eq!(
                    got_keys, want_keys,
                    "{what}: `{query}` role {role:?} limit {limit}: rows differ"
                );
                for ((a, _), (b, _)) in got.iter().zip(&want) {
                    assert!(
                        (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                        "{what}: `{query}`: score {a} vs {b}"
                    );
                }
                nonempty += usize::from(!got.is_empty());
            }
        }
    }
    nonempty
}

fn open(dir: &Path) -> ConversationStore {
    ConversationStore::open_rw(&StorePaths::in_dir(dir).conversations).unwrap()
}

const QUERIES: &[&str] = &[
    "serde errors in the tokio runtime",
    "persofi",
    "How do we handle async fn?",
    "user_id migration",
    "café CAFÉ",
    "the of and",
    "zqxjvkw",
];

/// A closed store of `messages` generated messages, written `batch` at a time: its
/// folder and its database file.
fn generated(messages: usize, batch: usize) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let store = open(tmp.path());
    gen::fill_store(&store, Spec::new(messages), batch).unwrap();
    store.close().unwrap();
    let db = StorePaths::in_dir(tmp.path()).conversations;
    (tmp, db)
}

#[test]
fn keyword_scores_equal_bm25_from_the_table_across_segments() {
    let (tmp, db) = generated(2_000, 500);
    let dir = tmp.path();
    let found = assert_same(&db, "one segment", QUERIES);
    assert!(found >= 30, "the probe queries found too little: {found}");
    for round in 0..3 {
        let store = open(dir);
        gen::fill_store(
            &store,
            Spec {
                messages: 300,
                seed: 40 + round,
            },
            100,
        )
        .unwrap();
        store.close().unwrap();
    }
    let m = skills::stores::conversations::index::Manifest::read(
        &skills::stores::conversations::index::dir_of(&db),
    )
    .unwrap();
    assert!(
        m.segments.len() >= 2,
        "appends made {} segment(s)",
        m.segments.len()
    );
    assert!(m.segments.iter().all(|s| s.tombstones.is_none()));
    assert_same(&db, "several segments", QUERIES);
}

#[test]
fn keyword_scores_equal_bm25_from_the_table_on_the_real_corpus() {
    let Some(corpus) = common::corpus() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let store = open(&data);
    let sources: Vec<PathBuf> = std::fs::read_dir(&corpus)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().is_some_and(|n| n != "locomo"))
        .collect();
    skills::ingest::ingest_paths(&store, &sources, &mut |_, _| {});
    store.close().unwrap();
    let found = assert_same(
        &StorePaths::in_dir(&data).conversations,
        "real corpus",
        &[
            "what did we decide about the login flow",
            "error handling in rust",
            "docker compose postgres",
            "Refactor the parser tests",
        ],
    );
    assert!(found >= 20, "the corpus queries found too little: {found}");
}

#[test]
fn a_touched_conversation_comes_back_once_from_its_new_segment() {
    let (tmp, db) = generated(500, 500);
    let dir = tmp.path();
    // Add two messages to a stored conversation: its old rows are masked and all of
    // its rows written again into a new segment.
    let rows = table(&db);
    let victim = &rows[rows.len() / 2];
    let (source, conv) = (victim.key.1.clone(), victim.key.2.clone());
    let mut msgs: Vec<skills::model::Message> = gen::Generator::new(Spec::new(3))
        .next()
        .unwrap()
        .into_iter()
        .take(2)
        .collect();
    for (i, m) in msgs.iter_mut().enumerate() {
        m.source.clone_from(&source);
        m.conversation_id.clone_from(&conv);
        m.message_id = format!("new-{i}");
        m.content = format!("quokkarewrite number {i}");
    }
    let store = open(dir);
    store.insert(&msgs).unwrap();
    store.close().unwrap();
    let m = skills::stores::conversations::index::Manifest::read(
        &skills::stores::conversations::index::dir_of(&db),
    )
    .unwrap();
    assert!(m.segments.iter().any(|s| s.tombstones.is_some()), "{m:?}");
    let index = Index::open(&db).unwrap();
    let stop = Cancel::new();
    let old_terms: Vec<String> = victim.tf.keys().cloned().collect();
    assert!(!old_terms.is_empty());
    let q = KeywordQuery {
        conversation_id: Some(&conv),
        ..KeywordQuery::new(&old_terms, 500, &stop)
    };
    let got: Vec<_> = index
        .keyword(&q)
        .unwrap()
        .unwrap()
        .iter()
        .map(|(_, h)| key_of(h))
        .collect();
    let mut unique = got.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), got.len(), "a masked row came back: {got:?}");
    let in_conv: Vec<Row> = table(&db)
        .into_iter()
        .filter(|r| r.key.2 == conv && r.key.1 == source)
        .collect();
    let mut want: Vec<_> = reference(&in_conv, &old_terms, None, 500)
        .into_iter()
        .map(|(_, k)| k)
        .collect();
    want.sort();
    assert_eq!(
        unique, want,
        "the conversation's rows holding its old words"
    );
    let new_terms = vec![stem("quokkarewrite").into_owned()];
    let q = KeywordQuery {
        terms: &new_terms,
        conversation_id: None,
        ..q
    };
    assert_eq!(index.keyword(&q).unwrap().unwrap().len(), 2);
}

/// `Index::around` names the rows the keyword leg scores a row with: up to `window`
/// non-injected rows of the same conversation on each side, nearest first — checked
/// against the table's rows in key order, on a one-segment generated store, for every
/// row whose neighbours lie within `NEIGHBOUR_GAP` rows of it.
#[test]
fn around_names_the_nearest_rows_of_the_same_conversation() {
    use skills::stores::conversations::index::NEIGHBOUR_GAP;
    let (_tmp, db) = generated(2_000, 2_000);
    let index = Index::open(&db).unwrap();
    let mut rows = table(&db);
    rows.sort_by(|a, b| a.key.cmp(&b.key));
    let mut checked = 0;
    for window in [1usize, 2] {
        for (at, row) in rows.iter().enumerate().step_by(7) {
            let (created, source, conversation, message) = &row.key;
            let same = |r: &Row| r.key.1 == *source && r.key.2 == *conversation && !r.injected;
            // Up to `window` rows each side, with their distance in rows from `at`.
            let before: Vec<(usize, &Row)> = rows[..at]
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, r)| same(r))
                .take(window)
                .map(|(i, r)| (at - i, r))
                .collect();
            let after: Vec<(usize, &Row)> = rows[at + 1..]
                .iter()
                .enumerate()
                .filter(|(_, r)| same(r))
                .take(window)
                .map(|(i, r)| (i + 1, r))
                .collect();
            if before.iter().chain(&after).any(|(d, _)| *d > NEIGHBOUR_GAP) {
                continue;
            }
            let mut want: Vec<String> = before
                .iter()
                .chain(&after)
                .map(|(_, r)| r.key.3.clone())
                .collect();
            let mut got: Vec<String> = index
                .around(*created, source, conversation, message, window)
                .unwrap()
                .into_iter()
                .inspect(|h| {
                    assert_eq!((&h.source, &h.conversation_id), (source, conversation));
                })
                .map(|h| h.message_id)
                .collect();
            assert!(got.len() <= 2 * window);
            want.sort();
            got.sort();
            assert_eq!(
                got, want,
                "row {message} of {conversation}, window {window}"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} rows checked");
    // A key no row has: no neighbours.
    assert!(index
        .around(0, "none", "none", "none", 2)
        .unwrap()
        .is_empty());
}
