//! `semantic_search` at scale on one generated store (`BENCH_MESSAGES`, default
//! 1,000,000): the L1 embeddings written by a close with an embedder (the ingest
//! embedding rate), their bytes per unit, calls through [`Host::call`] including the
//! query embedding (p50 / p95, semantic and hybrid, with and without filters), a
//! one-shot `skills run semantic-search` process, and the 1-bit first pass against the
//! exact one: recall@15 (the fraction of the exact top 15 the fast pass returns, same
//! query, same filters) and time per search, over `BENCH_RECALL_QUERIES` generated
//! queries for several oversampling choices.
//!
//! Environment: `BENCH_MESSAGES`, `BENCH_SEED`, `BENCH_RUNS` (timed calls per case,
//! default 30), `BENCH_RECALL_QUERIES` (default 240), `BENCH_DIR`, `BENCH_CANDIDATES`
//! (`N:K`: hybrid's candidate depths, N for the semantic and literal legs, K for the
//! keyword leg, instead of [`semantic_search::CANDIDATES`] and
//! [`semantic_search::KEYWORD_CANDIDATES`], to time a depth). Run:
//! `cargo bench --bench semantic`.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use common::{fmt_bytes, fmt_dur, measure};
use serde_json::json;
use skills::bench::gen::{self, Spec};
use skills::embed::Embedder;
use skills::engines::semantic_search::{self, Tuning};
use skills::engines::Context;
use skills::host::Host;
use skills::stores::conversations::embeddings::{self, Embeddings, Filter, FirstPass, UnitSpec};
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

const QUERIES: &[(&str, &str)] = &[
    (
        "semantic",
        "how do we handle serde errors in the tokio runtime",
    ),
    ("semantic, role=user", "why does the build fail to link"),
    ("hybrid", "serde"),
    (
        "hybrid, a question",
        "how do we handle serde errors in the tokio runtime",
    ),
    (
        "default (no mode: hybrid, keyword leg with neighbours)",
        "how do we handle serde errors in the tokio runtime",
    ),
];

