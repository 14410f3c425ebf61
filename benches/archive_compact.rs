//! Compaction of the team archive's keyword postings (`src/archive/compact.rs`) on one
//! generated store of `BENCH_MESSAGES` messages (default 100,000, no vectors): pushed
//! into an empty archive, then `BENCH_ROUNDS` (default 10) rewrite pushes, each
//! appending a message to the `BENCH_ACTIVE` (default 200) newest conversations (so
//! each push rewrites them). Twice, on fresh databases: without the compaction at the
//! end of a push (`PushOptions::compact` off), then `skills archive compact`'s
//! compaction of everything; and with it. Printed per case: the pushes' seconds (the
//! compaction's part), the postings table's rows, postings, bytes and dead postings,
//! and the keyword leg alone (p50 / p95 over `BENCH_RUNS`, default 20, per query).
//!
//! Environment: `BENCH_MESSAGES`, `BENCH_SEED`, `BENCH_ROUNDS`, `BENCH_ACTIVE`,
//! `BENCH_RUNS`, `BENCH_DIR`, `BENCH_ARCHIVE_URL` (required: a superuser URL, e.g.
//! `eval "$(scripts/postgres start)"` then `BENCH_ARCHIVE_URL=$SKILLS_TEST_ARCHIVE_URL`;
//! the bench makes a database `bench_archive_compact` on it, dropped first).
//!
//! Run: `cargo bench --bench archive_compact`.
#![allow(clippy::print_stdout, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use anyhow::Result;
use common::{fmt_dur, measure};
use skills::archive::compact::{self, Scope};
use skills::archive::machine::Machine;
use skills::archive::push::{self, PushOptions};
use skills::archive::{schema, Archive, Target};
use skills::bench::gen::{self, Generator, Spec};
use skills::ingest::Message;
use skills::stores::conversations::ConversationStore;
use skills::stores::StorePaths;

const DATABASE: &str = "bench_archive_compact";

