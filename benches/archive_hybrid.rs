//! semantic-search's default (`hybrid`: semantic, keyword and exact legs fused) on the
//! team archive beside the local store, on one generated store of `BENCH_MESSAGES`
//! messages (default 100,000) embedded with the default model: the push into an empty
//! archive (rows, vectors and the keyword leg's terms; messages/s), then calls through
//! [`Host::call`] including the query embedding (p50 / p95) with `--archive` and
//! locally, and whether both return the same rows.
//!
//! Environment: `BENCH_MESSAGES`, `BENCH_SEED`, `BENCH_RUNS` (timed calls per case,
//! default 30), `BENCH_DIR`, `BENCH_ARCHIVE_URL` (required: a superuser URL of a
//! PostgreSQL with pgvector and pg_trgm, e.g. `eval "$(scripts/postgres start)"` then
//! `BENCH_ARCHIVE_URL=$SKILLS_TEST_ARCHIVE_URL`; the bench makes a database
//! `bench_archive_hybrid` on it, dropped first), `BENCH_SKILLS_BIN` (a `skills` binary
//! to migrate and push with instead of this build's — an older build, for the push
//! rate before a change; the calls are then skipped, as that build's schema is not
//! this one's), `BENCH_NO_VECTORS=1` (migrate from an empty folder: no model
//! registered, the push sends rows without vectors; calls skipped).
//!
//! `BENCH_KEEP_ARCHIVE=1`: the calls only, on the archive a previous run pushed (after
//! `skills archive migrate` with this build, so a newer schema version's indexes are
//! added to it).
//!
//! `BENCH_HNSW_AFTER=1`: the units' HNSW index is dropped before the push and built
//! again after it with the same parameters (one bulk build instead of row-by-row
//! upkeep, which holds the push to ~400 messages/s: 40 minutes at 1M). The push rate
//! printed is then the rate without the index; the build's time is printed apart.
//!
//! After the calls, the archive's keyword leg alone ([`skills::archive::keyword::search`]
//! as hybrid calls it: the query's terms, depth `KEYWORD_CANDIDATES`, the default
//! neighbourhood; no embedding, no texts),
//! p50 / p95. `BENCH_KEYWORD_ONLY=1`: only that (also after `BENCH_NO_VECTORS=1`).
//!
//! Run: `cargo bench --bench archive_hybrid`.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use common::{fmt_dur, measure};
use serde_json::{json, Value};
use skills::bench::gen::{self, Spec};
use skills::embed::Embedder;
use skills::engines::Context;
use skills::host::Host;
use skills::stores::conversations::embeddings::UnitSpec;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

const QUERIES: &[(&str, &str)] = &[
    ("one word", "serde"),
    (
        "a question",
        "how do we handle serde errors in the tokio runtime",
    ),
    ("a question, role=user", "why does the build fail to link"),
    ("common words", "we need to fix the test"),
];

const DATABASE: &str = "bench_archive_hybrid";

/// `skills --data-dir DATA --archive URL ARGS…` with `bin`; its stdout.
fn skills(bin: &Path, data: &Path, url: &str, args: &[&str]) -> Result<String> {
    common::skills_on_archive(bin, data, url, args, &[])
}