/// `BENCH_CANDIDATES=N:K`: hybrid's candidate depths to time (`None`: the shipped ones).
fn candidates() -> Result<Option<(usize, usize)>> {
    let Ok(v) = std::env::var("BENCH_CANDIDATES") else {
        return Ok(None);
    };
    let bad =
        || anyhow::anyhow!("BENCH_CANDIDATES: expected `N:K` (two positive integers), got `{v}`");
    let (n, k) = v.split_once(':').ok_or_else(bad)?;
    let (n, k): (usize, usize) = (
        n.trim().parse().map_err(|_| bad())?,
        k.trim().parse().map_err(|_| bad())?,
    );
    anyhow::ensure!(n > 0 && k > 0, bad());
    Ok(Some((n, k)))
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n = common::env_usize("BENCH_MESSAGES", 1_000_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_RUNS", 30);
    let depths = candidates()?;
    let embedder = match Embedder::load_default() {
        Ok(e) => Arc::new(e),
        Err(e) => {
            println!("## semantic_search\n\nskipped: {e}\n");
            return Ok(());
        }
    };
    let dir = common::bench_dir().join(format!("semantic-{n}-{seed:x}"));
    let paths = StorePaths::in_dir(&dir);
    let done = dir.join("complete");
    println!(
        "## semantic_search at {n} messages\n\n{}\n",
        common::machine()
    );
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let store = ConversationStore::open_rw(&paths.conversations)?;
        let g = gen::fill_store(&store, Spec { messages: n, seed }, 50_000)?;
        store.close()?;
        eprintln!("stored {} messages", g.messages);
        std::fs::write(&done, b"")?;
    }
    // Embed everything (a writable open whose manifest is missing re-embeds all).
    let _ = std::fs::remove_dir_all(dir.join("conversations.embeddings"));
    let mut store = ConversationStore::open_rw(&paths.conversations)?;
    store.embed_with(embedder.clone(), UnitSpec::DEFAULT)?;
    let mut started: Option<Instant> = None;
    let mut ended = Duration::ZERO;
    let t = Instant::now();
    let closed = store.close_with(&mut |done, total| {
        let s = *started.get_or_insert_with(Instant::now);
        if done == total {
            ended = s.elapsed();
        }
    })?;
    let close = t.elapsed();
    let e = closed.embeddings.unwrap().map_err(anyhow::Error::msg)?;
    let dim = embedder.dim() as u64;
    println!(
        "| figure | value |\n|---|---|\n| messages embedded | {} |\n| units (window {}, stride {}) | {} |\n\
         | embedding (read + embed + write the segment) | {} ({:.0} messages/s) |\n| whole close (index + embeddings) | {} |\n\
         | segment bytes | {} ({:.0} bytes per unit; vector part {} bytes per unit: {dim} codes + 3 × f32, {} bits + 1 × f32) |\n",
        e.messages_embedded,
        UnitSpec::DEFAULT.window,
        UnitSpec::DEFAULT.stride,
        e.units,
        fmt_dur(ended),
        e.messages_embedded as f64 / ended.as_secs_f64().max(1e-9),
        fmt_dur(close),
        fmt_bytes(e.bytes),
        e.bytes as f64 / e.units.max(1) as f64,
        dim + 12 + dim.div_ceil(64) * 8 + 4,
        dim,
    );
    let skills_dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let host = Host::load(
        &skills_dir,
        Context::new(paths.clone()).with_embedder(Some(embedder.clone())),
    );
    if let Some((n, k)) = depths {
        println!("hybrid's candidate depths (`BENCH_CANDIDATES`): {n} semantic and literal, {k} keyword\n");
        semantic_search::tune(Some(Tuning {
            candidates: n,
            keyword_candidates: k,
            ..Tuning::DEFAULT
        }));
    }
    let mut rows = Vec::new();
    for (label, q) in QUERIES {
        let mut args = json!({"query": q, "limit": 15});
        if label.contains("role=user") {
            args["role"] = json!("user");
        }
        if label.starts_with("hybrid") {
            args["mode"] = json!("hybrid");
        }
        if label.starts_with("semantic") {
            args["mode"] = json!("semantic");
        }
        let _ = host.call("semantic-search", args.clone());
        let (stats, out) = measure(runs, Duration::from_secs(60), || {
            host.call("semantic-search", args.clone())
                .map(|o| o.data["count"].clone())
                .map_err(|e| e.to_string())
        });
        rows.push(vec![
            (*label).to_owned(),
            format!("`{q}`"),
            fmt_dur(stats.median),
            fmt_dur(stats.p95),
            format!(
                "{}",
                out.map(|c| c.to_string()).unwrap_or_else(|e| e.to_string())
            ),
        ]);
    }
    // The keyword leg of hybrid alone: BM25 from the index's postings.
    let index = skills::stores::conversations::index::Index::open(&paths.conversations)
        .map_err(|e| anyhow::anyhow!("search index: {e}"))?;
    let terms: Vec<String> = ["handle", "serde", "errors", "tokio", "runtime"]
        .map(String::from)
        .to_vec();
    let stop = skills::cancel::Cancel::new();
    let (kw, found) = measure(runs, Duration::from_secs(10), || {
        index
            .keyword(&skills::stores::conversations::index::KeywordQuery::new(
                &terms, 60, &stop,
            ))
            .map(|h| h.map_or(0, |h| h.len()))
            .map_err(|e| e.to_string())
    });
    rows.push(vec![
        "keyword leg alone (`Index::keyword`, 60 rows)".into(),
        format!("`{}`", terms.join(" ")),
        fmt_dur(kw.median),
        fmt_dur(kw.p95),
        found.map(|n| n.to_string()).unwrap_or_else(|e| e),
    ]);
    let (qe, _) = measure(runs, Duration::from_secs(10), || {
        embedder.embed_query(QUERIES[0].1)
    });
    rows.push(vec![
        "query embedding alone".into(),
        String::new(),
        fmt_dur(qe.median),
        fmt_dur(qe.p95),
        String::new(),
    ]);
    common::table(
        &["case (Host::call, limit 15)", "query", "p50", "p95", "rows"],
        &rows,
    );
    recall_table(&paths.conversations, &embedder)?;
    let bin = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
        .join("release/skills");
    if bin.is_file() {
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let ok = std::process::Command::new(&bin)
                .arg("--skills-dir")
                .arg(&skills_dir)
                .arg("--data-dir")
                .arg(&dir)
                .args([
                    "run",
                    "semantic-search",
                    "--arg",
                    &format!("query={}", QUERIES[0].1),
                ])
                .output()?
                .status
                .success();
            times.push(t.elapsed());
            anyhow::ensure!(ok, "skills run failed");
        }
        let s = common::Stats::of(times);
        println!(
            "\none-shot `skills run semantic-search` process: p50 {}, max {}\n",
            fmt_dur(s.median),
            fmt_dur(s.p95)
        );
    }
    Ok(())
}

/// Words the generated queries are made of: the generator's technical tokens and
/// common words.
const WORDS: &[&str] = &[
    "serde",
    "tokio",
    "async",
    "struct",
    "trait",
    "Result",
    "Option",
    "DuckDB",
    "SQLite",
    "query",
    "index",
    "cargo",
    "clippy",
    "python",
    "JSON",
    "schema",
    "server",
    "client",
    "HashMap",
    "Mutex",
    "GitHub",
    "unwrap",
    "panic",
    "lifetime",
    "borrow",
    "closure",
    "iterator",
    "generic",
    "macro",
    "module",
    "crate",
    "feature",
    "dependency",
    "benchmark",
    "latency",
    "memory",
    "thread",
    "runtime",
    "request",
    "response",
    "endpoint",
    "token",
    "embedding",
    "vector",
    "search",
    "table",
    "column",
    "commit",
    "branch",
    "merge",
    "rebase",
    "docker",
    "deploy",
    "config",
    "debug",
    "release",
    "compile",
    "link",
    "binary",
    "library",
    "react",
    "typescript",
    "API",
    "HTTP",
    "cache",
    "buffer",
    "unicode",
    "tests",
    "snapshot",
    "stream",
    "future",
    "error",
    "test",
    "data",
    "type",
    "value",
    "build",
    "update",
    "fix",
    "file",
    "code",
    "function",
    "problem",
    "question",
    "why",
    "how",
    "does",
    "fail",
    "handle",
    "slow",
    "crash",
    "missing",
];

