//! `semantic_search` at scale on one generated store (`BENCH_MESSAGES`, default
//! 1,000,000): the L1 embeddings written by a close with an embedder (the ingest
//! embedding rate), their bytes per unit, calls through [`Host::call`] including the
//! query embedding (p50 / p95, semantic and hybrid, with and without filters), and a
//! one-shot `skills run semantic-search` process.
//!
//! Environment: `BENCH_MESSAGES`, `BENCH_SEED`, `BENCH_RUNS` (timed calls per case,
//! default 30), `BENCH_DIR`. Run: `cargo bench --bench semantic`.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use common::{fmt_bytes, fmt_dur, measure};
use serde_json::json;
use skills::bench::gen::{self, Spec};
use skills::embed::Embedder;
use skills::engines::Context;
use skills::runtime::host::Host;
use skills::stores::conversations::embeddings::UnitSpec;
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
];

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n = common::env_usize("BENCH_MESSAGES", 1_000_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_RUNS", 30);
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
         | segment bytes | {} ({:.0} bytes per unit; vector part {} bytes per unit: {dim} codes + 3 × f32) |\n",
        e.messages_embedded,
        UnitSpec::DEFAULT.window,
        UnitSpec::DEFAULT.stride,
        e.units,
        fmt_dur(ended),
        e.messages_embedded as f64 / ended.as_secs_f64().max(1e-9),
        fmt_dur(close),
        fmt_bytes(e.bytes),
        e.bytes as f64 / e.units.max(1) as f64,
        dim + 12,
    );
    let skills_dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let host = Host::load(
        &skills_dir,
        Context::new(paths.clone()).with_embedder(Some(embedder.clone())),
    );
    let mut rows = Vec::new();
    for (label, q) in QUERIES {
        let mut args = json!({"query": q, "limit": 15});
        if label.contains("role=user") {
            args["role"] = json!("user");
        }
        if label.starts_with("hybrid") {
            args["mode"] = json!("hybrid");
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
            .keyword(&skills::stores::conversations::index::KeywordQuery {
                terms: &terms,
                role: None,
                exclude_injected: true,
                source: None,
                conversation_id: None,
                since_us: None,
                until_us: None,
                limit: 60,
                stop: &stop,
            })
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
        embedder.embed(QUERIES[0].1)
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