const QUERIES: &[&str] = &[
    "serde",
    "how do we handle serde errors in the tokio runtime",
    "we need to fix the test",
];

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() -> Result<()> {
    let n = env_or("BENCH_MESSAGES", 100_000);
    let rounds = env_or("BENCH_ROUNDS", 10);
    let active = env_or("BENCH_ACTIVE", 200);
    let runs = env_or("BENCH_RUNS", 20);
    let seed = std::env::var("BENCH_SEED")
        .ok()
        .and_then(|v| u64::from_str_radix(v.trim_start_matches("0x"), 16).ok())
        .unwrap_or(0x5EED);
    let Some(admin) = common::archive_url() else {
        return Ok(());
    };
    let spec = Spec { messages: n, seed };
    // The active conversations: the last ones generated, with their last message.
    let mut lasts: Vec<Message> = Generator::new(spec)
        .filter_map(|c| c.into_iter().max_by_key(|m| m.msg_index))
        .collect();
    let lasts = lasts.split_off(lasts.len().saturating_sub(active));
    let (base, _) = admin.rsplit_once('/').unwrap_or((&admin, ""));
    let url = format!("{base}/{DATABASE}");
    println!(
        "{n} messages, {rounds} rewrite pushes of the {} newest conversations (load {})\n",
        lasts.len(),
        common::loadavg()
    );
    std::fs::create_dir_all(common::bench_dir())?;
    for auto in [false, true] {
        let dir = tempfile::tempdir_in(common::bench_dir())?;
        let paths = StorePaths::in_dir(dir.path());
        let store = ConversationStore::open_rw(&paths.conversations)?;
        gen::fill_store(&store, spec, 50_000)?;
        store.close()?;
        let mut admin_client = postgres::Client::connect(&admin, postgres::NoTls)?;
        admin_client.batch_execute(&format!("DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)"))?;
        admin_client.batch_execute(&format!("CREATE DATABASE {DATABASE}"))?;
        let target = Target::parse(&url).map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut archive = Archive::open(&target)?;
        schema::migrate(&mut archive, &[])?;
        let machine = Machine::of_paths(&paths)?;
        let options = PushOptions {
            redact: false,
            compact: auto,
            ..PushOptions::default()
        };
        let first = push::push(&mut archive, &paths, &machine, &options, &mut |_, _| {})?;
        // As after a push autovacuum would: the planner's statistics of the rows.
        archive.client().batch_execute("VACUUM ANALYZE")?;
        println!(
            "## compaction at the end of a push: {}\n\nfirst push: {} messages in {:.1} s; {}\n",
            if auto { "on" } else { "off" },
            first.messages_sent,
            first.seconds,
            size(&mut archive)?
        );
        if !auto {
            keyword_leg(&url, runs)?;
        }
        println!("| round | push s | of which compaction s | terms compacted |\n|---|---|---|---|");
        for round in 0..rounds {
            let more: Vec<Message> = lasts
                .iter()
                .map(|m| {
                    let mut m = m.clone();
                    m.message_id = format!("{}-more{round}", m.message_id);
                    m.msg_index += 1 + i64::try_from(round).unwrap_or(0);
                    m.timestamp += chrono::Duration::seconds(60 * (1 + round as i64));
                    m
                })
                .collect();
            let store = ConversationStore::open_rw(&paths.conversations)?;
            store.insert(&more)?;
            store.close()?;
            let r = push::push(&mut archive, &paths, &machine, &options, &mut |_, _| {})?;
            let (secs, terms) = r
                .compacted
                .as_ref()
                .map_or((0.0, 0), |c| (c.seconds, c.terms_compacted));
            println!("| {} | {:.2} | {secs:.2} | {terms} |", round + 1, r.seconds);
        }
        println!("\nafter the rewrites: {}\n", size(&mut archive)?);
        keyword_leg(&url, runs)?;
        if !auto {
            let c = compact::compact(&mut archive, Scope::All)?;
            println!(
                "compact everything: {} terms, rows {} → {}, postings {} → {}, {:.1} → {:.1} MB \
                 in {:.2} s ({} transactions)\n",
                c.terms_compacted,
                c.rows_before,
                c.rows_after,
                c.postings_before,
                c.postings_after,
                c.bytes_before as f64 / 1e6,
                c.bytes_after as f64 / 1e6,
                c.seconds,
                c.transactions
            );
            println!("after compacting: {}\n", size(&mut archive)?);
            keyword_leg(&url, runs)?;
        }
    }
    Ok(())
}

/// The postings table's size as one line.
fn size(archive: &mut Archive) -> Result<String> {
    let (rows, postings, bytes, dead) = compact::size(archive.client())?;
    Ok(format!(
        "{rows} rows, {postings} postings ({:.1} MB), {dead} dead",
        bytes as f64 / 1e6
    ))
}

/// Times the archive's keyword leg alone (as hybrid calls it) on [`QUERIES`].
fn keyword_leg(url: &str, runs: usize) -> Result<()> {
    use skills::engines::semantic_search::{query_terms, CONTEXT, KEYWORD_CANDIDATES};
    use skills::stores::conversations::index::KeywordQuery;
    let pool =
        skills::archive::search::Pool::new(Target::parse(url).map_err(|e| anyhow::anyhow!("{e}"))?);
    let stop = skills::cancel::Cancel::new();
    // Fresh planner statistics, so only the postings differ between the cases.
    postgres::Client::connect(url, postgres::NoTls)?.batch_execute("ANALYZE")?;
    println!("| query | keyword leg p50 | p95 | rows |\n|---|---|---|---|");
    for q in QUERIES {
        let terms = query_terms(q);
        let kq = KeywordQuery::new(&terms, KEYWORD_CANDIDATES, &stop);
        let call = || {
            skills::archive::keyword::search(&pool, &kq, Some(CONTEXT))
                .map(|(f, _)| f.len())
                .map_err(|e| e.to_string())
        };
        let _ = call();
        let (a, rows) = measure(runs, Duration::from_secs(60), call);
        println!(
            "| `{q}` | {} | {} | {rows:?} |",
            fmt_dur(a.median),
            fmt_dur(a.p95)
        );
    }
    println!();
    Ok(())
}