/// recall@15 of the 1-bit pass against the exact pass, and the time of both, at the
/// embeddings level (no query embedding, no texts), over generated queries.
fn recall_table(db: &std::path::Path, embedder: &Embedder) -> Result<()> {
    let e = Embeddings::open(db).map_err(|e| anyhow::anyhow!("embeddings: {e}"))?;
    let count = common::env_usize("BENCH_RECALL_QUERIES", 240);
    let mut rng = gen::Rng::new(0xB175);
    let mut queries: Vec<String> = QUERIES.iter().map(|q| q.1.to_owned()).collect();
    while queries.len() < count {
        let words = rng.range(2, 9);
        let q: Vec<&str> = (0..words).map(|_| *rng.pick(WORDS)).collect();
        queries.push(q.join(" "));
    }
    let vectors: Vec<Vec<f32>> = queries.iter().map(|q| embedder.embed_query(q)).collect();
    // Every third query filtered to role=user, every third to assistant.
    let filter = |i: usize| Filter {
        roles: [0, embeddings::role::USER, embeddings::role::ASSISTANT][i % 3],
        ..Filter::default()
    };
    let stop = skills::cancel::Cancel::new();
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let n = 15;
    let key = |h: &embeddings::UnitHit| {
        (
            h.source.clone(),
            h.conversation_id.clone(),
            h.messages.first().map(|m| m.message_id.clone()),
        )
    };
    let mut exact = Vec::new();
    let mut times = Vec::new();
    for (i, q) in vectors.iter().enumerate() {
        let t = Instant::now();
        let hits = e
            .search_with(q, n, &filter(i), -1.0, threads, &stop, FirstPass::Exact)
            .map_err(|_| anyhow::anyhow!("damaged embeddings"))?;
        times.push(t.elapsed());
        exact.push(
            hits.iter()
                .map(key)
                .collect::<std::collections::HashSet<_>>(),
        );
    }
    let s = common::Stats::of(times);
    let mut rows = vec![vec![
        "exact 8-bit pass".to_owned(),
        "1.000".to_owned(),
        String::new(),
        fmt_dur(s.median),
        fmt_dur(s.p95),
    ]];
    let default = FirstPass::DEFAULT;
    let mut passes: Vec<(usize, usize)> = vec![
        (4, 0),
        (10, 0),
        (20, 0),
        (40, 0),
        (40, 1000),
        (100, 0),
        (100, 3000),
    ];
    if let FirstPass::Bits {
        oversample, floor, ..
    } = default
    {
        if !passes.contains(&(oversample, floor)) {
            passes.push((oversample, floor));
        }
    }
    for (oversample, floor) in passes {
        let pass = FirstPass::Bits {
            min_units: 0,
            oversample,
            floor,
        };
        let (mut found, mut wanted, mut worst) = (0usize, 0usize, 1.0f64);
        let mut times = Vec::new();
        for (i, q) in vectors.iter().enumerate() {
            let t = Instant::now();
            let hits = e
                .search_with(q, n, &filter(i), -1.0, threads, &stop, pass)
                .map_err(|_| anyhow::anyhow!("damaged embeddings"))?;
            times.push(t.elapsed());
            let got = hits.iter().filter(|h| exact[i].contains(&key(h))).count();
            found += got;
            wanted += exact[i].len();
            worst = worst.min(got as f64 / exact[i].len().max(1) as f64);
        }
        let s = common::Stats::of(times);
        let is_default = FirstPass::Bits {
            min_units: embeddings::BITS_MIN_UNITS,
            oversample,
            floor,
        } == default;
        rows.push(vec![
            format!(
                "1-bit, {} candidates per slice{}",
                pass.candidates(n).unwrap_or(0),
                if is_default { " (default)" } else { "" }
            ),
            format!("{:.4}", found as f64 / wanted.max(1) as f64),
            format!("{worst:.3}"),
            fmt_dur(s.median),
            fmt_dur(s.p95),
        ]);
    }
    println!(
        "\n1-bit first pass vs exact ({} queries, a third role=user, a third role=assistant; \
         `Embeddings::search_with`, {threads} threads, n = {n}, no query embedding):\n",
        vectors.len()
    );
    common::table(
        &[
            "first pass",
            "recall@15 vs exact",
            "worst query",
            "p50",
            "p95",
        ],
        &rows,
    );
    Ok(())
}
