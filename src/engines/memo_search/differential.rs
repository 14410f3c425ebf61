//! Differential test of the scorers: every query, filter and mode runs through
//! [`Scorer::Fast`] (the store's in-memory postings; the vec leg's 8-bit first pass)
//! and [`Scorer::Reference`] (SQLite's `MATCH` and `bm25()`; one exact pass over every
//! vector), and both must give the same rows in the same order with bit-identical
//! scores (`f64::to_bits`), leg by leg and after fusion, plus identical engine output.
//!
//! Stores: 3,000 generated memories plus hand-made traps (accents, case, scripts,
//! punctuation, a term repeated past the packed count widths, rewritten memories,
//! tied scores); and the real memory corpus (`$SKILLS_CORPUS_DIR/memories`) with the
//! bundled sample, imported as the integration tests do. With the embedding model
//! (`$SKILLS_MODEL_DIR`) the vec leg takes part in hybrid.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{rank, search, vec_leg_until, Filter, Leg, Mode, Request, Scorer};
use crate::bench::gen::{self, Spec};
use crate::cancel::Cancel;
use crate::embed::Embedder;
use crate::ingest::memories::import_paths_with;
use crate::stores::memories::fts::Table;
use crate::stores::memories::{Memory, MemoryStore};

fn now() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-07-03T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn at(t: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(t).unwrap().with_timezone(&Utc)
}

fn trap(key: &str, title: &str, tags: &[&str], body: &str, updated: &str) -> Memory {
    Memory {
        id: Memory::stable_id(key),
        title: title.into(),
        kind: "decision".into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        created: at("2025-01-01T00:00:00Z"),
        updated: at(updated),
        body: body.into(),
        files_read: vec!["src/serde_glue.rs".into()],
        files_modified: vec![],
        origin: None,
    }
}

/// Memories built to trip a re-implementation of FTS5.
fn traps() -> Vec<Memory> {
    let many = "serde ".repeat(300);
    let mut v = vec![
        trap(
            "t-accents",
            "Décision café CAFÉ naïve",
            &["résumé", "Straße"],
            "Une décision prise à Zürich: café crème, ÉLÈVE, Ångström.",
            "2025-02-01T10:00:00Z",
        ),
        trap(
            "t-scripts",
            "Σοφία ΣΟΦΙΑ σοφίας 東京 🚀",
            &["ǅemal", "İstanbul"],
            "Kelvin sign K, ﬁle ligature, ＦＵＬＬ width, Ⅻ roman, Ⓐ circled.",
            "2025-02-02T10:00:00Z",
        ),
        trap(
            "t-punct",
            "wrong-book don't 50% off",
            &["user_id", "a:b"],
            "src/main.py user@example.com AND OR NOT NEAR(a b) * ( title:x \"quoted\"",
            "2025-02-03T10:00:00Z",
        ),
        trap(
            "t-wide",
            &format!("serde {}", "serde ".repeat(260)),
            &["serde"; 1],
            &many,
            "2025-02-04T10:00:00Z",
        ),
        trap(
            "t-long-body",
            "tokio runtime",
            &["tokio"],
            &"tokio runtime errors ".repeat(70_000),
            "2025-02-05T10:00:00Z",
        ),
        trap("t-empty", "Empty body", &[], "", "2025-02-06T10:00:00Z"),
    ];
    // Identical content and `updated`: equal bm25, the tie-break on id decides.
    for i in 0..4 {
        v.push(trap(
            &format!("t-tie-{i}"),
            "serde tokio tie",
            &["tie"],
            "handle serde errors in the tokio runtime",
            "2025-03-01T00:00:00Z",
        ));
    }
    v
}

/// The corpus's memories (`$SKILLS_CORPUS_DIR/memories`, default beside the clone),
/// or `None` after recording the test as not run.
fn corpus_dir() -> Option<PathBuf> {
    let base = crate::settings::corpus_dir()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus"));
    let dir = base.join("memories");
    if !dir.is_dir() {
        crate::not_run::not_run(&format!(
            "no corpus at {} (set {})",
            base.display(),
            crate::settings::CORPUS_DIR.name
        ));
        return None;
    }
    Some(dir)
}

fn embed_all(store: &MemoryStore, embedder: Option<&Embedder>) {
    if let Some(e) = embedder {
        // As imports do: one vector per chunk, so long memories hold several.
        crate::ingest::memories::embed_missing(store, e).unwrap();
    }
}