fn main() -> Result<()> {
    if std::env::args().any(|a| a == "--list") {
        return Ok(());
    }
    let n = common::env_usize("BENCH_MESSAGES", 100_000);
    let seed = common::env_usize("BENCH_SEED", 0x5EED) as u64;
    let runs = common::env_usize("BENCH_RUNS", 30);
    println!(
        "## semantic-search hybrid on the team archive at {n} messages\n\n{}\n",
        common::machine()
    );
    let Some(admin) = common::archive_url() else {
        return Ok(());
    };
    let embedder = match Embedder::load_default() {
        Ok(e) => Arc::new(e),
        Err(e) => {
            println!("skipped: {e}\n");
            return Ok(());
        }
    };
    let dir = common::bench_dir().join(format!("archive-hybrid-{n}-{seed:x}"));
    let paths = StorePaths::in_dir(&dir);
    let done = dir.join("complete");
    if !done.exists() {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let store = ConversationStore::open_rw(&paths.conversations)?;
        let g = gen::fill_store(&store, Spec { messages: n, seed }, 50_000)?;
        store.close()?;
        let mut store = ConversationStore::open_rw(&paths.conversations)?;
        store.embed_with(embedder.clone(), UnitSpec::DEFAULT)?;
        store.close_with(&mut |_, _| {})?;
        eprintln!("stored and embedded {} messages", g.messages);
        std::fs::write(&done, b"")?;
    }
    let (base, _) = admin.rsplit_once('/').unwrap_or((&admin, ""));
    let url = format!("{base}/{DATABASE}");
    // `BENCH_KEEP_ARCHIVE=1`: the calls only, on the archive a previous run pushed.
    if std::env::var("BENCH_KEEP_ARCHIVE").as_deref() != Ok("1") {
        push(&admin, &url, &dir)?;
    } else {
        let own = std::path::PathBuf::from(env!("CARGO_BIN_EXE_skills"));
        let m = skills(&own, &dir, &url, &["--json", "archive", "migrate"])?;
        eprintln!("migrated: {m}");
    }
    if std::env::var("BENCH_KEYWORD_ONLY").as_deref() != Ok("1") {
        calls(&paths, &embedder, &url, runs)?;
    }
    keyword_leg(&url, runs)
}

/// Times the archive's keyword leg alone, as hybrid calls it.
fn keyword_leg(url: &str, runs: usize) -> Result<()> {
    use skills::engines::semantic_search::{query_terms, CONTEXT, KEYWORD_CANDIDATES};
    use skills::stores::conversations::index::KeywordQuery;
    let pool = skills::archive::search::Pool::new(
        skills::archive::Target::parse(url).map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    let stop = skills::cancel::Cancel::new();
    println!(
        "keyword leg alone (load {}):\n\n| case | query | archive p50 | p95 | rows |\n|---|---|---|---|---|",
        common::loadavg()
    );
    for (label, q) in QUERIES {
        let terms = query_terms(q);
        let role = label.contains("role=user").then_some("user");
        let kq = KeywordQuery {
            role,
            ..KeywordQuery::new(&terms, KEYWORD_CANDIDATES, &stop)
        };
        let call = || {
            skills::archive::keyword::search(&pool, &kq, Some(CONTEXT))
                .map(|(f, _)| f.len())
                .map_err(|e| e.to_string())
        };
        let _ = call();
        let (a, n) = measure(runs, Duration::from_secs(120), call);
        println!(
            "| {label} | `{q}` | {} | {} | {n:?} |",
            fmt_dur(a.median),
            fmt_dur(a.p95)
        );
    }
    println!();
    Ok(())
}

/// Makes the database anew, migrates it and pushes the store at `dir` into it; exits
/// when the calls cannot follow (another build's push, no vectors).
fn push(admin: &str, url: &str, dir: &Path) -> Result<()> {
    let mut admin_client = postgres::Client::connect(admin, postgres::NoTls)?;
    admin_client.batch_execute(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))?;
    admin_client.batch_execute(&format!("CREATE DATABASE {DATABASE}"))?;
    let own = std::path::PathBuf::from(env!("CARGO_BIN_EXE_skills"));
    let other = std::env::var_os("BENCH_SKILLS_BIN").map(std::path::PathBuf::from);
    let bin = other.clone().unwrap_or(own);
    // `BENCH_NO_VECTORS=1`: migrated from an empty folder, so no model is registered
    // and the push sends rows (and terms) without vectors.
    let rows_only = std::env::var("BENCH_NO_VECTORS").as_deref() == Ok("1");
    let empty = tempfile::tempdir()?;
    let migrate_from = if rows_only { empty.path() } else { dir };
    skills(&bin, migrate_from, url, &["--json", "archive", "migrate"])?;
    let hnsw_after = std::env::var("BENCH_HNSW_AFTER").as_deref() == Ok("1") && !rows_only;
    // The units' HNSW indexes as migrate made them, to drop now and build after.
    let mut indexes: Vec<(String, String)> = Vec::new();
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    if hnsw_after {
        for r in client.query(
            "SELECT indexname::text, indexdef FROM pg_indexes              WHERE schemaname = 'skills_archive' AND indexname ~ '^units_[0-9]+_hnsw$'",
            &[],
        )? {
            let name: String = r.get(0);
            client.batch_execute(&format!("DROP INDEX skills_archive.{name}"))?;
            indexes.push((name, r.get(1)));
        }
    }
    eprintln!("pushing …");
    let report: Value =
        serde_json::from_str(&skills(&bin, dir, url, &["--json", "archive", "push"])?)?;
    for (name, def) in &indexes {
        let t = std::time::Instant::now();
        client.batch_execute(&format!(
            "SET maintenance_work_mem = '2GB'; SET max_parallel_maintenance_workers = 1; {def}"
        ))?;
        println!(
            "HNSW index `{name}` built after the push (`BENCH_HNSW_AFTER`): {:.1} s\n",
            t.elapsed().as_secs_f64()
        );
    }
    client.batch_execute("VACUUM ANALYZE")?;
    let secs = report["seconds"].as_f64().unwrap_or(0.0);
    let sent = report["messages_sent"].as_u64().unwrap_or(0);
    println!(
        "push into an empty archive ({}): {sent} messages, {} units in {secs:.1} s ({:.0} \
         messages/s)\n",
        bin.display(),
        report["units_sent"],
        sent as f64 / secs.max(1e-9)
    );
    let keyword_only = std::env::var("BENCH_KEYWORD_ONLY").as_deref() == Ok("1");
    if other.is_some() || (rows_only && !keyword_only) {
        println!(
            "calls skipped: pushed with another build (`BENCH_SKILLS_BIN`) or without \
             vectors (`BENCH_NO_VECTORS`)\n"
        );
        std::process::exit(0);
    }
    Ok(())
}

