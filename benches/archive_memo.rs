//! memo-search on the team archive beside the local store, on one generated memories
//! store of `BENCH_MEMORIES` memories (default 10,000) embedded with the memories'
//! model: the push into an empty archive (memories, their terms and vectors), then
//! calls through [`Host::call`] including the query embedding (p50 / p95) in each
//! mode with `--archive` and locally, and whether both return the same hits (ids and
//! scores).
//!
//! Environment: `BENCH_MEMORIES`, `BENCH_SEED`, `BENCH_RUNS` (timed calls per case,
//! default 20), `BENCH_DIR`, `BENCH_ARCHIVE_URL` (required: a superuser URL of a
//! PostgreSQL with pgvector, e.g. `eval "$(scripts/postgres start)"` then
//! `BENCH_ARCHIVE_URL=$SKILLS_TEST_ARCHIVE_URL`; the bench makes a database
//! `bench_archive_memo` on it, dropped first).
//!
//! Run: `cargo bench --bench archive_memo`.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use common::{fmt_dur, measure};
use serde_json::{json, Value};
use skills::embed::Embedder;
use skills::engines::Context;
use skills::host::Host;
use skills::stores::StorePaths;

const QUERIES: &[(&str, &str)] = &[
    ("one word", "serde"),
    (
        "a question",
        "how do we handle serde errors in the tokio runtime",
    ),
    ("common words", "we need to fix the test"),
];

const DATABASE: &str = "bench_archive_memo";

/// `skills --data-dir DATA --archive URL ARGS…`; its stdout.
fn skills(data: &Path, url: &str, args: &[&str]) -> Result<String> {
    let bin = Path::new(env!("CARGO_BIN_EXE_skills"));
    common::skills_on_archive(bin, data, url, args, &[])
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n = common::env_usize("BENCH_MEMORIES", 10_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_RUNS", 20);
    println!(
        "## memo-search on the team archive at {n} memories\n\n{}\n",
        common::machine()
    );
    let Some(admin) = common::archive_url() else {
        return Ok(());
    };
    let embedder = match Embedder::load_for_memories() {
        Ok(e) => Arc::new(e),
        Err(e) => {
            println!("skipped: {e}\n");
            return Ok(());
        }
    };
    // The memo bench's store (generated, embedded by the import path's own step).
    let dir = common::stores::memo_store(n, seed, &embedder)?;
    let paths = StorePaths::in_dir(&dir);
    let (base, _) = admin.rsplit_once('/').unwrap_or((&admin, ""));
    let url = format!("{base}/{DATABASE}");
    let mut admin_client = postgres::Client::connect(&admin, postgres::NoTls)?;
    admin_client.batch_execute(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))?;
    admin_client.batch_execute(&format!("CREATE DATABASE {DATABASE}"))?;
    skills(&dir, &url, &["--json", "archive", "migrate"])?;
    let report: Value = serde_json::from_str(&skills(
        &dir,
        &url,
        &["--json", "archive", "push", "--no-redact"],
    )?)?;
    println!(
        "push into an empty archive: {} memories, {} vectors in {:.1} s\n",
        report["memories_sent"],
        report["memory_vectors_sent"],
        report["seconds"].as_f64().unwrap_or(0.0)
    );
    calls(&paths, &url, runs)
}

/// Times memo-search's calls in every mode locally and on the archive at `url`.
fn calls(paths: &StorePaths, url: &str, runs: usize) -> Result<()> {
    let skills_dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let local = Host::load(&skills_dir, Context::new(paths.clone()));
    let pool = Arc::new(skills::archive::search::Pool::new(
        skills::archive::Target::parse(url).map_err(|e| anyhow::anyhow!("{e}"))?,
    ));
    let archive = Host::load(
        &skills_dir,
        Context::new(paths.clone()).with_archive(Some(pool)),
    );
    println!("| mode | query | local p50 | p95 | archive p50 | p95 | same hits |\n|---|---|---|---|---|---|---|");
    for mode in ["hybrid", "vec", "bm25", "exact", "fuzzy"] {
        for (label, q) in QUERIES {
            let args = json!({"query": q, "mode": mode, "limit": 10});
            let hits = |v: &Value| -> Vec<(String, String)> {
                v["hits"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|h| {
                        (
                            h["id"].as_str().unwrap_or("").to_owned(),
                            h["score"].to_string(),
                        )
                    })
                    .collect()
            };
            let call = |host: &Host| {
                host.call("memo-search", args.clone())
                    .map(|o| hits(&o.data))
                    .map_err(|e| e.to_string())
            };
            let _ = call(&local);
            let _ = call(&archive);
            let (l, lhits) = measure(runs, Duration::from_secs(60), || call(&local));
            let (a, ahits) = measure(runs, Duration::from_secs(120), || call(&archive));
            let same = match (&lhits, &ahits) {
                (Ok(l), Ok(a)) if l == a => format!("yes ({})", l.len()),
                (Ok(l), Ok(a)) => format!("**no** ({} / {})", l.len(), a.len()),
                (l, a) => format!("{l:?} / {a:?}"),
            };
            println!(
                "| {mode} | {label} | {} | {} | {} | {} | {same} |",
                fmt_dur(l.median),
                fmt_dur(l.p95),
                fmt_dur(a.median),
                fmt_dur(a.p95)
            );
        }
    }
    println!();
    Ok(())
}