fn generated(embedder: Option<&Embedder>) -> MemoryStore {
    let store = MemoryStore::open_in_memory().unwrap();
    for m in gen::memories(Spec {
        messages: 3000,
        seed: 0x5EED,
    }) {
        store.upsert(&m).unwrap();
    }
    for m in traps() {
        store.upsert(&m).unwrap();
    }
    // Rewritten memories: FTS5 deletes and re-inserts their rows (totals, docsize).
    for mut m in traps().into_iter().take(3) {
        m.body.push_str(" rewritten once");
        store.upsert(&m).unwrap();
    }
    embed_all(&store, embedder);
    store
}

fn corpus(dir: &Path, embedder: Option<&Embedder>) -> MemoryStore {
    let dir = dir.to_path_buf();
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/sample/memories");
    let store = MemoryStore::open_in_memory().unwrap();
    // As `skills memo import` does, without embedding (that is `embed_all`'s part).
    import_paths_with(&store, &[dir, sample], None).unwrap();
    embed_all(&store, embedder);
    store
}

/// Queries: fixed ones (OR fallbacks, Unicode, punctuation, absent words, typos), and
/// from the store itself: terms at every document frequency and titles (AND hits).
fn queries(store: &MemoryStore) -> Vec<String> {
    let mut q: Vec<String> = [
        "how do we handle serde errors in the tokio runtime",
        "serde",
        "the",
        "sqlite zebracornish",
        "zqxjvkw",
        "zqxjvkw zebracornish",
        "décision",
        "decision cafe",
        "CAFÉ naïve",
        "Straße strasse",
        "ΣΟΦΙΑ σοφια",
        "東京 🚀",
        "İstanbul ǅemal",
        "ﬁle ＦＵＬＬ Ⅻ Ⓐ K",
        "wrong-book",
        "don't",
        "50%",
        "\"",
        "src/main.py",
        "user@example.com",
        "AND OR NOT",
        "NEAR(a b)",
        "*",
        "a:b title:x (",
        "user_id",
        "defensiev fallbakcs",
        "sqlit serd tokoi",
        "runtime errors tokio",
        "serde tokio tie",
        "python virtual environment setup",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    let conn = store.lock();
    let mut stmt = conn
        .prepare("SELECT term, doc FROM memories_vocab")
        .unwrap();
    let vocab: Vec<(String, i64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (lo, hi) in [(1, 1), (2, 4), (5, 49), (50, 499), (500, i64::MAX)] {
        let bucket: Vec<&String> = vocab
            .iter()
            .filter(|(_, df)| (lo..=hi).contains(df))
            .map(|(t, _)| t)
            .collect();
        let step = (bucket.len() / 6).max(1);
        q.extend(bucket.iter().step_by(step).take(6).map(|t| (*t).clone()));
        // Two terms of the bucket together: AND and OR both exercised.
        if bucket.len() > 2 {
            q.push(format!("{} {}", bucket[0], bucket[bucket.len() / 2]));
        }
    }
    let mut stmt = conn
        .prepare("SELECT title FROM memories WHERE rowid % 97 = 1 ORDER BY rowid LIMIT 12")
        .unwrap();
    let titles: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for t in titles {
        q.push(format!("{t} zqxjvkw"));
        q.push(t);
    }
    q.push((0..80).map(|i| format!("w{i} ")).collect::<String>() + "serde");
    q
}

fn filters() -> Vec<Value> {
    vec![
        json!({}),
        json!({"type": "decision"}),
        json!({"type": "feedback"}),
        json!({"date_from": "2025-01-01", "date_to": "2025-03-31"}),
        json!({"date_to": "2024-06-30"}),
        json!({"file": "src/s"}),
        json!({"type": "note", "when": "last year"}),
        json!({"type": "no-such-type"}),
    ]
}

fn request(query: &str, mode: &str, filter: &Value, limit: i64, scorer: Scorer) -> Request {
    let mut args =
        json!({"query": query, "mode": mode, "limit": limit, "explain": true, "body_chars": 40});
    if let (Some(a), Some(f)) = (args.as_object_mut(), filter.as_object()) {
        a.extend(f.clone());
    }
    let mut req = Request::from_args(&args, now()).unwrap();
    req.scorer = scorer;
    req
}

/// `(rowid, score bits)` of a leg's whole ranking.
fn bits(ranked: &[(i64, f64)]) -> Vec<(i64, u64)> {
    ranked.iter().map(|(r, s)| (*r, s.to_bits())).collect()
}

#[derive(Default, Debug)]
struct Counts {
    expansions: usize,
    leg_calls: usize,
    vec_calls: usize,
    rows: usize,
    /// Legs that ran a disjunction (bm25, fuzzy) over more than one term.
    or_queries: usize,
    searches: usize,
}

fn compare_store(name: &str, store: &MemoryStore, embedder: Option<&Embedder>) -> Counts {
    let mut n = Counts::default();
    let queries = queries(store);
    let model = embedder.map(|e| (e.name(), e.dim()));
    {
        let conn = store.lock();
        let index = store.search_index(&conn, model).unwrap();
        assert!(
            index.fts(&conn).unwrap().is_some(),
            "{name}: in-memory postings unavailable"
        );
        let tokens = |q: &str| {
            let mut t = super::fold_tokens(q).unwrap();
            t.truncate(super::MAX_TOKENS);
            t
        };
        // Fuzzy expansions: the length/character prefilter finds exactly what a scan
        // of the whole vocabulary with `distance_within` finds.
        let vocab = index.vocab(&conn).unwrap();
        for token in queries.iter().flat_map(|q| tokens(q)) {
            for max in [crate::search::fuzzy::max_distance(&token), 2] {
                let mut fast = crate::search::fuzzy::near(vocab, &token, max);
                let mut full: Vec<(usize, &str)> = vocab
                    .terms()
                    .iter()
                    .filter_map(|t| {
                        crate::search::fuzzy::distance_within(&token, t, max)
                            .map(|d| (d, t.as_str()))
                    })
                    .collect();
                fast.sort_unstable();
                full.sort_unstable();
                assert_eq!(
                    fast, full,
                    "{name}: fuzzy expansions of `{token}` within {max}"
                );
                n.expansions += 1;
            }
        }
        // The per-search row mask equals the per-row filter, for every filter set.
        let meta = index.rows();
        for filter in filters().iter().chain(&[
            json!({"file": "SRC/"}),
            json!({"file": "rs"}),
            json!({"date_from": "2025-06-01"}),
            json!({"file": "no/such/path"}),
        ]) {
            let f = Filter::new(&request("x", "bm25", filter, 10, Scorer::Fast));
            let want: Vec<bool> = meta.iter().map(|m| f.keep(m)).collect();
            match f.mask(index.as_ref()) {
                Some(mask) => assert_eq!(mask, want.as_slice(), "{name}: mask of {filter}"),
                None => assert!(want.iter().all(|k| *k), "{name}: {filter}"),
            }
        }
        for q in &queries {
            let tokens = tokens(q);
            if tokens.is_empty() {
                continue;
            }
            for filter in filters() {
                let leg = |scorer, table| Leg {
                    conn: &conn,
                    index: index.as_ref(),
                    filter: Filter::new(&request(q, "bm25", &filter, 10, scorer)),
                    scorer,
                    table,
                };
                let (mem, sql) = (
                    leg(Scorer::Fast, Table::Plain),
                    leg(Scorer::Reference, Table::Plain),
                );
                let (mem_stem, sql_stem) = (
                    leg(Scorer::Fast, Table::Stemmed),
                    leg(Scorer::Reference, Table::Stemmed),
                );
                // Every matching row (a huge n), then cuts.
                for limit in [usize::MAX >> 1, 1, 10] {
                    let (mut tm, mut ts) = (Vec::new(), Vec::new());
                    let pairs = [
                        (
                            mem.bm25(&tokens, limit, &mut tm).unwrap(),
                            sql.bm25(&tokens, limit, &mut ts).unwrap(),
                        ),
                        (
                            mem.exact(&tokens, limit, &mut tm).unwrap(),
                            sql.exact(&tokens, limit, &mut ts).unwrap(),
                        ),
                        (
                            mem.fuzzy(&tokens, limit, &mut tm).unwrap(),
                            sql.fuzzy(&tokens, limit, &mut ts).unwrap(),
                        ),
                        (
                            mem_stem.bm25(&tokens, limit, &mut tm).unwrap(),
                            sql_stem.bm25(&tokens, limit, &mut ts).unwrap(),
                        ),
                    ];
                    let names = ["bm25", "exact", "fuzzy", "bm25 stemmed"];
                    for (which, (a, b)) in names.iter().zip(&pairs) {
                        assert_eq!(
                            bits(a),
                            bits(b),
                            "{name}: {which} `{q}` {filter} limit {limit}"
                        );
                        n.leg_calls += 1;
                        n.rows += a.len();
                    }
                    assert_eq!(tm, ts, "{name}: traces `{q}` {filter}");
                    n.or_queries += tm
                        .iter()
                        .filter(|s| s["fts_query"].as_str().is_some_and(|q| q.contains(" OR ")))
                        .count();
                }
                if let Some(e) = embedder {
                    for limit in [1, 20, 74, 1000] {
                        let (mut tm, mut ts) = (Vec::new(), Vec::new());
                        let mask = mem.filter.mask(mem.index);
                        let stop = Cancel::new();
                        let (fast, reference) = (Scorer::Fast, Scorer::Reference);
                        let v = e.embed_query(q);
                        let (m, v) = (e.name(), Some(v.as_slice()));
                        let a = vec_leg_until(mem.index, m, v, mask, limit, fast, &mut tm, &stop);
                        let b =
                            vec_leg_until(sql.index, m, v, mask, limit, reference, &mut ts, &stop);
                        let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
                        assert_eq!(
                            bits(&a),
                            bits(&b),
                            "{name}: vec `{q}` {filter} limit {limit}"
                        );
                        assert_eq!(tm, ts, "{name}: vec traces `{q}` {filter}");
                        n.vec_calls += 1;
                        n.rows += a.len();
                    }
                }
            }
        }
    }
    // Whole searches, every mode: fused scores bit for bit, then the output.
    let embedder_arg = || embedder.ok_or_else(|| "no model in this test".to_owned());
    for q in queries.iter().step_by(3) {
        for mode in ["hybrid", "vec", "bm25", "exact", "fuzzy"] {
            if mode == "vec" && embedder.is_none() {
                continue;
            }
            for filter in filters() {
                for limit in [1, 10, 37] {
                    let run = |scorer| {
                        let req = request(q, mode, &filter, limit, scorer);
                        let conn = store.lock();
                        let ranking = rank(store, &conn, embedder_arg(), &req).unwrap();
                        drop(conn);
                        let fused: Option<Vec<_>> = ranking.fused.map(|f| {
                            f.iter()
                                .map(|h| {
                                    let legs: Vec<_> = h
                                        .legs
                                        .iter()
                                        .map(|(l, r, s)| (*l, *r, s.to_bits()))
                                        .collect();
                                    (h.rowid, h.score.to_bits(), legs)
                                })
                                .collect()
                        });
                        (fused, search(store, embedder_arg(), &req).unwrap())
                    };
                    let (a, b) = (run(Scorer::Fast), run(Scorer::Reference));
                    assert_eq!(a, b, "{name}: {mode} `{q}` {filter} limit {limit}");
                    n.searches += 1;
                }
            }
        }
    }
    eprintln!("{name}: {} queries; {n:?}", queries.len());
    n
}

/// The embedding model, or `None` with a note: hybrid then runs without its vec leg
/// and the vec mode is left out (the lexical legs are still compared).
fn embedder() -> Option<Embedder> {
    let embedder = Embedder::load_default().ok();
    if embedder.is_none() {
        eprintln!("note: no embedding model: hybrid runs without its vec leg, vec is skipped");
    }
    embedder
}

#[test]
fn memory_scorer_matches_sqlite_bm25_bit_for_bit() {
    let embedder = embedder();
    let store = generated(embedder.as_ref());
    let n = compare_store("generated", &store, embedder.as_ref());
    assert!(n.or_queries > 0 && n.rows > 100_000, "{n:?}");
}

#[test]
fn memory_scorer_matches_sqlite_bm25_bit_for_bit_on_the_corpus() {
    let Some(dir) = corpus_dir() else {
        return;
    };
    let embedder = embedder();
    let store = corpus(&dir, embedder.as_ref());
    let n = compare_store("corpus", &store, embedder.as_ref());
    assert!(n.rows > 0, "{n:?}");
}

#[test]
fn the_generated_store_holds_wide_counts_and_mode_parses() {
    // The traps really reach the packed-count overflow path.
    let store = generated(None);
    let conn = store.lock();
    let index = store.search_index(&conn, None).unwrap();
    let fts = index.fts(&conn).unwrap().unwrap();
    assert!(fts.wide_postings() > 0);
    assert_eq!(Mode::parse("BM25"), Some(Mode::Bm25));
}