/// Times semantic-search's default calls locally and on the archive at `url`.
fn calls(paths: &StorePaths, embedder: &Arc<Embedder>, url: &str, runs: usize) -> Result<()> {
    let skills_dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("skills");
    let local = Host::load(
        &skills_dir,
        Context::new(paths.clone()).with_embedder(Some(embedder.clone())),
    );
    let pool = Arc::new(skills::archive::search::Pool::new(
        skills::archive::Target::parse(url).map_err(|e| anyhow::anyhow!("{e}"))?,
    ));
    let archive = Host::load(
        &skills_dir,
        Context::new(paths.clone())
            .with_embedder(Some(embedder.clone()))
            .with_archive(Some(pool)),
    );
    println!("| case | query | local p50 | p95 | archive p50 | p95 | same rows |\n|---|---|---|---|---|---|---|");
    for (label, q) in QUERIES {
        let mut args = json!({"query": q, "limit": 15});
        if label.contains("role=user") {
            args["role"] = json!("user");
        }
        let keys = |v: &Value| -> Vec<(String, String)> {
            v["rows"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    (
                        r["conversation_id"].as_str().unwrap_or("").to_owned(),
                        r["message_id"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        };
        let call = |host: &Host| {
            host.call("semantic-search", args.clone())
                .map(|o| keys(&o.data))
                .map_err(|e| e.to_string())
        };
        let _ = call(&local);
        let _ = call(&archive);
        let (l, lrows) = measure(runs, Duration::from_secs(60), || call(&local));
        let (a, arows) = measure(runs, Duration::from_secs(120), || call(&archive));
        let same = match (&lrows, &arows) {
            (Ok(l), Ok(a)) => {
                if l == a {
                    format!("yes ({})", l.len())
                } else {
                    format!("**no** ({} / {})", l.len(), a.len())
                }
            }
            (l, a) => format!("{l:?} / {a:?}"),
        };
        println!(
            "| {label} | `{q}` | {} | {} | {} | {} | {same} |",
            fmt_dur(l.median),
            fmt_dur(l.p95),
            fmt_dur(a.median),
            fmt_dur(a.p95)
        );
    }
    println!();
    Ok(())
}
