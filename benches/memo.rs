//! `memo_search` at 100,000 memories through [`Host::call`]: every mode, with and
//! without filters, each call including its query embedding; plus the query embedding
//! alone.
//!
//! Environment: `BENCH_MEMORIES` (default 100,000), `BENCH_SEED`, `BENCH_RUNS` (timed
//! calls per case, default 20), `BENCH_MODES` (comma-separated, default all five),
//! `BENCH_DIR`; the embedding model comes from
//! `$SKILLS_MODEL_DIR` (default `~/.cache/skills/model`, see `scripts/fetch-model`).
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Result};
use common::{fmt_bytes, fmt_dur, measure, peak_rss, reset_peak};
use serde_json::{json, Value};
use skills::embed::Embedder;
use skills::engines::Context;
use skills::host::Host;
use skills::stores::StorePaths;

const QUERY: &str = "how do we handle serde errors in the tokio runtime";

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n = common::env_usize("BENCH_MEMORIES", 100_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_RUNS", 20);
    let embedder = match Embedder::load_default() {
        Ok(e) => std::sync::Arc::new(e),
        Err(e) => {
            println!("## memo_search\n\nskipped: {e}\n");
            return Ok(());
        }
    };
    let dir = common::stores::memo_store(n, seed, &embedder)?;
    let done = dir.join("complete");
    println!("## memo_search at {n} memories\n");
    println!("machine: {}\n", common::machine());
    println!("store: {}", std::fs::read_to_string(&done)?);
    println!(
        "store size on disk: {}\n",
        fmt_bytes(common::dir_bytes(&dir))
    );

    let (embed, _) = measure(runs.max(200), Duration::from_secs(5), || {
        embedder.embed_query(QUERY)
    });
    let skills_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("skills");
    // The model the store was embedded with, for conversations and memories alike (left
    // to itself the host would take the second tier for memories when it is fetched).
    let host = Host::load(
        &skills_dir,
        Context::new(StorePaths::in_dir(&dir)).with_embedder(Some(embedder.clone())),
    );
    if host.get("memo-search").is_none() {
        bail!("skill `memo-search` did not load: {:?}", host.diagnostics());
    }
    let filters: [(&str, Value); 4] = [
        ("none", json!({})),
        ("type=decision", json!({"type": "decision"})),
        (
            "date 2025-01-01..2025-03-31",
            json!({"date_from": "2025-01-01", "date_to": "2025-03-31"}),
        ),
        ("file `src/serde`", json!({"file": "src/serde"})),
    ];
    let mut rows = vec![vec![
        "query embedding alone".to_owned(),
        "–".to_owned(),
        "–".to_owned(),
        fmt_dur(embed.median),
        fmt_dur(embed.p95),
        String::new(),
    ]];
    let modes =
        std::env::var("BENCH_MODES").unwrap_or_else(|_| "hybrid,vec,bm25,exact,fuzzy".to_owned());
    for mode in modes.split(',').map(str::trim).filter(|m| !m.is_empty()) {
        for (label, filter) in &filters {
            let mut args = json!({"query": QUERY, "mode": mode, "limit": 10});
            if let (Some(a), Some(f)) = (args.as_object_mut(), filter.as_object()) {
                a.extend(f.clone());
            }
            eprintln!("{mode} {label} …");
            reset_peak();
            let (st, out) = measure(runs, Duration::from_secs(30), || {
                host.call("memo-search", args.clone()).unwrap()
            });
            let hits = out.data["hits"].as_array().map_or(0, Vec::len);
            rows.push(vec![
                mode.to_owned(),
                (*label).to_owned(),
                hits.to_string(),
                fmt_dur(st.median),
                fmt_dur(st.p95),
                fmt_bytes(peak_rss()),
            ]);
        }
    }
    common::table(
        &["mode", "filter", "hits", "median", "p95", "peak RSS"],
        &rows,
    );
    println!(
        "query: `{QUERY}`, limit 10; {runs} timed calls per case after one warm-up \
         (embedding alone: ≥ 200 calls). Each call embeds the query.\n"
    );
    vec_first_pass(&dir, &embedder)?;
    Ok(())
}

/// The vec leg's pruned search against the exact pass over the same held vectors: the
/// 10 best memories (by best chunk) for 200 queries (titles of every 500th memory,
/// so each has near neighbours but is not a copy of one chunk), recall@10 (1 by
/// construction: the 8-bit pass's bounds are proven; the check keeps it so) and time.
fn vec_first_pass(dir: &Path, embedder: &Embedder) -> Result<()> {
    use skills::stores::memories::MemoryStore;
    let store = MemoryStore::open_ro(&dir.join("memories.sqlite"))?;
    let conn = store.lock();
    let index = store.search_index(&conn, Some((embedder.name(), embedder.dim())))?;
    let titles: Vec<String> = conn
        .prepare("SELECT title FROM memories WHERE rowid % 500 = 0 ORDER BY rowid LIMIT 200")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    drop(conn);
    let rows = index.rows().len();
    let n = 10;
    let best = |top: bool, q: &[f32]| -> Vec<usize> {
        let mut best: std::collections::HashMap<usize, f32> = std::collections::HashMap::new();
        let mut put = |r: usize, d: f32| {
            let e = best.entry(r).or_insert(f32::NEG_INFINITY);
            *e = e.max(d);
        };
        if top {
            index.for_each_top_dot(q, n, |_| true, &mut put);
        } else {
            index.for_each_dot(q, |_| true, &mut put);
        }
        let mut order: Vec<(usize, f32)> = best.into_iter().collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        order.into_iter().take(n).map(|(r, _)| r).collect()
    };
    let (mut found, mut asked) = (0usize, 0usize);
    let (mut fast_t, mut exact_t) = (Vec::new(), Vec::new());
    for t in &titles {
        let q = embedder.embed_query(t);
        let start = std::time::Instant::now();
        let got = best(true, &q);
        fast_t.push(start.elapsed());
        let start = std::time::Instant::now();
        let want = best(false, &q);
        exact_t.push(start.elapsed());
        found += got.iter().filter(|r| want.contains(r)).count();
        asked += want.len();
    }
    let (fast, exact) = (common::Stats::of(fast_t), common::Stats::of(exact_t));
    println!(
        "### vec leg first pass at {rows} memories ({} vectors)\n\n\
         | pass | median | p95 | recall@{n} vs exact |\n|---|---|---|---|\n\
         | `for_each_top_dot` (proven 8-bit first pass, then exact) | {} | {} | {:.4} ({found}/{asked}) |\n\
         | exact (every vector) | {} | {} | 1 |\n\n\
         {} queries: titles of every 500th memory.\n",
        index.vectors().len(),
        fmt_dur(fast.median),
        fmt_dur(fast.p95),
        found as f64 / asked.max(1) as f64,
        fmt_dur(exact.median),
        fmt_dur(exact.p95),
        titles.len(),
    );
    Ok(())
}
